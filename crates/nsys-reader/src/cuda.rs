//! CUDA tables: API calls, kernels, memory copies and sets, synchronization.

use crate::{Export, ReadError, RowView, TableScan};

pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SYNCHRONIZATION: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// One CUDA runtime or driver API call.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiCall {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub correlation_id: Option<i64>,
    pub name_id: i64,
}

/// Where a GPU operation ran and who launched it.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuPlace {
    pub start: i64,
    pub end: i64,
    pub device_id: i64,
    pub stream_id: i64,
    pub correlation_id: Option<i64>,
    pub global_pid: i64,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Kernel {
    pub place: GpuPlace,
    pub short_name: Option<i64>,
    pub demangled_name: Option<i64>,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub static_shared_memory: i64,
    pub dynamic_shared_memory: i64,
    pub local_memory_total: i64,
    pub registers_per_thread: i64,
    pub graph_node_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Memcpy {
    pub place: GpuPlace,
    pub bytes: i64,
    pub copy_kind: i64,
    pub src_kind: Option<i64>,
    pub dst_kind: Option<i64>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Memset {
    pub place: GpuPlace,
    pub bytes: i64,
    pub mem_kind: Option<i64>,
}

/// A host-side synchronization (the interval of the synchronizing call).
/// `place.stream_id` and `event_id` hold [`NOT_APPLICABLE`] when they do not apply.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sync {
    pub place: GpuPlace,
    pub sync_type: i64,
    pub event_id: Option<i64>,
}

/// Sentinel of SYNCHRONIZATION's `streamId`/`eventId` for "does not apply".
pub const NOT_APPLICABLE: i64 = u32::MAX as i64;

/// What a synchronization waited for, told by which ids apply: `syncType` itself
/// is numbered differently before 3.13, in 3.13–3.17.1 and from 3.17.2 on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    Context,
    Event,
    Stream,
    StreamWaitEvent,
}

impl Sync {
    pub fn kind(&self) -> SyncKind {
        let stream = self.place.stream_id != NOT_APPLICABLE;
        let event = self.event_id.is_some_and(|e| e != NOT_APPLICABLE);
        match (stream, event) {
            (false, false) => SyncKind::Context,
            (false, true) => SyncKind::Event,
            (true, false) => SyncKind::Stream,
            (true, true) => SyncKind::StreamWaitEvent,
        }
    }
}

pub(crate) const PLACE: [&str; 6] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
];

/// Reads the leading `PLACE` columns; `None` when a required one is NULL.
pub(crate) fn place(row: &RowView) -> Option<GpuPlace> {
    Some(GpuPlace {
        start: row.int(0)?,
        end: row.int(1)?,
        device_id: row.int(2).unwrap_or(0),
        stream_id: row.int(3).unwrap_or(0),
        correlation_id: row.int(4).filter(|&c| c != 0),
        global_pid: row.int(5)?,
    })
}

fn with_place<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    PLACE.iter().copied().chain(extra.iter().copied()).collect()
}

impl Export {
    /// Streams the CUDA API calls (runtime and driver).
    pub fn api_calls(
        &self,
        f: impl FnMut(&ApiCall) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = ["start", "end", "globalTid", "correlationId", "nameId"];
        let decode = |row: &RowView| {
            Some(ApiCall {
                start: row.int(0)?,
                end: row.int(1)?,
                global_tid: row.int(2)?,
                correlation_id: row.int(3).filter(|&c| c != 0),
                name_id: row.int(4)?,
            })
        };
        self.scan_rows(RUNTIME, &cols, "1", decode, f)
    }

    pub fn kernels(
        &self,
        f: impl FnMut(&Kernel) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = with_place(&[
            "shortName",
            "demangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "localMemoryTotal",
            "registersPerThread",
            "graphNodeId",
        ]);
        let decode = |row: &RowView| {
            let n = |i: usize| row.int(PLACE.len() + i).unwrap_or(0);
            Some(Kernel {
                place: place(row)?,
                short_name: row.int(PLACE.len()),
                demangled_name: row.int(PLACE.len() + 1),
                grid: [n(2), n(3), n(4)],
                block: [n(5), n(6), n(7)],
                static_shared_memory: n(8),
                dynamic_shared_memory: n(9),
                local_memory_total: n(10),
                registers_per_thread: n(11),
                graph_node_id: row.int(PLACE.len() + 12).filter(|&g| g != 0),
            })
        };
        self.scan_rows(KERNEL, &cols, "1", decode, f)
    }

    pub fn memcpys(
        &self,
        f: impl FnMut(&Memcpy) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = with_place(&["bytes", "copyKind", "srcKind", "dstKind"]);
        let decode = |row: &RowView| {
            let at = |i: usize| row.int(PLACE.len() + i);
            Some(Memcpy {
                place: place(row)?,
                bytes: at(0).unwrap_or(0),
                copy_kind: at(1).unwrap_or(0),
                src_kind: at(2),
                dst_kind: at(3),
            })
        };
        self.scan_rows(MEMCPY, &cols, "1", decode, f)
    }

    pub fn memsets(
        &self,
        f: impl FnMut(&Memset) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = with_place(&["bytes", "memKind"]);
        let decode = |row: &RowView| {
            let at = |i: usize| row.int(PLACE.len() + i);
            Some(Memset {
                place: place(row)?,
                bytes: at(0).unwrap_or(0),
                mem_kind: at(1),
            })
        };
        self.scan_rows(MEMSET, &cols, "1", decode, f)
    }

    pub fn syncs(
        &self,
        f: impl FnMut(&Sync) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = with_place(&["syncType", "eventId"]);
        let decode = |row: &RowView| {
            let at = |i: usize| row.int(PLACE.len() + i);
            Some(Sync {
                place: place(row)?,
                sync_type: at(0).unwrap_or(0),
                event_id: at(1),
            })
        };
        self.scan_rows(SYNCHRONIZATION, &cols, "1", decode, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(stream: i64, event: Option<i64>) -> Sync {
        Sync {
            place: GpuPlace {
                stream_id: stream,
                ..Default::default()
            },
            sync_type: 0,
            event_id: event,
        }
    }

    #[test]
    fn sync_kind_comes_from_the_ids_that_apply() {
        assert_eq!(
            sync(NOT_APPLICABLE, Some(NOT_APPLICABLE)).kind(),
            SyncKind::Context
        );
        assert_eq!(sync(NOT_APPLICABLE, Some(3)).kind(), SyncKind::Event);
        assert_eq!(sync(7, Some(NOT_APPLICABLE)).kind(), SyncKind::Stream);
        assert_eq!(sync(7, Some(3)).kind(), SyncKind::StreamWaitEvent);
    }
}
