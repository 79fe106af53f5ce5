//! MPI calls: statistics per call, with the bytes their begin lines give.

use std::collections::HashMap;

use anyhow::Result;

use super::{Accumulator, At, Event, NamedStatsAcc, Trace};
use crate::types::*;

#[derive(Default)]
pub(crate) struct Mpi {
    stats: HashMap<(u32, i64), NamedStatsAcc>,
}

impl Mpi {
    /// The calls that ended in the window (or were open at its end).
    pub fn stats(&self) -> impl Iterator<Item = ((u32, i64), &NamedStatsAcc)> {
        self.stats
            .iter()
            .filter(|(_, s)| s.count > 0)
            .map(|(k, s)| (*k, s))
    }
}

impl Accumulator for Mpi {
    fn on_event(&mut self, _: &Trace, at: At, event: Event) -> Result<()> {
        match event {
            Event::CallBegin { call, line, .. } if is_mpi_type(call.ty) => {
                // Sizes are on the begin line; keep them with the call.
                let bytes = line
                    .iter()
                    .find(|p| p.0 == MPI_SEND_SIZE)
                    .map(|p| p.1.max(0) as u64);
                self.stats
                    .entry((call.ty, call.value))
                    .or_default()
                    .add_bytes(bytes);
            }
            Event::CallEnd { call, .. } if is_mpi_type(call.ty) && !at.ends_outside => {
                let duration = at.time.saturating_sub(call.begin);
                self.stats
                    .entry((call.ty, call.value))
                    .or_default()
                    .add(duration, None);
            }
            _ => {}
        }
        Ok(())
    }
}
