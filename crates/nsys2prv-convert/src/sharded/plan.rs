//! The plan of a sharded conversion (`NAME.parts/plan`, JSON): the tool's
//! version, the trace, the [`Config`] that shapes it (serde: the merge reads it
//! back as it was), every input with its
//! fingerprint (size, modification time, a hash of its first and last 64 KiB),
//! and the shard that translates it. Every part carries the plan's id (a hash
//! of the plan), so parts of another plan are recognised.
//!
//! The layout, the clock offsets and the value tables are computed by the merge,
//! from what the parts say of each report, with the same code as a single run:
//! so the trace is the same, byte for byte, whatever the shards.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{utf8, Config};
use crate::MergeSettings;

/// Version of the plan and part formats; another version is another plan.
/// 2: the plan stores the `Config` (1 stored command-line options).
/// 3: each part's record sections carry a time index (read by time slices).
/// A plan of another format (so its parts) is refused when read: parts of
/// another version.
pub const FORMAT: u32 = 3;
/// Bytes hashed at each end of an input.
const HASHED_BYTES: u64 = 64 << 10;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    pub tool: String,
    /// The trace to write, as given (`NAME.prv` or `NAME.prv.gz`).
    pub trace: String,
    pub shards: u32,
    /// The conversion, as [`Config::for_plan`] keeps it: what shapes the trace,
    /// without the inputs (below) or any process's own settings.
    pub config: Config,
    pub inputs: Vec<PlannedInput>,
    /// The window of the `--nvtx-range` cut is found by the tasks of the Slurm
    /// step that planned (each over its shard's reports, see
    /// [`super::window`]), not stored in `config`: absent from other plans.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub window_by_tasks: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedInput {
    /// The report as given (directories expanded).
    pub name: String,
    pub fingerprint: Fingerprint,
    pub shard: u32,
}

/// What says a file is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub modified_ns: u64,
    /// FNV-1a of the first and last 64 KiB, hex.
    pub hash: String,
}

impl Plan {
    /// The plan for `names` (the expanded inputs) in `shards` shards, with the
    /// conversion of `config`. With `tasks_find_window` (the shards are the
    /// tasks of one Slurm step, all running at once), the window of an
    /// `--nvtx-range` cut is left to them rather than found here.
    pub fn new(
        config: &Config,
        trace: &Path,
        names: &[PathBuf],
        shards: u32,
        tasks_find_window: bool,
    ) -> Result<Plan> {
        let fingerprints: Vec<Fingerprint> = names
            .par_iter()
            .map(|n| fingerprint(n))
            .collect::<Result<_>>()?;
        let sizes: Vec<u64> = fingerprints.iter().map(|f| f.size).collect();
        let assignment = balance(&sizes, shards);
        let exports = names
            .iter()
            .filter(|n| n.extension().is_some_and(|e| e == "sqlite"))
            .count();
        let window_by_tasks =
            tasks_find_window && crate::convert::window_from_ranges(config, exports, names.len());
        let inputs = names
            .iter()
            .zip(fingerprints)
            .zip(assignment)
            .map(|((name, fingerprint), shard)| {
                Ok(PlannedInput {
                    name: utf8(name)?,
                    fingerprint,
                    shard,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Plan {
            format: FORMAT,
            tool: env!("CARGO_PKG_VERSION").to_string(),
            trace: utf8(trace)?,
            shards,
            config: {
                // Every path in the plan is UTF-8, so that the merge reads it back.
                config.shaping_options()?;
                let mut planned = config.for_plan();
                if !window_by_tasks {
                    planned.cuts.read_window = read_window(config, names);
                }
                planned
            },
            inputs,
            window_by_tasks,
        })
    }

    /// The conversion the merge runs: the plan's `Config` with its inputs and
    /// trace, and the merging process's own settings.
    pub fn config_for_merge(&self, settings: &MergeSettings) -> Config {
        let mut config = self.config.clone();
        config.inputs.reports = self.inputs.iter().map(|i| PathBuf::from(&i.name)).collect();
        config.output.trace = PathBuf::from(&self.trace);
        config.resources = settings.resources.clone();
        config.output.keep_parts = settings.keep_parts;
        config.output.timing = settings.timing;
        config.quiet = settings.quiet;
        config
    }

    /// A hash of the whole plan: what every part records.
    pub fn id(&self) -> String {
        let text = serde_json::to_string(self).expect("a plan serialises");
        format!("{:016x}", paraver_writer::names::stable_hash(&text))
    }

    /// Indices of the inputs of `shard`.
    pub fn inputs_of(&self, shard: u32) -> Vec<u32> {
        (0..self.inputs.len() as u32)
            .filter(|&i| self.inputs[i as usize].shard == shard)
            .collect()
    }

    pub fn read(path: &Path) -> Result<Plan> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        let plan: Plan = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a plan of nsys2prv-rs", path.display()))?;
        if plan.format != FORMAT || plan.tool != env!("CARGO_PKG_VERSION") {
            bail!(
                "{}: parts of another version: made by nsys2prv-rs {} (plan format {}), not by this version ({}, plan format {FORMAT}): remove {} and run the shards again",
                path.display(),
                plan.tool,
                plan.format,
                env!("CARGO_PKG_VERSION"),
                path.parent().unwrap_or(Path::new(".")).display()
            );
        }
        // A plan another program damaged (its shards and inputs disagree) is refused
        // here, not where the merge would index parts by it.
        if plan.shards == 0 {
            bail!(
                "{}: a plan of 0 shards: not a plan of nsys2prv-rs",
                path.display()
            );
        }
        if let Some((i, input)) = plan
            .inputs
            .iter()
            .enumerate()
            .find(|(_, input)| input.shard >= plan.shards)
        {
            bail!(
                "{}: input {i} ({}) is given shard {} of a plan of {} shards: not a plan of nsys2prv-rs",
                path.display(),
                input.name,
                input.shard,
                plan.shards
            );
        }
        Ok(plan)
    }

    /// Why this plan (of `plan_path`) does not fit a conversion that wants
    /// `wanted`: other options, shards or trace, or inputs outside the plan.
    pub fn check_fits(&self, wanted: &Plan, plan_path: &Path) -> Result<()> {
        let redo = format!(
            "remove {} to plan again",
            plan_path.parent().unwrap_or(Path::new(".")).display()
        );
        if let Some(outside) = wanted
            .inputs
            .iter()
            .find(|w| !self.inputs.iter().any(|p| p.name == w.name))
        {
            bail!(
                "{}: not among the reports of the plan {} (a shard must be given the plan's inputs); {redo}",
                outside.name,
                plan_path.display()
            );
        }
        let names = |p: &Plan| p.inputs.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        if names(self) != names(wanted) {
            bail!(
                "{}: made for {} reports, given {} (or in another order); give the same inputs or {redo}",
                plan_path.display(),
                self.inputs.len(),
                wanted.inputs.len()
            );
        }
        // The read window comes from the inputs, which `wanted` may not list.
        let without_window = |c: &Config| {
            let mut c = c.clone();
            c.cuts.read_window = None;
            c
        };
        if without_window(&self.config) != without_window(&wanted.config) {
            let options = |c: &Config| c.shaping_options().unwrap_or_default();
            bail!(
                "{}: made with other options ({}) than these ({}); {redo}",
                plan_path.display(),
                shown(&options(&self.config)),
                shown(&options(&wanted.config))
            );
        }
        if self.shards != wanted.shards {
            bail!(
                "{}: made for {} shards, not {}; {redo}",
                plan_path.display(),
                self.shards,
                wanted.shards
            );
        }
        if self.trace != wanted.trace {
            bail!(
                "{}: made for the trace {}, not {}; {redo}",
                plan_path.display(),
                self.trace,
                wanted.trace
            );
        }
        Ok(())
    }

    /// Checks that the inputs of `shard` are what the plan fingerprinted.
    pub fn check_unchanged(&self, shard: u32, plan_path: &Path) -> Result<()> {
        let changed: Vec<Result<()>> = self
            .inputs
            .par_iter()
            .filter(|i| i.shard == shard)
            .map(|input| {
                let now = fingerprint(Path::new(&input.name))?;
                let was = &input.fingerprint;
                let what = if now.size != was.size {
                    format!("size {} then, {} now", was.size, now.size)
                } else if now.modified_ns != was.modified_ns {
                    "modification time".to_string()
                } else if now.hash != was.hash {
                    "content".to_string()
                } else {
                    return Ok(());
                };
                bail!(
                    "{}: changed since the plan {} was made ({what}); remove {} to plan again",
                    input.name,
                    plan_path.display(),
                    plan_path.parent().unwrap_or(Path::new(".")).display()
                )
            })
            .collect();
        changed.into_iter().collect()
    }
}

fn shown(options: &[String]) -> String {
    if options.is_empty() {
        "none".into()
    } else {
        options.join(" ")
    }
}

/// Size, modification time and a hash of both ends of `path`.
pub fn fingerprint(path: &Path) -> Result<Fingerprint> {
    let cannot = || format!("{}: cannot read", path.display());
    let meta = std::fs::metadata(path).with_context(cannot)?;
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let mut file = std::fs::File::open(path).with_context(cannot)?;
    let mut bytes = Vec::new();
    let tail = meta
        .len()
        .saturating_sub(HASHED_BYTES)
        .max(HASHED_BYTES.min(meta.len()));
    for (start, len) in [(0, HASHED_BYTES.min(meta.len())), (tail, meta.len() - tail)] {
        file.seek(SeekFrom::Start(start)).with_context(cannot)?;
        (&mut file)
            .take(len)
            .read_to_end(&mut bytes)
            .with_context(cannot)?;
    }
    let mut hasher = fnv::FnvHasher::default();
    std::hash::Hasher::write(&mut hasher, &bytes);
    Ok(Fingerprint {
        size: meta.len(),
        modified_ns,
        hash: format!("{:016x}", std::hash::Hasher::finish(&hasher)),
    })
}

/// Shard of each input: the largest first, each to the shard with the fewest
/// bytes so far (the lowest-numbered on ties), so shards take about the same
/// time however unequal the reports; the same sizes always give the same shards.
pub fn balance(sizes: &[u64], shards: u32) -> Vec<u32> {
    let mut by_size: Vec<usize> = (0..sizes.len()).collect();
    by_size.sort_by_key(|&i| (std::cmp::Reverse(sizes[i]), i));
    let mut load: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>> =
        (0..shards).map(|s| std::cmp::Reverse((0, s))).collect();
    let mut shard_of = vec![0; sizes.len()];
    for i in by_size {
        let std::cmp::Reverse((bytes, shard)) = load.pop().expect("at least one shard");
        shard_of[i] = shard;
        load.push(std::cmp::Reverse((bytes + sizes[i].max(1), shard)));
    }
    shard_of
}

/// The window a cut reads rows in, for every shard alike: from the session
/// starts (`--time-window`) or the ranges (`--nvtx-range`) of `names` when
/// every one is an export (`.sqlite`; a `.nsys-rep` is exported by its shard,
/// after the plan).
pub(crate) fn read_window(
    config: &Config,
    names: &[PathBuf],
) -> Option<nsys_semantics::options::ReadWindow> {
    let exports: Vec<crate::inputs::Input> = names
        .iter()
        .filter(|n| n.extension().is_some_and(|e| e == "sqlite"))
        .map(|n| crate::inputs::Input {
            export: n.clone(),
            name: n.clone(),
        })
        .collect();
    crate::convert::read_window(config, &exports, names.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_balanced_by_size_and_deterministic() {
        let sizes = [100, 1, 1, 1, 50, 50, 2];
        let shards = balance(&sizes, 2);
        let load = |s| -> u64 {
            (0..sizes.len())
                .filter(|&i| shards[i] == s)
                .map(|i| sizes[i])
                .sum()
        };
        assert_eq!(shards[0], 0, "the largest goes first to shard 0");
        assert_eq!((load(0), load(1)), (103, 102));
        assert_eq!(balance(&sizes, 2), shards);
        // More shards than inputs: some are empty.
        assert_eq!(balance(&[5, 3], 4), vec![0, 1]);
    }
}
