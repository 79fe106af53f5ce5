//! Why a GPU is idle (issue 30, item 3) as a level on its stream rows: every idle
//! interval of a GPU (no kernel, NCCL kernel or memory operation running on any
//! stream of the device, between two of them) split into host-bound,
//! dependency/sync and other, as the `report` splits it from the trace
//! (docs/report.md, "Why a GPU is idle"; the split itself is
//! [`nsys2prv_events::split_idle_gap`], which both use). Each piece is type 9360
//! valued by its cause on the row of the operation that ends the interval, 0 where
//! the interval ends.
//!
//! What it needs is handed over by the passes that write it into the trace: the
//! GPU operations (kernels, memory), the launch arrows (CUDA API), the stream waits
//! (CUDA events) and the ends of host functions; it is written by the translation
//! once every pass has run. Only what the trace shows counts: operations, arrows
//! and waits left out by time limits, filters or unselected categories are not
//! handed over, so that the report, reading the trace, finds the same pieces.
//! Rows a cut applied where rows are read leaves out are handed over: the pieces
//! are those of the whole trace, which the merge's cut then cuts.
//!
//! The report reads the trace in order: at one time, communications first, then
//! interval ends, then begins and points, each by row; these rules follow that
//! order:
//!
//! * the operation that ends an interval is the first to begin at its end, on the
//!   first stream row of the GPU (then in the order the passes wrote them);
//! * its launch is the first arrow into its row (in trace order) whose operation
//!   begins at that time, if its call began at or before then (else the arrow is
//!   read after the operation began, and the operation has no launch known);
//! * its stream waited if a stream wait point on its row lies at or after the
//!   call of the arrow before (into the same row) and before its own call, or a
//!   host function on its row ended inside the interval (after its begin, up to
//!   its end).

use nsys2prv_events::{split_idle_gap, GPU_IDLE_CAUSE};
use paraver_writer::{EventPair, LocalThread};

use crate::context::ReportContext;
use crate::handoff::{Arrow, BusyOp, IdleInputs};
use crate::spilled_table::TableSpillError;

/// An arrow in trace order with what it found: whether its stream waited since
/// the arrow before. 24 bytes, as an [`Arrow`], so that the arrows are made
/// into launches where they lie (one per kernel: no second table beside them).
#[derive(Clone, Copy, Debug)]
struct Launch {
    stream: LocalThread,
    /// Its place among the stream's arrows in trace order (shifted left by
    /// one), and in the lowest bit whether its stream waited.
    order_waited: u32,
    op_start: i64,
    call: i64,
}

impl Launch {
    fn waited(&self) -> bool {
        self.order_waited & 1 == 1
    }
}

/// Splits every idle interval of every GPU of the report and writes its pieces;
/// the inputs are dropped. Fails if the spilled operations or arrows cannot be
/// read back.
pub(crate) fn write(ctx: &mut ReportContext) -> Result<(), TableSpillError> {
    let IdleInputs {
        ops,
        arrows,
        mut stream_waits,
        mut host_function_ends,
        ..
    } = std::mem::take(&mut ctx.gpu_idle);
    if ops.is_empty() {
        return Ok(());
    }
    // What they take once read back counts in the run's share (it spills
    // first if it holds more than the rest of its share).
    let row_bytes = |n: usize, size: usize| n * size;
    ctx.count_held_beside(
        row_bytes(ops.len(), std::mem::size_of::<BusyOp>())
            + row_bytes(arrows.len(), std::mem::size_of::<Arrow>()),
    );
    // Computed once per thread: the sorts below would compute them at every
    // comparison (2.4 % of the instructions of a training run).
    let orders: Vec<u128> = ctx.thread_keys.iter().map(|k| k.order_key()).collect();
    let order_of = |t: LocalThread| orders[t as usize];
    // A GPU is a device of a process: its streams' order keys without the stream.
    let gpu_of = |t: LocalThread| order_of(t) & !u128::from(u32::MAX);
    stream_waits.sort_unstable();
    host_function_ends.sort_unstable();
    let launches = launches_in_trace_order(arrows.into_rows()?, &stream_waits, order_of);
    drop(stream_waits);
    // Read back once the arrows are launches: the two are never held twice.
    let mut ops = ops.into_rows()?;
    // Operations of one row beginning together keep the passes' order: by
    // their places, so that the sort needs no buffer beside them (a stable
    // sort's is half their size).
    if u32::try_from(ops.len()).is_ok() {
        for (place, op) in (0u32..).zip(ops.iter_mut()) {
            op.place = place;
        }
        ops.sort_unstable_by_key(|o| (gpu_of(o.stream), o.start, order_of(o.stream), o.place));
    } else {
        ops.sort_by_key(|o| (gpu_of(o.stream), o.start, order_of(o.stream)));
    }
    let mut intervals = 0u64;
    let mut i = 0;
    while i < ops.len() {
        let gpu = gpu_of(ops[i].stream);
        let mut busy_until = ops[i].end;
        i += 1;
        while let Some(op) = ops.get(i).filter(|o| gpu_of(o.stream) == gpu) {
            if op.start > busy_until {
                let (begin, end, stream) = (busy_until, op.start, op.stream);
                let launch = launch_of(&launches, stream, end);
                let host_function = {
                    let ends = &host_function_ends;
                    let after = ends.partition_point(|&e| e <= (stream, begin));
                    ends.get(after)
                        .is_some_and(|&(s, t)| s == stream && t <= end)
                };
                let waited = host_function || launch.is_some_and(|l| l.waited());
                for (value, from, _) in split_idle_gap(begin, end, launch.map(|l| l.call), waited) {
                    ctx.run
                        .events(stream, from, &[EventPair::raw(GPU_IDLE_CAUSE, value)]);
                }
                ctx.run
                    .events(stream, end, &[EventPair::raw(GPU_IDLE_CAUSE, 0)]);
                intervals += 1;
            }
            busy_until = busy_until.max(op.end);
            i += 1;
        }
    }
    drop(ops);
    drop(launches);
    if intervals > 0 {
        ctx.count("GPU idle intervals", intervals);
    }
    ctx.count_held();
    Ok(())
}

/// The arrows with whether their stream waited, sorted by (stream, operation
/// begin, trace order) for [`launch_of`]; made where the arrows lie.
fn launches_in_trace_order(
    mut arrows: Vec<Arrow>,
    stream_waits: &[(LocalThread, i64)],
    order_of: impl Fn(LocalThread) -> u128,
) -> Vec<Launch> {
    // Trace order of a row's arrows: by time, then by the sender's row, then as
    // written (the sort is stable).
    arrows.sort_by_key(|a| (a.stream, a.call, order_of(a.sender)));
    // The stream of the arrow before, its call, and the next one's place.
    let mut stream = None;
    let (mut previous, mut order) = (i64::MIN, 0u32);
    let mut launches: Vec<Launch> = arrows
        .into_iter()
        .map(|a| {
            if stream != Some(a.stream) {
                stream = Some(a.stream);
                (previous, order) = (i64::MIN, 0);
            }
            // A wait at an arrow's time is read after it (points after
            // communications): it counts for the next arrow.
            let from = stream_waits.partition_point(|&w| w < (a.stream, previous));
            let waited = stream_waits
                .get(from)
                .is_some_and(|&(s, t)| s == a.stream && t < a.call);
            let launch = Launch {
                stream: a.stream,
                order_waited: order << 1 | u32::from(waited),
                op_start: a.op_start,
                call: a.call,
            };
            previous = a.call;
            order = order.wrapping_add(1);
            launch
        })
        .collect();
    // By place (the waited bit is below it).
    launches.sort_unstable_by_key(|l| (l.stream, l.op_start, l.order_waited));
    launches
}

/// The launch of the operation beginning at `start` on `stream`: the first arrow
/// to it in trace order, if read before the operation began.
fn launch_of(launches: &[Launch], stream: LocalThread, start: i64) -> Option<&Launch> {
    let at = launches.partition_point(|l| (l.stream, l.op_start) < (stream, start));
    launches
        .get(at)
        .filter(|l| l.stream == stream && l.op_start == start && l.call <= start)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use crate::cuda_api::API;
    use crate::cuda_events::CUDA_EVENTS;
    use crate::host_functions::HOST_FUNCTIONS;
    use crate::kernels::KERNELS;
    use crate::memory::MEMORY;
    use crate::testing::{records, translate, GLOBAL_PID};
    use crate::Category;

    /// One GPU, streams 7 and 8, four idle intervals:
    ///
    /// * [300, 1100) before kernel 2, launched at 1000: host-bound until then,
    ///   then other (launch latency);
    /// * [1200, 3000) before kernel 3, launched at 1400 after a
    ///   `cudaStreamWaitEvent` on its stream (the point at 1340, after the
    ///   launch before at 1000): host-bound, then dependency;
    /// * [3200, 4000): the copy on stream 8 (3050-3200) kept the GPU busy past
    ///   kernel 3; kernel 4 has no call with its correlation id: other;
    /// * [4100, 5000) before kernel 5, launched at 4200, its stream waiting for a
    ///   host function (4300-4800): host-bound, then dependency.
    ///
    /// Each on the row of the operation that ends it, 0 at its end.
    const ALL_CAUSES: &str = "
        INSERT INTO StringIds VALUES (90001, 'cudaLaunchKernel_v7000'), (90002, 'k'),
            (90003, 'cudaStreamWaitEvent_v3020'), (90004, 'cudaMemcpyAsync_v3020'),
            (90005, 'cudaLaunchHostFunc_v10000');
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
            (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
        VALUES (100, 150, 0, TID, 1, 90001, 0), (1000, 1050, 0, TID, 2, 90001, 0),
               (1300, 1350, 0, TID, 3, 90003, 0), (1400, 1450, 0, TID, 4, 90001, 0),
               (2900, 2950, 0, TID, 5, 90004, 0), (4150, 4160, 0, TID, 7, 90005, 0),
               (4200, 4250, 0, TID, 6, 90001, 0);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
            (start, end, deviceId, contextId, streamId, correlationId, globalPid,
             demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
             blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
             localMemoryPerThread, localMemoryTotal, gridId)
        VALUES (200, 300, 0, 1, 7, 1, PID, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 1),
               (1100, 1200, 0, 1, 7, 2, PID, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 2),
               (3000, 3100, 0, 1, 7, 4, PID, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 3),
               (4000, 4100, 0, 1, 8, 99, PID, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 4),
               (5000, 5100, 0, 1, 8, 6, PID, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 5);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY
            (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind)
        VALUES (3050, 3200, 0, 1, 8, 5, PID, 64, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
            (start, end, deviceId, contextId, streamId, correlationId, globalPid,
             syncType, eventId, eventSyncId)
        VALUES (1310, 1340, 0, 1, 7, 3, PID, 2, 1, NULL);
        INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH
            (start, end, deviceId, contextId, streamId, correlationId, globalPid,
             graphNodeId, graphId)
        VALUES (4300, 4800, 0, 1, 8, 7, PID, NULL, NULL);";

    /// The records of type 9360 of the fixture translated with `categories`.
    fn idle_causes(categories: &[Category]) -> String {
        let sql = ALL_CAUSES
            .replace("TID", &(GLOBAL_PID | 24_602).to_string())
            .replace("PID", &GLOBAL_PID.to_string());
        records(&translate(categories, &sql))
            .lines()
            .filter(|l| l.contains(" 9360="))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn every_idle_interval_is_split_on_the_row_of_the_operation_that_ends_it() {
        expect![[r#"
            300 24601:gpu0/s7 9360=1
            1000 24601:gpu0/s7 9360=3
            1100 24601:gpu0/s7 9360=0
            1200 24601:gpu0/s7 9360=1
            1400 24601:gpu0/s7 9360=2
            3000 24601:gpu0/s7 9360=0
            3200 24601:gpu0/s8 9360=3
            4000 24601:gpu0/s8 9360=0
            4100 24601:gpu0/s8 9360=1
            4200 24601:gpu0/s8 9360=2
            5000 24601:gpu0/s8 9360=0
        "#]]
        .assert_eq(&idle_causes(&[
            API,
            KERNELS,
            MEMORY,
            CUDA_EVENTS,
            HOST_FUNCTIONS,
        ]));
    }

    /// Without the API calls no operation is known to be launched: every interval
    /// is other; without the stream waits and host functions, what waited is
    /// other; without kernels nothing is written.
    #[test]
    fn what_the_trace_does_not_show_is_other() {
        expect![[r#"
            300 24601:gpu0/s7 9360=3
            1100 24601:gpu0/s7 9360=0
            1200 24601:gpu0/s7 9360=3
            3000 24601:gpu0/s7 9360=0
            3200 24601:gpu0/s8 9360=3
            4000 24601:gpu0/s8 9360=0
            4100 24601:gpu0/s8 9360=3
            5000 24601:gpu0/s8 9360=0
        "#]]
        .assert_eq(&idle_causes(&[
            KERNELS,
            MEMORY,
            CUDA_EVENTS,
            HOST_FUNCTIONS,
        ]));
        expect![[r#"
            300 24601:gpu0/s7 9360=1
            1000 24601:gpu0/s7 9360=3
            1100 24601:gpu0/s7 9360=0
            1200 24601:gpu0/s7 9360=1
            1400 24601:gpu0/s7 9360=3
            3000 24601:gpu0/s7 9360=0
            3200 24601:gpu0/s8 9360=3
            4000 24601:gpu0/s8 9360=0
            4100 24601:gpu0/s8 9360=1
            4200 24601:gpu0/s8 9360=3
            5000 24601:gpu0/s8 9360=0
        "#]]
        .assert_eq(&idle_causes(&[API, KERNELS, MEMORY]));
        assert_eq!(idle_causes(&[API, MEMORY, CUDA_EVENTS]), "");
    }
}
