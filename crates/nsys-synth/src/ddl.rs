//! Creating tables from the exporter's own DDL, and filling them through prepared statements.
//!
//! Columns are taken from the table as created (`PRAGMA table_info`), so each version gets exactly
//! the columns, order and types its exporter writes, and a row type only says how to fill a column.

use anyhow::{anyhow, Context, Result};
use rusqlite::types::Value;
use rusqlite::{Connection, Params, Statement};

use crate::SchemaVersion;

/// The verbatim `CREATE TABLE` statement of `table` in `version`, if that version has the table.
pub(crate) fn create_statement(version: SchemaVersion, table: &str) -> Option<&'static str> {
    let head = format!("CREATE TABLE {table} (");
    [version.ddl(), version.supplementary_ddl()]
        .into_iter()
        .flat_map(|ddl| ddl.split("\n;\n"))
        .find_map(|chunk| chunk.find(&head).map(|at| &chunk[at..]))
}

pub(crate) fn create_table(conn: &Connection, version: SchemaVersion, table: &str) -> Result<()> {
    let sql = create_statement(version, table)
        .ok_or_else(|| anyhow!("schema {version} has no table {table}"))?;
    conn.execute_batch(sql)
        .with_context(|| format!("creating {table}"))
}

pub(crate) fn column_names(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let mut statement = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    let names = statement.query_map([table], |row| row.get(0))?;
    Ok(names.collect::<rusqlite::Result<_>>()?)
}

pub(crate) fn insert_sql(table: &str, columns: usize) -> String {
    let placeholders = vec!["?"; columns].join(", ");
    format!("INSERT INTO {table} VALUES ({placeholders})")
}

/// Creates `table` and inserts `rows`, each a complete row in the version's column order.
/// Meant for the small descriptive tables whose columns are the same in every version we write.
pub(crate) fn create_and_fill<P: Params>(
    conn: &Connection,
    version: SchemaVersion,
    table: &str,
    rows: impl IntoIterator<Item = P>,
) -> Result<()> {
    create_table(conn, version, table)?;
    let mut statement = conn.prepare(&insert_sql(table, column_names(conn, table)?.len()))?;
    for row in rows {
        statement
            .execute(row)
            .with_context(|| format!("inserting into {table}"))?;
    }
    Ok(())
}

/// Reads the value of one column from a row; `None` is written as NULL.
pub(crate) type Getter<R> = fn(&R) -> Option<i64>;

/// Inserts rows of type `R` into one table, binding each column through its getter.
pub(crate) struct TableWriter<'c, R> {
    statement: Statement<'c>,
    getters: Vec<Getter<R>>,
    rows: u64,
}

impl<'c, R> TableWriter<'c, R> {
    /// Creates `table` as `version` defines it and prepares an INSERT filling each of its
    /// columns from `columns`, which must cover every column that version has.
    pub(crate) fn create<'n>(
        conn: &'c Connection,
        version: SchemaVersion,
        table: &str,
        columns: impl IntoIterator<Item = (&'n str, Getter<R>)>,
    ) -> Result<Self> {
        create_table(conn, version, table)?;
        let known: Vec<(&str, Getter<R>)> = columns.into_iter().collect();
        let getters = column_names(conn, table)?
            .iter()
            .map(|name| {
                known
                    .iter()
                    .find(|(column, _)| column == name)
                    .map(|&(_, getter)| getter)
                    .ok_or_else(|| {
                        anyhow!("no value for column {table}.{name} of schema {version}")
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let statement = conn.prepare(&insert_sql(table, getters.len()))?;
        Ok(Self {
            statement,
            getters,
            rows: 0,
        })
    }

    pub(crate) fn insert(&mut self, row: &R) -> Result<()> {
        for (index, getter) in self.getters.iter().enumerate() {
            self.statement.raw_bind_parameter(index + 1, getter(row))?;
        }
        self.statement.raw_execute()?;
        self.rows += 1;
        Ok(())
    }

    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }
}

/// A row as (column, value) pairs, for small tables with text columns. It may name columns other
/// versions have; the table takes those its version defines.
pub(crate) type NamedRow = Vec<(&'static str, Value)>;

/// Creates `table` and inserts `rows`, each of which must give a value (possibly NULL) for every
/// column the version's table has, so that no column is filled by accident.
pub(crate) fn create_and_fill_named(
    conn: &Connection,
    version: SchemaVersion,
    table: &str,
    rows: &[NamedRow],
) -> Result<()> {
    create_table(conn, version, table)?;
    fill_named(conn, version, table, rows)
}

/// Like [`create_and_fill_named`], adding to the table when an earlier writer created it.
pub(crate) fn create_or_fill_named(
    conn: &Connection,
    version: SchemaVersion,
    table: &str,
    rows: &[NamedRow],
) -> Result<()> {
    if column_names(conn, table)?.is_empty() {
        create_table(conn, version, table)?;
    }
    fill_named(conn, version, table, rows)
}

fn fill_named(
    conn: &Connection,
    version: SchemaVersion,
    table: &str,
    rows: &[NamedRow],
) -> Result<()> {
    let columns = column_names(conn, table)?;
    let mut statement = conn.prepare(&insert_sql(table, columns.len()))?;
    for row in rows {
        for (index, column) in columns.iter().enumerate() {
            let value = row
                .iter()
                .find(|(name, _)| name == column)
                .map(|(_, value)| value)
                .ok_or_else(|| {
                    anyhow!("no value for column {table}.{column} of schema {version}")
                })?;
            statement.raw_bind_parameter(index + 1, value)?;
        }
        statement
            .raw_execute()
            .with_context(|| format!("inserting into {table}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::create_statement;
    use crate::SchemaVersion;

    #[test]
    fn every_version_has_the_core_cuda_tables() {
        for version in SchemaVersion::all() {
            for table in [
                "StringIds",
                "CUPTI_ACTIVITY_KIND_RUNTIME",
                "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_MEMCPY",
                "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
            ] {
                let sql = create_statement(version, table).expect(table);
                assert!(
                    sql.starts_with("CREATE TABLE") && sql.ends_with(')'),
                    "{sql}"
                );
            }
        }
    }

    #[test]
    fn mpi_goes_to_tables_or_to_nvtx_by_version() {
        for version in SchemaVersion::all() {
            let tables = version.has_mpi_tables();
            for table in [
                "MPI_RANKS",
                "MPI_P2P_EVENTS",
                "MPI_COLLECTIVES_EVENTS",
                "MPI_START_WAIT_EVENTS",
                "MPI_OTHER_EVENTS",
            ] {
                assert_eq!(
                    create_statement(version, table).is_some(),
                    tables,
                    "{version} {table}"
                );
            }
            // Every version can hold NVTX ranges (the MPI domain of old versions, the ranges of
            // training jobs in all).
            let nvtx = create_statement(version, "NVTX_EVENTS");
            assert!(nvtx.is_some_and(|sql| sql.ends_with(')')), "{version}");
            let communicators = create_statement(version, "MPI_COMMUNICATORS").is_some();
            assert_eq!(communicators, version == SchemaVersion::V3_24, "{version}");
        }
    }
}
