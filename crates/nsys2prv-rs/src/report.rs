//! `nsys2prv-rs report`: the GPU efficiency report of a written trace, computed
//! without Paraver by streaming the `.prv` (or `.prv.gz`) with its `.pcf` and `.row`.
//!
//! A GPU is one device of one task: the task's stream rows `CUDA-D<dev>.S<stream>`
//! of that device. Over the trace's span (the header's end time, T):
//!
//! * useful U = time with a compute kernel (63000006) running on any of its streams;
//! * communication C = time with an NCCL kernel (63000007) or a memory operation
//!   (63000001) and no compute kernel;
//! * idle = T − U − C.
//!
//! Efficiencies (BSC's GPU model, multiplicative like the POP metrics):
//! load balance LB = avg(U)/max(U); communication efficiency CommE =
//! max(U)/max(U+C); orchestration efficiency OrchE = max(U+C)/T; parallel
//! efficiency PE = LB·CommE·OrchE = avg(U)/T.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nsys_semantics::event_types::{
    is_nvtx_range_type as is_iteration_type, CUDA_KERNEL, CUDA_MEMORY_OP as MEMORY_OP,
    CUDA_MEMORY_SIZE as MEMORY_SIZE, KERNEL_COLLECTIVE as NCCL_COLLECTIVE,
    MESSAGE_SIZE as NCCL_MESSAGE_SIZE, NCCL_KERNEL,
};
use paraver_reader::pcf::{read_pcf, Pcf};
use paraver_reader::prv::{
    open_body, parse_header, parse_record, trim_trailing_blanks, Lines, Record, TimeUnit,
};
use paraver_reader::row::read_row;
use paraver_reader::TraceFiles;
use serde::Serialize;

use crate::cli::{ReportArgs, UsageError};

#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// NVTX range whose occurrences are iterations (default: guessed by name).
    pub iterations: Option<String>,
    /// Kernels in the printed table.
    pub top: usize,
    /// Write `NAME.report.json` and `NAME.report.*.csv`.
    pub write_files: bool,
    /// Print the tables on stdout.
    pub print: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            iterations: None,
            top: 10,
            write_files: true,
            print: true,
        }
    }
}

/// `nsys2prv-rs report TRACE`.
pub fn run_command(args: &ReportArgs) -> Result<()> {
    run(
        &args.trace,
        &ReportOptions {
            iterations: args.iterations.clone(),
            top: args.top,
            write_files: !args.no_files,
            print: true,
        },
    )
}

/// Computes the report of `trace`, prints it and writes its files as asked.
pub fn run(trace: &Path, options: &ReportOptions) -> Result<()> {
    let report = analyze(trace, options.iterations.as_deref())?;
    if options.print {
        print!("{}", report.text(options.top));
    }
    if options.write_files {
        let written = report.write_files()?;
        if options.print {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            eprintln!("wrote {}", names.join(", "));
        }
    }
    Ok(())
}

/// Time of one GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuTimes {
    /// `<task name> GPU <device>`.
    pub name: String,
    /// 1-based task of the trace.
    pub task: usize,
    pub device: u32,
    pub streams: usize,
    pub useful_ns: u64,
    pub communication_ns: u64,
    pub idle_ns: u64,
}

/// The efficiency model (fractions, 0..1; 6 decimals in the JSON, as printed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Model {
    #[serde(serialize_with = "six_decimals")]
    pub load_balance: f64,
    #[serde(serialize_with = "six_decimals")]
    pub communication_efficiency: f64,
    #[serde(serialize_with = "six_decimals")]
    pub orchestration_efficiency: f64,
    #[serde(serialize_with = "six_decimals")]
    pub parallel_efficiency: f64,
}

impl Model {
    /// The model of `gpus` over `elapsed` ns; `None` without GPUs or time.
    pub fn of(gpus: &[GpuTimes], elapsed: u64) -> Option<Model> {
        if gpus.is_empty() || elapsed == 0 {
            return None;
        }
        let useful: Vec<f64> = gpus.iter().map(|g| g.useful_ns as f64).collect();
        let active: Vec<f64> = gpus
            .iter()
            .map(|g| (g.useful_ns + g.communication_ns) as f64)
            .collect();
        let max_useful = useful.iter().copied().fold(0.0, f64::max);
        let avg_useful = useful.iter().sum::<f64>() / useful.len() as f64;
        let max_active = active.iter().copied().fold(0.0, f64::max);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        let load_balance = ratio(avg_useful, max_useful);
        let communication_efficiency = ratio(max_useful, max_active);
        let orchestration_efficiency = max_active / elapsed as f64;
        Some(Model {
            load_balance,
            communication_efficiency,
            orchestration_efficiency,
            parallel_efficiency: avg_useful / elapsed as f64,
        })
    }
}

/// Count and time (and bytes) of the intervals of one name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NamedStats {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub bytes: u64,
}

impl NamedStats {
    fn add(&mut self, duration: u64, bytes: u64) {
        if self.count == 0 || duration < self.min_ns {
            self.min_ns = duration;
        }
        self.max_ns = self.max_ns.max(duration);
        self.count += 1;
        self.total_ns += duration;
        self.bytes += bytes;
    }

    fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }
}

/// The iterations (occurrences of one NVTX range) of each task.
#[derive(Clone, Debug, PartialEq)]
pub struct Iterations {
    pub range: String,
    /// (task name, [(begin, duration)] by begin time).
    pub tasks: Vec<(String, Vec<(u64, u64)>)>,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub trace: PathBuf,
    /// `NAME` of `NAME.prv[.gz]`, with its directory.
    base: String,
    pub elapsed_ns: u64,
    pub tasks: usize,
    pub gpus: Vec<GpuTimes>,
    pub model: Option<Model>,
    /// Sorted by total time, longest first.
    pub kernels: Vec<NamedStats>,
    pub nccl: Vec<NamedStats>,
    pub memory: Vec<NamedStats>,
    pub iterations: Option<Iterations>,
    /// Why there is no iteration table, when one was asked for.
    pub iterations_note: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Reading the trace.

/// The trace's tables of names: TASK and THREAD names of the `.row`, value labels of
/// the `.pcf`.
struct Names {
    tasks: Vec<String>,
    threads: Vec<String>,
    pcf: Pcf,
}

impl Names {
    fn read(files: &TraceFiles) -> Result<Names> {
        let row = std::fs::File::open(&files.row)
            .and_then(|f| read_row(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .row", files.row.display()))?;
        let pcf = std::fs::File::open(&files.pcf)
            .and_then(|f| read_pcf(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .pcf", files.pcf.display()))?;
        Ok(Names {
            tasks: row.labels("TASK").to_vec(),
            threads: row.labels("THREAD").to_vec(),
            pcf,
        })
    }

    /// The `.pcf` label of a value, else `what value`.
    fn value(&self, ty: u32, value: i64, what: &str) -> String {
        self.pcf
            .value_label(ty, value)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{what} {value}"))
    }
}

/// Whether a range label names `name` (a start/end range's label is `domain: name`).
fn label_is(label: &str, name: &str) -> bool {
    label == name
        || label
            .strip_suffix(name)
            .is_some_and(|prefix| prefix.ends_with(": "))
}

fn looks_like_iteration(label: &str) -> bool {
    let lower = label.to_lowercase();
    ["iter", "step", "epoch"].iter().any(|w| lower.contains(w))
}

/// The bare range name of a label (`domain: name` → `name`).
fn bare(label: &str) -> &str {
    label.rsplit_once(": ").map_or(label, |(_, n)| n)
}

/// An interval open on a thread: value, begin, and what its line said.
#[derive(Clone, Copy)]
struct Open {
    value: i64,
    begin: u64,
    key: i64,
    bytes: u64,
}

#[derive(Default)]
struct ThreadState {
    gpu: Option<usize>,
    kernels: Vec<Open>,
    nccl: Vec<Open>,
    memory: Vec<Open>,
    nvtx: HashMap<u32, Vec<(i64, u64)>>,
}

/// Union bookkeeping of one GPU: how many compute and communication intervals are
/// open on its streams, and the time they have covered so far.
#[derive(Default)]
struct GpuClock {
    compute: u32,
    communication: u32,
    last: u64,
    useful: u64,
    comm: u64,
}

impl GpuClock {
    fn advance(&mut self, time: u64) {
        let span = time.saturating_sub(self.last);
        if self.compute > 0 {
            self.useful += span;
        } else if self.communication > 0 {
            self.comm += span;
        }
        self.last = self.last.max(time);
    }
}

/// `CUDA-D<dev>.S<stream>` → device.
fn gpu_device(thread_name: &str) -> Option<u32> {
    let rest = thread_name.strip_prefix("CUDA-D")?;
    let (device, stream) = rest.split_once(".S")?;
    stream.parse::<u64>().ok()?;
    device.parse().ok()
}

/// Reads the trace and computes every table.
pub fn analyze(trace: &Path, iterations: Option<&str>) -> Result<Report> {
    let paths = TraceFiles::of(trace);
    if !paths.name_ok {
        return Err(UsageError(format!(
            "{}: the output name must end in .prv or .prv.gz",
            trace.display()
        ))
        .into());
    }
    if !paths.prv.is_file() {
        bail!("{}: no such trace", paths.prv.display());
    }
    let names = Names::read(&paths)?;
    let (task_names, thread_names) = (&names.tasks, &names.threads);
    let cannot_read = || format!("{}: cannot read the trace", paths.prv.display());
    let mut body = Lines::new(open_body(&paths.prv, paths.gzip).with_context(cannot_read)?);
    body.advance().with_context(cannot_read)?;
    let first = String::from_utf8_lossy(body.line()).trim_end().to_string();
    let header = parse_header(&first, &mut Vec::new())
        .ok()
        .filter(|h| h.unit == TimeUnit::Nanoseconds)
        .with_context(|| {
            format!(
                "{}: not a Paraver trace in nanoseconds (header '{first}')",
                paths.prv.display()
            )
        })?;
    // Threads of each task of the (first) application.
    let threads_per_task: Vec<usize> = header
        .appls
        .first()
        .map(|tasks| tasks.iter().map(|t| t.threads as usize).collect())
        .unwrap_or_default();

    // Threads: global index by (task, thread), and GPUs by (task, device).
    let mut task_first = Vec::with_capacity(threads_per_task.len());
    let mut threads: Vec<ThreadState> = Vec::new();
    let mut gpus: Vec<GpuTimes> = Vec::new();
    let mut gpu_of: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (t, &count) in threads_per_task.iter().enumerate() {
        task_first.push(threads.len());
        for _ in 0..count {
            let name = thread_names
                .get(threads.len())
                .map(String::as_str)
                .unwrap_or("");
            let gpu = gpu_device(name).map(|device| {
                let index = *gpu_of.entry((t, device)).or_insert_with(|| {
                    let task = task_names
                        .get(t)
                        .cloned()
                        .unwrap_or_else(|| format!("task {}", t + 1));
                    gpus.push(GpuTimes {
                        name: format!("{task} GPU {device}"),
                        task: t + 1,
                        device,
                        streams: 0,
                        useful_ns: 0,
                        communication_ns: 0,
                        idle_ns: 0,
                    });
                    gpus.len() - 1
                });
                gpus[index].streams += 1;
                index
            });
            threads.push(ThreadState {
                gpu,
                ..ThreadState::default()
            });
        }
    }
    let mut clocks: Vec<GpuClock> = (0..gpus.len()).map(|_| GpuClock::default()).collect();

    // NVTX ranges that may be iterations, from the .pcf.
    let candidates: HashMap<(u32, i64), String> = names
        .pcf
        .types
        .iter()
        .filter(|(ty, _)| is_iteration_type(**ty))
        .filter_map(|(ty, t)| Some((ty, t.values.as_ref()?)))
        .flat_map(|(ty, values)| {
            values.iter().filter_map(move |(v, label)| {
                let wanted = match iterations {
                    Some(name) => label_is(label, name),
                    None => looks_like_iteration(label),
                };
                (wanted && *v != 0).then(|| ((*ty, *v), bare(label).to_string()))
            })
        })
        .collect();
    let mut occurrences: Vec<(String, usize, u64, u64)> = Vec::new();

    let mut kernels: HashMap<i64, NamedStats> = HashMap::new();
    let mut nccl: HashMap<(bool, i64), NamedStats> = HashMap::new();
    let mut memory: HashMap<i64, NamedStats> = HashMap::new();
    let mut fields: Vec<i128> = Vec::with_capacity(32);
    let mut pairs: Vec<i64> = Vec::with_capacity(32);
    while body.advance().with_context(cannot_read)? {
        let lineno = body.number();
        let line = trim_trailing_blanks(body.line());
        if line.first() != Some(&b'2') {
            continue;
        }
        let Ok(Record::Event {
            object,
            time,
            pairs: read,
        }) = parse_record(line, &mut fields)
        else {
            bail!("{}:{lineno}: malformed event record", paths.prv.display());
        };
        if read.is_empty() {
            bail!("{}:{lineno}: malformed event record", paths.prv.display());
        }
        pairs.clear();
        pairs.extend(read.iter().map(|&v| v as i64));
        let (task, thread) = (
            usize::try_from(object.task).unwrap_or(usize::MAX),
            usize::try_from(object.thread).unwrap_or(usize::MAX),
        );
        let time = time.clamp(0, i128::from(u64::MAX)) as u64;
        let Some(index) = task
            .checked_sub(1)
            .and_then(|t| task_first.get(t))
            .and_then(|first| thread.checked_sub(1).map(|th| first + th))
            .filter(|&i| i < threads.len() && thread <= threads_per_task[task - 1])
        else {
            bail!(
                "{}:{lineno}: record of an object the header does not declare",
                paths.prv.display()
            );
        };
        let state = &mut threads[index];
        if let Some(g) = state.gpu {
            clocks[g].advance(time);
        }
        let on_line = |ty: u32| {
            pairs
                .chunks_exact(2)
                .find(|p| p[0] == i64::from(ty))
                .map(|p| p[1])
        };
        for pair in pairs.chunks_exact(2) {
            let (ty, value) = (pair[0] as u32, pair[1]);
            match ty {
                CUDA_KERNEL | NCCL_KERNEL | MEMORY_OP => {
                    let stack = match ty {
                        CUDA_KERNEL => &mut state.kernels,
                        NCCL_KERNEL => &mut state.nccl,
                        _ => &mut state.memory,
                    };
                    let clock = state.gpu.map(|g| &mut clocks[g]);
                    if value != 0 {
                        let (key, bytes) = match ty {
                            NCCL_KERNEL => (
                                on_line(NCCL_COLLECTIVE).unwrap_or(0),
                                on_line(NCCL_MESSAGE_SIZE).unwrap_or(0),
                            ),
                            MEMORY_OP => (0, on_line(MEMORY_SIZE).unwrap_or(0)),
                            _ => (0, 0),
                        };
                        stack.push(Open {
                            value,
                            begin: time,
                            key,
                            bytes: bytes.max(0) as u64,
                        });
                        if let Some(clock) = clock {
                            if ty == CUDA_KERNEL {
                                clock.compute += 1;
                            } else {
                                clock.communication += 1;
                            }
                        }
                    } else if let Some(open) = stack.pop() {
                        let duration = time.saturating_sub(open.begin);
                        if let Some(clock) = clock {
                            if ty == CUDA_KERNEL {
                                clock.compute -= 1;
                            } else {
                                clock.communication -= 1;
                            }
                        }
                        let stats = match ty {
                            CUDA_KERNEL => kernels.entry(open.value).or_default(),
                            NCCL_KERNEL if open.key != 0 => {
                                nccl.entry((true, open.key)).or_default()
                            }
                            NCCL_KERNEL => nccl.entry((false, open.value)).or_default(),
                            _ => memory.entry(open.value).or_default(),
                        };
                        stats.add(duration, open.bytes);
                    }
                }
                ty if !candidates.is_empty() && is_iteration_type(ty) => {
                    let stack = state.nvtx.entry(ty).or_default();
                    if value != 0 {
                        stack.push((value, time));
                    } else if let Some((v, begin)) = stack.pop() {
                        if let Some(name) = candidates.get(&(ty, v)) {
                            occurrences.push((name.clone(), task, begin, time));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    let elapsed = header.end;
    for (gpu, clock) in gpus.iter_mut().zip(&mut clocks) {
        clock.advance(elapsed);
        gpu.useful_ns = clock.useful;
        gpu.communication_ns = clock.comm;
        gpu.idle_ns = elapsed.saturating_sub(clock.useful + clock.comm);
    }
    let model = Model::of(&gpus, elapsed);
    let named = |map: HashMap<i64, NamedStats>, ty: u32, what: &str| -> Vec<NamedStats> {
        let mut list: Vec<NamedStats> = map
            .into_iter()
            .map(|(v, s)| NamedStats {
                name: names.value(ty, v, what),
                ..s
            })
            .collect();
        list.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        list
    };
    let kernels = named(kernels, CUDA_KERNEL, "kernel");
    let memory = named(memory, MEMORY_OP, "memory operation");
    let mut by_collective: BTreeMap<String, NamedStats> = BTreeMap::new();
    for ((is_collective, v), s) in nccl {
        let name = if is_collective {
            names.value(NCCL_COLLECTIVE, v, "collective")
        } else {
            names.value(NCCL_KERNEL, v, "NCCL kernel")
        };
        let entry = by_collective.entry(name.clone()).or_insert(NamedStats {
            name,
            ..NamedStats::default()
        });
        entry.min_ns = if entry.count == 0 {
            s.min_ns
        } else {
            entry.min_ns.min(s.min_ns)
        };
        entry.max_ns = entry.max_ns.max(s.max_ns);
        entry.count += s.count;
        entry.total_ns += s.total_ns;
        entry.bytes += s.bytes;
    }
    let mut nccl: Vec<NamedStats> = by_collective.into_values().collect();
    nccl.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));

    let (iterations, iterations_note) = choose_iterations(occurrences, task_names, iterations);
    let base = paths.base().to_string_lossy().into_owned();
    Ok(Report {
        trace: paths.prv.clone(),
        base,
        elapsed_ns: elapsed,
        tasks: threads_per_task.len(),
        gpus,
        model,
        kernels,
        nccl,
        memory,
        iterations,
        iterations_note,
    })
}

/// The iteration range: the one asked for, else the candidate with the most time
/// among those that repeat on some task.
fn choose_iterations(
    occurrences: Vec<(String, usize, u64, u64)>,
    task_names: &[String],
    asked: Option<&str>,
) -> (Option<Iterations>, Option<String>) {
    if occurrences.is_empty() {
        let note = asked.map(|name| format!("no NVTX range named '{name}' in the trace"));
        return (None, note);
    }
    // name → (total time, repeats on some task)
    let mut totals: BTreeMap<&str, (u64, BTreeMap<usize, usize>)> = BTreeMap::new();
    for (name, task, begin, end) in &occurrences {
        let entry = totals.entry(name.as_str()).or_default();
        entry.0 += end - begin;
        *entry.1.entry(*task).or_default() += 1;
    }
    let chosen = totals
        .iter()
        .max_by_key(|(name, (total, per_task))| {
            let repeats = per_task.values().any(|&n| n >= 2);
            (repeats, *total, std::cmp::Reverse(**name))
        })
        .map(|(name, _)| name.to_string())
        .expect("not empty");
    let mut per_task: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
    for (name, task, begin, end) in occurrences {
        if name == chosen {
            per_task.entry(task).or_default().push((begin, end - begin));
        }
    }
    let tasks = per_task
        .into_iter()
        .map(|(task, mut list)| {
            list.sort_unstable();
            let name = task_names
                .get(task - 1)
                .cloned()
                .unwrap_or_else(|| format!("task {task}"));
            (name, list)
        })
        .collect();
    (
        Some(Iterations {
            range: chosen,
            tasks,
        }),
        None,
    )
}

// ---------------------------------------------------------------------------------------
// Output.

fn seconds(ns: u64) -> String {
    format!("{:.6}", ns as f64 / 1e9)
}

fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", x * 100.0)
    } else {
        "n/a".into()
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        f64::NAN
    } else {
        part as f64 / whole as f64
    }
}

/// Shortens a name to `width` characters (keeping its start).
fn clip(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// A fraction rounded to 6 decimals (null when undefined).
fn six_decimals<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64((x * 1e6).round() / 1e6)
    } else {
        s.serialize_none()
    }
}

/// `NAME.report.json`: the tables of the report.
#[derive(Serialize)]
struct JsonReport<'a> {
    trace: String,
    elapsed_ns: u64,
    tasks: usize,
    gpus: &'a [GpuTimes],
    efficiency: Option<Model>,
    kernels: &'a [NamedStats],
    nccl: &'a [NamedStats],
    memory: &'a [NamedStats],
    iterations: Option<JsonIterations<'a>>,
}

#[derive(Serialize)]
struct JsonIterations<'a> {
    range: &'a str,
    tasks: Vec<JsonTaskIterations<'a>>,
}

#[derive(Serialize)]
struct JsonTaskIterations<'a> {
    task: &'a str,
    iterations: Vec<JsonIteration>,
}

#[derive(Serialize)]
struct JsonIteration {
    begin_ns: u64,
    duration_ns: u64,
}

/// CSV text of a header and rows.
fn csv_text<const N: usize>(
    header: [&str; N],
    rows: impl IntoIterator<Item = [String; N]>,
) -> String {
    let mut csv = csv::Writer::from_writer(Vec::new());
    let written = csv
        .write_record(header)
        .and_then(|_| rows.into_iter().try_for_each(|row| csv.write_record(&row)));
    written.expect("CSV into memory");
    let bytes = csv.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
}

impl Report {
    /// The printed tables.
    pub fn text(&self, top: usize) -> String {
        let mut out = String::new();
        let streams: usize = self.gpus.iter().map(|g| g.streams).sum();
        let _ = writeln!(
            out,
            "GPU efficiency report of {}: {} s, {} tasks, {} GPUs ({} stream rows)",
            self.trace.display(),
            seconds(self.elapsed_ns),
            self.tasks,
            self.gpus.len(),
            streams
        );
        out.push('\n');
        self.gpu_table(&mut out);
        self.kernel_table(&mut out, top);
        self.named_table(
            &mut out,
            "NCCL kernels per collective",
            "collective",
            &self.nccl,
        );
        self.memory_table(&mut out);
        self.iteration_table(&mut out);
        out
    }

    fn gpu_table(&self, out: &mut String) {
        if self.gpus.is_empty() {
            out.push_str("No GPU stream rows (CUDA-D<n>.S<m>): no GPU efficiency model.\n\n");
            return;
        }
        let width = self
            .gpus
            .iter()
            .map(|g| g.name.chars().count())
            .max()
            .unwrap_or(3)
            .clamp(3, 48);
        let _ = writeln!(
            out,
            "{:<width$}  {:>12}  {:>12}  {:>12}  {:>7}  {:>7}  {:>7}",
            "GPU", "useful s", "comm s", "idle s", "useful", "comm", "idle"
        );
        for g in &self.gpus {
            let _ = writeln!(
                out,
                "{:<width$}  {:>12}  {:>12}  {:>12}  {:>7}  {:>7}  {:>7}",
                clip(&g.name, width),
                seconds(g.useful_ns),
                seconds(g.communication_ns),
                seconds(g.idle_ns),
                percent(share(g.useful_ns, self.elapsed_ns)),
                percent(share(g.communication_ns, self.elapsed_ns)),
                percent(share(g.idle_ns, self.elapsed_ns)),
            );
        }
        out.push('\n');
        if let Some(m) = &self.model {
            let rows = [
                (
                    "Parallel efficiency",
                    m.parallel_efficiency,
                    "avg(useful) / elapsed = LB x CommE x OrchE",
                ),
                (
                    "  Load balance",
                    m.load_balance,
                    "avg(useful) / max(useful)",
                ),
                (
                    "  Communication efficiency",
                    m.communication_efficiency,
                    "max(useful) / max(useful + communication)",
                ),
                (
                    "  Orchestration efficiency",
                    m.orchestration_efficiency,
                    "max(useful + communication) / elapsed",
                ),
            ];
            for (name, value, how) in rows {
                let _ = writeln!(out, "{name:<28} {:>7}   {how}", percent(value));
            }
            out.push('\n');
        }
    }

    fn kernel_table(&self, out: &mut String, top: usize) {
        if self.kernels.is_empty() {
            return;
        }
        let total: u64 = self.kernels.iter().map(|k| k.total_ns).sum();
        let _ = writeln!(
            out,
            "Top kernels by GPU time ({} of {} kernels)",
            top.min(self.kernels.len()),
            self.kernels.len()
        );
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>7}  {:>12}  {:>12}",
            "kernel", "calls", "total s", "share", "mean us", "max us"
        );
        for k in self.kernels.iter().take(top) {
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>7}  {:>12.3}  {:>12.3}",
                clip(&k.name, 40),
                k.count,
                seconds(k.total_ns),
                percent(share(k.total_ns, total)),
                k.mean_ns() / 1e3,
                k.max_ns as f64 / 1e3
            );
        }
        out.push('\n');
    }

    fn named_table(&self, out: &mut String, title: &str, what: &str, list: &[NamedStats]) {
        if list.is_empty() {
            return;
        }
        let _ = writeln!(out, "{title}");
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>12}  {:>16}",
            what, "calls", "total s", "mean us", "bytes"
        );
        for s in list {
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>12.3}  {:>16}",
                clip(&s.name, 40),
                s.count,
                seconds(s.total_ns),
                s.mean_ns() / 1e3,
                s.bytes
            );
        }
        out.push('\n');
    }

    fn memory_table(&self, out: &mut String) {
        if self.memory.is_empty() {
            return;
        }
        let _ = writeln!(out, "Memory operations");
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>16}  {:>10}",
            "operation", "count", "total s", "bytes", "GB/s"
        );
        for s in &self.memory {
            let bandwidth = if s.total_ns > 0 {
                format!("{:.3}", s.bytes as f64 / s.total_ns as f64)
            } else {
                "n/a".into()
            };
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>16}  {:>10}",
                clip(&s.name, 40),
                s.count,
                seconds(s.total_ns),
                s.bytes,
                bandwidth
            );
        }
        out.push('\n');
    }

    fn iteration_table(&self, out: &mut String) {
        if let Some(note) = &self.iterations_note {
            let _ = writeln!(out, "Iterations: {note}\n");
        }
        let Some(it) = &self.iterations else { return };
        let _ = writeln!(out, "Iterations (NVTX range '{}') per task", it.range);
        let width = it
            .tasks
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 48);
        let _ = writeln!(
            out,
            "{:<width$}  {:>6}  {:>12}  {:>12}  {:>12}",
            "task", "count", "mean ms", "min ms", "max ms"
        );
        for (task, list) in &it.tasks {
            let durations: Vec<u64> = list.iter().map(|(_, d)| *d).collect();
            let mean = durations.iter().sum::<u64>() as f64 / durations.len().max(1) as f64;
            let _ = writeln!(
                out,
                "{:<width$}  {:>6}  {:>12.3}  {:>12.3}  {:>12.3}",
                clip(task, width),
                durations.len(),
                mean / 1e6,
                durations.iter().min().copied().unwrap_or(0) as f64 / 1e6,
                durations.iter().max().copied().unwrap_or(0) as f64 / 1e6,
            );
        }
        // Iteration k across tasks: the slowest task against the average.
        let count = it.tasks.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        if it.tasks.len() > 1 && count > 0 {
            let _ = writeln!(
                out,
                "{:>9}  {:>12}  {:>12}  {:>10}",
                "iteration", "mean ms", "max ms", "max/mean"
            );
            for k in 0..count {
                let durations: Vec<u64> = it
                    .tasks
                    .iter()
                    .filter_map(|(_, l)| l.get(k).map(|(_, d)| *d))
                    .collect();
                let mean = durations.iter().sum::<u64>() as f64 / durations.len() as f64;
                let max = durations.iter().max().copied().unwrap_or(0) as f64;
                let _ = writeln!(
                    out,
                    "{:>9}  {:>12.3}  {:>12.3}  {:>10.3}",
                    k + 1,
                    mean / 1e6,
                    max / 1e6,
                    if mean > 0.0 { max / mean } else { f64::NAN }
                );
            }
        }
        out.push('\n');
    }

    fn json(&self) -> String {
        let iterations = self.iterations.as_ref().map(|it| JsonIterations {
            range: &it.range,
            tasks: it
                .tasks
                .iter()
                .map(|(task, list)| JsonTaskIterations {
                    task,
                    iterations: list
                        .iter()
                        .map(|&(begin_ns, duration_ns)| JsonIteration {
                            begin_ns,
                            duration_ns,
                        })
                        .collect(),
                })
                .collect(),
        });
        let report = JsonReport {
            trace: self.trace.display().to_string(),
            elapsed_ns: self.elapsed_ns,
            tasks: self.tasks,
            gpus: &self.gpus,
            efficiency: self.model,
            kernels: &self.kernels,
            nccl: &self.nccl,
            memory: &self.memory,
            iterations,
        };
        let mut text = serde_json::to_string_pretty(&report).expect("JSON of plain data");
        text.push('\n');
        text
    }

    /// Writes `NAME.report.json` and the CSV tables; returns their paths.
    pub fn write_files(&self) -> Result<Vec<PathBuf>> {
        let mut files: Vec<(String, String)> = Vec::new();
        files.push(("json".into(), self.json()));

        let gpus = self.gpus.iter().map(|g| {
            [
                g.name.clone(),
                g.task.to_string(),
                g.device.to_string(),
                g.streams.to_string(),
                g.useful_ns.to_string(),
                g.communication_ns.to_string(),
                g.idle_ns.to_string(),
                self.elapsed_ns.to_string(),
            ]
        });
        let header = [
            "gpu",
            "task",
            "device",
            "streams",
            "useful_ns",
            "communication_ns",
            "idle_ns",
            "elapsed_ns",
        ];
        files.push(("gpus.csv".into(), csv_text(header, gpus)));

        let mut model = vec![
            ["elapsed_ns".to_string(), self.elapsed_ns.to_string()],
            ["gpus".to_string(), self.gpus.len().to_string()],
        ];
        if let Some(m) = &self.model {
            for (name, v) in [
                ("load_balance", m.load_balance),
                ("communication_efficiency", m.communication_efficiency),
                ("orchestration_efficiency", m.orchestration_efficiency),
                ("parallel_efficiency", m.parallel_efficiency),
            ] {
                let v = if v.is_finite() {
                    format!("{v:.6}")
                } else {
                    String::new()
                };
                model.push([name.to_string(), v]);
            }
        }
        files.push((
            "efficiency.csv".into(),
            csv_text(["metric", "value"], model),
        ));

        let stats_csv = |first: &str, list: &[NamedStats]| {
            let header = [
                first, "count", "total_ns", "mean_ns", "min_ns", "max_ns", "bytes",
            ];
            let rows = list.iter().map(|s| {
                [
                    s.name.clone(),
                    s.count.to_string(),
                    s.total_ns.to_string(),
                    format!("{:.1}", s.mean_ns()),
                    s.min_ns.to_string(),
                    s.max_ns.to_string(),
                    s.bytes.to_string(),
                ]
            });
            csv_text(header, rows)
        };
        files.push(("kernels.csv".into(), stats_csv("kernel", &self.kernels)));
        files.push(("nccl.csv".into(), stats_csv("collective", &self.nccl)));
        files.push(("memory.csv".into(), stats_csv("operation", &self.memory)));
        if let Some(it) = &self.iterations {
            let rows = it.tasks.iter().flat_map(|(task, list)| {
                list.iter().enumerate().map(move |(k, (begin, duration))| {
                    [
                        it.range.clone(),
                        task.clone(),
                        (k + 1).to_string(),
                        begin.to_string(),
                        duration.to_string(),
                    ]
                })
            });
            let header = ["range", "task", "iteration", "begin_ns", "duration_ns"];
            files.push(("iterations.csv".into(), csv_text(header, rows)));
        } else {
            // No iteration table this time: leave no stale one from an earlier run.
            let _ = std::fs::remove_file(format!("{}.report.iterations.csv", self.base));
        }

        let mut written = Vec::new();
        for (suffix, text) in files {
            let path = PathBuf::from(format!("{}.report.{suffix}", self.base));
            std::fs::write(&path, text)
                .with_context(|| format!("{}: cannot write the report", path.display()))?;
            written.push(path);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_rows_are_recognised() {
        assert_eq!(gpu_device("CUDA-D0.S7"), Some(0));
        assert_eq!(gpu_device("CUDA-D12.S13"), Some(12));
        assert_eq!(gpu_device("main (4242)"), None);
        assert_eq!(gpu_device("GPU0 metrics"), None);
    }

    #[test]
    fn the_model_multiplies_to_the_parallel_efficiency() {
        let gpu = |useful_ns, communication_ns| GpuTimes {
            name: String::new(),
            task: 1,
            device: 0,
            streams: 1,
            useful_ns,
            communication_ns,
            idle_ns: 0,
        };
        let gpus = [gpu(400, 100), gpu(300, 120), gpu(200, 100), gpu(100, 400)];
        let m = Model::of(&gpus, 1000).unwrap();
        assert!((m.load_balance - 0.625).abs() < 1e-12);
        assert!((m.communication_efficiency - 0.8).abs() < 1e-12);
        assert!((m.orchestration_efficiency - 0.5).abs() < 1e-12);
        assert!((m.parallel_efficiency - 0.25).abs() < 1e-12);
        let product = m.load_balance * m.communication_efficiency * m.orchestration_efficiency;
        assert!((product - m.parallel_efficiency).abs() < 1e-12);
        assert!(Model::of(&[], 1000).is_none());
    }

    #[test]
    fn tables_are_written_as_csv_and_json() {
        let csv = csv_text(["a", "b"], [["x,y".to_string(), "void f<int>(int)".into()]]);
        assert_eq!(csv, "a,b\n\"x,y\",void f<int>(int)\n");
        let quoted = csv_text(["q"], [["say \"hi\"\n".to_string()]]);
        assert_eq!(quoted, "q\n\"say \"\"hi\"\"\n\"\n");
        let m = Model {
            load_balance: 0.1234567,
            communication_efficiency: f64::NAN,
            orchestration_efficiency: 1.0,
            parallel_efficiency: 0.5,
        };
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"load_balance":0.123457,"communication_efficiency":null,"orchestration_efficiency":1.0,"parallel_efficiency":0.5}"#
        );
    }
}
