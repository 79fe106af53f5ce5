//! GPU memory (`--cuda-memory-usage=true`): allocations and frees
//! (`CUDA_GPU_MEMORY_USAGE_EVENTS`), memory pools (`CUDA_GPU_MEMORY_POOL_EVENTS`,
//! 3.0+), and unified-memory page faults (`CUDA_UM_*_PAGE_FAULT_EVENTS`).

use crate::{Export, ReadError, RowView, TableScan};

pub const MEMORY_USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";
pub const MEMORY_POOL: &str = "CUDA_GPU_MEMORY_POOL_EVENTS";
pub const UM_CPU_PAGE_FAULTS: &str = "CUDA_UM_CPU_PAGE_FAULT_EVENTS";
pub const UM_GPU_PAGE_FAULTS: &str = "CUDA_UM_GPU_PAGE_FAULT_EVENTS";

/// `memoryOperationType` (`ENUM_CUDA_DEV_MEM_EVENT_OPER`).
pub const OPERATION_ALLOCATION: i64 = 0;
pub const OPERATION_DEALLOCATION: i64 = 1;

/// One allocation or free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    pub start: i64,
    pub global_pid: i64,
    pub device_id: i64,
    pub address: Option<i64>,
    pub bytes: i64,
    pub operation: i64,
    /// The pool the allocation came from (`cudaMallocAsync`) and its state then.
    pub pool_address: Option<i64>,
    pub pool_size: Option<i64>,
}

/// A memory pool created, destroyed or trimmed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryPoolEvent {
    pub start: i64,
    pub global_pid: i64,
    pub device_id: i64,
    pub address: i64,
    /// `ENUM_CUDA_MEMPOOL_OPER`: 1 created, 2 destroyed, 3 trimmed.
    pub operation: i64,
    pub pool_size: Option<i64>,
}

/// Unified-memory page faults on a GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuPageFaults {
    pub start: i64,
    pub end: i64,
    pub global_pid: i64,
    pub device_id: i64,
    pub faults: i64,
    /// `ENUM_CUDA_UNIF_MEM_ACCESS_TYPE`: 0 unknown, 1 read, 2 write, 3 atomic, 4 prefetch.
    pub access_type: i64,
}

/// A unified-memory page fault on the CPU (no thread is recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuPageFault {
    pub start: i64,
    pub global_pid: i64,
}

impl Export {
    /// Streams allocations and frees; rows with NULL start, pid, device, bytes or
    /// operation are skipped.
    pub fn memory_usage(
        &self,
        f: impl FnMut(&MemoryUsage) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "globalPid",
            "deviceId",
            "address",
            "bytes",
            "memoryOperationType",
            "localMemoryPoolAddress",
            "localMemoryPoolSize",
        ];
        let decode = |row: &RowView| {
            Some(MemoryUsage {
                start: row.int(0)?,
                global_pid: row.int(1)?,
                device_id: row.int(2)?,
                address: row.int(3),
                bytes: row.int(4)?,
                operation: row.int(5)?,
                pool_address: row.int(6).filter(|&a| a != 0),
                pool_size: row.int(7),
            })
        };
        self.scan_rows(MEMORY_USAGE, &cols, "1", decode, f)
    }

    pub fn memory_pool_events(
        &self,
        f: impl FnMut(&MemoryPoolEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "globalPid",
            "deviceId",
            "address",
            "operationType",
            "localMemoryPoolSize",
        ];
        let decode = |row: &RowView| {
            Some(MemoryPoolEvent {
                start: row.int(0)?,
                global_pid: row.int(1)?,
                device_id: row.int(2)?,
                address: row.int(3)?,
                operation: row.int(4)?,
                pool_size: row.int(5),
            })
        };
        self.scan_rows(MEMORY_POOL, &cols, "1", decode, f)
    }

    pub fn gpu_page_faults(
        &self,
        f: impl FnMut(&GpuPageFaults) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "globalPid",
            "deviceId",
            "numberOfPageFaults",
            "faultAccessType",
        ];
        let decode = |row: &RowView| {
            Some(GpuPageFaults {
                start: row.int(0)?,
                end: row.int(1).unwrap_or(0),
                global_pid: row.int(2)?,
                device_id: row.int(3)?,
                faults: row.int(4).unwrap_or(1),
                access_type: row.int(5).unwrap_or(0),
            })
        };
        self.scan_rows(UM_GPU_PAGE_FAULTS, &cols, "1", decode, f)
    }

    pub fn cpu_page_faults(
        &self,
        f: impl FnMut(&CpuPageFault) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let decode = |row: &RowView| {
            Some(CpuPageFault {
                start: row.int(0)?,
                global_pid: row.int(1)?,
            })
        };
        self.scan_rows(UM_CPU_PAGE_FAULTS, &["start", "globalPid"], "1", decode, f)
    }
}
