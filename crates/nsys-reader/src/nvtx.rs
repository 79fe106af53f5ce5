//! NVTX_EVENTS: ranges, marks and the definition rows (domains, categories, thread
//! names) that give them names.

use crate::{Export, ReadError, RowView, TableScan};

pub const NVTX_EVENTS: &str = "NVTX_EVENTS";

/// `eventType` values (ENUM_NSYS_EVENT_TYPE; stable since 2.9.1).
pub mod kind {
    pub const CATEGORY: i64 = 33;
    pub const MARK: i64 = 34;
    pub const THREAD_NAME: i64 = 39;
    pub const PUSH_POP: i64 = 59;
    pub const START_END: i64 = 60;
    /// The same kinds imported from NVTXT text files.
    pub const NVTXT_PUSH_POP: i64 = 70;
    pub const NVTXT_START_END: i64 = 71;
    pub const DOMAIN_CREATE: i64 = 75;
}

/// A classic payload: exactly one of the typed value columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Payload {
    Int(i64),
    Float(f64),
}

#[derive(Debug, Clone, Default)]
pub struct NvtxEvent {
    pub start: i64,
    pub end: Option<i64>,
    pub event_type: i64,
    pub category: Option<i64>,
    /// Inline text; registered strings are in `text_id` instead.
    pub text: Option<String>,
    pub text_id: Option<i64>,
    pub global_tid: i64,
    /// 0 (or NULL) is the default domain; ids are per process.
    pub domain_id: i64,
    pub payload: Option<Payload>,
    pub json: Option<String>,
    pub json_text_id: Option<i64>,
}

const COLUMNS: [&str; 16] = [
    "start",
    "end",
    "eventType",
    "category",
    "text",
    "textId",
    "globalTid",
    "domainId",
    "int64Value",
    "uint64Value",
    "int32Value",
    "uint32Value",
    "doubleValue",
    "floatValue",
    "jsonText",
    "jsonTextId",
];

fn payload(row: &RowView) -> Option<Payload> {
    (8..12)
        .find_map(|i| row.int(i).map(Payload::Int))
        .or_else(|| (12..14).find_map(|i| row.float(i).map(Payload::Float)))
}

fn event(row: &RowView) -> Option<NvtxEvent> {
    Some(NvtxEvent {
        start: row.int(0)?,
        end: row.int(1),
        event_type: row.int(2)?,
        category: row.int(3),
        text: row.text(4),
        text_id: row.int(5),
        global_tid: row.int(6)?,
        domain_id: row.int(7).unwrap_or(0),
        payload: payload(row),
        json: row.text(14),
        json_text_id: row.int(15),
    })
}

impl Export {
    /// Streams the NVTX rows whose `eventType` is one of `kinds`.
    pub fn nvtx_events(
        &self,
        kinds: &[i64],
        f: impl FnMut(&NvtxEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let keep = crate::query::ColumnIn {
            column: 2,
            values: kinds.to_vec(),
        };
        self.scan_rows_keeping(NVTX_EVENTS, &COLUMNS, &keep, event, f)
    }
}
