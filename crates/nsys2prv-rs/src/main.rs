//! `nsys2prv-rs`: Nsight Systems reports → one Paraver trace.
//!
//! The command line only: arguments into the library's `Config`
//! (`cli::Args::to_config`), the conversion by `nsys2prv_convert`, progress
//! bars, signals, exit statuses and errors as one line. The report subcommand
//! (and `--report` after a conversion) runs `report`.

mod cli;
mod interrupt;
mod progress;
mod report;
mod stdout;

use std::path::Path;
use std::process::ExitCode;

// The static musl build's own memcpy and memmove (see crates/musl-memcpy): naming the crate links
// it, and its symbols take precedence over musl's.
#[cfg(all(target_arch = "x86_64", target_env = "musl", not(debug_assertions)))]
use musl_memcpy as _;

use clap::Parser;
use nsys2prv_convert::{one_line, Config, Finished};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc keeps freed memory for 10 ms before returning it by default; the
/// writer frees and allocates large batches faster than that, so peak RSS grew
/// past `--memory-limit` + 64 MB (1,180 MB at 1G on the one-10M benchmark) and
/// the kernel re-zeroed pages it had kept. Purging at once kept it at 938 MB.
/// (Nor does it ask for transparent huge pages: the `no_thp` feature, see
/// Cargo.toml.)
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    /// `mi_option_purge_delay` in mimalloc.h (v2, libmimalloc-sys 0.1.49).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets an option value; mimalloc reads it at each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    tune_allocator();
    // Every option of BSC nsys2prv (0.5.8, 0.6.0rc1) has its equivalent: clap
    // parses them all.
    let args = match cli::Args::try_parse_from(cli::global_flags_after_subcommand(
        std::env::args_os().collect(),
    )) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    // Every problem of the command line at once, not one per run.
    let mut problems: Vec<String> = Vec::new();
    match &args.command {
        None => problems.extend(args.problems()),
        Some(cli::Command::Merge(m)) if m.timing => {
            problems.extend(nsys2prv_convert::timing::problem_with_csv());
        }
        Some(_) => {}
    }
    if !problems.is_empty() {
        eprintln!("error: {}", cli::problems_message(&problems));
        return ExitCode::from(2);
    }
    let config = match args.command {
        None => match args.to_config() {
            Ok(config) => Some(config),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        Some(_) => None,
    };
    progress::init_logging(args.quiet, args.verbose);
    interrupt::install();
    if let Some(cli::Command::Diff(diff_args)) = &args.command {
        let result = report::run_diff(diff_args);
        interrupt::exit_if_interrupted();
        return match result {
            Ok(false) => ExitCode::SUCCESS,
            Ok(true) => ExitCode::from(nsys2prv_report::diff::SLOWER_EXIT as u8),
            Err(e) => failure(&e),
        };
    }
    let bars = progress::Bars { quiet: args.quiet };
    let done = |result: anyhow::Result<()>| result.map(|()| Finished::default());
    let result = match (&args.command, &config) {
        (Some(cli::Command::Report(report_args)), _) => done(report::run_command(report_args)),
        (Some(cli::Command::Diff(_)), _) => unreachable!("diff returned above"),
        (Some(cli::Command::Merge(m)), _) => merge(m, args.quiet, &bars),
        (Some(cli::Command::Completions { shell }), _) => done(cli::print_completions(*shell)),
        (Some(cli::Command::Man), _) => done(cli::print_man_page()),
        (None, Some(config)) => convert(config, &bars),
        (None, None) => unreachable!("a conversion has its Config"),
    };
    // A signal the handler thread has not acted on yet still decides the status.
    interrupt::exit_if_interrupted();
    match result {
        Ok(finished) if finished.skipped > 0 => ExitCode::from(nsys2prv_convert::EXIT_SKIPPED),
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => failure(&e),
    }
}

/// The status of a failed command, after its one line on stderr.
fn failure(e: &anyhow::Error) -> ExitCode {
    if stdout::closed(e) {
        return ExitCode::from(stdout::EXIT_CLOSED);
    }
    eprintln!("error: {}", one_line(e));
    ExitCode::from(if cli::is_usage_error(e) { 2 } else { 1 })
}

/// A conversion (or a dry run, a plan, a shard), then the report of the trace
/// it installed when `--report` asks for it.
fn convert(config: &Config, bars: &progress::Bars) -> anyhow::Result<Finished> {
    if let Some(dir) = config.output.report.as_ref().and_then(|r| r.dir()) {
        if config.mode == nsys2prv_convert::Mode::Convert {
            report::check_out_dir(dir)?;
        }
    }
    let finished = nsys2prv_convert::run(config, bars)?;
    if let Some(table) = &finished.dry_run {
        stdout::write(table.as_bytes())?;
    }
    report_after(config, &finished)?;
    Ok(finished)
}

/// `nsys2prv-rs merge OUTPUT`.
fn merge(m: &cli::MergeArgs, quiet: bool, bars: &progress::Bars) -> anyhow::Result<Finished> {
    let trace = cli::trace_name(&m.output, false)?;
    let settings = m.settings(quiet);
    // The report the plan's conversion asked for (read now: the merge removes
    // the parts directory with the plan).
    let parts = nsys2prv_convert::sharded::parts::PartsDir::of(&trace);
    let planned = nsys2prv_convert::sharded::plan::Plan::read(&parts.plan_path())
        .ok()
        .map(|plan| plan.config_for_merge(&settings));
    let finished = nsys2prv_convert::merge(&trace, &settings, bars)?;
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
