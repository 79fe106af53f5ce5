//! Pipeline bubbles: per GPU and iteration, the span from its first compute kernel to
//! the end of its last one, and how much of that span had no compute kernel running
//! (in NCCL kernels, with nothing running); and the NCCL point-to-point transfers
//! (tag 55005) between GPUs, from which the stages are found.
//!
//! A kernel belongs to the iteration during which it was launched: the iteration
//! ranges open on its task when its launch arrow (tag 55001/55002) leaves the CPU
//! (the CPU runs ahead of the GPU, so a kernel may run after its iteration's range
//! ended); a kernel without a launch arrow belongs to the ranges open on its task
//! when it begins. Each GPU keeps running totals of its compute, NCCL-only and idle
//! time, so a span's figures are two snapshots of them: nothing per kernel is kept.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

use super::{Accumulator, At, Event, Names, ScanOptions, ThreadKind, Trace};
use crate::types::*;

/// The key of the span over the whole run (every compute kernel of a GPU).
pub const WHOLE_RUN: (u32, u64) = (u32::MAX, 0);

/// Running totals of one GPU from the start: time with a compute kernel, with an
/// NCCL kernel and no compute kernel, and with nothing running.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub compute: u64,
    pub nccl: u64,
    pub idle: u64,
}

/// One GPU's running state.
#[derive(Default)]
struct Clock {
    compute: u32,
    nccl: u32,
    memory: u32,
    last: u64,
    totals: Totals,
}

impl Clock {
    fn advance(&mut self, time: u64) {
        if time <= self.last {
            return;
        }
        let span = time - self.last;
        if self.compute > 0 {
            self.totals.compute += span;
        } else if self.nccl > 0 {
            self.totals.nccl += span;
        } else if self.memory == 0 {
            self.totals.idle += span;
        }
        self.last = time;
    }
}

/// The compute kernels of one GPU launched in one iteration: when the first began
/// and the last ended, with the GPU's totals at both moments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub first: u64,
    pub at_first: Totals,
    pub last: u64,
    pub at_last: Totals,
    pub kernels: u64,
}

impl Span {
    pub fn length(&self) -> u64 {
        self.last.saturating_sub(self.first)
    }

    /// Time in the span with a compute kernel running.
    pub fn compute(&self) -> u64 {
        self.at_last.compute.saturating_sub(self.at_first.compute)
    }

    /// Time in the span with no compute kernel running.
    pub fn bubble(&self) -> u64 {
        self.length().saturating_sub(self.compute())
    }

    pub fn in_nccl(&self) -> u64 {
        self.at_last.nccl.saturating_sub(self.at_first.nccl)
    }

    pub fn idle(&self) -> u64 {
        self.at_last.idle.saturating_sub(self.at_first.idle)
    }
}

/// Point-to-point transfers from one GPU to another.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Transfers {
    pub count: u64,
    pub bytes: u64,
    /// When the first one was sent (from the window's start).
    pub first: u64,
}

/// Which iteration ranges a kernel was launched in: an index into `key_sets`.
type KeySet = u32;

pub(crate) struct PipelineScan {
    /// (NVTX type, value) → iteration candidate (an index into `candidate_names`).
    candidates: HashMap<(u32, i64), u32>,
    /// The candidates' bare names: the iteration range chosen at the end is one of them.
    pub candidate_names: Vec<String>,
    clocks: Vec<Clock>,
    /// Per GPU: launches whose operation has not begun yet, by (begin, order).
    pending: Vec<BTreeMap<(u64, u64), KeySet>>,
    launches: u64,
    /// Per GPU: compute kernels running, (begin, key set).
    open: Vec<Vec<(u64, KeySet)>>,
    /// Per thread: its NVTX stack when last asked (depth, innermost begin), and the
    /// key set found then.
    thread_keys: Vec<Option<((usize, u64), KeySet)>>,
    key_sets: Vec<Vec<(u32, u64)>>,
    key_set_index: HashMap<Vec<(u32, u64)>, KeySet>,
    /// (GPU, (candidate, range begin)) → its span; `WHOLE_RUN` for the whole run.
    pub spans: HashMap<(usize, (u32, u64)), Span>,
    /// Spans not kept within `--memory-limit`.
    pub spans_left_out: u64,
    max_spans: usize,
    /// (sending GPU, receiving GPU) → transfers.
    pub transfers: BTreeMap<(usize, usize), Transfers>,
}

impl PipelineScan {
    /// Whether the trace may hold a pipeline: NCCL kernels of point-to-point
    /// collectives (`Send`, `Recv`, `SendRecv`), or stages given. Other traces pay
    /// nothing for this figure.
    pub fn wanted(names: &Names, options: &ScanOptions) -> bool {
        options.pipeline_stages.is_some()
            || names.pcf.types.get(&NCCL_COLLECTIVE).is_some_and(|t| {
                t.values.iter().flatten().any(|(v, label)| {
                    *v != 0 && {
                        let lower = label.to_lowercase();
                        lower.contains("send") || lower.contains("recv")
                    }
                })
            })
    }

    pub fn new(trace: &Trace, names: &Names, options: &ScanOptions) -> Self {
        let mut candidates = HashMap::new();
        let mut index: BTreeMap<String, u32> = BTreeMap::new();
        for (ty, t) in &names.pcf.types {
            if !is_nvtx_type(*ty) {
                continue;
            }
            for (v, label) in t.values.iter().flatten() {
                let wanted = match &options.iterations {
                    Some(name) => label_is(label, name),
                    None => looks_like_iteration(label),
                };
                if wanted && *v != 0 {
                    let next = index.len() as u32;
                    let i = *index.entry(bare(label).to_string()).or_insert(next);
                    candidates.insert((*ty, *v), i);
                }
            }
        }
        let mut candidate_names = vec![String::new(); index.len()];
        for (name, i) in index {
            candidate_names[i as usize] = name;
        }
        let gpus = trace.gpus.len();
        PipelineScan {
            candidates,
            candidate_names,
            clocks: (0..gpus).map(|_| Clock::default()).collect(),
            pending: vec![BTreeMap::new(); gpus],
            launches: 0,
            open: vec![Vec::new(); gpus],
            thread_keys: vec![None; trace.threads.len()],
            key_sets: vec![Vec::new()],
            key_set_index: HashMap::from([(Vec::new(), 0)]),
            spans: HashMap::new(),
            spans_left_out: 0,
            max_spans: (options.memory_limit / 8 / 64) as usize,
            transfers: BTreeMap::new(),
        }
    }

    fn intern(&mut self, mut keys: Vec<(u32, u64)>) -> KeySet {
        keys.sort_unstable();
        keys.dedup();
        if let Some(&id) = self.key_set_index.get(&keys) {
            return id;
        }
        let id = self.key_sets.len() as KeySet;
        self.key_sets.push(keys.clone());
        self.key_set_index.insert(keys, id);
        id
    }

    /// The iteration ranges open on `thread` (begun inside the window).
    fn open_on(&self, trace: &Trace, thread: usize, keys: &mut Vec<(u32, u64)>) {
        for range in &trace.threads[thread].nvtx {
            if let Some(c) = self.candidates.get(&(range.ty, range.value)) {
                if range.inside {
                    keys.push((*c, range.begin));
                }
            }
        }
    }

    /// The iteration ranges open on `task`'s CPU threads.
    fn open_on_task(&mut self, trace: &Trace, task: usize) -> KeySet {
        if self.candidates.is_empty() {
            return 0;
        }
        let first = trace.task_first[task - 1];
        let end = trace
            .task_first
            .get(task)
            .copied()
            .unwrap_or(trace.threads.len());
        let mut keys = Vec::new();
        for thread in first..end {
            if trace.threads[thread].kind == ThreadKind::Cpu {
                self.open_on(trace, thread, &mut keys);
            }
        }
        self.intern(keys)
    }

    /// The iteration ranges a launch from `thread` belongs to: those open on it,
    /// else those open on its task's other threads (PyTorch launches the backward
    /// pass from the autograd thread, outside the main thread's step range).
    fn launched_in(&mut self, trace: &Trace, thread: usize) -> KeySet {
        if self.candidates.is_empty() {
            return 0;
        }
        let stack = &trace.threads[thread].nvtx;
        let signature = (stack.len(), stack.last().map_or(0, |r| r.begin));
        if let Some((seen, keys)) = self.thread_keys[thread] {
            if seen == signature {
                return keys;
            }
        }
        let mut keys = Vec::new();
        self.open_on(trace, thread, &mut keys);
        if keys.is_empty() {
            // Not cached: the other threads' ranges change without this one's.
            return self.open_on_task(trace, trace.threads[thread].task);
        }
        let keys = self.intern(keys);
        self.thread_keys[thread] = Some((signature, keys));
        keys
    }

    fn span_begins(&mut self, gpu: usize, key: (u32, u64), time: u64) {
        let totals = self.clocks[gpu].totals;
        if let Some(span) = self.spans.get_mut(&(gpu, key)) {
            span.kernels += 1;
            return;
        }
        if self.spans.len() >= self.max_spans {
            self.spans_left_out += 1;
            return;
        }
        self.spans.insert(
            (gpu, key),
            Span {
                first: time,
                at_first: totals,
                last: time,
                at_last: totals,
                kernels: 1,
            },
        );
    }

    fn span_ends(&mut self, gpu: usize, key: (u32, u64), time: u64) {
        let totals = self.clocks[gpu].totals;
        if let Some(span) = self.spans.get_mut(&(gpu, key)) {
            if time >= span.last {
                span.last = time;
                span.at_last = totals;
            }
        }
    }
}

impl Accumulator for PipelineScan {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        match event {
            Event::GpuLine { gpu } => self.clocks[gpu].advance(at.time),
            Event::Launch {
                thread,
                gpu,
                begins: Some(begins),
                ..
            } => {
                let keys = self.launched_in(trace, thread);
                self.launches += 1;
                self.pending[gpu].insert((begins, self.launches), keys);
            }
            Event::GpuBegin { gpu, op } => {
                let clock = &mut self.clocks[gpu];
                match op.ty {
                    CUDA_KERNEL => clock.compute += 1,
                    NCCL_KERNEL => clock.nccl += 1,
                    _ => clock.memory += 1,
                }
                // Launches of operations that began earlier will not be met again.
                let pending = &mut self.pending[gpu];
                if pending
                    .first_key_value()
                    .is_some_and(|(k, _)| k.0 < at.time)
                {
                    *pending = pending.split_off(&(at.time, 0));
                }
                let launched = pending
                    .range((at.time, 0)..=(at.time, u64::MAX))
                    .next()
                    .map(|(k, v)| (*k, *v));
                if let Some((k, _)) = launched {
                    pending.remove(&k);
                }
                if op.ty != CUDA_KERNEL || at.before_window {
                    return Ok(());
                }
                let keys = match launched {
                    Some((_, keys)) => keys,
                    None => self.open_on_task(trace, trace.gpus[gpu].task),
                };
                self.open[gpu].push((at.time, keys));
                self.span_begins(gpu, WHOLE_RUN, at.time);
                for i in 0..self.key_sets[keys as usize].len() {
                    let key = self.key_sets[keys as usize][i];
                    self.span_begins(gpu, key, at.time);
                }
            }
            Event::GpuEnd { gpu, op } => {
                let clock = &mut self.clocks[gpu];
                match op.ty {
                    CUDA_KERNEL => clock.compute = clock.compute.saturating_sub(1),
                    NCCL_KERNEL => clock.nccl = clock.nccl.saturating_sub(1),
                    _ => clock.memory = clock.memory.saturating_sub(1),
                }
                if op.ty != CUDA_KERNEL {
                    return Ok(());
                }
                let Some(i) = self.open[gpu].iter().position(|o| o.0 == op.begin) else {
                    return Ok(());
                };
                let (_, keys) = self.open[gpu].swap_remove(i);
                self.span_ends(gpu, WHOLE_RUN, at.time);
                for i in 0..self.key_sets[keys as usize].len() {
                    let key = self.key_sets[keys as usize][i];
                    self.span_ends(gpu, key, at.time);
                }
            }
            Event::Transfer { from, to, bytes } => {
                if at.before_window {
                    return Ok(());
                }
                let t = self.transfers.entry((from, to)).or_insert(Transfers {
                    first: at.time,
                    ..Transfers::default()
                });
                t.count += 1;
                t.bytes += bytes;
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
    fn a_clock_splits_time_into_compute_nccl_and_idle() {
        let mut clock = Clock::default();
        clock.advance(10); // idle
        clock.nccl = 1;
        clock.advance(25); // NCCL only
        clock.compute = 1;
        clock.advance(40); // compute (NCCL beside it)
        clock.nccl = 0;
        clock.compute = 0;
        clock.memory = 1;
        clock.advance(50); // memory: none of the three
        clock.memory = 0;
        clock.advance(55);
        assert_eq!(
            clock.totals,
            Totals {
                compute: 15,
                nccl: 15,
                idle: 15
            }
        );
    }

    #[test]
    fn a_span_is_two_snapshots() {
        let span = Span {
            first: 100,
            at_first: Totals {
                compute: 10,
                nccl: 5,
                idle: 85,
            },
            last: 300,
            at_last: Totals {
                compute: 160,
                nccl: 35,
                idle: 100,
            },
            kernels: 3,
        };
        assert_eq!(span.length(), 200);
        assert_eq!(span.compute(), 150);
        assert_eq!(span.bubble(), 50);
        assert_eq!(span.in_nccl(), 30);
        assert_eq!(span.idle(), 15);
    }
}
