//! Cuts: which NVTX range a `--nvtx-range NAME[#N]` cut keeps, and how event types
//! cross a cut's edges. The cut itself is applied by the writer's merge
//! ([`paraver_writer::write_trace_cut`]), so every category is cut alike.
//!
//! * `NAME` is the text of a push/pop range of any domain, of a start/end range
//!   (with or without its `domain: ` prefix) or of an NCCL region.
//! * Without `#N` the cut runs from the first begin of a range of that name to the
//!   last end, over every thread.
//! * With `#N` every thread that has at least N ranges of that name contributes
//!   its N-th (by begin time, 1-based): the cut runs from the earliest of those
//!   begins to the latest of those ends, so iteration N of every rank (and of every
//!   thread of a rank) is whole.

use paraver_writer::merge::for_each_event;
use paraver_writer::Value;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::layout::TracePlan;
use crate::registry::Registry;
use crate::report::ReportTranslation;

/// The types of ranges a cut can name (NVTX push/pop ranges of any domain,
/// start/end lanes, NCCL regions: those the registry's categories declare),
/// remembered per type.
struct RangeTypes {
    registry: Registry,
    known: FxHashMap<u32, bool>,
}

impl RangeTypes {
    fn new() -> Self {
        RangeTypes {
            registry: Registry::standard(),
            known: FxHashMap::default(),
        }
    }

    fn contains(&mut self, ty: u32) -> bool {
        let registry = &self.registry;
        *self
            .known
            .entry(ty)
            .or_insert_with(|| registry.is_range_type(ty))
    }
}

pub use nsys2prv_events::NvtxRangeSpec;

/// The window an NVTX range cut keeps, on the common clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeWindow {
    pub start: i64,
    pub end: i64,
    /// Ranges that make up the window, and the tasks they belong to.
    pub ranges: usize,
    pub tasks: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum CutError {
    #[error("no NVTX range named '{name}' in the reports{}", known_names(.known))]
    NotFound { name: String, known: Vec<String> },
    #[error("'{spec}': no thread has {wanted} ranges of that name (at most {most} on one thread)")]
    TooFew {
        spec: NvtxRangeSpec,
        wanted: usize,
        most: usize,
    },
    #[error("cannot read back spilled records: {0}")]
    Io(#[from] std::io::Error),
}

fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        " (they have no NVTX ranges)".into()
    } else {
        format!(" (ranges there include: {})", known.join(", "))
    }
}

/// Whether a range label names `name`: the label itself, or a start/end range's
/// `domain: name`.
fn label_matches(label: &str, name: &str) -> bool {
    label == name
        || label
            .strip_suffix(name)
            .is_some_and(|prefix| prefix.ends_with(": "))
}

/// The categories whose records are ranges a cut can name (NVTX, NCCL), and
/// those their passes also serve (the NVTX pass tells MPI's NVTX domain apart
/// when MPI is selected): translated alone, they give the ranges of the whole
/// translation, so the window is found from them before translating the rest.
pub fn range_categories() -> Vec<crate::options::Category> {
    let registry = Registry::standard();
    let mut categories: Vec<crate::options::Category> = Vec::new();
    for c in registry.iter().filter(|c| c.names_ranges.is_some()) {
        categories.push(c.category);
        if let Some(pass) = &c.pass {
            categories.extend(pass.also_for.iter().copied());
        }
    }
    categories.sort_unstable();
    categories.dedup();
    categories
}

/// What the window of one `--nvtx-range` needs of one translated report, and
/// nothing more: per run thread with ranges of the name, how many it has and
/// the ones that can decide the window (the first begin and last end without
/// `#N`; the N earliest with `#N`), and the report's first range names for the
/// message of a name no report has. It holds at most threads x N ranges, however
/// many other ranges (or ranges of the name past the N-th) the report has, so a
/// pass over many reports can drop each report's records once summed up.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RangeSummary {
    /// Run thread → its ranges of the name, on the report's clock.
    threads: Vec<(u32, ThreadRanges)>,
    /// Up to [`KNOWN_NAMES`] range names of the report, sorted.
    names: Vec<String>,
}

/// Range names an error message lists.
const KNOWN_NAMES: usize = 12;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct ThreadRanges {
    count: usize,
    first_begin: i64,
    last_end: i64,
    /// The `#N` earliest (begin, end), largest on top: the top is the N-th once
    /// `count` reaches N.
    earliest: std::collections::BinaryHeap<(i64, i64)>,
}

impl ThreadRanges {
    fn add(&mut self, begin: i64, end: i64, occurrence: Option<usize>) {
        if self.count == 0 {
            (self.first_begin, self.last_end) = (begin, end);
        } else {
            self.first_begin = self.first_begin.min(begin);
            self.last_end = self.last_end.max(end);
        }
        self.count += 1;
        if let Some(n) = occurrence {
            self.earliest.push((begin, end));
            if self.earliest.len() > n {
                self.earliest.pop();
            }
        }
    }

    /// The N-th range by (begin, end), if the thread has N.
    fn nth(&self, n: usize) -> Option<(i64, i64)> {
        (self.count >= n).then(|| self.earliest.peek().copied())?
    }
}

impl RangeSummary {
    /// Ranges held (what the summary's memory grows with).
    pub fn ranges_held(&self) -> usize {
        self.threads
            .iter()
            .map(|(_, t)| t.earliest.len().max(1))
            .sum()
    }
}

/// Sums up the ranges of `spec`'s name in one translated report (see
/// [`RangeSummary`]).
pub fn summarize_ranges(
    report: &ReportTranslation,
    spec: &NvtxRangeSpec,
) -> Result<RangeSummary, CutError> {
    let mut ranges = RangeTypes::new();
    let names = &report.run.names;
    let mut known: Vec<String> = names
        .types()
        .filter(|&ty| ranges.contains(ty))
        .flat_map(|ty| names.names_of(ty).iter().map(|n| n.to_string()))
        .collect();
    known.sort();
    known.dedup();
    known.truncate(KNOWN_NAMES);
    let targets: FxHashSet<(u32, u32)> = names
        .types()
        .filter(|&ty| ranges.contains(ty))
        .flat_map(|ty| {
            names
                .names_of(ty)
                .iter()
                .enumerate()
                .filter(|(_, label)| label_matches(label, &spec.name))
                .map(move |(h, _)| (ty, h as u32))
        })
        .collect();
    if targets.is_empty() {
        return Ok(RangeSummary {
            threads: Vec::new(),
            names: known,
        });
    }
    let mut per_thread: FxHashMap<u32, ThreadRanges> = FxHashMap::default();
    // Per (thread, type): the begin of each open range, if it is a target.
    let mut open: FxHashMap<(u32, u32), Vec<Option<i64>>> = FxHashMap::default();
    for_each_event(&report.run, &mut |time, thread, closing, pairs| {
        for pair in pairs.iter().filter(|p| ranges.contains(p.ty)) {
            let stack = open.entry((thread, pair.ty)).or_default();
            if closing {
                if let Some(Some(begin)) = stack.pop() {
                    per_thread
                        .entry(thread)
                        .or_default()
                        .add(begin, time, spec.occurrence);
                }
            } else {
                let hit = matches!(pair.value(), Value::Name(h) if targets.contains(&(pair.ty, h)));
                stack.push(hit.then_some(time));
            }
        }
    })?;
    let mut threads: Vec<(u32, ThreadRanges)> = per_thread.into_iter().collect();
    threads.sort_unstable_by_key(|(thread, _)| *thread);
    Ok(RangeSummary {
        threads,
        names: known,
    })
}

/// Finds the window of `spec` in the translated reports (before the merge).
pub fn nvtx_range_window(
    reports: &[ReportTranslation],
    plan: &TracePlan,
    spec: &NvtxRangeSpec,
) -> Result<RangeWindow, CutError> {
    let summaries = reports
        .iter()
        .map(|report| summarize_ranges(report, spec))
        .collect::<Result<Vec<_>, _>>()?;
    range_window(&summaries, plan, spec)
}

/// The window of `spec` from the summaries of the reports `plan` lays out (in
/// the same order).
pub fn range_window(
    summaries: &[RangeSummary],
    plan: &TracePlan,
    spec: &NvtxRangeSpec,
) -> Result<RangeWindow, CutError> {
    // Each thread with ranges of the name: its task, and its ranges on the
    // common clock that the window is made of.
    let mut start = i64::MAX;
    let mut end = i64::MIN;
    let mut ranges = 0usize;
    let mut tasks: FxHashSet<u32> = FxHashSet::default();
    let mut found = 0usize;
    let mut most = 0usize;
    for (r, summary) in summaries.iter().enumerate() {
        let offset = plan.offsets[r];
        for (thread, t) in &summary.threads {
            found += t.count;
            most = most.max(t.count);
            let (begin, finish, count) = match spec.occurrence {
                None => (t.first_begin, t.last_end, t.count),
                Some(n) => match t.nth(n) {
                    Some((begin, finish)) => (begin, finish, 1),
                    None => continue,
                },
            };
            start = start.min(begin + offset);
            end = end.max(finish + offset);
            ranges += count;
            tasks.insert(plan.threads[r][*thread as usize].task);
        }
    }
    if found == 0 {
        let mut known: Vec<String> = summaries.iter().flat_map(|s| s.names.clone()).collect();
        known.sort();
        known.dedup();
        known.truncate(KNOWN_NAMES);
        return Err(CutError::NotFound {
            name: spec.name.clone(),
            known,
        });
    }
    if ranges == 0 {
        return Err(CutError::TooFew {
            spec: spec.clone(),
            wanted: spec.occurrence.unwrap_or(1),
            most,
        });
    }
    Ok(RangeWindow {
        start,
        end,
        ranges,
        tasks: tasks.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_name_and_occurrence() {
        let spec: NvtxRangeSpec = "iteration#3".parse().unwrap();
        assert_eq!(spec.name, "iteration");
        assert_eq!(spec.occurrence, Some(3));
        let spec: NvtxRangeSpec = "step #2 of #x".parse().unwrap();
        assert_eq!(spec.name, "step #2 of #x");
        assert_eq!(spec.occurrence, None);
        assert!("iteration#0".parse::<NvtxRangeSpec>().is_err());
        assert!("#4".parse::<NvtxRangeSpec>().is_err());
        assert_eq!(
            "a#b#12".parse::<NvtxRangeSpec>().unwrap().to_string(),
            "a#b#12"
        );
    }

    #[test]
    fn labels_match_with_or_without_their_domain() {
        assert!(label_matches("train", "train"));
        assert!(label_matches("app: train", "train"));
        assert!(!label_matches("pretrain", "train"));
        assert!(!label_matches("train step", "train"));
    }

    /// The report translated with the range categories alone, as the pass that
    /// finds the window before translating does, with `steps` training steps.
    fn training_report(dir: &std::path::Path, steps: u64) -> ReportTranslation {
        translated_ranges(&training_export(dir, steps), None)
    }

    fn training_export(dir: &std::path::Path, steps: u64) -> std::path::PathBuf {
        let path = dir.join(format!("steps{steps}.sqlite"));
        let mut synth = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_24);
        synth.training = Some(nsys_synth::SynthTraining::new(steps));
        nsys_synth::write_export(&synth, &path).unwrap();
        path
    }

    fn translated_ranges(
        path: &std::path::Path,
        spill: Option<paraver_writer::SpillPolicy>,
    ) -> ReportTranslation {
        let options = crate::options::Options {
            categories: range_categories().into_iter().collect(),
            spill,
            ..Default::default()
        };
        crate::translate_report(path, path, &options).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every range of `spec`'s name of one report, per run thread, found as the
    /// window did before it was summed up per report: (begin, end) in found order.
    fn every_range(report: &ReportTranslation, spec: &NvtxRangeSpec) -> Vec<(u32, i64, i64)> {
        let mut types = RangeTypes::new();
        let names = &report.run.names;
        let targets: FxHashSet<(u32, u32)> = names
            .types()
            .filter(|&ty| types.contains(ty))
            .flat_map(|ty| {
                let hits = names.names_of(ty).iter().enumerate();
                hits.filter(|(_, l)| label_matches(l, &spec.name))
                    .map(move |(h, _)| (ty, h as u32))
            })
            .collect();
        let mut open: FxHashMap<(u32, u32), Vec<Option<i64>>> = FxHashMap::default();
        let mut found = Vec::new();
        for_each_event(&report.run, &mut |time, thread, closing, pairs| {
            for pair in pairs.iter().filter(|p| types.contains(p.ty)) {
                let stack = open.entry((thread, pair.ty)).or_default();
                if closing {
                    if let Some(Some(begin)) = stack.pop() {
                        found.push((thread, begin, time));
                    }
                } else {
                    let hit =
                        matches!(pair.value(), Value::Name(h) if targets.contains(&(pair.ty, h)));
                    stack.push(hit.then_some(time));
                }
            }
        })
        .unwrap();
        found
    }

    /// The summary's window is the one every range gives: the N-th by (begin,
    /// end) of each thread that has N, or from the first begin to the last end.
    #[test]
    fn the_summed_up_window_is_the_window_of_every_range() {
        let dir = tempfile::tempdir().unwrap();
        let reports = [training_report(dir.path(), 10)];
        let plan = crate::layout::plan_layout(&reports, "t");
        for spec in [
            "train_step",
            "train_step#1",
            "train_step#7",
            "forward#4",
            "backward#10",
        ] {
            let spec: NvtxRangeSpec = spec.parse().unwrap();
            let all = every_range(&reports[0], &spec);
            let mut per_thread: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
            for &(thread, begin, end) in &all {
                per_thread.entry(thread).or_default().push((begin, end));
            }
            let chosen: Vec<(i64, i64)> = match spec.occurrence {
                None => all.iter().map(|&(_, b, e)| (b, e)).collect(),
                Some(n) => per_thread
                    .into_values()
                    .filter_map(|mut ranges| {
                        ranges.sort();
                        ranges.get(n - 1).copied()
                    })
                    .collect(),
            };
            assert!(!chosen.is_empty(), "{spec}");
            let offset = plan.offsets[0];
            let window = nvtx_range_window(&reports, &plan, &spec).unwrap();
            assert_eq!(window.ranges, chosen.len(), "{spec}");
            let start = chosen.iter().map(|r| r.0).min().unwrap() + offset;
            let end = chosen.iter().map(|r| r.1).max().unwrap() + offset;
            assert_eq!((window.start, window.end), (start, end), "{spec}");
        }
    }

    /// The window pass spills under the memory limit like any translation: a
    /// report whose ranges were all spilled gives the window of one held in
    /// memory.
    #[test]
    fn spilled_ranges_give_the_same_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = training_export(dir.path(), 12);
        let held = [translated_ranges(&path, None)];
        let spilled = [translated_ranges(
            &path,
            Some(paraver_writer::SpillPolicy {
                dir: dir.path().to_path_buf(),
                chunk_bytes: 1 << 12,
                budget: paraver_writer::MemoryBudget::new(0),
            }),
        )];
        assert!(held[0].run.chunks.is_empty());
        assert!(
            spilled[0].run.chunks.len() > 1,
            "{}",
            spilled[0].run.chunks.len()
        );
        assert_eq!(spilled[0].run.len(), held[0].run.len());
        let plan = crate::layout::plan_layout(&held, "t");
        let specs = [
            ("train_step#3", true),
            ("train_step", true),
            ("forward#12", true),
            ("backward#13", false),
            ("nothing", false),
        ];
        for (spec, found) in specs {
            let spec: NvtxRangeSpec = spec.parse().unwrap();
            let window = |reports: &[ReportTranslation]| {
                nvtx_range_window(reports, &plan, &spec).map_err(|e| e.to_string())
            };
            assert_eq!(window(&held).is_ok(), found, "{spec}");
            assert_eq!(window(&held), window(&spilled), "{spec}");
        }
    }

    /// What the window pass holds of a report grows with its threads and N,
    /// not with its ranges: eight times the steps (and every other range with
    /// them) hold the same ranges, N per thread with `#N`, one without.
    #[test]
    fn a_summary_holds_n_ranges_per_thread_whatever_the_report_has() {
        let dir = tempfile::tempdir().unwrap();
        let few = training_report(dir.path(), 6);
        let many = training_report(dir.path(), 48);
        assert!(
            many.run.len() > 6 * few.run.len(),
            "{} {}",
            many.run.len(),
            few.run.len()
        );
        for (spec, per_thread) in [("train_step#3", 3), ("train_step", 1), ("forward#5", 5)] {
            let spec: NvtxRangeSpec = spec.parse().unwrap();
            let few = summarize_ranges(&few, &spec).unwrap();
            let many = summarize_ranges(&many, &spec).unwrap();
            assert!(!few.threads.is_empty(), "{spec}");
            let found = |s: &RangeSummary| s.threads.iter().map(|(_, t)| t.count).sum::<usize>();
            assert_eq!(found(&many), 8 * found(&few), "{spec}");
            assert_eq!(few.ranges_held(), few.threads.len() * per_thread, "{spec}");
            assert_eq!(many.ranges_held(), few.ranges_held(), "{spec}");
        }
    }

    #[test]
    fn range_types_are_those_the_categories_declare() {
        let mut ranges = RangeTypes::new();
        for ty in [9600, 9700, 59_900, 9004, 9099, 9500] {
            assert!(ranges.contains(ty), "{ty}");
        }
        for ty in [9601, 9604, 9100, 60_000, 63_000_006, 9501] {
            assert!(!ranges.contains(ty), "{ty}");
        }
    }
}
