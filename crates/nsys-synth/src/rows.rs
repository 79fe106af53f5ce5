//! Rows of any export table by a small declaration, the table made from its schema: what a new
//! category's tests need of the generator before (or instead of) a simulation of its own.
//!
//! A table is created as the export's schema version creates it: the exporter's statement for
//! that version (`schema/`), else NVIDIA's reference for 3.24 (`schema/reference-3_24.sql`, a
//! copy of the project's `nsys-ddl-reference.sql`), so any table Nsight Systems exports exists,
//! with its columns, with no code here. Declared rows name the columns they fill; the others
//! are NULL, and a NOT NULL column left out is an error, so that no column is filled by
//! accident.

use std::path::Path;

use anyhow::{anyhow, bail, ensure, Context, Result};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use crate::ddl::{column_names, create_statement, insert_sql};
use crate::SchemaVersion;

/// NVIDIA's schema reference (export schema 3.24), for tables no sample of a version has.
const REFERENCE_DDL: &str = include_str!("../schema/reference-3_24.sql");

/// The value of one cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    /// The id of this string in `StringIds` (added when the export lacks it), as the
    /// exporter's `nameId`/`textId` columns hold names.
    StringId(String),
}

impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Cell::Int(v)
    }
}

impl From<f64> for Cell {
    fn from(v: f64) -> Self {
        Cell::Real(v)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Self {
        Cell::Text(v.to_owned())
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Null, Into::into)
    }
}

/// Rows of one table, by column name.
#[derive(Clone, Debug)]
pub struct TableRows {
    pub table: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl TableRows {
    /// No rows yet of `table`, filling `columns`.
    pub fn new(table: &str, columns: &[&str]) -> Self {
        TableRows {
            table: table.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// One more row: a cell per column, in the order of [`TableRows::new`].
    pub fn row<const N: usize>(mut self, cells: [Cell; N]) -> Self {
        self.rows.push(cells.into());
        self
    }
}

/// The `CREATE TABLE` statement of `table` in `version`: the exporter's (`schema/`), else
/// the reference's. `None` if neither has it.
pub fn table_statement(version: SchemaVersion, table: &str) -> Option<&'static str> {
    create_statement(version, table).or_else(|| reference_statement(table))
}

/// `table`'s statement in the reference: from `CREATE TABLE table (` at a line's start to the
/// line `);` (without the `;`). Columns of later versions are comments there.
fn reference_statement(table: &str) -> Option<&'static str> {
    let head = format!("\nCREATE TABLE {table} (");
    let start = REFERENCE_DDL.find(&head)? + 1;
    let end = start + REFERENCE_DDL[start..].find("\n);")? + 2;
    Some(&REFERENCE_DDL[start..end])
}

/// Adds `tables` to the export at `path`, written for `version`: each table is created as
/// that version has it unless the export has it already (an empty table when it has no rows),
/// then its rows are inserted. Returns the number of rows added.
pub fn add_rows(path: &Path, version: SchemaVersion, tables: &[TableRows]) -> Result<u64> {
    let mut conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    let tx = conn.transaction()?;
    let mut added = 0;
    for rows in tables {
        added += add_table(&tx, version, rows)
            .with_context(|| format!("{}: table {}", path.display(), rows.table))?;
    }
    tx.commit()?;
    Ok(added)
}

fn add_table(conn: &Connection, version: SchemaVersion, rows: &TableRows) -> Result<u64> {
    let table = rows.table.as_str();
    if column_names(conn, table)?.is_empty() {
        let sql = table_statement(version, table).ok_or_else(|| {
            anyhow!("no CREATE TABLE for it in schema {version} nor in NVIDIA's reference")
        })?;
        conn.execute_batch(sql)?;
    }
    // (name, NOT NULL) of every column, in the table's order.
    let mut info =
        conn.prepare("SELECT name, \"notnull\" FROM pragma_table_info(?1) ORDER BY cid")?;
    let columns: Vec<(String, bool)> = info
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for name in &rows.columns {
        ensure!(
            columns.iter().any(|(c, _)| c == name),
            "schema {version} has no column {name}"
        );
    }
    // For each of the table's columns, where its value is in a declared row.
    let mut sources = Vec::with_capacity(columns.len());
    for (name, not_null) in &columns {
        let at = rows.columns.iter().position(|c| c == name);
        if at.is_none() && *not_null && !rows.rows.is_empty() {
            bail!("column {name} is NOT NULL: the rows must give it");
        }
        sources.push(at);
    }
    let mut insert = conn.prepare(&insert_sql(table, columns.len()))?;
    for (index, row) in rows.rows.iter().enumerate() {
        ensure!(
            row.len() == rows.columns.len(),
            "row {index} has {} cells for {} columns",
            row.len(),
            rows.columns.len()
        );
        for (param, source) in sources.iter().enumerate() {
            let value = match source.map(|at| &row[at]) {
                None | Some(Cell::Null) => Value::Null,
                Some(Cell::Int(v)) => Value::Integer(*v),
                Some(Cell::Real(v)) => Value::Real(*v),
                Some(Cell::Text(v)) => Value::Text(v.clone()),
                Some(Cell::StringId(v)) => Value::Integer(string_id(conn, v)?),
            };
            insert.raw_bind_parameter(param + 1, value)?;
        }
        insert
            .raw_execute()
            .with_context(|| format!("inserting row {index}"))?;
    }
    Ok(rows.rows.len() as u64)
}

/// The id of `value` in the export's `StringIds`, added after the largest id when missing.
fn string_id(conn: &Connection, value: &str) -> Result<i64> {
    let found: Option<i64> = conn
        .query_row("SELECT id FROM StringIds WHERE value = ?1", [value], |r| {
            r.get(0)
        })
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    let id: i64 = conn.query_row("SELECT COALESCE(MAX(id), -1) + 1 FROM StringIds", [], |r| {
        r.get(0)
    })?;
    conn.execute(
        "INSERT INTO StringIds (id, value) VALUES (?1, ?2)",
        rusqlite::params![id, value],
    )?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_export, SynthSpec};

    fn export(dir: &Path, version: SchemaVersion) -> std::path::PathBuf {
        let path = dir.join("rows.sqlite");
        write_export(&SynthSpec::small(version), &path).unwrap();
        path
    }

    fn columns(path: &Path, table: &str) -> Vec<String> {
        column_names(&Connection::open(path).unwrap(), table).unwrap()
    }

    #[test]
    fn a_table_no_writer_knows_is_made_from_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = export(dir.path(), SchemaVersion::V3_24);
        let tid = (1_i64 << 48) | (24_601 << 24) | 24_601;
        let cublas = TableRows::new(
            "CUBLAS_EVENTS",
            &["start", "end", "eventClass", "globalTid", "nameId"],
        )
        .row([
            1000.into(),
            2000.into(),
            29.into(),
            tid.into(),
            Cell::StringId("cublasSgemm_v2".into()),
        ])
        .row([
            3000.into(),
            3500.into(),
            29.into(),
            tid.into(),
            Cell::StringId("cublasSgemm_v2".into()),
        ]);
        let empty = TableRows::new("CUDNN_EVENTS", &[]);
        assert_eq!(
            add_rows(&path, SchemaVersion::V3_24, &[cublas, empty]).unwrap(),
            2
        );
        assert_eq!(
            columns(&path, "CUBLAS_EVENTS"),
            ["start", "end", "eventClass", "globalTid", "nameId"]
        );
        assert_eq!(columns(&path, "CUDNN_EVENTS").len(), 5);
        let conn = Connection::open(&path).unwrap();
        let (rows, names): (i64, String) = conn
            .query_row(
                "SELECT COUNT(*), GROUP_CONCAT(DISTINCT s.value) FROM CUBLAS_EVENTS c \
                 JOIN StringIds s ON s.id = c.nameId",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rows, names.as_str()), (2, "cublasSgemm_v2"));
        let empty: i64 = conn
            .query_row("SELECT COUNT(*) FROM CUDNN_EVENTS", [], |r| r.get(0))
            .unwrap();
        assert_eq!(empty, 0);
    }

    #[test]
    fn the_version_s_own_statement_comes_first() {
        // Kernels of 3.0 have no greenContextId (added in 3.5); the reference's (3.24) do.
        let dir = tempfile::tempdir().unwrap();
        let kernels = |version| {
            let path = dir.path().join(format!("{version}.sqlite"));
            let rows = TableRows::new("CUPTI_ACTIVITY_KIND_KERNEL", &[]);
            add_rows(&path, version, &[rows]).unwrap();
            columns(&path, "CUPTI_ACTIVITY_KIND_KERNEL")
        };
        let old = kernels(SchemaVersion::V3_0);
        let new = kernels(SchemaVersion::V3_24);
        assert!(!old.iter().any(|c| c == "greenContextId"), "{old:?}");
        assert!(new.iter().any(|c| c == "greenContextId"), "{new:?}");
        assert!(reference_statement("CUPTI_ACTIVITY_KIND_KERNEL")
            .is_some_and(|s| s.contains("greenContextId") && s.ends_with(')')));
    }

    #[test]
    fn mistakes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = export(dir.path(), SchemaVersion::V3_24);
        let error = |rows: TableRows| {
            format!(
                "{:#}",
                add_rows(&path, SchemaVersion::V3_24, &[rows]).unwrap_err()
            )
        };
        let no_table = error(TableRows::new("NO_SUCH_TABLE", &[]));
        assert!(
            no_table.contains("table NO_SUCH_TABLE: no CREATE TABLE"),
            "{no_table}"
        );
        let no_column = error(TableRows::new("CUDNN_EVENTS", &["duration"]).row([1.into()]));
        assert!(no_column.contains("no column duration"), "{no_column}");
        let not_null = error(TableRows::new("CUDNN_EVENTS", &["start"]).row([1.into()]));
        assert!(not_null.contains("column end is NOT NULL"), "{not_null}");
        let short = TableRows::new("CUDNN_EVENTS", &["start", "end", "eventClass", "nameId"]);
        let short = TableRows {
            rows: vec![vec![1.into()]],
            ..short
        };
        let short = error(short);
        assert!(short.contains("row 0 has 1 cells for 4 columns"), "{short}");
        // Nothing of a failed call stays.
        assert!(columns(&path, "CUDNN_EVENTS").is_empty());
    }
}
