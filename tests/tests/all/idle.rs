//! Why a GPU is idle (issue 30 item 3): the report splits every GPU's idle time
//! into host-bound, dependency/sync and other; on generated jobs with host-bound
//! gaps (`host_gap_ns`) and dependency waits (`stream_wait_ns`:
//! `cudaStreamWaitEvent` on an event recorded elsewhere), checked against what the
//! generator injected and against the same split computed with SQL on the exports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_synth::{SynthParallel, SynthSpec};

use crate::bubble::{converted, rank_spec, write_job};

const NOT_APPLICABLE: i64 = 0xFFFF_FFFF;
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
