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

/// Pushes `launches` launches of one rank into a new builder.
fn build(launches: u64, seed: u64) -> RunBuilder {
    let mut rng = Rng(seed | 1);
    let mut run = RunBuilder::new();
    let threads: Vec<LocalThread> = (0..THREADS).map(|t| run.add_thread(t as u128)).collect();
    let api_names: Vec<u32> = (0..20)
        .map(|i| run.names.intern(TY_API, &format!("cudaApiCall{i}_v3020")))
        .collect();
    let kernel_names: Vec<u32> = (0..60)
        .map(|i| {
            run.names
                .intern(TY_KERNEL, &format!("kernel_{i}<float, 128>"))
        })
        .collect();

    // (cpu thread, call start, call end, stream, kernel start, kernel end, names)
    let mut launches_v = Vec::with_capacity(launches as usize);
    let mut cpu_clock = [0i64; CPU_THREADS as usize];
    let mut gpu_clock = [0i64; STREAMS as usize];
    for i in 0..launches {
        let r = rng.next();
        let cpu = (i % u64::from(CPU_THREADS)) as usize;
        let start = cpu_clock[cpu] + 500 + (r % 3000) as i64;
        let end = start + 2000 + (r >> 20) as i64 % 8000;
        cpu_clock[cpu] = end;
        let stream = ((r >> 8) % u64::from(STREAMS)) as usize;
        let k_start = gpu_clock[stream].max(end + 1000);
        let k_end = k_start + 1000 + (r >> 32) as i64 % 50_000;
        gpu_clock[stream] = k_end;
        launches_v.push((
            cpu,
            start,
            end,
            stream,
            k_start,
            k_end,
            api_names[(r % 20) as usize],
            kernel_names[((r >> 40) % 60) as usize],
        ));
    }
    // API calls first, in start order (already per thread; interleave by start).
    let mut by_start: Vec<usize> = (0..launches_v.len()).collect();
    by_start.sort_by_key(|&i| launches_v[i].1);
    for &i in &by_start {
        let (cpu, start, end, _, _, _, api, _) = launches_v[i];
        let t = threads[cpu];
        let corr = i as i64 + 1;
        run.interval(
            t,
            start,
            end,
            &[EventPair::name(TY_API, api), EventPair::raw(TY_CORR, corr)],
        );
        run.state(t, start, end, STATE_LAUNCH);
    }
    // Then kernels, in kernel start order, each with its launch arrow.
    let mut by_kernel: Vec<usize> = (0..launches_v.len()).collect();
    by_kernel.sort_by_key(|&i| launches_v[i].4);
    let mut pairs = Vec::with_capacity(12);
    for &i in &by_kernel {
        let (cpu, start, _, stream, k_start, k_end, _, kernel) = launches_v[i];
        let t = threads[CPU_THREADS as usize + stream];
        pairs.clear();
        pairs.push(EventPair::name(TY_KERNEL, kernel));
        pairs.extend(KERNEL_ATTRS.map(|ty| EventPair::raw(ty, i64::from(ty % 97) * 8)));
        pairs.push(EventPair::raw(TY_CORR, i as i64 + 1));
        run.interval(t, k_start, k_end, &pairs);
        run.comm(
            threads[cpu],
            start,
            Comm {
                send_physical: start,
                receiver: t,
                recv_logical: k_start,
                recv_physical: k_start,
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
    let named = |ty: u32, label: &str| EventTypeInfo {
        ty,
        label: label.into(),
        values: ValueLabels::Names,
        precision: None,
        gradient: 0,
    };
    let numeric = |ty: u32| EventTypeInfo {
        ty,
        label: format!("attribute {ty}"),
        values: ValueLabels::Numeric,
        precision: None,
        gradient: 0,
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
    // Generation of the launch list is outside the timing; the pushes are what the
    // translation does, so they are timed with the sort.
    group.bench_function(
        format!("RunBuilder push + finish ({records} records)"),
        |b| {
            b.iter(|| {
                let run = build(BUILD_LAUNCHES, 7).finish().expect("finish");
                assert_eq!(run.len() as u64, records);
                run
            })
        },
    );
    group.bench_function(
        format!("RunBuilder::finish only ({records} records)"),
        |b| {
            b.iter_batched(
                || build(BUILD_LAUNCHES, 7),
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
            run: build(MERGE_LAUNCHES, 1000 + r).finish().expect("finish"),
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
