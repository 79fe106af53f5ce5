//! `nsys2prv-rs`: Nsight Systems reports → one Paraver trace.

mod bsc_config;
mod cli;
mod convert;
mod inputs;
mod interrupt;
mod nsys_export;
mod output_set;
mod pmf;
mod progress;
mod report;
mod sharded;
mod stdout;
mod timing;
mod views;

use std::process::ExitCode;

// The static musl build's own memcpy and memmove (see crates/musl-memcpy): naming the crate links
// it, and its symbols take precedence over musl's.
#[cfg(all(target_arch = "x86_64", target_env = "musl", not(debug_assertions)))]
use musl_memcpy as _;

use clap::Parser;

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
    let mut args = match cli::Args::try_parse_from(std::env::args_os()) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    // Every problem of the command line at once, not one per run.
    let mut problems: Vec<String> = Vec::new();
    match &args.command {
        None => problems.extend(args.problems()),
        Some(cli::Command::Merge(m)) if m.timing => {
            problems.extend(timing::problem_with_csv());
        }
        Some(_) => {}
    }
    if !problems.is_empty() {
        eprintln!("error: {}", cli::problems_message(&problems));
        return ExitCode::from(2);
    }
    if let Err(e) = args.resolve_config() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match &args.command {
        Some(cli::Command::Merge(m)) => progress::init_logging(m.quiet, m.verbose),
        _ => progress::init_logging(args.quiet, args.verbose),
    }
    interrupt::install();
    let done = |result: anyhow::Result<()>| result.map(|()| convert::Finished::default());
    let result = match &args.command {
        Some(cli::Command::Report(report_args)) => done(report::run_command(report_args)),
        Some(cli::Command::Merge(merge_args)) => sharded::merge_command(merge_args),
        Some(cli::Command::Completions { shell }) => done(cli::print_completions(*shell)),
        Some(cli::Command::Man) => done(cli::print_man_page()),
        None => convert::run(&args),
    };
    // A signal the handler thread has not acted on yet still decides the status.
    interrupt::exit_if_interrupted();
    match result {
        Ok(finished) if finished.skipped > 0 => ExitCode::from(convert::EXIT_SKIPPED),
        Ok(_) => ExitCode::SUCCESS,
        Err(e) if stdout::closed(&e) => ExitCode::from(stdout::EXIT_CLOSED),
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(if cli::is_usage_error(&e) { 2 } else { 1 })
        }
    }
}

/// The cause chain on one line, never a backtrace; a cause already quoted by the
/// message before it is not repeated.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if !line.contains(&cause) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&cause);
        }
    }
    line.replace('\n', " ")
}
