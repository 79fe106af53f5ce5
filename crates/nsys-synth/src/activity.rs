//! Rows of the CUDA activity tables, and the writers that insert them.
//!
//! Each row type lists how to fill every column any supported version has; a table only gets the
//! columns its version defines. Tables are created on their first row, as nsys's lazy export does.

use anyhow::Result;
use rusqlite::Connection;

use crate::catalog::{KernelDef, LOCAL_MEMORY_TOTAL};
use crate::ddl::{Getter, TableWriter};
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
    ("graphNodeId", |_| None),
    ("sharedMemoryLimitConfig", |_| Some(0)),
    ("qmdBulkReleaseDone", |_| None),
    ("qmdPreexitDone", |_| None),
    ("qmdLastCtaDone", |_| None),
    ("graphId", |_| None),
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
    ("graphNodeId", |_| None),
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
        self.kernels.insert(self.conn, self.version, row)
    }

    pub(crate) fn memcpy(&mut self, row: &MemcpyRow) -> Result<()> {
        self.saw_end(row.end);
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
            ..SynthCounts::default()
        }
    }
}
