use std::collections::{HashMap, HashSet};

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
}

/// A typed scan's query: its SQL, and the result columns that are timestamps whose
/// range the reader checks on the values (bit `i`: column `i`), as
/// [`Schema::select`] would have SQLite do.
pub(crate) struct Query {
    pub sql: String,
    pub checked_times: u64,
}

impl Schema {
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
        let mut checked_times = 0u64;
        let list: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let key = (table.to_string(), c.to_string());
                if i < 64 && self.numeric_times.contains(&key) {
                    checked_times |= 1 << i;
                    format!("\"{c}\"")
                } else {
                    self.column(table, None, c)
                }
            })
            .collect();
        Query {
            sql: format!(
                "SELECT {} FROM \"{table}\" WHERE {condition}",
                list.join(", ")
            ),
            checked_times,
        }
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
