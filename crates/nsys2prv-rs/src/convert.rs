//! The conversion: scan and translate reports in parallel, plan, merge, write.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use nsys_semantics::catalog::catalog_for_reports;
use nsys_semantics::clock::{align_clocks, SyncMode, SyncReport};
use nsys_semantics::cuts::{is_point_type, nvtx_range_window, RangeWindow};
use nsys_semantics::layout::total_counts;
use nsys_semantics::messages::{match_messages, MessageStats};
use nsys_semantics::survey::{survey_report, Survey};
use nsys_semantics::TracePlan;
use nsys_semantics::{
    plan_layout, translate_report, Category, KernelNames, Options, ReportTranslation,
    TranslateError,
};
use paraver_writer::layout::PARAVER_OBJECT_LIMIT;
use paraver_writer::merge::time_span;
use paraver_writer::{
    write_trace_cut, Cut, MemoryBudget, MergeInput, OutputPaths, SpillPolicy, TimeWindow,
};
use rayon::prelude::*;

use crate::cli::{Args, KernelNameArg, SyncArg, UsageError};
use crate::inputs;
use crate::progress::Progress;
use crate::report;
use crate::views;

/// Converts on a pool of `-j` worker threads (reports translated at once, and the
/// formatting of the merged records).
pub fn run(args: &Args) -> Result<()> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    pool.install(|| convert(args))
}

fn convert(args: &Args) -> Result<()> {
    let started = Instant::now();
    let paths = OutputPaths::for_trace(args.output())?;
    let inputs = inputs::expand(args.inputs(), &export_settings(args, &paths))?;
    let options = options(args, inputs.len())?;
    check_output_is_not_an_input(&paths, &inputs)?;
    if args.dry_run {
        return dry_run(&inputs, &options);
    }

    let reports = translate_all(&inputs, &options, args)?;
    let report_count = reports.len();
    let mut plan = plan_layout(&reports, &paths.stem());
    warn_about_limits(&plan.layout);
    let sync = align_clocks(&mut plan, &reports, sync_mode(args.sync));
    report_alignment(&sync, &reports, args.quiet);
    let (messages, message_stats) = match_messages(&reports, &plan);
    report_messages(&message_stats);

    let range = nvtx_range(args, &reports, &plan)?;
    let catalog = catalog_for_reports(&reports);
    let records: u64 = reports.iter().map(|r| r.run.len() as u64).sum();
    let mut progress = Progress::new(args.quiet, "writing", Some(records), "records");
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
    // Views are written first and renamed into place after the trace: a full disk
    // fails before anything is committed, and an interrupted run leaves neither.
    let cfgs_dir = args
        .cfgs_dir
        .clone()
        .unwrap_or_else(|| paths.prv.with_file_name(format!("{}.cfgs", paths.stem())));
    let views = views::prepare(&cfgs_dir)
        .with_context(|| format!("{}: cannot write the views", paths.prv.display()))?;
    let cut = cut_of(args, range.as_ref(), &merge_inputs);
    let summary = write_trace_cut(
        &paths,
        &plan.layout,
        &merge_inputs,
        &catalog,
        cut.as_ref(),
        &mut |n| progress.set(n),
    )
    .with_context(|| format!("{}: cannot write the trace", paths.prv.display()))?;
    progress.finish();
    drop(merge_inputs);
    views.fit_to(&summary.event_types)?;
    views.commit()?;

    if !args.quiet {
        eprintln!(
            "wrote {}: {} reports, {} nodes, {} tasks, {} threads, {} lines, {:.3} s of trace, in {:.2} s",
            paths.prv.display(),
            report_count,
            plan.layout.nodes.len(),
            plan.layout.tasks.len(),
            plan.layout.thread_count(),
            summary.lines,
            summary.end_time as f64 / 1e9,
            started.elapsed().as_secs_f64()
        );
    }
    if args.report {
        report::run(
            &paths.prv,
            &report::ReportOptions {
                print: !args.quiet,
                ..report::ReportOptions::default()
            },
        )?;
    }
    Ok(())
}

/// The window of `--nvtx-range` on the common clock (found before the merge,
/// while the translated runs are at hand).
fn nvtx_range(
    args: &Args,
    reports: &[ReportTranslation],
    plan: &TracePlan,
) -> Result<Option<RangeWindow>> {
    let Some(spec) = &args.nvtx_range else {
        return Ok(None);
    };
    let window = nvtx_range_window(reports, plan, spec).context("--nvtx-range")?;
    if !args.quiet {
        eprintln!(
            "cut to NVTX range '{spec}': {} ranges on {} tasks",
            window.ranges, window.tasks
        );
    }
    Ok(Some(window))
}

/// The cut of `--time-window` or `--nvtx-range`, on the common clock. A time
/// window is given in the uncut trace's time (from its origin).
fn cut_of(args: &Args, range: Option<&RangeWindow>, inputs: &[MergeInput]) -> Option<Cut> {
    if range.is_none() && args.time_window.is_none() {
        return None;
    }
    let (origin, end) = time_span(inputs)?;
    let window = match (range, args.time_window) {
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
    if !args.quiet {
        eprintln!(
            "cut: {:.6} s to {:.6} s of the uncut trace ({:.6} s long)",
            (window.start - origin) as f64 / 1e9,
            (window.end.min(end) - origin) as f64 / 1e9,
            (end - origin) as f64 / 1e9
        );
    }
    Some(Cut {
        window,
        is_point: is_point_type,
    })
}

/// Prints what a conversion would translate, from row counts only.
fn dry_run(inputs: &[std::path::PathBuf], options: &Options) -> Result<()> {
    let several = inputs.len() > 1;
    let surveys: Vec<Survey> = inputs
        .par_iter()
        .map(|p| survey_report(p, options, several))
        .collect::<Result<_, _>>()?;
    println!(
        "{:<40} {:<16} {:>5} {:>14}  rows per category",
        "report", "host", "rank", "rows"
    );
    for s in &surveys {
        let per: Vec<String> = s
            .rows
            .iter()
            .map(|(c, n)| format!("{}={n}", c.name()))
            .collect();
        println!(
            "{:<40} {:<16} {:>5} {:>14}  {}",
            s.path.display(),
            s.host.as_deref().unwrap_or("?"),
            s.rank.map_or("-".to_string(), |r| r.to_string()),
            s.total_rows(),
            per.join(" ")
        );
    }
    let rows: u64 = surveys.iter().map(Survey::total_rows).sum();
    let lines: u64 = surveys.iter().map(Survey::estimated_lines).sum();
    let bytes: u64 = surveys.iter().map(Survey::estimated_bytes).sum();
    let hosts: std::collections::BTreeSet<_> = surveys.iter().map(|s| s.host.clone()).collect();
    println!(
        "{} reports on {} hosts: {rows} rows; about {lines} trace lines, {:.1} MB of .prv (before gzip)",
        surveys.len(),
        hosts.len(),
        bytes as f64 / 1e6
    );
    Ok(())
}

fn sync_mode(arg: SyncArg) -> SyncMode {
    match arg {
        SyncArg::Session => SyncMode::Session,
        SyncArg::MpiInit => SyncMode::MpiInit,
        SyncArg::Barrier => SyncMode::Barrier,
        SyncArg::Nccl => SyncMode::Nccl,
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

fn options(args: &Args, reports: usize) -> Result<Options> {
    let mut options = Options::default();
    if !args.trace.is_empty() {
        options.categories = parse_categories(&args.trace)?;
    }
    for c in parse_categories(&args.exclude)? {
        options.categories.remove(&c);
    }
    if options.categories.is_empty() {
        return Err(
            UsageError("no category left to translate (see --trace and --exclude)".into()).into(),
        );
    }
    options.spill = Some(spill_policy(args, reports)?);
    options.decode_ahead = reports < jobs();
    options.kernel_names = match args.kernel_names {
        KernelNameArg::Short => KernelNames::Short,
        KernelNameArg::Demangled => KernelNames::Demangled,
    };
    Ok(options)
}

/// Half of `--memory-limit` is shared by the runs being translated (one per
/// job), the other half by finished runs waiting for the merge.
fn spill_policy(args: &Args, reports: usize) -> Result<SpillPolicy> {
    let dir = match &args.tmp_dir {
        Some(d) => d.clone(),
        None => match args.output().parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        },
    };
    if !dir.is_dir() {
        let what = if args.tmp_dir.is_some() {
            "the temporary directory"
        } else {
            "the output directory"
        };
        bail!(
            "{}: {what} does not exist or is not a directory",
            dir.display()
        );
    }
    let limit = usize::try_from(args.memory_limit).unwrap_or(usize::MAX);
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

fn parse_categories(words: &[String]) -> Result<std::collections::BTreeSet<Category>> {
    let mut set = std::collections::BTreeSet::new();
    for word in words.iter().filter(|w| !w.trim().is_empty()) {
        match Category::parse_word(word) {
            Some(cs) => set.extend(cs),
            None => {
                let known: Vec<&str> = Category::ALL.iter().map(|c| c.name()).collect();
                let message = format!(
                    "unknown category '{word}' (known: {}, cuda, all)",
                    known.join(", ")
                );
                return Err(UsageError(message).into());
            }
        }
    }
    Ok(set)
}

fn check_output_is_not_an_input(paths: &OutputPaths, inputs: &[std::path::PathBuf]) -> Result<()> {
    let out = [&paths.prv, &paths.pcf, &paths.row];
    for input in inputs {
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

/// Translates every report on the rayon pool (`-j` threads). Empty reports are left
/// out with a warning unless all are empty.
fn translate_all(
    inputs: &[std::path::PathBuf],
    options: &Options,
    args: &Args,
) -> Result<Vec<ReportTranslation>> {
    let progress = Mutex::new(Progress::new(
        args.quiet,
        "reading",
        Some(inputs.len() as u64),
        "reports",
    ));
    let results: Vec<Result<ReportTranslation, TranslateError>> = inputs
        .par_iter()
        .map(|path| {
            let result = translate_report(path, options);
            progress.lock().expect("progress lock").inc();
            result
        })
        .collect();
    progress.into_inner().expect("progress lock").finish();

    let mut reports = Vec::with_capacity(results.len());
    let mut empty = Vec::new();
    for result in results {
        match result {
            Ok(report) => reports.push(report),
            Err(TranslateError::Empty(path)) => empty.push(path),
            Err(e) => return Err(e.into()),
        }
    }
    if reports.is_empty() {
        match empty.as_slice() {
            [one] => return Err(TranslateError::Empty(one.clone()).into()),
            _ => bail!(
                "none of the {} reports has events to translate",
                empty.len()
            ),
        }
    }
    for path in &empty {
        tracing::warn!("{}: no events to translate; left out", path.display());
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
    Ok(reports)
}

/// The same report under two names (a copy, or a re-export) would double every
/// process: keep the first of reports with the same host, session start,
/// processes and records.
fn drop_duplicate_reports(reports: Vec<ReportTranslation>) -> Vec<ReportTranslation> {
    let mut seen: Vec<(DuplicateKey, std::path::PathBuf)> = Vec::new();
    let mut kept = Vec::with_capacity(reports.len());
    for report in reports {
        let key = duplicate_key(&report);
        match seen.iter().find(|(k, _)| *k == key) {
            Some((_, first)) => tracing::warn!(
                "{}: the same report as {}; used once",
                report.path.display(),
                first.display()
            ),
            None => {
                seen.push((key, report.path.clone()));
                kept.push(report);
            }
        }
    }
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

fn warn_about_limits(layout: &paraver_writer::TraceLayout) {
    let threads = layout.thread_count();
    if threads > PARAVER_OBJECT_LIMIT || layout.tasks.len() > PARAVER_OBJECT_LIMIT {
        tracing::warn!(
            "the trace has {} tasks and {threads} threads: default Paraver builds handle at most {PARAVER_OBJECT_LIMIT}; use a Paraver built with --enable-extended-objects",
            layout.tasks.len()
        );
    }
}

/// `.nsys-rep` inputs are exported into `NAME.cache/` beside the output.
fn export_settings(args: &Args, paths: &OutputPaths) -> crate::nsys_export::ExportSettings {
    crate::nsys_export::ExportSettings {
        cache_dir: paths.prv.with_file_name(format!("{}.cache", paths.stem())),
        jobs: args.jobs.unwrap_or(0),
    }
}
