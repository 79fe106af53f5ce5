//! Schema-faithful synthetic Nsight Systems SQLite exports, for tests and benchmarks of what
//! cannot be recorded without a GPU (CUDA API calls, kernels, copies, memsets, synchronization).
//!
//! Tables are created from the exporter's own `CREATE TABLE` statements of each version (copied
//! from real exports into `schema/`), so column names, order and types match; values follow the
//! conventions seen in real files (packed global ids with VM id 1, `_vNNNN` runtime API names,
//! 0xFFFFFFFF for "not applicable" stream and event ids, the per-version `syncType` encoding...).
//! Output is deterministic for a given spec and path.
//!
//! With [`SynthSpec::device`], GPU and SoC metrics, CUDA graphs and host functions, memory usage,
//! NIC and IB switch counters are
//! recorded too (see [`SynthDeviceSide`]).
//!
//! With [`SynthSpec::training`], each process runs a data-parallel training loop (NVTX ranges,
//! NCCL all-reduces with payloads, copies and syncs) instead of randomly interleaved operations.
//!
//! [`add_cpu_activity`] adds CPU IP samples with call stacks and context switches, or NVTX
//! ranges, to a written export (CPU-only reports, with no CUDA rows).
//!
//! With [`SynthSpec::mpi`], the first process is one rank of an MPI job whose other ranks are
//! written to other files from their own specs: see [`SynthMpi`] for the shared timeline.
//!
//! [`add_rows`] adds rows of any table, declared by column ([`TableRows`]), to a written export,
//! the table created from the schema: a category needs no code here for its tests.

#![forbid(unsafe_code)]

mod activity;
mod catalog;
mod cpu;
mod ddl;
mod device;
mod export;
mod ids;
mod layout;
mod meta;
mod mpi;
mod mpi_export;
mod nvtx;
mod rng;
mod rows;
mod sim;
mod strings;
mod target_info;
mod timefmt;
mod version;

#[cfg(test)]
mod device_tests;
#[cfg(test)]
mod mpi_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod training_tests;

use std::path::Path;

pub use cpu::{add_cpu_activity, CpuCounts, SynthCpu};
pub use mpi::{MpiPattern, SynthMpi};
pub use rows::{add_rows, table_statement, Cell, TableRows};
pub use sim::{PipelineOp, PipelineSchedule, PipelineWork};
pub use version::SchemaVersion;

/// What to put in one export file.
#[derive(Clone, Debug)]
pub struct SynthSpec {
    pub schema: SchemaVersion,
    /// `Hostname` in TARGET_INFO_SYSTEM_ENV, which groups ranks into nodes.
    pub hostname: String,
    /// Wall clock of the session's t = 0, and TARGET_INFO_SESSION_START_TIME.utcEpochNs unless
    /// [`SynthMpi::clock_skew_ns`] makes the recorded value wrong.
    pub utc_epoch_ns: i64,
    /// Same seed, same rows.
    pub seed: u64,
    pub processes: Vec<SynthProcess>,
    /// Environment of the launched command (e.g. `SLURM_PROCID`), recorded as
    /// `PROCESS_0:ENVIRONMENT_VARIABLE` rows in META_DATA_CAPTURE. Versions before 3.4 have no
    /// such table, so there it is not recorded anywhere.
    pub env: Vec<(String, String)>,
    /// MPI calls of the first process, as one rank of a job (`None`: no MPI tracing).
    pub mpi: Option<SynthMpi>,
    /// GPU and SoC metrics, CUDA graphs and host functions, memory usage, NIC and IB switch
    /// counters (all off by default).
    pub device: SynthDeviceSide,
    /// Run a training loop in every process before its randomly interleaved operations
    /// (`None`: only those). Needs schema 3.16 or later.
    pub training: Option<SynthTraining>,
}

/// Device-side recordings beyond the CUDA activity of [`SynthProcess`]. The default records none
/// of them, so older specs keep writing the same files.
#[derive(Clone, Debug, Default)]
pub struct SynthDeviceSide {
    /// GPU metric samples per sampled GPU, 10 kHz apart (closer when the run is short), the first
    /// ones before the session starts (negative timestamps), as nsys samples. Schema 3.16+ writes
    /// `GPU_METRICS` + `TARGET_INFO_GPU_METRICS` (metric names with units; metric ids differ per
    /// GPU), older ones the JSON samples of `GENERIC_EVENTS` (names without units). Each set has
    /// one metric outside nsys2prv-rs's built-in table.
    pub gpu_metric_samples: u64,
    /// GPUs sampled (`TARGET_INFO_GPU.id`); empty: every GPU a process of the file uses.
    pub metric_gpus: Vec<u32>,
    /// `cudaGraphLaunch` calls per process, of one graph (three kernels and a copy) built before
    /// the first launch; `graph_mode` says how they are traced.
    pub graph_launches: u64,
    pub graph_mode: SynthGraphMode,
    /// Device allocations per process, each freed later (`cudaMalloc`/`cudaFree`, and every
    /// other one `cudaMallocAsync`/`cudaFreeAsync` from a memory pool), recorded in
    /// `CUDA_GPU_MEMORY_USAGE_EVENTS` (schema 3.0+).
    pub memory_allocations: u64,
    /// Samples of each NIC counter (one NIC, `mlx5_0`, three counters; schema 3.16+).
    pub nic_samples: u64,
    /// Samples of each IB switch counter on each sampled port (one switch, two ports, two
    /// counters in `NET_IB_SWITCH_METRIC`; schema 3.16+).
    pub ib_switch_samples: u64,
    /// Congestion events of that switch (`NET_IB_SWITCH_CONGESTION_EVENT`; schema 3.16+).
    pub ib_congestion_events: u64,
    /// Samples of each SoC metric (one SoC, four metrics in `SOC_METRICS`; schema 3.16+).
    pub soc_metric_samples: u64,
    /// `cudaLaunchHostFunc` calls per process: each has its GPU side in
    /// `CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH` and its execution in
    /// `CUDA_HOST_CALLBACK`, on the process's callback thread (tid `pid + 999`), all with the
    /// call's correlation id (schema 3.24, standing in for nsys 2026).
    pub host_functions: u64,
    /// Bursts of kernel launches that queue up, with fixed times, after every other operation
    /// of the process (`None`: none).
    pub launch_bursts: Option<SynthLaunchBursts>,
}

/// Bursts of `cudaLaunchKernel` calls on the process's first CPU thread to its first stream,
/// after everything else it does, with fixed times: the truth of the launch-queue tests. A
/// burst's calls begin `call_spacing_ns` apart (each lasting half that); its first kernel
/// begins `first_latency_ns` after its first call, and its kernels, `kernel_ns` each, run back
/// to back, so the i-th waits [`SynthLaunchBursts::latency`]. Between a burst's last kernel's
/// end and the next burst's first call the stream is idle with nothing queued for `gap_ns`
/// (so, as the first call comes `gap_ns` after the stream's last operation too, every burst
/// but the first follows `gap_ns` of starvation and `first_latency_ns` of idle time with a
/// kernel queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthLaunchBursts {
    pub bursts: u32,
    pub kernels_per_burst: u32,
    pub call_spacing_ns: i64,
    pub first_latency_ns: i64,
    pub kernel_ns: i64,
    pub gap_ns: i64,
}

impl SynthLaunchBursts {
    /// The launch latency of the `i`-th kernel of a burst (from 0): its call's begin to its begin.
    pub fn latency(&self, i: u32) -> i64 {
        self.first_latency_ns + i64::from(i) * (self.kernel_ns - self.call_spacing_ns)
    }
}

/// A data-parallel training loop (PyTorch DDP as nsys records it), run by every process.
///
/// Each step: an NVTX range per step, phase (data, forward, loss, backward, optimizer), layer and
/// operator, operators nesting `nvtx_depth - 4` inner ranges and followed by
/// `cpu_ops_per_op` ranges that launch nothing (views, reshapes); the batch copied in with
/// `cudaMemcpyAsync`; forward kernels launched by the first CPU thread, backward kernels by the
/// second (PyTorch's autograd thread); after every few layers of the backward pass a gradient
/// bucket all-reduced by NCCL (a range in the NCCL domain with its JSON payload around the
/// launch of an NCCL kernel on its own stream); the loss copied out and waited for with
/// `cudaStreamSynchronize`; fused optimizer kernels and `cudaMemsetAsync` of the gradients.
/// Kernel names come from a pool of `kernel_names` distinct C++ template names of 85-360
/// characters, which the steps use in turn when the pool is larger than a step needs. An NVTX
/// start/end range covers each epoch. An MPI rank makes its MPI calls before the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthTraining {
    pub steps: u64,
    /// Layers of the model (each: 11 forward and 23 backward kernels).
    pub layers: u32,
    /// NCCL all-reduces per step (gradient buckets).
    pub buckets: u32,
    /// Distinct kernel names (at least one per kernel family: 6).
    pub kernel_names: u32,
    /// NVTX nesting depth, 4 to 12: step, phase, layer, operator, then inner ranges.
    pub nvtx_depth: u32,
    /// NVTX ranges without kernels after each operator.
    pub cpu_ops_per_op: u32,
    pub steps_per_epoch: u64,
    /// Kernels of this short name (e.g. `flash_fwd_kernel`) take this many percent longer
    /// (`diff` tests: a known regression). Their random durations are drawn as before, so the
    /// rest of the run is unchanged.
    pub slower_kernel: Option<(String, u32)>,
    /// The main thread spends this long (ns) more in each step's data loading: a straggling
    /// rank when set in one rank's spec.
    pub data_load_delay_ns: i64,
    /// How this process takes part in a parallel job (the default: on its own, as before).
    pub parallel: SynthParallel,
}

/// A process's place in a parallel training job, and behaviour injected on request. The default
/// (world 0) leaves the loop as it was: a communicator per process, nothing injected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthParallel {
    /// Rank of this process in the job's one NCCL communicator, and the job's size.
    pub rank: u32,
    pub world: u32,
    /// The session's `utcEpochNs` less the job's common clock origin: what is subtracted from a
    /// time on the job's clock to get this session's time (ranks' sessions start µs apart).
    pub session_offset_ns: i64,
    /// Pipeline parallelism instead of data parallelism: stage = rank, `world` stages.
    pub pipeline: Option<SynthPipeline>,
    /// One rank arrives late at every all-reduce (data parallelism).
    pub late_rank: Option<SynthLateRank>,
    /// Before each step's batch is copied in, the main thread is busy this long in `data_load`
    /// with nothing queued on the GPU (a host-bound gap).
    pub host_gap_ns: i64,
    /// Before each step's forward pass, the main thread makes the compute stream wait
    /// (`cudaStreamWaitEvent`) for an event another process records (an IPC event: no record
    /// of it in this export) this long (ns) after this GPU's previous work ended; the forward
    /// kernels, launched meanwhile, wait (a dependency gap of this length plus the stream's
    /// 0.5-2 µs gap).
    pub stream_wait_ns: i64,
}

/// A GPipe schedule: every micro-batch's forward through the stages, then every micro-batch's
/// backward back through them; activations and gradients go to the neighbouring stage with
/// `ncclSend`/`ncclRecv` (kernel `ncclDevKernel_SendRecv`), both kernels of a transfer ending
/// together once both sides are there. Kernel times follow the schedule exactly (no jitter), on
/// the job's common clock: [`SynthPipeline::schedule`] is the truth the tests compare with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthPipeline {
    pub micro_batches: u32,
    /// Forward compute per micro-batch and stage (ns); backward takes twice as long.
    pub forward_ns: i64,
    /// Bytes of one micro-batch's activations (and of its gradients).
    pub activation_bytes: i64,
    /// This stage's compute takes `slow_factor` times as long.
    pub slow_stage: Option<u32>,
    pub slow_factor: i64,
}

/// `rank`'s all-reduce kernels start `late_ns` after the others' (its CPU is busy that long
/// before each launch); the others' kernels last `late_ns` longer, waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthLateRank {
    pub rank: u32,
    pub late_ns: i64,
}

impl SynthTraining {
    /// A 12-layer model with 4 buckets per step and 300 kernel names, NVTX 4 deep.
    pub fn new(steps: u64) -> Self {
        Self {
            steps,
            layers: 12,
            buckets: 4,
            kernel_names: 300,
            nvtx_depth: 4,
            cpu_ops_per_op: 0,
            steps_per_epoch: 100,
            slower_kernel: None,
            data_load_delay_ns: 0,
            parallel: SynthParallel::default(),
        }
    }

    /// About how many rows one step writes (API calls, GPU rows and NVTX ranges), for sizing.
    pub fn rows_per_step(&self) -> u64 {
        // A launch is an API call, its GPU row and, one time in 8, a nested driver call.
        const LAUNCH: f64 = 2.125;
        // A stream sync is an API call and a SYNCHRONIZATION row.
        const SYNC: f64 = 2.0;
        let ranges_per_op = f64::from(1 + self.nvtx_depth.saturating_sub(4) + self.cpu_ops_per_op);
        // Per layer: 11 forward and 10 backward operators in a layer range each, 34 kernels.
        let per_layer = 2.0 + 21.0 * ranges_per_op + 34.0 * LAUNCH;
        // Per bucket: the NCCL range and kernel; an optimizer kernel and a memset.
        let per_bucket = 1.0 + 3.0 * LAUNCH;
        // Step and phase ranges; two copies in; loss kernels, copy out and sync; optimizer sync.
        let fixed = 6.0 + 2.0 * LAUNCH + 3.0 * LAUNCH + 2.0 * SYNC;
        let rows =
            f64::from(self.layers) * per_layer + f64::from(self.buckets) * per_bucket + fixed;
        rows.round() as u64
    }

    /// Steps that make about `rows` rows.
    pub fn steps_for_rows(&self, rows: u64) -> u64 {
        (rows / self.rows_per_step()).max(1)
    }
}

/// How CUDA graphs are traced (`--cuda-graph-trace`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SynthGraphMode {
    /// One `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per launch (schema 3.16+).
    #[default]
    Graph,
    /// Each node is a kernel or copy row with `graphNodeId`, correlated with the launch.
    Node,
}

/// One profiled CUDA process.
#[derive(Clone, Debug)]
pub struct SynthProcess {
    /// OS pid; its CPU threads get tids `pid`, `pid + 1`, ...
    pub pid: u32,
    /// Name in PROCESSES, e.g. `./train`; threads are named after its base name.
    pub name: String,
    /// Threads that call CUDA.
    pub cpu_threads: u32,
    /// CUDA device ids this process uses, one primary context each.
    pub devices: Vec<u32>,
    /// Streams carrying work on each device, counting the NULL stream (so 2 = NULL + 1 created;
    /// 0 is taken as 1). Copies and memsets on the NULL stream use the blocking API calls.
    pub streams_per_device: u32,
    pub kernels: u64,
    /// Copies use every `copyKind` 0..=13 in turn; 11-13 are unified-memory migrations, which
    /// have correlationId 0 and no API call.
    pub memcpys: u64,
    pub memsets: u64,
    /// Synchronizing calls, in turn cudaStreamSynchronize, cudaDeviceSynchronize and
    /// cudaEventRecord + cudaEventSynchronize, each with one SYNCHRONIZATION row.
    pub syncs: u64,
    /// Calls that launch nothing (cudaMalloc, cudaFree, cuMemAlloc_v2, ...), some of them driver
    /// calls (eventClass 1).
    pub extra_api_calls: u64,
}

/// Rows written to the CUDA activity tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynthCounts {
    pub kernels: u64,
    /// Including unified-memory migrations.
    pub memcpys: u64,
    pub memsets: u64,
    pub syncs: u64,
    /// Rows in CUPTI_ACTIVITY_KIND_RUNTIME: runtime and driver calls, nested ones included.
    pub runtime_rows: u64,
    /// Rows in CUPTI_ACTIVITY_KIND_CUDA_EVENT (one per cudaEventRecord of an event sync).
    pub cuda_events: u64,
    /// Rows in MPI_P2P_EVENTS (schema 3.16 and later).
    pub mpi_p2p: u64,
    /// Rows in MPI_COLLECTIVES_EVENTS.
    pub mpi_collectives: u64,
    /// Rows in MPI_START_WAIT_EVENTS: one per request completed by a wait.
    pub mpi_start_wait: u64,
    /// Rows in MPI_OTHER_EVENTS (MPI_Init, MPI_Comm_rank, MPI_Comm_size, MPI_Finalize).
    pub mpi_other: u64,
    /// Sends of this rank recorded with their peer: each has exactly one matching receive in the
    /// peer's file, so the sum over a job's files is its number of messages. 0 in the NVTX form.
    pub mpi_messages: u64,
    /// MPI calls recorded as NVTX push/pop ranges in domain "MPI" (schema 3.7 and older).
    pub nvtx_mpi_ranges: u64,
    /// Rows in GPU_METRICS (one per metric and sample) or GENERIC_EVENTS (one per sample).
    pub gpu_metric_rows: u64,
    /// Metric values in those rows (GENERIC_EVENTS holds several per row).
    pub gpu_metric_values: u64,
    /// `cudaGraphLaunch` calls (included in `runtime_rows`).
    pub graph_launches: u64,
    /// Rows in CUPTI_ACTIVITY_KIND_GRAPH_TRACE.
    pub graph_traces: u64,
    /// Kernel and copy rows that ran as graph nodes (included in `kernels` and `memcpys`).
    pub graph_node_kernels: u64,
    pub graph_node_memcpys: u64,
    /// CPU-side graph construction rows (CUDA_GRAPH_EVENTS and CUDA_GRAPH_NODE_EVENTS).
    pub graph_events: u64,
    /// Rows in CUDA_GPU_MEMORY_USAGE_EVENTS and CUDA_GPU_MEMORY_POOL_EVENTS.
    pub memory_usage: u64,
    pub memory_pool_events: u64,
    /// Rows in NET_NIC_METRIC.
    pub nic_samples: u64,
    /// Rows in NET_IB_SWITCH_METRIC and NET_IB_SWITCH_CONGESTION_EVENT.
    pub ib_switch_samples: u64,
    pub ib_congestion_events: u64,
    /// Rows in SOC_METRICS (one per metric and sample).
    pub soc_metric_rows: u64,
    /// Rows in CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH and CUDA_HOST_CALLBACK (their
    /// `cudaLaunchHostFunc` calls are in `runtime_rows`).
    pub host_launches: u64,
    pub host_callbacks: u64,
    /// NVTX_EVENTS rows of training loops: ranges, and the NCCL domain's definition.
    pub nvtx_rows: u64,
    /// Of those, ranges in the NCCL domain (each with a JSON payload).
    pub nccl_ranges: u64,
}

impl SynthCounts {
    /// Every activity row of the export, MPI rows included.
    pub fn total(&self) -> u64 {
        self.kernels
            + self.memcpys
            + self.memsets
            + self.syncs
            + self.runtime_rows
            + self.cuda_events
            + self.mpi_rows()
            + self.device_rows()
            + self.nvtx_rows
    }

    /// Rows of the device-side tables of [`SynthDeviceSide`].
    pub fn device_rows(&self) -> u64 {
        self.gpu_metric_rows
            + self.graph_traces
            + self.graph_events
            + self.memory_usage
            + self.memory_pool_events
            + self.nic_samples
            + self.ib_switch_samples
            + self.ib_congestion_events
            + self.soc_metric_rows
            + self.host_launches
            + self.host_callbacks
    }

    /// Rows that record MPI calls, in whichever form the version has.
    pub fn mpi_rows(&self) -> u64 {
        self.mpi_p2p
            + self.mpi_collectives
            + self.mpi_start_wait
            + self.mpi_other
            + self.nvtx_mpi_ranges
    }
}

impl SynthSpec {
    /// One process with two CPU threads on one device with two streams, and a few dozen rows
    /// of each kind (every copy kind twice, every sync kind three times): good for golden tests.
    pub fn small(schema: SchemaVersion) -> Self {
        SynthSpec {
            schema,
            hostname: "node01".to_owned(),
            // 2025-01-01T12:00:00Z
            utc_epoch_ns: 1_735_732_800_000_000_000,
            seed: 0x5EED,
            processes: vec![SynthProcess {
                pid: 24_601,
                name: "./synth_app".to_owned(),
                cpu_threads: 2,
                devices: vec![0],
                streams_per_device: 2,
                kernels: 48,
                memcpys: 28,
                memsets: 12,
                syncs: 9,
                extra_api_calls: 24,
            }],
            env: vec![("SLURM_PROCID".to_owned(), "0".to_owned())],
            mpi: None,
            device: SynthDeviceSide::default(),
            training: None,
        }
    }

    /// TARGET_INFO_SESSION_START_TIME.utcEpochNs as the rank's (possibly skewed) clock records it.
    pub(crate) fn recorded_utc_epoch_ns(&self) -> i64 {
        self.utc_epoch_ns + self.mpi.as_ref().map_or(0, |mpi| mpi.clock_skew_ns)
    }
}

/// Writes the export described by `spec` to `path`, which must not exist yet.
pub fn write_export(spec: &SynthSpec, path: &Path) -> anyhow::Result<SynthCounts> {
    export::write_export(spec, path)
}
