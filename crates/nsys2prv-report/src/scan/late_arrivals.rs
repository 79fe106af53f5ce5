//! Late arrivals at NCCL collectives: the waits the conversion marked on each
//! collective kernel that started before the last rank's (types 9530, the rank
//! waited for, and 9531, how long), summed per late rank, per (collective, late
//! rank), and kept one by one for the iterations (within an eighth of
//! `--memory-limit`).

use std::collections::BTreeMap;

use anyhow::Result;

use super::{op_slot, Accumulator, At, Event, Trace};
use crate::types::*;

/// One wait: (time from the window's start, waiting task, rank value, wait ns).
pub type Wait = (u64, u32, i64, u64);

pub(crate) struct LateArrivals {
    /// Rank value (of 9530) → (wait caused, kernels that waited).
    pub by_rank: BTreeMap<i64, (u64, u64)>,
    /// (collective value, rank value) → (wait caused, kernels that waited).
    pub by_collective: BTreeMap<(i64, i64), (u64, u64)>,
    pub waits: Vec<Wait>,
    pub waits_left_out: u64,
    max_waits: usize,
}

impl LateArrivals {
    pub fn new(memory_limit: u64) -> Self {
        Self {
            by_rank: BTreeMap::new(),
            by_collective: BTreeMap::new(),
            waits: Vec::new(),
            waits_left_out: 0,
            max_waits: (memory_limit / 8 / std::mem::size_of::<Wait>() as u64) as usize,
        }
    }
}

impl Accumulator for LateArrivals {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        let Event::CollectiveWait {
            thread,
            rank,
            wait_ns,
        } = event
        else {
            return Ok(());
        };
        if at.before_window {
            return Ok(());
        }
        // The kernel's begin comes before the wait on its line (the conversion
        // writes the waits after the reports' records at the same time).
        let state = &trace.threads[thread];
        let collective = state.ops[op_slot(NCCL_KERNEL)]
            .last()
            .filter(|op| op.begin == at.time)
            .map_or(0, |op| op.collective);
        let total = self.by_rank.entry(rank).or_default();
        total.0 += wait_ns;
        total.1 += 1;
        let per = self.by_collective.entry((collective, rank)).or_default();
        per.0 += wait_ns;
        per.1 += 1;
        // Past the limit, the per-iteration figures leave the rest out (said in a note).
        if self.waits.len() < self.max_waits {
            self.waits.push((at.time, state.task as u32, rank, wait_ns));
        } else {
            self.waits_left_out += 1;
        }
        Ok(())
    }
}
