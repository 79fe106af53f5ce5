//! The merge split by time across tasks: `merge --shard I/N` (or task I of
//! `srun ... --shard slurm`) writes slice I of N of the trace's body into
//! `NAME.parts/slice-I-of-N.body`, then `slice-I-of-N.done` (its size and
//! tallies, JSON); the finishing merge (`merge NAME.prv`, or task 0) writes the
//! header, copies the slices' bodies after it in order (`copy_file_range`),
//! then the `.pcf`, `.row` and views, and installs the set.
//!
//! Every task reads every part's descriptions (small: names, threads, the
//! records' time index) and computes the layout, clock offsets, value tables
//! and MPI/NCCL pairing with the single run's code, so all agree; the slices'
//! time bounds come from the parts' time indexes alone
//! ([`paraver_writer::TraceWriter::write_slice`]), and each task reads only
//! the blocks of each part that hold its slice's times. The slices, in order,
//! are the single merge's body byte for byte (a `.prv.gz`: its text; each
//! slice is its own series of gzip members, see docs/slurm.md).
//!
//! Why files and a copy rather than each task writing at its offset in one
//! output: a task's offset is known only once every earlier slice is written,
//! so writing in place would hold each slice (in memory or in a file anyway)
//! until then; and a slice file written under a temporary name and renamed is
//! whole or absent, so a task that dies leaves nothing that looks finished and
//! a rerun of one slice replaces exactly it. The copy is the kernel's
//! (`copy_file_range`: no bytes through user space; on file systems that
//! support it, such as XFS, Btrfs or NFS 4.2 and Lustre servers, no data
//! moved at all).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use paraver_writer::{OutputPaths, SliceBody, SliceTallies};
use serde::{Deserialize, Serialize};

use super::parts::{self, is_slice_file, parse_slice_name as parse, PartsDir};
use super::plan::Plan;
use crate::config::Config;
use crate::convert::{self, SliceOutcome};
use crate::error::one_line;
use crate::progress::Progress;
use crate::timing::Timings;
use atomic_output::checkpoint;

/// What `slice-I-of-N.done` says.
#[derive(Debug, Serialize, Deserialize)]
struct SliceNote {
    /// The plan's id: slices of another plan are not used.
    plan: String,
    index: u32,
    count: u32,
    /// Size of `slice-I-of-N.body`.
    bytes: u64,
    /// `None`: the body cannot be cut by time (runs whose threads are not in
    /// the trace's order, or with a cut a thread in two runs); the finishing
    /// merge writes it whole.
    tallies: Option<SliceTallies>,
}

fn name(index: u32, count: u32, ext: &str) -> String {
    format!("slice-{index}-of-{count}.{ext}")
}

fn path(parts: &PartsDir, index: u32, count: u32, ext: &str) -> PathBuf {
    parts.dir.join(name(index, count, ext))
}

/// The command that (re)makes slice `index` of `count`.
fn rerun(index: u32, count: u32, trace: &str) -> String {
    format!("nsys2prv-rs merge --shard {index}/{count} {trace}")
}

/// Merge task `index` of `count`: writes its slice (every shard must be done).
/// A failure is noted for the finishing merge (with the Slurm `step`) and
/// returned.
pub(crate) fn merge_slice(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    (index, count): (u32, u32),
    step: &str,
    progress: &dyn Progress,
) -> Result<()> {
    let written = write(config, parts, plan, (index, count), progress);
    if let Err(e) = &written {
        let text = format!("step {step}\n{}\n", one_line(e));
        if let Err(e) = parts::write_note(&path(parts, index, count, "failed"), text.as_bytes()) {
            tracing::warn!("{e:#}");
        }
    }
    written
}

fn write(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    (index, count): (u32, u32),
    progress: &dyn Progress,
) -> Result<()> {
    let started = Instant::now();
    let mut timings = Timings::new(started);
    let plan_id = plan.id();
    super::check_every_shard_done(parts, plan, &plan_id, None)?;
    super::raise_open_file_limit(u64::from(plan.shards));
    let paths = OutputPaths::for_trace(Path::new(&plan.trace))?;
    // A cut is sliced too: each task writes the records of its slice of the
    // window, the finishing merge what crosses the window's edges.
    let outcomes = parts.load_all(plan, &plan_id)?;
    let options = convert::options(config, 1)?;
    let (reports, _) = convert::gather(outcomes, &options, config.inputs.skip_bad)?;
    checkpoint("parts read");
    let done = path(parts, index, count, "done");
    // No note of an earlier body while this one is written.
    let _ = std::fs::remove_file(&done);
    let body = path(parts, index, count, "body");
    // Every task would say the same of the layout and clocks: they stay quiet.
    let quiet = Config {
        quiet: true,
        ..config.clone()
    };
    let mut outcome = None;
    let installed = atomic_output::write_file_with(&body, |file: &mut File| {
        let written = convert::write_slice(
            &quiet,
            &paths,
            reports,
            (index, count),
            (file, &body),
            &mut timings,
            progress,
        );
        let failed = written.is_err();
        outcome = Some(written);
        // The error itself is in `outcome`: this one only stops the rename.
        match failed {
            true => Err(std::io::Error::other("the slice was not written")),
            false => Ok(()),
        }
    });
    let written = match (outcome, installed) {
        (Some(Err(e)), _) => return Err(e),
        (_, Err(e)) => return Err(e).with_context(|| format!("{}: cannot write", body.display())),
        (Some(Ok(written)), Ok(())) => written,
        (None, Ok(())) => bail!("{}: the slice was not written", body.display()),
    };
    let bytes = std::fs::metadata(&body)
        .with_context(|| format!("{}: cannot read", body.display()))?
        .len();
    let tallies = match written {
        SliceOutcome::Written(tallies) => Some(tallies),
        SliceOutcome::Unsliced => None,
    };
    let lines = tallies.as_ref().map(|t| t.lines);
    let note = SliceNote {
        plan: plan_id,
        index,
        count,
        bytes,
        tallies,
    };
    let text = serde_json::to_string(&note).expect("a note serialises") + "\n";
    parts::write_note(&done, text.as_bytes())?;
    let _ = std::fs::remove_file(path(parts, index, count, "failed"));
    if !config.quiet {
        let what = match lines {
            Some(lines) => format!("{lines} lines, {bytes} bytes"),
            None => "nothing: the body cannot be cut by time (threads out of the trace's order, or with a cut a thread in two reports); the finishing merge writes it whole".into(),
        };
        eprintln!(
            "slice {index} of {count}: {what} into {} in {:.2} s",
            body.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What the finishing merge takes of the slices.
pub(crate) enum Found {
    /// No slice: the merge writes the body itself.
    None,
    /// Every slice written, but the body cannot be cut by time: the merge
    /// writes it itself.
    Unsliced,
    Slices(Vec<SliceBody>),
}

/// The slices of `NAME.parts/`, checked: every slice of one count, of this
/// plan, whole; else an error naming each slice to merge again and the
/// command. `step`: the Slurm step whose failure notes count (all when None).
pub(crate) fn find(
    parts: &PartsDir,
    plan: &Plan,
    plan_id: &str,
    step: Option<&str>,
) -> Result<Found> {
    let listing = parts.listing();
    let counts: BTreeSet<u32> = listing
        .iter()
        .filter(|n| is_slice_file(n))
        .filter_map(|n| parse(n).map(|(_, count, _)| count))
        .collect();
    let count = match counts.len() {
        0 => return Ok(Found::None),
        1 => *counts.first().expect("one count"),
        _ => bail!(
            "cannot finish {}: {} holds slices of {} merges ({} slices); remove the slice-*-of-N.* files of all but one and merge its missing slices",
            plan.trace,
            parts.dir.display(),
            counts.len(),
            counts.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut problems = Vec::new();
    let mut reruns = Vec::new();
    let mut slices = Vec::new();
    let mut unsliced = false;
    for index in 0..count {
        match slice(parts, plan_id, index, count, step) {
            Ok((body, note)) => match note.tallies {
                Some(tallies) => slices.push(SliceBody {
                    file: body,
                    tallies,
                }),
                None => unsliced = true,
            },
            Err(why) => {
                problems.push(format!("slice {index} of {count} {why}"));
                reruns.push(rerun(index, count, &plan.trace));
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "cannot finish {}: {}; run {} again, then nsys2prv-rs merge {}",
            plan.trace,
            problems.join(", "),
            reruns.join(", "),
            plan.trace
        );
    }
    Ok(match unsliced {
        true => Found::Unsliced,
        false => Found::Slices(slices),
    })
}

/// Slice `index` of `count`, opened, or why it cannot be used.
fn slice(
    parts: &PartsDir,
    plan_id: &str,
    index: u32,
    count: u32,
    step: Option<&str>,
) -> std::result::Result<(File, SliceNote), String> {
    let done = path(parts, index, count, "done");
    let text = match std::fs::read_to_string(&done) {
        Ok(text) => text,
        Err(_) => {
            return Err(
                match std::fs::read_to_string(path(parts, index, count, "failed")) {
                    Ok(text) => {
                        let (when, reason) = text.split_once('\n').unwrap_or(("", &text));
                        let when = when.trim_start_matches("step ");
                        match step.is_none_or(|s| s == when) {
                            true => format!("failed ({})", reason.trim()),
                            false => "has not been merged".into(),
                        }
                    }
                    Err(_) => "has not been merged".into(),
                },
            )
        }
    };
    let note: SliceNote = serde_json::from_str(&text)
        .map_err(|e| format!("has a damaged note {} ({e})", done.display()))?;
    if note.plan != plan_id || (note.index, note.count) != (index, count) {
        return Err("was merged for another plan".into());
    }
    let body = path(parts, index, count, "body");
    let file = File::open(&body).map_err(|e| format!("has no body {} ({e})", body.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size != note.bytes {
        return Err(format!(
            "has a body of {size} bytes, not the {} its note says",
            note.bytes
        ));
    }
    Ok((file, note))
}

/// Task 0 of a Slurm step waits until every slice of `count` is done, or one
/// failed in this step.
pub(crate) fn wait_for_slices(
    config: &Config,
    parts: &PartsDir,
    count: u32,
    step: &str,
) -> Result<()> {
    let mut said = false;
    loop {
        let listing = parts.listing();
        let has = |name: String| listing.contains(&name);
        let waiting: Vec<u32> = (0..count)
            .filter(|&i| !has(self::name(i, count, "done")))
            .collect();
        let failed_now = waiting.iter().any(|&i| {
            std::fs::read_to_string(path(parts, i, count, "failed"))
                .is_ok_and(|t| t.lines().next() == Some(&format!("step {step}")))
        });
        if waiting.is_empty() || failed_now {
            return Ok(());
        }
        if !said && !config.quiet {
            eprintln!(
                "task 0: waiting for {} of {count} slices to be merged",
                waiting.len()
            );
            said = true;
        }
        checkpoint("waiting for the slices");
        std::thread::sleep(super::POLL);
    }
}
