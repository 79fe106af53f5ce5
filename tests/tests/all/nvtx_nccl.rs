//! NVTX and NCCL: every range and mark of real exports appears once, push/pop
//! nesting survives (replayed per thread and type from the trace), overlapping
//! start/end ranges get lanes, and NCCL payloads reach the kernels they launched.

use std::collections::HashMap;
use std::path::Path;

use end_to_end::fixtures::add_nccl_ranges;
use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthSpec};

/// NVTX range and mark types: default domain block, named domain blocks, lanes.
fn is_nvtx_range_type(ty: u32) -> bool {
    (9004..9100).contains(&ty)
        || ((9600..60000).contains(&ty) && ty.is_multiple_of(100))
        || ty == 9500
}

fn is_nvtx_mark_type(ty: u32) -> bool {
    (9600..60000).contains(&ty) && ty % 100 == 4
}

fn sqlite_count(path: &Path, sql: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// Replays the `.prv` per (thread, type): a non-zero value opens a level, a zero
/// closes one. Panics if a close has no open level or a level stays open.
fn replay_nesting(prv: &Path) {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut depth: HashMap<(String, u32), i64> = HashMap::new();
    for line in text.lines().filter(|l| l.starts_with("2:")) {
        let f: Vec<&str> = line.split(':').collect();
        let thread = f[1..5].join(":");
        for pair in f[6..].chunks(2) {
            let ty: u32 = pair[0].parse().unwrap();
            if !is_nvtx_range_type(ty) {
                continue;
            }
            let d = depth.entry((thread.clone(), ty)).or_default();
            *d += if pair[1] == "0" { -1 } else { 1 };
            assert!(
                *d >= 0,
                "{}: close without open on {thread} type {ty}: {line}",
                prv.display()
            );
        }
    }
    for ((thread, ty), d) in depth {
        assert_eq!(
            d,
            0,
            "{}: {d} ranges left open on {thread} type {ty}",
            prv.display()
        );
    }
}

#[test]
fn real_nvtx_exports_keep_every_range_and_their_nesting() {
    let Some(corpus) = corpus_dir() else { return };
    let files = [
        "local/nvtx_pthreads/nvtx_pthreads.sqlite",
        "local/mpi_per_rank/rank0.sqlite",
        "local/mpi_whole_mpirun/mpi_whole_mpirun.sqlite",
        "local/oshmem_ucx_whole/oshmem_ucx_whole.sqlite",
        "local/omp_llvm_libomp/omp_llvm_libomp.sqlite",
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, rel) in files.iter().enumerate() {
        let input = corpus.join(rel);
        let out = dir.path().join(format!("n{i}.prv"));
        let result = convert(&[&input], &out, &["-t", "nvtx,nccl"]);
        assert!(
            result.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let stats = check_trace(&out);
        let ranges: u64 = stats
            .event_begins
            .iter()
            .filter(|(t, _)| is_nvtx_range_type(**t))
            .map(|(_, n)| n)
            .sum();
        let marks: u64 = stats
            .event_begins
            .iter()
            .filter(|(t, _)| is_nvtx_mark_type(**t))
            .map(|(_, n)| n)
            .sum();
        let expected_ranges = sqlite_count(
            &input,
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)",
        );
        let expected_marks = sqlite_count(
            &input,
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 34",
        );
        assert_eq!(ranges, expected_ranges, "{rel}: ranges");
        assert_eq!(marks, expected_marks, "{rel}: marks");
        replay_nesting(&out);
    }
}

#[test]
fn nvtx_names_domains_and_threads_are_labelled() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.prv");
    let input = corpus.join("local/nvtx_pthreads/nvtx_pthreads.sqlite");
    assert!(convert(&[&input], &out, &["-t", "nvtx"]).status.success());
    let pcf = std::fs::read_to_string(out.with_extension("pcf")).unwrap();
    for label in [
        "NVTX push/pop ranges (default domain)",
        "NVTX push/pop ranges (domain Compute Domain)",
        "NVTX push/pop ranges (domain IO-Domain)",
        "NVTX start/end ranges (lane 2)",
        "critical-section (registered)",
        "NVTX category (domain Compute Domain)",
        "CompA",
    ] {
        assert!(pcf.contains(label), "missing '{label}' in the pcf");
    }
    let row = std::fs::read_to_string(out.with_extension("row")).unwrap();
    assert!(
        row.contains("Main Thread (") && row.contains("NVTX Worker 0 ("),
        "{row}"
    );
}

#[test]
fn nccl_ranges_and_payloads_reach_their_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("nccl.sqlite");
    let counts = write_export(&SynthSpec::small(SchemaVersion::V3_24), &input).unwrap();
    let launches = add_nccl_ranges(&input);
    assert!(launches > 0 && counts.kernels > launches);
    let out = dir.path().join("nccl.prv");
    let result = convert(&[&input], &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&out);
    assert_eq!(begins(&stats, 9500), launches, "NCCL regions");
    // Each range's size appears on the range and on the kernel it launched.
    assert_eq!(begins(&stats, 9501), 2 * launches, "message sizes");
    assert_eq!(begins(&stats, 9502), 2 * launches, "reduction ops");
    assert_eq!(begins(&stats, 63_000_007), launches, "NCCL kernels");
    assert_eq!(
        begins(&stats, 9520),
        launches,
        "collective parsed from each NCCL kernel name"
    );
    let pcf = std::fs::read_to_string(out.with_extension("pcf")).unwrap();
    assert!(pcf.contains("NCCL regions") && pcf.contains("float32") && pcf.contains("AllReduce"));
    replay_nesting(&out);
}

/// Marks of the NCCL domain have a label (they had none: `Event type N`) and are
/// points in a cut, never repeated at its start.
#[test]
fn nccl_domain_marks_are_labelled_points() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("nccl.sqlite");
    write_export(&SynthSpec::small(SchemaVersion::V3_24), &input).unwrap();
    add_nccl_ranges(&input);
    let conn = rusqlite::Connection::open(&input).unwrap();
    let (tid, first, last): (i64, i64, i64) = conn
        .query_row(
            "SELECT globalTid, MIN(start), MAX(end) FROM NVTX_EVENTS WHERE eventType = 59",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    conn.execute(
        "INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (?1, 34, 'nccl mark', ?2, 7)",
        [first, tid],
    )
    .unwrap();
    drop(conn);
    let out = dir.path().join("marks.prv");
    let result = convert(&[&input], &out, &["-t", "nccl"]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&out);
    let marks: Vec<u32> = stats
        .event_begins
        .keys()
        .copied()
        .filter(|&t| is_nvtx_mark_type(t))
        .collect();
    assert_eq!(marks.len(), 1, "{:?}", stats.event_begins);
    let pcf = std::fs::read_to_string(out.with_extension("pcf")).unwrap();
    assert!(pcf.contains("NVTX marks (domain NCCL)"), "{pcf}");

    // A cut after the mark does not repeat it at its start.
    let cut = dir.path().join("cut.prv");
    let mark_time_in = |prv: &Path| -> i64 {
        let text = std::fs::read_to_string(prv).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(&format!(":{}:", marks[0])))
            .unwrap();
        line.split(':').nth(5).unwrap().parse().unwrap()
    };
    let mark_time = mark_time_in(&out);
    let window = format!("{}ns:{}ns", mark_time + 1, mark_time + 1 + (last - first));
    let result = convert(&[&input], &cut, &["-t", "nccl", "--time-window", &window]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&cut);
    assert_eq!(
        stats.event_begins.get(&marks[0]),
        None,
        "{:?}",
        stats.event_begins
    );
}
