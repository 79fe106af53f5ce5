use super::*;

#[test]
fn bsc_headers_are_read_as_the_format_has_them() {
    let line = "#Paraver (25/11/2026 at 06:41):1248337078_ns:0:1:2:(5:1,5:1)";
    let fixed = bsc_header(line).unwrap();
    assert_eq!(
        fixed,
        "#Paraver (25/11/2026 at 06:41):1248337078_ns:1(1):1:2(5:1,5:1)"
    );
    let header = parse_header(&fixed, &mut Vec::new()).unwrap();
    assert_eq!(header.appls[0].len(), 2);
    assert_eq!(bsc_header("#Paraver (x):10_ns:1(2):1:1(1:1)"), None);
}

// --- the accumulators on small traces -------------------------------------------

use std::fmt::Write as _;

use expect_test::{expect, Expect};

/// One task: a CPU thread, two streams of GPU 0 and its metrics row.
const ROW: &str = "LEVEL NODE SIZE 1\nnode01\n\nLEVEL TASK SIZE 1\nrank 0\n\n\
LEVEL THREAD SIZE 4\nmain\nCUDA-D0.S7\nCUDA-D0.S8\nGPU0 metrics\n";

const PCF: &str = "\
EVENT_TYPE\n0 63000000 CUDA API\nVALUES\n0 End\n1 cudaLaunchKernel\n2 cudaStreamSynchronize\n\n\
EVENT_TYPE\n0 63000001 CUDA memory operation\nVALUES\n0 End\n1 memcpy HtoD\n\n\
EVENT_TYPE\n0 63000002 CUDA memory operation size\n\n\
EVENT_TYPE\n0 63000006 CUDA kernel\nVALUES\n0 End\n1 gemm\n2 relu\n\n\
EVENT_TYPE\n0 63000007 NCCL kernel\nVALUES\n0 End\n1 ncclDevKernel_AllReduce\n\n\
EVENT_TYPE\n0 9501 NCCL message size (bytes)\n\n\
EVENT_TYPE\n0 9505 NCCL communicator ID\n\n\
EVENT_TYPE\n0 9520 NCCL collective\nVALUES\n1 AllReduce\n\n\
EVENT_TYPE\n0 9400 GPU metric SM active x100\n\n\
EVENT_TYPE\n0 50000002 MPI Collective Comm\nVALUES\n0 Outside MPI\n10 MPI_Allreduce\n\n\
EVENT_TYPE\n0 50100001 Send Size in MPI Global OP\n\n\
EVENT_TYPE\n0 9600 NVTX range\nVALUES\n0 End\n1 iteration\n2 setup\n\n";

/// Scans `body` (the `.prv` after its header: a 1000 ns trace of the layout
/// above) and prints every figure.
fn check(body: &str, window: Option<(u64, u64)>, expect: Expect) {
    let mut scan = scanned(body, PCF, window);
    expect.assert_eq(&figures(&mut scan));
}

/// The scan of `body` (the `.prv` after its header: a 1000 ns trace of the
/// layout above) with the `.pcf` `pcf`, run to its end.
fn scanned(body: &str, pcf: &str, window: Option<(u64, u64)>) -> Scan {
    let dir = tempfile::tempdir().unwrap();
    let prv = dir.path().join("t.prv");
    let header = "#Paraver (01/01/2026 at 00:00):1000_ns:1(4):1:1(4:1)\n";
    std::fs::write(&prv, format!("{header}{body}")).unwrap();
    std::fs::write(dir.path().join("t.pcf"), pcf).unwrap();
    std::fs::write(dir.path().join("t.row"), ROW).unwrap();
    let files = TraceFiles::of(&prv);
    let options = ScanOptions {
        iterations: None,
        gap_threshold_ns: 10,
        bins: 4,
        gaps_per_gpu: 2,
        memory_limit: 1 << 20,
        window,
        pipeline_stages: None,
    };
    let (mut scan, mut reader) = Scan::open(&files, &options).unwrap();
    scan.run(&mut reader, &files).unwrap();
    scan.finish().unwrap();
    scan
}

fn figures(scan: &mut Scan) -> String {
    let mut out = String::new();
    for gpu in 0..scan.gpu_count() {
        let t = scan.gpu_times(gpu);
        writeln!(
            out,
            "gpu {gpu} (task {} device {}, {} streams): useful {} communication {} overlap {:?} bins {:?}/{:?} gaps {} ({} ns)",
            t.task, t.device, t.streams, t.useful, t.communication, t.overlap,
            t.bins_compute, t.bins_communication, t.gap_count, t.gap_total
        )
        .unwrap();
        for gap in scan.gaps(gpu) {
            writeln!(
                out,
                "  gap {} ns at {} after {} (call {:?}, range {:?})",
                gap.duration_ns, gap.begin_ns, gap.thread, gap.call, gap.nvtx
            )
            .unwrap();
        }
    }
    let stats = |s: &NamedStatsAcc| {
        format!(
            "{}x total {} min {} max {} bytes {} ({} sized)",
            s.count, s.total, s.min, s.max, s.bytes, s.sized
        )
    };
    let mut lines: Vec<String> = scan
        .kernel_stats()
        .map(|(v, s)| {
            format!(
                "kernel {}: {}",
                scan.names.value(CUDA_KERNEL, v, "kernel"),
                stats(s)
            )
        })
        .collect();
    lines.extend(scan.kernel_metric_means().map(|(k, ty, mean)| {
        format!(
            "kernel {} metric {}: mean {mean}",
            scan.names.value(CUDA_KERNEL, k, "kernel"),
            scan.metric_name(ty).0
        )
    }));
    lines.extend(scan.nccl_stats().into_iter().map(|n| {
        format!(
            "nccl {}: {} by communicator {:?}",
            n.name,
            stats(&n.stats),
            n.by_communicator
        )
    }));
    lines.extend(scan.memory_stats().map(|(v, s)| {
        format!(
            "memory {}: {}",
            scan.names.value(MEMORY_OP, v, "memory operation"),
            stats(s)
        )
    }));
    lines.extend(
        scan.mpi_stats().map(|((ty, v), s)| {
            format!("mpi {}: {}", scan.names.value(ty, v, "MPI call"), stats(s))
        }),
    );
    lines.sort();
    let (names, occurrences) = scan.take_occurrences();
    for (candidate, task, begin, end) in occurrences {
        lines.push(format!(
            "iteration {} on task {task}: {begin}..{end}",
            names[candidate as usize]
        ));
    }
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
    writeln!(
        out,
        "elapsed {} from {}, first activity {:?}, seen {:?}",
        scan.elapsed, scan.window_start, scan.first_activity, scan.seen
    )
    .unwrap();
    out
}

#[test]
fn kernels_fill_the_gpu_time_and_their_statistics() {
    check(
        "\
2:0:1:1:2:100:63000006:1
2:0:1:1:3:150:63000006:2
2:0:1:1:4:175:9400:50
2:0:1:1:2:200:63000006:0
2:0:1:1:3:300:63000006:0
2:0:1:1:2:400:63000006:1
2:0:1:1:4:450:9400:70
2:0:1:1:2:500:63000006:0
",
        None,
        expect![[r#"
            gpu 0 (task 1 device 0, 2 streams): useful 300 communication 0 overlap [] bins [150, 150, 0, 0]/[0, 0, 0, 0] gaps 1 (100 ns)
              gap 100 ns at 300 after rank 0 / main (call None, range None)
            kernel gemm metric SM active: mean 60
            kernel gemm: 2x total 200 min 100 max 100 bytes 0 (0 sized)
            kernel relu metric SM active: mean 50
            kernel relu: 1x total 150 min 150 max 150 bytes 0 (0 sized)
            elapsed 1000 from 0, first activity Some(100), seen Seen { nccl_kernels: 0, nccl_with_collective: 0, nccl_with_size: 0, memory_ops: 0, launches: 0, metric_samples: 2, bsc_header: false }
        "#]],
    );
}

#[test]
fn gaps_name_what_the_launching_thread_was_doing() {
    check(
        "\
2:0:1:1:1:50:9600:1
2:0:1:1:1:90:63000000:1
3:0:1:1:1:90:90:0:1:1:2:100:100:0:55001
2:0:1:1:2:100:63000006:1
2:0:1:1:1:110:63000000:0
2:0:1:1:1:150:63000000:2
2:0:1:1:2:200:63000006:0
2:0:1:1:2:600:63000006:2
2:0:1:1:1:610:63000000:0
2:0:1:1:2:700:63000006:0
2:0:1:1:1:900:9600:0
",
        None,
        expect![[r#"
            gpu 0 (task 1 device 0, 2 streams): useful 200 communication 0 overlap [] bins [100, 0, 100, 0]/[0, 0, 0, 0] gaps 1 (400 ns)
              gap 400 ns at 200 after rank 0 / main (call Some("CUDA: cudaStreamSynchronize"), range Some("iteration"))
            kernel gemm: 1x total 100 min 100 max 100 bytes 0 (0 sized)
            kernel relu: 1x total 100 min 100 max 100 bytes 0 (0 sized)
            iteration iteration on task 1: 50..900
            elapsed 1000 from 0, first activity Some(100), seen Seen { nccl_kernels: 0, nccl_with_collective: 0, nccl_with_size: 0, memory_ops: 0, launches: 1, metric_samples: 0, bsc_header: false }
        "#]],
    );
}

#[test]
fn nccl_memory_and_mpi_are_counted_with_their_bytes() {
    check(
        "\
2:0:1:1:1:100:50000002:10:50100001:4096
2:0:1:1:2:100:63000001:1:63000002:512
2:0:1:1:3:100:63000007:1:9501:1024:9505:77:9520:1
2:0:1:1:2:150:63000006:1
2:0:1:1:2:160:63000001:0:63000002:0
2:0:1:1:2:250:63000006:0
2:0:1:1:3:300:63000007:0:9501:0:9505:0:9520:0
2:0:1:1:1:400:50000002:0
",
        None,
        expect![[r#"
            gpu 0 (task 1 device 0, 2 streams): useful 100 communication 100 overlap [100, 100] bins [100, 0, 0, 0]/[150, 50, 0, 0] gaps 0 (0 ns)
            kernel gemm: 1x total 100 min 100 max 100 bytes 0 (0 sized)
            memory memcpy HtoD: 1x total 60 min 60 max 60 bytes 512 (1 sized)
            mpi MPI_Allreduce: 1x total 300 min 300 max 300 bytes 4096 (1 sized)
            nccl AllReduce: 1x total 200 min 200 max 200 bytes 1024 (1 sized) by communicator [(1024, 1)]
            elapsed 1000 from 0, first activity Some(100), seen Seen { nccl_kernels: 1, nccl_with_collective: 1, nccl_with_size: 1, memory_ops: 1, launches: 0, metric_samples: 0, bsc_header: false }
        "#]],
    );
}

#[test]
fn a_window_clips_intervals_and_keeps_the_iterations_inside() {
    check(
        "\
2:0:1:1:1:100:9600:1
2:0:1:1:2:150:63000006:1
2:0:1:1:1:200:9600:0
2:0:1:1:1:300:9600:1
2:0:1:1:2:350:63000006:0
2:0:1:1:1:400:9600:0
2:0:1:1:2:500:63000006:2
2:0:1:1:1:550:50000002:10
2:0:1:1:2:900:63000006:0
",
        Some((250, 600)),
        expect![[r#"
            gpu 0 (task 1 device 0, 2 streams): useful 200 communication 0 overlap [] bins [87, 13, 12, 88]/[0, 0, 0, 0] gaps 1 (150 ns)
              gap 150 ns at 350 after rank 0 / main (call None, range Some("iteration"))
            kernel gemm: 1x total 100 min 100 max 100 bytes 0 (0 sized)
            kernel relu: 1x total 100 min 100 max 100 bytes 0 (0 sized)
            mpi MPI_Allreduce: 1x total 50 min 50 max 50 bytes 0 (0 sized)
            iteration iteration on task 1: 50..150
            elapsed 350 from 250, first activity Some(0), seen Seen { nccl_kernels: 0, nccl_with_collective: 0, nccl_with_size: 0, memory_ops: 0, launches: 0, metric_samples: 0, bsc_header: false }
        "#]],
    );
}

/// Scans `body` like [`check`] and prints each GPU's idle time by cause and the
/// pieces.
fn check_idle(body: &str, expect: Expect) {
    let scan = scanned(body, PCF, None);
    let mut out = String::new();
    let idle = scan.idle_causes();
    for gpu in 0..scan.gpu_count() {
        let t = idle.totals(gpu);
        writeln!(
            out,
            "gpu {gpu}: {} gaps, [host-bound, dependency, other] {:?}",
            t.gaps, t.by_cause
        )
        .unwrap();
        for (context, ns) in idle.host_contexts(gpu) {
            writeln!(out, "  host-bound in {context:?}: {ns}").unwrap();
        }
    }
    for piece in &idle.pieces {
        writeln!(out, "{piece:?}").unwrap();
    }
    expect.assert_eq(&out);
}

#[test]
fn idle_time_splits_by_what_ended_each_gap() {
    // Kernel A (S7, launched at 50) runs 100-200. B (S8) launched at 300 in the
    // NVTX range `iteration` begins at 400: host-bound 200-300, then latency. A
    // stream wait on S7 at 450, then C launched into S7 at 460 begins at 700: the
    // gap 500-700 waited. D (no launch arrow) begins at 900: other.
    check_idle(
        "\
2:0:1:1:1:0:9600:1
3:0:1:1:1:50:50:0:1:1:2:100:100:0:55001
2:0:1:1:2:100:63000006:1
2:0:1:1:2:200:63000006:0
2:0:1:1:1:300:63000000:1
3:0:1:1:1:300:300:0:1:1:3:400:400:0:55001
2:0:1:1:1:310:63000000:0
2:0:1:1:3:400:63000006:2
2:0:1:1:2:450:9301:3
3:0:1:1:1:460:460:0:1:1:2:700:700:0:55001
2:0:1:1:3:500:63000006:0
2:0:1:1:2:700:63000006:1
2:0:1:1:2:800:63000006:0
2:0:1:1:2:900:63000006:2
2:0:1:1:2:950:63000006:0
2:0:1:1:1:990:9600:0
",
        expect![[r#"
            gpu 0: 3 gaps, [host-bound, dependency, other] [100, 200, 200]
              host-bound in (Some((9600, 1)), None): 100
            (0, HostBound, 200, 300)
            (0, Other, 300, 400)
            (0, Dependency, 500, 700)
            (0, Other, 800, 900)
        "#]],
    );
}

#[test]
fn a_host_function_on_the_stream_is_a_dependency() {
    // E launched at 120 into S8 behind a host function that runs 250-380 on S8:
    // the gap 200-400 waited for it.
    check_idle(
        "\
3:0:1:1:1:50:50:0:1:1:2:100:100:0:55001
2:0:1:1:2:100:63000006:1
3:0:1:1:1:120:120:0:1:1:3:400:400:0:55001
2:0:1:1:2:200:63000006:0
2:0:1:1:3:250:63000110:1
2:0:1:1:3:380:63000110:0
2:0:1:1:3:400:63000006:2
2:0:1:1:3:500:63000006:0
",
        expect![[r#"
            gpu 0: 1 gaps, [host-bound, dependency, other] [0, 200, 0]
            (0, Dependency, 200, 400)
        "#]],
    );
}

/// The pipeline figure's spans and transfers on a trace whose `.pcf` has a
/// point-to-point NCCL collective (which turns the figure on).
fn pipeline_spans(body: &str) -> String {
    let pcf = PCF.replace("1 AllReduce\n", "1 AllReduce\n2 SendRecv\n");
    let scan = scanned(body, &pcf, None);
    let pipeline = scan
        .pipeline()
        .expect("a point-to-point collective turns it on");
    let mut spans: Vec<_> = pipeline.spans.iter().collect();
    spans.sort_by_key(|(k, _)| **k);
    let mut out = String::new();
    for ((gpu, (candidate, begin)), s) in spans {
        let name = pipeline
            .candidate_names
            .get(*candidate as usize)
            .map_or("whole run", String::as_str);
        writeln!(
            out,
            "gpu {gpu} {name} from {begin}: {}..{} ({} kernels) bubble {} in NCCL {} idle {}",
            s.first,
            s.last,
            s.kernels,
            s.bubble(),
            s.in_nccl(),
            s.idle()
        )
        .unwrap();
    }
    writeln!(out, "transfers {:?}", pipeline.transfers).unwrap();
    out
}

/// A kernel belongs to the iteration its launch left the CPU in, even when it runs
/// after that iteration's range ended and the next began; the span's bubble splits
/// into time in NCCL kernels and time with nothing running.
#[test]
fn kernels_count_in_the_iteration_they_were_launched_in() {
    let spans = pipeline_spans(
        "\
2:0:1:1:1:50:9600:1
3:0:1:1:1:60:60:0:1:1:2:100:100:0:55001
3:0:1:1:1:70:70:0:1:1:2:400:400:0:55001
2:0:1:1:2:100:63000006:1
2:0:1:1:2:200:63000006:0:63000007:1:9520:2
3:0:1:1:2:200:200:0:1:1:3:250:300:4096:55005
2:0:1:1:2:300:63000007:0:9520:0
2:0:1:1:1:300:9600:0
2:0:1:1:1:350:9600:1
3:0:1:1:1:360:360:0:1:1:2:600:600:0:55001
2:0:1:1:2:400:63000006:2
2:0:1:1:2:500:63000006:0
2:0:1:1:2:600:63000006:1
2:0:1:1:2:700:63000006:0
2:0:1:1:1:900:9600:0
",
    );
    expect![[r#"
        gpu 0 iteration from 50: 100..500 (2 kernels) bubble 200 in NCCL 100 idle 100
        gpu 0 iteration from 350: 600..700 (1 kernels) bubble 0 in NCCL 0 idle 0
        gpu 0 whole run from 0: 100..700 (3 kernels) bubble 300 in NCCL 100 idle 200
        transfers {(0, 0): Transfers { count: 1, bytes: 4096, first: 200 }}
    "#]]
    .assert_eq(&spans);
}
