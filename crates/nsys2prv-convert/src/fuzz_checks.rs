//! The checks the fuzz targets `config` and `parts` (`fuzz/`) run on every
//! input, and that `cargo test` runs on every input kept in `fuzz/corpus/`
//! (on stable): the readers of files other programs or people hand the tool
//! end in a value or in errors of one line each, never in a panic or a hang.

use std::path::Path;

use paraver_reader::fuzz_checks::{assert_one_line, split};

use crate::bsc_config;
use crate::convert::Outcome;
use crate::sharded::parts::{with_checksums_made_right, PartsDir};
use crate::sharded::plan::Plan;

/// BSC's `--config` TOML `data`, as read from `path` (no file is written: the
/// reader's work is the parsing): read, its NVTX settings checked against the
/// registry as the command line does; every problem one line naming the file.
pub fn check_bsc_config(path: &Path, data: &[u8]) {
    match bsc_config::from_bytes(path, data) {
        Ok(config) => {
            let registry = nsys_semantics::Registry::standard();
            for problem in registry.nvtx_config_problems(&config.nvtx) {
                assert_one_line("nvtx_config_problems", &problem);
            }
            // What the translation asks of it, for every domain it names.
            let nvtx = &config.nvtx;
            for name in nvtx.domains.keys().map(String::as_str).chain(["", "x"]) {
                let _ = (
                    nvtx.translates(name),
                    nvtx.payloads(name),
                    nvtx.float_strategy(name),
                    nvtx.projects(name),
                    nvtx.event_type(name),
                );
            }
            let _ = nvtx.blocks(100).count();
        }
        Err(problems) => {
            assert!(!problems.is_empty(), "an error without a problem");
            let shown = path.display().to_string();
            for problem in &problems {
                assert_one_line("bsc_config::load", problem);
                assert!(
                    problem.starts_with(&shown),
                    "a problem not naming the file: {problem}"
                );
            }
        }
    }
}

/// The plan and the part of a sharded conversion (`data`: the plan's text,
/// [`SEPARATOR`], the part's bytes), decoded as the merge decodes them, twice:
/// the part as given, and with its checksums made right (to reach what they
/// guard). `dir` is an empty directory of the caller's.
pub fn check_parts(dir: &Path, data: &[u8]) {
    let pieces = split(data, 2);
    let (plan_text, part) = (pieces[0], pieces[1]);
    let trace = dir.join("t.prv");
    let parts = PartsDir::of(&trace);
    std::fs::create_dir_all(parts.plan_path().parent().expect("in the parts directory"))
        .expect("the parts directory is made");
    std::fs::write(parts.plan_path(), plan_text).expect("the plan is written");
    let plan = match Plan::read(&parts.plan_path()) {
        Ok(plan) => plan,
        Err(e) => return assert_one_line("Plan::read", &crate::error::one_line(&e)),
    };
    let plan_id = plan.id();
    let _ = plan.check_fits(&plan, &parts.plan_path());
    let shards = plan.shards.min(4);
    for bytes in [part.to_vec(), with_checksums_made_right(part)] {
        for shard in 0..shards {
            std::fs::write(parts.part_path(shard), &bytes).expect("the part is written");
        }
        let _ = parts.states(&plan, &plan_id);
        let _ = parts.has_part(&plan, &plan_id, 0);
        let outcomes = match parts.load_all(&plan, &plan_id) {
            Ok(outcomes) => outcomes,
            Err(e) => {
                assert_one_line("PartsDir::load_all", &crate::error::one_line(&e));
                continue;
            }
        };
        for (_, outcome) in outcomes {
            let Outcome::Translated(report) = outcome else {
                continue;
            };
            // Every record of the run, read back and decoded as the merge does.
            let mut events = 0u64;
            let read = paraver_writer::merge::for_each_event(&report.run, &mut |_, _, _, pairs| {
                events += pairs.len() as u64;
            });
            if let Err(e) = read {
                assert_one_line("for_each_event", &e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use paraver_reader::fuzz_checks::replay_inputs as inputs;

    /// Each input of `parts` through the check the fuzz target runs: the
    /// corpus replay, on stable.
    #[test]
    fn fuzz_corpus_replays_parts() {
        for input in inputs("parts") {
            let dir = tempfile::tempdir().unwrap();
            super::check_parts(dir.path(), &std::fs::read(&input).unwrap());
        }
    }

    /// Each input of `config` through the check the fuzz target runs.
    #[test]
    fn fuzz_corpus_replays_config() {
        for input in inputs("config") {
            let data = std::fs::read(&input).unwrap();
            super::check_bsc_config(&input, &data);
        }
    }
}
