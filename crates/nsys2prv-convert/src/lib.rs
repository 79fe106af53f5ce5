//! The conversion of Nsight Systems reports into one Paraver trace, as library
//! calls driven by a typed [`Config`]: the binary `nsys2prv-rs` builds the
//! `Config` from its command line and calls [`run`] or [`merge`]; a test or
//! another program can do the same in process.
//!
//! A run goes: find and export the inputs ([`inputs`], [`nsys_export`]),
//! translate them ([`convert`], with `nsys-semantics`), plan the layout, merge
//! and write the trace (`paraver-writer`) with its metadata ([`pmf`]) and views
//! ([`views`]) into a staging directory, and install it as one unit
//! ([`output_set`]). A sharded conversion ([`sharded`]) splits the translation
//! into parts and merges them with the same code.
//!
//! Progress is reported to the caller's [`progress::Progress`]; interrupts are
//! the caller's too: the library registers its temporaries and child processes
//! with `atomic_output::cleanup`, which the caller's signal handler empties.

// Only system calls of the local time and the open-file limit are unsafe
// (each function allows it, with its SAFETY comments).
#![deny(unsafe_code)]

pub mod bsc_config;
pub mod config;
pub mod convert;
pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_checks;
pub mod inputs;
pub mod messages;
pub mod nsys_export;
pub mod output_set;
pub mod pmf;
pub mod progress;
pub mod sharded;
pub mod timing;
pub mod views;

use std::path::{Path, PathBuf};

pub use config::{Config, Mode};
pub use convert::{Finished, EXIT_SKIPPED};
pub use error::{one_line, Error, UsageError};
pub use progress::{Progress, Silent};

/// Runs the conversion `config` asks for (its [`Mode`]) on a pool of
/// `config.resources.jobs` worker threads.
pub fn run(config: &Config, progress: &dyn Progress) -> Result<Finished, Error> {
    // A task of a Slurm step gets the CPUs Slurm gave it.
    let jobs = config.resources.jobs.or_else(|| {
        let cpus = std::env::var("SLURM_CPUS_PER_TASK").ok()?;
        match config.mode {
            Mode::Shard { .. } | Mode::SlurmStep => cpus.trim().parse().ok(),
            _ => None,
        }
    });
    let pool = convert::worker_pool(jobs)?;
    let finished = pool.install(|| match config.mode {
        Mode::Convert => convert::convert(config, progress),
        Mode::DryRun => convert::dry_run(config),
        Mode::PlanShards(shards) => sharded::plan_only(config, shards),
        Mode::Shard { index, count } => sharded::run_shard(config, index, count, progress),
        Mode::SlurmStep => sharded::run_slurm_task(config, progress),
    })?;
    Ok(finished)
}

/// What a merge of a sharded conversion may change of its plan's `Config`: the
/// settings of the process that merges.
#[derive(Clone, Debug, Default)]
pub struct MergeSettings {
    pub resources: config::Resources,
    pub keep_parts: bool,
    pub timing: bool,
    pub quiet: bool,
    /// `merge --shard I/N`: write only time slice I of N of the body (the
    /// plain merge then finishes the trace).
    pub slice: Option<(u32, u32)>,
}

/// Merges the parts of the sharded conversion of `trace` (`NAME.parts/` beside
/// it) into the trace, with the `Config` its plan stores.
pub fn merge(
    trace: &Path,
    settings: &MergeSettings,
    progress: &dyn Progress,
) -> Result<Finished, Error> {
    Ok(sharded::merge_command(trace, settings, progress)?)
}

/// `NAME.cfgs/` or the configured views directory of `config`'s trace.
pub fn views_dir(config: &Config) -> Result<PathBuf, Error> {
    let paths = paraver_writer::OutputPaths::for_trace(&config.output.trace)
        .map_err(|e| Error::from(anyhow::Error::from(e)))?;
    Ok(config.views_dir(&paths))
}
