//! NCCL kernels: statistics per collective (or per kernel name when the trace
//! gives no collective), bytes per communicator, and the GPUs of each
//! communicator (for the bus bandwidth).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Result;

use super::{Accumulator, At, Event, NamedStatsAcc, Names, Trace};
use crate::types::*;

/// Statistics of one name with NCCL detail: bytes per communicator.
#[derive(Default)]
struct NcclAccumulator {
    stats: NamedStatsAcc,
    /// communicator value (0: none) → bytes
    bytes_by_communicator: BTreeMap<i64, u64>,
    gpus: BTreeSet<usize>,
    /// message size → statistics of the kernels of that size
    by_size: BTreeMap<u64, NamedStatsAcc>,
}

#[derive(Default)]
pub(crate) struct Nccl {
    /// (whether the key is a collective, collective or kernel value)
    by_name: HashMap<(bool, i64), NcclAccumulator>,
    /// communicator value → GPUs that ran NCCL kernels on it
    communicators: HashMap<i64, BTreeSet<usize>>,
    /// Kernels counted, those with a collective and those with a size (for the
    /// notes).
    pub kernels: u64,
    pub with_collective: u64,
    pub with_size: u64,
}

pub struct NcclStats {
    pub name: String,
    pub stats: NamedStatsAcc,
    /// (bytes, GPUs of the communicator)
    pub by_communicator: Vec<(u64, usize)>,
    /// (message size, statistics) of the kernels with a size, smallest first.
    pub by_size: Vec<(u64, NamedStatsAcc)>,
}

impl Nccl {
    /// Per NCCL collective (or kernel name without one): its name, statistics,
    /// and bytes per communicator with that communicator's GPU count.
    pub fn stats(&self, names: &Names) -> Vec<NcclStats> {
        self.by_name
            .iter()
            .map(|((is_collective, v), acc)| {
                let name = if *is_collective {
                    names.value(NCCL_COLLECTIVE, *v, "collective")
                } else {
                    names.value(NCCL_KERNEL, *v, "NCCL kernel")
                };
                let by_communicator = acc
                    .bytes_by_communicator
                    .iter()
                    .map(|(c, bytes)| {
                        let ranks = match c {
                            0 => acc.gpus.len(),
                            c => self.communicators.get(c).map_or(0, BTreeSet::len),
                        };
                        (*bytes, ranks)
                    })
                    .collect();
                NcclStats {
                    name,
                    stats: acc.stats,
                    by_communicator,
                    by_size: acc.by_size.iter().map(|(b, s)| (*b, *s)).collect(),
                }
            })
            .collect()
    }
}

impl Accumulator for Nccl {
    fn on_event(&mut self, _: &Trace, at: At, event: Event) -> Result<()> {
        let Event::GpuEnd { gpu, op } = event else {
            return Ok(());
        };
        if op.ty != NCCL_KERNEL || at.ends_outside {
            return Ok(());
        }
        self.kernels += 1;
        self.with_collective += u64::from(op.collective != 0);
        self.with_size += u64::from(op.bytes.unwrap_or(0) != 0);
        let key = match op.collective {
            0 => (false, op.value),
            c => (true, c),
        };
        let acc = self.by_name.entry(key).or_default();
        let duration = at.time.saturating_sub(op.begin);
        acc.stats.add(duration, op.bytes);
        if let Some(bytes) = op.bytes.filter(|&b| b > 0) {
            acc.by_size
                .entry(bytes)
                .or_default()
                .add(duration, Some(bytes));
        }
        *acc.bytes_by_communicator
            .entry(op.communicator)
            .or_default() += op.bytes.unwrap_or(0);
        acc.gpus.insert(gpu);
        if op.communicator != 0 {
            self.communicators
                .entry(op.communicator)
                .or_default()
                .insert(gpu);
        }
        Ok(())
    }
}
