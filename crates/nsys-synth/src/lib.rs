//! Schema-faithful synthetic Nsight Systems SQLite exports, for tests and benchmarks of what
//! cannot be recorded without a GPU (CUDA API calls, kernels, copies, memsets, synchronization).
//!
//! Tables are created from the exporter's own `CREATE TABLE` statements of each version (copied
//! from real exports into `schema/`), so column names, order and types match; values follow the
//! conventions seen in real files (packed global ids with VM id 1, `_vNNNN` runtime API names,
//! 0xFFFFFFFF for "not applicable" stream and event ids, the per-version `syncType` encoding...).
//! Output is deterministic for a given spec and path.
//!
//! With [`SynthSpec::mpi`], the first process is one rank of an MPI job whose other ranks are
//! written to other files from their own specs: see [`SynthMpi`] for the shared timeline.

mod activity;
mod catalog;
mod ddl;
mod export;
mod ids;
mod layout;
mod meta;
mod mpi;
mod mpi_export;
mod rng;
mod sim;
mod strings;
mod target_info;
mod timefmt;
mod version;

#[cfg(test)]
mod mpi_tests;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use mpi::{MpiPattern, SynthMpi};
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
