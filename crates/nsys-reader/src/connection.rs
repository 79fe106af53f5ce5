//! Read-only connections to an export: opened `immutable` through a `file:` URI
//! when nothing may be writing the file, with the page cache the memory
//! accounting counts.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::sqlite_error;
use crate::ReadError;

/// SQLite's page cache per connection, in KiB (its default, set explicitly: it is
/// part of the fixed memory beside `--memory-limit`, one or two connections per
/// report being translated). Scans read each page once; lookups in `StringIds`
/// keep the upper levels of its B-tree here.
pub(crate) const PAGE_CACHE_KIB: i64 = 2048;

/// Opens read-only. An export no one is writing is opened `immutable`: SQLite then
/// takes no lock and checks no journal on every statement (a system call or two
/// per statement, which one-row lookups and small reports feel). A file with a
/// write-ahead log or a journal beside it may be changing, and is opened plainly.
pub(crate) fn open_read_only(path: &Path) -> Result<Connection, ReadError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = if may_be_written(path) {
        Connection::open_with_flags(path, flags)
    } else {
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
    };
    opened.map_err(|e| sqlite_error(path, None, e))
}

/// Sizes the connection's page cache (after the schema is read: the pragma
/// reads it, and a file that is no database is reported by `Schema::read`).
pub(crate) fn set_page_cache(path: &Path, conn: &Connection) -> Result<(), ReadError> {
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
        .map_err(|e| sqlite_error(path, None, e))
}

pub(crate) fn may_be_written(path: &Path) -> bool {
    ["-wal", "-journal"].iter().any(|suffix| {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        Path::new(&beside).exists()
    })
}

/// `file:` URI of `path` with `immutable=1`; every byte but unreserved ones and
/// `/` percent-encoded (SQLite decodes them; `?`, `#` and `%` would be syntax).
fn immutable_uri(path: &Path) -> String {
    use std::fmt::Write;
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    #[cfg(not(unix))]
    let lossy = path.to_string_lossy();
    #[cfg(not(unix))]
    let bytes = lossy.as_bytes();
    // An empty authority before an absolute path, so `//x` stays a path.
    let mut uri = String::from(if path.is_absolute() {
        "file://"
    } else {
        "file:"
    });
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::tests::{calls, export_with_nulls};
    use crate::Export;
    use std::path::PathBuf;

    #[test]
    fn exports_open_immutable_whatever_their_path_holds() {
        let (dir, export) = export_with_nulls("uri");
        let want = calls(&export);
        // Bytes that are URI syntax, a space, a non-UTF-8 byte, a doubled slash.
        let odd = {
            use std::os::unix::ffi::OsStrExt;
            dir.join(std::ffi::OsStr::from_bytes(b"a?b#c%20d e\xff.sqlite"))
        };
        std::fs::copy(export.path(), &odd).unwrap();
        let mut doubled = std::ffi::OsString::from("/");
        doubled.push(&odd);
        let doubled = PathBuf::from(doubled);
        for path in [odd.clone(), doubled] {
            let opened = Export::open(&path).unwrap();
            assert_eq!(calls(&opened), want, "{}", path.display());
        }
        let uri = immutable_uri(&odd);
        assert!(
            uri.starts_with("file:///") && uri.ends_with("?immutable=1"),
            "{uri}"
        );
        assert!(uri.contains("a%3Fb%23c%2520d%20e%FF.sqlite"), "{uri}");
        // Beside a journal, the file may be changing: opened plainly, still read.
        let mut journal = odd.as_os_str().to_owned();
        journal.push("-journal");
        std::fs::write(&journal, b"").unwrap();
        assert!(may_be_written(&odd));
        assert_eq!(calls(&Export::open(&odd).unwrap()), want);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_page_cache_has_the_size_it_is_counted_at() {
        let (dir, export) = export_with_nulls("cache");
        let kib: i64 = export
            .conn
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .unwrap();
        assert_eq!(kib, -PAGE_CACHE_KIB);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
