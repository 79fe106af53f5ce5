//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "nsys2prv-rs",
    version,
    about = "Convert NVIDIA Nsight Systems reports (one per rank) into one Paraver trace",
    after_help = "Categories for -t/--trace and --exclude: cuda-api, kernels, memory, sync (cuda: these four),\n\
                  nvtx, nccl, mpi, osrt, openmp, openacc, sched, or all.\n\
                  Example: nsys2prv-rs --sync mpi-init rank*.sqlite out.prv"
)]
pub struct Args {
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

pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || matches!(
            e.downcast_ref::<paraver_writer::WriteError>(),
            Some(paraver_writer::WriteError::BadOutputName(_))
        )
}

impl Args {
    pub fn inputs(&self) -> &[PathBuf] {
        &self.paths[..self.paths.len() - 1]
    }

    pub fn output(&self) -> &PathBuf {
        self.paths.last().expect("clap requires at least two paths")
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

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
