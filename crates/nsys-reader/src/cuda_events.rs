//! CUDA events: `cudaEventRecord` rows (`CUPTI_ACTIVITY_KIND_CUDA_EVENT`), the
//! synchronizations that wait for an event (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`
//! rows whose `eventId` applies), and the API calls behind both.
//!
//! A record row has no time before schema 3.23 (`timestamp`, the device completion
//! time, is 0 when not collected) and no thread: both come from the API call with
//! the same correlation id. `eventSyncId` (records 3.23+, syncs 3.17+) names the
//! record a sync waits for.

use crate::cuda::{NOT_APPLICABLE, RUNTIME, SYNCHRONIZATION};
use crate::{Export, ReadError, RowView, TableScan};

pub const CUDA_EVENT: &str = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";

/// One `cudaEventRecord`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventRecord {
    /// Device completion time; `None` when not collected (0) or absent.
    pub timestamp: Option<i64>,
    pub device_id: i64,
    pub stream_id: i64,
    pub correlation_id: Option<i64>,
    pub global_pid: i64,
    pub event_id: i64,
    pub event_sync_id: Option<i64>,
}

/// A synchronization on an event: the host waiting (`stream_id` None) or a stream
/// waiting (`cudaStreamWaitEvent`). Rows whose `eventId` is the "not applicable"
/// sentinel or 0 are plain stream or context syncs, not read here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventWait {
    pub start: i64,
    pub end: i64,
    pub device_id: i64,
    pub stream_id: Option<i64>,
    pub correlation_id: Option<i64>,
    pub global_pid: i64,
    pub event_id: i64,
    pub event_sync_id: Option<i64>,
}

/// The interval and thread of an API call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallSite {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub correlation_id: i64,
}

fn applies(id: Option<i64>) -> Option<i64> {
    id.filter(|&v| v != NOT_APPLICABLE)
}

impl Export {
    /// Streams the event records; rows with NULL pid or event id are skipped.
    pub fn event_records(
        &self,
        f: impl FnMut(&EventRecord) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "timestamp",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "eventId",
            "eventSyncId",
        ];
        let decode = |row: &RowView| {
            Some(EventRecord {
                timestamp: row.int(0).filter(|&t| t != 0),
                device_id: row.int(1).unwrap_or(0),
                stream_id: row.int(2).unwrap_or(0),
                correlation_id: row.int(3).filter(|&c| c != 0),
                global_pid: row.int(4)?,
                event_id: row.int(5)?,
                event_sync_id: applies(row.int(6)),
            })
        };
        self.scan_rows(CUDA_EVENT, &cols, "1", decode, f)
    }

    /// Streams the synchronizations that wait for an event (the others are the
    /// plain stream and context syncs, not read here).
    pub fn event_waits(
        &self,
        f: impl FnMut(&EventWait) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "deviceId",
            "streamId",
            "correlationId",
            "globalPid",
            "eventId",
            "eventSyncId",
        ];
        if !self.schema().has_column(SYNCHRONIZATION, "eventId") {
            return Ok(TableScan::default());
        }
        // Event ids start at 1; some exports write 0 rather than the sentinel.
        let condition = format!("eventId IS NOT NULL AND eventId NOT IN (0, {NOT_APPLICABLE})");
        let decode = |row: &RowView| {
            Some(EventWait {
                start: row.int(0)?,
                end: row.int(1)?,
                device_id: row.int(2).unwrap_or(0),
                stream_id: applies(row.int(3)),
                correlation_id: row.int(4).filter(|&c| c != 0),
                global_pid: row.int(5)?,
                event_id: row.int(6)?,
                event_sync_id: applies(row.int(7)),
            })
        };
        self.scan_rows(SYNCHRONIZATION, &cols, &condition, decode, f)
    }

    /// Streams the API calls whose correlation id is that of an event record or
    /// of an event wait (SQLite does the filtering, so the other calls cost no
    /// callback). Correlation ids repeat across processes: callers match the pid.
    pub fn event_call_sites(
        &self,
        mut f: impl FnMut(&CallSite) -> Result<(), ReadError>,
    ) -> Result<u64, ReadError> {
        let schema = self.schema();
        let mut sources = Vec::new();
        if schema.has_column(CUDA_EVENT, "correlationId") {
            sources.push(format!("SELECT correlationId FROM \"{CUDA_EVENT}\""));
        }
        if schema.has_column(SYNCHRONIZATION, "correlationId")
            && schema.has_column(SYNCHRONIZATION, "eventId")
        {
            sources.push(format!(
                "SELECT correlationId FROM \"{SYNCHRONIZATION}\" WHERE eventId NOT IN (0, {NOT_APPLICABLE})"
            ));
        }
        if sources.is_empty() || !schema.has_column(RUNTIME, "correlationId") {
            return Ok(0);
        }
        let condition = format!("correlationId IN ({})", sources.join(" UNION "));
        let cols = ["start", "end", "globalTid", "correlationId"];
        self.scan_where(RUNTIME, &cols, &condition, |row| {
            if let (Some(start), Some(end), Some(global_tid), Some(correlation_id)) =
                (row.int(0), row.int(1), row.int(2), row.int(3))
            {
                f(&CallSite {
                    start,
                    end,
                    global_tid,
                    correlation_id,
                })?;
            }
            Ok(())
        })
    }
}
