//! NVTX ranges: statistics per range name (what `diff` compares), over every CPU
//! thread.

use std::collections::HashMap;

use anyhow::Result;

use super::{Accumulator, At, Event, NamedStatsAcc, Trace};

#[derive(Default)]
pub(crate) struct NvtxRanges {
    /// (NVTX type, value) → statistics of its ranges
    stats: HashMap<(u32, i64), NamedStatsAcc>,
}

impl NvtxRanges {
    pub fn stats(&self) -> impl Iterator<Item = ((u32, i64), &NamedStatsAcc)> {
        self.stats.iter().map(|(k, s)| (*k, s))
    }
}

impl Accumulator for NvtxRanges {
    fn on_event(&mut self, _: &Trace, at: At, event: Event) -> Result<()> {
        if let Event::RangeEnd { range, .. } = event {
            // A range that ended at or before the window's start has nothing in it.
            if !at.ends_outside {
                let duration = at.time.saturating_sub(range.begin);
                self.stats
                    .entry((range.ty, range.value))
                    .or_default()
                    .add(duration, None);
            }
        }
        Ok(())
    }
}
