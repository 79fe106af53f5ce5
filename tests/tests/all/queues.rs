//! Launch queues (issue 30, item 4) on a generated process whose launches queue up
//! in bursts with fixed times: each kernel's launch latency and each stream's
//! queue depth over time in the trace, and the report's latency distribution,
//! depth summary and starvation, checked against what the generator injected,
//! against SQL on the export (RUNTIME joined with KERNEL on correlationId), and
//! through the bundled views in paramedir.

use std::path::Path;

use end_to_end::paramedir::{self, ViewResult};
use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthLaunchBursts, SynthSpec};

const QUEUE_DEPTH: u32 = 9210;
const LAUNCH_LATENCY: u32 = 9211;

const BURSTS: SynthLaunchBursts = SynthLaunchBursts {
    bursts: 3,
    kernels_per_burst: 4,
    call_spacing_ns: 10_000,
    first_latency_ns: 50_000,
    kernel_ns: 100_000,
    gap_ns: 200_000,
};

/// One process, one CPU thread, one stream, nothing but the bursts.
fn bursts_spec() -> SynthSpec {
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    let process = &mut spec.processes[0];
    (process.cpu_threads, process.streams_per_device) = (1, 1);
    (process.kernels, process.memcpys, process.memsets) = (0, 0, 0);
    (process.syncs, process.extra_api_calls) = (0, 0);
    spec.device.launch_bursts = Some(BURSTS);
    spec
}

/// Events of type `ty` on GPU stream rows: (time, value), in trace order.
fn stream_events(prv: &Path, ty: u32) -> Vec<(i64, i64)> {
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let threads: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let text = std::fs::read_to_string(prv).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("2:")) {
        let f: Vec<i64> = line.split(':').map(|x| x.parse().unwrap()).collect();
        // 2:cpu:appl:task:thread:time:type:value:…; one task here.
        let thread = threads[f[4] as usize - 1];
        assert!(f[3] == 1, "one task: {line}");
        for pair in f[6..].chunks_exact(2) {
            if pair[0] == i64::from(ty) {
                assert!(thread.starts_with("CUDA-D"), "{ty} on {thread}");
                out.push((f[5], pair[1]));
            }
        }
    }
    out
}

/// (launch call begin, kernel begin) of every kernel, from SQL alone, by kernel begin.
fn launches_by_sql(path: &Path) -> Vec<(i64, i64)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.start, k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             ORDER BY k.start",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The queue depth after each change, from (call begin, kernel begin) pairs: +1 at
/// the call, -1 at the kernel, changes at one time folded.
fn depth_changes(launches: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut deltas: Vec<(i64, i64)> = launches
        .iter()
        .flat_map(|&(call, start)| [(call, 1), (start, -1)])
        .collect();
    deltas.sort();
    let mut changes: Vec<(i64, i64)> = Vec::new();
    let mut depth = 0;
    for (time, delta) in deltas {
        depth += delta;
        match changes.last_mut() {
            Some(last) if last.0 == time => last.1 = depth,
            _ => changes.push((time, depth)),
        }
    }
    changes.retain({
        let mut previous = 0;
        move |c| std::mem::replace(&mut previous, c.1) != c.1
    });
    changes
}

#[test]
fn bursts_of_launches_give_the_injected_latencies_depths_and_starvation() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("bursts.sqlite");
    write_export(&bursts_spec(), &export).unwrap();
    let out = dir.path().join("bursts.prv");
    let result = convert(&[&export], &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    check_trace(&out);

    // What was injected, and SQL on the export, agree.
    let launches = launches_by_sql(&export);
    let per_burst = BURSTS.kernels_per_burst as usize;
    assert_eq!(launches.len(), BURSTS.bursts as usize * per_burst);
    let injected: Vec<i64> = (0..launches.len())
        .map(|k| BURSTS.latency((k % per_burst) as u32))
        .collect();
    let by_sql: Vec<i64> = launches.iter().map(|(call, start)| start - call).collect();
    assert_eq!(by_sql, injected);

    // The trace: each kernel's latency at its begin (0 at its end), in order.
    let latencies = stream_events(&out, LAUNCH_LATENCY);
    let begins: Vec<(i64, i64)> = latencies.iter().copied().filter(|e| e.1 != 0).collect();
    assert_eq!(
        begins.iter().map(|e| e.1).collect::<Vec<_>>(),
        injected,
        "latencies"
    );
    // The trace's clock is the export's shifted: the first kernel tells by how much.
    let shift = begins[0].0 - launches[0].1;
    let kernel_begins: Vec<i64> = launches.iter().map(|l| l.1 + shift).collect();
    assert_eq!(
        begins.iter().map(|e| e.0).collect::<Vec<_>>(),
        kernel_begins
    );
    // The depth after each change, as SQL gives it.
    let depths = stream_events(&out, QUEUE_DEPTH);
    let expected: Vec<(i64, i64)> = depth_changes(&launches)
        .into_iter()
        .map(|(t, d)| (t + shift, d))
        .collect();
    assert_eq!(depths, expected);
    let max_depth = depths.iter().map(|d| d.1).max().unwrap();
    // Every call of a burst comes before its first kernel starts.
    assert_eq!(max_depth, i64::from(BURSTS.kernels_per_burst));

    // The report.
    let report = binary()
        .args(["report", "--json", "-"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let queues = &json["launch_queues"];
    let streams = queues["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "{queues:#}");
    let stream = &streams[0];
    let mut sorted = injected.clone();
    sorted.sort();
    let rank = |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1];
    let latency = &stream["latency"];
    assert_eq!(latency["count"], sorted.len() as u64);
    assert_eq!(latency["median_ns"], rank(0.5));
    assert_eq!(latency["p90_ns"], rank(0.9));
    assert_eq!(latency["max_ns"], *sorted.last().unwrap());
    let mean = sorted.iter().sum::<i64>() as f64 / sorted.len() as f64;
    assert!((latency["mean_ns"].as_f64().unwrap() - mean).abs() < 1e-6);
    // One kernel name: the same distribution.
    let kernels = queues["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    assert_eq!(kernels[0]["latency"], *latency);
    assert_eq!(stream["max_depth"], max_depth);
    // Starved: the gap before every burst but the first (the stream had run
    // nothing before it); then idle with a kernel queued until it starts.
    let later_bursts = i64::from(BURSTS.bursts - 1);
    assert_eq!(stream["starved_ns"], later_bursts * BURSTS.gap_ns);
    assert_eq!(
        stream["queued_idle_ns"],
        later_bursts * BURSTS.first_latency_ns
    );
    // Mean depth over the trace: the integral of SQL's depth function.
    let elapsed = json["elapsed_ns"].as_u64().unwrap() as f64;
    let integral: f64 = expected
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64 * w[0].1 as f64)
        .sum();
    let mean_depth = stream["mean_depth"].as_f64().unwrap();
    assert!(
        (mean_depth - integral / elapsed).abs() < 1e-9,
        "{mean_depth} vs {}",
        integral / elapsed
    );
    let text = binary().args(["report"]).arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Launch queues: GPU streams whose queue ran empty most"));

    // The views written beside the trace load in paramedir, and the bundled
    // ones give the same figures (read from the bundled copies, which list every
    // row: paramedir labels the rows of a histogram restricted to some
    // (`Analyzer2D.Objects`, the written copies' GPU streams) out of place).
    let Some(paramedir) = paramedir::paramedir() else {
        return;
    };
    let names = [
        "analysis/launch_queue_depth.cfg",
        "analysis/kernel_launch_latency.cfg",
        "views/launch_queue_depth.cfg",
    ];
    let written: Vec<_> = names
        .iter()
        .map(|n| out.with_extension("cfgs").join(n))
        .collect();
    let run = paramedir::run(&paramedir, &out, &written, &[]);
    assert!(
        run.unexpected_lines().is_empty(),
        "{:?}",
        run.unexpected_lines()
    );
    assert!((0..3).all(|i| run.result(i).is_some_and(|r| r.is_ok())));
    let bundled: Vec<_> = names
        .iter()
        .map(|n| workspace_root().join("cfgs").join(n))
        .collect();
    let run = paramedir::run(&paramedir, &out, &bundled, &[]);
    let Some(Ok(ViewResult::Histogram(depth))) = run.result(0) else {
        panic!("no histogram: {:?}", run.result(0));
    };
    let row = "CUDA-D0.S7";
    let mut time_depth = 0.0;
    let mut deepest = 0;
    for d in 0..=max_depth + 1 {
        let time = depth.cell(row, &format!("value {d}")).unwrap_or(0.0);
        time_depth += d as f64 * time;
        if time > 0.0 {
            deepest = d;
        }
    }
    assert_eq!(deepest, max_depth, "{depth:?}");
    assert!(
        (time_depth / elapsed - mean_depth).abs() < 1e-9,
        "paramedir {} vs report {mean_depth}",
        time_depth / elapsed
    );
    let Some(Ok(ViewResult::Histogram(latency_view))) = run.result(1) else {
        panic!("no histogram: {:?}", run.result(1));
    };
    let kernel = kernels[0]["kernel"].as_str().unwrap();
    let cell = latency_view.cell(row, kernel).unwrap();
    assert!((cell - mean).abs() < 0.01, "paramedir {cell} vs {mean}");
}
