//! Pipeline bubbles (issue 30 item 5) on generated pipeline-parallel jobs: the
//! stages `report` finds from the NCCL point-to-point transfers, and the bubble of
//! every stage in every iteration, equal to the nanosecond to what the generator's
//! GPipe schedule injected and to what SQL on the exports gives (per rank and step:
//! the kernels launched in the step's range, the time between the first and last
//! compute kernel with none running); `--pipeline-stages`; the page; and traces
//! without a pipeline, whose reports have no such figure.

use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_synth::{PipelineWork, SynthParallel, SynthPipeline};
use serde_json::Value;

use crate::bubble::{converted, rank_spec, write_job};

const STEPS: u64 = 3;

/// The rank files of a `stages`-stage GPipe job of `micro_batches` micro-batches.
fn job(
    dir: &Path,
    stages: u32,
    micro_batches: u32,
    slow: Option<u32>,
) -> (Vec<PathBuf>, SynthPipeline) {
    let pipeline = SynthPipeline {
        slow_stage: slow,
        ..SynthPipeline::new(micro_batches)
    };
    let specs: Vec<_> = (0..stages)
        .map(|rank| {
            let parallel = SynthParallel {
                pipeline: Some(pipeline.clone()),
                ..SynthParallel::default()
            };
            rank_spec(rank, stages, STEPS, parallel)
        })
        .collect();
    (write_job(dir, "pp", &specs), pipeline)
}

fn report_json(trace: &Path, extra: &[&str]) -> Value {
    let out = binary()
        .arg("report")
        .args(extra)
        .args(["--json", "-"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A kernel of one rank's export, on its own clock: (start, end, launch call's
/// start, whether it is an NCCL kernel).
type Kernel = (i64, i64, i64, bool);

fn kernels_by_sql(path: &Path) -> Vec<Kernel> {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT k.start, k.end, r.start, s.value LIKE 'nccl%'
             FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             JOIN StringIds s ON s.id = k.shortName
             ORDER BY k.start",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The `train_step` ranges of one rank's export: (start, end).
fn steps_by_sql(path: &Path) -> Vec<(i64, i64)> {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT n.start, n.end FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
             WHERE s.value = 'train_step' ORDER BY n.start",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Sorted, merged intervals.
fn union(mut list: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    list.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (b, e) in list {
        match out.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => out.push((b, e)),
        }
    }
    out
}

fn within(merged: &[(i64, i64)], from: i64, to: i64) -> i64 {
    merged
        .iter()
        .map(|&(b, e)| (e.min(to) - b.max(from)).max(0))
        .sum()
}

/// A stage's iteration: (span, bubble, bubble in NCCL kernels).
type Bubble = (i64, i64, i64);

/// By SQL on one rank's export, per step: the kernels launched inside the step's
/// range; from the first compute kernel's start to the last one's end, the time
/// with no compute kernel, and of it the time with an NCCL kernel.
fn bubbles_by_sql(path: &Path) -> Vec<Bubble> {
    let kernels = kernels_by_sql(path);
    steps_by_sql(path)
        .into_iter()
        .map(|(from, to)| {
            let launched: Vec<&Kernel> = kernels
                .iter()
                .filter(|k| from <= k.2 && k.2 <= to)
                .collect();
            let compute: Vec<(i64, i64)> = launched
                .iter()
                .filter(|k| !k.3)
                .map(|k| (k.0, k.1))
                .collect();
            let first = compute.iter().map(|c| c.0).min().unwrap();
            let last = compute.iter().map(|c| c.1).max().unwrap();
            let busy = union(compute);
            let all_kernels = union(kernels.iter().map(|k| (k.0, k.1)).collect());
            let span = last - first;
            let bubble = span - within(&busy, first, last);
            // NCCL-only time = any kernel running less compute running.
            let in_nccl = within(&all_kernels, first, last) - within(&busy, first, last);
            (span, bubble, in_nccl)
        })
        .collect()
}

/// What the generator injected for stage `stage`, per step: its schedule's
/// compute (forward, backward) and transfers, then the one kernel the loop adds
/// after the schedule (the optimizer), read from the export as the step's last
/// compute kernel.
fn bubbles_of_schedule(
    pipeline: &SynthPipeline,
    stages: u32,
    stage: u32,
    path: &Path,
) -> Vec<Bubble> {
    let schedule = pipeline.schedule(stages);
    let ops: Vec<_> = schedule.of_stage(stage).collect();
    let is_compute = |w: PipelineWork| matches!(w, PipelineWork::Forward | PipelineWork::Backward);
    let first = ops
        .iter()
        .filter(|o| is_compute(o.work))
        .map(|o| o.start)
        .min()
        .unwrap();
    let last = ops.iter().map(|o| o.end).max().unwrap();
    let compute: i64 = ops
        .iter()
        .filter(|o| is_compute(o.work))
        .map(|o| o.end - o.start)
        .sum();
    let transfers: i64 = ops
        .iter()
        .filter(|o| !is_compute(o.work))
        .map(|o| (o.end.min(last) - o.start.max(first)).max(0))
        .sum();
    let kernels = kernels_by_sql(path);
    let session_offset = i64::from(stage) * 1_000;
    (0..STEPS)
        .map(|step| {
            let origin = schedule.step_start(step) - session_offset;
            let optimizer = kernels
                .iter()
                .filter(|k| !k.3 && k.0 >= origin + last)
                .min_by_key(|k| k.0)
                .unwrap();
            let gap = optimizer.0 - (origin + last);
            let span = optimizer.1 - (origin + first);
            (span, (last - first) - compute + gap, transfers)
        })
        .collect()
}

fn per_iteration(stage: &Value) -> Vec<Bubble> {
    stage["per_iteration"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["span_ns"].as_i64().unwrap(),
                i["bubble_ns"].as_i64().unwrap(),
                i["in_nccl_ns"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Every stage's bubble in every iteration equals the schedule's and SQL's, for
/// even stages and with a slow one; the stages are the ranks in chain order; the
/// micro-batches are counted and GPipe's share given beside the measured one.
#[test]
fn bubbles_per_stage_and_iteration_match_the_schedule_and_sql() {
    for (stages, micro_batches, slow) in [(4, 4, None), (3, 6, Some(1))] {
        let dir = tempfile::tempdir().unwrap();
        let (inputs, pipeline) = job(dir.path(), stages, micro_batches, slow);
        let out = dir.path().join("pp.prv");
        converted(&inputs, &out);
        let json = report_json(&out, &[]);
        let p = &json["pipeline"];
        assert_eq!(p["found_by"], "NCCL point-to-point transfers", "{p}");
        assert_eq!(p["iteration_range"], "train_step");
        let found = p["stages"].as_array().unwrap();
        assert_eq!(found.len(), stages as usize);
        let mut shares = Vec::new();
        for (s, stage) in found.iter().enumerate() {
            // GPU s is rank s's: the chain runs from rank 0, which sends first.
            assert_eq!(stage["gpus"], serde_json::json!([s]), "{p}");
            let measured = per_iteration(stage);
            let injected = bubbles_of_schedule(&pipeline, stages, s as u32, &inputs[s]);
            assert_eq!(measured, injected, "stage {s} of {stages}, slow {slow:?}");
            assert_eq!(measured, bubbles_by_sql(&inputs[s]), "stage {s}: SQL");
            let bubble: i64 = measured.iter().map(|m| m.1).sum();
            let span: i64 = measured.iter().map(|m| m.0).sum();
            assert_eq!(stage["bubble_ns"], bubble);
            assert_eq!(stage["span_ns"], span);
            assert_eq!(stage["iterations"], STEPS);
            shares.push(bubble as f64 / span as f64);
        }
        assert_eq!(p["micro_batches"], micro_batches);
        let gpipe = f64::from(stages - 1) / f64::from(micro_batches + stages - 1);
        assert!((p["gpipe_share"].as_f64().unwrap() - gpipe).abs() < 1e-12);
        // Transfers cost time GPipe's formula leaves out: the pipeline's bubble is larger.
        assert!(p["pipeline_share"].as_f64().unwrap() > gpipe, "{p}");
        if let Some(slow) = slow {
            // The slow stage computes most of its span: the least bubble of all.
            let least = (0..shares.len())
                .min_by(|a, b| shares[*a].total_cmp(&shares[*b]))
                .unwrap();
            assert_eq!(least, slow as usize, "{shares:?}");
        }
        let text = binary().arg("report").arg(&out).output().unwrap();
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains(&format!(
                "Pipeline bubbles: {stages} stages (from NCCL point-to-point transfers), per iteration of 'train_step'"
            )),
            "{text}"
        );
        assert!(text.contains("GPipe's (p-1)/(m+p-1)"), "{text}");
    }
}

/// `--pipeline-stages`: in agreement with the chain, the same figures; cutting the
/// ranks otherwise, a note and the given stages (their GPUs' times summed); a
/// count that does not divide the GPUs, a usage error; on a data-parallel job
/// without transfers, stages all the same, without micro-batches.
#[test]
fn stages_can_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, _) = job(dir.path(), 4, 3, None);
    let out = dir.path().join("pp.prv");
    converted(&inputs, &out);
    let found = report_json(&out, &[]);
    let given = report_json(&out, &["--pipeline-stages", "4"]);
    assert_eq!(given["pipeline"]["found_by"], "--pipeline-stages 4");
    assert_eq!(given["pipeline"]["stages"], found["pipeline"]["stages"]);
    assert_eq!(given["notes"], found["notes"]);

    let two = report_json(&out, &["--pipeline-stages", "2"]);
    let notes = two["notes"].to_string();
    assert!(notes.contains("--pipeline-stages 2 (the GPUs in rank order cut into 2 blocks) disagrees with the chain"), "{notes}");
    let stages = two["pipeline"]["stages"].as_array().unwrap();
    assert_eq!(stages[0]["gpus"], serde_json::json!([0, 1]));
    let four = found["pipeline"]["stages"].as_array().unwrap();
    let sum = |a: usize, b: usize| {
        four[a]["bubble_ns"].as_i64().unwrap() + four[b]["bubble_ns"].as_i64().unwrap()
    };
    assert_eq!(stages[0]["bubble_ns"], sum(0, 1));
    assert_eq!(stages[1]["bubble_ns"], sum(2, 3));
    assert!(two["pipeline"]["micro_batches"].is_null());

    let bad = binary()
        .args(["report", "--pipeline-stages", "3"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("--pipeline-stages 3: the trace's 4 GPUs do not split into 3 stages"),
        "{stderr}"
    );

    // A data-parallel job: no transfers, so no pipeline unless given.
    let specs: Vec<_> = (0..2)
        .map(|rank| rank_spec(rank, 2, 2, SynthParallel::default()))
        .collect();
    let dp = write_job(dir.path(), "dp", &specs);
    let dp_out = dir.path().join("dp.prv");
    converted(&dp, &dp_out);
    let plain = report_json(&dp_out, &[]);
    assert!(plain.get("pipeline").is_none(), "{plain}");
    let text = binary().arg("report").arg(&dp_out).output().unwrap();
    assert!(!String::from_utf8_lossy(&text.stdout).contains("Pipeline"));
    let given = report_json(&dp_out, &["--pipeline-stages", "2"]);
    let p = &given["pipeline"];
    assert_eq!(p["stages"].as_array().unwrap().len(), 2, "{p}");
    assert!(p["micro_batches"].is_null());
    assert_eq!(p["stages"][1]["iterations"], 2);
}

/// The page has the section, its figures are the JSON's, and it renders.
#[test]
fn the_page_shows_the_bubbles() {
    let dir = tempfile::tempdir().unwrap();
    let (inputs, _) = job(dir.path(), 4, 4, Some(2));
    let out = dir.path().join("pp.prv");
    converted(&inputs, &out);
    let rep = dir.path().join("rep");
    let run = binary()
        .args(["report", "--out"])
        .arg(&rep)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(page.contains("<h2 id=\"pipeline\">Pipeline bubbles</h2>"));
    assert!(page.contains("data-k=\"/pipeline/stages/3/bubble_ns\""));
    assert!(page.contains("class=\"chart pipeline\""));
    let csv = std::fs::read_to_string(rep.join("pipeline.csv")).unwrap();
    assert!(
        csv.starts_with("stage,iteration,gpus,span_ns,bubble_ns,in_nccl_ns,idle_ns,share\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 4 * STEPS as usize, "{csv}");
    crate::report_page::check_page_figures(&rep);
    crate::report_page::check_rendering(&rep, 3200);
}
