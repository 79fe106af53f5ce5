//! Translation of one report into a sorted run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use nsys_reader::{Export, Metadata};
use paraver_writer::{EventTypeInfo, Run};

use crate::catalog::state;
use crate::context::{ReportContext, ThreadKey};
use crate::cuda_api::{self, ApiOutputs};
use crate::cuda_gpu::{self, GpuLinks};
use crate::cuda_sync::{self, SyncCalls};
use crate::mpi::{self, P2pEndpoint, SyncPoints};
use crate::nccl::NcclRanges;
use crate::options::{Category, Options};
use crate::TranslateError;
use crate::{
    cuda_events, cuda_graphs, gpu_memory, gpu_metrics, host_functions, network, nvtx, openacc,
    openmp, osrt, ranks, sched, soc_metrics,
};

/// Everything one report contributes to the trace.
pub struct ReportTranslation {
    pub path: PathBuf,
    pub meta: Metadata,
    pub run: Run,
    /// Local thread index → what the thread is.
    pub threads: Vec<ThreadKey>,
    pub thread_names: HashMap<(u32, u32), String>,
    pub process_names: HashMap<u32, String>,
    /// Names of device rows (NICs, IB switches) where the export has them.
    pub row_labels: HashMap<ThreadKey, String>,
    /// Rows translated per table (and other counts).
    pub counts: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    /// Labels of event types numbered from the data (NVTX domains).
    pub extra_types: Vec<EventTypeInfo>,
    /// pid → MPI world rank, where known.
    pub ranks: HashMap<u32, u32>,
    /// Point-to-point message endpoints, paired across reports later.
    pub p2p: Vec<P2pEndpoint>,
    /// Times every rank shares (end of MPI_Init, barriers, first NCCL kernel).
    pub sync_points: SyncPoints,
}

/// Translates the export at `path`; `name` is the report as the user gave it
/// (a `.nsys-rep` read through its export), used in messages and for the rank
/// in the file name.
pub fn translate_report(
    path: &Path,
    name: &Path,
    options: &Options,
) -> Result<ReportTranslation, TranslateError> {
    let mut export = Export::open(path)?;
    export.set_decode_ahead(options.decode_ahead);
    let mut ctx = ReportContext::new(&export, options);

    let mut links = GpuLinks::default();
    if options.wants(Category::Kernels) {
        cuda_gpu::kernels(&mut ctx, &mut links)?;
    }
    if options.wants(Category::Memory) {
        cuda_gpu::memory(&mut ctx, &mut links)?;
    }
    if options.wants(Category::Graphs) {
        cuda_graphs::translate(&mut ctx, &mut links)?;
    }
    if options.wants(Category::HostFunctions) {
        host_functions::translate(&mut ctx, &mut links)?;
    }
    links.sort();
    let syncs = if options.wants(Category::Sync) {
        cuda_sync::collect(&mut ctx)?
    } else {
        SyncCalls::default()
    };
    let wanted = nvtx::Wanted {
        nvtx: options.wants(Category::Nvtx),
        nccl: options.wants(Category::Nccl),
        mpi: options.wants(Category::Mpi),
    };
    let nccl_ranges = if wanted.nvtx || wanted.nccl || wanted.mpi {
        nvtx::translate(&mut ctx, wanted)?
    } else {
        NcclRanges::default()
    };
    let outputs = ApiOutputs {
        calls: options.wants(Category::CudaApi),
        syncs: options.wants(Category::Sync),
    };
    if outputs.calls || outputs.syncs {
        cuda_api::translate(&mut ctx, &links, &syncs, &nccl_ranges, outputs)?;
    }
    if options.wants(Category::CudaEvents) {
        cuda_events::translate(&mut ctx)?;
    }
    if options.wants(Category::GpuMemory) {
        gpu_memory::translate(&mut ctx)?;
    }
    let p2p = if options.wants(Category::Mpi) {
        mpi::translate(&mut ctx)?.endpoints
    } else {
        Vec::new()
    };
    if options.wants(Category::Osrt) {
        osrt::translate(&mut ctx)?;
    }
    if options.wants(Category::OpenMp) {
        openmp::translate(&mut ctx)?;
    }
    if options.wants(Category::OpenAcc) {
        openacc::translate(&mut ctx)?;
    }
    if options.wants(Category::Sched) {
        sched::translate(&mut ctx)?;
    }
    // Metrics and network rows go under processes found above.
    if options.wants(Category::GpuMetrics) {
        gpu_metrics::translate(&mut ctx)?;
        soc_metrics::translate(&mut ctx)?;
    }
    if options.wants(Category::Network) {
        network::translate(&mut ctx)?;
    }
    finish(ctx, name, p2p)
}

fn finish(
    ctx: ReportContext,
    path: &Path,
    mut p2p: Vec<P2pEndpoint>,
) -> Result<ReportTranslation, TranslateError> {
    let ReportContext {
        export,
        mut run,
        states,
        thread_keys,
        mut counts,
        warnings,
        extra_types,
        nvtx_thread_names,
        nvtx_ranks,
        sync_points,
        row_labels,
        ..
    } = ctx;
    // CPU threads run user code between calls; GPU streams idle between operations.
    if states.spilled_chunks() > 0 {
        counts.insert(
            "spilled state chunks".to_string(),
            states.spilled_chunks() as u64,
        );
    }
    let written = states.tile_into(&mut run, |t| {
        Some(if thread_keys[t as usize].is_cpu() {
            state::RUNNING
        } else {
            state::IDLE
        })
    });
    written.map_err(|source| TranslateError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    if run.is_empty() {
        return Err(TranslateError::Empty(path.to_path_buf()));
    }
    // The run numbers threads in layout (ThreadKey) order; follow it here.
    let run = run.finish().map_err(|source| TranslateError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    if !run.chunks.is_empty() {
        counts.insert("spilled chunks".to_string(), run.chunks.len() as u64);
    }
    let thread_keys: Vec<ThreadKey> = run
        .old_of_new
        .iter()
        .map(|&old| thread_keys[old as usize])
        .collect();
    p2p.retain(|e| e.thread != paraver_writer::DISCARDED);
    for e in &mut p2p {
        e.thread = run.new_of_old[e.thread as usize];
    }
    let ranks = ranks::process_ranks(export, &thread_keys, &nvtx_ranks)?;
    Ok(ReportTranslation {
        path: path.to_path_buf(),
        meta: export.meta().clone(),
        run,
        threads: thread_keys,
        thread_names: thread_names(export, nvtx_thread_names)?,
        process_names: export.process_names()?,
        row_labels: row_labels.into_iter().collect(),
        counts,
        warnings,
        extra_types,
        ranks,
        p2p,
        sync_points,
    })
}

/// OS thread names, overridden by the names the application set through NVTX.
fn thread_names(
    export: &Export,
    nvtx: rustc_hash::FxHashMap<(u32, u32), String>,
) -> Result<HashMap<(u32, u32), String>, TranslateError> {
    let mut names = export.thread_names()?;
    names.extend(nvtx);
    Ok(names)
}
