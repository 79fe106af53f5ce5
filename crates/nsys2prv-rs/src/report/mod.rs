//! `nsys2prv-rs report`: the GPU efficiency report of a written trace, computed
//! without Paraver by streaming the `.prv` (or `.prv.gz`) with its `.pcf` and `.row`.
//!
//! A GPU is one device of one task: the task's stream rows `CUDA-D<dev>.S<stream>`
//! of that device. Over the trace's span (the header's end time, T):
//!
//! * useful U = time with a compute kernel (63000006) running on any of its streams;
//! * communication C = time with an NCCL kernel (63000007) or a memory operation
//!   (63000001) and no compute kernel;
//! * idle = T − U − C.
//!
//! Efficiencies (BSC's GPU model, multiplicative like the POP metrics):
//! load balance LB = avg(U)/max(U); communication efficiency CommE =
//! max(U)/max(U+C); orchestration efficiency OrchE = max(U+C)/T; parallel
//! efficiency PE = LB·CommE·OrchE = avg(U)/T.
//!
//! The summary goes to stdout; files are written only where asked (`--out DIR`,
//! `--html FILE`, `--json FILE`).

mod assemble;
mod files;
mod html;
mod model;
mod scan;
mod svg;
mod text;
mod types;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use paraver_reader::TraceFiles;

use crate::cli::{ReportArgs, TimeWindowArg, UsageError};
pub use model::Report;
use nsys_semantics::cuts::NvtxRangeSpec;
use scan::{Scan, ScanOptions};

/// Bins of the heat maps across the run.
const BINS: usize = 240;
/// Gaps kept per GPU.
const GAPS_PER_GPU: usize = 5;

#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// NVTX range whose occurrences are iterations (default: guessed by name).
    pub iterations: Option<String>,
    /// Rows of the printed tables.
    pub top: usize,
    /// Idle gaps shorter than this are not counted.
    pub gap_threshold_ns: u64,
    pub memory_limit: u64,
    /// Print the tables on stdout.
    pub print: bool,
    /// Write every file (JSON, CSV, page) into this directory.
    pub out_dir: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// `-` for stdout (instead of the tables).
    pub json: Option<PathBuf>,
    /// Only part of the trace (`--time-window`, `--nvtx-range`).
    pub window: Option<WindowArg>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            iterations: None,
            top: 10,
            gap_threshold_ns: 1_000_000,
            memory_limit: 1 << 30,
            print: true,
            out_dir: None,
            html: None,
            json: None,
            window: None,
        }
    }
}

/// The part of the trace a report covers, as asked.
#[derive(Clone, Debug)]
pub enum WindowArg {
    Time(TimeWindowArg),
    Range(NvtxRangeSpec),
}

/// `nsys2prv-rs report TRACE`.
pub fn run_command(args: &ReportArgs) -> Result<()> {
    if args.no_files {
        eprintln!("note: --no-files is no longer needed: files are written only with --out, --html or --json");
    }
    run(
        &args.trace,
        &ReportOptions {
            iterations: args.iterations.clone(),
            top: args.top,
            gap_threshold_ns: args.gap_threshold,
            memory_limit: args.memory_limit,
            print: true,
            out_dir: args.out.clone(),
            html: args.html.clone(),
            json: args.json.clone(),
            window: match (&args.time_window, &args.nvtx_range) {
                (Some(w), _) => Some(WindowArg::Time(*w)),
                (None, Some(spec)) => Some(WindowArg::Range(spec.clone())),
                (None, None) => None,
            },
        },
    )
}

/// Computes the report of `trace`, prints it and writes the files asked for.
pub fn run(trace: &Path, options: &ReportOptions) -> Result<()> {
    let files = resolve_trace(trace)?;
    let json_to_stdout = options.json.as_deref() == Some(Path::new("-"));
    // Refuse what may not be replaced before the long part.
    if let Some(dir) = &options.out_dir {
        files::check_dir_target(dir)?;
    }
    for path in [&options.html, &options.json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
    let report = analyze(&files, options)?;
    if json_to_stdout {
        crate::stdout::write(&files::json(&report))?;
    } else if options.print {
        crate::stdout::write(report.text(options.top).as_bytes())?;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(path) = options.html.as_ref() {
        files::write_file(path, html::page(&report).as_bytes())?;
        written.push(path.clone());
    }
    if let Some(path) = options.json.as_ref().filter(|_| !json_to_stdout) {
        files::write_file(path, &files::json(&report))?;
        written.push(path.clone());
    }
    if let Some(dir) = &options.out_dir {
        let mut set = vec![
            ("report.json".to_string(), files::json(&report)),
            ("report.html".to_string(), html::page(&report).into_bytes()),
            (
                "report.txt".to_string(),
                report.text(usize::MAX).into_bytes(),
            ),
        ];
        set.extend(files::csv_tables(&report)?);
        written.extend(files::write_dir(dir, &set)?);
    }
    if options.print && !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", names.join(", "));
    }
    Ok(())
}

/// Refuses an output directory the report may not replace (before a conversion).
pub fn check_out_dir(dir: &Path) -> Result<()> {
    files::check_dir_target(dir)
}

/// The trace a name stands for: `NAME.prv`, `NAME.prv.gz`, either companion
/// (`NAME.pcf`, `NAME.row`) or `NAME` itself.
pub fn resolve_trace(path: &Path) -> Result<TraceFiles> {
    let name = path.to_string_lossy();
    if name.ends_with(".prv") || name.ends_with(".prv.gz") {
        let files = TraceFiles::of(path);
        if !files.name_ok {
            bail!(UsageError(format!(
                "{name}: not a trace name (NAME.prv or NAME.prv.gz)"
            )));
        }
        if !files.prv.is_file() {
            bail!("{name}: no such trace");
        }
        return Ok(files);
    }
    let stem = name
        .strip_suffix(".pcf")
        .or_else(|| name.strip_suffix(".row"))
        .unwrap_or(&name);
    for ext in ["prv", "prv.gz"] {
        let candidate = PathBuf::from(format!("{stem}.{ext}"));
        if candidate.is_file() {
            return Ok(TraceFiles::of(&candidate));
        }
    }
    Err(UsageError(format!(
        "{name}: no trace {stem}.prv or {stem}.prv.gz (give the trace, its .pcf or .row, or its name without extension)"
    ))
    .into())
}

/// Reads the trace and computes every figure.
pub fn analyze(files: &TraceFiles, options: &ReportOptions) -> Result<Report> {
    let window = match &options.window {
        None => None,
        Some(WindowArg::Time(w)) => {
            let start = u64::try_from(w.start).unwrap_or(0);
            let end = w.end.map_or(u64::MAX, |e| u64::try_from(e).unwrap_or(0));
            let arg = |t: Option<i64>| t.map_or(String::new(), |t| text::time_arg(t as u64));
            Some((
                start,
                end,
                format!("--time-window {}:{}", arg(Some(w.start)), arg(w.end)),
            ))
        }
        Some(WindowArg::Range(spec)) => {
            let names = scan::Names::read(files)?;
            let (start, end, ranges, tasks) = scan::nvtx_range_window(files, &names, spec)?;
            Some((
                start,
                end,
                format!(
                    "--nvtx-range {spec}: {}",
                    crate::convert::count(ranges, "range")
                        + " on "
                        + &crate::convert::count(tasks, "task")
                ),
            ))
        }
    };
    let scan_options = ScanOptions {
        iterations: options.iterations.clone(),
        gap_threshold_ns: options.gap_threshold_ns,
        bins: BINS,
        gaps_per_gpu: GAPS_PER_GPU,
        memory_limit: options.memory_limit,
        window: window.as_ref().map(|(start, end, _)| (*start, *end)),
    };
    let (mut scan, mut body) = Scan::open(files, &scan_options)?;
    scan.run(&mut body, files)?;
    scan.finish();
    let window = window.map(|(start, _, chosen_by)| model::Window {
        start_ns: start,
        end_ns: start + scan.elapsed,
        chosen_by,
    });
    Ok(assemble::assemble(
        scan,
        files.prv.display().to_string(),
        options.gap_threshold_ns,
        window,
    ))
}
