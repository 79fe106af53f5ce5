use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use crate::meta::Metadata;
use crate::pages::{PageFile, ScanError, ScanOutcome};
use crate::schema::{ColumnInfo, Query};
use crate::statement::{text_of, RowView, Statement};
use crate::{ReadError, Schema};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Tables that only a complete export has; a failed export leaves just StringIds.
const EXPORT_MARKERS: &[&str] = &[
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
    "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_GPU",
    "ANALYSIS_DETAILS",
    "TARGET_INFO_SYSTEM_ENV",
];

/// An open export: connection, schema and metadata.
pub struct Export {
    path: PathBuf,
    pub(crate) conn: Connection,
    schema: Schema,
    meta: Metadata,
    decode_ahead: bool,
    /// The file's pages, for plain scans (see [`crate::pages`]); `None` when
    /// SQLite reads every table.
    pub(crate) pages: Option<PageFile>,
}

/// SQLite's page cache per connection, in KiB (its default, set explicitly: it is
/// part of the fixed memory beside `--memory-limit`, one or two connections per
/// report being translated). Scans read each page once; lookups in `StringIds`
/// keep the upper levels of its B-tree here.
const PAGE_CACHE_KIB: i64 = 2048;

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
    /// Opens read-only after checking that the file is a complete Nsight export.
    pub fn open(path: &Path) -> Result<Export, ReadError> {
        check_sqlite_header(path)?;
        let conn = open_read_only(path)?;
        let schema = read_schema(path, &conn)?;
        check_is_export(path, &schema)?;
        set_page_cache(path, &conn)?;
        // A file that may be changing (a journal or log beside it) is read
        // through SQLite only.
        let pages = if may_be_written(path) {
            None
        } else {
            PageFile::open(path)
        };
        let mut export = Export {
            path: path.to_path_buf(),
            conn,
            schema,
            meta: Metadata::default(),
            decode_ahead: false,
            pages,
        };
        export.meta = Metadata::read(&export)?;
        warn_about_newer_schema(path, &export.meta);
        Ok(export)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn meta(&self) -> &Metadata {
        &self.meta
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.schema.has_table(table)
    }

    /// Whether typed scans decode rows on a second thread (with a connection of its
    /// own) while the caller consumes them: worth it when a core would otherwise
    /// be idle, e.g. one large report on a multi-core machine.
    pub fn set_decode_ahead(&mut self, on: bool) {
        self.decode_ahead = on;
    }

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
        keep: &crate::schema::Keep,
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

    /// Rows of `table` in O(log n): exports only ever insert, so the largest rowid
    /// is the row count (0 when absent or empty; falls back to counting for tables
    /// without rowid).
    pub fn row_estimate(&self, table: &str) -> Result<u64, ReadError> {
        if !self.schema.has_table(table) {
            return Ok(0);
        }
        let sql = format!("SELECT MAX(rowid) FROM \"{table}\"");
        match self
            .conn
            .query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
        {
            Ok(n) => Ok(n.unwrap_or(0).max(0) as u64),
            Err(_) => self.count(table),
        }
    }

    /// The tables that hold recordings and have rows, sorted: every table but the
    /// `ENUM_*`, `TARGET_INFO_*` and `META_DATA_*` ones (`EXPORT_META_DATA` before
    /// 3.4) and SQLite's own. In a
    /// default (lazy) export nearly every such table has rows; one exported with
    /// `--lazy=false` has them all, most empty.
    pub fn tables_with_rows(&self) -> Result<Vec<String>, ReadError> {
        let mut found = Vec::new();
        for table in self.schema.table_names() {
            let described = ["ENUM_", "TARGET_INFO_", "META_DATA_", "sqlite_"]
                .iter()
                .any(|prefix| table.starts_with(prefix))
                || table == "EXPORT_META_DATA";
            if !described && self.row_estimate(table)? > 0 {
                found.push(table.to_string());
            }
        }
        found.sort();
        Ok(found)
    }

    /// Number of rows of `table` (0 when absent).
    pub fn count(&self, table: &str) -> Result<u64, ReadError> {
        if !self.schema.has_table(table) {
            return Ok(0);
        }
        self.conn
            .query_row(&format!("SELECT COUNT(*) FROM \"{table}\""), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| sqlite_error(&self.path, Some(table), e))
    }

    /// The string with this `StringIds` id (lossy UTF-8), if any.
    pub fn string(&self, id: i64) -> Result<Option<String>, ReadError> {
        if !self.schema.has_table("StringIds") {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM StringIds WHERE id = ?1")
            .map_err(|e| sqlite_error(&self.path, Some("StringIds"), e))?;
        let mut rows = stmt
            .query([id])
            .map_err(|e| sqlite_error(&self.path, Some("StringIds"), e))?;
        match rows
            .next()
            .map_err(|e| sqlite_error(&self.path, Some("StringIds"), e))?
        {
            Some(row) => Ok(row.get_ref(0).ok().and_then(text_of)),
            None => Ok(None),
        }
    }
}

/// Runs `query` and hands each row to `on_row` until it returns `false`; returns
/// the rows read. A plain scan of a table reads its rows from `pages` when it
/// can (the same rows, see [`crate::pages`]), other queries go to SQLite.
/// Errors name the table and the row.
fn for_each_row(
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

/// Opens read-only. An export no one is writing is opened `immutable`: SQLite then
/// takes no lock and checks no journal on every statement (a system call or two
/// per statement, which one-row lookups and small reports feel). A file with a
/// write-ahead log or a journal beside it may be changing, and is opened plainly.
fn open_read_only(path: &Path) -> Result<Connection, ReadError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = if may_be_written(path) {
        Connection::open_with_flags(path, flags)
    } else {
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
    };
    opened.map_err(|e| sqlite_error(path, None, e))
}

/// Sizes the connection's page cache (after the schema is read: the pragma
/// reads it, and a file that is no database is reported by `read_schema`).
fn set_page_cache(path: &Path, conn: &Connection) -> Result<(), ReadError> {
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
        .map_err(|e| sqlite_error(path, None, e))
}

fn may_be_written(path: &Path) -> bool {
    ["-wal", "-journal"].iter().any(|suffix| {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        Path::new(&beside).exists()
    })
}

/// `file:` URI of `path` with `immutable=1`; every byte but unreserved ones and
/// `/` percent-encoded (SQLite decodes them; `?`, `#` and `%` would be syntax).
fn immutable_uri(path: &Path) -> String {
    use std::fmt::Write;
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    #[cfg(not(unix))]
    let lossy = path.to_string_lossy();
    #[cfg(not(unix))]
    let bytes = lossy.as_bytes();
    // An empty authority before an absolute path, so `//x` stays a path.
    let mut uri = String::from(if path.is_absolute() {
        "file://"
    } else {
        "file:"
    });
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Warns (once per file and process) that the export is newer than the reader.
fn warn_about_newer_schema(path: &Path, meta: &Metadata) {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let Some(version) = meta.newer_schema() else {
        return;
    };
    let first = WARNED
        .lock()
        .map_or(true, |mut w| w.insert(path.to_path_buf()));
    if first {
        let (major, minor) = crate::meta::NEWEST_KNOWN_SCHEMA;
        let product = meta
            .product_version
            .as_deref()
            .map(|p| format!(" (nsys {p})"))
            .unwrap_or_default();
        tracing::warn!(
            "{}: export schema {version}{product} is newer than the newest known ({major}.{minor}, nsys 2026.2): translating the tables and columns recognised; update nsys2prv-rs if events are missing",
            path.display()
        );
    }
}

pub(crate) fn sqlite_error(path: &Path, table: Option<&str>, cause: rusqlite::Error) -> ReadError {
    ReadError::Sqlite {
        path: path.to_path_buf(),
        table: table.map(str::to_string),
        row: None,
        cause: Box::new(cause),
    }
}

fn check_sqlite_header(path: &Path) -> Result<(), ReadError> {
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing(path.to_path_buf()),
        _ => ReadError::Io {
            path: path.to_path_buf(),
            cause: e,
        },
    })?;
    let mut head = [0u8; 100];
    let io_error = |e| ReadError::Io {
        path: path.to_path_buf(),
        cause: e,
    };
    let n = read_up_to(&mut file, &mut head).map_err(io_error)?;
    let head = &head[..n];
    if head.starts_with(SQLITE_MAGIC) {
        let size = file.metadata().map_err(io_error)?.len();
        return check_complete(path, head, size);
    }
    if n >= 16 && head[..16].iter().all(|&b| b == 0) {
        return Err(ReadError::ZeroedHeader(path.to_path_buf()));
    }
    let what = if n == 0 {
        "the file is empty".to_string()
    } else if head.starts_with(b"version https://git-lfs") {
        "it is a git-lfs pointer; fetch the real file with `git lfs pull`".to_string()
    } else if n < 16 {
        format!("only {n} bytes long")
    } else {
        "wrong magic bytes".to_string()
    };
    Err(ReadError::NotSqlite {
        path: path.to_path_buf(),
        what,
    })
}

/// A file shorter than its header says was cut short (an export or a copy that was
/// interrupted). SQLite itself reads the missing pages as zeros and reports either a
/// malformed database or, worse, nothing, depending on which pages are gone.
fn check_complete(path: &Path, head: &[u8], size: u64) -> Result<(), ReadError> {
    const HEADER: usize = 100;
    let truncated = |expected: u64| ReadError::Truncated {
        path: path.to_path_buf(),
        size,
        expected,
    };
    if head.len() < HEADER {
        return Err(truncated(HEADER as u64));
    }
    let be32 = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        p => u64::from(p),
    };
    let pages = u64::from(be32(28));
    // The page count is valid only when written by the same change as the file
    // change counter (SQLite 3.7.0+); a WAL file may hold pages not yet in the file.
    let count_valid = pages > 0 && be32(24) == be32(92);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let expected = pages * page_size;
    if count_valid && size < expected && !Path::new(&wal).exists() {
        return Err(truncated(expected));
    }
    Ok(())
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            k => filled += k,
        }
    }
    Ok(filled)
}

/// Tables and views with their columns (name, declared type).
fn read_schema(path: &Path, conn: &Connection) -> Result<Schema, ReadError> {
    let mut schema = Schema::default();
    let tables: Vec<(String, String, u32, String)> = conn
        .prepare(
            "SELECT name, type, rootpage, sql FROM sqlite_master WHERE type IN ('table', 'view')",
        )
        .and_then(|mut s| {
            s.query_map([], |r| {
                let root: Option<i64> = r.get(2)?;
                let sql: Option<String> = r.get(3)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    root.and_then(|p| u32::try_from(p).ok()).unwrap_or(0),
                    sql.unwrap_or_default(),
                ))
            })?
            .collect::<Result<_, _>>()
        })
        .map_err(|e| sqlite_error(path, Some("sqlite_master"), e))?;
    for (table, kind, root, sql) in tables {
        let columns: Vec<ColumnInfo> = conn
            .prepare(&format!("PRAGMA table_xinfo(\"{table}\")"))
            .and_then(|mut s| {
                // A column without a declared type has '' (or NULL).
                s.query_map([], |r| {
                    let declared: Option<String> = r.get(2)?;
                    let default: rusqlite::types::ValueRef = r.get_ref(4)?;
                    Ok(ColumnInfo {
                        name: r.get(1)?,
                        declared: declared.unwrap_or_default(),
                        has_default: default != rusqlite::types::ValueRef::Null,
                        pk: r.get::<_, Option<u32>>(5)?.unwrap_or(0),
                        hidden: r.get::<_, Option<i64>>(6)?.unwrap_or(0) != 0,
                    })
                })?
                .collect::<Result<_, _>>()
            })
            .map_err(|e| sqlite_error(path, Some(&table), e))?;
        if kind == "table" {
            schema.insert_stored(&table, root, &sql, &columns);
        }
        let visible = columns
            .into_iter()
            .filter(|c| !c.hidden)
            .map(|c| (c.name, c.declared))
            .collect();
        schema.insert(table, visible);
    }
    Ok(schema)
}

fn check_is_export(path: &Path, schema: &Schema) -> Result<(), ReadError> {
    if EXPORT_MARKERS.iter().any(|t| schema.has_table(t)) {
        return Ok(());
    }
    let err = if schema.has_table("StringIds") {
        ReadError::Incomplete {
            path: path.to_path_buf(),
            what: "it has StringIds but no metadata or target-info tables".into(),
        }
    } else {
        let mut names: Vec<&str> = schema.table_names().collect();
        names.sort_unstable();
        names.truncate(5);
        let what = if names.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables: {}", names.join(", "))
        };
        ReadError::NotNsys {
            path: path.to_path_buf(),
            what,
        }
    };
    Err(err)
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
mod tests {
    use super::*;
    use crate::cuda::RUNTIME;
    use nsys_synth::{write_export, SchemaVersion, SynthProcess, SynthSpec};

    /// A generated export with a few thousand API calls (several decode batches),
    /// some of them with a start that is not a number (skipped rows).
    fn export_with_nulls(name: &str) -> (PathBuf, Export) {
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

    fn calls(export: &Export) -> (TableScan, Vec<String>) {
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
    fn exports_open_immutable_whatever_their_path_holds() {
        let (dir, export) = export_with_nulls("uri");
        let want = calls(&export);
        // Bytes that are URI syntax, a space, a non-UTF-8 byte, a doubled slash.
        let odd = {
            use std::os::unix::ffi::OsStrExt;
            dir.join(std::ffi::OsStr::from_bytes(b"a?b#c%20d e\xff.sqlite"))
        };
        std::fs::copy(export.path(), &odd).unwrap();
        let mut doubled = std::ffi::OsString::from("/");
        doubled.push(&odd);
        let doubled = PathBuf::from(doubled);
        for path in [odd.clone(), doubled] {
            let opened = Export::open(&path).unwrap();
            assert_eq!(calls(&opened), want, "{}", path.display());
        }
        let uri = immutable_uri(&odd);
        assert!(
            uri.starts_with("file:///") && uri.ends_with("?immutable=1"),
            "{uri}"
        );
        assert!(uri.contains("a%3Fb%23c%2520d%20e%FF.sqlite"), "{uri}");
        // Beside a journal, the file may be changing: opened plainly, still read.
        let mut journal = odd.as_os_str().to_owned();
        journal.push("-journal");
        std::fs::write(&journal, b"").unwrap();
        assert!(may_be_written(&odd));
        assert_eq!(calls(&Export::open(&odd).unwrap()), want);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_page_cache_has_the_size_it_is_counted_at() {
        let (dir, export) = export_with_nulls("cache");
        let kib: i64 = export
            .conn
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .unwrap();
        assert_eq!(kib, -PAGE_CACHE_KIB);
        std::fs::remove_dir_all(dir).unwrap();
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
