//! `nsys2prv-rs diff BASE NEW` on two generated training runs of 4 ranks where NEW
//! has three known changes — `flash_fwd_kernel` 30 % slower, one more NCCL bucket
//! per step, rank 1 straggling (2 ms more data loading per step) — and nothing
//! else (same seeds): the diff must name exactly those, with figures equal to SQL
//! on the exports; the gate's exit status; traces of other tools refused; the
//! page rendered by Chromium.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthProcess, SynthSpec, SynthTraining};
use serde_json::Value;

/// Launch of the generated jobs: 2025-03-01T09:00:00Z.
const JOB_START: i64 = 1_740_819_600_000_000_000;
pub const SLOW_KERNEL: &str = "flash_fwd_kernel";
const STRAGGLER: u32 = 1;

/// What NEW changes.
#[derive(Clone, Copy, Default)]
pub struct Change {
    pub slower_kernel: bool,
    pub extra_bucket: bool,
    pub straggler: bool,
}

/// A data-parallel training run of `ranks` ranks (one GPU each, two per node),
/// `steps` steps, as exports; the same seeds whatever `change` is.
pub fn training_run(
    dir: &Path,
    name: &str,
    ranks: u32,
    steps: u64,
    change: Change,
) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    (0..ranks)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.hostname = format!("node{:02}", rank / 2 + 1);
            spec.utc_epoch_ns = JOB_START + i64::from(rank) * 1_000;
            spec.seed = 7_000_003 + u64::from(rank);
            spec.processes = vec![SynthProcess {
                pid: 40_000 + 101 * rank,
                name: "python3".into(),
                cpu_threads: 2,
                devices: vec![rank % 2],
                streams_per_device: 4,
                kernels: 0,
                memcpys: 0,
                memsets: 0,
                syncs: 0,
                extra_api_calls: 0,
            }];
            spec.env = vec![
                ("SLURM_PROCID".into(), rank.to_string()),
                ("SLURM_NTASKS".into(), ranks.to_string()),
            ];
            spec.device.gpu_metric_samples = 4_000;
            spec.training = Some(SynthTraining {
                steps,
                layers: 2,
                buckets: 2 + u32::from(change.extra_bucket),
                kernel_names: 6,
                slower_kernel: change.slower_kernel.then(|| (SLOW_KERNEL.to_string(), 30)),
                data_load_delay_ns: if change.straggler && rank == STRAGGLER {
                    2_000_000
                } else {
                    0
                },
                ..SynthTraining::new(steps)
            });
            let path = dir.join(format!("{name}_rank{rank}.sqlite"));
            let _ = std::fs::remove_file(&path);
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// Converts `exports` into `dir/NAME.prv`.
pub fn convert_run(dir: &Path, name: &str, exports: &[PathBuf]) -> PathBuf {
    let prv = dir.join(format!("{name}.prv"));
    let inputs: Vec<&Path> = exports.iter().map(PathBuf::as_path).collect();
    let out = convert(&inputs, &prv, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    prv
}

struct Runs {
    dir: PathBuf,
    base_exports: Vec<PathBuf>,
    new_exports: Vec<PathBuf>,
    base: PathBuf,
    new: PathBuf,
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        // Under the target directory (as the other areas keep theirs), made again each run.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("diff");
        let _ = std::fs::remove_dir_all(&dir);
        let base_exports = training_run(&dir, "base", 4, 12, Change::default());
        let new_exports = training_run(
            &dir,
            "new",
            4,
            12,
            Change {
                slower_kernel: true,
                extra_bucket: true,
                straggler: true,
            },
        );
        let base = convert_run(&dir, "base", &base_exports);
        let new = convert_run(&dir, "new", &new_exports);
        Runs {
            dir,
            base_exports,
            new_exports,
            base,
            new,
        }
    })
}

fn diff(args: &[&str]) -> Output {
    binary().arg("diff").args(args).output().expect("run diff")
}

fn json_of(base: &Path, new: &Path) -> Value {
    let out = diff(&["--json", "-", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (count, total ns) of the kernels of `short` (a LIKE pattern) over the exports.
fn sql_kernels(exports: &[PathBuf], pattern: &str) -> (u64, u64) {
    let mut count = 0;
    let mut total = 0;
    for path in exports {
        let db = rusqlite::Connection::open(path).unwrap();
        let (c, t): (i64, Option<i64>) = db
            .query_row(
                "SELECT COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE ?1",
                [pattern],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        count += c as u64;
        total += t.unwrap_or(0) as u64;
    }
    (count, total)
}

/// Durations of the `train_step` ranges of one export, in order.
fn sql_steps(export: &Path) -> Vec<u64> {
    let db = rusqlite::Connection::open(export).unwrap();
    let mut st = db
        .prepare(
            "SELECT n.end - n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
             WHERE COALESCE(n.text, s.value) = 'train_step' ORDER BY n.start",
        )
        .unwrap();
    st.query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|d| d.unwrap() as u64)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let at = 0.5 * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
}

/// The run's iteration time from SQL: per step, the slowest rank's; their median.
fn sql_iteration_time(exports: &[PathBuf]) -> f64 {
    let per_rank: Vec<Vec<u64>> = exports.iter().map(|e| sql_steps(e)).collect();
    let steps = per_rank.iter().map(Vec::len).max().unwrap();
    let slowest: Vec<f64> = (0..steps)
        .map(|k| {
            per_rank
                .iter()
                .filter_map(|r| r.get(k))
                .copied()
                .max()
                .unwrap() as f64
        })
        .collect();
    median(slowest)
}

fn row<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {list:#}"))
}

#[test]
fn diff_names_the_injected_changes_with_the_exports_figures() {
    let r = runs();
    let d = json_of(&r.base, &r.new);
    // The verdict: slower, from the slow kernel and NCCL, rank 1 straggling.
    let verdict = d["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("NEW is slower than BASE by "),
        "{verdict}"
    );
    assert!(verdict.contains("straggling: rank 1"), "{verdict}");
    let top: Vec<(String, String)> = d["contributors"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|c| {
            (
                c["kind"].as_str().unwrap().into(),
                c["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        top.contains(&("kernel".into(), SLOW_KERNEL.into())),
        "{top:?}"
    );
    assert!(
        top.iter()
            .any(|(k, n)| k == "NCCL" && n.contains("AllReduce")),
        "{top:?}"
    );
    assert_eq!(
        d["iterations"]["stragglers"],
        serde_json::json!([STRAGGLER])
    );

    // The measure: the iteration time, as SQL computes it.
    let (b, n) = (
        sql_iteration_time(&r.base_exports),
        sql_iteration_time(&r.new_exports),
    );
    assert_eq!(d["measure"]["what"], "iteration time");
    assert!(
        (d["measure"]["base_ns"].as_f64().unwrap() - b).abs() < 1.0,
        "{} vs {b}",
        d["measure"]
    );
    assert!(
        (d["measure"]["new_ns"].as_f64().unwrap() - n).abs() < 1.0,
        "{} vs {n}",
        d["measure"]
    );
    // Per rank: the median of its steps.
    for (k, (be, ne)) in r.base_exports.iter().zip(&r.new_exports).enumerate() {
        let rank = &d["iterations"]["ranks"][k];
        let bm = median(sql_steps(be).iter().map(|&x| x as f64).collect());
        let nm = median(sql_steps(ne).iter().map(|&x| x as f64).collect());
        assert!((rank["base"]["median_ns"].as_f64().unwrap() - bm).abs() < 1.0);
        assert!((rank["new"]["median_ns"].as_f64().unwrap() - nm).abs() < 1.0);
    }

    // Kernels: counts and totals equal SQL's; the slow one 30 % slower (its
    // durations are drawn as in BASE, then lengthened), the others unchanged
    // in count.
    let kernels = &d["kernels"];
    for name in [
        "flash_fwd_kernel",
        "Kernel2",
        "vectorized_layer_norm_kernel",
    ] {
        let k = row(kernels, name);
        assert_eq!(
            (
                k["base"]["count"].as_u64().unwrap(),
                k["base"]["total_ns"].as_u64().unwrap()
            ),
            sql_kernels(&r.base_exports, name),
            "{name} BASE"
        );
        assert_eq!(
            (
                k["new"]["count"].as_u64().unwrap(),
                k["new"]["total_ns"].as_u64().unwrap()
            ),
            sql_kernels(&r.new_exports, name),
            "{name} NEW"
        );
    }
    let slow = row(kernels, SLOW_KERNEL);
    let change = slow["change"].as_f64().unwrap();
    assert!((0.25..0.35).contains(&change), "{slow:#}");
    assert_eq!(slow["base"]["count"], slow["new"]["count"]);
    // Only the optimizer's kernels follow the extra bucket in count.
    for k in kernels.as_array().unwrap() {
        if k["name"] != "multi_tensor_apply_kernel" {
            assert_eq!(k["base"]["count"], k["new"]["count"], "{k:#}");
        }
        assert!(
            k["base"].is_object() && k["new"].is_object(),
            "no kernel is new or vanished: {k:#}"
        );
    }

    // NCCL: one more all-reduce per step and rank: 12 steps x 4 ranks more.
    let nccl = row(&d["nccl"], "AllReduce");
    let (bc, nc) = (
        nccl["base"]["count"].as_u64().unwrap(),
        nccl["new"]["count"].as_u64().unwrap(),
    );
    assert_eq!((bc, nc), (12 * 4 * 2, 12 * 4 * 3));
    let (sql_bc, sql_bt) = sql_kernels(&r.base_exports, "ncclDevKernel_AllReduce%");
    let (sql_nc, sql_nt) = sql_kernels(&r.new_exports, "ncclDevKernel_AllReduce%");
    assert_eq!(
        (bc, nccl["base"]["total_ns"].as_u64().unwrap()),
        (sql_bc, sql_bt)
    );
    assert_eq!(
        (nc, nccl["new"]["total_ns"].as_u64().unwrap()),
        (sql_nc, sql_nt)
    );
    // Per message size: the 25 MiB buckets (most of them; a quarter are smaller),
    // with their bytes and a bus bandwidth (0 here: the generator gives each rank
    // a communicator of its own, one GPU, where nccl-tests' factor is 0).
    let sizes = &d["nccl_sizes"];
    let full = row(sizes, "AllReduce 25 MiB");
    for side in ["base", "new"] {
        let count = full[side]["count"].as_u64().unwrap();
        assert_eq!(
            full[side]["bytes"].as_u64(),
            Some(count * (25 << 20)),
            "{full:#}"
        );
        assert!(full[side]["bus_gb_per_s"].is_number(), "{full:#}");
    }
    let counted: u64 = sizes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["new"]["count"].as_u64())
        .sum();
    assert_eq!(counted, nc, "every NEW all-reduce has its size");

    // NVTX: the straggler's data loading shows in the range's total (2 ms x 12 steps).
    let data_load = row(&d["nvtx"], "data_load");
    let delta = data_load["new"]["total_ns"].as_f64().unwrap()
        - data_load["base"]["total_ns"].as_f64().unwrap();
    assert!((delta - 24e6).abs() < 1e6, "{data_load:#}");

    // The files and the Paraver hint.
    assert!(d["paraver"]
        .as_str()
        .unwrap()
        .contains("analysis/kernels_profile.cfg"));
}

#[test]
fn the_gate_exits_4_when_new_is_slower_than_allowed() {
    let r = runs();
    let (base, new) = (r.base.to_str().unwrap(), r.new.to_str().unwrap());
    let d = json_of(&r.base, &r.new);
    let pct = d["measure"]["change"].as_f64().unwrap() * 100.0;
    assert!(pct > 5.0, "the straggler makes NEW slower: {pct}");
    let out = diff(&["--fail-if-slower", &format!("{}", pct - 1.0), base, new]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--fail-if-slower"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("verdict: NEW is slower"));
    let out = diff(&["--fail-if-slower", &format!("{}", pct + 1.0), base, new]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The other way round NEW is faster: never fails.
    let out = diff(&["--fail-if-slower", "0", new, base]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("verdict: NEW is faster"));
    // The same run against itself: no change.
    let same = json_of(&r.base, &r.base);
    assert_eq!(same["measure"]["change"].as_f64(), Some(0.0));
    assert!(same["verdict"]
        .as_str()
        .unwrap()
        .starts_with("NEW is as fast as BASE"));
}

#[test]
fn traces_of_other_tools_are_refused_in_one_line() {
    let r = runs();
    let foreign = r.dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    for ext in ["prv", "pcf", "row"] {
        std::fs::copy(
            r.base.with_extension(ext),
            foreign.join(format!("other.{ext}")),
        )
        .unwrap();
    }
    let other = foreign.join("other.prv");
    let out = diff(&[r.base.to_str().unwrap(), other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("other.prv: not a trace written by nsys2prv-rs"),
        "{stderr}"
    );
    // A .pmf of another tool (BSC nsys2prv 0.6 writes one too).
    std::fs::write(
        foreign.join("other.pmf"),
        r#"{"translation_metadata": {"nsys2prv_version": "0.6.0rc1"}}"#,
    )
    .unwrap();
    let out = diff(&[other.to_str().unwrap(), r.base.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("says 0.6.0rc1"));
}

#[test]
fn runs_of_different_sizes_are_compared_per_gpu() {
    let r = runs();
    let two = training_run(&r.dir, "two", 2, 12, Change::default());
    let two = convert_run(&r.dir, "two", &two);
    let d = json_of(&two, &r.base);
    assert!(d["per_gpu_note"].as_str().unwrap().contains("2 and 4 GPUs"));
    // The same program per GPU: kernel time per GPU about the same (jitter).
    let k = row(&d["kernels"], "Kernel2");
    assert_eq!(
        k["new"]["count"].as_u64().unwrap(),
        2 * k["base"]["count"].as_u64().unwrap()
    );
    assert!(k["change"].as_f64().unwrap().abs() < 0.05, "{k:#}");
}

#[test]
fn the_diff_page_renders_in_chromium() {
    let r = runs();
    let page = r.dir.join("diff.html");
    let out = diff(&[
        "--html",
        page.to_str().unwrap(),
        r.base.to_str().unwrap(),
        r.new.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("straggling: rank 1") && html.contains(SLOW_KERNEL));
    // Rewritten on a second run (the page names its generator), refused over a foreign file.
    let out = diff(&[
        "--html",
        page.to_str().unwrap(),
        r.base.to_str().unwrap(),
        r.new.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let foreign = r.dir.join("mine.html");
    std::fs::write(&foreign, "<html>mine</html>").unwrap();
    let out = diff(&[
        "--html",
        foreign.to_str().unwrap(),
        r.base.to_str().unwrap(),
        r.new.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "<html>mine</html>"
    );
    let png = crate::report_page::render_in_chromium(&page, "diff");
    if let Some(png) = png {
        eprintln!("diff page rendered: {}", png.display());
    }
}

#[test]
fn kernels_named_differently_are_grouped_by_short_name() {
    let r = runs();
    // The same run with full demangled names: every kernel of BASE matches the
    // group of its variants, with the same figures.
    let prv = r.dir.join("demangled.prv");
    let inputs: Vec<&Path> = r.base_exports.iter().map(PathBuf::as_path).collect();
    let out = convert(&inputs, &prv, &["--kernel-names=demangled"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = json_of(&r.base, &prv);
    let kernels = d["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 5, "{kernels:#?}");
    for k in kernels {
        assert!(k["base"].is_object() && k["new"].is_object(), "{k:#}");
        assert_eq!(k["base"]["total_ns"], k["new"]["total_ns"], "{k:#}");
        assert_eq!(k["change"].as_f64(), Some(0.0));
    }
    let gemm = row(&d["kernels"], "Kernel2");
    let grouped: Vec<&str> = gemm["grouped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        grouped.len(),
        3,
        "Kernel2 and its two demangled variants: {grouped:?}"
    );
    assert!(
        grouped
            .iter()
            .filter(|n| n.starts_with("void cutlass::Kernel2<"))
            .count()
            == 2
    );
}
