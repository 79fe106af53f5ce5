use std::collections::{HashMap, HashSet};

use std::path::Path;

use rusqlite::Connection;

use crate::error::sqlite_error;
use crate::query::{DirectScan, Field, Keep, Query};
use crate::ReadError;

/// Columns that hold event timestamps (ns).
const TIME_COLUMNS: &[&str] = &["start", "end", "timestamp"];
/// Largest plausible timestamp: 2^62 ns, the year 2116 for absolute (UTC) times.
pub(crate) const MAX_TIME_NS: i64 = 1 << 62;

/// Tables and their columns, as the file has them.
#[derive(Debug, Default, Clone)]
pub struct Schema {
    tables: HashMap<String, Vec<String>>,
    /// (table, column) of the time columns declared with numeric affinity (INTEGER,
    /// REAL, NUMERIC): SQLite stores numbers in them, never text that reads as one.
    numeric_times: HashSet<(String, String)>,
    /// How the tables that can be read from their pages store their columns.
    stored: HashMap<String, StoredTable>,
}

/// Where a table's rows are and how its columns are stored, for scans that
/// read its pages (see [`crate::pages`]).
#[derive(Debug, Clone)]
pub(crate) struct StoredTable {
    /// Root page of the table's B-tree.
    pub root: u32,
    /// By column name: how a scan reads the column.
    pub columns: HashMap<String, Field>,
}

/// A column as `PRAGMA table_xinfo` and `sqlite_master` describe it.
#[derive(Debug, Clone)]
pub(crate) struct ColumnInfo {
    pub name: String,
    pub declared: String,
    /// It has a default value (rows written before it was added read as that).
    pub has_default: bool,
    /// Its place in the primary key (0: not in it).
    pub pk: u32,
    /// A hidden or generated column (not stored in the record as the others).
    pub hidden: bool,
}

impl Schema {
    /// Tables and views with their columns (name, declared type).
    pub(crate) fn read(path: &Path, conn: &Connection) -> Result<Schema, ReadError> {
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

    /// A table with its columns: (name, declared type).
    pub(crate) fn insert(&mut self, table: String, columns: Vec<(String, String)>) {
        for (name, declared) in &columns {
            if TIME_COLUMNS.contains(&name.as_str()) && has_numeric_affinity(declared) {
                self.numeric_times.insert((table.clone(), name.clone()));
            }
        }
        let names = columns.into_iter().map(|(name, _)| name).collect();
        self.tables.insert(table, names);
    }

    /// A rowid table whose B-tree has root page `root` (`sql`: its `CREATE`
    /// statement), readable from its pages when its columns are all stored
    /// plainly: none hidden or generated, none with a default.
    pub(crate) fn insert_stored(
        &mut self,
        table: &str,
        root: u32,
        sql: &str,
        columns: &[ColumnInfo],
    ) {
        // Table options (`WITHOUT ROWID`, `STRICT`) follow the column list;
        // anything there that reads `WITHOUT` leaves the table to SQLite.
        let options = sql.rfind(')').map_or(sql, |end| &sql[end + 1..]);
        let without_rowid = options.to_ascii_uppercase().contains("WITHOUT");
        let plain = columns.iter().all(|c| !c.hidden && !c.has_default);
        if root == 0 || without_rowid || !plain {
            return;
        }
        // The one column of an `INTEGER PRIMARY KEY` is the rowid itself, and
        // stored as NULL in the record.
        let single_key = columns.iter().filter(|c| c.pk > 0).count() == 1;
        let fields = columns
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let field = if single_key && c.pk == 1 && c.declared.eq_ignore_ascii_case("INTEGER")
                {
                    Field::RowId
                } else {
                    Field::Column {
                        index,
                        real: has_real_affinity(&c.declared),
                    }
                };
                (c.name.clone(), field)
            })
            .collect();
        self.stored.insert(
            table.to_string(),
            StoredTable {
                root,
                columns: fields,
            },
        );
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables
            .get(table)
            .is_some_and(|cols| cols.iter().any(|c| c == column))
    }

    pub fn columns(&self, table: &str) -> &[String] {
        self.tables.get(table).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// `SELECT a, NULL, c FROM t`: missing columns read as NULL, so one row layout
    /// serves every schema version. Timestamps beyond ±2^62 ns (damaged values, which
    /// would overflow once put on the wall clock) read as NULL too, so their rows are
    /// skipped like rows without a time.
    pub fn select(&self, table: &str, columns: &[&str]) -> String {
        let list: Vec<String> = columns
            .iter()
            .map(|c| self.column(table, None, c))
            .collect();
        format!("SELECT {} FROM \"{table}\"", list.join(", "))
    }

    /// [`Schema::select`] `WHERE condition`, for a typed scan. Timestamps of
    /// columns with numeric affinity are selected as they are and checked by the
    /// reader ([`Query::checked_times`]): the same values come out as with
    /// SQLite's `CASE`, which reads and compares each of them twice per row.
    pub(crate) fn query(&self, table: &str, columns: &[&str], condition: &str) -> Query {
        self.query_sql(table, columns, condition, None)
    }

    /// [`Schema::query`] of the rows `keep` keeps: read from the file's pages
    /// too when the table can be, the rows tested here.
    pub(crate) fn query_keeping(&self, table: &str, columns: &[&str], keep: &Keep) -> Query {
        let condition = keep.condition(columns);
        self.query_sql(table, columns, &condition, Some(keep))
    }

    fn query_sql(
        &self,
        table: &str,
        columns: &[&str],
        condition: &str,
        keep: Option<&Keep>,
    ) -> Query {
        let mut checked_times = 0u64;
        // A timestamp of a column without numeric affinity (never an
        // export's): SQLite's `CASE ... BETWEEN` compares its text as text,
        // which the page reader does not repeat, so SQLite reads the table.
        let mut compared_as_text = false;
        let list: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let key = (table.to_string(), c.to_string());
                if i < 64 && self.numeric_times.contains(&key) {
                    checked_times |= 1 << i;
                    format!("\"{c}\"")
                } else {
                    compared_as_text |= TIME_COLUMNS.contains(c) && self.has_column(table, c);
                    self.column(table, None, c)
                }
            })
            .collect();
        let keep = match keep {
            Some(keep) => Some(keep.clone()),
            None => (condition == "1").then_some(Keep::All),
        };
        let direct = keep
            .filter(|_| !compared_as_text)
            .and_then(|keep| self.direct_scan(table, columns, keep));
        Query {
            sql: format!(
                "SELECT {} FROM \"{table}\" WHERE {condition}",
                list.join(", ")
            ),
            checked_times,
            direct,
        }
    }

    /// The tables read from their pages.
    #[cfg(test)]
    pub(crate) fn stored_tables(&self) -> Vec<&str> {
        self.stored.keys().map(String::as_str).collect()
    }

    /// How to read `columns` of `table` from its pages, if it can be.
    fn direct_scan(&self, table: &str, columns: &[&str], keep: Keep) -> Option<DirectScan> {
        let stored = self.stored.get(table)?;
        let fields = columns
            .iter()
            .map(|c| stored.columns.get(*c).copied().unwrap_or(Field::Null))
            .collect();
        Some(DirectScan {
            root: stored.root,
            fields,
            keep,
        })
    }

    /// How a [`Schema::select`] reads `column` of `table` (named `alias` in the
    /// query, if given): the column, NULL when the table lacks it, timestamps
    /// beyond ±2^62 ns as NULL.
    pub fn column(&self, table: &str, alias: Option<&str>, column: &str) -> String {
        let name = match alias {
            Some(a) => format!("{a}.\"{column}\""),
            None => format!("\"{column}\""),
        };
        if !self.has_column(table, column) {
            "NULL".to_string()
        } else if TIME_COLUMNS.contains(&column) {
            format!(
                "CASE WHEN {name} BETWEEN {min} AND {max} THEN {name} END",
                min = -MAX_TIME_NS,
                max = MAX_TIME_NS
            )
        } else {
            name
        }
    }
}

/// Whether a declared type gives REAL affinity (section 3.1 of "Datatypes In
/// SQLite"): SQLite stores integral values of such columns as integers and
/// reads them back as reals.
fn has_real_affinity(declared: &str) -> bool {
    let t = declared.to_ascii_uppercase();
    let has = |word: &str| t.contains(word);
    // The rules go in order: INT, then text, then blob (none names REAL).
    let earlier = ["INT", "CHAR", "CLOB", "TEXT", "BLOB"];
    !earlier.iter().any(|w| has(w)) && (has("REAL") || has("FLOA") || has("DOUB"))
}

/// SQLite's rule for the affinity of a declared column type (section 3.1 of
/// "Datatypes In SQLite"): numeric unless it names text or a blob, or is empty.
fn has_numeric_affinity(declared: &str) -> bool {
    let t = declared.to_ascii_uppercase();
    let has = |word: &str| t.contains(word);
    has("INT") || !(has("CHAR") || has("CLOB") || has("TEXT") || has("BLOB") || t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_timestamps_read_as_null() {
        let mut schema = Schema::default();
        schema.insert(
            "T".into(),
            columns(&[("start", "INTEGER"), ("name", "TEXT")]),
        );
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE T (start INTEGER, name TEXT);
             INSERT INTO T VALUES (5, 'a'), (9223372036854775807, 'b'),
                 (-9223372036854775808, 'c'), ('garbage', 'd'), (1e300, 'e');",
        )
        .unwrap();
        let sql = schema.select("T", &["start", "name", "end"]);
        let rows: Vec<(Option<i64>, String, Option<i64>)> = conn
            .prepare(&sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let starts: Vec<Option<i64>> = rows.iter().map(|r| r.0).collect();
        assert_eq!(starts, [Some(5), None, None, None, None]);
        assert!(rows.iter().all(|r| r.2.is_none()));
    }

    fn columns(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn affinity_follows_sqlites_rule() {
        for t in [
            "INTEGER", "int", "BIGINT", "REAL", "DOUBLE", "NUMERIC", "DATE", "CHARINT",
        ] {
            assert!(has_numeric_affinity(t), "{t}");
        }
        for t in ["", "TEXT", "VARCHAR(10)", "CLOB", "BLOB"] {
            assert!(!has_numeric_affinity(t), "{t}");
        }
    }

    /// The reader's range check gives what SQLite's `CASE` gives, for every kind of
    /// value a column of each affinity can hold.
    #[test]
    fn timestamps_checked_by_the_reader_read_as_sqlite_checks_them() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE T (start INTEGER, end REAL, timestamp, x INTEGER);
             INSERT INTO T VALUES (5, 5, 5, 1), (4611686018427387904, 4611686018427387904.0,
                 4611686018427387904, 2), (4611686018427387905, 4.7e18, 4611686018427387905, 3),
                 (-4611686018427387904, -4611686018427387904, -4611686018427387904, 4),
                 (-4611686018427387905, -4.7e18, -4611686018427387905, 5),
                 (' 7 ', ' 7.5 ', ' 7 ', 6), ('garbage', 'garbage', 'garbage', 7),
                 (X'01', X'01', X'01', 8), (NULL, NULL, NULL, 9), (2.5, 2.5, 2.5, 10),
                 ('1e400', '1e400', '1e400', 11), (1e300, 1e300, 1e300, 12);",
        )
        .unwrap();
        let mut schema = Schema::default();
        let types = columns(&[
            ("start", "INTEGER"),
            ("end", "REAL"),
            ("timestamp", ""),
            ("x", "INTEGER"),
        ]);
        schema.insert("T".into(), types);
        let names = ["start", "end", "timestamp", "x", "missing"];
        let query = schema.query("T", &names, "1");
        assert_eq!(query.checked_times, 0b11, "{}", query.sql);
        let read = |sql: &str, checked: u64| {
            let mut rows = Vec::new();
            let mut stmt = crate::statement::Statement::prepare(&conn, sql, checked).unwrap();
            while let Some(row) = stmt.next().unwrap() {
                let cells: Vec<_> = (0..names.len())
                    .map(|i| (row.int(i), row.float(i), row.text(i)))
                    .collect();
                rows.push(cells);
            }
            rows
        };
        let by_sqlite = read(&format!("{} WHERE 1", schema.select("T", &names)), 0);
        let by_reader = read(&query.sql, query.checked_times);
        assert_eq!(by_reader.len(), 12);
        assert_eq!(by_reader, by_sqlite);
    }
}
