//! Embeds every Paraver view of `cfgs/` (the workspace's) in the binary: writes
//! `$OUT_DIR/views.rs` with one `(relative path, include_str!)` entry per `.cfg`,
//! sorted by path, so that adding a view to `cfgs/` needs no code. Also gives
//! `--version` the commit and the target the binary was built from.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    version_details();
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

/// `NSYS2PRV_COMMIT` (`commit HASH`: `$NSYS2PRV_COMMIT` when set, as
/// `scripts/release.sh` sets it for its builds from a copy without `.git`; else
/// git's short hash of HEAD; else `unknown commit`) and `NSYS2PRV_TARGET` (the target
/// triple) for the binary. Nothing of the build machine or time: the same commit
/// gives the same bytes.
fn version_details() {
    println!("cargo:rerun-if-env-changed=NSYS2PRV_COMMIT");
    let hash = match std::env::var("NSYS2PRV_COMMIT") {
        Ok(hash) if !hash.trim().is_empty() => Some(hash.trim().to_string()),
        _ => {
            // A new commit or checkout moves HEAD or the branch it names (a loose
            // ref, or packed). Only files that exist: cargo reruns every build
            // for a missing one.
            let branch = git(&["symbolic-ref", "-q", "HEAD"]);
            let files = ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref());
            for file in files {
                if let Some(path) = git(&["rev-parse", "--git-path", file]) {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
            git(&["rev-parse", "--short=12", "HEAD"])
        }
    };
    let commit = hash.map_or_else(|| "unknown commit".to_string(), |h| format!("commit {h}"));
    println!("cargo:rustc-env=NSYS2PRV_COMMIT={commit}");
    let target = std::env::var("TARGET").expect("cargo sets it");
    println!("cargo:rustc-env=NSYS2PRV_TARGET={target}");
}

/// Git's answer (trimmed) in this crate's directory, or `None` without git or a
/// repository.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
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
