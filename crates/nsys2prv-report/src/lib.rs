//! The GPU efficiency report (`nsys2prv-rs report`) of a written trace, computed
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
//! [`analyze`] computes the [`Report`]; [`Report::text`], [`html::page`], [`files::json`] and
//! [`files::csv_tables`] render it. The command line (`nsys2prv-rs report`) prints the
//! summary on stdout and writes the files only where asked (`--out DIR`, `--html FILE`,
//! `--json FILE`), each put in place atomically.

#![forbid(unsafe_code)]

mod assemble;
pub mod diff;
pub mod diff_html;
pub mod files;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_checks;
pub mod html;
mod model;
pub mod pipeline;
pub mod runs;
pub mod runs_html;
mod scan;
mod svg;
mod text;
mod types;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
pub use nsys2prv_events::NvtxRangeSpec;
use paraver_reader::TraceFiles;

pub use model::{Report, GENERATOR};
use scan::{Scan, ScanOptions};

/// Bins of the heat maps across the run.
const BINS: usize = 240;
/// Gaps kept per GPU.
const GAPS_PER_GPU: usize = 5;

/// A mistake in what was asked (a name the trace does not have, a window outside
/// it, a file the report may not replace), as opposed to a trace it cannot read:
/// the command line exits 2 on it.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

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
    /// `--pipeline-stages N`: the GPUs in rank order cut into N stages (else the
    /// stages are found from the NCCL point-to-point transfers, if they form chains).
    pub pipeline_stages: Option<usize>,
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
            pipeline_stages: None,
        }
    }
}

/// The part of the trace a report covers, as asked.
#[derive(Clone, Debug)]
pub enum WindowArg {
    /// `--time-window START:END`, ns from the start of the trace (`None`: its end).
    Time {
        start: i64,
        end: Option<i64>,
    },
    Range(NvtxRangeSpec),
}

/// `1 range`, `2 ranges`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
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

/// Refuses a trace that nsys2prv-rs did not write (`diff` and `report` over
/// several runs match traces by their names and numbering, which only ours keep
/// stable): its `NAME.pmf` names the tool that wrote it.
pub fn check_written_by_us(files: &TraceFiles) -> Result<()> {
    let prv = files.prv.display().to_string();
    let stem = prv
        .strip_suffix(".prv.gz")
        .or_else(|| prv.strip_suffix(".prv"))
        .unwrap_or(&prv);
    let pmf = PathBuf::from(format!("{stem}.pmf"));
    let text = match std::fs::read_to_string(&pmf) {
        Ok(text) => text,
        Err(_) => bail!(UsageError(format!(
            "{prv}: not a trace written by nsys2prv-rs (no {} beside it, which names the tool that wrote the trace); convert the reports with nsys2prv-rs",
            pmf.display()
        ))),
    };
    /// The first `nsys2prv_version` anywhere in the metadata.
    fn version(v: &serde_json::Value) -> Option<String> {
        match v {
            serde_json::Value::Object(map) => map
                .get("nsys2prv_version")
                .and_then(|t| t.as_str().map(str::to_string))
                .or_else(|| map.values().find_map(version)),
            serde_json::Value::Array(list) => list.iter().find_map(version),
            _ => None,
        }
    }
    let tool = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| version(&v))
        .unwrap_or_default();
    if !tool.contains("nsys2prv-rs") {
        bail!(UsageError(format!(
            "{prv}: not a trace written by nsys2prv-rs ({} says {}); convert the reports with nsys2prv-rs",
            pmf.display(),
            if tool.is_empty() { "no tool".to_string() } else { tool.trim().to_string() }
        )));
    }
    Ok(())
}

/// Reads the trace and computes every figure.
pub fn analyze(files: &TraceFiles, options: &ReportOptions) -> Result<Report> {
    let window = match &options.window {
        None => None,
        Some(WindowArg::Time {
            start: from,
            end: to,
        }) => {
            let start = u64::try_from(*from).unwrap_or(0);
            let end = to.map_or(u64::MAX, |e| u64::try_from(e).unwrap_or(0));
            let arg = |t: Option<i64>| t.map_or(String::new(), |t| text::time_arg(t as u64));
            Some((
                start,
                end,
                format!("--time-window {}:{}", arg(Some(*from)), arg(*to)),
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
                    count(ranges, "range") + " on " + &count(tasks, "task")
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
        pipeline_stages: options.pipeline_stages,
    };
    let (mut scan, mut body) = Scan::open(files, &scan_options)?;
    if let Some(n) = options.pipeline_stages {
        let gpus = scan.gpu_count();
        if n == 0 || gpus < n || !gpus.is_multiple_of(n) {
            bail!(UsageError(format!(
                "--pipeline-stages {n}: the trace's {gpus} GPUs do not split into {n} stages of equal size"
            )));
        }
    }
    scan.run(&mut body, files)?;
    scan.finish()?;
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
        options.pipeline_stages,
    ))
}
