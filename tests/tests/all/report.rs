//! `nsys2prv-rs report` on hand-made traces with known answers (4 ranks with a
//! designed imbalance; known overlaps and gaps), on `.prv.gz`, on BSC nsys2prv's
//! traces, the names of a trace it accepts, the files it writes (only where asked)
//! and `--report` after a conversion.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use end_to_end::*;
use serde_json::Value;

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

/// The report's JSON (`--json -`), after checking that it ran.
fn report_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--json", "-"]);
    let out = report(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report's JSON")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// The files of a directory, sorted (hidden ones too).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_designed_numbers(j: &Value) {
    assert_eq!(j["generator"], "nsys2prv-rs report");
    assert_eq!(j["elapsed_ns"], 1000);
    let m = &j["efficiency"];
    assert_eq!(m["load_balance"], 0.625);
    assert_eq!(m["communication_efficiency"], 0.8);
    assert_eq!(m["orchestration_efficiency"], 0.5);
    assert_eq!(m["parallel_efficiency"], 0.25);
    let gpus: Vec<(String, u64, u64, u64, u64, u64)> = j["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap().to_string(),
                g["task"].as_u64().unwrap(),
                g["streams"].as_u64().unwrap(),
                g["useful_ns"].as_u64().unwrap(),
                g["communication_ns"].as_u64().unwrap(),
                g["idle_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("rank 0 (host:100) GPU 0", 1, 2, 400, 100, 500),
        ("rank 1 (host:200) GPU 0", 2, 2, 300, 120, 580),
        ("rank 2 (host:300) GPU 0", 3, 3, 200, 100, 700),
        ("rank 3 (host:400) GPU 1", 4, 2, 100, 400, 500),
    ]
    .map(|(n, t, s, u, c, i)| (n.to_string(), t, s, u, c, i));
    assert_eq!(gpus, expected);
    let named = |key: &str, i: usize| {
        let s = &j[key][i];
        (
            s["name"].as_str().unwrap().to_string(),
            s["count"].as_u64().unwrap(),
            s["total_ns"].as_u64().unwrap(),
            s["bytes"].as_u64(),
        )
    };
    // Kernels have no bytes: null in the JSON, not 0.
    assert_eq!(named("kernels", 0), ("gemm".into(), 4, 850, None));
    assert_eq!(named("kernels", 1), ("softmax".into(), 2, 250, None));
    assert_eq!(named("nccl", 0), ("AllReduce".into(), 4, 800, Some(4096)));
    assert_eq!(
        named("memory", 0),
        ("CUDA memcpy Host-to-Device".into(), 1, 50, Some(4096))
    );
    // AllReduce over the 4 GPUs that ran it: 4096 B in 800 ns, bus factor 2·3/4.
    let nccl = &j["nccl"][0];
    assert_eq!(nccl["ranks"], 4);
    assert!(close(
        nccl["algorithm_gb_per_s"].as_f64().unwrap(),
        4096.0 / 800.0
    ));
    assert!(close(
        nccl["bus_gb_per_s"].as_f64().unwrap(),
        4096.0 / 800.0 * 1.5
    ));

    let it = &j["iterations"];
    assert_eq!(it["range"], "iteration");
    for (r, task) in it["tasks"].as_array().unwrap().iter().enumerate() {
        let split = 450 + 50 * r as u64;
        assert_eq!(task["task"], format!("rank {r} (host:{})", 100 * (r + 1)));
        let durations: Vec<u64> = task["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["duration_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(durations, [split, 1000 - split]);
    }
    // Iteration 1 is longest on rank 3 (650 ns); the tasks' means are all 500 ns.
    assert_eq!(it["per_iteration"][0]["slowest_task"], "rank 3 (host:400)");
    assert_eq!(it["per_iteration"][0]["max_ns"], 600);
    assert_eq!(it["median_task_mean_ns"], 500.0);
}

#[test]
fn the_designed_imbalance_comes_out_as_designed() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "designed");
    let before = listing(dir.path());
    let out = report(&[prv.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "Parallel efficiency            25.0%",
        "  Load balance                 62.5%",
        "  Communication efficiency     80.0%",
        "  Orchestration efficiency     50.0%",
        "gemm",
        "AllReduce",
        "Iterations (NVTX range 'iteration') per task",
        "Slowest tasks",
    ] {
        assert!(text.contains(expected), "missing '{expected}' in:\n{text}");
    }
    // The summary goes to stdout and nothing is written beside the trace.
    assert_eq!(listing(dir.path()), before);
    assert_designed_numbers(&report_json(&[prv.to_str().unwrap()]));
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
    assert_designed_numbers(&report_json(&[
        gz.to_str().unwrap(),
        "--iterations",
        "iteration",
    ]));
    // The companions and the bare name find the .prv.gz.
    let base = dir.path().join("z");
    for name in [
        base.with_extension("pcf"),
        base.with_extension("row"),
        base.clone(),
    ] {
        assert_designed_numbers(&report_json(&[name.to_str().unwrap()]));
    }
}

/// One line of a hand-made trace.
fn event(task: usize, thread: usize, time: u64, pairs: &[(u32, i64)]) -> (u64, String) {
    let mut line = format!("2:0:1:{task}:{thread}:{time}");
    for (ty, v) in pairs {
        line.push_str(&format!(":{ty}:{v}"));
    }
    (time, line)
}

/// Writes `NAME.prv/.pcf/.row` of one application whose tasks have `threads`.
fn write_trace(
    dir: &Path,
    name: &str,
    end: u64,
    threads: &[&[&str]],
    mut lines: Vec<(u64, String)>,
    pcf: &str,
) -> PathBuf {
    // Sorted by time; at one time, ends (value 0) before begins.
    lines.sort_by_key(|(t, l)| (*t, !l.ends_with(":0")));
    let decl: Vec<String> = threads.iter().map(|t| format!("{}:1", t.len())).collect();
    let mut prv = format!(
        "#Paraver (01/01/2026 at 00:00):{end}_ns:1({}):1:{}({})\n",
        threads.len(),
        threads.len(),
        decl.join(",")
    );
    for (_, line) in lines {
        prv.push_str(&line);
        prv.push('\n');
    }
    let path = dir.join(format!("{name}.prv"));
    std::fs::write(&path, prv).unwrap();
    std::fs::write(dir.join(format!("{name}.pcf")), pcf).unwrap();
    let names: Vec<&str> = threads.iter().flat_map(|t| t.iter().copied()).collect();
    let tasks: Vec<String> = (0..threads.len()).map(|r| format!("rank {r}")).collect();
    let row = format!(
        "LEVEL NODE SIZE 1\nhost\n\nLEVEL TASK SIZE {}\n{}\n\nLEVEL THREAD SIZE {}\n{}\n",
        tasks.len(),
        tasks.join("\n"),
        names.len(),
        names.join("\n")
    );
    std::fs::write(dir.join(format!("{name}.row")), row).unwrap();
    path
}

const OVERLAP_PCF: &str = "EVENT_TYPE
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
0    63000000   CUDA library call
VALUES
0      End
1      cudaLaunchKernel
2      cudaStreamSynchronize

EVENT_TYPE
0    9600       NVTX push/pop ranges (default domain)
VALUES
0      End
1      step
";

/// Rank 0: an NCCL kernel [1000, 2000) with gemm [1200, 1600) and softmax
/// [1400, 1800) on two other streams: 0, 1, 2, 1, 0 compute kernels for 200, 200,
/// 200, 200, 200 ns, so shares 40 %, 40 %, 20 %. Then the GPU idles until a gemm at
/// 6000 while its launching thread waits in cudaStreamSynchronize inside the NVTX
/// range "step". Rank 1: an NCCL kernel fully overlapped by one gemm.
fn write_overlap_trace(dir: &Path) -> PathBuf {
    let (nccl, gemm, softmax) = (
        [(63_000_007u32, 3i64)],
        [(63_000_006u32, 1i64)],
        [(63_000_006u32, 2i64)],
    );
    let zero = |p: &[(u32, i64)]| p.iter().map(|(t, _)| (*t, 0)).collect::<Vec<_>>();
    let mut lines = vec![
        event(1, 1, 0, &[(9600, 1)]),
        event(1, 1, 900, &[(63_000_000, 1)]),
        event(1, 1, 950, &zero(&[(63_000_000, 1)])),
        (
            900,
            "3:0:1:1:1:900:900:0:1:1:2:1000:1000:0:55001".to_string(),
        ),
        event(1, 2, 1000, &nccl),
        event(1, 3, 1200, &gemm),
        event(1, 4, 1400, &softmax),
        event(1, 3, 1600, &zero(&gemm)),
        event(1, 4, 1800, &zero(&softmax)),
        event(1, 1, 1950, &[(63_000_000, 2)]),
        event(1, 2, 2000, &zero(&nccl)),
        event(1, 1, 5900, &zero(&[(63_000_000, 2)])),
        event(1, 3, 6000, &gemm),
        event(1, 3, 6500, &zero(&gemm)),
        event(1, 1, 9000, &zero(&[(9600, 1)])),
        event(2, 2, 0, &nccl),
        event(2, 3, 0, &gemm),
        event(2, 2, 500, &zero(&nccl)),
        event(2, 3, 500, &zero(&gemm)),
    ];
    lines.sort_by_key(|(t, _)| *t);
    write_trace(
        dir,
        "overlap",
        10_000,
        &[
            &["main (1)", "CUDA-D0.S1", "CUDA-D0.S2", "CUDA-D0.S3"],
            &["main (2)", "CUDA-D0.S1", "CUDA-D0.S2"],
        ],
        lines,
        OVERLAP_PCF,
    )
}

#[test]
fn overlap_shares_and_gaps_of_a_hand_made_trace() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_overlap_trace(dir.path());
    let j = report_json(&[prv.to_str().unwrap(), "--gap-threshold", "1us"]);
    let o = &j["overlap"];
    assert_eq!(o["columns"], 3);
    assert_eq!(f64s(&o["rows"][0]["shares"]), [0.4, 0.4, 0.2]);
    assert_eq!(o["rows"][0]["nccl_ns"], 1000);
    assert_eq!(f64s(&o["rows"][1]["shares"]), [0.0, 1.0, 0.0]);
    let summary = |key: &str| f64s(&o[key]);
    assert!(summary("average")
        .iter()
        .zip([0.2, 0.7, 0.1])
        .all(|(a, b)| close(*a, b)));
    assert_eq!(summary("maximum"), [0.4, 1.0, 0.2]);
    assert_eq!(summary("minimum"), [0.0, 0.4, 0.0]);
    assert!(summary("average_over_maximum")
        .iter()
        .zip([0.5, 0.7, 0.5])
        .all(|(a, b)| close(*a, b)));

    // One gap, 2000 to 6000 on rank 0 (the idle time before the first and after
    // the last activity is not a gap), with what the launching thread was doing.
    let gaps = &j["gaps"];
    assert_eq!(gaps["count"], 1);
    assert_eq!(gaps["total_ns"], 4000);
    let gap = &gaps["longest"][0];
    assert_eq!(gap["gpu"], 0);
    assert_eq!(gap["begin_ns"], 2000);
    assert_eq!(gap["duration_ns"], 4000);
    assert_eq!(gap["thread"], "rank 0 / main (1)");
    assert_eq!(gap["call"], "CUDA: cudaStreamSynchronize");
    assert_eq!(gap["nvtx"], "step");
    // Above the threshold (default 1 ms) there is none.
    let j = report_json(&[prv.to_str().unwrap()]);
    assert_eq!(j["gaps"]["count"], 0);

    let text = report(&[prv.to_str().unwrap(), "--gap-threshold", "1us"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Compute/communication overlap"), "{text}");
    assert!(
        text.contains("rank 0 / main (1): CUDA: cudaStreamSynchronize: NVTX step"),
        "{text}"
    );
}

#[test]
fn an_unknown_iteration_range_is_an_error_listing_the_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "p");
    let out = report(&[prv.to_str().unwrap(), "--iterations", "bogus"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.contains(
            "--iterations bogus: no NVTX range of that name; the trace has 'compute', 'iteration'"
        ),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn bad_trace_names_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_designed_trace(dir.path(), "p");
    let out = report(&[dir.path().join("missing.prv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: "));
    for name in ["p.txt", "missing", "missing.pcf"] {
        let out = report(&[dir.path().join(name).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains("no trace"), "{}", stderr(&out));
    }
}

#[test]
fn files_are_written_only_where_asked_and_only_over_the_reports_own() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_designed_trace(dir.path(), "p");
    let trace = prv.to_str().unwrap();
    let out_dir = dir.path().join("rep");
    let out = report(&[trace, "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = listing(&out_dir);
    for name in [
        ".nsys2prv-rs",
        "report.html",
        "report.json",
        "report.txt",
        "gpus.csv",
        "efficiency.csv",
        "kernels.csv",
        "nccl.csv",
        "mpi.csv",
        "memory.csv",
        "overlap.csv",
        "gaps.csv",
        "bins.csv",
        "iterations.csv",
    ] {
        assert!(written.contains(&name.to_string()), "{name}: {written:?}");
    }
    let gpus = std::fs::read_to_string(out_dir.join("gpus.csv")).unwrap();
    assert!(
        gpus.starts_with(
            "gpu,task,device,streams,useful_ns,communication_ns,idle_ns,elapsed_ns,node"
        ),
        "{gpus}"
    );
    assert!(
        gpus.contains("rank 0 (host:100) GPU 0,1,0,2,400,100,500,1000,host"),
        "{gpus}"
    );
    // Again: the report's own directory is replaced, with nothing left beside it.
    std::fs::write(out_dir.join("stale.csv"), "old").unwrap();
    let again = report(&[trace, "--out", out_dir.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(listing(&out_dir), written);
    assert_eq!(
        listing(dir.path()),
        ["p.pcf", "p.prv", "p.row", "rep"].map(String::from)
    );

    // A directory or file the report did not make is refused and left alone.
    let foreign = dir.path().join("mine");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "keep").unwrap();
    let out = report(&[trace, "--out", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(listing(&foreign), ["notes.txt"]);
    let page = dir.path().join("page.html");
    std::fs::write(&page, "<p>my page</p>").unwrap();
    let out = report(&[trace, "--html", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "<p>my page</p>");
    // The report's own page is replaced.
    std::fs::copy(out_dir.join("report.html"), &page).unwrap();
    let out = report(&[
        trace,
        "--html",
        page.to_str().unwrap(),
        "--json",
        dir.path().join("r.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_designed_numbers(&json);
}

/// A trace shaped like BSC nsys2prv 0.5.8's: its header (`:` before the task list,
/// no nodes), a .row without TASK level, records grouped by category.
fn write_bsc_trace(dir: &Path, name: &str, sorted: bool) -> PathBuf {
    let mut lines = [
        "2:0:1:1:2:100:63000006:1:9200:1",
        "2:0:1:1:2:300:63000006:0:9200:0",
        "2:0:1:1:2:400:63000007:2:9501:77:9502:1024",
        "2:0:1:1:2:600:63000007:0:9501:0:9502:0",
    ];
    if sorted {
        lines.sort_by_key(|l| l.split(':').nth(5).unwrap().parse::<u64>().unwrap());
    } else {
        lines.rotate_left(2);
    }
    let prv = format!(
        "#Paraver (25/11/2026 at 06:41):1000_ns:0:1:1:(2:1)\n{}\n",
        lines.join("\n")
    );
    let path = dir.join(format!("{name}.prv"));
    std::fs::write(&path, prv).unwrap();
    std::fs::write(
        dir.join(format!("{name}.pcf")),
        "EVENT_TYPE\n0 63000006 CUDA kernel\nVALUES\n0 End\n1 Kernel1\n\n\
         EVENT_TYPE\n0 63000007 NCCL kernel\nVALUES\n0 End\n2 ncclDevKernel_AllReduce_Sum_f32_RING_LL\n\n\
         EVENT_TYPE\n0 9501 NCCL NCCL communicator ID\n\nEVENT_TYPE\n0 9502 NCCL Message size [bytes]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{name}.row")),
        "LEVEL NODE SIZE 1\nnode1\n\nLEVEL THREAD SIZE 2\nTHREAD 1.1.1\nCUDA-D0.S7\n",
    )
    .unwrap();
    path
}

#[test]
fn traces_of_bsc_nsys2prv_are_read_or_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let unsorted = write_bsc_trace(dir.path(), "bsc", false);
    let out = report(&[unsorted.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(
        message.contains("records are not in time order")
            && message.contains("BSC's nsys2prv")
            && message.contains("-s"),
        "{message}"
    );
    let sorted = write_bsc_trace(dir.path(), "sorted", true);
    let j = report_json(&[sorted.to_str().unwrap()]);
    let notes = j["notes"].to_string();
    for expected in [
        "header is BSC nsys2prv's",
        "names no tasks",
        "no collective",
    ] {
        assert!(notes.contains(expected), "{expected}: {notes}");
    }
    let g = &j["gpus"][0];
    assert_eq!(g["name"], "task 1 GPU 0");
    assert_eq!(
        (g["useful_ns"].as_u64(), g["communication_ns"].as_u64()),
        (Some(200), Some(200))
    );
    // BSC's message size column (here 9502), not its communicator (9501).
    assert_eq!(j["nccl"][0]["bytes"], 1024);
}

#[test]
fn report_after_a_conversion_prints_and_writes_only_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let out = dir.path().join("c.prv");
    let mut cmd = binary();
    cmd.args(["--report", input.to_str().unwrap(), out.to_str().unwrap()]);
    let result = cmd.output().unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("Parallel efficiency"), "{stdout}");
    assert_eq!(
        listing(dir.path()),
        ["c.cfgs", "c.pcf", "c.pmf", "c.prv", "c.row"].map(String::from)
    );
    // The same numbers from the written trace, after the fact.
    let again = report(&[out.to_str().unwrap()]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);
    let j = report_json(&[out.to_str().unwrap()]);
    let m = &j["efficiency"];
    let product = m["load_balance"].as_f64().unwrap()
        * m["communication_efficiency"].as_f64().unwrap()
        * m["orchestration_efficiency"].as_f64().unwrap();
    let pe = m["parallel_efficiency"].as_f64().unwrap();
    assert!((product - pe).abs() < 1e-12 && pe > 0.0 && pe < 1.0, "{m}");

    let rep = dir.path().join("rep");
    let mut cmd = binary();
    cmd.args([
        "-q",
        &format!("--report={}", rep.display()),
        input.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    let result = cmd.output().unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(result.stdout.is_empty(), "-q prints no report");
    let json: Value =
        serde_json::from_slice(&std::fs::read(rep.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["efficiency"], j["efficiency"]);
}

#[test]
fn a_cpu_only_trace_has_iterations_but_no_gpu_model() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let out = dir.path().join("n.prv");
    let result = convert(&[&input], &out, &[]);
    assert!(result.status.success(), "{}", stderr(&result));
    let r = report(&[out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", stderr(&r));
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("No GPU stream rows"), "{text}");
    let j = report_json(&[out.to_str().unwrap()]);
    assert!(j["efficiency"].is_null());
    // 3 workers x 4 iterations, all in the one task.
    let tasks = j["iterations"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["iterations"].as_array().unwrap().len(), 12);
}

#[test]
fn iterations_are_kept_within_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 1,000 iterations on one thread: 24 KB of occurrences.
    let lines: Vec<(u64, String)> = (0..1000u64)
        .flat_map(|k| {
            [
                event(1, 1, 10 * k, &[(9600, 1)]),
                event(1, 1, 10 * k + 5, &[(9600, 0)]),
            ]
        })
        .collect();
    let pcf = "EVENT_TYPE\n0 9600 NVTX push/pop ranges (default domain)\nVALUES\n0 End\n1 step\n";
    let prv = write_trace(dir.path(), "many", 10_000, &[&["main (1)"]], lines, pcf);
    let j = report_json(&[prv.to_str().unwrap()]);
    assert_eq!(j["iterations"]["tasks"][0]["count"], 1000);
    let out = report(&[prv.to_str().unwrap(), "--memory-limit", "64K"]);
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(
        message.contains("many.prv:") && message.contains("--memory-limit"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// Issue 27: sizes the trace does not give (NCCL without its payload, MPI recorded as
/// NVTX ranges) were printed as `bytes 0`; they are `n/a` (null in the JSON), and
/// known sizes stay numbers.
#[test]
fn unknown_sizes_are_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let samples = workspace_root().join("samples");
    for (set, table) in [
        ("synthetic/4ranks_2hosts_2022.4", "nccl"),
        ("mpi_3ranks", "mpi"),
    ] {
        let prv = dir.path().join(format!("{table}.prv"));
        let out = convert(&[&samples.join(set)], &prv, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let prv = prv.to_str().unwrap();
        let j = report_json(&[prv]);
        let rows = j[table].as_array().unwrap();
        assert!(!rows.is_empty(), "{set}");
        assert!(rows.iter().all(|r| r["bytes"].is_null()), "{set}: {rows:?}");
        let text = String::from_utf8_lossy(&report(&[prv]).stdout).into_owned();
        let heading = if table == "nccl" {
            "NCCL kernels per collective"
        } else {
            "MPI calls"
        };
        let lines: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(heading))
            .skip(2)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), rows.len(), "{text}");
        // Bytes: the 4th column from the end of an NCCL row (ranks and two
        // bandwidths follow), the last of an MPI row.
        let from_end = if table == "nccl" { 4 } else { 1 };
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[words.len() - from_end], "n/a", "{line}");
        }
        if table == "nccl" {
            // Memory operations have sizes.
            assert!(j["memory"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["bytes"].as_u64().unwrap() > 0));
        }
    }
}

const LATE_PCF: &str = "EVENT_TYPE
0    63000006   CUDA kernel
VALUES
0      End
1      gemm

EVENT_TYPE
0    63000007   NCCL kernel
VALUES
0      End
3      ncclDevKernel_AllReduce_Sum_f32_RING_LL

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
1      step
";

/// (task, thread, begin, end, pairs) of an interval.
type Placed<'a> = (usize, usize, u64, u64, &'a [(u32, i64)]);

/// A run of 10,000 ns whose GPUs start at `first` (the first kernel), per GPU:
/// * rank 0: gemm [first, 7000) on S1, a copy of 100 B [7000, 8000) on S2;
/// * rank 1: gemm [5000, 6000) on S1, NCCL [6000, 9000) on S2;
/// * NVTX "step" ranges on rank 0 [3000, 5000), [5000, 8000) and on rank 1
///   [4500, 6500), [6500, 9500).
fn write_late_trace(dir: &Path, name: &str, first: u64) -> PathBuf {
    let mut lines = Vec::new();
    let pairs: [Placed; 8] = [
        (1, 2, first, 7000, &[(63_000_006, 1)]),
        (1, 3, 7000, 8000, &[(63_000_001, 1), (63_000_002, 100)]),
        (2, 2, 5000, 6000, &[(63_000_006, 1)]),
        (2, 3, 6000, 9000, &[(63_000_007, 3)]),
        (1, 1, 3000, 5000, &[(9600, 1)]),
        (1, 1, 5000, 8000, &[(9600, 1)]),
        (2, 1, 4500, 6500, &[(9600, 1)]),
        (2, 1, 6500, 9500, &[(9600, 1)]),
    ];
    for (task, thread, begin, end, p) in pairs {
        interval(&mut lines, task, thread, begin, end, p);
    }
    write_trace(
        dir,
        name,
        10_000,
        &[
            &["main (1)", "CUDA-D0.S1", "CUDA-D0.S2"],
            &["main (2)", "CUDA-D0.S1", "CUDA-D0.S2"],
        ],
        lines,
        LATE_PCF,
    )
}

/// Issue 27: a report counted start-up before the first kernel as idle, silently.
/// When the first GPU activity starts after a tenth of the trace, the report says
/// so and gives the figures from it on beside the whole trace's (text, JSON, page).
#[test]
fn a_late_start_is_said_and_the_figures_from_the_first_activity_given_beside() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_late_trace(dir.path(), "late", 4000);
    let prv = prv.to_str().unwrap();
    let j = report_json(&[prv]);
    // Whole trace: U 3000 and 1000, C 1000 and 3000 over 10,000 ns.
    let m = &j["efficiency"];
    assert!(close(m["parallel_efficiency"].as_f64().unwrap(), 0.2));
    assert!(close(m["orchestration_efficiency"].as_f64().unwrap(), 0.4));
    // From 4000 on: 6000 ns.
    let late = &j["from_first_activity"];
    assert_eq!(late["start_ns"], 4000);
    assert_eq!(late["elapsed_ns"], 6000);
    assert!(close(late["share_before"].as_f64().unwrap(), 0.4));
    assert_eq!(late["idle_ns"], serde_json::json!([2000, 2000]));
    let l = &late["efficiency"];
    assert!(close(
        l["parallel_efficiency"].as_f64().unwrap(),
        2000.0 / 6000.0
    ));
    assert!(close(
        l["orchestration_efficiency"].as_f64().unwrap(),
        4000.0 / 6000.0
    ));
    assert!(close(l["load_balance"].as_f64().unwrap(), 2.0 / 3.0));
    assert!(close(l["communication_efficiency"].as_f64().unwrap(), 0.75));
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("first activity begins at 0.000004 s, 40% into the trace")
            && notes.contains("--time-window 4us: leaves it out of every figure"),
        "{notes}"
    );

    let text = String::from_utf8_lossy(&report(&[prv]).stdout).into_owned();
    assert!(text.contains("40% into the trace"), "{text}");
    let pe = text
        .lines()
        .find(|l| l.starts_with("Parallel efficiency"))
        .unwrap();
    let cells: Vec<&str> = pe.split_whitespace().collect();
    assert_eq!(&cells[2..4], ["20.0%", "33.3%"], "{text}");
    assert!(text.contains("idle s*"), "{text}");

    let page = dir.path().join("late.html");
    let out = report(&[prv, "--html", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("From the first GPU activity on"), "page");
    assert!(html.contains("/from_first_activity/efficiency/parallel_efficiency"));

    // Starting at 5 % of the trace is no late start.
    let early = write_late_trace(dir.path(), "early", 500);
    let j = report_json(&[early.to_str().unwrap()]);
    assert!(j["from_first_activity"].is_null());
    assert!(!j["notes"].to_string().contains("first activity"));
}

/// Issue 27: `report --time-window` and `--nvtx-range NAME[#N]` report on part of the
/// trace, as the conversion cuts: intervals crossing the edges are clipped, the
/// iterations are those wholly inside, times stay the trace's.
#[test]
fn report_takes_a_time_window_and_an_nvtx_range() {
    let dir = tempfile::tempdir().unwrap();
    let prv = write_late_trace(dir.path(), "late", 4000);
    let prv = prv.to_str().unwrap();
    let j = report_json(&[prv, "--time-window", "5us:8us"]);
    assert_eq!(j["elapsed_ns"], 3000);
    assert_eq!(j["window"]["start_ns"], 5000);
    assert_eq!(j["window"]["end_ns"], 8000);
    assert_eq!(j["window"]["chosen_by"], "--time-window 5us:8us");
    let gpus: Vec<(u64, u64, u64)> = j["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["useful_ns"].as_u64().unwrap(),
                g["communication_ns"].as_u64().unwrap(),
                g["idle_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(gpus, [(2000, 1000, 0), (1000, 2000, 0)]);
    let m = &j["efficiency"];
    assert!(close(m["parallel_efficiency"].as_f64().unwrap(), 0.5));
    assert!(close(m["load_balance"].as_f64().unwrap(), 0.75));
    // Both gemms (one clipped from 4000), the NCCL kernel clipped at 8000, the copy.
    assert_eq!(j["kernels"][0]["count"], 2);
    assert_eq!(j["kernels"][0]["total_ns"], 3000);
    assert_eq!(j["nccl"][0]["total_ns"], 2000);
    assert_eq!(j["memory"][0]["bytes"], 100);
    // Only rank 0's [5000, 8000) step lies wholly inside.
    let it = &j["iterations"];
    assert_eq!(it["tasks"].as_array().unwrap().len(), 1, "{it}");
    assert_eq!(it["tasks"][0]["count"], 1);
    // A window is the user's choice: no start-up figures.
    assert!(j["from_first_activity"].is_null());

    // The 2nd "step" of every thread: rank 0's [5000, 8000), rank 1's [6500, 9500).
    let j = report_json(&[prv, "--nvtx-range", "step#2"]);
    assert_eq!(
        (
            j["window"]["start_ns"].as_u64(),
            j["window"]["end_ns"].as_u64()
        ),
        (Some(5000), Some(9500))
    );
    assert!(j["window"]["chosen_by"]
        .as_str()
        .unwrap()
        .contains("2 ranges on 2 tasks"));
    let j = report_json(&[prv, "--nvtx-range", "step"]);
    assert_eq!(
        (
            j["window"]["start_ns"].as_u64(),
            j["window"]["end_ns"].as_u64()
        ),
        (Some(3000), Some(9500))
    );
    let text =
        String::from_utf8_lossy(&report(&[prv, "--nvtx-range", "step#2"]).stdout).into_owned();
    assert!(
        text.starts_with(&format!("GPU efficiency report of {prv}, from 0.000005 s to 0.000010 s (--nvtx-range step#2: 2 ranges on 2 tasks)")),
        "{text}"
    );

    // Errors: a usage error naming what the trace has.
    for (args, says) in [
        (
            vec!["--nvtx-range", "nope"],
            "no NVTX range of that name; the trace has 'step'",
        ),
        (
            vec!["--nvtx-range", "step#3"],
            "no thread has 3 ranges of that name (at most 2 on one thread)",
        ),
        (
            vec!["--time-window", "20us:"],
            "at or after the end of the trace",
        ),
        (
            vec!["--time-window", "1us:2us", "--nvtx-range", "step"],
            "cannot be used with",
        ),
    ] {
        let mut all = vec![prv];
        all.extend(args.iter().copied());
        let out = report(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}
