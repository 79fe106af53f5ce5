//! End-to-end tests on synthetic exports of every supported schema version: counts
//! preserved, traces valid, golden files, input-order independence, gzip output.

use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthCounts, SynthSpec};

fn small_export(dir: &Path, schema: SchemaVersion) -> (PathBuf, SynthCounts) {
    let path = dir.join(format!("small_{}.sqlite", schema.schema_version()));
    let counts = write_export(&SynthSpec::small(schema), &path).expect("generate export");
    (path, counts)
}

#[test]
fn every_schema_version_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    for schema in SchemaVersion::all() {
        let (input, counts) = small_export(dir.path(), schema);
        let output = dir.path().join(format!("{}.prv", schema.schema_version()));
        let result = convert(&[&input], &output, &[]);
        assert!(
            result.status.success(),
            "{schema}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let stats = check_trace(&output);
        let kernels = begins(&stats, 63_000_006) + begins(&stats, 63_000_007);
        assert_eq!(kernels, counts.kernels, "{schema}: kernels");
        assert_eq!(
            begins(&stats, 63_000_001),
            counts.memcpys + counts.memsets,
            "{schema}: memory"
        );
        assert_eq!(
            begins(&stats, 63_000_000),
            counts.runtime_rows,
            "{schema}: API calls"
        );
        assert_eq!(begins(&stats, 9350), counts.syncs, "{schema}: syncs");
        assert_eq!(
            stats.comm_tags.get(&55_001).copied(),
            Some(counts.kernels),
            "{schema}: launch arrows"
        );
        assert!(
            begins(&stats, 63_000_007) > 0,
            "{schema}: NCCL kernels are told apart"
        );
        check_states_by_row_kind(&output);
    }
}

/// GPU stream rows only run, copy or idle; CPU threads only take CUDA call states
/// and Running between calls.
fn check_states_by_row_kind(prv: &Path) {
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let threads: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .collect();
    let text = std::fs::read_to_string(prv).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| l.starts_with("1:")) {
        let f: Vec<u64> = line.split(':').map(|x| x.parse().unwrap()).collect();
        // One task in these traces: the thread field indexes the THREAD block.
        let name = threads[f[4] as usize - 1];
        let allowed: &[u64] = if name.starts_with("CUDA-") {
            &[0, 1, 17]
        } else {
            &[1, 5, 7, 15, 17, 30, 31, 32]
        };
        assert!(allowed.contains(&f[7]), "state {} on {name}: {line}", f[7]);
        checked += 1;
    }
    assert!(checked > 0);
}

/// Golden files: the whole trace of a small export, per schema version (review
/// changes with `cargo insta review`).
#[test]
fn golden_traces() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [SchemaVersion::V2_9, SchemaVersion::V3_24] {
        let (input, _) = small_export(dir.path(), schema);
        let output = dir.path().join("golden.prv");
        let result = convert(&[&input], &output, &[]);
        assert!(result.status.success());
        let read = |ext: &str| std::fs::read_to_string(output.with_extension(ext)).unwrap();
        let name = schema.schema_version().replace('.', "_");
        insta::assert_snapshot!(format!("small_{name}.prv"), read("prv"));
        insta::assert_snapshot!(format!("small_{name}.pcf"), read("pcf"));
        insta::assert_snapshot!(format!("small_{name}.row"), read("row"));
    }
}

fn ranks(dir: &Path, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_16);
            spec.hostname = format!("node{:02}", rank % 2 + 1);
            spec.utc_epoch_ns += i64::from(rank) * 3_700;
            spec.seed = u64::from(rank) + 1;
            // Ranks on different hosts share pids, as on real clusters.
            spec.processes[0].pid = 4000 + rank / 2;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            let path = dir.join(format!("rank{rank}.sqlite"));
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

fn read_all(prv: &Path) -> Vec<u8> {
    ["prv", "pcf", "row"]
        .iter()
        .flat_map(|ext| std::fs::read(prv.with_extension(ext)).unwrap())
        .collect()
}

#[test]
fn input_order_does_not_change_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = ranks(dir.path(), 4);
    let forward: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let shuffled: Vec<&Path> = [3, 1, 0, 2].iter().map(|&i| inputs[i].as_path()).collect();
    // Same output name in two directories: the name is part of the `.row`.
    let (a, b) = (dir.path().join("a/t.prv"), dir.path().join("b/t.prv"));
    for (inputs, out) in [(&forward, &a), (&shuffled, &b)] {
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        assert!(convert(inputs, out, &[]).status.success());
    }
    assert!(read_all(&a) == read_all(&b), "outputs differ");
    check_trace(&a);
}

#[test]
fn ranks_on_two_hosts_with_equal_pids_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = ranks(dir.path(), 4);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let out = dir.path().join("m.prv");
    assert!(convert(&refs, &out, &[]).status.success());
    let stats = check_trace(&out);
    assert_eq!((stats.nodes, stats.tasks), (2, 4));
    let row = std::fs::read_to_string(out.with_extension("row")).unwrap();
    let tasks: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL TASK"))
        .skip(1)
        .take(4)
        .collect();
    assert_eq!(
        tasks,
        [
            "rank 0 (node01:4000)",
            "rank 1 (node02:4000)",
            "rank 2 (node01:4001)",
            "rank 3 (node02:4001)"
        ]
    );
}

#[test]
fn gzip_output_holds_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = small_export(dir.path(), SchemaVersion::V3_7);
    let (plain, gz) = (dir.path().join("p.prv"), dir.path().join("g.prv.gz"));
    assert!(convert(&[&input], &plain, &[]).status.success());
    assert!(convert(&[&input], &gz, &[]).status.success());
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut text,
    )
    .unwrap();
    assert_eq!(text, std::fs::read_to_string(&plain).unwrap());
    assert!(dir.path().join("g.pcf").exists() && dir.path().join("g.row").exists());
    check_trace(&gz);
}

#[test]
fn categories_can_be_selected_and_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let (input, counts) = small_export(dir.path(), SchemaVersion::V3_24);
    let only_kernels = dir.path().join("k.prv");
    assert!(convert(&[&input], &only_kernels, &["-t", "kernels"])
        .status
        .success());
    let stats = check_trace(&only_kernels);
    assert_eq!(begins(&stats, 63_000_000), 0);
    assert_eq!(
        begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
        counts.kernels
    );

    let no_api = dir.path().join("n.prv");
    assert!(convert(&[&input], &no_api, &["--exclude", "cuda-api"])
        .status
        .success());
    let stats = check_trace(&no_api);
    assert_eq!(begins(&stats, 63_000_000), 0);
    assert_eq!(
        begins(&stats, 9350),
        counts.syncs,
        "syncs still find their thread"
    );

    let bad = convert(&[&input], &dir.path().join("x.prv"), &["-t", "nonsense"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn demangled_kernel_names_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = small_export(dir.path(), SchemaVersion::V3_24);
    let out = dir.path().join("d.prv");
    assert!(convert(&[&input], &out, &["--kernel-names", "demangled"])
        .status
        .success());
    let pcf = std::fs::read_to_string(out.with_extension("pcf")).unwrap();
    assert!(pcf.contains("void "), "demangled signatures in the pcf");
    check_trace(&out);
}

/// Issue 27: 117 copies gave 117 identical warnings; many give one line with a count
/// (the first few named, all of them with -v), and inputs given twice likewise.
#[test]
fn many_copies_of_a_report_give_one_warning_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = small_export(dir.path(), SchemaVersion::V3_7);
    let mut inputs = vec![input.clone()];
    for i in 0..5 {
        let copy = dir.path().join(format!("copy{i}.sqlite"));
        std::fs::copy(&input, &copy).unwrap();
        inputs.push(copy);
    }
    inputs.push(input.clone());
    inputs.push(dir.path().join("copy0.sqlite"));
    let out = dir.path().join("copies.prv");
    let result = binary().args(&inputs).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(
        warnings[0].contains("2 inputs given more than once, each translated once: "),
        "{stderr}"
    );
    assert!(
        warnings[1].contains("5 reports are the same report as another")
            && warnings[1].contains("; and 2 more (-v lists them)"),
        "{stderr}"
    );
    let verbose = binary().arg("-v").args(&inputs).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    let listed = stderr
        .lines()
        .filter(|l| l.starts_with("DEBUG") && l.contains("the same report as"))
        .count();
    assert_eq!(listed, 5, "{stderr}");
    assert_eq!(check_trace(&out).tasks, 1);
}

#[test]
fn a_report_given_twice_under_two_names_is_used_once() {
    let dir = tempfile::tempdir().unwrap();
    let (input, counts) = small_export(dir.path(), SchemaVersion::V3_7);
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&input, &copy).unwrap();
    let out = dir.path().join("twice.prv");
    let result = binary().arg(&input).arg(&copy).arg(&out).output().unwrap();
    assert!(result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("the same report as"));
    let stats = check_trace(&out);
    assert_eq!(stats.tasks, 1);
    assert_eq!(begins(&stats, 63_000_000), counts.runtime_rows);
}

/// Spilling sorted chunks to disk (a tiny `--memory-limit`) must not change a byte,
/// whatever the limit and the number of jobs (spilled runs are merged by time
/// segments on every job), for a `.prv` and a `.prv.gz` (the same gzip members).
#[test]
fn spilling_gives_the_same_bytes_as_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut synthetic = ranks(dir.path(), 3);
    synthetic.push(small_export(dir.path(), SchemaVersion::V2_9).0);
    let mut sets = vec![synthetic];
    if let Some(corpus) = corpus_dir() {
        // Recorded on another day than the synthetic job: a set of its own.
        sets.push(vec![corpus.join("local/nvtx_pthreads/nvtx_pthreads.sqlite")]);
    }
    for (i, inputs) in sets.iter().enumerate() {
        let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let memory = dir.path().join(format!("m{i}/t.prv"));
        // A set of its own: writing `t.prv.gz` replaces the set `t`.
        let memory_gz = dir.path().join(format!("mg{i}/t.prv.gz"));
        for out in [&memory, &memory_gz] {
            std::fs::create_dir_all(out.parent().unwrap()).unwrap();
            let plain = convert(&refs, out, &[]);
            assert!(
                plain.status.success(),
                "{}",
                String::from_utf8_lossy(&plain.stderr)
            );
        }
        let mut text = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&memory_gz).unwrap()),
            &mut text,
        )
        .unwrap();
        assert!(
            text == std::fs::read(&memory).unwrap(),
            ".prv.gz decompresses to the .prv"
        );
        for (limit, jobs) in [("64K", "1"), ("64K", "2"), ("64K", "3"), ("256K", "2")] {
            let spilled = dir.path().join(format!("s{i}-{limit}-{jobs}/t.prv"));
            let spilled_gz = dir.path().join(format!("sg{i}-{limit}-{jobs}/t.prv.gz"));
            for out in [&spilled, &spilled_gz] {
                std::fs::create_dir_all(out.parent().unwrap()).unwrap();
                let result = binary()
                    .args(["-v", "--memory-limit", limit, "-j", jobs])
                    .args(&refs)
                    .arg(out)
                    .output()
                    .unwrap();
                assert!(result.status.success());
                let log = String::from_utf8_lossy(&result.stderr);
                assert!(
                    log.contains("spilled chunks="),
                    "the small limit made runs spill"
                );
                assert!(
                    (limit, jobs) != ("64K", "2") || log.contains("spilled state chunks="),
                    "the small limit made state intervals spill"
                );
            }
            assert!(
                read_all(&memory) == read_all(&spilled),
                "spilled output differs at {limit}, -j {jobs}"
            );
            assert!(
                std::fs::read(&memory_gz).unwrap() == std::fs::read(&spilled_gz).unwrap(),
                "spilled .prv.gz differs at {limit}, -j {jobs}"
            );
            for out in [&spilled, &spilled_gz] {
                let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .filter(|n| n.to_string_lossy().contains("tmp"))
                    .collect();
                assert!(leftovers.is_empty(), "{leftovers:?}");
            }
        }
    }
}

#[test]
fn dry_run_counts_rows_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (input, counts) = small_export(dir.path(), SchemaVersion::V3_16);
    let out = dir.path().join("dry.prv");
    let result = binary()
        .arg("--dry-run")
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        stdout.contains(&format!("kernels={}", counts.kernels)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("cuda-api={}", counts.runtime_rows)),
        "{stdout}"
    );
    assert!(stdout.contains("1 report on 1 host:"), "{stdout}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the input"
    );
}
