//! Table scans: typed scans (rows decoded into values, on the calling thread or
//! on a second one ahead of the consumer) and plain ones, each read from the
//! file's pages when the query is a plain scan of a table stored in the usual
//! way, through SQLite otherwise.

use std::path::Path;

use rusqlite::Connection;

use crate::connection::{open_read_only, set_page_cache};
use crate::error::sqlite_error;
use crate::pages::{PageFile, ScanError, ScanOutcome};
use crate::query::{Keep, Query};
use crate::statement::{RowView, Statement};
use crate::{Export, ReadError};

/// Rows decoded per batch handed from the decoding thread to the consumer.
const DECODE_BATCH: usize = 4096;
/// Batches decoded ahead of the consumer at most.
const BATCHES_AHEAD: usize = 4;

/// Rows a decoding thread hands over, with what it read to get them.
struct DecodedBatch<T> {
    items: Vec<T>,
    scan: TableScan,
}

/// Rows read and rows skipped (NULL where a value is required) by one table scan.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableScan {
    pub rows: u64,
    pub skipped: u64,
}

impl TableScan {
    /// Rows that decoded (the reader counts a skipped row among the rows read,
    /// so this never goes below zero).
    pub fn kept(&self) -> u64 {
        self.rows.saturating_sub(self.skipped)
    }

    pub fn add(&mut self, other: TableScan) {
        self.rows += other.rows;
        self.skipped += other.skipped;
    }

    /// Counts a row read, as skipped too when it did not decode.
    fn count<T>(&mut self, decoded: Option<T>) -> Option<T> {
        self.rows += 1;
        if decoded.is_none() {
            self.skipped += 1;
        }
        decoded
    }
}

impl Export {
    /// Streams the rows of `table` matching `condition` through `decode`, then the
    /// decoded values in table order through `f`; rows `decode` rejects (NULL where a
    /// value is required) are counted as skipped, here and nowhere else. The first
    /// error of `f` ends the scan and is returned. With [`Export::set_decode_ahead`],
    /// decoding runs on its own thread.
    pub(crate) fn scan_rows<T, D, F>(
        &self,
        table: &str,
        columns: &[&str],
        condition: &str,
        decode: D,
        f: F,
    ) -> Result<TableScan, ReadError>
    where
        T: Send,
        D: Fn(&RowView) -> Option<T> + Sync,
        F: FnMut(&T) -> Result<(), ReadError>,
    {
        if !self.schema.has_table(table) {
            return Ok(TableScan::default());
        }
        let query = self.schema.query(table, columns, condition);
        self.scan_query(table, &query, decode, f)
    }

    /// [`Export::scan_rows`] of the rows `keep` keeps.
    pub(crate) fn scan_rows_keeping<T, D, F>(
        &self,
        table: &str,
        columns: &[&str],
        keep: &Keep,
        decode: D,
        f: F,
    ) -> Result<TableScan, ReadError>
    where
        T: Send,
        D: Fn(&RowView) -> Option<T> + Sync,
        F: FnMut(&T) -> Result<(), ReadError>,
    {
        if !self.schema.has_table(table) {
            return Ok(TableScan::default());
        }
        let query = self.schema.query_keeping(table, columns, keep);
        self.scan_query(table, &query, decode, f)
    }

    /// [`Export::scan_rows`] of any query (`table` names it in errors).
    pub(crate) fn scan_query<T, D, F>(
        &self,
        table: &str,
        sql: &Query,
        decode: D,
        mut f: F,
    ) -> Result<TableScan, ReadError>
    where
        T: Send,
        D: Fn(&RowView) -> Option<T> + Sync,
        F: FnMut(&T) -> Result<(), ReadError>,
    {
        if self.decode_ahead {
            return self.scan_rows_ahead(table, sql, decode, f);
        }
        self.scan_rows_here(table, sql, &decode, &mut f)
    }

    /// [`Export::scan_rows`] decoding on the calling thread.
    fn scan_rows_here<T, D, F>(
        &self,
        table: &str,
        sql: &Query,
        decode: &D,
        f: &mut F,
    ) -> Result<TableScan, ReadError>
    where
        D: Fn(&RowView) -> Option<T>,
        F: FnMut(&T) -> Result<(), ReadError>,
    {
        let mut scan = TableScan::default();
        let pages = self.pages.as_ref();
        for_each_row(&self.path, &self.conn, pages, table, sql, |row| {
            if let Some(item) = scan.count(decode(row)) {
                f(&item)?;
            }
            Ok(true)
        })?;
        Ok(scan)
    }

    /// [`Export::scan_rows`] with decoding on a scoped thread that reads through a
    /// second read-only connection and hands batches over a bounded channel. When
    /// no thread can be started (a cgroup's process limit), decodes here instead.
    fn scan_rows_ahead<T, D, F>(
        &self,
        table: &str,
        sql: &Query,
        decode: D,
        mut f: F,
    ) -> Result<TableScan, ReadError>
    where
        T: Send,
        D: Fn(&RowView) -> Option<T> + Sync,
        F: FnMut(&T) -> Result<(), ReadError>,
    {
        use std::sync::mpsc::{channel, sync_channel};
        let (full_tx, full_rx) = sync_channel::<Result<DecodedBatch<T>, ReadError>>(BATCHES_AHEAD);
        let (empty_tx, empty_rx) = channel::<Vec<T>>();
        let path = self.path.as_path();
        let pages = self.pages.as_ref();
        let decode = &decode;
        std::thread::scope(|s| {
            let started = std::thread::Builder::new()
                .name("decode".into())
                .spawn_scoped(s, move || {
                    let decoded =
                        decode_batches(path, pages, table, sql, decode, &full_tx, &empty_rx);
                    if let Err(e) = decoded {
                        // The consumer may be gone already; nothing else to tell.
                        let _ = full_tx.send(Err(e));
                    }
                });
            if started.is_err() {
                return self.scan_rows_here(table, sql, decode, &mut f);
            }
            let mut scan = TableScan::default();
            for batch in full_rx {
                let mut batch = batch?;
                scan.add(batch.scan);
                // On an error the receiver goes, and the decoding thread stops.
                batch.items.iter().try_for_each(&mut f)?;
                batch.items.clear();
                let _ = empty_tx.send(batch.items);
            }
            Ok(scan)
        })
    }

    /// Streams `columns` of `table` (missing columns read as NULL) through `f`.
    /// Nothing happens when the table does not exist.
    pub fn scan<F>(&self, table: &str, columns: &[&str], f: F) -> Result<u64, ReadError>
    where
        F: FnMut(&RowView) -> Result<(), ReadError>,
    {
        self.scan_where(table, columns, "1", f)
    }

    /// Like [`Export::scan`], for the rows matching an SQL condition on columns the
    /// table is known to have.
    pub fn scan_where<F>(
        &self,
        table: &str,
        columns: &[&str],
        condition: &str,
        mut f: F,
    ) -> Result<u64, ReadError>
    where
        F: FnMut(&RowView) -> Result<(), ReadError>,
    {
        if !self.schema.has_table(table) {
            return Ok(0);
        }
        let query = self.schema.query(table, columns, condition);
        let pages = self.pages.as_ref();
        for_each_row(&self.path, &self.conn, pages, table, &query, |row| {
            f(row).map(|()| true)
        })
    }
}

/// Runs `query` and hands each row to `on_row` until it returns `false`; returns
/// the rows read. A plain scan of a table reads its rows from `pages` when it
/// can (the same rows, see [`crate::pages`]), other queries go to SQLite.
/// Errors name the table and the row.
pub(crate) fn for_each_row(
    path: &Path,
    conn: &Connection,
    pages: Option<&PageFile>,
    table: &str,
    query: &Query,
    mut on_row: impl FnMut(&RowView) -> Result<bool, ReadError>,
) -> Result<u64, ReadError> {
    if let (Some(pages), Some(direct)) = (pages, &query.direct) {
        let mut n: u64 = 0;
        let scanned = pages.scan(direct, |row| {
            n += 1;
            on_row(&RowView::of_record(row, query.checked_times))
        });
        return match scanned {
            Ok(rows) => Ok(rows),
            Err(ScanOutcome::Stopped(e)) => Err(e),
            Err(ScanOutcome::Failed(e)) => Err(damaged_page(path, table, n + 1, e)),
        };
    }
    let mut rows = Statement::prepare(conn, &query.sql, query.checked_times)
        .map_err(|e| sqlite_error(path, Some(table), e))?;
    let mut n: u64 = 0;
    loop {
        let row = rows.next().map_err(|e| ReadError::Sqlite {
            path: path.to_path_buf(),
            table: Some(table.to_string()),
            row: Some(n + 1),
            cause: Box::new(e),
        })?;
        let Some(row) = row else { break };
        n += 1;
        if !on_row(&row)? {
            break;
        }
    }
    Ok(n)
}

/// The error of a scan that met a damaged page: SQLite's for a damaged file
/// (so that it reads as SQLite's own would, with the same advice), saying what
/// is wrong.
fn damaged_page(path: &Path, table: &str, row: u64, e: ScanError) -> ReadError {
    match e {
        ScanError::Io(cause) => ReadError::Io {
            path: path.to_path_buf(),
            cause,
        },
        ScanError::Damaged(what) => ReadError::Sqlite {
            path: path.to_path_buf(),
            table: Some(table.to_string()),
            row: Some(row),
            cause: Box::new(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some(format!("database disk image is malformed: {what}")),
            )),
        },
    }
}

fn decode_batches<T, D>(
    path: &Path,
    pages: Option<&PageFile>,
    table: &str,
    sql: &Query,
    decode: &D,
    full: &std::sync::mpsc::SyncSender<Result<DecodedBatch<T>, ReadError>>,
    empty: &std::sync::mpsc::Receiver<Vec<T>>,
) -> Result<(), ReadError>
where
    D: Fn(&RowView) -> Option<T>,
{
    let conn = open_read_only(path)?;
    set_page_cache(path, &conn)?;
    let fresh = || Vec::with_capacity(DECODE_BATCH);
    let mut batch = DecodedBatch {
        items: fresh(),
        scan: TableScan::default(),
    };
    let mut consumer_gone = false;
    for_each_row(path, &conn, pages, table, sql, |row| {
        if let Some(item) = batch.scan.count(decode(row)) {
            batch.items.push(item);
        }
        if batch.items.len() < DECODE_BATCH {
            return Ok(true);
        }
        let next = DecodedBatch {
            items: empty.try_recv().unwrap_or_else(|_| fresh()),
            scan: TableScan::default(),
        };
        consumer_gone = full.send(Ok(std::mem::replace(&mut batch, next))).is_err();
        Ok(!consumer_gone)
    })?;
    if !consumer_gone && (batch.scan.rows > 0) {
        let _ = full.send(Ok(batch));
    }
    Ok(())
}

/// Rows of `table` (every column), through the pages and through SQLite, when
/// the table is read from its pages.
#[cfg(test)]
#[allow(clippy::type_complexity)]
pub(crate) fn rows_of_table(
    export: &Export,
    table: &str,
) -> Option<(
    Result<Vec<Vec<rusqlite::types::Value>>, ReadError>,
    Result<Vec<Vec<rusqlite::types::Value>>, ReadError>,
)> {
    let columns: Vec<&str> = export
        .schema
        .columns(table)
        .iter()
        .map(String::as_str)
        .collect();
    let query = export.schema.query(table, &columns, "1");
    query.direct.as_ref()?;
    let pages = export.pages.as_ref()?;
    let read = |pages: Option<&PageFile>| {
        let mut rows = Vec::new();
        for_each_row(&export.path, &export.conn, pages, table, &query, |row| {
            let values = (0..columns.len())
                .map(|i| crate::pages_tests::owned(row.value_ref(i)))
                .collect();
            rows.push(values);
            Ok(true)
        })
        .map(|_| rows)
    };
    Some((read(Some(pages)), read(None)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cuda::RUNTIME;
    use nsys_synth::{write_export, SchemaVersion, SynthProcess, SynthSpec};
    use std::path::PathBuf;

    /// A generated export with a few thousand API calls (several decode batches),
    /// some of them with a start that is not a number (skipped rows).
    pub(crate) fn export_with_nulls(name: &str) -> (PathBuf, Export) {
        let dir = std::env::temp_dir().join(format!("nsys-reader-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.sqlite");
        let spec = SynthSpec {
            processes: vec![SynthProcess {
                kernels: 6_000,
                extra_api_calls: 4_000,
                ..SynthSpec::small(SchemaVersion::V3_24).processes[0].clone()
            }],
            ..SynthSpec::small(SchemaVersion::V3_24)
        };
        write_export(&spec, &path).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            &format!("UPDATE {RUNTIME} SET start = 'not a time' WHERE rowid % 97 = 0"),
            [],
        )
        .unwrap();
        drop(conn);
        let export = Export::open(&path).unwrap();
        (dir, export)
    }

    pub(crate) fn calls(export: &Export) -> (TableScan, Vec<String>) {
        let mut seen = Vec::new();
        let scan = export
            .api_calls(|c| {
                seen.push(format!("{c:?}"));
                Ok(())
            })
            .unwrap();
        (scan, seen)
    }

    #[test]
    fn decoding_ahead_reads_the_same_rows_in_the_same_order() {
        let (dir, mut export) = export_with_nulls("ahead");
        let (plain_scan, plain) = calls(&export);
        export.set_decode_ahead(true);
        let (ahead_scan, ahead) = calls(&export);
        assert!(plain.len() > 2 * DECODE_BATCH, "{} rows", plain.len());
        assert!(plain_scan.skipped > 0);
        assert_eq!(plain_scan, ahead_scan);
        assert_eq!(plain, ahead);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn decoding_ahead_reports_errors_of_preparing_and_of_stepping() {
        let (dir, mut export) = export_with_nulls("ahead-errors");
        export.set_decode_ahead(true);
        let decode = |row: &RowView| row.int(0);
        let bad_sql = export.scan_rows(RUNTIME, &["start"], "no_such(", decode, |_| Ok(()));
        assert!(
            matches!(bad_sql, Err(ReadError::Sqlite { .. })),
            "{bad_sql:?}"
        );
        // Fails when evaluated (malformed JSON), some batches into the scan.
        let late = format!(
            "rowid < {} OR json_extract('not json ' || rowid, '$') IS NULL",
            2 * DECODE_BATCH + 5
        );
        let mut consumed = 0;
        let stepping = export.scan_rows(RUNTIME, &["start"], &late, decode, |_| {
            consumed += 1;
            Ok(())
        });
        assert!(
            matches!(stepping, Err(ReadError::Sqlite { .. })),
            "{stepping:?}"
        );
        assert!(consumed <= 2 * DECODE_BATCH + 5, "{consumed} rows");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_callbacks_first_error_ends_the_scan() {
        let (dir, mut export) = export_with_nulls("callback-error");
        for ahead in [false, true] {
            export.set_decode_ahead(ahead);
            let mut consumed = 0;
            let result = export.api_calls(|_| {
                consumed += 1;
                if consumed == DECODE_BATCH + 3 {
                    return Err(ReadError::Missing(PathBuf::from("stop here")));
                }
                Ok(())
            });
            assert!(
                matches!(&result, Err(ReadError::Missing(p)) if p == Path::new("stop here")),
                "{result:?}"
            );
            assert_eq!(consumed, DECODE_BATCH + 3, "decode ahead: {ahead}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
