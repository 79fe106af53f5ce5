//! Why a GPU is idle: every idle interval of a GPU (no compute kernel, NCCL kernel
//! or memory operation running on any of its streams, between two operations) split
//! into three causes that add up to it, from the operation that ends it:
//!
//! * *host-bound*: from the gap's start until the call that launched that operation
//!   began (its launch arrow's send time): the CPU had not asked for the work yet;
//! * *dependency/sync*: from then (or the gap's start, when the call began before)
//!   to the gap's end, when the operation's stream had to wait: a
//!   `cudaStreamWaitEvent` on it (a point 9301 = 3 on its row) after the previous
//!   launch into it and before this one, or a host function on it (63000110) that
//!   ended inside the gap;
//! * *other*: the rest: the same stretch without such a wait (launch latency), or
//!   the whole gap when the trace shows no launch arrow to the operation (CUDA API
//!   calls not traced or filtered out).
//!
//! Gaps before a GPU's first operation and after its last are not idle intervals
//! (the GPU was not in use yet, or any more). The pieces are kept one by one for the
//! per-iteration split, within an eighth of `--memory-limit`.

use std::collections::{BTreeMap, VecDeque};

use anyhow::Result;
use nsys2prv_events::{split_idle_gap, GPU_IDLE_DEPENDENCY, GPU_IDLE_HOST_BOUND};

use super::{Accumulator, At, Event, Trace};

/// What idle time is put down to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdleCause {
    HostBound = 0,
    Dependency = 1,
    Other = 2,
}

/// Idle time by cause (`[host-bound, dependency/sync, other]`) and how many gaps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleTotals {
    pub by_cause: [u64; 3],
    pub gaps: u64,
}

/// One piece of idle time: (GPU, cause, begin, end) from the window's start.
pub type IdlePiece = (u32, IdleCause, u64, u64);

/// What the launching thread was in when a gap began: its innermost NVTX range and
/// its innermost call, as (type, value).
pub type HostContext = (Option<(u32, i64)>, Option<(u32, i64)>);

/// A launch arrow not yet matched with its operation's begin.
#[derive(Clone, Copy, Debug)]
struct PendingLaunch {
    op_begin: u64,
    call_begin: u64,
    /// A stream wait was issued on the stream since its previous launch.
    after_stream_wait: bool,
}

/// What a stream row has queued and waits for.
#[derive(Default)]
struct StreamQueue {
    launches: VecDeque<PendingLaunch>,
    /// A `cudaStreamWaitEvent` on it since the last launch into it.
    wait_issued: bool,
    /// The end of the latest host function run on it.
    host_function_end: Option<u64>,
    host_functions_open: u32,
}

/// The operation that began on the line being read, when it began a busy stretch.
#[derive(Clone, Copy)]
struct Begun {
    stream: usize,
    launch: Option<PendingLaunch>,
}

struct GpuIdleState {
    running: u32,
    was_active: bool,
    /// When its current gap began, and what the launching thread was in then.
    idle_since: Option<(u64, HostContext)>,
    launcher: Option<usize>,
    /// The first operation begun on the current line.
    begun: Option<Begun>,
    totals: IdleTotals,
    /// Host-bound time by what the launching thread was in when each gap began.
    host_context: BTreeMap<HostContext, u64>,
}

pub(crate) struct IdleCauses {
    gpus: Vec<GpuIdleState>,
    streams: Vec<StreamQueue>,
    pub pieces: Vec<IdlePiece>,
    pub pieces_left_out: u64,
    max_pieces: usize,
}

/// Splits the gap `[begin, end)` ended by an operation launched by a call that
/// began at `launch.call_begin` (`None`: no launch known), whose stream waited
/// (`waited`), into (cause, begin, end) pieces in time order, empty ones left out.
pub fn split_gap(
    begin: u64,
    end: u64,
    launch_call_begin: Option<u64>,
    waited: bool,
) -> Vec<(IdleCause, u64, u64)> {
    // The translation writes the same pieces into the trace (type 9360).
    split_idle_gap(begin, end, launch_call_begin, waited)
        .map(|(value, from, to)| {
            let cause = match value {
                GPU_IDLE_HOST_BOUND => IdleCause::HostBound,
                GPU_IDLE_DEPENDENCY => IdleCause::Dependency,
                _ => IdleCause::Other,
            };
            (cause, from, to)
        })
        .collect()
}

impl IdleCauses {
    pub fn new(trace: &Trace, memory_limit: u64) -> Self {
        Self {
            gpus: trace
                .gpus
                .iter()
                .map(|_| GpuIdleState {
                    running: 0,
                    was_active: false,
                    idle_since: None,
                    launcher: None,
                    begun: None,
                    totals: IdleTotals::default(),
                    host_context: BTreeMap::new(),
                })
                .collect(),
            streams: trace
                .threads
                .iter()
                .map(|_| StreamQueue::default())
                .collect(),
            pieces: Vec::new(),
            pieces_left_out: 0,
            max_pieces: (memory_limit / 8 / std::mem::size_of::<IdlePiece>() as u64) as usize,
        }
    }

    pub fn totals(&self, gpu: usize) -> IdleTotals {
        self.gpus[gpu].totals
    }

    /// Host-bound time of a GPU by what its launching thread was in, most first.
    pub fn host_contexts(&self, gpu: usize) -> Vec<(HostContext, u64)> {
        let mut list: Vec<(HostContext, u64)> = self.gpus[gpu]
            .host_context
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect();
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list
    }

    fn end_gap(&mut self, gpu: usize, begin: u64, context: HostContext, end: u64) {
        let state = &mut self.gpus[gpu];
        let begun = state.begun.take();
        let (launch, waited) = match begun {
            Some(b) => {
                let queue = &self.streams[b.stream];
                let host_function = queue.host_function_end.is_some_and(|t| t > begin);
                let waited = host_function || b.launch.is_some_and(|l| l.after_stream_wait);
                (b.launch.map(|l| l.call_begin), waited)
            }
            None => (None, false),
        };
        state.totals.gaps += 1;
        for (cause, from, to) in split_gap(begin, end, launch, waited) {
            state.totals.by_cause[cause as usize] += to - from;
            if cause == IdleCause::HostBound {
                *state.host_context.entry(context).or_default() += to - from;
            }
            if self.pieces.len() < self.max_pieces {
                self.pieces.push((gpu as u32, cause, from, to));
            } else {
                self.pieces_left_out += 1;
            }
        }
    }
}

/// The innermost NVTX range and call open on the GPU's launching thread (else its
/// task's first thread).
fn host_context(trace: &Trace, launcher: Option<usize>, gpu: usize) -> HostContext {
    let task = trace.gpus[gpu].task;
    let thread = launcher.unwrap_or(trace.task_first[task - 1]);
    let state = &trace.threads[thread];
    (
        state.nvtx.last().map(|c| (c.ty, c.value)),
        state.calls.last().map(|c| (c.ty, c.value)),
    )
}

impl Accumulator for IdleCauses {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        match event {
            Event::GpuLine { gpu } => {
                let state = &mut self.gpus[gpu];
                state.was_active = state.running > 0;
                state.begun = None;
            }
            Event::GpuBegin { gpu, op } => {
                self.gpus[gpu].running += 1;
                // Launches whose operation began without being one of these (a host
                // function, an operation the trace does not show) are dropped.
                let queue = &mut self.streams[op.stream];
                while queue
                    .launches
                    .front()
                    .is_some_and(|l| l.op_begin < op.begin)
                {
                    queue.launches.pop_front();
                }
                let launch = match queue.launches.front() {
                    Some(l) if l.op_begin == op.begin => queue.launches.pop_front(),
                    _ => None,
                };
                let state = &mut self.gpus[gpu];
                if state.begun.is_none() {
                    state.begun = Some(Begun {
                        stream: op.stream,
                        launch,
                    });
                }
            }
            Event::GpuEnd { gpu, .. } => {
                let state = &mut self.gpus[gpu];
                state.running = state.running.saturating_sub(1);
            }
            Event::GpuLineDone { gpu } => {
                let state = &self.gpus[gpu];
                let (was_active, active) = (state.was_active, state.running > 0);
                if was_active && !active {
                    let context = host_context(trace, state.launcher, gpu);
                    self.gpus[gpu].idle_since = Some((at.time, context));
                } else if !was_active && active {
                    if let Some((begin, context)) = self.gpus[gpu].idle_since.take() {
                        self.end_gap(gpu, begin, context, at.time);
                    }
                }
            }
            Event::Launch {
                thread,
                gpu,
                stream,
                begins,
            } => {
                // An operation that began before the window counts from its start.
                let op_begin = begins.unwrap_or(0);
                self.gpus[gpu].launcher = Some(thread);
                let queue = &mut self.streams[stream];
                let launch = PendingLaunch {
                    op_begin,
                    call_begin: at.time,
                    after_stream_wait: std::mem::take(&mut queue.wait_issued),
                };
                // Operations of a stream begin in launch order; keep the queue
                // sorted should two threads' launches interleave.
                let at = queue
                    .launches
                    .partition_point(|l| l.op_begin <= launch.op_begin);
                queue.launches.insert(at, launch);
            }
            Event::StreamWait { thread } => self.streams[thread].wait_issued = true,
            Event::HostFunction { thread, begins } => {
                let queue = &mut self.streams[thread];
                if begins {
                    queue.host_functions_open += 1;
                    // Its own launch arrow, and any older one, will not begin an
                    // operation.
                    while queue
                        .launches
                        .front()
                        .is_some_and(|l| l.op_begin <= at.time)
                    {
                        queue.launches.pop_front();
                    }
                } else if queue.host_functions_open > 0 {
                    queue.host_functions_open -= 1;
                    queue.host_function_end = Some(at.time);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_splits_at_the_launch_and_adds_up() {
        use IdleCause::*;
        // Launched after the gap began: host-bound, then launch latency.
        assert_eq!(
            split_gap(100, 200, Some(150), false),
            [(HostBound, 100, 150), (Other, 150, 200)]
        );
        // Launched before: all of it waited, on a dependency or not.
        assert_eq!(
            split_gap(100, 200, Some(50), true),
            [(Dependency, 100, 200)]
        );
        assert_eq!(split_gap(100, 200, Some(50), false), [(Other, 100, 200)]);
        // Launched after the gap ended (a trace's clocks): all host-bound.
        assert_eq!(
            split_gap(100, 200, Some(250), true),
            [(HostBound, 100, 200)]
        );
        // No launch known.
        assert_eq!(split_gap(100, 200, None, true), [(Other, 100, 200)]);
        assert!(split_gap(100, 100, Some(100), true).is_empty());
        for (launch, waited) in [(Some(0), true), (Some(120), true), (None, false)] {
            let pieces = split_gap(100, 200, launch, waited);
            let sum: u64 = pieces.iter().map(|p| p.2 - p.1).sum();
            assert_eq!(sum, 100);
        }
    }
}
