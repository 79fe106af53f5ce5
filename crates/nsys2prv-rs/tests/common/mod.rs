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
