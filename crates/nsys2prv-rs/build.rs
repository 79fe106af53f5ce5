//! Embeds every Paraver view of `cfgs/` (the workspace's) in the binary: writes
//! `$OUT_DIR/views.rs` with one `(relative path, include_str!)` entry per `.cfg`,
//! sorted by path, so that adding a view to `cfgs/` needs no code. Also names the
//! commit the binary is built from, for `--version` (see `commit`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!(
        "cargo:rustc-env=NSYS2PRV_RS_BUILD_COMMIT={}",
        commit(&PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")
        ))
    );
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

/// The commit `--version` names: `$NSYS2PRV_RS_COMMIT` when set (the release
/// script sets it, and the source archive's `.cargo/config.toml`, which has no
/// `.git` beside it), else the short hash of the workspace's git HEAD, else
/// "unknown". A git repository around an unpacked source archive (a home
/// directory kept in git) is not asked: its top must be the workspace's.
fn commit(manifest: &Path) -> String {
    println!("cargo:rerun-if-env-changed=NSYS2PRV_RS_COMMIT");
    if let Some(commit) = std::env::var("NSYS2PRV_RS_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
    {
        return commit;
    }
    let workspace = manifest.join("../..");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&workspace)
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_string())
    };
    let same_dir = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let top = git(&["rev-parse", "--show-toplevel"]);
    if !top.is_some_and(|top| same_dir(Path::new(&top), &workspace)) {
        return "unknown".into();
    }
    // Rerun when HEAD moves: HEAD names the branch, its reflog grows with every commit,
    // checkout or reset in this worktree, and the branch's own file (when not packed).
    let mut watched = vec!["HEAD".to_string(), "logs/HEAD".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = workspace.join(path);
            // A path that does not exist would make cargo rerun this on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
}
