//! A small timeline model of one CUDA process: CPU threads issue API calls, streams run the work.
//!
//! Invariants the rows keep (tests check them): API calls of a thread never overlap, except a
//! driver call nested inside the runtime call that made it; GPU work starts after the call that
//! launched it; work on one stream never overlaps; streams run concurrently.

mod pipeline;
mod training;

use anyhow::Result;

use crate::activity::{
    ActivityTables, ApiRow, CudaEventRow, GpuPlace, GraphEventRow, GraphNode, GraphTraceRow,
    HostCallbackRow, HostLaunchRow, KernelNameIds, KernelRow, MemcpyRow, MemoryPoolRow,
    MemoryUsageRow, MemsetRow, Migration, PeerEnds, PoolState, SyncRow, NOT_APPLICABLE,
};
use crate::catalog::{
    self, kernel_weight_total, mem_kind, KernelDef, COPY_KINDS, DRIVER_CLASS, EXTRA_CALLS, KERNELS,
    MIGRATION_CAUSES, RUNTIME_CLASS,
};
use crate::ids::{global_pid, global_tid};
use crate::layout::ContextLayout;
use crate::rng::SplitMix64;
use crate::strings::StringIds;
use crate::version::{GraphEventTables, SyncKind};
use crate::{SynthDeviceSide, SynthGraphMode, SynthProcess};

pub use pipeline::{PipelineOp, PipelineSchedule, PipelineWork};
pub(crate) use training::{Training, TrainingNames};

/// Idle time on a CPU thread between two API calls (ns).
const CALL_GAP: (i64, i64) = (1_000, 15_000);
/// Duration of an asynchronous launch or copy call (ns).
const ASYNC_CALL: (i64, i64) = (2_500, 8_000);
/// Earliest GPU start after the launching call starts (ns).
const LAUNCH_LATENCY: (i64, i64) = (2_000, 6_000);
/// Idle time on a stream between two operations (ns).
const STREAM_GAP: (i64, i64) = (500, 2_000);
/// How far a blocking call outlasts the GPU work it waits for (ns).
const WAKE_UP: (i64, i64) = (500, 3_000);
/// Launch queues are finite: a thread never gets further than this ahead of a stream (ns).
const MAX_QUEUE_AHEAD: i64 = 2_000_000;
/// A launch makes a nested, traced driver call once in this many.
const NESTED_DRIVER_ONE_IN: u64 = 8;
/// Event handles are reused, as applications recycle a few cudaEvent_t.
const EVENT_HANDLES: i64 = 4;
/// The event a stream waits for when another process records it (`stream_wait_ns`): an id
/// no record of this process has, and no sync id.
const IPC_EVENT: (i64, i64) = (1_000, NOT_APPLICABLE);
/// Unified memory sits in a high, page-aligned range.
const MANAGED_BASE: i64 = 0x7A00_0000_0000;
const PAGE: i64 = 4096;

/// StringIds of the asynchronous and blocking variants of a call.
#[derive(Clone, Copy)]
struct Variants {
    asynchronous: i64,
    blocking: i64,
}

impl Variants {
    fn intern(strings: &mut StringIds, [asynchronous, blocking]: [&str; 2]) -> Self {
        Self {
            asynchronous: strings.intern(asynchronous),
            blocking: strings.intern(blocking),
        }
    }

    fn get(self, blocking: bool) -> i64 {
        if blocking {
            self.blocking
        } else {
            self.asynchronous
        }
    }
}

/// StringIds of every API and kernel name the model uses.
pub(crate) struct NameIds {
    launch_kernel: i64,
    launch_kernel_driver: i64,
    memset: Variants,
    memset_driver: Variants,
    memcpy_driver: Variants,
    stream_synchronize: i64,
    device_synchronize: i64,
    event_synchronize: i64,
    event_record: i64,
    /// Indexed by copy kind; migrations make no call and get empty names.
    copy_kinds: Vec<Variants>,
    extra_calls: Vec<i64>,
    kernels: Vec<KernelNameIds>,
    /// Interned only when the spec records graphs or memory usage, so that other exports keep
    /// their string table.
    device: Option<DeviceNameIds>,
    /// `cudaLaunchHostFunc` and the host function's name, when the spec records host functions.
    host_functions: Option<(i64, i64)>,
}

/// StringIds of the graph and allocation calls.
#[derive(Clone, Copy)]
struct DeviceNameIds {
    graph_create: i64,
    graph_add_kernel_node: i64,
    graph_add_memcpy_node: i64,
    graph_instantiate: i64,
    graph_launch: i64,
    malloc: i64,
    free: i64,
    malloc_async: i64,
    free_async: i64,
}

impl NameIds {
    pub(crate) fn intern(strings: &mut StringIds) -> Self {
        Self {
            launch_kernel: strings.intern(catalog::LAUNCH_KERNEL),
            launch_kernel_driver: strings.intern(catalog::LAUNCH_KERNEL_DRIVER),
            memset: Variants::intern(strings, catalog::MEMSET_CALLS),
            memset_driver: Variants::intern(strings, catalog::MEMSET_DRIVER_CALLS),
            memcpy_driver: Variants::intern(strings, catalog::MEMCPY_DRIVER_CALLS),
            stream_synchronize: strings.intern(catalog::STREAM_SYNCHRONIZE),
            device_synchronize: strings.intern(catalog::DEVICE_SYNCHRONIZE),
            event_synchronize: strings.intern(catalog::EVENT_SYNCHRONIZE),
            event_record: strings.intern(catalog::EVENT_RECORD),
            copy_kinds: COPY_KINDS
                .iter()
                .map(|k| Variants::intern(strings, [k.async_api, k.blocking_api]))
                .collect(),
            extra_calls: EXTRA_CALLS.iter().map(|c| strings.intern(c.name)).collect(),
            kernels: KERNELS
                .iter()
                .map(|k| KernelNameIds {
                    short: strings.intern(k.short),
                    demangled: strings.intern(k.demangled),
                    mangled: strings.intern(k.mangled),
                })
                .collect(),
            device: None,
            host_functions: None,
        }
    }

    /// Adds the names of host function launches (after every other name).
    pub(crate) fn intern_host_functions(&mut self, strings: &mut StringIds) {
        self.host_functions = Some((
            strings.intern("cudaLaunchHostFunc_v10000"),
            strings.intern(HOST_FUNCTION_NAME),
        ));
    }

    /// Adds the names of graph and allocation calls (after every other name).
    pub(crate) fn intern_device(&mut self, strings: &mut StringIds) {
        self.device = Some(DeviceNameIds {
            graph_create: strings.intern("cudaGraphCreate_v10000"),
            graph_add_kernel_node: strings.intern("cudaGraphAddKernelNode_v10000"),
            graph_add_memcpy_node: strings.intern("cudaGraphAddMemcpyNode_v10000"),
            graph_instantiate: strings.intern("cudaGraphInstantiate_v10000"),
            graph_launch: strings.intern("cudaGraphLaunch_v10000"),
            malloc: strings.intern("cudaMalloc_v3020"),
            free: strings.intern("cudaFree_v3020"),
            malloc_async: strings.intern("cudaMallocAsync_v11020"),
            free_async: strings.intern("cudaFreeAsync_v11020"),
        });
    }
}

/// The kernels of the synthetic graph (indices in `KERNELS`), then one device-to-device copy.
const GRAPH_KERNELS: [usize; 3] = [2, 3, 4];
const GRAPH_COPY_BYTES: i64 = 1 << 20;
const DEVICE_TO_DEVICE: usize = 8;
/// Graph ids are per process; each process builds one graph and instantiates it once.
const GRAPH_ID: i64 = 1;
const GRAPH_EXEC_ID: i64 = 1;
/// `ENUM_NSYS_EVENT_CLASS` ids of graph construction events.
const CLASS_NODE_CREATION: i64 = 77;
const CLASS_EXEC_CREATION: i64 = 94;
const CLASS_GRAPH_CREATION: i64 = 95;
/// The host function every `cudaLaunchHostFunc` enqueues, and the thread that runs it (the
/// CUDA driver's callback thread: tid = pid + this).
pub(crate) const HOST_FUNCTION_NAME: &str = "synth_host_callback";
pub(crate) const CALLBACK_THREAD_OFFSET: u32 = 999;
/// Device allocations sit in a high, 2 MiB-aligned range; pools reserve 32 MiB at a time.
const DEVICE_HEAP_BASE: i64 = 0x7F00_0000_0000;
const ALLOCATION_ALIGN: i64 = 2 << 20;
const POOL_GRANULE: i64 = 32 << 20;
/// A live allocation: context index, address, size, and whether it came from the pool.
#[derive(Clone, Copy)]
struct Allocation {
    context: usize,
    address: i64,
    bytes: i64,
    pooled: bool,
}

/// A context's memory pool (created on its first `cudaMallocAsync`).
#[derive(Clone, Copy, Default)]
struct Pool {
    created: bool,
    size: i64,
    utilized: i64,
}

/// A stream the process issues work to.
struct Lane {
    device_id: i64,
    context_id: i64,
    stream_id: i64,
    /// Copies and memsets on the NULL stream use the blocking API variants.
    is_null_stream: bool,
    /// When the last operation queued on the stream ends.
    free_at: i64,
}

struct CpuThread {
    global_tid: i64,
    /// When the thread's last API call returned.
    now: i64,
    /// Idle time before its next call, drawn in advance so that the thread that calls next is
    /// known and correlation ids grow with start times, as CUPTI assigns them.
    gap: i64,
}

impl CpuThread {
    fn next_start(&self) -> i64 {
        self.now + self.gap
    }
}

/// The API and GPU interval of one launched operation.
#[derive(Clone, Copy)]
struct Window {
    api_start: i64,
    api_end: i64,
    gpu_start: i64,
    gpu_end: i64,
}

#[derive(Clone, Copy)]
enum Operation {
    Kernel,
    Memcpy,
    Memset,
    Sync,
    ExtraCall,
    GraphLaunch,
    Memory,
    HostFunction,
}

const SYNC_ROTATION: [SyncKind; 3] = [SyncKind::Stream, SyncKind::Context, SyncKind::Event];

pub(crate) struct ProcessSim<'a, 'c> {
    process: &'a SynthProcess,
    contexts: &'a [ContextLayout],
    names: &'a NameIds,
    out: &'a mut ActivityTables<'c>,
    rng: SplitMix64,
    global_pid: i64,
    threads: Vec<CpuThread>,
    lanes: Vec<Lane>,
    /// Per context: when the last unified-memory migration on its device ends.
    migrations_free_at: Vec<i64>,
    last_correlation_id: i64,
    last_grid_id: i64,
    memcpys_issued: usize,
    syncs_issued: usize,
    event_records: i64,
    device: &'a SynthDeviceSide,
    graph_built: bool,
    allocations_made: u64,
    live_allocations: std::collections::VecDeque<Allocation>,
    next_address: i64,
    pools: Vec<Pool>,
    training: Option<Training<'a>>,
    training_state: training::LoopState,
}

impl<'a, 'c> ProcessSim<'a, 'c> {
    pub(crate) fn new(
        process: &'a SynthProcess,
        contexts: &'a [ContextLayout],
        names: &'a NameIds,
        out: &'a mut ActivityTables<'c>,
        seed: u64,
        start_time: i64,
        device: &'a SynthDeviceSide,
    ) -> Self {
        let threads = (0..process.cpu_threads)
            .map(|i| CpuThread {
                global_tid: global_tid(process.pid, process.pid + i),
                now: start_time + i64::from(i) * 20_000,
                gap: CALL_GAP.0,
            })
            .collect();
        let lanes = contexts
            .iter()
            .flat_map(|context| {
                context.work_streams().map(|stream_id| Lane {
                    device_id: i64::from(context.device_id),
                    context_id: context.context_id,
                    stream_id,
                    is_null_stream: stream_id == context.null_stream(),
                    free_at: 0,
                })
            })
            .collect();
        Self {
            process,
            contexts,
            names,
            out,
            rng: SplitMix64::new(seed),
            global_pid: global_pid(process.pid),
            threads,
            lanes,
            migrations_free_at: vec![0; contexts.len()],
            last_correlation_id: 0,
            last_grid_id: 0,
            memcpys_issued: 0,
            syncs_issued: 0,
            event_records: 0,
            device,
            graph_built: false,
            allocations_made: 0,
            live_allocations: std::collections::VecDeque::new(),
            next_address: DEVICE_HEAP_BASE,
            pools: vec![Pool::default(); contexts.len()],
            training: None,
            training_state: training::LoopState::default(),
        }
    }

    /// Runs a training loop before the randomly interleaved operations.
    pub(crate) fn with_training(mut self, training: Option<Training<'a>>) -> Self {
        self.training = training;
        self
    }

    /// Issues every operation the process asks for, interleaved at random.
    pub(crate) fn run(mut self) -> Result<()> {
        if let Some(training) = self.training {
            self.train(training)?;
        }
        let p = self.process;
        let mut remaining = [
            (Operation::Kernel, p.kernels),
            (Operation::Memcpy, p.memcpys),
            (Operation::Memset, p.memsets),
            (Operation::Sync, p.syncs),
            (Operation::ExtraCall, p.extra_api_calls),
            (Operation::GraphLaunch, self.device.graph_launches),
            // An allocation and its free.
            (Operation::Memory, 2 * self.device.memory_allocations),
            (Operation::HostFunction, self.device.host_functions),
        ];
        let mut total: u64 = remaining.iter().map(|&(_, n)| n).sum();
        while total > 0 {
            let mut pick = self.rng.below(total);
            let slot = remaining
                .iter()
                .position(|&(_, n)| {
                    let hit = pick < n;
                    pick = pick.saturating_sub(n);
                    hit
                })
                .expect("pick is below the total of remaining operations");
            remaining[slot].1 -= 1;
            total -= 1;
            match remaining[slot].0 {
                Operation::Kernel => self.kernel()?,
                Operation::Memcpy => self.memcpy()?,
                Operation::Memset => self.memset()?,
                Operation::Sync => self.sync()?,
                Operation::ExtraCall => self.extra_call()?,
                Operation::GraphLaunch => self.graph_launch()?,
                Operation::Memory => self.memory()?,
                Operation::HostFunction => self.host_function()?,
            }
        }
        if let Some(bursts) = self.device.launch_bursts {
            self.launch_bursts(bursts)?;
        }
        Ok(())
    }

    /// Bursts of launches that queue on the first stream, with the spec's fixed times.
    fn launch_bursts(&mut self, b: crate::SynthLaunchBursts) -> Result<()> {
        let (thread, lane) = (0, 0);
        let mut first_call = self.threads[thread]
            .next_start()
            .max(self.lanes[lane].free_at)
            + b.gap_ns;
        for _ in 0..b.bursts {
            let first_kernel = first_call + b.first_latency_ns;
            for i in 0..i64::from(b.kernels_per_burst) {
                let api_start = first_call + i * b.call_spacing_ns;
                let gpu_start = first_kernel + i * b.kernel_ns;
                let window = Window {
                    api_start,
                    api_end: api_start + b.call_spacing_ns / 2,
                    gpu_start,
                    gpu_end: gpu_start + b.kernel_ns,
                };
                self.launch_kernel_in(thread, lane, &KERNELS[0], self.names.kernels[0], window)?;
            }
            let end = first_kernel + i64::from(b.kernels_per_burst) * b.kernel_ns;
            self.lanes[lane].free_at = end;
            first_call = end.max(self.threads[thread].now) + b.gap_ns;
        }
        Ok(())
    }

    fn between(&mut self, (lo, hi): (i64, i64)) -> i64 {
        self.rng.range(lo, hi)
    }

    /// The thread whose next call starts first issues next, so threads progress together.
    fn pick_thread(&self) -> usize {
        (0..self.threads.len())
            .min_by_key(|&i| self.threads[i].next_start())
            .expect("a process with API activity has a CPU thread")
    }

    fn pick_lane(&mut self) -> usize {
        self.rng.below(self.lanes.len() as u64) as usize
    }

    fn place(&self, lane: usize, correlation_id: i64, green_context_id: Option<i64>) -> GpuPlace {
        let lane = &self.lanes[lane];
        GpuPlace {
            device_id: lane.device_id,
            context_id: lane.context_id,
            green_context_id,
            stream_id: lane.stream_id,
            correlation_id,
            global_pid: self.global_pid,
        }
    }

    /// Writes an API call made by `thread` and returns its correlation id.
    fn api(
        &mut self,
        thread: usize,
        (start, end): (i64, i64),
        event_class: i64,
        name_id: i64,
    ) -> Result<i64> {
        self.last_correlation_id += 1;
        let clock = &mut self.threads[thread];
        clock.now = clock.now.max(end);
        self.out.api(&ApiRow {
            start,
            end,
            event_class,
            global_tid: clock.global_tid,
            correlation_id: self.last_correlation_id,
            name_id,
        })?;
        Ok(self.last_correlation_id)
    }

    /// When `thread` issues its next call: after a gap, and no further than the launch queue
    /// allows ahead of `lane`.
    fn next_call_start(&mut self, thread: usize, lane: Option<usize>) -> i64 {
        let earliest = self.threads[thread].next_start();
        self.threads[thread].gap = self.between(CALL_GAP);
        let queue_limit = lane.map_or(0, |l| self.lanes[l].free_at - MAX_QUEUE_AHEAD);
        earliest.max(queue_limit)
    }

    /// Queues `duration` ns of work on `lane`; a blocking call returns only when it is done.
    fn enqueue(&mut self, thread: usize, lane: usize, duration: i64, blocking: bool) -> Window {
        let api_start = self.next_call_start(thread, Some(lane));
        let after_launch = api_start + self.between(LAUNCH_LATENCY);
        let after_previous = self.lanes[lane].free_at + self.between(STREAM_GAP);
        let gpu_start = after_launch.max(after_previous);
        let gpu_end = gpu_start + duration;
        let api_end = if blocking {
            gpu_end + self.between(WAKE_UP)
        } else {
            api_start + self.between(ASYNC_CALL)
        };
        self.lanes[lane].free_at = gpu_end;
        Window {
            api_start,
            api_end,
            gpu_start,
            gpu_end,
        }
    }

    /// Writes the runtime call of a launch and, sometimes, a driver call nested inside it.
    fn launch_call(
        &mut self,
        thread: usize,
        window: Window,
        name_id: i64,
        driver_name_id: i64,
    ) -> Result<i64> {
        let call = (window.api_start, window.api_end);
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, name_id)?;
        if self.rng.chance(NESTED_DRIVER_ONE_IN) {
            let quarter = (call.1 - call.0) / 4;
            let nested = (call.0 + quarter, call.1 - quarter);
            self.api(thread, nested, DRIVER_CLASS, driver_name_id)?;
        }
        Ok(correlation_id)
    }

    fn pick_kernel(&mut self) -> usize {
        let mut pick = self.rng.below(kernel_weight_total());
        KERNELS
            .iter()
            .position(|k| {
                let hit = pick < k.weight;
                pick = pick.saturating_sub(k.weight);
                hit
            })
            .expect("pick is below the total weight")
    }

    fn kernel(&mut self) -> Result<()> {
        let (thread, lane) = (self.pick_thread(), self.pick_lane());
        let index = self.pick_kernel();
        let def = &KERNELS[index];
        let duration = self.rng.jitter(def.duration);
        self.issue_kernel(thread, lane, def, self.names.kernels[index], duration)
    }

    /// `thread` launches a kernel of `duration` ns on `lane` with cudaLaunchKernel.
    fn issue_kernel(
        &mut self,
        thread: usize,
        lane: usize,
        def: &'static KernelDef,
        names: KernelNameIds,
        duration: i64,
    ) -> Result<()> {
        let window = self.enqueue(thread, lane, duration, false);
        self.launch_kernel_in(thread, lane, def, names, window)
    }

    /// Queues a kernel that runs from `gpu_start` to `gpu_end` on `lane` (a schedule's times):
    /// `thread` launches it when it can; should it come too late, the kernel starts later.
    fn enqueue_at(
        &mut self,
        thread: usize,
        lane: usize,
        (gpu_start, gpu_end): (i64, i64),
    ) -> Window {
        let api_start = self.next_call_start(thread, Some(lane));
        let after_launch = api_start + self.between(LAUNCH_LATENCY);
        let late = (after_launch - gpu_start).max(0);
        let api_end = api_start + self.between(ASYNC_CALL);
        self.lanes[lane].free_at = gpu_end + late;
        Window {
            api_start,
            api_end,
            gpu_start: gpu_start + late,
            gpu_end: gpu_end + late,
        }
    }

    /// Writes the launch call of a kernel queued in `window`, and the kernel.
    fn launch_kernel_in(
        &mut self,
        thread: usize,
        lane: usize,
        def: &'static KernelDef,
        names: KernelNameIds,
        window: Window,
    ) -> Result<()> {
        let correlation_id = self.launch_call(
            thread,
            window,
            self.names.launch_kernel,
            self.names.launch_kernel_driver,
        )?;
        self.last_grid_id += 1;
        self.out.kernel(&KernelRow {
            start: window.gpu_start,
            end: window.gpu_end,
            place: self.place(lane, correlation_id, Some(0)),
            def,
            names,
            grid_id: self.last_grid_id,
            graph: None,
        })
    }

    /// Copy kinds are used in turn, so every kind appears once the process has 14 copies.
    fn memcpy(&mut self) -> Result<()> {
        let kind = self.memcpys_issued % COPY_KINDS.len();
        self.memcpys_issued += 1;
        let def = &COPY_KINDS[kind];
        if def.migration {
            return self.migration(kind);
        }
        let (thread, lane) = (self.pick_thread(), self.pick_lane());
        let bytes = self.rng.log_range(1 << 10, 16 << 20);
        self.issue_copy(thread, lane, kind, bytes)
    }

    /// `thread` copies `bytes` of copy kind `kind` on `lane` (not a migration), blocking on the
    /// NULL stream.
    fn issue_copy(&mut self, thread: usize, lane: usize, kind: usize, bytes: i64) -> Result<()> {
        let def = &COPY_KINDS[kind];
        let blocking = self.lanes[lane].is_null_stream;
        let window = self.enqueue(thread, lane, 1_000 + bytes / def.bytes_per_ns, blocking);
        let names = self.names;
        let name_id = names.copy_kinds[kind].get(blocking);
        let driver_name_id = names.memcpy_driver.get(blocking);
        let correlation_id = self.launch_call(thread, window, name_id, driver_name_id)?;
        let peer = def.peer.then(|| self.peer_ends(lane));
        self.out.memcpy(&MemcpyRow {
            start: window.gpu_start,
            end: window.gpu_end,
            place: self.place(lane, correlation_id, Some(0)),
            bytes,
            copy_kind: kind as i64,
            src_kind: def.src_kind,
            dst_kind: def.dst_kind,
            peer,
            migration: None,
            graph_node_id: None,
        })
    }

    /// A peer copy goes from the lane's device to the process's next device (itself if alone).
    fn peer_ends(&self, lane: usize) -> PeerEnds {
        let lane = &self.lanes[lane];
        let source = self
            .contexts
            .iter()
            .position(|c| c.context_id == lane.context_id)
            .expect("lanes belong to the process's contexts");
        let destination = &self.contexts[(source + 1) % self.contexts.len()];
        PeerEnds {
            src_device: lane.device_id,
            src_context: lane.context_id,
            dst_device: i64::from(destination.device_id),
            dst_context: destination.context_id,
        }
    }

    /// A unified-memory migration: no API call, and context, stream and correlation id 0.
    fn migration(&mut self, kind: usize) -> Result<()> {
        let context = self.rng.below(self.contexts.len() as u64) as usize;
        let now = self.threads[self.pick_thread()].now;
        let start = self.migrations_free_at[context].max(now) + self.rng.range(0, 3_000);
        let bytes = self.rng.range(1, 33) * PAGE;
        let end = start + 1_000 + bytes / COPY_KINDS[kind].bytes_per_ns;
        self.migrations_free_at[context] = end;
        let cause = MIGRATION_CAUSES[self.rng.below(MIGRATION_CAUSES.len() as u64) as usize];
        let virtual_address = MANAGED_BASE + self.rng.range(0, 1 << 20) * PAGE;
        self.out.memcpy(&MemcpyRow {
            start,
            end,
            place: GpuPlace {
                device_id: i64::from(self.contexts[context].device_id),
                context_id: 0,
                green_context_id: None,
                stream_id: 0,
                correlation_id: 0,
                global_pid: self.global_pid,
            },
            bytes,
            copy_kind: kind as i64,
            src_kind: mem_kind::UNKNOWN,
            dst_kind: mem_kind::UNKNOWN,
            peer: None,
            migration: Some(Migration {
                cause,
                virtual_address,
            }),
            graph_node_id: None,
        })
    }

    fn memset(&mut self) -> Result<()> {
        let (thread, lane) = (self.pick_thread(), self.pick_lane());
        let bytes = self.rng.log_range(256, 64 << 20);
        self.issue_memset(thread, lane, bytes)
    }

    /// `thread` sets `bytes` on `lane`, blocking on the NULL stream.
    fn issue_memset(&mut self, thread: usize, lane: usize, bytes: i64) -> Result<()> {
        let blocking = self.lanes[lane].is_null_stream;
        let window = self.enqueue(thread, lane, 1_000 + bytes / 300, blocking);
        let names = self.names;
        let name_id = names.memset.get(blocking);
        let driver_name_id = names.memset_driver.get(blocking);
        let correlation_id = self.launch_call(thread, window, name_id, driver_name_id)?;
        let value = if self.rng.chance(4) { 0xFF } else { 0 };
        self.out.memset(&MemsetRow {
            start: window.gpu_start,
            end: window.gpu_end,
            place: self.place(lane, correlation_id, Some(0)),
            value,
            bytes,
            mem_kind: mem_kind::DEVICE,
        })
    }

    /// Sync kinds are used in turn: stream, device (context), event.
    fn sync(&mut self) -> Result<()> {
        let kind = SYNC_ROTATION[self.syncs_issued % SYNC_ROTATION.len()];
        self.syncs_issued += 1;
        let thread = self.pick_thread();
        let lane = self.pick_lane();
        match kind {
            SyncKind::Stream => self.stream_sync(thread, lane),
            SyncKind::Context => self.device_sync(thread, lane),
            SyncKind::Event | SyncKind::StreamWait => self.event_sync(thread, lane),
        }
    }

    /// A blocking call from `start` until `ready` (plus wake-up time), at least 1.5 µs long.
    fn wait_until(&mut self, start: i64, ready: i64) -> (i64, i64) {
        let end = (start + 1_500).max(ready + self.between(WAKE_UP));
        (start, end)
    }

    /// The SYNCHRONIZATION row lies just inside its API call.
    fn sync_interval(&mut self, (start, end): (i64, i64)) -> (i64, i64) {
        (
            start + self.rng.range(300, 800),
            end - self.rng.range(200, 500),
        )
    }

    fn write_sync(
        &mut self,
        call: (i64, i64),
        place: GpuPlace,
        kind: SyncKind,
        event: (i64, i64),
    ) -> Result<()> {
        let (start, end) = self.sync_interval(call);
        self.out.sync(&SyncRow {
            start,
            end,
            place,
            sync_type: self.out.version().sync_type(kind),
            event_id: event.0,
            event_sync_id: event.1,
        })
    }

    fn stream_sync(&mut self, thread: usize, lane: usize) -> Result<()> {
        let start = self.next_call_start(thread, None);
        let call = self.wait_until(start, self.lanes[lane].free_at);
        let name_id = self.names.stream_synchronize;
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, name_id)?;
        let place = self.place(lane, correlation_id, None);
        let no_event = (NOT_APPLICABLE, NOT_APPLICABLE);
        self.write_sync(call, place, SyncKind::Stream, no_event)
    }

    /// Waits for every stream of the lane's device; stream and event are "not applicable".
    fn device_sync(&mut self, thread: usize, lane: usize) -> Result<()> {
        let context_id = self.lanes[lane].context_id;
        let ready = self
            .lanes
            .iter()
            .filter(|l| l.context_id == context_id)
            .map(|l| l.free_at)
            .max()
            .unwrap_or(0);
        let start = self.next_call_start(thread, None);
        let call = self.wait_until(start, ready);
        let name_id = self.names.device_synchronize;
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, name_id)?;
        let place = GpuPlace {
            stream_id: NOT_APPLICABLE,
            ..self.place(lane, correlation_id, None)
        };
        let no_event = (NOT_APPLICABLE, NOT_APPLICABLE);
        self.write_sync(call, place, SyncKind::Context, no_event)
    }

    /// Records an event on the lane, then waits for it; the sync row names the event, not the
    /// stream.
    fn event_sync(&mut self, thread: usize, lane: usize) -> Result<()> {
        let start = self.next_call_start(thread, None);
        let record = (start, start + self.rng.range(1_000, 3_000));
        let record_correlation_id =
            self.api(thread, record, RUNTIME_CLASS, self.names.event_record)?;
        let event = (
            1 + self.event_records % EVENT_HANDLES,
            self.event_records + 1,
        );
        self.event_records += 1;
        self.out.cuda_event(&CudaEventRow {
            place: self.place(lane, record_correlation_id, Some(0)),
            event_id: event.0,
            event_sync_id: event.1,
        })?;
        let ready = self.lanes[lane].free_at;
        let start = self.next_call_start(thread, None);
        let call = self.wait_until(start, ready);
        let name_id = self.names.event_synchronize;
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, name_id)?;
        let place = GpuPlace {
            stream_id: NOT_APPLICABLE,
            ..self.place(lane, correlation_id, None)
        };
        self.write_sync(call, place, SyncKind::Event, event)
    }

    /// `thread` makes `lane` wait (`cudaStreamWaitEvent`) for an event that another process
    /// records `wait_ns` after the lane's device last has work (an IPC event, recorded
    /// elsewhere: no record of it in this export); what `lane` runs next starts after that.
    fn stream_wait_event(
        &mut self,
        thread: usize,
        lane: usize,
        wait_ns: i64,
        name_id: i64,
    ) -> Result<()> {
        let start = self.next_call_start(thread, None);
        let call = (start, start + self.rng.range(1_000, 3_000));
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, name_id)?;
        let place = self.place(lane, correlation_id, None);
        self.write_sync(call, place, SyncKind::StreamWait, IPC_EVENT)?;
        let device = self.lanes[lane].device_id;
        let device_free = self
            .lanes
            .iter()
            .filter(|l| l.device_id == device)
            .map(|l| l.free_at)
            .max()
            .unwrap_or(0);
        let lane = &mut self.lanes[lane];
        lane.free_at = lane.free_at.max(device_free.max(call.1) + wait_ns);
        Ok(())
    }

    fn extra_call(&mut self) -> Result<()> {
        let thread = self.pick_thread();
        let index = self.rng.below(EXTRA_CALLS.len() as u64) as usize;
        let call = &EXTRA_CALLS[index];
        let start = self.next_call_start(thread, None);
        let end = start + self.rng.range(call.min, call.max);
        self.api(
            thread,
            (start, end),
            call.event_class,
            self.names.extra_calls[index],
        )?;
        Ok(())
    }

    fn device_names(&self) -> DeviceNameIds {
        self.names
            .device
            .expect("device names are interned when graphs or allocations are asked for")
    }

    /// A call made only for its CPU-side effect, at the thread's next free time.
    fn plain_call(
        &mut self,
        thread: usize,
        duration: (i64, i64),
        name_id: i64,
    ) -> Result<(i64, i64, i64)> {
        let start = self.next_call_start(thread, None);
        let end = start + self.between(duration);
        let correlation_id = self.api(thread, (start, end), RUNTIME_CLASS, name_id)?;
        Ok((start, end, correlation_id))
    }

    /// Writes a construction event with the interval of the call that made it.
    fn graph_event(
        &mut self,
        thread: usize,
        (start, end): (i64, i64),
        name_id: i64,
        event_class: i64,
        ids: (Option<i64>, Option<i64>, Option<i64>),
    ) -> Result<()> {
        let tables = self.out.version().graph_event_tables();
        let node_table = event_class == CLASS_NODE_CREATION;
        let written = match tables {
            GraphEventTables::None => false,
            GraphEventTables::NodeForm => node_table,
            GraphEventTables::Split => true,
        };
        if !written {
            return Ok(());
        }
        let (graph_node_id, graph_id, graph_exec_id) = ids;
        let row = GraphEventRow {
            start,
            end,
            event_class,
            global_tid: self.threads[thread].global_tid,
            name_id,
            graph_node_id,
            graph_id,
            graph_exec_id,
        };
        self.out
            .graph_event(&row, node_table && tables == GraphEventTables::Split)
    }

    /// cudaGraphCreate, one node per kernel and the copy, cudaGraphInstantiate.
    fn build_graph(&mut self, thread: usize) -> Result<()> {
        let names = self.device_names();
        let call = self.plain_call(thread, (5_000, 20_000), names.graph_create)?;
        let graph = (None, Some(GRAPH_ID), None);
        self.graph_event(
            thread,
            (call.0, call.1),
            names.graph_create,
            CLASS_GRAPH_CREATION,
            graph,
        )?;
        for node in 1..=GRAPH_KERNELS.len() as i64 + 1 {
            let name_id = if node as usize > GRAPH_KERNELS.len() {
                names.graph_add_memcpy_node
            } else {
                names.graph_add_kernel_node
            };
            let call = self.plain_call(thread, (2_000, 8_000), name_id)?;
            let ids = (Some(node), Some(GRAPH_ID), None);
            self.graph_event(thread, (call.0, call.1), name_id, CLASS_NODE_CREATION, ids)?;
        }
        let call = self.plain_call(thread, (50_000, 200_000), names.graph_instantiate)?;
        let exec = (None, Some(GRAPH_ID), Some(GRAPH_EXEC_ID));
        self.graph_event(
            thread,
            (call.0, call.1),
            names.graph_instantiate,
            CLASS_EXEC_CREATION,
            exec,
        )?;
        self.graph_built = true;
        Ok(())
    }

    /// A cudaGraphLaunch: one GRAPH_TRACE row, or (node mode) a row per node, all correlated
    /// with the launch.
    fn graph_launch(&mut self) -> Result<()> {
        let thread = self.pick_thread();
        if !self.graph_built {
            self.build_graph(thread)?;
        }
        let lane = self.pick_lane();
        let durations: Vec<i64> = GRAPH_KERNELS
            .iter()
            .map(|&k| self.rng.jitter(KERNELS[k].duration))
            .collect();
        let copy = 1_000 + GRAPH_COPY_BYTES / COPY_KINDS[DEVICE_TO_DEVICE].bytes_per_ns;
        let node_gap = 400;
        let total = durations.iter().sum::<i64>() + copy + node_gap * durations.len() as i64;
        let window = self.enqueue(thread, lane, total, false);
        let names = self.device_names();
        let call = (window.api_start, window.api_end);
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, names.graph_launch)?;
        self.out.graph_launch();
        let place = self.place(lane, correlation_id, Some(0));
        if self.device.graph_mode == SynthGraphMode::Graph {
            return self.out.graph_trace(&GraphTraceRow {
                start: window.gpu_start,
                end: window.gpu_end,
                place,
                graph_id: GRAPH_ID,
                graph_exec_id: GRAPH_EXEC_ID,
            });
        }
        let mut at = window.gpu_start;
        for (node, (&kernel, &duration)) in GRAPH_KERNELS.iter().zip(&durations).enumerate() {
            self.last_grid_id += 1;
            self.out.kernel(&KernelRow {
                start: at,
                end: at + duration,
                place,
                def: &KERNELS[kernel],
                names: self.names.kernels[kernel],
                grid_id: self.last_grid_id,
                graph: Some(GraphNode {
                    node_id: node as i64 + 1,
                    graph_id: GRAPH_ID,
                }),
            })?;
            at += duration + node_gap;
        }
        let def = &COPY_KINDS[DEVICE_TO_DEVICE];
        self.out.memcpy(&MemcpyRow {
            start: at,
            end: (at + copy).min(window.gpu_end),
            place,
            bytes: GRAPH_COPY_BYTES,
            copy_kind: DEVICE_TO_DEVICE as i64,
            src_kind: def.src_kind,
            dst_kind: def.dst_kind,
            peer: None,
            migration: None,
            graph_node_id: Some(GRAPH_KERNELS.len() as i64 + 1),
        })
    }

    /// A `cudaLaunchHostFunc`: the stream waits while the callback thread runs the function.
    fn host_function(&mut self) -> Result<()> {
        let (launch_name, function_name) = self
            .names
            .host_functions
            .expect("host function names are interned when host functions are asked for");
        let thread = self.pick_thread();
        let lane = self.pick_lane();
        let run = self.between((5_000, 60_000));
        let wake_up = self.between((2_000, 8_000));
        let window = self.enqueue(thread, lane, wake_up + run + 1_000, false);
        let call = (window.api_start, window.api_end);
        let correlation_id = self.api(thread, call, RUNTIME_CLASS, launch_name)?;
        self.out.host_launch(&HostLaunchRow {
            start: window.gpu_start,
            end: window.gpu_end,
            place: self.place(lane, correlation_id, Some(0)),
        })?;
        let callback_tid = self.process.pid + CALLBACK_THREAD_OFFSET;
        let start = window.gpu_start + wake_up;
        self.out.host_callback(&HostCallbackRow {
            start,
            end: start + run,
            global_tid: global_tid(self.process.pid, callback_tid),
            correlation_id,
            name_id: function_name,
        })
    }

    /// Allocates while allocations remain and a coin says so (or nothing is live), else frees the
    /// oldest live allocation: every allocation is freed by the end.
    fn memory(&mut self) -> Result<()> {
        let allocations_left = self.allocations_made < self.device.memory_allocations;
        let free = !self.live_allocations.is_empty() && (!allocations_left || self.rng.chance(2));
        let thread = self.pick_thread();
        if free {
            let allocation = self
                .live_allocations
                .pop_front()
                .expect("a free follows a live allocation");
            return self.free(thread, allocation);
        }
        self.allocate(thread)
    }

    fn allocate(&mut self, thread: usize) -> Result<()> {
        let context = self.rng.below(self.contexts.len() as u64) as usize;
        let pooled = self.allocations_made % 2 == 1;
        self.allocations_made += 1;
        let bytes = self.rng.log_range(1 << 20, 256 << 20) / 256 * 256;
        let address = self.next_address;
        self.next_address += (bytes + ALLOCATION_ALIGN - 1) / ALLOCATION_ALIGN * ALLOCATION_ALIGN;
        let names = self.device_names();
        let name_id = if pooled {
            names.malloc_async
        } else {
            names.malloc
        };
        let (start, end, correlation_id) = self.plain_call(thread, (20_000, 300_000), name_id)?;
        let at = start + (end - start) / 2;
        let (device_id, context_id) = (
            i64::from(self.contexts[context].device_id),
            self.contexts[context].context_id,
        );
        let pool = if pooled {
            let pool = &mut self.pools[context];
            let created = !pool.created;
            pool.created = true;
            pool.utilized += bytes;
            pool.size = pool
                .size
                .max((pool.utilized + POOL_GRANULE - 1) / POOL_GRANULE * POOL_GRANULE);
            let state = pool_state(context, *pool);
            if created {
                self.out.memory_pool(&MemoryPoolRow {
                    start: at - 1,
                    global_pid: self.global_pid,
                    device_id,
                    operation: 1,
                    correlation_id,
                    pool: PoolState {
                        size: 0,
                        utilized: 0,
                        ..state
                    },
                })?;
            }
            Some(state)
        } else {
            None
        };
        self.live_allocations.push_back(Allocation {
            context,
            address,
            bytes,
            pooled,
        });
        self.out.memory_usage(&MemoryUsageRow {
            start: at,
            global_pid: self.global_pid,
            device_id,
            context_id,
            address,
            bytes,
            operation: 0,
            correlation_id,
            pool,
        })
    }

    fn free(&mut self, thread: usize, allocation: Allocation) -> Result<()> {
        let names = self.device_names();
        let name_id = if allocation.pooled {
            names.free_async
        } else {
            names.free
        };
        let (start, end, correlation_id) = self.plain_call(thread, (10_000, 150_000), name_id)?;
        let context = allocation.context;
        let pool = allocation.pooled.then(|| {
            let pool = &mut self.pools[context];
            pool.utilized -= allocation.bytes;
            pool_state(context, *pool)
        });
        self.out.memory_usage(&MemoryUsageRow {
            start: start + (end - start) / 2,
            global_pid: self.global_pid,
            device_id: i64::from(self.contexts[context].device_id),
            context_id: self.contexts[context].context_id,
            address: allocation.address,
            bytes: allocation.bytes,
            operation: 1,
            correlation_id,
            pool,
        })
    }
}

/// The pool of context `context`, at its own address range.
fn pool_state(context: usize, pool: Pool) -> PoolState {
    PoolState {
        address: 0x7E00_0000_0000 + (context as i64) * (1 << 36),
        release_threshold: 0,
        size: pool.size,
        utilized: pool.utilized,
    }
}
