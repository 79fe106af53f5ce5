//! The page reader against SQLite itself: every value of every table it reads,
//! in crafted files that exercise the file format and in every real export of
//! the corpus; and damaged pages give errors, not panics.

use std::path::{Path, PathBuf};

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::scan::rows_of_table;
use crate::Export;

/// Rows of every table `export` reads from its pages, read both ways: each
/// table's rows through the pages must be SQLite's, value for value, and the
/// scan through the pages reads no more bytes than the table's own pages hold
/// (each of its pages once: not its neighbours' between its leaves). Returns
/// the tables compared.
fn compare_every_table(export: &Export) -> usize {
    let mut compared = 0;
    let mut tables: Vec<&str> = export.schema().table_names().collect();
    tables.sort_unstable();
    let table_pages = pages_by_table(export.path());
    for table in tables {
        let before = export.pages.as_ref().map(|p| p.read_counts());
        let Some((direct, sqlite)) = rows_of_table(export, table) else {
            continue;
        };
        let (_, bytes_before) = before.unwrap();
        let (_, bytes_after) = export.pages.as_ref().unwrap().read_counts();
        let read = bytes_after - bytes_before;
        let own = table_pages.get(table).copied().unwrap_or(0) * page_size(export.path());
        assert!(
            read <= own,
            "{}: {table}: the scan read {read} bytes, its pages hold {own}",
            export.path().display()
        );
        let (direct, sqlite) = (direct.unwrap(), sqlite.unwrap());
        assert_eq!(direct.len(), sqlite.len(), "{table}: row count");
        for (i, (d, s)) in direct.iter().zip(&sqlite).enumerate() {
            assert!(
                same_row(d, s),
                "{}: {table}, row {}: pages {d:?}, SQLite {s:?}",
                export.path().display(),
                i + 1
            );
        }
        compared += 1;
    }
    compared
}

/// Pages of each table and of its overflow chains, as SQLite's `dbstat`
/// counts them.
fn pages_by_table(path: &Path) -> std::collections::HashMap<String, u64> {
    let conn = crate::connection::open_read_only(path).unwrap();
    let mut statement = conn
        .prepare("SELECT name, count(*) FROM dbstat GROUP BY name")
        .unwrap();
    let rows = statement
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Leaf pages of `table`, in the file's order, as `dbstat` finds them.
fn leaves_of(path: &Path, table: &str) -> Vec<u64> {
    let conn = crate::connection::open_read_only(path).unwrap();
    let mut statement = conn
        .prepare("SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf' ORDER BY pageno")
        .unwrap();
    let rows = statement
        .query_map([table], |r| Ok(r.get::<_, i64>(0)? as u64))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

fn page_size(path: &Path) -> u64 {
    let conn = crate::connection::open_read_only(path).unwrap();
    conn.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64
}

/// Runs of consecutive pages in `pages` (sorted).
fn runs(pages: &[u64]) -> usize {
    pages.windows(2).filter(|w| w[1] != w[0] + 1).count() + usize::from(!pages.is_empty())
}

/// Equal values, reals bit for bit.
fn same_row(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
            _ => x == y,
        })
}

pub(crate) fn owned(v: ValueRef) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// A file with every kind of value SQLite stores, short and long records (some
/// spanning overflow pages), a column added after rows were written, an
/// `INTEGER PRIMARY KEY`, REAL columns holding integral values, and tables the
/// page reader must leave to SQLite (without rowid, with a default).
fn crafted(dir: &Path, page_size: u32, rows: i64) -> PathBuf {
    let path = dir.join(format!("crafted-{page_size}.sqlite"));
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA page_size = {page_size};
         CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE T (start INTEGER NOT NULL, end INTEGER, r REAL, d DOUBLE, t TEXT, b BLOB, n NUMERIC, x);
         CREATE TABLE K (a INTEGER, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
         CREATE TABLE D (a INTEGER, b INTEGER DEFAULT 7);"
    ))
    .unwrap();
    let ints = [
        0i64,
        1,
        -1,
        127,
        -128,
        128,
        32_767,
        -32_769,
        8_388_607,
        -8_388_609,
        2_147_483_647,
        -2_147_483_649,
        140_737_488_355_327,
        -140_737_488_355_329,
        i64::MAX,
        i64::MIN,
    ];
    let tx = conn.unchecked_transaction().unwrap();
    for i in 0..rows {
        let v = ints[i as usize % ints.len()];
        let text = "x".repeat((i as usize * 37) % 9_000);
        let blob = vec![(i % 251) as u8; (i as usize * 13) % 700];
        let r: Value = match i % 4 {
            0 => Value::Real(i as f64),
            1 => Value::Real(i as f64 + 0.25),
            2 => Value::Null,
            _ => Value::Integer(i),
        };
        conn.execute(
            "INSERT INTO T VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                i,
                if i % 5 == 0 { None } else { Some(v) },
                r,
                (i as f64) * 1.5,
                text,
                blob,
                if i % 3 == 0 {
                    Value::Text("12.5".into())
                } else {
                    Value::Integer(v)
                },
                if i % 2 == 0 {
                    Value::Text(format!("v{i}"))
                } else {
                    Value::Real(i as f64 / 3.0)
                },
            ],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO StringIds (value) VALUES (?1)",
            [format!("string {i} {}", "y".repeat(i as usize % 300))],
        )
        .unwrap();
        conn.execute("INSERT INTO K VALUES (?1, ?2)", rusqlite::params![i, "k"])
            .unwrap();
        conn.execute("INSERT INTO D (a) VALUES (?1)", [i]).unwrap();
    }
    tx.commit().unwrap();
    // A column added later: the rows before it have shorter records.
    conn.execute_batch("ALTER TABLE T ADD COLUMN late INTEGER;")
        .unwrap();
    conn.execute("INSERT INTO T (start, late) VALUES (?1, 42)", [rows])
        .unwrap();
    path
}

#[test]
fn crafted_files_read_from_pages_as_sqlite_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    for (page_size, rows) in [(512, 3_000), (4096, 8_000), (65_536, 2_000)] {
        let path = crafted(dir.path(), page_size, rows);
        let export = Export::open(&path).unwrap();
        assert!(export.pages.is_some(), "page size {page_size}");
        let stored = export.schema().stored_tables();
        assert!(
            stored.contains(&"T") && stored.contains(&"StringIds"),
            "{stored:?}"
        );
        assert!(!stored.contains(&"K"), "a table without rowid is SQLite's");
        assert!(!stored.contains(&"D"), "a table with a default is SQLite's");
        assert!(compare_every_table(&export) >= 3);
    }
}

/// Tables written at the same time, row by row, as Nsight writes its
/// activity tables: their leaves interleave in the file. Each scan returns
/// SQLite's rows and reads only its own table's pages; a table written alone
/// (its leaves one after the other) is still read in large reads.
#[test]
fn interleaved_tables_read_only_their_own_pages() {
    let dir = tempfile::tempdir().unwrap();
    for page_size in [1024, 4096] {
        let path = dir.path().join(format!("interleaved-{page_size}.sqlite"));
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA page_size = {page_size};
             CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
             CREATE TABLE KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, name TEXT);
             CREATE TABLE RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, id INTEGER);
             CREATE TABLE NVTX (start INTEGER NOT NULL, text TEXT);
             CREATE TABLE ALONE (start INTEGER NOT NULL, value REAL);"
        ))
        .unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..20_000i64 {
            conn.execute(
                "INSERT INTO KERNEL VALUES (?1, ?2, ?3)",
                rusqlite::params![i * 10, i * 10 + 7, format!("kernel_{}", i % 13)],
            )
            .unwrap();
            if i % 2 == 0 {
                conn.execute(
                    "INSERT INTO RUNTIME VALUES (?1, ?2, ?3)",
                    rusqlite::params![i * 10 - 3, i * 10 - 1, i],
                )
                .unwrap();
            }
            if i % 5 == 0 {
                conn.execute(
                    "INSERT INTO NVTX VALUES (?1, ?2)",
                    rusqlite::params![i * 10, "x".repeat((i as usize * 7) % 90)],
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..30_000i64 {
            conn.execute(
                "INSERT INTO ALONE VALUES (?1, ?2)",
                rusqlite::params![i, i as f64 / 7.0],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        drop(conn);

        // The file is what the test is about: the tables' leaves interleave.
        for table in ["KERNEL", "RUNTIME", "NVTX"] {
            let leaves = leaves_of(&path, table);
            assert!(
                runs(&leaves) * 4 > leaves.len() && leaves.len() > 20,
                "{table}: {} leaves in {} runs",
                leaves.len(),
                runs(&leaves)
            );
        }
        let alone = leaves_of(&path, "ALONE");
        assert!(runs(&alone) * 20 < alone.len(), "{} runs", runs(&alone));

        let export = Export::open(&path).unwrap();
        let pages = export.pages.as_ref().unwrap();
        let table_pages = pages_by_table(&path);
        for table in ["KERNEL", "RUNTIME", "NVTX", "ALONE"] {
            let (reads, bytes) = pages.read_counts();
            let (direct, sqlite) = rows_of_table(&export, table).unwrap();
            let (direct, sqlite) = (direct.unwrap(), sqlite.unwrap());
            assert_eq!(direct.len(), sqlite.len(), "{table}");
            assert!(direct.iter().zip(&sqlite).all(|(d, s)| same_row(d, s)));
            let reads = pages.read_counts().0 - reads;
            let bytes = pages.read_counts().1 - bytes;
            // Every page of the table once, no other.
            let own = table_pages[table];
            assert_eq!(bytes, own * page_size, "{table}: {reads} reads");
            if table == "ALONE" {
                // Up to MAX_READ_BYTES (128 KiB) a read: a few reads per interior
                // page's list of leaves, not one per leaf.
                let most = (128 << 10) / page_size;
                assert!(
                    reads <= own / most + 2 * (own / 64 + 3),
                    "{table}: {reads} reads of {own} pages"
                );
            } else {
                // Consecutive leaves in one read: fewer reads than pages.
                let leaves = leaves_of(&path, table);
                assert!(
                    reads as usize <= runs(&leaves) + (own as usize - leaves.len()) + 1,
                    "{table}: {reads} reads, {} runs of leaves",
                    runs(&leaves)
                );
            }
        }
    }
}

/// The scans of the typed readers, through the pages and through SQLite: the
/// same rows, the same `TableScan` counts.
#[test]
fn filtered_scans_keep_the_rows_sqlite_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nvtx.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
             rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
             endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
             int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
             floatValue REAL, jsonTextId INTEGER, jsonText TEXT);",
    )
    .unwrap();
    for i in 0..5_000i64 {
        let kind: Value = match i % 7 {
            0 => Value::Integer(59),
            1 => Value::Integer(60),
            2 => Value::Real(59.0),
            3 => Value::Integer(34),
            4 => Value::Integer(75),
            5 => Value::Text("59".into()),
            _ => Value::Integer(33),
        };
        conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, ?3, 'r', 7)",
            rusqlite::params![i, i + 5, kind],
        )
        .unwrap();
    }
    drop(conn);
    let mut export = Export::open(&path).unwrap();
    let kinds = [59, 60, 70, 71];
    let events = |export: &Export| {
        let mut events = Vec::new();
        let scan = export
            .nvtx_events(&kinds, |e| {
                events.push((e.start, e.event_type));
                Ok(())
            })
            .unwrap();
        (scan, events)
    };
    let (scan_direct, direct) = events(&export);
    export.pages = None;
    let (scan_sqlite, sqlite) = events(&export);
    assert_eq!(scan_direct, scan_sqlite);
    assert_eq!(direct, sqlite);
    assert!(direct.len() > 2_000, "{}", direct.len());
}

/// The corpus directory (`NSYS2PRV_CORPUS`, else `../shared/corpus` beside
/// the checkout), when present: a directory with the corpus's `MANIFEST.tsv`
/// (an empty or wrong directory is no corpus, and fails under CI).
fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("NSYS2PRV_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    dir.join("MANIFEST.tsv").is_file().then_some(dir)
}

fn sqlite_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sqlite_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "sqlite") {
            out.push(path);
        }
    }
}

/// Every table of every bundled sample and corpus export (the real files of
/// every Nsight version), read from its pages and by SQLite: the same values.
#[test]
fn every_real_export_reads_from_pages_as_sqlite_reads_it() {
    let mut files = Vec::new();
    sqlite_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples"),
        &mut files,
    );
    match corpus() {
        Some(dir) => sqlite_files(&dir, &mut files),
        None if std::env::var_os("CI").is_some() => {
            panic!("the corpus (../shared/corpus or NSYS2PRV_CORPUS) is missing")
        }
        None => eprintln!("corpus missing: only the bundled samples are compared"),
    }
    let mut tables = 0;
    let mut read = 0;
    for path in &files {
        // Bad files (broken/) do not open; that is tested elsewhere.
        let Ok(export) = Export::open(path) else {
            continue;
        };
        if export.pages.is_some() {
            read += 1;
        }
        tables += compare_every_table(&export);
    }
    assert!(
        read >= 5,
        "{read} of {} files read from their pages",
        files.len()
    );
    assert!(tables >= 50, "{tables} tables compared");
}

/// Bytes changed at random in a file's table pages: every scan ends, with rows
/// or with an error, never a panic.
#[test]
fn damaged_pages_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(crafted(dir.path(), 1024, 2_000)).unwrap();
    let path = dir.path().join("damaged.sqlite");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut failed = 0;
    let page = 1024;
    for round in 0..120 {
        let mut bytes = good.clone();
        for _ in 0..1 + round % 8 {
            // Past the first pages (the schema), which SQLite itself reads;
            // every other round, in a page's header and cell pointers.
            let first = 8 * page;
            let mut at = first + next(bytes.len() - first);
            if round % 2 == 0 {
                at = at / page * page + next(16);
            }
            bytes[at] = next(256) as u8;
        }
        std::fs::write(&path, &bytes).unwrap();
        let Ok(export) = Export::open(&path) else {
            continue;
        };
        for table in ["T", "StringIds"] {
            if let Some((direct, _)) = rows_of_table(&export, table) {
                failed += usize::from(direct.is_err());
            }
        }
    }
    assert!(failed > 5, "only {failed} scans noticed the damage");
}
