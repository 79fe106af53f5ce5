//! Cuts applied where rows are read (issue 28): `--time-window` and `--nvtx-range`
//! found before translating, rows wholly outside left out by the categories that
//! can; the trace is the merge's cut alone (`--cut-in-merge`), byte for byte, in
//! one process and sharded, and the parts shrink with the cut.

use std::path::{Path, PathBuf};

use end_to_end::sharding::{assert_same_files, convert_sharded, synthetic_mpi_job};
use end_to_end::*;
use nsys_synth::{
    write_export, MpiPattern, SchemaVersion, SynthDeviceSide, SynthMpi, SynthProcess, SynthSpec,
    SynthTraining,
};

/// Launch of the generated jobs: 2025-03-01T09:00:00Z.
const JOB_START: i64 = 1_740_819_600_000_000_000;

/// The end time of a trace's header and its first record's time.
fn span_of(prv: &Path) -> (i64, i64) {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let end: i64 = header
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("_ns")
        .parse()
        .unwrap();
    let first = lines
        .filter_map(|l| l.split(':').nth(5)?.parse::<i64>().ok())
        .min()
        .unwrap();
    (first, end)
}

/// Windows over the activity of `inputs`: its middle third, a start left open,
/// an end left open.
fn windows(inputs: &[&Path], dir: &Path) -> Vec<String> {
    let full = dir.join("full.prv");
    let out = convert(inputs, &full, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (first, end) = span_of(&full);
    let third = (end - first) / 3;
    vec![
        format!("{}ns:{}ns", first + third, first + 2 * third),
        format!(":{}ns", first + third),
        format!("{}ns:", end - third),
    ]
}

/// The cut of `args` on `inputs` where rows are read and in the merge only: the
/// same outcome, and the same files when it succeeds.
fn same_cut(inputs: &[&Path], dir: &Path, args: &[&str]) -> Option<PathBuf> {
    let (read, merged) = (dir.join("read"), dir.join("merged"));
    for d in [&read, &merged] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let at_read = convert(inputs, &read.join("cut.prv"), args);
    let mut merge_args = args.to_vec();
    merge_args.push("--cut-in-merge");
    let at_merge = convert(inputs, &merged.join("cut.prv"), &merge_args);
    assert_eq!(
        at_read.status.code(),
        at_merge.status.code(),
        "{args:?} on {inputs:?}: {} / {}",
        String::from_utf8_lossy(&at_read.stderr),
        String::from_utf8_lossy(&at_merge.stderr)
    );
    if !at_read.status.success() {
        return None;
    }
    assert_same_files(&read, &merged);
    Some(read)
}

#[test]
fn every_sample_is_cut_where_read_as_the_merge_cuts_it() {
    let samples = workspace_root().join("samples");
    let sets: Vec<(Vec<PathBuf>, &[&str])> = vec![
        (
            (0..2)
                .map(|r| samples.join(format!("mpi_2ranks/rank{r}.sqlite")))
                .collect(),
            &["allreduce#2", "iteration", "ring#3"],
        ),
        (
            (0..3)
                .map(|r| samples.join(format!("mpi_3ranks/rank{r}.sqlite")))
                .collect(),
            &["iteration#2", "bcast", "barrier wait (rank 0)#1"],
        ),
        (
            vec![samples.join("nvtx_osrt/nvtx_osrt.sqlite")],
            &[
                "iteration#2",
                "compute",
                "overlap B",
                "handoff (main -> worker-1)",
            ],
        ),
        (
            vec![samples.join("sched/sched.sqlite")],
            &["iteration#3", "locked update"],
        ),
        (
            vec![samples.join("openmp/openmp.sqlite")],
            &["rep#2", "tasks"],
        ),
        (vec![samples.join("sampling/sampling.sqlite")], &[]),
        (vec![samples.join("sched_only/sched_only.sqlite")], &[]),
        (vec![samples.join("synthetic/cuda_2025.5.sqlite")], &[]),
        (
            files_under(&samples.join("synthetic/4ranks_2hosts_2022.4"))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
                .collect(),
            &[],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut cut = 0;
    for (files, ranges) in &sets {
        let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        for window in windows(&inputs, dir.path()) {
            cut +=
                usize::from(same_cut(&inputs, dir.path(), &["--time-window", &window]).is_some());
        }
        for range in *ranges {
            let kept = same_cut(&inputs, dir.path(), &["--nvtx-range", range]);
            assert!(kept.is_some(), "--nvtx-range {range} on {inputs:?}");
        }
    }
    assert!(cut > 20, "most windows hold records: {cut}");
}

/// A data-parallel training job of `ranks` ranks on two nodes (NVTX, NCCL, GPU
/// metrics, MPI), as `nsys-synth --training` writes it.
fn training_job(dir: &Path, ranks: u32) -> Vec<PathBuf> {
    (0..ranks)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.hostname = format!("node{:02}", rank % 2 + 1);
            spec.utc_epoch_ns = JOB_START + i64::from(rank) * 2_750;
            spec.seed = 2_000_003 + u64::from(rank);
            spec.processes = vec![SynthProcess {
                pid: 41_000 + 101 * rank,
                name: "python3".into(),
                cpu_threads: 2,
                devices: vec![rank / 2],
                streams_per_device: 4,
                kernels: 0,
                memcpys: 0,
                memsets: 0,
                syncs: 0,
                extra_api_calls: 0,
            }];
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            spec.mpi = Some(SynthMpi::new(rank, ranks, MpiPattern::Ring, JOB_START));
            spec.device = SynthDeviceSide {
                gpu_metric_samples: 1_000,
                ..SynthDeviceSide::default()
            };
            let shape = SynthTraining::new(1);
            spec.training = Some(SynthTraining {
                steps: shape.steps_for_rows(6_000),
                ..shape
            });
            let path = dir.join(format!("train_rank{rank}.sqlite"));
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// One rank with graphs, host functions' neighbours, GPU memory, NIC and IB
/// counters: what kernels share streams with, and counters that carry values.
fn device_side(dir: &Path) -> PathBuf {
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 500,
        graph_launches: 3,
        memory_allocations: 4,
        nic_samples: 40,
        ib_switch_samples: 10,
        ib_congestion_events: 3,
        ..SynthDeviceSide::default()
    };
    let path = dir.join("device_side.sqlite");
    write_export(&spec, &path).unwrap();
    path
}

#[test]
fn generated_jobs_are_cut_where_read_as_the_merge_cuts_them_single_and_sharded() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<(Vec<PathBuf>, &[&str])> = vec![
        (
            training_job(dir.path(), 4),
            &["train_step#2", "forward#3", "model.layers.1"],
        ),
        (synthetic_mpi_job(dir.path(), 5, JOB_START), &[]),
        (vec![device_side(dir.path())], &[]),
    ];
    for (files, ranges) in &jobs {
        let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let mut cuts: Vec<Vec<String>> = windows(&inputs, dir.path())
            .into_iter()
            .map(|w| vec!["--time-window".to_string(), w])
            .collect();
        cuts.extend(
            ranges
                .iter()
                .map(|r| vec!["--nvtx-range".to_string(), r.to_string()]),
        );
        for args in &cuts {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let Some(single) = same_cut(&inputs, dir.path(), &args) else {
                continue;
            };
            // Sharded over 2 (the window resolved in the plan), as one process.
            let sharded = dir.path().join("sharded");
            let _ = std::fs::remove_dir_all(&sharded);
            std::fs::create_dir_all(&sharded).unwrap();
            convert_sharded(files, &sharded.join("cut.prv"), 2, &args);
            assert_same_files(&single, &sharded);
        }
    }
}

/// Total size of the part files of a sharded conversion of `inputs` cut by
/// `args` (kept with `--keep-parts`).
fn parts_size(inputs: &[PathBuf], dir: &Path, args: &[&str]) -> u64 {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let trace = dir.join("cut.prv");
    for index in 0..2 {
        let out = end_to_end::sharding::shard(inputs, &trace, index, 2, args);
        end_to_end::sharding::assert_ok(&out, "shard");
    }
    files_under(&dir.join("cut.parts"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "part"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

/// The cut happens where rows are read: a window of a third of the run leaves
/// parts of about a third of the size (were it the merge's alone, they would
/// be the uncut run's).
#[test]
fn parts_shrink_with_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = training_job(dir.path(), 2);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let window = windows(&refs, dir.path()).remove(0);
    let args = ["--time-window", window.as_str()];
    let read = parts_size(&inputs, &dir.path().join("read"), &args);
    let merged = parts_size(
        &inputs,
        &dir.path().join("merged"),
        &["--time-window", &window, "--cut-in-merge"],
    );
    assert!(
        read * 2 < merged,
        "parts of a third of the run: {read} bytes, against {merged} uncut"
    );
    // And the merge of the smaller parts is the trace of the merge's cut.
    for d in ["read", "merged"] {
        end_to_end::sharding::assert_ok(
            &end_to_end::sharding::merge(&dir.path().join(d).join("cut.prv"), &[]),
            "merge",
        );
    }
    assert_same_files(&dir.path().join("read"), &dir.path().join("merged"));
    // The tables read whole (NVTX, NCCL, copies, MPI, GPU metrics) are kept to
    // the window too: one step of the job, in parts of about its size (they
    // went into the parts whole: 2.1 times smaller than the uncut ones, not 5).
    let args = ["--nvtx-range", "train_step#2"];
    let read = parts_size(&inputs, &dir.path().join("read"), &args);
    let merged = parts_size(
        &inputs,
        &dir.path().join("merged"),
        &["--nvtx-range", "train_step#2", "--cut-in-merge"],
    );
    assert!(
        read * 3 < merged,
        "parts of one step: {read} bytes, against {merged} uncut"
    );
}

/// Runs that spill (a tiny `--memory-limit`): what lies before the window is
/// written apart and read back once, in order, whatever pass pushed it; the
/// cut is still the merge's, byte for byte, in one process and sharded. The
/// training job has NVTX ranges nested four deep open across both edges of
/// its windows, GPU metrics (values that hold) and MPI messages; the device
/// side has GPU memory in use and NIC and IB counters.
#[test]
fn spilled_runs_are_cut_where_read_as_the_merge_cuts_them() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<(Vec<PathBuf>, &[&str])> = vec![
        (training_job(dir.path(), 2), &["train_step#2", "forward#3"]),
        (vec![device_side(dir.path())], &[]),
    ];
    for (files, ranges) in &jobs {
        let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let mut cuts: Vec<Vec<String>> = windows(&inputs, dir.path())
            .into_iter()
            .map(|w| vec!["--time-window".to_string(), w])
            .collect();
        cuts.extend(
            ranges
                .iter()
                .map(|r| vec!["--nvtx-range".to_string(), r.to_string()]),
        );
        for args in &cuts {
            let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
            args.extend(["--memory-limit", "64K", "-j", "1"]);
            let Some(single) = same_cut(&inputs, dir.path(), &args) else {
                continue;
            };
            let sharded = dir.path().join("sharded");
            let _ = std::fs::remove_dir_all(&sharded);
            std::fs::create_dir_all(&sharded).unwrap();
            convert_sharded(files, &sharded.join("cut.prv"), 2, &args);
            assert_same_files(&single, &sharded);
        }
    }
}
