//! Finding the bubble (issue 30) on generated jobs whose behaviour is known: NCCL
//! point-to-point transfers of a pipeline as communication lines between the right
//! GPU stream rows, and the late rank of every collective with the others' waits —
//! each checked against what the generator injected, against SQL on the exports,
//! and through the bundled views in paramedir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use end_to_end::paramedir::{self, ViewResult};
use end_to_end::*;
use nsys_synth::{
    write_export, PipelineWork, SchemaVersion, SynthLateRank, SynthParallel, SynthPipeline,
    SynthSpec, SynthTraining,
};

const TAG_NCCL_P2P: i64 = 55_005;
const WAITED_FOR_RANK: u32 = 9530;
const WAIT_TIME: u32 = 9531;
/// Rank r's session starts r µs after rank 0's (the job's clock origin).
const SESSION_STEP_NS: i64 = 1_000;

/// Rank `rank` of a `world`-rank training job with `parallel`'s shape: its own pid,
/// SLURM_PROCID and session start; compute, NCCL and copy streams.
pub(crate) fn rank_spec(rank: u32, world: u32, steps: u64, parallel: SynthParallel) -> SynthSpec {
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.utc_epoch_ns += i64::from(rank) * SESSION_STEP_NS;
    spec.seed += u64::from(rank);
    spec.env = vec![("SLURM_PROCID".to_owned(), rank.to_string())];
    let process = &mut spec.processes[0];
    process.pid += 101 * rank;
    process.name = "python3".to_owned();
    process.streams_per_device = 4;
    (process.kernels, process.memcpys, process.memsets) = (0, 0, 0);
    (process.syncs, process.extra_api_calls) = (0, 0);
    spec.training = Some(SynthTraining {
        layers: 2,
        buckets: 2,
        kernel_names: 12,
        parallel: SynthParallel {
            rank,
            world,
            session_offset_ns: i64::from(rank) * SESSION_STEP_NS,
            ..parallel
        },
        ..SynthTraining::new(steps)
    });
    spec
}

pub(crate) fn write_job(dir: &Path, name: &str, specs: &[SynthSpec]) -> Vec<PathBuf> {
    specs
        .iter()
        .enumerate()
        .map(|(rank, spec)| {
            let path = dir.join(format!("{name}_rank{rank}.sqlite"));
            write_export(spec, &path).unwrap();
            path
        })
        .collect()
}

pub(crate) fn converted(inputs: &[PathBuf], out: &Path) -> String {
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let result = convert_command(&refs, out, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert!(result.status.success(), "{stderr}");
    check_trace(out);
    stderr
}

fn convert_command(inputs: &[&Path], output: &Path, extra: &[&str]) -> std::process::Command {
    let mut cmd = binary();
    cmd.args(extra).args(inputs).arg(output);
    cmd
}

/// A communication of the `.prv`: (sender task, logical send, receiver task,
/// logical receive, physical receive, size), tasks from 1.
type Line = (u32, i64, u32, i64, i64, i64);

fn nccl_lines(prv: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines: Vec<Line> = text
        .lines()
        .filter(|l| l.starts_with("3:"))
        .map(|l| {
            l.split(':')
                .map(|f| f.parse::<i64>().unwrap())
                .collect::<Vec<_>>()
        })
        .filter(|f| f[14] == TAG_NCCL_P2P)
        .map(|f| (f[3] as u32, f[5], f[9] as u32, f[11], f[12], f[13]))
        .collect();
    lines.sort();
    lines
}

/// Per rank file: its NCCL kernels on the job's clock with the NCCL range the
/// launch was made in (name and payload), from SQL alone.
fn nccl_kernels_by_sql(path: &Path, rank: u32) -> Vec<(i64, i64, String, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let offset = i64::from(rank) * SESSION_STEP_NS;
    let mut stmt = conn
        .prepare(
            "SELECT k.start, k.end, t.value, n.jsonText
             FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             JOIN NVTX_EVENTS n ON n.globalTid = r.globalTid AND n.start <= r.start
                  AND n.end >= r.end AND n.jsonText IS NOT NULL
             JOIN StringIds t ON t.id = n.textId
             ORDER BY k.start",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)? + offset,
            r.get::<_, i64>(1)? + offset,
            r.get(2)?,
            r.get(3)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn peer_of(json: &str) -> u32 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["Peer rank"].as_u64().unwrap() as u32
}

/// The transfers SQL finds: the n-th ncclSend of rank a to b pairs with the n-th
/// ncclRecv of b from a.
fn transfers_by_sql(inputs: &[PathBuf]) -> Vec<Line> {
    let mut sends: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    let mut receives: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    for (rank, path) in inputs.iter().enumerate() {
        let rank = rank as u32;
        for (start, end, name, json) in nccl_kernels_by_sql(path, rank) {
            let peer = peer_of(&json);
            match name.as_str() {
                "ncclSend" => sends.entry((rank, peer)).or_default().push((start, end)),
                "ncclRecv" => receives.entry((peer, rank)).or_default().push((start, end)),
                _ => {}
            }
        }
    }
    let mut lines = Vec::new();
    for ((from, to), out) in &sends {
        for (s, r) in out.iter().zip(&receives[&(*from, *to)]) {
            lines.push((from + 1, s.0, to + 1, r.0, r.1, 4 << 20));
        }
    }
    lines.sort();
    lines
}

/// The rank files of a `stages`-stage pipeline (3 micro-batches, stage 1 twice as slow)
/// running `steps` steps, and its shape; also a trace of `paramedir::`.
pub(crate) fn pipeline_job(dir: &Path, stages: u32, steps: u64) -> (Vec<PathBuf>, SynthPipeline) {
    let pipeline = SynthPipeline {
        slow_stage: Some(1),
        ..SynthPipeline::new(3)
    };
    let specs: Vec<SynthSpec> = (0..stages)
        .map(|rank| {
            let parallel = SynthParallel {
                pipeline: Some(pipeline.clone()),
                ..SynthParallel::default()
            };
            rank_spec(rank, stages, steps, parallel)
        })
        .collect();
    (write_job(dir, "pipeline", &specs), pipeline)
}

/// Every ncclSend of a three-stage pipeline is a line from the sending stage's GPU
/// stream row to the neighbouring stage's, from the send kernel's start to the
/// receive kernel's end, with the bytes: as the schedule injected them and as SQL
/// on the exports pairs them. The bundled view draws them: paramedir's bytes in
/// transit per sending row cover exactly those transfers.
#[test]
fn pipeline_transfers_are_lines_between_neighbouring_stage_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, pipeline) = pipeline_job(dir.path(), 3, 2);
    let out = dir.path().join("pipeline.prv");
    converted(&inputs, &out);
    let lines = nccl_lines(&out);

    // What the generator injected: the schedule's sends, step by step.
    let schedule = pipeline.schedule(3);
    let mut injected: Vec<Line> = Vec::new();
    for step in 0..2 {
        let origin = schedule.step_start(step);
        for send in schedule.ops.iter().filter(|o| o.work == PipelineWork::Send) {
            let peer = send.peer.unwrap();
            let recv = schedule
                .ops
                .iter()
                .find(|o| {
                    o.work == PipelineWork::Recv
                        && o.stage == peer
                        && o.peer == Some(send.stage)
                        && o.micro_batch == send.micro_batch
                        && (o.end == send.end)
                })
                .unwrap();
            injected.push((
                send.stage + 1,
                origin + send.start,
                peer + 1,
                origin + recv.start,
                origin + recv.end,
                pipeline.activation_bytes,
            ));
        }
    }
    injected.sort();
    assert_eq!(
        injected.len(),
        2 * 2 * 3 * 2,
        "two links, both ways, 3 micro-batches, 2 steps"
    );
    assert_eq!(lines, injected);
    assert_eq!(lines, transfers_by_sql(&inputs));

    // Every line goes between GPU stream rows (thread 2 of each task: its one CPU
    // thread comes first), never to or from a CPU thread.
    let row = std::fs::read_to_string(out.with_extension("row")).unwrap();
    assert!(row.contains("CUDA-D0.S"), "{row}");
    let text = std::fs::read_to_string(&out).unwrap();
    for l in text
        .lines()
        .filter(|l| l.starts_with("3:") && l.ends_with(":55005"))
    {
        let f: Vec<&str> = l.split(':').collect();
        assert_eq!((f[4], f[10]), ("2", "2"), "{l}");
    }

    // The view draws them.
    let Some(paramedir) = paramedir::paramedir() else {
        return;
    };
    let view = out.with_extension("cfgs").join("views/nccl_transfers.cfg");
    let run = paramedir::run(&paramedir, &out, std::slice::from_ref(&view), &[]);
    assert!(
        run.unexpected_lines().is_empty(),
        "{:?}",
        run.unexpected_lines()
    );
    let Some(Ok(ViewResult::Timeline(intervals))) = run.result(0) else {
        panic!("no timeline: {}", run.stdout);
    };
    let mut in_transit: BTreeMap<String, f64> = BTreeMap::new();
    for (object, _, duration, value) in &intervals {
        if *value != 0.0 {
            assert_eq!(*value, pipeline.activation_bytes as f64);
            *in_transit.entry(object.clone()).or_default() += duration;
        }
    }
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    for (from, send, _, _, received, _) in &lines {
        // The timeline is in µs (fitted to the trace's length).
        *expected.entry(format!("1.{from}.2")).or_default() += (received - send) as f64 / 1e3;
    }
    assert_eq!(
        in_transit.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (object, us) in &expected {
        assert!(
            (in_transit[object] - us).abs() < 0.1,
            "{object}: {in_transit:?} vs {expected:?}"
        );
    }
}

/// Without the last stage, stage 1's sends to it and receives from it have no
/// partner: counted and said, the rest still drawn.
#[test]
fn transfers_to_a_missing_rank_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, pipeline) = pipeline_job(dir.path(), 3, 1);
    let out = dir.path().join("two.prv");
    let refs: Vec<&Path> = inputs[..2].iter().map(PathBuf::as_path).collect();
    let result = convert_command(&refs, &out, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    check_trace(&out);
    let schedule = pipeline.schedule(3);
    let count = |work| {
        schedule
            .ops
            .iter()
            .filter(|o| o.stage == 1 && o.peer == Some(2) && o.work == work)
            .count()
    };
    let (sends, receives) = (count(PipelineWork::Send), count(PipelineWork::Recv));
    assert_eq!((sends, receives), (3, 3));
    assert!(
        stderr.contains(&format!(
            "NCCL: {sends} sends and {receives} receives have no partner"
        )),
        "{stderr}"
    );
    assert_eq!(nccl_lines(&out).len(), 2 * 3);
}

/// (task, time, value of `ty`) of every event of type `ty` in the `.prv`, tasks from 1.
fn events_of(prv: &Path, ty: u32) -> Vec<(u32, u32, i64, i64)> {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("2:")) {
        let f: Vec<&str> = line.split(':').collect();
        for pair in f[6..].chunks(2) {
            if pair[0].parse::<u32>().unwrap() == ty {
                out.push((
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                    f[5].parse().unwrap(),
                    pair[1].parse().unwrap(),
                ));
            }
        }
    }
    out
}

/// The `.pcf` label of value `value` of type `ty`.
fn label_of(prv: &Path, ty: u32, value: i64) -> String {
    let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
    let mut in_type = false;
    for line in pcf.lines() {
        if line.starts_with("EVENT_TYPE") {
            in_type = false;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() > 1 && words[1] == ty.to_string() {
            in_type = true;
        }
        if in_type && words.first() == Some(&value.to_string().as_str()) {
            return words[1..].join(" ");
        }
    }
    panic!("no label for {ty} = {value}");
}

/// Four data-parallel ranks, rank 2 late at every all-reduce: every instance's
/// last rank is rank 2; each other rank's kernel carries "rank 2" and its wait
/// (from its start to rank 2's) as SQL on the exports gives it; the view's wait
/// time sums to the same total.
#[test]
fn the_late_rank_of_every_collective_and_the_others_waits() {
    let dir = tempfile::tempdir().unwrap();
    let late = SynthLateRank {
        rank: 2,
        late_ns: 2_000_000,
    };
    let specs: Vec<SynthSpec> = (0..4)
        .map(|rank| {
            let parallel = SynthParallel {
                late_rank: Some(late),
                ..SynthParallel::default()
            };
            rank_spec(rank, 4, 3, parallel)
        })
        .collect();
    let inputs = write_job(dir.path(), "dp", &specs);
    let out = dir.path().join("dp.prv");
    converted(&inputs, &out);

    // SQL: the n-th all-reduce of every rank is instance n.
    let kernels: Vec<Vec<(i64, i64)>> = inputs
        .iter()
        .enumerate()
        .map(|(rank, path)| {
            nccl_kernels_by_sql(path, rank as u32)
                .into_iter()
                .filter(|k| k.2 == "ncclAllReduce")
                .map(|k| (k.0, k.1))
                .collect()
        })
        .collect();
    let instances = kernels[0].len();
    assert_eq!(instances, 3 * 2, "3 steps of 2 buckets");
    let mut expected: Vec<(u32, i64, i64)> = Vec::new();
    for n in 0..instances {
        let starts: Vec<i64> = kernels.iter().map(|k| k[n].0).collect();
        let last = (0..4).max_by_key(|&r| (starts[r], r)).unwrap();
        assert_eq!(last, late.rank as usize, "instance {n}: {starts:?}");
        for (rank, k) in kernels.iter().enumerate() {
            let until = starts[last].min(k[n].1);
            if rank != last && until > k[n].0 {
                expected.push((rank as u32 + 1, k[n].0, until - k[n].0));
            }
        }
    }
    expected.sort();
    let waits = events_of(&out, WAIT_TIME);
    let mut found: Vec<(u32, i64, i64)> = waits
        .iter()
        .filter(|e| e.3 != 0)
        .map(|e| (e.0, e.2, e.3))
        .collect();
    found.sort();
    assert_eq!(found, expected);
    let whom = events_of(&out, WAITED_FOR_RANK);
    let named: Vec<_> = whom.iter().filter(|e| e.3 != 0).collect();
    assert_eq!(named.len(), expected.len());
    for e in named {
        assert_eq!(label_of(&out, WAITED_FOR_RANK, e.3), "rank 2");
    }

    // The report names rank 2 with the whole wait, for the all-reduce and in every
    // iteration (train_step), the iterations' waits adding up to the total.
    let total: i64 = expected.iter().map(|e| e.2).sum();
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
    let late = &json["late_arrivals"];
    assert_eq!(late["total_wait_ns"], total);
    assert_eq!(late["waits"], expected.len());
    assert_eq!(late["ranks"].as_array().unwrap().len(), 1, "{late}");
    assert_eq!(late["ranks"][0]["rank"], "rank 2");
    assert_eq!(late["ranks"][0]["wait_ns"], total);
    assert_eq!(late["per_collective"][0]["collective"], "AllReduce");
    assert_eq!(late["per_collective"][0]["wait_ns"], total);
    let iterations = late["per_iteration"].as_array().unwrap();
    assert_eq!(iterations.len(), 3, "{late}");
    let mut summed = 0;
    for it in iterations {
        assert_eq!(it["rank"], "rank 2");
        assert_eq!(it["wait_ns"], it["total_wait_ns"]);
        summed += it["wait_ns"].as_i64().unwrap();
    }
    assert_eq!(summed, total);
    let Some(paramedir) = paramedir::paramedir() else {
        return;
    };
    let view = out
        .with_extension("cfgs")
        .join("views/nccl_collective_wait.cfg");
    let run = paramedir::run(&paramedir, &out, std::slice::from_ref(&view), &[]);
    assert!(
        run.unexpected_lines().is_empty(),
        "{:?}",
        run.unexpected_lines()
    );
    let Some(Ok(ViewResult::Timeline(intervals))) = run.result(0) else {
        panic!("no timeline: {}", run.stdout);
    };
    // Each waiting stretch shows its wait as its value.
    let shown: f64 = intervals.iter().filter(|i| i.3 != 0.0).map(|i| i.3).sum();
    assert_eq!(shown, total as f64);
}
