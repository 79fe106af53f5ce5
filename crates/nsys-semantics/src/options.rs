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
    /// BSC nsys2prv's `--time-limit-start`/`--time-limit-end`: rows outside are
    /// left out.
    pub time_limits: TimeLimits,
    /// BSC nsys2prv's `--filter-cuda-calls-*`: which CUDA API calls are written.
    pub api_calls: ApiCallFilter,
    /// How NVTX domains are numbered and which are translated (BSC nsys2prv
    /// 0.6's `--config`).
    pub nvtx: crate::nvtx_config::NvtxConfig,
    /// How GPU metrics are numbered in this conversion (decided for the whole
    /// job: see [`crate::metric_sets`]).
    pub gpu_metric_types: MetricTypes,
    /// How NIC counters are numbered in this conversion.
    pub nic_metric_types: MetricTypes,
    /// `--ranks`: only the processes of these MPI ranks are translated (see
    /// [`crate::ranks::choose_processes`]).
    pub ranks: Option<nsys2prv_events::RankSelection>,
    /// The conversion has several reports (so a report's file name may give its
    /// rank: see [`crate::ranks`]).
    pub several_reports: bool,
    /// A cut (`--time-window`) applied where rows are read: rows wholly outside
    /// this window make no records (see [`ReadWindow`]).
    pub read_window: Option<ReadWindow>,
}

/// The part of the run a cut may keep, known before translating: on the common
/// clock (UTC ns, as a report's session start puts its times there), an end
/// left out reaching to the end of the run. It holds the cut's window (it may
/// be wider), so a row wholly outside it is wholly outside the cut and makes no
/// records in the tables where that is safe (see
/// `crate::context::ReportContext::left_out_by_cut`); the merge's cut stays the
/// final filter and checks that its window lies inside this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadWindow {
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// For `--nvtx-range`: the window is the range's (found as the merge finds
    /// it), made of this many ranges on this many tasks. The merge takes it as
    /// it is: the runs it merges keep too little of the ranges outside the
    /// window to find it again.
    #[serde(default)]
    pub range: Option<(usize, usize)>,
}

impl ReadWindow {
    /// Whether `[start, end]` (common clock) lies inside this window.
    pub fn holds(&self, start: i64, end: i64) -> bool {
        self.start.is_none_or(|s| start >= s) && self.end.is_none_or(|e| end <= e)
    }
}

/// Rows kept by BSC nsys2prv's `--time-limit-start`/`--time-limit-end`: those
/// that lie wholly between the limits, in the report's own time (ns from its
/// session start, as the export stores them), as BSC's queries select them
/// (`start >= limit_start AND end <= limit_end`). Rows that cross a limit are
/// left out, not cut; the trace keeps its times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeLimits {
    pub start: Option<i64>,
    pub end: Option<i64>,
}

impl TimeLimits {
    pub fn is_set(&self) -> bool {
        self.start.is_some() || self.end.is_some()
    }

    /// Whether a row from `start` to `end` is kept (an instant: `start == end`).
    pub fn keeps(&self, start: i64, end: i64) -> bool {
        self.start.is_none_or(|s| start >= s) && self.end.is_none_or(|e| end <= e)
    }

    /// Whether a row that never ended (an unclosed range) is kept: only
    /// without an end limit, as SQL's `NULL <= limit` is not true.
    pub fn keeps_unended(&self, start: i64) -> bool {
        self.end.is_none() && self.start.is_none_or(|s| start >= s)
    }
}

/// BSC nsys2prv's `--filter-cuda-calls-duration`, `--filter-cuda-calls-include-name`
/// and `--filter-cuda-calls-exclude-name`: CUDA API calls shorter than the
/// threshold, not named in the include list, or named in the exclude list are
/// not written (nor their launch arrows). Names are compared as the trace shows
/// them (without `_vNNNN`) and as the export has them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiCallFilter {
    /// Shortest call kept, ns.
    pub min_duration: Option<i64>,
    pub include: Option<Vec<String>>,
    pub exclude: Vec<String>,
}

impl ApiCallFilter {
    pub fn is_set(&self) -> bool {
        self.min_duration.is_some() || self.include.is_some() || !self.exclude.is_empty()
    }

    /// Whether a call named `raw` (as exported) or `shown` (as the trace
    /// writes it) is kept by name.
    pub fn keeps_name(&self, raw: &str, shown: &str) -> bool {
        let named = |list: &[String]| list.iter().any(|n| n == raw || n == shown);
        self.include.as_deref().is_none_or(named) && !named(&self.exclude)
    }

    pub fn keeps_duration(&self, start: i64, end: i64) -> bool {
        self.min_duration
            .is_none_or(|d| end.saturating_sub(start) >= d)
    }
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
