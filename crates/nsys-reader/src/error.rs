use std::path::PathBuf;

/// A reading failure, always naming the file (and the table and row where known).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: no such file", .0.display())]
    Missing(PathBuf),
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not an SQLite file ({what})", path.display())]
    NotSqlite { path: PathBuf, what: String },
    #[error("{}: the SQLite header is zeroed: the export was interrupted; export the report again", .0.display())]
    ZeroedHeader(PathBuf),
    #[error("{}: not an Nsight Systems export ({what})", path.display())]
    NotNsys { path: PathBuf, what: String },
    #[error("{}: incomplete Nsight Systems export ({what}); run `nsys export --type sqlite` on the report again", path.display())]
    Incomplete { path: PathBuf, what: String },
    #[error("{}: SQLite error{}: {source}", path.display(), location(table, *row))]
    Sqlite {
        path: PathBuf,
        table: Option<String>,
        row: Option<u64>,
        source: Box<rusqlite::Error>,
    },
}

fn location(table: &Option<String>, row: Option<u64>) -> String {
    match (table, row) {
        (Some(t), Some(r)) => format!(" in table {t}, row {r}"),
        (Some(t), None) => format!(" in table {t}"),
        _ => String::new(),
    }
}
