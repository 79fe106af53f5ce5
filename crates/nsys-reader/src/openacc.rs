//! OpenACC tables: `CUPTI_ACTIVITY_KIND_OPENACC_DATA`, `_LAUNCH` and `_OTHER`
//! (nsys-sqlite-schema.md §7.1). Every table is optional and every column is
//! looked up by name (`correlationId` exists only in recent exports).

use crate::{Export, ReadError, RowView, TableScan};

/// One OpenACC table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccTable {
    /// Host-side constructs and runtime events: compute construct, enter/exit
    /// data, update, waits, device init/shutdown.
    Other,
    /// Data movement and allocation: enqueue upload/download, create, delete, alloc, free.
    Data,
    /// Kernel launches (enqueue launch).
    Launch,
}

impl AccTable {
    pub const ALL: [AccTable; 3] = [AccTable::Other, AccTable::Data, AccTable::Launch];

    pub fn name(self) -> &'static str {
        match self {
            AccTable::Other => "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
            AccTable::Data => "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            AccTable::Launch => "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
        }
    }
}

/// One row of any OpenACC table. Columns a table does not have are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccEvent {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    /// Event name (`StringIds`).
    pub name_id: Option<i64>,
    /// `ENUM_OPENACC_EVENT_KIND` id.
    pub event_kind: i64,
    /// `ENUM_OPENACC_DEVICE` id (the column is spelled `DeviceType`).
    pub device_type: Option<i64>,
    pub line_no: Option<i64>,
    pub cu_device_id: Option<i64>,
    pub cu_context_id: Option<i64>,
    pub cu_stream_id: Option<i64>,
    /// Source file and function names (`StringIds`).
    pub src_file: Option<i64>,
    pub func_name: Option<i64>,
    pub correlation_id: Option<i64>,
    /// `_DATA` only.
    pub bytes: Option<i64>,
    pub var_name: Option<i64>,
    /// `_LAUNCH` only.
    pub num_gangs: Option<i64>,
    pub num_workers: Option<i64>,
    pub vector_length: Option<i64>,
    pub kernel_name: Option<i64>,
}

const COLUMNS: [&str; 19] = [
    "start",
    "end",
    "globalTid",
    "nameId",
    "eventKind",
    "DeviceType",
    "lineNo",
    "cuDeviceId",
    "cuContextId",
    "cuStreamId",
    "srcFile",
    "funcName",
    "correlationId",
    "bytes",
    "varName",
    "numGangs",
    "numWorkers",
    "vectorLength",
    "kernelName",
];

fn event(row: &RowView) -> Option<AccEvent> {
    Some(AccEvent {
        start: row.int(0)?,
        end: row.int(1)?,
        global_tid: row.int(2)?,
        name_id: row.int(3),
        event_kind: row.int(4)?,
        device_type: row.int(5),
        line_no: row.int(6),
        cu_device_id: row.int(7),
        cu_context_id: row.int(8),
        cu_stream_id: row.int(9),
        src_file: row.int(10),
        func_name: row.int(11),
        correlation_id: row.int(12).filter(|&c| c != 0),
        bytes: row.int(13),
        var_name: row.int(14),
        num_gangs: row.int(15),
        num_workers: row.int(16),
        vector_length: row.int(17),
        kernel_name: row.int(18),
    })
}

impl Export {
    /// Streams the rows of one OpenACC table; rows without `start`, `end`,
    /// `globalTid` or `eventKind` are skipped and counted.
    pub fn openacc_events(
        &self,
        table: AccTable,
        f: impl FnMut(&AccEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.scan_rows(table.name(), &COLUMNS, "1", event, f)
    }
}

/// `CUPTI_OPENACC_EVENT_KIND_*` ids.
pub mod kind {
    pub const DEVICE_INIT: i64 = 1;
    pub const DEVICE_SHUTDOWN: i64 = 2;
    pub const RUNTIME_SHUTDOWN: i64 = 3;
    pub const ENQUEUE_LAUNCH: i64 = 4;
    pub const ENQUEUE_UPLOAD: i64 = 5;
    pub const ENQUEUE_DOWNLOAD: i64 = 6;
    pub const WAIT: i64 = 7;
    pub const IMPLICIT_WAIT: i64 = 8;
    pub const COMPUTE_CONSTRUCT: i64 = 9;
}

pub const EVENT_KIND_TABLE: &str = "ENUM_OPENACC_EVENT_KIND";

/// `ENUM_OPENACC_EVENT_KIND` (3.0.0+; 3.24 exports omit the table). NVIDIA's label
/// `UPDATE` is written `Update` like its neighbours.
pub const EVENT_KIND: &[(i64, &str)] = &[
    (0, "Invalid"),
    (1, "Device init"),
    (2, "Device shutdown"),
    (3, "Runtime shutdown"),
    (4, "Enqueue launch"),
    (5, "Enqueue upload"),
    (6, "Enqueue download"),
    (7, "Wait"),
    (8, "Implicit wait"),
    (9, "Compute construct"),
    (10, "Update"),
    (11, "Enter data"),
    (12, "Exit data"),
    (13, "Create"),
    (14, "Delete"),
    (15, "Alloc"),
    (16, "Free"),
];
