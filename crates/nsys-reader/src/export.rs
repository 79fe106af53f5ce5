//! An open export: the file checked, its connection, schema and metadata, and
//! the few one-row queries (counts, strings). Table scans are in [`crate::scan`].

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::checks::{check_is_export, check_sqlite_header, warn_about_newer_schema};
use crate::connection::{may_be_written, open_read_only, set_page_cache};
use crate::error::sqlite_error;
use crate::meta::Metadata;
use crate::pages::PageFile;
use crate::statement::text_of;
use crate::{ReadError, Schema};

/// An open export: connection, schema and metadata.
pub struct Export {
    pub(crate) path: PathBuf,
    pub(crate) conn: Connection,
    pub(crate) schema: Schema,
    meta: Metadata,
    /// Typed scans decode on a second thread (see [`Export::set_decode_ahead`]).
    pub(crate) decode_ahead: bool,
    /// The file's pages, for plain scans (see [`crate::pages`]); `None` when
    /// SQLite reads every table.
    pub(crate) pages: Option<PageFile>,
}

impl Export {
    /// Opens read-only after checking that the file is a complete Nsight export.
    pub fn open(path: &Path) -> Result<Export, ReadError> {
        check_sqlite_header(path)?;
        let conn = open_read_only(path)?;
        let schema = Schema::read(path, &conn)?;
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
