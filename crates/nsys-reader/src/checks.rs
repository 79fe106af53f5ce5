//! What makes a file an export this reader reads, checked before SQLite opens
//! it or as it does: an SQLite header, a file as long as its header says, the
//! tables only a complete export has; and the warning for a schema newer than
//! the reader knows.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::meta::Metadata;
use crate::{ReadError, Schema};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Tables that only a complete export has; a failed export leaves just StringIds.
const EXPORT_MARKERS: &[&str] = &[
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
    "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_GPU",
    "ANALYSIS_DETAILS",
    "TARGET_INFO_SYSTEM_ENV",
];

pub(crate) fn check_sqlite_header(path: &Path) -> Result<(), ReadError> {
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing(path.to_path_buf()),
        _ => ReadError::Io {
            path: path.to_path_buf(),
            cause: e,
        },
    })?;
    let mut head = [0u8; 100];
    let io_error = |e| ReadError::Io {
        path: path.to_path_buf(),
        cause: e,
    };
    let n = read_up_to(&mut file, &mut head).map_err(io_error)?;
    let head = &head[..n];
    if head.starts_with(SQLITE_MAGIC) {
        let size = file.metadata().map_err(io_error)?.len();
        return check_complete(path, head, size);
    }
    if n >= 16 && head[..16].iter().all(|&b| b == 0) {
        return Err(ReadError::ZeroedHeader(path.to_path_buf()));
    }
    let what = if n == 0 {
        "the file is empty".to_string()
    } else if head.starts_with(b"version https://git-lfs") {
        "it is a git-lfs pointer; fetch the real file with `git lfs pull`".to_string()
    } else if n < 16 {
        format!("only {n} bytes long")
    } else {
        "wrong magic bytes".to_string()
    };
    Err(ReadError::NotSqlite {
        path: path.to_path_buf(),
        what,
    })
}

/// A file shorter than its header says was cut short (an export or a copy that was
/// interrupted). SQLite itself reads the missing pages as zeros and reports either a
/// malformed database or, worse, nothing, depending on which pages are gone.
fn check_complete(path: &Path, head: &[u8], size: u64) -> Result<(), ReadError> {
    const HEADER: usize = 100;
    let truncated = |expected: u64| ReadError::Truncated {
        path: path.to_path_buf(),
        size,
        expected,
    };
    if head.len() < HEADER {
        return Err(truncated(HEADER as u64));
    }
    let be32 = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        p => u64::from(p),
    };
    let pages = u64::from(be32(28));
    // The page count is valid only when written by the same change as the file
    // change counter (SQLite 3.7.0+); a WAL file may hold pages not yet in the file.
    let count_valid = pages > 0 && be32(24) == be32(92);
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let expected = pages * page_size;
    if count_valid && size < expected && !Path::new(&wal).exists() {
        return Err(truncated(expected));
    }
    Ok(())
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            k => filled += k,
        }
    }
    Ok(filled)
}

pub(crate) fn check_is_export(path: &Path, schema: &Schema) -> Result<(), ReadError> {
    if EXPORT_MARKERS.iter().any(|t| schema.has_table(t)) {
        return Ok(());
    }
    let err = if schema.has_table("StringIds") {
        ReadError::Incomplete {
            path: path.to_path_buf(),
            what: "it has StringIds but no metadata or target-info tables".into(),
        }
    } else {
        let mut names: Vec<&str> = schema.table_names().collect();
        names.sort_unstable();
        names.truncate(5);
        let what = if names.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables: {}", names.join(", "))
        };
        ReadError::NotNsys {
            path: path.to_path_buf(),
            what,
        }
    };
    Err(err)
}

/// Warns (once per file and process) that the export is newer than the reader.
pub(crate) fn warn_about_newer_schema(path: &Path, meta: &Metadata) {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let Some(version) = meta.newer_schema() else {
        return;
    };
    let first = WARNED
        .lock()
        .map_or(true, |mut w| w.insert(path.to_path_buf()));
    if first {
        let (major, minor) = crate::meta::NEWEST_KNOWN_SCHEMA;
        let product = meta
            .product_version
            .as_deref()
            .map(|p| format!(" (nsys {p})"))
            .unwrap_or_default();
        tracing::warn!(
            "{}: export schema {version}{product} is newer than the newest known ({major}.{minor}, nsys 2026.2): translating the tables and columns recognised; update nsys2prv-rs if events are missing",
            path.display()
        );
    }
}
