//! Joins on CUDA correlation ids when several API calls carry the same id: nsys 2022.2
//! records a runtime call and the versioned call it wraps with one id, and an nsys
//! 2022.1 export was seen where a driver call (`cuCtxSynchronize`) and a later runtime
//! call (`cudaDeviceReset`) share one. Each synchronization, kernel, memory operation,
//! graph, host function and CUDA event row still gives one event and one arrow, from
//! the call that holds it (or the nearest), and no count wraps.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use end_to_end::fixtures::add_nccl_ranges;
use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthDeviceSide, SynthGraphMode, SynthSpec};
use paraver_reader::validate::TraceStats;
use rusqlite::Connection;

const CUDA_API: u32 = 63_000_000;
const CORRELATION_ID: u32 = 9200;
const CUDA_SYNC: u32 = 9350;
const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// A small export of `schema` with every kind of GPU work that is joined with its
/// call: kernels (NCCL ones with their ranges), copies, sets, syncs, CUDA events,
/// graphs and host functions where the version has them.
fn export_with_every_join(dir: &Path, schema: SchemaVersion) -> PathBuf {
    let mut spec = SynthSpec::small(schema);
    spec.device = SynthDeviceSide {
        graph_launches: if schema >= SchemaVersion::V3_16 { 3 } else { 0 },
        graph_mode: SynthGraphMode::Graph,
        host_functions: if schema >= SchemaVersion::V3_24 { 3 } else { 0 },
        ..Default::default()
    };
    let path = dir.join(format!("joins_{}.sqlite", schema.schema_version()));
    write_export(&spec, &path).expect("generate export");
    add_nccl_ranges(&path);
    path
}

fn convert_ok(input: &Path, output: &Path) -> String {
    let result = binary().arg(input).arg(output).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert!(result.status.success(), "{stderr}");
    assert!(!stderr.contains("18446744"), "a count wrapped: {stderr}");
    stderr
}

/// Everything a trace holds but the calls themselves: event begins of every type
/// except the API call and its correlation id, and arrows by tag.
fn all_but_calls(stats: &TraceStats) -> (BTreeMap<u32, u64>, BTreeMap<i64, u64>) {
    let mut begins = stats.event_begins.clone();
    begins.remove(&CUDA_API);
    begins.remove(&CORRELATION_ID);
    (begins, stats.comm_tags.clone())
}

/// The export, open for changes (its foreign keys name tables it may not have).
fn sqlite(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn
}

fn count(conn: &Connection, sql: &str) -> u64 {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// Copies every API call as a call nested in it with the same correlation id and
/// name, as nsys 2022.2 records `cudaMalloc` around `cudaMalloc_v3020`.
fn nest_every_call(path: &Path) -> u64 {
    let conn = sqlite(path);
    let columns: Vec<String> = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{RUNTIME}')"))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let values: Vec<String> = columns
        .iter()
        .map(|c| match c.as_str() {
            "start" => "start + 1".to_string(),
            "end" => "max(start + 1, end - 1)".to_string(),
            other => format!("\"{other}\""),
        })
        .collect();
    conn.execute_batch(&format!(
        "INSERT INTO {RUNTIME} ({}) SELECT {} FROM {RUNTIME} ORDER BY rowid",
        columns.join(", "),
        values.join(", ")
    ))
    .unwrap();
    count(&conn, &format!("SELECT count(*) FROM {RUNTIME}"))
}

#[test]
fn calls_nested_with_one_correlation_id_give_each_row_one_event_and_one_arrow() {
    let dir = tempfile::tempdir().unwrap();
    for schema in SchemaVersion::all() {
        let input = export_with_every_join(dir.path(), schema);
        let plain = dir.path().join(format!("plain_{schema}.prv"));
        convert_ok(&input, &plain);
        let runtime_rows = count(&sqlite(&input), &format!("SELECT count(*) FROM {RUNTIME}"));
        let nested_rows = nest_every_call(&input);
        assert_eq!(nested_rows, 2 * runtime_rows);
        let nested = dir.path().join(format!("nested_{schema}.prv"));
        let stderr = convert_ok(&input, &nested);
        assert!(!stderr.contains("left out"), "{schema}: {stderr}");
        let (before, after) = (check_trace(&plain), check_trace(&nested));
        assert_eq!(begins(&after, CUDA_API), nested_rows, "{schema}");
        let (before, after) = (all_but_calls(&before), all_but_calls(&after));
        // The same syncs, kernels (with their NCCL payloads), copies, graphs, host
        // functions and CUDA events, and the same arrows: none twice.
        assert_eq!(before, after, "{schema}");
        assert!(before.0[&CUDA_SYNC] > 0 && before.1[&55_001] > 0 && before.1[&55_002] > 0);
        assert!(
            before.0.keys().any(|t| (9501..9600).contains(t)),
            "{schema}: NCCL payload"
        );
    }
}

/// A row of the trace: its thread's name, from the `.row` (one task).
fn thread_names(prv: &Path) -> Vec<String> {
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    row.lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Begins of `ty` per thread name, and arrows of `tag` per sending thread name.
fn per_thread(prv: &Path, ty: u32, tag: i64) -> (HashMap<String, u64>, HashMap<String, u64>) {
    let names = thread_names(prv);
    let text = std::fs::read_to_string(prv).unwrap();
    let (mut events, mut arrows) = (HashMap::new(), HashMap::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        let thread = |i: usize| names[f[i].parse::<usize>().unwrap() - 1].clone();
        if line.starts_with("2:") {
            let n = f[6..]
                .chunks(2)
                .filter(|p| p[0] == ty.to_string() && p[1] != "0")
                .count() as u64;
            if n > 0 {
                *events.entry(thread(4)).or_default() += n;
            }
        } else if line.starts_with("3:") {
            // 3:cpu:appl:task:thread:lsend:psend:cpu:appl:task:thread:lrecv:precv:size:tag
            if f[14] == tag.to_string() {
                *arrows.entry(thread(4)).or_default() += 1;
            }
        }
    }
    (events, arrows)
}

/// The shape seen in an nsys 2022.1 export: a driver call holding a sync, and a
/// later runtime call with the same correlation id, here on another thread so the
/// test sees which one got it. Also a kernel whose id a later unrelated call
/// repeats, and a sync that no call with its id holds (it goes to the nearest).
#[test]
fn a_later_call_repeating_a_correlation_id_takes_nothing_from_the_call_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let schema = SchemaVersion::V2_9;
    let path = dir.path().join("repeat_2022.1.sqlite");
    write_export(&SynthSpec::small(schema), &path).unwrap();
    let conn = sqlite(&path);
    let syncs = count(&conn, &format!("SELECT count(*) FROM {SYNC}"));
    let kernels = count(&conn, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    let last = count(&conn, &format!("SELECT max(end) FROM {RUNTIME}")) as i64;
    conn.execute(
        "INSERT INTO StringIds (id, value) VALUES (90001, 'cudaDeviceReset_v3020'), (90002, 'cuCtxSynchronize')",
        [],
    )
    .unwrap();
    // Thread tids: the generator's are pid and pid + 1; these are new.
    let (reset_tid, near_tid, far_tid) = (7001, 7002, 7003);
    let repeat = |correlation_of: &str, tid: i64, start: i64, end: i64| {
        conn.execute(
            &format!(
                "INSERT INTO {RUNTIME} (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 SELECT ?1, ?2, 0, (globalTid & ~16777215) | ?3, correlationId, 90001, 0
                 FROM {RUNTIME} WHERE correlationId = ({correlation_of})"
            ),
            rusqlite::params![start, end, tid],
        )
        .unwrap();
    };
    // 1. The first sync (in time) is held by its call; a later call repeats its id.
    let first_sync = format!("SELECT correlationId FROM {SYNC} ORDER BY start LIMIT 1");
    conn.execute(
        &format!("UPDATE {RUNTIME} SET nameId = 90002 WHERE correlationId = ({first_sync})"),
        [],
    )
    .unwrap();
    repeat(&first_sync, reset_tid, last + 1_000, last + 2_000);
    // 2. The first kernel's launch id is repeated later by a call on the same new thread.
    let first_kernel =
        "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1";
    repeat(first_kernel, reset_tid, last + 3_000, last + 4_000);
    // 3. The last sync's own call is moved away from it; two calls on new threads
    //    repeat its id, the nearer one 100 ns after it ends.
    let last_sync = format!("SELECT correlationId FROM {SYNC} ORDER BY start DESC LIMIT 1");
    let (sync_start, sync_end): (i64, i64) = conn
        .query_row(
            &format!("SELECT start, end FROM {SYNC} WHERE correlationId = ({last_sync})"),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn.execute(
        &format!("UPDATE {RUNTIME} SET start = ?1, end = ?2 WHERE correlationId = ({last_sync})"),
        rusqlite::params![sync_start - 5_000, sync_start - 4_000],
    )
    .unwrap();
    repeat(&last_sync, far_tid, last + 5_000, last + 6_000);
    repeat(&last_sync, near_tid, sync_end + 100, sync_end + 200);
    drop(conn);

    let output = dir.path().join("repeat.prv");
    let stderr = convert_ok(&path, &output);
    assert!(!stderr.contains("left out"), "{stderr}");
    let stats = check_trace(&output);
    assert_eq!(begins(&stats, CUDA_SYNC), syncs, "one event per sync row");
    assert_eq!(
        stats.comm_tags.get(&55_001).copied(),
        Some(kernels),
        "one arrow per kernel"
    );
    let (sync_events, launch_arrows) = per_thread(&output, CUDA_SYNC, 55_001);
    let on = |map: &HashMap<String, u64>, tid: i64| {
        map.iter()
            .filter(|(name, _)| name.contains(&format!("{tid}")))
            .map(|(_, n)| *n)
            .sum::<u64>()
    };
    assert_eq!(on(&sync_events, reset_tid), 0, "{sync_events:?}");
    assert_eq!(on(&launch_arrows, reset_tid), 0, "{launch_arrows:?}");
    assert_eq!(on(&sync_events, near_tid), 1, "{sync_events:?}");
    assert_eq!(on(&sync_events, far_tid), 0, "{sync_events:?}");
}
