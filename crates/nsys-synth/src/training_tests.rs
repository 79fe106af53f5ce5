//! Training loops: the rows agree with the counts and the size estimate, keep the invariants of
//! every export, nest their NVTX ranges, and wrap each NCCL launch in a range with its payload.

use rusqlite::Connection;
use tempfile::TempDir;

use crate::tests::{
    count, crossing_api_calls, misplaced_gpu_work, orphan_gpu_rows, overlapping_gpu_work,
    GPU_TABLES,
};
use crate::{write_export, SchemaVersion, SynthCounts, SynthSpec, SynthTraining};

fn training_spec(schema: SchemaVersion, training: SynthTraining) -> SynthSpec {
    let mut spec = SynthSpec::small(schema);
    let process = &mut spec.processes[0];
    process.streams_per_device = 4;
    (process.kernels, process.memcpys, process.memsets) = (0, 0, 0);
    (process.syncs, process.extra_api_calls) = (0, 0);
    spec.training = Some(training);
    spec
}

fn small_training() -> SynthTraining {
    SynthTraining {
        layers: 4,
        buckets: 2,
        kernel_names: 300,
        nvtx_depth: 6,
        cpu_ops_per_op: 1,
        steps_per_epoch: 8,
        ..SynthTraining::new(20)
    }
}

fn write(spec: &SynthSpec) -> (TempDir, Connection, SynthCounts) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("train.sqlite");
    let counts = write_export(spec, &path).expect("export is written");
    let conn = Connection::open(&path).unwrap();
    (dir, conn, counts)
}

#[test]
fn rows_match_the_counts_and_the_estimate() {
    for training in [small_training(), SynthTraining::new(6)] {
        let (_dir, conn, counts) = write(&training_spec(SchemaVersion::V3_24, training.clone()));
        let nvtx = count(&conn, "SELECT count(*) FROM NVTX_EVENTS") as u64;
        assert_eq!(nvtx, counts.nvtx_rows);
        let kernels = count(&conn, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") as u64;
        assert_eq!(kernels, counts.kernels);
        let layers = u64::from(training.layers);
        let buckets = u64::from(training.buckets);
        let per_step = layers * 34 + 2 + 2 * buckets;
        assert_eq!(
            kernels,
            training.steps * per_step,
            "kernels of {training:?}"
        );
        let estimate = training.steps * training.rows_per_step();
        let error = counts.total().abs_diff(estimate) as f64 / estimate as f64;
        assert!(error < 0.03, "{} rows, estimate {estimate}", counts.total());
    }
}

#[test]
fn training_keeps_the_invariants_of_every_export() {
    for schema in [SchemaVersion::V3_16, SchemaVersion::V3_24] {
        let (_dir, conn, _) = write(&training_spec(schema, small_training()));
        assert_eq!(overlapping_gpu_work(&conn), 0, "{schema}");
        assert_eq!(misplaced_gpu_work(&conn), 0, "{schema}");
        assert_eq!(crossing_api_calls(&conn), 0, "{schema}");
        for table in GPU_TABLES {
            assert_eq!(orphan_gpu_rows(&conn, table), 0, "{schema} {table}");
        }
    }
}

#[test]
fn nvtx_ranges_nest_as_deep_as_asked_on_both_threads() {
    let training = small_training();
    let (_dir, conn, _) = write(&training_spec(SchemaVersion::V3_24, training.clone()));
    let crossing = count(
        &conn,
        "SELECT count(*) FROM NVTX_EVENTS a JOIN NVTX_EVENTS b
         ON a.globalTid = b.globalTid AND a.eventType = 59 AND b.eventType = 59
         AND a.start < b.start AND b.start < a.end AND a.end < b.end",
    );
    assert_eq!(crossing, 0, "push/pop ranges of a thread only nest");
    // Depth of the deepest range: how many ranges of its thread enclose it, plus itself.
    let depth = count(
        &conn,
        "SELECT max(d) FROM (SELECT (SELECT count(*) FROM NVTX_EVENTS o
             WHERE o.globalTid = i.globalTid AND o.eventType = 59
             AND o.start <= i.start AND i.end <= o.end) AS d
         FROM NVTX_EVENTS i WHERE i.eventType = 59)",
    );
    assert_eq!(depth, i64::from(training.nvtx_depth));
    let threads = count(
        &conn,
        "SELECT count(DISTINCT globalTid) FROM NVTX_EVENTS WHERE eventType = 59",
    );
    assert_eq!(threads, 2, "main and autograd threads");
    let outside_steps = count(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE NOT EXISTS (
             SELECT 1 FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
             WHERE s.value IN ('train_step', 'backward') AND n.start < r.start AND r.end < n.end
             AND (n.globalTid = r.globalTid OR s.value = 'backward'))",
    );
    assert_eq!(outside_steps, 0, "every call is made inside a step");
    let epochs = count(
        &conn,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 60",
    );
    assert_eq!(
        epochs as u64,
        training.steps.div_ceil(training.steps_per_epoch)
    );
}

#[test]
fn each_nccl_range_carries_its_payload_around_one_nccl_launch() {
    let training = small_training();
    let (_dir, conn, counts) = write(&training_spec(SchemaVersion::V3_24, training.clone()));
    assert_eq!(
        counts.nccl_ranges,
        training.steps * u64::from(training.buckets)
    );
    let domain = count(
        &conn,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'NCCL' AND domainId = 1",
    );
    assert_eq!(domain, 1);
    let nccl_ranges = count(
        &conn,
        "SELECT count(*) FROM NVTX_EVENTS WHERE domainId = 1 AND eventType = 59
         AND json_extract(jsonText, '$.\"Message size [bytes]\"') > 0
         AND json_extract(jsonText, '$.\"Reduction operation\"') = 'Sum'",
    );
    assert_eq!(nccl_ranges as u64, counts.nccl_ranges);
    let launched_inside = count(
        &conn,
        "SELECT count(*) FROM NVTX_EVENTS n WHERE n.domainId = 1 AND n.eventType = 59 AND 1 = (
             SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
             JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
             JOIN StringIds s ON s.id = k.shortName
             WHERE r.globalTid = n.globalTid AND n.start < r.start AND r.end < n.end
             AND s.value LIKE 'ncclDevKernel%')",
    );
    assert_eq!(launched_inside as u64, counts.nccl_ranges);
}

#[test]
fn kernel_names_come_from_a_pool_of_distinct_long_names() {
    let training = small_training();
    let (_dir, conn, _) = write(&training_spec(SchemaVersion::V3_24, training.clone()));
    let distinct = count(
        &conn,
        "SELECT count(DISTINCT k.demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL k
         JOIN StringIds s ON s.id = k.shortName WHERE s.value NOT LIKE 'nccl%'",
    );
    assert_eq!(distinct, i64::from(training.kernel_names));
    let shortest = count(
        &conn,
        "SELECT min(length(s.value)) FROM CUPTI_ACTIVITY_KIND_KERNEL k
         JOIN StringIds s ON s.id = k.demangledName",
    );
    assert!(shortest >= 60, "shortest demangled name: {shortest}");
}

#[test]
fn invalid_training_specs_are_rejected() {
    let dir = TempDir::new().unwrap();
    let old = training_spec(SchemaVersion::V3_7, small_training());
    let shallow = training_spec(
        SchemaVersion::V3_24,
        SynthTraining {
            nvtx_depth: 3,
            ..small_training()
        },
    );
    for (name, spec) in [("old", old), ("shallow", shallow)] {
        let path = dir.path().join(format!("{name}.sqlite"));
        assert!(write_export(&spec, &path).is_err(), "{name}");
        assert!(!path.exists(), "{name}");
    }
}

/// Stage `rank` of a pipeline of `stages`, its session starting `rank` µs after the job's origin.
fn pipeline_stage(rank: u32, stages: u32, pipeline: &crate::SynthPipeline) -> SynthSpec {
    let mut spec = training_spec(
        SchemaVersion::V3_24,
        SynthTraining {
            layers: 1,
            buckets: 1,
            kernel_names: 6,
            parallel: crate::SynthParallel {
                rank,
                world: stages,
                session_offset_ns: i64::from(rank) * 1_000,
                pipeline: Some(pipeline.clone()),
                ..Default::default()
            },
            ..SynthTraining::new(2)
        },
    );
    spec.utc_epoch_ns += i64::from(rank) * 1_000;
    spec
}

/// Each stage's compute and SendRecv kernels are at the schedule's times on the job's clock,
/// each transfer inside an ncclSend/ncclRecv range whose payload names the peer stage; the
/// API calls do not cross.
#[test]
fn pipeline_stages_run_the_schedule_on_the_common_clock() {
    let pipeline = crate::SynthPipeline {
        slow_stage: Some(1),
        ..crate::SynthPipeline::new(3)
    };
    let schedule = pipeline.schedule(3);
    for rank in 0..3 {
        let spec = pipeline_stage(rank, 3, &pipeline);
        let (_dir, conn, _) = write(&spec);
        assert_eq!(crossing_api_calls(&conn), 0);
        let mut rows = conn
            .prepare(
                "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds s ON s.id = k.shortName
                 WHERE s.value <> 'multi_tensor_apply_kernel' ORDER BY k.start",
            )
            .unwrap();
        let kernels: Vec<(i64, i64, String)> = rows
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let offset = i64::from(rank) * 1_000;
        let expected: Vec<(i64, i64, String)> = (0..2)
            .flat_map(|step| {
                let origin = schedule.step_start(step) - offset;
                schedule.of_stage(rank).map(move |op| {
                    let name = match op.work {
                        crate::PipelineWork::Forward | crate::PipelineWork::Backward => "Kernel2",
                        _ => "ncclDevKernel_SendRecv",
                    };
                    (origin + op.start, origin + op.end, name.to_owned())
                })
            })
            .collect();
        assert_eq!(kernels, expected, "stage {rank}");
        let peers = count(
            &conn,
            &format!(
                "SELECT count(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
                 WHERE s.value IN ('ncclSend', 'ncclRecv')
                   AND n.jsonText LIKE '%\"Peer rank\": {}}}'",
                if rank == 1 { 0 } else { 1 }
            ),
        );
        let transfers_to_that_peer = schedule
            .of_stage(rank)
            .filter(|op| op.peer == Some(if rank == 1 { 0 } else { 1 }))
            .count() as i64;
        assert_eq!(peers, 2 * transfers_to_that_peer, "stage {rank}");
    }
}

/// The late rank's all-reduce kernels start `late_ns` later than in the same loop without it
/// (its CPU is busy first); the other ranks' last `late_ns` longer.
#[test]
fn the_late_rank_is_late_and_the_others_wait() {
    let nccl = |conn: &Connection| -> Vec<(i64, i64)> {
        let mut rows = conn
            .prepare(
                "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds s ON s.id = k.shortName
                 WHERE s.value LIKE 'ncclDevKernel_AllReduce%' ORDER BY k.start LIMIT 1",
            )
            .unwrap();
        rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let late_ns = 3_000_000;
    for (rank, late) in [(0, false), (1, true)] {
        let with = |late_rank: Option<crate::SynthLateRank>| {
            let spec = training_spec(
                SchemaVersion::V3_24,
                SynthTraining {
                    parallel: crate::SynthParallel {
                        rank,
                        world: 2,
                        late_rank,
                        ..Default::default()
                    },
                    ..small_training()
                },
            );
            let (_dir, conn, _) = write(&spec);
            nccl(&conn)[0]
        };
        let on_time = with(None);
        let injected = with(Some(crate::SynthLateRank { rank: 1, late_ns }));
        if late {
            assert_eq!(injected.0 - on_time.0, late_ns);
            assert_eq!(injected.1 - injected.0, on_time.1 - on_time.0);
        } else {
            assert_eq!(injected.0, on_time.0);
            assert_eq!(injected.1 - injected.0, on_time.1 - on_time.0 + late_ns);
        }
    }
}
