//! `nsys2prv-rs`: Nsight Systems reports → one Paraver trace.
//!
//! The command line only: arguments into the library's `Config`
//! (`cli::Args::to_config`), the conversion by `nsys2prv_convert`, progress
//! bars, signals, exit statuses and errors as one line. The report subcommand
//! (and `--report` after a conversion) runs `report`.

mod interrupt;
mod progress;

use std::process::ExitCode;

// The static musl build's own memcpy and memmove (see crates/musl-memcpy): naming the crate links
// it, and its symbols take precedence over musl's.
#[cfg(all(target_arch = "x86_64", target_env = "musl", not(debug_assertions)))]
use musl_memcpy as _;

use nsys2prv_convert::Finished;
use nsys2prv_rs::{cli, report, stdout};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc keeps freed memory for 10 ms before returning it by default; the
/// writer frees and allocates large batches faster than that, so peak RSS grew
/// past `--memory-limit` + 64 MB (1,180 MB at 1G on the one-10M benchmark) and
/// the kernel re-zeroed pages it had kept. Purging at once kept it at 938 MB.
/// (Nor does it ask for transparent huge pages: the `no_thp` feature, see
/// Cargo.toml.) `MIMALLOC_PURGE_DELAY` in the environment, mimalloc's own
/// setting, is left to decide (to weigh faults against peak memory).
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    /// `mi_option_purge_delay` in mimalloc.h (v2, libmimalloc-sys 0.1.49).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets an option value; mimalloc reads it at each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    tune_allocator();
    // Every option of BSC nsys2prv (0.5.8, 0.6.0rc1) has its equivalent: clap
    // parses them all.
    let args = match nsys2prv_rs::parse_args(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    // Every problem of the command line at once, not one per run.
    if let Some(cli::Command::Merge(m)) = &args.command {
        let problem = m
            .timing
            .then(nsys2prv_convert::timing::problem_with_csv)
            .flatten();
        if let Some(problem) = problem {
            eprintln!("error: {}", cli::problems_message(&[problem]));
            return ExitCode::from(2);
        }
    }
    let config = match args.command {
        None => match nsys2prv_rs::conversion_config(&args) {
            Ok(config) => Some(config),
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
        },
        Some(_) => None,
    };
    progress::init_logging(args.quiet, args.verbose);
    interrupt::install();
    let bars = progress::Bars { quiet: args.quiet };
    let done = |result: anyhow::Result<()>| result.map(|()| Finished::default());
    // `diff --fail-if-slower` exceeded: the diff succeeded, its status says so.
    let mut slower = false;
    let result = match (&args.command, &config) {
        (Some(cli::Command::Report(report_args)), _) => done(report::run_command(report_args)),
        (Some(cli::Command::Diff(diff_args)), _) => report::run_diff(diff_args).map(|exceeded| {
            slower = exceeded;
            Finished::default()
        }),
        (Some(cli::Command::Merge(m)), _) => nsys2prv_rs::merge(m, args.quiet, &bars),
        (Some(cli::Command::Completions { shell }), _) => done(cli::print_completions(*shell)),
        (Some(cli::Command::Man), _) => done(cli::print_man_page()),
        (None, Some(config)) => convert(config, &bars),
        (None, None) => unreachable!("a conversion has its Config"),
    };
    // A signal the handler thread has not acted on yet still decides the status.
    interrupt::exit_if_interrupted();
    let (status, line) = nsys2prv_rs::outcome(&result);
    if let Some(line) = line {
        eprintln!("{line}");
    }
    if slower {
        return ExitCode::from(nsys2prv_report::diff::SLOWER_EXIT as u8);
    }
    ExitCode::from(status)
}

/// A conversion, and the dry run's table on stdout.
fn convert(config: &nsys2prv_convert::Config, bars: &progress::Bars) -> anyhow::Result<Finished> {
    let finished = nsys2prv_rs::convert(config, bars)?;
    if let Some(table) = &finished.dry_run {
        stdout::write(table.as_bytes())?;
    }
    Ok(finished)
}
