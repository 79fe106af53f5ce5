//! What to translate.

use std::collections::BTreeSet;

/// A category of Nsight data, known by its `-t` name. What each one is, is
/// declared in its module ([`crate::category::CategoryInfo`]) and listed in
/// [`crate::registry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Category(&'static str);

impl Category {
    pub const fn named(name: &'static str) -> Self {
        Category(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Which kernel name becomes the event value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelNames {
    /// `shortName`: `gemm`.
    #[default]
    Short,
    /// `demangledName`: `void gemm<float>(float*, int)`.
    Demangled,
}

/// How metric samples get their event types (`--metric-types`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricTypes {
    /// As BSC nsys2prv 0.6 numbers them, so that its views work: GPU metrics
    /// `9400 + metricId`, NIC counters `9500 + metricsIdx`, values as recorded.
    /// The ids are the export's, which differ between GPU models.
    #[default]
    Bsc,
    /// By metric name, the same in every trace whatever the GPU (percentages and
    /// averages ×100).
    Name,
}

/// The default (in [`crate::registry`]) selects every category of the standard
/// registry.
#[derive(Clone, Debug)]
pub struct Options {
    pub categories: BTreeSet<Category>,
    pub kernel_names: KernelNames,
    /// Where and when runs spill to disk (`None`: everything stays in memory).
    pub spill: Option<paraver_writer::SpillPolicy>,
    /// Decode each table's rows on a second thread while translating them: for
    /// when fewer reports than cores are being translated.
    pub decode_ahead: bool,
    /// Keep the threads Nsight Systems adds to the traced processes (hidden by
    /// default: see [`is_nsys_thread`]).
    pub keep_nsys_threads: bool,
    /// Callers of a sampled function written with each CPU sample (levels
    /// 1..=depth; 0: the sampled function only).
    pub sampling_depth: u32,
    /// How GPU metrics are numbered in this conversion (decided for the whole
    /// job: see [`crate::metric_sets`]).
    pub gpu_metric_types: MetricTypes,
    /// How NIC counters are numbered in this conversion.
    pub nic_metric_types: MetricTypes,
}

/// Callers written with each CPU sample unless told otherwise (Extrae's default).
pub const DEFAULT_SAMPLING_DEPTH: u32 = 5;
/// Deepest caller level: 30000000 + 99 stays below Extrae's sampled lines (30000100).
pub const MAX_SAMPLING_DEPTH: u32 = 99;

/// Threads of the traced process that belong to Nsight Systems itself: its
/// injection and communication threads and CUPTI's worker.
pub fn is_nsys_thread(name: &str) -> bool {
    name.starts_with("[NSys") || name == "CUPTI worker thread"
}

impl Options {
    pub fn wants(&self, c: Category) -> bool {
        self.categories.contains(&c)
    }
}
