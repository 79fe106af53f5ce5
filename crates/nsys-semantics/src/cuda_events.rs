//! CUDA events (`CUPTI_ACTIVITY_KIND_CUDA_EVENT`) and the synchronizations that
//! wait for them, so a view shows who waited on whom:
//!
//! * each `cudaEventRecord` is a point on the GPU stream it was recorded on
//!   (9301 = 1, 9302 = event id, 9303 = sync id where recorded), at the device's
//!   completion time when nsys collected it (2025.5+), else at the end of the
//!   `cudaEventRecord` call (nsys records no device time before);
//! * a host wait (`cudaEventSynchronize`: SYNCHRONIZATION rows with an event and
//!   no stream) is a point on the CPU thread of the call, at its end (9301 = 2);
//! * a stream wait (`cudaStreamWaitEvent`: with an event and a stream) is a point
//!   on the waiting stream's row, at the end of the call (9301 = 3);
//! * a communication (tag 55003) goes from the record to each wait on it. The
//!   record a wait waits for is the one with the same `eventSyncId` (nsys 2025.1+
//!   syncs, 2025.5+ records), else the latest record of the same event issued
//!   before the wait (the largest smaller correlation id of the process: CUDA
//!   waits for the most recent record).
//!
//! The host-side interval of every sync stays 9350 on the CPU thread (`sync`).
//! Pairing needs the records of the report in memory (about 48 bytes each; one
//! per cudaEventRecord call), and so do the waits until their records are known.

use nsys_reader::cuda::SYNCHRONIZATION;
use nsys_reader::cuda_events::{CallSite, EventRecord, EventWait, CUDA_EVENT};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;
use paraver_writer::{Comm, EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{ReportContext, ThreadKey};
use crate::handoff::{owner_among, TAG_EVENT_WAIT};
use crate::types::point;
use crate::view::bundled_view;

pub use nsys2prv_events::CUDA_EVENT_OP;
pub const CUDA_EVENT_ID: u32 = 9302;
pub const CUDA_EVENT_SYNC_ID: u32 = 9303;

const RECORD: i64 = 1;
const HOST_WAIT: i64 = 2;
const STREAM_WAIT: i64 = nsys2prv_events::CUDA_EVENT_STREAM_WAIT;

pub const CUDA_EVENTS: Category = Category::named("cuda-events");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: CUDA_EVENTS,
    aliases: &["events"],
    bsc_names: &["cuda_events"],
    groups: &[],
    tables: &["CUPTI_ACTIVITY_KIND_CUDA_EVENT"],
    table_prefixes: &[],
    bytes_per_row: 145,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/cuda_events.cfg",
            "Where are CUDA events recorded and waited for, and which record does each wait wait for?",
        ),
        bundled_view!(
            "analysis/cuda_events_count.cfg",
            "How many CUDA events does each thread and stream record, wait for, or make a stream wait for?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![
        point(
            CUDA_EVENT_OP,
            "CUDA event",
            ValueLabels::fixed(&[
                (RECORD, "Record (cudaEventRecord)"),
                (HOST_WAIT, "Host waits (cudaEventSynchronize)"),
                (STREAM_WAIT, "Stream waits (cudaStreamWaitEvent)"),
            ]),
        ),
        point(CUDA_EVENT_ID, "CUDA event id", ValueLabels::Numeric),
        point(
            CUDA_EVENT_SYNC_ID,
            "CUDA event sync id",
            ValueLabels::Numeric,
        ),
    ]
}

/// A record placed on the trace.
#[derive(Clone, Copy, Debug)]
struct Placed {
    pid: u32,
    event_id: i64,
    correlation: i64,
    time: i64,
    thread: LocalThread,
}

#[derive(Default)]
struct Tally {
    records: u64,
    untimed_records: u64,
    waits: u64,
    threadless_waits: u64,
    arrows: u64,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let mut records: Vec<EventRecord> = Vec::new();
    let record_scan = export.event_records(|r| {
        records.push(*r);
        Ok(())
    })?;
    let mut waits: Vec<EventWait> = Vec::new();
    let wait_scan = export.event_waits(|w| {
        waits.push(*w);
        Ok(())
    })?;
    ctx.note_skipped(CUDA_EVENT, record_scan.skipped);
    ctx.note_skipped(SYNCHRONIZATION, wait_scan.skipped);
    if records.is_empty() && waits.is_empty() {
        return Ok(());
    }
    let mut sites: Vec<CallSite> = Vec::new();
    export.event_call_sites(|c| {
        sites.push(*c);
        Ok(())
    })?;
    let calls = CallSites::new(sites);
    let mut tally = Tally::default();
    let placed = place_records(ctx, &records, &calls, &mut tally);
    drop(records);
    let by_sync_id: FxHashMap<(u32, i64), usize> = placed
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some(((p.placed.pid, p.sync_id?), i)))
        .collect();
    let placed: Vec<Placed> = placed.into_iter().map(|p| p.placed).collect();
    for wait in &waits {
        place_wait(ctx, wait, &placed, &by_sync_id, &calls, &mut tally);
    }
    record_counts(ctx, &tally);
    Ok(())
}

/// The API calls behind records and waits, by (pid, correlation id); calls
/// that share an id keep their table order. A record (which has no time of its
/// own before nsys 2025.5) takes the first; a host wait the one that holds it
/// (see [`owner_among`]).
struct CallSites(Vec<CallSite>);

impl CallSites {
    fn new(mut sites: Vec<CallSite>) -> Self {
        sites.sort_by_key(|c| (pid_of(c.global_tid), c.correlation_id));
        CallSites(sites)
    }

    fn of(&self, pid: u32, correlation: i64) -> &[CallSite] {
        let key = |c: &CallSite| (pid_of(c.global_tid), c.correlation_id);
        let lo = self.0.partition_point(|c| key(c) < (pid, correlation));
        let hi = self.0.partition_point(|c| key(c) <= (pid, correlation));
        &self.0[lo..hi]
    }
}

struct PlacedRecord {
    placed: Placed,
    sync_id: Option<i64>,
}

/// Writes the records and returns them sorted by (pid, event, correlation).
fn place_records(
    ctx: &mut ReportContext,
    records: &[EventRecord],
    calls: &CallSites,
    tally: &mut Tally,
) -> Vec<PlacedRecord> {
    let mut placed = Vec::with_capacity(records.len());
    for r in records {
        let pid = pid_of(r.global_pid);
        let call = r.correlation_id.and_then(|c| calls.of(pid, c).first());
        let Some(time) = r.timestamp.or(call.map(|c| c.end)) else {
            tally.untimed_records += 1;
            continue;
        };
        if !ctx.within_limits(time, time) {
            continue;
        }
        let thread = ctx.thread(ThreadKey::stream(
            pid,
            r.device_id as u32,
            r.stream_id as u32,
        ));
        let mut pairs = vec![EventPair::raw(CUDA_EVENT_OP, RECORD)];
        if r.event_id != 0 {
            pairs.push(EventPair::raw(CUDA_EVENT_ID, r.event_id));
        }
        if let Some(s) = r.event_sync_id.filter(|&s| s != 0) {
            pairs.push(EventPair::raw(CUDA_EVENT_SYNC_ID, s));
        }
        ctx.run.events(thread, time, &pairs);
        tally.records += 1;
        placed.push(PlacedRecord {
            placed: Placed {
                pid,
                event_id: r.event_id,
                correlation: r.correlation_id.unwrap_or(0),
                time,
                thread,
            },
            sync_id: r.event_sync_id,
        });
    }
    placed.sort_by_key(|p| (p.placed.pid, p.placed.event_id, p.placed.correlation));
    placed
}

/// The record a wait waits for.
fn record_of<'p>(
    wait: &EventWait,
    pid: u32,
    placed: &'p [Placed],
    by_sync_id: &FxHashMap<(u32, i64), usize>,
) -> Option<&'p Placed> {
    if let Some(&i) = wait.event_sync_id.and_then(|s| by_sync_id.get(&(pid, s))) {
        return placed.get(i);
    }
    // Records of (pid, event) in correlation order; the wait's correlation id (or,
    // without one, its start time) says which came before it.
    let lo = placed.partition_point(|p| (p.pid, p.event_id) < (pid, wait.event_id));
    let hi = placed.partition_point(|p| (p.pid, p.event_id) <= (pid, wait.event_id));
    let same = &placed[lo..hi];
    match wait.correlation_id {
        Some(c) => same.iter().rev().find(|p| p.correlation < c),
        None => same
            .iter()
            .filter(|p| p.time <= wait.start)
            .max_by_key(|p| p.time),
    }
}

fn place_wait(
    ctx: &mut ReportContext,
    wait: &EventWait,
    placed: &[Placed],
    by_sync_id: &FxHashMap<(u32, i64), usize>,
    calls: &CallSites,
    tally: &mut Tally,
) {
    if !ctx.within_limits(wait.start, wait.end) {
        return;
    }
    let pid = pid_of(wait.global_pid);
    let (thread, op) = match wait.stream_id {
        Some(stream) => (
            ctx.thread(ThreadKey::stream(pid, wait.device_id as u32, stream as u32)),
            STREAM_WAIT,
        ),
        None => {
            let call = wait.correlation_id.and_then(|c| {
                owner_among(calls.of(pid, c), |s| (s.start, s.end), wait.start, wait.end)
            });
            let Some(call) = call else {
                tally.threadless_waits += 1;
                return;
            };
            (ctx.cpu_thread(call.global_tid), HOST_WAIT)
        }
    };
    let mut pairs = vec![EventPair::raw(CUDA_EVENT_OP, op)];
    if wait.event_id != 0 {
        pairs.push(EventPair::raw(CUDA_EVENT_ID, wait.event_id));
    }
    if let Some(s) = wait.event_sync_id.filter(|&s| s != 0) {
        pairs.push(EventPair::raw(CUDA_EVENT_SYNC_ID, s));
    }
    ctx.run.events(thread, wait.end, &pairs);
    if op == STREAM_WAIT {
        ctx.gpu_idle.stream_wait(thread, wait.end);
    }
    tally.waits += 1;
    if let Some(record) = record_of(wait, pid, placed, by_sync_id) {
        // The wait cannot be over before the record completed.
        ctx.run.comm(
            record.thread,
            record.time,
            Comm {
                send_physical: record.time,
                receiver: thread,
                recv_logical: wait.start.max(record.time),
                recv_physical: wait.end.max(record.time),
                size: 0,
                tag: TAG_EVENT_WAIT,
            },
        );
        tally.arrows += 1;
    }
}

fn record_counts(ctx: &mut ReportContext, tally: &Tally) {
    let counts = [
        (CUDA_EVENT, tally.records),
        ("CUDA event waits", tally.waits),
        ("CUDA event arrows", tally.arrows),
    ];
    for (what, n) in counts {
        if n > 0 {
            ctx.count(what, n);
        }
    }
    let path = ctx.export.path().display().to_string();
    if tally.untimed_records > 0 {
        ctx.warnings.push(format!(
            "{path}: {} CUDA event records left out: no device time and no cudaEventRecord call with their correlation id",
            tally.untimed_records
        ));
        ctx.count("CUDA event records without a time", tally.untimed_records);
    }
    if tally.threadless_waits > 0 {
        ctx.warnings.push(format!(
            "{path}: {} CUDA event synchronizations left out: no API call with their correlation id",
            tally.threadless_waits
        ));
        ctx.count("CUDA event waits without a thread", tally.threadless_waits);
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::testing::{check, GLOBAL_PID};

    /// Records are points on their stream, at the device's time or else at the
    /// end of their `cudaEventRecord` call (one with neither is left out with a
    /// warning); a host wait is a point on the thread of its call, a stream wait
    /// on the waiting stream, both at the end of the wait. Each wait gets an arrow
    /// from its record: the one with its sync id when it has one (event 2: record
    /// 14, not the later 15), else the latest record of the event issued before
    /// it (event 1: record 11 for both waits, not 10 before it nor 17 after).
    #[test]
    fn waits_are_paired_with_their_records() {
        let tid = GLOBAL_PID | 24_602;
        let na = 4_294_967_295_i64;
        check(
            &[CUDA_EVENTS],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaEventRecord_v3020'),
                     (90002, 'cudaEventSynchronize_v3020'), (90003, 'cudaStreamWaitEvent_v3020');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (100, 150, 0, {tid}, 10, 90001, 0), (200, 250, 0, {tid}, 11, 90001, 0),
                        (500, 700, 0, {tid}, 12, 90002, 0), (800, 820, 0, {tid}, 13, 90003, 0),
                        (850, 860, 0, {tid}, 14, 90001, 0), (870, 880, 0, {tid}, 15, 90001, 0),
                        (1000, 1100, 0, {tid}, 16, 90002, 0), (1200, 1210, 0, {tid}, 17, 90001, 0);
                 INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT
                     (timestamp, deviceId, contextId, streamId, correlationId, globalPid, eventId,
                      eventSyncId)
                 VALUES (0, 0, 1, 7, 10, {GLOBAL_PID}, 1, NULL),
                        (400, 0, 1, 7, 11, {GLOBAL_PID}, 1, NULL),
                        (900, 0, 1, 7, 14, {GLOBAL_PID}, 2, 77),
                        (950, 0, 1, 7, 15, {GLOBAL_PID}, 2, 78),
                        (1300, 0, 1, 7, 17, {GLOBAL_PID}, 1, NULL),
                        (0, 0, 1, 7, 99, {GLOBAL_PID}, 3, NULL);
                 INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      syncType, eventId, eventSyncId)
                 VALUES (510, 690, 0, 1, {na}, 12, {GLOBAL_PID}, 1, 1, NULL),
                        (805, 815, 0, 1, 8, 13, {GLOBAL_PID}, 2, 1, NULL),
                        (1010, 1090, 0, 1, {na}, 16, {GLOBAL_PID}, 1, 2, 77);"
            ),
            expect![[r#"
                150 24601:gpu0/s7 9301=1 9302=1
                400 24601:gpu0/s7 comm to 24601.24602 at 510 (physical send 400, receive 690) size 0 tag 55003
                400 24601:gpu0/s7 comm to 24601:gpu0/s8 at 805 (physical send 400, receive 815) size 0 tag 55003
                400 24601:gpu0/s7 9301=1 9302=1
                690 24601.24602 9301=2 9302=1
                815 24601:gpu0/s8 9301=3 9302=1
                900 24601:gpu0/s7 comm to 24601.24602 at 1010 (physical send 900, receive 1090) size 0 tag 55003
                900 24601:gpu0/s7 9301=1 9302=2 9303=77
                950 24601:gpu0/s7 9301=1 9302=2 9303=78
                1090 24601.24602 9301=2 9302=2 9303=77
                1300 24601:gpu0/s7 9301=1 9302=1
                warning: FIXTURE: 1 CUDA event records left out: no device time and no cudaEventRecord call with their correlation id
            "#]],
        );
    }
}
