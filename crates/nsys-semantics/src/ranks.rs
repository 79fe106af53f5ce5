//! Each process's MPI rank, by the first source that works
//! (nsys-sqlite-schema.md §6.3): `MPI_RANKS`; an NVTX thread name `MPI Rank N`
//! (2022-era MPI tracing); a rank variable in the recorded environment; the last
//! number in the report's file name. The last two describe the report, so they
//! are used only when the report holds one process; the file name only when
//! several reports are merged (nsys names a lone run `report1` by default).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

pub use nsys2prv_events::RankSelection;
use nsys_reader::{Export, Metadata, ReadError};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::ThreadKey;

/// Variables launchers set to the world rank, in order of trust.
pub const RANK_VARIABLES: &[&str] = &[
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "PMI_RANK",
    "PALS_RANKID",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
];

pub(crate) fn process_ranks(
    export: &Export,
    threads: &[ThreadKey],
    nvtx_ranks: &FxHashMap<u32, u32>,
) -> Result<HashMap<u32, u32>, ReadError> {
    let mut ranks = export.mpi_ranks()?;
    for (pid, rank) in nvtx_ranks {
        ranks.entry(*pid).or_insert(*rank);
    }
    if let Some(pid) = single_process(threads) {
        if let Some(rank) = rank_in_environment(export.meta()) {
            ranks.entry(pid).or_insert(rank);
        }
    }
    Ok(ranks)
}

/// The report's one process, if it has exactly one.
pub(crate) fn single_process(threads: &[ThreadKey]) -> Option<u32> {
    let pids: BTreeSet<u32> = threads.iter().map(|t| t.pid).collect();
    match pids.iter().copied().collect::<Vec<_>>()[..] {
        [pid] => Some(pid),
        _ => None,
    }
}

/// With `--ranks`, which processes of a report to translate, decided before
/// reading its events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessChoice {
    /// Every process (the report's rank is in the list, or known only once
    /// translated: see [`kept_ranks`]).
    All,
    /// The processes `MPI_RANKS` gives a rank in the list.
    Some(FxHashSet<u32>),
    /// None: the report's ranks, none of them in the list.
    None(Vec<u32>),
}

/// Decides from the cheap sources of a rank: `MPI_RANKS` (a small table), then
/// the rank variable of the environment or, with several reports, the file
/// name. A report whose rank comes from NVTX thread names only is translated
/// whole and decided by [`kept_ranks`] afterwards.
pub fn choose_processes(
    export: &Export,
    name: &Path,
    selection: &RankSelection,
    several_reports: bool,
) -> Result<ProcessChoice, ReadError> {
    let by_process = export.mpi_ranks()?;
    if !by_process.is_empty() {
        let kept: FxHashSet<u32> = by_process
            .iter()
            .filter(|(_, rank)| selection.contains(**rank))
            .map(|(pid, _)| *pid)
            .collect();
        if kept.is_empty() {
            let ranks: BTreeSet<u32> = by_process.values().copied().collect();
            return Ok(ProcessChoice::None(ranks.into_iter().collect()));
        }
        return Ok(ProcessChoice::Some(kept));
    }
    let rank = rank_in_environment(export.meta())
        .or_else(|| several_reports.then(|| rank_in_file_name(name)).flatten());
    Ok(match rank {
        Some(rank) if !selection.contains(rank) => ProcessChoice::None(vec![rank]),
        _ => ProcessChoice::All,
    })
}

/// After translating with `--ranks`: the ranks of the translated processes
/// (`ranks`, pid → rank), whether any is in the list, and the ranks outside it
/// that stay (processes a report names only by NVTX thread names).
pub fn kept_ranks(
    ranks: &HashMap<u32, u32>,
    pids: &BTreeSet<u32>,
    selection: &RankSelection,
) -> (bool, Vec<u32>) {
    let of_pids = || pids.iter().filter_map(|pid| ranks.get(pid).copied());
    let any = of_pids().any(|r| selection.contains(r));
    let mut outside: Vec<u32> = of_pids().filter(|r| !selection.contains(*r)).collect();
    outside.sort_unstable();
    outside.dedup();
    (any, outside)
}

/// `MPI Rank 3` → 3.
pub(crate) fn rank_in_thread_name(name: &str) -> Option<u32> {
    name.strip_prefix("MPI Rank ")?.trim().parse().ok()
}

fn rank_in_environment(meta: &Metadata) -> Option<u32> {
    RANK_VARIABLES
        .iter()
        .find_map(|v| meta.env(v)?.trim().parse().ok())
}

/// The last number in the file name: `report_12.sqlite`, `rank3.sqlite`, `out.7.sqlite`.
pub(crate) fn rank_in_file_name(path: &Path) -> Option<u32> {
    let stem = path.file_stem()?.to_str()?;
    let stem = stem.strip_suffix(".nsys-rep").unwrap_or(stem);
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = stem[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    stem[start..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_thread_names_and_file_names() {
        assert_eq!(rank_in_thread_name("MPI Rank 12"), Some(12));
        assert_eq!(rank_in_thread_name("worker"), None);
        assert_eq!(
            rank_in_file_name(Path::new("/x/report_12.sqlite")),
            Some(12)
        );
        assert_eq!(rank_in_file_name(Path::new("rank3.sqlite")), Some(3));
        assert_eq!(
            rank_in_file_name(Path::new("run.2024.out.7.sqlite")),
            Some(7)
        );
        assert_eq!(rank_in_file_name(Path::new("report.sqlite")), None);
    }

    #[test]
    fn environment_ranks_follow_the_order_of_trust() {
        let meta = Metadata {
            environment: vec![
                ("SLURM_PROCID".into(), "5".into()),
                ("PMI_RANK".into(), "2".into()),
            ],
            ..Default::default()
        };
        assert_eq!(rank_in_environment(&meta), Some(2));
        assert_eq!(rank_in_environment(&Metadata::default()), None);
    }
}
