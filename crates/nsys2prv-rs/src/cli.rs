//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use nsys_semantics::cuts::NvtxRangeSpec;

// Subcommands and the conversion's positionals exclude each other, and a
// subcommand lifts the requirement of two paths: `nsys2prv-rs a.sqlite out.prv`
// converts, `nsys2prv-rs report out.prv` reports.
#[derive(Parser, Debug)]
#[command(
    name = "nsys2prv-rs",
    version,
    about = "Convert NVIDIA Nsight Systems reports (one per rank) into one Paraver trace",
    after_help = after_help(),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Nsight Systems exports (.sqlite) or directories holding them, then the
    /// output trace (NAME.prv or NAME.prv.gz)
    #[arg(required = true, num_args = 2.., value_name = "INPUT... OUTPUT")]
    pub paths: Vec<PathBuf>,

    /// Categories to translate, comma-separated (default: every category present)
    #[arg(
        short = 't',
        long = "trace",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub trace: Vec<String>,

    /// Categories to leave out, comma-separated
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub exclude: Vec<String>,

    /// Kernel names used as event values
    #[arg(long, value_enum, default_value_t = KernelNameArg::Short)]
    pub kernel_names: KernelNameArg,

    /// How to align the reports' clocks: session start times only, or also make an
    /// event every rank shares coincide
    #[arg(long, value_enum, default_value_t = SyncArg::Session)]
    pub sync: SyncArg,

    /// Where to put the bundled Paraver views (default: NAME.cfgs/ next to the trace)
    #[arg(long, value_name = "DIR")]
    pub cfgs_dir: Option<PathBuf>,

    /// Memory for records before they spill to temporary files (e.g. 512M, 4G);
    /// the tool's peak stays near this whatever the input size
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,

    /// Where spilled records go (default: next to the output); removed at exit
    #[arg(long, value_name = "DIR")]
    pub tmp_dir: Option<PathBuf>,

    /// Keep only this part of the trace, in the uncut trace's time (ns unless
    /// suffixed us, ms or s; either end may be left out: 2s:, :500ms); every
    /// category is cut and the result starts at 0
    #[arg(long, value_name = "START:END", value_parser = parse_time_window, conflicts_with = "nvtx_range")]
    pub time_window: Option<TimeWindowArg>,

    /// Keep only the time of an NVTX range: NAME (from the first such range to the
    /// last) or NAME#N (the N-th such range of every thread that has one)
    #[arg(long, value_name = "NAME[#N]")]
    pub nvtx_range: Option<NvtxRangeSpec>,

    /// After writing the trace, print its GPU efficiency report; with =DIR, also
    /// write the report's page, JSON and CSV files into DIR (see the report subcommand)
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub report: Option<Option<PathBuf>>,

    /// Only say what would be translated: reports, hosts, ranks, rows per
    /// category, estimated trace size (row counts only; nothing is written)
    #[arg(long)]
    pub dry_run: bool,

    /// Reports translated at once (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Accepted for compatibility with BSC nsys2prv: several inputs are always merged
    #[arg(short = 'm', long = "multi-report", hide = true)]
    pub multi_report: bool,

    /// Only errors
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// More detail (per-report counts)
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// GPU efficiency report of a trace written by nsys2prv-rs (no Paraver needed)
    ///
    /// Per GPU useful, communication and idle time; load balance, communication,
    /// orchestration and parallel efficiency; top kernels, NCCL time per collective,
    /// memory operations, MPI calls, compute/communication overlap, GPU idle gaps
    /// with what the CPU was doing, and per-rank iteration times with the
    /// stragglers. Printed; written as an HTML page, JSON or CSV only where asked.
    Report(ReportArgs),
    /// Print a shell completion script (e.g. `nsys2prv-rs completions bash > /etc/bash_completion.d/nsys2prv-rs`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page in roff (e.g. `nsys2prv-rs man > ~/.local/share/man/man1/nsys2prv-rs.1`)
    Man,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// The trace: NAME.prv, NAME.prv.gz, its NAME.pcf or NAME.row, or NAME
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// NVTX range whose occurrences are the iterations (default: the range named
    /// like iter, step or epoch that takes the most time); an unknown name is an
    /// error that lists the trace's ranges
    #[arg(long, value_name = "NAME")]
    pub iterations: Option<String>,

    /// Rows of the printed tables (the files list all)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Write the page, the JSON and the CSV tables into DIR (made by the report,
    /// with a marker file; an existing directory without it is refused)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Write the report as one self-contained HTML page (inline SVG, no script)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write every figure as JSON to FILE (`-`: to stdout, instead of the tables)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Shortest GPU idle gap counted (ns unless suffixed us, ms or s)
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = parse_duration)]
    pub gap_threshold: u64,

    /// Memory for what the report keeps of the trace (iterations); the trace itself
    /// is streamed
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,

    /// Accepted for compatibility: files are written only where asked
    #[arg(long, hide = true)]
    pub no_files: bool,
}

/// A duration in ns (`1ms`, `500us`, `2s`, `1000000`).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    parse_time(text).map(|ns| ns as u64)
}

/// `--time-window`: nanoseconds from the start of the uncut trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindowArg {
    pub start: i64,
    /// `None`: to the end of the trace.
    pub end: Option<i64>,
}

/// `START:END`, each `1500000`, `1500us`, `1.5ms`, `0.0015s` or empty.
pub fn parse_time_window(text: &str) -> Result<TimeWindowArg, String> {
    let (start, end) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}' is not START:END (e.g. 1.5s:3s)"))?;
    let start = match start.trim() {
        "" => 0,
        t => parse_time(t)?,
    };
    let end = match end.trim() {
        "" => None,
        t => Some(parse_time(t)?),
    };
    if end.is_some_and(|e| e <= start) {
        return Err(format!("'{text}': the end must come after the start"));
    }
    Ok(TimeWindowArg { start, end })
}

/// A time in ns: a number with an optional unit (ns, us, ms, s).
fn parse_time(text: &str) -> Result<i64, String> {
    let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((text, 1.0));
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a time like 2.5s, 300ms, 40us or 1000 (ns)"))?;
    if !value.is_finite() || value < 0.0 || value * scale >= 9.0e18 {
        return Err(format!("'{text}': a time from 0 up"));
    }
    Ok((value * scale).round() as i64)
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SyncArg {
    /// Session start times (`utcEpochNs`) of each report
    Session,
    /// Also make the ends of MPI_Init coincide
    MpiInit,
    /// Also make the ends of the first MPI_Barrier coincide
    Barrier,
    /// Also make the ends of the first NCCL kernel coincide
    Nccl,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KernelNameArg {
    /// Base names (`gemm`)
    Short,
    /// Full demangled signatures (`void gemm<float>(float*, int)`)
    Demangled,
}

/// The categories (from the registry) and an example, after the options.
fn after_help() -> String {
    let categories = format!(
        "Categories for -t/--trace and --exclude: {}",
        nsys_semantics::Registry::standard().help()
    );
    format!(
        "{}\nExample: nsys2prv-rs --sync mpi-init rank*.sqlite out.prv",
        wrap(&categories, 80)
    )
}

/// Words of `text` in lines of at most `width` characters (a longer word gets
/// a line of its own).
fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// A command line that asks for something impossible (exit code 2, like clap's own).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `1048576`, `64K`, `512M`, `4G`, `1T` (binary multiples; `B`/`iB` allowed).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a size like 512M or 4G"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b >= 1 << 16)
        .ok_or_else(|| format!("'{text}': a size from 64K up"))
}

/// Writes the completion script for `shell` to stdout.
pub fn print_completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut command = <Args as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "nsys2prv-rs", &mut std::io::stdout());
    Ok(())
}

/// Writes the man page (roff) to stdout.
pub fn print_man_page() -> anyhow::Result<()> {
    let command = <Args as clap::CommandFactory>::command();
    clap_mangen::Man::new(command).render(&mut std::io::stdout())?;
    Ok(())
}

pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || matches!(
            e.downcast_ref::<paraver_writer::WriteError>(),
            Some(paraver_writer::WriteError::BadOutputName(_))
        )
}

impl Args {
    pub fn inputs(&self) -> &[PathBuf] {
        &self.paths[..self.paths.len().saturating_sub(1)]
    }

    pub fn output(&self) -> &PathBuf {
        self.paths.last().expect("clap requires at least two paths")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_and_report_command_lines_parse() {
        let args =
            Args::try_parse_from(["nsys2prv-rs", "a.sqlite", "b.sqlite", "out.prv"]).unwrap();
        assert!(args.command.is_none());
        assert_eq!(args.inputs().len(), 2);
        let args =
            Args::try_parse_from(["nsys2prv-rs", "report", "out.prv", "--top", "3"]).unwrap();
        match args.command {
            Some(Command::Report(r)) => {
                assert_eq!(r.trace, PathBuf::from("out.prv"));
                assert_eq!(r.top, 3);
            }
            _ => panic!("report subcommand expected"),
        }
        assert!(Args::try_parse_from(["nsys2prv-rs", "out.prv"]).is_err());
        // After a conversion option, `report` is a path (a file named report).
        let args =
            Args::try_parse_from(["nsys2prv-rs", "-t", "nvtx", "report", "out.prv"]).unwrap();
        assert!(args.command.is_none());
        assert_eq!(args.inputs(), [PathBuf::from("report")]);
        let args = Args::try_parse_from([
            "nsys2prv-rs",
            "--time-window",
            "1.5ms:2s",
            "--report",
            "a.sqlite",
            "out.prv",
        ])
        .unwrap();
        assert_eq!(args.report, Some(None));
        assert_eq!(
            args.time_window,
            Some(TimeWindowArg {
                start: 1_500_000,
                end: Some(2_000_000_000)
            })
        );
        let args =
            Args::try_parse_from(["nsys2prv-rs", "--report=rep", "a.sqlite", "out.prv"]).unwrap();
        assert_eq!(args.report, Some(Some(PathBuf::from("rep"))));
        assert_eq!(args.inputs(), [PathBuf::from("a.sqlite")]);
        assert!(Args::try_parse_from([
            "nsys2prv-rs",
            "--time-window",
            "0:1s",
            "--nvtx-range",
            "x",
            "a.sqlite",
            "out.prv",
        ])
        .is_err());
    }

    #[test]
    fn time_windows_take_units_and_open_ends() {
        assert_eq!(
            parse_time_window("2s:"),
            Ok(TimeWindowArg {
                start: 2_000_000_000,
                end: None
            })
        );
        assert_eq!(
            parse_time_window(":40us"),
            Ok(TimeWindowArg {
                start: 0,
                end: Some(40_000)
            })
        );
        assert_eq!(
            parse_time_window("100:250"),
            Ok(TimeWindowArg {
                start: 100,
                end: Some(250)
            })
        );
        assert!(parse_time_window("3s:1s").is_err());
        assert!(parse_time_window("1s").is_err());
        assert!(parse_time_window("-1:2").is_err());
        assert!(parse_time_window("abc:2").is_err());
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("12").is_err());
        assert!(parse_size("lots").is_err());
    }
}
