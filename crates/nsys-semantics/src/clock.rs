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

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::layout::plan_layout;
    use crate::mpi::MPI;
    use crate::testing::{translate, GLOBAL_PID};

    /// Rank `rank`'s report, its session `start_ns` late, with MPI_Init ending at
    /// `init_end` (none: no MPI_Init) and one MPI_Barrier ending at `barrier_end`,
    /// both on its own clock.
    fn rank(
        rank: u32,
        start_ns: i64,
        init_end: Option<i64>,
        barrier_end: i64,
    ) -> ReportTranslation {
        let tid = GLOBAL_PID | 24_601;
        let init = init_end.map_or(String::new(), |end| {
            format!("INSERT INTO MPI_OTHER_EVENTS VALUES (10, {end}, {tid}, 90001);")
        });
        translate(
            &[MPI],
            &format!(
                "UPDATE META_DATA_CAPTURE SET value = 'SLURM_PROCID=\"{rank}\"'
                     WHERE value LIKE 'SLURM_PROCID=%';
                 UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + {start_ns};
                 INSERT INTO StringIds VALUES (90001, 'MPI_Init'), (90002, 'MPI_Barrier');
                 CREATE TABLE IF NOT EXISTS MPI_OTHER_EVENTS (start INTEGER NOT NULL,
                     end INTEGER, globalTid INTEGER, textId INTEGER);
                 CREATE TABLE IF NOT EXISTS MPI_COLLECTIVES_EVENTS (start INTEGER NOT NULL,
                     end INTEGER, globalTid INTEGER, textId INTEGER, commHandle INTEGER,
                     commUid INTEGER, rootRank INTEGER, size INTEGER, recvSize INTEGER,
                     requestHandle INTEGER);
                 {init}
                 INSERT INTO MPI_COLLECTIVES_EVENTS VALUES
                     (5000, {barrier_end}, {tid}, 90002, NULL, NULL, NULL, NULL, NULL, NULL);"
            ),
        )
    }

    /// `--sync mpi-init`: every report with an MPI_Init end is shifted so that it
    /// ends when it does in the first report (merge order) that has one; a report
    /// without is left at its session offset and named; the last barriers' spread
    /// after the shift is the residual.
    #[test]
    fn mpi_init_ends_are_made_to_coincide() {
        let reports = [
            rank(0, 0, Some(1_000), 9_000),
            // Session recorded 300 ns late, MPI_Init ended 200 ns later on its clock.
            rank(1, 300, Some(1_200), 8_750),
            rank(2, 0, None, 9_100),
        ];
        let mut plan = plan_layout(&reports, "app");
        let session = plan.offsets.clone();
        let sync = align_clocks(&mut plan, &reports, SyncMode::MpiInit);
        let moved: Vec<i64> = (0..reports.len())
            .map(|r| plan.offsets[r] - session[r])
            .collect();
        let missing = sync.missing.len();
        expect!["shifts [0, -500, 0], offsets moved by [0, -500, 0], skew before 500 ns, residual Some(550) ns, 1 without MPI_Init"].assert_eq(&format!(
            "shifts {:?}, offsets moved by {moved:?}, skew before {} ns, residual {:?} ns, \
             {missing} without MPI_Init",
            sync.shifts, sync.skew_before_ns, sync.residual_ns
        ));
    }
}
