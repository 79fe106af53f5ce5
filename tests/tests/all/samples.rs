//! Snapshots of the trace of every bundled sample: its `.pcf`, its `.row`, and the
//! head and tail of its `.prv`, so that any change of output shows in review
//! (`cargo insta review`, or `INSTA_UPDATE=always` to accept).

use std::path::{Path, PathBuf};

use end_to_end::*;

/// Lines of the `.prv` kept at each end.
const ENDS: usize = 40;

fn sample(rel: &str) -> Vec<PathBuf> {
    let path = workspace_root().join("samples").join(rel);
    if path.is_dir() {
        let mut files: Vec<PathBuf> = files_under(&path)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
            .collect();
        files.sort();
        files
    } else {
        vec![path]
    }
}

/// Converts a sample and snapshots what it wrote, under `name`.
fn snapshot(name: &str, inputs: &[PathBuf]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{name}.prv"));
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let result = convert(&inputs, &out, &[]);
    assert!(
        result.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    check_trace(&out);
    let read = |ext: &str| std::fs::read_to_string(out.with_extension(ext)).unwrap();
    let prv = read("prv");
    let lines: Vec<&str> = prv.lines().collect();
    let head = lines[..ENDS.min(lines.len())].join("\n");
    let tail = lines[lines.len().saturating_sub(ENDS)..].join("\n");
    insta::assert_snapshot!(format!("{name}.pcf"), read("pcf"));
    insta::assert_snapshot!(format!("{name}.row"), read("row"));
    insta::assert_snapshot!(
        format!("{name}.prv"),
        format!("{} lines\n{head}\n...\n{tail}", lines.len())
    );
}

#[test]
fn nvtx_osrt() {
    snapshot("nvtx_osrt", &sample("nvtx_osrt/nvtx_osrt.sqlite"));
}

#[test]
fn sched() {
    snapshot("sched", &sample("sched/sched.sqlite"));
}

#[test]
fn sampling() {
    snapshot("sampling", &sample("sampling/sampling.sqlite"));
}

#[test]
fn sched_only() {
    snapshot("sched_only", &sample("sched_only/sched_only.sqlite"));
}

#[test]
fn openmp() {
    snapshot("openmp", &sample("openmp/openmp.sqlite"));
}

#[test]
fn mpi_2ranks() {
    snapshot("mpi_2ranks", &sample("mpi_2ranks"));
}

#[test]
fn mpi_3ranks() {
    snapshot("mpi_3ranks", &sample("mpi_3ranks"));
}

#[test]
fn synthetic_cuda() {
    snapshot("cuda_2025.5", &sample("synthetic/cuda_2025.5.sqlite"));
}

#[test]
fn synthetic_four_ranks() {
    snapshot(
        "4ranks_2hosts_2022.4",
        &sample("synthetic/4ranks_2hosts_2022.4"),
    );
}

/// Every sample is snapshotted above, except the one with nothing recorded
/// (sampling.rs checks that it fails and says so).
#[test]
fn every_sample_has_a_snapshot() {
    let samples = workspace_root().join("samples");
    let exports: Vec<PathBuf> = files_under(&samples)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    let covered: Vec<PathBuf> = [
        "nvtx_osrt/nvtx_osrt.sqlite",
        "sched/sched.sqlite",
        "sampling/sampling.sqlite",
        "sched_only/sched_only.sqlite",
        "nothing/nothing.sqlite",
        "openmp/openmp.sqlite",
        "mpi_2ranks",
        "mpi_3ranks",
        "synthetic/cuda_2025.5.sqlite",
        "synthetic/4ranks_2hosts_2022.4",
    ]
    .iter()
    .flat_map(|s| sample(s))
    .collect();
    for export in exports {
        assert!(
            covered.contains(&export),
            "{} has no snapshot",
            export.display()
        );
    }
}
