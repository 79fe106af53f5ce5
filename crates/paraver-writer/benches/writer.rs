//! Writer throughput on synthetic records shaped like a CUDA report, in records per
//! second:
//! - `RunBuilder` + `finish`: pushing one report's records table by table (as the
//!   translation does: every API call, then every kernel) and sorting them;
//! - `write_trace`: the k-way merge of several sorted runs (one per rank) and the
//!   formatting of the `.prv`, `.pcf` and `.row` into a temporary directory.
//!
//! Each launch gives 6 records: an API call interval (2 records, name + correlation
//! id) and its state on a CPU thread, a kernel interval on a GPU stream (2 records,
//! name + 10 attributes + correlation id), and the launch arrow.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use paraver_writer::*;

const TY_API: u32 = 63_000_000;
const TY_KERNEL: u32 = 63_000_006;
const TY_CORR: u32 = 9200;
const KERNEL_ATTRS: std::ops::RangeInclusive<u32> = 9101..=9110;
const STATE_RUNNING: u32 = 1;
const STATE_LAUNCH: u32 = 32;
const TAG_LAUNCH: i64 = 55_001;

const CPU_THREADS: u32 = 4;
const STREAMS: u32 = 4;
const THREADS: u32 = CPU_THREADS + STREAMS;
const RECORDS_PER_LAUNCH: u64 = 6;

/// Launches of one run, for the builder benchmark and for each rank of the merge.
const BUILD_LAUNCHES: u64 = 400_000; // 2.4M records
const MERGE_RUNS: u64 = 4;
const MERGE_LAUNCHES: u64 = 200_000; // 4 x 1.2M = 4.8M records

/// A small deterministic generator (xorshift), so runs are the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One kernel launch: the API call on a CPU thread and the kernel on a stream.
#[derive(Clone, Copy)]
struct Launch {
    cpu: usize,
    start: i64,
    end: i64,
    stream: usize,
    k_start: i64,
    k_end: i64,
    api: u32,
    kernel: u32,
}

/// The launches of one rank, and the order the translation meets them in: API calls
/// by start, then kernels by start (each table is read in time order).
struct Rank {
    launches: Vec<Launch>,
    by_start: Vec<usize>,
    by_kernel: Vec<usize>,
}

const API_NAMES: u32 = 20;
const KERNEL_NAMES: u32 = 60;

fn rank(launches: u64, seed: u64) -> Rank {
    let mut rng = Rng(seed | 1);
    let mut cpu_clock = [0i64; CPU_THREADS as usize];
    let mut gpu_clock = [0i64; STREAMS as usize];
    let launches: Vec<Launch> = (0..launches)
        .map(|i| {
            let r = rng.next();
            let cpu = (i % u64::from(CPU_THREADS)) as usize;
            let start = cpu_clock[cpu] + 500 + (r % 3000) as i64;
            let end = start + 2000 + (r >> 20) as i64 % 8000;
            cpu_clock[cpu] = end;
            let stream = ((r >> 8) % u64::from(STREAMS)) as usize;
            let k_start = gpu_clock[stream].max(end + 1000);
            let k_end = k_start + 1000 + (r >> 32) as i64 % 50_000;
            gpu_clock[stream] = k_end;
            Launch {
                cpu,
                start,
                end,
                stream,
                k_start,
                k_end,
                api: (r % u64::from(API_NAMES)) as u32,
                kernel: ((r >> 40) % u64::from(KERNEL_NAMES)) as u32,
            }
        })
        .collect();
    let mut by_start: Vec<usize> = (0..launches.len()).collect();
    by_start.sort_by_key(|&i| launches[i].start);
    let mut by_kernel: Vec<usize> = (0..launches.len()).collect();
    by_kernel.sort_by_key(|&i| launches[i].k_start);
    Rank {
        launches,
        by_start,
        by_kernel,
    }
}

/// Pushes a rank's records into a new builder, as the translation would.
fn push(rank: &Rank) -> RunBuilder {
    let mut run = RunBuilder::new();
    let threads: Vec<LocalThread> = (0..THREADS).map(|t| run.add_thread(t as u128)).collect();
    let api_names: Vec<u32> = (0..API_NAMES)
        .map(|i| run.names.intern(TY_API, &format!("cudaApiCall{i}_v3020")))
        .collect();
    let kernel_names: Vec<u32> = (0..KERNEL_NAMES)
        .map(|i| {
            run.names
                .intern(TY_KERNEL, &format!("kernel_{i}<float, 128>"))
        })
        .collect();
    for &i in &rank.by_start {
        let l = rank.launches[i];
        let t = threads[l.cpu];
        run.interval(
            t,
            l.start,
            l.end,
            &[
                EventPair::name(TY_API, api_names[l.api as usize]),
                EventPair::raw(TY_CORR, i as i64 + 1),
            ],
        );
        run.state(t, l.start, l.end, STATE_LAUNCH);
    }
    let mut pairs = Vec::with_capacity(12);
    for &i in &rank.by_kernel {
        let l = rank.launches[i];
        let t = threads[CPU_THREADS as usize + l.stream];
        pairs.clear();
        pairs.push(EventPair::name(TY_KERNEL, kernel_names[l.kernel as usize]));
        pairs.extend(KERNEL_ATTRS.map(|ty| EventPair::raw(ty, i64::from(ty % 97) * 8)));
        pairs.push(EventPair::raw(TY_CORR, i as i64 + 1));
        run.interval(t, l.k_start, l.k_end, &pairs);
        run.comm(
            threads[l.cpu],
            l.start,
            Comm {
                send_physical: l.start,
                receiver: t,
                recv_logical: l.k_start,
                recv_physical: l.k_start,
                size: 0,
                tag: TAG_LAUNCH,
            },
        );
    }
    run
}

fn layout(runs: u64) -> TraceLayout {
    TraceLayout {
        application: "bench".into(),
        date: "01/01/2026 at 00:00".into(),
        nodes: (0..2)
            .map(|n| NodeInfo {
                name: format!("node{n:02}"),
                cpus: 64,
            })
            .collect(),
        tasks: (0..runs)
            .map(|r| TaskInfo {
                name: format!("rank {r}"),
                node: (r % 2) as u32,
                threads: (0..THREADS)
                    .map(|t| {
                        if t < CPU_THREADS {
                            format!("app ({t})")
                        } else {
                            format!("CUDA-D0.S{}", t - CPU_THREADS)
                        }
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn catalog() -> PcfCatalog {
    let named =
        |ty: u32, label: &str| EventTypeInfo::new(ty, label, ValueLabels::Names, Timing::Interval);
    let numeric = |ty: u32| {
        EventTypeInfo::new(
            ty,
            &format!("attribute {ty}"),
            ValueLabels::Numeric,
            Timing::Interval,
        )
    };
    let mut types = vec![
        named(TY_API, "CUDA library call"),
        named(TY_KERNEL, "CUDA kernel"),
    ];
    types.extend(KERNEL_ATTRS.map(numeric));
    types.push(numeric(TY_CORR));
    PcfCatalog {
        states: [0, STATE_RUNNING, STATE_LAUNCH]
            .into_iter()
            .map(|id| StateInfo {
                id,
                label: format!("state {id}"),
                color: (10, 20, 30),
            })
            .collect(),
        types,
    }
}

fn bench_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("paraver-writer");
    group.sample_size(10);
    let records = BUILD_LAUNCHES * RECORDS_PER_LAUNCH;
    group.throughput(Throughput::Elements(records));
    // The launch list is generated outside the timing; the pushes are what the
    // translation does, so they are timed with the sort.
    let input = rank(BUILD_LAUNCHES, 7);
    group.bench_function(
        format!("RunBuilder push + finish ({records} records)"),
        |b| {
            b.iter(|| {
                let run = push(&input).finish().expect("finish");
                assert_eq!(run.len() as u64, records);
                run
            })
        },
    );
    group.bench_function(
        format!("RunBuilder::finish only ({records} records)"),
        |b| {
            b.iter_batched(
                || push(&input),
                |builder| builder.finish().expect("finish"),
                BatchSize::PerIteration,
            )
        },
    );
    group.finish();
}

fn bench_write(c: &mut Criterion) {
    let inputs: Vec<MergeInput> = (0..MERGE_RUNS)
        .map(|r| MergeInput {
            run: push(&rank(MERGE_LAUNCHES, 1000 + r))
                .finish()
                .expect("finish"),
            time_offset: 1_700_000_000_000_000_000 + r as i64 * 1_234,
            threads: (0..THREADS)
                .map(|t| GlobalThread {
                    task: r as u32,
                    thread: t,
                })
                .collect(),
        })
        .collect();
    let records: u64 = inputs.iter().map(|i| i.run.len() as u64).sum();
    let layout = layout(MERGE_RUNS);
    let catalog = catalog();
    let dir = tempfile::tempdir().expect("temporary directory");
    let paths = OutputPaths::for_trace(&dir.path().join("bench.prv")).expect("output paths");

    let mut group = c.benchmark_group("paraver-writer");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records));
    group.bench_function(
        format!("write_trace merge + format ({MERGE_RUNS} runs, {records} records)"),
        |b| {
            b.iter(|| {
                write_trace(&paths, &layout, &inputs, &catalog, &mut |_| {})
                    .expect("writing the trace")
            })
        },
    );
    group.finish();
    let size = std::fs::metadata(&paths.prv).map(|m| m.len()).unwrap_or(0);
    eprintln!("last .prv written: {} MB", size / 1_000_000);
}

criterion_group!(benches, bench_build, bench_write);
criterion_main!(benches);
