//! Generates `SynthSpec::small` for every version and checks the files against what real
//! exports of that version look like.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use tempfile::TempDir;

use crate::{write_export, SchemaVersion, SynthCounts, SynthSpec};

pub(crate) const GPU_TABLES: [&str; 3] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
];

fn generate(spec: &SynthSpec, dir: &TempDir, name: &str) -> (PathBuf, SynthCounts) {
    let path = dir.path().join(name);
    let counts = write_export(spec, &path).expect("export is written");
    (path, counts)
}

fn small_exports() -> (TempDir, Vec<(SchemaVersion, Connection, SynthCounts)>) {
    let dir = TempDir::new().unwrap();
    let exports = SchemaVersion::all()
        .into_iter()
        .map(|version| {
            let file = format!("small-{}.sqlite", version.schema_version());
            let (path, counts) = generate(&SynthSpec::small(version), &dir, &file);
            (version, Connection::open(path).unwrap(), counts)
        })
        .collect();
    (dir, exports)
}

pub(crate) fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |row| row.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub(crate) fn has_table(conn: &Connection, table: &str) -> bool {
    count(
        conn,
        &format!("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{table}'"),
    ) == 1
}

pub(crate) fn has_column(conn: &Connection, table: &str, column: &str) -> bool {
    count(
        conn,
        &format!("SELECT count(*) FROM pragma_table_info('{table}') WHERE name = '{column}'"),
    ) == 1
}

fn rows(conn: &Connection, table: &str) -> u64 {
    count(conn, &format!("SELECT count(*) FROM {table}")) as u64
}

#[test]
fn metadata_tables_follow_the_version() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        let modern = *version >= SchemaVersion::V3_7;
        assert_eq!(has_table(conn, "EXPORT_META_DATA"), !modern, "{version}");
        assert_eq!(has_table(conn, "META_DATA_EXPORT"), modern, "{version}");
        assert_eq!(has_table(conn, "META_DATA_CAPTURE"), modern, "{version}");
        let meta = if modern {
            "META_DATA_EXPORT"
        } else {
            "EXPORT_META_DATA"
        };
        let schema: String = conn
            .query_row(
                &format!("SELECT value FROM {meta} WHERE name = 'EXPORT_SCHEMA_VERSION'"),
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(schema, version.schema_version());
        if modern {
            let env = count(
                conn,
                "SELECT count(*) FROM META_DATA_CAPTURE
                 WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' AND value = 'SLURM_PROCID=\"0\"'",
            );
            assert_eq!(env, 1, "{version}");
        }
        let hostname = count(
            conn,
            "SELECT count(*) FROM TARGET_INFO_SYSTEM_ENV WHERE nameEnum = 619 AND value = 'node01'",
        );
        assert_eq!(hostname, 1, "{version}");
        assert_eq!(rows(conn, "TARGET_INFO_SESSION_START_TIME"), 1);
        assert_eq!(rows(conn, "ANALYSIS_DETAILS"), 1);
    }
}

#[test]
fn enum_tables_only_from_3_0() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        let enums = count(
            conn,
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'ENUM%'",
        );
        assert_eq!(enums == 0, *version == SchemaVersion::V2_9, "{version}");
        assert_eq!(
            has_table(conn, "ENUM_CUDA_KRENEL_LAUNCH_TYPE"),
            *version == SchemaVersion::V3_0,
            "{version}"
        );
        assert_eq!(
            has_table(conn, "ENUM_CUDA_KERNEL_LAUNCH_TYPE"),
            *version > SchemaVersion::V3_0,
            "{version}"
        );
        if *version > SchemaVersion::V2_9 {
            assert_eq!(rows(conn, "ENUM_CUDA_MEMCPY_OPER"), 14);
        }
    }
}

#[test]
fn columns_and_cuda_tables_follow_the_version() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        let v = *version;
        for table in GPU_TABLES
            .iter()
            .chain(&["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"])
        {
            assert_eq!(
                has_column(conn, table, "greenContextId"),
                v >= SchemaVersion::V3_7,
                "{v} {table}"
            );
        }
        assert_eq!(
            has_column(conn, "CUPTI_ACTIVITY_KIND_MEMCPY", "copyCount"),
            v == SchemaVersion::V3_24
        );
        assert_eq!(
            has_column(conn, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "eventSyncId"),
            v == SchemaVersion::V3_24
        );
        assert_eq!(
            has_table(conn, "TARGET_INFO_CUDA_NULL_STREAM"),
            v <= SchemaVersion::V3_0
        );
        assert_eq!(
            has_table(conn, "TARGET_INFO_CUDA_CONTEXT_INFO"),
            v >= SchemaVersion::V3_7
        );
        assert_eq!(
            has_table(conn, "TARGET_INFO_CUDA_DEVICE"),
            v == SchemaVersion::V3_24
        );
        assert_eq!(rows(conn, "TARGET_INFO_GPU"), 1);
        assert_eq!(rows(conn, "TARGET_INFO_CUDA_STREAM"), 8);
    }
}

#[test]
fn row_counts_match_the_returned_counts() {
    let (_dir, exports) = small_exports();
    for (version, conn, counts) in &exports {
        let table_rows = SynthCounts {
            kernels: rows(conn, "CUPTI_ACTIVITY_KIND_KERNEL"),
            memcpys: rows(conn, "CUPTI_ACTIVITY_KIND_MEMCPY"),
            memsets: rows(conn, "CUPTI_ACTIVITY_KIND_MEMSET"),
            syncs: rows(conn, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
            runtime_rows: rows(conn, "CUPTI_ACTIVITY_KIND_RUNTIME"),
            cuda_events: rows(conn, "CUPTI_ACTIVITY_KIND_CUDA_EVENT"),
            ..SynthCounts::default()
        };
        assert_eq!(&table_rows, counts, "{version}");
        let spec = SynthSpec::small(*version);
        let process = &spec.processes[0];
        assert_eq!(counts.kernels, process.kernels);
        assert_eq!(counts.memcpys, process.memcpys);
        assert_eq!(counts.memsets, process.memsets);
        assert_eq!(counts.syncs, process.syncs);
        assert_eq!(counts.cuda_events, process.syncs / 3);
    }
}

/// GPU rows whose launching call is missing, in another process, or starts after the work.
pub(crate) fn orphan_gpu_rows(conn: &Connection, table: &str) -> i64 {
    count(
        conn,
        &format!(
            "SELECT count(*) FROM {table} g WHERE g.correlationId != 0 AND NOT EXISTS (
                 SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                 WHERE r.correlationId = g.correlationId AND r.eventClass = 0
                   AND (r.globalTid & -16777216) = g.globalPid AND r.start < g.start)"
        ),
    )
}

#[test]
fn gpu_work_is_launched_by_an_earlier_runtime_call_of_its_process() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        for table in GPU_TABLES {
            assert_eq!(orphan_gpu_rows(conn, table), 0, "{version} {table}");
        }
        let duplicated = count(
            conn,
            "SELECT count(*) FROM (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME
             GROUP BY globalTid & -16777216, correlationId HAVING count(*) > 1)",
        );
        assert_eq!(duplicated, 0, "{version}: correlation ids repeat");
        let migrations = count(
            conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY
             WHERE copyKind >= 11 AND correlationId = 0 AND streamId = 0 AND contextId = 0",
        );
        assert_eq!(migrations, 6, "{version}: two of each migration kind");
        let kinds = count(
            conn,
            "SELECT count(DISTINCT copyKind) FROM CUPTI_ACTIVITY_KIND_MEMCPY",
        );
        assert_eq!(kinds, 14, "{version}");
    }
}

/// Kernels, copies and memsets of all streams, as (source, id, start, end, stream key...).
fn gpu_work() -> String {
    GPU_TABLES
        .map(|t| {
            format!(
                "SELECT '{t}' AS source, rowid AS id, start, end, globalPid, deviceId, contextId,
                 streamId FROM {t}"
            )
        })
        .join(" UNION ALL ")
}

pub(crate) fn overlapping_gpu_work(conn: &Connection) -> i64 {
    count(
        conn,
        &format!(
            "WITH work AS ({}) SELECT count(*) FROM work a JOIN work b
             ON a.globalPid = b.globalPid AND a.deviceId = b.deviceId
             AND a.contextId = b.contextId AND a.streamId = b.streamId
             AND (a.source, a.id) != (b.source, b.id) AND a.start < b.end AND b.start < a.end",
            gpu_work()
        ),
    )
}

pub(crate) fn misplaced_gpu_work(conn: &Connection) -> i64 {
    count(
        conn,
        &format!(
            "WITH work AS ({}) SELECT count(*) FROM work WHERE start < 0 OR end <= start",
            gpu_work()
        ),
    )
}

/// Pairs of calls of one thread that overlap other than by a driver call nested in a runtime one.
pub(crate) fn crossing_api_calls(conn: &Connection) -> i64 {
    count(
        conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME a JOIN CUPTI_ACTIVITY_KIND_RUNTIME b
         ON a.globalTid = b.globalTid AND a.correlationId < b.correlationId
         AND a.start < b.end AND b.start < a.end
         AND NOT (a.eventClass = 0 AND b.eventClass = 1 AND a.start < b.start AND b.end < a.end)",
    )
}

#[test]
fn work_on_one_stream_never_overlaps() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        assert_eq!(overlapping_gpu_work(conn), 0, "{version}");
        assert_eq!(misplaced_gpu_work(conn), 0, "{version}");
    }
}

#[test]
fn api_calls_of_a_thread_only_overlap_by_nesting() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        assert_eq!(crossing_api_calls(conn), 0, "{version}");
        let nested = count(
            conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME a JOIN CUPTI_ACTIVITY_KIND_RUNTIME b
             ON a.globalTid = b.globalTid AND a.start < b.start AND b.end < a.end",
        );
        assert!(
            nested > 0,
            "{version}: some launches have a nested driver call"
        );
    }
}

#[test]
fn several_processes_and_devices_keep_the_invariants() {
    let dir = TempDir::new().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_7);
    let mut second = spec.processes[0].clone();
    second.pid += 1000;
    second.cpu_threads = 3;
    second.devices = vec![1, 2];
    second.streams_per_device = 3;
    spec.processes.push(second);
    let (path, counts) = generate(&spec, &dir, "multi.sqlite");
    let conn = Connection::open(path).unwrap();
    assert_eq!(counts.kernels, 96);
    for table in GPU_TABLES {
        assert_eq!(orphan_gpu_rows(&conn, table), 0, "{table}");
    }
    assert_eq!(overlapping_gpu_work(&conn), 0);
    assert_eq!(misplaced_gpu_work(&conn), 0);
    assert_eq!(crossing_api_calls(&conn), 0);
    assert_eq!(rows(&conn, "TARGET_INFO_GPU"), 3);
    assert_eq!(rows(&conn, "TARGET_INFO_CUDA_CONTEXT_INFO"), 3);
    let cross_device_peer_copies = count(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY
         WHERE copyKind = 10 AND srcDeviceId != dstDeviceId AND srcContextId != dstContextId",
    );
    assert_eq!(
        cross_device_peer_copies, 2,
        "the second process's two peer copies"
    );
}

#[test]
fn sync_rows_use_each_version_encoding_and_sentinels() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        let sync_type = |api: &str| {
            count(
                conn,
                &format!(
                    "SELECT DISTINCT s.syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s
                     JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = s.correlationId
                     JOIN StringIds n ON n.id = r.nameId WHERE n.value = '{api}'"
                ),
            )
        };
        let expected = match version {
            SchemaVersion::V2_9 | SchemaVersion::V3_0 | SchemaVersion::V3_7 => [2, 3, 1],
            SchemaVersion::V3_16 => [1, 2, 0],
            SchemaVersion::V3_24 => [1, 3, 4],
        };
        let actual = [
            sync_type("cudaEventSynchronize_v3020"),
            sync_type("cudaStreamSynchronize_v3020"),
            sync_type("cudaDeviceSynchronize_v3020"),
        ];
        assert_eq!(actual, expected, "{version}");
        let device_syncs_without_stream = count(
            conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
             WHERE streamId = 4294967295 AND eventId = 4294967295",
        );
        assert_eq!(device_syncs_without_stream, 3, "{version}");
    }
}

#[test]
fn names_resolve_through_string_ids() {
    let (_dir, exports) = small_exports();
    for (version, conn, _) in &exports {
        let unresolved = count(
            conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
             WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE id = k.shortName)
                OR NOT EXISTS (SELECT 1 FROM StringIds WHERE id = k.demangledName)
                OR NOT EXISTS (SELECT 1 FROM StringIds WHERE id = k.mangledName)",
        ) + count(
            conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
             WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE id = r.nameId)",
        ) + count(
            conn,
            "SELECT count(*) FROM ThreadNames t
             WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE id = t.nameId)",
        );
        assert_eq!(unresolved, 0, "{version}");
        let shared_short_name = count(
            conn,
            "SELECT count(*) FROM (SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL
             GROUP BY shortName HAVING count(DISTINCT demangledName) > 1)",
        );
        assert_eq!(shared_short_name, 1, "{version}");
    }
}

fn activity_dump(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    ["CUPTI_ACTIVITY_KIND_RUNTIME"]
        .iter()
        .chain(&GPU_TABLES)
        .chain(&["StringIds"])
        .flat_map(|table| {
            let mut statement = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
            let width = statement.column_count();
            statement
                .query_map([], |row| {
                    (0..width)
                        .map(|i| {
                            row.get::<_, rusqlite::types::Value>(i)
                                .map(|v| format!("{v:?}"))
                        })
                        .collect::<rusqlite::Result<Vec<_>>>()
                        .map(|values| values.join("|"))
                })
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap()
        })
        .collect()
}

#[test]
fn output_is_deterministic_and_never_overwrites() {
    let dir = TempDir::new().unwrap();
    let spec = SynthSpec::small(SchemaVersion::V3_24);
    let (first, _) = generate(&spec, &dir, "a.sqlite");
    let (second, _) = generate(&spec, &dir, "b.sqlite");
    assert_eq!(activity_dump(&first), activity_dump(&second));
    assert!(write_export(&spec, &first).is_err());
}

#[test]
fn invalid_specs_are_rejected() {
    let dir = TempDir::new().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.processes[0].devices.clear();
    assert!(write_export(&spec, &dir.path().join("no-device.sqlite")).is_err());
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.processes.push(spec.processes[0].clone());
    assert!(write_export(&spec, &dir.path().join("same-pid.sqlite")).is_err());
}
