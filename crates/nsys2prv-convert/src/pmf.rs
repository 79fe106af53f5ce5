//! `NAME.pmf`: the trace's metadata file, in the JSON format BSC nsys2prv 0.6
//! writes beside its traces (`"_format": {"name": "traceMetadata", "version":
//! "0.1.0"}`), with its field names and value types, so that tools that read
//! BSC's read ours. What each field holds, and where ours differs from BSC's,
//! is in `docs/metadata.md`. It is part of the output set
//! (staged and installed with the trace; another translator's `.pmf` is
//! replaced like its `.pcf` and `.row`, any other file of that name is
//! refused) and written by the merge of a sharded
//! conversion from what the parts carry of each report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The format's name in `_format`, BSC's.
const FORMAT_NAME: &str = "traceMetadata";
use nsys_semantics::{Category, Registry, ReportTranslation, ThreadKind, TracePlan};
use paraver_writer::OutputPaths;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::UsageError;

/// What BSC writes where Slurm did not set a variable.
pub const NO_DATA: &str = "no data";
/// BSC's `loaded_modules` when the job's environment has no `LOADEDMODULES`.
pub const NO_MODULES: &str = "No loaded modules found.";
/// BSC's `stream_table` when the trace has no GPU rows.
pub const NO_STREAMS: &str = "No GPU activity detected, so no stream table generated.";
/// The start of our `nsys2prv_version`, by which a `.pmf` is known to be ours.
const TRANSLATOR: &str = "nsys2prv-rs";
/// BSC's stream number of a GPU's metrics row.
const METRICS_STREAM: u32 = 99;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TraceMetadata {
    #[serde(rename = "_format")]
    pub format: Format,
    pub user_metadata: UserMetadata,
    pub execution_metadata: ExecutionMetadata,
    pub translation_metadata: TranslationMetadata,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Format {
    pub name: String,
    pub version: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct UserMetadata {
    pub user_description: String,
    pub user_labels: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ExecutionMetadata {
    pub capture_time: String,
    pub pwd: String,
    pub loaded_modules: ListOrText,
    pub running_command: String,
    pub nsys_metadata: NsysMetadata,
    pub slurm_metadata: SlurmMetadata,
}

/// A list, or BSC's sentence for its absence.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum ListOrText {
    List(Vec<String>),
    Text(String),
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NsysMetadata {
    pub nsys_version: String,
    pub sqlite_version: String,
    pub profiled_events: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SlurmMetadata {
    pub job_name: String,
    pub job_id: String,
    pub job_nodelist: String,
    pub job_partition: String,
    pub job_qos: String,
    pub job_gpus: String,
    pub job_cpus_on_node: String,
    pub job_start_time: String,
    pub job_end_time: String,
    pub nnodes: String,
    pub ntasks: String,
    pub nprocs: String,
    pub cpus_per_task: String,
    pub ntasks_per_node: String,
    pub threads_per_core: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TranslationMetadata {
    pub trace_files: TraceFiles,
    pub nsys2prv_version: String,
    pub translation_time: String,
    pub flags: Vec<String>,
    pub events: Vec<String>,
    pub input_reports: Vec<String>,
    pub paraver_object_model: ObjectModel,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct TraceFiles {
    pub paraver_file: String,
    pub configuration_file: String,
    pub row_file: String,
    pub metadata_file: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ObjectModel {
    pub thread_table: Vec<ThreadRow>,
    pub stream_table: StreamTable,
}

/// A CPU thread's row (and a NIC's, IB switch's or SoC's, as BSC lists its NIC
/// rows with the threads).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ThreadRow {
    pub hostname: String,
    pub task: u32,
    pub thread: u32,
    /// The GPUs the task uses, or -1 in a trace without GPU rows (BSC's values).
    pub device: Devices,
    pub row_name: String,
    #[serde(rename = "Pid")]
    pub pid: u32,
    #[serde(rename = "Tid")]
    pub tid: u32,
    pub report: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum Devices {
    Ids(Vec<u32>),
    None(i64),
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum StreamTable {
    Rows(Vec<StreamRow>),
    None(String),
}

/// A GPU stream's row, or a GPU's metrics row (stream 99, as BSC).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StreamRow {
    /// `NAME (id)` of the GPU.
    #[serde(rename = "Device")]
    pub device: String,
    pub task: u32,
    pub thread: u32,
    #[serde(rename = "Strm")]
    pub stream: u32,
    pub deviceid: u32,
    pub row_name: String,
    #[serde(rename = "Pid")]
    pub pid: u32,
    pub report: String,
}

/// `NAME.pmf` beside the trace.
pub fn path_of(trace: &OutputPaths) -> PathBuf {
    trace.prv.with_file_name(format!("{}.pmf", trace.stem()))
}

/// A `.pmf` this tool wrote: JSON whose translator is nsys2prv-rs.
pub fn is_ours(path: &Path) -> bool {
    let Ok(text) = std::fs::read(path) else {
        return false;
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return false;
    };
    value["translation_metadata"]["nsys2prv_version"]
        .as_str()
        .is_some_and(|v| v.starts_with(&format!("{TRANSLATOR} ")))
}

/// A `.pmf` the tool may replace: ours, or another translator's trace metadata
/// (`"_format": {"name": "traceMetadata"}`, as BSC nsys2prv 0.6 writes beside
/// its trace), since the `.prv`, `.pcf` and `.row` it describes are replaced
/// too. Any other file of that name is not ours to replace.
pub fn may_replace(path: &Path) -> bool {
    if is_ours(path) {
        return true;
    }
    let Ok(text) = std::fs::read(path) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&text)
        .is_ok_and(|v| v["_format"]["name"].as_str() == Some(FORMAT_NAME))
}

/// Checks up front (among the command line's problems) that
/// `--description-file` can be read: it is read when the metadata is written,
/// at the end of the conversion or by the merge.
pub fn check_description(description_file: Option<&Path>) -> Result<(), UsageError> {
    if let Some(file) = description_file {
        std::fs::read(file).map_err(|e| {
            UsageError(format!(
                "{}: cannot read the description file (--description-file): {e}",
                file.display()
            ))
        })?;
    }
    Ok(())
}

/// The description: the file's text with its line breaks as spaces (it wins,
/// as in BSC), else the text, else nothing.
fn description(config: &Config) -> Result<String> {
    if let Some(file) = &config.output.description_file {
        let bytes = std::fs::read(file).with_context(|| {
            format!(
                "{}: cannot read the description file (--description-file)",
                file.display()
            )
        })?;
        return Ok(String::from_utf8_lossy(&bytes).replace('\n', " "));
    }
    Ok(config.output.description_text.clone().unwrap_or_default())
}

impl TraceMetadata {
    /// The metadata of a trace made of `reports` laid out by `plan`, written to
    /// `paths` with the options of `config`. `events` is filled in once the trace
    /// is written ([`TraceMetadata::set_events`]).
    pub fn new(
        config: &Config,
        paths: &OutputPaths,
        reports: &[ReportTranslation],
        plan: &TracePlan,
    ) -> Result<TraceMetadata> {
        // The first report of the trace (its first task's): the environment,
        // versions and command of the job are taken from it, as BSC takes them
        // from the first report it is given.
        let first = plan.order.first().map(|&r| &reports[r]);
        let env = |name: &str| -> String {
            first
                .and_then(|r| r.meta.env(name))
                .map_or_else(|| NO_DATA.to_string(), str::to_string)
        };
        let loaded_modules = match first.and_then(|r| r.meta.env("LOADEDMODULES")) {
            Some(modules) => ListOrText::List(
                modules
                    .split(':')
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            None => ListOrText::Text(NO_MODULES.to_string()),
        };
        let running_command = match first.map(|r| &r.meta.launch_command) {
            Some(words) if !words.is_empty() => words.join(" "),
            _ => NO_DATA.to_string(),
        };
        let version = |v: Option<&Option<String>>| {
            v.and_then(Option::clone)
                .unwrap_or_else(|| NO_DATA.to_string())
        };
        // Beside the metadata file, like it: by their names.
        let file = |path: PathBuf| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        Ok(TraceMetadata {
            format: Format {
                name: FORMAT_NAME.into(),
                version: "0.1.0".into(),
            },
            user_metadata: UserMetadata {
                user_description: description(config)?,
                user_labels: config.output.labels.clone(),
            },
            execution_metadata: ExecutionMetadata {
                capture_time: capture_time(reports),
                pwd: env("PWD"),
                loaded_modules,
                running_command,
                nsys_metadata: NsysMetadata {
                    nsys_version: version(first.map(|r| &r.meta.product_version)),
                    sqlite_version: version(first.map(|r| &r.meta.schema_version)),
                    profiled_events: profiled_events(reports),
                },
                slurm_metadata: SlurmMetadata {
                    job_name: env("SLURM_JOB_NAME"),
                    job_id: env("SLURM_JOB_ID"),
                    job_nodelist: env("SLURM_NODELIST"),
                    job_partition: env("SLURM_JOB_PARTITION"),
                    job_qos: env("SLURM_JOB_QOS"),
                    job_gpus: env("SLURM_JOB_GPUS"),
                    job_cpus_on_node: env("SLURM_CPUS_ON_NODE"),
                    job_start_time: env("SLURM_JOB_START_TIME"),
                    job_end_time: env("SLURM_JOB_END_TIME"),
                    nnodes: env("SLURM_NNODES"),
                    ntasks: env("SLURM_NTASKS"),
                    nprocs: env("SLURM_NPROCS"),
                    cpus_per_task: env("SLURM_CPUS_PER_TASK"),
                    ntasks_per_node: env("SLURM_NTASKS_PER_NODE"),
                    threads_per_core: env("SLURM_THREADS_PER_CORE"),
                },
            },
            translation_metadata: TranslationMetadata {
                trace_files: TraceFiles {
                    paraver_file: file(paths.prv.clone()),
                    configuration_file: file(paths.pcf.clone()),
                    row_file: file(paths.row.clone()),
                    metadata_file: file(path_of(paths)),
                },
                nsys2prv_version: format!("{TRANSLATOR} v{}", env!("CARGO_PKG_VERSION")),
                translation_time: translation_time(),
                flags: flags(config),
                events: Vec::new(),
                // In the trace's order, which does not depend on the order given.
                input_reports: plan
                    .order
                    .iter()
                    .map(|&r| absolute(&reports[r].path))
                    .collect(),
                paraver_object_model: object_model(reports, plan),
            },
        })
    }

    /// The categories the trace has events of, in the registry's order, by BSC
    /// nsys2prv 0.6's `-t` names where it has one.
    pub fn set_events(&mut self, present: &BTreeSet<Category>) {
        let mut events: Vec<String> = Vec::new();
        for info in Registry::standard().iter() {
            if present.contains(&info.category) {
                for name in bsc_event_names(info.category.name()) {
                    if !events.contains(&name) {
                        events.push(name);
                    }
                }
            }
        }
        self.translation_metadata.events = events;
    }

    /// Writes the metadata to `path` (in the staging directory).
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).context("the metadata file")?;
        text.push('\n');
        std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
    }
}

/// BSC nsys2prv 0.6's `-t` names for one of our categories (ours, with `_`,
/// where BSC has none): what its `events` field lists.
fn bsc_event_names(category: &str) -> Vec<String> {
    const BSC: &[(&str, &[&str])] = &[
        ("cuda-api", &["cuda_api_trace"]),
        // BSC's kernels bring the memory operations too.
        ("kernels", &["kernels"]),
        ("memory", &["kernels"]),
        ("graphs", &["graphs"]),
        ("cuda-events", &["cuda_events"]),
        ("gpu-memory", &["memory_usage"]),
        ("gpu-metrics", &["gpu_metrics"]),
        ("network", &["nic_metrics"]),
        ("nvtx", &["nvtx"]),
        ("nccl", &["nccl"]),
        ("mpi", &["mpi_event_trace"]),
        // Our OS runtime category is BSC's osrt and pthread.
        ("osrt", &["osrt", "pthread"]),
        ("openmp", &["openmp"]),
        ("openacc", &["openacc"]),
        ("cpu-raw-counters", &["cpu_raw_counters"]),
    ];
    match BSC.iter().find(|(ours, _)| *ours == category) {
        Some((_, names)) => names.iter().map(|n| n.to_string()).collect(),
        None => vec![category.replace('-', "_")],
    }
}

/// What nsys recorded, by BSC's names for it (`profiled_events`), from the
/// tables with rows of every report: a kind is listed when a report has rows
/// of one of its tables.
fn profiled_events(reports: &[ReportTranslation]) -> Vec<String> {
    let tables: BTreeSet<&str> = reports
        .iter()
        .flat_map(|r| r.recorded_tables.iter().map(String::as_str))
        .collect();
    let has = |pred: &dyn Fn(&str) -> bool| tables.iter().any(|t| pred(t));
    let kinds: [(&[&str], bool); 12] = [
        (&["kernels"], has(&|t| t == "CUPTI_ACTIVITY_KIND_KERNEL")),
        (&["nvtx"], has(&|t| t == "NVTX_EVENTS")),
        (&["mpi"], has(&|t| t.starts_with("MPI_"))),
        (
            &["gpu_memory_usage"],
            has(&|t| t == "CUDA_GPU_MEMORY_USAGE_EVENTS"),
        ),
        (&["osrt", "pthread"], has(&|t| t == "OSRT_API")),
        (&["gpu_metrics"], has(&|t| t == "GPU_METRICS")),
        (
            &["cuda_api_calls"],
            has(&|t| t == "CUPTI_ACTIVITY_KIND_RUNTIME" || t == "CUPTI_ACTIVITY_KIND_DRIVER"),
        ),
        (
            &["openacc"],
            has(&|t| t.starts_with("CUPTI_ACTIVITY_KIND_OPENACC_")),
        ),
        (&["openmp"], has(&|t| t.starts_with("OPENMP_EVENT_KIND_"))),
        (
            &["graphs"],
            has(&|t| t == "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
        ),
        (&["nic_metrics"], has(&|t| t == "NET_NIC_METRIC")),
        (
            &["cpu_raw_counters"],
            has(&|t| t.starts_with("PERF_EVENT_") && t.ends_with("RAW_EVENT")),
        ),
    ];
    kinds
        .iter()
        .filter(|(_, recorded)| *recorded)
        .flat_map(|(names, _)| names.iter().map(|n| n.to_string()))
        .collect()
}

/// The session start, in the target's local time as nsys wrote it, of the
/// report that started first (BSC: the earliest of the reports' local times).
fn capture_time(reports: &[ReportTranslation]) -> String {
    reports
        .iter()
        .filter_map(|r| {
            let local = r.meta.session_start_local.as_ref()?;
            Some((r.meta.utc_offset().unwrap_or(i64::MAX), local))
        })
        .min()
        .map_or_else(|| NO_DATA.to_string(), |(_, local)| local.clone())
}

/// When the trace was made, `dd/mm/yyyy at HH:MM` (BSC's form) in local time;
/// in UTC at `$SOURCE_DATE_EPOCH` (seconds) when that is set, so that a build
/// or a test can make it reproducible.
#[allow(unsafe_code)] // SAFETY comments at each block
fn translation_time() -> String {
    let fixed = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    let seconds = fixed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    });
    // time_t is 64 bits on the targets the tool is built for. (The libc crate
    // marks the alias deprecated on musl targets only, for that very change.)
    #[allow(deprecated)]
    let time = seconds as libc::time_t;
    // SAFETY: `tm` is plain data that the call fills; both pointers are valid
    // for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let filled = unsafe {
        match fixed {
            Some(_) => libc::gmtime_r(&time, &mut tm),
            None => libc::localtime_r(&time, &mut tm),
        }
    };
    if filled.is_null() {
        return NO_DATA.to_string();
    }
    format!(
        "{:02}/{:02}/{:04} at {:02}:{:02}",
        tm.tm_mday,
        tm.tm_mon + 1,
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min
    )
}

/// The options given that shape the trace (those a sharded plan records, so a
/// sharded conversion lists the same), named as BSC names its options (the long
/// name with `_`), then BSC's names of the inputs and the output.
fn flags(config: &Config) -> Vec<String> {
    // Fails only for a path that is not UTF-8 (which a plan cannot hold): then
    // the options are not listed.
    let options = config.shaping_options().unwrap_or_default();
    let mut flags: Vec<String> = Vec::new();
    for option in &options {
        let name = option.trim_start_matches('-');
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        let name = name.replace('-', "_");
        if !flags.contains(&name) {
            flags.push(name);
        }
    }
    flags.extend(["source_rep".to_string(), "output".to_string()]);
    flags
}

/// `path` made absolute against the working directory, as Python's abspath
/// (no symbolic links resolved).
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// The object model: per row of the trace, where it is and what it shows.
fn object_model(reports: &[ReportTranslation], plan: &TracePlan) -> ObjectModel {
    struct Placed<'a> {
        task: u32,
        thread: u32,
        kind: ThreadKind,
        pid: u32,
        report: &'a ReportTranslation,
    }
    let mut placed: Vec<Placed> = Vec::new();
    for (r, report) in reports.iter().enumerate() {
        for (key, global) in report.threads.iter().zip(&plan.threads[r]) {
            placed.push(Placed {
                task: global.task,
                thread: global.thread,
                kind: key.kind,
                pid: key.pid,
                report,
            });
        }
    }
    placed.sort_by_key(|p| (p.task, p.thread));
    let gpu_of = |kind: ThreadKind| match kind {
        ThreadKind::Stream { device, .. } | ThreadKind::Metrics { device } => Some(device),
        _ => None,
    };
    let any_gpu = placed.iter().any(|p| gpu_of(p.kind).is_some());
    // Each task's GPUs, gathered once (a task's CPU rows name them all; looking
    // them up row by row was quadratic in the rows of a trace of many tasks).
    let mut task_gpus: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for p in &placed {
        if let Some(device) = gpu_of(p.kind) {
            task_gpus.entry(p.task).or_default().insert(device);
        }
    }
    let layout = &plan.layout;
    let host = |task: u32| {
        let node = layout.tasks[task as usize].node as usize;
        layout.nodes[node].name.clone()
    };
    let row_name = |p: &Placed| layout.tasks[p.task as usize].threads[p.thread as usize].clone();
    let mut threads = Vec::new();
    let mut streams = Vec::new();
    for p in &placed {
        let report = absolute(&p.report.path);
        if let Some(device) = gpu_of(p.kind) {
            let stream = match p.kind {
                ThreadKind::Stream { stream, .. } => stream,
                _ => METRICS_STREAM,
            };
            let name = p
                .report
                .meta
                .gpu_names
                .iter()
                .find(|(id, _)| *id == i64::from(device))
                .map_or("unknown GPU", |(_, name)| name.as_str());
            streams.push(StreamRow {
                device: format!("{name} ({device})"),
                task: p.task + 1,
                thread: p.thread + 1,
                stream,
                deviceid: device,
                row_name: row_name(p),
                pid: p.pid,
                report,
            });
            continue;
        }
        let tid = match p.kind {
            ThreadKind::Cpu { tid } => tid,
            ThreadKind::Nic { nic } => nic,
            ThreadKind::IbSwitch { switch } => switch,
            ThreadKind::SocMetrics { soc } => soc,
            ThreadKind::Stream { .. } | ThreadKind::Metrics { .. } => unreachable!(),
        };
        let device = match any_gpu {
            true => Devices::Ids(
                task_gpus
                    .get(&p.task)
                    .map(|gpus| gpus.iter().copied().collect())
                    .unwrap_or_default(),
            ),
            false => Devices::None(-1),
        };
        threads.push(ThreadRow {
            hostname: host(p.task),
            task: p.task + 1,
            thread: p.thread + 1,
            device,
            row_name: row_name(p),
            pid: p.pid,
            tid,
            report,
        });
    }
    ObjectModel {
        thread_table: threads,
        stream_table: match streams.is_empty() {
            true => StreamTable::None(NO_STREAMS.to_string()),
            false => StreamTable::Rows(streams),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_named_for_bsc_is_a_category() {
        let registry = Registry::standard();
        for name in [
            "cuda-api",
            "kernels",
            "memory",
            "graphs",
            "cuda-events",
            "gpu-memory",
            "gpu-metrics",
            "network",
            "nvtx",
            "nccl",
            "mpi",
            "osrt",
            "openmp",
            "openacc",
            "cpu-raw-counters",
        ] {
            assert!(registry.iter().any(|c| c.category.name() == name), "{name}");
        }
        assert_eq!(bsc_event_names("osrt"), ["osrt", "pthread"]);
        assert_eq!(bsc_event_names("host-functions"), ["host_functions"]);
    }

    #[test]
    fn the_translation_time_follows_source_date_epoch() {
        // 2025-03-01T09:00:00Z. (The variable is read by this test only.)
        std::env::set_var("SOURCE_DATE_EPOCH", "1740819600");
        assert_eq!(translation_time(), "01/03/2025 at 09:00");
        std::env::remove_var("SOURCE_DATE_EPOCH");
        let now = translation_time();
        assert_eq!(now.len(), "01/03/2025 at 09:00".len(), "{now}");
    }
}
