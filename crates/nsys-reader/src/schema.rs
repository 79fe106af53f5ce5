use std::collections::HashMap;

/// Columns that hold event timestamps (ns).
const TIME_COLUMNS: &[&str] = &["start", "end", "timestamp"];
/// Largest plausible timestamp: 2^62 ns, the year 2116 for absolute (UTC) times.
const MAX_TIME_NS: i64 = 1 << 62;

/// Tables and their columns, as the file has them.
#[derive(Debug, Default, Clone)]
pub struct Schema {
    tables: HashMap<String, Vec<String>>,
}

impl Schema {
    pub(crate) fn insert(&mut self, table: String, columns: Vec<String>) {
        self.tables.insert(table, columns);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_timestamps_read_as_null() {
        let mut schema = Schema::default();
        schema.insert("T".into(), vec!["start".into(), "name".into()]);
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
}
