//! Multi-report merge: tasks in rank order, MPI calls with Extrae's numbering,
//! `--sync mpi-init` lining up the MPI_Init ends, and (with `MPI_*` tables) every
//! send paired with its receive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use end_to_end::*;

const MPI_OTHER: u32 = 50_000_003;
const MPI_INIT: i64 = 31;

/// Task labels of the `.row`, in order.
fn task_names(prv: &Path) -> Vec<String> {
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let mut lines = row.lines().skip_while(|l| !l.starts_with("LEVEL TASK"));
    let n: usize = lines
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    lines.take(n).map(str::to_string).collect()
}

/// Per task: the time MPI_Init ended (the first end of type 50000003 after a
/// begin with value 31 on that task's threads).
fn mpi_init_ends(prv: &Path) -> BTreeMap<u32, u64> {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut open: BTreeMap<(u32, u32), bool> = BTreeMap::new();
    let mut ends = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("2:")) {
        let f: Vec<&str> = line.split(':').collect();
        let (task, thread): (u32, u32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let time: u64 = f[5].parse().unwrap();
        for pair in f[6..].chunks(2) {
            if pair[0].parse::<u32>().unwrap() != MPI_OTHER {
                continue;
            }
            let value: i64 = pair[1].parse().unwrap();
            if value == MPI_INIT {
                open.insert((task, thread), true);
            } else if value == 0 && open.remove(&(task, thread)).is_some() {
                ends.entry(task).or_insert(time);
            }
        }
    }
    ends
}

fn corpus_files(corpus: &Path, dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    files
}

#[test]
fn per_rank_reports_become_tasks_in_rank_order_with_mpi_calls() {
    let Some(corpus) = corpus_dir() else { return };
    let mut inputs = corpus_files(&corpus, "local/mpi_per_rank");
    inputs.reverse();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ranks.prv");
    let result = convert(&refs, &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&out);
    let names = task_names(&out);
    for (rank, name) in names.iter().enumerate() {
        assert!(name.starts_with(&format!("rank {rank} (")), "{names:?}");
    }
    let mpi: u64 = (50_000_001..=50_000_005).map(|t| begins(&stats, t)).sum();
    let expected: u64 = inputs
        .iter()
        .map(|p| {
            let conn = rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            conn.query_row(
                "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN NVTX_EVENTS d ON d.eventType = 75 AND d.text = 'MPI'
                 AND d.domainId = e.domainId WHERE e.eventType = 59",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as u64
        })
        .sum();
    assert_eq!(
        mpi, expected,
        "every MPI range of the NVTX MPI domain is an MPI call"
    );
    let pcf = std::fs::read_to_string(out.with_extension("pcf")).unwrap();
    assert!(pcf.contains("MPI Collective Comm") && pcf.contains("10     MPI_Allreduce"));
}

#[test]
fn sync_mpi_init_lines_up_the_ends_of_mpi_init() {
    let Some(corpus) = corpus_dir() else { return };
    let inputs = corpus_files(&corpus, "local/mpi_per_rank");
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let dir = tempfile::tempdir().unwrap();
    let (plain, synced) = (dir.path().join("plain.prv"), dir.path().join("synced.prv"));
    assert!(convert(&refs, &plain, &[]).status.success());
    let result = binary()
        .args(["--sync", "mpi-init"])
        .args(&refs)
        .arg(&synced)
        .output()
        .unwrap();
    assert!(result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("clock alignment on the end of MPI_Init: skew found"),
        "{stderr}"
    );
    check_trace(&synced);
    let before = mpi_init_ends(&plain);
    let after = mpi_init_ends(&synced);
    assert_eq!(after.len(), 4);
    let spread = |m: &BTreeMap<u32, u64>| m.values().max().unwrap() - m.values().min().unwrap();
    assert!(
        spread(&before) > 0,
        "the reports' MPI_Init ends differ before alignment"
    );
    assert_eq!(spread(&after), 0, "aligned: {after:?}");
}

#[test]
fn whole_mpirun_report_puts_ranks_first_and_the_launcher_last() {
    let Some(corpus) = corpus_dir() else { return };
    let input = corpus.join("local/mpi_whole_mpirun/mpi_whole_mpirun.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("whole.prv");
    assert!(convert(&[&input], &out, &[]).status.success());
    check_trace(&out);
    let names = task_names(&out);
    assert_eq!(names.len(), 5);
    for (rank, name) in names.iter().take(4).enumerate() {
        assert!(name.starts_with(&format!("rank {rank} (")), "{names:?}");
    }
    assert!(names[4].starts_with("mpirun ("), "{names:?}");
}

/// A synthetic MPI job: `n` ranks on two hosts with colliding pids, rank r's
/// recorded clock off by `skew(r)`.
fn synthetic_job(
    dir: &Path,
    schema: nsys_synth::SchemaVersion,
    pattern: nsys_synth::MpiPattern,
    n: u32,
    skew: impl Fn(u32) -> i64,
) -> (Vec<PathBuf>, u64) {
    let job_start = nsys_synth::SynthSpec::small(schema).utc_epoch_ns;
    let mut messages = 0;
    let files = (0..n)
        .map(|rank| {
            let mut spec = nsys_synth::SynthSpec::small(schema);
            spec.hostname = format!("node{:02}", rank % 2 + 1);
            spec.utc_epoch_ns = job_start + i64::from(rank) * 3_700;
            spec.seed = u64::from(rank) + 7;
            spec.processes[0].pid = 5000 + rank / 2;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            let mut mpi = nsys_synth::SynthMpi::new(rank, n, pattern, job_start);
            mpi.clock_skew_ns = skew(rank);
            spec.mpi = Some(mpi);
            let path = dir.join(format!("job_rank{rank}.sqlite"));
            messages += nsys_synth::write_export(&spec, &path).unwrap().mpi_messages;
            path
        })
        .collect();
    (files, messages)
}

fn comms_with_tags(
    stats: &paraver_reader::validate::TraceStats,
    tags: std::ops::Range<i64>,
) -> u64 {
    stats
        .comm_tags
        .iter()
        .filter(|(t, _)| tags.contains(t))
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn every_send_finds_its_receive_across_reports() {
    use nsys_synth::{MpiPattern, SchemaVersion};
    let dir = tempfile::tempdir().unwrap();
    for (schema, pattern, tags) in [
        (SchemaVersion::V3_24, MpiPattern::Ring, 100..116),
        (SchemaVersion::V3_16, MpiPattern::NonBlocking, 200..202),
    ] {
        let (inputs, messages) = synthetic_job(dir.path(), schema, pattern, 4, |_| 0);
        assert!(messages > 0);
        let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let out = dir.path().join(format!("{pattern}.prv"));
        let result = convert(&refs, &out, &[]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(result.status.success(), "{stderr}");
        assert!(!stderr.contains("no partner"), "{stderr}");
        let stats = check_trace(&out);
        assert_eq!(
            comms_with_tags(&stats, tags),
            messages,
            "{pattern}: every message paired"
        );
        assert_eq!((stats.nodes, stats.tasks), (2, 4));
        let names = task_names(&out);
        for (rank, name) in names.iter().enumerate() {
            assert!(
                name.starts_with(&format!("rank {rank} (node0{}:", rank % 2 + 1)),
                "{names:?}"
            );
        }
        for f in inputs {
            std::fs::remove_file(f).unwrap();
        }
    }
}

#[test]
fn skewed_clocks_are_detected_and_sync_removes_the_skew() {
    use nsys_synth::{MpiPattern, SchemaVersion};
    let dir = tempfile::tempdir().unwrap();
    let skew = |rank: u32| (i64::from(rank % 3) - 1) * 200_000;
    let (inputs, _) = synthetic_job(dir.path(), SchemaVersion::V3_24, MpiPattern::Ring, 4, skew);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();

    let plain = dir.path().join("plain.prv");
    let result = binary().args(&refs).arg(&plain).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success());
    assert!(stderr.contains("arrive before they were sent"), "{stderr}");

    let synced = dir.path().join("synced.prv");
    let result = binary()
        .args(["--sync", "mpi-init"])
        .args(&refs)
        .arg(&synced)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success());
    assert!(!stderr.contains("arrive before they were sent"), "{stderr}");
    assert!(stderr.contains("skew found 400.000 us"), "{stderr}");
    assert!(
        stderr.contains("residual at the last barrier 0.000 us"),
        "{stderr}"
    );
    check_trace(&synced);
    let ends = mpi_init_ends(&synced);
    assert_eq!(ends.len(), 4);
    assert_eq!(ends.values().max(), ends.values().min(), "{ends:?}");
}

#[test]
fn nvtx_era_mpi_ranks_come_from_thread_names() {
    use nsys_synth::{MpiPattern, SchemaVersion};
    let dir = tempfile::tempdir().unwrap();
    let (mut inputs, _) =
        synthetic_job(dir.path(), SchemaVersion::V3_0, MpiPattern::Ring, 3, |_| 0);
    // Names that hide the rank: only the "MPI Rank N" thread names tell it.
    for (i, p) in inputs.iter_mut().enumerate() {
        let renamed = dir.path().join(format!("x{}.sqlite", [7, 3, 5][i]));
        std::fs::rename(&*p, &renamed).unwrap();
        *p = renamed;
    }
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let out = dir.path().join("nvtx_era.prv");
    assert!(convert(&refs, &out, &[]).status.success());
    let stats = check_trace(&out);
    let names = task_names(&out);
    for (rank, name) in names.iter().enumerate() {
        assert!(name.starts_with(&format!("rank {rank} (")), "{names:?}");
    }
    assert!(
        begins(&stats, 50_000_002) > 0,
        "collectives from the NVTX MPI domain"
    );
}

/// The project's own recorded MPI sets (nsys 2022.4, one report per rank).
#[test]
fn recorded_sample_jobs_translate_in_rank_order() {
    let samples = workspace_root().join("samples");
    for (set, ranks) in [("mpi_2ranks", 2), ("mpi_3ranks", 3)] {
        let inputs = corpus_files(&samples, set);
        assert_eq!(inputs.len(), ranks, "{set}");
        let refs: Vec<&Path> = inputs.iter().rev().map(PathBuf::as_path).collect();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(format!("{set}.prv"));
        let result = binary()
            .args(["--sync", "barrier"])
            .args(&refs)
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            result.status.success(),
            "{set}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let stats = check_trace(&out);
        let names = task_names(&out);
        assert_eq!(names.len(), ranks, "{set}: {names:?}");
        for (rank, name) in names.iter().enumerate() {
            assert!(
                name.starts_with(&format!("rank {rank} (")),
                "{set}: {names:?}"
            );
        }
        assert!(
            begins(&stats, 50_000_001) + begins(&stats, 50_000_002) > 0,
            "{set}"
        );
    }
}
