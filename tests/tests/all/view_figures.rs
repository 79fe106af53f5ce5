//! The figures the views compute, checked against the export: each view added
//! with the index (graphs, launch configuration, kernel durations, GPU metrics
//! per kernel, CUDA events and synchronizations, GPU memory, NIC, InfiniBand and
//! SoC counters, NVTX domains and payloads, the start-here set) is evaluated by
//! BSC's `paramedir` on a converted trace, and what it computes is compared with
//! the same figure computed here straight from the SQLite export (a kernel's
//! share of its stream, a graph's launches, the peak GPU memory, ...).
//!
//! Needs `PARAMEDIR` (see `end_to_end::paramedir`); skipped, and listed in the run's summary, without
//! it, except under CI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use end_to_end::paramedir::{paramedir, run, Histogram, ViewResult};
use end_to_end::*;
use nsys_synth::{
    add_cpu_activity, write_export, SchemaVersion, SynthCpu, SynthDeviceSide, SynthGraphMode,
    SynthSpec,
};
use rusqlite::{Connection, OpenFlags};

/// A converted trace.
struct Trace {
    prv: PathBuf,
    views: PathBuf,
    /// Its length (the header's end time), ns.
    span: f64,
    /// `.row` thread names.
    threads: Vec<String>,
}

fn convert_into(dir: &Path, name: &str, inputs: &[&Path]) -> Trace {
    let prv = dir.join(format!("{name}.prv"));
    let out = convert(inputs, &prv, &[]);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = check_trace(&prv);
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let threads = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    Trace {
        views: dir.join(format!("{name}.cfgs")),
        prv,
        span: stats.end_time as f64,
        threads,
    }
}

impl Trace {
    /// What paramedir computes for the view at `view` (under the views
    /// directory), which must be written and load without a message.
    fn evaluate(&self, paramedir: &Path, view: &str) -> ViewResult {
        let path = self.views.join(view);
        assert!(path.is_file(), "{view} is not written");
        // -tu: a timeline's times in ns (the trace's unit), whatever unit the
        // view was written with for the trace's length.
        let run = run(paramedir, &self.prv, &[path], &["-npr", "-tu"]);
        assert!(
            run.unexpected_lines().is_empty() && run.messages(0).is_empty(),
            "{view}: {}{}",
            run.stdout,
            run.stderr
        );
        match run.result(0) {
            Some(Ok(result)) => result,
            other => panic!("{view}: {other:?}"),
        }
    }

    fn histogram(&self, paramedir: &Path, view: &str) -> Histogram {
        match self.evaluate(paramedir, view) {
            ViewResult::Histogram(h) => h,
            other => panic!("{view}: not a histogram: {other:?}"),
        }
    }

    /// (object, begin, duration, value) of a timeline view.
    fn timeline(&self, paramedir: &Path, view: &str) -> Vec<(String, f64, f64, f64)> {
        match self.evaluate(paramedir, view) {
            ViewResult::Timeline(lines) => lines,
            other => panic!("{view}: not a timeline: {other:?}"),
        }
    }

    /// The `.row` name of the CPU thread `tid` (`name (tid)`, or `name (rank R,
    /// tid)` in a ranked task).
    fn cpu_thread(&self, tid: i64) -> &str {
        let (alone, ranked) = (format!(" ({tid})"), format!(", {tid})"));
        self.threads
            .iter()
            .find(|t| t.ends_with(&alone) || t.ends_with(&ranked))
            .unwrap_or_else(|| panic!("no thread {tid} in {:?}", self.threads))
    }

    /// The timeline object (`1.TASK.THREAD`) of the thread named `name`.
    fn object(&self, name: &str) -> String {
        let index = self.threads.iter().position(|t| t == name).unwrap();
        // One application and one task in the traces of this file.
        format!("1.1.{}", index + 1)
    }

    /// The view files under `dir` (of the views directory), relative to it.
    fn views_under(&self, dir: &str) -> Vec<String> {
        cfgs_under(&self.views.join(dir))
            .iter()
            .map(|p| p.strip_prefix(&self.views).unwrap().display().to_string())
            .collect()
    }
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Every row of `sql`, each mapped by `f`.
fn rows<T>(
    db: &Connection,
    sql: &str,
    f: impl Fn(&rusqlite::Row) -> rusqlite::Result<T>,
) -> Vec<T> {
    let mut stmt = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mapped = stmt.query_map([], |r| f(r)).unwrap();
    mapped.map(Result::unwrap).collect()
}

/// Equal within float rounding (paramedir writes 10 decimals).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn cell(h: &Histogram, row: &str, column: &str) -> f64 {
    h.cell(row, column)
        .unwrap_or_else(|| panic!("no cell ({row}, {column}) in {:?}", h.columns))
}

/// The label of a view's event type `ty` (its first window listing it).
fn label_in(view: &Path, ty: Option<u32>) -> String {
    let text = std::fs::read_to_string(view).unwrap();
    let mut types: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(list) = line.strip_prefix("window_filter_module evt_type ") {
            types = list.split(' ').skip(1).map(str::to_owned).collect();
        } else if let Some(list) = line.strip_prefix("window_filter_module evt_type_label ") {
            let labels: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
            let at = match ty {
                Some(ty) => types.iter().position(|t| *t == ty.to_string()),
                None => Some(0),
            };
            if let Some(label) = at.and_then(|i| labels.get(i)) {
                return label.to_string();
            }
        }
    }
    panic!("{}: no label", view.display())
}

// ---------------------------------------------------------------------------
// A one-stream CUDA report with every device-side recording.

/// One process, one GPU, one stream: kernels never overlap, and a task's kernels
/// are those of its one stream. GPU metrics are sampled all along the run.
fn device_report(dir: &Path) -> PathBuf {
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.processes[0].streams_per_device = 1;
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 2_300,
        memory_allocations: 6,
        nic_samples: 7,
        ib_switch_samples: 5,
        soc_metric_samples: 9,
        ..SynthDeviceSide::default()
    };
    let path = dir.join("device.sqlite");
    write_export(&spec, &path).unwrap();
    path
}

/// A kernel row of the export.
struct Kernel {
    start: i64,
    end: i64,
    stream: String,
    name: String,
    grid: i64,
    block: i64,
    registers: i64,
    shared: i64,
}

impl Kernel {
    fn duration(&self) -> i64 {
        self.end - self.start
    }

    fn is_nccl(&self) -> bool {
        self.name.contains("nccl")
    }
}

/// A launch attribute of a kernel call.
type Attribute = fn(&Kernel) -> i64;

fn kernels(db: &Connection) -> Vec<Kernel> {
    rows(
        db,
        "SELECT k.start, k.end, k.deviceId, k.streamId, s.value, k.gridX * k.gridY * k.gridZ,
                k.blockX * k.blockY * k.blockZ, k.registersPerThread,
                k.staticSharedMemory + k.dynamicSharedMemory
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName",
        |r| {
            Ok(Kernel {
                start: r.get(0)?,
                end: r.get(1)?,
                stream: format!("CUDA-D{}.S{}", r.get::<_, i64>(2)?, r.get::<_, i64>(3)?),
                name: r.get(4)?,
                grid: r.get(5)?,
                block: r.get(6)?,
                registers: r.get(7)?,
                shared: r.get(8)?,
            })
        },
    )
}

/// (start, end, stream) of the copies and memsets of the export.
fn memory_operations(db: &Connection) -> Vec<(i64, i64, String)> {
    rows(
        db,
        "SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY
         UNION ALL SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET",
        |r| {
            let stream = format!("CUDA-D{}.S{}", r.get::<_, i64>(2)?, r.get::<_, i64>(3)?);
            Ok((r.get(0)?, r.get(1)?, stream))
        },
    )
}

/// Total length of the union of `intervals`.
fn union_length(mut intervals: Vec<(i64, i64)>) -> i64 {
    intervals.sort();
    let mut total = 0;
    let mut current: Option<(i64, i64)> = None;
    for (s, e) in intervals {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0, |(s, e)| e - s)
}

/// The kernel views: share of each kernel, duration histogram, launch
/// configuration, GPU metrics per kernel, and the stream's states.
#[test]
fn kernel_views_compute_what_the_export_says() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = device_report(dir.path());
    let trace = convert_into(dir.path(), "device", &[&input]);
    let db = open(&input);
    let all = kernels(&db);
    let compute: Vec<&Kernel> = all.iter().filter(|k| !k.is_nccl()).collect();
    let stream = compute[0].stream.clone();
    assert!(compute.iter().all(|k| k.stream == stream), "one stream");
    let names: BTreeSet<&str> = compute.iter().map(|k| k.name.as_str()).collect();
    assert!(names.len() >= 3, "{names:?}");

    // Where the GPU time goes: each kernel's share of the stream's kernel time.
    let h = trace.histogram(&paramedir, "views/start-here/where_gpu_time_goes.cfg");
    let busy: i64 = compute.iter().map(|k| k.duration()).sum();
    for name in &names {
        let time: i64 = compute
            .iter()
            .filter(|k| k.name == *name)
            .map(|k| k.duration())
            .sum();
        let want = 100.0 * time as f64 / busy as f64;
        let got = cell(&h, &stream, name);
        assert!(close(got, want), "{name}: {got} %, export {want} %");
    }

    // Calls per duration decade.
    let planes = match trace.evaluate(&paramedir, "analysis/kernel_duration_histogram.cfg") {
        ViewResult::Planes(planes) => planes,
        other => panic!("not a 3D histogram: {other:?}"),
    };
    let mut want: BTreeMap<(String, String), f64> = BTreeMap::new();
    for k in &compute {
        let decade = ((k.duration() as f64).ln() / 10f64.ln()).floor();
        *want
            .entry((decade.to_string(), k.name.clone()))
            .or_default() += 1.0;
    }
    let mut seen = BTreeMap::new();
    for (plane, h) in &planes {
        for column in &h.columns {
            let n = cell(h, &stream, column);
            if n != 0.0 {
                seen.insert((plane.clone(), column.clone()), n);
            }
        }
    }
    assert_eq!(seen, want, "calls per (decade, kernel)");

    // Launch configuration: the largest of each kernel's calls.
    let largest = |name: &str, f: Attribute| {
        compute
            .iter()
            .filter(|k| k.name == name)
            .map(|k| f(k))
            .max()
            .unwrap() as f64
    };
    let launch: [(&str, Attribute); 4] = [
        ("analysis/kernel_launch_grid.cfg", |k| k.grid),
        ("analysis/kernel_launch_block.cfg", |k| k.block),
        ("analysis/kernel_launch_registers.cfg", |k| k.registers),
        ("analysis/kernel_launch_shared_memory.cfg", |k| k.shared),
    ];
    for (view, f) in launch {
        let h = trace.histogram(&paramedir, view);
        for name in &names {
            let want = largest(name, f);
            // A column of zeros is hidden (no shared memory at all).
            let got = h.cell(&stream, name).unwrap_or(0.0);
            assert_eq!(got, want, "{view}: {name}");
        }
    }

    // The stream's states: Running while kernels (and NCCL kernels) run,
    // Memory transfer during copies and memsets, as shares of the trace.
    let h = trace.histogram(&paramedir, "views/start-here/where_ranks_wait.cfg");
    let running: i64 = all.iter().map(|k| k.duration()).sum();
    let copying: i64 = memory_operations(&db)
        .iter()
        .filter(|op| op.2 == stream)
        .map(|op| op.1 - op.0)
        .sum();
    let share = |ns: i64| 100.0 * ns as f64 / trace.span;
    assert!(close(cell(&h, &stream, "Running"), share(running)));
    assert!(close(cell(&h, &stream, "Memory transfer"), share(copying)));
}

/// The GPU metric per kernel views: each metric averaged over the time each
/// kernel runs (the metric's samples hold until the next one).
#[test]
fn gpu_metrics_per_kernel_are_the_averages_of_the_samples() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = device_report(dir.path());
    let trace = convert_into(dir.path(), "device", &[&input]);
    let db = open(&input);
    let compute: Vec<Kernel> = kernels(&db).into_iter().filter(|k| !k.is_nccl()).collect();
    let names: BTreeSet<&str> = compute.iter().map(|k| k.name.as_str()).collect();
    let views = trace.views_under("analysis/gpu_metrics_per_kernel");
    assert!(views.len() >= 10, "{views:?}");
    for view in &views {
        // `analysis/gpu_metrics_per_kernel/<type>_<metric>.cfg`
        let file = view.rsplit('/').next().unwrap();
        let ty: u32 = file.split('_').next().unwrap().parse().unwrap();
        let label = label_in(&trace.views.join(view), Some(ty));
        // BSC's numbering labels a metric with its bare name, names `GPU metric …`.
        let label = label.strip_prefix("GPU metric ").unwrap_or(&label);
        let (metric, scale) = match label.strip_suffix(" x100") {
            Some(metric) => (metric, 100),
            None => (label, 1),
        };
        let samples: Vec<(i64, i64)> = rows(
            &db,
            &format!(
                "SELECT g.timestamp, g.value FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t
                 ON t.typeId = g.typeId AND t.metricId = g.metricId
                 WHERE t.metricName = '{metric}' AND g.timestamp >= 0 ORDER BY g.timestamp"
            ),
            |r| Ok((r.get(0)?, r.get::<_, i64>(1)? * scale)),
        );
        assert!(samples.len() > 1000, "{metric}: {} samples", samples.len());
        let h = trace.histogram(&paramedir, view);
        let stream = &compute[0].stream;
        for name in &names {
            let (mut integral, mut time) = (0.0, 0.0);
            for k in compute.iter().filter(|k| k.name == *name) {
                integral += integral_of(&samples, k.start, k.end);
                time += k.duration() as f64;
            }
            let want = integral / time;
            let got = h.cell(stream, name).unwrap_or(0.0);
            assert!(close(got, want), "{view}: {name}: {got}, export {want}");
        }
    }
}

/// ∫ of the step function of `samples` (each value holds until the next sample,
/// 0 before the first) over [start, end).
fn integral_of(samples: &[(i64, i64)], start: i64, end: i64) -> f64 {
    let mut total = 0.0;
    for (i, &(t, v)) in samples.iter().enumerate() {
        let next = samples.get(i + 1).map_or(i64::MAX, |s| s.0);
        let (from, to) = (t.max(start), next.min(end));
        if from < to {
            total += v as f64 * (to - from) as f64;
        }
    }
    total
}

/// How compute and communication overlap: per task, the shares of the trace with
/// compute kernels only, copies or NCCL kernels only, both, and neither.
#[test]
fn the_overlap_view_measures_the_unions_of_compute_and_communication() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let trace = convert_into(dir.path(), "cuda", &[&input]);
    let db = open(&input);
    let all = kernels(&db);
    let compute: Vec<(i64, i64)> = all
        .iter()
        .filter(|k| !k.is_nccl())
        .map(|k| (k.start, k.end))
        .collect();
    let mut communication: Vec<(i64, i64)> = memory_operations(&db)
        .into_iter()
        .map(|op| (op.0, op.1))
        .collect();
    communication.extend(all.iter().filter(|k| k.is_nccl()).map(|k| (k.start, k.end)));
    assert!(all.iter().any(Kernel::is_nccl) && !communication.is_empty());
    let c = union_length(compute.clone());
    let m = union_length(communication.clone());
    let either = union_length([compute, communication].concat());
    let both = c + m - either;
    let h = trace.histogram(
        &paramedir,
        "views/start-here/compute_communication_overlap.cfg",
    );
    assert_eq!(h.rows.len(), 1, "one task");
    let task = h.rows[0].0.clone();
    let share = |ns: i64| 100.0 * ns as f64 / trace.span;
    for (column, ns) in [
        ("0", trace.span as i64 - either),
        ("1", c - both),
        ("2", m - both),
        ("3", both),
    ] {
        let got = cell(&h, &task, column);
        assert!(
            close(got, share(ns)),
            "column {column}: {got}, export {}",
            share(ns)
        );
    }
    assert!(both > 0, "the sample overlaps compute and copies");
}

/// CUDA synchronizations and events: time per kind of synchronization per
/// thread, records and host waits per row, and the events' timeline.
#[test]
fn synchronization_and_event_views_count_what_the_export_records() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = device_report(dir.path());
    let trace = convert_into(dir.path(), "device", &[&input]);
    let db = open(&input);
    // (tid, kind label, ns) of every synchronization, from its API call's thread.
    let syncs: Vec<(i64, String, i64, i64)> = rows(
        &db,
        "SELECT r.globalTid % 16777216, e.label, s.end - s.start, s.streamId
         FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s
         JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = s.correlationId
         JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = s.syncType",
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    );
    assert!(syncs.len() >= 6, "{syncs:?}");
    let mut want: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (tid, kind, ns, _) in &syncs {
        *want
            .entry((trace.cpu_thread(*tid).to_owned(), kind.clone()))
            .or_default() += *ns as f64;
    }
    let h = trace.histogram(&paramedir, "analysis/cuda_sync_profile.cfg");
    for ((thread, kind), ns) in &want {
        assert_eq!(cell(&h, thread, kind), *ns, "{thread}: {kind}");
    }

    // Records (on the recording stream) and host waits (an event, no stream).
    let records: Vec<String> = rows(
        &db,
        "SELECT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        |r| {
            Ok(format!(
                "CUDA-D{}.S{}",
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?
            ))
        },
    );
    let host_waits = syncs
        .iter()
        .filter(|s| s.1 == "Event sync" && s.3 == 0xFFFF_FFFF)
        .count() as f64;
    assert!(!records.is_empty() && host_waits > 0.0);
    let h = trace.histogram(&paramedir, "analysis/cuda_events_count.cfg");
    for stream in records.iter().collect::<BTreeSet<_>>() {
        let n = records.iter().filter(|r| *r == stream).count() as f64;
        assert_eq!(cell(&h, stream, "Record (cudaEventRecord)"), n, "{stream}");
    }
    let column = "Host waits (cudaEventSynchronize)";
    assert_eq!(
        h.summary["Total"][h.columns.iter().position(|c| c == column).unwrap()],
        host_waits
    );

    // The timeline: one point per record and per wait.
    let lines = trace.timeline(&paramedir, "views/cuda_events.cfg");
    let points = lines.iter().filter(|l| l.3 != 0.0).count();
    assert_eq!(points, records.len() + host_waits as usize);
}

/// GPU memory: the peak each process holds on its GPU, the running sum over
/// time, and the sizes of the allocations and frees.
#[test]
fn gpu_memory_views_follow_the_allocations() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = device_report(dir.path());
    let trace = convert_into(dir.path(), "device", &[&input]);
    let db = open(&input);
    let changes: Vec<(i64, i64)> = rows(
        &db,
        "SELECT memoryOperationType, bytes FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start",
        |r| Ok((r.get(0)?, r.get(1)?)),
    );
    assert!(changes.len() >= 6);
    let (mut held, mut peak) = (0, 0);
    for &(operation, bytes) in &changes {
        // ENUM_CUDA_DEV_MEM_EVENT_OPER: 0 allocation, 1 deallocation.
        held += if operation == 0 { bytes } else { -bytes };
        peak = peak.max(held);
    }
    let h = trace.histogram(&paramedir, "analysis/gpu_memory_peak.cfg");
    assert_eq!(cell(&h, "GPU0 metrics", "1"), peak as f64);

    let lines = trace.timeline(&paramedir, "views/gpu_memory_usage.cfg");
    let most = lines.iter().map(|l| l.3).fold(0.0, f64::max);
    assert_eq!(most, peak as f64);

    let lines = trace.timeline(&paramedir, "views/gpu_memory_allocations.cfg");
    let sizes: BTreeSet<i64> = lines
        .iter()
        .filter(|l| l.3 != 0.0)
        .map(|l| l.3 as i64)
        .collect();
    let want: BTreeSet<i64> = changes.iter().map(|c| c.1).collect();
    assert_eq!(sizes, want);
}

/// NIC, InfiniBand switch and SoC counter views: one per counter, each showing
/// the counter's samples (its largest value, here).
#[test]
fn counter_views_show_each_counter_of_the_export() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = device_report(dir.path());
    let trace = convert_into(dir.path(), "device", &[&input]);
    let db = open(&input);
    let network = |table: &str, prefix: &str, every_port: bool| -> BTreeMap<String, i64> {
        let sql = format!(
            "SELECT m.name, m.unit, s.portId, MAX(MAX(s.value, 0)) FROM {table} s
             JOIN TARGET_INFO_NETWORK_METRICS m
             ON m.metricsListId = s.metricsListId AND m.metricsIdx = s.metricsIdx
             GROUP BY s.metricsListId, s.metricsIdx, s.portId"
        );
        rows(&db, &sql, |r| {
            let (name, unit, port): (String, String, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
            let name = match port > 1 || every_port {
                true => format!("{name} (port {port})"),
                false => name,
            };
            // NIC counters are labelled as BSC does (`name [unit]`), switch
            // counters with their prefix.
            let label = match prefix {
                "" => format!("{name} [{unit}]"),
                _ => format!("{prefix} {name} [{unit}]"),
            };
            Ok((label, r.get(3)?))
        })
        .into_iter()
        .collect()
    };
    let soc: BTreeMap<String, i64> = rows(
        &db,
        "SELECT t.metricName, MAX(s.value) FROM SOC_METRICS s JOIN TARGET_INFO_SOC_METRICS t
         ON t.typeId = s.typeId AND t.metricId = s.metricId GROUP BY t.metricName",
        |r| {
            let name: String = r.get(0)?;
            let scaled = name.contains('%');
            let label = match scaled {
                true => format!("SoC metric {name} x100"),
                false => format!("SoC metric {name}"),
            };
            Ok((label, r.get::<_, i64>(1)? * if scaled { 100 } else { 1 }))
        },
    )
    .into_iter()
    .collect();
    for (dir, want) in [
        ("views/nic_counters", network("NET_NIC_METRIC", "", false)),
        (
            "views/ib_switch_counters",
            network("NET_IB_SWITCH_METRIC", "IB switch", true),
        ),
        ("views/soc_metrics", soc),
    ] {
        let views = trace.views_under(dir);
        assert_eq!(views.len(), want.len(), "{dir}: {views:?} for {want:?}");
        for view in &views {
            let label = label_in(&trace.views.join(view), None);
            let expected = *want
                .get(&label)
                .unwrap_or_else(|| panic!("{view}: {label}"));
            let lines = trace.timeline(&paramedir, view);
            let most = lines.iter().map(|l| l.3).fold(0.0, f64::max);
            assert_eq!(most, expected as f64, "{view}");
        }
    }
}

// ---------------------------------------------------------------------------
// CPU core counters.

/// Per (thread, counter label): the summed count of the samples BSC's rule gives
/// the thread (the last switch-in on the sample's CPU at or before its
/// midpoint), and the largest count the thread gets at one midpoint.
fn counter_truth(db: &Connection) -> BTreeMap<(i64, String), (i64, i64)> {
    let sql = "WITH s AS (
           SELECT r.start + (r.end - r.start) / 2 AS mid, r.eventId, r.count,
             COALESCE(
               (SELECT c.instance FROM TARGET_INFO_COMPONENT c
                WHERE c.componentId = r.componentId AND c.name = 'Core'),
               (SELECT p.instance FROM TARGET_INFO_COMPONENT c
                JOIN TARGET_INFO_COMPONENT p ON p.componentId = c.parentId
                WHERE c.componentId = r.componentId AND p.name = 'Core')) AS cpu
           FROM PERF_EVENT_SOC_OR_CPU_RAW_EVENT r),
         t AS (
           SELECT s.*, (SELECT e.globalTid % 16777216 FROM SCHED_EVENTS e
                        WHERE e.cpu = s.cpu AND e.isSchedIn != 0 AND e.start <= s.mid
                        ORDER BY e.start DESC, e.rowid DESC LIMIT 1) AS tid
           FROM s),
         per AS (SELECT tid, eventId, mid, SUM(count) AS n FROM t WHERE tid IS NOT NULL
                 GROUP BY tid, eventId, mid)
         SELECT per.tid, COALESCE(m.displayName, m.name)
                  || CASE WHEN m.unit = '' THEN '' ELSE ' [' || m.unit || ']' END,
                SUM(per.n), MAX(per.n)
         FROM per JOIN TARGET_INFO_PERF_METRIC m ON m.id = per.eventId
         GROUP BY per.tid, per.eventId";
    rows(db, sql, |r| {
        Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?)))
    })
    .into_iter()
    .collect()
}

/// CPU core counters: the profile of each counter is the sum of the counts the
/// export gives each thread, and its timeline shows each period's count.
#[test]
fn cpu_counter_views_sum_what_each_thread_counted() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("counters.sqlite");
    let spec = SynthSpec::small(SchemaVersion::V3_24);
    write_export(&spec, &input).unwrap();
    let cpu = SynthCpu {
        samples_per_thread: 120,
        cpu_counters: 3,
        ..SynthCpu::default()
    };
    add_cpu_activity(&input, &spec, &cpu).unwrap();
    let trace = convert_into(dir.path(), "counters", &[&input]);
    let truth = counter_truth(&open(&input));
    let labels: BTreeSet<&String> = truth.keys().map(|(_, label)| label).collect();
    assert_eq!(labels.len(), 3, "{truth:?}");
    let profiles = trace.views_under("analysis/cpu_counters");
    let timelines = trace.views_under("views/cpu_counters");
    assert_eq!((profiles.len(), timelines.len()), (3, 3));
    for (profile, timeline) in profiles.iter().zip(&timelines) {
        let label = label_in(&trace.views.join(timeline), None);
        let h = trace.histogram(&paramedir, profile);
        let lines = trace.timeline(&paramedir, timeline);
        for ((tid, _), (sum, most)) in truth.iter().filter(|((_, l), _)| *l == label) {
            let thread = trace.cpu_thread(*tid);
            let total = cell(&h, thread, "1");
            assert!(
                close(total, *sum as f64),
                "{profile} {thread}: {total} != {sum}"
            );
            let object = trace.object(thread);
            let shown = lines
                .iter()
                .filter(|l| l.0 == object)
                .map(|l| l.3)
                .fold(0.0, f64::max);
            assert_eq!(shown, *most as f64, "{timeline} {thread}");
        }
    }
}

// ---------------------------------------------------------------------------
// CUDA graphs.

fn graph_report(dir: &Path, schema: SchemaVersion, mode: SynthGraphMode) -> PathBuf {
    let mut spec = SynthSpec::small(schema);
    spec.device = SynthDeviceSide {
        graph_launches: 5,
        graph_mode: mode,
        ..SynthDeviceSide::default()
    };
    let path = dir.join(format!("graphs_{mode:?}.sqlite"));
    write_export(&spec, &path).unwrap();
    path
}

/// Graph mode: time and launches per graph per stream, and the launches on the
/// timeline.
#[test]
fn graph_views_count_and_time_the_graph_launches() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = graph_report(dir.path(), SchemaVersion::V3_24, SynthGraphMode::Graph);
    let trace = convert_into(dir.path(), "graphs", &[&input]);
    let db = open(&input);
    let launches: Vec<(String, String, i64)> = rows(
        &db,
        "SELECT deviceId, streamId, graphExecId, end - start FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        |r| {
            Ok((
                format!("CUDA-D{}.S{}", r.get::<_, i64>(0)?, r.get::<_, i64>(1)?),
                format!("Graph Exec {}", r.get::<_, i64>(2)?),
                r.get(3)?,
            ))
        },
    );
    assert_eq!(launches.len(), 5);
    let time = trace.histogram(&paramedir, "analysis/cuda_graphs_profile.cfg");
    let count = trace.histogram(&paramedir, "analysis/cuda_graph_launches.cfg");
    let keys: BTreeSet<(&String, &String)> = launches.iter().map(|l| (&l.0, &l.1)).collect();
    for (stream, graph) in keys {
        let of = || launches.iter().filter(|l| &l.0 == stream && &l.1 == graph);
        let ns: i64 = of().map(|l| l.2).sum();
        assert_eq!(cell(&time, stream, graph), ns as f64, "{stream} {graph}");
        assert_eq!(cell(&count, stream, graph), of().count() as f64);
    }
    let lines = trace.timeline(&paramedir, "views/cuda_graphs.cfg");
    for stream in launches.iter().map(|l| &l.0).collect::<BTreeSet<_>>() {
        let object = trace.object(stream);
        let on = lines.iter().filter(|l| l.0 == object && l.3 != 0.0).count();
        assert_eq!(on, launches.iter().filter(|l| &l.0 == stream).count());
    }
}

/// Node mode: the graph node each kernel, copy and memset ran as.
#[test]
fn the_graph_node_view_shows_the_nodes_that_ran() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = graph_report(dir.path(), SchemaVersion::V3_7, SynthGraphMode::Node);
    let trace = convert_into(dir.path(), "nodes", &[&input]);
    let db = open(&input);
    let nodes: Vec<(String, i64)> = rows(
        &db,
        "SELECT deviceId, streamId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL
         UNION ALL SELECT deviceId, streamId, graphNodeId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE graphNodeId IS NOT NULL",
        |r| {
            Ok((
                format!("CUDA-D{}.S{}", r.get::<_, i64>(0)?, r.get::<_, i64>(1)?),
                r.get(2)?,
            ))
        },
    );
    assert!(nodes.len() >= 10, "{nodes:?}");
    let lines = trace.timeline(&paramedir, "views/cuda_graph_nodes.cfg");
    for stream in nodes.iter().map(|n| &n.0).collect::<BTreeSet<_>>() {
        let object = trace.object(stream);
        let mut seen: Vec<i64> = lines
            .iter()
            .filter(|l| l.0 == object && l.3 != 0.0)
            .map(|l| l.3 as i64)
            .collect();
        let mut want: Vec<i64> = nodes
            .iter()
            .filter(|n| &n.0 == stream)
            .map(|n| n.1)
            .collect();
        seen.sort();
        want.sort();
        assert_eq!(seen, want, "{stream}");
    }
}

// ---------------------------------------------------------------------------
// NVTX domains and payloads.

/// A push/pop range of the export.
struct Range {
    tid: i64,
    start: i64,
    end: i64,
    name: String,
    int_payload: Option<i64>,
    float_payload: Option<f64>,
}

fn ranges(db: &Connection, domain: i64) -> Vec<Range> {
    rows(
        db,
        &format!(
            "SELECT e.globalTid % 16777216, e.start, e.end, COALESCE(e.text, s.value),
                    COALESCE(e.int64Value, e.uint64Value, e.int32Value, e.uint32Value),
                    COALESCE(e.doubleValue, e.floatValue)
             FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
             WHERE e.eventType = 59 AND e.domainId = {domain} AND e.end IS NOT NULL"
        ),
        |r| {
            Ok(Range {
                tid: r.get(0)?,
                start: r.get(1)?,
                end: r.get(2)?,
                name: r.get(3)?,
                int_payload: r.get(4)?,
                float_payload: r.get(5)?,
            })
        },
    )
}

/// Time each range name is the innermost open range, per thread (what a
/// "Stacked Val" profile shows): its ranges' durations less those of the
/// ranges nested directly inside them.
fn exclusive_times(ranges: &[Range]) -> BTreeMap<(i64, String), i64> {
    let mut times = BTreeMap::new();
    for r in ranges {
        let nested: i64 = ranges
            .iter()
            .filter(|c| c.tid == r.tid && c.start >= r.start && c.end <= r.end)
            .filter(|c| !std::ptr::eq(*c, r))
            .filter(|c| {
                // Directly: no other range of the thread between them.
                !ranges.iter().any(|m| {
                    !std::ptr::eq(m, r)
                        && !std::ptr::eq(m, *c)
                        && m.tid == r.tid
                        && m.start >= r.start
                        && m.end <= r.end
                        && c.start >= m.start
                        && c.end <= m.end
                })
            })
            .map(|c| c.end - c.start)
            .sum();
        *times.entry((r.tid, r.name.clone())).or_default() += r.end - r.start - nested;
    }
    times
}

/// The views made for the NVTX domain of the sample and its payloads, and the
/// default domain's payloads.
#[test]
fn nvtx_domain_and_payload_views_match_the_ranges() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let trace = convert_into(dir.path(), "nvtx", &[&input]);
    let db = open(&input);
    let domains: Vec<(i64, String)> = rows(
        &db,
        "SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = 75",
        |r| Ok((r.get(0)?, r.get(1)?)),
    );
    assert_eq!(domains.len(), 1, "{domains:?}");
    let (domain, name) = &domains[0];
    let stem = name.to_lowercase();

    // The profile: time each range is the innermost one, per thread.
    let domain_ranges = ranges(&db, *domain);
    let h = trace.histogram(&paramedir, &format!("analysis/nvtx_domains/{stem}.cfg"));
    let want = exclusive_times(&domain_ranges);
    assert!(want.len() >= 3);
    for ((tid, range), ns) in &want {
        assert_eq!(
            cell(&h, trace.cpu_thread(*tid), range),
            *ns as f64,
            "{range}"
        );
    }
    // The timeline: each range on its thread.
    let lines = trace.timeline(&paramedir, &format!("views/nvtx_domains/{stem}.cfg"));
    let on = lines.iter().filter(|l| l.3 != 0.0).count();
    assert_eq!(on, domain_ranges.len());

    // Payloads: integers as they are, floating point x1000; a payload of 0
    // shows as no payload, negative ones go to another type.
    let payloads = |ranges: &[Range]| -> (BTreeSet<i64>, BTreeSet<i64>) {
        let ints = ranges
            .iter()
            .filter_map(|r| r.int_payload)
            .filter(|&v| v > 0);
        let floats = ranges
            .iter()
            .filter_map(|r| r.float_payload)
            .map(|v| (v * 1000.0).round() as i64)
            .filter(|&v| v > 0);
        (ints.collect(), floats.collect())
    };
    let shown = |view: &str| -> BTreeSet<i64> {
        let lines = trace.timeline(&paramedir, view);
        lines
            .iter()
            .filter(|l| l.3 != 0.0)
            .map(|l| l.3 as i64)
            .collect()
    };
    let (ints, floats) = payloads(&domain_ranges);
    assert!(!ints.is_empty() && !floats.is_empty());
    assert_eq!(
        shown(&format!("views/nvtx_domain_payloads/{stem}.cfg")),
        ints
    );
    assert_eq!(
        shown(&format!("views/nvtx_domain_payloads_float/{stem}.cfg")),
        floats
    );
    let (ints, floats) = payloads(&ranges(&db, 0));
    assert!(!ints.is_empty() && !floats.is_empty());
    assert_eq!(shown("views/nvtx_payloads.cfg"), ints);
    assert_eq!(shown("views/nvtx_payloads_float.cfg"), floats);
}
