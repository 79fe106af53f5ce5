//! GPU memory (`--cuda-memory-usage=true`) as counters on the process's
//! "GPU<n> metrics" row (the GPU of the allocation's CUDA ordinal, see
//! [`crate::gpu_metrics::DeviceMap`]), and unified-memory page faults.
//!
//! * 66500001 / 66500002: size of the allocation / of the free (bytes), at the
//!   time it happened (`CUDA_GPU_MEMORY_USAGE_EVENTS`): BSC nsys2prv's numbers
//!   and meanings ("GPU Memory Allocation" / "Deallocation"), so that its
//!   `gpu_memory_usage.cfg` reads them.
//! * 66500003 "GPU memory allocated (bytes)": running sum of the process's
//!   allocations minus its frees on that GPU, written at each allocation and
//!   free. A free of memory allocated before the capture would make it negative:
//!   it stops at 0 and is counted.
//! * 66500004 "GPU memory pools size (bytes)": the sizes of the process's pools on
//!   the GPU added up (`CUDA_GPU_MEMORY_POOL_EVENTS`, and the pool size that
//!   `cudaMallocAsync` allocations record), with 66500005 the pool operation.
//! * 66500006 / 66500007: unified-memory page faults on the GPU (number of faults
//!   of one record, access type); 66500008: a unified-memory page fault on the CPU,
//!   on the process's main thread (nsys records no thread for them).
//!
//! Running sums need the rows in time order, which exports do not guarantee: the
//! allocation and pool rows are held in memory (40 bytes each) and sorted. They
//! are far fewer than kernels (one per cudaMalloc/cudaFree call).

use nsys_reader::ids::pid_of;
use nsys_reader::memory::{
    MEMORY_POOL, MEMORY_USAGE, OPERATION_ALLOCATION, OPERATION_DEALLOCATION, UM_CPU_PAGE_FAULTS,
    UM_GPU_PAGE_FAULTS,
};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{ReportContext, ThreadKey, ThreadKind};
use crate::gpu_metrics::DeviceMap;
use crate::types::{level, point};
use crate::view::bundled_view;

pub const ALLOCATION_SIZE: u32 = 66_500_001;
pub const FREE_SIZE: u32 = 66_500_002;
pub const MEMORY_ALLOCATED: u32 = 66_500_003;
pub const POOLS_SIZE: u32 = 66_500_004;
pub const POOL_OPERATION: u32 = 66_500_005;
pub const GPU_PAGE_FAULTS: u32 = 66_500_006;
pub const GPU_FAULT_ACCESS: u32 = 66_500_007;
pub const CPU_PAGE_FAULT: u32 = 66_500_008;

const POOL_OPERATIONS: [(i64, &str); 3] = [(1, "Created"), (2, "Destroyed"), (3, "Trimmed")];
const ACCESS_TYPES: [(i64, &str); 4] = [(1, "Read"), (2, "Write"), (3, "Atomic"), (4, "Prefetch")];

pub const GPU_MEMORY: Category = Category::named("gpu-memory");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: GPU_MEMORY,
    aliases: &["memory-usage"],
    bsc_names: &["memory_usage"],
    groups: &[],
    tables: &[
        "CUDA_GPU_MEMORY_USAGE_EVENTS",
        "CUDA_GPU_MEMORY_POOL_EVENTS",
        "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
        "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
    ],
    table_prefixes: &[],
    bytes_per_row: 50,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/gpu_memory_usage.cfg",
            "How much GPU memory does each process hold over time, per GPU?",
        ),
        bundled_view!(
            "views/gpu_memory_allocations.cfg",
            "When does each process allocate and free GPU memory, and how much?",
        ),
        bundled_view!(
            "analysis/gpu_memory_peak.cfg",
            "What is the peak GPU memory of each process on each GPU?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

/// Memory in use and pool sizes hold until they change; allocations, frees, pool
/// operations and faults are instants.
fn event_types() -> Vec<EventTypeInfo> {
    use ValueLabels::{Bytes, Numeric};
    vec![
        point(ALLOCATION_SIZE, "GPU memory allocation size (bytes)", Bytes),
        point(FREE_SIZE, "GPU memory free size (bytes)", Bytes),
        level(MEMORY_ALLOCATED, "GPU memory allocated (bytes)", Bytes),
        level(POOLS_SIZE, "GPU memory pools size (bytes)", Bytes),
        point(
            POOL_OPERATION,
            "GPU memory pool operation",
            ValueLabels::fixed(&POOL_OPERATIONS),
        ),
        point(GPU_PAGE_FAULTS, "Unified memory GPU page faults", Numeric),
        point(
            GPU_FAULT_ACCESS,
            "Unified memory GPU page fault access type",
            ValueLabels::fixed(&ACCESS_TYPES),
        ),
        point(CPU_PAGE_FAULT, "Unified memory CPU page faults", Numeric),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Change {
    /// Allocation (+) or free (−) of `bytes`; the pool it came from, if any.
    Usage { bytes: i64, freed: bool },
    /// A pool's size set (created, trimmed, or seen on an allocation) or removed.
    Pool { size: i64, operation: i64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    pid: u32,
    gpu: u32,
    time: i64,
    /// Input order, so that equal times keep the export's order.
    seq: u32,
    pool: i64,
    change: Change,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let wanted = [
        MEMORY_USAGE,
        MEMORY_POOL,
        UM_GPU_PAGE_FAULTS,
        UM_CPU_PAGE_FAULTS,
    ];
    if !wanted.iter().any(|t| export.has_table(t)) {
        return Ok(());
    }
    let map = DeviceMap::read(export)?;
    let mut rows: Vec<Row> = Vec::new();
    let (mut unknown_operations, mut usage_rows) = (0u64, 0u64);
    let usage = export.memory_usage(|u| {
        if !ctx.within_limits(u.start, u.start) {
            return Ok(());
        }
        let pid = pid_of(u.global_pid);
        let freed = match u.operation {
            OPERATION_ALLOCATION => false,
            OPERATION_DEALLOCATION => true,
            _ => {
                unknown_operations += 1;
                return Ok(());
            }
        };
        usage_rows += 1;
        let (time, gpu, seq) = (
            u.start,
            map.gpu_of(pid, u.device_id as u32),
            rows.len() as u32,
        );
        rows.push(Row {
            pid,
            gpu,
            time,
            seq,
            pool: 0,
            change: Change::Usage {
                bytes: u.bytes.max(0),
                freed,
            },
        });
        if let (Some(pool), Some(size), false) = (u.pool_address, u.pool_size, freed) {
            rows.push(Row {
                pid,
                gpu,
                time,
                seq: seq + 1,
                pool,
                change: Change::Pool {
                    size: size.max(0),
                    operation: 0,
                },
            });
        }
        Ok(())
    })?;
    let pools = export.memory_pool_events(|p| {
        if !ctx.within_limits(p.start, p.start) {
            return Ok(());
        }
        let pid = pid_of(p.global_pid);
        rows.push(Row {
            pid,
            gpu: map.gpu_of(pid, p.device_id as u32),
            time: p.start,
            seq: rows.len() as u32,
            pool: p.address,
            change: Change::Pool {
                size: p.pool_size.unwrap_or(0).max(0),
                operation: p.operation,
            },
        });
        Ok(())
    })?;
    rows.sort_unstable();
    let tally = running_sums(ctx, &rows);
    if usage_rows > 0 {
        ctx.count(MEMORY_USAGE, usage_rows);
    }
    if pools.kept() > 0 {
        ctx.count(MEMORY_POOL, pools.kept());
    }
    if tally > 0 {
        ctx.count("GPU memory frees beyond the allocated total", tally);
    }
    ctx.note_skipped(MEMORY_USAGE, usage.skipped + unknown_operations);
    ctx.note_skipped(MEMORY_POOL, pools.skipped);
    page_faults(ctx, &map)
}

/// Writes the counters of every (process, GPU) in time order; returns the frees
/// that found less allocated than they released.
fn running_sums(ctx: &mut ReportContext, rows: &[Row]) -> u64 {
    let mut overdrawn = 0;
    for group in rows.chunk_by(|a, b| (a.pid, a.gpu) == (b.pid, b.gpu)) {
        let thread = ctx.thread(ThreadKey {
            pid: group[0].pid,
            kind: ThreadKind::Metrics {
                device: group[0].gpu,
            },
        });
        let mut allocated: i64 = 0;
        let mut pools: FxHashMap<i64, i64> = FxHashMap::default();
        for row in group {
            let pairs: Vec<EventPair> = match row.change {
                Change::Usage { bytes, freed } => {
                    let size_type = if freed {
                        allocated -= bytes;
                        FREE_SIZE
                    } else {
                        allocated = allocated.saturating_add(bytes);
                        ALLOCATION_SIZE
                    };
                    if allocated < 0 {
                        overdrawn += 1;
                        allocated = 0;
                    }
                    vec![
                        EventPair::raw(MEMORY_ALLOCATED, allocated),
                        EventPair::raw(size_type, bytes),
                    ]
                }
                Change::Pool { size, operation } => {
                    if operation == 2 {
                        pools.remove(&row.pool);
                    } else {
                        pools.insert(row.pool, size);
                    }
                    let total = pools.values().fold(0i64, |a, &b| a.saturating_add(b));
                    let mut pairs = vec![EventPair::raw(POOLS_SIZE, total)];
                    if (1..=3).contains(&operation) {
                        pairs.push(EventPair::raw(POOL_OPERATION, operation));
                    }
                    pairs
                }
            };
            ctx.run.events(thread, row.time, &pairs);
        }
    }
    overdrawn
}

fn page_faults(ctx: &mut ReportContext, map: &DeviceMap) -> Result<(), ReadError> {
    let export = ctx.export;
    let gpu = export.gpu_page_faults(|f| {
        if !ctx.within_limits(f.start, f.end) {
            return Ok(());
        }
        let pid = pid_of(f.global_pid);
        let thread = ctx.thread(ThreadKey {
            pid,
            kind: ThreadKind::Metrics {
                device: map.gpu_of(pid, f.device_id as u32),
            },
        });
        let faults = EventPair::raw(GPU_PAGE_FAULTS, f.faults.max(1));
        if (1..=4).contains(&f.access_type) {
            let access = EventPair::raw(GPU_FAULT_ACCESS, f.access_type);
            ctx.run.events(thread, f.start, &[faults, access]);
        } else {
            ctx.run.events(thread, f.start, &[faults]);
        }
        Ok(())
    })?;
    let cpu = export.cpu_page_faults(|f| {
        if !ctx.within_limits(f.start, f.start) {
            return Ok(());
        }
        let pid = pid_of(f.global_pid);
        let thread = ctx.thread(ThreadKey::cpu(pid, pid));
        ctx.run
            .events(thread, f.start, &[EventPair::raw(CPU_PAGE_FAULT, 1)]);
        Ok(())
    })?;
    for (table, scan) in [(UM_GPU_PAGE_FAULTS, gpu), (UM_CPU_PAGE_FAULTS, cpu)] {
        ctx.note_scan(table, scan);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::testing::{check, GLOBAL_PID};

    /// On the process's GPU metrics row, in time order whatever the table's order:
    /// each allocation and free with its size and the running total allocated
    /// (a free of more than is allocated stops the total at 0); the pools' sizes
    /// added up, from pool events (a destroyed pool leaves the sum) and from the
    /// pool a `cudaMallocAsync` allocation names; GPU page faults with their
    /// number and access type; a CPU page fault on the process's main thread.
    #[test]
    fn running_totals_pools_and_page_faults() {
        check(
            &[GPU_MEMORY],
            &format!(
                "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS
                     (start, globalPid, deviceId, contextId, address, pc, bytes, memKind,
                      memoryOperationType, localMemoryPoolAddress, localMemoryPoolSize)
                 VALUES (400, {GLOBAL_PID}, 0, 1, 4096, 0, 1000, 1, 1, NULL, NULL),
                        (300, {GLOBAL_PID}, 0, 1, 4096, 0, 1000, 1, 0, NULL, NULL),
                        (100, {GLOBAL_PID}, 0, 1, 8192, 0, 500, 1, 0, NULL, NULL),
                        (200, {GLOBAL_PID}, 0, 1, 65536, 0, 256, 1, 0, 65536, 8192),
                        (500, {GLOBAL_PID}, 0, 1, 8192, 0, 2000, 1, 1, NULL, NULL);
                 INSERT INTO CUDA_GPU_MEMORY_POOL_EVENTS
                     (start, globalPid, deviceId, address, operationType, poolType,
                      localMemoryPoolSize)
                 VALUES (150, {GLOBAL_PID}, 0, 32768, 1, 1, 4096),
                        (600, {GLOBAL_PID}, 0, 32768, 2, 1, 4096);
                 INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS
                     (start, end, globalPid, deviceId, address, numberOfPageFaults,
                      faultAccessType)
                 VALUES (700, 750, {GLOBAL_PID}, 0, 4096, 3, 2);
                 INSERT INTO CUDA_UM_CPU_PAGE_FAULT_EVENTS
                     (start, globalPid, address, CpuInstruction, module)
                 VALUES (800, {GLOBAL_PID}, 4096, 0, 0);"
            ),
            expect![[r#"
                100 24601:Metrics { device: 0 } 66500003=500 66500001=500
                150 24601:Metrics { device: 0 } 66500004=4096 66500005=1
                200 24601:Metrics { device: 0 } 66500003=756 66500001=256
                200 24601:Metrics { device: 0 } 66500004=12288
                300 24601:Metrics { device: 0 } 66500003=1756 66500001=1000
                400 24601:Metrics { device: 0 } 66500003=756 66500002=1000
                500 24601:Metrics { device: 0 } 66500003=0 66500002=2000
                600 24601:Metrics { device: 0 } 66500004=8192 66500005=2
                700 24601:Metrics { device: 0 } 66500006=3 66500007=2
                800 24601.24601 66500008=1
            "#]],
        );
    }
}
