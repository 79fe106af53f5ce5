//! Unit tests of the category modules, in rust-analyzer's `check(fixture,
//! expect![...])` style: a few rows of SQL become an export, the export is
//! translated with some categories, and the records it became are compared as
//! text with the expectation written in the test (`UPDATE_EXPECT=1 cargo test -p
//! nsys-semantics` rewrites the expectations after a deliberate change).
//!
//! The export is the synthetic generator's small CUDA report (schema 3.24: the
//! real columns, process 24601 with threads 24601 and 24602, device 0) with the
//! rows of every table emptied but those that describe the session (strings,
//! processes, threads, target info, metadata, enums): a test's SQL inserts only
//! what it is about. A table the small report does not have (those of other
//! nsys versions: host functions, SoC metrics, ...) is created, as the version's
//! schema or NVIDIA's reference has it, when the SQL inserts into it.

use std::fmt::Write as _;
use std::path::PathBuf;

use expect_test::Expect;
use paraver_writer::record::{Body, Value};
use paraver_writer::EventPair;

use crate::{Category, Options, ReportTranslation, ThreadKey, ThreadKind};

/// The process of the fixture.
pub const PID: i64 = 24_601;

/// nsys's packed `globalPid` of [`PID`] (hardware id 1, as the generator writes).
pub const GLOBAL_PID: i64 = (1 << 48) | (PID << 24);

/// Tables a fixture keeps the rows of: what describes the session, not events.
fn describes_the_session(table: &str) -> bool {
    [
        "StringIds",
        "ThreadNames",
        "PROCESSES",
        "ProcessStreams",
        "ANALYSIS_DETAILS",
    ]
    .contains(&table)
        || ["TARGET_INFO_", "META_DATA_", "EXPORT_META_DATA", "ENUM_"]
            .iter()
            .any(|prefix| table.starts_with(prefix))
}

/// An export: the emptied small report, then `sql`.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn fixture(sql: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.sqlite");
    let spec = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_24);
    nsys_synth::write_export(&spec, &path).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for table in tables.iter().filter(|t| !describes_the_session(t)) {
        db.execute(&format!("DELETE FROM {table}"), []).unwrap();
    }
    for table in inserted_tables(sql) {
        if !tables.contains(&table) {
            let create = nsys_synth::table_statement(nsys_synth::SchemaVersion::V3_24, &table)
                .unwrap_or_else(|| panic!("fixture SQL: no table {table} in any schema"));
            db.execute_batch(create).unwrap();
        }
    }
    db.execute_batch(sql)
        .unwrap_or_else(|e| panic!("fixture SQL: {e}\n{sql}"));
    Fixture { _dir: dir, path }
}

/// The tables `sql` inserts into (`INSERT INTO NAME`).
fn inserted_tables(sql: &str) -> Vec<String> {
    let mut tables: Vec<String> = sql
        .split("INSERT INTO")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| {
            name.trim_matches(|c: char| c == '"' || c == '(')
                .to_string()
        })
        .collect();
    tables.sort();
    tables.dedup();
    tables
}

/// Translates `sql`'s export with `categories` and compares its records, as
/// [`records`] prints them, with `expect`.
pub fn check(categories: &[Category], sql: &str, expect: Expect) {
    expect.assert_eq(&records(&translate(categories, sql)));
}

/// `sql`'s export translated with `categories`.
pub fn translate(categories: &[Category], sql: &str) -> ReportTranslation {
    let fixture = fixture(sql);
    let options = Options {
        categories: categories.iter().copied().collect(),
        ..Options::default()
    };
    crate::translate_report(&fixture.path, &fixture.path, &options)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The records of a report, one a line in the run's order: time, thread, then
/// `state S until END`, the event pairs (`type=value`; a name as `type="name"`;
/// `end` before the pairs of an interval's end), or `comm to THREAD ...`. The
/// warnings follow, one a line, the fixture's path as `FIXTURE`.
pub fn records(report: &ReportTranslation) -> String {
    let run = &report.run;
    let thread = |t: u32| name_of(&report.threads[t as usize]);
    let pair = |p: &EventPair| match p.value() {
        Value::Raw(v) => format!("{}={v}", p.ty),
        Value::Name(id) => format!("{}={:?}", p.ty, &*run.names.names_of(p.ty)[id as usize]),
    };
    let mut text = String::new();
    for (t, record) in run.sorted_records() {
        write!(text, "{} {}", record.time, thread(t)).unwrap();
        match record.body {
            Body::State { end, state } => write!(text, " state {state} until {end}").unwrap(),
            Body::Events {
                first,
                count,
                shared,
                closing,
            } => {
                if closing {
                    text += " end";
                }
                let pairs = run.shared_pairs_of(shared).iter();
                for p in pairs.chain(run.pairs_of(first, count)) {
                    write!(text, " {}", pair(p)).unwrap();
                }
            }
            Body::Comm { index } => {
                let c = &run.comms[index as usize];
                write!(
                    text,
                    " comm to {} at {} (physical send {}, receive {}) size {} tag {}",
                    thread(c.receiver),
                    c.recv_logical,
                    c.send_physical,
                    c.recv_physical,
                    c.size,
                    c.tag
                )
                .unwrap();
            }
        }
        text += "\n";
    }
    // The fixture's path is a new temporary one each time.
    let path = report.path.display().to_string();
    for warning in &report.warnings {
        writeln!(text, "warning: {}", warning.replace(&path, "FIXTURE")).unwrap();
    }
    text
}

/// A thread as `pid.tid` (CPU) or `pid:gpuD/sS` (a GPU stream), else its key.
fn name_of(key: &ThreadKey) -> String {
    match key.kind {
        ThreadKind::Cpu { tid } => format!("{}.{tid}", key.pid),
        ThreadKind::Stream { device, stream } => format!("{}:gpu{device}/s{stream}", key.pid),
        other => format!("{}:{other:?}", key.pid),
    }
}
