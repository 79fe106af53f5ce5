//! The merge split by time across tasks: `merge --shard I/N` (or task I of
//! `srun ... --shard slurm`) writes slice I of N of the trace's body into
//! `NAME.parts/slice-I-of-N.body`, then `slice-I-of-N.done` (its size, its
//! tallies and the header's size, JSON); the finishing merge (`merge NAME.prv`,
//! or task 0) writes the header, copies the slices' bodies after it in order
//! (`copy_file_range`), then the `.pcf`, `.row` and views, and installs the set.
//!
//! Under `srun ... --shard slurm` every task runs at once, so the copy is
//! spread over them: once the slices before its own are written (their notes
//! give their sizes), task I copies its slice into `NAME.parts/slices-of-N.trace`
//! at its offset ([`place`]) and notes it in `slice-I-of-N.placed`; task 0
//! waits for every slice's note, and the finishing merge renames that file
//! into its staging directory as the `.prv`, writes the header at its start
//! and copies only the slices not placed where they belong
//! ([`take_placed`]). A plain `merge NAME.prv` after a step that stopped
//! half-way (a task killed) reuses what was placed the same way.
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
//! Why a slice file first rather than each task formatting straight into the
//! `.prv`: a task's offset is known only once every earlier slice is written,
//! so it would hold its slice until then anyway; a slice file written under a
//! temporary name and renamed is whole or absent, so a task that dies leaves
//! nothing that looks finished and a rerun of one slice replaces exactly it;
//! and job arrays, whose slices may not run at once, need the files. The copy
//! is the kernel's (`copy_file_range`: no bytes through user space; on file
//! systems that support it, such as XFS, Btrfs or NFS 4.2 and Lustre servers,
//! no data moved at all). A `slice-I-of-N.placed` note is written only once
//! its bytes are synced, and the finishing merge removes the notes before it
//! takes the file, so a note never speaks of a file that is not there.

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
    /// Size of the trace's header, which precedes slice 0 in the `.prv` (0:
    /// not known, the slice is not placed).
    #[serde(default)]
    header: u64,
}

/// What `slice-I-of-N.placed` says: the task copied its slice into
/// `slices-of-N.trace` at `offset`.
#[derive(Debug, Serialize, Deserialize)]
struct PlacedNote {
    plan: String,
    index: u32,
    count: u32,
    /// The Slurm step that placed it.
    step: String,
    offset: u64,
    /// Size of the slice placed.
    bytes: u64,
}

fn name(index: u32, count: u32, ext: &str) -> String {
    format!("slice-{index}-of-{count}.{ext}")
}

fn path(parts: &PartsDir, index: u32, count: u32, ext: &str) -> PathBuf {
    parts.dir.join(name(index, count, ext))
}

/// `NAME.parts/slices-of-N.trace`: the `.prv` the tasks of a Slurm step place
/// their slices in, each at its offset; the finishing merge writes the header
/// into it and renames it into the output set.
fn assembled_path(parts: &PartsDir, count: u32) -> PathBuf {
    parts.dir.join(format!("slices-of-{count}.trace"))
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
    // No note of an earlier body (nor of its placing) while this one is written.
    let _ = std::fs::remove_file(&done);
    for note in ["placed", "unplaced"] {
        let _ = std::fs::remove_file(path(parts, index, count, note));
    }
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
    let (tallies, header) = match written {
        SliceOutcome::Written(tallies, header) => (Some(tallies), header),
        SliceOutcome::Unsliced => (None, 0),
    };
    let lines = tallies.as_ref().map(|t| t.lines);
    let note = SliceNote {
        plan: plan_id,
        index,
        count,
        bytes,
        tallies,
        header,
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
                    placed_at: None,
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

/// Task `index` of a Slurm step whose merge tasks all run at once (`--shard
/// slurm`, or `srun ... merge --shard $SLURM_PROCID/$SLURM_NTASKS`), its slice
/// written: once
/// every earlier slice is written (their notes give their sizes, its own the
/// header's), copies it into `NAME.parts/slices-of-N.trace` at its offset and
/// notes that in `slice-I-of-N.placed`, for the finishing merge, which then
/// only writes the header. Whatever stops it is noted in
/// `slice-I-of-N.unplaced` (task 0 waits for one of the two): the finishing
/// merge copies that slice itself. An error when an earlier slice failed in
/// this step (the trace cannot be finished).
pub(crate) fn place(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    (index, count): (u32, u32),
    step: &str,
) -> Result<()> {
    checkpoint("slice written");
    let placed = place_at_offset(config, parts, plan, (index, count), step);
    let note = match &placed {
        Ok(Some(note)) => Ok(note),
        Ok(None) => Err("the body is not sliced".to_string()),
        Err(e) => Err(one_line(e)),
    };
    let written = match note {
        Ok(note) => {
            let text = serde_json::to_string(note).expect("a note serialises") + "\n";
            parts::write_note(&path(parts, index, count, "placed"), text.as_bytes())
        }
        Err(why) => {
            let text = format!("step {step}\n{why}\n");
            parts::write_note(&path(parts, index, count, "unplaced"), text.as_bytes())
        }
    };
    match placed {
        Ok(Some(note)) if !config.quiet => eprintln!(
            "slice {index} of {count}: placed at byte {} of {}",
            note.offset,
            assembled_path(parts, count).display()
        ),
        Ok(_) => {}
        Err(e) if e.is::<EarlierFailed>() => return Err(e),
        // The finishing merge copies the slice: the trace is not at stake.
        Err(e) => tracing::warn!(
            "slice {index} of {count} not placed (the finishing merge copies it): {}",
            one_line(&e)
        ),
    }
    written
}

/// An earlier slice failed in this step: no offset for this one.
#[derive(Debug)]
struct EarlierFailed(String);

impl std::fmt::Display for EarlierFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EarlierFailed {}

/// Places slice `index` (see [`place`]); `None` when the body is not sliced.
fn place_at_offset(
    config: &Config,
    parts: &PartsDir,
    plan: &Plan,
    (index, count): (u32, u32),
    step: &str,
) -> Result<Option<PlacedNote>> {
    let plan_id = plan.id();
    let (body, own) = slice(parts, &plan_id, index, count, None)
        .map_err(|why| anyhow::anyhow!("slice {index} of {count} {why}"))?;
    if own.tallies.is_none() || own.header == 0 {
        return Ok(None);
    }
    let earlier: Vec<u32> = (0..index).collect();
    let who = format!(
        "task {index}: waiting for the slices before slice {index}, to place it after them"
    );
    if let Some(failed) = wait_until_noted(
        config,
        parts,
        count,
        step,
        &earlier,
        Awaited {
            kinds: &["done"],
            who: &who,
            until: Until::OneFails,
        },
    ) {
        return Err(EarlierFailed(format!(
            "slice {failed} of {count} failed: slice {index} cannot be placed after it"
        ))
        .into());
    }
    let mut offset = own.header;
    for i in 0..index {
        let (_, note) = slice(parts, &plan_id, i, count, None)
            .map_err(|why| anyhow::anyhow!("slice {i} of {count} {why}"))?;
        if note.tallies.is_none() || note.header != own.header {
            return Ok(None);
        }
        offset += note.bytes;
    }
    let assembled = assembled_path(parts, count);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&assembled)
        .with_context(|| format!("{}: cannot open", assembled.display()))?;
    paraver_writer::place_slice(&body, &file, offset)
        .and_then(|()| file.sync_data())
        .with_context(|| format!("{}: cannot write", assembled.display()))?;
    Ok(Some(PlacedNote {
        plan: plan_id,
        index,
        count,
        step: step.to_string(),
        offset,
        bytes: own.bytes,
    }))
}

/// The finishing merge takes `NAME.parts/slices-of-N.trace` as its `.prv`
/// (renamed to `staged`, in the output's staging directory) when slices were
/// placed in it, and marks the slices placed where their notes say (the
/// writer copies the others, and any at another offset than theirs). The
/// notes go first: a placed note never outlives the file it speaks of.
pub(crate) fn take_placed(
    parts: &PartsDir,
    plan_id: &str,
    slices: &mut [SliceBody],
    staged: &Path,
) {
    let count = slices.len() as u32;
    let assembled = assembled_path(parts, count);
    let mut placed = 0;
    for (index, slice) in (0..count).zip(slices.iter_mut()) {
        let note = std::fs::read_to_string(path(parts, index, count, "placed"))
            .ok()
            .and_then(|text| serde_json::from_str::<PlacedNote>(&text).ok());
        let bytes = slice.file.metadata().map(|m| m.len()).ok();
        slice.placed_at = note
            .filter(|n| n.plan == plan_id && (n.index, n.count) == (index, count))
            .filter(|n| Some(n.bytes) == bytes)
            .map(|n| n.offset);
        placed += usize::from(slice.placed_at.is_some());
    }
    for index in 0..count {
        for note in ["placed", "unplaced"] {
            let _ = std::fs::remove_file(path(parts, index, count, note));
        }
    }
    if !assembled.exists() {
        slices.iter_mut().for_each(|s| s.placed_at = None);
        return;
    }
    let taken = match placed {
        0 => Err(std::io::Error::other("no slice placed in it")),
        _ => std::fs::rename(&assembled, staged),
    };
    match taken {
        Ok(()) => tracing::info!(
            "{}: {placed} of {count} slices placed by their tasks, the others copied",
            assembled.display()
        ),
        Err(e) => {
            tracing::info!(
                "{}: not used ({e}): the slices are copied",
                assembled.display()
            );
            slices.iter_mut().for_each(|s| s.placed_at = None);
            let _ = std::fs::remove_file(&assembled);
        }
    }
}

/// Task 0 of a Slurm step waits until every slice of `count` is placed or not
/// (written, then copied into the trace or said why not), failed in this step,
/// or lost with its task: what the others place is kept for the finishing
/// merge, which then names only the slices to merge again.
pub(crate) fn wait_for_slices(
    config: &Config,
    parts: &PartsDir,
    count: u32,
    step: &str,
) -> Result<()> {
    let all: Vec<u32> = (0..count).collect();
    let who = "task 0: waiting for every slice to be merged and placed";
    let _ = wait_until_noted(
        config,
        parts,
        count,
        step,
        &all,
        Awaited {
            kinds: &["placed", "unplaced"],
            who,
            until: Until::EverySettled,
        },
    );
    Ok(())
}

/// Whether note `kind` of slice `index` was written in `step`: a placing note
/// of an earlier step (before this step's task removed it) does not count; a
/// `done` note says no step, and counts (a slice's bytes are the same in any
/// step of one plan).
fn of_step(parts: &PartsDir, index: u32, count: u32, kind: &str, step: &str) -> bool {
    let text = || std::fs::read_to_string(path(parts, index, count, kind)).unwrap_or_default();
    match kind {
        "placed" => serde_json::from_str::<PlacedNote>(&text()).is_ok_and(|n| n.step == step),
        "unplaced" => text().lines().next() == Some(&format!("step {step}")),
        _ => true,
    }
}

/// Waits until every slice of `indices` has a note of one of `kinds`
/// (`slice-I-of-N.KIND`, `awaited.kinds`), or (`awaited.until`) one or all of
/// the others failed in this step or were lost with their task: `Some(the first
/// of them)`. Says once, unless quiet, what it waits for (`awaited.who`, and
/// how many).
fn wait_until_noted(
    config: &Config,
    parts: &PartsDir,
    count: u32,
    step: &str,
    indices: &[u32],
    awaited: Awaited,
) -> Option<u32> {
    let Awaited { kinds, who, until } = awaited;
    let mut said = false;
    let mut said_gone = Vec::new();
    loop {
        let listing = parts.listing();
        let noted = |i: u32| {
            kinds
                .iter()
                .any(|k| listing.contains(&name(i, count, k)) && of_step(parts, i, count, k, step))
        };
        let waiting: Vec<u32> = indices.iter().copied().filter(|&i| !noted(i)).collect();
        let failed = |i: u32| {
            std::fs::read_to_string(path(parts, i, count, "failed"))
                .is_ok_and(|t| t.lines().next() == Some(&format!("step {step}")))
        };
        // Slice I of a step is task I's: a task killed outright writes no
        // note. (Its note may have come since the listing.)
        let mut gone = |i: u32| {
            let noted_now = || {
                kinds
                    .iter()
                    .any(|k| path(parts, i, count, k).exists() && of_step(parts, i, count, k, step))
            };
            super::alive::gone(parts, i, step, || noted_now() || failed(i)).is_some_and(|why| {
                if !config.quiet && !said_gone.contains(&i) {
                    eprintln!("{why}");
                    said_gone.push(i);
                }
                true
            })
        };
        let settled: Vec<u32> = waiting
            .iter()
            .copied()
            .filter(|&i| failed(i) || gone(i))
            .collect();
        let done = match until {
            Until::OneFails => !settled.is_empty(),
            Until::EverySettled => settled.len() == waiting.len(),
        };
        if waiting.is_empty() || done {
            return settled.first().copied();
        }
        if !said && !config.quiet {
            eprintln!("{who} ({} of {count} slices to come)", waiting.len());
            said = true;
        }
        checkpoint("waiting for the slices");
        std::thread::sleep(super::POLL);
    }
}

/// What [`wait_until_noted`] waits for: notes of `kinds`, said as `who`
/// waiting, until every slice has one or (`until`) some cannot.
struct Awaited<'a> {
    kinds: &'a [&'a str],
    who: &'a str,
    until: Until,
}

/// When [`wait_until_noted`] stops waiting, short of every slice noted.
#[derive(Clone, Copy)]
enum Until {
    /// As soon as one slice failed or was lost.
    OneFails,
    /// Once every slice not noted failed or was lost: the others are noted.
    EverySettled,
}
