use std::collections::HashMap;

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
    /// serves every schema version.
    pub fn select(&self, table: &str, columns: &[&str]) -> String {
        let list: Vec<String> = columns
            .iter()
            .map(|c| {
                if self.has_column(table, c) {
                    format!("\"{c}\"")
                } else {
                    "NULL".to_string()
                }
            })
            .collect();
        format!("SELECT {} FROM \"{table}\"", list.join(", "))
    }
}
