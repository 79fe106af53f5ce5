//! Aligning the reports' clocks. By default each report is placed by its session
//! start (wall clock); `--sync` refines that with an event every rank shares —
//! the end of MPI_Init, the first barrier, or the first NCCL kernel — whose ends
//! are made to coincide.

use std::path::PathBuf;

use crate::layout::TracePlan;
use crate::report::ReportTranslation;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// Session start times only (`utcEpochNs`).
    #[default]
    Session,
    MpiInit,
    Barrier,
    Nccl,
}

impl SyncMode {
    pub fn describe(self) -> &'static str {
        match self {
            SyncMode::Session => "session start",
            SyncMode::MpiInit => "end of MPI_Init",
            SyncMode::Barrier => "end of the first MPI_Barrier",
            SyncMode::Nccl => "end of the first NCCL kernel",
        }
    }
}

/// What an alignment did.
#[derive(Clone, Debug, Default)]
pub struct SyncReport {
    pub mode: SyncMode,
    /// Per report (input index): the shift applied on top of the session offset.
    pub shifts: Vec<i64>,
    /// Spread of the shared event across reports before alignment (ns).
    pub skew_before_ns: i64,
    /// Spread of the last barrier after alignment, when reports have one (ns).
    pub residual_ns: Option<i64>,
    /// Reports without the shared event, left at their session offset.
    pub missing: Vec<PathBuf>,
}

/// Shifts `plan.offsets` so that every report's shared event happens at the same
/// time as in the first report (canonical order) that has it.
pub fn align_clocks(
    plan: &mut TracePlan,
    reports: &[ReportTranslation],
    mode: SyncMode,
) -> SyncReport {
    let mut report = SyncReport {
        mode,
        shifts: vec![0; reports.len()],
        ..Default::default()
    };
    if mode == SyncMode::Session {
        return report;
    }
    let point = |r: usize| {
        let p = &reports[r].sync_points;
        match mode {
            SyncMode::MpiInit => p.mpi_init_end,
            SyncMode::Barrier => p.first_barrier_end,
            SyncMode::Nccl => p.first_nccl_end,
            SyncMode::Session => None,
        }
    };
    let on_clock: Vec<(usize, i64)> = plan
        .order
        .iter()
        .filter_map(|&r| point(r).map(|t| (r, t + plan.offsets[r])))
        .collect();
    let Some(&(_, reference)) = on_clock.first() else {
        report.missing = reports.iter().map(|r| r.path.clone()).collect();
        return report;
    };
    report.skew_before_ns = spread(on_clock.iter().map(|(_, t)| *t));
    for &(r, t) in &on_clock {
        report.shifts[r] = reference - t;
        plan.offsets[r] += reference - t;
    }
    report.missing = (0..reports.len())
        .filter(|&r| point(r).is_none())
        .map(|r| reports[r].path.clone())
        .collect();
    let last_barriers: Vec<i64> = (0..reports.len())
        .filter_map(|r| {
            reports[r]
                .sync_points
                .last_barrier_end
                .map(|t| t + plan.offsets[r])
        })
        .collect();
    if last_barriers.len() > 1 {
        report.residual_ns = Some(spread(last_barriers.into_iter()));
    }
    report
}

fn spread(times: impl Iterator<Item = i64>) -> i64 {
    let (lo, hi) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if lo > hi {
        0
    } else {
        hi - lo
    }
}
