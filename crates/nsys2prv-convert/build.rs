//! Embeds every Paraver view of `cfgs/` (the workspace's) in the library: writes
//! `$OUT_DIR/views.rs` with one `(relative path, include_str!)` entry per `.cfg`,
//! sorted by path, so that adding a view to `cfgs/` needs no code.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let cfgs = manifest.join("../../cfgs");
    // A directory makes cargo rerun this when any file below it changes or appears.
    println!("cargo:rerun-if-changed={}", cfgs.display());
    let mut views = Vec::new();
    collect(&cfgs, &cfgs, &mut views);
    views.sort();
    let mut code = String::from("/// Every bundled view: (path under `cfgs/`, contents).\n");
    code.push_str("pub const VIEWS: &[(&str, &str)] = &[\n");
    for (rel, path) in &views {
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("views.rs"), code).expect("write views.rs");
}

/// (`/`-separated path under `root`, absolute path) of every `.cfg` below `dir`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: cannot list the views: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "cfg") {
            let rel = path.strip_prefix(root).expect("below the root");
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let absolute = path.canonicalize().expect("the view's path");
            out.push((rel.join("/"), absolute));
        }
    }
}
