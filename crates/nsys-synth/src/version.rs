//! The export schema versions we can imitate, and everything that differs between them.

use std::fmt;
use std::str::FromStr;

/// An Nsight Systems SQLite export schema, named after its `EXPORT_SCHEMA_VERSION` (major.minor).
///
/// Variants are declared oldest first, so `<`/`>` compare release order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchemaVersion {
    /// Schema 2.9.1, nsys 2022.1.
    V2_9,
    /// Schema 3.0.0, nsys 2022.4.
    V3_0,
    /// Schema 3.7.2, nsys 2023.4.
    V3_7,
    /// Schema 3.16.1, nsys 2024.6.
    V3_16,
    /// Schema 3.24.0, nsys 2025.5.
    V3_24,
}

/// Where CPU-side graph construction events go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GraphEventTables {
    /// `CUDA_GRAPH_EVENTS` with `graphNodeId` (node creation only).
    NodeForm,
    /// `CUDA_GRAPH_NODE_EVENTS` for nodes, `CUDA_GRAPH_EVENTS` with `graphId` for graphs.
    Split,
    None,
}

/// The kinds of `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION` rows we generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    Event,
    Stream,
    Context,
    /// `cudaStreamWaitEvent`: a stream and an event.
    StreamWait,
}

impl SchemaVersion {
    /// Every supported version, oldest first.
    pub fn all() -> [SchemaVersion; 5] {
        [Self::V2_9, Self::V3_0, Self::V3_7, Self::V3_16, Self::V3_24]
    }

    /// Accepts a schema version ("3.7", "3.7.2") or the nsys release that writes it ("2023.4").
    pub fn parse(s: &str) -> Option<Self> {
        let version = match s.trim() {
            "2.9" | "2.9.1" | "2022.1" => Self::V2_9,
            "3.0" | "3.0.0" | "2022.4" => Self::V3_0,
            "3.7" | "3.7.2" | "2023.4" => Self::V3_7,
            "3.16" | "3.16.1" | "2024.6" => Self::V3_16,
            "3.24" | "3.24.0" | "2025.5" => Self::V3_24,
            _ => return None,
        };
        Some(version)
    }

    /// `EXPORT_PRODUCT_VERSION` of the nsys release whose exports we imitate.
    pub fn product_version(&self) -> &'static str {
        match self {
            Self::V2_9 => "2022.1.3.3",
            Self::V3_0 => "2022.4.2.1",
            Self::V3_7 => "2023.4.4.54",
            Self::V3_16 => "2024.6.2.0",
            Self::V3_24 => "2025.5.2.266",
        }
    }

    /// `EXPORT_SCHEMA_VERSION` (major.minor.micro).
    pub fn schema_version(&self) -> &'static str {
        match self {
            Self::V2_9 => "2.9.1",
            Self::V3_0 => "3.0.0",
            Self::V3_7 => "3.7.2",
            Self::V3_16 => "3.16.1",
            Self::V3_24 => "3.24.0",
        }
    }

    /// `EXPORT_PRODUCT_DATE`: the release name, e.g. "2023.4".
    pub(crate) fn product_date(&self) -> &'static str {
        let version = self.product_version();
        let second_dot = version
            .match_indices('.')
            .nth(1)
            .map_or(version.len(), |(i, _)| i);
        &version[..second_dot]
    }

    /// `EXPORT_SCHEMA_VERSION_CKSUM` as the real exporter of this version writes it.
    pub(crate) fn schema_checksum(&self) -> &'static str {
        match self {
            Self::V2_9 => "3609505966 99921",
            Self::V3_0 => "4042420554 115894",
            Self::V3_7 => "2307844469 139029",
            Self::V3_16 => "1636331256 167395",
            Self::V3_24 => "1638241493 169465",
        }
    }

    /// The exporter's `CREATE TABLE` statements for this version (see `schema/`).
    pub(crate) fn ddl(&self) -> &'static str {
        match self {
            Self::V2_9 => include_str!("../schema/v2_9.sql"),
            Self::V3_0 => include_str!("../schema/v3_0.sql"),
            Self::V3_7 => include_str!("../schema/v3_7.sql"),
            Self::V3_16 => include_str!("../schema/v3_16.sql"),
            Self::V3_24 => include_str!("../schema/v3_24.sql"),
        }
    }

    /// `CREATE TABLE` statements for tables no sample of this version contains, taken from the
    /// nearest evidence (each file says which); looked up after [`Self::ddl`].
    pub(crate) fn supplementary_ddl(&self) -> &'static str {
        match self {
            Self::V2_9 | Self::V3_0 => include_str!("../schema/supplement-v3_0.sql"),
            Self::V3_7 => include_str!("../schema/supplement-v3_7.sql"),
            Self::V3_16 => include_str!("../schema/supplement-v3_16.sql"),
            Self::V3_24 => include_str!("../schema/supplement-v3_24.sql"),
        }
    }

    /// Whether MPI tracing lands in the `MPI_*` tables rather than in an NVTX domain "MPI".
    /// 2022.4 (3.0.0) still used NVTX; nsys2prv reads the tables from 3.11 on. 3.7.2 (2023.4) is
    /// in the unknown window between, and we give it the NVTX form: it is then the one version
    /// where a rank can be found both from "MPI Rank N" and from the launch environment.
    pub(crate) fn has_mpi_tables(&self) -> bool {
        *self >= Self::V3_16
    }

    /// GPU metrics land in `GPU_METRICS` + `TARGET_INFO_GPU_METRICS` rather than in the JSON of
    /// `GENERIC_EVENTS`. 2022.4 (3.0.0) has only the latter; nsys2prv reads the former from 3.11.
    /// 3.7.2 is in the unknown window between, and gets the legacy form.
    pub(crate) fn has_gpu_metrics_table(&self) -> bool {
        *self >= Self::V3_16
    }

    /// How `CUDA_GRAPH_EVENTS` looks: node events up to 3.0, graph events (with
    /// `CUDA_GRAPH_NODE_EVENTS` beside it) from 3.16; unknown (not written) in 3.7.
    pub(crate) fn graph_event_tables(&self) -> GraphEventTables {
        match self {
            Self::V2_9 | Self::V3_0 => GraphEventTables::NodeForm,
            Self::V3_7 => GraphEventTables::None,
            Self::V3_16 | Self::V3_24 => GraphEventTables::Split,
        }
    }

    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` (graph-mode tracing) is written from 3.16.
    pub(crate) fn has_graph_trace(&self) -> bool {
        *self >= Self::V3_16
    }

    /// Memory-usage rows need the memory-pool columns of 3.0.
    pub(crate) fn has_memory_usage(&self) -> bool {
        *self >= Self::V3_0
    }

    /// NIC counters are written from 3.16 (the versions with network metric tables here).
    pub(crate) fn has_nic_metrics(&self) -> bool {
        *self >= Self::V3_16
    }

    /// IB switch counters and congestion events, and SoC metrics, are written from 3.16 (the
    /// versions with network metric tables here; their real first version is unknown).
    pub(crate) fn has_ib_and_soc_metrics(&self) -> bool {
        *self >= Self::V3_16
    }

    /// CUDA host functions (`CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH`,
    /// `CUDA_HOST_CALLBACK`) come with nsys 2026.x; the newest version written here stands in.
    pub(crate) fn has_host_functions(&self) -> bool {
        *self >= Self::V3_24
    }

    /// 3.4.0 replaced `EXPORT_META_DATA` with `META_DATA_EXPORT` + `META_DATA_CAPTURE`.
    pub(crate) fn has_capture_metadata(&self) -> bool {
        *self >= Self::V3_7
    }

    /// The `EXPORT_PARAM_OUTUPT_*` misspelling was fixed by 3.13.
    pub(crate) fn spells_output_correctly(&self) -> bool {
        *self >= Self::V3_16
    }

    /// `syncType` as this version writes it. The encoding changed twice, and before 3.17 it does
    /// not follow the `ENUM_CUPTI_SYNC_TYPE` table shipped in the same file (seen in real exports:
    /// cudaEventSynchronize is 2 up to 3.7, 1 from 3.13; cudaDeviceSynchronize is 1, then 0, then 4).
    pub(crate) fn sync_type(&self, kind: SyncKind) -> i64 {
        match (self, kind) {
            (Self::V2_9 | Self::V3_0 | Self::V3_7, SyncKind::Context) => 1,
            (Self::V2_9 | Self::V3_0 | Self::V3_7, SyncKind::Event) => 2,
            (Self::V2_9 | Self::V3_0 | Self::V3_7, SyncKind::Stream) => 3,
            (Self::V3_16, SyncKind::Context) => 0,
            (Self::V3_16, SyncKind::Event) => 1,
            (Self::V3_16, SyncKind::Stream) => 2,
            (Self::V3_24, SyncKind::Event) => 1,
            (Self::V3_24, SyncKind::Stream) => 3,
            (Self::V3_24, SyncKind::Context) => 4,
            // CUPTI's STREAM_WAIT_EVENT (2) from 3.17; a value the others leave free before.
            (Self::V2_9 | Self::V3_0 | Self::V3_7, SyncKind::StreamWait) => 4,
            (Self::V3_16, SyncKind::StreamWait) => 3,
            (Self::V3_24, SyncKind::StreamWait) => 2,
        }
    }
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.schema_version())
    }
}

impl FromStr for SchemaVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            format!("unknown schema version {s:?}; expected 2.9, 3.0, 3.7, 3.16, 3.24 or 2022.1, 2022.4, 2023.4, 2024.6, 2025.5")
        })
    }
}
