//! Translation of one report into a sorted run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use nsys_reader::{Export, Metadata};
use paraver_writer::Run;

use crate::catalog::state;
use crate::context::{ReportContext, ThreadKey};
use crate::cuda_api::{self, ApiOutputs};
use crate::cuda_gpu::{self, GpuLinks};
use crate::cuda_sync::{self, SyncCalls};
use crate::options::{Category, Options};
use crate::TranslateError;

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
    let outputs = ApiOutputs {
        calls: options.wants(Category::CudaApi),
        syncs: options.wants(Category::Sync),
    };
    if outputs.calls || outputs.syncs {
        cuda_api::translate(&mut ctx, &links, &syncs, outputs)?;
    }
    finish(ctx, path)
}

fn finish(ctx: ReportContext, path: &Path) -> Result<ReportTranslation, TranslateError> {
    let ReportContext {
        export,
        mut run,
        states,
        thread_keys,
        counts,
        warnings,
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
    if run.is_empty() {
        return Err(TranslateError::Empty(path.to_path_buf()));
    }
    Ok(ReportTranslation {
        path: path.to_path_buf(),
        meta: export.meta().clone(),
        run: run.finish(),
        threads: thread_keys,
        thread_names: export.thread_names()?,
        process_names: export.process_names()?,
        counts,
        warnings,
    })
}
