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
