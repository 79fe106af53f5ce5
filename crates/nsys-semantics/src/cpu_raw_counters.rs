//! CPU core hardware counters (`nsys profile --cpu-core-events=... --event-sample`),
//! as BSC nsys2prv 0.6's `cpu_raw_counters` writes them: each sample of
//! `PERF_EVENT_SOC_OR_CPU_RAW_EVENT` (the increment `count` of counter `eventId`
//! on a component over `[start, end)`) is a point event of type 66600000 +
//! `eventId`, valued by `count`, at the sample's midpoint `start + (end - start)
//! / 2` (integer division, as SQLite computes it), on the CPU thread that the
//! last switch-in of `SCHED_EVENTS` on the sample's CPU at or before that time
//! put there. The whole count goes to that thread: raw increments are not
//! spread over the context switches inside a period. Types are labelled
//! `displayName [unit]` (`name` where the export has no display name) from
//! `TARGET_INFO_PERF_METRIC`.
//!
//! The CPU of a sample is its component's: a component named `Core` or `CPU`
//! (any case) gives its integral `instance`, and other components (a cache)
//! inherit it from their parent (`parentId`), in `TARGET_INFO_COMPONENT`. A
//! component that reaches no such ancestor, or a CPU with no switch in
//! `SCHED_EVENTS`, places no sample. Switch-outs do not end the ownership: the
//! last thread switched in keeps the CPU's samples until another is (BSC's rule;
//! an idle CPU's counts go to the thread that ran last).
//!
//! Which threads are kept follows the scheduling category: threads of
//! processes that have events of other categories (this pass runs after them),
//! else of every process of a process-tree capture, or of the launched processes
//! of a system-wide one; samples attributed to other threads are left out and
//! counted. BSC keeps only the threads that have other events; here a thread of a
//! traced process that only ran gets its counters too (the scheduling category
//! gives it a row anyway).
//!
//! `--time-limit-start`/`--time-limit-end` keep the samples that start within
//! the limits (BSC's condition); the switch-ins are all read (the thread on a
//! CPU at a limit switched in before it).
//!
//! Every switch-in of the report is held in memory (16 bytes each, for all
//! processes: another process's switch-in ends a traced thread's ownership); the
//! samples stream. Event ids outside 0..100000 (whose types would reach the
//! network counters' 66700000) are left out with a warning, as are negative
//! counts (Paraver values are unsigned).

use nsys_reader::cpu_counters::{Component, OLD_RAW_EVENT, RAW_EVENT};
use nsys_reader::ids::pid_of;
use nsys_reader::sched::SCHED_EVENTS;
use nsys_reader::ReadError;
use paraver_writer::{EventPair, LocalThread, ValueLabels};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::sched::KeptProcesses;
use crate::types::point;
use crate::view::bundled_view;
use crate::view::TypeFamily;

/// Type of counter `eventId`: this + the id (BSC nsys2prv 0.6).
pub const CPU_COUNTERS_FIRST: u32 = 66_600_000;
/// Event ids from 0 up to this (excluded) are translated.
const ID_LIMIT: i64 = 100_000;

pub const CPU_RAW_COUNTERS: Category = Category::named("cpu-raw-counters");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: CPU_RAW_COUNTERS,
    aliases: &["cpu-counters", "cpu-core-events"],
    bsc_names: &["cpu_raw_counters"],
    groups: &[],
    tables: &[RAW_EVENT, OLD_RAW_EVENT],
    table_prefixes: &[],
    bytes_per_row: 45,
    background_bytes_per_row: 0,
    launched: false,
    event_types: Vec::new,
    states: &[],
    views: &[
        bundled_view!(
            "templates/cpu_counter.cfg",
            "How does the CPU counter {name} change over time, per thread (the count of each sampling period)?",
            TypeFamily {
                dir: "views/cpu_counters",
                name_of: counter_name,
                numbered: true,
            },
        ),
        bundled_view!(
            "templates/cpu_counter_profile.cfg",
            "How many {name} did each thread count in all?",
            TypeFamily {
                dir: "analysis/cpu_counters",
                name_of: counter_name,
                numbered: true,
            },
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

/// The counter of a type of this category: its `.pcf` label.
fn counter_name(ty: u32, label: &str) -> Option<String> {
    (CPU_COUNTERS_FIRST..CPU_COUNTERS_FIRST + ID_LIMIT as u32)
        .contains(&ty)
        .then(|| label.to_string())
}

/// The label BSC gives counter `metric`: its name, and ` [unit]` when it has one.
fn label(name: &str, unit: &str) -> String {
    match unit.is_empty() {
        true => name.to_string(),
        false => format!("{name} [{unit}]"),
    }
}

/// Per CPU, the switch-ins of every thread, sorted by time (ties in table order).
struct Schedule {
    by_cpu: FxHashMap<i64, Vec<(i64, i64)>>,
}

impl Schedule {
    fn read(ctx: &mut ReportContext) -> Result<Schedule, ReadError> {
        let mut by_cpu: FxHashMap<i64, Vec<(i64, i64)>> = FxHashMap::default();
        let scan = ctx.export.sched_events(|ev| {
            if ev.is_sched_in {
                by_cpu
                    .entry(ev.cpu)
                    .or_default()
                    .push((ev.start, ev.global_tid));
            }
            Ok(())
        })?;
        // The scheduling category reports them when it runs.
        if !ctx.options.wants(crate::sched::SCHED) {
            ctx.note_skipped(SCHED_EVENTS, scan.skipped);
        }
        for switches in by_cpu.values_mut() {
            switches.sort_by_key(|&(start, _)| start);
        }
        Ok(Schedule { by_cpu })
    }

    fn has_cpu(&self, cpu: i64) -> bool {
        self.by_cpu.contains_key(&cpu)
    }

    /// The thread (globalTid) the last switch-in on `cpu` at or before `at` put there.
    fn running(&self, cpu: i64, at: i64) -> Option<i64> {
        let switches = self.by_cpu.get(&cpu)?;
        let after = switches.partition_point(|&(start, _)| start <= at);
        after.checked_sub(1).map(|i| switches[i].1)
    }
}

/// componentId → the CPU it counts for (see the module documentation).
fn component_cpus(components: &[Component], schedule: &Schedule) -> FxHashMap<i64, i64> {
    let by_id: FxHashMap<i64, &Component> = components.iter().map(|c| (c.id, c)).collect();
    let resolve = |mut id: i64| -> Option<i64> {
        let mut visited = FxHashSet::default();
        while visited.insert(id) {
            let component = by_id.get(&id)?;
            let name = component.name.trim().to_lowercase();
            if name == "core" || name == "cpu" {
                let instance = component.instance?;
                let cpu = instance as i64;
                let integral = instance.fract() == 0.0 && (0.0..1e15).contains(&instance);
                return (integral && schedule.has_cpu(cpu)).then_some(cpu);
            }
            id = component.parent?;
        }
        None
    };
    components
        .iter()
        .filter_map(|c| Some((c.id, resolve(c.id)?)))
        .collect()
}

/// Why samples were left out, for the counts.
#[derive(Default)]
struct Tally {
    attributed: u64,
    no_cpu: u64,
    before_any_switch: u64,
    other_processes: u64,
    bad_id: u64,
    negative: u64,
}

/// The samples of one midpoint, summed per thread and counter, then written as
/// one event record per thread. A thread that left a CPU still owns it until
/// another is switched in there, so it can receive the same counter from two
/// CPUs at once: the counts add up (two events of one type at one time would
/// show one of them).
#[derive(Default)]
struct Period {
    at: Option<i64>,
    /// (thread, type, summed count), in the order first seen.
    counts: Vec<(LocalThread, u32, i64)>,
    index: FxHashMap<(LocalThread, u32), usize>,
    pairs: Vec<EventPair>,
}

impl Period {
    fn add(&mut self, ctx: &mut ReportContext, at: i64, thread: LocalThread, ty: u32, count: i64) {
        if self.at != Some(at) {
            self.flush(ctx);
            self.at = Some(at);
        }
        match self.index.get(&(thread, ty)) {
            Some(&i) => self.counts[i].2 = self.counts[i].2.saturating_add(count),
            None => {
                self.index.insert((thread, ty), self.counts.len());
                self.counts.push((thread, ty, count));
            }
        }
    }

    fn flush(&mut self, ctx: &mut ReportContext) {
        let Some(at) = self.at.take() else {
            return;
        };
        // Stable: a thread's counters keep the order they were first seen in.
        self.counts.sort_by_key(|&(thread, _, _)| thread);
        for counts in self.counts.chunk_by(|a, b| a.0 == b.0) {
            self.pairs.clear();
            self.pairs
                .extend(counts.iter().map(|&(_, ty, n)| EventPair::raw(ty, n)));
            ctx.run.events(counts[0].0, at, &self.pairs);
        }
        self.counts.clear();
        self.index.clear();
    }
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let Some(table) = export.raw_counter_table() else {
        return Ok(());
    };
    if !export.has_table(SCHED_EVENTS) {
        let rows = export.row_estimate(table)?;
        ctx.warnings.push(format!(
            "{}: the {rows} CPU counter samples of {table} left out: without thread scheduling (SCHED_EVENTS, nsys profile --cpuctxsw) they cannot be given to threads",
            export.path().display()
        ));
        ctx.count(&format!("{table} without SCHED_EVENTS"), rows);
        return Ok(());
    }
    let schedule = Schedule::read(ctx)?;
    let cpus = component_cpus(&export.components()?, &schedule);
    let mut labels: FxHashMap<i64, String> = FxHashMap::default();
    for metric in export.perf_metrics()? {
        labels
            .entry(metric.id)
            .or_insert_with(|| label(metric.name.trim(), metric.unit.trim()));
    }
    let mut kept = KeptProcesses::new(ctx)?;
    let mut declared: FxHashSet<i64> = FxHashSet::default();
    let mut period = Period::default();
    let mut tally = Tally::default();
    let scan = export.raw_counter_samples(|s| {
        // BSC limits the samples by their start.
        if !ctx.within_limits(s.start, s.start) {
            return Ok(());
        }
        let Some(&cpu) = cpus.get(&s.component) else {
            tally.no_cpu += 1;
            return Ok(());
        };
        let at = s.start + (s.end - s.start) / 2;
        let Some(global_tid) = schedule.running(cpu, at) else {
            tally.before_any_switch += 1;
            return Ok(());
        };
        if !(0..ID_LIMIT).contains(&s.event) {
            tally.bad_id += 1;
            return Ok(());
        }
        if s.count < 0 {
            tally.negative += 1;
            return Ok(());
        }
        if !kept.keeps(ctx, pid_of(global_tid)) {
            tally.other_processes += 1;
            return Ok(());
        }
        let ty = CPU_COUNTERS_FIRST + s.event as u32;
        if declared.insert(s.event) {
            let label = labels
                .get(&s.event)
                .cloned()
                .unwrap_or_else(|| format!("CPU raw counter {}", s.event));
            ctx.extra_types
                .push(point(ty, &label, ValueLabels::Numeric));
        }
        let thread = ctx.cpu_thread(global_tid);
        period.add(ctx, at, thread, ty, s.count);
        tally.attributed += 1;
        Ok(())
    })?;
    period.flush(ctx);
    ctx.note_skipped(table, scan.skipped);
    record_counts(ctx, table, &tally);
    Ok(())
}

fn record_counts(ctx: &mut ReportContext, table: &str, tally: &Tally) {
    let counts = [
        (table.to_string(), tally.attributed),
        (format!("{table} on no CPU of SCHED_EVENTS"), tally.no_cpu),
        (
            format!("{table} before the CPU's first switch-in"),
            tally.before_any_switch,
        ),
        (
            format!("{table} of threads of other processes"),
            tally.other_processes,
        ),
    ];
    for (what, n) in counts {
        if n > 0 {
            ctx.count(&what, n);
        }
    }
    let path = ctx.export.path().display().to_string();
    if tally.no_cpu > 0 {
        ctx.warnings.push(format!(
            "{path}: {} samples of {table} left out: their component (TARGET_INFO_COMPONENT) is on no CPU that SCHED_EVENTS schedules",
            tally.no_cpu
        ));
    }
    for (n, why) in [
        (tally.bad_id, "an eventId outside 0..100000"),
        (tally.negative, "a negative count"),
    ] {
        if n > 0 {
            ctx.warnings
                .push(format!("{path}: {n} samples of {table} left out: {why}"));
            ctx.count(&format!("{table} skipped"), n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(id: i64, name: &str, instance: Option<f64>, parent: Option<i64>) -> Component {
        Component {
            id,
            name: name.to_string(),
            instance,
            parent,
        }
    }

    fn schedule(cpus: &[i64]) -> Schedule {
        Schedule {
            by_cpu: cpus.iter().map(|&c| (c, vec![(0, 1)])).collect(),
        }
    }

    #[test]
    fn components_take_the_cpu_of_their_core() {
        let components = [
            component(1, "Socket", Some(0.0), None),
            component(10, "Core", Some(0.0), Some(1)),
            component(11, "CPU", Some(3.0), Some(1)),
            component(20, "Cache", None, Some(11)),
            component(21, "Cache", None, Some(20)),
            // Not integral, not scheduled, negative, a cycle, a missing parent.
            component(12, "core", Some(1.5), Some(1)),
            component(13, "Core", Some(7.0), Some(1)),
            component(14, "Core", Some(-1.0), Some(1)),
            component(30, "Cache", None, Some(31)),
            component(31, "Cache", None, Some(30)),
            component(32, "Cache", None, Some(99)),
        ];
        let cpus = component_cpus(&components, &schedule(&[0, 3]));
        let mut found: Vec<(i64, i64)> = cpus.into_iter().collect();
        found.sort();
        assert_eq!(found, [(10, 0), (11, 3), (20, 3), (21, 3)]);
    }

    #[test]
    fn the_last_switch_in_owns_the_cpu() {
        let schedule = Schedule {
            // Sorted by time; two switch-ins at 20: the later row wins.
            by_cpu: [(0, vec![(10, 1), (20, 2), (20, 3), (40, 4)])]
                .into_iter()
                .collect(),
        };
        assert_eq!(schedule.running(0, 9), None);
        assert_eq!(schedule.running(0, 10), Some(1));
        assert_eq!(schedule.running(0, 19), Some(1));
        assert_eq!(schedule.running(0, 20), Some(3));
        assert_eq!(schedule.running(0, 39), Some(3));
        assert_eq!(schedule.running(0, 1000), Some(4));
        assert_eq!(schedule.running(1, 1000), None);
    }

    #[test]
    fn labels_carry_the_unit_when_there_is_one() {
        assert_eq!(label("Instructions Retired", ""), "Instructions Retired");
        assert_eq!(label("Cycles", "cycles"), "Cycles [cycles]");
        assert_eq!(counter_name(66_600_006, "X"), Some("X".into()));
        assert_eq!(counter_name(66_700_000, "X"), None);
    }

    /// A small export: the synthetic generator's CUDA report (process 24601,
    /// threads 24601 and 24602, tables without rows of ours), plus hand-written
    /// scheduling, components, metrics and samples.
    fn fixture(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("counters.sqlite");
        let spec = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_24);
        nsys_synth::write_export(&spec, &path).unwrap();
        let db = rusqlite::Connection::open(&path).unwrap();
        let tid = |pid: i64, tid: i64| (1_i64 << 48) | (pid << 24) | tid;
        let (a, b, other) = (tid(24_601, 24_601), tid(24_601, 24_602), tid(7, 7));
        db.execute_batch(&format!(
            "CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL,
                 isSchedIn INTEGER NOT NULL, globalTid INTEGER);
             -- CPU 0: a from 100, a switched out at 300 (it keeps the CPU), b and
             -- then a at 400 (a wins the tie: the later row), another process at 600.
             -- CPU 1: b from 100.
             INSERT INTO SCHED_EVENTS VALUES
                 (100, 0, 1, {a}), (300, 0, 0, {a}), (400, 0, 1, {b}), (400, 0, 1, {a}),
                 (600, 0, 1, {other}), (100, 1, 1, {b});
             CREATE TABLE TARGET_INFO_COMPONENT (componentId INTEGER NOT NULL, name TEXT NOT NULL,
                 instance INTEGER, parentId INTEGER);
             INSERT INTO TARGET_INFO_COMPONENT VALUES
                 (1, 'Socket', 0, NULL), (10, 'Core', 0, 1), (11, 'core', 1, 1),
                 (20, 'Cache', NULL, 10), (30, 'Uncore', NULL, 1);
             CREATE TABLE TARGET_INFO_PERF_METRIC (id INTEGER NOT NULL, name TEXT NOT NULL,
                 description TEXT NOT NULL, unit TEXT NOT NULL, displayName TEXT);
             INSERT INTO TARGET_INFO_PERF_METRIC VALUES
                 (6, 'instructions', 'd', '', 'Instructions Retired'),
                 (5, 'cycles', 'd', 'cycles', NULL);
             CREATE TABLE PERF_EVENT_SOC_OR_CPU_RAW_EVENT (start INTEGER NOT NULL,
                 end INTEGER NOT NULL, vmId INTEGER, componentId INTEGER, eventId INTEGER,
                 count INTEGER);
             INSERT INTO PERF_EVENT_SOC_OR_CPU_RAW_EVENT VALUES
                 -- Midpoint 150 on CPU 0 (a) and CPU 1 (b); the cache counts for CPU 0.
                 (100, 200, 1, 10, 6, 1000), (100, 200, 1, 11, 6, 2000),
                 (100, 200, 1, 20, 9, 7),
                 -- Midpoint 350: a switched out at 300 but still owns CPU 0; it also
                 -- owns nothing on CPU 1, where b counts: two samples, one each.
                 (300, 400, 1, 10, 5, 3000), (300, 400, 1, 11, 5, 4000),
                 -- Midpoint 450: a (the tie at 400) twice: CPU 0's core and cache.
                 (400, 500, 1, 10, 6, 10), (400, 500, 1, 20, 6, 5),
                 -- Midpoint 650: another process's thread; midpoint 50: before any
                 -- switch-in; an uncore component; an id too large; a negative count;
                 -- a NULL count.
                 (600, 700, 1, 10, 6, 1), (0, 100, 1, 10, 6, 1), (100, 200, 1, 30, 6, 1),
                 (100, 200, 1, 10, 100000, 1), (100, 200, 1, 10, 6, -1),
                 (100, 200, 1, 10, 6, NULL);"
        ))
        .unwrap();
        path
    }

    #[test]
    fn samples_go_to_the_thread_that_last_switched_in_at_their_midpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = fixture(dir.path());
        // With the CUDA API calls of process 24601, whose threads are the ones kept.
        let options = crate::Options {
            categories: [CPU_RAW_COUNTERS, crate::cuda_api::API]
                .into_iter()
                .collect(),
            ..crate::Options::default()
        };
        let report = crate::translate_report(&path, &path, &options).unwrap();
        // (tid, time, (type, value) pairs) of each record with counters.
        type Line = (u32, i64, Vec<(u32, i64)>);
        let mut events: Vec<Line> = Vec::new();
        for (thread, record) in report.run.sorted_records() {
            let paraver_writer::record::Body::Events { first, count, .. } = record.body else {
                continue;
            };
            let pairs: Vec<(u32, i64)> = report
                .run
                .pairs_of(first, count)
                .iter()
                .filter(|p| counter_name(p.ty, "").is_some())
                .map(|p| match p.value() {
                    paraver_writer::record::Value::Raw(v) => (p.ty, v),
                    other => panic!("{other:?}"),
                })
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let crate::ThreadKind::Cpu { tid } = report.threads[thread as usize].kind else {
                panic!("a CPU thread");
            };
            events.push((tid, record.time, pairs));
        }
        events.sort();
        let (a, b) = (24_601, 24_602);
        assert_eq!(
            events,
            [
                (a, 150, vec![(66_600_006, 1000), (66_600_009, 7)]),
                (a, 350, vec![(66_600_005, 3000)]),
                (a, 450, vec![(66_600_006, 15)]),
                (b, 150, vec![(66_600_006, 2000)]),
                (b, 350, vec![(66_600_005, 4000)]),
            ]
        );
        let labels: Vec<(u32, &str)> = report
            .extra_types
            .iter()
            .map(|t| (t.ty, t.label.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                (66_600_006, "Instructions Retired"),
                (66_600_009, "CPU raw counter 9"),
                (66_600_005, "cycles [cycles]"),
            ]
        );
        let count = |what: &str| report.counts.get(what).copied().unwrap_or(0);
        let table = RAW_EVENT;
        assert_eq!(count(table), 7);
        assert_eq!(count(&format!("{table} of threads of other processes")), 1);
        assert_eq!(
            count(&format!("{table} before the CPU's first switch-in")),
            1
        );
        assert_eq!(count(&format!("{table} on no CPU of SCHED_EVENTS")), 1);
        assert_eq!(count(&format!("{table} skipped")), 3);
    }
}
