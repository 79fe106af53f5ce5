//! Compute kernels: statistics per kernel name, and the mean of each GPU metric
//! over the samples taken while the kernel ran.

use std::collections::HashMap;

use anyhow::Result;

use super::{Accumulator, At, Event, NamedStatsAcc, Trace};
use crate::types::*;

pub(crate) struct Kernels {
    stats: HashMap<i64, NamedStatsAcc>,
    /// Per GPU: values of the compute kernels running (for metric samples).
    running: Vec<Vec<i64>>,
    /// (kernel value, metric type) → (sum, samples)
    metrics: HashMap<(i64, u32), (f64, u64)>,
    /// metric type → (sum, samples) of the samples taken while any compute kernel
    /// ran on the sample's GPU: the metric's mean over useful time (samples are
    /// evenly spaced), for the computational scalability of `report` over runs.
    useful_metrics: HashMap<u32, (f64, u64)>,
}

impl Kernels {
    pub fn new(gpus: usize) -> Kernels {
        Kernels {
            stats: HashMap::new(),
            running: vec![Vec::new(); gpus],
            metrics: HashMap::new(),
            useful_metrics: HashMap::new(),
        }
    }

    pub fn stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.stats.iter().map(|(v, s)| (*v, s))
    }

    /// Per kernel value and metric type: the mean of the samples.
    pub fn metric_means(&self) -> impl Iterator<Item = (i64, u32, f64)> + '_ {
        self.metrics
            .iter()
            .map(|((k, ty), (sum, n))| (*k, *ty, sum / *n as f64))
    }

    /// Per metric type: the mean of the samples taken during useful time, and how many.
    pub fn useful_metric_means(&self) -> impl Iterator<Item = (u32, f64, u64)> + '_ {
        self.useful_metrics
            .iter()
            .map(|(ty, (sum, n))| (*ty, sum / *n as f64, *n))
    }
}

impl Accumulator for Kernels {
    fn on_event(&mut self, _: &Trace, at: At, event: Event) -> Result<()> {
        match event {
            Event::GpuBegin { gpu, op } if op.ty == CUDA_KERNEL => {
                self.running[gpu].push(op.value);
            }
            Event::GpuEnd { gpu, op } if op.ty == CUDA_KERNEL => {
                let running = &mut self.running[gpu];
                if let Some(i) = running.iter().position(|v| *v == op.value) {
                    running.swap_remove(i);
                }
                if !at.ends_outside {
                    let duration = at.time.saturating_sub(op.begin);
                    self.stats.entry(op.value).or_default().add(duration, None);
                }
            }
            Event::Metric { gpu, ty, value } => {
                if !self.running[gpu].is_empty() {
                    let entry = self.useful_metrics.entry(ty).or_default();
                    entry.0 += value as f64;
                    entry.1 += 1;
                }
                for &kernel in &self.running[gpu] {
                    let entry = self.metrics.entry((kernel, ty)).or_default();
                    entry.0 += value as f64;
                    entry.1 += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
