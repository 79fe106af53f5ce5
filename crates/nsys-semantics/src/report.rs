//! Translation of one report into a sorted run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use nsys_reader::{Export, Metadata};
use paraver_writer::{EventTypeInfo, Run};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::context::{ReportContext, ThreadKey};
use crate::gpu_idle;
use crate::handoff::IdleInputs;
use crate::handoff::{NcclKernelOp, P2pEndpoint, SyncPoints};
use crate::kernels::KERNELS;
use crate::options::{Category, Options};
use crate::ranks;
use crate::registry::Registry;
use crate::spilled_table;
use crate::types::state;
use crate::TranslateError;

/// Everything one report contributes to the trace: its records (`run`) and what
/// the plan, the clock alignment, the message pairing, the catalog and the cuts
/// read. Saved into a part file, the same type holds the place of its records in
/// the file instead (`saved::SavedReport`).
#[derive(Serialize, Deserialize)]
pub struct ReportTranslation<R = Run> {
    #[serde(with = "path_bytes")]
    pub path: PathBuf,
    pub meta: Metadata,
    pub run: R,
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
    /// The category whose pass numbered each of them (saved by its `-t` name).
    #[serde(with = "categories_by_name")]
    pub extra_type_categories: Vec<(u32, Category)>,
    /// pid → MPI world rank, where known.
    pub ranks: HashMap<u32, u32>,
    /// Point-to-point message endpoints, paired across reports later.
    pub p2p: Vec<P2pEndpoint>,
    /// NCCL kernels with their calls, matched across reports later (`nccl_match`).
    pub nccl_ops: Vec<NcclKernelOp>,
    /// Times every rank shares (end of MPI_Init, barriers, first NCCL kernel).
    pub sync_points: SyncPoints,
    /// One more than the highest logical CPU its threads ran on (0: none seen).
    pub cpus_seen: u32,
    /// The export's tables of recordings that have rows (what nsys recorded, for
    /// the trace's metadata file).
    pub recorded_tables: Vec<String>,
}

/// The count of rows a cut left out where they are read (in
/// [`ReportTranslation::counts`]).
pub const ROWS_LEFT_OUT_BY_THE_CUT: &str = "rows left out by the cut where read";

/// Translates the export at `path` with the standard categories; `name` is the
/// report as the user gave it (a `.nsys-rep` read through its export), used in
/// messages and for the rank in the file name.
pub fn translate_report(
    path: &Path,
    name: &Path,
    options: &Options,
) -> Result<ReportTranslation, TranslateError> {
    translate_with(&Registry::standard(), path, name, options)
}

/// Translates one report: the passes of the selected categories of `registry`, by
/// stage then in registry order, into one run.
pub fn translate_with(
    registry: &Registry,
    path: &Path,
    name: &Path,
    options: &Options,
) -> Result<ReportTranslation, TranslateError> {
    let mut export = Export::open(path)?;
    export.set_decode_ahead(options.decode_ahead);
    let mut ctx = ReportContext::new(&export, options);
    if let Some(selection) = &options.ranks {
        match ranks::choose_processes(&export, name, selection, options.several_reports)? {
            ranks::ProcessChoice::All => {}
            ranks::ProcessChoice::Some(kept) => ctx.kept_processes = Some(kept),
            ranks::ProcessChoice::None(ranks) => {
                return Err(TranslateError::NotSelected(name.to_path_buf(), ranks))
            }
        }
    }
    // The kernels category declares the GPU idle causes (type 9360).
    // Its per-kernel tables spill if holding them would take the report past
    // its share.
    let spill_over = options
        .spill
        .as_ref()
        .map(|p| spilled_table::spill_over(&p.dir, p.chunk_bytes));
    ctx.gpu_idle = IdleInputs::new(options.wants(KERNELS), spill_over);
    let mut extra_type_categories = Vec::new();
    for (category, pass) in registry.passes(options) {
        let known = ctx.extra_types.len();
        (pass.run)(&mut ctx)?;
        ctx.count_held();
        let made = &ctx.extra_types[known..];
        extra_type_categories.extend(made.iter().map(|t| (t.ty, category)));
    }
    // From what every pass handed over.
    gpu_idle::write(&mut ctx).map_err(|e| TranslateError::Write {
        path: name.to_path_buf(),
        source: paraver_writer::WriteError::Spill {
            dir: e.dir,
            source: e.source,
        },
    })?;
    let mut report = finish(ctx, name)?;
    if let Some(selection) = &options.ranks {
        select_ranks(&mut report, selection, options.several_reports)?;
    }
    report.extra_type_categories = extra_type_categories;
    Ok(report)
}

fn finish(ctx: ReportContext, path: &Path) -> Result<ReportTranslation, TranslateError> {
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
        mut p2p,
        mut nccl_ops,
        row_labels,
        cpus_seen,
        outside_limits,
        cut,
        ..
    } = ctx;
    if outside_limits > 0 {
        counts.insert("rows outside the time limits".to_string(), outside_limits);
    }
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
    // Records left out by the run's window still make it a run with records.
    let run_is_empty = run.is_empty() && run.dropped_by_window() == 0;
    if let Some(cut) = &cut {
        if cut.unsafe_for(run_is_empty) {
            return Err(TranslateError::CutUnsafe(path.to_path_buf()));
        }
        if cut.before + cut.after > 0 {
            counts.insert(ROWS_LEFT_OUT_BY_THE_CUT.to_string(), cut.before + cut.after);
        }
    }
    if run_is_empty {
        return Err(TranslateError::Empty(path.to_path_buf()));
    }
    // The run numbers threads in layout (ThreadKey) order; follow it here.
    let timing = match &cut {
        Some(_) => carried_timing(&extra_types),
        None => FxHashMap::default(),
    };
    let (run, broken) = run
        .finish_window(&|ty| timing.get(&ty).copied())
        .map_err(|source| TranslateError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    if broken {
        return Err(TranslateError::CutUnsafe(path.to_path_buf()));
    }
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
    nccl_ops.retain(|op| op.stream != paraver_writer::DISCARDED);
    for op in &mut nccl_ops {
        op.stream = run.new_of_old[op.stream as usize];
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
        extra_type_categories: Vec::new(),
        ranks,
        p2p,
        nccl_ops,
        sync_points,
        cpus_seen,
        recorded_tables: export.tables_with_rows()?,
    })
}

/// `--ranks` on a translated report: a report of one process without a rank
/// takes the one its file name gives (with several reports: the rank the
/// layout would give it, kept whichever reports are left); a report with no
/// process of a rank in the list is left out; processes of other ranks that
/// only NVTX thread names told apart stay, with a warning.
fn select_ranks(
    report: &mut ReportTranslation,
    selection: &nsys2prv_events::RankSelection,
    several_reports: bool,
) -> Result<(), TranslateError> {
    if several_reports {
        if let Some(pid) = ranks::single_process(&report.threads) {
            if !report.ranks.contains_key(&pid) {
                if let Some(rank) = ranks::rank_in_file_name(&report.path) {
                    report.ranks.insert(pid, rank);
                }
            }
        }
    }
    let pids: std::collections::BTreeSet<u32> = report.threads.iter().map(|t| t.pid).collect();
    let (any, outside) = ranks::kept_ranks(&report.ranks, &pids, selection);
    if !any {
        return Err(TranslateError::NotSelected(report.path.clone(), outside));
    }
    if !outside.is_empty() {
        let list: Vec<String> = outside.iter().map(u32::to_string).collect();
        report.warnings.push(format!(
            "{}: processes of ranks {} are kept although --ranks leaves them out (their ranks are known only once the report is translated)",
            report.path.display(),
            list.join(", ")
        ));
    }
    Ok(())
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

/// A path as its bytes: any file name, UTF-8 or not.
mod path_bytes {
    use std::ffi::OsString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Path, PathBuf};

    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(path.as_os_str().as_bytes())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a path's bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        let bytes = d.deserialize_byte_buf(Bytes)?;
        Ok(PathBuf::from(OsString::from_vec(bytes)))
    }
}

/// `(type, category)` pairs saved as `(type, category name)`; restored with the
/// standard registry's category of that name (parts come from the same binary,
/// which the plan fingerprints, so every name is one).
mod categories_by_name {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::options::Category;
    use crate::registry::Registry;

    pub fn serialize<S: Serializer>(pairs: &[(u32, Category)], s: S) -> Result<S::Ok, S::Error> {
        let named: Vec<(u32, &str)> = pairs.iter().map(|(ty, c)| (*ty, c.name())).collect();
        named.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u32, Category)>, D::Error> {
        let named: Vec<(u32, String)> = Vec::deserialize(d)?;
        let registry = Registry::standard();
        Ok(named
            .iter()
            .filter_map(|(ty, name)| {
                let info = registry.iter().find(|info| info.category.name() == name)?;
                Some((*ty, info.category))
            })
            .collect())
    }
}

/// How each type crosses a cut's start in the merge's catalog, where this
/// report alone tells it for sure: the standard types, and the types the report
/// numbered from its data. A NIC counter of another report may take a standard
/// type of NCCL's (9500-9599, see `catalog::catalog_with_reports`):
/// those are left out unless this report declares them.
fn carried_timing(
    extra_types: &[paraver_writer::EventTypeInfo],
) -> FxHashMap<u32, paraver_writer::Timing> {
    let mut timing: FxHashMap<u32, paraver_writer::Timing> = Registry::standard()
        .iter()
        .flat_map(|c| (c.event_types)())
        .filter(|t| !(9500..9600).contains(&t.ty))
        .map(|t| (t.ty, t.timing))
        .collect();
    for t in extra_types {
        timing.entry(t.ty).or_insert(t.timing);
    }
    timing
}
