//! Why a GPU is idle (issue 30 item 3): the report splits every GPU's idle time
//! into host-bound, dependency/sync and other; on generated jobs with host-bound
//! gaps (`host_gap_ns`) and dependency waits (`stream_wait_ns`:
//! `cudaStreamWaitEvent` on an event recorded elsewhere), checked against what the
//! generator injected and against the same split computed with SQL on the exports.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use end_to_end::paramedir::{self, ViewResult};
use end_to_end::*;
use nsys_synth::{SynthParallel, SynthSpec};
use paraver_reader::parse_header;

use crate::bubble::{converted, rank_spec, write_job};

const NOT_APPLICABLE: i64 = 0xFFFF_FFFF;
/// The trace's type of the idle causes (`nsys2prv_events::GPU_IDLE_CAUSE`).
const GPU_IDLE_CAUSE: i64 = 9360;
/// The generator's gap between two operations of a stream (`STREAM_GAP`).
const STREAM_GAP_NS: (u64, u64) = (500, 2_000);

/// A GPU's idle time by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Split {
    idle: u64,
    host_bound: u64,
    dependency: u64,
    other: u64,
    gaps: u64,
}

/// The split of an export's (one GPU's) idle time as the report defines it, from
/// SQL: the gaps between the GPU's kernels, copies and memsets; for each, the
/// operation that ends it, the start of the runtime call that launched it (same
/// correlation id), and whether a `cudaStreamWaitEvent` on its stream ended
/// between the previous launch into that stream and this one.
fn split_by_sql(path: &Path) -> Split {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let devices: i64 = db
        .query_row(
            "SELECT count(DISTINCT deviceId) FROM (SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL
             UNION ALL SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY
             UNION ALL SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(devices, 1, "one GPU per export");
    // (start, end, stream, correlation id)
    let mut ops: Vec<(i64, i64, i64, i64)> = db
        .prepare(
            "SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
             UNION ALL SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
             UNION ALL SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    ops.sort_by_key(|o| (o.0, o.2, o.1));
    let launch: HashMap<i64, i64> = db
        .prepare("SELECT correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Stream waits: (stream, end of the cudaStreamWaitEvent call).
    let waits: Vec<(i64, i64)> = db
        .prepare(&format!(
            "SELECT s.streamId, r.end FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = s.correlationId
             WHERE s.eventId IS NOT NULL AND s.eventId NOT IN (0, {NOT_APPLICABLE})
               AND s.streamId IS NOT NULL AND s.streamId != {NOT_APPLICABLE}"
        ))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Per stream, the launch times of its operations, in order.
    let mut launches_of: HashMap<i64, Vec<i64>> = HashMap::new();
    for o in &ops {
        if let Some(&l) = launch.get(&o.3) {
            launches_of.entry(o.2).or_default().push(l);
        }
    }
    for list in launches_of.values_mut() {
        list.sort();
    }
    let mut split = Split::default();
    let mut busy_until = ops[0].1;
    for o in &ops[1..] {
        if o.0 > busy_until {
            let (begin, end) = (busy_until as u64, o.0 as u64);
            split.gaps += 1;
            split.idle += end - begin;
            match launch.get(&o.3) {
                None => split.other += end - begin,
                Some(&l) => {
                    let list = &launches_of[&o.2];
                    let previous = list[..list.partition_point(|&x| x < l)]
                        .last()
                        .copied()
                        .unwrap_or(i64::MIN);
                    let waited = waits
                        .iter()
                        .any(|&(s, t)| s == o.2 && t > previous && t < l);
                    let launched = (l.max(0) as u64).clamp(begin, end);
                    split.host_bound += launched - begin;
                    if waited {
                        split.dependency += end - launched;
                    } else {
                        split.other += end - launched;
                    }
                }
            }
        }
        busy_until = busy_until.max(o.1);
    }
    split
}

fn report_json(prv: &Path) -> serde_json::Value {
    let report = binary()
        .args(["report", "--json", "-"])
        .arg(prv)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    serde_json::from_slice(&report.stdout).unwrap()
}

fn split_of(value: &serde_json::Value) -> Split {
    let n = |k: &str| {
        value[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {value}"))
    };
    Split {
        idle: n("idle_ns"),
        host_bound: n("host_bound_ns"),
        dependency: n("dependency_ns"),
        other: n("other_ns"),
        gaps: value["gaps"].as_u64().unwrap_or(0),
    }
}

/// A 2-rank job of `steps` steps with `parallel`'s injections, converted; its
/// exports and the report's JSON.
fn job(
    dir: &Path,
    name: &str,
    steps: u64,
    parallel: SynthParallel,
) -> (Vec<PathBuf>, serde_json::Value) {
    let specs: Vec<SynthSpec> = (0..2)
        .map(|rank| rank_spec(rank, 2, steps, parallel.clone()))
        .collect();
    let inputs = write_job(dir, name, &specs);
    let out = dir.join(format!("{name}.prv"));
    converted(&inputs, &out);
    (inputs, report_json(&out))
}

/// Per GPU (one per rank, in rank order): the report's split adds up to the idle
/// time and equals the split computed with SQL on the rank's export.
fn check_against_sql(inputs: &[PathBuf], json: &serde_json::Value) -> Vec<Split> {
    let idle = &json["idle_causes"];
    let gpus = idle["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), inputs.len(), "{idle}");
    let mut splits = Vec::new();
    for (rank, (gpu, input)) in gpus.iter().zip(inputs).enumerate() {
        let found = split_of(gpu);
        assert_eq!(
            found.host_bound + found.dependency + found.other,
            found.idle,
            "rank {rank}: the causes add up to the idle time"
        );
        assert_eq!(found, split_by_sql(input), "rank {rank}: {gpu}");
        splits.push(found);
    }
    let total = split_of(idle);
    let sum = |f: fn(&Split) -> u64| splits.iter().map(f).sum::<u64>();
    assert_eq!(total.idle, sum(|s| s.idle));
    assert_eq!(total.host_bound, sum(|s| s.host_bound));
    assert_eq!(total.dependency, sum(|s| s.dependency));
    assert_eq!(total.gaps, sum(|s| s.gaps));
    splits
}

/// The per-iteration rows (train_step): each adds up, and none holds more than
/// the run.
fn iterations(json: &serde_json::Value, steps: u64) -> Vec<Split> {
    let idle = &json["idle_causes"];
    let rows = idle["per_iteration"].as_array().unwrap();
    assert_eq!(rows.len() as u64, steps, "{idle}");
    let total = split_of(idle);
    rows.iter()
        .map(|row| {
            let s = split_of(row);
            assert_eq!(s.host_bound + s.dependency + s.other, s.idle, "{row}");
            assert!(s.idle <= total.idle);
            s
        })
        .collect()
}

#[test]
fn host_bound_gaps_are_host_bound() {
    let dir = tempfile::tempdir().unwrap();
    let steps = 3;
    let host_gap = 3_000_000u64;
    let parallel = SynthParallel {
        host_gap_ns: host_gap as i64,
        ..SynthParallel::default()
    };
    let (inputs, json) = job(dir.path(), "host", steps, parallel);
    let splits = check_against_sql(&inputs, &json);
    for (rank, s) in splits.iter().enumerate() {
        // Every step's data loading keeps the GPU waiting for the CPU at least that long.
        assert!(
            s.host_bound >= steps * host_gap,
            "rank {rank}: {s:?} has less than {steps} × {host_gap} ns host-bound"
        );
        assert_eq!(s.dependency, 0, "rank {rank}: no stream waits: {s:?}");
    }
    let per_iteration = iterations(&json, steps);
    assert!(per_iteration.iter().all(|s| s.dependency == 0));
    // The GPU idles in data loading: the host-bound time is put down to what the
    // launching thread was in.
    let first = &json["idle_causes"]["gpus"][0]["host_bound_in"][0];
    assert!(first["ns"].as_u64().unwrap() > 0, "{first}");
}

#[test]
fn stream_waits_are_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let steps = 3;
    let wait = 2_000_000u64;
    let parallel = SynthParallel {
        stream_wait_ns: wait as i64,
        ..SynthParallel::default()
    };
    let (inputs, json) = job(dir.path(), "wait", steps, parallel);
    let splits = check_against_sql(&inputs, &json);
    for (rank, s) in splits.iter().enumerate() {
        // Each step's forward kernels, launched while the batch was copied in, waited
        // for the event: the wait plus the stream's gap after it.
        let (low, high) = (
            steps * (wait + STREAM_GAP_NS.0),
            steps * (wait + STREAM_GAP_NS.1),
        );
        assert!(
            (low..=high).contains(&s.dependency),
            "rank {rank}: {} ns dependency, injected {low}..={high}: {s:?}",
            s.dependency
        );
    }
    for (k, s) in iterations(&json, steps).iter().enumerate() {
        assert!(
            (wait + STREAM_GAP_NS.0..=wait + STREAM_GAP_NS.1).contains(&(s.dependency / 2)),
            "iteration {}: {s:?} (2 GPUs)",
            k + 1
        );
    }
}

#[test]
fn the_text_and_page_show_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let parallel = SynthParallel {
        stream_wait_ns: 1_000_000,
        host_gap_ns: 1_000_000,
        ..SynthParallel::default()
    };
    let specs: Vec<SynthSpec> = (0..2)
        .map(|rank| rank_spec(rank, 2, 2, parallel.clone()))
        .collect();
    let inputs = write_job(dir.path(), "both", &specs);
    let out = dir.path().join("both.prv");
    converted(&inputs, &out);
    let text = binary().arg("report").arg(&out).output().unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Why the GPUs were idle:"), "{text}");
    assert!(text.contains("host-bound s"), "{text}");
    let page = dir.path().join("report.html");
    let made = binary()
        .arg("report")
        .arg("--html")
        .arg(&page)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"idle_causes\""));
    assert!(html.contains("data-k=\"/idle_causes/gpus/1/dependency_ns\""));
}

/// The trace holds the same split (type 9360 on the GPU stream rows, issue 30):
/// per GPU, the time per cause of the bundled `analysis/gpu_idle_causes.cfg` in
/// paramedir, summed over the GPU's stream rows, equals the report's split,
/// which equals SQL's; the views written beside the trace load.
#[test]
fn the_trace_holds_the_reports_split() {
    let dir = tempfile::tempdir().unwrap();
    let parallel = SynthParallel {
        stream_wait_ns: 1_000_000,
        host_gap_ns: 2_000_000,
        ..SynthParallel::default()
    };
    let (inputs, json) = job(dir.path(), "trace", 3, parallel);
    let splits = check_against_sql(&inputs, &json);
    assert!(splits
        .iter()
        .all(|s| s.host_bound > 0 && s.dependency > 0 && s.other > 0));
    let out = dir.path().join("trace.prv");
    let Some(paramedir) = paramedir::paramedir() else {
        return;
    };
    let written: Vec<PathBuf> = ["views/gpu_idle_causes.cfg", "analysis/gpu_idle_causes.cfg"]
        .iter()
        .map(|n| out.with_extension("cfgs").join(n))
        .collect();
    let run = paramedir::run(&paramedir, &out, &written, &[]);
    assert!(
        run.unexpected_lines().is_empty(),
        "{:?}",
        run.unexpected_lines()
    );
    assert!((0..2).all(|i| run.result(i).is_some_and(|r| r.is_ok_and(|r| r.has_data()))));
    assert_trace_split_is_reports(&paramedir, &out, &json);

    // BSC's time limits leave out the rows outside them (and the arrows of the
    // calls outside): the report on that trace and its pieces agree too.
    let limited = dir.path().join("limited.prv");
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    // From the middle of the first rank's GPU work (each report's own time).
    let middle: i64 = rusqlite::Connection::open(&inputs[0])
        .unwrap()
        .query_row(
            "SELECT (min(start) + max(end)) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let limit = middle.to_string();
    let result = convert(&refs, &limited, &["--time-limit-start", &limit]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let json = report_json(&limited);
    let whole: u64 = splits.iter().map(|s| s.idle).sum();
    let left = split_of(&json["idle_causes"]).idle;
    assert!(left > 0 && left < whole, "{left} of {whole} ns idle left");
    assert_trace_split_is_reports(&paramedir, &limited, &json);
}

/// Per GPU, the time per cause of the bundled `analysis/gpu_idle_causes.cfg` in
/// paramedir on `prv`, summed over the GPU's stream rows, is the report's split.
fn assert_trace_split_is_reports(paramedir: &Path, prv: &Path, json: &serde_json::Value) {
    // The bundled copy lists every row, in the trace's order.
    let bundled = workspace_root().join("cfgs/analysis/gpu_idle_causes.cfg");
    let run = paramedir::run(paramedir, prv, &[bundled], &[]);
    let Some(Ok(ViewResult::Histogram(by_cause))) = run.result(0) else {
        panic!("no histogram: {:?}", run.result(0));
    };
    let gpus = json["idle_causes"]["gpus"].as_array().unwrap();
    let stream_rows = gpu_stream_rows(prv);
    let mut found = vec![Split::default(); gpus.len()];
    for ((_, cells), gpu) in by_cause.rows.iter().zip(&stream_rows) {
        let Some(gpu) = gpu else {
            continue;
        };
        let time = |value: &str| {
            let column = by_cause.columns.iter().position(|c| c == value);
            column.map_or(0, |c| cells[c].round() as u64)
        };
        let split = &mut found[*gpu];
        split.host_bound += time("Host-bound (not launched yet)");
        split.dependency += time("Dependency/sync (stream waited)");
        split.other += time("Other (launch latency, waits not traced)");
    }
    for (gpu, (found, json)) in found.iter_mut().zip(gpus).enumerate() {
        let want = split_of(json);
        found.idle = found.host_bound + found.dependency + found.other;
        found.gaps = want.gaps;
        assert_eq!(
            *found, want,
            "GPU {gpu}: the trace's pieces vs the report's split"
        );
    }
}

/// For each thread of the trace (in `.row` order), the GPU (0, 1, ... in task then
/// device order) whose stream row it is, or `None`.
fn gpu_stream_rows(prv: &Path) -> Vec<Option<usize>> {
    let text = std::fs::read_to_string(prv).unwrap();
    let header = parse_header(text.lines().next().unwrap(), &mut Vec::new()).unwrap();
    let threads_per_task: Vec<usize> = header.appls[0]
        .iter()
        .map(|task| task.threads as usize)
        .collect();
    let rows = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let names: Vec<&str> = rows
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let mut gpus: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    let mut index = 0;
    for (task, &count) in threads_per_task.iter().enumerate() {
        for _ in 0..count {
            let name = names[index];
            index += 1;
            let device = name
                .strip_prefix("CUDA-D")
                .and_then(|rest| rest.split_once('.'))
                .map(|(d, _)| d.to_owned());
            out.push(device.map(|d| {
                let key = (task, d);
                match gpus.iter().position(|g| *g == key) {
                    Some(i) => i,
                    None => {
                        gpus.push(key);
                        gpus.len() - 1
                    }
                }
            }));
        }
    }
    out
}

/// Per row (task, thread): (begin, end, value) of pieces of type 9360.
type PiecesByRow = BTreeMap<(u32, u32), Vec<(i64, i64, i64)>>;

/// 9360's pieces of a trace: per row (task, thread), (begin, end, value) of each
/// value other than 0, until the next 9360 of the row (or the trace's end).
fn idle_pieces(prv: &Path) -> PiecesByRow {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines = text.lines();
    let header = parse_header(lines.next().unwrap(), &mut Vec::new()).unwrap();
    let end = header.end as i64;
    let mut pieces = PiecesByRow::new();
    let mut open: BTreeMap<(u32, u32), (i64, i64)> = BTreeMap::new();
    for line in lines.filter(|l| l.starts_with("2:")) {
        let fields: Vec<i64> = line.split(':').map(|f| f.parse().unwrap()).collect();
        let row = (fields[3] as u32, fields[4] as u32);
        for pair in fields[6..].chunks_exact(2) {
            if pair[0] != GPU_IDLE_CAUSE {
                continue;
            }
            if let Some((from, value)) = open.remove(&row) {
                pieces
                    .entry(row)
                    .or_default()
                    .push((from, fields[5], value));
            }
            if pair[1] != 0 {
                open.insert(row, (fields[5], pair[1]));
            }
        }
    }
    for (row, (from, value)) in open {
        pieces.entry(row).or_default().push((from, end, value));
    }
    pieces
}

/// A time window cuts the pieces as it cuts every event: those inside are kept,
/// one open at the window's start begins again there (type 9360 is a level), one
/// open at its end ends there. (The report on the cut trace does not count the
/// time before a GPU's first operation in the window, nor after its last, as idle,
/// although the uncut trace's pieces cover them: docs/report.md says so.)
#[test]
fn a_time_window_cuts_the_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let parallel = SynthParallel {
        stream_wait_ns: 1_000_000,
        host_gap_ns: 2_000_000,
        ..SynthParallel::default()
    };
    let specs: Vec<SynthSpec> = (0..2)
        .map(|rank| rank_spec(rank, 2, 3, parallel.clone()))
        .collect();
    let inputs = write_job(dir.path(), "cut", &specs);
    let whole = dir.path().join("whole.prv");
    converted(&inputs, &whole);
    let all = idle_pieces(&whole);
    // A window whose edges fall inside pieces: a third of the way into the
    // first GPU row's pieces, to two thirds.
    let times: Vec<i64> = all.values().flatten().map(|p| p.0).collect();
    let (first, last) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let inside = |at: i64| {
        all.values()
            .flatten()
            .find(|p| p.0 >= at && p.1 - p.0 > 2)
            .map(|p| p.0 + (p.1 - p.0) / 2)
            .unwrap()
    };
    let (start, end) = (
        inside(first + (last - first) / 3),
        inside(first + 2 * (last - first) / 3),
    );
    let cut = dir.path().join("cut.prv");
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let window = format!("{start}ns:{end}ns");
    let result = convert(&refs, &cut, &["--time-window", &window]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    check_trace(&cut);
    let clipped: PiecesByRow = all
        .iter()
        .map(|(row, pieces)| {
            let kept: Vec<(i64, i64, i64)> = pieces
                .iter()
                .filter(|p| p.1 > start && p.0 < end)
                .map(|p| (p.0.max(start) - start, p.1.min(end) - start, p.2))
                .collect();
            (*row, kept)
        })
        .filter(|(_, kept)| !kept.is_empty())
        .collect();
    let found = idle_pieces(&cut);
    assert!(
        clipped.values().flatten().any(|p| p.0 == 0),
        "a piece crosses the start"
    );
    assert!(
        clipped.values().flatten().any(|p| p.1 == end - start),
        "a piece crosses the end"
    );
    assert_eq!(found, clipped);
}

/// On every real export of the corpus with GPU operations, the trace's pieces,
/// summed per GPU, are the report's split of its idle time (real exports: any
/// order of rows, clocks, several streams, operations without a launch).
#[test]
fn real_exports_hold_the_reports_split() {
    let Some(corpus) = corpus_dir() else { return };
    let manifest = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for relpath in manifest
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
    {
        if !relpath.ends_with(".sqlite") || relpath.starts_with("broken/") {
            continue;
        }
        let out = dir.path().join(format!("corpus{checked}.prv"));
        let export = corpus.join(relpath);
        let result = convert(&[export.as_path()], &out, &[]);
        if !result.status.success() {
            continue;
        }
        let pieces = idle_pieces(&out);
        if pieces.is_empty() {
            continue;
        }
        let stream_rows = gpu_stream_rows(&out);
        let json = report_json(&out);
        let gpus = json["idle_causes"]["gpus"].as_array().unwrap();
        let mut found = vec![[0u64; 3]; gpus.len()];
        let prv_text = std::fs::read_to_string(&out).unwrap();
        let header = parse_header(prv_text.lines().next().unwrap(), &mut Vec::new()).unwrap();
        // Global thread index of thread 1 of each task.
        let firsts: Vec<usize> = header.appls[0]
            .iter()
            .scan(0, |next, task| {
                let first = *next;
                *next += task.threads as usize;
                Some(first)
            })
            .collect();
        for ((task, thread), list) in &pieces {
            let index = firsts[*task as usize - 1] + *thread as usize - 1;
            let gpu = stream_rows[index].expect("pieces on a GPU stream row");
            for &(from, to, value) in list {
                found[gpu][value as usize - 1] += (to - from) as u64;
            }
        }
        for (gpu, (found, json)) in found.iter().zip(gpus).enumerate() {
            let want = split_of(json);
            assert_eq!(
                *found,
                [want.host_bound, want.dependency, want.other],
                "{relpath}: GPU {gpu}"
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no corpus export with GPU idle intervals");
}
