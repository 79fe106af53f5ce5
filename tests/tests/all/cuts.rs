//! `--time-window` and `--nvtx-range`: cut traces validate, hold only what lies in
//! the cut (every record inside is the uncut trace's record, shifted), re-open at
//! the start what straddles it, and close at the end what is still open.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use end_to_end::*;

/// A record line: kind, `cpu:appl:task:thread`, times and the rest.
#[derive(Clone, Debug)]
struct Line {
    kind: u8,
    thread: String,
    time: i64,
    fields: Vec<i64>,
}

fn read_trace(prv: &Path) -> (i64, Vec<Line>) {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let end: i64 = header
        .split("):")
        .nth(1)
        .unwrap()
        .split("_ns")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let records = lines
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('c'))
        .map(|l| {
            let f: Vec<i64> = l.split(':').map(|x| x.parse().unwrap()).collect();
            Line {
                kind: f[0] as u8,
                thread: format!("{}:{}:{}", f[2], f[3], f[4]),
                time: f[5],
                fields: f,
            }
        })
        .collect();
    (end, records)
}

/// The line with every time moved by `shift` (the uncut trace's line).
fn shifted(line: &Line, shift: i64) -> String {
    let mut f = line.fields.clone();
    let times: &[usize] = match line.kind {
        1 => &[5, 6],
        2 => &[5],
        _ => &[5, 6, 11, 12],
    };
    for &i in times {
        f[i] += shift;
    }
    f.iter().map(i64::to_string).collect::<Vec<_>>().join(":")
}

fn text_of(line: &Line) -> String {
    line.fields
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(":")
}

/// Intervals of `ty` per thread (begin, end), replayed with nesting.
fn intervals(records: &[Line], ty: i64) -> Vec<(String, i64, i64)> {
    let mut open: HashMap<String, Vec<i64>> = HashMap::new();
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.kind == 2) {
        for pair in r.fields[6..].chunks(2) {
            if pair[0] != ty {
                continue;
            }
            let stack = open.entry(r.thread.clone()).or_default();
            if pair[1] != 0 {
                stack.push(r.time);
            } else {
                let begin = stack.pop().expect("an end without a begin");
                out.push((r.thread.clone(), begin, r.time));
            }
        }
    }
    assert!(
        open.values().all(Vec::is_empty),
        "type {ty}: intervals left open"
    );
    out
}

/// Checks a cut `[start, start + len]` of `full` against it.
fn check_cut(full: &Path, cut: &Path, start: i64) {
    check_trace(cut);
    let (_, all) = read_trace(full);
    let (len, part) = read_trace(cut);
    assert!(!part.is_empty());
    let uncut: HashSet<String> = all.iter().map(text_of).collect();
    for line in &part {
        let edge = line.time == 0 || (line.kind == 2 && line.time == len);
        let clipped = line.kind == 1 && line.fields[6] == len;
        if !edge && !clipped {
            let original = shifted(line, start);
            assert!(
                uncut.contains(&original),
                "{}: not in the uncut trace: {original}",
                text_of(line)
            );
        }
    }
    // Intervals: every one overlapping the window, clipped to it, and no other.
    for ty in [63_000_000, 63_000_006, 63_000_007, 63_000_001, 9600] {
        let mut expected: Vec<(String, i64, i64)> = intervals(&all, ty)
            .into_iter()
            .filter(|(_, b, e)| *b < start + len && *e > start)
            .map(|(t, b, e)| (t, (b - start).max(0), (e - start).min(len)))
            .collect();
        let mut got = intervals(&part, ty);
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "type {ty}");
    }
    // States: the uncut states clipped to the window.
    let clip_states = |records: &[Line], shift: i64| -> Vec<(String, i64, i64, i64)> {
        let mut v: Vec<_> = records
            .iter()
            .filter(|r| r.kind == 1)
            .map(|r| {
                (
                    r.thread.clone(),
                    (r.fields[5] - shift).max(0),
                    (r.fields[6] - shift).min(len),
                    r.fields[7],
                )
            })
            .filter(|(_, b, e, _)| b < e)
            .collect();
        v.sort();
        v
    };
    assert_eq!(clip_states(&part, 0), clip_states(&all, start));
    // Communications: those wholly inside.
    let comms = |records: &[Line], shift: i64| -> Vec<String> {
        let mut v: Vec<String> = records
            .iter()
            .filter(|r| r.kind == 3)
            .filter(|r| {
                [5, 6, 11, 12]
                    .iter()
                    .all(|&i| (0..=len).contains(&(r.fields[i] - shift)))
            })
            .map(|r| shifted(r, -shift))
            .collect();
        v.sort();
        v
    };
    assert_eq!(comms(&part, 0), comms(&all, start));
}

#[test]
fn a_time_window_cuts_every_category() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let full = dir.path().join("full.prv");
    let result = convert(&[&input], &full, &[]);
    assert!(result.status.success());
    let (end, records) = read_trace(&full);
    let first = records.iter().map(|r| r.time).min().unwrap();
    // A window in the middle of the activity.
    let start = first + (end - first) / 3;
    let stop = first + 2 * (end - first) / 3;
    let cut = dir.path().join("cut.prv");
    let window = format!("{start}ns:{stop}ns");
    let result = convert(&[&input], &cut, &["--time-window", &window]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let (len, _) = read_trace(&cut);
    assert_eq!(len, stop - start);
    check_cut(&full, &cut, start);

    // Spilled runs cut the same, byte for byte.
    let spilled = dir.path().join("spilled.prv");
    let args = ["--time-window", &window, "--memory-limit", "64K", "-j", "1"];
    let result = convert(&[&input], &spilled, &args);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let body = |p: &Path| {
        let text = std::fs::read_to_string(p).unwrap();
        text.lines().skip(1).map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(body(&spilled), body(&cut));

    // In microseconds, open-ended, gzip.
    let gz = dir.path().join("tail.prv.gz");
    let window = format!("{}us:", start / 1000);
    let result = convert(&[&input], &gz, &["--time-window", &window]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    check_trace(&gz);
}

#[test]
fn an_empty_or_bad_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let out = dir.path().join("x.prv");
    // The trace's records start after 200 ms: nothing happens in the first 100.
    let result = convert(&[&input], &out, &["--time-window", ":100ms"]);
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("nothing happens in the cut"), "{stderr}");
    assert!(!out.exists());
    let result = convert(&[&input], &out, &["--time-window", "5s:10s"]);
    assert_eq!(result.status.code(), Some(1));
    let result = convert(&[&input], &out, &["--time-window", "2s:1s"]);
    assert_eq!(result.status.code(), Some(2));
    let result = convert(
        &[&input],
        &out,
        &["--time-window", "0:1s", "--nvtx-range", "x"],
    );
    assert_eq!(result.status.code(), Some(2));
}

/// Begins and ends of the NVTX ranges named `name` per thread, from a trace.
fn ranges_named(prv: &Path, name: &str) -> BTreeMap<String, Vec<(i64, i64)>> {
    let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
    let value: i64 = pcf
        .split("EVENT_TYPE")
        .find(|block| block.contains(" 9600 "))
        .unwrap()
        .lines()
        .find_map(|l| {
            let (v, label) = l.trim().split_once(char::is_whitespace)?;
            (label.trim() == name).then(|| v.parse().ok())?
        })
        .unwrap();
    let (_, records) = read_trace(prv);
    let mut open: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    let mut out: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind == 2) {
        for pair in r.fields[6..].chunks(2).filter(|p| p[0] == 9600) {
            let stack = open.entry(r.thread.clone()).or_default();
            if pair[1] != 0 {
                stack.push((pair[1], r.time));
            } else if let Some((v, begin)) = stack.pop() {
                if v == value {
                    out.entry(r.thread.clone())
                        .or_default()
                        .push((begin, r.time));
                }
            }
        }
    }
    out
}

#[test]
fn an_nvtx_range_cut_keeps_that_range_of_every_thread() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let full = dir.path().join("full.prv");
    assert!(convert(&[&input], &full, &[]).status.success());
    let iterations = ranges_named(&full, "iteration");
    assert_eq!(iterations.len(), 3, "three workers iterate");
    let second: Vec<(i64, i64)> = iterations.values().map(|v| v[1]).collect();
    let start = second.iter().map(|r| r.0).min().unwrap();
    let end = second.iter().map(|r| r.1).max().unwrap();

    let cut = dir.path().join("second.prv");
    let result = convert(&[&input], &cut, &["--nvtx-range", "iteration#2"]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let (len, _) = read_trace(&cut);
    assert_eq!(len, end - start);
    check_cut(&full, &cut, start);
    // The second iteration of the thread that starts first begins at 0; the one
    // that ends last ends at the end.
    let kept = ranges_named(&cut, "iteration");
    assert!(kept.values().flatten().any(|r| r.0 == 0));
    assert!(kept.values().flatten().any(|r| r.1 == len));

    // Without #N: from the first iteration's begin to the last one's end.
    let all = dir.path().join("all.prv");
    let result = convert(&[&input], &all, &["--nvtx-range", "iteration"]);
    assert!(result.status.success());
    let first = iterations.values().flatten().map(|r| r.0).min().unwrap();
    let last = iterations.values().flatten().map(|r| r.1).max().unwrap();
    assert_eq!(read_trace(&all).0, last - first);
    check_cut(&full, &all, first);
}

#[test]
fn unknown_ranges_and_missing_occurrences_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let out = dir.path().join("x.prv");
    let result = convert(&[&input], &out, &["--nvtx-range", "no such range"]);
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("no NVTX range named 'no such range'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("iteration"),
        "known names are listed: {stderr}"
    );
    let result = convert(&[&input], &out, &["--nvtx-range", "iteration#99"]);
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("no thread has 99"), "{stderr}");
    assert!(!out.exists());
}
