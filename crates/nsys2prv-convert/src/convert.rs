//! The conversion: scan and translate reports in parallel, plan, merge, write.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use nsys_semantics::catalog::{catalog_for_reports, TypeOwners};
use nsys_semantics::clock::{align_clocks, SyncMode, SyncReport};
use nsys_semantics::cuts::{
    nvtx_range_window, range_window, summarize_ranges, NvtxRangeSpec, RangeSummary, RangeWindow,
};
use nsys_semantics::layout::total_counts;
use nsys_semantics::messages::{match_messages_of, MessageStats};
use nsys_semantics::metric_sets::{
    has_nccl_ranges, numbering_conflict, writes_nccl_ranges, MetricSets,
};
use nsys_semantics::nccl_match::{match_nccl, NcclMatchStats};
use nsys_semantics::options::{ApiCallFilter, ReadWindow, TimeLimits};
use nsys_semantics::ranks::{choose_processes, ProcessChoice};
use nsys_semantics::survey::{survey_report, Survey};
use nsys_semantics::{
    plan_layout_named, translate_report, KernelNames, MetricTypes, Options, Registry,
    ReportTranslation, RowNames, ThreadKind, TracePlan, TranslateError,
};
use paraver_writer::layout::PARAVER_OBJECT_LIMIT;
use paraver_writer::merge::{time_span, TraceSummary};
use paraver_writer::{
    Cut, MemoryBudget, MergeInput, OutputPaths, PcfCatalog, SliceTallies, SpillPolicy, TimeWindow,
    TraceWriter, WriteError,
};
use rayon::prelude::*;

use crate::config::{ClockSync, Config, KernelNameChoice, MetricTypesChoice};
use crate::error::UsageError;
use crate::inputs::{self, Found, Input};
use crate::messages::{count, human_size, warn_grouped};
use crate::output_set::{file_name, marker_text, OutputSet};
use crate::progress::Progress;
use crate::timing::Timings;
use crate::views;
use atomic_output::checkpoint;

/// How a conversion ended well: every report converted, or some skipped
/// (`--skip-bad`; exit status [`EXIT_SKIPPED`]).
#[derive(Debug, Default)]
pub struct Finished {
    pub skipped: usize,
    /// The trace written and installed (none when the run wrote no trace: a
    /// dry run, a plan, a shard that does not merge).
    pub trace: Option<std::path::PathBuf>,
    /// A dry run's table of what would be translated, for stdout.
    pub dry_run: Option<String>,
}

/// Exit status of a conversion that wrote the trace but skipped bad reports.
pub const EXIT_SKIPPED: u8 = 3;

/// A report left out by `--skip-bad`, and why (one line naming the file).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub report: String,
    pub reason: String,
}

/// What translating one report gave.
pub enum Outcome {
    Translated(Box<ReportTranslation>),
    /// No records in the selected categories, and why.
    Empty(String),
    /// The report (or its export) cannot be read: the error, one line.
    Failed(anyhow::Error),
    /// `--ranks` leaves out every process of the report: its ranks, where known.
    NotSelected(Vec<u32>),
}

pub fn worker_pool(jobs: Option<usize>) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")
}

/// A single run: every report translated here, the output set written and
/// installed.
pub fn convert(config: &Config, progress: &dyn Progress) -> Result<Finished> {
    let mut timings = Timings::new(Instant::now());
    let paths = OutputPaths::for_trace(&config.output.trace)?;
    let settings = export_settings(config, &paths);
    // Before any report is exported or read: a file the run would refuse to
    // replace is found at once.
    crate::output_set::check_targets(&paths, &config.views_dir(&paths))?;
    // Counted from the names: before any report is exported or read.
    check_report_count(config, inputs::report_files(&config.inputs.reports)?.len())?;
    let prepared = inputs::expand(&config.inputs.reports, &settings, config.inputs.skip_bad)?;
    checkpoint("inputs found");
    timings.lap("Inputs and exports");
    let inputs: Vec<Input> = prepared
        .iter()
        .filter_map(|p| p.export.as_ref().ok())
        .cloned()
        .collect();
    let exports: Vec<&Path> = inputs.iter().map(|i| i.export.as_path()).collect();
    let mut cut_config;
    let config = match read_window(config, &inputs, prepared.len()) {
        Some(window) => {
            cut_config = config.clone();
            cut_config.cuts.read_window = Some(window);
            &cut_config
        }
        None => config,
    };
    let mut options = options(config, prepared.len())?;
    choose_metric_types(&mut options, &exports);
    check_output_is_not_an_input(&paths, &inputs)?;
    let output_set = OutputSet::prepare(&paths, &config.views_dir(&paths))?;

    let outcomes = translate_prepared(prepared, &options, progress);
    let (reports, skipped) = gather(outcomes, &options, config.inputs.skip_bad)?;
    checkpoint("reports translated");
    timings.lap("Translation");
    let finished = write_output_set(
        config,
        &paths,
        output_set,
        reports,
        &skipped,
        Body::Merged,
        &mut timings,
        progress,
    )?;
    if config.inputs.clean_exports {
        clean_exports(&settings.cache_dir, config.quiet)?;
    }
    Ok(finished)
}

/// `--dry-run`: what would be translated (the table the binary prints on
/// stdout), creating nothing.
pub fn dry_run(config: &Config) -> Result<Finished> {
    let paths = OutputPaths::for_trace(&config.output.trace)?;
    let settings = export_settings(config, &paths);
    let found = inputs::find(&config.inputs.reports, &settings)?;
    let options = options(config, found.len())?;
    Ok(Finished {
        dry_run: Some(dry_run_text(&found, &options)?),
        ..Finished::default()
    })
}

/// `-c/--clean`: the exports this tool made for the run go once the trace is
/// written (BSC nsys2prv removes the exports it made in the current directory).
fn clean_exports(cache_dir: &Path, quiet: bool) -> Result<()> {
    let (removed, bytes) = crate::nsys_export::remove_cache(cache_dir)?;
    if removed > 0 && !quiet {
        eprintln!(
            "removed {removed} export{} ({}) made for this run: {} (-c)",
            if removed == 1 { "" } else { "s" },
            human_size(bytes),
            cache_dir.display()
        );
    }
    Ok(())
}

/// The cut applied where rows are read: a window on the common clock that
/// holds the merge's, found before translating. `None` (the cut is the
/// merge's alone) without a cut, with a `--sync` other than the session's
/// (its offsets come from the translation), when a report does not say when
/// its session started or cannot be read (the merge says why), or when some
/// reports (`reports` in all) are not exported yet.
///
/// * `--time-window`: the cut's window starts at the trace's origin plus the
///   window's start, and the origin is the earliest session start of a report
///   with records (or an earlier record): between the earliest and the latest
///   session start of all `inputs`.
/// * `--nvtx-range`: the window the merge will find, found the same way from the
///   reports translated with only the categories that make ranges (NVTX, NCCL),
///   which the translation then reads whole.
pub fn read_window(config: &Config, inputs: &[Input], reports: usize) -> Option<ReadWindow> {
    if !cut_found_before_translating(config, inputs.len(), reports) {
        return None;
    }
    let starts: Vec<i64> = inputs
        .par_iter()
        .map(|i| {
            nsys_reader::Export::open(&i.export)
                .ok()?
                .meta()
                .utc_offset()
        })
        .collect::<Option<_>>()?;
    if let Some(window) = config.cuts.time_window {
        let (earliest, latest) = (*starts.iter().min()?, *starts.iter().max()?);
        return Some(ReadWindow {
            start: Some(earliest.saturating_add(window.start)),
            end: window.end.map(|e| latest.saturating_add(e)),
            range: None,
        });
    }
    let spec = config.cuts.nvtx_range.as_ref()?;
    let options = range_pass_options(config, reports)?;
    let reduced: Vec<RangeReduction> = inputs
        .par_iter()
        .map(|i| reduce_for_range(i, &options, spec))
        .collect();
    window_of_ranges(reduced, spec)
}

/// Whether a cut of `config` is found before translating, from `exports`
/// reports exported of `reports` in all (see [`read_window`]).
pub fn cut_found_before_translating(config: &Config, exports: usize, reports: usize) -> bool {
    !config.cuts.in_merge_only
        && config.sync == ClockSync::Session
        && exports > 0
        && exports == reports
        && (config.cuts.time_window.is_some() || config.cuts.nvtx_range.is_some())
}

/// Whether the window of `config`'s cut is found by translating the reports'
/// ranges (an `--nvtx-range` found before translating), the pass a Slurm step
/// spreads over its tasks.
pub fn window_from_ranges(config: &Config, exports: usize, reports: usize) -> bool {
    cut_found_before_translating(config, exports, reports)
        && config.cuts.time_window.is_none()
        && config.cuts.nvtx_range.is_some()
}

/// What one report gives the window of an `--nvtx-range` cut found before
/// translating: reduced as soon as it is translated with only the categories
/// that make ranges, so what a pass holds grows with the reports and their
/// threads, not with their ranges. A pass over reports in several processes
/// (`--shard slurm`) exchanges these, and every process combines them in input
/// order with [`window_of_ranges`], as a single pass does.
#[derive(serde::Serialize, serde::Deserialize)]
pub enum RangeReduction {
    /// The cut is the merge's alone: the report does not say when its session
    /// started, or its ranges cannot be summed up (the merge says why).
    NoWindow,
    /// The report cannot be opened or translated: why, one line naming it.
    Failed(String),
    /// Empty, or `--ranks` leaves it out: no part of the layout.
    Left,
    /// Its summary of the ranges of the name, and the report without records
    /// (what lays out the threads and aligns the clocks).
    Summed(Box<ReportTranslation<()>>, RangeSummary),
}

/// The options of the pass that finds an `--nvtx-range` window: only the
/// categories that make ranges (NVTX, NCCL, and MPI when selected). `None`
/// when no such category is selected (the cut is the merge's).
pub fn range_pass_options(config: &Config, reports: usize) -> Option<Options> {
    let mut ranges_only = options(config, reports).ok()?;
    ranges_only.read_window = None;
    let ranged = nsys_semantics::cuts::range_categories();
    ranges_only.categories.retain(|c| ranged.contains(c));
    (!ranges_only.categories.is_empty()).then_some(ranges_only)
}

/// The report of `input` translated with the range pass's `options` and
/// reduced to what the window of `spec` needs.
pub fn reduce_for_range(input: &Input, options: &Options, spec: &NvtxRangeSpec) -> RangeReduction {
    match nsys_reader::Export::open(&input.export).map(|e| e.meta().utc_offset()) {
        Ok(Some(_)) => {}
        Ok(None) => return RangeReduction::NoWindow,
        Err(e) => {
            let e = anyhow::Error::from(e);
            let line = crate::error::one_line(&e);
            let name = input.name.display().to_string();
            return RangeReduction::Failed(if line.contains(&name) {
                line
            } else {
                format!("{name}: {line}")
            });
        }
    }
    // Each report's records are dropped as soon as they are summed up: a
    // budget of its own lets its run keep at its end what it holds (at most
    // its share of the translation) instead of spilling it because reports
    // dropped long ago used up a shared one.
    let mut own = options.clone();
    if let Some(spill) = &mut own.spill {
        spill.budget = paraver_writer::MemoryBudget::new(spill.budget.limit());
    }
    match translate_report(&input.export, &input.name, &own) {
        Ok(report) => match summarize_ranges(&report, spec) {
            Ok(summary) => {
                let mut report = report.map_run(drop);
                report.p2p = Vec::new();
                report.nccl_ops = Vec::new();
                RangeReduction::Summed(Box::new(report), summary)
            }
            Err(_) => RangeReduction::NoWindow,
        },
        Err(TranslateError::Empty(_) | TranslateError::NotSelected(..)) => RangeReduction::Left,
        Err(e) => RangeReduction::Failed(crate::error::one_line(&blame_the_right_place(e))),
    }
}

/// The window of `spec` from every report's reduction, in input order: `None`
/// (the cut is the merge's alone) when one report has no window or failed (the
/// translation of the conversion says why), the name is unknown or no thread
/// reaches its `#N` (the merge says so).
pub fn window_of_ranges(
    reduced: impl IntoIterator<Item = RangeReduction>,
    spec: &NvtxRangeSpec,
) -> Option<ReadWindow> {
    let mut reports = Vec::new();
    let mut summaries = Vec::new();
    for reduction in reduced {
        match reduction {
            RangeReduction::Summed(report, summary) => {
                reports.push(*report);
                summaries.push(summary);
            }
            RangeReduction::Left => {}
            RangeReduction::NoWindow | RangeReduction::Failed(_) => return None,
        }
    }
    let plan = plan_layout_named(&reports, "ranges", RowNames::Ours);
    let window = range_window(&summaries, &plan, spec).ok()?;
    Some(ReadWindow {
        start: Some(window.start),
        end: Some(window.end),
        range: Some((window.ranges, window.tasks)),
    })
}

/// The merge's cut must lie inside the window rows were read in: else (a
/// record before its report's session start moved the trace's origin, or the
/// ranges found before translating were not those of the translation) the
/// rows left out may have been needed.
fn check_read_window(config: &Config, cut: Option<&Cut>) -> Result<()> {
    let (Some(read), Some(cut)) = (config.cuts.read_window, cut) else {
        return Ok(());
    };
    if !read.holds(cut.window.start, cut.window.end) {
        bail!(
            "the cut is not inside the window found before translating, which rows were read in (a record before its report's session start?); convert again with --cut-in-merge, which reads every row"
        );
    }
    Ok(())
}

/// Writes the output set of translated `reports`: the layout, clock alignment,
/// MPI messages, the cut, the merge, the views, the list of `skipped` reports,
/// installed as one unit. The single run and the merge of a sharded conversion
/// both end here, so both write the same bytes.
#[allow(clippy::too_many_arguments)] // each is what one caller decides
pub fn write_output_set(
    config: &Config,
    paths: &OutputPaths,
    output_set: OutputSet,
    reports: Vec<ReportTranslation>,
    skipped: &[Skipped],
    body: Body,
    timings: &mut Timings,
    progress: &dyn Progress,
) -> Result<Finished> {
    let Merging {
        report_count,
        plan,
        merge_inputs,
        cut,
        mut trace_metadata,
        catalog,
        type_owners,
        gpu_stream_rows,
        message_stats,
        records,
    } = prepare_merge(config, paths, reports, timings)?;
    // With a cut the merge reads records up to the window's end and writes those
    // inside it (with the values in force at its start): the progress counts the
    // records read, the closing line the records in the cut.
    let mut writing = match cut {
        Some(_) => progress.phase("writing", None, "records read"),
        None => progress.phase("writing", Some(records), "records"),
    };
    // The runs are finished: half the limit buffers the readers of spilled records.
    let read_budget = usize::try_from(config.resources.memory_limit / 2).unwrap_or(usize::MAX);
    let first_record = first_record(&merge_inputs);
    let staged = output_set.staged_trace();
    let writer = TraceWriter::new(&staged, &plan.layout, &catalog)
        .cut(cut.as_ref())
        .read_budget(read_budget);
    let summary = match body {
        Body::Merged => writer.write(&merge_inputs, &mut |n| {
            writing.set(n);
            checkpoint("merging");
        }),
        Body::Slices(slices) => writer
            .write_from_slices(&merge_inputs, slices)
            .inspect(|_| {
                writing.set(records);
            }),
    }
    .with_context(|| format!("{}: cannot write the trace", paths.prv.display()))?;
    writing.finish();
    timings.lap("Merge and write");
    trace_metadata.set_events(&type_owners.categories_in(&summary.event_types));
    trace_metadata.write(&output_set.staged_pmf())?;
    if !skipped.is_empty() {
        write_skipped_list(&output_set.staged_skipped(), paths, skipped)?;
    }
    checkpoint("trace written");
    let shape = views::TraceShape {
        span: summary.end_time,
        // With a cut, what began before its start begins at 0.
        first_record: first_record.map_or(0, |t| {
            t.saturating_sub(summary.origin)
                .clamp(0, summary.end_time as i64) as u64
        }),
        gpu_stream_rows,
    };
    // Giving the runs' memory back (hundreds of MB) keeps the kernel busy for tens
    // of milliseconds: on another thread, while the views are written.
    let ((), views) = rayon::join(
        || drop(merge_inputs),
        || {
            write_views(
                config,
                paths,
                &output_set,
                &catalog,
                &type_owners,
                &summary,
                shape,
            )
        },
    );
    views?;
    output_set.commit()?;
    timings.lap("Views and install");

    if !config.quiet {
        let kept = if cut.is_some() { " in the cut" } else { "" };
        // With --ranks, the messages whose other end was left out.
        let left_out = match &config.selection.ranks {
            Some(ranks) => format!(
                "; --ranks {ranks}: {} to or from ranks left out, not drawn",
                count(message_stats.with_ranks_left_out as usize, "MPI message")
            ),
            None => String::new(),
        };
        eprintln!(
            "wrote {}: {}, {}, {}, {}, {} records{kept} ({} lines with the header), {:.3} s of trace, in {:.2} s{left_out}",
            paths.prv.display(),
            count(report_count, "report"),
            count(plan.layout.nodes.len(), "node"),
            count(plan.layout.tasks.len(), "task"),
            count(plan.layout.thread_count(), "thread"),
            summary.lines,
            summary.lines + 1,
            summary.end_time as f64 / 1e9,
            timings.started().elapsed().as_secs_f64(),
        );
    }
    report_skipped(paths, skipped);
    if config.output.timing {
        let size = std::fs::metadata(&paths.prv).map_or(0, |m| m.len());
        timings.report(report_count, summary.lines, size)?;
    }
    Ok(Finished {
        skipped: skipped.len(),
        trace: Some(paths.prv.clone()),
        dry_run: None,
    })
}

/// Where the body of the trace comes from.
pub enum Body {
    /// Merged from the reports' runs.
    Merged,
    /// Copied from the time slices merge tasks wrote (`merge --shard I/N`),
    /// in order.
    Slices(Vec<paraver_writer::SliceBody>),
}

/// What the merge of reports needs, computed alike by every process that
/// merges them (a single run, a whole merge, every merge task of a slice).
struct Merging {
    report_count: usize,
    plan: TracePlan,
    merge_inputs: Vec<MergeInput>,
    cut: Option<Cut>,
    trace_metadata: crate::pmf::TraceMetadata,
    catalog: PcfCatalog,
    type_owners: TypeOwners,
    gpu_stream_rows: Vec<u32>,
    message_stats: MessageStats,
    records: u64,
}

/// The layout, clock offsets, MPI and NCCL pairing, value tables and cut of
/// `reports`: everything the trace's writer takes.
fn prepare_merge(
    config: &Config,
    paths: &OutputPaths,
    reports: Vec<ReportTranslation>,
    timings: &mut Timings,
) -> Result<Merging> {
    let report_count = reports.len();

    if let Some(conflict) = numbering_conflict(&reports) {
        bail!("{conflict}");
    }
    let row_names = match config.output.bsc_row_names {
        true => RowNames::Bsc,
        false => RowNames::Ours,
    };
    let mut plan = plan_layout_named(&reports, &paths.stem(), row_names);
    check_paraver_limits(&plan.layout)?;
    let sync = align_clocks(&mut plan, &reports, sync_mode(config.sync));
    report_alignment(&sync, &reports, config.quiet);
    if let Some(host) = one_host(&reports).filter(|_| sync.mode != SyncMode::Session) {
        tracing::warn!(
            "all {} reports come from {host} and share its clock, so their session start times already align them exactly; --sync {} moved them by up to {:.3} us to make the {} coincide, which hides the ranks' real skew (leave --sync out to keep it)",
            reports.len(),
            config.sync.flag_value(),
            sync.skew_before_ns as f64 / 1e3,
            sync.mode.describe(),
        );
    }
    let (messages, message_stats) =
        match_messages_of(&reports, &plan, config.selection.ranks.as_ref());
    report_messages(&message_stats);
    let (nccl, nccl_stats) = match_nccl(&reports, &plan);
    report_nccl(&nccl_stats);
    timings.lap("Layout, clocks and messages");

    let range = nvtx_range(config, &reports, &plan)?;
    let trace_metadata = crate::pmf::TraceMetadata::new(config, paths, &reports, &plan)?;
    let catalog = catalog_for_reports(&reports);
    let type_owners = TypeOwners::of(&Registry::standard(), &reports);
    let gpu_stream_rows = gpu_stream_rows(&reports, &plan);
    let mut slots: Vec<Option<ReportTranslation>> = reports.into_iter().map(Some).collect();
    let mut merge_inputs: Vec<MergeInput> = plan
        .order
        .iter()
        .map(|&r| {
            let report = slots[r].take().expect("each report is merged once");
            MergeInput {
                run: report.run,
                time_offset: plan.offsets[r],
                threads: plan.threads[r].clone(),
            }
        })
        .collect();
    merge_inputs.extend(messages);
    merge_inputs.extend(nccl);
    checkpoint("layout planned");
    // MPI messages are records of their own.
    let records: u64 = merge_inputs.iter().map(|i| i.run.len() as u64).sum();
    let cut = cut_of(config, range.as_ref(), &merge_inputs);
    check_read_window(config, cut.as_ref())?;
    Ok(Merging {
        report_count,
        plan,
        merge_inputs,
        cut,
        trace_metadata,
        catalog,
        type_owners,
        gpu_stream_rows,
        message_stats,
        records,
    })
}

/// What a merge task wrote of its slice.
pub enum SliceOutcome {
    /// Its slice of the body, with its tallies, and the size of what precedes
    /// the first slice in the `.prv` (0 with a cut: what is open at the
    /// window's start follows the header, and only the finishing merge finds
    /// it, so the task cannot place its slice).
    Written(SliceTallies, u64),
    /// The body cannot be cut into time slices (runs whose threads are not in
    /// the trace's order, or with a cut a thread in two runs): the finishing
    /// merge writes it whole.
    Unsliced,
}

/// Merge task `index` of `count`: the slice of the body of the trace of
/// `reports` (as [`write_output_set`] would write it) into `out` (named
/// `named` in errors). Nothing else is written.
pub fn write_slice(
    config: &Config,
    paths: &OutputPaths,
    reports: Vec<ReportTranslation>,
    (index, count): (u32, u32),
    (out, named): (&std::fs::File, &Path),
    timings: &mut Timings,
    progress: &dyn Progress,
) -> Result<SliceOutcome> {
    let merging = prepare_merge(config, paths, reports, timings)?;
    let read_budget = usize::try_from(config.resources.memory_limit / 2).unwrap_or(usize::MAX);
    let writer = TraceWriter::new(paths, &merging.plan.layout, &merging.catalog)
        .cut(merging.cut.as_ref())
        .read_budget(read_budget);
    let mut writing = progress.phase("writing", None, "records");
    let written = writer
        .write_slice(
            &merging.merge_inputs,
            (index, count),
            (out, named),
            &mut |n| {
                writing.set(n);
                checkpoint("merging");
            },
        )
        .with_context(|| {
            format!(
                "{}: cannot write slice {index} of {count}",
                paths.prv.display()
            )
        })?;
    writing.finish();
    let header = match written {
        Some(_) if merging.cut.is_none() => writer
            .slice_header(&merging.merge_inputs)
            .with_context(|| format!("{}: cannot write the header", paths.prv.display()))?,
        _ => Vec::new(),
    };
    Ok(match written {
        Some(tallies) => SliceOutcome::Written(tallies, header.len() as u64),
        None => SliceOutcome::Unsliced,
    })
}

/// `NAME.skipped.txt`: one line per report left out, with the reason.
fn write_skipped_list(path: &Path, paths: &OutputPaths, skipped: &[Skipped]) -> Result<()> {
    let trace = paths.prv.file_name().unwrap_or_default().to_string_lossy();
    let mut text = format!("{}{trace}\n", crate::output_set::SKIPPED_HEADER);
    for s in skipped {
        text += &format!("{}\t{}\n", s.report, s.reason.replace(['\n', '\t'], " "));
    }
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

/// The skipped reports, at the end where they are seen.
fn report_skipped(paths: &OutputPaths, skipped: &[Skipped]) {
    if skipped.is_empty() {
        return;
    }
    eprintln!(
        "skipped {} bad report{} (--skip-bad; listed in {}):",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        crate::output_set::skipped_list_path(paths).display()
    );
    for s in skipped {
        eprintln!("  {}", s.reason);
    }
}

/// Writes the views the trace has data for (every one with `--all-views`) into
/// the staged views directory, with their index.
fn write_views(
    config: &Config,
    paths: &OutputPaths,
    output_set: &OutputSet,
    catalog: &PcfCatalog,
    type_owners: &TypeOwners,
    summary: &TraceSummary,
    shape: views::TraceShape,
) -> Result<()> {
    let labels: BTreeMap<u32, &str> = catalog
        .types
        .iter()
        .map(|t| (t.ty, t.label.as_str()))
        .collect();
    let contents = views::TraceContents {
        types: summary
            .event_types
            .iter()
            .map(|&ty| (ty, labels.get(&ty).copied().unwrap_or_default()))
            .collect(),
        comm_tags: &summary.comm_tags,
        categories: type_owners.categories_in(&summary.event_types),
        shape,
    };
    let cfgs_dir = output_set.views();
    // The index names the views directory as found from the trace's directory.
    let views_name = match cfgs_dir.parent() == paths.prv.parent() {
        true => file_name(cfgs_dir),
        false => cfgs_dir.display().to_string(),
    };
    let target = views::Target {
        dir: &output_set.staged_views(),
        marker: &marker_text(paths),
        trace_name: &file_name(&paths.prv),
        views_name: &views_name,
    };
    views::write(
        &target,
        &Registry::standard(),
        &contents,
        config.output.all_views,
    )
    .with_context(|| format!("{}: cannot write the views", paths.prv.display()))
}

/// The earliest time of any record of `inputs`, on the common clock.
fn first_record(inputs: &[MergeInput]) -> Option<i64> {
    inputs
        .iter()
        .filter(|i| !i.run.is_empty())
        .map(|i| i.run.min_time.saturating_add(i.time_offset))
        .min()
}

/// The rows of the trace's GPU streams, as Paraver numbers threads (from 0, task
/// after task), in order.
fn gpu_stream_rows(reports: &[ReportTranslation], plan: &TracePlan) -> Vec<u32> {
    let mut first_row = Vec::with_capacity(plan.layout.tasks.len());
    let mut rows = 0u32;
    for task in &plan.layout.tasks {
        first_row.push(rows);
        rows += task.threads.len() as u32;
    }
    let mut streams: Vec<u32> = reports
        .iter()
        .zip(&plan.threads)
        .flat_map(|(report, global)| report.threads.iter().zip(global))
        .filter(|(key, _)| matches!(key.kind, ThreadKind::Stream { .. }))
        .map(|(_, g)| first_row[g.task as usize] + g.thread)
        .collect();
    streams.sort_unstable();
    streams.dedup();
    streams
}

/// The window of `--nvtx-range` on the common clock (found before the merge,
/// while the translated runs are at hand).
fn nvtx_range(
    config: &Config,
    reports: &[ReportTranslation],
    plan: &TracePlan,
) -> Result<Option<RangeWindow>> {
    let Some(spec) = &config.cuts.nvtx_range else {
        return Ok(None);
    };
    // Found before translating: the runs keep too little outside it to find it
    // again (see `RunBuilder::keep_window`).
    let window = match config.cuts.read_window {
        Some(ReadWindow {
            start: Some(start),
            end: Some(end),
            range: Some((ranges, tasks)),
        }) => RangeWindow {
            start,
            end,
            ranges,
            tasks,
        },
        _ => nvtx_range_window(reports, plan, spec).context("--nvtx-range")?,
    };
    if !config.quiet {
        eprintln!(
            "cut to NVTX range '{spec}': {} on {}",
            count(window.ranges, "range"),
            count(window.tasks, "task")
        );
    }
    Ok(Some(window))
}

/// Whether the merge cuts the trace (`--time-window`, `--nvtx-range`): known
/// from the options alone, before any part is read.
pub(crate) fn asks_for_cut(config: &Config) -> bool {
    config.cuts.time_window.is_some() || config.cuts.nvtx_range.is_some()
}

/// The cut of `--time-window` or `--nvtx-range`, on the common clock. A time
/// window is given in the uncut trace's time (from its origin).
fn cut_of(config: &Config, range: Option<&RangeWindow>, inputs: &[MergeInput]) -> Option<Cut> {
    if !asks_for_cut(config) {
        return None;
    }
    let (origin, end) = time_span(inputs)?;
    let window = match (range, config.cuts.time_window) {
        (Some(r), _) => TimeWindow {
            start: r.start,
            end: r.end,
        },
        (None, Some(w)) => TimeWindow {
            start: origin.saturating_add(w.start),
            end: w.end.map_or(end, |e| origin.saturating_add(e)),
        },
        (None, None) => return None,
    };
    if !config.quiet {
        eprintln!(
            "cut: {:.6} s to {:.6} s of the uncut trace ({:.6} s long)",
            (window.start - origin) as f64 / 1e9,
            (window.end.min(end) - origin) as f64 / 1e9,
            (end - origin) as f64 / 1e9
        );
    }
    Some(Cut { window })
}

/// Prints what a conversion would translate, from row counts only, creating,
/// exporting and changing nothing. Reports without an export yet are listed
/// with the time their export would take.
fn dry_run_text(found: &[Found], options: &Options) -> Result<String> {
    let several = found.len() > 1;
    let ready: Vec<&Input> = found
        .iter()
        .filter_map(|f| match f {
            Found::Ready(input) => Some(input),
            Found::NeedsExport(_) => None,
        })
        .collect();
    let surveyed: Vec<(Survey, Option<Vec<u32>>)> = ready
        .par_iter()
        .map(|i| {
            let survey = survey_report(&i.export, &i.name, options, several)?;
            let left_out = match &options.ranks {
                Some(selection) => {
                    let export = nsys_reader::Export::open(&i.export)?;
                    match choose_processes(&export, &i.name, selection, several)? {
                        ProcessChoice::None(ranks) => Some(ranks),
                        _ => None,
                    }
                }
                None => None,
            };
            Ok::<_, nsys_reader::ReadError>((survey, left_out))
        })
        .collect::<Result<_, _>>()?;
    let mut left_out_ranks: Vec<u32> = Vec::new();
    let mut left_out = 0;
    let mut surveys: Vec<Survey> = Vec::with_capacity(surveyed.len());
    for (survey, ranks) in surveyed {
        match ranks {
            Some(ranks) => {
                left_out += 1;
                left_out_ranks.extend(ranks);
            }
            None => surveys.push(survey),
        }
    }
    let mut text = format!(
        "{:<40} {:<16} {:>5} {:>14}  rows per category\n",
        "report", "host", "rank", "rows"
    );
    for s in &surveys {
        let per: Vec<String> = s
            .rows
            .iter()
            .map(|r| format!("{}={}", r.category, r.rows))
            .collect();
        text += &format!(
            "{:<40} {:<16} {:>5} {:>14}  {}\n",
            s.path.display(),
            s.host.as_deref().unwrap_or("?"),
            s.rank.map_or("-".to_string(), |r| r.to_string()),
            s.total_rows(),
            per.join(" ")
        );
    }
    let to_export: Vec<(&std::path::PathBuf, u64)> = found
        .iter()
        .filter_map(|f| match f {
            Found::NeedsExport(report) => {
                Some((report, std::fs::metadata(report).map_or(0, |m| m.len())))
            }
            Found::Ready(_) => None,
        })
        .collect();
    for (report, size) in &to_export {
        text += &format!(
            "{:<40} needs `nsys export` first ({} report; its rows are counted once exported)\n",
            report.display(),
            human_size(*size)
        );
    }
    let threads = jobs();
    let convert_time = |bytes: u64| {
        human_seconds(bytes as f64 / (PRV_BYTES_PER_SECOND_PER_THREAD * threads as f64))
    };
    if !surveys.is_empty() {
        let rows: u64 = surveys.iter().map(Survey::total_rows).sum();
        let bytes: u64 = surveys.iter().map(Survey::estimated_bytes).sum();
        let hosts: std::collections::BTreeSet<_> = surveys.iter().map(|s| s.host.clone()).collect();
        text += &format!(
            "{} on {}: {rows} rows; about {} of .prv (before gzip), {} to convert on {}\n",
            count(surveys.len(), "report"),
            count(hosts.len(), "host"),
            human_size(bytes),
            convert_time(bytes),
            count(threads, "thread")
        );
    }
    if surveys.len() > PARAVER_OBJECT_LIMIT {
        text += &format!(
            "{}: the conversion will refuse it\n",
            too_many_tasks(surveys.len(), "needs at least")
        );
    }
    if let Some(selection) = &options.ranks {
        left_out_ranks.sort_unstable();
        left_out_ranks.dedup();
        text += &format!(
            "--ranks {selection}: {} left out ({}); a report whose rank only its translation finds (NVTX thread names) is listed above and decided then\n",
            count(left_out, "report"),
            describe_rank_list(&left_out_ranks)
        );
    }
    let mut filters = Vec::new();
    if options.time_limits.is_set() {
        filters.push("--time-limit-start/--time-limit-end");
    }
    if options.api_calls.is_set() {
        filters.push("--filter-cuda-calls-*");
    }
    if options.nvtx.domains.values().any(|d| !d.translate) || !options.nvtx.include_unlisted {
        filters.push("--config's untranslated NVTX domains");
    }
    if !filters.is_empty() {
        text += &format!(
            "rows and size count every row of the tables: {} leave out more while translating\n",
            filters.join(", ")
        );
    }
    if !to_export.is_empty() {
        let report_bytes: u64 = to_export.iter().map(|(_, size)| size).sum();
        let guess: u64 = to_export
            .iter()
            .map(|(_, size)| prv_bytes_guessed_from_report(*size))
            .sum();
        let at_once = threads.min(to_export.len());
        let export_time = to_export.len() as f64 * NSYS_EXPORT_START_SECONDS / at_once as f64
            + report_bytes as f64 / NSYS_EXPORT_BYTES_PER_SECOND / at_once as f64;
        text += &format!(
            "{} not exported yet ({} of reports): the conversion runs `nsys export` on them first, {} at once, {}; the dry run exports nothing\n\
             roughly {} of .prv from them, {} to convert: a guess from the reports' size, often off by a factor of 3 either way (a dry run counts their rows once the conversion has exported them into its cache)\n",
            count(to_export.len(), "report"),
            human_size(report_bytes),
            at_once,
            human_seconds(export_time),
            human_size(guess),
            convert_time(guess)
        );
    }
    Ok(text)
}

/// `nsys export --type sqlite`: nsys 2022.4 exports a 167 kB sample report in
/// 0.03 s here; the rate on large reports is a conservative guess (no large
/// real report to measure it on).
const NSYS_EXPORT_START_SECONDS: f64 = 0.1;
const NSYS_EXPORT_BYTES_PER_SECOND: f64 = 10.0e6;

/// `.prv` bytes written per second and worker thread, conservatively
/// (BENCHMARKS.md: 1.2-2.5 M lines/s of ~50 bytes on 2 cores).
const PRV_BYTES_PER_SECOND_PER_THREAD: f64 = 25.0e6;

/// A rough `.prv` size for a report not exported yet, from its file alone: the
/// `.prv` is about 4 times what a report holds beyond the ~115 kB every report
/// has (on the samples and the corpus's 22 reports: 0.5 to 13 times, most 2-6).
fn prv_bytes_guessed_from_report(report_bytes: u64) -> u64 {
    const EMPTY_REPORT_BYTES: u64 = 115_000;
    4 * report_bytes.saturating_sub(EMPTY_REPORT_BYTES)
}

fn human_seconds(seconds: f64) -> String {
    match seconds {
        s if s < 1.0 => "under a second".into(),
        s if s < 120.0 => format!("about {s:.0} s"),
        s => format!("about {:.0} min", s / 60.0),
    }
}

/// The host of every report, when there are several and all share one.
fn one_host(reports: &[ReportTranslation]) -> Option<String> {
    let hosts: std::collections::BTreeSet<_> =
        reports.iter().map(|r| r.meta.hostname.clone()).collect();
    match (reports.len(), hosts.into_iter().next()) {
        (n, Some(Some(host)))
            if n > 1
                && reports
                    .iter()
                    .all(|r| r.meta.hostname.as_deref() == Some(&host)) =>
        {
            Some(host)
        }
        _ => None,
    }
}

fn sync_mode(arg: ClockSync) -> SyncMode {
    match arg {
        ClockSync::Session => SyncMode::Session,
        ClockSync::MpiInit => SyncMode::MpiInit,
        ClockSync::Barrier => SyncMode::Barrier,
        ClockSync::Nccl => SyncMode::Nccl,
    }
}

/// Prints the shifts `--sync` applied and the skew it found.
fn report_alignment(sync: &SyncReport, reports: &[ReportTranslation], quiet: bool) {
    if sync.mode == SyncMode::Session {
        return;
    }
    for path in &sync.missing {
        tracing::warn!(
            "{}: no {}; aligned by session start only",
            path.display(),
            sync.mode.describe()
        );
    }
    if quiet {
        return;
    }
    eprintln!(
        "clock alignment on the {}: skew found {:.3} us{}",
        sync.mode.describe(),
        sync.skew_before_ns as f64 / 1e3,
        sync.residual_ns
            .map(|r| format!(", residual at the last barrier {:.3} us", r as f64 / 1e3))
            .unwrap_or_default()
    );
    for (report, shift) in reports.iter().zip(&sync.shifts) {
        tracing::info!(
            "  {}: shifted by {:+.3} us",
            report.path.display(),
            *shift as f64 / 1e3
        );
    }
}

fn report_nccl(stats: &NcclMatchStats) {
    if stats.transfers + stats.collectives > 0 {
        tracing::info!(
            "NCCL: {} point-to-point transfers drawn; {} collective instances matched across ranks, {} kernels waited {:.3} ms in all for a later rank",
            stats.transfers,
            stats.collectives,
            stats.waits,
            stats.wait_ns as f64 / 1e6
        );
    }
    if stats.unmatched_sends + stats.unmatched_receives > 0 {
        tracing::warn!(
            "NCCL: {} sends and {} receives have no partner in the given reports (missing ranks?)",
            stats.unmatched_sends,
            stats.unmatched_receives
        );
    }
    if stats.mismatched_collectives > 0 {
        tracing::warn!(
            "NCCL: {} collective instances differ between ranks (a rank's collectives out of step?) and were left out of the wait times",
            stats.mismatched_collectives
        );
    }
    if stats.backwards > 0 {
        tracing::warn!(
            "NCCL: {} transfers end before they were sent: node clocks disagree; try --sync",
            stats.backwards
        );
    }
}

fn report_messages(stats: &MessageStats) {
    if stats.unmatched_sends + stats.unmatched_receives > 0 {
        tracing::warn!(
            "MPI: {} sends and {} receives have no partner in the given reports (missing ranks?)",
            stats.unmatched_sends,
            stats.unmatched_receives
        );
    }
    if stats.without_rank > 0 {
        tracing::warn!(
            "MPI: {} message endpoints belong to processes without a known rank",
            stats.without_rank
        );
    }
    if stats.backwards > 0 {
        tracing::warn!(
            "MPI: {} messages arrive before they were sent (up to {:.3} us): node clocks disagree; try --sync mpi-init or --sync barrier",
            stats.backwards,
            stats.worst_backwards_ns as f64 / 1e3
        );
    }
}

/// The translation's options of `config`, for `reports` reports.
pub fn options(config: &Config, reports: usize) -> Result<Options> {
    let s = &config.selection;
    let names = |list: &[String]| -> Vec<String> {
        list.iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect()
    };
    let metric_types = match s.metric_types {
        MetricTypesChoice::Bsc => MetricTypes::Bsc,
        MetricTypesChoice::Name => MetricTypes::Name,
    };
    Ok(Options {
        categories: s.categories()?,
        time_limits: TimeLimits {
            start: s.time_limit_start,
            end: s.time_limit_end,
        },
        api_calls: ApiCallFilter {
            min_duration: s.cuda_calls_min_duration,
            include: (!s.cuda_calls_include.is_empty()).then(|| names(&s.cuda_calls_include)),
            exclude: names(&s.cuda_calls_exclude),
        },
        nvtx: s.nvtx.clone(),
        gpu_metric_types: metric_types,
        nic_metric_types: metric_types,
        spill: Some(spill_policy(config, reports)?),
        decode_ahead: reports < jobs(),
        keep_nsys_threads: s.keep_nsys_threads,
        sampling_depth: s.sampling_depth,
        kernel_names: match s.kernel_names {
            KernelNameChoice::Short => KernelNames::Short,
            KernelNameChoice::Demangled => KernelNames::Demangled,
        },
        ranks: s.ranks.clone(),
        several_reports: reports > 1,
        read_window: config.cuts.read_window,
    })
}

/// Chooses how the metrics of the reports to translate are numbered: BSC's ids
/// where they are unambiguous in the whole job, by name where they are not (with
/// a warning). Reads each export's small metric tables; a report that cannot be
/// read is left to fail in its translation.
pub fn choose_metric_types(options: &mut Options, exports: &[&Path]) {
    if options.gpu_metric_types == MetricTypes::Name
        && options.nic_metric_types == MetricTypes::Name
    {
        return;
    }
    let open = |path: &&Path| nsys_reader::Export::open(path).ok();
    let mut sets = exports
        .par_iter()
        .filter_map(|path| MetricSets::of_export(&open(path)?).ok())
        .reduce(MetricSets::default, |mut a, b| {
            a.merge(b);
            a
        });
    // NIC counters share BSC's numbers with NCCL's ranges: are there any?
    if sets.has_nic_counters()
        && writes_nccl_ranges(options)
        && exports
            .par_iter()
            .any(|path| open(path).is_some_and(|e| has_nccl_ranges(&e).unwrap_or(false)))
    {
        sets.set_nccl();
    }
    let choice = sets.choose(options.gpu_metric_types);
    options.gpu_metric_types = choice.gpu;
    options.nic_metric_types = choice.nic;
    for warning in choice.warnings {
        tracing::warn!("{warning}");
    }
}

/// Half of `--memory-limit` is shared by the runs being translated (one per
/// job), the other half by finished runs waiting for the merge.
fn spill_policy(config: &Config, reports: usize) -> Result<SpillPolicy> {
    let dir = match &config.resources.spill_dir {
        Some(d) => d.clone(),
        None => match config.output.trace.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        },
    };
    if !dir.is_dir() {
        let what = if config.resources.spill_dir.is_some() {
            "the temporary directory"
        } else {
            "the output directory"
        };
        bail!(
            "{}: {what} does not exist or is not a directory",
            dir.display()
        );
    }
    let limit = usize::try_from(config.resources.memory_limit).unwrap_or(usize::MAX);
    let jobs = jobs().min(reports.max(1));
    Ok(SpillPolicy {
        dir,
        chunk_bytes: (limit / 2 / jobs).max(1 << 12),
        budget: MemoryBudget::new(limit),
    })
}

/// Worker threads: `-j`, or one per core (the size of the pool `run` set up).
fn jobs() -> usize {
    rayon::current_num_threads().max(1)
}

pub fn check_output_is_not_an_input(paths: &OutputPaths, inputs: &[Input]) -> Result<()> {
    let out = [&paths.prv, &paths.pcf, &paths.row];
    for input in inputs.iter().flat_map(|i| [&i.export, &i.name]) {
        let input = std::fs::canonicalize(input).unwrap_or_else(|_| input.clone());
        if out
            .iter()
            .any(|o| std::fs::canonicalize(o).is_ok_and(|o| o == input))
        {
            bail!("{}: the output would overwrite an input", input.display());
        }
    }
    Ok(())
}

/// Translates every prepared report on the rayon pool (`-j` threads), in input
/// order; a report whose export failed is a failed outcome.
pub fn translate_prepared(
    prepared: Vec<inputs::Prepared>,
    options: &Options,
    progress: &dyn Progress,
) -> Vec<(std::path::PathBuf, Outcome)> {
    let reading = Mutex::new(progress.phase("reading", Some(prepared.len() as u64), "reports"));
    let outcomes = prepared
        .into_par_iter()
        .map(|p| {
            let outcome = match p.export {
                Ok(input) => translate_one(&input, options),
                Err(e) => Outcome::Failed(e),
            };
            reading.lock().expect("progress lock").inc();
            (p.name, outcome)
        })
        .collect();
    reading.into_inner().expect("progress lock").finish();
    outcomes
}

/// Translates one report; an empty one says why.
pub fn translate_one(input: &Input, options: &Options) -> Outcome {
    match translate_report(&input.export, &input.name, options) {
        Ok(report) => Outcome::Translated(Box::new(report)),
        Err(TranslateError::Empty(_)) => Outcome::Empty(why_empty(input, options)),
        // Rare (overlapping calls on a thread): the report is read whole.
        Err(TranslateError::CutUnsafe(_)) => {
            tracing::info!(
                "{}: the cut cannot be applied where its rows are read; read whole",
                input.name.display()
            );
            let whole = Options {
                read_window: None,
                ..options.clone()
            };
            translate_one(input, &whole)
        }
        Err(TranslateError::NotSelected(_, ranks)) => Outcome::NotSelected(ranks),
        Err(e) => Outcome::Failed(blame_the_right_place(e)),
    }
}

/// The translated reports in input order, for the merge. Empty reports are left
/// out with a warning unless all are empty; a failed report stops the conversion,
/// or with `skip_bad` is left out and listed.
pub fn gather(
    outcomes: Vec<(std::path::PathBuf, Outcome)>,
    options: &Options,
    skip_bad: bool,
) -> Result<(Vec<ReportTranslation>, Vec<Skipped>)> {
    let mut reports = Vec::with_capacity(outcomes.len());
    let mut empty = Vec::new();
    let mut skipped = Vec::new();
    let mut not_selected: Vec<Vec<u32>> = Vec::new();
    for (name, outcome) in outcomes {
        match outcome {
            Outcome::Translated(report) => reports.push(*report),
            Outcome::NotSelected(ranks) => not_selected.push(ranks),
            Outcome::Empty(why) => empty.push((name, why)),
            Outcome::Failed(e) if skip_bad => skipped.push(Skipped {
                report: name.display().to_string(),
                reason: crate::error::one_line(&e),
            }),
            Outcome::Failed(e) => return Err(e),
        }
    }
    if let Some(selection) = &options.ranks {
        let left_out = not_selected.len();
        if reports.is_empty() && left_out > 0 {
            let mut seen: Vec<u32> = not_selected.iter().flatten().copied().collect();
            seen.sort_unstable();
            seen.dedup();
            bail!(
                "--ranks {selection}: no report has a process of those ranks (the {} reports left out have {})",
                left_out,
                describe_rank_list(&seen)
            );
        }
        tracing::info!("--ranks {selection}: {left_out} reports left out");
    }
    if reports.is_empty() {
        match (empty.as_slice(), skipped.as_slice()) {
            ([], [_, ..]) => bail!(
                "none of the {} reports could be read (the first: {})",
                skipped.len(),
                skipped[0].reason
            ),
            ([(one, why)], []) => bail!("{}: {why}", one.display()),
            _ => bail!(
                "none of the {} reports has events in the selected categories ({})",
                empty.len() + skipped.len(),
                selected(options)
            ),
        }
    }
    for (name, why) in &empty {
        if why.starts_with("nothing selected") {
            tracing::info!("{}: {why}; left out", name.display());
        } else {
            tracing::warn!("{}: {why}; left out", name.display());
        }
    }
    let reports = drop_duplicate_reports(reports);
    for report in &reports {
        for w in &report.warnings {
            tracing::warn!("{w}");
        }
        log_counts(&report.path, &report.counts);
    }
    if reports.len() > 1 {
        log_counts(Path::new("all reports"), &total_counts(&reports));
    }
    Ok((reports, skipped))
}

/// Ranks as a short list: `ranks 0-3, 7` (runs of consecutive ranks joined),
/// `no known rank` when empty.
pub(crate) fn describe_rank_list(ranks: &[u32]) -> String {
    if ranks.is_empty() {
        return "no known rank".into();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(match j > i {
            true => format!("{}-{}", ranks[i], ranks[j]),
            false => ranks[i].to_string(),
        });
        i = j + 1;
    }
    let shown = parts.len().min(8);
    let more = if parts.len() > shown { ", …" } else { "" };
    format!("ranks {}{more}", parts[..shown].join(", "))
}

/// Why a report gave no records, from what it holds (see
/// [`nsys_semantics::survey::Contents::why_empty`]).
fn why_empty(input: &Input, options: &Options) -> String {
    let limits = options.time_limits;
    if limits.is_set() {
        let bound = |b: Option<i64>| b.map_or("-".to_string(), |ns| format!("{ns} ns"));
        return format!(
            "no row of the selected categories lies wholly between --time-limit-start {} and --time-limit-end {} (the report's own time: ns from its session start)",
            bound(limits.start),
            bound(limits.end)
        );
    }
    match nsys_semantics::survey::contents(&input.export) {
        Ok(contents) => contents.why_empty(|c| options.wants(c)),
        Err(_) => "the report has no events to translate".into(),
    }
}

/// The selected categories, in the registry's order.
fn selected(options: &Options) -> String {
    let names: Vec<&str> = Registry::standard()
        .iter()
        .map(|c| c.category.name())
        .filter(|&name| options.categories.iter().any(|c| c.name() == name))
        .collect();
    names.join(", ")
}

/// A spill that fails is about the temporary directory, not the report.
fn blame_the_right_place(e: TranslateError) -> anyhow::Error {
    match e {
        TranslateError::Write {
            source: WriteError::Spill { dir, source },
            ..
        } => anyhow::anyhow!(
            "{}: cannot write temporary files there ({source}); the reports are fine: free space there or give another directory with --tmp-dir DIR",
            dir.display()
        ),
        e => e.into(),
    }
}

/// The same report under two names (a copy, or a re-export) would double every
/// process: keep the first of reports with the same host, session start,
/// processes and records.
fn drop_duplicate_reports(reports: Vec<ReportTranslation>) -> Vec<ReportTranslation> {
    let mut seen: Vec<(DuplicateKey, std::path::PathBuf)> = Vec::new();
    let mut kept = Vec::with_capacity(reports.len());
    let mut duplicates = Vec::new();
    for report in reports {
        let key = duplicate_key(&report);
        match seen.iter().find(|(k, _)| *k == key) {
            Some((_, first)) => duplicates.push(format!(
                "{}: the same report as {}; used once",
                report.path.display(),
                first.display()
            )),
            None => {
                seen.push((key, report.path.clone()));
                kept.push(report);
            }
        }
    }
    warn_grouped(&duplicates, |n| {
        format!(
            "{n} reports are the same report as another (a copy or a re-export), each used once"
        )
    });
    kept
}

type DuplicateKey = (Option<String>, Option<i64>, Vec<u32>, usize, i64, i64);

fn duplicate_key(r: &ReportTranslation) -> DuplicateKey {
    let mut pids: Vec<u32> = r.threads.iter().map(|t| t.pid).collect();
    pids.dedup();
    (
        r.meta.hostname.clone(),
        r.meta.session_start_utc_ns,
        pids,
        r.run.len(),
        r.run.min_time,
        r.run.max_time,
    )
}

fn log_counts(what: &Path, counts: &std::collections::BTreeMap<String, u64>) {
    let list: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    tracing::debug!("{}: {}", what.display(), list.join(" "));
}

/// Paraver (4.11, default build: 16-bit object ids) cannot load a trace of more
/// than 65,535 tasks or with more than 65,535 threads in one task (`Cannot
/// load`): such a trace is refused before it is written, with the remedy.
fn check_paraver_limits(layout: &paraver_writer::TraceLayout) -> Result<(), UsageError> {
    let tasks = layout.tasks.len();
    if tasks > PARAVER_OBJECT_LIMIT {
        return Err(too_many_tasks(tasks, "would have"));
    }
    if let Some(task) = layout
        .tasks
        .iter()
        .max_by_key(|t| t.threads.len())
        .filter(|t| t.threads.len() > PARAVER_OBJECT_LIMIT)
    {
        return Err(UsageError(format!(
            "the trace would have {} threads in task '{}': Paraver loads at most {PARAVER_OBJECT_LIMIT} threads in a task; leave out the categories that make most of them with --exclude or -t (osrt, sched, sampling: a row per OS thread; cuda streams: a row per stream)",
            task.threads.len(),
            task.name
        )));
    }
    Ok(())
}

/// The error for `tasks` tasks: the trace "would have" them, or "needs at least".
fn too_many_tasks(tasks: usize, how: &str) -> UsageError {
    let stride = tasks.div_ceil(PARAVER_OBJECT_LIMIT);
    UsageError(format!(
        "the trace {how} {tasks} tasks (one per process of a report): Paraver loads at most {PARAVER_OBJECT_LIMIT}; convert some ranks only, e.g. --ranks ::{stride} (one rank in {stride}) or --ranks 0-{}",
        PARAVER_OBJECT_LIMIT - 1
    ))
}

/// Before any report is read: more reports than Paraver loads tasks (each
/// report is a task at least) is refused unless `--ranks` chooses some.
pub fn check_report_count(config: &Config, reports: usize) -> Result<(), UsageError> {
    if config.selection.ranks.is_none() && reports > PARAVER_OBJECT_LIMIT {
        return Err(too_many_tasks(reports, "needs at least"));
    }
    Ok(())
}

/// `.nsys-rep` inputs are exported into `NAME.cache/` beside the output.
pub fn export_settings(config: &Config, paths: &OutputPaths) -> crate::nsys_export::ExportSettings {
    crate::nsys_export::ExportSettings {
        cache_dir: paths.prv.with_file_name(format!("{}.cache", paths.stem())),
        jobs: config.resources.jobs.unwrap_or(0),
        force: config.inputs.force_export,
    }
}
