//! Thread scheduling (`SCHED_EVENTS`) on CPU threads: which CPU a thread runs on
//! (66900000, value cpu + 1 while it is on a CPU, 0 when switched out) and, from
//! schema 3.13.2 on, why it left the CPU: the thread state (66900001) and blocking
//! reason (66900002) recorded at the switch-out, held until the next switch-in.
//!
//! Pairing, per thread and in time order: a switch-in opens a run on its CPU and
//! the next switch-out closes it; a second switch-in closes the open run where the
//! new one begins; a switch-out with no run open starts nothing (its state and
//! reason are still shown); a run still open at the end lasts until the last
//! scheduling event of the report.
//!
//! The runs also give each thread its background state: Running while on a CPU,
//! Idle while switched out between two runs; the call a thread is in (OS runtime,
//! CUDA, MPI, ...) shows over it.
//!
//! SCHED_EVENTS may list other processes than the traced ones (a system-wide
//! capture, the launcher's side of `mpirun`), so only processes that already have
//! events in this report are kept (this category runs last). A report with
//! nothing else keeps every process of a process-tree capture (nsys's default:
//! the launched program and its children) and the launched processes of a
//! system-wide one. Rows are not guaranteed to be in time order, so the kept rows
//! are held in memory and sorted per thread: memory grows with the report's own
//! scheduling rows (about 48 bytes each), not with the whole table.

use std::collections::BTreeMap;

use nsys_reader::enums;
use nsys_reader::ids::pid_of;
use nsys_reader::sched::{
    SchedEvent, ENUM_THREAD_BLOCK, ENUM_THREAD_STATE, SCHED_EVENTS, THREAD_BLOCK, THREAD_STATE,
};
use nsys_reader::{Export, ReadError};
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::types::{interval, state};
use crate::view::bundled_view;

// 66600000 + k is BSC nsys2prv 0.6's CPU counter k (crate::cpu_raw_counters), so
// scheduling, which BSC does not translate, has the block 66900000.

/// CPU the thread runs on, plus one (0: not running).
pub const SCHED_CPU: u32 = 66_900_000;
/// `ENUM_SAMPLING_THREAD_STATE` label of the switch-out, while off the CPU.
pub const SCHED_THREAD_STATE: u32 = 66_900_001;
/// `ENUM_SCHEDULING_THREAD_BLOCK` label of the switch-out, while off the CPU.
pub const SCHED_BLOCKING_REASON: u32 = 66_900_002;

/// CPUs given a label in the `.pcf`; higher ones show as "Unknown (value)".
const LABELLED_CPUS: i64 = 4096;

pub const SCHED: Category = Category::named("sched");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: SCHED,
    aliases: &["scheduling"],
    bsc_names: &[],
    groups: &[],
    tables: &["SCHED_EVENTS"],
    table_prefixes: &[],
    bytes_per_row: 30,
    background_bytes_per_row: 32,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/cpu_scheduling.cfg",
            "On which CPU does each thread run, and when is it switched out?",
        ),
        bundled_view!(
            "analysis/cpu_occupancy.cfg",
            "How long did each thread run on each CPU?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

/// A thread's last switch-out, with no switch-in after it, stays open.
fn event_types() -> Vec<EventTypeInfo> {
    let cpus = std::iter::once((0, "Not running".to_string()))
        .chain((0..LABELLED_CPUS).map(|cpu| (cpu + 1, format!("CPU {cpu}"))))
        .collect();
    vec![
        interval(SCHED_CPU, "CPU", ValueLabels::Fixed(cpus)),
        interval(
            SCHED_THREAD_STATE,
            "Thread state at switch-out",
            ValueLabels::Names,
        ),
        interval(SCHED_BLOCKING_REASON, "Blocking reason", ValueLabels::Names),
    ]
}

/// The report's scheduling rows of profiled processes, sorted by (thread, time).
struct SchedRows {
    rows: Vec<SchedEvent>,
    /// Latest time of any row of the table, the end of scheduling data.
    last_time: i64,
    other_processes: u64,
    invalid_cpu: u64,
    /// Rows outside `--time-limit-start`/`--time-limit-end`.
    outside_limits: u64,
}

/// How the rows paired up, for the counts.
#[derive(Default)]
struct Tally {
    runs: u64,
    repeated_switch_ins: u64,
    lone_switch_outs: u64,
    open_at_end: u64,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(SCHED_EVENTS) {
        return Ok(());
    }
    let (sched, skipped) = collect_rows(ctx)?;
    ctx.outside_limits += sched.outside_limits;
    let mut reasons = SwitchOutNames::read(export)?;
    let mut tally = Tally::default();
    for events in sched.rows.chunk_by(|a, b| a.global_tid == b.global_tid) {
        translate_thread(ctx, events, sched.last_time, &mut reasons, &mut tally);
    }
    record_counts(ctx, &sched, &tally, skipped);
    Ok(())
}

fn record_counts(ctx: &mut ReportContext, sched: &SchedRows, tally: &Tally, skipped: u64) {
    let counts = [
        (SCHED_EVENTS, sched.rows.len() as u64),
        ("CPU runs", tally.runs),
        (
            "SCHED_EVENTS of other processes ignored",
            sched.other_processes,
        ),
        (
            "SCHED_EVENTS switch-ins without switch-out",
            tally.repeated_switch_ins + tally.open_at_end,
        ),
        (
            "SCHED_EVENTS switch-outs without switch-in",
            tally.lone_switch_outs,
        ),
    ];
    for (what, n) in counts {
        if n > 0 {
            ctx.count(what, n);
        }
    }
    if sched.invalid_cpu > 0 {
        ctx.warnings.push(format!(
            "{}: {} rows of {SCHED_EVENTS} skipped (cpu out of range)",
            ctx.export.path().display(),
            sched.invalid_cpu
        ));
        ctx.count("SCHED_EVENTS skipped", sched.invalid_cpu);
    }
    ctx.note_skipped(SCHED_EVENTS, skipped);
}

/// Keeps the rows of the processes [`KeptProcesses`] keeps and sorts them per
/// thread; the sort is stable, so rows at one time keep their table order.
fn collect_rows(ctx: &ReportContext) -> Result<(SchedRows, u64), ReadError> {
    let mut kept = KeptProcesses::new(ctx)?;
    let mut sched = SchedRows {
        rows: Vec::new(),
        last_time: i64::MIN,
        other_processes: 0,
        invalid_cpu: 0,
        outside_limits: 0,
    };
    let limits = ctx.options.time_limits;
    let scan = ctx.export.sched_events(|ev| {
        if !limits.keeps(ev.start, ev.start) {
            sched.outside_limits += 1;
            return Ok(());
        }
        sched.last_time = sched.last_time.max(ev.start);
        if !kept.keeps(ctx, pid_of(ev.global_tid)) {
            sched.other_processes += 1;
        } else if !(0..i64::from(i32::MAX)).contains(&ev.cpu) {
            sched.invalid_cpu += 1;
        } else {
            sched.rows.push(*ev);
        }
        Ok(())
    })?;
    sched.rows.sort_by_key(|e| (e.global_tid, e.start));
    Ok((sched, scan.skipped))
}

/// Which processes' scheduling is kept (see the module documentation); CPU
/// counters are kept for the same processes.
pub(crate) enum KeptProcesses {
    /// Those with events of other categories (decided once per pid).
    Traced(FxHashMap<u32, bool>),
    /// Every process of the table.
    All,
    /// The processes nsys launched.
    Launched(std::collections::BTreeSet<u32>),
}

impl KeptProcesses {
    pub(crate) fn new(ctx: &ReportContext) -> Result<Self, ReadError> {
        Ok(if !ctx.thread_keys.is_empty() {
            KeptProcesses::Traced(FxHashMap::default())
        } else if ctx.export.meta().system_wide_cpu_data {
            KeptProcesses::Launched(ctx.export.launched_processes()?)
        } else {
            KeptProcesses::All
        })
    }

    pub(crate) fn keeps(&mut self, ctx: &ReportContext, pid: u32) -> bool {
        match self {
            KeptProcesses::Traced(decided) => {
                *decided.entry(pid).or_insert_with(|| ctx.has_process(pid))
            }
            KeptProcesses::All => true,
            KeptProcesses::Launched(pids) => pids.contains(&pid),
        }
    }
}

fn translate_thread(
    ctx: &mut ReportContext,
    events: &[SchedEvent],
    last_time: i64,
    reasons: &mut SwitchOutNames,
    tally: &mut Tally,
) {
    let spans = pair_switches(events, last_time, tally);
    if spans.is_empty() {
        return;
    }
    let thread = ctx.cpu_thread(events[0].global_tid);
    add_background(ctx, thread, &spans);
    for span in spans {
        match span {
            Span::Run { since, until, cpu } => {
                let pairs = [EventPair::raw(SCHED_CPU, cpu + 1)];
                ctx.run.interval(thread, since, until, &pairs);
                ctx.saw_cpu(cpu);
            }
            Span::Off {
                since,
                until,
                state,
                block,
            } => {
                let (pairs, len) = reasons.pairs(ctx, state, block);
                match until {
                    Some(end) => ctx.run.interval(thread, since, end, &pairs[..len]),
                    None => ctx.run.events(thread, since, &pairs[..len]),
                }
            }
        }
    }
}

/// Running during each run, Idle between two runs (spans in time order).
fn add_background(ctx: &mut ReportContext, thread: paraver_writer::LocalThread, spans: &[Span]) {
    let mut previous_end: Option<i64> = None;
    for span in spans {
        if let Span::Run { since, until, .. } = *span {
            if let Some(end) = previous_end {
                ctx.states.add_background(thread, end, since, state::IDLE);
            }
            ctx.states
                .add_background(thread, since, until, state::RUNNING);
            previous_end = Some(until);
        }
    }
}

/// One stretch of a thread's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// On `cpu` during `[since, until)`.
    Run { since: i64, until: i64, cpu: i64 },
    /// Off the CPU from `since` until the next switch-in (`None`: for good), with
    /// the thread state and blocking reason of the switch-out.
    Off {
        since: i64,
        until: Option<i64>,
        state: Option<i64>,
        block: Option<i64>,
    },
}

/// Pairs one thread's switches (sorted by time) into runs and off-CPU stretches
/// (rules in the module documentation). Empty stretches are left out: their 1 ns
/// stand-in would close the stretch that begins at the same time.
fn pair_switches(events: &[SchedEvent], last_time: i64, tally: &mut Tally) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut on_cpu: Option<(i64, i64)> = None; // (since, cpu)
    let mut off_cpu: Option<Span> = None;
    for ev in events {
        if let Some(Span::Off {
            since,
            state,
            block,
            ..
        }) = off_cpu.take()
        {
            if ev.start > since {
                let until = Some(ev.start);
                spans.push(Span::Off {
                    since,
                    until,
                    state,
                    block,
                });
            }
        }
        let closed = if ev.is_sched_in {
            let previous = on_cpu.replace((ev.start, ev.cpu));
            tally.repeated_switch_ins += u64::from(previous.is_some());
            previous
        } else {
            let open = on_cpu.take();
            tally.lone_switch_outs += u64::from(open.is_none());
            if ev.thread_state.is_some() || ev.thread_block.is_some() {
                off_cpu = Some(Span::Off {
                    since: ev.start,
                    until: None,
                    state: ev.thread_state,
                    block: ev.thread_block,
                });
            }
            open
        };
        if let Some((since, cpu)) = closed.filter(|&(since, _)| ev.start > since) {
            spans.push(Span::Run {
                since,
                until: ev.start,
                cpu,
            });
        }
    }
    if let Some((since, cpu)) = on_cpu {
        tally.open_at_end += 1;
        let until = last_time.max(since + 1);
        spans.push(Span::Run { since, until, cpu });
    }
    spans.extend(off_cpu);
    tally.runs += spans
        .iter()
        .filter(|s| matches!(s, Span::Run { .. }))
        .count() as u64;
    spans
}

/// Name handles of the switch-out enums, by enum id.
struct SwitchOutNames {
    state: EnumNames,
    block: EnumNames,
}

impl SwitchOutNames {
    fn read(export: &Export) -> Result<Self, ReadError> {
        Ok(SwitchOutNames {
            state: EnumNames {
                ty: SCHED_THREAD_STATE,
                labels: enums::labels(export, ENUM_THREAD_STATE, THREAD_STATE)?,
                unknown: "Thread state",
                handles: FxHashMap::default(),
            },
            block: EnumNames {
                ty: SCHED_BLOCKING_REASON,
                labels: enums::labels(export, ENUM_THREAD_BLOCK, THREAD_BLOCK)?,
                unknown: "Blocking reason",
                handles: FxHashMap::default(),
            },
        })
    }

    /// The 66900001/66900002 pairs of a switch-out: `pairs[..len]`.
    fn pairs(
        &mut self,
        ctx: &mut ReportContext,
        state: Option<i64>,
        block: Option<i64>,
    ) -> ([EventPair; 2], usize) {
        let mut pairs = [EventPair::raw(0, 0); 2];
        let mut len = 0;
        for (names, id) in [(&mut self.state, state), (&mut self.block, block)] {
            if let Some(id) = id {
                pairs[len] = EventPair::name(names.ty, names.handle(ctx, id));
                len += 1;
            }
        }
        (pairs, len)
    }
}

struct EnumNames {
    ty: u32,
    labels: BTreeMap<i64, String>,
    /// Label prefix of ids neither the export nor the built-in copy knows.
    unknown: &'static str,
    handles: FxHashMap<i64, u32>,
}

impl EnumNames {
    fn handle(&mut self, ctx: &mut ReportContext, id: i64) -> u32 {
        if let Some(&h) = self.handles.get(&id) {
            return h;
        }
        let h = match self.labels.get(&id) {
            Some(label) => ctx.run.names.intern(self.ty, label),
            None => ctx
                .run
                .names
                .intern(self.ty, &format!("{} {id}", self.unknown)),
        };
        self.handles.insert(id, h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switch(start: i64, cpu: i64, is_sched_in: bool, state: Option<i64>) -> SchedEvent {
        SchedEvent {
            start,
            cpu,
            is_sched_in,
            global_tid: 1,
            thread_state: state,
            thread_block: None,
        }
    }

    fn run(since: i64, until: i64, cpu: i64) -> Span {
        Span::Run { since, until, cpu }
    }

    fn off(since: i64, until: Option<i64>, state: i64) -> Span {
        Span::Off {
            since,
            until,
            state: Some(state),
            block: None,
        }
    }

    #[test]
    fn switch_ins_pair_with_the_next_switch_out() {
        let events = [
            switch(10, 3, true, None),
            switch(20, 3, false, Some(2)),
            switch(30, 5, true, None),
            switch(40, 5, false, Some(5)),
        ];
        let mut tally = Tally::default();
        let spans = pair_switches(&events, 100, &mut tally);
        assert_eq!(
            spans,
            vec![
                run(10, 20, 3),
                off(20, Some(30), 2),
                run(30, 40, 5),
                off(40, None, 5)
            ]
        );
        assert_eq!(tally.runs, 2);
        assert_eq!(tally.lone_switch_outs + tally.repeated_switch_ins, 0);
    }

    #[test]
    fn unpaired_switches_follow_the_rules() {
        // A lone switch-out starts nothing; a repeated switch-in closes the open
        // run; the run still open at the end lasts until the last event.
        let events = [
            switch(5, 1, false, None),
            switch(10, 1, true, None),
            switch(15, 2, true, None),
        ];
        let mut tally = Tally::default();
        let spans = pair_switches(&events, 50, &mut tally);
        assert_eq!(spans, vec![run(10, 15, 1), run(15, 50, 2)]);
        assert_eq!(tally.lone_switch_outs, 1);
        assert_eq!(tally.repeated_switch_ins, 1);
        assert_eq!(tally.open_at_end, 1);
    }

    #[test]
    fn empty_stretches_are_left_out() {
        let events = [
            switch(10, 0, true, None),
            switch(10, 0, false, Some(2)),
            switch(10, 0, true, None),
            switch(20, 0, false, None),
        ];
        let mut tally = Tally::default();
        assert_eq!(pair_switches(&events, 20, &mut tally), vec![run(10, 20, 0)]);
    }
}
