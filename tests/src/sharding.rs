//! Helpers of the sharded-conversion tests: synthetic jobs of many ranks, runs
//! of every shard and the merge, and comparisons of output directories.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::{binary, files_under};

/// A synthetic MPI job of `n` ranks (`rank{r}.sqlite` in `dir`) on two hosts,
/// ring messages between them, ranks of unequal sizes (so shards balanced by
/// size differ from shards by count), started at `job_start` (ns since the epoch).
pub fn synthetic_mpi_job(dir: &Path, n: u32, job_start: i64) -> Vec<PathBuf> {
    use nsys_synth::{MpiPattern, SchemaVersion, SynthMpi, SynthSpec};
    let schema = SchemaVersion::V3_24;
    (0..n)
        .map(|rank| {
            let mut spec = SynthSpec::small(schema);
            spec.hostname = format!("node{:02}", rank % 2 + 1);
            spec.utc_epoch_ns = job_start + i64::from(rank) * 3_700;
            spec.seed = u64::from(rank) + 7;
            spec.processes[0].pid = 5000 + rank;
            spec.processes[0].kernels = 8 + u64::from(rank % 7) * 12;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            spec.mpi = Some(SynthMpi::new(rank, n, MpiPattern::Ring, job_start));
            let path = dir.join(format!("rank{rank}.sqlite"));
            nsys_synth::write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// `nsys2prv-rs -q [extra] --shard I/N inputs output`.
pub fn shard(inputs: &[PathBuf], output: &Path, index: u32, count: u32, extra: &[&str]) -> Output {
    binary()
        .arg("-q")
        .args(extra)
        .arg(format!("--shard={index}/{count}"))
        .args(inputs)
        .arg(output)
        .output()
        .expect("run nsys2prv-rs --shard")
}

/// `nsys2prv-rs merge -q [extra] output`.
pub fn merge(output: &Path, extra: &[&str]) -> Output {
    binary()
        .args(["merge", "-q"])
        .args(extra)
        .arg(output)
        .output()
        .expect("run nsys2prv-rs merge")
}

pub fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Translates every shard of `count` (last first: the order does not matter)
/// and merges them.
pub fn convert_sharded(inputs: &[PathBuf], output: &Path, count: u32, extra: &[&str]) {
    for index in (0..count).rev() {
        assert_ok(
            &shard(inputs, output, index, count, extra),
            &format!("shard {index}/{count}"),
        );
    }
    assert_ok(&merge(output, &[]), "merge");
}

/// Every file below `dir`, by its path relative to `dir`, with its bytes.
pub fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p.strip_prefix(dir).unwrap().to_path_buf(), bytes)
        })
        .collect()
}

/// `a` and `b` hold the same files with the same bytes.
pub fn assert_same_files(a: &Path, b: &Path) {
    let (left, right) = (contents(a), contents(b));
    let names = |c: &[(PathBuf, Vec<u8>)]| c.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&left),
        names(&right),
        "{} and {}",
        a.display(),
        b.display()
    );
    for ((name, x), (_, y)) in left.iter().zip(&right) {
        assert!(
            x == y,
            "{} differs between {} and {}",
            name.display(),
            a.display(),
            b.display()
        );
    }
}

/// A data-parallel training job of `ranks` ranks (`rank{r}.sqlite` in `dir`)
/// on two hosts, as `nsys-synth --training` writes it: NVTX ranges
/// (`train_step`, `forward`, ...), NCCL and ring MPI, started at `job_start`.
pub fn synthetic_training_job(dir: &Path, ranks: u32, job_start: i64) -> Vec<PathBuf> {
    use nsys_synth::{MpiPattern, SchemaVersion, SynthMpi, SynthProcess, SynthSpec, SynthTraining};
    (0..ranks)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.hostname = format!("node{:02}", rank % 2 + 1);
            spec.utc_epoch_ns = job_start + i64::from(rank) * 2_750;
            spec.seed = 3_000_017 + u64::from(rank);
            spec.processes = vec![SynthProcess {
                pid: 42_000 + 101 * rank,
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
            spec.mpi = Some(SynthMpi::new(rank, ranks, MpiPattern::Ring, job_start));
            let shape = SynthTraining::new(1);
            spec.training = Some(SynthTraining {
                steps: shape.steps_for_rows(3_000),
                ..shape
            });
            let path = dir.join(format!("rank{rank}.sqlite"));
            nsys_synth::write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}
