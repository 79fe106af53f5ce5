//! The command line of `nsys2prv-rs` as a library: its arguments ([`cli::Args`]),
//! the [`Config`] they ask for ([`conversion_config`]), the conversion and the
//! merge as the binary runs them (with `--report` after them: [`convert`],
//! [`merge`]), and the exit status and error line of their result
//! ([`outcome`]).
//!
//! The binary (`main.rs`) adds only what belongs to a process: parsing
//! `std::env::args`, logging, progress bars on the terminal, signal handlers,
//! the allocator, printing and exiting. The end-to-end tests call these
//! functions in process, so that what they convert is built from a command line
//! the same way the binary builds it.

#![forbid(unsafe_code)]

pub mod cli;
pub mod report;
pub mod stdout;

use std::ffi::OsString;
use std::path::Path;

use nsys2prv_convert::{one_line, Config, Finished, Progress};

/// The arguments of a command line (`argv[0]` first), global flags given
/// before a subcommand moved after it (`nsys2prv-rs -q merge t.prv`).
pub fn parse_args(argv: Vec<OsString>) -> Result<cli::Args, clap::Error> {
    use clap::Parser;
    cli::Args::try_parse_from(cli::global_flags_after_subcommand(argv))
}

/// A conversion's command line (no subcommand) turned into its [`Config`]:
/// every problem of it at once (`Err`: the message `error: ` introduces; the
/// binary exits 2 with it).
pub fn conversion_config(args: &cli::Args) -> Result<Config, String> {
    let problems = args.problems();
    if !problems.is_empty() {
        return Err(cli::problems_message(&problems));
    }
    args.to_config().map_err(|e| e.to_string())
}

/// A conversion (or a dry run, a plan, a shard), then the report of the trace
/// it installed when `--report` asks for it. The dry run's table is in
/// [`Finished::dry_run`], for the caller to print.
pub fn convert(config: &Config, progress: &dyn Progress) -> anyhow::Result<Finished> {
    if let Some(dir) = config.output.report.as_ref().and_then(|r| r.dir()) {
        if config.mode == nsys2prv_convert::Mode::Convert {
            report::check_out_dir(dir)?;
        }
    }
    let finished = nsys2prv_convert::run(config, progress)?;
    report_after(config, &finished)?;
    Ok(finished)
}

/// `nsys2prv-rs merge OUTPUT` (`quiet`: the global `-q`).
pub fn merge(m: &cli::MergeArgs, quiet: bool, progress: &dyn Progress) -> anyhow::Result<Finished> {
    let trace = cli::trace_name(&m.output, false)?;
    let settings = m.settings(quiet);
    // The report the plan's conversion asked for (read now: the merge removes
    // the parts directory with the plan).
    let parts = nsys2prv_convert::sharded::parts::PartsDir::of(&trace);
    let planned = nsys2prv_convert::sharded::plan::Plan::read(&parts.plan_path())
        .ok()
        .map(|plan| plan.config_for_merge(&settings));
    let finished = nsys2prv_convert::merge(&trace, &settings, progress)?;
    if let Some(config) = planned {
        report_after(&config, &finished)?;
    }
    Ok(finished)
}

/// `--report[=DIR]`: the report of the trace just installed.
fn report_after(config: &Config, finished: &Finished) -> anyhow::Result<()> {
    let (Some(trace), Some(dir)) = (&finished.trace, &config.output.report) else {
        return Ok(());
    };
    report::run(
        trace,
        &report::ReportOptions {
            print: !config.quiet,
            out_dir: dir.dir().map(Path::to_path_buf),
            memory_limit: config.resources.memory_limit,
            ..report::ReportOptions::default()
        },
    )
}

/// The exit status of a command's result, and the line to print on stderr:
/// 0; 3 when `--skip-bad` left reports out; 141 when stdout was closed (no
/// line); 2 for a usage error, 1 for any other, with `error: ` and the error's
/// causes on one line.
pub fn outcome(result: &anyhow::Result<Finished>) -> (u8, Option<String>) {
    match result {
        Ok(finished) if finished.skipped > 0 => (nsys2prv_convert::EXIT_SKIPPED, None),
        Ok(_) => (0, None),
        Err(e) if stdout::closed(e) => (stdout::EXIT_CLOSED, None),
        Err(e) => (
            if cli::is_usage_error(e) { 2 } else { 1 },
            Some(format!("error: {}", one_line(e))),
        ),
    }
}
