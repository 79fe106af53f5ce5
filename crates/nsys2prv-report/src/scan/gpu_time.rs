//! Per GPU: the time it computed (a compute kernel running on any of its
//! streams), communicated (an NCCL kernel or a memory operation, no compute
//! kernel), both across the run's bins; how much compute ran beside NCCL; and its
//! idle gaps, with what the launching thread was doing when each began.

use anyhow::Result;

use super::{Accumulator, At, Bins, Event, ScanOptions, Trace};
use crate::types::*;

/// Where an idle gap began: when, and what the launching thread was doing.
#[derive(Clone, Copy)]
pub(crate) struct GapStart {
    pub time: u64,
    pub thread: usize,
    pub call: Option<(u32, i64)>,
    pub nvtx: Option<(u32, i64)>,
}

/// The running state of one GPU: how many compute kernels, NCCL kernels and memory
/// operations are running on its streams, and the time they covered so far.
struct GpuClock {
    compute: u32,
    nccl: u32,
    memory: u32,
    last: u64,
    useful: u64,
    communication: u64,
    overlap: Vec<u64>,
    bins_compute: Vec<u64>,
    bins_communication: Vec<u64>,
    /// The CPU thread that launched the latest work on it.
    launcher: Option<usize>,
    /// Whether it was active before the line being read.
    was_active: bool,
    idle_since: Option<GapStart>,
    gaps: Vec<(u64, GapStart)>,
    /// Gaps at or above the threshold: how many, and their time.
    gap_count: u64,
    gap_total: u64,
}

impl GpuClock {
    fn new(bins: usize) -> GpuClock {
        GpuClock {
            compute: 0,
            nccl: 0,
            memory: 0,
            last: 0,
            useful: 0,
            communication: 0,
            overlap: Vec::new(),
            bins_compute: vec![0; bins],
            bins_communication: vec![0; bins],
            launcher: None,
            was_active: false,
            idle_since: None,
            gaps: Vec::new(),
            gap_count: 0,
            gap_total: 0,
        }
    }

    fn active(&self) -> bool {
        self.compute + self.nccl + self.memory > 0
    }

    /// Attributes the time since the last event to the state it was in.
    fn advance(&mut self, time: u64, bins: &Bins) {
        if time <= self.last {
            return;
        }
        let (from, span) = (self.last, time - self.last);
        if self.compute > 0 {
            self.useful += span;
            bins.add(&mut self.bins_compute, from, time);
        } else if self.nccl + self.memory > 0 {
            self.communication += span;
        }
        if self.nccl + self.memory > 0 {
            bins.add(&mut self.bins_communication, from, time);
        }
        if self.nccl > 0 {
            let k = self.compute as usize;
            if self.overlap.len() <= k {
                self.overlap.resize(k + 1, 0);
            }
            self.overlap[k] += span;
        }
        self.last = time;
    }

    /// Keeps a gap if it is among the `keep` longest.
    fn gap(&mut self, duration: u64, start: GapStart, keep: usize) {
        self.gap_count += 1;
        self.gap_total += duration;
        let at = self.gaps.partition_point(|(d, _)| *d >= duration);
        if at < keep {
            self.gaps.insert(at, (duration, start));
            self.gaps.truncate(keep);
        }
    }
}

/// The times of every GPU.
pub(crate) struct GpuTime {
    clocks: Vec<GpuClock>,
    bins: Bins,
    gaps_per_gpu: usize,
    gap_threshold_ns: u64,
    /// The first time a GPU operation was running (that ended inside the window).
    pub first_activity: Option<u64>,
}

/// The times of one GPU, as accumulated.
pub struct GpuTimes<'a> {
    pub task: usize,
    pub device: u32,
    pub streams: usize,
    pub useful: u64,
    pub communication: u64,
    pub overlap: &'a [u64],
    pub bins_compute: &'a [u64],
    pub bins_communication: &'a [u64],
    pub gap_count: u64,
    pub gap_total: u64,
}

impl GpuTime {
    pub fn new(trace: &Trace, bins: &Bins, options: &ScanOptions) -> GpuTime {
        GpuTime {
            clocks: trace
                .gpus
                .iter()
                .map(|_| GpuClock::new(bins.count))
                .collect(),
            bins: *bins,
            gaps_per_gpu: options.gaps_per_gpu,
            gap_threshold_ns: options.gap_threshold_ns.max(1),
            first_activity: None,
        }
    }

    pub fn times<'a>(&'a self, trace: &Trace, gpu: usize) -> GpuTimes<'a> {
        let (c, info) = (&self.clocks[gpu], &trace.gpus[gpu]);
        GpuTimes {
            task: info.task,
            device: info.device,
            streams: info.streams,
            useful: c.useful,
            communication: c.communication,
            overlap: &c.overlap,
            bins_compute: &c.bins_compute,
            bins_communication: &c.bins_communication,
            gap_count: c.gap_count,
            gap_total: c.gap_total,
        }
    }

    /// The gaps kept for a GPU, longest first.
    pub fn gaps(&self, gpu: usize) -> &[(u64, GapStart)] {
        &self.clocks[gpu].gaps
    }
}

/// The launching thread of a GPU (else its task's first thread) and what it is
/// doing now.
fn gap_start(trace: &Trace, clock: &GpuClock, gpu: usize, time: u64) -> GapStart {
    let task = trace.gpus[gpu].task;
    let thread = clock.launcher.unwrap_or(trace.task_first[task - 1]);
    let state = &trace.threads[thread];
    GapStart {
        time,
        thread,
        call: state.calls.last().map(|c| (c.ty, c.value)),
        nvtx: state.nvtx.last().map(|c| (c.ty, c.value)),
    }
}

impl Accumulator for GpuTime {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        match event {
            Event::GpuLine { gpu } => {
                let clock = &mut self.clocks[gpu];
                clock.advance(at.time, &self.bins);
                clock.was_active = clock.active();
            }
            Event::GpuBegin { gpu, op } => {
                let clock = &mut self.clocks[gpu];
                match op.ty {
                    CUDA_KERNEL => clock.compute += 1,
                    NCCL_KERNEL => clock.nccl += 1,
                    _ => clock.memory += 1,
                }
            }
            Event::GpuEnd { gpu, op } => {
                let clock = &mut self.clocks[gpu];
                match op.ty {
                    CUDA_KERNEL => clock.compute -= 1,
                    NCCL_KERNEL => clock.nccl -= 1,
                    _ => clock.memory -= 1,
                }
                // Wholly before the window: it only leaves the counts.
                if !at.ends_outside && self.first_activity.is_none_or(|t| op.begin < t) {
                    self.first_activity = Some(op.begin);
                }
            }
            Event::GpuLineDone { gpu } => {
                let clock = &self.clocks[gpu];
                let (was_active, active) = (clock.was_active, clock.active());
                if was_active && !active {
                    let start = gap_start(trace, clock, gpu, at.time);
                    self.clocks[gpu].idle_since = Some(start);
                } else if !was_active && active {
                    let clock = &mut self.clocks[gpu];
                    if let Some(start) = clock.idle_since.take() {
                        let duration = at.time - start.time;
                        if duration >= self.gap_threshold_ns {
                            clock.gap(duration, start, self.gaps_per_gpu);
                        }
                    }
                }
            }
            Event::Launch { thread, gpu, .. } => self.clocks[gpu].launcher = Some(thread),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_keeps_the_longest_gaps() {
        let mut clock = GpuClock::new(1);
        let start = |time| GapStart {
            time,
            thread: 0,
            call: None,
            nvtx: None,
        };
        for (d, t) in [(5, 1), (9, 2), (7, 3), (1, 4)] {
            clock.gap(d, start(t), 2);
        }
        let kept: Vec<u64> = clock.gaps.iter().map(|g| g.0).collect();
        assert_eq!(kept, [9, 7]);
    }

    #[test]
    fn overlap_counts_compute_kernels_while_nccl_runs() {
        let bins = Bins::new(1, 100);
        let mut clock = GpuClock::new(1);
        clock.nccl = 1;
        clock.advance(10, &bins);
        clock.compute = 2;
        clock.advance(30, &bins);
        clock.nccl = 0;
        clock.advance(50, &bins);
        assert_eq!(clock.overlap, [10, 0, 20]);
        assert_eq!((clock.useful, clock.communication), (40, 10));
        assert_eq!(clock.bins_communication, [30]);
        assert_eq!(clock.bins_compute, [40]);
    }
}
