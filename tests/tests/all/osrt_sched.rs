//! OS runtime calls, pthreads and scheduling on real exports (shared corpus and
//! bundled samples, skipped when absent): every `eventClass = 27` row of OSRT_API
//! is one 66400000 interval, pthread calls carry Extrae's 61000000 values, the
//! call states sit on CPU threads only, switch-ins become 66900000 runs with the
//! right CPUs, switch-out states become 66900001 values, and the trace validates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use end_to_end::*;

const OSRT_CALL: u32 = 66_400_000;
const PTHREAD_CALL: u32 = 61_000_000;
const SCHED_CPU: u32 = 66_900_000;
const SCHED_THREAD_STATE: u32 = 66_900_001;
/// Extrae states the OS runtime category gives CPU threads.
const OSRT_STATES: [u32; 4] = [5, 9, 12, 15];

/// Pids whose threads made OS runtime calls (the processes the report traces).
const PROFILED: &str = "((globalTid >> 24) & 16777215) IN \
     (SELECT DISTINCT (globalTid >> 24) & 16777215 FROM OSRT_API WHERE eventClass = 27)";

/// Extrae's pthread value of a function, written out independently of the code.
fn extrae_pthread_value(name: &str) -> Option<i64> {
    let value = match name {
        "pthread_exit" => 1,
        "pthread_create" => 2,
        "pthread_join" | "pthread_tryjoin_np" | "pthread_timedjoin_np" => 3,
        "pthread_detach" => 4,
        "pthread_rwlock_wrlock" | "pthread_rwlock_trywrlock" | "pthread_rwlock_timedwrlock" => 5,
        "pthread_rwlock_rdlock" | "pthread_rwlock_tryrdlock" | "pthread_rwlock_timedrdlock" => 6,
        "pthread_rwlock_unlock" => 7,
        "pthread_mutex_lock" | "pthread_mutex_trylock" | "pthread_mutex_timedlock" => 8,
        "pthread_mutex_unlock" => 9,
        "pthread_cond_signal" => 10,
        "pthread_cond_broadcast" => 11,
        "pthread_cond_wait" | "pthread_cond_timedwait" | "pthread_cond_clockwait" => 12,
        "pthread_barrier_wait" => 13,
        _ => return None,
    };
    Some(value)
}

/// What the export says the trace must hold, read with plain SQL.
struct Expected {
    osrt_calls: u64,
    pthread_values: BTreeMap<i64, u64>,
    switch_ins: u64,
    switch_out_states: u64,
    cpu_values: BTreeSet<i64>,
}

fn expected(path: &Path) -> Expected {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let count = |sql: &str| -> u64 {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .unwrap_or(0) // table or column absent
    };
    let mut pthread_values = BTreeMap::new();
    let mut stmt = conn
        .prepare(
            "SELECT s.value, COUNT(*) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId \
             WHERE o.eventClass = 27 GROUP BY s.value",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap();
    for row in rows {
        let (name, n) = row.unwrap();
        if let Some(v) = extrae_pthread_value(&name) {
            *pthread_values.entry(v).or_default() += n as u64;
        }
    }
    let mut cpu_values = BTreeSet::new();
    if let Ok(mut stmt) = conn.prepare(&format!(
        "SELECT DISTINCT cpu + 1 FROM SCHED_EVENTS WHERE isSchedIn <> 0 AND {PROFILED}"
    )) {
        let rows = stmt.query_map([], |r| r.get::<_, i64>(0)).unwrap();
        cpu_values.extend(rows.map(Result::unwrap));
    }
    Expected {
        osrt_calls: count("SELECT COUNT(*) FROM OSRT_API WHERE eventClass = 27"),
        pthread_values,
        switch_ins: count(&format!(
            "SELECT COUNT(*) FROM SCHED_EVENTS WHERE isSchedIn <> 0 AND {PROFILED}"
        )),
        switch_out_states: count(&format!(
            "SELECT COUNT(*) FROM SCHED_EVENTS \
             WHERE isSchedIn = 0 AND threadState IS NOT NULL AND {PROFILED}"
        )),
        cpu_values,
    }
}

/// What the trace holds, read from the `.prv` and `.row` text.
#[derive(Default)]
struct Found {
    /// Non-zero values of 61000000 and how often each occurs.
    pthread_values: BTreeMap<i64, u64>,
    cpu_values: BTreeSet<i64>,
    /// Names of the threads that have each state.
    threads_by_state: BTreeMap<u32, BTreeSet<String>>,
}

fn read_trace(prv: &Path) -> Found {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines = text.lines();
    let task_offsets = task_offsets(lines.next().unwrap());
    let names = thread_names(&prv.with_extension("row"));
    let mut found = Found::default();
    for line in lines {
        let f: Vec<i64> = match line.split(':').map(str::parse).collect() {
            Ok(f) => f,
            Err(_) => continue, // communicator lines
        };
        let thread = || names[task_offsets[f[3] as usize - 1] + f[4] as usize - 1].clone();
        match f[0] {
            1 => {
                found
                    .threads_by_state
                    .entry(f[7] as u32)
                    .or_default()
                    .insert(thread());
            }
            2 => {
                for pair in f[6..].chunks(2) {
                    match (pair[0] as u32, pair[1]) {
                        (_, 0) => {}
                        (PTHREAD_CALL, v) => *found.pthread_values.entry(v).or_default() += 1,
                        (SCHED_CPU, v) => {
                            found.cpu_values.insert(v);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// Global index of each task's first thread, from the header's `T(t1:n1,...)`.
fn task_offsets(header: &str) -> Vec<usize> {
    let open = header.rfind('(').unwrap();
    let close = open + header[open..].find(')').unwrap();
    let mut offsets = Vec::new();
    let mut next = 0;
    for task in header[open + 1..close].split(',') {
        offsets.push(next);
        next += task.split(':').next().unwrap().parse::<usize>().unwrap();
    }
    offsets
}

fn thread_names(row: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(row).unwrap();
    let mut lines = text.lines();
    let size: usize = lines
        .by_ref()
        .find_map(|l| l.strip_prefix("LEVEL THREAD SIZE "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    lines.take(size).map(str::to_string).collect()
}

/// Converts `export` alone (OS runtime, scheduling and CUDA, whose states share
/// the CPU threads) and checks every rule of this category against it.
/// Returns what was found, for checks particular to one file.
fn check_export(export: &Path) -> (paraver_reader::validate::TraceStats, Found) {
    let dir = tempfile::tempdir().unwrap();
    let prv = dir.path().join("out.prv");
    // NVTX and the other categories are checked by their own tests; the counts
    // below are of every thread, Nsight's own included.
    let out = convert(
        &[export],
        &prv,
        &["-t", "osrt,sched,cuda", "--keep-nsys-threads"],
    );
    assert!(
        out.status.success(),
        "{}: {}",
        export.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = check_trace(&prv);
    let want = expected(export);
    let found = read_trace(&prv);
    let name = export.display();

    assert!(want.osrt_calls > 0, "{name}: no OS runtime calls to check");
    assert_eq!(
        begins(&stats, OSRT_CALL),
        want.osrt_calls,
        "{name}: 66400000"
    );
    assert_eq!(
        stats.event_ends.get(&OSRT_CALL).copied().unwrap_or(0),
        want.osrt_calls,
        "{name}: every OS runtime call ends"
    );
    assert_eq!(
        found.pthread_values, want.pthread_values,
        "{name}: 61000000"
    );

    for state in OSRT_STATES {
        for thread in found.threads_by_state.get(&state).into_iter().flatten() {
            assert!(
                !thread.starts_with("CUDA-"),
                "{name}: state {state} on GPU stream {thread}"
            );
        }
    }

    assert_eq!(
        begins(&stats, SCHED_CPU),
        want.switch_ins,
        "{name}: 66900000"
    );
    assert_eq!(found.cpu_values, want.cpu_values, "{name}: CPU values");
    assert_eq!(
        begins(&stats, SCHED_THREAD_STATE),
        want.switch_out_states,
        "{name}: 66900001"
    );
    (stats, found)
}

fn corpus_file(relpath: &str) -> Option<PathBuf> {
    let path = corpus_dir()?.join(relpath);
    if path.is_file() {
        Some(path)
    } else {
        missing_tool("a corpus file", &format!("{} is absent", path.display()));
        None
    }
}

fn has_states(found: &Found, states: &[u32]) -> bool {
    states
        .iter()
        .all(|s| found.threads_by_state.contains_key(s))
}

#[test]
fn pthread_program_calls_and_states() {
    let Some(export) = corpus_file("local/nvtx_pthreads/nvtx_pthreads.sqlite") else {
        return;
    };
    let (_, found) = check_export(&export);
    // Mutex, condition, join (5), sleeps (9), file I/O (12), pthread_create (15).
    assert!(has_states(&found, &[5, 9, 12, 15]));
}

#[test]
fn pthread_program_with_scheduling() {
    let Some(export) = corpus_file("local/nvtx_pthreads_sampling/nvtx_pthreads_sampling.sqlite")
    else {
        return;
    };
    let (stats, found) = check_export(&export);
    assert!(begins(&stats, SCHED_CPU) > 0);
    assert!(has_states(&found, &[5, 9, 12]));
}

#[test]
fn cuda_program_with_thread_states_at_switch_out() {
    let Some(export) = corpus_file("github/0x822a5b87+test-cuda/report1.sqlite") else {
        return;
    };
    let (stats, found) = check_export(&export);
    assert!(begins(&stats, SCHED_THREAD_STATE) > 0);
    // ioctl and poll are I/O; GPU streams keep their own states.
    assert!(has_states(&found, &[12]));
}

#[test]
fn bundled_samples() {
    let root = workspace_root().join("samples");
    for dir in ["nvtx_osrt", "sched"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sqlite") {
                check_export(&path);
            }
        }
    }
}

/// Every OS runtime call is written, one of zero length (begin = end; none of the
/// real exports has one: their zero-length rows are the start/finish markers) as
/// a 1 ns interval, so call counts equal the export's.
#[test]
fn zero_length_calls_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("zero.sqlite");
    std::fs::copy(
        workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite"),
        &export,
    )
    .unwrap();
    let conn = rusqlite::Connection::open(&export).unwrap();
    let changed = conn
        .execute(
            "UPDATE OSRT_API SET \"end\" = start WHERE rowid IN \
             (SELECT rowid FROM OSRT_API WHERE eventClass = 27 ORDER BY rowid LIMIT 5)",
            [],
        )
        .unwrap();
    assert_eq!(changed, 5);
    drop(conn);
    let (stats, _) = check_export(&export);
    assert_eq!(begins(&stats, OSRT_CALL), expected(&export).osrt_calls);
}
