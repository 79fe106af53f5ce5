//! What a scan asks for: the query SQLite runs, and the same scan read from the
//! file's pages when the table allows it (its root page, how each result column
//! is read, the rows kept). Made by [`crate::schema::Schema::query`], run by
//! [`crate::scan`], read by [`crate::pages`].

pub(crate) use Keep::ColumnIn;

/// A typed scan's query: its SQL, the result columns that are timestamps whose
/// range the reader checks on the values (bit `i`: column `i`), as
/// [`crate::Schema::select`] would have SQLite do, and, for a plain scan of a table
/// stored in the usual way, how to read it from the file's pages.
pub(crate) struct Query {
    pub sql: String,
    pub checked_times: u64,
    pub direct: Option<DirectScan>,
}

/// Which rows a scan keeps: all, or those whose result column `column` is one
/// of `values` (an `=` of an integer column, as SQLite compares).
#[derive(Clone, Debug)]
pub(crate) enum Keep {
    All,
    ColumnIn { column: usize, values: Vec<i64> },
}

impl Keep {
    /// The SQL condition, on the result columns `columns`.
    pub(crate) fn condition(&self, columns: &[&str]) -> String {
        match self {
            Keep::All => "1".to_string(),
            Keep::ColumnIn { values, .. } if values.is_empty() => "0".to_string(),
            // `=` terms joined by OR: SQLite tests `IN` lists of more than two
            // values with a lookup in a temporary index, several times the cost
            // per row.
            Keep::ColumnIn { column, values } => values
                .iter()
                .map(|v| format!("\"{}\" = {v}", columns[*column]))
                .collect::<Vec<_>>()
                .join(" OR "),
        }
    }
}

/// What a direct scan reads for each result column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// Field `index` of the record; `real`: the column has REAL affinity.
    Column { index: usize, real: bool },
    /// The rowid (an `INTEGER PRIMARY KEY` column).
    RowId,
    /// A column the table does not have.
    Null,
}

/// A direct scan of one table: its B-tree's root page, the result columns and
/// the rows it keeps.
#[derive(Clone, Debug)]
pub(crate) struct DirectScan {
    pub root: u32,
    pub fields: Vec<Field>,
    pub keep: Keep,
}
