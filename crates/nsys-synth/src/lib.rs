//! Schema-faithful synthetic Nsight Systems SQLite exports, for tests and benchmarks of what
//! cannot be recorded without a GPU (CUDA API calls, kernels, copies, memsets, synchronization).
//!
//! Tables are created from the exporter's own `CREATE TABLE` statements of each version (copied
//! from real exports into `schema/`), so column names, order and types match; values follow the
//! conventions seen in real files (packed global ids with VM id 1, `_vNNNN` runtime API names,
//! 0xFFFFFFFF for "not applicable" stream and event ids, the per-version `syncType` encoding...).
//! Output is deterministic for a given spec and path.

mod activity;
mod catalog;
mod ddl;
mod export;
mod ids;
mod layout;
mod meta;
mod rng;
mod sim;
mod strings;
mod target_info;
mod timefmt;
mod version;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use version::SchemaVersion;

/// What to put in one export file.
#[derive(Clone, Debug)]
pub struct SynthSpec {
    pub schema: SchemaVersion,
    /// `Hostname` in TARGET_INFO_SYSTEM_ENV, which groups ranks into nodes.
    pub hostname: String,
    /// TARGET_INFO_SESSION_START_TIME.utcEpochNs: wall clock of the session's t = 0.
    pub utc_epoch_ns: i64,
    /// Same seed, same rows.
    pub seed: u64,
    pub processes: Vec<SynthProcess>,
    /// Environment of the launched command (e.g. `SLURM_PROCID`), recorded as
    /// `PROCESS_0:ENVIRONMENT_VARIABLE` rows in META_DATA_CAPTURE. Versions before 3.4 have no
    /// such table, so there it is not recorded anywhere.
    pub env: Vec<(String, String)>,
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
}

impl SynthCounts {
    /// Every activity row of the export.
    pub fn total(&self) -> u64 {
        self.kernels
            + self.memcpys
            + self.memsets
            + self.syncs
            + self.runtime_rows
            + self.cuda_events
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
        }
    }
}

/// Writes the export described by `spec` to `path`, which must not exist yet.
pub fn write_export(spec: &SynthSpec, path: &Path) -> anyhow::Result<SynthCounts> {
    export::write_export(spec, path)
}
