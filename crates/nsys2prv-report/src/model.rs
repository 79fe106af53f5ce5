//! What a report holds: every figure of the text, the page and the files, as plain
//! data (serialised as the JSON output).

use serde::Serialize;

/// Which program wrote a report file: files with it may be replaced by a later run.
pub const GENERATOR: &str = "nsys2prv-rs report";

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub generator: &'static str,
    pub version: &'static str,
    pub trace: String,
    /// The time reported on: the trace's, or the window's.
    pub elapsed_ns: u64,
    /// The part of the trace reported on (`--time-window`, `--nvtx-range`); `None`:
    /// all of it. The gaps' and iterations' times are the trace's; the heat map's
    /// edges are from the window's start.
    pub window: Option<Window>,
    /// The figures that change when the start-up before the GPUs' first activity
    /// is left out, when that start-up is more than a tenth of the trace (not
    /// computed for a window: the user chose what to look at).
    pub from_first_activity: Option<FromFirstActivity>,
    pub tasks: usize,
    pub gpu_count: usize,
    /// GPU stream rows over all GPUs.
    pub stream_rows: usize,
    /// What the trace lacks for some figures, and what the report did about it.
    pub notes: Vec<String>,
    pub gpus: Vec<Gpu>,
    /// The efficiency model; `None` without GPU stream rows.
    pub efficiency: Option<Model>,
    pub heatmap: Heatmap,
    pub overlap: Overlap,
    pub gaps: Gaps,
    /// Compute kernels, most GPU time first.
    pub kernels: Vec<KernelStats>,
    /// Names of the GPU metrics averaged per kernel (the keys of `KernelStats::metrics`).
    pub kernel_metrics: Vec<String>,
    pub nccl: Vec<CollectiveStats>,
    pub mpi: Vec<NamedStats>,
    pub memory: Vec<NamedStats>,
    /// NVTX ranges by name (every thread; nested ranges counted each), most time
    /// first. For `diff` (in its JSON); left out of the report's JSON, which stays as it was.
    #[serde(skip_serializing)]
    pub nvtx: Vec<NamedStats>,
    /// Per GPU metric: the mean of its samples taken while a compute kernel ran on
    /// the sample's GPU (the useful time's mean); empty without GPU metrics. For
    /// `report` over runs (in its JSON); left out of the report's JSON.
    #[serde(skip_serializing)]
    pub useful_metrics: std::collections::BTreeMap<String, UsefulMetric>,
    pub iterations: Option<Iterations>,
    /// Who made NCCL collectives wait (traces converted with matched collectives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_arrivals: Option<LateArrivals>,
    /// Why the GPUs were idle (traces with GPU stream rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_causes: Option<IdleCauses>,
    /// Pipeline bubbles per stage and iteration (a pipeline found from the NCCL
    /// point-to-point transfers, or given with `--pipeline-stages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    /// Launch latencies and queue depths (traces converted with both kernels and
    /// CUDA API calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_queues: Option<LaunchQueues>,
}

/// Kernel launch latency (the begin of the API call that launched a kernel to
/// the kernel's begin) and the launch queue of each GPU stream (kernels whose
/// launch call began and which have not started).
#[derive(Clone, Debug, Serialize)]
pub struct LaunchQueues {
    /// Every stream row with a queue, most starved first.
    pub streams: Vec<StreamQueue>,
    /// Per kernel name over every stream, longest 90th percentile first.
    pub kernels: Vec<KernelLatency>,
    /// Latencies over every stream and kernel.
    pub all: LatencyStats,
    /// Latencies left out of the quantiles (past an eighth of `--memory-limit`);
    /// the counts, means and maxima have them.
    pub left_out: u64,
}

/// The distribution of launch latencies (ns). Quantiles by nearest rank.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_ns: f64,
    pub median_ns: u64,
    pub p90_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct StreamQueue {
    /// `task / CUDA-D<dev>.S<stream>`.
    pub stream: String,
    /// Depth × time over the time reported on, divided by it.
    pub mean_depth: f64,
    pub max_depth: i64,
    /// Idle (no operation running on the stream) with nothing queued, between
    /// two of its operations: the stream waited for the CPU to launch.
    pub starved_ns: u64,
    /// Share of the time reported on.
    pub starved_share: f64,
    /// Idle between two of its operations with kernels queued.
    pub queued_idle_ns: u64,
    /// Launch latencies of the stream's kernels; `None` without any.
    pub latency: Option<LatencyStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelLatency {
    pub kernel: String,
    pub latency: LatencyStats,
}

/// Late arrivals at NCCL collectives: for every collective instance matched across
/// ranks by the conversion, the time the kernels that started before the last
/// rank's waited for it.
#[derive(Clone, Debug, Serialize)]
pub struct LateArrivals {
    pub total_wait_ns: u64,
    /// Kernels that waited.
    pub waits: u64,
    /// The ranks that made others wait, most wait first.
    pub ranks: Vec<LateRank>,
    /// Per collective and late rank, most wait first (at most 10).
    pub per_collective: Vec<LateCollective>,
    /// Per iteration (when the trace has iterations): the rank that made others wait
    /// most in it.
    pub per_iteration: Vec<LateIteration>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LateRank {
    pub rank: String,
    pub wait_ns: u64,
    pub waits: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LateCollective {
    pub collective: String,
    pub rank: String,
    pub wait_ns: u64,
    pub waits: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LateIteration {
    /// 1-based, by order within each task.
    pub iteration: usize,
    pub rank: String,
    /// What that rank cost the others in this iteration, and all waits in it.
    pub wait_ns: u64,
    pub total_wait_ns: u64,
}

/// Idle time and its causes, which add up to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IdleSplit {
    pub idle_ns: u64,
    /// Before the operation that ended the gap was launched: the CPU was late.
    pub host_bound_ns: u64,
    /// After it was launched, while its stream waited (an event, a host function).
    pub dependency_ns: u64,
    /// The rest: launch latency, or no launch known.
    pub other_ns: u64,
}

impl IdleSplit {
    /// Adds `ns` of cause `cause` (0 host-bound, 1 dependency/sync, 2 other).
    pub(crate) fn add(&mut self, cause: usize, ns: u64) {
        self.idle_ns += ns;
        match cause {
            0 => self.host_bound_ns += ns,
            1 => self.dependency_ns += ns,
            _ => self.other_ns += ns,
        }
    }

    pub(crate) fn from_causes(by_cause: [u64; 3]) -> Self {
        IdleSplit {
            idle_ns: by_cause.iter().sum(),
            host_bound_ns: by_cause[0],
            dependency_ns: by_cause[1],
            other_ns: by_cause[2],
        }
    }

    pub(crate) fn plus(self, other: IdleSplit) -> IdleSplit {
        IdleSplit {
            idle_ns: self.idle_ns + other.idle_ns,
            host_bound_ns: self.host_bound_ns + other.host_bound_ns,
            dependency_ns: self.dependency_ns + other.dependency_ns,
            other_ns: self.other_ns + other.other_ns,
        }
    }

    pub(crate) fn shares(&self) -> [Option<f64>; 3] {
        let share = |x: u64| (self.idle_ns > 0).then(|| x as f64 / self.idle_ns as f64);
        [
            share(self.host_bound_ns),
            share(self.dependency_ns),
            share(self.other_ns),
        ]
    }
}

/// Why the GPUs were idle (traces with GPU stream rows).
#[derive(Clone, Debug, Serialize)]
pub struct IdleCauses {
    /// Over every GPU.
    #[serde(flatten)]
    pub total: IdleSplit,
    /// Gaps between operations, over every GPU.
    pub gaps: u64,
    pub gpus: Vec<GpuIdle>,
    /// Per iteration (when the trace has iterations), over the GPUs of the tasks.
    pub per_iteration: Vec<IterationIdle>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuIdle {
    pub gpu: String,
    #[serde(flatten)]
    pub split: IdleSplit,
    pub gaps: u64,
    /// What the launching thread was in when the gaps began, most host-bound time
    /// first (at most 3).
    pub host_bound_in: Vec<HostBoundIn>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostBoundIn {
    pub what: String,
    pub ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IterationIdle {
    /// 1-based, by order within each task.
    pub iteration: usize,
    #[serde(flatten)]
    pub split: IdleSplit,
}

/// The pipeline's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pipeline {
    /// What gave the stages: `NCCL point-to-point transfers` or `--pipeline-stages N`.
    pub found_by: String,
    /// The iteration range the figures are per; `None`: no iterations, each GPU's
    /// whole run (its first compute kernel to its last) is one span.
    pub iteration_range: Option<String>,
    pub stages: Vec<Stage>,
    /// Micro-batches per iteration: transfers from stage 0 to stage 1, per
    /// iteration and chain (`None` when that is not a whole number, or without
    /// transfers or iterations).
    pub micro_batches: Option<u64>,
    /// Over every iteration: the share of the stages' GPU time within the
    /// iteration's pipeline span (from the first compute kernel of any stage to
    /// the end of the last one of any) with no compute kernel running.
    pub pipeline_share: Option<f64>,
    /// GPipe's bubble share (p − 1)/(m + p − 1), for p stages and m micro-batches
    /// (equal stages, free transfers): a sanity line beside `pipeline_share`.
    pub gpipe_share: Option<f64>,
}

/// One stage: its GPUs, and its bubble per iteration and in all.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stage {
    /// From 0.
    pub stage: usize,
    /// Indexes into `Report::gpus`.
    pub gpus: Vec<usize>,
    /// Its GPUs in few words: `rank 2 GPU 0`, or the first and how many more.
    pub label: String,
    /// Iterations in which the stage ran compute kernels.
    pub iterations: usize,
    /// Summed over its iterations and GPUs.
    pub span_ns: u64,
    pub bubble_ns: u64,
    /// Of the bubble: time with an NCCL kernel running (waiting for, or moving,
    /// a neighbour's data), and with nothing running on the GPU.
    pub in_nccl_ns: u64,
    pub idle_ns: u64,
    /// bubble / span.
    pub share: Option<f64>,
    pub per_iteration: Vec<StageIteration>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageIteration {
    /// 1-based, by order within each task (as `Iterations`).
    pub iteration: usize,
    /// The stage's GPUs with compute kernels in it (the times are summed over them).
    pub gpus: usize,
    pub span_ns: u64,
    pub bubble_ns: u64,
    pub in_nccl_ns: u64,
    pub idle_ns: u64,
    pub share: Option<f64>,
}

/// A GPU metric over the useful time.
#[derive(Clone, Debug, Serialize)]
pub struct UsefulMetric {
    /// In the metric's unit (%, MHz).
    pub mean: f64,
    pub samples: u64,
}

/// The part of the trace a report covers.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    /// What chose it: `--time-window 1s:2s`, or `--nvtx-range step#3 (4 ranges on 2 tasks)`.
    pub chosen_by: String,
}

/// From the first GPU activity (kernel, NCCL kernel or memory operation, on any
/// GPU) to the end: useful and communication time are the same as over the whole
/// time (nothing ran before), idle time and the efficiencies that divide by the
/// elapsed time change.
#[derive(Clone, Debug, Serialize)]
pub struct FromFirstActivity {
    /// When the first GPU activity began (trace time).
    pub start_ns: u64,
    /// Share of the reported time before it.
    pub share_before: f64,
    pub elapsed_ns: u64,
    /// Per GPU (as `Report::gpus`): idle time from the first activity on.
    pub idle_ns: Vec<u64>,
    pub efficiency: Option<Model>,
}

/// Start-up before the first GPU activity longer than this share of the time is
/// said, with the figures without it.
pub const LATE_START_SHARE: f64 = 0.10;

impl FromFirstActivity {
    /// The figures of `gpus` from `first` (ns after the reported time's start) on,
    /// when it is later than [`LATE_START_SHARE`] of `elapsed`.
    pub fn of(gpus: &[Gpu], elapsed: u64, first: Option<u64>, offset: u64) -> Option<Self> {
        let first = first?;
        let share_before = first as f64 / elapsed.max(1) as f64;
        if share_before <= LATE_START_SHARE || first >= elapsed {
            return None;
        }
        let rest = elapsed - first;
        Some(FromFirstActivity {
            start_ns: first + offset,
            share_before,
            elapsed_ns: rest,
            idle_ns: gpus
                .iter()
                .map(|g| rest.saturating_sub(g.useful_ns + g.communication_ns))
                .collect(),
            efficiency: Model::of(gpus, rest),
        })
    }
}

/// One GPU: a device of a task, seen through its stream rows `CUDA-D<dev>.S<stream>`.
#[derive(Clone, Debug, Serialize)]
pub struct Gpu {
    /// `<task name> GPU <device>`.
    pub name: String,
    /// 1-based task of the trace.
    pub task: usize,
    pub device: u32,
    /// The node's name, from the `.row`.
    pub node: String,
    pub streams: usize,
    /// Time with a compute kernel running (U).
    pub useful_ns: u64,
    /// Time with an NCCL kernel or a memory operation and no compute kernel (C).
    pub communication_ns: u64,
    pub idle_ns: u64,
    /// Time with an NCCL kernel running, by the number of compute kernels running
    /// meanwhile (index 0: not overlapped).
    pub overlap_ns: Vec<u64>,
    /// Per heat-map bin: time with a compute kernel running.
    pub bins_compute_ns: Vec<u64>,
    /// Per heat-map bin: time with an NCCL kernel or a memory operation running.
    pub bins_communication_ns: Vec<u64>,
    /// Idle gaps at or above the threshold: how many and their time.
    pub gap_count: u64,
    pub gap_total_ns: u64,
    /// The longest idle gaps, longest first.
    pub gaps: Vec<Gap>,
}

/// The efficiency model (fractions, 0..1; `None` where a ratio has no denominator).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Model {
    pub load_balance: Option<f64>,
    pub communication_efficiency: Option<f64>,
    pub orchestration_efficiency: f64,
    pub parallel_efficiency: f64,
}

impl Model {
    /// The model of `gpus` over `elapsed` ns; `None` without GPUs or time.
    pub fn of(gpus: &[Gpu], elapsed: u64) -> Option<Model> {
        if gpus.is_empty() || elapsed == 0 {
            return None;
        }
        let useful: Vec<f64> = gpus.iter().map(|g| g.useful_ns as f64).collect();
        let max_useful = useful.iter().copied().fold(0.0, f64::max);
        let avg_useful = useful.iter().sum::<f64>() / useful.len() as f64;
        let max_active = gpus
            .iter()
            .map(|g| (g.useful_ns + g.communication_ns) as f64)
            .fold(0.0, f64::max);
        let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
        Some(Model {
            load_balance: ratio(avg_useful, max_useful),
            communication_efficiency: ratio(max_useful, max_active),
            orchestration_efficiency: max_active / elapsed as f64,
            parallel_efficiency: avg_useful / elapsed as f64,
        })
    }
}

/// The utilization maps: time cut into equal bins, one row per GPU or per group of
/// GPUs when there are more than fit.
#[derive(Clone, Debug, Serialize)]
pub struct Heatmap {
    pub bins: usize,
    /// Bin `i` covers `[edges[i], edges[i + 1])` ns.
    pub edges_ns: Vec<u64>,
    /// How GPUs were grouped into rows, when they were (said on the page).
    pub grouping: Option<String>,
    pub rows: Vec<HeatmapRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HeatmapRow {
    pub label: String,
    /// Indexes into `Report::gpus`.
    pub gpus: Vec<usize>,
    /// Per bin: the share of the bin busy with compute kernels, averaged over the row's GPUs.
    pub compute_share: Vec<f64>,
    /// Per bin: the same for NCCL kernels and memory operations.
    pub communication_share: Vec<f64>,
    /// The row's totals over the run (shares of elapsed time, averaged over its GPUs).
    pub useful_share: f64,
    pub communication_share_total: f64,
    pub idle_share: f64,
}

/// Compute/communication overlap (BSC's table): per GPU, the share of its NCCL
/// kernel time with 0, 1, 2, … compute kernels running meanwhile.
#[derive(Clone, Debug, Serialize)]
pub struct Overlap {
    /// Column `k` counts time with `k` compute kernels running.
    pub columns: usize,
    /// One row per GPU with NCCL kernels: (index into `Report::gpus`, shares by column).
    pub rows: Vec<OverlapRow>,
    /// Average, minimum and maximum of each column over those GPUs, and avg/max.
    pub average: Vec<f64>,
    pub minimum: Vec<f64>,
    pub maximum: Vec<f64>,
    pub average_over_maximum: Vec<Option<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OverlapRow {
    pub gpu: usize,
    pub nccl_ns: u64,
    pub shares: Vec<f64>,
}

/// Idle gaps of the GPUs between two of their activities.
#[derive(Clone, Debug, Serialize)]
pub struct Gaps {
    pub threshold_ns: u64,
    /// Gaps at or above the threshold, over all GPUs.
    pub count: u64,
    pub total_ns: u64,
    /// The longest gaps over all GPUs, longest first.
    pub longest: Vec<Gap>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gap {
    /// Index into `Report::gpus`.
    pub gpu: usize,
    pub begin_ns: u64,
    pub duration_ns: u64,
    /// The CPU thread that launches work on the GPU (or the task's first thread).
    pub thread: String,
    /// The call that thread was in when the gap began (`kind: name`).
    pub call: Option<String>,
    /// The innermost NVTX range open on that thread then.
    pub nvtx: Option<String>,
}

/// Count and time of the intervals of one name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NamedStats {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// Bytes (memory operations, NCCL message sizes, MPI collective send sizes);
    /// `None` (JSON null, "n/a") when the trace gives none of them a size (kernels;
    /// NCCL without its payload; MPI calls without sizes).
    pub bytes: Option<u64>,
    /// Bytes per ns (GB/s); `None` without bytes or time.
    pub gb_per_s: Option<f64>,
}

impl NamedStats {
    pub fn named(name: String) -> Self {
        NamedStats {
            name,
            ..NamedStats::default()
        }
    }

    fn update(&mut self) {
        self.mean_ns = self.total_ns as f64 / self.count as f64;
        self.gb_per_s = self
            .bytes
            .filter(|&b| b > 0 && self.total_ns > 0)
            .map(|b| b as f64 / self.total_ns as f64);
    }

    pub fn merge(&mut self, other: &NamedStats) {
        if other.count == 0 {
            return;
        }
        self.min_ns = if self.count == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.count += other.count;
        self.total_ns += other.total_ns;
        self.bytes = match (self.bytes, other.bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.update();
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelStats {
    #[serde(flatten)]
    pub stats: NamedStats,
    /// Share of all compute kernel time.
    pub share: f64,
    /// Per GPU metric: the mean of its samples taken while the kernel ran.
    pub metrics: std::collections::BTreeMap<String, f64>,
}

/// NCCL kernels of one collective.
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveStats {
    #[serde(flatten)]
    pub stats: NamedStats,
    /// GPUs in the communicators (from the NCCL payload's communicator, else the GPUs
    /// that ran the collective).
    pub ranks: usize,
    /// Algorithm bandwidth: bytes / time, GB/s.
    pub algorithm_gb_per_s: Option<f64>,
    /// Bus bandwidth (as nccl-tests): algorithm bandwidth times the collective's
    /// factor, e.g. 2(n-1)/n for AllReduce.
    pub bus_gb_per_s: Option<f64>,
    /// Per message size (NCCL's payload), smallest first; empty without sizes.
    /// For `diff` (in its JSON); left out of the report's JSON.
    #[serde(skip_serializing)]
    pub sizes: Vec<MessageSizeStats>,
}

/// NCCL kernels of one collective and one message size.
#[derive(Clone, Debug, Serialize)]
pub struct MessageSizeStats {
    pub message_bytes: u64,
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    /// Bus bandwidth (nccl-tests' factor over the collective's ranks), GB/s.
    pub bus_gb_per_s: Option<f64>,
}

/// The iterations (occurrences of one NVTX range) of each task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Iterations {
    pub range: String,
    pub tasks: Vec<TaskIterations>,
    /// Iteration `k` (by order within each task) over the tasks.
    pub per_iteration: Vec<IterationSummary>,
    /// The tasks whose iterations take longest on average, slowest first (at most 5).
    pub slowest: Vec<Straggler>,
    /// Median over tasks of their mean iteration time.
    pub median_task_mean_ns: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskIterations {
    pub task: String,
    pub count: usize,
    pub iterations: Vec<Occurrence>,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Occurrence {
    pub begin_ns: u64,
    pub duration_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IterationSummary {
    /// 1-based.
    pub iteration: usize,
    pub tasks: usize,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// The task of the longest occurrence.
    pub slowest_task: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Straggler {
    pub task: String,
    pub mean_ns: f64,
    /// Its mean over the median of the tasks' means.
    pub over_median: Option<f64>,
}

#[cfg(test)]
impl Gpu {
    /// A GPU with a name and node and nothing else, for tests.
    pub fn example(name: &str, node: &str) -> Gpu {
        Gpu {
            name: name.into(),
            task: 1,
            device: 0,
            node: node.into(),
            streams: 1,
            useful_ns: 0,
            communication_ns: 0,
            idle_ns: 0,
            overlap_ns: Vec::new(),
            bins_compute_ns: Vec::new(),
            bins_communication_ns: Vec::new(),
            gap_count: 0,
            gap_total_ns: 0,
            gaps: Vec::new(),
        }
    }
}

/// A share `part / whole`, `None` when `whole` is 0.
pub fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(useful_ns: u64, communication_ns: u64) -> Gpu {
        Gpu {
            useful_ns,
            communication_ns,
            ..Gpu::example("", "")
        }
    }

    #[test]
    fn the_model_multiplies_to_the_parallel_efficiency() {
        let gpus = [gpu(400, 100), gpu(300, 120), gpu(200, 100), gpu(100, 400)];
        let m = Model::of(&gpus, 1000).unwrap();
        let (lb, ce) = (m.load_balance.unwrap(), m.communication_efficiency.unwrap());
        assert!((lb - 0.625).abs() < 1e-12);
        assert!((ce - 0.8).abs() < 1e-12);
        assert!((m.orchestration_efficiency - 0.5).abs() < 1e-12);
        assert!((m.parallel_efficiency - 0.25).abs() < 1e-12);
        assert!((lb * ce * m.orchestration_efficiency - m.parallel_efficiency).abs() < 1e-12);
        assert!(Model::of(&[], 1000).is_none());
        assert_eq!(Model::of(&[gpu(0, 0)], 10).unwrap().load_balance, None);
    }

    #[test]
    fn named_stats_add_and_merge() {
        let part = |count, total_ns, min_ns, max_ns, bytes| NamedStats {
            count,
            total_ns,
            min_ns,
            max_ns,
            bytes,
            ..NamedStats::default()
        };
        let mut a = NamedStats::named("a".into());
        a.merge(&part(2, 40, 10, 30, Some(100)));
        a.merge(&part(1, 5, 5, 5, Some(1)));
        a.merge(&part(1, 5, 5, 5, None));
        assert_eq!(
            (a.count, a.total_ns, a.min_ns, a.max_ns, a.bytes),
            (4, 50, 5, 30, Some(101))
        );
        assert_eq!(a.mean_ns, 12.5);
        assert_eq!(a.gb_per_s, Some(101.0 / 50.0));
        // Without any size, the bytes are unknown, not 0.
        let mut b = NamedStats::named("b".into());
        b.merge(&part(1, 5, 5, 5, None));
        assert_eq!((b.bytes, b.gb_per_s), (None, None));
    }
}
