//! The static release binary (`scripts/release.sh`) needs nothing from the host: inside an empty
//! root (a `chroot` into a directory holding only the binary and the reports, no /lib, no /proc,
//! no /tmp) it converts the reports to the same bytes as the normal build.
//!
//! The binary is built outside the test (it takes minutes): `.ci/run` runs `scripts/release.sh`
//! and exports its path as `NSYS2PRV_STATIC_BIN`. Without it, or without permission to `chroot`
//! (not root), the test says so and passes, except in CI (`CI` set), where it fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use end_to_end::*;

/// chroot(1)'s exit status when it cannot change the root itself (no permission, no such dir).
const CHROOT_FAILED: i32 = 125;

fn static_binary() -> Option<PathBuf> {
    match std::env::var_os("NSYS2PRV_STATIC_BIN") {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "NSYS2PRV_STATIC_BIN={} is not a file",
                path.display()
            );
            Some(path)
        }
        None => {
            skip_unless_ci(
                "NSYS2PRV_STATIC_BIN is not set: build the static binary with \
                 `scripts/release.sh` and export the path it prints",
            );
            None
        }
    }
}

fn skip_unless_ci(why: &str) {
    missing_tool("the static binary", why);
}

/// Copies `reports` into a fresh directory under their file names; returns the directory.
fn directory_with(reports: &[&Path]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for report in reports {
        fs::copy(report, dir.path().join(report.file_name().unwrap())).unwrap();
    }
    dir
}

/// Every file under `dir` but those named in `skip`, as (path relative to `dir`, contents).
fn written_files(dir: &Path, skip: &[&str]) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(dir)
        .into_iter()
        .map(|path| (path.strip_prefix(dir).unwrap().to_path_buf(), path))
        .filter(|(relative, _)| !skip.iter().any(|name| relative == Path::new(name)))
        .map(|(relative, path)| (relative, fs::read(path).unwrap()))
        .collect()
}

/// Converts `reports` into `output` with the static binary inside an empty root and with the
/// normal build in an ordinary directory, both with the same relative paths and `options`, and
/// compares every file written. Returns false when skipped (no permission to chroot).
fn converts_like_the_normal_build(
    static_bin: &Path,
    reports: &[&Path],
    options: &[&str],
    output: &str,
) -> bool {
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r.file_name().unwrap().to_str().unwrap())
        .collect();

    let root = directory_with(reports);
    fs::copy(static_bin, root.path().join("nsys2prv-rs")).unwrap();
    // chroot(1) starts the command in the new root's `/`, so relative paths are relative to it.
    let jailed = Command::new("chroot")
        // The metadata file's translation time, as `binary()` fixes it.
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .arg(root.path())
        .arg("/nsys2prv-rs")
        .arg("-q")
        .args(options)
        .args(&names)
        .arg(output)
        .output()
        .expect("run chroot (coreutils)");
    if jailed.status.code() == Some(CHROOT_FAILED) {
        skip_unless_ci(&format!(
            "cannot chroot into {}: {}",
            root.path().display(),
            String::from_utf8_lossy(&jailed.stderr).trim()
        ));
        return false;
    }
    assert!(
        jailed.status.success(),
        "static binary in an empty root, {options:?} {names:?} {output}: {}\n{}",
        jailed.status,
        String::from_utf8_lossy(&jailed.stderr)
    );

    let normal_dir = directory_with(reports);
    let normal = binary()
        .current_dir(normal_dir.path())
        .arg("-q")
        .args(options)
        .args(&names)
        .arg(output)
        .output()
        .unwrap();
    assert!(
        normal.status.success(),
        "normal build: {}",
        String::from_utf8_lossy(&normal.stderr)
    );

    let mut skip = names.clone();
    skip.push("nsys2prv-rs");
    let from_static = written_files(root.path(), &skip);
    let from_normal = written_files(normal_dir.path(), &names);
    let listed = |files: &[(PathBuf, Vec<u8>)]| -> Vec<PathBuf> {
        files.iter().map(|(path, _)| path.clone()).collect()
    };
    assert_eq!(
        listed(&from_static),
        listed(&from_normal),
        "the two builds wrote different files"
    );
    assert!(
        from_static
            .iter()
            .any(|(path, _)| path.ends_with("out.row")),
        "no trace written: {:?}",
        listed(&from_static)
    );
    for ((path, static_bytes), (_, normal_bytes)) in from_static.iter().zip(&from_normal) {
        // The metadata file names the input reports by absolute path: `/rank0.sqlite` in the
        // empty root, `DIR/rank0.sqlite` beside the normal build.
        let normal_bytes = if path.extension().is_some_and(|e| e == "pmf") {
            let dir = format!("{}", normal_dir.path().display());
            String::from_utf8(normal_bytes.clone())
                .unwrap()
                .replace(&dir, "")
                .into_bytes()
        } else {
            normal_bytes.clone()
        };
        assert!(
            *static_bytes == normal_bytes,
            "{} differs between the static binary and the normal build",
            path.display()
        );
    }
    true
}

#[test]
fn static_binary_converts_in_an_empty_root_like_the_normal_build() {
    let Some(static_bin) = static_binary() else {
        return;
    };
    let samples = workspace_root().join("samples");
    let ranks = [
        samples.join("mpi_2ranks/rank0.sqlite"),
        samples.join("mpi_2ranks/rank1.sqlite"),
    ];
    // Two reports into a plain trace; then one through the parallel gzip writer on two threads.
    if !converts_like_the_normal_build(&static_bin, &[&ranks[0], &ranks[1]], &[], "out.prv") {
        return;
    }
    let cuda = samples.join("synthetic/cuda_2025.5.sqlite");
    assert!(converts_like_the_normal_build(
        &static_bin,
        &[&cuda],
        &["-j", "2"],
        "out.prv.gz"
    ));
}
