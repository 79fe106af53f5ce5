//! One streaming pass over a trace written by nsys2prv-rs (or BSC's nsys2prv): the
//! `.prv` is read record by record in time order by a walker ([`Scan`]), which
//! knows the trace's threads and GPUs, clips to the window, pairs each begin with
//! its end and tells what happened ([`Event`]) to one accumulator per figure
//! ([`Accumulator`]: GPU time, kernels, NCCL, memory, MPI, iterations). Memory
//! grows with the trace's objects (threads, GPUs, names), not with its length,
//! except for the iterations kept (bounded by `--memory-limit`).

mod bins;
mod gpu_time;
mod idle_causes;
mod iterations;
mod kernels;
mod late_arrivals;
mod launch_queues;
mod memory;
mod mpi;
mod names;
mod nccl;
mod nvtx;
mod pipeline;
mod stats;

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use paraver_reader::prv::{parse_header, Record, TimeUnit};
use paraver_reader::{RecordBuf, TraceFiles};

use crate::model::Gap;
use crate::types::*;
pub use bins::Bins;
pub use names::{nvtx_range_window, Body, Names};
pub use nccl::NcclStats;
pub use stats::NamedStatsAcc;

use gpu_time::GpuTime;
pub use gpu_time::GpuTimes;
pub use idle_causes::HostContext;
pub(crate) use idle_causes::IdleCauses;
use iterations::Iterations;
use kernels::Kernels;
use late_arrivals::LateArrivals;
pub(crate) use launch_queues::{nearest_rank, Latencies, LaunchQueues};
use memory::Memory;
use mpi::Mpi;
use nccl::Nccl;
use nvtx::NvtxRanges;
pub(crate) use pipeline::PipelineScan;
pub use pipeline::{Span, Transfers, WHOLE_RUN};

/// What the pass needs to know besides the trace.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    pub iterations: Option<String>,
    pub gap_threshold_ns: u64,
    pub bins: usize,
    /// Gaps kept per GPU.
    pub gaps_per_gpu: usize,
    pub memory_limit: u64,
    /// Only `[start, end]` ns of the trace (`--time-window`, `--nvtx-range`):
    /// intervals crossing its edges are clipped to it, the iterations are those
    /// wholly inside, and every time the scan keeps is from its start.
    pub window: Option<(u64, u64)>,
    /// `--pipeline-stages N`: the GPUs split into N stages in rank order.
    pub pipeline_stages: Option<usize>,
}

/// What a thread of the trace is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ThreadKind {
    Cpu,
    /// A GPU stream row of GPU `gpu`.
    Stream {
        gpu: usize,
    },
    /// A GPU metrics row, of GPU `gpu` when the task has that GPU's streams.
    Metrics {
        gpu: Option<usize>,
    },
}

/// An operation (compute kernel, NCCL kernel, memory operation) open on a stream
/// row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuOp {
    /// `CUDA_KERNEL`, `NCCL_KERNEL` or `MEMORY_OP`.
    pub ty: u32,
    pub value: i64,
    pub begin: u64,
    pub collective: i64,
    pub communicator: i64,
    /// `None` when the trace gives the operation no size.
    pub bytes: Option<u64>,
    /// The stream row it runs on.
    pub stream: usize,
}

/// A call or range open on a CPU thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenCall {
    pub ty: u32,
    pub value: i64,
    pub begin: u64,
    /// Whether it began inside the window.
    pub inside: bool,
}

/// A thread of the trace and what is open on it.
pub(crate) struct ThreadState {
    pub kind: ThreadKind,
    pub task: usize,
    pub name: String,
    /// Operations open on a stream row, by type (kernels, NCCL kernels, memory).
    ops: [Vec<GpuOp>; 3],
    /// Calls (CUDA, sync, OS runtime, MPI) and NVTX ranges open on a CPU thread.
    pub calls: Vec<OpenCall>,
    pub nvtx: Vec<OpenCall>,
}

/// A GPU: one device of one task, and how many stream rows it has.
pub(crate) struct GpuInfo {
    pub task: usize,
    pub device: u32,
    pub streams: usize,
}

/// The trace's threads and GPUs, and what is open on each thread: what every
/// accumulator may look at.
pub(crate) struct Trace {
    pub threads: Vec<ThreadState>,
    /// Global thread index of thread 1 of each task.
    pub task_first: Vec<usize>,
    pub gpus: Vec<GpuInfo>,
}

/// When a record happens: its time from the window's start, and where it lies
/// against the window.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct At {
    pub time: u64,
    /// Before the window.
    pub before_window: bool,
    /// At or before the window's start: an interval ending there has nothing
    /// inside the window.
    pub ends_outside: bool,
}

/// What the walker tells the accumulators, in trace order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event<'a> {
    /// A line of a stream row of `gpu` at `at.time`, before its operations begin
    /// or end (at the end of the trace: the end of time, for every GPU).
    GpuLine { gpu: usize },
    /// An operation began on a stream row of `gpu`.
    GpuBegin { gpu: usize, op: &'a GpuOp },
    /// An operation ended at `at.time`.
    GpuEnd { gpu: usize, op: &'a GpuOp },
    /// After every operation of the line of `gpu` began or ended.
    GpuLineDone { gpu: usize },
    /// A metric sample on the metrics row of `gpu`.
    Metric { gpu: usize, ty: u32, value: i64 },
    /// A call began on CPU thread `thread`; `line` is every pair of its line.
    CallBegin {
        call: &'a OpenCall,
        line: &'a [(u32, i64)],
    },
    /// A call ended at `at.time` (or is still open at the end of the window).
    CallEnd { call: &'a OpenCall },
    /// An NVTX range ended at `at.time`.
    RangeEnd { thread: usize, range: &'a OpenCall },
    /// A CPU thread launched work (a kernel, a memory operation) on `gpu`: a call
    /// that began at `at.time` asked for an operation on stream row `stream` that
    /// begins at `begins` (`None`: before the window).
    Launch {
        thread: usize,
        gpu: usize,
        stream: usize,
        begins: Option<u64>,
    },
    /// A `cudaStreamWaitEvent` on stream row `thread` (at the call's end).
    StreamWait { thread: usize },
    /// A host function began or ended on stream row `thread`.
    HostFunction { thread: usize, begins: bool },
    /// An NCCL point-to-point transfer (tag 55005) from a stream row of GPU `from`
    /// to one of GPU `to`, sent at `at.time`.
    Transfer { from: usize, to: usize, bytes: u64 },
    /// The NCCL collective kernel begun at `at.time` on stream row `thread` waited
    /// `wait_ns` for rank `rank` (a value of `NCCL_WAITED_FOR_RANK`).
    CollectiveWait {
        thread: usize,
        rank: i64,
        wait_ns: u64,
    },
    /// After every pair of a line of stream row `thread` was told (its
    /// operations begun or ended): the line's pairs.
    StreamLineDone {
        thread: usize,
        line: &'a [(u32, i64)],
    },
}

/// One figure of the report, accumulated as the walker goes.
pub(crate) trait Accumulator {
    fn on_event(&mut self, trace: &Trace, at: At, event: Event) -> Result<()>;
}

/// The walker and every figure it accumulates.
pub struct Scan {
    pub names: Names,
    /// The time scanned: the trace's, or the window's.
    pub elapsed: u64,
    /// Where the window starts in the trace (0 without one); the scan's times are
    /// from there.
    pub window_start: u64,
    /// The first time a GPU operation (kernel, NCCL kernel, memory operation) was
    /// running, from the window's start.
    pub first_activity: Option<u64>,
    pub task_count: usize,
    pub task_nodes: Vec<String>,
    pub bins: Bins,
    pub seen: Seen,
    options: ScanOptions,
    trace: Trace,
    message_size_type: Option<u32>,
    gpu_time: GpuTime,
    kernels: Kernels,
    nccl: Nccl,
    memory: Memory,
    mpi: Mpi,
    iterations: Iterations,
    nvtx: NvtxRanges,
    late_arrivals: LateArrivals,
    idle_causes: IdleCauses,
    /// Only for traces that may hold a pipeline ([`PipelineScan::wanted`]).
    pipeline: Option<PipelineScan>,
    launch_queues: LaunchQueues,
    record: RecordBuf,
    pairs: Vec<(u32, i64)>,
}

/// What the trace was found to have, for the notes.
#[derive(Default, Debug)]
pub struct Seen {
    pub nccl_kernels: u64,
    pub nccl_with_collective: u64,
    pub nccl_with_size: u64,
    pub memory_ops: u64,
    pub launches: u64,
    pub metric_samples: u64,
    /// The header was read as BSC nsys2prv writes it.
    pub bsc_header: bool,
}

/// BSC nsys2prv's header, `…:0:1:T:(t:1,…)` (a `:` before the task list, tasks on
/// node 1 without a resource model), as the format has it: `…:1(1):1:T(t:1,…)`.
fn bsc_header(line: &str) -> Option<String> {
    let (head, tasks) = line.rsplit_once(":(")?;
    let (head, count) = head.rsplit_once(':')?;
    let (head, appls) = head.rsplit_once(':')?;
    let head = head.strip_suffix(":0")?;
    Some(format!("{head}:1(1):{appls}:{count}({tasks}"))
}

/// The trace's threads, by task, with what each is (its `.row` name says).
fn lay_out(names: &Names, threads_per_task: &[usize]) -> Trace {
    let mut trace = Trace {
        threads: Vec::new(),
        task_first: Vec::new(),
        gpus: Vec::new(),
    };
    let mut gpu_of: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    let mut metrics: Vec<(usize, usize, u32)> = Vec::new();
    for (t, &count) in threads_per_task.iter().enumerate() {
        let task = t + 1;
        trace.task_first.push(trace.threads.len());
        for _ in 0..count {
            let name = names
                .threads
                .get(trace.threads.len())
                .cloned()
                .unwrap_or_default();
            let kind = if let Some(device) = stream_device(&name) {
                let gpus = &mut trace.gpus;
                let gpu = *gpu_of.entry((task, device)).or_insert_with(|| {
                    gpus.push(GpuInfo {
                        task,
                        device,
                        streams: 0,
                    });
                    gpus.len() - 1
                });
                trace.gpus[gpu].streams += 1;
                ThreadKind::Stream { gpu }
            } else if let Some(device) = metrics_device(&name) {
                metrics.push((trace.threads.len(), task, device));
                ThreadKind::Metrics { gpu: None }
            } else {
                ThreadKind::Cpu
            };
            trace.threads.push(ThreadState {
                kind,
                task,
                name,
                ops: Default::default(),
                calls: Vec::new(),
                nvtx: Vec::new(),
            });
        }
    }
    // A metrics row may come before or after its task's stream rows.
    for (thread, task, device) in metrics {
        let gpu = gpu_of.get(&(task, device)).copied();
        trace.threads[thread].kind = ThreadKind::Metrics { gpu };
    }
    trace
}

impl Trace {
    fn thread_index(&self, task: i128, thread: i128) -> Option<usize> {
        let task = usize::try_from(task).ok()?.checked_sub(1)?;
        let thread = usize::try_from(thread).ok()?.checked_sub(1)?;
        let first = *self.task_first.get(task)?;
        let end = self
            .task_first
            .get(task + 1)
            .copied()
            .unwrap_or(self.threads.len());
        (first + thread < end).then_some(first + thread)
    }
}

/// Which of a stream row's stacks holds operations of type `ty`.
fn op_slot(ty: u32) -> usize {
    match ty {
        CUDA_KERNEL => 0,
        NCCL_KERNEL => 1,
        _ => 2,
    }
}

impl Scan {
    /// Reads the names and the header, and lays out threads and GPUs.
    pub fn open(files: &TraceFiles, options: &ScanOptions) -> Result<(Scan, Body)> {
        let names = Names::read(files)?;
        let body = names::open_trace(files)?;
        let first = String::from_utf8_lossy(body.line()).trim_end().to_string();
        let lenient = bsc_header(&first);
        let header = parse_header(&first, &mut Vec::new())
            .ok()
            .or_else(|| parse_header(lenient.as_deref()?, &mut Vec::new()).ok())
            .filter(|h| h.unit == TimeUnit::Nanoseconds)
            .with_context(|| {
                format!(
                    "{}: not a Paraver trace in nanoseconds (header '{first}')",
                    files.prv.display()
                )
            })?;
        let decls = header.appls.first().cloned().unwrap_or_default();
        let task_nodes = decls
            .iter()
            .map(|d| {
                let node = usize::try_from(d.node).unwrap_or(0);
                node.checked_sub(1)
                    .and_then(|n| names.nodes.get(n).cloned())
                    .unwrap_or_default()
            })
            .collect();
        let (window_start, elapsed) = match options.window {
            None => (0, header.end),
            Some((start, end)) => {
                if start >= header.end {
                    bail!(crate::UsageError(format!(
                        "the window starts at {} s, at or after the end of the trace ({} s)",
                        crate::text::seconds(start),
                        crate::text::seconds(header.end)
                    )));
                }
                (start, end.min(header.end) - start)
            }
        };
        let bins = Bins::new(options.bins, elapsed);
        let bsc_header = lenient.is_some() && parse_header(&first, &mut Vec::new()).is_err();
        let counts: Vec<usize> = decls.iter().map(|d| d.threads as usize).collect();
        let trace = lay_out(&names, &counts);
        let iterations = Iterations::new(&names, options)?;
        let scan = Scan {
            elapsed,
            window_start,
            first_activity: None,
            task_count: decls.len(),
            task_nodes,
            gpu_time: GpuTime::new(&trace, &bins, options),
            kernels: Kernels::new(trace.gpus.len()),
            nccl: Nccl::default(),
            memory: Memory::default(),
            mpi: Mpi::default(),
            iterations,
            nvtx: NvtxRanges::default(),
            late_arrivals: LateArrivals::new(options.memory_limit),
            idle_causes: IdleCauses::new(&trace, options.memory_limit),
            pipeline: PipelineScan::wanted(&names, options)
                .then(|| PipelineScan::new(&trace, &names, options)),
            launch_queues: LaunchQueues::new(options.memory_limit),
            bins,
            options: options.clone(),
            trace,
            message_size_type: find_message_size_type(&names),
            seen: Seen {
                bsc_header,
                ..Seen::default()
            },
            record: RecordBuf::new(),
            pairs: Vec::with_capacity(32),
            names,
        };
        Ok((scan, body))
    }

    /// Tells the accumulators that take it what happened (each figure hears only
    /// the events it reads, so a record costs only the figures it concerns).
    fn tell(&mut self, at: At, event: Event) -> Result<()> {
        let trace = &self.trace;
        if let Some(pipeline) = &mut self.pipeline {
            if matches!(
                event,
                Event::GpuLine { .. }
                    | Event::GpuBegin { .. }
                    | Event::GpuEnd { .. }
                    | Event::Launch { .. }
                    | Event::Transfer { .. }
            ) {
                pipeline.on_event(trace, at, event)?;
            }
        }
        match event {
            Event::GpuLine { .. } | Event::GpuLineDone { .. } | Event::Launch { .. } => {
                self.idle_causes.on_event(trace, at, event)?;
                self.gpu_time.on_event(trace, at, event)
            }
            Event::StreamWait { .. } | Event::HostFunction { .. } => {
                self.idle_causes.on_event(trace, at, event)
            }
            Event::GpuBegin { op, .. } | Event::GpuEnd { op, .. } => {
                self.idle_causes.on_event(trace, at, event)?;
                self.gpu_time.on_event(trace, at, event)?;
                match op.ty {
                    CUDA_KERNEL => self.kernels.on_event(trace, at, event),
                    NCCL_KERNEL => self.nccl.on_event(trace, at, event),
                    _ => self.memory.on_event(trace, at, event),
                }
            }
            Event::Metric { .. } => self.kernels.on_event(trace, at, event),
            Event::CallBegin { .. } | Event::CallEnd { .. } => self.mpi.on_event(trace, at, event),
            Event::RangeEnd { .. } => {
                self.nvtx.on_event(trace, at, event)?;
                self.iterations.on_event(trace, at, event)
            }
            Event::CollectiveWait { .. } => self.late_arrivals.on_event(trace, at, event),
            Event::Transfer { .. } => Ok(()),
            Event::StreamLineDone { .. } => self.launch_queues.on_event(trace, at, event),
        }
    }

    /// Reads the body to its end.
    pub fn run(&mut self, body: &mut Body, files: &TraceFiles) -> Result<()> {
        let prv = files.prv.display().to_string();
        let mut last_time: i128 = i128::MIN;
        let mut buf = std::mem::take(&mut self.record);
        let start = i128::from(self.window_start);
        while names::next_record(body, &mut buf, &prv, b'1'..=b'3')? {
            let lineno = buf.line();
            let record = buf.record();
            let time = match record {
                Record::State { begin, .. } => begin,
                Record::Event { time, .. } => time,
                Record::Comm(c) => c.logical_send,
            };
            if time < last_time {
                bail!("{prv}:{lineno}: {}", self.unsorted_message(time, last_time));
            }
            last_time = time;
            // Past the window: the rest is too (intervals still open are closed
            // at its end by `finish`).
            if time > start + i128::from(self.elapsed) {
                break;
            }
            let at = At {
                time: (time.max(start) - start).clamp(0, i128::from(u64::MAX)) as u64,
                before_window: time < start,
                ends_outside: self.options.window.is_some() && time <= start,
            };
            match record {
                Record::Event { object, pairs, .. } => {
                    let index = self
                        .trace
                        .thread_index(object.task, object.thread)
                        .with_context(|| {
                            format!(
                                "{prv}:{lineno}: record of an object the header does not declare"
                            )
                        })?;
                    self.pairs.clear();
                    self.pairs
                        .extend(pairs.chunks_exact(2).map(|p| (p[0] as u32, p[1] as i64)));
                    self.event(index, at)
                        .with_context(|| format!("{prv}:{lineno}"))?;
                }
                Record::Comm(c) if c.tag == LAUNCH_TAG || c.tag == COPY_TAG => {
                    let sender = self.trace.thread_index(c.sender.task, c.sender.thread);
                    let receiver = self.trace.thread_index(c.receiver.task, c.receiver.thread);
                    if let (Some(sender), Some(receiver)) = (sender, receiver) {
                        let begins = (c.logical_receive >= start).then(|| {
                            (c.logical_receive - start).clamp(0, i128::from(u64::MAX)) as u64
                        });
                        self.launch(sender, receiver, begins, at)?;
                    }
                }
                Record::Comm(c) if c.tag == NCCL_P2P_TAG && self.pipeline.is_some() => {
                    let gpu_of = |task, thread| match self.trace.thread_index(task, thread) {
                        Some(i) => match self.trace.threads[i].kind {
                            ThreadKind::Stream { gpu } => Some(gpu),
                            _ => None,
                        },
                        None => None,
                    };
                    let from = gpu_of(c.sender.task, c.sender.thread);
                    let to = gpu_of(c.receiver.task, c.receiver.thread);
                    if let (Some(from), Some(to)) = (from, to) {
                        let bytes = u64::try_from(c.size).unwrap_or(0);
                        self.tell(at, Event::Transfer { from, to, bytes })?;
                    }
                }
                _ => {}
            }
        }
        self.record = buf;
        Ok(())
    }

    fn unsorted_message(&self, time: i128, last: i128) -> String {
        let mut text = format!(
            "records are not in time order (a record at {time} ns after one at {last} ns); report reads the trace once, in order"
        );
        if !self.names.has_task_level {
            text.push_str(
                ". This looks like a trace of BSC's nsys2prv, which writes records grouped by category \
                 unless run with -s: sort it with Paraver's sort-trace.awk.sh, or convert the reports with nsys2prv-rs",
            );
        } else {
            text.push_str(": sort it with Paraver's sort-trace.awk.sh");
        }
        text
    }

    fn launch(
        &mut self,
        sender: usize,
        receiver: usize,
        begins: Option<u64>,
        at: At,
    ) -> Result<()> {
        if let ThreadKind::Stream { gpu } = self.trace.threads[receiver].kind {
            if self.trace.threads[sender].kind == ThreadKind::Cpu {
                self.seen.launches += 1;
                return self.tell(
                    at,
                    Event::Launch {
                        thread: sender,
                        gpu,
                        stream: receiver,
                        begins,
                    },
                );
            }
        }
        Ok(())
    }

    fn event(&mut self, index: usize, at: At) -> Result<()> {
        let pairs = std::mem::take(&mut self.pairs);
        let told = match self.trace.threads[index].kind {
            ThreadKind::Stream { gpu } => self.stream_line(index, gpu, at, &pairs),
            ThreadKind::Metrics { gpu } => self.metrics_line(gpu, at, &pairs),
            ThreadKind::Cpu => self.cpu_line(index, at, &pairs),
        };
        self.pairs = pairs;
        told
    }

    fn stream_line(
        &mut self,
        index: usize,
        gpu: usize,
        at: At,
        pairs: &[(u32, i64)],
    ) -> Result<()> {
        self.tell(at, Event::GpuLine { gpu })?;
        let on_line = |ty: u32| pairs.iter().find(|p| p.0 == ty).map(|p| p.1);
        for &(ty, value) in pairs {
            match (ty, value) {
                (CUDA_EVENT_OP, CUDA_EVENT_STREAM_WAIT) => {
                    self.tell(at, Event::StreamWait { thread: index })?;
                }
                (CUDA_HOST_FUNCTION, _) => {
                    let begins = value != 0;
                    self.tell(
                        at,
                        Event::HostFunction {
                            thread: index,
                            begins,
                        },
                    )?;
                }
                _ => {}
            }
            if !matches!(ty, CUDA_KERNEL | NCCL_KERNEL | MEMORY_OP) {
                continue;
            }
            if value != 0 {
                let op = GpuOp {
                    ty,
                    value,
                    begin: at.time,
                    collective: on_line(NCCL_COLLECTIVE).unwrap_or(0),
                    communicator: on_line(NCCL_COMMUNICATOR).unwrap_or(0),
                    bytes: match ty {
                        NCCL_KERNEL => self.message_size_type.and_then(on_line),
                        MEMORY_OP => on_line(MEMORY_SIZE),
                        _ => None,
                    }
                    .map(|b| b.max(0) as u64),
                    stream: index,
                };
                self.trace.threads[index].ops[op_slot(ty)].push(op);
                self.tell(at, Event::GpuBegin { gpu, op: &op })?;
            } else {
                self.end_op(index, gpu, ty, at)?;
            }
        }
        if let (Some(rank), Some(wait)) = (on_line(NCCL_WAITED_FOR_RANK), on_line(NCCL_WAIT_TIME)) {
            if rank != 0 && wait > 0 {
                let wait_ns = wait as u64;
                self.tell(
                    at,
                    Event::CollectiveWait {
                        thread: index,
                        rank,
                        wait_ns,
                    },
                )?;
            }
        }
        self.tell(at, Event::GpuLineDone { gpu })?;
        self.tell(
            at,
            Event::StreamLineDone {
                thread: index,
                line: pairs,
            },
        )
    }

    /// Ends the latest operation of type `ty` open on stream row `index`.
    fn end_op(&mut self, index: usize, gpu: usize, ty: u32, at: At) -> Result<()> {
        let Some(op) = self.trace.threads[index].ops[op_slot(ty)].pop() else {
            return Ok(());
        };
        self.tell(at, Event::GpuEnd { gpu, op: &op })
    }

    fn metrics_line(&mut self, gpu: Option<usize>, at: At, pairs: &[(u32, i64)]) -> Result<()> {
        let Some(gpu) = gpu.filter(|_| !at.before_window) else {
            return Ok(());
        };
        for &(ty, value) in pairs {
            if is_metric_type(ty) {
                self.seen.metric_samples += 1;
                self.tell(at, Event::Metric { gpu, ty, value })?;
            }
        }
        Ok(())
    }

    fn cpu_line(&mut self, index: usize, at: At, pairs: &[(u32, i64)]) -> Result<()> {
        for &(ty, value) in pairs {
            let call_type = is_call_type(ty);
            if !call_type && !is_nvtx_type(ty) {
                continue;
            }
            let thread = &mut self.trace.threads[index];
            let stack = if call_type {
                &mut thread.calls
            } else {
                &mut thread.nvtx
            };
            if value != 0 {
                let call = OpenCall {
                    ty,
                    value,
                    begin: at.time,
                    inside: !at.before_window,
                };
                stack.push(call);
                if call_type {
                    let event = Event::CallBegin {
                        call: &call,
                        line: pairs,
                    };
                    self.tell(at, event)?;
                }
            } else if let Some(i) = stack.iter().rposition(|c| c.ty == ty) {
                let call = stack.remove(i);
                let event = if call_type {
                    Event::CallEnd { call: &call }
                } else {
                    Event::RangeEnd {
                        thread: index,
                        range: &call,
                    }
                };
                self.tell(at, event)?;
            }
        }
        Ok(())
    }

    /// Closes the clocks at the end of the trace (or window); with a window, the
    /// GPU operations and calls still open there end at its end.
    pub fn finish(&mut self) -> Result<()> {
        let end = At {
            time: self.elapsed,
            before_window: false,
            ends_outside: false,
        };
        for gpu in 0..self.trace.gpus.len() {
            self.tell(end, Event::GpuLine { gpu })?;
        }
        if self.options.window.is_some() {
            for index in 0..self.trace.threads.len() {
                if let ThreadKind::Stream { gpu } = self.trace.threads[index].kind {
                    for ty in [CUDA_KERNEL, NCCL_KERNEL, MEMORY_OP] {
                        while !self.trace.threads[index].ops[op_slot(ty)].is_empty() {
                            self.end_op(index, gpu, ty, end)?;
                        }
                    }
                }
                for call in std::mem::take(&mut self.trace.threads[index].calls) {
                    let event = Event::CallEnd { call: &call };
                    self.tell(end, event)?;
                }
            }
        }
        self.launch_queues.finish(self.elapsed);
        self.first_activity = self.gpu_time.first_activity;
        self.seen.nccl_kernels = self.nccl.kernels;
        self.seen.nccl_with_collective = self.nccl.with_collective;
        self.seen.nccl_with_size = self.nccl.with_size;
        self.seen.memory_ops = self.memory.operations;
        Ok(())
    }

    // --- what the report builder reads --------------------------------------------

    pub fn iterations_asked(&self) -> Option<&str> {
        self.options.iterations.as_deref()
    }

    pub fn gpu_count(&self) -> usize {
        self.trace.gpus.len()
    }

    pub fn gpu_times(&self, gpu: usize) -> GpuTimes<'_> {
        self.gpu_time.times(&self.trace, gpu)
    }

    /// The gaps kept for a GPU, longest first, with their context in words.
    pub fn gaps(&self, gpu: usize) -> Vec<Gap> {
        self.gpu_time
            .gaps(gpu)
            .iter()
            .map(|(duration, start)| Gap {
                gpu,
                begin_ns: start.time + self.window_start,
                duration_ns: *duration,
                thread: self.thread_label(start.thread),
                call: start.call.map(|(ty, v)| {
                    format!("{}: {}", call_kind(ty), self.names.value(ty, v, "call"))
                }),
                nvtx: start.nvtx.map(|(ty, v)| self.names.value(ty, v, "range")),
            })
            .collect()
    }

    fn thread_label(&self, thread: usize) -> String {
        let state = &self.trace.threads[thread];
        format!("{} / {}", self.names.task(state.task), state.name)
    }

    pub fn kernel_stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.kernels.stats()
    }

    /// Per kernel value and metric type: the mean of the samples.
    pub fn kernel_metric_means(&self) -> impl Iterator<Item = (i64, u32, f64)> + '_ {
        self.kernels.metric_means()
    }

    pub fn nvtx_stats(&self) -> impl Iterator<Item = ((u32, i64), &NamedStatsAcc)> {
        self.nvtx.stats()
    }

    /// Per GPU metric type: the mean of the samples taken while a compute kernel
    /// ran on the sample's GPU.
    pub fn useful_metric_means(&self) -> impl Iterator<Item = (u32, f64, u64)> + '_ {
        self.kernels.useful_metric_means()
    }

    pub fn memory_stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.memory.stats()
    }

    pub fn mpi_stats(&self) -> impl Iterator<Item = ((u32, i64), &NamedStatsAcc)> {
        self.mpi.stats()
    }

    /// Per NCCL collective (or kernel name without one): its name, statistics, GPUs
    /// that ran it, and bytes per communicator with that communicator's GPU count.
    /// The waits at NCCL collectives: per late rank, per (collective, late rank),
    /// one by one (and how many were left out of those), with the names of the values.
    pub(crate) fn late_arrivals(&self) -> &LateArrivals {
        &self.late_arrivals
    }

    /// Why each GPU was idle: its idle time by cause, and the pieces one by one.
    pub(crate) fn idle_causes(&self) -> &IdleCauses {
        &self.idle_causes
    }

    /// The spans and transfers of the pipeline figure, for traces that may hold a
    /// pipeline.
    pub(crate) fn pipeline(&self) -> Option<&PipelineScan> {
        self.pipeline.as_ref()
    }

    /// The launch queues of the stream rows and the launch latencies of their kernels.
    pub(crate) fn launch_queues(&self) -> &LaunchQueues {
        &self.launch_queues
    }

    /// The `.row` name of thread `thread` with its task's.
    pub(crate) fn stream_label(&self, thread: usize) -> String {
        self.thread_label(thread)
    }

    pub fn nccl_stats(&self) -> Vec<NcclStats> {
        self.nccl.stats(&self.names)
    }

    /// The metric's name from the `.pcf` label (`GPU metric NAME[ xSCALE]`) and the
    /// scale its values were multiplied by.
    pub fn metric_name(&self, ty: u32) -> (String, f64) {
        let label = self
            .names
            .type_label(ty)
            .map(str::to_string)
            .unwrap_or_else(|| format!("metric {ty}"));
        let label = label.strip_prefix("GPU metric ").unwrap_or(&label);
        let scaled = label.rsplit_once(" x").and_then(|(name, scale)| {
            let scale: u32 = scale.parse().ok()?;
            (scale > 0).then_some((name.to_string(), f64::from(scale)))
        });
        scaled.unwrap_or_else(|| (label.to_string(), 1.0))
    }

    /// The occurrences of the candidate ranges, with the candidates' names.
    pub fn take_occurrences(&mut self) -> (Vec<String>, Vec<iterations::RangeOccurrence>) {
        self.iterations.take()
    }
}

/// Our NCCL message size type, or BSC's payload column labelled so.
fn find_message_size_type(names: &Names) -> Option<u32> {
    if names
        .type_label(NCCL_MESSAGE_SIZE)
        .is_some_and(is_size_label)
    {
        return Some(NCCL_MESSAGE_SIZE);
    }
    (9501..9520).find(|ty| names.type_label(*ty).is_some_and(is_size_label))
}

#[cfg(test)]
mod tests;
