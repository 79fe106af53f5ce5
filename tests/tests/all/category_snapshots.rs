//! A snapshot per category of the registry, so that a category added to it is
//! covered without editing this test: each category translated alone (`-t NAME`)
//! from the first input that has rows in its tables (the bundled samples, then
//! a synthetic export with every simulation of nsys-synth and the rows
//! `fixtures::declared_rows` declares), its `.prv`, `.pcf`, `.row` and views
//! checked byte for byte (FNV-1a digests), with the head of the trace to review
//! (`cargo insta review`, or `INSTA_UPDATE=always` to accept). A category whose
//! tables have rows in no input fails here, saying so.

use std::path::{Path, PathBuf};

use end_to_end::fixtures::declared_rows;
use end_to_end::*;
use nsys_semantics::{CategoryInfo, Registry};
use nsys_synth::{
    add_cpu_activity, add_rows, write_export, MpiPattern, SchemaVersion, SynthCpu, SynthDeviceSide,
    SynthMpi, SynthSpec, SynthTraining,
};

/// Lines of the `.prv` body kept in a snapshot.
const HEAD: usize = 12;

/// The synthetic input: a small CUDA process with every device-side recording,
/// one training step (NVTX and NCCL ranges), MPI calls, CPU samples, scheduling
/// and counters, and the declared rows.
fn synthetic_export(dir: &Path) -> PathBuf {
    let path = dir.join("synthetic_all.sqlite");
    let version = SchemaVersion::V3_24;
    let mut spec = SynthSpec::small(version);
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 20,
        graph_launches: 2,
        memory_allocations: 4,
        nic_samples: 10,
        ib_switch_samples: 10,
        ib_congestion_events: 2,
        soc_metric_samples: 10,
        host_functions: 2,
        ..SynthDeviceSide::default()
    };
    spec.training = Some(SynthTraining {
        layers: 1,
        buckets: 1,
        kernel_names: 6,
        ..SynthTraining::new(1)
    });
    // Rank 0 of two, in the MPI tables (the samples have MPI in NVTX only).
    spec.mpi = Some(SynthMpi::new(0, 2, MpiPattern::Ring, spec.utc_epoch_ns));
    write_export(&spec, &path).unwrap();
    let cpu = SynthCpu {
        samples_per_thread: 30,
        nvtx_ranges_per_thread: 0,
        cpu_counters: 2,
    };
    add_cpu_activity(&path, &spec, &cpu).unwrap();
    add_rows(&path, version, &declared_rows()).unwrap();
    path
}

/// The inputs, in the order they are tried: (name in snapshots, path).
fn inputs(dir: &Path) -> Vec<(String, PathBuf)> {
    let samples = workspace_root().join("samples");
    let mut found: Vec<PathBuf> = files_under(&samples)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    found.sort();
    let mut inputs: Vec<(String, PathBuf)> = found
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&samples).unwrap().display().to_string();
            (format!("samples/{name}"), p)
        })
        .collect();
    inputs.push(("synthetic_all".to_string(), synthetic_export(dir)));
    inputs
}

/// Rows of `category`'s tables (and families of tables) in `input`.
fn rows_of(category: &CategoryInfo, input: &Path) -> u64 {
    let db =
        rusqlite::Connection::open_with_flags(input, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    tables
        .iter()
        .filter(|t| {
            category.tables.contains(&t.as_str())
                || category.table_prefixes.iter().any(|p| t.starts_with(p))
        })
        .map(|t| {
            db.query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap() as u64
        })
        .sum()
}

/// FNV-1a (64 bits) of `bytes`.
fn digest(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// What the conversion of `input` with `options` wrote, as a snapshot's text;
/// `None` when it found nothing selected to translate.
fn translate(name: &str, options: &[&str], input: &Path, out_dir: &Path) -> Option<String> {
    let out = out_dir.join(format!("{name}.prv"));
    let result = convert(&[input], &out, options);
    if !result.status.success() {
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(
            stderr.contains("no events to translate")
                || stderr.contains("nothing selected to translate"),
            "{options:?} on {}: {stderr}",
            input.display()
        );
        return None;
    }
    check_trace(&out);
    let read = |ext: &str| std::fs::read(out.with_extension(ext)).unwrap();
    let prv = String::from_utf8(read("prv")).unwrap();
    let mut text = String::new();
    for ext in ["prv", "pcf", "row"] {
        let bytes = read(ext);
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        text += &format!(".{ext}: {lines} lines, {}\n", digest(&bytes));
    }
    let views = out_dir.join(format!("{name}.cfgs"));
    let mut files: Vec<PathBuf> = files_under(&views);
    files.sort();
    text += "views:\n";
    for file in files {
        let rel = file.strip_prefix(&views).unwrap().display().to_string();
        if rel.starts_with('.') {
            continue;
        }
        text += &format!("  {rel} {}\n", digest(&std::fs::read(&file).unwrap()));
    }
    text += "head of the trace:\n";
    for line in prv
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with('c'))
        .take(HEAD)
    {
        text += &format!("  {line}\n");
    }
    Some(text)
}

#[test]
fn every_category_of_the_registry_alone() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut missing = Vec::new();
    for category in Registry::standard().iter() {
        let name = category.category.name();
        let out_dir = dir.path().join(name);
        std::fs::create_dir(&out_dir).unwrap();
        let with_rows: Vec<&(String, PathBuf)> = inputs
            .iter()
            .filter(|(_, input)| rows_of(category, input) > 0)
            .collect();
        // Alone on the first input where that translates something; else with
        // every category (device rows go under the processes others find).
        let alone = ["-t", name];
        let found = [
            (&alone[..], format!("-t {name}")),
            (&[][..], "every category".into()),
        ]
        .iter()
        .find_map(|(options, said)| {
            with_rows.iter().find_map(|(input_name, input)| {
                let text = translate(name, options, input, &out_dir)?;
                Some(format!("{said} on {input_name}\n{text}"))
            })
        });
        match found {
            Some(text) => insta::assert_snapshot!(format!("category_{name}"), text),
            None => missing.push(name),
        }
    }
    assert!(
        missing.is_empty(),
        "no input has rows these categories translate: {missing:?} (add a sample, or declare \
         rows of their tables in tests/src/fixtures.rs, declared_rows)"
    );
}
