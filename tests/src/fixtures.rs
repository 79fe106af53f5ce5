//! Small exports, or additions to synthetic ones, for what neither the samples
//! nor the synthetic generator record.

use std::path::Path;

/// Adds an NCCL domain with ranges (JSON payloads) around the calls that launched
/// the NCCL kernels of a synthetic export.
pub fn add_nccl_ranges(path: &Path) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
         category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
         domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
         int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);",
    )
    .unwrap();
    let calls: Vec<(i64, i64, i64)> = conn
        .prepare(
            "SELECT r.start, r.end, r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k
             ON k.correlationId = r.correlationId JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%'",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let tid = calls[0].2;
    conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (0, 75, 'NCCL', ?1, 7)", [tid]).unwrap();
    for (i, (start, end, gtid)) in calls.iter().enumerate() {
        let json = format!(
            r#"{{"Message size [bytes]": {}, "Reduction operation": "sum", "Root": 0, "Data type": "float32", "Communicator": "0x1234"}}"#,
            4096 * (i + 1)
        );
        conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, jsonText) VALUES (?1, ?2, 59, 'ncclAllReduce', ?3, 7, ?4)",
            rusqlite::params![start - 100, end + 100, gtid, json],
        )
        .unwrap();
    }
    calls.len() as u64
}

// OpenACC: no real export has rows, so a small one is built here.

const OPENACC_COMMON: &str = "start INTEGER NOT NULL, end INTEGER NOT NULL, nameId INTEGER NOT NULL, \
    globalTid INTEGER, eventKind INTEGER NOT NULL, DeviceType INTEGER NOT NULL, lineNo INTEGER NOT NULL, \
    cuDeviceId INTEGER NOT NULL, cuContextId INTEGER NOT NULL, cuStreamId INTEGER NOT NULL, \
    srcFile INTEGER, funcName INTEGER";

const PID: i64 = 4242;
const TID: i64 = 4243;

fn global_tid() -> i64 {
    (1 << 48) | (PID << 24) | TID
}

/// An export with the three OpenACC tables (the DATA and LAUNCH ones with the
/// 3.28 `correlationId`, the OTHER one without) and the tables that make it an export.
pub fn openacc_export(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);
         CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_OTHER ({OPENACC_COMMON});
         CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_DATA ({OPENACC_COMMON}, correlationId INTEGER,
             bytes INTEGER, varName INTEGER);
         CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH ({OPENACC_COMMON}, correlationId INTEGER,
             numGangs INTEGER, numWorkers INTEGER, vectorLength INTEGER, kernelName INTEGER);
         INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000);
         INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.24.0');
         INSERT INTO StringIds VALUES (1, 'acc_compute_construct'), (2, 'saxpy.c'), (3, 'main'),
             (4, 'acc_enter_data'), (5, 'acc_wait'), (6, 'acc_enqueue_upload'), (7, 'x'),
             (8, 'acc_enqueue_download'), (9, 'acc_enqueue_launch'), (10, 'main_12_gpu'),
             (11, 'acc_create');"
    ))
    .unwrap();
    let g = global_tid();
    // (start, end, name, kind, line): kinds 9 compute construct, 11 enter data, 7 wait.
    for (s, e, name, kind, line) in [
        (1000, 9000, 1, 9, 12),
        (1100, 2000, 4, 11, 10),
        (7000, 8000, 5, 7, 14),
    ] {
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_OTHER VALUES (?1, ?2, ?3, ?4, ?5, 4, ?6, 0, 1, 7, 2, 3)",
            (s, e, name, g, kind, line),
        )
        .unwrap();
    }
    // Kinds 13 create, 5 enqueue upload, 6 enqueue download.
    for (s, e, name, kind, bytes) in [
        (1150, 1190, 11, 13, 4096),
        (1200, 1500, 6, 5, 4096),
        (8100, 8500, 8, 6, 2048),
    ] {
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_DATA VALUES (?1, ?2, ?3, ?4, ?5, 4, 10, 0, 1, 7, 2, 3, 0, ?6, 7)",
            (s, e, name, g, kind, bytes),
        )
        .unwrap();
    }
    conn.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH VALUES (2100, 2600, 9, ?1, 4, 4, 12, 0, 1, 7, 2, 3, 77, 128, 1, 256, 10)",
        [g],
    )
    .unwrap();
}

/// Rows that no sample and no simulation of nsys-synth records, declared by
/// table and column for `nsys_synth::add_rows` (which makes each table from
/// Nsight's schema), on the first thread of `SynthSpec::small`'s process:
/// what `tests/tests/all/category_snapshots.rs` adds to its synthetic export so that every
/// category of the registry has rows. A new category whose tables are in no
/// sample declares a few rows here.
pub fn declared_rows() -> Vec<nsys_synth::TableRows> {
    use nsys_synth::{Cell, TableRows};
    let tid = (1_i64 << 48) | (24_601 << 24) | 24_601;
    let name = |s: &str| Cell::StringId(s.to_owned());
    // OpenACC (kinds: 9 compute construct, 11 enter data, 7 wait, 5 enqueue
    // upload, 4 enqueue launch); device type 4, device 0, context 1, stream 7.
    let acc = [
        "start",
        "end",
        "nameId",
        "globalTid",
        "eventKind",
        "DeviceType",
    ];
    let place = [
        "lineNo",
        "cuDeviceId",
        "cuContextId",
        "cuStreamId",
        "srcFile",
        "funcName",
    ];
    let columns = |extra: &[&'static str]| -> Vec<&'static str> {
        acc.iter().chain(&place).chain(extra).copied().collect()
    };
    let at = |line: i64| {
        [
            line.into(),
            0.into(),
            1.into(),
            7.into(),
            name("saxpy.c"),
            name("main"),
        ]
    };
    let row = |start: i64, end: i64, what: &str, kind: i64, line: i64, extra: Vec<Cell>| {
        let common = [
            start.into(),
            end.into(),
            name(what),
            tid.into(),
            kind.into(),
            4.into(),
        ];
        common
            .into_iter()
            .chain(at(line))
            .chain(extra)
            .collect::<Vec<Cell>>()
    };
    let table = |table: &str, columns: Vec<&str>, rows: Vec<Vec<Cell>>| TableRows {
        rows,
        ..TableRows::new(table, &columns)
    };
    vec![
        table(
            "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
            columns(&[]),
            vec![
                row(
                    300_000_000,
                    300_090_000,
                    "acc_compute_construct",
                    9,
                    12,
                    vec![],
                ),
                row(300_001_000, 300_020_000, "acc_enter_data", 11, 10, vec![]),
                row(300_070_000, 300_080_000, "acc_wait", 7, 14, vec![]),
            ],
        ),
        table(
            "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            columns(&["bytes", "varName"]),
            vec![row(
                300_002_000,
                300_005_000,
                "acc_enqueue_upload",
                5,
                10,
                vec![4096.into(), name("x")],
            )],
        ),
        table(
            "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
            columns(&["numGangs", "numWorkers", "vectorLength", "kernelName"]),
            vec![row(
                300_021_000,
                300_026_000,
                "acc_enqueue_launch",
                4,
                12,
                vec![128.into(), 1.into(), 256.into(), name("main_12_gpu")],
            )],
        ),
    ]
}
