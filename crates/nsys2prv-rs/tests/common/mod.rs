//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use paraver_writer::validate::{ptd_comprovar, validate_trace, PtdOutcome, TraceStats};

pub mod fixtures;
pub mod paramedir;

/// The shared corpus: `$NSYS2PRV_CORPUS`, else `../shared/corpus` beside the checkout.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NSYS2PRV_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "note: no corpus at {} (set NSYS2PRV_CORPUS); corpus checks skipped",
            dir.display()
        );
        None
    }
}

/// Every file below `dir`, sorted.
/// The views (`.cfg` files) under `dir`, sorted; not the marker file the tool
/// writes beside them.
pub fn cfgs_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = files_under(dir);
    files.retain(|p| p.extension().is_some_and(|e| e == "cfg"));
    files
}

pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nsys2prv-rs"))
}

/// An NSYS_HOME whose `bin/nsys` copies `source` to the requested output, or
/// fails like an nsys too old for the report.
pub fn fake_nsys_home(dir: &Path, source: &Path, too_old: bool) -> PathBuf {
    let home = dir.join("nsys-home");
    std::fs::create_dir_all(home.join("bin")).unwrap();
    let log = dir.join("nsys.log");
    let body = if too_old {
        "echo 'Error: Version number is invalid' >&2; exit 1".to_string()
    } else {
        format!("cp '{}' \"$out\"", source.display())
    };
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'NVIDIA Nsight Systems version 2022.4.2.1'; exit 0; fi\n\
         echo \"$@\" >> '{}'\nout=\nwhile [ $# -gt 1 ]; do [ \"$1\" = --output ] && out=$2; shift; done\n{body}\n",
        log.display()
    );
    let nsys = home.join("bin/nsys");
    std::fs::write(&nsys, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nsys, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    home
}

/// Runs the converter quietly on `inputs` into `output`.
pub fn convert(inputs: &[&Path], output: &Path, extra: &[&str]) -> Output {
    let mut cmd = binary();
    cmd.arg("-q").args(extra).args(inputs).arg(output);
    cmd.output().expect("run nsys2prv-rs")
}

/// Validates a produced trace with the project's validator and with BSC's
/// `ptd comprovar` (when installed); panics with every finding on failure.
pub fn check_trace(prv: &Path) -> TraceStats {
    let report = validate_trace(prv).expect("read the trace");
    let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{}:\n{}",
        prv.display(),
        errors.join("\n")
    );
    match ptd_comprovar(prv) {
        Ok(PtdOutcome::Passed) => {}
        Ok(PtdOutcome::NotInstalled) => {
            if std::env::var_os("CI").is_some() {
                panic!("ptd (pip install pertalde) is required in CI");
            }
            eprintln!("note: ptd not installed; `ptd comprovar` skipped");
        }
        Err(out) => panic!("ptd comprovar rejected {}:\n{out}", prv.display()),
    }
    report.stats
}

/// Count of intervals (non-zero values) of an event type in a trace.
pub fn begins(stats: &TraceStats, ty: u32) -> u64 {
    stats.event_begins.get(&ty).copied().unwrap_or(0)
}
