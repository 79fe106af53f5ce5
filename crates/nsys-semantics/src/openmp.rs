//! OpenMP on CPU threads, from the OMPT callbacks nsys records (LLVM libomp):
//! parallel regions, implicit and explicit tasks, work-sharing, barriers and other
//! synchronization, locks and critical sections, and the runtime's point events.
//!
//! **Numbering.** Extrae's OMPT-based types (`omp_events.h`, "new OpenMP support"):
//! 60002 Parallel, 60003 Worksharing, 60004 Synchronization, 60005 Lock Status,
//! 60006 Lock Address and 60009 Tasking, with Extrae's values. Its legacy
//! 600000xx types do not fit: they label the GNU/Intel entry points Extrae wraps
//! (values 1-3 "DO/SECTIONS/REGION (open)"), have no task execution, lock phases
//! or taskwait-versus-barrier split, and nsys records OMPT, the source of the new
//! types. Extrae keeps one value space across those types so that a single
//! "Stacked Val" view can show them all; our own values for what Extrae lacks
//! (reduction, single on the other threads, distribute, taskloop, scope, omp
//! locks) continue that space from 100. nsys-only detail gets types of its own,
//! 60100-60103, clear of Extrae's 60000-60019.
//!
//! | table | type = value | state |
//! |---|---|---|
//! | PARALLEL | 60002 = 1 PARALLEL REGION Fork/Join | 7 Fork/Join |
//! | TASK (initial, implicit) | 60002 = 2 PARALLEL REGION | 1 Running |
//! | TASK (explicit, target) | 60009 = 47 TASK execution | 1 Running |
//! | TASK_CREATE | 60009 = 46 TASK instantiation | |
//! | WORKSHARE, MASTER, DISPATCH | 60003 = by kind (+ 60103 count) | 1 Running |
//! | SYNC_REGION(_WAIT), REDUCTION | 60004 = by kind | 5 Synchronization |
//! | MUTEX_WAIT | 60004 = by kind, 60005 = 37 Obtaining, 60006 = address | 5 Synchronization |
//! | CRITICAL_SECTION | 60004 = by kind, 60005 = 38 Taken, 60006 = address | 1 Running |
//! | MUTEX_RELEASED | 60005 = 39 Releasing, 60006 = address | |
//! | LOCK_INIT/DESTROY, TASK_SCHEDULE, CANCEL, FLUSH | 60100 = event kind (+ 60006, 60102 prior task status) | |
//! | THREAD | 60101 = thread type | |
//!
//! Every row is an interval (points last 1 ns) so that nested regions stack.
//! Tables are read outermost first, so that regions that begin together stack in
//! the right order.
//!
//! **Ranges nsys never closed.** With GCC-compiled code on libomp, a `single`
//! executor gets no end callback (GCC has no `GOMP_single_end`). nsys then ends
//! the enclosing implicit task and parallel region at the single's begin — it
//! writes them again as extra rows ("Task" with no task flags, and a parallel
//! row for the same parallel id) — and leaves the real rows open until the end of
//! the analysis (`ANALYSIS_DETAILS.duration`). We hold back the open rows, take
//! their end from the matching extra row (one interval for the two rows), and
//! end the single at the next barrier of its task or the end of its task.

use nsys_reader::openmp::{
    mutex, sync_region, task_flag, work, OmpEvent, OmpTable, EVENT_KIND, TASK_STATUS, THREAD_TYPE,
};
use nsys_reader::{ReadError, TableScan};
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::types::{interval, state};
use crate::view::bundled_view;

pub const OMP_PARALLEL: u32 = 60_002;
pub const OMP_WORKSHARING: u32 = 60_003;
pub const OMP_SYNCHRONIZATION: u32 = 60_004;
pub const OMP_LOCK_STATUS: u32 = 60_005;
pub const OMP_LOCK_ADDRESS: u32 = 60_006;
pub const OMP_TASKING: u32 = 60_009;
pub const OMP_RUNTIME_EVENT: u32 = 60_100;
pub const OMP_THREAD_TYPE: u32 = 60_101;
pub const OMP_PRIOR_TASK_STATUS: u32 = 60_102;
pub const OMP_WORK_COUNT: u32 = 60_103;

/// Extrae's values (shared by its OpenMP types), then ours from 100.
pub mod val {
    pub const FORK_JOIN: i64 = 1;
    pub const PARALLEL_REGION: i64 = 2;
    pub const NEXT_CHUNK: i64 = 9;
    pub const LOOP: i64 = 10;
    pub const LOOP_STATIC: i64 = 11;
    pub const LOOP_DYNAMIC: i64 = 12;
    pub const LOOP_GUIDED: i64 = 13;
    pub const SECTION: i64 = 23;
    pub const SINGLE: i64 = 24;
    pub const MASTER: i64 = 25;
    pub const BARRIER: i64 = 26;
    pub const JOIN_WAIT: i64 = 27;
    pub const ATOMIC: i64 = 29;
    pub const CRITICAL: i64 = 30;
    pub const ORDERED: i64 = 32;
    pub const TASKGROUP: i64 = 33;
    pub const TASKWAIT: i64 = 34;
    pub const LOCK_OBTAINING: i64 = 37;
    pub const LOCK_TAKEN: i64 = 38;
    pub const LOCK_RELEASING: i64 = 39;
    pub const TASK_INSTANTIATION: i64 = 46;
    pub const TASK_EXECUTION: i64 = 47;
    pub const REDUCTION: i64 = 100;
    pub const SINGLE_OTHER: i64 = 101;
    pub const WORKSHARE: i64 = 102;
    pub const DISTRIBUTE: i64 = 103;
    pub const TASKLOOP: i64 = 104;
    pub const SCOPE: i64 = 105;
    pub const LOCK: i64 = 106;
    pub const NESTED_LOCK: i64 = 107;
    pub const OTHER_WORKSHARING: i64 = 198;
    pub const OTHER_SYNCHRONIZATION: i64 = 199;
}

/// `ENUM_OPENMP_EVENT_KIND` ids of the point events typed 60100.
mod event_kind {
    pub const TASK_SCHEDULE: i64 = 16;
    pub const CANCEL: i64 = 17;
    pub const LOCK_INIT: i64 = 21;
    pub const LOCK_DESTROY: i64 = 22;
    pub const FLUSH: i64 = 26;
    pub const ALL: [i64; 5] = [TASK_SCHEDULE, CANCEL, LOCK_INIT, LOCK_DESTROY, FLUSH];
}

/// Outermost constructs first (see the module documentation).
const TABLE_ORDER: [OmpTable; 18] = [
    OmpTable::Thread,
    OmpTable::Parallel,
    OmpTable::Task,
    OmpTable::Workshare,
    OmpTable::Master,
    OmpTable::SyncRegion,
    OmpTable::SyncRegionWait,
    OmpTable::Reduction,
    OmpTable::MutexWait,
    OmpTable::CriticalSection,
    OmpTable::MutexReleased,
    OmpTable::TaskCreate,
    OmpTable::TaskSchedule,
    OmpTable::Dispatch,
    OmpTable::Cancel,
    OmpTable::LockInit,
    OmpTable::LockDestroy,
    OmpTable::Flush,
];

pub const OPENMP: Category = Category::named("openmp");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: OPENMP,
    aliases: &["omp"],
    bsc_names: &["openmp"],
    groups: &[],
    tables: &[],
    table_prefixes: &["OPENMP_EVENT_KIND_"],
    bytes_per_row: 82,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[state::RUNNING, state::SYNCHRONIZATION, state::FORK_JOIN],
    views: &[bundled_view!(
        "views/openmp.cfg",
        "Which OpenMP regions, work-sharing, synchronization and tasks is each thread in?",
    )],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

/// Every event is an interval, runtime events too (of the length nsys gives them).
fn event_types() -> Vec<EventTypeInfo> {
    use val::*;
    vec![
        fixed(
            OMP_PARALLEL,
            "OpenMP Parallel",
            &[
                (FORK_JOIN, "PARALLEL REGION Fork/Join"),
                (PARALLEL_REGION, "PARALLEL REGION"),
            ],
        ),
        fixed(
            OMP_WORKSHARING,
            "OpenMP Worksharing",
            &[
                (NEXT_CHUNK, "NEXT CHUNK Request"),
                (LOOP, "DO/FOR loop"),
                (LOOP_STATIC, "DO/FOR loop (static)"),
                (LOOP_DYNAMIC, "DO/FOR loop (dynamic)"),
                (LOOP_GUIDED, "DO/FOR loop (guided)"),
                (SECTION, "SECTION"),
                (SINGLE, "SINGLE"),
                (MASTER, "MASTER"),
                (SINGLE_OTHER, "SINGLE (other threads)"),
                (WORKSHARE, "WORKSHARE"),
                (DISTRIBUTE, "DISTRIBUTE"),
                (TASKLOOP, "TASKLOOP"),
                (SCOPE, "SCOPE"),
                (OTHER_WORKSHARING, "Other worksharing"),
            ],
        ),
        fixed(
            OMP_SYNCHRONIZATION,
            "OpenMP Synchronization",
            &[
                (BARRIER, "BARRIER"),
                (JOIN_WAIT, "JOIN (wait)"),
                (ATOMIC, "ATOMIC"),
                (CRITICAL, "CRITICAL"),
                (ORDERED, "ORDERED"),
                (TASKGROUP, "TASKGROUP"),
                (TASKWAIT, "TASKWAIT"),
                (REDUCTION, "REDUCTION"),
                (LOCK, "LOCK"),
                (NESTED_LOCK, "NESTED LOCK"),
                (OTHER_SYNCHRONIZATION, "Other synchronization"),
            ],
        ),
        fixed(
            OMP_LOCK_STATUS,
            "OpenMP Lock Status",
            &[
                (LOCK_OBTAINING, "LOCK: Obtaining"),
                (LOCK_TAKEN, "LOCK: Taken"),
                (LOCK_RELEASING, "LOCK: Releasing"),
            ],
        ),
        interval(
            OMP_LOCK_ADDRESS,
            "OpenMP Lock Address",
            ValueLabels::Numeric,
        ),
        fixed(
            OMP_TASKING,
            "OpenMP Tasking",
            &[
                (TASK_INSTANTIATION, "TASK instantiation"),
                (TASK_EXECUTION, "TASK execution"),
            ],
        ),
        fixed(
            OMP_RUNTIME_EVENT,
            "OpenMP runtime event",
            &event_kind_labels(),
        ),
        fixed(OMP_THREAD_TYPE, "OpenMP thread type", THREAD_TYPE),
        fixed(
            OMP_PRIOR_TASK_STATUS,
            "OpenMP prior task status (task switch)",
            TASK_STATUS,
        ),
        interval(
            OMP_WORK_COUNT,
            "OpenMP worksharing count (iterations, sections)",
            ValueLabels::Numeric,
        ),
    ]
}

/// An interval type with a fixed table of values, and `0 End`.
fn fixed(ty: u32, label: &str, values: &[(i64, &str)]) -> EventTypeInfo {
    let mut table = vec![(0, "End".to_string())];
    table.extend(values.iter().map(|&(v, l)| (v, l.to_string())));
    interval(ty, label, ValueLabels::Fixed(table))
}

fn event_kind_labels() -> Vec<(i64, &'static str)> {
    EVENT_KIND
        .iter()
        .copied()
        .filter(|(id, _)| event_kind::ALL.contains(id))
        .collect()
}

/// What one row becomes: up to three event pairs and the thread state it implies.
#[derive(Clone, Copy)]
struct Mapped {
    pairs: [EventPair; 3],
    len: usize,
    state: Option<u32>,
}

impl Mapped {
    fn new(ty: u32, value: i64, state: Option<u32>) -> Self {
        let pair = EventPair::raw(ty, value);
        Mapped {
            pairs: [pair; 3],
            len: 1,
            state,
        }
    }

    /// Adds a numeric pair when the value is there and not 0 (0 would read as an end).
    fn with(mut self, ty: u32, value: Option<i64>) -> Self {
        if let Some(v) = value.filter(|&v| v != 0) {
            self.pairs[self.len] = EventPair::raw(ty, v);
            self.len += 1;
        }
        self
    }

    fn pairs(&self) -> &[EventPair] {
        &self.pairs[..self.len]
    }
}

fn map_event(table: OmpTable, e: &OmpEvent) -> Mapped {
    use OmpTable::*;
    let running = Some(state::RUNNING);
    let sync = Some(state::SYNCHRONIZATION);
    match table {
        Thread => Mapped::new(OMP_THREAD_TYPE, e.thread_type.unwrap_or(4), None),
        Parallel => Mapped::new(OMP_PARALLEL, val::FORK_JOIN, Some(state::FORK_JOIN)),
        Task => {
            let (ty, value) = task_value(e.kind);
            Mapped::new(ty, value, running)
        }
        TaskCreate => Mapped::new(OMP_TASKING, val::TASK_INSTANTIATION, None),
        Workshare => {
            Mapped::new(OMP_WORKSHARING, work_value(e.kind), running).with(OMP_WORK_COUNT, e.count)
        }
        Master => Mapped::new(OMP_WORKSHARING, val::MASTER, running),
        Dispatch => Mapped::new(OMP_WORKSHARING, val::NEXT_CHUNK, running),
        SyncRegion | SyncRegionWait => Mapped::new(OMP_SYNCHRONIZATION, sync_value(e.kind), sync),
        Reduction => Mapped::new(OMP_SYNCHRONIZATION, val::REDUCTION, sync),
        MutexWait => Mapped::new(OMP_SYNCHRONIZATION, mutex_value(e.kind), sync)
            .with(OMP_LOCK_STATUS, Some(val::LOCK_OBTAINING))
            .with(OMP_LOCK_ADDRESS, e.wait_id),
        CriticalSection => Mapped::new(OMP_SYNCHRONIZATION, mutex_value(e.kind), running)
            .with(OMP_LOCK_STATUS, Some(val::LOCK_TAKEN))
            .with(OMP_LOCK_ADDRESS, e.wait_id),
        MutexReleased => Mapped::new(OMP_LOCK_STATUS, val::LOCK_RELEASING, None)
            .with(OMP_LOCK_ADDRESS, e.wait_id),
        LockInit => Mapped::new(OMP_RUNTIME_EVENT, event_kind::LOCK_INIT, None)
            .with(OMP_LOCK_ADDRESS, e.wait_id),
        LockDestroy => Mapped::new(OMP_RUNTIME_EVENT, event_kind::LOCK_DESTROY, None)
            .with(OMP_LOCK_ADDRESS, e.wait_id),
        TaskSchedule => Mapped::new(OMP_RUNTIME_EVENT, event_kind::TASK_SCHEDULE, None)
            .with(OMP_PRIOR_TASK_STATUS, e.prior_task_status),
        Cancel => Mapped::new(OMP_RUNTIME_EVENT, event_kind::CANCEL, None),
        Flush => Mapped::new(OMP_RUNTIME_EVENT, event_kind::FLUSH, None),
    }
}

/// Initial and implicit tasks are the threads' share of a parallel region (the
/// initial task is the implicit task of the implicit parallel region); explicit
/// and target tasks are task executions. A row without task flags is nsys's
/// leftover end of an implicit task (see the module documentation).
fn task_value(flags: Option<i64>) -> (u32, i64) {
    let kind = flags.unwrap_or(0) & task_flag::TYPE_MASK;
    if kind & (task_flag::EXPLICIT | task_flag::TARGET | task_flag::TASKWAIT) != 0 {
        (OMP_TASKING, val::TASK_EXECUTION)
    } else {
        (OMP_PARALLEL, val::PARALLEL_REGION)
    }
}

fn work_value(kind: Option<i64>) -> i64 {
    match kind.unwrap_or(0) {
        work::LOOP | work::LOOP_OTHER => val::LOOP,
        work::LOOP_STATIC => val::LOOP_STATIC,
        work::LOOP_DYNAMIC => val::LOOP_DYNAMIC,
        work::LOOP_GUIDED => val::LOOP_GUIDED,
        work::SECTIONS => val::SECTION,
        work::SINGLE_EXECUTOR => val::SINGLE,
        work::SINGLE_OTHER => val::SINGLE_OTHER,
        work::WORKSHARE => val::WORKSHARE,
        work::DISTRIBUTE => val::DISTRIBUTE,
        work::TASKLOOP => val::TASKLOOP,
        work::SCOPE => val::SCOPE,
        _ => val::OTHER_WORKSHARING,
    }
}

/// Implicit barriers end work-sharing constructs and parallel regions: Extrae's
/// "JOIN (wait)"; every other barrier is a "BARRIER".
fn sync_value(kind: Option<i64>) -> i64 {
    use sync_region::*;
    match kind.unwrap_or(0) {
        BARRIER_IMPLICIT | BARRIER_IMPLICIT_WORKSHARE | BARRIER_IMPLICIT_PARALLEL => val::JOIN_WAIT,
        BARRIER | BARRIER_EXPLICIT | BARRIER_IMPLEMENTATION | BARRIER_TEAMS => val::BARRIER,
        TASKWAIT => val::TASKWAIT,
        TASKGROUP => val::TASKGROUP,
        REDUCTION => val::REDUCTION,
        _ => val::OTHER_SYNCHRONIZATION,
    }
}

fn mutex_value(kind: Option<i64>) -> i64 {
    match kind.unwrap_or(0) {
        mutex::LOCK | mutex::TEST_LOCK => val::LOCK,
        mutex::NEST_LOCK | mutex::TEST_NEST_LOCK => val::NESTED_LOCK,
        mutex::CRITICAL => val::CRITICAL,
        mutex::ATOMIC => val::ATOMIC,
        mutex::ORDERED => val::ORDERED,
        _ => val::OTHER_SYNCHRONIZATION,
    }
}

fn emit(ctx: &mut ReportContext, table: OmpTable, e: &OmpEvent, end: i64) {
    // The time limits take the row as repaired (its end found).
    if !ctx.within_limits(e.start, end) {
        return;
    }
    let mapped = map_event(table, e);
    let thread = ctx.cpu_thread(e.global_tid);
    ctx.run.interval(thread, e.start, end, mapped.pairs());
    if let Some(s) = mapped.state {
        ctx.states.add(thread, e.start, end, s);
    }
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let present = export.openmp_tables();
    if present.is_empty() {
        return Ok(());
    }
    // Without the analysis end nothing can be told open: rows are taken as they are.
    let horizon = export.openmp_unclosed_end()?.unwrap_or(i64::MAX);
    let mut repairs = Repairs::default();
    for table in TABLE_ORDER.into_iter().filter(|t| present.contains(t)) {
        let scan = match table {
            OmpTable::Parallel => parallel_regions(ctx, horizon, &mut repairs)?,
            OmpTable::Task => tasks(ctx, horizon, &mut repairs)?,
            OmpTable::Workshare => workshares(ctx, horizon, &mut repairs)?,
            OmpTable::SyncRegion | OmpTable::SyncRegionWait => {
                sync_regions(ctx, table, &mut repairs)?
            }
            _ => export.openmp_events(table, |e| {
                emit(ctx, table, e, e.end);
                Ok(())
            })?,
        };
        ctx.note_scan(table.name(), scan);
    }
    finish_open_work(ctx, &mut repairs);
    report_repairs(ctx, &repairs);
    Ok(())
}

/// Rows held back because nsys left them open, and what the other rows tell of
/// their ends. Only open rows and their leftover partners are held: a few per
/// broken region, never a table.
#[derive(Default)]
struct Repairs {
    parallels_merged: u64,
    tasks_merged: u64,
    /// Task intervals whose end a merge gave, per (globalTid, taskId).
    task_ends: FxHashMap<(i64, i64), Vec<(i64, i64)>>,
    /// Open work-sharing rows and the earliest end found for each.
    open_work: Vec<(OmpEvent, i64)>,
    /// Indexes into `open_work` per (globalTid, taskId).
    open_work_by_task: FxHashMap<(i64, i64), Vec<usize>>,
    work_ended: u64,
}

/// Parallel regions, in two passes over the (small: one row per region) table:
/// the first finds the open rows, the second emits the others and takes the end
/// of each open row from the row nsys wrote again for the same parallel id.
fn parallel_regions(
    ctx: &mut ReportContext,
    horizon: i64,
    repairs: &mut Repairs,
) -> Result<TableScan, ReadError> {
    let export = ctx.export;
    let table = OmpTable::Parallel;
    let mut open: FxHashMap<(i64, i64), (OmpEvent, Option<i64>)> = FxHashMap::default();
    export.openmp_events(table, |e| {
        if let (true, Some(id)) = (e.end >= horizon, e.parallel_id) {
            open.entry((e.global_tid, id)).or_insert((*e, None));
        }
        Ok(())
    })?;
    let scan = export.openmp_events(table, |e| {
        let held = e
            .parallel_id
            .and_then(|id| open.get_mut(&(e.global_tid, id)));
        match held {
            Some((first, _)) if first == e => {}
            Some((first, end)) if end.is_none() && e.start >= first.start && e.end < horizon => {
                *end = Some(e.end)
            }
            _ => emit(ctx, table, e, e.end),
        }
        Ok(())
    })?;
    let mut held: Vec<(OmpEvent, Option<i64>)> = open.into_values().collect();
    held.sort_by_key(|(e, _)| (e.start, e.global_tid));
    for (e, end) in held {
        repairs.parallels_merged += u64::from(end.is_some());
        emit(ctx, table, &e, end.unwrap_or(e.end));
    }
    Ok(scan)
}

/// Tasks: open rows and rows without task flags (nsys's leftover ends) are held
/// back, then each leftover ends the open row of the same thread and task.
fn tasks(
    ctx: &mut ReportContext,
    horizon: i64,
    repairs: &mut Repairs,
) -> Result<TableScan, ReadError> {
    let export = ctx.export;
    let table = OmpTable::Task;
    let known_horizon = horizon < i64::MAX;
    let (mut open, mut leftovers) = (Vec::new(), Vec::new());
    let scan = export.openmp_events(table, |e| {
        if e.end >= horizon {
            open.push((*e, None));
        } else if known_horizon && e.kind.is_some_and(|k| k & task_flag::TYPE_MASK == 0) {
            leftovers.push(*e);
        } else {
            emit(ctx, table, e, e.end);
        }
        Ok(())
    })?;
    for leftover in leftovers {
        match closing_open_task(&mut open, &leftover) {
            Some(end) => *end = Some(leftover.end),
            None => emit(ctx, table, &leftover, leftover.end),
        }
    }
    open.sort_by_key(|(e, _): &(OmpEvent, Option<i64>)| (e.start, e.global_tid));
    for (e, end) in open {
        if let (Some(end), Some(task)) = (end, e.task_id) {
            repairs.tasks_merged += 1;
            let ends = repairs.task_ends.entry((e.global_tid, task)).or_default();
            ends.push((e.start, end));
        }
        emit(ctx, table, &e, end.unwrap_or(e.end));
    }
    Ok(scan)
}

/// The latest-begun open row of the leftover's thread and task that the leftover
/// can end.
fn closing_open_task<'a>(
    open: &'a mut [(OmpEvent, Option<i64>)],
    leftover: &OmpEvent,
) -> Option<&'a mut Option<i64>> {
    open.iter_mut()
        .filter(|(e, end)| {
            end.is_none()
                && e.global_tid == leftover.global_tid
                && e.task_id == leftover.task_id
                && e.start <= leftover.start
        })
        .max_by_key(|(e, _)| e.start)
        .map(|(_, end)| end)
}

/// Work-sharing regions; open ones wait for the barriers of their task.
fn workshares(
    ctx: &mut ReportContext,
    horizon: i64,
    repairs: &mut Repairs,
) -> Result<TableScan, ReadError> {
    let export = ctx.export;
    let table = OmpTable::Workshare;
    export.openmp_events(table, |e| {
        if e.end < horizon {
            emit(ctx, table, e, e.end);
            return Ok(());
        }
        let index = repairs.open_work.len();
        repairs.open_work.push((*e, e.end));
        if let Some(task) = e.task_id {
            let ids = repairs.open_work_by_task.entry((e.global_tid, task));
            ids.or_default().push(index);
        }
        Ok(())
    })
}

/// Sync regions; a barrier of a task ends that task's open work-sharing regions
/// that began before it (no barrier may nest in a work-sharing region).
fn sync_regions(
    ctx: &mut ReportContext,
    table: OmpTable,
    repairs: &mut Repairs,
) -> Result<TableScan, ReadError> {
    let export = ctx.export;
    export.openmp_events(table, |e| {
        emit(ctx, table, e, e.end);
        let barrier = e.kind.is_some_and(sync_region::is_barrier);
        let (true, Some(task)) = (barrier, e.task_id) else {
            return Ok(());
        };
        let Some(ids) = repairs.open_work_by_task.get(&(e.global_tid, task)) else {
            return Ok(());
        };
        for &i in ids {
            let (work, end) = &mut repairs.open_work[i];
            if e.start >= work.start {
                *end = (*end).min(e.start);
            }
        }
        Ok(())
    })
}

/// Emits the open work-sharing rows, ended by the first barrier of their task or
/// the end a merge gave their task, whichever comes first.
fn finish_open_work(ctx: &mut ReportContext, repairs: &mut Repairs) {
    let open = std::mem::take(&mut repairs.open_work);
    for (e, barrier_end) in open {
        let task_end = e
            .task_id
            .and_then(|task| repairs.task_ends.get(&(e.global_tid, task)))
            .and_then(|ends| {
                ends.iter()
                    .filter(|&&(start, end)| start <= e.start && e.start <= end)
                    .map(|&(_, end)| end)
                    .min()
            });
        let end = task_end.map_or(barrier_end, |t| t.min(barrier_end));
        repairs.work_ended += u64::from(end < e.end);
        emit(ctx, OmpTable::Workshare, &e, end);
    }
}

fn report_repairs(ctx: &mut ReportContext, repairs: &Repairs) {
    let merged = [
        (OmpTable::Parallel, repairs.parallels_merged),
        (OmpTable::Task, repairs.tasks_merged),
    ];
    for (table, n) in merged.into_iter().filter(|&(_, n)| n > 0) {
        ctx.count(&format!("{} rows merged", table.name()), n);
    }
    if repairs.work_ended > 0 {
        ctx.count(
            &format!("{} ends estimated", OmpTable::Workshare.name()),
            repairs.work_ended,
        );
    }
    let total = repairs.parallels_merged + repairs.tasks_merged + repairs.work_ended;
    if total > 0 {
        ctx.warnings.push(format!(
            "{}: {total} OpenMP ranges that nsys left open were closed ({} parallel regions and {} tasks from the row nsys wrote again for their end, {} single regions at the next barrier); see the missing `single` end of GCC code on libomp",
            ctx.export.path().display(),
            repairs.parallels_merged,
            repairs.tasks_merged,
            repairs.work_ended,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_split_between_parallel_and_tasking() {
        assert_eq!(
            task_value(Some(task_flag::IMPLICIT)),
            (OMP_PARALLEL, val::PARALLEL_REGION)
        );
        assert_eq!(
            task_value(Some(task_flag::INITIAL)),
            (OMP_PARALLEL, val::PARALLEL_REGION)
        );
        // Explicit and undeferred: the property bits do not change the type.
        let undeferred_explicit = task_flag::EXPLICIT | 0x0800_0000;
        assert_eq!(
            task_value(Some(undeferred_explicit)),
            (OMP_TASKING, val::TASK_EXECUTION)
        );
        assert_eq!(task_value(Some(0)), (OMP_PARALLEL, val::PARALLEL_REGION));
    }

    #[test]
    fn kinds_take_extrae_values() {
        assert_eq!(
            sync_value(Some(sync_region::BARRIER_IMPLICIT)),
            val::JOIN_WAIT
        );
        assert_eq!(
            sync_value(Some(sync_region::BARRIER_IMPLEMENTATION)),
            val::BARRIER
        );
        assert_eq!(sync_value(Some(sync_region::TASKWAIT)), val::TASKWAIT);
        assert_eq!(sync_value(None), val::OTHER_SYNCHRONIZATION);
        assert_eq!(work_value(Some(work::SINGLE_EXECUTOR)), val::SINGLE);
        assert_eq!(work_value(Some(work::LOOP_DYNAMIC)), val::LOOP_DYNAMIC);
        assert_eq!(mutex_value(Some(mutex::CRITICAL)), val::CRITICAL);
        assert_eq!(mutex_value(Some(mutex::TEST_NEST_LOCK)), val::NESTED_LOCK);
    }

    #[test]
    fn every_value_is_labelled_once_across_types() {
        let mut seen = std::collections::BTreeSet::new();
        let shared = [
            OMP_PARALLEL,
            OMP_WORKSHARING,
            OMP_SYNCHRONIZATION,
            OMP_LOCK_STATUS,
            OMP_TASKING,
        ];
        for info in event_types().into_iter().filter(|t| shared.contains(&t.ty)) {
            let ValueLabels::Fixed(values) = info.values else {
                panic!("{} has no value table", info.ty);
            };
            for (v, _) in values.into_iter().filter(|&(v, _)| v != 0) {
                assert!(
                    seen.insert(v),
                    "value {v} is used twice (one Stacked Val view needs one space)"
                );
            }
        }
    }

    #[test]
    fn locks_carry_status_and_address() {
        let wait = OmpEvent {
            kind: Some(mutex::LOCK),
            wait_id: Some(0x7ffd_0000),
            ..Default::default()
        };
        let mapped = map_event(OmpTable::MutexWait, &wait);
        let types: Vec<u32> = mapped.pairs().iter().map(|p| p.ty).collect();
        assert_eq!(
            types,
            [OMP_SYNCHRONIZATION, OMP_LOCK_STATUS, OMP_LOCK_ADDRESS]
        );
        assert_eq!(mapped.state, Some(state::SYNCHRONIZATION));
        let released = map_event(OmpTable::MutexReleased, &OmpEvent::default());
        assert_eq!(released.pairs().len(), 1, "no address, no 0-valued pair");
    }
}
