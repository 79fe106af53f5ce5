//! Table scans through SQLite's C API, the reader's only unsafe code.
//!
//! rusqlite's `Row::get_ref` asks SQLite for a column's type and then for its value
//! (two checked calls per column, each locking and unlocking the connection's
//! mutex slot), behind its own index checks: a third of the decoding cost of a
//! row. [`RowView`] asks once, with `sqlite3_column_value`, and reads the value
//! from it.

use std::ffi::{c_int, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection};

use crate::pages::Row;
use crate::schema::MAX_TIME_NS;

/// A prepared statement of `conn`, stepped row by row.
pub(crate) struct Statement<'c> {
    conn: &'c Connection,
    stmt: NonNull<ffi::sqlite3_stmt>,
    /// Result columns whose timestamps are range-checked here (bit `i`: column `i`).
    checked_times: u64,
}

impl<'c> Statement<'c> {
    /// Prepares `sql`; the result columns in `checked_times` (bit `i`: column `i`)
    /// are timestamps read as NULL out of range, see [`crate::query::Query`].
    pub fn prepare(
        conn: &'c Connection,
        sql: &str,
        checked_times: u64,
    ) -> Result<Self, rusqlite::Error> {
        let too_long = || rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None);
        let len = c_int::try_from(sql.len()).map_err(|_| too_long())?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: the handle is the open connection `conn` borrows for 'c; the SQL
        // pointer and length describe a live `&str`.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                conn.handle(),
                sql.as_ptr().cast(),
                len,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            // rusqlite describes a statement that does not compile as it does
            // everywhere else (with the offset into the SQL).
            return Err(match conn.prepare(sql) {
                Err(e) => e,
                Ok(_) => last_error(conn, rc),
            });
        }
        match NonNull::new(stmt) {
            Some(stmt) => Ok(Statement {
                conn,
                stmt,
                checked_times,
            }),
            // Only SQL without a statement (blank or a comment) gives none.
            None => Err(rusqlite::Error::InvalidQuery),
        }
    }

    /// The next row, or `None` after the last one.
    pub fn next(&mut self) -> Result<Option<RowView<'_>>, rusqlite::Error> {
        // SAFETY: `stmt` is a live statement of `conn` (finalized only on drop);
        // `&mut self` keeps the previous row's values from being used after this.
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(RowView {
                source: Source::Statement(self.stmt, PhantomData),
                checked_times: self.checked_times,
            })),
            ffi::SQLITE_DONE => Ok(None),
            rc => Err(last_error(self.conn, rc)),
        }
    }
}

impl Drop for Statement<'_> {
    fn drop(&mut self) {
        // SAFETY: `stmt` came from `sqlite3_prepare_v2` and is finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

/// rusqlite's error for a result code of `conn`: its message when the
/// connection's last error is that code, SQLite's text for the code otherwise.
fn last_error(conn: &Connection, rc: c_int) -> rusqlite::Error {
    // SAFETY: the handle is open; SQLite returns NUL-terminated static or
    // connection-owned strings, copied before anything else runs on it.
    let message = unsafe {
        let db = conn.handle();
        let text = if ffi::sqlite3_errcode(db) == rc {
            ffi::sqlite3_errmsg(db)
        } else {
            ffi::sqlite3_errstr(rc)
        };
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

/// One row of a `Schema::select`, read by position; valid until the next step.
pub struct RowView<'s> {
    source: Source<'s>,
    checked_times: u64,
}

/// Where a row's values are: a statement's current row, or a record read from
/// the file's pages.
enum Source<'s> {
    Statement(NonNull<ffi::sqlite3_stmt>, PhantomData<&'s Statement<'s>>),
    Record(&'s Row<'s>),
}

impl<'s> RowView<'s> {
    /// A row read from the file's pages, its result columns in `checked_times`
    /// range-checked as timestamps.
    pub(crate) fn of_record(row: &'s Row<'s>, checked_times: u64) -> Self {
        RowView {
            source: Source::Record(row),
            checked_times,
        }
    }
}

impl RowView<'_> {
    /// Floating-point value; NULL, text that is not a number, and blobs read as `None`.
    #[inline]
    pub fn float(&self, i: usize) -> Option<f64> {
        float_of(self.value(i))
    }

    /// Integer value; NULL, text that is not a number, and blobs read as `None`.
    #[inline(always)]
    pub fn int(&self, i: usize) -> Option<i64> {
        int_of(self.value(i))
    }

    /// Text value (lossy for non-UTF-8 bytes).
    pub fn text(&self, i: usize) -> Option<String> {
        text_of(self.value(i))
    }

    /// Column `i` as it is read (for comparisons in tests and fuzz checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn value_ref(&self, i: usize) -> ValueRef<'_> {
        self.value(i)
    }

    /// Column `i` (NULL past the last column, and for a timestamp out of range).
    #[inline(always)]
    fn value(&self, i: usize) -> ValueRef<'_> {
        let value = self.stored_value(i);
        if i < 64 && self.checked_times & (1 << i) != 0 {
            within_time_range(value)
        } else {
            value
        }
    }

    /// Column `i` as SQLite hands it over (NULL past the last column).
    #[inline(always)]
    fn stored_value(&self, i: usize) -> ValueRef<'_> {
        let stmt = match &self.source {
            Source::Record(row) => return row.value(i),
            Source::Statement(stmt, _) => *stmt,
        };
        let Ok(i) = c_int::try_from(i) else {
            return ValueRef::Null;
        };
        // SAFETY: the statement has a current row while `self` lives (stepping
        // needs `&mut Statement`, which `self` borrows). SQLite returns a NULL
        // value for a column out of range. The value is "unprotected" (no mutex
        // held): safe here, because a connection is never used by two threads at
        // once (`Connection` is not `Sync`, and this borrows it). Text and blob
        // pointers are taken before their byte counts, as SQLite asks, and stay
        // valid until the next step or a conversion, neither of which happens
        // while the returned slice is borrowed from `self`.
        unsafe {
            let v = ffi::sqlite3_column_value(stmt.as_ptr(), i);
            match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                ffi::SQLITE_TEXT => {
                    let p = ffi::sqlite3_value_text(v);
                    ValueRef::Text(bytes(p, ffi::sqlite3_value_bytes(v)))
                }
                ffi::SQLITE_BLOB => {
                    let p = ffi::sqlite3_value_blob(v).cast::<u8>();
                    ValueRef::Blob(bytes(p, ffi::sqlite3_value_bytes(v)))
                }
                _ => ValueRef::Null,
            }
        }
    }
}

/// The value of `CASE WHEN t BETWEEN -2^62 AND 2^62 THEN t END` for a value `t` of
/// a column with numeric affinity ([`crate::Schema::select`]): numbers in range as
/// they are, NULL otherwise. Text and blobs in such a column compare above every
/// number (text that reads as a number was stored as that number), so they are NULL too.
#[inline(always)]
fn within_time_range(value: ValueRef<'_>) -> ValueRef<'_> {
    const MAX: i64 = MAX_TIME_NS;
    match value {
        ValueRef::Integer(t) if (-MAX..=MAX).contains(&t) => value,
        // ±2^62 are exact doubles, so these comparisons are SQLite's.
        ValueRef::Real(t) if (-MAX as f64..=MAX as f64).contains(&t) => value,
        _ => ValueRef::Null,
    }
}

/// # Safety
/// `p` is null or points to `n` readable bytes that outlive `'a`.
unsafe fn bytes<'a>(p: *const u8, n: c_int) -> &'a [u8] {
    match usize::try_from(n) {
        Ok(n) if !p.is_null() && n > 0 => unsafe { std::slice::from_raw_parts(p, n) },
        _ => &[],
    }
}

#[inline]
pub(crate) fn float_of(value: ValueRef) -> Option<f64> {
    match value {
        ValueRef::Integer(v) => Some(v as f64),
        ValueRef::Real(v) => Some(v),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

#[inline(always)]
pub(crate) fn int_of(value: ValueRef) -> Option<i64> {
    match value {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(v) => Some(v as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn text_of(value: ValueRef) -> Option<String> {
    match value {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(v) => Some(v.to_string()),
        ValueRef::Real(v) => Some(v.to_string()),
        ValueRef::Null => None,
    }
}
