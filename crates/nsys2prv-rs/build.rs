//! Gives `--version` the commit and the target the binary was built from. (The
//! views of `cfgs/` are embedded by the categories that declare them:
//! `nsys_semantics::view`.)

use std::path::Path;
use std::process::Command;

fn main() {
    version_details();
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
