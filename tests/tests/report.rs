//! `nsys2prv-rs report` on hand-made traces with known answers (4 ranks with a
//! designed imbalance), on `.prv.gz`, and `--report` after a conversion.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use end_to_end::*;

/// Threads of the 4 tasks: a CPU thread, then GPU stream rows.
const TASKS: [&[&str]; 4] = [
    &["main (100)", "CUDA-D0.S7", "CUDA-D0.S13"],
    &["main (200)", "CUDA-D0.S7", "CUDA-D0.S13"],
    &["main (300)", "CUDA-D0.S7", "CUDA-D0.S8", "CUDA-D0.S13"],
    &["main (400)", "CUDA-D1.S7", "CUDA-D1.S13"],
];

const PCF: &str = "DEFAULT_OPTIONS

LEVEL               THREAD
UNITS               NANOSEC

STATES
0    Idle
1    Running


EVENT_TYPE
0    63000006   CUDA kernel
VALUES
0      End
1      gemm
2      softmax


EVENT_TYPE
0    63000007   NCCL kernel
VALUES
0      End
3      ncclDevKernel_AllReduce_Sum_f32_RING_LL


EVENT_TYPE
0    9520       NCCL kernel collective
VALUES
0      End
1      AllReduce


EVENT_TYPE
0    9501       NCCL message size (bytes)


EVENT_TYPE
0    63000001   CUDA memcpy/memset
VALUES
0      End
1      CUDA memcpy Host-to-Device


EVENT_TYPE
0    63000002   CUDA memcpy/memset size (bytes)


EVENT_TYPE
0    9600       NVTX push/pop ranges (default domain)
VALUES
0      End
1      iteration
2      compute
";

/// An interval on (task, thread): begin and end lines (time, pairs).
fn interval(
    lines: &mut Vec<(u64, String)>,
    task: usize,
    thread: usize,
    begin: u64,
    end: u64,
    pairs: &[(u32, i64)],
) {
    let fmt = |time: u64, zero: bool| {
        let mut line = format!("2:0:1:{task}:{thread}:{time}");
        for (ty, v) in pairs {
            line.push_str(&format!(":{ty}:{}", if zero { 0 } else { *v }));
        }
        line
    };
    lines.push((begin, fmt(begin, false)));
    lines.push((end, fmt(end, true)));
}

/// The designed run, 1000 ns long (per GPU: useful U, communication C):
/// * rank 0: gemm [0,400) on S7, NCCL [300,500) on S13: U 400, C 100;
/// * rank 1: gemm [0,150), softmax [150,300), a copy [300,350) on S7, NCCL
///   [320,420) on S13: U 300, C 120;
/// * rank 2: gemm [100,300) on S7, softmax [150,250) on S8 (concurrent), NCCL
///   [300,400): U 200, C 100;
/// * rank 3 (device 1): gemm [0,100), NCCL [100,500): U 100, C 400.
///
/// So LB = 250/400 = 0.625, CommE = 400/500 = 0.8, OrchE = 500/1000 = 0.5 and
/// PE = 0.25. NVTX "iteration" ranges split each rank's run at 450 + 50·r.
fn write_designed_trace(dir: &Path, name: &str) -> PathBuf {
    let mut lines: Vec<(u64, String)> = Vec::new();
    let nccl = [(63_000_007, 3), (9520, 1), (9501, 1024)];
    let (gemm, softmax) = ([(63_000_006, 1)], [(63_000_006, 2)]);
    interval(&mut lines, 1, 2, 0, 400, &gemm);
    interval(&mut lines, 1, 3, 300, 500, &nccl);
    interval(&mut lines, 2, 2, 0, 150, &gemm);
    interval(&mut lines, 2, 2, 150, 300, &softmax);
    interval(
        &mut lines,
        2,
        2,
        300,
        350,
        &[(63_000_001, 1), (63_000_002, 4096)],
    );
    interval(&mut lines, 2, 3, 320, 420, &nccl);
    interval(&mut lines, 3, 2, 100, 300, &gemm);
    interval(&mut lines, 3, 3, 150, 250, &softmax);
    interval(&mut lines, 3, 4, 300, 400, &nccl);
    interval(&mut lines, 4, 2, 0, 100, &gemm);
    interval(&mut lines, 4, 3, 100, 500, &nccl);
    for task in 1..=4 {
        let split = 400 + 50 * task as u64;
        interval(&mut lines, task, 1, 0, split, &[(9600, 1)]);
        interval(&mut lines, task, 1, split, 1000, &[(9600, 1)]);
        interval(&mut lines, task, 1, 10, 20, &[(9600, 2)]);
    }
    // Sorted by time; at one time, ends before begins (as the tool writes).
    lines.sort_by_key(|(t, l)| (*t, !l.ends_with(":0")));
    let threads: Vec<String> = TASKS.iter().map(|t| format!("{}:1", t.len())).collect();
    let mut prv = format!(
        "#Paraver (01/01/2026 at 00:00):1000_ns:1(4):1:4({})\n",
        threads.join(",")
    );
    for (_, line) in lines {
        prv.push_str(&line);
        prv.push('\n');
    }
    let path = dir.join(format!("{name}.prv"));
    std::fs::write(&path, &prv).unwrap();
    std::fs::write(dir.join(format!("{name}.pcf")), PCF).unwrap();
    let names: Vec<&str> = TASKS.iter().flat_map(|t| t.iter().copied()).collect();
    let row = format!(
        "LEVEL NODE SIZE 1\nhost\n\nLEVEL TASK SIZE 4\n{}\n\nLEVEL THREAD SIZE {}\n{}\n",
        (0..4)
            .map(|r| format!("rank {r} (host:{})", 100 * (r + 1)))
            .collect::<Vec<_>>()
            .join("\n"),
        names.len(),
        names.join("\n")
    );
    std::fs::write(dir.join(format!("{name}.row")), row).unwrap();
    path
}

fn report(args: &[&str]) -> Output {
    let mut cmd = binary();
    cmd.arg("report").args(args);
    cmd.output().expect("run nsys2prv-rs report")
}

/// `NAME.report.<suffix>` as rows of fields (header included).
/// The rows of a report's CSV table, its header first.
fn csv(base: &Path, suffix: &str) -> Vec<Vec<String>> {
    let path = PathBuf::from(format!("{}.report.{suffix}", base.display()));
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

fn metrics(base: &Path) -> BTreeMap<String, f64> {
    csv(base, "efficiency.csv")
        .into_iter()
        .skip(1)
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect()
}

fn assert_designed_numbers(base: &Path) {
    let m = metrics(base);
    assert_eq!(m["elapsed_ns"], 1000.0);
    assert_eq!(m["gpus"], 4.0);
    assert_eq!(m["load_balance"], 0.625);
    assert_eq!(m["communication_efficiency"], 0.8);
    assert_eq!(m["orchestration_efficiency"], 0.5);
    assert_eq!(m["parallel_efficiency"], 0.25);

    let gpus = csv(base, "gpus.csv");
    assert_eq!(
        gpus[0],
        [
            "gpu",
            "task",
            "device",
            "streams",
            "useful_ns",
            "communication_ns",
            "idle_ns",
            "elapsed_ns"
        ]
    );
    let rows: Vec<Vec<&str>> = gpus[1..]
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        rows,
        [
            [
                "rank 0 (host:100) GPU 0",
                "1",
                "0",
                "2",
                "400",
                "100",
                "500",
                "1000"
            ],
            [
                "rank 1 (host:200) GPU 0",
                "2",
                "0",
                "2",
                "300",
                "120",
                "580",
                "1000"
            ],
            [
                "rank 2 (host:300) GPU 0",
                "3",
                "0",
                "3",
                "200",
                "100",
                "700",
                "1000"
            ],
            [
                "rank 3 (host:400) GPU 1",
                "4",
                "1",
                "2",
                "100",
                "400",
                "500",
                "1000"
            ],
        ]
    );

    let kernels = csv(base, "kernels.csv");
    assert_eq!(kernels[1][..3], ["gemm", "4", "850"]);
    assert_eq!(kernels[2][..3], ["softmax", "2", "250"]);
    let nccl = csv(base, "nccl.csv");
    assert_eq!(nccl[1][..3], ["AllReduce", "4", "800"]);
    assert_eq!(nccl[1][6], "4096");
    let memory = csv(base, "memory.csv");
    assert_eq!(memory[1][..3], ["CUDA memcpy Host-to-Device", "1", "50"]);
    assert_eq!(memory[1][6], "4096");

    let iterations = csv(base, "iterations.csv");
    let durations: Vec<(String, String, String)> = iterations[1..]
        .iter()
        .map(|r| (r[1].clone(), r[2].clone(), r[4].clone()))
        .collect();
    let expected: Vec<(String, String, String)> = (0..4)
        .flat_map(|r| {
            let split = 450 + 50 * r;
            [(1, split), (2, 1000 - split)]
                .into_iter()
                .map(move |(k, d)| {
                    (
                        format!("rank {r} (host:{})", 100 * (r + 1)),
                        k.to_string(),
                        d.to_string(),
                    )
                })
        })
        .collect();
    assert_eq!(durations, expected);
    assert!(iterations[1..].iter().all(|r| r[0] == "iteration"));

    let text = std::fs::read_to_string(format!("{}.report.json", base.display())).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["efficiency"]["load_balance"], 0.625, "{text}");
    assert_eq!(json["iterations"]["range"], "iteration", "{text}");
    assert_eq!(json["gpus"].as_array().unwrap().len(), gpus.len() - 1);
    let first = &json["iterations"]["tasks"][0]["iterations"][0];
    assert_eq!(first["duration_ns"].to_string(), iterations[1][4], "{text}");
}

#[test]
fn the_designed_imbalance_comes_out_as_designed() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "designed");
    let out = report(&[prv.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "Parallel efficiency            25.0%",
        "  Load balance                 62.5%",
        "  Communication efficiency     80.0%",
        "  Orchestration efficiency     50.0%",
        "gemm",
        "AllReduce",
        "Iterations (NVTX range 'iteration') per task",
    ] {
        assert!(text.contains(expected), "missing '{expected}' in:\n{text}");
    }
    assert_designed_numbers(&dir.path().join("designed"));
}

#[test]
fn a_gzip_trace_reports_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "z");
    let gz = dir.path().join("z.prv.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    encoder.write_all(&std::fs::read(&prv).unwrap()).unwrap();
    encoder.finish().unwrap();
    std::fs::remove_file(&prv).unwrap();
    let out = report(&[gz.to_str().unwrap(), "--iterations", "iteration"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_designed_numbers(&dir.path().join("z"));
}

#[test]
fn no_files_prints_only_and_bad_traces_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "p");
    let out = report(&[prv.to_str().unwrap(), "--no-files", "--top", "1"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Top kernels by GPU time (1 of 2 kernels)"),
        "{text}"
    );
    assert!(!dir.path().join("p.report.json").exists());

    let out = report(&[dir.path().join("missing.prv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    let out = report(&[dir.path().join("p.txt").to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a name that is no trace is a usage error"
    );
}

#[test]
fn report_after_a_conversion_multiplies_out() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let out = dir.path().join("c.prv");
    let mut cmd = binary();
    cmd.args(["--report", input.to_str().unwrap(), out.to_str().unwrap()]);
    let result = cmd.output().unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("Parallel efficiency"), "{stdout}");
    let m = metrics(&dir.path().join("c"));
    let product = m["load_balance"] * m["communication_efficiency"] * m["orchestration_efficiency"];
    assert!((product - m["parallel_efficiency"]).abs() < 1e-5, "{m:?}");
    assert!(m["parallel_efficiency"] > 0.0 && m["parallel_efficiency"] < 1.0);
    // The same numbers from the written trace, after the fact.
    let again = report(&[out.to_str().unwrap(), "--no-files"]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);
}

#[test]
fn a_cpu_only_trace_has_iterations_but_no_gpu_model() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let out = dir.path().join("n.prv");
    let result = convert(&[&input], &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let r = report(&[out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("no GPU efficiency model"), "{text}");
    let iterations = csv(&dir.path().join("n"), "iterations.csv");
    // 3 workers x 4 iterations, all in the one task.
    assert_eq!(iterations.len() - 1, 12, "{iterations:?}");
    let m = metrics(&dir.path().join("n"));
    assert_eq!(m["gpus"], 0.0);
    assert!(!m.contains_key("load_balance"));
}
