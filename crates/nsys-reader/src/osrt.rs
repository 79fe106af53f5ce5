//! OS runtime calls (`--trace=osrt`): libc and pthread functions that can block.
//! There is no separate pthread table; pthread activity is the `pthread_*` rows here.

use crate::{Export, ReadError, RowView, TableScan};

pub const OSRT_API: &str = "OSRT_API";

/// `eventClass` of a real call. Classes 31 and 32 mark the start and finish of OS
/// runtime tracing and carry tid 0 (nsys-sqlite-schema.md §7.2).
pub const EVENT_CLASS_CALL: i64 = 27;

/// One row of `OSRT_API`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OsrtCall {
    pub start: i64,
    pub end: i64,
    pub event_class: i64,
    pub global_tid: i64,
    /// `StringIds` id of the function name.
    pub name_id: i64,
    pub return_value: Option<i64>,
    /// 0 is the outermost call; NULL reads as 0.
    pub nesting_level: i64,
}

impl OsrtCall {
    pub fn is_call(&self) -> bool {
        self.event_class == EVENT_CLASS_CALL
    }
}

impl Export {
    /// Streams every `OSRT_API` row, markers included (see [`OsrtCall::is_call`]).
    /// Rows with NULL start, end, eventClass, globalTid or nameId are skipped.
    pub fn osrt_calls(
        &self,
        f: impl FnMut(&OsrtCall) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "eventClass",
            "globalTid",
            "nameId",
            "returnValue",
            "nestingLevel",
        ];
        let decode = |row: &RowView| {
            Some(OsrtCall {
                start: row.int(0)?,
                end: row.int(1)?,
                event_class: row.int(2)?,
                global_tid: row.int(3)?,
                name_id: row.int(4)?,
                return_value: row.int(5),
                nesting_level: row.int(6).unwrap_or(0),
            })
        };
        self.scan_rows(OSRT_API, &cols, "1", decode, f)
    }
}
