//! OpenMP tables (`--trace=openmp`, OMPT): the 18 `OPENMP_EVENT_KIND_*` tables.
//!
//! Every table shares `start, end, eventClass, globalTid, correlationId, nameId,
//! eventKind` and adds a few OMPT fields of its own (nsys-sqlite-schema.md §7.4).
//! Every table is optional and every column is looked up by name.

use crate::{Export, ReadError, RowView, TableScan};

/// One OpenMP table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OmpTable {
    Thread,
    Parallel,
    SyncRegionWait,
    SyncRegion,
    Task,
    Master,
    Reduction,
    TaskCreate,
    TaskSchedule,
    Cancel,
    MutexWait,
    CriticalSection,
    MutexReleased,
    LockInit,
    LockDestroy,
    Workshare,
    Dispatch,
    Flush,
}

impl OmpTable {
    pub const ALL: [OmpTable; 18] = [
        OmpTable::Thread,
        OmpTable::Parallel,
        OmpTable::SyncRegionWait,
        OmpTable::SyncRegion,
        OmpTable::Task,
        OmpTable::Master,
        OmpTable::Reduction,
        OmpTable::TaskCreate,
        OmpTable::TaskSchedule,
        OmpTable::Cancel,
        OmpTable::MutexWait,
        OmpTable::CriticalSection,
        OmpTable::MutexReleased,
        OmpTable::LockInit,
        OmpTable::LockDestroy,
        OmpTable::Workshare,
        OmpTable::Dispatch,
        OmpTable::Flush,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OmpTable::Thread => "OPENMP_EVENT_KIND_THREAD",
            OmpTable::Parallel => "OPENMP_EVENT_KIND_PARALLEL",
            OmpTable::SyncRegionWait => "OPENMP_EVENT_KIND_SYNC_REGION_WAIT",
            OmpTable::SyncRegion => "OPENMP_EVENT_KIND_SYNC_REGION",
            OmpTable::Task => "OPENMP_EVENT_KIND_TASK",
            OmpTable::Master => "OPENMP_EVENT_KIND_MASTER",
            OmpTable::Reduction => "OPENMP_EVENT_KIND_REDUCTION",
            OmpTable::TaskCreate => "OPENMP_EVENT_KIND_TASK_CREATE",
            OmpTable::TaskSchedule => "OPENMP_EVENT_KIND_TASK_SCHEDULE",
            OmpTable::Cancel => "OPENMP_EVENT_KIND_CANCEL",
            OmpTable::MutexWait => "OPENMP_EVENT_KIND_MUTEX_WAIT",
            OmpTable::CriticalSection => "OPENMP_EVENT_KIND_CRITICAL_SECTION",
            OmpTable::MutexReleased => "OPENMP_EVENT_KIND_MUTEX_RELEASED",
            OmpTable::LockInit => "OPENMP_EVENT_KIND_LOCK_INIT",
            OmpTable::LockDestroy => "OPENMP_EVENT_KIND_LOCK_DESTROY",
            OmpTable::Workshare => "OPENMP_EVENT_KIND_WORKSHARE",
            OmpTable::Dispatch => "OPENMP_EVENT_KIND_DISPATCH",
            OmpTable::Flush => "OPENMP_EVENT_KIND_FLUSH",
        }
    }
}

/// One row of any OpenMP table. Fields a table does not have are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OmpEvent {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub name_id: Option<i64>,
    /// `ENUM_OPENMP_EVENT_KIND` id.
    pub event_kind: Option<i64>,
    /// `kind`: sync region, work, mutex, task flags or dispatch kind, by table.
    pub kind: Option<i64>,
    pub parallel_id: Option<i64>,
    pub task_id: Option<i64>,
    pub parent_task_id: Option<i64>,
    pub new_task_id: Option<i64>,
    pub prior_task_id: Option<i64>,
    pub prior_task_status: Option<i64>,
    pub next_task_id: Option<i64>,
    /// Address of the lock or critical section (`waitId`).
    pub wait_id: Option<i64>,
    /// Iterations (loops), sections or 1 (single) of a worksharing region.
    pub count: Option<i64>,
    pub thread_id: Option<i64>,
    pub thread_type: Option<i64>,
}

const COLUMNS: [&str; 17] = [
    "start",
    "end",
    "globalTid",
    "nameId",
    "eventKind",
    "kind",
    "parallelId",
    "taskId",
    "parentTaskId",
    "newTaskId",
    "priorTaskId",
    "priorTaskStatus",
    "nextTaskId",
    "waitId",
    "count",
    "threadId",
    "threadType",
];

fn event(row: &RowView) -> Option<OmpEvent> {
    Some(OmpEvent {
        start: row.int(0)?,
        end: row.int(1)?,
        global_tid: row.int(2)?,
        name_id: row.int(3),
        event_kind: row.int(4),
        kind: row.int(5),
        parallel_id: row.int(6),
        task_id: row.int(7),
        parent_task_id: row.int(8),
        new_task_id: row.int(9),
        prior_task_id: row.int(10),
        prior_task_status: row.int(11),
        next_task_id: row.int(12),
        wait_id: row.int(13),
        count: row.int(14),
        thread_id: row.int(15),
        thread_type: row.int(16),
    })
}

impl Export {
    /// The OpenMP tables this export has, in [`OmpTable::ALL`] order.
    pub fn openmp_tables(&self) -> Vec<OmpTable> {
        OmpTable::ALL
            .into_iter()
            .filter(|t| self.has_table(t.name()))
            .collect()
    }

    /// Streams the rows of one OpenMP table; rows without `start`, `end` or
    /// `globalTid` are skipped and counted.
    pub fn openmp_events(
        &self,
        table: OmpTable,
        f: impl FnMut(&OmpEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.scan_rows(table.name(), &COLUMNS, "1", event, f)
    }

    /// Where nsys ends the ranges it never saw close: `ANALYSIS_DETAILS.duration`
    /// (the rows then end exactly there). `None` when the export does not say.
    pub fn openmp_unclosed_end(&self) -> Result<Option<i64>, ReadError> {
        let mut end = None;
        self.scan("ANALYSIS_DETAILS", &["duration"], |row| {
            end = end.or(row.int(0).filter(|&d| d > 0));
            Ok(())
        })?;
        Ok(end)
    }
}

/// `ENUM_OPENMP_EVENT_KIND` (3.0.0 to 3.24; 3.24 exports omit the table).
pub const EVENT_KIND_TABLE: &str = "ENUM_OPENMP_EVENT_KIND";
pub const EVENT_KIND: &[(i64, &str)] = &[
    (0, "Invalid"),
    (1, "Thread begin"),
    (2, "Thread end"),
    (3, "Parallel begin"),
    (4, "Parallel End"),
    (5, "Sync region wait begin"),
    (6, "Sync region wait end"),
    (7, "Sync region begin"),
    (8, "Sync region end"),
    (9, "Task begin"),
    (10, "Task end"),
    (11, "Master begin"),
    (12, "Master end"),
    (13, "Reduction begin"),
    (14, "Reduction end"),
    (15, "Task create"),
    (16, "Task schedule"),
    (17, "Cancel"),
    (18, "Mutex acquire"),
    (19, "Mutex acquired"),
    (20, "Mutex released"),
    (21, "Lock init"),
    (22, "Lock destroy"),
    (23, "Workshare begin"),
    (24, "Workshare end"),
    (25, "Dispatch"),
    (26, "Flush"),
    (27, "Thread"),
    (28, "Parallel"),
    (29, "Sync region wait"),
    (30, "Sync region"),
    (31, "Task"),
    (32, "Master"),
    (33, "Reduction"),
    (34, "Mutex wait"),
    (35, "Critical section"),
    (36, "Workshare"),
];

/// `ENUM_OPENMP_THREAD` (`ompt_thread_t`).
pub const THREAD_TYPE_TABLE: &str = "ENUM_OPENMP_THREAD";
pub const THREAD_TYPE: &[(i64, &str)] = &[
    (1, "Initial"),
    (2, "Worker"),
    (3, "Internal"),
    (4, "Unknown"),
];

/// `ENUM_OPENMP_TASK_STATUS` (`ompt_task_status_t`).
pub const TASK_STATUS_TABLE: &str = "ENUM_OPENMP_TASK_STATUS";
pub const TASK_STATUS: &[(i64, &str)] = &[
    (1, "Completed"),
    (2, "Yielded"),
    (3, "Cancelled"),
    (4, "Detached"),
    (5, "Early fulfilled"),
    (6, "Late fulfilled"),
    (7, "Switched Out"),
];

/// `ENUM_OPENMP_SYNC_REGION` (`ompt_sync_region_t`); 8-10 are OpenMP 5.1 ids that
/// newer runtimes report.
pub mod sync_region {
    pub const BARRIER: i64 = 1;
    pub const BARRIER_IMPLICIT: i64 = 2;
    pub const BARRIER_EXPLICIT: i64 = 3;
    pub const BARRIER_IMPLEMENTATION: i64 = 4;
    pub const TASKWAIT: i64 = 5;
    pub const TASKGROUP: i64 = 6;
    pub const REDUCTION: i64 = 7;
    pub const BARRIER_IMPLICIT_WORKSHARE: i64 = 8;
    pub const BARRIER_IMPLICIT_PARALLEL: i64 = 9;
    pub const BARRIER_TEAMS: i64 = 10;

    /// Whether the region is a barrier of any flavour.
    pub fn is_barrier(kind: i64) -> bool {
        matches!(kind, 1..=4 | 8..=10)
    }
}

/// `ENUM_OPENMP_WORK` (`ompt_work_t`); 8 and 10-13 are OpenMP 5.1/5.2 ids.
pub mod work {
    pub const LOOP: i64 = 1;
    pub const SECTIONS: i64 = 2;
    pub const SINGLE_EXECUTOR: i64 = 3;
    pub const SINGLE_OTHER: i64 = 4;
    pub const WORKSHARE: i64 = 5;
    pub const DISTRIBUTE: i64 = 6;
    pub const TASKLOOP: i64 = 7;
    pub const SCOPE: i64 = 8;
    pub const LOOP_STATIC: i64 = 10;
    pub const LOOP_DYNAMIC: i64 = 11;
    pub const LOOP_GUIDED: i64 = 12;
    pub const LOOP_OTHER: i64 = 13;
}

/// `ENUM_OPENMP_MUTEX` (`ompt_mutex_t`).
pub mod mutex {
    pub const LOCK: i64 = 1;
    pub const TEST_LOCK: i64 = 2;
    pub const NEST_LOCK: i64 = 3;
    pub const TEST_NEST_LOCK: i64 = 4;
    pub const CRITICAL: i64 = 5;
    pub const ATOMIC: i64 = 6;
    pub const ORDERED: i64 = 7;
}

/// `ENUM_OPENMP_TASK_FLAG` (`ompt_task_flag_t`): the low byte is the task type,
/// the high bits are properties (undeferred, untied, final, mergeable, merged).
pub mod task_flag {
    pub const INITIAL: i64 = 1;
    pub const IMPLICIT: i64 = 2;
    pub const EXPLICIT: i64 = 4;
    pub const TARGET: i64 = 8;
    /// OpenMP 5.1 `ompt_task_taskwait` (a taskwait with dependences).
    pub const TASKWAIT: i64 = 16;
    pub const TYPE_MASK: i64 = 0xFF;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_are_told_from_other_sync_regions() {
        assert!(sync_region::is_barrier(sync_region::BARRIER_IMPLICIT));
        assert!(sync_region::is_barrier(sync_region::BARRIER_TEAMS));
        assert!(!sync_region::is_barrier(sync_region::TASKWAIT));
        assert!(!sync_region::is_barrier(sync_region::REDUCTION));
    }

    #[test]
    fn table_names_are_distinct() {
        let names: std::collections::BTreeSet<&str> =
            OmpTable::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names.len(), 18);
    }
}
