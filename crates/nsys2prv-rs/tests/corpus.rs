//! Translates every export of the shared corpus (when present): broken files and
//! reports without translatable events must fail with one clear line; every other
//! file must translate into a trace that passes the validator and `ptd comprovar`,
//! with as many kernel, memory and API intervals as the export has rows.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::*;

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

/// Tables this version of the translator reads; an export without rows in any of
/// them has nothing to translate.
const TRANSLATED: &[&str] = &["KERNEL", "MEMCPY", "MEMSET", "RUNTIME"];

#[test]
fn every_corpus_export_translates_or_fails_cleanly() {
    let Some(corpus) = corpus_dir() else { return };
    let out = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (i, entry) in manifest(&corpus).iter().enumerate() {
        let input = corpus.join(&entry.relpath);
        let output = out.path().join(format!("t{i}.prv"));
        let result = convert(&[&input], &output, &[]);
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
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} corpus exports translated");
}
