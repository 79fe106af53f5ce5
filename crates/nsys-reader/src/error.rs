use std::path::{Path, PathBuf};

/// A reading failure, always naming the file (and the table and row where known).
///
/// The message includes the underlying cause, which is therefore not also exposed
/// as `source()` (callers join the cause chain into one line: it would repeat).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: no such file", .0.display())]
    Missing(PathBuf),
    #[error("{}: cannot read: {cause}", path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: not an SQLite file ({what})", path.display())]
    NotSqlite { path: PathBuf, what: String },
    #[error("{}: the SQLite header is zeroed: the export was interrupted; export the report again", .0.display())]
    ZeroedHeader(PathBuf),
    #[error("{}: not an Nsight Systems export ({what})", path.display())]
    NotNsys { path: PathBuf, what: String },
    #[error("{}: truncated SQLite file ({size} of {expected} bytes): the export or its copy was interrupted; export the report again", path.display())]
    Truncated {
        path: PathBuf,
        size: u64,
        expected: u64,
    },
    #[error("{}: incomplete Nsight Systems export ({what}); run `nsys export --type sqlite` on the report again", path.display())]
    Incomplete { path: PathBuf, what: String },
    #[error("{}: SQLite error{}: {cause}{}", path.display(), location(table, *row), advice(cause))]
    Sqlite {
        path: PathBuf,
        table: Option<String>,
        row: Option<u64>,
        cause: Box<rusqlite::Error>,
    },
}

fn location(table: &Option<String>, row: Option<u64>) -> String {
    match (table, row) {
        (Some(t), Some(r)) => format!(" in table {t}, row {r}"),
        (Some(t), None) => format!(" in table {t}"),
        _ => String::new(),
    }
}

/// What to do about SQLite errors that mean the file itself is damaged.
fn advice(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
            " (the file is damaged, e.g. by an interrupted export or copy; export the report again)"
        }
        _ => "",
    }
}

/// An SQLite error on `path` (in `table`, when known).
pub(crate) fn sqlite_error(path: &Path, table: Option<&str>, cause: rusqlite::Error) -> ReadError {
    ReadError::Sqlite {
        path: path.to_path_buf(),
        table: table.map(str::to_string),
        row: None,
        cause: Box::new(cause),
    }
}
