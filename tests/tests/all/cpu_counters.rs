//! CPU core counters (`cpu_raw_counters`, BSC nsys2prv 0.6's numbering) end to
//! end, on synthetic exports (no real export we have records them): every sample
//! of the raw counter table is a 66600000 + eventId event whose value is its
//! count, on the thread the last switch-in of its CPU put there at the sample's
//! midpoint; the per-thread sums equal the export's, computed here in SQL with
//! BSC's rule; both names of the table are read; without scheduling there is
//! nothing to attribute, and the tool says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_synth::{add_cpu_activity, write_export, SchemaVersion, SynthCpu, SynthSpec};
use paraver_reader::{open_body, parse_header, parse_record, Lines, Record, TraceFiles};
use rusqlite::{Connection, OpenFlags};

const COUNTERS_FIRST: u32 = 66_600_000;

/// A small CUDA report whose two threads also ran on CPUs with three counters.
fn export(dir: &Path, schema: SchemaVersion) -> PathBuf {
    let path = dir.join(format!("counters_{schema}.sqlite"));
    let spec = SynthSpec::small(schema);
    write_export(&spec, &path).unwrap();
    let cpu = SynthCpu {
        samples_per_thread: 150,
        cpu_counters: 3,
        ..SynthCpu::default()
    };
    let added = add_cpu_activity(&path, &spec, &cpu).unwrap();
    assert!(added.counter_samples > 0);
    path
}

fn raw_table(db: &Connection) -> String {
    db.query_row(
        "SELECT name FROM sqlite_master WHERE name LIKE 'PERF_EVENT_%RAW_EVENT'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// Per (tid, type): the summed count and the distinct midpoints of the samples
/// BSC's rule gives the thread (the last switch-in on the sample's CPU at or
/// before its midpoint, the later row on ties; the CPU of a core, or of a
/// cache's parent core).
fn expected(path: &Path) -> BTreeMap<(u32, u32), (i64, i64)> {
    expected_between(path, i64::MIN, i64::MAX)
}

/// [`expected`] of the samples that start within `[from, to]` (BSC's time limits).
fn expected_between(path: &Path, from: i64, to: i64) -> BTreeMap<(u32, u32), (i64, i64)> {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let table = raw_table(&db);
    let sql = format!(
        "WITH s AS (
           SELECT r.start + (r.end - r.start) / 2 AS mid, r.eventId, r.count,
             COALESCE(
               (SELECT c.instance FROM TARGET_INFO_COMPONENT c
                WHERE c.componentId = r.componentId AND c.name = 'Core'),
               (SELECT p.instance FROM TARGET_INFO_COMPONENT c
                JOIN TARGET_INFO_COMPONENT p ON p.componentId = c.parentId
                WHERE c.componentId = r.componentId AND p.name = 'Core')) AS cpu
           FROM {table} r WHERE r.start BETWEEN {from} AND {to}),
         t AS (
           SELECT s.*, (SELECT e.globalTid % 16777216 FROM SCHED_EVENTS e
                        WHERE e.cpu = s.cpu AND e.isSchedIn != 0 AND e.start <= s.mid
                        ORDER BY e.start DESC, e.rowid DESC LIMIT 1) AS tid
           FROM s)
         SELECT tid, eventId, SUM(count), COUNT(DISTINCT mid) FROM t
         WHERE tid IS NOT NULL GROUP BY tid, eventId"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                (r.get::<_, u32>(0)?, COUNTERS_FIRST + r.get::<_, u32>(1)?),
                (r.get(2)?, r.get(3)?),
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Per (tid, type): the summed values and the number of events in the trace.
fn found(prv: &Path) -> BTreeMap<(u32, u32), (i64, i64)> {
    let files = TraceFiles::of(prv);
    let row = std::fs::read_to_string(&files.row).unwrap();
    let threads: Vec<u32> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            // `name (tid)`, or `name (rank R, tid)`: the last number.
            let inside = l
                .strip_suffix(')')
                .and_then(|l| l.rsplit([' ', '(']).next());
            inside.and_then(|t| t.parse().ok()).unwrap_or(0)
        })
        .collect();
    let mut lines = Lines::new(open_body(prv, files.gzip).unwrap());
    assert!(lines.advance().unwrap());
    let header = parse_header(&String::from_utf8_lossy(lines.line()), &mut Vec::new()).unwrap();
    let mut fields = Vec::new();
    let mut sums: BTreeMap<(u32, u32), (i64, i64)> = BTreeMap::new();
    while lines.advance().unwrap() {
        if let Ok(Record::Event { object, pairs, .. }) = parse_record(lines.line(), &mut fields) {
            let thread = header
                .thread_index(object.appl, object.task, object.thread)
                .unwrap();
            for pair in pairs.chunks(2) {
                let ty = pair[0] as u32;
                if (COUNTERS_FIRST..COUNTERS_FIRST + 100_000).contains(&ty) {
                    let entry = sums.entry((threads[thread], ty)).or_default();
                    entry.0 += pair[1] as i64;
                    entry.1 += 1;
                }
            }
        }
    }
    sums
}

#[test]
fn every_sample_goes_to_the_thread_on_its_cpu_with_bsc_numbering() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [SchemaVersion::V3_24, SchemaVersion::V3_16] {
        let input = export(dir.path(), schema);
        let prv = dir.path().join(format!("t_{schema}.prv"));
        let out = convert(&[&input], &prv, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        check_trace(&prv);
        let want = expected(&input);
        assert_eq!(want.len(), 6, "two threads, three counters: {want:?}");
        assert_eq!(found(&prv), want, "{schema}");
        let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
        for label in [
            "66600006   Instructions Retired\n",
            "66600005   CPU Cycles [cycles]\n",
            "66600012   l2_rqsts.miss\n",
        ] {
            assert!(pcf.contains(label), "{schema}: no '{label}' in the .pcf");
        }
        let views = dir.path().join(format!("t_{schema}.cfgs"));
        for view in [
            "views/cpu_counters/66600006_instructions_retired.cfg",
            "analysis/cpu_counters/66600005_cpu_cycles_cycles.cfg",
        ] {
            assert!(views.join(view).is_file(), "{view}");
        }
        let index = std::fs::read_to_string(views.join("INDEX.md")).unwrap();
        assert!(index.contains("How many CPU Cycles [cycles] did each thread count in all?"));
    }
}

#[test]
fn bsc_s_word_selects_the_counters_alone_and_exclude_drops_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = export(dir.path(), SchemaVersion::V3_24);
    let alone = dir.path().join("alone.prv");
    let out = convert(&[&input], &alone, &["-t", "cpu_raw_counters"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = check_trace(&alone);
    let types: Vec<u32> = stats.event_begins.keys().copied().collect();
    assert!(
        types
            .iter()
            .all(|ty| (COUNTERS_FIRST..COUNTERS_FIRST + 100_000).contains(ty)),
        "{types:?}"
    );
    // Alone, the counters go to every thread of the captured process tree.
    assert_eq!(found(&alone), expected(&input));

    let without = dir.path().join("without.prv");
    let out = convert(&[&input], &without, &["--exclude", "cpu-raw-counters"]);
    assert!(out.status.success());
    assert!(found(&without).is_empty());
}

#[test]
fn without_scheduling_the_samples_are_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let input = export(dir.path(), SchemaVersion::V3_24);
    let db = Connection::open(&input).unwrap();
    db.execute_batch("DROP TABLE SCHED_EVENTS").unwrap();
    drop(db);
    let prv = dir.path().join("t.prv");
    let mut cmd = binary();
    cmd.arg(&input).arg(&prv);
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CPU counter samples of PERF_EVENT_SOC_OR_CPU_RAW_EVENT left out: without thread scheduling"),
        "{stderr}"
    );
    check_trace(&prv);
    assert!(found(&prv).is_empty());
}

/// BSC's `--time-limit-start/--time-limit-end` keep the samples that start
/// within them (attributed with every switch-in, also those before the limits).
#[test]
fn time_limits_keep_the_samples_that_start_within_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = export(dir.path(), SchemaVersion::V3_24);
    let (from, to) = (350_000_000_i64, 420_000_000_i64);
    let prv = dir.path().join("limited.prv");
    let out = convert(
        &[&input],
        &prv,
        &[
            "-t",
            "cpu_raw_counters",
            &format!("--time-limit-start={from}"),
            &format!("--time-limit-end={to}"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = expected_between(&input, from, to);
    assert!(!want.is_empty() && want != expected(&input));
    assert_eq!(found(&prv), want);
}
