//! `NAME.parts/`: the directory of a sharded conversion, and the part files in
//! it. The directory carries the tool's marker; the tool removes only what it
//! wrote there (its marker, plan, parts, failure notes, Slurm step notes and
//! temporaries), and only after a successful merge.
//!
//! A part (`shard-I.part`) holds the reports of one shard: for each translated
//! report, its records as one checksummed section and its description
//! ([`SavedReport`], postcard); then an index of every report of the shard (input
//! number, and translated, empty or skipped), then a trailer that locates and
//! checksums the index. It is written under a temporary name and renamed when
//! complete, so a part is whole or absent.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use nsys_semantics::saved::SavedReport;
use nsys_semantics::ReportTranslation;
use serde::{Deserialize, Serialize};

use super::plan::Plan;
use crate::convert::Outcome;
use atomic_output::MARKER;

const MAGIC: &[u8; 16] = b"nsys2prv-rs part";
const TRAILER_MAGIC: &[u8; 8] = b"PARTEND1";
/// Index offset, index length, index CRC-32, magic.
const TRAILER: u64 = 8 + 8 + 4 + 8;
const PLAN: &str = "plan";
/// The `--nvtx-range` window a Slurm step's tasks found (`super::window`).
const WINDOW: &str = "window";

/// What a part says of one report of its shard.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// The report's number in the plan.
    input: u32,
    outcome: SavedOutcome,
}

#[derive(Debug, Serialize, Deserialize)]
enum SavedOutcome {
    /// Its description at `offset` (`len` bytes, CRC-32 `crc`).
    Translated {
        offset: u64,
        len: u64,
        crc: u32,
    },
    Empty {
        why: String,
    },
    /// Left out by `--ranks` (the report's ranks, where known).
    NotSelected {
        ranks: Vec<u32>,
    },
    /// Left out by `--skip-bad`.
    Failed {
        reason: String,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct Index {
    plan: String,
    shard: u32,
    entries: Vec<Entry>,
}

/// A shard as the parts directory shows it.
#[derive(Debug)]
pub enum ShardState {
    Done,
    /// Failed, with the error it gave (and the Slurm step it ran in).
    Failed {
        reason: String,
        step: String,
    },
    Missing,
    /// A part that is damaged or of another plan: why.
    Unusable(String),
}

/// `NAME.parts/` beside the trace.
pub struct PartsDir {
    pub dir: PathBuf,
}

impl PartsDir {
    pub fn of(trace: &Path) -> PartsDir {
        let stem = paraver_writer::OutputPaths::for_trace(trace)
            .map(|p| p.stem())
            .unwrap_or_else(|_| "trace".into());
        PartsDir {
            dir: trace.with_file_name(format!("{stem}.parts")),
        }
    }

    pub fn plan_path(&self) -> PathBuf {
        self.dir.join(PLAN)
    }

    pub fn part_path(&self, shard: u32) -> PathBuf {
        self.dir.join(format!("shard-{shard}.part"))
    }

    fn failed_path(&self, shard: u32) -> PathBuf {
        self.dir.join(format!("shard-{shard}.failed"))
    }

    /// The window a Slurm step's tasks found for the plan (JSON).
    pub fn window_path(&self) -> PathBuf {
        self.dir.join(WINDOW)
    }

    /// The reductions of `shard`'s reports for the window of a Slurm step.
    pub fn ranges_path(&self, shard: u32) -> PathBuf {
        self.dir.join(format!("shard-{shard}.ranges"))
    }

    /// Where task `task` of a Slurm step notes where it runs (`super::alive`).
    pub fn alive_path(&self, task: u32) -> PathBuf {
        self.dir.join(format!("task-{task}.alive"))
    }

    pub fn step_path(&self, step: &str) -> PathBuf {
        self.dir.join(format!("slurm-step-{step}"))
    }

    /// Creates the directory with its marker, or checks that it is ours.
    pub fn create(&self) -> Result<()> {
        match fs::create_dir(&self.dir) {
            Ok(()) => {
                let marker = self.dir.join(MARKER);
                atomic_output::write_file(
                    &marker,
                    b"Parts of a sharded conversion by nsys2prv-rs; removed after a successful merge.\n",
                )
                .with_context(|| format!("{}: cannot write", marker.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.check_ours(),
            Err(e) => Err(e).with_context(|| format!("{}: cannot create", self.dir.display())),
        }
    }

    /// An existing directory must carry the marker (a concurrent shard may be
    /// writing it: then it appears soon).
    fn check_ours(&self) -> Result<()> {
        if !self.dir.is_dir() {
            bail!("{}: exists and is not a directory", self.dir.display());
        }
        for _ in 0..50 {
            if self.dir.join(MARKER).is_file() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(crate::error::UsageError(format!(
            "{}: exists and was not made by nsys2prv-rs (no {MARKER} file in it): give another output name",
            self.dir.display()
        ))
        .into())
    }

    /// Installs `plan` unless a plan is already there; returns the plan in force.
    pub fn install_plan(&self, plan: &Plan) -> Result<Plan> {
        let path = self.plan_path();
        let text = serde_json::to_string_pretty(plan).expect("a plan serialises") + "\n";
        let created = atomic_output::write_new(&path, text.as_bytes())
            .with_context(|| format!("{}: cannot write", path.display()))?;
        match created {
            true => Ok(plan.clone()),
            false => Plan::read(&path),
        }
    }

    /// Writes the part of `shard`: `outcomes` are its reports with their plan
    /// numbers. Replaces a failure note of the shard.
    pub fn write_part(
        &self,
        plan_id: &str,
        shard: u32,
        outcomes: Vec<(u32, Outcome)>,
    ) -> Result<()> {
        let path = self.part_path(shard);
        let mut body = Ok(());
        let written = atomic_output::write_file_with(&path, |file| {
            body = write_part_file(file, plan_id, shard, outcomes);
            // The error itself is in `body`: this one only stops the rename.
            body.as_ref()
                .map(|_| ())
                .map_err(|_| std::io::Error::other("the part was not written"))
        });
        body.and(written.map_err(anyhow::Error::from))
            .with_context(|| format!("{}: cannot write the part", path.display()))?;
        let _ = fs::remove_file(self.failed_path(shard));
        Ok(())
    }

    /// Notes that `shard` failed (in Slurm step `step`), for the merge to say.
    pub fn write_failure(&self, shard: u32, step: &str, reason: &str) {
        let text = format!("step {step}\n{reason}\n");
        if let Err(e) = write_note(&self.failed_path(shard), text.as_bytes()) {
            tracing::warn!("{e:#}");
        }
    }

    /// Why `shard` failed in Slurm step `step`, if it did.
    pub fn failure_in_step(&self, shard: u32, step: &str) -> Option<String> {
        let text = fs::read_to_string(self.failed_path(shard)).ok()?;
        let (first, reason) = text.split_once('\n')?;
        (first == format!("step {step}")).then(|| reason.trim().to_string())
    }

    /// Whether `shard` has a whole part of the plan `plan_id`.
    pub fn has_part(&self, plan: &Plan, plan_id: &str, shard: u32) -> bool {
        read_index(&self.part_path(shard))
            .is_ok_and(|(_, index)| check_index(&index, plan, plan_id, shard).is_ok())
    }

    /// The state of every shard: parts read and checked, failure notes read.
    pub fn states(&self, plan: &Plan, plan_id: &str) -> Vec<ShardState> {
        (0..plan.shards)
            .map(|shard| self.state(plan, plan_id, shard))
            .collect()
    }

    fn state(&self, plan: &Plan, plan_id: &str, shard: u32) -> ShardState {
        let part = self.part_path(shard);
        if part.exists() {
            return match read_index(&part)
                .and_then(|(_, index)| check_index(&index, plan, plan_id, shard))
            {
                Ok(()) => ShardState::Done,
                Err(e) => ShardState::Unusable(format!("{e:#}")),
            };
        }
        match fs::read_to_string(self.failed_path(shard)) {
            Ok(text) => {
                let (step, reason) = text.split_once('\n').unwrap_or(("", &text));
                ShardState::Failed {
                    reason: reason.trim().to_string(),
                    step: step.trim_start_matches("step ").to_string(),
                }
            }
            Err(_) => ShardState::Missing,
        }
    }

    /// Names of the files in the directory (a cheap look while waiting).
    pub fn listing(&self) -> Vec<String> {
        fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every report of the plan, in input order, as its shard left it.
    pub fn load_all(&self, plan: &Plan, plan_id: &str) -> Result<Vec<(PathBuf, Outcome)>> {
        let mut slots: Vec<Option<Outcome>> = (0..plan.inputs.len()).map(|_| None).collect();
        for shard in 0..plan.shards {
            let path = self.part_path(shard);
            let (file, index) = read_index(&path)?;
            check_index(&index, plan, plan_id, shard)?;
            let file = Arc::new(file);
            for entry in index.entries {
                let outcome = match entry.outcome {
                    SavedOutcome::Translated { offset, len, crc } => {
                        let saved: SavedReport = read_blob(&file, &path, offset, len, crc)?;
                        Outcome::Translated(Box::new(ReportTranslation::restore(
                            saved,
                            Arc::clone(&file),
                            &path,
                        )?))
                    }
                    SavedOutcome::Empty { why } => Outcome::Empty(why),
                    SavedOutcome::NotSelected { ranks } => Outcome::NotSelected(ranks),
                    SavedOutcome::Failed { reason } => Outcome::Failed(anyhow!(reason)),
                };
                slots[entry.input as usize] = Some(outcome);
            }
        }
        Ok(plan
            .inputs
            .iter()
            .zip(slots)
            .map(|(input, slot)| {
                (
                    PathBuf::from(&input.name),
                    slot.expect("check_index saw every input of each shard"),
                )
            })
            .collect())
    }

    /// Removes what the tool wrote here, then the directory if nothing else is
    /// left in it.
    pub fn remove(&self) {
        for name in self.listing() {
            if is_ours(&name) && name != MARKER {
                atomic_output::cleanup::remove_all(&self.dir.join(&name));
            }
        }
        let others: Vec<String> = self.listing().into_iter().filter(|n| n != MARKER).collect();
        if others.is_empty() {
            let _ = fs::remove_file(self.dir.join(MARKER));
            let _ = fs::remove_dir(&self.dir);
        } else {
            tracing::warn!(
                "{}: left in place, it holds files nsys2prv-rs did not write ({})",
                self.dir.display(),
                others.join(", ")
            );
        }
    }
}

/// Names the tool writes in a parts directory.
/// Whether `name` is a task's note of where it runs ([`PartsDir::alive_path`]).
fn is_alive_note(name: &str) -> bool {
    name.strip_prefix("task-")
        .and_then(|n| n.strip_suffix(".alive"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn is_ours(name: &str) -> bool {
    let shard_file = |ext: &str| {
        name.strip_prefix("shard-")
            .and_then(|n| n.strip_suffix(ext))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    name == MARKER
        || name == PLAN
        || shard_file(".part")
        || shard_file(".failed")
        || shard_file(".ranges")
        || name == WINDOW
        || is_alive_note(name)
        || name.starts_with("slurm-step-")
        || is_slice_file(name)
        || is_assembled_name(name)
        || (name.starts_with('.') && name.ends_with(".tmp"))
}

/// Slice files of the merge split over tasks (`sharded::slices`):
/// `slice-I-of-N.EXT`: (I, N, EXT).
pub(crate) fn parse_slice_name(name: &str) -> Option<(u32, u32, &str)> {
    let rest = name.strip_prefix("slice-")?;
    let (index, rest) = rest.split_once("-of-")?;
    let (count, ext) = rest.split_once('.')?;
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((number(index)?, number(count)?, ext))
}

/// Whether `name` is a slice file the tool writes.
pub(crate) fn is_slice_file(name: &str) -> bool {
    parse_slice_name(name).is_some_and(|(i, n, ext)| {
        i < n && ["body", "done", "failed", "placed", "unplaced"].contains(&ext)
    })
}

/// Whether `name` is the `.prv` merge tasks place their slices in
/// (`slices-of-N.trace`).
fn is_assembled_name(name: &str) -> bool {
    name.strip_prefix("slices-of-")
        .and_then(|n| n.strip_suffix(".trace"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes a small file of the directory (a failure note, a Slurm step's word)
/// whole or not at all.
pub fn write_note(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_output::write_file(path, bytes)
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// A writer that knows how far it is into its file.
struct Positioned<W> {
    inner: W,
    position: u64,
}

impl<W: Write> Write for Positioned<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.position += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn write_part_file(
    file: &mut File,
    plan_id: &str,
    shard: u32,
    outcomes: Vec<(u32, Outcome)>,
) -> Result<()> {
    let mut out = Positioned {
        inner: BufWriter::with_capacity(1 << 20, file),
        position: 0,
    };
    out.write_all(MAGIC)?;
    let mut entries = Vec::with_capacity(outcomes.len());
    for (input, outcome) in outcomes {
        let outcome = match outcome {
            Outcome::Translated(report) => {
                let offset = out.position;
                let saved = report.save(&mut out, offset)?;
                let blob = postcard::to_stdvec(&saved)?;
                let offset = out.position;
                out.write_all(&blob)?;
                SavedOutcome::Translated {
                    offset,
                    len: blob.len() as u64,
                    crc: crc32fast::hash(&blob),
                }
            }
            Outcome::Empty(why) => SavedOutcome::Empty { why },
            Outcome::NotSelected(ranks) => SavedOutcome::NotSelected { ranks },
            Outcome::Failed(e) => SavedOutcome::Failed {
                reason: crate::error::one_line(&e),
            },
        };
        entries.push(Entry { input, outcome });
    }
    let index = postcard::to_stdvec(&Index {
        plan: plan_id.to_string(),
        shard,
        entries,
    })?;
    let index_offset = out.position;
    out.write_all(&index)?;
    out.write_all(&index_offset.to_le_bytes())?;
    out.write_all(&(index.len() as u64).to_le_bytes())?;
    out.write_all(&crc32fast::hash(&index).to_le_bytes())?;
    out.write_all(TRAILER_MAGIC)?;
    out.inner.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// Opens a part and reads its index (checksummed).
fn read_index(path: &Path) -> Result<(File, Index)> {
    let damaged = |why: &str| anyhow!("{}: not a whole part ({why})", path.display());
    let mut file = File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let size = file.metadata()?.len();
    let mut magic = [0u8; MAGIC.len()];
    if size < MAGIC.len() as u64 + TRAILER
        || file.read_exact(&mut magic).is_err()
        || &magic != MAGIC
    {
        return Err(damaged("too short or not a part file"));
    }
    let mut trailer = [0u8; TRAILER as usize];
    file.seek(SeekFrom::Start(size - TRAILER))?;
    file.read_exact(&mut trailer)?;
    if &trailer[20..] != TRAILER_MAGIC {
        return Err(damaged("no trailer"));
    }
    let offset = u64::from_le_bytes(trailer[0..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(trailer[8..16].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(trailer[16..20].try_into().expect("4 bytes"));
    if offset.checked_add(len) != Some(size - TRAILER) {
        return Err(damaged("index out of place"));
    }
    let index: Index = read_blob(&file, path, offset, len, crc)?;
    Ok((file, index))
}

/// Reads and decodes `len` bytes at `offset` whose CRC-32 must be `crc`.
fn read_blob<T: serde::de::DeserializeOwned>(
    file: &File,
    path: &Path,
    offset: u64,
    len: u64,
    crc: u32,
) -> Result<T> {
    use std::os::unix::fs::FileExt;
    let damaged = |why: String| anyhow!("{}: damaged part ({why})", path.display());
    let len = usize::try_from(len).map_err(|_| damaged("index too large".into()))?;
    let mut bytes = vec![0u8; len];
    file.read_exact_at(&mut bytes, offset)
        .map_err(|e| damaged(e.to_string()))?;
    if crc32fast::hash(&bytes) != crc {
        return Err(damaged("checksum mismatch".into()));
    }
    postcard::from_bytes(&bytes).map_err(|e| damaged(e.to_string()))
}

/// `bytes` (a part file, or anything) with every checksum it holds made right
/// where the places it names can be read: the trailer's of the index, each
/// translated report's, and each saved run's of its records. The fuzz target
/// `parts` runs the decoders on both the input and this, so that they are
/// reached past the checksums (a part of another version has right ones).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn with_checksums_made_right(bytes: &[u8]) -> Vec<u8> {
    let range = |offset: u64, len: u64| {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        bytes.get(start..end)
    };
    let trailer_at = bytes.len().wrapping_sub(TRAILER as usize);
    let Some(trailer) = bytes
        .get(trailer_at..)
        .filter(|t| t.len() == TRAILER as usize)
    else {
        return bytes.to_vec();
    };
    let offset = u64::from_le_bytes(trailer[0..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(trailer[8..16].try_into().expect("8 bytes"));
    let Some(index_bytes) = range(offset, len) else {
        return bytes.to_vec();
    };
    let Ok(mut index) = postcard::from_bytes::<Index>(index_bytes) else {
        let mut out = bytes.to_vec();
        let crc = crc32fast::hash(index_bytes).to_le_bytes();
        out[trailer_at + 16..trailer_at + 20].copy_from_slice(&crc);
        return out;
    };
    // What precedes the index, the reports' descriptions made right appended,
    // then the index and a trailer.
    let mut out = bytes[..offset as usize].to_vec();
    for entry in &mut index.entries {
        let SavedOutcome::Translated { offset, len, crc } = &mut entry.outcome else {
            continue;
        };
        let Some(blob) = range(*offset, *len) else {
            continue;
        };
        let Ok(mut saved) = postcard::from_bytes::<SavedReport>(blob) else {
            *crc = crc32fast::hash(blob);
            continue;
        };
        if let Some(section) = range(saved.run.offset, saved.run.bytes) {
            saved.run.make_checksums_right(section);
        }
        let blob = postcard::to_stdvec(&saved).expect("a saved report serialises");
        *offset = out.len() as u64;
        *len = blob.len() as u64;
        *crc = crc32fast::hash(&blob);
        out.extend_from_slice(&blob);
    }
    let index = postcard::to_stdvec(&index).expect("an index serialises");
    let index_offset = out.len() as u64;
    out.extend_from_slice(&index);
    out.extend_from_slice(&index_offset.to_le_bytes());
    out.extend_from_slice(&(index.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&index).to_le_bytes());
    out.extend_from_slice(TRAILER_MAGIC);
    out
}

/// The part of `shard` must be of this plan and hold exactly the shard's reports.
fn check_index(index: &Index, plan: &Plan, plan_id: &str, shard: u32) -> Result<()> {
    if index.plan != plan_id {
        bail!("made for another plan (other inputs or options)");
    }
    let mut inputs: Vec<u32> = index.entries.iter().map(|e| e.input).collect();
    inputs.sort_unstable();
    if index.shard != shard || inputs != plan.inputs_of(shard) {
        bail!("holds other reports than the plan gives shard {shard}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_names_are_recognised() {
        assert_eq!(parse_slice_name("slice-2-of-4.body"), Some((2, 4, "body")));
        assert!(is_slice_file("slice-0-of-1.done"));
        assert!(is_slice_file("slice-3-of-4.failed"));
        for theirs in [
            "slice-4-of-4.body",
            "slice--of-4.body",
            "slice-1-of-4.txt",
            "slice-a-of-4.done",
            "slice-1-of-4",
        ] {
            assert!(!is_slice_file(theirs), "{theirs}");
        }
    }

    #[test]
    fn only_our_names_are_removed() {
        for ours in [
            ".nsys2prv-rs",
            "plan",
            "shard-0.part",
            "shard-12.failed",
            "slurm-step-5.0",
            ".shard-1.part.node1.42.tmp",
            "slice-1-of-3.body",
            "slice-0-of-3.done",
            "shard-2.ranges",
            "window",
            "task-3.alive",
        ] {
            assert!(is_ours(ours), "{ours}");
        }
        for theirs in [
            "notes.txt",
            "shard-.part",
            "shard-1a.part",
            "plan.bak",
            "x.tmp",
            "task-.alive",
            "task-3.alive.txt",
        ] {
            assert!(!is_ours(theirs), "{theirs}");
        }
    }
}
