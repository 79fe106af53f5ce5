//! The window of an `--nvtx-range` cut found by the tasks of a Slurm step
//! (`--shard slurm`), not by the plan: each task translates the ranges of its
//! own shard's reports and writes their reductions into `shard-I.ranges`
//! (postcard); once every task's are there, each task combines all of them in
//! input order, as a single pass combines its reports
//! ([`crate::convert::window_of_ranges`]), so every task gets the single pass's
//! window. Task 0 stores it in `window` (JSON) for what runs after the step
//! (a shard run again, `nsys2prv-rs merge`); the others go on with their own
//! copy, without waiting for it.
//!
//! Job arrays and `--plan-shards N` keep the window in the plan: their tasks
//! may not run at once, and a task waiting for the others could wait forever.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use nsys_semantics::options::ReadWindow;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::alive;
use super::parts::{self, PartsDir};
use super::plan::{self, Plan};
use super::POLL;
use crate::config::Config;
use crate::convert::{range_pass_options, reduce_for_range, window_of_ranges, RangeReduction};
use crate::inputs::Input;
use atomic_output::checkpoint;

/// What one task found of the window: the reduction of each report of its
/// shard (`shard-I.ranges`), in the Slurm step that found it.
#[derive(Serialize, Deserialize)]
struct TaskReductions {
    plan: String,
    step: String,
    reports: Vec<(u32, RangeReduction)>,
}

/// The window stored for the plan `plan` (its id).
#[derive(Serialize, Deserialize)]
struct StoredWindow {
    plan: String,
    window: Option<ReadWindow>,
}

/// The window rows are read in for `plan`: the plan's own; for a plan whose
/// step's tasks find it, the one they stored, or (that step did not get so
/// far) found here, over every report, and stored.
pub fn planned_window(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
) -> Result<Option<ReadWindow>> {
    if !plan.window_by_tasks {
        return Ok(plan.config.cuts.read_window);
    }
    let plan_id = plan.id();
    if let Some(window) = stored(parts, &plan_id) {
        return Ok(window);
    }
    let names: Vec<PathBuf> = plan.inputs.iter().map(|i| PathBuf::from(&i.name)).collect();
    let window = plan::read_window(config, &names);
    store(parts, &plan_id, window)?;
    Ok(window)
}

/// Task `task` of the Slurm step `step`: the window rows are read in, found
/// with the other tasks when the plan leaves it to them. A task that cannot do
/// its share notes its failure (`shard-I.failed`) for the others, which stop
/// too; a report that cannot be read stops every task with its one line
/// (unless `--skip-bad`: then, as in a single run, the cut is the merge's).
pub fn find_in_step(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    task: u32,
    step: &str,
) -> Result<Option<ReadWindow>> {
    if !plan.window_by_tasks {
        return Ok(plan.config.cuts.read_window);
    }
    let plan_id = plan.id();
    // Found by an earlier step of this plan. (This step's task 0 stores the
    // window only once every task's reductions are there, this one's too.)
    if let Some(window) = stored(parts, &plan_id) {
        return Ok(window);
    }
    let spec = plan.config.cuts.nvtx_range.as_ref().ok_or_else(|| {
        anyhow!(
            "{}: a plan whose tasks find the window of no --nvtx-range: not a plan of nsys2prv-rs",
            parts.plan_path().display()
        )
    })?;
    // The same for every task: no pass, no window, nothing to wait for.
    let Some(options) = range_pass_options(config, plan.inputs.len()) else {
        if task == 0 {
            store(parts, &plan_id, None)?;
        }
        return Ok(None);
    };
    plan.check_unchanged(task, &parts.plan_path())?;
    let mine: Vec<(u32, RangeReduction)> = plan
        .inputs_of(task)
        .into_par_iter()
        .map(|i| {
            let name = PathBuf::from(&plan.inputs[i as usize].name);
            let input = Input {
                export: name.clone(),
                name,
            };
            (i, reduce_for_range(&input, &options, spec))
        })
        .collect();
    let path = parts.ranges_path(task);
    // Encoded as a `TaskReductions` is (postcard writes a struct as the tuple
    // of its fields).
    let bytes = postcard::to_stdvec(&(&plan_id, step, &mine))
        .context("cannot encode the reports' ranges")?;
    parts::write_note(&path, &bytes)?;
    checkpoint("ranges written");
    let mut slots: Vec<Option<RangeReduction>> = (0..plan.inputs.len()).map(|_| None).collect();
    place(&mut slots, mine, &path)?;
    wait_for_reductions(config, parts, plan, &plan_id, task, step, &mut slots)?;
    // A shard's file that leaves out one of its inputs was not written by this
    // tool (each task reduces every input of its shard): an error, not a panic.
    let reduced: Vec<RangeReduction> = slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| {
                let shard = plan.inputs[i].shard;
                anyhow!(
                    "{}: leaves out input {i} ({}) of its shard: not written by nsys2prv-rs",
                    parts.ranges_path(shard).display(),
                    plan.inputs[i].name
                )
            })
        })
        .collect::<Result<_>>()?;
    if !config.inputs.skip_bad {
        // The translation would stop at it: stop every task now, before any translates.
        if let Some(why) = reduced.iter().find_map(|r| match r {
            RangeReduction::Failed(why) => Some(why),
            _ => None,
        }) {
            bail!("{why}");
        }
    }
    let window = window_of_ranges(reduced, spec);
    if task == 0 {
        store(parts, &plan_id, window)?;
    }
    Ok(window)
}

/// Puts the reductions of one task's file in their inputs' slots.
fn place(
    slots: &mut [Option<RangeReduction>],
    reports: Vec<(u32, RangeReduction)>,
    path: &std::path::Path,
) -> Result<()> {
    for (input, reduction) in reports {
        let Some(slot) = slots.get_mut(input as usize) else {
            bail!(
                "{}: names input {input}, not in the plan: not written by nsys2prv-rs",
                path.display()
            );
        };
        *slot = Some(reduction);
    }
    Ok(())
}

/// Reads every other task's reductions of this step as they appear; stops when
/// a task notes a failure in this step.
fn wait_for_reductions(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    plan_id: &str,
    task: u32,
    step: &str,
    slots: &mut [Option<RangeReduction>],
) -> Result<()> {
    let mut waiting: Vec<u32> = (0..plan.shards).filter(|&s| s != task).collect();
    let mut said = false;
    loop {
        let mut still = Vec::new();
        for shard in waiting {
            let path = parts.ranges_path(shard);
            let read = || {
                std::fs::read(&path).ok().and_then(|bytes| {
                    postcard::from_bytes::<TaskReductions>(&bytes)
                        .ok()
                        .filter(|r| r.plan == plan_id && r.step == step)
                })
            };
            if let Some(reductions) = read() {
                // Only the inputs of that shard: a file of another plan does not get here.
                if let Some((i, _)) = reductions.reports.iter().find(|(i, _)| {
                    plan.inputs
                        .get(*i as usize)
                        .is_none_or(|p| p.shard != shard)
                }) {
                    bail!(
                        "{}: names input {i}, not of shard {shard}: not written by nsys2prv-rs",
                        path.display()
                    );
                }
                place(slots, reductions.reports, &path)?;
            } else if let Some(why) = parts.failure_in_step(shard, step) {
                bail!("task {shard} of this step failed: {why}");
            } else if let Some(why) = alive::gone(parts, shard, step, || {
                read().is_some() || parts.failure_in_step(shard, step).is_some()
            }) {
                bail!("{why}");
            } else {
                still.push(shard);
            }
        }
        waiting = still;
        if waiting.is_empty() {
            return Ok(());
        }
        if !said && !config.quiet {
            eprintln!(
                "task {task}: waiting for {} of {} tasks to find their reports' ranges",
                waiting.len(),
                plan.shards
            );
            said = true;
        }
        checkpoint("waiting for the ranges");
        std::thread::sleep(POLL);
    }
}

/// The window stored for the plan `plan_id`, if any.
fn stored(parts: &PartsDir, plan_id: &str) -> Option<Option<ReadWindow>> {
    let text = std::fs::read_to_string(parts.window_path()).ok()?;
    let stored: StoredWindow = serde_json::from_str(&text).ok()?;
    (stored.plan == plan_id).then_some(stored.window)
}

fn store(parts: &PartsDir, plan_id: &str, window: Option<ReadWindow>) -> Result<()> {
    let text = serde_json::to_string_pretty(&StoredWindow {
        plan: plan_id.to_string(),
        window,
    })
    .expect("a window serialises")
        + "\n";
    parts::write_note(&parts.window_path(), text.as_bytes())
}
