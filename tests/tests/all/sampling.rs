//! CPU sampling and CPU-only reports on real exports (the bundled samples, and the
//! shared corpus when present): every CPU sample is one 30000000 event with its
//! callers at levels 1..depth as the export's call stacks say, in Extrae's
//! numbering and `.pcf` layout; scheduling-only reports give each thread its runs
//! (as long as `SCHED_EVENTS` says) with Running and Idle states; a report with
//! nothing recorded fails and says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use end_to_end::*;
use paraver_reader::{open_body, parse_header, parse_record, Lines, Pcf, Record, TraceFiles};

const SAMPLED_FUNCTION: u32 = 30_000_000;
const LIBRARY: u32 = 40_000_039;
const SCHED_CPU: u32 = 66_900_000;
const DEFAULT_DEPTH: u32 = 5;

fn sample(rel: &str) -> PathBuf {
    workspace_root().join("samples").join(rel)
}

/// An event line: its thread (global index), time and (type, value) pairs.
type EventLine = (usize, i64, Vec<(u32, i64)>);

/// A trace as lists of records per thread (in time order), with its labels.
struct Trace {
    /// `.row` THREAD labels, by global thread index.
    threads: Vec<String>,
    events: Vec<EventLine>,
    /// (thread, begin, end, state).
    states: Vec<(usize, i64, i64, u32)>,
    pcf: Pcf,
    pcf_text: String,
}

fn read_trace(prv: &Path) -> Trace {
    let files = TraceFiles::of(prv);
    let mut lines = Lines::new(open_body(prv, files.gzip).unwrap());
    assert!(lines.advance().unwrap());
    let header = parse_header(&String::from_utf8_lossy(lines.line()), &mut Vec::new()).unwrap();
    let mut fields = Vec::new();
    let (mut events, mut states) = (Vec::new(), Vec::new());
    while lines.advance().unwrap() {
        let index = |o: paraver_reader::Object| header.thread_index(o.appl, o.task, o.thread);
        match parse_record(lines.line(), &mut fields) {
            Ok(Record::Event {
                object,
                time,
                pairs,
            }) => {
                let pairs = pairs
                    .chunks(2)
                    .map(|p| (p[0] as u32, p[1] as i64))
                    .collect();
                events.push((index(object).unwrap(), time as i64, pairs));
            }
            Ok(Record::State {
                object,
                begin,
                end,
                state,
            }) => states.push((
                index(object).unwrap(),
                begin as i64,
                end as i64,
                state as u32,
            )),
            _ => {}
        }
    }
    let row = paraver_reader::row::read_row(
        std::io::BufReader::new(std::fs::File::open(&files.row).unwrap()),
        &mut |_| {},
    )
    .unwrap();
    let pcf_text = std::fs::read_to_string(&files.pcf).unwrap();
    let pcf = paraver_reader::pcf::read_pcf(pcf_text.as_bytes(), &mut |_| {}).unwrap();
    Trace {
        threads: row.labels("THREAD").to_vec(),
        events,
        states,
        pcf,
        pcf_text,
    }
}

impl Trace {
    /// Non-zero values of `ty`, in trace order.
    fn values(&self, ty: u32) -> Vec<i64> {
        self.events
            .iter()
            .flat_map(|(_, _, pairs)| pairs.iter())
            .filter(|&&(t, v)| t == ty && v != 0)
            .map(|&(_, v)| v)
            .collect()
    }

    /// The `.pcf` label of `value` of `ty`.
    fn label(&self, ty: u32, value: i64) -> &str {
        self.pcf
            .value_label(ty, value)
            .unwrap_or_else(|| panic!("no label for {ty} = {value}"))
    }

    fn labels(&self, ty: u32) -> BTreeSet<String> {
        self.values(ty)
            .into_iter()
            .map(|v| self.label(ty, v).to_string())
            .collect()
    }

    /// The event types of the `.pcf` block that declares `ty`.
    fn pcf_block_of(&self, ty: u32) -> Vec<u32> {
        let mut block = Vec::new();
        let mut found = false;
        for line in self.pcf_text.lines() {
            if line == "EVENT_TYPE" {
                if found {
                    break;
                }
                block.clear();
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["VALUES"] if found => break,
                [_, number, ..] => {
                    if let Ok(t) = number.parse::<u32>() {
                        block.push(t);
                        found |= t == ty;
                    }
                }
                _ => {}
            }
        }
        block
    }
}

/// Rows `sql` counts in the export (0 when a table is missing).
fn count(export: &Path, sql: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(export, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .unwrap_or(0)
}

fn translate(export: &Path, dir: &Path, extra: &[&str]) -> Trace {
    let prv = dir.join("out.prv");
    // Every thread, Nsight's own included: the counts below are of every thread.
    let mut args = vec!["--keep-nsys-threads"];
    args.extend(extra);
    let out = convert(&[export], &prv, &args);
    assert!(
        out.status.success(),
        "{}: {}",
        export.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    check_trace(&prv);
    read_trace(&prv)
}

/// Exports with CPU samples: the bundled one and those of the corpus.
fn exports_with_samples() -> Vec<PathBuf> {
    let mut exports = vec![sample("sampling/sampling.sqlite")];
    if let Some(corpus) = corpus_dir() {
        let manifest = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
        exports.extend(
            manifest
                .lines()
                .filter(|l| {
                    l.contains(" SAMPLES=") && l.split('\t').next().unwrap().ends_with(".sqlite")
                })
                .map(|l| corpus.join(l.split('\t').next().unwrap())),
        );
    }
    exports
}

/// Every level a sample does not write was 0 before it: a caller timeline never
/// shows the caller of an older sample.
fn assert_levels_never_outlive_their_sample(trace: &Trace, depth: u32, name: &str) {
    let mut current: BTreeMap<(usize, u32), i64> = BTreeMap::new();
    for (thread, time, pairs) in &trace.events {
        if !pairs.iter().any(|&(t, _)| t == SAMPLED_FUNCTION) {
            continue;
        }
        for level in 1..=depth {
            let ty = SAMPLED_FUNCTION + level;
            match pairs.iter().find(|&&(t, _)| t == ty) {
                Some(&(_, v)) => {
                    current.insert((*thread, level), v);
                }
                None => assert_eq!(
                    current.get(&(*thread, level)).copied().unwrap_or(0),
                    0,
                    "{name}: thread {thread} at {time}: level {level} left from an older sample"
                ),
            }
        }
    }
}

#[test]
fn every_sample_comes_once_with_every_level_of_its_call_stack() {
    let dir = tempfile::tempdir().unwrap();
    let exports = exports_with_samples();
    for export in &exports {
        let name = export.display().to_string();
        let trace = translate(export, dir.path(), &[]);
        assert_eq!(
            trace.values(SAMPLED_FUNCTION).len() as u64,
            count(export, "SELECT COUNT(*) FROM COMPOSITE_EVENTS"),
            "{name}: samples"
        );
        assert_eq!(
            trace.values(LIBRARY).len() as u64,
            count(
                export,
                "SELECT COUNT(*) FROM SAMPLING_CALLCHAINS s JOIN StringIds m ON m.id = s.module \
                 WHERE s.stackDepth = 0 AND m.value <> '[Unknown]'"
            ),
            "{name}: libraries"
        );
        let mut levels = vec![SAMPLED_FUNCTION];
        for level in 1..=DEFAULT_DEPTH {
            let frames = count(
                export,
                &format!("SELECT COUNT(*) FROM SAMPLING_CALLCHAINS WHERE stackDepth = {level}"),
            );
            assert_eq!(
                trace.values(SAMPLED_FUNCTION + level).len() as u64,
                frames,
                "{name}: level {level}"
            );
            if frames > 0 {
                levels.push(SAMPLED_FUNCTION + level);
            }
        }
        assert!(trace
            .values(SAMPLED_FUNCTION + DEFAULT_DEPTH + 1)
            .is_empty());
        // One .pcf block lists the levels written and shares one VALUES table.
        assert_eq!(trace.pcf_block_of(SAMPLED_FUNCTION), levels, "{name}");
        assert_levels_never_outlive_their_sample(&trace, DEFAULT_DEPTH, &name);
        // Values 1 and 2 are Extrae's: no function name gets them.
        let table = trace.pcf.types[&SAMPLED_FUNCTION].values.as_ref().unwrap();
        assert!(table.get(&1).is_none_or(|l| l == "Unresolved"), "{name}");
        assert!(!table.contains_key(&2), "{name}");
    }
    assert!(exports.len() > 1 || corpus_dir().is_none());
}

#[test]
fn the_depth_option_limits_the_levels() {
    let dir = tempfile::tempdir().unwrap();
    let export = sample("sampling/sampling.sqlite");
    for depth in [0, 2, 7] {
        let trace = translate(
            &export,
            dir.path(),
            &["--sampling-depth", &depth.to_string()],
        );
        let written: BTreeSet<u32> = trace
            .events
            .iter()
            .flat_map(|(_, _, pairs)| pairs.iter().map(|p| p.0))
            .filter(|t| (SAMPLED_FUNCTION..SAMPLED_FUNCTION + 100).contains(t))
            .collect();
        let deepest = count(&export, "SELECT MAX(stackDepth) FROM SAMPLING_CALLCHAINS") as u32;
        let expected: BTreeSet<u32> = (0..=depth.min(deepest))
            .map(|k| SAMPLED_FUNCTION + k)
            .collect();
        assert_eq!(written, expected, "--sampling-depth {depth}");
        assert_levels_never_outlive_their_sample(&trace, depth, "sampling");
    }
    let out = convert(
        &[&export],
        &dir.path().join("x.prv"),
        &["--sampling-depth", "100"],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// src/callstacks.c: main and a worker run run_phase, which calls leaf_a and
/// middle -> leaf_b; frame-pointer backtraces show each level exactly.
#[test]
fn the_callstacks_sample_has_its_functions_at_their_levels() {
    let dir = tempfile::tempdir().unwrap();
    let trace = translate(&sample("sampling/sampling.sqlite"), dir.path(), &[]);
    let level = |k: u32| trace.labels(SAMPLED_FUNCTION + k);
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert!(
        level(0).is_superset(&set(&["leaf_a", "leaf_b"])),
        "{:?}",
        level(0)
    );
    // One sample was taken in the vDSO (clock_gettime), with [Unknown] callers.
    assert!(level(0).contains("[vdso] (unresolved)"), "{:?}", level(0));
    assert!(level(1).is_superset(&set(&["run_phase", "middle", "Unresolved"])));
    assert!(level(2).is_superset(&set(&["main", "worker", "run_phase"])));
    assert!(level(3).is_superset(&set(&["main", "worker"])));
    // One table for every level: main has one value.
    let main = |k: u32| {
        trace
            .values(SAMPLED_FUNCTION + k)
            .into_iter()
            .find(|&v| trace.label(SAMPLED_FUNCTION + k, v) == "main")
            .unwrap()
    };
    assert_eq!(main(2), main(3));
    assert_eq!(
        trace.labels(LIBRARY),
        set(&[
            "/var/tmp/nsys2prv-samples-build/callstacks",
            "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
            "[vdso]"
        ])
    );
    // Samples are on the program's two threads.
    let threads: BTreeSet<&str> = trace
        .events
        .iter()
        .filter(|(_, _, p)| p.iter().any(|&(t, _)| t == SAMPLED_FUNCTION))
        .map(|(thread, _, _)| trace.threads[*thread].as_str())
        .collect();
    assert_eq!(threads.len(), 2, "{threads:?}");
}

/// Per thread (by tid), the time on a CPU as SCHED_EVENTS says: each switch-in
/// until the thread's next switch.
fn on_cpu_per_thread(export: &Path) -> BTreeMap<u32, i64> {
    let conn =
        rusqlite::Connection::open_with_flags(export, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "WITH o AS (SELECT globalTid g, start, isSchedIn i, \
                 lead(start) OVER (PARTITION BY globalTid ORDER BY start, rowid) nxt \
             FROM SCHED_EVENTS) \
             SELECT g & 16777215, SUM(nxt - start) FROM o WHERE i = 1 AND nxt IS NOT NULL GROUP BY g",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get::<_, i64>(0)? as u32, r.get::<_, i64>(1)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The tid in a `.row` thread label `name (tid)`.
fn tid_of(label: &str) -> u32 {
    let open = label.rfind('(').unwrap();
    label[open + 1..label.len() - 1].parse().unwrap()
}

/// Per thread (by tid), the time of 66900000 intervals with a CPU, and of
/// Running and Idle states.
fn trace_times(trace: &Trace) -> (BTreeMap<u32, i64>, BTreeMap<(u32, u32), i64>) {
    let mut on_cpu: BTreeMap<u32, i64> = BTreeMap::new();
    let mut open: BTreeMap<usize, i64> = BTreeMap::new();
    for (thread, time, pairs) in &trace.events {
        for &(ty, value) in pairs {
            if ty != SCHED_CPU {
                continue;
            }
            if let Some(since) = open.remove(thread) {
                *on_cpu.entry(tid_of(&trace.threads[*thread])).or_default() += time - since;
            }
            if value != 0 {
                open.insert(*thread, *time);
            }
        }
    }
    assert!(open.is_empty(), "a run never ends");
    let mut states: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    for &(thread, begin, end, state) in &trace.states {
        *states
            .entry((tid_of(&trace.threads[thread]), state))
            .or_default() += end - begin;
    }
    (on_cpu, states)
}

#[test]
fn scheduling_runs_add_up_to_sched_events_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut exports = vec![
        sample("sched_only/sched_only.sqlite"),
        sample("sampling/sampling.sqlite"),
    ];
    if let Some(corpus) = corpus_dir() {
        exports.push(corpus.join("github/D-W-Chiang+JACC.jl/4e6_async_1_trace.sqlite"));
    }
    for export in exports.iter().filter(|e| e.is_file()) {
        let name = export.display();
        let want = on_cpu_per_thread(export);
        let trace = translate(export, dir.path(), &[]);
        let (on_cpu, states) = trace_times(&trace);
        assert_eq!(on_cpu, want, "{name}: time on a CPU per thread");
        // Nothing but scheduling sets states: Running on a CPU, Idle in between.
        for (&tid, &time) in &want {
            assert_eq!(
                states.get(&(tid, 1)),
                Some(&time),
                "{name}: Running of {tid}"
            );
        }
        assert!(states.keys().all(|&(_, s)| s <= 1), "{name}: {states:?}");
        assert!(
            states.keys().any(|&(_, s)| s == 0),
            "{name}: never switched out"
        );
    }
}

/// A call's state shows over the scheduling background; the background fills
/// the time between calls.
#[test]
fn calls_show_over_the_scheduling_background() {
    let dir = tempfile::tempdir().unwrap();
    let trace = translate(
        &sample("sched/sched.sqlite"),
        dir.path(),
        &["-t", "osrt,sched"],
    );
    let (_, states) = trace_times(&trace);
    let has = |state: u32| states.keys().any(|&(_, s)| s == state);
    // Synchronization (mutex, condition), Blocked (sleeps), Running, Idle.
    assert!(has(5) && has(9) && has(1) && has(0), "{states:?}");
}

#[test]
fn a_report_with_nothing_recorded_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let export = sample("nothing/nothing.sqlite");
    let prv = dir.path().join("out.prv");
    let out = convert(&[&export], &prv, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&export.display().to_string())
            && stderr.contains("nothing was recorded")
            && stderr.contains("PROCESSES 6 rows"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Reports of sampling or scheduling alone translate.
    let out = convert(&[&sample("sched_only/sched_only.sqlite")], &prv, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
