//! `nsys-synth`: writes synthetic Nsight Systems exports of an MPI job, one file per rank.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use nsys_synth::{
    add_cpu_activity, write_export, MpiPattern, SchemaVersion, SynthCounts, SynthCpu,
    SynthDeviceSide, SynthGraphMode, SynthLateRank, SynthMpi, SynthParallel, SynthPipeline,
    SynthProcess, SynthSpec, SynthTraining,
};

/// Writes synthetic Nsight Systems SQLite exports (CUDA API calls, kernels, copies, memsets and
/// syncs, or with --training a data-parallel training loop with NVTX and NCCL) of an MPI job:
/// DIR/rank0.sqlite, DIR/rank1.sqlite, ...
#[derive(Parser)]
#[command(name = "nsys-synth", version)]
struct Cli {
    /// Export schema: 2.9, 3.0, 3.7, 3.16, 3.24, or the nsys release 2022.1 ... 2025.5.
    #[arg(long, default_value = "3.24")]
    schema: SchemaVersion,
    /// MPI ranks: one process, and one file, each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    ranks: u32,
    /// Approximate activity rows per rank.
    #[arg(long, default_value_t = 100_000)]
    rows: u64,
    /// Nodes (node01, node02, ...) the ranks are spread over, round-robin.
    #[arg(
        long,
        default_value_t = 1,
        conflicts_with = "single",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    hosts: u32,
    /// Output directory, created if missing; with --single, the output file.
    #[arg(long)]
    out: PathBuf,
    /// Write one file in which every rank is a process of a single node.
    #[arg(long)]
    single: bool,
    /// Give ranks on different nodes the same pids, as on real clusters.
    #[arg(long, conflicts_with = "single")]
    colliding_pids: bool,
    /// CPU threads calling CUDA in each rank.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    threads: u32,
    /// Streams with work per GPU, counting the NULL stream.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    streams: u32,
    /// GPUs per node; a rank uses GPU (its index on the node) modulo this.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    gpus_per_host: u32,
    /// Seed of the generator; the same seed gives the same files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Trace MPI in every rank file: `ring` (Send/Recv, Allreduce, Barrier) or `nonblocking`
    /// (Isend/Irecv, Waitall, Bcast). Schema 3.16+ gets the MPI_* tables, older ones an NVTX
    /// domain "MPI".
    #[arg(long, conflicts_with = "single")]
    mpi: Option<MpiPattern>,
    /// MPI iterations per rank.
    #[arg(long, default_value_t = 10, requires = "mpi")]
    mpi_iterations: u32,
    /// Clock error: rank r records a session start off by (r % 3 - 1) * N ns, which
    /// `--sync mpi-init` must remove.
    #[arg(
        long,
        default_value_t = 0,
        requires = "mpi",
        allow_hyphen_values = true
    )]
    skew_ns: i64,
    /// GPU metric samples per GPU (10 kHz), in GPU_METRICS (schema 3.16+) or GENERIC_EVENTS.
    #[arg(long, default_value_t = 0)]
    gpu_metric_samples: u64,
    /// `cudaGraphLaunch` calls per rank, of one graph of three kernels and a copy (added to the
    /// --rows budget).
    #[arg(long, default_value_t = 0)]
    graph_launches: u64,
    /// How graphs are traced: `graph` (one row per launch, schema 3.16+) or `node` (a kernel or
    /// copy row per node).
    #[arg(long, default_value = "graph", value_parser = ["graph", "node"])]
    graph_mode: String,
    /// Each rank runs a data-parallel training loop (NVTX ranges, NCCL all-reduces with
    /// payloads, copies, syncs; schema 3.16+) of about --rows rows, instead of randomly
    /// interleaved operations. Give --streams 4 for separate compute, NCCL and copy streams.
    #[arg(long)]
    training: bool,
    /// Layers of the training loop's model (33 kernels each per step).
    #[arg(long, default_value_t = 12, requires = "training")]
    layers: u32,
    /// Gradient buckets all-reduced by NCCL per step.
    #[arg(long, default_value_t = 4, requires = "training")]
    buckets: u32,
    /// Distinct kernel names of the training loop.
    #[arg(long, default_value_t = 300, requires = "training")]
    kernel_names: u32,
    /// NVTX nesting depth of the training loop (4-12).
    #[arg(long, default_value_t = 4, requires = "training")]
    nvtx_depth: u32,
    /// NVTX ranges without kernels (view operators) after each operator.
    #[arg(long, default_value_t = 0, requires = "training")]
    cpu_ops: u32,
    /// Kernels of this short name take PCT percent longer (a run to `nsys2prv-rs diff`
    /// against the same command without it): NAME=PCT, e.g. flash_fwd_kernel=30.
    #[arg(long, value_name = "NAME=PCT", value_parser = parse_slower, requires = "training")]
    slower_kernel: Option<(String, u32)>,
    /// This rank spends --straggler-delay-us more in each step's data loading.
    #[arg(long, value_name = "RANK", requires = "training")]
    straggler: Option<u32>,
    /// The straggler's extra time per step, microseconds.
    #[arg(
        long,
        value_name = "US",
        default_value_t = 2_000,
        requires = "straggler"
    )]
    straggler_delay_us: i64,
    /// Pipeline parallelism: rank r is stage r of --ranks stages, running a GPipe schedule of
    /// --micro-batches with ncclSend/ncclRecv of activations and gradients between neighbouring
    /// stages, on the job's common clock.
    #[arg(long, requires = "training", conflicts_with_all = ["mpi", "single"])]
    pipeline: bool,
    /// Micro-batches per step of --pipeline.
    #[arg(long, default_value_t = 4, requires = "pipeline", value_parser = clap::value_parser!(u32).range(1..))]
    micro_batches: u32,
    /// This stage of --pipeline computes twice as slowly as the others.
    #[arg(long, requires = "pipeline")]
    slow_stage: Option<u32>,
    /// This rank starts every all-reduce --late-ns after the others, which wait for it.
    #[arg(long, requires = "training", conflicts_with_all = ["pipeline", "single"])]
    late_rank: Option<u32>,
    /// How late --late-rank is at each all-reduce (ns).
    #[arg(long, default_value_t = 2_000_000, requires = "late_rank")]
    late_ns: i64,
    /// Each training step's data loading keeps the CPU busy this long with the GPU idle (ns).
    #[arg(
        long,
        default_value_t = 0,
        requires = "training",
        conflicts_with = "pipeline"
    )]
    host_gap_ns: i64,
    /// Before each training step's forward pass the compute stream waits (cudaStreamWaitEvent)
    /// for an event another process records this long (ns) after the GPU's previous work: the
    /// forward kernels are launched but wait (a dependency gap).
    #[arg(
        long,
        default_value_t = 0,
        requires = "training",
        conflicts_with = "pipeline"
    )]
    stream_wait_ns: i64,
    /// CPU IP samples per CPU thread, with call stacks (one in four) and context switches;
    /// with --rows 0, a CPU-only report.
    #[arg(long, default_value_t = 0)]
    cpu_samples: u64,
    /// NVTX push/pop ranges per CPU thread, nested three deep.
    #[arg(long, default_value_t = 0)]
    nvtx_ranges: u64,
    /// CPU core counters (0-3: instructions, cycles, L2 misses) sampled every 1 ms on every
    /// CPU the --cpu-samples threads ran on, with their components and metric names.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=3), requires = "cpu_samples")]
    cpu_counters: u32,
}

/// Session start of rank 0 and launch of the MPI job: 2025-03-01T09:00:00Z.
const BASE_EPOCH_NS: i64 = 1_740_819_600_000_000_000;
const BASE_PID: u32 = 31_000;

/// Where a rank runs.
struct Placement {
    rank: u32,
    node: u32,
    /// Index of the rank among those of its node.
    local: u32,
}

fn placement(rank: u32, hosts: u32) -> Placement {
    Placement {
        rank,
        node: rank % hosts,
        local: rank / hosts,
    }
}

fn hostname(node: u32) -> String {
    format!("node{:02}", node + 1)
}

/// Shares of the row budget. Kernels, copies and memsets cost about 2.1 rows each (API call,
/// GPU row, one nested driver call in 8), syncs about 2.7, extra calls 1.
fn rank_process(cli: &Cli, at: &Placement) -> SynthProcess {
    let share = |percent: u64| cli.rows * percent / 100;
    let pid_slot = if cli.colliding_pids {
        at.local
    } else {
        at.rank
    };
    // A training loop takes the whole budget.
    let share = |percent: u64| if cli.training { 0 } else { share(percent) };
    SynthProcess {
        pid: BASE_PID + 101 * pid_slot,
        name: if cli.training {
            "python3"
        } else {
            "./synth_app"
        }
        .to_owned(),
        cpu_threads: cli.threads,
        devices: vec![at.local % cli.gpus_per_host],
        streams_per_device: cli.streams,
        kernels: share(28),
        memcpys: share(10),
        memsets: share(3),
        syncs: share(2),
        extra_api_calls: share(8),
    }
}

/// `NAME=PCT`.
fn parse_slower(text: &str) -> Result<(String, u32), String> {
    let (name, pct) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}': NAME=PCT (flash_fwd_kernel=30)"))?;
    let pct = pct
        .parse()
        .map_err(|_| format!("'{pct}': a whole percentage"))?;
    Ok((name.to_owned(), pct))
}

/// The rank's place in the job when the job is parallel on purpose (else the default, which
/// keeps the loop of earlier versions).
fn parallel(cli: &Cli, rank: u32) -> SynthParallel {
    if !cli.pipeline && cli.late_rank.is_none() && cli.host_gap_ns == 0 && cli.stream_wait_ns == 0 {
        return SynthParallel::default();
    }
    SynthParallel {
        rank,
        world: cli.ranks,
        session_offset_ns: rank_epoch(rank) - BASE_EPOCH_NS,
        pipeline: cli.pipeline.then(|| SynthPipeline {
            slow_stage: cli.slow_stage,
            ..SynthPipeline::new(cli.micro_batches)
        }),
        late_rank: cli.late_rank.map(|rank| SynthLateRank {
            rank,
            late_ns: cli.late_ns,
        }),
        host_gap_ns: cli.host_gap_ns,
        stream_wait_ns: cli.stream_wait_ns,
    }
}

fn training(cli: &Cli, rank: u32) -> Option<SynthTraining> {
    if !cli.training {
        return None;
    }
    let shape = SynthTraining {
        slower_kernel: cli.slower_kernel.clone(),
        data_load_delay_ns: if cli.straggler == Some(rank) {
            cli.straggler_delay_us * 1_000
        } else {
            0
        },
        parallel: parallel(cli, rank),
        layers: cli.layers,
        buckets: cli.buckets,
        kernel_names: cli.kernel_names,
        nvtx_depth: cli.nvtx_depth,
        cpu_ops_per_op: cli.cpu_ops,
        ..SynthTraining::new(1)
    };
    Some(SynthTraining {
        steps: shape.steps_for_rows(cli.rows),
        ..shape
    })
}

fn rank_env(cli: &Cli, at: &Placement) -> Vec<(String, String)> {
    [
        ("SLURM_PROCID", at.rank),
        ("SLURM_LOCALID", at.local),
        ("SLURM_NODEID", at.node),
        ("SLURM_NTASKS", cli.ranks),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_string()))
    .collect()
}

/// Ranks start a few microseconds apart, as `srun` launches them.
fn rank_epoch(rank: u32) -> i64 {
    let rank = i64::from(rank);
    BASE_EPOCH_NS + rank * 2_750 + rank * 7_919 % 1_000
}

/// Rank r's clock is early, exact or late by N in turn, so that skews differ between neighbours.
fn rank_skew(rank: u32, skew_ns: i64) -> i64 {
    (i64::from(rank % 3) - 1) * skew_ns
}

fn rank_mpi(cli: &Cli, rank: u32) -> Option<SynthMpi> {
    cli.mpi.map(|pattern| SynthMpi {
        iterations: cli.mpi_iterations,
        clock_skew_ns: rank_skew(rank, cli.skew_ns),
        ..SynthMpi::new(rank, cli.ranks, pattern, BASE_EPOCH_NS)
    })
}

fn rank_spec(cli: &Cli, at: &Placement) -> SynthSpec {
    SynthSpec {
        schema: cli.schema,
        hostname: hostname(at.node),
        utc_epoch_ns: rank_epoch(at.rank),
        seed: cli
            .seed
            .wrapping_mul(1_000_003)
            .wrapping_add(u64::from(at.rank)),
        processes: vec![rank_process(cli, at)],
        env: rank_env(cli, at),
        mpi: rank_mpi(cli, at.rank),
        device: SynthDeviceSide {
            gpu_metric_samples: cli.gpu_metric_samples,
            graph_launches: cli.graph_launches,
            graph_mode: if cli.graph_mode == "node" {
                SynthGraphMode::Node
            } else {
                SynthGraphMode::Graph
            },
            ..SynthDeviceSide::default()
        },
        training: training(cli, at.rank),
    }
}

/// Every (output file, spec) to write.
fn jobs(cli: &Cli) -> Result<Vec<(PathBuf, SynthSpec)>> {
    if cli.single {
        let placements: Vec<Placement> = (0..cli.ranks).map(|rank| placement(rank, 1)).collect();
        let mut spec = rank_spec(cli, &placements[0]);
        spec.processes = placements.iter().map(|at| rank_process(cli, at)).collect();
        return Ok(vec![(cli.out.clone(), spec)]);
    }
    std::fs::create_dir_all(&cli.out).with_context(|| format!("creating {}", cli.out.display()))?;
    Ok((0..cli.ranks)
        .map(|rank| {
            let at = placement(rank, cli.hosts);
            (
                cli.out.join(format!("rank{rank}.sqlite")),
                rank_spec(cli, &at),
            )
        })
        .collect())
}

/// Writes the jobs on every core, returning the counts in job order.
fn write_all(jobs: &[(PathBuf, SynthSpec)]) -> Result<Vec<SynthCounts>> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    let mut done: Vec<(usize, SynthCounts)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> Result<Vec<(usize, SynthCounts)>> {
                    let mut written = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some((path, spec)) = jobs.get(index) else {
                            return Ok(written);
                        };
                        written.push((index, write_export(spec, path)?));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a writer thread panicked"))
            .collect::<Result<Vec<_>>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    done.sort_by_key(|&(index, _)| index);
    Ok(done.into_iter().map(|(_, counts)| counts).collect())
}

fn mpi_summary(c: &SynthCounts) -> String {
    if c.mpi_rows() == 0 {
        return String::new();
    }
    format!(
        " mpi_p2p={} mpi_collectives={} mpi_start_wait={} mpi_other={} mpi_messages={} nvtx_mpi_ranges={}",
        c.mpi_p2p, c.mpi_collectives, c.mpi_start_wait, c.mpi_other, c.mpi_messages, c.nvtx_mpi_ranges
    )
}

fn device_summary(c: &SynthCounts) -> String {
    let mut summary = String::new();
    if c.device_rows() > 0 {
        summary += &format!(
            " gpu_metric_rows={} graph_traces={} graph_events={}",
            c.gpu_metric_rows, c.graph_traces, c.graph_events
        );
    }
    if c.nvtx_rows > 0 {
        summary += &format!(" nvtx={} nccl_ranges={}", c.nvtx_rows, c.nccl_ranges);
    }
    summary
}

fn print_counts(path: &Path, c: &SynthCounts) {
    println!(
        "{}: kernels={} memcpys={} memsets={} syncs={} runtime={} cuda_events={}{}{} total={}",
        path.display(),
        c.kernels,
        c.memcpys,
        c.memsets,
        c.syncs,
        c.runtime_rows,
        c.cuda_events,
        mpi_summary(c),
        device_summary(c),
        c.total()
    );
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let jobs = jobs(&cli)?;
    let started = Instant::now();
    let counts = write_all(&jobs)?;
    let cpu = SynthCpu {
        samples_per_thread: cli.cpu_samples,
        nvtx_ranges_per_thread: cli.nvtx_ranges,
        cpu_counters: cli.cpu_counters,
    };
    let mut cpu_rows = 0;
    if cpu != SynthCpu::default() {
        for (path, spec) in &jobs {
            let added = add_cpu_activity(path, spec, &cpu)?;
            println!(
                "{}: cpu_samples={} sampling_callchains={} sched_events={} nvtx_ranges={} cpu_counter_samples={}",
                path.display(),
                added.samples,
                added.frames,
                added.sched_events,
                added.nvtx_ranges,
                added.counter_samples
            );
            cpu_rows += added.total();
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    for ((path, _), c) in jobs.iter().zip(&counts) {
        print_counts(path, c);
    }
    let rows: u64 = counts.iter().map(SynthCounts::total).sum::<u64>() + cpu_rows;
    println!(
        "{} file(s), {rows} rows in {seconds:.2} s ({:.0} rows/s)",
        jobs.len(),
        rows as f64 / seconds.max(1e-9)
    );
    Ok(())
}
