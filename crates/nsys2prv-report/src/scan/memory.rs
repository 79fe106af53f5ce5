//! Memory operations: statistics per kind, with their bytes.

use std::collections::HashMap;

use anyhow::Result;

use super::{Accumulator, At, Event, NamedStatsAcc, Trace};
use crate::types::*;

#[derive(Default)]
pub(crate) struct Memory {
    stats: HashMap<i64, NamedStatsAcc>,
    /// Operations counted (for the notes).
    pub operations: u64,
}

impl Memory {
    pub fn stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.stats.iter().map(|(v, s)| (*v, s))
    }
}

impl Accumulator for Memory {
    fn on_event(&mut self, _: &Trace, at: At, event: Event) -> Result<()> {
        if let Event::GpuEnd { op, .. } = event {
            if op.ty == MEMORY_OP && !at.ends_outside {
                self.operations += 1;
                let duration = at.time.saturating_sub(op.begin);
                self.stats
                    .entry(op.value)
                    .or_default()
                    .add(duration, op.bytes);
            }
        }
        Ok(())
    }
}
