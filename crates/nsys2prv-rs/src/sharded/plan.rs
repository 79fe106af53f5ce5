//! The plan of a sharded conversion (`NAME.parts/plan`, JSON): the tool's
//! version, the trace, the options that shape it, every input with its
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

use crate::cli::{Args, KernelNameArg, MetricTypesArg, SyncArg};

/// Version of the plan and part formats; another version is another plan.
pub const FORMAT: u32 = 1;
/// Bytes hashed at each end of an input.
const HASHED_BYTES: u64 = 64 << 10;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    pub tool: String,
    /// The trace to write, as given (`NAME.prv` or `NAME.prv.gz`).
    pub trace: String,
    pub shards: u32,
    /// The conversion's options, as command-line arguments in a fixed form.
    pub options: Vec<String>,
    pub inputs: Vec<PlannedInput>,
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
    /// conversion options of `args`.
    pub fn new(args: &Args, trace: &Path, names: &[PathBuf], shards: u32) -> Result<Plan> {
        let fingerprints: Vec<Fingerprint> = names
            .par_iter()
            .map(|n| fingerprint(n))
            .collect::<Result<_>>()?;
        let sizes: Vec<u64> = fingerprints.iter().map(|f| f.size).collect();
        let assignment = balance(&sizes, shards);
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
            options: canonical_options(args)?,
            inputs,
        })
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
                "{}: made by nsys2prv-rs {} (plan format {}), not by this version ({}): remove {} and run the shards again",
                path.display(),
                plan.tool,
                plan.format,
                env!("CARGO_PKG_VERSION"),
                path.parent().unwrap_or(Path::new(".")).display()
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
        if self.options != wanted.options {
            bail!(
                "{}: made with other options ({}) than these ({}); {redo}",
                plan_path.display(),
                shown(&self.options),
                shown(&wanted.options)
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

fn utf8(path: &Path) -> Result<String> {
    path.to_str().map(str::to_string).with_context(|| {
        format!(
            "{}: a sharded conversion needs file names in UTF-8",
            path.display()
        )
    })
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

/// The options that shape the trace, in one fixed form (per-process settings
/// such as -j, --memory-limit, --tmp-dir, -q and -v are not among them).
pub fn canonical_options(args: &Args) -> Result<Vec<String>> {
    let mut options = Vec::new();
    if !args.trace.is_empty() {
        options.push(format!("--trace={}", args.trace.join(",")));
    }
    if !args.exclude.is_empty() {
        options.push(format!("--exclude={}", args.exclude.join(",")));
    }
    if let KernelNameArg::Demangled = args.kernel_names {
        options.push("--kernel-names=demangled".into());
    }
    if args.metric_types == MetricTypesArg::Name {
        options.push("--metric-types=name".into());
    }
    let sync = match args.sync {
        SyncArg::Session => None,
        SyncArg::MpiInit => Some("mpi-init"),
        SyncArg::Barrier => Some("barrier"),
        SyncArg::Nccl => Some("nccl"),
    };
    if let Some(sync) = sync {
        options.push(format!("--sync={sync}"));
    }
    if let Some(dir) = &args.cfgs_dir {
        options.push(format!("--cfgs-dir={}", utf8(dir)?));
    }
    if let Some(w) = args.time_window {
        let end = w.end.map(|e| format!("{e}ns")).unwrap_or_default();
        options.push(format!("--time-window={}ns:{end}", w.start));
    }
    if let Some(range) = args.nvtx_range_spec() {
        options.push(format!("--nvtx-range={range}"));
    }
    if args.sampling_depth != nsys_semantics::options::DEFAULT_SAMPLING_DEPTH {
        options.push(format!("--sampling-depth={}", args.sampling_depth));
    }
    match &args.report {
        Some(Some(dir)) => options.push(format!("--report={}", utf8(dir)?)),
        Some(None) => options.push("--report".into()),
        None => {}
    }
    // The metadata file's: the merge writes it. The description file is read
    // then, wherever the merge runs from.
    for label in &args.label {
        options.push(format!("--label={label}"));
    }
    if let Some(text) = &args.description_text {
        options.push(format!("--description-text={text}"));
    }
    if let Some(file) = &args.description_file {
        let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        options.push(format!("--description-file={}", utf8(&file)?));
    }
    for (set, flag) in [
        (args.keep_nsys_threads, "--keep-nsys-threads"),
        (args.all_views, "--all-views"),
        (args.skip_bad, "--skip-bad"),
        (args.force_sqlite, "--force-sqlite"),
        (args.exclude_kernels, "--exclude-kernels"),
        (args.thread_name, "--thread-name"),
    ] {
        if set {
            options.push(flag.into());
        }
    }
    // BSC nsys2prv's filters, as the shards apply them to the rows they read.
    if let Some(ns) = args.time_limit_start {
        options.push(format!("--time-limit-start={ns}"));
    }
    if let Some(ns) = args.time_limit_end {
        options.push(format!("--time-limit-end={ns}"));
    }
    if let Some(ns) = args.filter_cuda_calls_duration {
        options.push(format!("--filter-cuda-calls-duration={ns}"));
    }
    for (names, flag) in [
        (
            &args.filter_cuda_calls_include_name,
            "--filter-cuda-calls-include-name",
        ),
        (
            &args.filter_cuda_calls_exclude_name,
            "--filter-cuda-calls-exclude-name",
        ),
    ] {
        if !names.is_empty() {
            options.push(format!("{flag}={}", names.join(",")));
        }
    }
    // The configuration's content, not its file: every shard and the merge use
    // the same, and a file changed between shards is another plan.
    if args.nvtx != nsys_semantics::nvtx_config::NvtxConfig::default() {
        let json = serde_json::to_string(&args.nvtx).context("the NVTX configuration")?;
        options.push(format!("--nvtx-config-json={json}"));
    }
    Ok(options)
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
