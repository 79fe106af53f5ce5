//! Writing one export file: validation, then every table inside one transaction.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use rusqlite::Connection;

use crate::activity::ActivityTables;
use crate::catalog::HELPER_THREADS;
use crate::device::{write_gpu_metrics, write_ib_switch, write_nic_metrics, write_soc_metrics};
use crate::ids::MAX_OS_ID;
use crate::layout::contexts;
use crate::meta::{write_enums, write_metadata};
use crate::mpi::{self, RankTimeline};
use crate::mpi_export::MpiOutput;
use crate::rng::SplitMix64;
use crate::sim::{NameIds, ProcessSim, Training, TrainingNames};
use crate::strings::StringIds;
use crate::target_info::{self, ProcessPlan};
use crate::{SynthCounts, SynthGraphMode, SynthProcess, SynthSpec, SynthTraining};

/// Profiled processes start 150-250 ms into the session (nsys and CUDA start-up).
const FIRST_PROCESS_START: i64 = 150_000_000;
const PROCESS_START_SPREAD: i64 = 100_000_000;
/// The session outlasts the last activity by 1 ms.
const SESSION_TAIL: i64 = 1_000_000;

fn validate_process(process: &SynthProcess) -> Result<()> {
    let name = &process.name;
    let gpu_work = process.kernels + process.memcpys + process.memsets + process.syncs;
    let threads_needed = process.cpu_threads + 10 + HELPER_THREADS.len() as u32;
    ensure!(process.pid > 0, "process {name}: pid must be positive");
    ensure!(
        process
            .pid
            .checked_add(threads_needed)
            .is_some_and(|last| last <= MAX_OS_ID),
        "process {name}: pid {} plus its threads does not fit the 24-bit tid field",
        process.pid
    );
    ensure!(
        process.cpu_threads > 0 || gpu_work + process.extra_api_calls == 0,
        "process {name}: API activity needs at least one CPU thread"
    );
    ensure!(
        !process.devices.is_empty() || gpu_work == 0,
        "process {name}: GPU work needs at least one device"
    );
    let unique: HashSet<u32> = process.devices.iter().copied().collect();
    ensure!(
        unique.len() == process.devices.len(),
        "process {name}: device ids repeat"
    );
    Ok(())
}

fn validate(spec: &SynthSpec) -> Result<()> {
    let mut pids = HashSet::new();
    for process in &spec.processes {
        validate_process(process)?;
        ensure!(
            pids.insert(process.pid),
            "pid {} appears twice in one export",
            process.pid
        );
    }
    if let Some(mpi) = &spec.mpi {
        mpi::validate(spec, mpi)?;
    }
    if let Some(training) = &spec.training {
        validate_training(spec, training)?;
    }
    validate_device(spec)
}

fn validate_training(spec: &SynthSpec, training: &SynthTraining) -> Result<()> {
    ensure!(
        spec.schema.has_mpi_tables(),
        "training loops need schema 3.16 or later (older ones record MPI in NVTX_EVENTS too)"
    );
    ensure!(
        spec.processes
            .iter()
            .all(|p| p.cpu_threads > 0 && !p.devices.is_empty()),
        "training loops need every process to have a CPU thread and a device"
    );
    ensure!(
        (4..=12).contains(&training.nvtx_depth),
        "NVTX depth of a training loop must be 4 to 12"
    );
    ensure!(
        training.layers > 0 && training.steps_per_epoch > 0,
        "training loops need at least one layer and one step per epoch"
    );
    Ok(())
}

fn validate_device(spec: &SynthSpec) -> Result<()> {
    let (device, version) = (&spec.device, spec.schema);
    ensure!(
        device.graph_launches == 0
            || device.graph_mode == SynthGraphMode::Node
            || version.has_graph_trace(),
        "graph-mode graph tracing (CUPTI_ACTIVITY_KIND_GRAPH_TRACE) needs schema 3.16 or later"
    );
    ensure!(
        device.memory_allocations == 0 || version.has_memory_usage(),
        "memory usage rows need schema 3.0 or later"
    );
    ensure!(
        device.nic_samples == 0 || version.has_nic_metrics(),
        "NIC counters need schema 3.16 or later"
    );
    ensure!(
        device.ib_switch_samples + device.ib_congestion_events + device.soc_metric_samples == 0
            || version.has_ib_and_soc_metrics(),
        "IB switch and SoC metrics need schema 3.16 or later"
    );
    ensure!(
        device.host_functions == 0 || version.has_host_functions(),
        "CUDA host functions need schema 3.24"
    );
    let uses_gpus = spec.processes.iter().any(|p| !p.devices.is_empty());
    ensure!(
        device.graph_launches + device.memory_allocations + device.host_functions == 0
            || spec
                .processes
                .iter()
                .all(|p| p.cpu_threads > 0 && !p.devices.is_empty()),
        "graphs, allocations and host functions need every process to have a CPU thread and a device"
    );
    ensure!(
        device.gpu_metric_samples == 0 || uses_gpus || !device.metric_gpus.is_empty(),
        "GPU metrics need a GPU to sample"
    );
    Ok(())
}

pub(crate) fn write_export(spec: &SynthSpec, path: &Path) -> Result<SynthCounts> {
    validate(spec)?;
    if path.exists() {
        bail!("{} already exists", path.display());
    }
    let written = write_file(spec, path).with_context(|| format!("writing {}", path.display()));
    if written.is_err() {
        // Leave no half-written export behind; the original error is what matters.
        let _ = std::fs::remove_file(path);
    }
    written
}

fn write_file(spec: &SynthSpec, path: &Path) -> Result<SynthCounts> {
    let mut conn = Connection::open(path)?;
    // A throw-away file: no rollback journal, no fsync. Schema 2.9.1 declares REFERENCES to
    // tables it may not create (CUDA_CALLCHAINS), and the bundled SQLite enforces foreign keys by
    // default; the real exporter does not.
    conn.execute_batch(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA foreign_keys=OFF;",
    )?;
    let transaction = conn.transaction()?;
    let counts = write_tables(&transaction, spec, path)?;
    transaction.commit()?;
    Ok(counts)
}

/// Runs the CUDA model of every process and returns its counts, the last end time written and,
/// for an MPI rank, the timeline of its MPI calls.
fn run_processes<'s>(
    conn: &Connection,
    spec: &'s SynthSpec,
    plans: &[ProcessPlan<'_>],
    names: &NameIds,
    training: Option<Training<'_>>,
) -> Result<(SynthCounts, i64, Option<RankTimeline<'s>>)> {
    let mut activity = ActivityTables::new(conn, spec.schema);
    let mut seeds = SplitMix64::new(spec.seed);
    let mut mpi_rank = None;
    for (index, plan) in plans.iter().enumerate() {
        let process_start = FIRST_PROCESS_START + seeds.range(0, PROCESS_START_SPREAD);
        let seed = seeds.next_u64();
        let mut cuda_start = process_start;
        // The first process is the MPI rank: it communicates first, then runs its CUDA work.
        if let (0, Some(mpi)) = (index, &spec.mpi) {
            let timeline = RankTimeline::plan(spec, mpi, process_start);
            cuda_start = timeline.cuda_start();
            mpi_rank = Some(timeline);
        }
        ProcessSim::new(
            plan.process,
            &plan.contexts,
            names,
            &mut activity,
            seed,
            cuda_start,
            &spec.device,
        )
        .with_training(training)
        .run()?;
    }
    Ok((activity.counts(), activity.last_end(), mpi_rank))
}

/// Adds MPI_Finalize after everything else, writes the rank's MPI rows and returns the counts
/// with the MPI ones filled in, and the new last end time.
fn write_mpi(
    conn: &Connection,
    spec: &SynthSpec,
    mut timeline: RankTimeline<'_>,
    (counts, last_end): (SynthCounts, i64),
    strings: &mut StringIds,
) -> Result<(SynthCounts, i64)> {
    timeline.finalize_after(last_end);
    let mut output = MpiOutput {
        conn,
        version: spec.schema,
        pid: spec.processes[0].pid,
        strings,
    };
    let (mpi, mpi_end) = output.write(&timeline)?;
    let counts = SynthCounts {
        mpi_p2p: mpi.mpi_p2p,
        mpi_collectives: mpi.mpi_collectives,
        mpi_start_wait: mpi.mpi_start_wait,
        mpi_other: mpi.mpi_other,
        mpi_messages: mpi.mpi_messages,
        nvtx_mpi_ranges: mpi.nvtx_mpi_ranges,
        ..counts
    };
    Ok((counts, last_end.max(mpi_end)))
}

fn write_tables(conn: &Connection, spec: &SynthSpec, path: &Path) -> Result<SynthCounts> {
    let mut strings = StringIds::new();
    let mut names = NameIds::intern(&mut strings);
    if spec.device.graph_launches + spec.device.memory_allocations > 0 {
        names.intern_device(&mut strings);
    }
    if spec.device.host_functions > 0 {
        names.intern_host_functions(&mut strings);
    }
    let plans: Vec<ProcessPlan<'_>> = spec
        .processes
        .iter()
        .map(|process| ProcessPlan {
            process,
            contexts: contexts(process),
        })
        .collect();
    let training_names = spec
        .training
        .as_ref()
        .map(|training| TrainingNames::intern(&mut strings, training));
    let training = spec
        .training
        .as_ref()
        .zip(training_names.as_ref())
        .map(|(spec, names)| Training { spec, names });
    let (mut counts, mut last_end, mpi_rank) = run_processes(conn, spec, &plans, &names, training)?;
    if let Some(timeline) = mpi_rank {
        (counts, last_end) = write_mpi(conn, spec, timeline, (counts, last_end), &mut strings)?;
    }
    let duration = last_end + SESSION_TAIL;
    let (gpu_metric_rows, gpu_metric_values) =
        write_gpu_metrics(conn, spec, &mut strings, duration)?;
    let nic_samples = write_nic_metrics(conn, spec, duration)?;
    let (ib_switch_samples, ib_congestion_events) = write_ib_switch(conn, spec, duration)?;
    let soc_metric_rows = write_soc_metrics(conn, spec, duration)?;
    counts = SynthCounts {
        gpu_metric_rows,
        gpu_metric_values,
        nic_samples,
        ib_switch_samples,
        ib_congestion_events,
        soc_metric_rows,
        ..counts
    };

    target_info::write_processes(conn, spec)?;
    target_info::write_thread_names(conn, spec, &mut strings)?;
    target_info::write_process_streams(conn, spec, &mut strings)?;
    target_info::write_system_env(conn, spec)?;
    target_info::write_session_start(conn, spec)?;
    target_info::write_analysis_details(conn, spec, duration)?;
    target_info::write_gpus(conn, spec)?;
    target_info::write_cuda_layout(conn, spec.schema, &plans)?;
    write_metadata(conn, spec, path, duration)?;
    write_enums(conn, spec.schema)?;
    strings.write(conn, spec.schema)?;
    Ok(counts)
}
