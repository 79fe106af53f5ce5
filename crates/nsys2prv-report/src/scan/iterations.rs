//! The occurrences of the NVTX ranges that may be iterations (the one asked for,
//! else those named like iterations), wholly inside the window.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Result};

use super::{Accumulator, At, Event, Names, ScanOptions, Trace};
use crate::types::*;

/// An occurrence of a candidate iteration range: (candidate, task, begin, end).
pub type RangeOccurrence = (u32, u32, u64, u64);

pub(crate) struct Iterations {
    /// (NVTX type, value) → candidate
    candidates: HashMap<(u32, i64), u32>,
    candidate_names: Vec<String>,
    occurrences: Vec<RangeOccurrence>,
    /// Occurrences kept within a quarter of `--memory-limit`.
    max_occurrences: usize,
}

impl Iterations {
    /// The candidates: the range asked for (an error listing the trace's ranges
    /// when it has none of that name), else those named like iterations.
    pub fn new(names: &Names, options: &ScanOptions) -> Result<Iterations> {
        let asked = &options.iterations;
        let mut candidates = HashMap::new();
        let mut index: BTreeMap<String, u32> = BTreeMap::new();
        for (ty, t) in &names.pcf.types {
            if !is_nvtx_type(*ty) {
                continue;
            }
            for (v, label) in t.values.iter().flatten() {
                let wanted = match asked {
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
        let mut by_index: Vec<(u32, String)> = index.into_iter().map(|(n, i)| (i, n)).collect();
        by_index.sort();
        if let (Some(name), true) = (asked, candidates.is_empty()) {
            return Err(crate::UsageError(format!(
                "--iterations {name}: no NVTX range of that name; {}",
                names.range_list()
            ))
            .into());
        }
        Ok(Iterations {
            candidates,
            candidate_names: by_index.into_iter().map(|(_, n)| n).collect(),
            occurrences: Vec::new(),
            max_occurrences: (options.memory_limit
                / 4
                / std::mem::size_of::<RangeOccurrence>() as u64)
                as usize,
        })
    }

    /// The candidates' names, and their occurrences.
    pub fn take(&mut self) -> (Vec<String>, Vec<RangeOccurrence>) {
        (
            std::mem::take(&mut self.candidate_names),
            std::mem::take(&mut self.occurrences),
        )
    }
}

impl Accumulator for Iterations {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()> {
        let Event::RangeEnd { thread, range } = event else {
            return Ok(());
        };
        // Iterations wholly inside the window only.
        let candidate = self
            .candidates
            .get(&(range.ty, range.value))
            .filter(|_| range.inside);
        if let Some(&candidate) = candidate {
            if self.occurrences.len() >= self.max_occurrences {
                bail!(
                    "more than {} NVTX range occurrences to keep for the iterations within --memory-limit; raise it or name the range with --iterations",
                    self.max_occurrences
                );
            }
            let task = trace.threads[thread].task as u32;
            self.occurrences
                .push((candidate, task, range.begin, at.time));
        }
        Ok(())
    }
}
