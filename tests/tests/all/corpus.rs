//! Translates every export of the shared corpus (when present): broken files and
//! reports with nothing recorded must fail with one clear line; every other file
//! (CPU-only reports of samples or scheduling included) must translate into a
//! trace that passes the validator and `ptd comprovar`, with as many kernel,
//! memory, API, NVTX, OS runtime and sample events as the export has rows.

use std::collections::HashMap;
use std::path::Path;

use end_to_end::*;

struct Entry {
    relpath: String,
    features: String,
    counts: HashMap<String, u64>,
}

fn manifest(corpus: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).expect("read MANIFEST.tsv");
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let relpath = cols.first()?.to_string();
            if !relpath.ends_with(".sqlite") {
                return None;
            }
            let counts = cols
                .get(7)
                .unwrap_or(&"")
                .split_whitespace()
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect();
            Some(Entry {
                relpath,
                features: cols.get(6).unwrap_or(&"").to_string(),
                counts,
            })
        })
        .collect()
}

/// Manifest counts of the tables the translator reads; an export without rows in
/// any of them has nothing recorded, and must say so.
const TRANSLATED: &[&str] = &[
    "KERNEL", "MEMCPY", "MEMSET", "RUNTIME", "NVTX", "OSRT", "OPENMP", "SCHED", "SAMPLES",
];

/// Rows of the export that `sql` counts (0 when the table is absent).
fn sqlite_count(path: &Path, sql: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .unwrap_or(0)
}

/// Intervals and marks of NVTX in a trace: every type of the NVTX blocks
/// (9600 + 100·k ranges and +4 marks), start/end lanes (9004..), NCCL regions, and
/// the MPI calls that nsys 2022 recorded as the NVTX domain "MPI" (the corpus has
/// no `MPI_*` tables, so every MPI call comes from NVTX).
fn nvtx_items(stats: &paraver_reader::validate::TraceStats) -> u64 {
    let nvtx = |ty: u32| {
        (9004..9100).contains(&ty)
            || ty == 9500
            || ((9600..60000).contains(&ty) && matches!(ty % 100, 0 | 4))
    };
    let mpi: u64 = (50_000_001..=50_000_005).map(|t| begins(stats, t)).sum();
    stats
        .event_begins
        .iter()
        .filter(|(t, _)| nvtx(**t))
        .map(|(_, n)| n)
        .sum::<u64>()
        + mpi
}

#[test]
fn every_corpus_export_translates_or_fails_cleanly() {
    let Some(corpus) = corpus_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (i, entry) in manifest(&corpus).iter().enumerate() {
        let input = corpus.join(&entry.relpath);
        let output = out.path().join(format!("t{i}.prv"));
        // The counts below are of every thread, Nsight's own included.
        let result = convert(&[&input], &output, &["--keep-nsys-threads"]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        let count = |k: &str| entry.counts.get(k).copied().unwrap_or(0);
        let translatable = TRANSLATED.iter().any(|t| count(t) > 0);
        if entry.relpath.starts_with("broken/") || !translatable {
            assert_eq!(result.status.code(), Some(1), "{}: {stderr}", entry.relpath);
            assert_eq!(
                stderr.lines().count(),
                1,
                "{}: one line expected: {stderr}",
                entry.relpath
            );
            assert!(
                stderr.starts_with("error: ") && stderr.contains(&input.display().to_string()),
                "{}: {stderr}",
                entry.relpath
            );
            assert!(!output.exists(), "{}: no output on failure", entry.relpath);
            assert!(
                entry.relpath.starts_with("broken/") || stderr.contains("nothing was recorded"),
                "{}: {stderr}",
                entry.relpath
            );
            continue;
        }
        assert!(
            result.status.success(),
            "{} ({}): {stderr}",
            entry.relpath,
            entry.features
        );
        let stats = check_trace(&output);
        assert_eq!(
            begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
            count("KERNEL"),
            "{}: kernels",
            entry.relpath
        );
        assert_eq!(
            begins(&stats, 63_000_001),
            count("MEMCPY") + count("MEMSET"),
            "{}: memory ops",
            entry.relpath
        );
        assert_eq!(
            begins(&stats, 63_000_000),
            count("RUNTIME"),
            "{}: API calls",
            entry.relpath
        );
        let nvtx = sqlite_count(
            &input,
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60, 70, 71)",
        );
        assert_eq!(
            nvtx_items(&stats),
            nvtx,
            "{}: NVTX ranges and marks",
            entry.relpath
        );
        let osrt = sqlite_count(
            &input,
            "SELECT COUNT(*) FROM OSRT_API WHERE eventClass = 27",
        );
        assert_eq!(
            begins(&stats, 66_400_000),
            osrt,
            "{}: OS runtime calls",
            entry.relpath
        );
        assert_eq!(
            begins(&stats, 30_000_000),
            count("SAMPLES"),
            "{}: CPU samples",
            entry.relpath
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} corpus exports translated");
}
