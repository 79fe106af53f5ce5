//! The page reader checked against SQLite on any file: what the fuzz target
//! `pages` (`fuzz/`) runs on every input, and what the corpus replay test runs
//! on every input kept in `fuzz/corpus/pages/` (on stable, in `cargo test`).
//!
//! SQLite is the oracle. For every table the page reader can read, the file is
//! scanned both ways (a plain scan of every column):
//! - every row both return, up to where the first of them stops, is the same,
//!   value for value (reals bit for bit, text byte for byte);
//! - where SQLite reports damage, the page reader reports damage too, naming
//!   the page;
//! - where the page reader reports damage and SQLite reads the table,
//!   SQLite's own `PRAGMA integrity_check` must find the file damaged (the
//!   page reader may be stricter than a scan, never wrong about a good file).
//!
//! A disagreement panics, with what differs: a crash for the fuzzer, a failure
//! for the test.

use std::path::Path;

use rusqlite::types::ValueRef;

use crate::checks::check_sqlite_header;
use crate::connection::{may_be_written, open_read_only};
use crate::pages::PageFile;
use crate::query::Query;
use crate::scan::for_each_row;
use crate::{ReadError, Schema};

/// Rows read from one scan at most: enough for any small input, and a bound on
/// the memory a fuzzed file can make the check hold.
const MAX_ROWS: usize = 200_000;

/// A value as stored, comparable (reals by their bits).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    Null,
    Integer(i64),
    Real(u64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl From<ValueRef<'_>> for Cell {
    fn from(v: ValueRef<'_>) -> Cell {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Integer(i),
            ValueRef::Real(f) => Cell::Real(f.to_bits()),
            ValueRef::Text(t) => Cell::Text(t.to_vec()),
            ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
        }
    }
}

/// What a check saw: tables compared, and scans in each state.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Scans read the same, whole, both ways.
    pub same: usize,
    /// Scans where both found damage.
    pub both_damaged: usize,
    /// Scans where only the page reader found damage (and integrity_check did too).
    pub stricter: usize,
}

/// Checks the page reader against SQLite on the database file at `path`;
/// panics on any disagreement. A file SQLite cannot open, or whose schema it
/// cannot read, is not checked (the reader never reads its pages).
pub fn check_database(path: &Path) -> Checked {
    let mut checked = Checked::default();
    if check_sqlite_header(path).is_err() {
        return checked;
    }
    let Ok(conn) = open_read_only(path) else {
        return checked;
    };
    let Ok(schema) = Schema::read(path, &conn) else {
        return checked;
    };
    // As `Export::open` decides.
    let pages = if may_be_written(path) {
        None
    } else {
        PageFile::open(path)
    };
    let Some(pages) = pages else {
        return checked;
    };
    let mut tables: Vec<&str> = schema.table_names().collect();
    tables.sort_unstable();
    for table in tables {
        let columns: Vec<&str> = schema.columns(table).iter().map(String::as_str).collect();
        // Plain scans: the filtered ones (an `=` on a column) SQLite may run
        // through an index, another path than the scan the page reader
        // replaces (filtered scans are compared in `pages_tests`).
        let queries = [schema.query(table, &columns, "1")];
        for query in &queries {
            if query.direct.is_none() {
                continue;
            }
            let compared = compare_scan(path, &conn, &pages, table, columns.len(), query);
            match compared {
                Compared::Same => checked.same += 1,
                Compared::BothDamaged => checked.both_damaged += 1,
                Compared::Stricter => checked.stricter += 1,
            }
        }
    }
    checked
}

enum Compared {
    Same,
    BothDamaged,
    Stricter,
}

/// One scan read both ways, compared (see the module's rules).
fn compare_scan(
    path: &Path,
    conn: &rusqlite::Connection,
    pages: &PageFile,
    table: &str,
    columns: usize,
    query: &Query,
) -> Compared {
    let row_of = |row: &crate::RowView| -> Vec<Cell> {
        (0..columns).map(|i| Cell::from(row.value_ref(i))).collect()
    };
    let mut sqlite_rows: Vec<Vec<Cell>> = Vec::new();
    let sqlite = for_each_row(path, conn, None, table, query, |row| {
        sqlite_rows.push(row_of(row));
        Ok(sqlite_rows.len() < MAX_ROWS)
    });
    // The page reader's rows, each compared as it comes with SQLite's.
    let mut n = 0usize;
    let mut mismatch: Option<String> = None;
    let direct = for_each_row(path, conn, Some(pages), table, query, |row| {
        let ours = row_of(row);
        match sqlite_rows.get(n) {
            Some(theirs) if *theirs == ours => {}
            Some(theirs) => {
                mismatch = Some(format!("row {}: pages {ours:?}, SQLite {theirs:?}", n + 1));
                return Ok(false);
            }
            // SQLite stopped here (damage, or MAX_ROWS): compared so far.
            None => return Ok(false),
        }
        n += 1;
        Ok(n < MAX_ROWS)
    });
    let sql = &query.sql;
    if let Some(what) = mismatch {
        panic!("{table} ({sql}): the page reader and SQLite differ: {what}");
    }
    match (sqlite, direct) {
        (Ok(_), Ok(_)) => {
            let complete = n == sqlite_rows.len() || n >= MAX_ROWS;
            assert!(
                complete,
                "{table} ({sql}): the page reader read {n} rows, SQLite {}",
                sqlite_rows.len()
            );
            Compared::Same
        }
        (Err(theirs), Ok(_)) => {
            // The page reader stopped where SQLite did, without an error: it
            // read past damage SQLite reports (or fewer rows than SQLite gave).
            panic!(
                "{table} ({sql}): SQLite reports damage the page reader does not see \
                 ({n} rows read both ways): {theirs}"
            )
        }
        (sqlite, Err(ours)) => {
            let message = ours.to_string();
            // The cause, not the whole message: the file's path may hold
            // "page" (the fuzz target's scratch directory does).
            let names_page = match &ours {
                ReadError::Sqlite { cause, .. } => cause.to_string().contains("page "),
                _ => false,
            };
            assert!(
                names_page,
                "{table} ({sql}): the page reader's error does not name a page: {message}"
            );
            if sqlite.is_err() {
                return Compared::BothDamaged;
            }
            let verdict: Result<String, _> =
                conn.query_row("PRAGMA integrity_check(1)", [], |r| r.get(0));
            assert!(
                verdict.as_deref() != Ok("ok"),
                "{table} ({sql}): the page reader reports damage in a file SQLite reads \
                 and finds sound: {message}"
            );
            Compared::Stricter
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The inputs kept from fuzzing (`fuzz/corpus/pages/`, minimised) and the
    /// crashes it found (`fuzz/regressions/pages/`), each through the checks the
    /// fuzz target runs: the corpus replay, on stable.
    #[test]
    fn fuzz_corpus_replays() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        let mut inputs: Vec<PathBuf> = Vec::new();
        for dir in ["corpus/pages", "regressions/pages"] {
            if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
                inputs.extend(entries.flatten().map(|e| e.path()));
            }
        }
        inputs.sort();
        assert!(inputs.len() >= 3, "{} inputs", inputs.len());
        let dir = tempfile::tempdir().unwrap();
        let mut total = Checked::default();
        for input in &inputs {
            // Copied: a name of its own, and no journal beside it.
            let path = dir.path().join("input.sqlite");
            std::fs::copy(input, &path).unwrap();
            let checked = check_database(&path);
            total.same += checked.same;
            total.both_damaged += checked.both_damaged;
            total.stricter += checked.stricter;
        }
        assert!(total.same >= 10, "{total:?}");
    }

    /// Found by the `pages` campaign: a record whose serial types add up to
    /// fewer bytes than it has (one type of an export's row changed). SQLite
    /// reports the file damaged; the page reader read the row.
    #[test]
    fn fields_ending_before_their_record_are_damage() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pages");
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "fields-end-before-record.sqlite",
            "fields-end-before-record-first-row.sqlite",
        ] {
            let path = dir.path().join(name);
            std::fs::copy(root.join(name), &path).unwrap();
            let checked = check_database(&path);
            assert!(checked.both_damaged >= 1, "{name}: {checked:?}");
        }
    }

    /// Found by the `pages` campaign of this round (the class left open by the
    /// first: an export from `sched_only` where SQLite says "malformed" on
    /// ENUM_CUDA_MEMPOOL_OPER): a record whose header holds no serial type (a
    /// cell of payload 1, its header size 1). SQLite reports reading a column
    /// of it as damage; the page reader read it as a row of NULLs.
    #[test]
    fn a_record_header_without_fields_is_damage() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pages");
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "header-without-fields-enum.sqlite",
            "header-without-fields-enum-first-row.sqlite",
            "header-without-fields-fuzzed.sqlite",
        ] {
            let path = dir.path().join(name);
            std::fs::copy(root.join(name), &path).unwrap();
            let checked = check_database(&path);
            assert!(checked.both_damaged >= 1, "{name}: {checked:?}");
        }
    }

    /// Found by the `pages` campaign of this round: a file cut within its last
    /// page (its header's page count not valid, so SQLite counts the partial
    /// page). SQLite read row 15's overflow page straight from the file and
    /// reported an I/O error for its missing bytes; the page reader read them
    /// as zeros. Such a file is now read by SQLite alone.
    #[test]
    fn a_file_cut_within_a_page_is_read_by_sqlite() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pages");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.sqlite");
        std::fs::copy(root.join("cut-within-overflow-page.sqlite"), &path).unwrap();
        assert!(PageFile::open(&path).is_none());
        assert_eq!(check_database(&path), Checked::default());
        // Whole pages again (the cut page made whole with zeros): read here.
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let size = file.metadata().unwrap().len();
        file.set_len(size.div_ceil(512) * 512).unwrap();
        assert!(PageFile::open(&path).is_some());
    }

    /// Found by the `pages` campaign of this round: a REAL field whose eight
    /// bytes are a NaN (SQLite never stores one: it binds a NaN as NULL).
    /// SQLite reads it as NULL, and its integrity_check finds the file sound;
    /// the page reader read the NaN.
    #[test]
    fn a_stored_nan_reads_as_null() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pages");
        let dir = tempfile::tempdir().unwrap();
        for name in ["nan-real.sqlite", "nan-real-fuzzed.sqlite"] {
            let path = dir.path().join(name);
            std::fs::copy(root.join(name), &path).unwrap();
            let checked = check_database(&path);
            assert!(checked.same >= 1, "{name}: {checked:?}");
        }
        let path = dir.path().join("nan-real.sqlite");
        let conn = open_read_only(&path).unwrap();
        let schema = Schema::read(&path, &conn).unwrap();
        let pages = PageFile::open(&path).unwrap();
        let query = schema.query("T", &["value"], "1");
        let mut values = Vec::new();
        for_each_row(&path, &conn, Some(&pages), "T", &query, |row| {
            values.push(row.float(0));
            Ok(true)
        })
        .unwrap();
        assert_eq!(values, [Some(1.25), None, Some(3.75)]);
    }

    /// Found by the `pages` campaign of this round: a timestamp column declared
    /// TEXT (a sound file). SQLite's `CASE ... BETWEEN` compares its values as
    /// text ('5' is not between -2^62 and 2^62, '123' is); the page reader
    /// read them as they are. Such a table is now read by SQLite.
    #[test]
    fn timestamps_of_text_columns_are_read_by_sqlite() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pages");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.sqlite");
        std::fs::copy(root.join("time-column-declared-text.sqlite"), &path).unwrap();
        // StringIds read both ways and the same; T (its timestamps text) by
        // SQLite only.
        let checked = check_database(&path);
        assert_eq!(checked.same, 1, "{checked:?}");
        let conn = open_read_only(&path).unwrap();
        let schema = Schema::read(&path, &conn).unwrap();
        let query = schema.query("T", &["start", "end", "globalTid"], "1");
        assert!(query.direct.is_none(), "{}", query.sql);
        let query = schema.query("T", &["globalTid"], "1");
        assert!(query.direct.is_some(), "{}", query.sql);
    }
}
