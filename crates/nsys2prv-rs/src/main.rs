//! `nsys2prv-rs`: Nsight Systems reports → one Paraver trace.

mod cli;
mod convert;
mod inputs;
mod nsys_export;
mod progress;
mod report;
mod views;

use std::process::ExitCode;

use clap::Parser;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    progress::init_logging(args.quiet, args.verbose);
    progress::remove_partial_output_on_interrupt();
    let result = match &args.command {
        Some(cli::Command::Report(report_args)) => report::run_command(report_args),
        Some(cli::Command::Completions { shell }) => cli::print_completions(*shell),
        Some(cli::Command::Man) => cli::print_man_page(),
        None => convert::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the cause chain joined, never a backtrace.
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", chain.join(": ").replace('\n', " "));
            ExitCode::from(if cli::is_usage_error(&e) { 2 } else { 1 })
        }
    }
}
