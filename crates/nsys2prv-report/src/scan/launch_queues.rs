//! Launch queues of GPU streams: the launch latency the conversion wrote on each
//! kernel (type 9211), per stream and per kernel name, and per stream the queue
//! depth it wrote at each change (type 9210): its mean over the time scanned,
//! its maximum, and the time the stream was *starved*: idle (no kernel, NCCL
//! kernel or memory operation running on it) with an empty queue, between two of
//! its operations (idle time after its last operation, with no work to come, is
//! not starvation). The rest of its idle time between operations had kernels
//! queued (waiting on something else: an event, another stream, a copy).
//! Latencies are kept one by one for the quantiles, within an eighth of
//! `--memory-limit`; past it, the counts, means and maxima stay exact and the
//! quantiles are of the latencies kept (said in a note).

use std::collections::BTreeMap;

use anyhow::Result;

use super::{op_slot, Accumulator, At, Event, Trace};
use crate::types::*;

/// The latencies of one kernel name on one stream.
#[derive(Default, Clone, Debug)]
pub struct Latencies {
    pub count: u64,
    pub sum: u128,
    pub max: u64,
    /// Kept one by one, in trace order.
    pub kept: Vec<u64>,
}

impl Latencies {
    pub fn merge(&mut self, other: &Latencies) {
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
        self.kept.extend_from_slice(&other.kept);
    }
}

/// A stream row's queue.
#[derive(Default, Clone, Debug)]
pub struct StreamQueue {
    depth: i64,
    /// Time of the stream's last line seen.
    last: u64,
    /// Whether an operation ran on the stream after its last line.
    busy: bool,
    /// Whether an operation has begun on it (idle time before counts nowhere).
    started: bool,
    /// Idle time since the stream's last operation ended, at depth 0 and above.
    pending_empty: u64,
    pending_queued: u64,
    /// Depth × ns over the time scanned.
    pub depth_ns: u128,
    pub max_depth: i64,
    pub starved_ns: u64,
    pub queued_idle_ns: u64,
}

impl StreamQueue {
    /// The time from the last line to `time`, in the state the last line left.
    fn advance(&mut self, time: u64) {
        let dt = time.saturating_sub(self.last);
        self.depth_ns += self.depth.max(0) as u128 * u128::from(dt);
        if self.started && !self.busy {
            if self.depth <= 0 {
                self.pending_empty += dt;
            } else {
                self.pending_queued += dt;
            }
        }
        self.last = self.last.max(time);
    }
}

pub(crate) struct LaunchQueues {
    /// Stream rows with queue depths, by thread (`None`: no depth seen yet).
    pub streams: Vec<Option<StreamQueue>>,
    /// (stream thread, kernel type, kernel value) → its latencies.
    pub latencies: BTreeMap<(usize, u32, i64), Latencies>,
    kept: usize,
    max_kept: usize,
    pub left_out: u64,
}

impl LaunchQueues {
    pub fn new(memory_limit: u64) -> Self {
        Self {
            streams: Vec::new(),
            latencies: BTreeMap::new(),
            kept: 0,
            max_kept: (memory_limit / 8 / 8) as usize,
            left_out: 0,
        }
    }

    /// Closes every stream's clock at the end of the time scanned; idle time
    /// after a stream's last operation is not starvation (nothing came).
    pub fn finish(&mut self, end: u64) {
        for q in self.streams.iter_mut().flatten() {
            q.advance(end);
        }
    }

    fn line(&mut self, trace: &Trace, at: At, thread: usize, line: &[(u32, i64)]) {
        let depth = line.iter().rev().find(|p| p.0 == LAUNCH_QUEUE_DEPTH);
        let state = &trace.threads[thread];
        if thread >= self.streams.len() {
            if depth.is_none() {
                return;
            }
            self.streams.resize(thread + 1, None);
        }
        let slot = &mut self.streams[thread];
        let queue = match (slot, depth) {
            (Some(q), _) => q,
            (slot @ None, Some(_)) => slot.insert(StreamQueue::default()),
            (None, None) => return,
        };
        queue.advance(at.time);
        let busy = state.ops.iter().any(|ops| !ops.is_empty());
        if busy && !queue.busy && queue.started {
            queue.starved_ns += std::mem::take(&mut queue.pending_empty);
            queue.queued_idle_ns += std::mem::take(&mut queue.pending_queued);
        }
        queue.started |= busy;
        queue.busy = busy;
        if let Some(&(_, depth)) = depth {
            queue.depth = depth;
            if !at.before_window {
                queue.max_depth = queue.max_depth.max(depth);
            }
        }
        let latency = line.iter().find(|p| p.0 == LAUNCH_LATENCY && p.1 > 0);
        let Some(&(_, latency)) = latency.filter(|_| !at.before_window) else {
            return;
        };
        // The kernel that began on this line (or on the line before, at this time).
        let kernel = [CUDA_KERNEL, NCCL_KERNEL]
            .into_iter()
            .filter_map(|ty| state.ops[op_slot(ty)].last())
            .filter(|op| op.begin == at.time)
            .max_by_key(|op| op.begin);
        let Some(kernel) = kernel else {
            return;
        };
        let acc = self
            .latencies
            .entry((thread, kernel.ty, kernel.value))
            .or_default();
        let latency = latency as u64;
        acc.count += 1;
        acc.sum += u128::from(latency);
        acc.max = acc.max.max(latency);
        if self.kept < self.max_kept {
            acc.kept.push(latency);
            self.kept += 1;
        } else {
            self.left_out += 1;
        }
    }
}

impl Accumulator for LaunchQueues {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        if let Event::StreamLineDone { thread, line } = event {
            self.line(trace, at, thread, line);
        }
        Ok(())
    }
}

/// The `q`-quantile of sorted `values` by nearest rank: the smallest value with
/// at least a share `q` of the values at or below it (the median of an even
/// count is the lower middle one).
pub fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 0.5), 5);
        assert_eq!(nearest_rank(&v, 0.9), 9);
        assert_eq!(nearest_rank(&v, 1.0), 10);
        assert_eq!(nearest_rank(&[7], 0.9), 7);
        assert_eq!(nearest_rank(&[1, 2, 3], 0.5), 2);
        assert_eq!(nearest_rank(&[], 0.5), 0);
    }

    #[test]
    fn starvation_is_idle_time_at_depth_zero_between_operations() {
        // Started and busy until 100; idle at depth 0 from 100 to 150, then a
        // kernel queued (depth 1) until 180, when it begins.
        let mut q = StreamQueue {
            started: true,
            busy: true,
            ..StreamQueue::default()
        };
        q.advance(100);
        q.busy = false;
        q.advance(150);
        q.depth = 1;
        q.advance(180);
        assert_eq!((q.pending_empty, q.pending_queued), (50, 30));
        assert_eq!(q.depth_ns, 30);
    }
}
