//! The check the fuzz target `paraver` (`fuzz/`) runs on every input, and that
//! `cargo test` runs on every input kept in `fuzz/corpus/paraver/` (on
//! stable): a `.prv`, `.pcf` and `.row` (one input cut in three at
//! [`paraver_reader::fuzz_checks::SEPARATOR`]) read by the validator and by the
//! report, which end in findings, a report or an error of one line, never in
//! a panic or a hang.

use std::path::Path;

use paraver_reader::fuzz_checks::{assert_one_line, check_validator, split};

use crate::{analyze, files, ReportOptions};

/// The trace `data` stands for, written into the empty directory `dir`, read.
pub fn check_trace(dir: &Path, data: &[u8]) {
    let pieces = split(data, 3);
    let prv = check_validator(dir, pieces[0], pieces[1], pieces[2]);
    let trace = paraver_reader::TraceFiles::of(&prv);
    let options = ReportOptions {
        // Small: a fuzzed header may declare many threads.
        memory_limit: 64 << 20,
        ..ReportOptions::default()
    };
    match analyze(&trace, &options) {
        Ok(report) => {
            let _ = report.text(options.top);
            if let Err(e) = files::all(&report) {
                assert_one_line("files::all", &format!("{e:#}"));
            }
        }
        Err(e) => assert_one_line("analyze", &format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use paraver_reader::fuzz_checks::replay_inputs;

    /// The inputs kept from fuzzing `paraver` (`fuzz/corpus/paraver/`,
    /// minimised) and the crashes it found (`fuzz/regressions/paraver/`), each
    /// through the check the fuzz target runs: the corpus replay, on stable.
    #[test]
    fn fuzz_corpus_replays() {
        for input in &replay_inputs("paraver") {
            let dir = tempfile::tempdir().unwrap();
            super::check_trace(dir.path(), &std::fs::read(input).unwrap());
        }
    }
}
