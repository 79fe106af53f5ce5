//! `nsys2prv-rs report RUN1 RUN2 RUN3`: the efficiency model over a strong-scaling
//! series of generated training runs at 2, 4 and 8 ranks (the same 48 rank-steps
//! of work split over more GPUs; the 8-rank run's `flash_fwd_kernel` 30 % slower,
//! so its computational scalability drops by a known amount), checked against
//! SQL on the exports: useful time (the union of each GPU's compute kernels), the
//! computational scalability, strong and weak, and its decomposition from the
//! GPU metric samples taken during useful time; the CSV, the files of --out and
//! the page in Chromium.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use end_to_end::*;
use serde_json::Value;

use crate::diff::{convert_run, training_run, Change};

struct Series {
    dir: PathBuf,
    exports: Vec<Vec<PathBuf>>,
    traces: Vec<PathBuf>,
}

const RANKS: [u32; 3] = [2, 4, 8];

fn series() -> &'static Series {
    static SERIES: OnceLock<Series> = OnceLock::new();
    SERIES.get_or_init(|| {
        // Under the target directory (as the other areas keep theirs), made again each run.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaling");
        let _ = std::fs::remove_dir_all(&dir);
        let mut exports = Vec::new();
        let mut traces = Vec::new();
        for ranks in RANKS {
            let name = format!("run{ranks}");
            let change = Change {
                slower_kernel: ranks == 8,
                ..Change::default()
            };
            let e = training_run(&dir, &name, ranks, u64::from(48 / ranks), change);
            traces.push(convert_run(&dir, &name, &e));
            exports.push(e);
        }
        Series {
            dir,
            exports,
            traces,
        }
    })
}

fn report(args: &[&str], traces: &[PathBuf]) -> std::process::Output {
    binary()
        .arg("report")
        .args(args)
        .args(traces)
        .output()
        .expect("run report")
}

fn runs_json(args: &[&str]) -> Value {
    let s = series();
    let mut all = vec!["--json", "-"];
    all.extend_from_slice(args);
    let out = report(&all, &s.traces);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Compute kernel intervals of an export (one GPU per rank), merged.
fn useful_intervals(export: &Path) -> Vec<(i64, i64)> {
    let db = rusqlite::Connection::open(export).unwrap();
    let mut st = db
        .prepare(
            "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
             ON s.id = k.shortName WHERE s.value NOT LIKE 'nccl%' ORDER BY k.start",
        )
        .unwrap();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for row in st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap() {
        let (b, e): (i64, i64) = row.unwrap();
        match merged.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((b, e)),
        }
    }
    merged
}

fn useful_ns(exports: &[PathBuf]) -> f64 {
    exports
        .iter()
        .map(|e| useful_intervals(e).iter().map(|(b, e)| e - b).sum::<i64>() as f64)
        .sum()
}

/// The mean of a metric's samples taken while a compute kernel ran, over the exports.
fn useful_metric_mean(exports: &[PathBuf], metric: &str) -> f64 {
    let (mut sum, mut n) = (0.0, 0u64);
    for export in exports {
        let intervals = useful_intervals(export);
        let db = rusqlite::Connection::open(export).unwrap();
        let mut st = db
            .prepare(
                "SELECT g.timestamp, g.value FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t
                 ON t.typeId = g.typeId AND t.metricId = g.metricId WHERE t.metricName = ?1",
            )
            .unwrap();
        for row in st
            .query_map([metric], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
        {
            let (t, v): (i64, f64) = row.unwrap();
            let i = intervals.partition_point(|(b, _)| *b <= t);
            if i > 0 && t < intervals[i - 1].1 {
                sum += v;
                n += 1;
            }
        }
    }
    assert!(n > 50, "{metric}: {n} samples in useful time");
    sum / n as f64
}

fn close(got: &Value, expected: f64, tolerance: f64, what: &str) {
    let got = got.as_f64().unwrap_or_else(|| panic!("{what}: {got}"));
    assert!(
        (got - expected).abs() <= tolerance * expected.abs().max(1e-12),
        "{what}: {got} vs {expected}"
    );
}

#[test]
fn the_factors_over_runs_match_the_exports() {
    let s = series();
    let j = runs_json(&[]);
    assert_eq!(j["scaling"], "strong");
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let useful: Vec<f64> = s.exports.iter().map(|e| useful_ns(e)).collect();
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run["gpus"].as_u64(), Some(u64::from(RANKS[i])));
        close(&run["useful_ns"], useful[i], 1e-9, "useful");
        let cs = useful[0] / useful[i];
        close(&run["computational_scalability"], cs, 1e-9, "CS");
        // The parallel efficiency is the single-run report's (tested against paramedir).
        let single = binary()
            .args(["report", "--json", "-"])
            .arg(&s.traces[i])
            .output()
            .unwrap();
        let single: Value = serde_json::from_slice(&single.stdout).unwrap();
        let pe = single["efficiency"]["parallel_efficiency"]
            .as_f64()
            .unwrap();
        close(&run["parallel_efficiency"], pe, 1e-12, "PE");
        close(&run["global_efficiency"], pe * cs, 1e-9, "global");
        // Decomposition: issue and clock means over useful time, from the samples.
        let issue = useful_metric_mean(&s.exports[i], "SM Issue [Throughput %]") / 100.0;
        let clock = useful_metric_mean(&s.exports[i], "GPC Clock Frequency [MHz]");
        let m = &run["metrics"];
        // The trace keeps percentages x100 as integers: 1e-4 of a fraction.
        assert!(
            (m["issue"].as_f64().unwrap() - issue).abs() < 2e-4,
            "{m} vs {issue}"
        );
        close(&m["clock_mhz"], clock, 1e-3, "clock");
        let product = m["work_scalability"].as_f64().unwrap()
            * m["issue_scalability"].as_f64().unwrap()
            * m["frequency_scalability"].as_f64().unwrap();
        close(&Value::from(product), cs, 1e-9, "W x I x f = CS");
    }
    // The 8-rank run's slower kernel: its useful time grows, its computational
    // scalability drops below the 4-rank run's (which does the same work).
    let cs = |i: usize| runs[i]["computational_scalability"].as_f64().unwrap();
    assert!((cs(1) - 1.0).abs() < 0.05, "same work on 4 GPUs: {}", cs(1));
    assert!(cs(2) < 0.95 * cs(1), "{} vs {}", cs(2), cs(1));
    // Weak scaling: useful time per GPU.
    let weak = runs_json(&["--weak"]);
    for i in 0..3 {
        let p = f64::from(RANKS[i]) / f64::from(RANKS[0]);
        close(
            &weak["runs"][i]["computational_scalability"],
            useful[0] / useful[i] * p,
            1e-9,
            "weak CS",
        );
    }
}

#[test]
fn the_runs_table_prints_and_writes_its_files() {
    let s = series();
    let out = report(&[], &s.traces);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "Global efficiency",
        "Computational scalability",
        "Work scalability",
        "Frequency scalability",
        "efficiency/",
    ] {
        assert!(text.contains(line), "{line}:\n{text}");
    }
    let dir = s.dir.join("runs");
    let out = report(&["--out", dir.to_str().unwrap()], &s.traces);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "runs.html",
        "runs.json",
        "runs.csv",
        "runs.txt",
        "run-1.html",
        "run-3.html",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("Computational scalability,")),
        "{csv}"
    );
    let page = std::fs::read_to_string(dir.join("runs.html")).unwrap();
    assert!(page.contains("href=\"run-2.html\""));
    assert!(page.contains("class=\"good\"") && page.contains("class=\"poor\""));
    if let Some(png) = crate::report_page::render_in_chromium(&dir.join("runs.html"), "runs") {
        eprintln!("runs page rendered: {}", png.display());
    }
}
