//! Command-line arguments.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use nsys_semantics::cuts::NvtxRangeSpec;
use nsys_semantics::ranks::RankSelection;
use nsys_semantics::Category;

use nsys2prv_convert::bsc_config::BscConfig;
pub use nsys2prv_convert::config::trace_name;
use nsys2prv_convert::config::{
    self, ClockSync, Config, Cuts, Inputs, KernelNameChoice, MetricTypesChoice, Mode, Output,
    ReportRequest, Resources, Selection,
};
pub use nsys2prv_convert::error::UsageError;

/// `0.1.0 (commit 1a2b3c4d5e6f, x86_64-unknown-linux-musl)`: what was built,
/// from which commit, for which target (see build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("NSYS2PRV_COMMIT"),
    ", ",
    env!("NSYS2PRV_TARGET"),
    ")"
);

// Subcommands and the conversion's positionals exclude each other, and a
// subcommand lifts the requirement of two paths: `nsys2prv-rs a.sqlite out.prv`
// converts, `nsys2prv-rs report out.prv` reports.
#[derive(Parser, Debug)]
#[command(
    name = "nsys2prv-rs",
    version = VERSION,
    about = "Convert NVIDIA Nsight Systems reports (one per rank) into one Paraver trace",
    override_usage = USAGE,
    after_help = short_guide(),
    after_long_help = long_guide(),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The reports (.nsys-rep, .qdrep, .sqlite exports, or directories of
    /// them), then the output trace: NAME.prv, NAME.prv.gz, or NAME (NAME.prv is
    /// written)
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
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

    /// How GPU metrics and NIC counters are numbered: as BSC nsys2prv 0.6 does
    /// (9400 + metricId, 9500 + metric index, values as recorded: its views read
    /// them), or by metric name (the same on every GPU model; percentages x100).
    /// A job whose reports give one id two names falls back to names, with a warning
    #[arg(long, value_enum, default_value_t = MetricTypesArg::Bsc)]
    pub metric_types: MetricTypesArg,

    /// Callers written with each CPU sample: the sampled function and its callers
    /// at levels 1..N (types 30000000 + level, as Extrae; 0: the function only)
    #[arg(long, value_name = "N", default_value_t = nsys_semantics::options::DEFAULT_SAMPLING_DEPTH,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(nsys_semantics::options::MAX_SAMPLING_DEPTH)))]
    pub sampling_depth: u32,

    /// How to align the reports' clocks: session start times only, or also make an
    /// event every rank shares coincide
    #[arg(long, value_enum, default_value_t = SyncArg::Session)]
    pub sync: SyncArg,

    /// Where to put the bundled Paraver views (default: NAME.cfgs/ next to the trace)
    #[arg(long, value_name = "DIR")]
    pub cfgs_dir: Option<PathBuf>,

    /// Write every bundled view, also those the trace has no data for (by
    /// default only the views it can fill); NAME.cfgs/INDEX.md lists them
    #[arg(long)]
    pub all_views: bool,

    /// Memory for records before they spill to temporary files (e.g. 512M, 4G);
    /// the tool's peak stays near this whatever the input size
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,

    /// Where spilled records go (default: the output's directory), in unnamed
    /// files that vanish with the process
    #[arg(long, value_name = "DIR")]
    pub tmp_dir: Option<PathBuf>,

    /// Keep only this part of the trace, in the uncut trace's time, each end with
    /// its unit (ns, us, ms or s: 1.5s:2500ms; either end may be left out: 2s:,
    /// :500ms); every category is cut and the result starts at 0
    #[arg(long, value_name = "START:END", value_parser = parse_time_window, conflicts_with_all = ["nvtx_range", "filter_nvtx"])]
    pub time_window: Option<TimeWindowArg>,

    /// Apply --time-window in the merge only, reading every row (the cut is
    /// otherwise applied where rows are read; the trace is the same)
    #[arg(long, hide = true)]
    pub cut_in_merge: bool,

    /// Keep only the time of an NVTX range: NAME (from the first such range to the
    /// last) or NAME#N (the N-th such range of every thread that has one)
    #[arg(long, value_name = "NAME[#N]", conflicts_with = "filter_nvtx")]
    pub nvtx_range: Option<NvtxRangeSpec>,

    /// BSC nsys2prv's -f: the same as --nvtx-range (which cuts every category;
    /// BSC's filtered the CUDA API calls only)
    #[arg(short = 'f', long = "filter-nvtx", value_name = "NAME[#N]")]
    pub filter_nvtx: Option<NvtxRangeSpec>,

    /// Write NAME.prv.gz (gzip) whatever the output's name (BSC nsys2prv's -z)
    #[arg(short = 'z', long)]
    pub compress: bool,

    /// Export .nsys-rep reports again even when an export exists beside them or
    /// in NAME.cache/ (BSC nsys2prv's --force-sqlite)
    #[arg(long)]
    pub force_sqlite: bool,

    /// Show the threads Nsight Systems adds to every process (its injection
    /// and daemon threads), hidden by default
    #[arg(long)]
    pub keep_nsys_threads: bool,

    /// Accepted for compatibility with BSC nsys2prv: the trace is always sorted
    #[arg(short = 's', long)]
    pub sort: bool,

    /// After writing the trace, print its GPU efficiency report; with =DIR, also
    /// write the report's page, JSON and CSV files into DIR (see the report subcommand)
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub report: Option<Option<PathBuf>>,

    /// Only say what would be translated: reports, hosts, ranks, rows per
    /// category, estimated trace size and time, reports that need exporting
    /// (row counts only; creates, exports and changes nothing)
    #[arg(long)]
    pub dry_run: bool,

    /// Reports translated at once (default: all cores; under `--shard slurm`,
    /// the task's CPUs)
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Leave out reports that cannot be read (corrupt, truncated, failed export)
    /// instead of stopping: the rest is converted, the skipped reports are listed
    /// at the end and in NAME.skipped.txt, and the exit status is 3
    #[arg(long)]
    pub skip_bad: bool,

    /// Convert only the reports (and processes) of these MPI ranks, keeping their
    /// rank numbers: N, A-B (both included) or START:END:STEP (END excluded,
    /// either end may be left out: ::64 is every 64th rank from 0), separated by
    /// commas (0-15,64,128); messages to ranks left out are counted, not drawn
    #[arg(long, value_name = "LIST", value_parser = parse_ranks)]
    pub ranks: Option<RankSelection>,

    /// Sharded conversion (see SHARDED CONVERSION): translate shard I of N into
    /// NAME.parts/ (I/N, planning first if no plan is there), or, with `slurm`,
    /// do everything inside a Slurm job step (`srun nsys2prv-rs --shard slurm
    /// ...`): task 0 plans, every task translates its shard and merges a time
    /// slice of the trace, task 0 finishes and installs it
    #[arg(long, value_name = "I/N|slurm", value_parser = parse_shard, conflicts_with_all = ["dry_run", "plan_shards"])]
    pub shard: Option<ShardSpec>,

    /// Only plan a sharded conversion into N shards: check the inputs and write
    /// NAME.parts/plan (the shards plan by themselves when it is missing)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "dry_run")]
    pub plan_shards: Option<u32>,

    /// Keep NAME.parts/ after the merge of a sharded conversion (removed by default)
    #[arg(long)]
    pub keep_parts: bool,

    /// Accepted for compatibility with BSC nsys2prv: several inputs are always merged
    #[arg(short = 'm', long = "multi-report")]
    pub multi_report: bool,

    /// A label for the trace, kept in its metadata file NAME.pmf (`user_labels`);
    /// give it again for more (BSC nsys2prv 0.6's -L)
    #[arg(short = 'L', long = "label", value_name = "LABEL")]
    pub label: Vec<String>,

    /// A description of the trace, kept in NAME.pmf (`user_description`)
    #[arg(long, value_name = "TEXT")]
    pub description_text: Option<String>,

    /// The description from a file (its line breaks become spaces), kept in
    /// NAME.pmf instead of --description-text (as BSC nsys2prv 0.6)
    #[arg(long, value_name = "FILE")]
    pub description_file: Option<PathBuf>,

    /// BSC nsys2prv's: leave out what starts before NS, in each report's own
    /// time (ns from its session start, as the export stores it; 2.5s also
    /// reads): rows that cross a limit are left out, not cut, and times are
    /// kept (--time-window cuts the merged trace instead)
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_limit)]
    pub time_limit_start: Option<i64>,

    /// BSC nsys2prv's: leave out what ends after NS, in each report's own time
    /// (see --time-limit-start)
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_limit)]
    pub time_limit_end: Option<i64>,

    /// BSC nsys2prv's: leave out kernels and memory operations (its kernels
    /// include both): the same as --exclude kernels,memory
    #[arg(long)]
    pub exclude_kernels: bool,

    /// BSC nsys2prv's: write only the CUDA API calls that last at least NS
    /// (and their launch arrows)
    #[arg(long, value_name = "NS", value_parser = parse_limit)]
    pub filter_cuda_calls_duration: Option<i64>,

    /// BSC nsys2prv's: write only the CUDA API calls of these names,
    /// comma-separated (cudaLaunchKernel or its exported name
    /// cudaLaunchKernel_v7000)
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub filter_cuda_calls_include_name: Vec<String>,

    /// BSC nsys2prv's: leave out the CUDA API calls of these names,
    /// comma-separated
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub filter_cuda_calls_exclude_name: Vec<String>,

    /// BSC nsys2prv's -N: name the .row as BSC does with it: threads "name
    /// (1.T.t)", tasks by their first thread, "name (1.T)" (by default tasks
    /// are "rank R (host:pid)" and threads "name (rank R, tid)")
    #[arg(short = 'N', long)]
    pub thread_name: bool,

    /// BSC nsys2prv's -c: once the trace is written, remove the exports this
    /// tool made of .nsys-rep reports (NAME.cache/); never a .sqlite it was given
    #[arg(short = 'c', long)]
    pub clean: bool,

    /// BSC nsys2prv's: print each phase's time and append it to timings.csv in
    /// the current directory (BSC's columns: timestamp, region, duration_s,
    /// num_reports, total_events, trace_size_b)
    #[arg(long)]
    pub timing: bool,

    /// BSC nsys2prv 0.6's configuration file (TOML): NVTX domains (event
    /// types, which are translated, payloads, start/end ranges), clean,
    /// force_export; see BSC NSYS2PRV below
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Only errors (also before or after a subcommand: `-q merge t.prv`)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// More detail (per-report counts)
    #[arg(short, long, global = true)]
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
    /// What changed between two runs: two traces written by nsys2prv-rs, compared
    ///
    /// Iteration time per rank, efficiency factors, kernels matched by name (by
    /// contribution to the time difference; new and vanished ones), NCCL per
    /// collective and message size, memory operations, NVTX ranges, GPU idle gaps,
    /// and a one-line verdict. `--fail-if-slower PCT` exits 4 when NEW's iteration
    /// time (or GPU busy time per GPU) grew by more than PCT percent.
    Diff(DiffArgs),
    /// Merge the parts of a sharded conversion (NAME.parts/) into the trace
    ///
    /// Run after every `--shard I/N` has finished (e.g. a Slurm job with
    /// --dependency=afterok on the array). The options are the plan's; a missing
    /// or failed shard makes the merge refuse, naming the shards to run again.
    ///
    /// The merge can be split by time across tasks: `merge --shard I/N OUTPUT`
    /// for every I (e.g. a job array) writes time slice I of N of the trace's
    /// body into NAME.parts/, reading only that span of time of every part;
    /// then a plain `merge OUTPUT` writes the header, copies the slices after
    /// it, writes the .pcf, .row and views, and installs the set: the same
    /// files as one merge (a .prv.gz: the same text; its gzip members end where
    /// slices do). A missing or failed slice makes it refuse, naming the
    /// `merge --shard I/N` to run again; nothing is installed. Run as task I of
    /// an N-task Slurm step (`srun -n N ... merge --shard
    /// $SLURM_PROCID/$SLURM_NTASKS`), each task also copies its slice into the
    /// trace at its offset, and the plain merge only writes the header.
    Merge(MergeArgs),
    /// Print a shell completion script (e.g. `nsys2prv-rs completions bash > /etc/bash_completion.d/nsys2prv-rs`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page in roff (e.g. `nsys2prv-rs man > ~/.local/share/man/man1/nsys2prv-rs.1`)
    Man,
}

#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The trace the plan was made for: NAME.prv, NAME.prv.gz or NAME (its parts
    /// are in NAME.parts/)
    #[arg(value_name = "OUTPUT")]
    pub output: PathBuf,

    /// Keep NAME.parts/ after the merge (removed by default)
    #[arg(long)]
    pub keep_parts: bool,

    /// Memory for the merge's read buffers (e.g. 512M, 4G)
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,

    /// Worker threads formatting the trace (default: all cores)
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Print each phase's time and append it to timings.csv (BSC nsys2prv's --timing)
    #[arg(long)]
    pub timing: bool,

    /// Merge only time slice I of N of the trace (from 0; every shard must be
    /// done) into NAME.parts/; a plain `merge OUTPUT` then finishes the trace
    #[arg(long, value_name = "I/N", value_parser = parse_slice)]
    pub shard: Option<(u32, u32)>,
}

/// `merge --shard I/N`: slice I of N.
fn parse_slice(text: &str) -> Result<(u32, u32), String> {
    match parse_shard(text) {
        Ok(ShardSpec::One { index, count }) => Ok((index, count)),
        Ok(ShardSpec::Slurm) => Err(
            "'slurm' is for conversions (srun nsys2prv-rs --shard slurm INPUT... OUTPUT merges by slices itself); merge takes I/N".into(),
        ),
        Err(e) => Err(e.replace("(shard I of N", "(slice I of N").replace(" or slurm", "")),
    }
}

/// `--shard`: one shard of N, or every shard of a Slurm job step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardSpec {
    Slurm,
    /// Shard `index` (from 0) of `count`.
    One {
        index: u32,
        count: u32,
    },
}

/// The flags every subcommand takes too (`global`).
const GLOBAL_FLAGS: &[&str] = &["-q", "--quiet", "-v", "--verbose"];

/// `nsys2prv-rs -q merge t.prv` as `nsys2prv-rs merge -q t.prv`: global flags
/// given before a subcommand are moved after its name. Clap cannot take them
/// there itself: with `args_conflicts_with_subcommands` (a conversion's options
/// never apply to a subcommand), any argument before a subcommand makes the
/// line a conversion, and `merge` an input.
pub fn global_flags_after_subcommand(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let leading = argv
        .iter()
        .skip(1)
        .take_while(|a| GLOBAL_FLAGS.iter().any(|f| a.as_os_str() == *f))
        .count();
    let subcommand = argv.get(1 + leading).and_then(|a| a.to_str());
    let is_subcommand = subcommand.is_some_and(|name| {
        Args::command()
            .get_subcommands()
            .any(|c| c.get_name() == name || c.get_all_aliases().any(|a| a == name))
            || name == "help"
    });
    if leading == 0 || !is_subcommand {
        return argv;
    }
    let mut moved = argv;
    let flags: Vec<_> = moved.drain(1..1 + leading).collect();
    moved.splice(2..2, flags);
    moved
}

/// `I/N` (0 <= I < N) or `slurm`.
pub fn parse_shard(text: &str) -> Result<ShardSpec, String> {
    if text == "slurm" {
        return Ok(ShardSpec::Slurm);
    }
    let bad = || format!("'{text}' is not I/N (shard I of N, from 0: 3/8) or slurm");
    let (index, count) = text.split_once('/').ok_or_else(bad)?;
    let index: u32 = index.trim().parse().map_err(|_| bad())?;
    let count: u32 = count.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(format!(
            "'{text}': shards are numbered from 0 to N-1 (as SLURM_ARRAY_TASK_ID with --array=0-{})",
            count.saturating_sub(1)
        ));
    }
    Ok(ShardSpec::One { index, count })
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// The trace: NAME.prv, NAME.prv.gz, its NAME.pcf or NAME.row, or NAME; with
    /// several traces (runs of one program, the first the reference), the model's
    /// factors over the runs with the computational scalability
    #[arg(value_name = "TRACE", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,

    /// With several runs: weak scaling (the same problem per GPU; default: strong,
    /// the same problem on more GPUs)
    #[arg(long)]
    pub weak: bool,

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

    /// Shortest GPU idle gap counted, with its unit (500us, 1ms, 0.2s)
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = parse_duration)]
    pub gap_threshold: u64,

    /// Report on part of the trace only: START:END from the trace's start (1.5s:3s,
    /// 500ms:, :2s); intervals crossing its edges are clipped to it
    #[arg(long, value_name = "START:END", value_parser = parse_time_window, conflicts_with = "nvtx_range")]
    pub time_window: Option<TimeWindowArg>,

    /// Report on the span of an NVTX range only, as the conversion's --nvtx-range:
    /// from the first begin of a range of that name to the last end, or with #N the
    /// N-th range of every thread that has N
    #[arg(long, value_name = "NAME[#N]")]
    pub nvtx_range: Option<NvtxRangeSpec>,

    /// Memory for what the report keeps of the trace (iterations); the trace itself
    /// is streamed
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,

    /// Pipeline bubbles of N stages: the GPUs in rank order cut into N blocks of
    /// equal size, stage 0 first (default: the stages are found from the NCCL
    /// point-to-point transfers, when they link the GPUs in chains)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub pipeline_stages: Option<u64>,

    /// Accepted for compatibility: files are written only where asked
    #[arg(long, hide = true)]
    pub no_files: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct DiffArgs {
    /// The reference run's trace (NAME.prv, NAME.prv.gz, its .pcf or .row, or NAME)
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The run to compare with it
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// Exit with status 4 when NEW's iteration time (without iterations in both
    /// runs: its GPU busy time per GPU) is more than PCT percent above BASE's
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,

    /// NVTX range whose occurrences are the iterations, in both runs (default: as
    /// `report` guesses it)
    #[arg(long, value_name = "NAME")]
    pub iterations: Option<String>,

    /// Rows of the printed tables (the files list all)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Write the comparison as one self-contained HTML page
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write every figure as JSON to FILE (`-`: to stdout, instead of the tables)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Shortest GPU idle gap counted, with its unit (500us, 1ms, 0.2s)
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = parse_duration)]
    pub gap_threshold: u64,

    /// Memory for what each report keeps of its trace (iterations)
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub memory_limit: u64,
}

/// A duration in ns, with its unit (`1ms`, `500us`, `2s`).
/// `--ranks LIST` (the grammar: [`RankSelection`]).
pub fn parse_ranks(text: &str) -> Result<RankSelection, String> {
    text.parse()
}

pub fn parse_duration(text: &str) -> Result<u64, String> {
    parse_time(text).map(|ns| ns as u64)
}

/// A time in ns as BSC nsys2prv takes it (a bare number: `1500000000`), or
/// with a unit (`1.5s`).
pub fn parse_limit(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(ns) => Ok(ns),
        Err(_) if text.trim().parse::<f64>().is_ok() => Err(format!(
            "'{text}': nanoseconds as a whole number (or with a unit: 2.5s, 300ms)"
        )),
        Err(_) => parse_time(text),
    }
}

const USAGE: &str = "nsys2prv-rs [OPTIONS] <INPUT>... <OUTPUT>
       nsys2prv-rs --shard <I/N|slurm> [OPTIONS] <INPUT>... <OUTPUT>
       nsys2prv-rs merge [OPTIONS] <OUTPUT>
       nsys2prv-rs report [OPTIONS] <TRACE>...
       nsys2prv-rs diff [OPTIONS] <BASE> <NEW>
       nsys2prv-rs completions <SHELL>
       nsys2prv-rs man";

/// The `-t` words, from the registry, BSC nsys2prv's among them.
fn categories() -> String {
    let registry = nsys_semantics::Registry::standard();
    let mut bsc: Vec<&str> = registry
        .iter()
        .flat_map(|c| c.bsc_names.iter().copied())
        .collect();
    bsc.sort_unstable();
    bsc.dedup();
    format!(
        "Categories for -t/--trace and --exclude: {} BSC nsys2prv's names ({}) too.",
        registry.help(),
        bsc.join(", ")
    )
}

/// `-h`'s text after the options.
fn short_guide() -> String {
    format!(
        "{}\n{EXAMPLE}\n--help tells more: inputs and nsys, the output set, exit status, signals, environment.",
        wrap(&categories(), 96)
    )
}

/// The long help's sections, also the man page's (title, text).
pub const GUIDE_SECTIONS: &[(&str, &str)] = &[
    ("INPUTS", "Nsight Systems exports (.sqlite) are read directly, with no nsys needed. A report (.nsys-rep, .qdrep) is read through the .sqlite beside it when that is a complete export at least as new; otherwise it is exported with `nsys export --type sqlite`, using the nsys of $NSYS_HOME/bin, else the one on PATH, into NAME.cache/ beside the output (never beside the reports), and reused while the report is unchanged. --force-sqlite exports again. Remove the cache with `rm -r NAME.cache` when the trace is written. A directory stands for every report in it and in its subdirectories, except those the tool made (with its .nsys2prv-rs file), hidden ones and links to directories. The rank of a process comes from the report (MPI_RANKS, MPI thread names, launcher variables), else from the last number of the report's file name as given (report_%q{SLURM_PROCID})."),
    ("OUTPUT", "NAME.prv (NAME.prv.gz with -z or that name), NAME.pcf, NAME.row, NAME.pmf (the trace's metadata in BSC nsys2prv 0.6's JSON format: the job's command, directory, modules and Slurm settings, nsys versions, the options, -L labels and --description-text/--description-file, and which report each row comes from) and the Paraver views in NAME.cfgs/ (or --cfgs-dir DIR): the views the trace has data for (all of them with --all-views), with NAME.cfgs/INDEX.md listing each with the question it answers; start with NAME.cfgs/views/start-here/. They are written into a hidden staging directory beside the output and renamed into place together at the end, the .prv last. The tool replaces only what it made: views and cache directories carry a .nsys2prv-rs file, and an existing directory without it is refused (exit 2), as is an existing NAME.prv, NAME.pcf or NAME.row that is not a Paraver file of its kind, and a NAME.pmf another tool wrote. Spilled records go to unnamed temporary files in --tmp-dir that vanish with the process. Nsight's own threads ([NSys], [NSys Comms], CUPTI worker thread) are left out unless --keep-nsys-threads."),
    ("SHARDED CONVERSION", "Thousands of reports convert on many nodes in three steps, each a plain command: plan (--plan-shards N, or the first shard to run) records the inputs (size, time, a hash of each), the options and which reports each shard translates, balanced by size, in NAME.parts/plan; translate (--shard I/N, any order, anywhere the files are) exports .nsys-rep reports on the node's $SLURM_TMPDIR or $TMPDIR and writes NAME.parts/shard-I.part atomically (a rerun of a finished shard does nothing); merge (nsys2prv-rs merge NAME.prv) reads every part and writes the same trace, byte for byte, as one process would, then removes NAME.parts/ unless --keep-parts; the merge splits by time across tasks with merge --shard I/N NAME.prv for every I, then a plain merge NAME.prv that finishes the trace. Inside an allocation, srun nsys2prv-rs --shard slurm INPUT... OUTPUT does all three (SLURM_PROCID of SLURM_NTASKS; task 0 plans, every task merges its time slice, task 0 finishes). A missing or failed shard makes the merge refuse, naming the shards to run again; parts of another plan, a changed input, or reports outside the plan are refused."),
    ("EXIT STATUS", "0 success; 1 failure, with one line naming the file and the cause; 2 usage error (a bad option, an output directory the tool did not make, or an output file that is not a Paraver file); 3 the trace was written but --skip-bad left out reports that cannot be read (listed in NAME.skipped.txt); 4 diff --fail-if-slower: NEW is slower than allowed; 130, 143, 129 interrupted by SIGINT, SIGTERM, SIGHUP."),
    ("SIGNALS", "SIGINT (Ctrl-C), SIGTERM (Slurm's time limit) and SIGHUP stop the run: the earlier output is left as it was (or, if the new set was already being renamed into place, the new set is complete), nsys exports in progress are stopped, and no temporary file is left. After SIGKILL or a crash, the next run on the same output removes what the killed run left (or finishes its renames)."),
    ("ENVIRONMENT", "NSYS_HOME: the Nsight Systems installation whose bin/nsys exports reports. NSYS2PRV_LOG: log filter (e.g. debug), overriding -q and -v."),
    ("BSC NSYS2PRV", "Its command lines run unchanged, with its meaning: its -t names (0.5.8's and 0.6's; its kernels include memory operations); -m (inputs are always merged) and -s (the trace is always sorted) are accepted; -z writes NAME.prv.gz; -f RANGE is --nvtx-range RANGE (which cuts every category); --force-sqlite exports again; --time-limit-start/--time-limit-end NS keep the rows wholly between them in each report's own time; --exclude-kernels; --filter-cuda-calls-duration/-include-name/-exclude-name; -N names the .row as BSC does (name (1.T.t)); -c removes NAME.cache/ once the trace is written; --timing appends its phases to ./timings.csv; an output name without extension gets .prv. --config FILE reads BSC 0.6's TOML: source, multi, clean, [nsys] force_export, and [capabilities.nvtx]: default (include or exclude), base_event_type (9600), project (start/end ranges on the push/pop type; by default they keep lanes of their own, 9004+), payload = {float_strategy = scale or round, attach = true}, and per domain [capabilities.nvtx.domains.NAME] (Default: ranges of no domain) event_type (a multiple of 100: the domain's block of seven types), translate, payloads, project, payload. Without it: BSC 0.6's defaults (Default 9600, NCCL 9500, neSmiK 81000, others by a hash of their name). An unknown key or value is an error naming it with its file, line and column. -L LABEL (repeatable), --description-text and --description-file go into NAME.pmf, BSC 0.6's metadata file. Every problem of a command line is named at once."),
];

const EXAMPLE: &str = "Example: nsys2prv-rs --sync mpi-init report_*.nsys-rep run.prv";

/// `--help`'s text after the options: the categories, an example and the
/// sections of the man page.
fn long_guide() -> String {
    let mut text = format!("{}\n\n{EXAMPLE}", wrap(&categories(), 96));
    for (title, body) in GUIDE_SECTIONS {
        text += &format!("\n\n{title}\n{}", wrap(body, 96));
    }
    text
}

/// `text` broken into lines of at most `width` columns, at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

/// `--time-window`: nanoseconds from the start of the uncut trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindowArg {
    pub start: i64,
    /// `None`: to the end of the trace.
    pub end: Option<i64>,
}

/// `START:END`, each `1500000ns`, `1500us`, `1.5ms`, `0.0015s`, `0` or empty.
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

/// A time in ns: a number with its unit (ns, us, ms, s); a bare number is
/// refused (is 1500 ns or s?), except 0.
fn parse_time(text: &str) -> Result<i64, String> {
    let unit = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)));
    let (number, scale) = match unit {
        Some(found) => found,
        None if text.trim().parse::<f64>().is_ok_and(|v| v == 0.0) => (text, 1.0),
        None if text.trim().parse::<f64>().is_ok() => {
            return Err(format!(
                "'{text}' has no unit: write {text}ns, {text}us, {text}ms or {text}s"
            ))
        }
        None => (text, 1.0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a time like 2.5s, 300ms, 40us or 1000ns"))?;
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricTypesArg {
    /// BSC nsys2prv 0.6's numbers and units
    Bsc,
    /// One type per metric name
    Name,
}

/// A command line that asks for something impossible (exit code 2, like clap's own).
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
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "nsys2prv-rs", &mut script);
    crate::stdout::write(&script)
}

/// Writes the man page (roff) to stdout: clap's sections, then the
/// subcommands (without references to pages that do not exist) and the guide.
pub fn print_man_page() -> anyhow::Result<()> {
    let command = <Args as clap::CommandFactory>::command();
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        out.extend_from_slice(
            format!(".TP\n\\fB{}\\fR\n{}\n", roff(sub.get_name()), roff(&about)).as_bytes(),
        );
    }
    out.extend_from_slice(
        format!(
            ".PP\n{}\n",
            roff("See `nsys2prv-rs report --help` for the report's options.")
        )
        .as_bytes(),
    );
    out.extend_from_slice(format!(".SH CATEGORIES\n{}\n", roff(&categories())).as_bytes());
    out.extend_from_slice(format!(".SH EXAMPLE\n{}\n", roff(EXAMPLE)).as_bytes());
    for (title, text) in GUIDE_SECTIONS {
        out.extend_from_slice(format!(".SH {title}\n{}\n", roff(text)).as_bytes());
    }
    man.render_version_section(&mut out)?;
    crate::stdout::write(&out)
}

/// Text safe in roff: backslashes and hyphens escaped, no line starting with a
/// control character.
fn roff(text: &str) -> String {
    text.replace('\\', "\\e")
        .replace('-', "\\-")
        .lines()
        .map(|l| match l.starts_with(['.', '\'']) {
            true => format!("\\&{l}"),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_usage_error(e: &anyhow::Error) -> bool {
    nsys2prv_convert::error::is_usage_error(e)
        || e.downcast_ref::<nsys2prv_report::UsageError>().is_some()
}

impl Args {
    pub fn inputs(&self) -> &[PathBuf] {
        &self.paths[..self.paths.len().saturating_sub(1)]
    }

    pub fn output(&self) -> &PathBuf {
        self.paths.last().expect("clap requires at least two paths")
    }

    /// The trace to write: OUTPUT as given when it ends in `.prv` or `.prv.gz`;
    /// `NAME.prv` for another name, as BSC nsys2prv does; `.gz` added with `-z`.
    pub fn output_trace(&self) -> Result<PathBuf, UsageError> {
        trace_name(self.output(), self.compress)
    }

    /// `--nvtx-range`, or BSC's `-f`.
    pub fn nvtx_range_spec(&self) -> Option<&NvtxRangeSpec> {
        self.nvtx_range.as_ref().or(self.filter_nvtx.as_ref())
    }
}

/// Every problem of a command line, in one message: one problem on its line,
/// several listed below a count.
pub fn problems_message(problems: &[String]) -> String {
    match problems {
        [one] => one.clone(),
        many => {
            let mut text = format!("{} problems with the command line:", many.len());
            for p in many {
                text += &format!("\n  - {p}");
            }
            text
        }
    }
}

impl Args {
    /// What a conversion's arguments ask for that cannot be done, all of it
    /// (empty when nothing is wrong): unknown categories, an output name that
    /// is not a trace's, a bad `--config`, limits in the wrong order, a foreign
    /// `timings.csv`; with any of those, inputs that do not exist too.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let registry = nsys_semantics::Registry::standard();
        for (flag, words) in [("-t/--trace", &self.trace), ("--exclude", &self.exclude)] {
            for word in words.iter().filter(|w| !w.trim().is_empty()) {
                if registry.select(word).is_none() {
                    problems.push(format!(
                        "{flag}: {}",
                        registry
                            .parse_list(std::slice::from_ref(word))
                            .expect_err("an unknown word")
                    ));
                }
            }
        }
        if problems.is_empty() {
            if let Err(e) = self.categories() {
                problems.push(e.0);
            }
        }
        if let Err(e) = self.output_trace() {
            problems.push(e.0);
        }
        match self.read_config() {
            Ok(config) => problems.extend(
                registry
                    .nvtx_config_problems(&config.nvtx)
                    .into_iter()
                    .map(|p| match &self.config {
                        Some(file) => format!("{}: capabilities.nvtx.{p}", file.display()),
                        None => format!("capabilities.nvtx.{p}"),
                    }),
            ),
            Err(config_problems) => problems.extend(config_problems),
        }
        if let (Some(start), Some(end)) = (self.time_limit_start, self.time_limit_end) {
            if end <= start {
                problems.push(format!(
                    "--time-limit-end {end} is not after --time-limit-start {start}"
                ));
            }
        }
        if self.timing {
            problems.extend(nsys2prv_convert::timing::problem_with_csv());
        }
        if let Err(e) = nsys2prv_convert::pmf::check_description(self.description_file.as_deref()) {
            problems.push(e.to_string());
        }
        if !problems.is_empty() && self.command.is_none() {
            for input in self.inputs().iter().filter(|i| !i.exists()) {
                problems.push(format!("{}: no such file", input.display()));
            }
        }
        problems
    }

    /// The categories to translate: `-t` (default: all) less `--exclude` and,
    /// with `--exclude-kernels`, kernels and memory operations.
    pub fn categories(&self) -> Result<BTreeSet<Category>, UsageError> {
        Selection {
            trace: self.trace.clone(),
            exclude: self.exclude.clone(),
            exclude_kernels: self.exclude_kernels,
            ..Selection::default()
        }
        .categories()
    }

    /// The `--config` file, else BSC's defaults.
    pub fn read_config(&self) -> Result<BscConfig, Vec<String>> {
        match &self.config {
            Some(path) => nsys2prv_convert::bsc_config::load(path),
            None => Ok(BscConfig::default()),
        }
    }

    /// The conversion these arguments ask for (the library's [`Config`]):
    /// the options as given, with the `--config` file applied (its NVTX
    /// settings, `clean` and `force_export`, as -c and --force-sqlite).
    pub fn to_config(&self) -> Result<Config, UsageError> {
        let bsc = self
            .read_config()
            .map_err(|problems| UsageError(problems_message(&problems)))?;
        let mode = match (self.shard, self.plan_shards, self.dry_run) {
            (Some(ShardSpec::Slurm), _, _) => Mode::SlurmStep,
            (Some(ShardSpec::One { index, count }), _, _) => Mode::Shard { index, count },
            (None, Some(shards), _) => Mode::PlanShards(shards),
            (None, None, true) => Mode::DryRun,
            (None, None, false) => Mode::Convert,
        };
        Ok(Config {
            inputs: Inputs {
                reports: self.inputs().to_vec(),
                skip_bad: self.skip_bad,
                force_export: self.force_sqlite || bsc.force_export,
                clean_exports: self.clean || bsc.clean,
            },
            selection: Selection {
                trace: self.trace.clone(),
                exclude: self.exclude.clone(),
                exclude_kernels: self.exclude_kernels,
                kernel_names: match self.kernel_names {
                    KernelNameArg::Short => KernelNameChoice::Short,
                    KernelNameArg::Demangled => KernelNameChoice::Demangled,
                },
                metric_types: match self.metric_types {
                    MetricTypesArg::Bsc => MetricTypesChoice::Bsc,
                    MetricTypesArg::Name => MetricTypesChoice::Name,
                },
                sampling_depth: self.sampling_depth,
                keep_nsys_threads: self.keep_nsys_threads,
                time_limit_start: self.time_limit_start,
                time_limit_end: self.time_limit_end,
                cuda_calls_min_duration: self.filter_cuda_calls_duration,
                cuda_calls_include: self.filter_cuda_calls_include_name.clone(),
                cuda_calls_exclude: self.filter_cuda_calls_exclude_name.clone(),
                nvtx: bsc.nvtx,
                ranks: self.ranks.clone(),
            },
            cuts: Cuts {
                time_window: self.time_window.map(|w| config::TimeWindow {
                    start: w.start,
                    end: w.end,
                }),
                nvtx_range: self.nvtx_range_spec().cloned(),
                read_window: None,
                in_merge_only: self.cut_in_merge,
            },
            sync: match self.sync {
                SyncArg::Session => ClockSync::Session,
                SyncArg::MpiInit => ClockSync::MpiInit,
                SyncArg::Barrier => ClockSync::Barrier,
                SyncArg::Nccl => ClockSync::Nccl,
            },
            resources: Resources {
                jobs: self.jobs,
                memory_limit: self.memory_limit,
                spill_dir: self.tmp_dir.clone(),
            },
            output: Output {
                trace: self.output_trace()?,
                views_dir: self.cfgs_dir.clone(),
                all_views: self.all_views,
                bsc_row_names: self.thread_name,
                report: self.report.clone().map(|dir| match dir {
                    Some(dir) => ReportRequest::PrintAndWrite(dir),
                    None => ReportRequest::Print,
                }),
                labels: self.label.clone(),
                description_text: self.description_text.clone(),
                description_file: self.description_file.clone(),
                keep_parts: self.keep_parts,
                timing: self.timing,
            },
            mode,
            quiet: self.quiet,
        })
    }
}

impl MergeArgs {
    /// What the merging process sets of the plan's conversion.
    pub fn settings(&self, quiet: bool) -> nsys2prv_convert::MergeSettings {
        nsys2prv_convert::MergeSettings {
            resources: Resources {
                jobs: self.jobs,
                memory_limit: self.memory_limit,
                spill_dir: None,
            },
            keep_parts: self.keep_parts,
            timing: self.timing,
            quiet,
            slice: self.shard,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option that shapes the trace reaches the Config, survives the
    /// plan's JSON, and is listed in the fixed form NAME.pmf's flags come from.
    #[test]
    fn the_command_lines_config_survives_the_plan() {
        let line = [
            "nsys2prv-rs",
            "-t",
            "cuda,nvtx",
            "--exclude",
            "sched",
            "--sync",
            "barrier",
            "--kernel-names",
            "demangled",
            "--metric-types",
            "name",
            "--cfgs-dir",
            "views dir",
            "--time-window",
            "1.5ms:",
            "--ranks",
            "0-3,::64",
            "--keep-nsys-threads",
            "--all-views",
            "--sampling-depth",
            "2",
            "--skip-bad",
            "--force-sqlite",
            "-L",
            "a label",
            "--description-text",
            "words",
            "--time-limit-start",
            "-20",
            "--time-limit-end=3s",
            "--exclude-kernels",
            "--filter-cuda-calls-duration",
            "700",
            "--filter-cuda-calls-include-name",
            "cudaMalloc,cudaFree",
            "--filter-cuda-calls-exclude-name=cudaMemcpy",
            "-N",
            "--report=rep",
            "-j",
            "3",
            "-q",
            "a.sqlite",
            "out",
        ];
        let config = Args::try_parse_from(line).unwrap().to_config().unwrap();
        assert_eq!(config.output.trace, PathBuf::from("out.prv"));
        assert_eq!(config.inputs.reports, vec![PathBuf::from("a.sqlite")]);
        assert_eq!((config.resources.jobs, config.quiet), (Some(3), true));
        let planned = config.for_plan();
        let text = serde_json::to_string(&planned).unwrap();
        let back: Config = serde_json::from_str(&text).unwrap();
        assert_eq!(back, planned);
        let options = back.shaping_options().unwrap();
        assert_eq!(options, config.shaping_options().unwrap());
        assert_eq!(
            options,
            [
                "--trace=cuda,nvtx",
                "--exclude=sched",
                "--kernel-names=demangled",
                "--metric-types=name",
                "--sync=barrier",
                "--cfgs-dir=views dir",
                "--time-window=1500000ns:",
                "--ranks=0-3,0::64",
                "--sampling-depth=2",
                "--report=rep",
                "--label=a label",
                "--description-text=words",
                "--keep-nsys-threads",
                "--all-views",
                "--skip-bad",
                "--force-sqlite",
                "--exclude-kernels",
                "--thread-name",
                "--time-limit-start=-20",
                "--time-limit-end=3000000000",
                "--filter-cuda-calls-duration=700",
                "--filter-cuda-calls-include-name=cudaMalloc,cudaFree",
                "--filter-cuda-calls-exclude-name=cudaMemcpy",
            ]
        );
        // A shard's own settings make no other plan.
        let other = Args::try_parse_from(line.iter().map(|a| match *a {
            "3" => "1",
            "-q" => "-v",
            a => a,
        }))
        .unwrap()
        .to_config()
        .unwrap();
        assert_eq!(other.for_plan(), planned);
    }

    #[test]
    fn global_flags_go_before_or_after_a_subcommand() {
        let parse = |line: &[&str]| {
            let argv = std::iter::once("nsys2prv-rs")
                .chain(line.iter().copied())
                .map(std::ffi::OsString::from)
                .collect();
            Args::try_parse_from(global_flags_after_subcommand(argv))
        };
        for line in [
            &["-q", "merge", "t.prv"][..],
            &["merge", "-q", "t.prv"][..],
            &["--quiet", "merge", "t.prv"][..],
            &["merge", "t.prv", "--quiet"][..],
        ] {
            let args = parse(line).unwrap();
            assert!(args.quiet, "{line:?}");
            match args.command {
                Some(Command::Merge(m)) => assert_eq!(m.output, PathBuf::from("t.prv")),
                other => panic!("{line:?}: {other:?}"),
            }
        }
        let args = parse(&["-v", "report", "t.prv"]).unwrap();
        assert!(args.verbose && matches!(args.command, Some(Command::Report(_))));
        // A conversion whose first input is named like a subcommand stays one.
        let args = parse(&["-q", "a.sqlite", "merge"]).unwrap();
        assert!(args.command.is_none() && args.quiet);
        // A conversion's own options make a conversion (`merge` is an input).
        let args = parse(&["-t", "cuda", "merge", "t.prv"]).unwrap();
        assert!(args.command.is_none());
        assert!(parse(&["-q", "-v", "merge", "t.prv"]).is_err());
    }

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
                assert_eq!(r.traces, [PathBuf::from("out.prv")]);
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
            parse_time_window("100ns:250ns"),
            Ok(TimeWindowArg {
                start: 100,
                end: Some(250)
            })
        );
        assert_eq!(
            parse_time_window("0:1ms"),
            Ok(TimeWindowArg {
                start: 0,
                end: Some(1_000_000)
            })
        );
        let bare = parse_time_window("100:250").unwrap_err();
        assert!(bare.contains("no unit") && bare.contains("100ns"), "{bare}");
        assert!(parse_time_window("3s:1s").is_err());
        assert!(parse_time_window("1s").is_err());
        assert!(parse_time_window("-1s:2s").is_err());
        assert!(parse_time_window("abc:2").is_err());
    }

    #[test]
    fn output_names_follow_bsc() {
        let name = |o: &str, z: bool| trace_name(std::path::Path::new(o), z).map_err(|e| e.0);
        assert_eq!(name("out", false), Ok(PathBuf::from("out.prv")));
        assert_eq!(name("d/out", true), Ok(PathBuf::from("d/out.prv.gz")));
        assert_eq!(name("out.prv", true), Ok(PathBuf::from("out.prv.gz")));
        assert_eq!(name("out.prv.gz", false), Ok(PathBuf::from("out.prv.gz")));
        assert_eq!(name("run.v2", false), Ok(PathBuf::from("run.v2.prv")));
        for bad in ["b.sqlite", "x.nsys-rep", "out.pcf", "out.row", "out.gz"] {
            assert!(name(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let args = Args::try_parse_from([
            "nsys2prv-rs",
            "-t",
            "nvtx,bogus",
            "--exclude",
            "other",
            "--time-limit-start",
            "5",
            "--time-limit-end",
            "5",
            "missing.sqlite",
            "out.pcf",
        ])
        .unwrap();
        let problems = args.problems();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(problems[0].starts_with("-t/--trace: unknown category 'bogus'"));
        assert!(problems[1].starts_with("--exclude: unknown category 'other'"));
        assert!(problems[2].contains("out.pcf"));
        assert!(problems[3].contains("--time-limit-end 5 is not after"));
        assert_eq!(problems[4], "missing.sqlite: no such file");
        let message = problems_message(&problems);
        assert!(message.starts_with("5 problems with the command line:\n  - -t/--trace"));
        // A missing input alone is the input's own error (exit 1), not a usage one.
        let args = Args::try_parse_from(["nsys2prv-rs", "missing.sqlite", "out"]).unwrap();
        assert!(args.problems().is_empty());
    }

    #[test]
    fn bsc_limits_take_bare_nanoseconds() {
        assert_eq!(parse_limit("1500000000"), Ok(1_500_000_000));
        assert_eq!(parse_limit("-20"), Ok(-20));
        assert_eq!(parse_limit("1.5s"), Ok(1_500_000_000));
        assert!(parse_limit("1.5").is_err());
        assert!(parse_limit("soon").is_err());
        let args = Args::try_parse_from([
            "nsys2prv-rs",
            "--time-limit-start",
            "-5",
            "--filter-cuda-calls-include-name",
            "cudaMalloc,cudaFree",
            "-N",
            "-c",
            "a.sqlite",
            "out",
        ])
        .unwrap();
        assert_eq!(args.time_limit_start, Some(-5));
        assert_eq!(
            args.filter_cuda_calls_include_name,
            ["cudaMalloc", "cudaFree"]
        );
        assert!(args.thread_name && args.clean);
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
