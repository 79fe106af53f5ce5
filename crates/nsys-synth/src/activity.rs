//! Rows of the CUDA activity tables, and the writers that insert them.
//!
//! Each row type lists how to fill every column any supported version has; a table only gets the
//! columns its version defines. Tables are created on their first row, as nsys's lazy export does.

use anyhow::Result;
use rusqlite::Connection;

use crate::catalog::{KernelDef, LOCAL_MEMORY_TOTAL};
use crate::ddl::{Getter, TableWriter};
use crate::nvtx::{NvtxRow, NvtxWriter};
use crate::{SchemaVersion, SynthCounts};

/// Written by the exporter where a stream or event id does not apply (e.g. a context sync).
pub(crate) const NOT_APPLICABLE: i64 = 0xFFFF_FFFF;

/// A CUDA runtime or driver API call.
pub(crate) struct ApiRow {
    pub start: i64,
    pub end: i64,
    pub event_class: i64,
    pub global_tid: i64,
    pub correlation_id: i64,
    pub name_id: i64,
}

const API_COLUMNS: &[(&str, Getter<ApiRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("eventClass", |r| Some(r.event_class)),
    ("globalTid", |r| Some(r.global_tid)),
    ("correlationId", |r| Some(r.correlation_id)),
    ("nameId", |r| Some(r.name_id)),
    ("returnValue", |_| Some(0)),
    ("callchainId", |_| None),
];

/// Where GPU activity ran and who asked for it: the columns every CUDA activity table shares.
#[derive(Clone, Copy)]
pub(crate) struct GpuPlace {
    pub device_id: i64,
    pub context_id: i64,
    /// 0 on kernels, copies, memsets and event records; NULL on syncs and migrations.
    pub green_context_id: Option<i64>,
    pub stream_id: i64,
    pub correlation_id: i64,
    pub global_pid: i64,
}

trait Placed {
    fn place(&self) -> &GpuPlace;
}

fn place_columns<R: Placed>() -> [(&'static str, Getter<R>); 6] {
    [
        ("deviceId", |r| Some(r.place().device_id)),
        ("contextId", |r| Some(r.place().context_id)),
        ("greenContextId", |r| r.place().green_context_id),
        ("streamId", |r| Some(r.place().stream_id)),
        ("correlationId", |r| Some(r.place().correlation_id)),
        ("globalPid", |r| Some(r.place().global_pid)),
    ]
}

/// StringIds of a kernel's three names.
#[derive(Clone, Copy)]
pub(crate) struct KernelNameIds {
    pub short: i64,
    pub demangled: i64,
    pub mangled: i64,
}

pub(crate) struct KernelRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub def: &'static KernelDef,
    pub names: KernelNameIds,
    pub grid_id: i64,
    /// Set on kernels that ran as a graph node (node-mode graph tracing).
    pub graph: Option<GraphNode>,
}

/// The graph node an activity row ran as.
#[derive(Clone, Copy)]
pub(crate) struct GraphNode {
    pub node_id: i64,
    pub graph_id: i64,
}

impl Placed for KernelRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

/// Launch type 1 = regular, cache config 1 = prefer shared; cluster columns (3.23+) are 0 and the
/// QMD and graph columns NULL for ordinary launches, as in real exports.
const KERNEL_COLUMNS: &[(&str, Getter<KernelRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("demangledName", |r| Some(r.names.demangled)),
    ("shortName", |r| Some(r.names.short)),
    ("mangledName", |r| Some(r.names.mangled)),
    ("launchType", |_| Some(1)),
    ("cacheConfig", |_| Some(1)),
    ("registersPerThread", |r| Some(r.def.registers)),
    ("gridX", |r| Some(r.def.grid[0])),
    ("gridY", |r| Some(r.def.grid[1])),
    ("gridZ", |r| Some(r.def.grid[2])),
    ("blockX", |r| Some(r.def.block[0])),
    ("blockY", |r| Some(r.def.block[1])),
    ("blockZ", |r| Some(r.def.block[2])),
    ("staticSharedMemory", |r| Some(r.def.static_shared)),
    ("dynamicSharedMemory", |r| Some(r.def.dynamic_shared)),
    ("localMemoryPerThread", |_| Some(0)),
    ("localMemoryTotal", |_| Some(LOCAL_MEMORY_TOTAL)),
    ("gridId", |r| Some(r.grid_id)),
    ("sharedMemoryExecuted", |r| Some(r.def.shared_executed)),
    ("graphNodeId", |r| r.graph.map(|g| g.node_id)),
    ("sharedMemoryLimitConfig", |_| Some(0)),
    ("qmdBulkReleaseDone", |_| None),
    ("qmdPreexitDone", |_| None),
    ("qmdLastCtaDone", |_| None),
    ("graphId", |r| r.graph.map(|g| g.graph_id)),
    ("clusterX", |_| Some(0)),
    ("clusterY", |_| Some(0)),
    ("clusterZ", |_| Some(0)),
    ("clusterSchedulingPolicy", |_| Some(0)),
    ("maxPotentialClusterSize", |_| Some(0)),
    ("maxActiveClusters", |_| Some(0)),
];

/// Source and destination of a peer-to-peer copy.
#[derive(Clone, Copy)]
pub(crate) struct PeerEnds {
    pub src_device: i64,
    pub src_context: i64,
    pub dst_device: i64,
    pub dst_context: i64,
}

/// What a unified-memory migration records instead of an API call.
#[derive(Clone, Copy)]
pub(crate) struct Migration {
    pub cause: i64,
    pub virtual_address: i64,
}

pub(crate) struct MemcpyRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub bytes: i64,
    pub copy_kind: i64,
    pub src_kind: i64,
    pub dst_kind: i64,
    pub peer: Option<PeerEnds>,
    pub migration: Option<Migration>,
    pub graph_node_id: Option<i64>,
}

impl Placed for MemcpyRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

/// `copyCount` (3.17+) is 1 on ordinary copies and NULL on migrations.
const MEMCPY_COLUMNS: &[(&str, Getter<MemcpyRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("bytes", |r| Some(r.bytes)),
    ("copyKind", |r| Some(r.copy_kind)),
    ("deprecatedSrcId", |_| None),
    ("srcKind", |r| Some(r.src_kind)),
    ("dstKind", |r| Some(r.dst_kind)),
    ("srcDeviceId", |r| r.peer.map(|p| p.src_device)),
    ("srcContextId", |r| r.peer.map(|p| p.src_context)),
    ("dstDeviceId", |r| r.peer.map(|p| p.dst_device)),
    ("dstContextId", |r| r.peer.map(|p| p.dst_context)),
    ("migrationCause", |r| r.migration.map(|m| m.cause)),
    ("graphNodeId", |r| r.graph_node_id),
    ("virtualAddress", |r| r.migration.map(|m| m.virtual_address)),
    ("copyCount", |r| r.migration.is_none().then_some(1)),
];

pub(crate) struct MemsetRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub value: i64,
    pub bytes: i64,
    pub mem_kind: i64,
}

impl Placed for MemsetRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

const MEMSET_COLUMNS: &[(&str, Getter<MemsetRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("value", |r| Some(r.value)),
    ("bytes", |r| Some(r.bytes)),
    ("graphNodeId", |_| None),
    ("memKind", |r| Some(r.mem_kind)),
];

pub(crate) struct SyncRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub sync_type: i64,
    pub event_id: i64,
    pub event_sync_id: i64,
}

impl Placed for SyncRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

/// `deprecatedSyncType` (3.17+) is NULL in every real export we saw.
const SYNC_COLUMNS: &[(&str, Getter<SyncRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("deprecatedSyncType", |_| None),
    ("syncType", |r| Some(r.sync_type)),
    ("eventId", |r| Some(r.event_id)),
    ("eventSyncId", |r| Some(r.event_sync_id)),
];

/// One `cudaEventRecord`; the table has no start or end.
pub(crate) struct CudaEventRow {
    pub place: GpuPlace,
    pub event_id: i64,
    pub event_sync_id: i64,
}

impl Placed for CudaEventRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

/// `timestamp` (3.23+) is 0 when the device-side time was not collected, the default.
const CUDA_EVENT_COLUMNS: &[(&str, Getter<CudaEventRow>)] = &[
    ("timestamp", |_| Some(0)),
    ("eventId", |r| Some(r.event_id)),
    ("eventSyncId", |r| Some(r.event_sync_id)),
];

/// One launch of a whole graph (graph-mode tracing).
pub(crate) struct GraphTraceRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub graph_id: i64,
    pub graph_exec_id: i64,
}

impl Placed for GraphTraceRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

const GRAPH_TRACE_COLUMNS: &[(&str, Getter<GraphTraceRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("graphId", |r| Some(r.graph_id)),
    ("graphExecId", |r| Some(r.graph_exec_id)),
];

/// The GPU side of a host function (`cudaLaunchHostFunc`: no graph ids).
pub(crate) struct HostLaunchRow {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
}

impl Placed for HostLaunchRow {
    fn place(&self) -> &GpuPlace {
        &self.place
    }
}

const HOST_LAUNCH_COLUMNS: &[(&str, Getter<HostLaunchRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("graphNodeId", |_| None),
    ("graphId", |_| None),
];

/// The CPU execution of a host function.
pub(crate) struct HostCallbackRow {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub correlation_id: i64,
    pub name_id: i64,
}

/// `eventClass`: the schema reference names no class for host callbacks; 0 as CUDA runtime rows.
const HOST_CALLBACK_COLUMNS: &[(&str, Getter<HostCallbackRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("eventClass", |_| Some(0)),
    ("globalTid", |r| Some(r.global_tid)),
    ("correlationId", |r| Some(r.correlation_id)),
    ("nameId", |r| Some(r.name_id)),
];

/// A CPU-side graph construction event, for either form of the tables: each takes the columns
/// its version defines.
pub(crate) struct GraphEventRow {
    pub start: i64,
    pub end: i64,
    pub event_class: i64,
    pub global_tid: i64,
    pub name_id: i64,
    pub graph_node_id: Option<i64>,
    pub graph_id: Option<i64>,
    pub graph_exec_id: Option<i64>,
}

const GRAPH_EVENT_COLUMNS: &[(&str, Getter<GraphEventRow>)] = &[
    ("start", |r| Some(r.start)),
    ("end", |r| Some(r.end)),
    ("eventClass", |r| Some(r.event_class)),
    ("globalTid", |r| Some(r.global_tid)),
    ("nameId", |r| Some(r.name_id)),
    ("graphNodeId", |r| r.graph_node_id),
    ("originalGraphNodeId", |_| None),
    ("graphId", |r| r.graph_id),
    ("originalGraphId", |_| None),
    ("graphExecId", |r| r.graph_exec_id),
];

/// The state of the memory pool an allocation came from.
#[derive(Clone, Copy)]
pub(crate) struct PoolState {
    pub address: i64,
    pub release_threshold: i64,
    pub size: i64,
    pub utilized: i64,
}

/// An allocation (operation 0) or a free (1) of device memory.
pub(crate) struct MemoryUsageRow {
    pub start: i64,
    pub global_pid: i64,
    pub device_id: i64,
    pub context_id: i64,
    pub address: i64,
    pub bytes: i64,
    pub operation: i64,
    pub correlation_id: i64,
    pub pool: Option<PoolState>,
}

const MEMORY_USAGE_COLUMNS: &[(&str, Getter<MemoryUsageRow>)] = &[
    ("start", |r| Some(r.start)),
    ("globalPid", |r| Some(r.global_pid)),
    ("deviceId", |r| Some(r.device_id)),
    ("contextId", |r| Some(r.context_id)),
    ("address", |r| Some(r.address)),
    ("pc", |_| Some(0x7f3a_1c2e_4d10)),
    ("bytes", |r| Some(r.bytes)),
    ("memKind", |_| Some(crate::catalog::mem_kind::DEVICE)),
    ("memoryOperationType", |r| Some(r.operation)),
    ("name", |_| None),
    ("correlationId", |r| Some(r.correlation_id)),
    ("streamId", |_| None),
    ("localMemoryPoolAddress", |r| r.pool.map(|p| p.address)),
    ("localMemoryPoolReleaseThreshold", |r| {
        r.pool.map(|p| p.release_threshold)
    }),
    ("localMemoryPoolSize", |r| r.pool.map(|p| p.size)),
    ("localMemoryPoolUtilizedSize", |r| {
        r.pool.map(|p| p.utilized)
    }),
    ("importedMemoryPoolAddress", |_| None),
    ("importedMemoryPoolProcessId", |_| None),
];

/// A memory pool created (operation 1), destroyed (2) or trimmed (3).
pub(crate) struct MemoryPoolRow {
    pub start: i64,
    pub global_pid: i64,
    pub device_id: i64,
    pub operation: i64,
    pub correlation_id: i64,
    pub pool: PoolState,
}

/// Pool type 1: a local pool.
const MEMORY_POOL_COLUMNS: &[(&str, Getter<MemoryPoolRow>)] = &[
    ("start", |r| Some(r.start)),
    ("globalPid", |r| Some(r.global_pid)),
    ("deviceId", |r| Some(r.device_id)),
    ("address", |r| Some(r.pool.address)),
    ("operationType", |r| Some(r.operation)),
    ("poolType", |_| Some(1)),
    ("correlationId", |r| Some(r.correlation_id)),
    ("minBytesToKeep", |_| None),
    ("localMemoryPoolReleaseThreshold", |r| {
        Some(r.pool.release_threshold)
    }),
    ("localMemoryPoolSize", |r| Some(r.pool.size)),
    ("localMemoryPoolUtilizedSize", |r| Some(r.pool.utilized)),
];

/// A table writer created on the first row.
struct LazyTable<'c, R: 'static> {
    name: &'static str,
    columns: Vec<(&'static str, Getter<R>)>,
    writer: Option<TableWriter<'c, R>>,
}

impl<'c, R> LazyTable<'c, R> {
    fn new(name: &'static str, columns: Vec<(&'static str, Getter<R>)>) -> Self {
        Self {
            name,
            columns,
            writer: None,
        }
    }

    fn insert(&mut self, conn: &'c Connection, version: SchemaVersion, row: &R) -> Result<()> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.writer.insert(TableWriter::create(
                conn,
                version,
                self.name,
                self.columns.iter().copied(),
            )?),
        };
        writer.insert(row)
    }

    fn rows(&self) -> u64 {
        self.writer.as_ref().map_or(0, TableWriter::rows)
    }
}

fn with_place<R: Placed + 'static>(
    own: &[(&'static str, Getter<R>)],
) -> Vec<(&'static str, Getter<R>)> {
    own.iter().copied().chain(place_columns::<R>()).collect()
}

/// The CUDA activity tables of one export.
pub(crate) struct ActivityTables<'c> {
    conn: &'c Connection,
    version: SchemaVersion,
    runtime: LazyTable<'c, ApiRow>,
    kernels: LazyTable<'c, KernelRow>,
    memcpys: LazyTable<'c, MemcpyRow>,
    memsets: LazyTable<'c, MemsetRow>,
    syncs: LazyTable<'c, SyncRow>,
    cuda_events: LazyTable<'c, CudaEventRow>,
    graph_traces: LazyTable<'c, GraphTraceRow>,
    graph_events: LazyTable<'c, GraphEventRow>,
    graph_node_events: LazyTable<'c, GraphEventRow>,
    memory_usage: LazyTable<'c, MemoryUsageRow>,
    memory_pools: LazyTable<'c, MemoryPoolRow>,
    host_launches: LazyTable<'c, HostLaunchRow>,
    host_callbacks: LazyTable<'c, HostCallbackRow>,
    nvtx: Option<NvtxWriter<'c>>,
    nccl_ranges: u64,
    graph_launches: u64,
    graph_node_kernels: u64,
    graph_node_memcpys: u64,
    /// Latest end time written, for ANALYSIS_DETAILS.
    last_end: i64,
}

impl<'c> ActivityTables<'c> {
    pub(crate) fn new(conn: &'c Connection, version: SchemaVersion) -> Self {
        Self {
            conn,
            version,
            runtime: LazyTable::new("CUPTI_ACTIVITY_KIND_RUNTIME", API_COLUMNS.to_vec()),
            kernels: LazyTable::new("CUPTI_ACTIVITY_KIND_KERNEL", with_place(KERNEL_COLUMNS)),
            memcpys: LazyTable::new("CUPTI_ACTIVITY_KIND_MEMCPY", with_place(MEMCPY_COLUMNS)),
            memsets: LazyTable::new("CUPTI_ACTIVITY_KIND_MEMSET", with_place(MEMSET_COLUMNS)),
            syncs: LazyTable::new(
                "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                with_place(SYNC_COLUMNS),
            ),
            cuda_events: LazyTable::new(
                "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
                with_place(CUDA_EVENT_COLUMNS),
            ),
            graph_traces: LazyTable::new(
                "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
                with_place(GRAPH_TRACE_COLUMNS),
            ),
            graph_events: LazyTable::new("CUDA_GRAPH_EVENTS", GRAPH_EVENT_COLUMNS.to_vec()),
            graph_node_events: LazyTable::new(
                "CUDA_GRAPH_NODE_EVENTS",
                GRAPH_EVENT_COLUMNS.to_vec(),
            ),
            memory_usage: LazyTable::new(
                "CUDA_GPU_MEMORY_USAGE_EVENTS",
                MEMORY_USAGE_COLUMNS.to_vec(),
            ),
            memory_pools: LazyTable::new(
                "CUDA_GPU_MEMORY_POOL_EVENTS",
                MEMORY_POOL_COLUMNS.to_vec(),
            ),
            host_launches: LazyTable::new(
                "CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH",
                with_place(HOST_LAUNCH_COLUMNS),
            ),
            host_callbacks: LazyTable::new("CUDA_HOST_CALLBACK", HOST_CALLBACK_COLUMNS.to_vec()),
            nvtx: None,
            nccl_ranges: 0,
            graph_launches: 0,
            graph_node_kernels: 0,
            graph_node_memcpys: 0,
            last_end: 0,
        }
    }

    pub(crate) fn version(&self) -> SchemaVersion {
        self.version
    }

    fn saw_end(&mut self, end: i64) {
        self.last_end = self.last_end.max(end);
    }

    pub(crate) fn api(&mut self, row: &ApiRow) -> Result<()> {
        self.saw_end(row.end);
        self.runtime.insert(self.conn, self.version, row)
    }

    pub(crate) fn kernel(&mut self, row: &KernelRow) -> Result<()> {
        self.saw_end(row.end);
        self.graph_node_kernels += u64::from(row.graph.is_some());
        self.kernels.insert(self.conn, self.version, row)
    }

    pub(crate) fn memcpy(&mut self, row: &MemcpyRow) -> Result<()> {
        self.saw_end(row.end);
        self.graph_node_memcpys += u64::from(row.graph_node_id.is_some());
        self.memcpys.insert(self.conn, self.version, row)
    }

    pub(crate) fn memset(&mut self, row: &MemsetRow) -> Result<()> {
        self.saw_end(row.end);
        self.memsets.insert(self.conn, self.version, row)
    }

    pub(crate) fn sync(&mut self, row: &SyncRow) -> Result<()> {
        self.saw_end(row.end);
        self.syncs.insert(self.conn, self.version, row)
    }

    pub(crate) fn cuda_event(&mut self, row: &CudaEventRow) -> Result<()> {
        self.cuda_events.insert(self.conn, self.version, row)
    }

    pub(crate) fn graph_launch(&mut self) {
        self.graph_launches += 1;
    }

    pub(crate) fn graph_trace(&mut self, row: &GraphTraceRow) -> Result<()> {
        self.saw_end(row.end);
        self.graph_traces.insert(self.conn, self.version, row)
    }

    /// A construction event in `CUDA_GRAPH_EVENTS`, or in `CUDA_GRAPH_NODE_EVENTS` (`node_table`).
    pub(crate) fn graph_event(&mut self, row: &GraphEventRow, node_table: bool) -> Result<()> {
        self.saw_end(row.end);
        let table = if node_table {
            &mut self.graph_node_events
        } else {
            &mut self.graph_events
        };
        table.insert(self.conn, self.version, row)
    }

    pub(crate) fn memory_usage(&mut self, row: &MemoryUsageRow) -> Result<()> {
        self.memory_usage.insert(self.conn, self.version, row)
    }

    pub(crate) fn memory_pool(&mut self, row: &MemoryPoolRow) -> Result<()> {
        self.memory_pools.insert(self.conn, self.version, row)
    }

    pub(crate) fn host_launch(&mut self, row: &HostLaunchRow) -> Result<()> {
        self.saw_end(row.end);
        self.host_launches.insert(self.conn, self.version, row)
    }

    pub(crate) fn host_callback(&mut self, row: &HostCallbackRow) -> Result<()> {
        self.saw_end(row.end);
        self.host_callbacks.insert(self.conn, self.version, row)
    }

    /// An NVTX row; `nccl` counts it as a range of the NCCL domain.
    pub(crate) fn nvtx(&mut self, row: &NvtxRow, nccl: bool) -> Result<()> {
        if let Some(end) = row.end {
            self.saw_end(end);
        }
        self.nccl_ranges += u64::from(nccl);
        let writer = match &mut self.nvtx {
            Some(writer) => writer,
            None => self
                .nvtx
                .insert(NvtxWriter::create(self.conn, self.version)?),
        };
        writer.insert(row)
    }

    pub(crate) fn last_end(&self) -> i64 {
        self.last_end
    }

    pub(crate) fn counts(&self) -> SynthCounts {
        SynthCounts {
            kernels: self.kernels.rows(),
            memcpys: self.memcpys.rows(),
            memsets: self.memsets.rows(),
            syncs: self.syncs.rows(),
            runtime_rows: self.runtime.rows(),
            cuda_events: self.cuda_events.rows(),
            graph_launches: self.graph_launches,
            graph_traces: self.graph_traces.rows(),
            graph_node_kernels: self.graph_node_kernels,
            graph_node_memcpys: self.graph_node_memcpys,
            graph_events: self.graph_events.rows() + self.graph_node_events.rows(),
            memory_usage: self.memory_usage.rows(),
            memory_pool_events: self.memory_pools.rows(),
            host_launches: self.host_launches.rows(),
            host_callbacks: self.host_callbacks.rows(),
            nvtx_rows: self.nvtx.as_ref().map_or(0, NvtxWriter::rows),
            nccl_ranges: self.nccl_ranges,
            ..SynthCounts::default()
        }
    }
}
