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

/// One range found: its thread (report, run thread), task and times on the common
/// clock.
#[derive(Clone, Copy, Debug)]
struct Found {
    thread: (usize, u32),
    task: u32,
    begin: i64,
    end: i64,
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

/// Finds the window of `spec` in the translated reports (before the merge).
pub fn nvtx_range_window(
    reports: &[ReportTranslation],
    plan: &TracePlan,
    spec: &NvtxRangeSpec,
) -> Result<RangeWindow, CutError> {
    let mut found: Vec<Found> = Vec::new();
    let mut ranges = RangeTypes::new();
    for (r, report) in reports.iter().enumerate() {
        let names = &report.run.names;
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
            continue;
        }
        let threads = &plan.threads[r];
        let offset = plan.offsets[r];
        // Per (thread, type): the begin of each open range, if it is a target.
        let mut open: FxHashMap<(u32, u32), Vec<Option<i64>>> = FxHashMap::default();
        for_each_event(&report.run, &mut |time, thread, closing, pairs| {
            for pair in pairs.iter().filter(|p| ranges.contains(p.ty)) {
                let stack = open.entry((thread, pair.ty)).or_default();
                if closing {
                    if let Some(Some(begin)) = stack.pop() {
                        found.push(Found {
                            thread: (r, thread),
                            task: threads[thread as usize].task,
                            begin: begin + offset,
                            end: time + offset,
                        });
                    }
                } else {
                    let hit =
                        matches!(pair.value(), Value::Name(h) if targets.contains(&(pair.ty, h)));
                    stack.push(hit.then_some(time));
                }
            }
        })?;
    }
    if found.is_empty() {
        return Err(CutError::NotFound {
            name: spec.name.clone(),
            known: some_range_names(reports, 12),
        });
    }
    let chosen: Vec<Found> = match spec.occurrence {
        None => found,
        Some(n) => {
            let mut per_thread: FxHashMap<(usize, u32), Vec<Found>> = FxHashMap::default();
            for f in found {
                per_thread.entry(f.thread).or_default().push(f);
            }
            let most = per_thread.values().map(Vec::len).max().unwrap_or(0);
            let chosen: Vec<Found> = per_thread
                .into_values()
                .filter_map(|mut ranges| {
                    ranges.sort_by_key(|f| (f.begin, f.end));
                    ranges.get(n - 1).copied()
                })
                .collect();
            if chosen.is_empty() {
                return Err(CutError::TooFew {
                    spec: spec.clone(),
                    wanted: n,
                    most,
                });
            }
            chosen
        }
    };
    let tasks: FxHashSet<u32> = chosen.iter().map(|f| f.task).collect();
    Ok(RangeWindow {
        start: chosen.iter().map(|f| f.begin).min().expect("not empty"),
        end: chosen.iter().map(|f| f.end).max().expect("not empty"),
        ranges: chosen.len(),
        tasks: tasks.len(),
    })
}

/// Up to `limit` range names of the reports, sorted, for error messages.
fn some_range_names(reports: &[ReportTranslation], limit: usize) -> Vec<String> {
    let registry = Registry::standard();
    let mut all: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            let names = &r.run.names;
            names
                .types()
                .filter(|&ty| registry.is_range_type(ty))
                .flat_map(move |ty| names.names_of(ty).iter().map(|n| n.to_string()))
        })
        .collect();
    all.sort();
    all.dedup();
    all.truncate(limit);
    all
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
