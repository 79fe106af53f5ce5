//! Kernels on GPU stream rows: the kernel by name (NCCL's apart), its launch
//! configuration and resources, the stream's Running state, and the launch links
//! the API side draws arrows to.

use nsys_reader::cuda::KERNEL;
use nsys_reader::graphs::GRAPH_TRACE;
use nsys_reader::host_functions::HOST_LAUNCH;
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, SharedPairs, Value, ValueLabels};
use rustc_hash::FxHashMap;

use nsys2prv_events::{GPU_IDLE_CAUSE, GPU_IDLE_DEPENDENCY, GPU_IDLE_HOST_BOUND, GPU_IDLE_OTHER};

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{NameCache, ReportContext};
use crate::cuda_api::API;
use crate::cuda_api::CORRELATION_ID;
use crate::cuda_graphs::{GRAPHS, GRAPH_NODE_ID};
use crate::handoff::GpuLinks;
use crate::nccl::{self, NCCL};
use crate::options::KernelNames;
use crate::types::{interval, level, state};
use crate::view::bundled_view;

pub use nsys2prv_events::{CUDA_KERNEL, NCCL_KERNEL};
pub const KERNEL_GRID: [u32; 3] = [9101, 9102, 9103];
pub const KERNEL_BLOCK: [u32; 3] = [9104, 9105, 9106];
pub const KERNEL_STATIC_SHARED: u32 = 9107;
pub const KERNEL_DYNAMIC_SHARED: u32 = 9108;
pub const KERNEL_LOCAL_MEMORY: u32 = 9109;
pub const KERNEL_REGISTERS: u32 = 9110;

pub const KERNELS: Category = Category::named("kernels");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: KERNELS,
    aliases: &["kernel"],
    bsc_names: &["cuda_api_trace", "cuda_gpu_trace"],
    groups: &["cuda"],
    tables: &["CUPTI_ACTIVITY_KIND_KERNEL"],
    table_prefixes: &[],
    bytes_per_row: 300,
    background_bytes_per_row: 0,
    launched: true,
    event_types,
    states: &[state::RUNNING],
    views: &[
        bundled_view!("views/kernels.cfg", "Which kernel runs on each GPU stream, and when?"),
        bundled_view!(
            "views/cuda_activities.cfg",
            "What do the CPU threads and GPU streams do, and which call launched each kernel or copy?",
        ),
        bundled_view!("basics/kernel_grid_x.cfg", "What grid size X does each kernel launch use?"),
        bundled_view!("basics/kernel_grid_y.cfg", "What grid size Y does each kernel launch use?"),
        bundled_view!("basics/kernel_grid_z.cfg", "What grid size Z does each kernel launch use?"),
        bundled_view!("basics/kernel_block_x.cfg", "What block size X does each kernel launch use?"),
        bundled_view!("basics/kernel_block_y.cfg", "What block size Y does each kernel launch use?"),
        bundled_view!("basics/kernel_block_z.cfg", "What block size Z does each kernel launch use?"),
        bundled_view!(
            "basics/kernel_static_shared_memory.cfg",
            "How much static shared memory does each kernel launch use?",
        ),
        bundled_view!(
            "basics/kernel_dynamic_shared_memory.cfg",
            "How much dynamic shared memory does each kernel launch use?",
        ),
        bundled_view!(
            "basics/kernel_local_memory.cfg",
            "How much local memory does each kernel launch use?",
        ),
        bundled_view!(
            "basics/kernel_registers.cfg",
            "How many registers per thread does each kernel launch use?",
        ),
        bundled_view!(
            "analysis/kernels_profile.cfg",
            "How much GPU time does each kernel take, per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_durations.cfg",
            "How long does one call of each kernel last on average, per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_duration_histogram.cfg",
            "How are the durations of each kernel spread (calls per duration decade, per stream)?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_launch_grid.cfg",
            "How many blocks does the grid of each kernel have (X x Y x Z), per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_launch_block.cfg",
            "How many threads does a block of each kernel have (X x Y x Z), per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_launch_registers.cfg",
            "How many registers per thread does each kernel use, per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_launch_shared_memory.cfg",
            "How much shared memory (static + dynamic) does a block of each kernel use, per stream?",
        )
    .on_gpu_streams(),
        bundled_view!(
            "analysis/kernels_in_flight.cfg",
            "How many launched kernels wait to start, per CPU thread?",
        )
        .needs(&[API]),
        bundled_view!(
            "views/launch_queue_depth.cfg",
            "How many launched kernels wait to start on each GPU stream, over time?",
        )
        .needs(&[API]),
        bundled_view!(
            "analysis/launch_queue_depth.cfg",
            "How long does each GPU stream spend with how many launched kernels waiting?",
        )
        .needs(&[API])
        .on_gpu_streams(),
        bundled_view!(
            "views/gpu_idle_causes.cfg",
            "Why is each GPU idle between its operations: the CPU late (host-bound), a dependency or sync, or other?",
        ),
        bundled_view!(
            "analysis/gpu_idle_causes.cfg",
            "How much of each GPU's idle time is host-bound, dependency/sync or other, per stream?",
        )
        .on_gpu_streams(),
        bundled_view!(
            "analysis/kernel_launch_latency.cfg",
            "How long after its launch call begins does each kernel start, per stream?",
        )
        .needs(&[API])
        .on_gpu_streams(),
        bundled_view!(
            "analysis/comm_compute_overlap.cfg",
            "How much NCCL kernel time overlaps how many compute kernels, per task?",
        )
        .needs(&[NCCL]),
        bundled_view!(
            "analysis/concurrent_kernels.cfg",
            "How many compute kernels run at once in each task?",
        ),
        bundled_view!(
            "analysis/gpu_active.cfg",
            "How long is the GPU of each task busy with kernels or copies?",
        ),
        bundled_view!(
            "analysis/gpu_useful.cfg",
            "How long does the GPU of each task run compute kernels?",
        ),
        bundled_view!(
            "analysis/gpu_idle_gaps.cfg",
            "How long are the idle gaps between the operations of each GPU stream?",
        ),
        bundled_view!(
            "efficiency/load_balance.cfg",
            "How evenly is GPU compute time spread over the tasks (load balance)?",
        ),
        bundled_view!(
            "efficiency/parallel_efficiency.cfg",
            "What share of the run does the GPU of each task compute (parallel efficiency)?",
        ),
        bundled_view!(
            "efficiency/orchestration_efficiency.cfg",
            "What share of the run is the GPU of each task busy (orchestration efficiency)?",
        ),
        bundled_view!(
            "efficiency/communication_efficiency.cfg",
            "How does the GPU time of each task split into idle, communication and useful (communication efficiency)?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::GpuOperations,
        run: pass,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    use ValueLabels::{Bytes, Names, Numeric};
    vec![
        interval(CUDA_KERNEL, "CUDA kernel", Names),
        interval(NCCL_KERNEL, "NCCL kernel", Names),
        interval(KERNEL_GRID[0], "Kernel grid size X", Numeric),
        interval(KERNEL_GRID[1], "Kernel grid size Y", Numeric),
        interval(KERNEL_GRID[2], "Kernel grid size Z", Numeric),
        interval(KERNEL_BLOCK[0], "Kernel block size X", Numeric),
        interval(KERNEL_BLOCK[1], "Kernel block size Y", Numeric),
        interval(KERNEL_BLOCK[2], "Kernel block size Z", Numeric),
        interval(
            KERNEL_STATIC_SHARED,
            "Kernel static shared memory (bytes)",
            Bytes,
        ),
        interval(
            KERNEL_DYNAMIC_SHARED,
            "Kernel dynamic shared memory (bytes)",
            Bytes,
        ),
        interval(
            KERNEL_LOCAL_MEMORY,
            "Kernel local memory total (bytes)",
            Bytes,
        ),
        interval(KERNEL_REGISTERS, "Kernel registers per thread", Numeric),
        // Written by the translation from the GPU operations (`gpu_idle`).
        level(
            GPU_IDLE_CAUSE,
            "GPU idle cause (on the stream of the operation that ends the idle interval)",
            ValueLabels::fixed(&[
                (0, "End"),
                (GPU_IDLE_HOST_BOUND, "Host-bound (not launched yet)"),
                (GPU_IDLE_DEPENDENCY, "Dependency/sync (stream waited)"),
                (GPU_IDLE_OTHER, "Other (launch latency, waits not traced)"),
            ]),
        ),
    ]
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let rows = ctx.export.row_estimate(KERNEL)?;
    ctx.with_links(rows, kernels)
}

/// A kernel's name and launch configuration (grid, block, shared memory,
/// local memory, registers) as pairs.
fn config_pairs(name: EventPair, v: &[i64; 10]) -> [EventPair; 11] {
    [
        name,
        EventPair::raw(KERNEL_GRID[0], v[0]),
        EventPair::raw(KERNEL_GRID[1], v[1]),
        EventPair::raw(KERNEL_GRID[2], v[2]),
        EventPair::raw(KERNEL_BLOCK[0], v[3]),
        EventPair::raw(KERNEL_BLOCK[1], v[4]),
        EventPair::raw(KERNEL_BLOCK[2], v[5]),
        EventPair::raw(KERNEL_STATIC_SHARED, v[6]),
        EventPair::raw(KERNEL_DYNAMIC_SHARED, v[7]),
        EventPair::raw(KERNEL_LOCAL_MEMORY, v[8]),
        EventPair::raw(KERNEL_REGISTERS, v[9]),
    ]
}

/// NCCL's kernels are told apart by name, as nsys2prv does.
fn is_nccl(name: &str) -> bool {
    name.contains("nccl")
}

fn kernels(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    let export = ctx.export;
    let use_demangled = ctx.options.kernel_names == KernelNames::Demangled;
    let mut names = NameCache::default();
    let mut nccl_names = NameCache::default();
    // The name pair of each name id (whether it is NCCL's decided once).
    let mut name_pairs: FxHashMap<Option<i64>, EventPair> = FxHashMap::default();
    // The last launch configuration of each kernel and its shared list: a
    // kernel is nearly always launched as it was the time before.
    let mut configs: FxHashMap<EventPair, ([i64; 10], SharedPairs, u32)> = FxHashMap::default();
    let with_nccl_fields = ctx.options.wants(NCCL);
    let with_graph_nodes = ctx.options.wants(GRAPHS);
    let mut nccl_fields_cache: FxHashMap<u32, Vec<EventPair>> = FxHashMap::default();
    let mut pairs: Vec<EventPair> = Vec::with_capacity(24);
    // Graph launches and host functions write the correlation id's type on the
    // same streams, from other tables: that kernels nest with them is not
    // checked, so with them kernels are read whole.
    let cut_where_read = [GRAPH_TRACE, HOST_LAUNCH]
        .iter()
        .all(|t| export.row_estimate(t).is_ok_and(|rows| rows == 0));
    let scan = export.kernels(|k| {
        if !ctx.within_limits(k.place.start, k.place.end) {
            return Ok(());
        }
        let (primary, fallback) = if use_demangled {
            (k.demangled_name, k.short_name)
        } else {
            (k.short_name, k.demangled_name)
        };
        let name_id = primary.or(fallback);
        let name = match name_pairs.get(&name_id) {
            Some(&pair) => pair,
            None => {
                let pair = kernel_name(ctx, name_id, &mut names, &mut nccl_names)?;
                name_pairs.insert(name_id, pair);
                pair
            }
        };
        let thread = ctx.stream_thread(&k.place);
        let p = &k.place;
        ctx.gpu_idle.operation(thread, p.start, p.end);
        let is_nccl = name.ty == NCCL_KERNEL;
        if is_nccl {
            let first = &mut ctx.sync_points.first_nccl_end;
            *first = Some(first.map_or(p.end, |t| t.min(p.end)));
        }
        // Parsed (and its names given values) whether or not the kernel is written.
        let fields = match is_nccl && with_nccl_fields {
            true => nccl_fields(ctx, &mut nccl_fields_cache, name),
            false => Vec::new(),
        };
        // A kernel wholly outside a cut applied where rows are read makes no
        // records; its launch link stays (the API side's arrows and NCCL fields,
        // and its place in its stream's launch queue, whose depth carries on
        // into the window).
        if cut_where_read && ctx.left_out_by_cut(KERNEL, thread, p.start, p.end) {
            links.add_kernel(p, thread, is_nccl);
            return Ok(());
        }
        // The name and launch configuration repeat from launch to launch: the
        // run stores (and the writer formats) each combination once.
        let values = [
            k.grid[0],
            k.grid[1],
            k.grid[2],
            k.block[0],
            k.block[1],
            k.block[2],
            k.static_shared_memory,
            k.dynamic_shared_memory,
            k.local_memory_total,
            k.registers_per_thread,
        ];
        let epoch = ctx.run.shared_epoch();
        let shared = match configs.get(&name) {
            Some(&(last, shared, at)) if last == values && at == epoch => shared,
            _ => {
                let shared = ctx.run.shared_pairs(&config_pairs(name, &values));
                configs.insert(name, (values, shared, epoch));
                shared
            }
        };
        // One buffer for every row: what is the kernel's own.
        pairs.clear();
        if let Some(c) = p.correlation_id {
            pairs.push(EventPair::raw(CORRELATION_ID, c));
        }
        if let Some(node) = k.graph_node_id.filter(|_| with_graph_nodes) {
            pairs.push(EventPair::raw(GRAPH_NODE_ID, node));
        }
        pairs.extend(fields);
        ctx.run
            .interval_shared(thread, p.start, p.end, shared, &pairs);
        ctx.states.add(thread, p.start, p.end, state::RUNNING);
        links.add_kernel(p, thread, is_nccl);
        Ok(())
    })?;
    ctx.note_scan(KERNEL, scan);
    Ok(())
}

/// The fields an NCCL kernel's name encodes, parsed once per name.
fn nccl_fields(
    ctx: &mut ReportContext,
    cache: &mut FxHashMap<u32, Vec<EventPair>>,
    name: EventPair,
) -> Vec<EventPair> {
    let Value::Name(handle) = name.value() else {
        return Vec::new();
    };
    if let Some(pairs) = cache.get(&handle) {
        return pairs.clone();
    }
    let text = ctx.run.names.names_of(NCCL_KERNEL)[handle as usize].to_string();
    let pairs = nccl::kernel_pairs(ctx, &text);
    cache.insert(handle, pairs.clone());
    pairs
}

/// The kernel's name as a value of 63000006, or of 63000007 for NCCL kernels.
fn kernel_name(
    ctx: &mut ReportContext,
    name_id: Option<i64>,
    names: &mut NameCache,
    nccl_names: &mut NameCache,
) -> Result<EventPair, ReadError> {
    let handle = ctx.name(CUDA_KERNEL, names, name_id, str::to_string)?;
    let name = &ctx.run.names.names_of(CUDA_KERNEL)[handle as usize];
    if is_nccl(name) {
        let nccl = ctx.name(NCCL_KERNEL, nccl_names, name_id, str::to_string)?;
        return Ok(EventPair::name(NCCL_KERNEL, nccl));
    }
    Ok(EventPair::name(CUDA_KERNEL, handle))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::testing::{check, GLOBAL_PID};

    /// Columns of a kernel row a test gives; the rest are NULL.
    const COLUMNS: &str = "start, end, deviceId, contextId, streamId, correlationId, globalPid,
        demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY,
        blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread,
        localMemoryTotal, gridId";

    /// Each kernel: an interval of its name (NCCL's apart) with its launch
    /// configuration and correlation id, and the stream's Running state; the
    /// local memory is the kernel's total (BSC's column), not per thread.
    #[test]
    fn a_kernel_is_an_interval_of_its_name_and_launch_configuration() {
        check(
            &[KERNELS],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'saxpy(int, float, float*)'), (90002, 'saxpy'),
                     (90003, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long)'),
                     (90004, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL');
                 INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({COLUMNS}) VALUES
                     (1000, 1500, 0, 1, 7, 11, {GLOBAL_PID}, 90001, 90002, 32, 64, 2, 1, 256, 1,
                      1, 48, 1024, 16, 4096, 1),
                     (1200, 1300, 0, 1, 8, 12, {GLOBAL_PID}, 90003, 90004, 96, 2, 1, 1, 512, 1,
                      1, 0, 0, 0, 0, 2),
                     (2000, 2100, 0, 1, 7, 13, {GLOBAL_PID}, 90001, 90002, 32, 1, 1, 1, 32, 1,
                      1, 0, 0, 0, 0, 3);"
            ),
            expect![[r#"
                1000 24601:gpu0/s7 63000006="saxpy" 9101=64 9102=2 9103=1 9104=256 9105=1 9106=1 9107=48 9108=1024 9109=4096 9110=32 9200=11
                1000 24601:gpu0/s7 state 1 until 1500
                1200 24601:gpu0/s8 63000007="ncclDevKernel_AllReduce_Sum_f32_RING_LL" 9101=2 9102=1 9103=1 9104=512 9105=1 9106=1 9107=0 9108=0 9109=0 9110=96 9200=12
                1200 24601:gpu0/s8 state 1 until 1300
                1300 24601:gpu0/s8 end 63000007="ncclDevKernel_AllReduce_Sum_f32_RING_LL" 9101=2 9102=1 9103=1 9104=512 9105=1 9106=1 9107=0 9108=0 9109=0 9110=96 9200=12
                1500 24601:gpu0/s7 end 63000006="saxpy" 9101=64 9102=2 9103=1 9104=256 9105=1 9106=1 9107=48 9108=1024 9109=4096 9110=32 9200=11
                1500 24601:gpu0/s7 9360=3
                1500 24601:gpu0/s7 state 0 until 2000
                2000 24601:gpu0/s7 63000006="saxpy" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=13
                2000 24601:gpu0/s7 9360=0
                2000 24601:gpu0/s7 state 1 until 2100
                2100 24601:gpu0/s7 end 63000006="saxpy" 9101=1 9102=1 9103=1 9104=32 9105=1 9106=1 9107=0 9108=0 9109=0 9110=32 9200=13
            "#]],
        );
    }
}
