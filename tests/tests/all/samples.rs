//! Snapshots of the conversion of every bundled sample: the sha256 of every file it
//! writes (trace, `.pcf`, `.row`, `.pmf`, every view, `INDEX.md`), so that a change of
//! any byte fails here naming the file; and, to show what changed, its `.pcf`, its
//! `.row`, and the head and tail of its `.prv`. Review a change with
//! `cargo insta review` (or accept it with `INSTA_UPDATE=always`), and say why in the
//! commit.

use std::path::{Path, PathBuf};

use end_to_end::*;
use sha2::{Digest, Sha256};

/// Lines of the `.prv` kept at each end.
const ENDS: usize = 40;

/// The exports of a sample, relative to the workspace root.
fn sample(rel: &str) -> Vec<PathBuf> {
    let root = workspace_root();
    let path = Path::new("samples").join(rel);
    if root.join(&path).is_dir() {
        let mut files: Vec<PathBuf> = files_under(&root.join(&path))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
            .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
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
    // From the workspace root, with relative inputs: the `.pmf` names them as given.
    let result = convert_in(&workspace_root(), &inputs, &out, &[]);
    assert!(
        result.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    check_trace(&out);
    insta::assert_snapshot!(format!("{name}.sha256"), hashes(dir.path()));
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

/// Every file under `dir` as `sha256sum` prints it (`HASH  PATH`, paths relative to
/// `dir`), sorted by path: `cd DIR && sha256sum -c` checks a conversion by hand (but
/// for the `.pmf`, below).
///
/// The `.pmf` names the input reports by absolute path, as BSC's does: the checkout's
/// directory is replaced by `<workspace>` before hashing, so that the hashes are the
/// same in any checkout (CI's clean clone too).
fn hashes(dir: &Path) -> String {
    let root = workspace_root().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let mut text = String::new();
    for path in files_under(dir) {
        let mut bytes = std::fs::read(&path).unwrap();
        if path.extension().is_some_and(|e| e == "pmf") {
            let json = String::from_utf8(bytes).unwrap();
            assert!(
                json.contains(root),
                "{}: no input under {root}",
                path.display()
            );
            bytes = json.replace(root, "<workspace>").into_bytes();
        }
        let digest = Sha256::digest(&bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let relative = path.strip_prefix(dir).unwrap();
        text += &format!("{hex}  {}\n", relative.display());
    }
    text
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
        .map(|p| p.strip_prefix(workspace_root()).unwrap().to_path_buf())
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
