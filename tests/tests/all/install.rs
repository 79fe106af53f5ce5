//! Installing as users and HPC centres do (docs/install.md): the release archives unpack and
//! their binaries run; the aarch64 binary, under qemu-user, converts to the same bytes as the
//! x86-64 build; the EasyBuild module, loaded with Lmod in a fresh login shell, converts too.
//!
//! What they test is built outside (it takes minutes): `.ci/run` runs `scripts/release.sh --all`
//! and exports NSYS2PRV_RELEASE_DIR (the directory of the archives and SHA256SUMS), then
//! `scripts/easybuild-module.sh` and exports NSYS2PRV_EASYBUILD_PREFIX (EasyBuild's install
//! prefix). Without them, or without qemu-aarch64-static or Lmod, a test says so (and the
//! summary of `skips`) and passes, except in CI (`CI` set), where it fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use end_to_end::sharding::assert_same_files;
use end_to_end::skips;
use end_to_end::*;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The directory named by the environment variable `var`, or None (skipped).
fn dir_from_env(var: &str, how: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(dir.is_dir(), "{var}={} is not a directory", dir.display());
            Some(dir)
        }
        None => {
            skips::missing_tool(var, how);
            None
        }
    }
}

fn release_dir() -> Option<PathBuf> {
    dir_from_env(
        "NSYS2PRV_RELEASE_DIR",
        "make the archives with `scripts/release.sh --all` and export its target/static",
    )
}

fn succeeded(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Unpacks `archive` into a fresh directory; returns it and the archive's top directory.
fn unpack(archive: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let listing = Command::new("tar")
        .arg("--list")
        .arg("--verbose")
        .arg("--file")
        .arg(archive)
        .output()
        .expect("run tar");
    let listing = succeeded(&listing, "tar --list");
    let name = archive.file_name().unwrap().to_str().unwrap();
    let top = name.strip_suffix(".tar.gz").unwrap();
    for line in listing.lines() {
        // Reproducible: owned by root, all with one date, everything under one top directory.
        assert!(line.contains(" 0/0 "), "{name}: not owned by 0/0: {line}");
        assert!(
            line.split_whitespace().last().is_some_and(
                |path| path == format!("{top}/") || path.starts_with(&format!("{top}/"))
            ),
            "{name}: outside {top}/: {line}"
        );
    }
    let unpacked = Command::new("tar")
        .arg("--extract")
        .arg("--file")
        .arg(archive)
        .arg("--directory")
        .arg(dir.path())
        .output()
        .expect("run tar");
    succeeded(&unpacked, "tar --extract");
    let top = dir.path().join(top);
    (dir, top)
}

/// `--version` prints the version, the commit it was built from (`-modified` when built with
/// uncommitted changes) and the target.
fn assert_version_line(stdout: &str, target: &str) {
    let line = stdout.trim_end();
    let commit = line
        .strip_prefix(&format!("nsys2prv-rs {VERSION} (commit "))
        .and_then(|rest| rest.strip_suffix(&format!(", {target})")))
        .unwrap_or_else(|| panic!("--version printed {line:?}, not version, commit and {target}"));
    let hash = commit.strip_suffix("-modified").unwrap_or(commit);
    assert!(
        hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "--version names no commit: {line:?}"
    );
}

/// Converts the two-rank MPI sample into `out.prv` (and the CUDA sample, with two threads,
/// into `cuda.prv.gz`) in a fresh directory with `command` (its program and leading arguments),
/// and in another with the normal build, and compares every file written.
fn converts_like_the_normal_build(command: &[&std::ffi::OsStr], how: &str) {
    let samples = workspace_root().join("samples");
    let runs: [(Vec<PathBuf>, &[&str], &str); 2] = [
        (
            vec![
                samples.join("mpi_2ranks/rank0.sqlite"),
                samples.join("mpi_2ranks/rank1.sqlite"),
            ],
            &[],
            "out.prv",
        ),
        (
            vec![samples.join("synthetic/cuda_2025.5.sqlite")],
            &["-j", "2"],
            "cuda.prv.gz",
        ),
    ];
    let tested = tempfile::tempdir().unwrap();
    let normal = tempfile::tempdir().unwrap();
    for (inputs, options, output) in &runs {
        let out = Command::new(command[0])
            .args(&command[1..])
            // The metadata file's translation time, as `binary()` fixes it.
            .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
            .arg("-q")
            .args(*options)
            .args(inputs)
            .arg(output)
            .current_dir(tested.path())
            .output()
            .unwrap();
        succeeded(&out, &format!("{how}: {options:?} {inputs:?} {output}"));
        let out = binary()
            .arg("-q")
            .args(*options)
            .args(inputs)
            .arg(output)
            .current_dir(normal.path())
            .output()
            .unwrap();
        succeeded(&out, "the normal build");
    }
    assert!(
        tested.path().join("out.row").is_file(),
        "{how} wrote no trace"
    );
    assert_same_files(tested.path(), normal.path());
}

/// The archive for `target` in the release directory.
fn archive_of(release: &Path, target: &str) -> PathBuf {
    let archive = release.join(format!("nsys2prv-rs-{VERSION}-{target}.tar.gz"));
    assert!(archive.is_file(), "no archive {}", archive.display());
    archive
}

#[test]
fn release_archive_unpacks_and_its_binary_runs() {
    let Some(release) = release_dir() else {
        return;
    };
    // SHA256SUMS covers every archive of the release, and they match it.
    let sums = fs::read_to_string(release.join("SHA256SUMS")).expect("SHA256SUMS");
    let listed: Vec<&str> = sums
        .lines()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        let name = format!("nsys2prv-rs-{VERSION}-{target}.tar.gz");
        assert!(listed.contains(&name.as_str()), "SHA256SUMS lacks {name}");
    }
    let src = format!("nsys2prv-rs-{VERSION}-src.tar.gz");
    assert!(listed.contains(&src.as_str()), "SHA256SUMS lacks {src}");
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&release)
        .output()
        .expect("run sha256sum");
    succeeded(&check, "sha256sum --check SHA256SUMS");

    let (_dir, top) = unpack(&archive_of(&release, "x86_64-unknown-linux-musl"));
    let bin = top.join("bin/nsys2prv-rs");
    let version = Command::new(&bin).arg("--version").output().unwrap();
    assert_version_line(
        &succeeded(&version, "bin/nsys2prv-rs --version"),
        "x86_64-unknown-linux-musl",
    );

    // The man page and completions are the binary's own, where man, bash, zsh and fish look
    // under a prefix.
    let printed = |args: &[&str]| {
        let out = Command::new(&bin).args(args).output().unwrap();
        succeeded(&out, &format!("nsys2prv-rs {args:?}"))
    };
    for (path, args) in [
        ("share/man/man1/nsys2prv-rs.1", &["man"][..]),
        (
            "share/bash-completion/completions/nsys2prv-rs",
            &["completions", "bash"],
        ),
        (
            "share/zsh/site-functions/_nsys2prv-rs",
            &["completions", "zsh"],
        ),
        (
            "share/fish/vendor_completions.d/nsys2prv-rs.fish",
            &["completions", "fish"],
        ),
    ] {
        let file = fs::read_to_string(top.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!file.is_empty(), "{path} is empty");
        assert_eq!(file, printed(args), "{path} is not `nsys2prv-rs {args:?}`");
    }
    for doc in ["README.md", "CHANGELOG.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        let shipped = fs::read(top.join("share/doc/nsys2prv-rs").join(doc)).unwrap();
        assert_eq!(
            shipped,
            fs::read(workspace_root().join(doc)).unwrap(),
            "share/doc/nsys2prv-rs/{doc}"
        );
    }
    // Every bundled view, as in the checkout.
    assert_same_files(
        &top.join("share/nsys2prv-rs/cfgs"),
        &workspace_root().join("cfgs"),
    );
}

/// qemu-user for aarch64 on this x86-64 machine, or None (skipped).
fn qemu_aarch64() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("qemu-aarch64-static"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        skips::missing_tool(
            "qemu-aarch64-static",
            "Debian: apt-get install qemu-user-static",
        );
    }
    found
}

#[test]
fn aarch64_binary_converts_under_qemu_like_the_x86_64_build() {
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("note: not an x86-64 machine; the aarch64 test compares with the x86-64 build");
        return;
    }
    let Some(release) = release_dir() else {
        return;
    };
    let Some(qemu) = qemu_aarch64() else {
        return;
    };
    let (_dir, top) = unpack(&archive_of(&release, "aarch64-unknown-linux-musl"));
    let bin = top.join("bin/nsys2prv-rs");
    let header = fs::read(&bin).unwrap();
    // ELF, 64-bit, little-endian, e_machine EM_AARCH64 (183).
    assert!(
        header.starts_with(b"\x7fELF\x02\x01") && header[18..20] == 183u16.to_le_bytes(),
        "{} is not an aarch64 ELF file",
        bin.display()
    );
    let version = Command::new(&qemu)
        .arg(&bin)
        .arg("--version")
        .output()
        .unwrap();
    assert_version_line(
        &succeeded(&version, "qemu-aarch64-static bin/nsys2prv-rs --version"),
        "aarch64-unknown-linux-musl",
    );
    converts_like_the_normal_build(
        &[qemu.as_os_str(), bin.as_os_str()],
        "the aarch64 binary under qemu-aarch64-static",
    );
}

#[test]
fn easybuild_module_loads_in_a_fresh_shell_and_converts() {
    let Some(prefix) = dir_from_env(
        "NSYS2PRV_EASYBUILD_PREFIX",
        "build the module with `scripts/easybuild-module.sh PREFIX` and export PREFIX",
    ) else {
        return;
    };
    let modules = prefix.join("modules/all");
    assert!(modules.is_dir(), "no {}", modules.display());
    // A login shell of an empty environment: Lmod's `module` comes from /etc/profile.d, and
    // nothing of this test's environment (cargo's PATH) leaks in.
    let shell = |script: &str, dir: &Path| -> Output {
        Command::new("bash")
            .arg("-l")
            .arg("-c")
            .arg(format!(
                "set -e; module use {}; module load nsys2prv-rs/{VERSION}; {script}",
                modules.display()
            ))
            .env_clear()
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            // The metadata file's translation time, as `binary()` fixes it.
            .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
            .current_dir(dir)
            .output()
            .expect("run bash")
    };
    let here = tempfile::tempdir().unwrap();
    let probe = shell(
        "command -v nsys2prv-rs; nsys2prv-rs --version; man -w nsys2prv-rs; \
         echo \"$NSYS2PRV_RS_CFGS\"",
        here.path(),
    );
    if probe.status.code() == Some(127)
        || String::from_utf8_lossy(&probe.stderr).contains("module: command not found")
    {
        skips::missing_tool(
            "Lmod",
            &format!(
                "no `module` in a login shell (Debian: apt-get install lmod): {}",
                String::from_utf8_lossy(&probe.stderr).trim()
            ),
        );
        return;
    }
    let probe = succeeded(&probe, "module load nsys2prv-rs");
    let lines: Vec<&str> = probe.lines().collect();
    assert_eq!(lines.len(), 4, "module load, then: {probe}");
    let installed = prefix.join(format!("software/nsys2prv-rs/{VERSION}"));
    assert_eq!(
        Path::new(lines[0]),
        installed.join("bin/nsys2prv-rs"),
        "PATH"
    );
    // Built by EasyBuild with the host's Rust, for the host.
    assert_version_line(
        lines[1],
        &format!("{}-unknown-linux-gnu", std::env::consts::ARCH),
    );
    assert_eq!(
        Path::new(lines[2]),
        installed.join("share/man/man1/nsys2prv-rs.1"),
        "MANPATH"
    );
    let cfgs = Path::new(lines[3]);
    assert_eq!(
        cfgs,
        installed.join("share/nsys2prv-rs/cfgs"),
        "NSYS2PRV_RS_CFGS"
    );
    assert_same_files(cfgs, &workspace_root().join("cfgs"));

    // A conversion as a user types it, then the same with the normal build.
    let samples = workspace_root().join("samples/mpi_2ranks");
    let converted = shell(
        &format!(
            "nsys2prv-rs -q {} {} out.prv",
            samples.join("rank0.sqlite").display(),
            samples.join("rank1.sqlite").display()
        ),
        here.path(),
    );
    succeeded(&converted, "nsys2prv-rs from the module");
    check_trace(&here.path().join("out.prv"));
    let normal = tempfile::tempdir().unwrap();
    let out = binary()
        .arg("-q")
        .arg(samples.join("rank0.sqlite"))
        .arg(samples.join("rank1.sqlite"))
        .arg("out.prv")
        .current_dir(normal.path())
        .output()
        .unwrap();
    succeeded(&out, "the normal build");
    assert_same_files(here.path(), normal.path());
}
