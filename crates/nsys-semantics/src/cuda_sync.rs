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

pub use nsys2prv_events::CUDA_SYNC;

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

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::cuda_api::API;
    use crate::testing::{check, GLOBAL_PID};

    /// A synchronization is written on the thread of the API call with its
    /// correlation id, labelled by what it waited for (told by which of streamId
    /// and eventId apply: 4294967295 where one does not); one whose call was not
    /// traced is left out with a warning, one without a correlation id is skipped
    /// by the reader.
    #[test]
    fn a_synchronization_goes_to_the_thread_of_its_call() {
        let tid = GLOBAL_PID | 24_602;
        let na = 4_294_967_295_i64;
        check(
            &[API, SYNC],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaStreamSynchronize_v3020'),
                     (90002, 'cudaDeviceSynchronize_v3020'), (90003, 'cudaEventSynchronize_v3020');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (100, 900, 0, {tid}, 5, 90001, 0), (1000, 1900, 0, {tid}, 6, 90002, 0),
                        (2000, 2500, 0, {tid}, 7, 90003, 0);
                 INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      syncType, eventId)
                 VALUES (120, 880, 0, 1, 7, 5, {GLOBAL_PID}, 3, {na}),
                        (1010, 1890, 0, 1, {na}, 6, {GLOBAL_PID}, 4, {na}),
                        (2010, 2490, 0, 1, {na}, 7, {GLOBAL_PID}, 1, 3),
                        (3000, 3100, 0, 1, 7, 99, {GLOBAL_PID}, 3, {na}),
                        (4000, 4100, 0, 1, 7, NULL, {GLOBAL_PID}, 3, {na});"
            ),
            expect![[r#"
                100 24601.24602 63000000="cudaStreamSynchronize" 9200=5
                100 24601.24602 state 5 until 900
                120 24601.24602 9350="Stream sync"
                880 24601.24602 end 9350="Stream sync"
                900 24601.24602 end 63000000="cudaStreamSynchronize" 9200=5
                900 24601.24602 state 1 until 1000
                1000 24601.24602 63000000="cudaDeviceSynchronize" 9200=6
                1000 24601.24602 state 5 until 1900
                1010 24601.24602 9350="Context sync"
                1890 24601.24602 end 9350="Context sync"
                1900 24601.24602 end 63000000="cudaDeviceSynchronize" 9200=6
                1900 24601.24602 state 1 until 2000
                2000 24601.24602 63000000="cudaEventSynchronize" 9200=7
                2000 24601.24602 state 5 until 2500
                2010 24601.24602 9350="Event sync"
                2490 24601.24602 end 9350="Event sync"
                2500 24601.24602 end 63000000="cudaEventSynchronize" 9200=7
                warning: FIXTURE: 1 rows of CUPTI_ACTIVITY_KIND_SYNCHRONIZATION skipped (NULL where a value is required)
                warning: FIXTURE: 1 synchronizations have no API call with their correlation id and were left out
            "#]],
        );
    }
}
