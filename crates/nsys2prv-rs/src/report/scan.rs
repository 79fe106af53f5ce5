//! One streaming pass over a trace written by nsys2prv-rs (or BSC's nsys2prv): the
//! `.prv` is read line by line in time order, and every figure of the report is
//! accumulated on the way. Memory grows with the trace's objects (threads, GPUs,
//! names), not with its length, except for the iterations kept (bounded by
//! `--memory-limit`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{bail, Context, Result};
use paraver_reader::pcf::{read_pcf, Pcf};
use paraver_reader::prv::{
    open_body, parse_header, parse_record, trim_trailing_blanks, Lines, Record, TimeUnit,
};
use paraver_reader::row::read_row;
use paraver_reader::TraceFiles;

use super::model::Gap;
use super::types::*;

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
}

/// The trace's tables of names: `.row` levels and `.pcf` labels.
pub struct Names {
    pub tasks: Vec<String>,
    pub threads: Vec<String>,
    pub nodes: Vec<String>,
    /// Whether the `.row` has a TASK level (BSC's nsys2prv writes none).
    pub has_task_level: bool,
    pub pcf: Pcf,
}

impl Names {
    pub fn read(files: &TraceFiles) -> Result<Names> {
        let row = std::fs::File::open(&files.row)
            .and_then(|f| read_row(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .row", files.row.display()))?;
        let pcf = std::fs::File::open(&files.pcf)
            .and_then(|f| read_pcf(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .pcf", files.pcf.display()))?;
        Ok(Names {
            tasks: row.labels("TASK").to_vec(),
            threads: row.labels("THREAD").to_vec(),
            nodes: row.labels("NODE").to_vec(),
            has_task_level: row.level("TASK").is_some(),
            pcf,
        })
    }

    /// The `.pcf` label of a value, else `what value`.
    pub fn value(&self, ty: u32, value: i64, what: &str) -> String {
        self.pcf
            .value_label(ty, value)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{what} {value}"))
    }

    pub fn type_label(&self, ty: u32) -> Option<&str> {
        self.pcf.types.get(&ty).map(|t| t.label.as_str())
    }

    pub fn task(&self, task: usize) -> String {
        self.tasks
            .get(task - 1)
            .cloned()
            .unwrap_or_else(|| format!("task {task}"))
    }

    /// `the trace has 'a', 'b' and 3 more` (its NVTX ranges), for errors.
    pub fn range_list(&self) -> String {
        let ranges = self.nvtx_ranges();
        if ranges.is_empty() {
            return "the trace has no NVTX ranges".to_string();
        }
        let shown: Vec<String> = ranges.iter().take(30).map(|r| format!("'{r}'")).collect();
        let more = match ranges.len().saturating_sub(30) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("the trace has {}{more}", shown.join(", "))
    }

    /// The NVTX range names the trace has (bare, sorted, unique).
    pub fn nvtx_ranges(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for (ty, t) in &self.pcf.types {
            if !is_nvtx_type(*ty) {
                continue;
            }
            for (v, label) in t.values.iter().flatten() {
                if *v != 0 {
                    names.insert(bare(label).to_string());
                }
            }
        }
        names.into_iter().collect()
    }
}

/// The span of `--nvtx-range NAME[#N]` in a trace, found by a first pass over
/// its NVTX events (as the conversion's cut: from the first begin of a range of
/// that name to the last end, or with `#N` from the earliest to the latest of
/// every thread's N-th): (start, end, ranges, tasks).
pub fn nvtx_range_window(
    files: &TraceFiles,
    names: &Names,
    spec: &nsys_semantics::cuts::NvtxRangeSpec,
) -> Result<(u64, u64, usize, usize)> {
    let targets: BTreeSet<(u32, i64)> = names
        .pcf
        .types
        .iter()
        .filter(|(ty, _)| is_nvtx_type(**ty))
        .flat_map(|(ty, t)| {
            t.values
                .iter()
                .flatten()
                .filter(|(v, label)| **v != 0 && label_is(label, &spec.name))
                .map(move |(v, _)| (*ty, *v))
        })
        .collect();
    if targets.is_empty() {
        return Err(crate::cli::UsageError(format!(
            "--nvtx-range {spec}: no NVTX range of that name; {}",
            names.range_list()
        ))
        .into());
    }
    let prv = files.prv.display().to_string();
    let mut body = Lines::new(
        open_body(&files.prv, files.gzip)
            .with_context(|| format!("{prv}: cannot read the trace"))?,
    );
    body.advance()?;
    let mut open: HashMap<(i128, i128, u32), Vec<Option<u64>>> = HashMap::new();
    // (task, thread) → (begin, end) of each range found, in order of end.
    let mut found: BTreeMap<(i128, i128), Vec<(u64, u64)>> = BTreeMap::new();
    let mut fields = Vec::new();
    while body
        .advance()
        .with_context(|| format!("{prv}: cannot read the trace"))?
    {
        let line = trim_trailing_blanks(body.line());
        if line.first() != Some(&b'2') {
            continue;
        }
        let lineno = body.number();
        let Ok(Record::Event {
            object,
            time,
            pairs,
        }) = parse_record(line, &mut fields)
        else {
            bail!("{prv}:{lineno}: malformed record");
        };
        let time = time.clamp(0, i128::from(u64::MAX)) as u64;
        for pair in pairs.chunks_exact(2) {
            let (ty, value) = (pair[0] as u32, pair[1] as i64);
            if !is_nvtx_type(ty) {
                continue;
            }
            let stack = open.entry((object.task, object.thread, ty)).or_default();
            if value != 0 {
                stack.push(targets.contains(&(ty, value)).then_some(time));
            } else if let Some(Some(begin)) = stack.pop() {
                found
                    .entry((object.task, object.thread))
                    .or_default()
                    .push((begin, time));
            }
        }
    }
    let chosen: Vec<((i128, i128), (u64, u64))> = match spec.occurrence {
        None => found
            .iter()
            .flat_map(|(k, v)| v.iter().map(move |r| (*k, *r)))
            .collect(),
        Some(n) => {
            let most = found.values().map(Vec::len).max().unwrap_or(0);
            let chosen: Vec<_> = found
                .iter_mut()
                .filter_map(|(k, ranges)| {
                    ranges.sort();
                    ranges.get(n - 1).map(|r| (*k, *r))
                })
                .collect();
            if chosen.is_empty() {
                bail!(crate::cli::UsageError(format!(
                    "--nvtx-range {spec}: no thread has {n} ranges of that name (at most {most} on one thread)"
                )));
            }
            chosen
        }
    };
    let Some(start) = chosen.iter().map(|(_, r)| r.0).min() else {
        bail!(crate::cli::UsageError(format!(
            "--nvtx-range {spec}: no range of that name ends in the trace"
        )));
    };
    let end = chosen.iter().map(|(_, r)| r.1).max().unwrap_or(start);
    let tasks: BTreeSet<i128> = chosen.iter().map(|((task, _), _)| *task).collect();
    Ok((start, end.max(start + 1), chosen.len(), tasks.len()))
}

/// What a thread of the trace is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ThreadKind {
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

/// An interval open on a stream row.
#[derive(Clone, Copy)]
struct OpenKernel {
    value: i64,
    begin: u64,
    collective: i64,
    communicator: i64,
    /// `None` when the trace gives the operation no size.
    bytes: Option<u64>,
}

/// A call or range open on a CPU thread: (type, value, begin, whether it began
/// inside the window).
type OpenCall = (u32, i64, u64, bool);

struct ThreadState {
    kind: ThreadKind,
    task: usize,
    name: String,
    kernels: Vec<OpenKernel>,
    nccl: Vec<OpenKernel>,
    memory: Vec<OpenKernel>,
    calls: Vec<OpenCall>,
    nvtx: Vec<OpenCall>,
}

/// Where an idle gap began: when, and what the launching thread was doing.
#[derive(Clone, Copy)]
struct GapStart {
    time: u64,
    thread: usize,
    call: Option<(u32, i64)>,
    nvtx: Option<(u32, i64)>,
}

/// The running state of one GPU: how many compute kernels, NCCL kernels and memory
/// operations are running on its streams, and the time they covered so far.
struct GpuClock {
    task: usize,
    device: u32,
    streams: usize,
    compute: u32,
    nccl: u32,
    memory: u32,
    last: u64,
    useful: u64,
    communication: u64,
    overlap: Vec<u64>,
    bins_compute: Vec<u64>,
    bins_communication: Vec<u64>,
    /// Values of the compute kernels running (for metric samples).
    running: Vec<i64>,
    /// The CPU thread that launched the latest work on it.
    launcher: Option<usize>,
    active_seen: bool,
    idle_since: Option<GapStart>,
    gaps: Vec<(u64, GapStart)>,
    /// Gaps at or above the threshold: how many, and their time.
    gap_count: u64,
    gap_total: u64,
}

impl GpuClock {
    fn active(&self) -> bool {
        self.compute + self.nccl + self.memory > 0
    }

    /// Attributes the time since the last event to the state it was in.
    fn advance(&mut self, time: u64, bins: &Bins) {
        if time <= self.last {
            return;
        }
        let (from, span) = (self.last, time - self.last);
        if self.compute > 0 {
            self.useful += span;
            bins.add(&mut self.bins_compute, from, time);
        } else if self.nccl + self.memory > 0 {
            self.communication += span;
        }
        if self.nccl + self.memory > 0 {
            bins.add(&mut self.bins_communication, from, time);
        }
        if self.nccl > 0 {
            let k = self.compute as usize;
            if self.overlap.len() <= k {
                self.overlap.resize(k + 1, 0);
            }
            self.overlap[k] += span;
        }
        self.last = time;
    }

    /// Keeps a gap if it is among the `keep` longest.
    fn gap(&mut self, duration: u64, start: GapStart, keep: usize) {
        self.gap_count += 1;
        self.gap_total += duration;
        let at = self.gaps.partition_point(|(d, _)| *d >= duration);
        if at < keep {
            self.gaps.insert(at, (duration, start));
            self.gaps.truncate(keep);
        }
    }
}

/// Equal bins over `[0, end)`.
pub struct Bins {
    count: usize,
    end: u64,
}

impl Bins {
    pub fn new(count: usize, end: u64) -> Bins {
        Bins {
            count: count.max(1),
            end: end.max(1),
        }
    }

    /// Start of bin `i` (bin `count` is the end).
    pub fn edge(&self, i: usize) -> u64 {
        (u128::from(self.end) * i as u128 / self.count as u128) as u64
    }

    /// The bin `i` with `edge(i) <= time < edge(i + 1)` (the last for times past the end).
    fn index(&self, time: u64) -> usize {
        let mut i = ((u128::from(time) * self.count as u128 / u128::from(self.end)) as usize)
            .min(self.count - 1);
        while i + 1 < self.count && self.edge(i + 1) <= time {
            i += 1;
        }
        while i > 0 && self.edge(i) > time {
            i -= 1;
        }
        i
    }

    /// Adds `[from, to)` (clipped to the bins) to `bins`, split at the edges.
    fn add(&self, bins: &mut [u64], from: u64, to: u64) {
        let to = to.min(self.end);
        let mut at = from;
        while at < to {
            let i = self.index(at);
            let stop = self.edge(i + 1).min(to);
            bins[i] += stop - at;
            at = stop.max(at + 1);
        }
    }
}

/// Statistics of one name with NCCL detail: bytes per communicator.
#[derive(Default)]
struct NcclAccumulator {
    stats: NamedStatsAcc,
    /// communicator value (0: none) → (bytes, GPUs)
    bytes_by_communicator: BTreeMap<i64, u64>,
    gpus: BTreeSet<usize>,
}

/// count, total, min, max, bytes (and how many occurrences gave a size: none,
/// and the bytes are unknown, not 0)
#[derive(Default, Clone, Copy)]
pub struct NamedStatsAcc {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
    pub bytes: u64,
    pub sized: u64,
}

impl NamedStatsAcc {
    fn add(&mut self, duration: u64, bytes: Option<u64>) {
        if self.count == 0 || duration < self.min {
            self.min = duration;
        }
        self.max = self.max.max(duration);
        self.count += 1;
        self.total += duration;
        self.add_bytes(bytes);
    }

    fn add_bytes(&mut self, bytes: Option<u64>) {
        if let Some(bytes) = bytes {
            self.bytes += bytes;
            self.sized += 1;
        }
    }
}

/// An occurrence of a candidate iteration range: (candidate, task, begin, end).
type RangeOccurrence = (u32, u32, u64, u64);

/// Everything the pass accumulates.
pub struct Scan {
    pub names: Names,
    /// The time scanned: the trace's, or the window's.
    pub elapsed: u64,
    /// Where the window starts in the trace (0 without one); the scan's times are
    /// from there.
    pub window_start: u64,
    /// Whether the record being read lies before the window.
    before_window: bool,
    /// Whether it lies at or before the window's start: an interval ending there
    /// has nothing inside the window.
    ends_outside: bool,
    /// The first time a GPU operation (kernel, NCCL kernel, memory operation) was
    /// running, from the window's start.
    pub first_activity: Option<u64>,
    pub task_count: usize,
    pub task_nodes: Vec<String>,
    pub bins: Bins,
    options: ScanOptions,
    threads: Vec<ThreadState>,
    /// Global thread index of thread 1 of each task.
    task_first: Vec<usize>,
    clocks: Vec<GpuClock>,
    kernels: HashMap<i64, NamedStatsAcc>,
    /// (kernel value, metric type) → (sum, samples)
    kernel_metrics: HashMap<(i64, u32), (f64, u64)>,
    nccl: HashMap<(bool, i64), NcclAccumulator>,
    /// communicator value → GPUs that ran NCCL kernels on it
    communicators: HashMap<i64, BTreeSet<usize>>,
    mpi: HashMap<(u32, i64), NamedStatsAcc>,
    memory: HashMap<i64, NamedStatsAcc>,
    candidates: HashMap<(u32, i64), u32>,
    candidate_names: Vec<String>,
    occurrences: Vec<RangeOccurrence>,
    max_occurrences: usize,
    message_size_type: Option<u32>,
    pub seen: Seen,
    fields: Vec<i128>,
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

impl Scan {
    /// Reads the names and the header, and lays out threads and GPUs.
    pub fn open(
        files: &TraceFiles,
        options: &ScanOptions,
    ) -> Result<(Scan, Lines<Box<dyn std::io::BufRead>>)> {
        let names = Names::read(files)?;
        let cannot_read = || format!("{}: cannot read the trace", files.prv.display());
        let mut body = Lines::new(open_body(&files.prv, files.gzip).with_context(cannot_read)?);
        body.advance().with_context(cannot_read)?;
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
                    bail!(crate::cli::UsageError(format!(
                        "the window starts at {} s, at or after the end of the trace ({} s)",
                        super::text::seconds(start),
                        super::text::seconds(header.end)
                    )));
                }
                (start, end.min(header.end) - start)
            }
        };
        let bins = Bins::new(options.bins, elapsed);
        let bsc_header = lenient.is_some() && parse_header(&first, &mut Vec::new()).is_err();
        let mut scan = Scan {
            elapsed,
            window_start,
            before_window: false,
            ends_outside: false,
            first_activity: None,
            task_count: decls.len(),
            task_nodes,
            bins,
            options: options.clone(),
            threads: Vec::new(),
            task_first: Vec::new(),
            clocks: Vec::new(),
            kernels: HashMap::new(),
            kernel_metrics: HashMap::new(),
            nccl: HashMap::new(),
            communicators: HashMap::new(),
            mpi: HashMap::new(),
            memory: HashMap::new(),
            candidates: HashMap::new(),
            candidate_names: Vec::new(),
            occurrences: Vec::new(),
            max_occurrences: (options.memory_limit
                / 4
                / std::mem::size_of::<RangeOccurrence>() as u64)
                as usize,
            message_size_type: None,
            seen: Seen {
                bsc_header,
                ..Seen::default()
            },
            fields: Vec::with_capacity(64),
            pairs: Vec::with_capacity(32),
            names,
        };
        let counts: Vec<usize> = decls.iter().map(|d| d.threads as usize).collect();
        scan.lay_out(&counts);
        scan.choose_candidates()?;
        scan.message_size_type = scan.find_message_size_type();
        Ok((scan, body))
    }

    fn lay_out(&mut self, threads_per_task: &[usize]) {
        let mut gpu_of: BTreeMap<(usize, u32), usize> = BTreeMap::new();
        let mut metrics: Vec<(usize, usize, u32)> = Vec::new();
        for (t, &count) in threads_per_task.iter().enumerate() {
            let task = t + 1;
            self.task_first.push(self.threads.len());
            for _ in 0..count {
                let name = self
                    .names
                    .threads
                    .get(self.threads.len())
                    .cloned()
                    .unwrap_or_default();
                let kind = if let Some(device) = stream_device(&name) {
                    let clocks = &mut self.clocks;
                    let bins = self.bins.count;
                    let gpu = *gpu_of.entry((task, device)).or_insert_with(|| {
                        clocks.push(GpuClock::new(task, device, bins));
                        clocks.len() - 1
                    });
                    self.clocks[gpu].streams += 1;
                    ThreadKind::Stream { gpu }
                } else if let Some(device) = metrics_device(&name) {
                    metrics.push((self.threads.len(), task, device));
                    ThreadKind::Metrics { gpu: None }
                } else {
                    ThreadKind::Cpu
                };
                self.threads.push(ThreadState {
                    kind,
                    task,
                    name,
                    kernels: Vec::new(),
                    nccl: Vec::new(),
                    memory: Vec::new(),
                    calls: Vec::new(),
                    nvtx: Vec::new(),
                });
            }
        }
        // A metrics row may come before or after its task's stream rows.
        for (thread, task, device) in metrics {
            let gpu = gpu_of.get(&(task, device)).copied();
            self.threads[thread].kind = ThreadKind::Metrics { gpu };
        }
    }

    /// The NVTX ranges whose occurrences may be iterations: the one asked for (an
    /// error listing the trace's ranges when it has none of that name), else those
    /// named like iterations.
    fn choose_candidates(&mut self) -> Result<()> {
        let asked = self.options.iterations.clone();
        let mut index: BTreeMap<String, u32> = BTreeMap::new();
        for (ty, t) in &self.names.pcf.types {
            if !is_nvtx_type(*ty) {
                continue;
            }
            for (v, label) in t.values.iter().flatten() {
                let wanted = match &asked {
                    Some(name) => label_is(label, name),
                    None => looks_like_iteration(label),
                };
                if wanted && *v != 0 {
                    let next = index.len() as u32;
                    let i = *index.entry(bare(label).to_string()).or_insert(next);
                    self.candidates.insert((*ty, *v), i);
                }
            }
        }
        let mut names: Vec<(u32, String)> = index.into_iter().map(|(n, i)| (i, n)).collect();
        names.sort();
        self.candidate_names = names.into_iter().map(|(_, n)| n).collect();
        if let (Some(name), true) = (&asked, self.candidates.is_empty()) {
            return Err(crate::cli::UsageError(format!(
                "--iterations {name}: no NVTX range of that name; {}",
                self.names.range_list()
            ))
            .into());
        }
        Ok(())
    }

    /// Our NCCL message size type, or BSC's payload column labelled so.
    fn find_message_size_type(&self) -> Option<u32> {
        if self
            .names
            .type_label(NCCL_MESSAGE_SIZE)
            .is_some_and(is_size_label)
        {
            return Some(NCCL_MESSAGE_SIZE);
        }
        (9501..9520).find(|ty| self.names.type_label(*ty).is_some_and(is_size_label))
    }

    /// Reads the body to its end.
    pub fn run(
        &mut self,
        body: &mut Lines<Box<dyn std::io::BufRead>>,
        files: &TraceFiles,
    ) -> Result<()> {
        let prv = files.prv.display().to_string();
        let mut last_time: i128 = i128::MIN;
        while body
            .advance()
            .with_context(|| format!("{prv}: cannot read the trace"))?
        {
            let line = trim_trailing_blanks(body.line());
            if !matches!(line.first(), Some(b'1'..=b'3')) {
                continue;
            }
            let lineno = body.number();
            let mut fields = std::mem::take(&mut self.fields);
            let record = parse_record(line, &mut fields)
                .map_err(|_| anyhow::anyhow!("{prv}:{lineno}: malformed record"))?;
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
            let start = i128::from(self.window_start);
            if time > start + i128::from(self.elapsed) {
                break;
            }
            self.before_window = time < start;
            self.ends_outside = self.options.window.is_some() && time <= start;
            let local = (time.max(start) - start).clamp(0, i128::from(u64::MAX)) as u64;
            match record {
                Record::Event { object, pairs, .. } => {
                    let index =
                        self.thread_index(object.task, object.thread)
                            .with_context(|| {
                                format!(
                                "{prv}:{lineno}: record of an object the header does not declare"
                            )
                            })?;
                    self.pairs.clear();
                    self.pairs
                        .extend(pairs.chunks_exact(2).map(|p| (p[0] as u32, p[1] as i64)));
                    self.event(index, local)
                        .with_context(|| format!("{prv}:{lineno}"))?;
                }
                Record::Comm(c) if c.tag == LAUNCH_TAG || c.tag == COPY_TAG => {
                    self.launch(
                        c.sender.task,
                        c.sender.thread,
                        c.receiver.task,
                        c.receiver.thread,
                    );
                }
                _ => {}
            }
            self.fields = fields;
        }
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

    fn launch(&mut self, s_task: i128, s_thread: i128, r_task: i128, r_thread: i128) {
        let (Some(sender), Some(receiver)) = (
            self.thread_index(s_task, s_thread),
            self.thread_index(r_task, r_thread),
        ) else {
            return;
        };
        if let ThreadKind::Stream { gpu } = self.threads[receiver].kind {
            if self.threads[sender].kind == ThreadKind::Cpu {
                self.clocks[gpu].launcher = Some(sender);
                self.seen.launches += 1;
            }
        }
    }

    fn event(&mut self, index: usize, time: u64) -> Result<()> {
        match self.threads[index].kind {
            ThreadKind::Stream { gpu } => self.stream_event(index, gpu, time),
            ThreadKind::Metrics { gpu } => self.metrics_event(gpu, time),
            ThreadKind::Cpu => self.cpu_event(index, time)?,
        }
        Ok(())
    }

    fn stream_event(&mut self, index: usize, gpu: usize, time: u64) {
        self.clocks[gpu].advance(time, &self.bins);
        let was_active = self.clocks[gpu].active();
        let pairs = std::mem::take(&mut self.pairs);
        let on_line = |ty: u32| pairs.iter().find(|p| p.0 == ty).map(|p| p.1);
        for &(ty, value) in &pairs {
            if !matches!(ty, CUDA_KERNEL | NCCL_KERNEL | MEMORY_OP) {
                continue;
            }
            if value != 0 {
                let open = OpenKernel {
                    value,
                    begin: time,
                    collective: on_line(NCCL_COLLECTIVE).unwrap_or(0),
                    communicator: on_line(NCCL_COMMUNICATOR).unwrap_or(0),
                    bytes: match ty {
                        NCCL_KERNEL => self.message_size_type.and_then(on_line),
                        MEMORY_OP => on_line(MEMORY_SIZE),
                        _ => None,
                    }
                    .map(|b| b.max(0) as u64),
                };
                self.begin(index, gpu, ty, open);
            } else {
                self.end(index, gpu, ty, time);
            }
        }
        self.pairs = pairs;
        let clock = &mut self.clocks[gpu];
        let active = clock.active();
        if was_active && !active {
            let start = self.gap_start(gpu, time);
            self.clocks[gpu].idle_since = Some(start);
        } else if !was_active && active {
            let keep = self.options.gaps_per_gpu;
            let threshold = self.options.gap_threshold_ns.max(1);
            let clock = &mut self.clocks[gpu];
            if let Some(start) = clock.idle_since.take() {
                let duration = time - start.time;
                if duration >= threshold {
                    clock.gap(duration, start, keep);
                }
            }
            clock.active_seen = true;
        }
    }

    fn begin(&mut self, index: usize, gpu: usize, ty: u32, open: OpenKernel) {
        let clock = &mut self.clocks[gpu];
        let thread = &mut self.threads[index];
        match ty {
            CUDA_KERNEL => {
                clock.compute += 1;
                clock.running.push(open.value);
                thread.kernels.push(open);
            }
            NCCL_KERNEL => {
                clock.nccl += 1;
                thread.nccl.push(open);
            }
            _ => {
                clock.memory += 1;
                thread.memory.push(open);
            }
        }
    }

    fn end(&mut self, index: usize, gpu: usize, ty: u32, time: u64) {
        let clock = &mut self.clocks[gpu];
        let thread = &mut self.threads[index];
        let stack = match ty {
            CUDA_KERNEL => &mut thread.kernels,
            NCCL_KERNEL => &mut thread.nccl,
            _ => &mut thread.memory,
        };
        let Some(open) = stack.pop() else { return };
        let duration = time.saturating_sub(open.begin);
        // Wholly before the window: it only leaves the counts.
        let counted = !self.ends_outside;
        if counted && self.first_activity.is_none_or(|t| open.begin < t) {
            self.first_activity = Some(open.begin);
        }
        match ty {
            CUDA_KERNEL => {
                clock.compute -= 1;
                if let Some(i) = clock.running.iter().position(|v| *v == open.value) {
                    clock.running.swap_remove(i);
                }
                if counted {
                    self.kernels
                        .entry(open.value)
                        .or_default()
                        .add(duration, None);
                }
            }
            NCCL_KERNEL if !counted => clock.nccl -= 1,
            NCCL_KERNEL => {
                clock.nccl -= 1;
                self.seen.nccl_kernels += 1;
                self.seen.nccl_with_collective += u64::from(open.collective != 0);
                self.seen.nccl_with_size += u64::from(open.bytes.unwrap_or(0) != 0);
                let key = match open.collective {
                    0 => (false, open.value),
                    c => (true, c),
                };
                let acc = self.nccl.entry(key).or_default();
                acc.stats.add(duration, open.bytes);
                *acc.bytes_by_communicator
                    .entry(open.communicator)
                    .or_default() += open.bytes.unwrap_or(0);
                acc.gpus.insert(gpu);
                if open.communicator != 0 {
                    self.communicators
                        .entry(open.communicator)
                        .or_default()
                        .insert(gpu);
                }
            }
            _ if !counted => clock.memory -= 1,
            _ => {
                clock.memory -= 1;
                self.seen.memory_ops += 1;
                self.memory
                    .entry(open.value)
                    .or_default()
                    .add(duration, open.bytes);
            }
        }
    }

    /// The launching thread of a GPU (else its task's first thread) and what it is
    /// doing now.
    fn gap_start(&self, gpu: usize, time: u64) -> GapStart {
        let clock = &self.clocks[gpu];
        let thread = clock.launcher.unwrap_or(self.task_first[clock.task - 1]);
        let state = &self.threads[thread];
        GapStart {
            time,
            thread,
            call: state.calls.last().map(|c| (c.0, c.1)),
            nvtx: state.nvtx.last().map(|c| (c.0, c.1)),
        }
    }

    fn metrics_event(&mut self, gpu: Option<usize>, _time: u64) {
        let Some(gpu) = gpu.filter(|_| !self.before_window) else {
            return;
        };
        let running = &self.clocks[gpu].running;
        for &(ty, value) in &self.pairs {
            if !is_metric_type(ty) {
                continue;
            }
            self.seen.metric_samples += 1;
            for &kernel in running {
                let entry = self.kernel_metrics.entry((kernel, ty)).or_default();
                entry.0 += value as f64;
                entry.1 += 1;
            }
        }
    }

    fn cpu_event(&mut self, index: usize, time: u64) -> Result<()> {
        let pairs = std::mem::take(&mut self.pairs);
        let on_line = |ty: u32| pairs.iter().find(|p| p.0 == ty).map(|p| p.1);
        for &(ty, value) in &pairs {
            if is_call_type(ty) {
                let thread = &mut self.threads[index];
                if value != 0 {
                    thread.calls.push((ty, value, time, !self.before_window));
                    if is_mpi_type(ty) {
                        // Sizes are on the begin line; keep them with the call.
                        let bytes = on_line(MPI_SEND_SIZE).map(|b| b.max(0) as u64);
                        self.mpi.entry((ty, value)).or_default().add_bytes(bytes);
                    }
                } else if let Some(i) = thread.calls.iter().rposition(|c| c.0 == ty) {
                    let (_, v, begin, _) = thread.calls.remove(i);
                    if is_mpi_type(ty) && !self.ends_outside {
                        let acc = self.mpi.entry((ty, v)).or_default();
                        acc.add(time.saturating_sub(begin), None);
                    }
                }
            } else if is_nvtx_type(ty) {
                let thread = &mut self.threads[index];
                if value != 0 {
                    thread.nvtx.push((ty, value, time, !self.before_window));
                } else if let Some(i) = thread.nvtx.iter().rposition(|c| c.0 == ty) {
                    let (_, v, begin, inside) = thread.nvtx.remove(i);
                    // Iterations wholly inside the window only.
                    let candidate = self.candidates.get(&(ty, v)).filter(|_| inside);
                    if let Some(&candidate) = candidate {
                        if self.occurrences.len() >= self.max_occurrences {
                            bail!(
                                "more than {} NVTX range occurrences to keep for the iterations within --memory-limit; raise it or name the range with --iterations",
                                self.max_occurrences
                            );
                        }
                        let task = self.threads[index].task as u32;
                        self.occurrences.push((candidate, task, begin, time));
                    }
                }
            }
        }
        self.pairs = pairs;
        Ok(())
    }

    /// Closes the clocks at the end of the trace (or window); with a window, the
    /// GPU operations and MPI calls still open there count up to its end.
    pub fn finish(&mut self) {
        for clock in &mut self.clocks {
            clock.advance(self.elapsed, &self.bins);
        }
        if self.options.window.is_none() {
            return;
        }
        self.before_window = false;
        self.ends_outside = false;
        let end = self.elapsed;
        for index in 0..self.threads.len() {
            if let ThreadKind::Stream { gpu } = self.threads[index].kind {
                for ty in [CUDA_KERNEL, NCCL_KERNEL, MEMORY_OP] {
                    while !self.open_stack(index, ty).is_empty() {
                        self.end(index, gpu, ty, end);
                    }
                }
            }
            for (ty, v, begin, _) in std::mem::take(&mut self.threads[index].calls) {
                if is_mpi_type(ty) {
                    let acc = self.mpi.entry((ty, v)).or_default();
                    acc.add(end.saturating_sub(begin), None);
                }
            }
        }
    }

    fn open_stack(&self, index: usize, ty: u32) -> &[OpenKernel] {
        let thread = &self.threads[index];
        match ty {
            CUDA_KERNEL => &thread.kernels,
            NCCL_KERNEL => &thread.nccl,
            _ => &thread.memory,
        }
    }

    // --- what the report builder reads --------------------------------------------

    pub fn iterations_asked(&self) -> Option<&str> {
        self.options.iterations.as_deref()
    }

    pub fn gpu_count(&self) -> usize {
        self.clocks.len()
    }

    pub fn gpu_times(&self, gpu: usize) -> GpuTimes<'_> {
        let c = &self.clocks[gpu];
        GpuTimes {
            task: c.task,
            device: c.device,
            streams: c.streams,
            useful: c.useful,
            communication: c.communication,
            overlap: &c.overlap,
            bins_compute: &c.bins_compute,
            bins_communication: &c.bins_communication,
            gap_count: c.gap_count,
            gap_total: c.gap_total,
        }
    }

    /// The gaps kept for a GPU, longest first, with their context in words.
    pub fn gaps(&self, gpu: usize) -> Vec<Gap> {
        self.clocks[gpu]
            .gaps
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
        let state = &self.threads[thread];
        format!("{} / {}", self.names.task(state.task), state.name)
    }

    pub fn kernel_stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.kernels.iter().map(|(v, s)| (*v, s))
    }

    /// Per kernel value and metric type: the mean of the samples.
    pub fn kernel_metric_means(&self) -> impl Iterator<Item = (i64, u32, f64)> + '_ {
        self.kernel_metrics
            .iter()
            .map(|((k, ty), (sum, n))| (*k, *ty, sum / *n as f64))
    }

    pub fn memory_stats(&self) -> impl Iterator<Item = (i64, &NamedStatsAcc)> {
        self.memory.iter().map(|(v, s)| (*v, s))
    }

    pub fn mpi_stats(&self) -> impl Iterator<Item = ((u32, i64), &NamedStatsAcc)> {
        self.mpi
            .iter()
            .filter(|(_, s)| s.count > 0)
            .map(|(k, s)| (*k, s))
    }

    /// Per NCCL collective (or kernel name without one): its name, statistics, GPUs
    /// that ran it, and bytes per communicator with that communicator's GPU count.
    pub fn nccl_stats(&self) -> Vec<NcclStats> {
        self.nccl
            .iter()
            .map(|((is_collective, v), acc)| {
                let name = if *is_collective {
                    self.names.value(NCCL_COLLECTIVE, *v, "collective")
                } else {
                    self.names.value(NCCL_KERNEL, *v, "NCCL kernel")
                };
                let by_communicator = acc
                    .bytes_by_communicator
                    .iter()
                    .map(|(c, bytes)| {
                        let ranks = match c {
                            0 => acc.gpus.len(),
                            c => self.communicators.get(c).map_or(0, BTreeSet::len),
                        };
                        (*bytes, ranks)
                    })
                    .collect();
                NcclStats {
                    name,
                    stats: acc.stats,
                    by_communicator,
                }
            })
            .collect()
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
    pub fn take_occurrences(&mut self) -> (Vec<String>, Vec<RangeOccurrence>) {
        (
            std::mem::take(&mut self.candidate_names),
            std::mem::take(&mut self.occurrences),
        )
    }
}

/// The times of one GPU, as accumulated.
pub struct GpuTimes<'a> {
    pub task: usize,
    pub device: u32,
    pub streams: usize,
    pub useful: u64,
    pub communication: u64,
    pub overlap: &'a [u64],
    pub bins_compute: &'a [u64],
    pub bins_communication: &'a [u64],
    pub gap_count: u64,
    pub gap_total: u64,
}

pub struct NcclStats {
    pub name: String,
    pub stats: NamedStatsAcc,
    /// (bytes, GPUs of the communicator)
    pub by_communicator: Vec<(u64, usize)>,
}

impl GpuClock {
    fn new(task: usize, device: u32, bins: usize) -> GpuClock {
        GpuClock {
            task,
            device,
            streams: 0,
            compute: 0,
            nccl: 0,
            memory: 0,
            last: 0,
            useful: 0,
            communication: 0,
            overlap: Vec::new(),
            bins_compute: vec![0; bins],
            bins_communication: vec![0; bins],
            running: Vec::new(),
            launcher: None,
            active_seen: false,
            idle_since: None,
            gaps: Vec::new(),
            gap_count: 0,
            gap_total: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bsc_headers_are_read_as_the_format_has_them() {
        let line = "#Paraver (25/11/2026 at 06:41):1248337078_ns:0:1:2:(5:1,5:1)";
        let fixed = bsc_header(line).unwrap();
        assert_eq!(
            fixed,
            "#Paraver (25/11/2026 at 06:41):1248337078_ns:1(1):1:2(5:1,5:1)"
        );
        let header = parse_header(&fixed, &mut Vec::new()).unwrap();
        assert_eq!(header.appls[0].len(), 2);
        assert_eq!(bsc_header("#Paraver (x):10_ns:1(2):1:1(1:1)"), None);
    }

    #[test]
    fn bins_split_intervals_at_their_edges() {
        let bins = Bins::new(4, 100);
        let mut b = vec![0; 4];
        bins.add(&mut b, 10, 60);
        assert_eq!(b, [15, 25, 10, 0]);
        bins.add(&mut b, 90, 200);
        assert_eq!(b, [15, 25, 10, 10]);
        let odd = Bins::new(3, 10);
        assert_eq!(
            (0..=3).map(|i| odd.edge(i)).collect::<Vec<_>>(),
            [0, 3, 6, 10]
        );
        let mut b = vec![0; 3];
        odd.add(&mut b, 0, 10);
        assert_eq!(b, [3, 3, 4]);
    }

    #[test]
    fn a_clock_keeps_the_longest_gaps() {
        let mut clock = GpuClock::new(1, 0, 1);
        let start = |time| GapStart {
            time,
            thread: 0,
            call: None,
            nvtx: None,
        };
        for (d, t) in [(5, 1), (9, 2), (7, 3), (1, 4)] {
            clock.gap(d, start(t), 2);
        }
        let kept: Vec<u64> = clock.gaps.iter().map(|g| g.0).collect();
        assert_eq!(kept, [9, 7]);
    }

    #[test]
    fn overlap_counts_compute_kernels_while_nccl_runs() {
        let bins = Bins::new(1, 100);
        let mut clock = GpuClock::new(1, 0, 1);
        clock.nccl = 1;
        clock.advance(10, &bins);
        clock.compute = 2;
        clock.advance(30, &bins);
        clock.nccl = 0;
        clock.advance(50, &bins);
        assert_eq!(clock.overlap, [10, 0, 20]);
        assert_eq!((clock.useful, clock.communication), (40, 10));
        assert_eq!(clock.bins_communication, [30]);
        assert_eq!(clock.bins_compute, [40]);
    }
}
