//! Sharded conversion: plan, translate shard I of N, merge — each a plain
//! command any scheduler can run — and all three inside a Slurm job step.
//!
//! * plan (`--plan-shards N`, or the first shard that finds no plan): the
//!   inputs, their fingerprints, the options and the shard of each input, in
//!   `NAME.parts/plan` ([`plan`]).
//! * translate (`--shard I/N`): the shard's reports, exported on the node's
//!   temporary directory when they are `.nsys-rep`, translated as a single run
//!   translates them, into `NAME.parts/shard-I.part` ([`parts`]).
//! * merge (`merge NAME.prv`): every part's reports, restored in input order,
//!   go through the single run's own code from the layout on
//!   ([`crate::convert::gather`] and [`crate::convert::write_output_set`]),
//!   their records read from the parts: the same trace, byte for byte.
//! * merge split by time (`merge --shard I/N`, then `merge NAME.prv`): each
//!   merge task writes one time slice of the body, the plain merge writes the
//!   trace around them ([`slices`]).
//! * `--shard slurm`: task 0 plans and the others wait for its word, every task
//!   finds with the others the window of an `--nvtx-range` cut ([`window`]),
//!   translates shard `SLURM_PROCID` of `SLURM_NTASKS`, then, once every part
//!   is there, merges slice `SLURM_PROCID` of `SLURM_NTASKS`; task 0 waits for
//!   every slice and finishes the trace.

mod alive;
pub mod parts;
pub mod plan;
pub mod slices;
pub mod window;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use nsys_semantics::options::ReadWindow;
use paraver_writer::OutputPaths;

use crate::config::Config;
use crate::convert::{self, Finished, Outcome};
use crate::error::{one_line, UsageError};
use crate::inputs;
use crate::messages::count;
use crate::output_set::OutputSet;
use crate::progress::Progress;
use crate::timing::Timings;
use crate::MergeSettings;
use atomic_output::checkpoint;
use parts::{PartsDir, ShardState};
use plan::Plan;

/// How often a waiting task looks at the parts directory.
const POLL: Duration = Duration::from_millis(250);

/// `--plan-shards N`: writes the plan (or checks the one there) and stops.
pub fn plan_only(config: &Config, shards: u32) -> Result<Finished> {
    let (parts, plan) = settle_plan(config, shards, false)?;
    if !config.quiet {
        let with_work: std::collections::BTreeSet<u32> =
            plan.inputs.iter().map(|i| i.shard).collect();
        let idle = match plan.shards as usize - with_work.len() {
            0 => String::new(),
            n => format!(
                " ({} with work, {n} with nothing to translate: they write an empty part)",
                with_work.len()
            ),
        };
        eprintln!(
            "planned {} in {}{idle}: {}",
            count(plan.inputs.len(), "report"),
            count(plan.shards as usize, "shard"),
            parts.plan_path().display()
        );
    }
    Ok(Finished::default())
}

/// `--shard I/N`: translates shard `index` of `count` (planning first when no
/// plan is there).
pub fn run_shard(
    config: &Config,
    index: u32,
    count: u32,
    progress: &dyn Progress,
) -> Result<Finished> {
    let (parts, plan) = settle_plan(config, count, false)?;
    let window = window::planned_window(config, &parts, &plan)?;
    translate_shard(config, &parts, &plan, window, index, "-", progress)?;
    Ok(Finished::default())
}

/// The trace's paths and the parts directory of `config`'s output.
fn trace_and_parts(config: &Config) -> Result<(PathBuf, PartsDir)> {
    let trace = config.output.trace.clone();
    OutputPaths::for_trace(&trace)?;
    let parts = PartsDir::of(&trace);
    Ok((trace, parts))
}

/// The plan `args` asks for, installed in the parts directory unless one is
/// there; the one there must fit (same inputs, options, shards) and the inputs
/// it names must be unchanged. `tasks_find_window`: see [`Plan::new`].
fn settle_plan(config: &Config, shards: u32, tasks_find_window: bool) -> Result<(PartsDir, Plan)> {
    let (trace, parts) = trace_and_parts(config)?;
    convert::options(config, 1)?;
    // The merge would refuse the output: say so before any shard runs.
    let paths = OutputPaths::for_trace(&trace)?;
    crate::output_set::check_targets(&paths, &config.views_dir(&paths))?;
    let names = inputs::report_files(&config.inputs.reports)?;
    let names = distinct(names);
    convert::check_report_count(config, names.len())?;
    parts.create()?;
    let plan_path = parts.plan_path();
    let plan = if plan_path.exists() {
        let plan = Plan::read(&plan_path)?;
        let wanted = Plan {
            inputs: names
                .iter()
                .map(|n| plan::PlannedInput {
                    name: n.to_string_lossy().into_owned(),
                    fingerprint: plan::Fingerprint {
                        size: 0,
                        modified_ns: 0,
                        hash: String::new(),
                    },
                    shard: 0,
                })
                .collect(),
            ..Plan::new(config, &trace, &[], shards, false)?
        };
        plan.check_fits(&wanted, &plan_path)?;
        plan
    } else {
        let wanted = Plan::new(config, &trace, &names, shards, tasks_find_window)?;
        let installed = parts.install_plan(&wanted)?;
        if installed != wanted {
            installed.check_fits(&wanted, &plan_path)?;
        }
        installed
    };
    Ok((parts, plan))
}

/// Inputs named twice (the same file) are planned once, as a single run reads
/// them once.
fn distinct(names: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::BTreeSet::new();
    let mut repeated = Vec::new();
    let distinct = names
        .into_iter()
        .filter(|n| {
            let key = std::fs::canonicalize(n).unwrap_or_else(|_| n.clone());
            let first = seen.insert(key);
            if !first {
                repeated.push(format!(
                    "{}: given more than once; translated once",
                    n.display()
                ));
            }
            first
        })
        .collect();
    inputs::warn_repeated(&repeated);
    distinct
}

/// Translates the reports of `shard` into its part (nothing to do when a whole
/// part of this plan is there), reading rows in the plan's `window`. A failure
/// is noted for the merge (with the Slurm `step` it ran in) and returned.
fn translate_shard(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    window: Option<ReadWindow>,
    shard: u32,
    step: &str,
    progress: &dyn Progress,
) -> Result<()> {
    let plan_id = plan.id();
    if parts.has_part(plan, &plan_id, shard) {
        if !config.quiet {
            eprintln!(
                "shard {shard} of {}: already translated ({})",
                plan.shards,
                parts.part_path(shard).display()
            );
        }
        return Ok(());
    }
    let result = translate_into_part(config, parts, plan, window, &plan_id, shard, progress);
    if let Err(e) = &result {
        parts.write_failure(shard, step, &one_line(e));
    }
    result
}

fn translate_into_part(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    window: Option<ReadWindow>,
    plan_id: &str,
    shard: u32,
    progress: &dyn Progress,
) -> Result<()> {
    let mut timings = Timings::new(Instant::now());
    plan.check_unchanged(shard, &parts.plan_path())?;
    let numbers = plan.inputs_of(shard);
    let names: Vec<PathBuf> = numbers
        .iter()
        .map(|&i| PathBuf::from(&plan.inputs[i as usize].name))
        .collect();
    // .nsys-rep reports are exported on this node, not into the shared NAME.cache/.
    let exports = node_local_exports()?;
    let _tracked = atomic_output::cleanup::track(exports.path());
    let settings = crate::nsys_export::ExportSettings {
        cache_dir: exports.path().join("exports"),
        jobs: config.resources.jobs.unwrap_or(0),
        force: config.inputs.force_export,
    };
    let found = inputs::find(&names, &settings)?;
    let prepared = inputs::prepare(found, &settings, true)?;
    timings.lap("Inputs and exports");
    let mut options = convert::options(config, prepared.len())?;
    // A report's file name gives its rank when the job has several reports.
    options.several_reports = plan.inputs.len() > 1;
    // The plan's window: every shard cuts alike, and the merge checks it.
    options.read_window = window;
    // Decided from this shard's reports: the merge refuses shards that decided
    // apart (one type, two labels).
    let export_paths: Vec<&Path> = prepared
        .iter()
        .filter_map(|p| p.export.as_ref().ok())
        .map(|i| i.export.as_path())
        .collect();
    convert::choose_metric_types(&mut options, &export_paths);
    let outcomes = convert::translate_prepared(prepared, &options, progress);
    drop(exports);
    timings.lap("Translation");
    let records: u64 = outcomes
        .iter()
        .map(|(_, o)| match o {
            Outcome::Translated(r) => r.run.len() as u64,
            _ => 0,
        })
        .sum();
    let mut numbered = Vec::with_capacity(outcomes.len());
    let mut skipped = 0;
    for (&number, (name, outcome)) in numbers.iter().zip(outcomes) {
        if let Outcome::Failed(e) = &outcome {
            if !config.inputs.skip_bad {
                return Err(anyhow!("{}", one_line(e)));
            }
            tracing::warn!("{}: skipped: {}", name.display(), one_line(e));
            skipped += 1;
        }
        numbered.push((number, outcome));
    }
    checkpoint("shard translated");
    parts.write_part(plan_id, shard, numbered)?;
    timings.lap("Part written");
    if !config.quiet {
        eprintln!(
            "shard {shard} of {}: {}{} into {} in {:.2} s",
            plan.shards,
            count(numbers.len(), "report"),
            if skipped > 0 {
                format!(" ({skipped} skipped)")
            } else {
                String::new()
            },
            parts.part_path(shard).display(),
            timings.started().elapsed().as_secs_f64()
        );
    }
    if config.output.timing {
        let size = std::fs::metadata(parts.part_path(shard)).map_or(0, |m| m.len());
        timings.report(numbers.len(), records, size)?;
    }
    Ok(())
}

/// A new directory for exports on this node: `$SLURM_TMPDIR`, `$TMPDIR` or /tmp.
fn node_local_exports() -> Result<tempfile::TempDir> {
    let base = ["SLURM_TMPDIR", "TMPDIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .find(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("nsys2prv-rs-exports.")
        .tempdir_in(&base)
        .with_context(|| format!("{}: cannot create a directory for exports", base.display()))
}

/// `nsys2prv-rs merge OUTPUT`: the plan's conversion, from its parts, with the
/// `Config` the plan stores and the merging process's own settings.
pub fn merge_command(
    trace: &Path,
    settings: &MergeSettings,
    progress: &dyn Progress,
) -> Result<Finished> {
    let parts = PartsDir::of(trace);
    let plan_path = parts.plan_path();
    if !plan_path.is_file() {
        bail!(
            "{}: no plan of a sharded conversion there: run the shards (--shard I/N) first",
            plan_path.display()
        );
    }
    let plan = Plan::read(&plan_path)?;
    let mut config = plan.config_for_merge(settings);
    let pool = convert::worker_pool(settings.resources.jobs)?;
    if plan.window_by_tasks {
        config.cuts.read_window =
            pool.install(|| window::planned_window(&config, &parts, &plan))?;
    }
    match settings.slice {
        // Task I of an N-task step (`srun -n N ... merge --shard
        // $SLURM_PROCID/$SLURM_NTASKS`): every slice's task runs at once, so
        // each places its slice in the trace as `--shard slurm` does, and the
        // finishing merge after the step only writes the header.
        Some(slice) if slurm_task().is_ok_and(|task| task == slice) => {
            let step = slurm_step();
            pool.install(|| {
                slices::merge_slice(&config, &parts, &plan, slice, &step, progress)?;
                slices::place(&config, &parts, &plan, slice, &step)
            })
            .map(|()| Finished::default())
        }
        Some(slice) => pool
            .install(|| slices::merge_slice(&config, &parts, &plan, slice, "-", progress))
            .map(|()| Finished::default()),
        None => pool.install(|| merge(&config, &parts, &plan, None, progress)),
    }
}

/// Merges every part into the trace (once every shard is done; else the error
/// lists the shards to run again), then removes the parts unless
/// `--keep-parts`. `step`: the Slurm step whose failures count (all when None).
fn merge(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    step: Option<&str>,
    progress: &dyn Progress,
) -> Result<Finished> {
    let mut timings = Timings::new(Instant::now());
    let plan_id = plan.id();
    check_every_shard_done(parts, plan, &plan_id, step)?;
    // Slices that merge tasks wrote: all of them, whole, or the merge refuses.
    let found = slices::find(parts, plan, &plan_id, step)?;
    raise_open_file_limit(u64::from(plan.shards));
    let paths = OutputPaths::for_trace(Path::new(&plan.trace))?;
    let output_set = OutputSet::prepare(&paths, &config.views_dir(&paths))?;
    let body = match found {
        slices::Found::Slices(mut slices) => {
            // Slices the tasks placed in the `.prv` already stay where they are.
            let staged = output_set.staged_trace().prv;
            slices::take_placed(parts, &plan_id, &mut slices, &staged);
            convert::Body::Slices(slices)
        }
        slices::Found::None | slices::Found::Unsliced => convert::Body::Merged,
    };
    let outcomes = parts.load_all(plan, &plan_id)?;
    let options = convert::options(config, 1)?;
    let (reports, skipped) = convert::gather(outcomes, &options, config.inputs.skip_bad)?;
    checkpoint("parts read");
    timings.lap("Parts read");
    let finished = convert::write_output_set(
        config,
        &paths,
        output_set,
        reports,
        &skipped,
        body,
        &mut timings,
        progress,
    )?;
    if !config.output.keep_parts {
        parts.remove();
    }
    Ok(finished)
}

fn check_every_shard_done(
    parts: &PartsDir,
    plan: &Plan,
    plan_id: &str,
    step: Option<&str>,
) -> Result<()> {
    let states = parts.states(plan, plan_id);
    let mut problems = Vec::new();
    let mut rerun = Vec::new();
    for (shard, state) in states.iter().enumerate() {
        match state {
            ShardState::Done => continue,
            ShardState::Failed { reason, step: when } if step.is_none_or(|s| s == when) => {
                problems.push(format!("shard {shard} failed ({reason})"))
            }
            ShardState::Failed { .. } | ShardState::Missing => {
                problems.push(format!("shard {shard} has no part"))
            }
            ShardState::Unusable(why) => problems.push(format!(
                "{}: {why}",
                parts.part_path(shard as u32).display()
            )),
        }
        rerun.push(format!("--shard {shard}/{}", plan.shards));
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "cannot merge {}: {}; run {} again, then nsys2prv-rs merge {}",
        plan.trace,
        problems.join(", "),
        rerun.join(", "),
        plan.trace
    )
}

/// The merge keeps every part open: lift the soft limit on open files to the
/// hard one when the parts need it.
#[allow(unsafe_code)] // SAFETY comments at each block
fn raise_open_file_limit(parts: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        let wanted = parts + 256;
        if limit.rlim_cur >= wanted {
            return;
        }
        limit.rlim_cur = wanted.min(limit.rlim_max);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    if limit.rlim_cur < parts + 16 {
        tracing::warn!(
            "{parts} parts to read but at most {} open files (ulimit -n): use fewer shards",
            limit.rlim_cur
        );
    }
}

/// One task of `srun nsys2prv-rs --shard slurm ...`.
/// `--shard slurm`: one task of a Slurm job step (see the module doc).
pub fn run_slurm_task(config: &Config, progress: &dyn Progress) -> Result<Finished> {
    let (task, tasks) = slurm_task()?;
    let step = slurm_step();
    let (_, parts) = trace_and_parts(config)?;
    if task != 0 {
        let translated = wait_for_plan(&parts, &step, task)
            .and_then(|()| {
                alive::note(&parts, task, &step);
                Plan::read(&parts.plan_path())
            })
            .and_then(|plan| {
                check_task_count(&parts, &plan, tasks)?;
                let window = window::find_in_step(config, &parts, &plan, task, &step)?;
                let config = with_window(config, window);
                translate_shard(&config, &parts, &plan, window, task, &step, progress)?;
                Ok((plan, config))
            });
        // Task 0 waits for this shard: whatever went wrong, it must hear of it.
        let (plan, config) = match translated {
            Ok(done) => done,
            Err(e) => {
                parts.write_failure(task, &step, &one_line(&e));
                return Err(e);
            }
        };
        let config = &config;
        // Then this task merges its slice of the trace, once every part is there.
        wait_for_shards(config, &parts, &plan, &step, task)?;
        slices::merge_slice(config, &parts, &plan, (task, tasks), &step, progress)?;
        slices::place(config, &parts, &plan, (task, tasks), &step)?;
        return Ok(Finished::default());
    }
    if parts.dir.is_dir() {
        alive::note(&parts, 0, &step);
    }
    let planned = settle_plan(config, tasks, true).and_then(|(_, plan)| {
        check_task_count(&parts, &plan, tasks)?;
        Ok(plan)
    });
    let word = match &planned {
        Ok(_) => "ok\n".to_string(),
        Err(e) => format!("failed: {}\n", one_line(e)),
    };
    if parts.dir.is_dir() {
        // (Planning may have made the directory anew.)
        alive::note(&parts, 0, &step);
        parts::write_note(&parts.step_path(&step), word.as_bytes())?;
    }
    let plan = planned?;
    let window = match window::find_in_step(config, &parts, &plan, task, &step) {
        Ok(window) => window,
        Err(e) => {
            parts.write_failure(task, &step, &one_line(&e));
            return Err(e);
        }
    };
    // The merge takes the window as found: the runs keep too little outside it
    // to find it again.
    let config = &with_window(config, window);
    translate_shard(config, &parts, &plan, window, task, &step, progress)?;
    wait_for_shards(config, &parts, &plan, &step, task)?;
    check_every_shard_done(&parts, &plan, &plan.id(), Some(&step))?;
    // A failed slice is noted for the finishing merge below, which names it.
    if slices::merge_slice(config, &parts, &plan, (0, tasks), &step, progress).is_ok() {
        slices::place(config, &parts, &plan, (0, tasks), &step)?;
    }
    slices::wait_for_slices(config, &parts, tasks, &step)?;
    merge(config, &parts, &plan, Some(&step), progress)
}

/// `config` reading rows in `window`, as the plan's conversion does.
fn with_window(config: &Config, window: Option<ReadWindow>) -> Config {
    let mut config = config.clone();
    config.cuts.read_window = window;
    config
}

fn check_task_count(parts: &PartsDir, plan: &Plan, tasks: u32) -> Result<()> {
    if plan.shards != tasks {
        bail!(
            "{}: made for {} shards, but the step has {tasks} tasks; remove {} to plan again",
            parts.plan_path().display(),
            plan.shards,
            parts.dir.display()
        );
    }
    Ok(())
}

/// `SLURM_PROCID` and `SLURM_NTASKS` of this task.
fn slurm_task() -> Result<(u32, u32)> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    match (var("SLURM_PROCID"), var("SLURM_NTASKS").or_else(|| var("SLURM_NPROCS"))) {
        (Some(task), Some(tasks)) if task < tasks => Ok((task, tasks)),
        _ => Err(UsageError(
            "--shard slurm runs inside a Slurm job step (srun nsys2prv-rs --shard slurm ...): SLURM_PROCID and SLURM_NTASKS are not set; outside Slurm give --shard I/N".into(),
        )
        .into()),
    }
}

/// `JOBID.STEPID` of this step, which tells its notes from earlier runs' ones.
fn slurm_step() -> String {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| "x".into());
    format!("{}.{}", var("SLURM_JOB_ID"), var("SLURM_STEP_ID"))
}

/// Waits for task 0's word on the plan of this step (noting this task's
/// whereabouts as soon as the directory is there: task 0 waits on it next).
fn wait_for_plan(parts: &PartsDir, step: &str, task: u32) -> Result<()> {
    let path = parts.step_path(step);
    let mut noted = false;
    loop {
        if !noted && parts.dir.is_dir() {
            alive::note(parts, task, step);
            noted = true;
        }
        if let Ok(word) = std::fs::read_to_string(&path) {
            return match word.strip_prefix("failed: ") {
                Some(why) => Err(anyhow!("task 0 could not plan: {}", why.trim())),
                None => Ok(()),
            };
        }
        if let Some(why) = alive::gone(parts, 0, step, || path.exists()) {
            bail!("{why}");
        }
        checkpoint("waiting for the plan");
        std::thread::sleep(POLL);
    }
}

/// Task `task` waits until every shard has its part, or one fails in this step.
fn wait_for_shards(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    step: &str,
    task: u32,
) -> Result<()> {
    let mut said = false;
    loop {
        let listing = parts.listing();
        let has = |name: String| listing.contains(&name);
        let waiting: Vec<u32> = (0..plan.shards)
            .filter(|s| !has(format!("shard-{s}.part")))
            .collect();
        let failed_now = waiting.iter().any(|s| {
            has(format!("shard-{s}.failed"))
                && parts
                    .states(plan, &plan.id())
                    .get(*s as usize)
                    .is_some_and(|st| matches!(st, ShardState::Failed { step: w, .. } if w == step))
        });
        if waiting.is_empty() || failed_now {
            return Ok(());
        }
        // A task killed outright writes neither part nor note. (Its part or
        // note may have come since the listing: the next look takes them.)
        if let Some(why) = waiting.iter().find_map(|&s| {
            alive::gone(parts, s, step, || {
                parts.dir.join(format!("shard-{s}.part")).exists()
                    || parts.failure_in_step(s, step).is_some()
            })
        }) {
            bail!("{why}");
        }
        if !said && !config.quiet {
            eprintln!(
                "task {task}: waiting for {} of {} shards to finish",
                waiting.len(),
                plan.shards
            );
            said = true;
        }
        checkpoint("waiting for the shards");
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge converts with the plan's own `Config`, read back from the plan
    /// file, with only the merging process's settings its own.
    #[test]
    fn the_merge_uses_the_config_the_plan_stores() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("a.sqlite");
        std::fs::write(&report, "not read here").unwrap();
        let trace = dir.path().join("out.prv.gz");
        let mut config = Config::new(vec![report.clone()], trace.clone());
        config.selection.trace = vec!["cuda".into(), "nvtx".into()];
        config.selection.time_limit_start = Some(-20);
        config.cuts.nvtx_range = Some("step#3".parse().unwrap());
        config.sync = crate::config::ClockSync::Barrier;
        config.output.report = Some(crate::config::ReportRequest::Print);
        config.output.labels = vec!["a label".into()];
        config.resources.jobs = Some(7);
        config.quiet = true;
        let plan = Plan::new(&config, &trace, std::slice::from_ref(&report), 2, false).unwrap();
        let path = dir.path().join("plan");
        let text = serde_json::to_string_pretty(&plan).unwrap();
        std::fs::write(&path, text).unwrap();
        let read = Plan::read(&path).unwrap();
        assert_eq!(read, plan);
        let settings = MergeSettings {
            resources: crate::config::Resources {
                jobs: Some(3),
                memory_limit: 1 << 20,
                spill_dir: None,
            },
            keep_parts: true,
            timing: false,
            quiet: false,
            slice: None,
        };
        let merged = read.config_for_merge(&settings);
        assert_eq!(merged.inputs.reports, vec![report]);
        assert_eq!(merged.output.trace, trace);
        assert_eq!(merged.resources, settings.resources);
        assert!(merged.output.keep_parts && !merged.quiet);
        assert_eq!(
            merged.shaping_options().unwrap(),
            config.shaping_options().unwrap()
        );
        assert_eq!(merged.for_plan(), config.for_plan());
    }
}
