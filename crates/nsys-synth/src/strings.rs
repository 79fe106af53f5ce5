//! The StringIds pool: every name an export refers to by id.

use std::collections::HashMap;

use anyhow::Result;
use rusqlite::Connection;

use crate::ddl::create_and_fill;
use crate::SchemaVersion;

/// Entries the exporter writes before any profiled name (seen at ids 0-4 in most exports).
const PRELUDE: [&str; 5] = [
    "[Unknown]",
    "[kernel.kallsyms]",
    "[Max depth]",
    "[Broken backtraces]",
    "[Called from Java]",
];

pub(crate) struct StringIds {
    ids: HashMap<String, i64>,
    values: Vec<String>,
}

impl StringIds {
    pub(crate) fn new() -> Self {
        let mut strings = Self {
            ids: HashMap::new(),
            values: Vec::new(),
        };
        for value in PRELUDE {
            strings.intern(value);
        }
        strings
    }

    /// The id of `value`, adding it to the pool if needed.
    pub(crate) fn intern(&mut self, value: &str) -> i64 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.values.len() as i64;
        self.values.push(value.to_owned());
        self.ids.insert(value.to_owned(), id);
        id
    }

    pub(crate) fn write(&self, conn: &Connection, version: SchemaVersion) -> Result<()> {
        let rows = self
            .values
            .iter()
            .enumerate()
            .map(|(id, value)| (id as i64, value));
        create_and_fill(conn, version, "StringIds", rows)
    }
}
