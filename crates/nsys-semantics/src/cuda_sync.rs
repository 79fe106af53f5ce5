//! Host-side CUDA synchronizations (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`). A row
//! names only the process; the thread comes from the API call with the same
//! correlation id, so the rows are emitted from the API side.

use nsys_reader::cuda::{SyncKind, SYNCHRONIZATION};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;
use paraver_writer::{EventTypeInfo, ValueLabels};

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::handoff::{SyncCall, SyncCalls};
use crate::types::interval;
use crate::view::bundled_view;

/// Kind of a host-side CUDA synchronization (event, stream, context). Not 9300,
/// which nsys2prv reserves for MPI, nor 9301-9305, its CUDA events (0.6).
pub const CUDA_SYNC: u32 = 9350;

pub const SYNC: Category = Category::named("sync");

/// Its pass collects the rows; the API pass writes them on the calls' threads.
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: SYNC,
    aliases: &["synchronization"],
    bsc_names: &[],
    groups: &["cuda"],
    tables: &["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"],
    table_prefixes: &[],
    bytes_per_row: 58,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/cuda_synchronization.cfg",
            "When do CPU threads wait for the GPU, and on what (event, stream, context)?",
        ),
        bundled_view!(
            "analysis/cuda_sync_profile.cfg",
            "How long does each CPU thread wait for the GPU, per kind of synchronization?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::CallContext,
        run: pass,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![interval(
        CUDA_SYNC,
        "CUDA synchronization",
        ValueLabels::Names,
    )]
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    ctx.handoff.syncs = collect(ctx)?;
    Ok(())
}

fn collect(ctx: &mut ReportContext) -> Result<SyncCalls, ReadError> {
    let export = ctx.export;
    let mut calls = Vec::new();
    let mut uncorrelated = 0u64;
    let scan = export.syncs(|s| {
        if !ctx.within_limits(s.place.start, s.place.end) {
            return Ok(());
        }
        let Some(correlation) = s.place.correlation_id else {
            uncorrelated += 1;
            return Ok(());
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
        Ok(())
    })?;
    ctx.note_skipped(SYNCHRONIZATION, scan.skipped + uncorrelated);
    Ok(SyncCalls::new(calls))
}
