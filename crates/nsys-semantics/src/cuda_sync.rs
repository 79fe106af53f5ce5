//! Host-side CUDA synchronizations (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`). A row
//! names only the process; the thread comes from the API call with the same
//! correlation id, so the rows are emitted from the API side.

use nsys_reader::cuda::{SyncKind, SYNCHRONIZATION};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;

use crate::catalog::CUDA_SYNC;
use crate::context::ReportContext;

#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncCall {
    pub pid: u32,
    pub correlation: i64,
    pub start: i64,
    pub end: i64,
    /// Name handle of the sync kind (value of `CUDA_SYNC`).
    pub kind: u32,
}

/// Synchronizations by (pid, correlation id).
#[derive(Default)]
pub(crate) struct SyncCalls(Vec<SyncCall>);

impl SyncCalls {
    pub fn find(&self, pid: u32, correlation: i64) -> Option<&SyncCall> {
        let i = self
            .0
            .partition_point(|s| (s.pid, s.correlation) < (pid, correlation));
        self.0
            .get(i)
            .filter(|s| (s.pid, s.correlation) == (pid, correlation))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

pub(crate) fn collect(ctx: &mut ReportContext) -> Result<SyncCalls, ReadError> {
    let export = ctx.export;
    let mut calls = Vec::new();
    let mut uncorrelated = 0u64;
    let scan = export.syncs(|s| {
        let Some(correlation) = s.place.correlation_id else {
            uncorrelated += 1;
            return;
        };
        let label = match s.kind() {
            SyncKind::Context => "Context sync",
            SyncKind::Event => "Event sync",
            SyncKind::Stream => "Stream sync",
            SyncKind::StreamWaitEvent => "Stream wait sync",
        };
        calls.push(SyncCall {
            pid: pid_of(s.place.global_pid),
            correlation,
            start: s.place.start,
            end: s.place.end,
            kind: ctx.run.names.intern(CUDA_SYNC, label),
        });
    })?;
    ctx.note_skipped(SYNCHRONIZATION, scan.skipped + uncorrelated);
    calls.sort_by_key(|s| (s.pid, s.correlation));
    Ok(SyncCalls(calls))
}
