//! CUDA host functions (nsys 2026.x): host nodes of CUDA graphs and
//! `cudaLaunchHostFunc` calls.
//!
//! * GPU side, `CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH`: when the
//!   stream reached the host function and waited for it (the columns of the
//!   other activity tables, plus `graphNodeId` and `graphId`, NULL for a
//!   `cudaLaunchHostFunc`);
//! * CPU side, `CUDA_HOST_CALLBACK(start, end, eventClass, globalTid,
//!   correlationId, nameId)`: the execution of the function on a CPU thread.
//!
//! Columns from NVIDIA's SQLite schema reference (nsys 2026.4, schema 3.28.1);
//! no sample export has these rows.

use crate::cuda::{place, GpuPlace, PLACE};
use crate::{Export, ReadError, RowView, TableScan};

pub const HOST_LAUNCH: &str = "CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH";
pub const HOST_CALLBACK: &str = "CUDA_HOST_CALLBACK";

/// The GPU side of one host function; the graph ids are `None` (NULL or 0) for
/// a `cudaLaunchHostFunc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostLaunch {
    pub place: GpuPlace,
    pub graph_node_id: Option<i64>,
    pub graph_id: Option<i64>,
}

/// The CPU execution of one host function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCallback {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub correlation_id: Option<i64>,
    pub name_id: Option<i64>,
}

fn id(value: Option<i64>) -> Option<i64> {
    value.filter(|&v| v != 0)
}

impl Export {
    /// Streams the GPU side of host functions; rows with NULL start, end or
    /// process are skipped.
    pub fn host_launches(
        &self,
        f: impl FnMut(&HostLaunch) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols: Vec<&str> = PLACE
            .iter()
            .copied()
            .chain(["graphNodeId", "graphId"])
            .collect();
        let decode = |row: &RowView| {
            Some(HostLaunch {
                place: place(row)?,
                graph_node_id: id(row.int(PLACE.len())),
                graph_id: id(row.int(PLACE.len() + 1)),
            })
        };
        self.scan_rows(HOST_LAUNCH, &cols, "1", decode, f)
    }

    /// Streams the CPU executions of host functions; rows with NULL start, end or
    /// thread are skipped.
    pub fn host_callbacks(
        &self,
        f: impl FnMut(&HostCallback) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = ["start", "end", "globalTid", "correlationId", "nameId"];
        let decode = |row: &RowView| {
            Some(HostCallback {
                start: row.int(0)?,
                end: row.int(1)?,
                global_tid: row.int(2)?,
                correlation_id: id(row.int(3)),
                name_id: row.int(4),
            })
        };
        self.scan_rows(HOST_CALLBACK, &cols, "1", decode, f)
    }
}
