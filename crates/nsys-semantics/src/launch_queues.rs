//! Launch queues of GPU streams (issue 30, item 4): for every kernel an API call
//! launched, its launch latency (the call's begin to the kernel's begin) with
//! the kernel, and per stream the depth of its launch queue over time (kernels
//! whose launch call has begun and which have not started) as a level on the
//! stream's row. Fed by the CUDA API pass with each kernel it finds launched;
//! written once the calls are read, one stream at a time in time order.
//!
//! A kernel is queued from the begin of its launch call, not its return: the
//! GPU may start a kernel before the call that launched it returns (an empty
//! stream starts it at once), so from the return the queue would miss the
//! kernels it holds for the shortest time, and the latency would be negative.
//! A kernel that began before its call did (clocks of the CPU and the GPU
//! apart) has no latency and does not count in the queue: it is counted.

use paraver_writer::{EventPair, LocalThread, DISCARDED};

use crate::context::ReportContext;
use crate::handoff::GpuLinks;

pub use nsys2prv_events::{LAUNCH_LATENCY, LAUNCH_QUEUE_DEPTH};

/// A kernel with the begin of the call that launched it: 32 bytes, as a
/// [`crate::handoff::GpuLink`], so that the links are made into launches where they lie.
#[derive(Clone, Copy, Debug)]
struct Launch {
    stream: LocalThread,
    call: i64,
    start: i64,
    end: i64,
}

/// No call launched the link (yet).
const NO_CALL: i64 = i64::MIN;

/// The begins of the calls that launched the report's kernels, gathered while
/// the API calls are read: one per launch link, by the link's place (8 bytes
/// per link; the kernel's stream, begin and end stay in the link). The queues
/// are made from the links once the calls are read.
#[derive(Default)]
pub(crate) struct LaunchQueues {
    calls: Vec<i64>,
}

impl LaunchQueues {
    /// Queues for the kernels of `links`, room for one call begin per link
    /// reserved up front (issue 28: counted in the run's share through
    /// [`LaunchQueues::bytes`] from the first call on).
    pub fn for_links(links: &GpuLinks) -> Self {
        LaunchQueues {
            calls: vec![NO_CALL; links.len()],
        }
    }

    /// Bytes held (allocated, used or not).
    pub fn bytes(&self) -> usize {
        self.calls.capacity() * std::mem::size_of::<i64>()
    }

    /// The link at `place` (among the sorted links) was launched by a call that
    /// began at `call`.
    pub fn add(&mut self, place: usize, call: i64) {
        if let Some(c) = self.calls.get_mut(place) {
            *c = call;
        }
    }

    /// Writes the latencies and the depths of every stream, and counts them;
    /// the links are dropped. Depth changes before a time limit's start are
    /// written as one at that start (the depth there).
    pub fn write(self, ctx: &mut ReportContext, links: GpuLinks) {
        let window_start = ctx.options.time_limits.start.unwrap_or(i64::MIN);
        let (mut kernels, not_after_call) = launches_of(links, self.calls);
        kernels.sort_unstable_by_key(|l| (l.stream, l.start, l.call, l.end));
        let launches = kernels.len() as u64;
        let mut calls: Vec<i64> = Vec::new();
        let mut changes = 0u64;
        for stream in kernels.chunk_by(|a, b| a.stream == b.stream) {
            calls.clear();
            calls.extend(stream.iter().map(|k| k.call));
            if !calls.is_sorted() {
                calls.sort_unstable();
            }
            changes += write_stream(ctx, stream[0].stream, stream, &calls, window_start);
        }
        if launches > 0 {
            ctx.count("kernel launch latencies", launches);
            ctx.count("launch queue depth changes", changes);
        }
        if not_after_call > 0 {
            ctx.count(
                "kernels beginning before their launch call (no launch latency)",
                not_after_call,
            );
        }
    }
}

/// The queued kernels of `links` with their calls' begins (`calls`, by link),
/// made where the links lie (same size: no second table beside them), and how
/// many kernels began at or before their launch call's begin. Memory
/// operations, plain launches, kernels no call launched and a left-out
/// process's kernels (on the discarded thread) have no queue.
fn launches_of(links: GpuLinks, calls: Vec<i64>) -> (Vec<Launch>, u64) {
    let mut not_after_call = 0u64;
    let launches = links
        .into_vec()
        .into_iter()
        .zip(calls)
        .filter_map(|(link, call)| {
            let end = link.kernel_end()?;
            if call == NO_CALL || link.thread == DISCARDED {
                return None;
            }
            if link.start <= call {
                not_after_call += 1;
                return None;
            }
            Some(Launch {
                stream: link.thread,
                call,
                start: link.start,
                end,
            })
        })
        .collect();
    (launches, not_after_call)
}

/// The latencies and depth changes of one stream's kernels (sorted by start;
/// `calls` their launch calls' begins, sorted), in time order; returns the
/// depth changes written. The depth moves up at each call and down at each
/// start: the two sorted lists are swept together, one time at a time.
fn write_stream(
    ctx: &mut ReportContext,
    stream: LocalThread,
    kernels: &[Launch],
    calls: &[i64],
    window_start: i64,
) -> u64 {
    let mut written = 0i64;
    let mut changes = 0u64;
    let mut depth = 0i64;
    let mut next_kernel = 0;
    // The next call and the next start of the sweep.
    let (mut c, mut s) = (0, 0);
    let next_time = |c: usize, s: usize| match (calls.get(c), kernels.get(s)) {
        (Some(&call), Some(k)) => Some(call.min(k.start)),
        (Some(&call), None) => Some(call),
        (None, Some(k)) => Some(k.start),
        (None, None) => None,
    };
    while let Some(time) = next_time(c, s) {
        while calls.get(c) == Some(&time) {
            depth += 1;
            c += 1;
        }
        while kernels.get(s).is_some_and(|k| k.start == time) {
            depth -= 1;
            s += 1;
        }
        // Before the window, the depth is carried to its start.
        if time < window_start && next_time(c, s).is_some_and(|t| t <= window_start) {
            continue;
        }
        let at = time.max(window_start);
        let change = depth != written;
        // The kernels that begin by then, in time order with the depth: a
        // change at the last one's begin goes on its record.
        while let Some(k) = kernels.get(next_kernel).filter(|k| k.start <= at) {
            next_kernel += 1;
            let last = kernels.get(next_kernel).is_none_or(|n| n.start > at);
            if change && last && k.start == at {
                let pairs = [latency(k), EventPair::raw(LAUNCH_QUEUE_DEPTH, depth)];
                ctx.run
                    .interval_then_events(stream, k.start, k.end, &pairs, 1);
                written = depth;
                changes += 1;
            } else {
                ctx.run.interval(stream, k.start, k.end, &[latency(k)]);
            }
        }
        if depth != written {
            ctx.run
                .events(stream, at, &[EventPair::raw(LAUNCH_QUEUE_DEPTH, depth)]);
            written = depth;
            changes += 1;
        }
    }
    for k in &kernels[next_kernel..] {
        ctx.run.interval(stream, k.start, k.end, &[latency(k)]);
    }
    changes
}

fn latency(k: &Launch) -> EventPair {
    EventPair::raw(LAUNCH_LATENCY, k.start - k.call)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::cuda_api::API;
    use crate::kernels::KERNELS;
    use crate::testing::{check, GLOBAL_PID};

    /// The queues hold one call begin per link, reserved before the calls are
    /// read (8 bytes per kernel, issue 28: they held a 24-byte copy of each
    /// kernel, beside its link); the launches are made from the links where
    /// they lie: memory operations, plain launches, kernels no call launched
    /// or that began before their call, and a left-out process's kernels (on
    /// the discarded thread) have none.
    #[test]
    fn queues_hold_a_call_begin_per_link_and_reuse_the_links() {
        use crate::handoff::GpuLinks;
        use nsys_reader::cuda::GpuPlace;
        let place = |corr, start, end| GpuPlace {
            global_pid: 1 << 24,
            correlation_id: Some(corr),
            start,
            end,
            ..Default::default()
        };
        let mut links = GpuLinks::default();
        for corr in 0..300 {
            let stream = if corr % 3 == 0 { 2 } else { 5 };
            links.add_kernel(&place(corr, 1000 + corr, 1001 + corr), stream, corr == 7);
        }
        links.add_memory(&place(300, 10, 20), 2, 64);
        links.add_launch(&place(301, 10, 20), 2, false);
        links.add_kernel(&place(302, 10, 20), paraver_writer::DISCARDED, false);
        links.sort();
        let mut queues = LaunchQueues::for_links(&links);
        assert_eq!(queues.bytes(), 303 * std::mem::size_of::<i64>());
        // Every link but kernel 5 launched, kernel 6 after it began.
        for place in (0..303).filter(|&p| p != 5) {
            let call = if place == 6 { 2000 } else { 0 };
            queues.add(place, call);
        }
        assert_eq!(queues.bytes(), 303 * std::mem::size_of::<i64>());
        assert_eq!(
            std::mem::size_of::<Launch>(),
            std::mem::size_of::<crate::handoff::GpuLink>()
        );
        let held = links.iter().next().map(|l| l as *const _ as usize);
        let (launches, not_after_call) = launches_of(links, queues.calls);
        assert_eq!((launches.len(), not_after_call), (298, 1));
        assert_eq!(
            launches.as_ptr() as usize,
            held.unwrap(),
            "made where the links lie"
        );
        assert!(launches
            .iter()
            .all(|l| l.stream != paraver_writer::DISCARDED));
        assert_eq!(launches.iter().filter(|l| l.stream == 2).count(), 99);
    }

    /// Three kernels on stream 7 launched in a burst (calls at 100, 200, 300;
    /// kernels at 1000, 2000, 3000) queue up to 3 deep; a kernel on stream 8
    /// starts before its call returns (depth 1 for 50 ns); each carries its
    /// latency from its call's begin. A kernel that begins before its call does
    /// (CPU and GPU clocks apart) has no latency and is not queued; a kernel
    /// without a call is neither.
    #[test]
    fn latency_per_kernel_and_depth_per_stream() {
        let tid = GLOBAL_PID | 24_602;
        check(
            &[API, KERNELS],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaLaunchKernel_v7000'), (90002, 'k');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (100, 150, 0, {tid}, 1, 90001, 0), (200, 250, 0, {tid}, 2, 90001, 0),
                        (300, 350, 0, {tid}, 3, 90001, 0), (400, 500, 0, {tid}, 4, 90001, 0),
                        (5000, 5100, 0, {tid}, 5, 90001, 0);
                 INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
                      blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
                      localMemoryPerThread, localMemoryTotal, gridId)
                 VALUES (1000, 1900, 0, 1, 7, 1, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 1),
                        (2000, 2900, 0, 1, 7, 2, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 2),
                        (3000, 3900, 0, 1, 7, 3, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 3),
                        (450, 600, 0, 1, 8, 4, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 4),
                        (4990, 5010, 0, 1, 8, 5, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 5),
                        (6000, 6100, 0, 1, 8, 99, {GLOBAL_PID}, 90002, 90002, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 6);"
            ),
            expect![[r#"
                100 24601.24602 comm to 24601:gpu0/s7 at 1000 (physical send 100, receive 1000) size 0 tag 55001
                100 24601.24602 63000000="cudaLaunchKernel" 9200=1
                100 24601:gpu0/s7 9210=1
                100 24601.24602 state 32 until 150
                150 24601.24602 end 63000000="cudaLaunchKernel" 9200=1
                150 24601.24602 state 1 until 200
                200 24601.24602 comm to 24601:gpu0/s7 at 2000 (physical send 200, receive 2000) size 0 tag 55001
                200 24601.24602 63000000="cudaLaunchKernel" 9200=2
                200 24601:gpu0/s7 9210=2
                200 24601.24602 state 32 until 250
                250 24601.24602 end 63000000="cudaLaunchKernel" 9200=2
                250 24601.24602 state 1 until 300
                300 24601.24602 comm to 24601:gpu0/s7 at 3000 (physical send 300, receive 3000) size 0 tag 55001
                300 24601.24602 63000000="cudaLaunchKernel" 9200=3
                300 24601:gpu0/s7 9210=3
                300 24601.24602 state 32 until 350
                350 24601.24602 end 63000000="cudaLaunchKernel" 9200=3
                350 24601.24602 state 1 until 400
                400 24601.24602 comm to 24601:gpu0/s8 at 450 (physical send 400, receive 450) size 0 tag 55001
                400 24601.24602 63000000="cudaLaunchKernel" 9200=4
                400 24601:gpu0/s8 9210=1
                400 24601.24602 state 32 until 500
                450 24601:gpu0/s8 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=4
                450 24601:gpu0/s8 9211=50 9210=0
                450 24601:gpu0/s8 state 1 until 600
                500 24601.24602 end 63000000="cudaLaunchKernel" 9200=4
                500 24601.24602 state 1 until 5000
                600 24601:gpu0/s8 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=4
                600 24601:gpu0/s8 end 9211=50
                600 24601:gpu0/s7 9360=3
                600 24601:gpu0/s8 state 0 until 4990
                1000 24601:gpu0/s7 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=1
                1000 24601:gpu0/s7 9211=900 9210=2
                1000 24601:gpu0/s7 9360=0
                1000 24601:gpu0/s7 state 1 until 1900
                1900 24601:gpu0/s7 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=1
                1900 24601:gpu0/s7 end 9211=900
                1900 24601:gpu0/s7 9360=3
                1900 24601:gpu0/s7 state 0 until 2000
                2000 24601:gpu0/s7 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=2
                2000 24601:gpu0/s7 9211=1800 9210=1
                2000 24601:gpu0/s7 9360=0
                2000 24601:gpu0/s7 state 1 until 2900
                2900 24601:gpu0/s7 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=2
                2900 24601:gpu0/s7 end 9211=1800
                2900 24601:gpu0/s7 9360=3
                2900 24601:gpu0/s7 state 0 until 3000
                3000 24601:gpu0/s7 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=3
                3000 24601:gpu0/s7 9211=2700 9210=0
                3000 24601:gpu0/s7 9360=0
                3000 24601:gpu0/s7 state 1 until 3900
                3900 24601:gpu0/s7 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=3
                3900 24601:gpu0/s7 end 9211=2700
                3900 24601:gpu0/s8 9360=3
                4990 24601:gpu0/s8 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=5
                4990 24601:gpu0/s8 9360=0
                4990 24601:gpu0/s8 state 1 until 5010
                5000 24601.24602 comm to 24601:gpu0/s8 at 4990 (physical send 5000, receive 4990) size 0 tag 55001
                5000 24601.24602 63000000="cudaLaunchKernel" 9200=5
                5000 24601.24602 state 32 until 5100
                5010 24601:gpu0/s8 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=5
                5010 24601:gpu0/s8 9360=3
                5010 24601:gpu0/s8 state 0 until 6000
                5100 24601.24602 end 63000000="cudaLaunchKernel" 9200=5
                6000 24601:gpu0/s8 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=99
                6000 24601:gpu0/s8 9360=0
                6000 24601:gpu0/s8 state 1 until 6100
                6100 24601:gpu0/s8 end 63000006="k" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=99
            "#]],
        );
    }
}
