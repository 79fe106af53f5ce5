//! OpenMP on real LLVM libomp exports (every row kept, nesting kept, ranges nsys
//! left open closed, valid traces) and OpenACC on a small synthetic export.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use end_to_end::fixtures::openacc_export;
use end_to_end::*;
use rusqlite::Connection;

const OMP_PARALLEL: u32 = 60_002;
const OMP_WORKSHARING: u32 = 60_003;
const OMP_SYNCHRONIZATION: u32 = 60_004;
const OMP_LOCK_STATUS: u32 = 60_005;
const OMP_TASKING: u32 = 60_009;
const OMP_RUNTIME_EVENT: u32 = 60_100;
const OMP_THREAD_TYPE: u32 = 60_101;

/// What a test reads back from a `.prv`: event begins per (type, value), and the
/// replay of begins and ends per (task, thread, type).
#[derive(Default)]
struct Replay {
    begins: BTreeMap<(u32, i64), u64>,
    /// Deepest nesting seen per type.
    depth: BTreeMap<u32, usize>,
    /// Latest event time per type.
    last_time: BTreeMap<u32, i64>,
    /// Earliest begin per (type, value).
    first_begin: BTreeMap<(u32, i64), i64>,
    /// Ends without an open begin on their thread, per type.
    unmatched_ends: BTreeMap<u32, u64>,
    /// Begins still open at the end of the trace, per type.
    left_open: BTreeMap<u32, u64>,
}

impl Replay {
    fn of(prv: &Path, types: impl Fn(u32) -> bool) -> Replay {
        let text = std::fs::read_to_string(prv).expect("read the trace");
        let mut replay = Replay::default();
        let mut stacks: BTreeMap<(u64, u64, u32), usize> = BTreeMap::new();
        for line in text.lines().skip(1) {
            let fields: Vec<i64> = line.split(':').map(|f| f.parse().unwrap()).collect();
            if fields[0] != 2 {
                continue;
            }
            let (task, thread, time) = (fields[3] as u64, fields[4] as u64, fields[5]);
            for pair in fields[6..].chunks(2) {
                let (ty, value) = (pair[0] as u32, pair[1]);
                if types(ty) {
                    replay.event(&mut stacks, (task, thread, ty), time, value);
                }
            }
        }
        for ((_, _, ty), open) in stacks {
            *replay.left_open.entry(ty).or_default() += open as u64;
        }
        replay
    }

    fn event(
        &mut self,
        stacks: &mut BTreeMap<(u64, u64, u32), usize>,
        key: (u64, u64, u32),
        time: i64,
        value: i64,
    ) {
        let ty = key.2;
        self.last_time.insert(ty, time);
        let depth = stacks.entry(key).or_default();
        if value == 0 {
            match depth.checked_sub(1) {
                Some(d) => *depth = d,
                None => *self.unmatched_ends.entry(ty).or_default() += 1,
            }
            return;
        }
        *depth += 1;
        let deepest = self.depth.entry(ty).or_default();
        *deepest = (*deepest).max(*depth);
        *self.begins.entry((ty, value)).or_default() += 1;
        self.first_begin.entry((ty, value)).or_insert(time);
    }

    fn count(&self, ty: u32, value: i64) -> u64 {
        self.begins.get(&(ty, value)).copied().unwrap_or(0)
    }

    fn count_type(&self, ty: u32) -> u64 {
        self.begins
            .range((ty, i64::MIN)..=(ty, i64::MAX))
            .map(|(_, n)| n)
            .sum()
    }
}

/// The real exports with OpenMP rows (LLVM libomp, GCC-compiled code).
fn openmp_exports() -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(corpus) = corpus_dir() {
        let path = corpus.join("local/omp_llvm_libomp/omp_llvm_libomp.sqlite");
        if path.is_file() {
            found.push(path);
        }
    }
    let sample = workspace_root().join("samples/openmp/openmp.sqlite");
    if sample.is_file() {
        found.push(sample);
    }
    if found.is_empty() {
        missing_tool(
            "an OpenMP export",
            "neither the corpus's nor samples/openmp",
        );
    }
    found
}

/// Row counts and the rows nsys wrote twice, straight from SQLite.
struct OmpSource {
    conn: Connection,
    /// `ANALYSIS_DETAILS.duration`: where nsys ends the ranges it never closed.
    horizon: i64,
}

impl OmpSource {
    fn open(path: &Path) -> OmpSource {
        let conn = Connection::open(path).unwrap();
        let horizon = conn
            .query_row("SELECT duration FROM ANALYSIS_DETAILS", [], |r| r.get(0))
            .unwrap();
        OmpSource { conn, horizon }
    }

    fn has(&self, table: &str) -> bool {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            > 0
    }

    /// Rows of `OPENMP_EVENT_KIND_<table>` matching `filter` (0 when absent).
    /// `table` may carry an alias (`"TASK t"`).
    fn rows(&self, table: &str, filter: &str) -> u64 {
        let table = format!("OPENMP_EVENT_KIND_{table}");
        if !self.has(table.split(' ').next().unwrap()) {
            return 0;
        }
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE {filter}");
        self.conn
            .query_row(&sql, [], |r| r.get::<_, i64>(0))
            .unwrap() as u64
    }

    fn all(&self, table: &str) -> u64 {
        self.rows(table, "1")
    }

    /// Parallel rows that only repeat the end of an open row of the same region.
    fn parallel_leftovers(&self) -> u64 {
        let open = format!("o.end >= {}", self.horizon);
        self.rows(
            "PARALLEL p",
            &format!(
                "p.end < {h} AND EXISTS (SELECT 1 FROM OPENMP_EVENT_KIND_PARALLEL o WHERE {open} \
                 AND o.globalTid = p.globalTid AND o.parallelId = p.parallelId AND o.start <= p.start)",
                h = self.horizon
            ),
        )
    }

    /// Task rows without task flags that end an open task of the same thread.
    fn task_leftovers(&self) -> u64 {
        self.rows(
            "TASK t",
            &format!(
                "t.end < {h} AND (t.kind & 255) = 0 AND EXISTS (SELECT 1 FROM OPENMP_EVENT_KIND_TASK o \
                 WHERE o.end >= {h} AND o.globalTid = t.globalTid AND o.taskId = t.taskId AND o.start <= t.start)",
                h = self.horizon
            ),
        )
    }
}

#[test]
fn every_openmp_row_appears_once_and_regions_nest() {
    for export in openmp_exports() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("omp.prv");
        let result = convert(&[&export], &output, &[]);
        assert!(
            result.status.success(),
            "{}: {}",
            export.display(),
            String::from_utf8_lossy(&result.stderr)
        );
        let stats = check_trace(&output);
        let replay = Replay::of(&output, |ty| (60_000..60_200).contains(&ty));
        let src = OmpSource::open(&export);
        let name = export.display();

        let parallel_merged = src.parallel_leftovers();
        let task_merged = src.task_leftovers();
        assert!(
            parallel_merged > 0 && task_merged > 0,
            "{name}: the exports have nsys's open rows"
        );
        assert_eq!(
            replay.count(OMP_PARALLEL, 1),
            src.all("PARALLEL") - parallel_merged,
            "{name}: parallel regions"
        );
        let implicit = src.rows("TASK", "(kind & 3) != 0 OR (kind & 255) = 0");
        assert_eq!(
            replay.count(OMP_PARALLEL, 2),
            implicit - task_merged,
            "{name}: implicit tasks"
        );
        assert_eq!(
            replay.count(OMP_TASKING, 47),
            src.rows("TASK", "(kind & 28) != 0"),
            "{name}: explicit task executions"
        );
        assert_eq!(
            replay.count(OMP_TASKING, 46),
            src.all("TASK_CREATE"),
            "{name}: task creations"
        );
        assert_eq!(
            replay.count_type(OMP_WORKSHARING),
            src.all("WORKSHARE") + src.all("MASTER") + src.all("DISPATCH"),
            "{name}: work-sharing"
        );
        assert_eq!(
            replay.count_type(OMP_SYNCHRONIZATION),
            [
                "SYNC_REGION",
                "SYNC_REGION_WAIT",
                "REDUCTION",
                "MUTEX_WAIT",
                "CRITICAL_SECTION"
            ]
            .iter()
            .map(|t| src.all(t))
            .sum::<u64>(),
            "{name}: synchronization"
        );
        assert_eq!(
            replay.count(OMP_SYNCHRONIZATION, 34),
            src.rows("SYNC_REGION", "kind = 5"),
            "{name}: taskwaits"
        );
        assert_eq!(
            replay.count(OMP_SYNCHRONIZATION, 30),
            src.rows("MUTEX_WAIT", "kind = 5") + src.rows("CRITICAL_SECTION", "kind = 5"),
            "{name}: critical sections"
        );
        assert_eq!(
            replay.count(OMP_LOCK_STATUS, 37),
            src.all("MUTEX_WAIT"),
            "{name}: waits"
        );
        assert_eq!(
            replay.count(OMP_LOCK_STATUS, 38),
            src.all("CRITICAL_SECTION"),
            "{name}: held"
        );
        assert_eq!(
            replay.count(OMP_LOCK_STATUS, 39),
            src.all("MUTEX_RELEASED"),
            "{name}: releases"
        );
        assert_eq!(
            replay.count_type(OMP_RUNTIME_EVENT),
            [
                "TASK_SCHEDULE",
                "CANCEL",
                "LOCK_INIT",
                "LOCK_DESTROY",
                "FLUSH"
            ]
            .iter()
            .map(|t| src.all(t))
            .sum::<u64>(),
            "{name}: runtime events"
        );
        assert_eq!(
            replay.count_type(OMP_THREAD_TYPE),
            src.all("THREAD"),
            "{name}: threads"
        );

        assert!(
            replay.unmatched_ends.is_empty(),
            "{name}: ends without begins {:?}",
            replay.unmatched_ends
        );
        assert!(
            replay.left_open.values().all(|&n| n == 0),
            "{name}: left open {:?}",
            replay.left_open
        );
        assert!(
            replay.depth[&OMP_PARALLEL] >= 2,
            "{name}: implicit tasks nest in their parallel region"
        );
        assert!(
            replay.depth[&OMP_SYNCHRONIZATION] >= 1,
            "{name}: synchronization"
        );

        // The trace starts at the session start, so trace times are export times
        // (checked on the first parallel region): no OpenMP range may still reach
        // the end of the analysis, where nsys ends the ranges it left open.
        let first_parallel: i64 = src
            .conn
            .query_row(
                "SELECT MIN(start) FROM OPENMP_EVENT_KIND_PARALLEL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            replay.first_begin[&(OMP_PARALLEL, 1)],
            first_parallel,
            "{name}: time origin"
        );
        for (ty, last) in &replay.last_time {
            assert!(
                *last < src.horizon,
                "{name}: type {ty} still reaches the analysis end"
            );
        }

        for s in [1, 5, 7] {
            assert!(
                stats.state_time.get(&s).copied().unwrap_or(0) > 0,
                "{name}: state {s}"
            );
        }
    }
}

#[test]
fn openmp_category_alone_keeps_every_row() {
    let Some(export) = openmp_exports().into_iter().next() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("omp_only.prv");
    let result = convert(&[&export], &output, &["-t", "openmp"]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&output);
    let src = OmpSource::open(&export);
    let total: u64 = ["PARALLEL", "TASK", "SYNC_REGION", "WORKSHARE", "MUTEX_WAIT"]
        .iter()
        .map(|t| src.all(t))
        .sum();
    let shown: u64 = [
        OMP_PARALLEL,
        OMP_TASKING,
        OMP_SYNCHRONIZATION,
        OMP_WORKSHARING,
    ]
    .iter()
    .map(|&ty| begins(&stats, ty))
    .sum::<u64>()
        - src.all("TASK_CREATE")
        - src.all("CRITICAL_SECTION");
    assert_eq!(
        shown,
        total - src.parallel_leftovers() - src.task_leftovers(),
        "every row of the main tables, once (merged leftovers aside)"
    );
    let pcf = std::fs::read_to_string(output.with_extension("pcf")).unwrap();
    for label in [
        "OpenMP Parallel",
        "PARALLEL REGION Fork/Join",
        "TASK execution",
        "JOIN (wait)",
    ] {
        assert!(pcf.contains(label), "pcf lacks {label}");
    }
}

// ---------------------------------------------------------------------------
// OpenACC: no real export has rows, so a small one is built
// (`end_to_end::fixtures::openacc_export`).

#[test]
fn openacc_rows_become_nsys2prv_types_with_states() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("acc.sqlite");
    openacc_export(&input);
    let output = dir.path().join("acc.prv");
    let result = convert(&[&input], &output, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&output);
    let replay = Replay::of(&output, |ty| ty >= 66_000_000);

    // Kind values are eventKind + 1.
    assert_eq!(replay.count(66_000_000, 10), 1, "compute construct");
    assert_eq!(replay.count(66_000_000, 12), 1, "enter data");
    assert_eq!(replay.count(66_000_000, 8), 1, "wait");
    assert_eq!(replay.count(66_000_001, 14), 1, "create");
    assert_eq!(replay.count(66_000_001, 6), 1, "enqueue upload");
    assert_eq!(replay.count(66_000_001, 7), 1, "enqueue download");
    assert_eq!(replay.count(66_000_002, 5), 1, "enqueue launch");
    assert_eq!(
        replay.count_type(66_100_000),
        3,
        "regions of the other table"
    );
    assert_eq!(
        replay.count_type(66_200_001),
        3,
        "functions of the data table"
    );
    assert_eq!(replay.count(66_300_001, 4096), 2, "bytes");
    assert_eq!(replay.count(66_300_001, 2048), 1, "bytes");
    assert_eq!(replay.count(66_010_002, 128), 1, "gangs");
    assert_eq!(replay.count(66_020_002, 1), 1, "workers");
    assert_eq!(replay.count(66_030_002, 256), 1, "vector length");
    assert_eq!(replay.count_type(66_040_002), 1, "kernel name");
    assert_eq!(replay.count_type(66_040_001), 3, "variable name");
    assert!(replay.unmatched_ends.is_empty() && replay.left_open.values().all(|&n| n == 0));

    let pcf = std::fs::read_to_string(output.with_extension("pcf")).unwrap();
    for label in [
        "OpenACC Launch",
        "Compute construct",
        "Enqueue upload",
        "acc_compute_construct@saxpy.c:12",
        "acc_wait@saxpy.c:14",
        "main_12_gpu",
    ] {
        assert!(pcf.contains(label), "pcf lacks {label}:\n{pcf}");
    }

    // States: the wait 5, the copies 17, the launch 32, the rest 15 (ns).
    let time = |s: u32| stats.state_time.get(&s).copied().unwrap_or(0);
    assert_eq!(time(5), 1000, "wait");
    assert_eq!(time(17), 300 + 400, "upload and download");
    assert_eq!(time(32), 500, "launch");
    assert!(time(15) > 0, "others");
}
