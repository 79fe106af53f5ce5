//! Translation of one report into a sorted run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use nsys_reader::{Export, Metadata};
use paraver_writer::{EventTypeInfo, Run, RunBuilder};

use crate::catalog::state;
use crate::context::{ReportContext, ThreadKey};
use crate::cuda_api::{self, ApiOutputs};
use crate::cuda_gpu::{self, GpuLinks};
use crate::cuda_sync::{self, SyncCalls};
use crate::mpi::{self, P2pEndpoint, SyncPoints};
use crate::nccl::NcclRanges;
use crate::options::{Category, Options};
use crate::TranslateError;
use crate::{nvtx, openacc, openmp, osrt, ranks, sched};

/// Everything one report contributes to the trace.
pub struct ReportTranslation {
    pub path: PathBuf,
    pub meta: Metadata,
    pub run: Run,
    /// Local thread index → what the thread is.
    pub threads: Vec<ThreadKey>,
    pub thread_names: HashMap<(u32, u32), String>,
    pub process_names: HashMap<u32, String>,
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

pub fn translate_report(
    path: &Path,
    options: &Options,
) -> Result<ReportTranslation, TranslateError> {
    let export = Export::open(path)?;
    let mut ctx = ReportContext::new(&export, options);

    let mut links = GpuLinks::default();
    if options.wants(Category::Kernels) {
        cuda_gpu::kernels(&mut ctx, &mut links)?;
    }
    if options.wants(Category::Memory) {
        cuda_gpu::memory(&mut ctx, &mut links)?;
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
    finish(ctx, path, p2p)
}

/// Renumbers threads in `ThreadKey` order, the order the layout gives them
/// (records and message endpoints alike).
fn renumber_in_key_order(
    run: &mut RunBuilder,
    keys: Vec<ThreadKey>,
    p2p: &mut [P2pEndpoint],
) -> Vec<ThreadKey> {
    let mut sorted: Vec<(ThreadKey, usize)> =
        keys.into_iter().enumerate().map(|(i, k)| (k, i)).collect();
    sorted.sort();
    let mut new_index = vec![0; sorted.len()];
    for (new, (_, old)) in sorted.iter().enumerate() {
        new_index[*old] = new as u32;
    }
    run.renumber_threads(&new_index);
    for e in p2p {
        e.thread = new_index[e.thread as usize];
    }
    sorted.into_iter().map(|(k, _)| k).collect()
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
        counts,
        warnings,
        extra_types,
        nvtx_thread_names,
        nvtx_ranks,
        sync_points,
        ..
    } = ctx;
    // CPU threads run user code between calls; GPU streams idle between operations.
    states.tile_into(&mut run, |t| {
        Some(if thread_keys[t as usize].is_cpu() {
            state::RUNNING
        } else {
            state::IDLE
        })
    });
    let thread_keys = renumber_in_key_order(&mut run, thread_keys, &mut p2p);
    let ranks = ranks::process_ranks(export, &thread_keys, &nvtx_ranks)?;
    if run.is_empty() {
        return Err(TranslateError::Empty(path.to_path_buf()));
    }
    Ok(ReportTranslation {
        path: path.to_path_buf(),
        meta: export.meta().clone(),
        run: run.finish(),
        threads: thread_keys,
        thread_names: thread_names(export, nvtx_thread_names)?,
        process_names: export.process_names()?,
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
