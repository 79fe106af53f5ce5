//! Sharded conversion without a scheduler: `--shard I/N` for every shard, then
//! `merge`, must write the same files, byte for byte, as one process; and every
//! fault (missing, failed or foreign parts, inputs outside the plan or changed,
//! a full file system, bad reports) must end in one line that says what to do.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use end_to_end::sharding::*;
use end_to_end::*;

/// Session start of the recorded samples (November 2026), where the synthetic
/// ranks start too: the trace spans seconds, not years.
const SAMPLES_RECORDED: i64 = 1_795_261_090_000_000_000;

/// The recorded samples of every kind (MPI, NVTX and OS runtime, OpenMP,
/// scheduling) and a synthetic CUDA and MPI job of six ranks on two hosts.
fn mixed_inputs(dir: &Path) -> Vec<PathBuf> {
    let samples = workspace_root().join("samples");
    let mut inputs: Vec<PathBuf> = [
        "mpi_3ranks/rank0.sqlite",
        "mpi_3ranks/rank1.sqlite",
        "mpi_3ranks/rank2.sqlite",
        "nvtx_osrt/nvtx_osrt.sqlite",
        "openmp/openmp.sqlite",
        "sched/sched.sqlite",
    ]
    .iter()
    .map(|s| samples.join(s))
    .collect();
    let job = dir.join("job");
    fs::create_dir(&job).unwrap();
    inputs.extend(synthetic_mpi_job(&job, 6, SAMPLES_RECORDED));
    inputs
}

/// Converts `inputs` in one process into `dir/NAME/t.prv[.gz]`; returns the directory.
fn single(inputs: &[PathBuf], dir: &Path, name: &str, trace: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    fs::create_dir(&out).unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    assert_ok(&convert(&refs, &out.join(trace), extra), "single run");
    out
}

#[test]
fn sharded_output_equals_a_single_run_for_any_shard_count() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    for (extra, trace) in [
        (&[][..], "t.prv"),
        (
            &["--sync", "mpi-init", "-t", "cuda,mpi,nvtx"][..],
            "t.prv.gz",
        ),
        (&["--time-window", "1ms:300ms"][..], "t.prv"),
    ] {
        let label = format!("{extra:?}").replace(['[', ']', '"', ',', ' '], "");
        let expected = single(&inputs, tmp.path(), &format!("single{label}"), trace, extra);
        check_trace(&expected.join(trace));
        for count in [1, 2, 3, 5, 16] {
            let out = tmp.path().join(format!("n{count}{label}"));
            fs::create_dir(&out).unwrap();
            convert_sharded(&inputs, &out.join(trace), count, extra);
            assert!(
                !out.join("t.parts").exists(),
                "parts removed after the merge"
            );
            assert_same_files(&expected, &out);
        }
    }
}

/// `-q` given before the subcommand (`nsys2prv-rs -q merge OUTPUT`) is the merge's
/// `-q`: the merge writes the same set as a single run and prints nothing.
#[test]
fn quiet_before_merge_merges_and_prints_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let samples = workspace_root().join("samples/mpi_3ranks");
    let inputs: Vec<PathBuf> = (0..3)
        .map(|r| samples.join(format!("rank{r}.sqlite")))
        .collect();
    let expected = single(&inputs, tmp.path(), "single", "t.prv", &[]);
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in 0..2 {
        assert_ok(&shard(&inputs, &trace, index, 2, &[]), "shard");
    }
    let merged = binary()
        .arg("-q")
        .arg("merge")
        .arg(&trace)
        .output()
        .unwrap();
    assert_ok(&merged, "-q merge");
    assert!(
        merged.stdout.is_empty() && merged.stderr.is_empty(),
        "-q merge printed:\n{}{}",
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&merged.stderr)
    );
    assert!(
        !out.join("t.parts").exists(),
        "parts removed after the merge"
    );
    assert_same_files(&expected, &out);
    // Without -q the same merge says what it wrote (so the check above can fail).
    for index in 0..2 {
        assert_ok(&shard(&inputs, &trace, index, 2, &[]), "shard");
    }
    let loud = binary().arg("merge").arg(&trace).output().unwrap();
    assert_ok(&loud, "merge");
    assert!(!loud.stderr.is_empty(), "merge without -q printed nothing");
}

#[test]
fn any_assignment_of_reports_to_shards_gives_the_same_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let expected = single(&inputs, tmp.path(), "single", "t.prv", &[]);
    let assignments: [&dyn Fn(usize) -> u64; 3] = [&|i| (i as u64 * 7 + 1) % 4, &|_| 3, &|i| {
        if i % 2 == 0 {
            0
        } else {
            2
        }
    }];
    for (case, assign) in assignments.iter().enumerate() {
        let out = tmp.path().join(format!("assigned{case}"));
        fs::create_dir(&out).unwrap();
        let trace = out.join("t.prv");
        let planned = binary()
            .args(["-q", "--plan-shards", "4"])
            .args(&inputs)
            .arg(&trace)
            .output()
            .unwrap();
        assert_ok(&planned, "--plan-shards 4");
        // Another assignment than the balance by size: the plan says which shard
        // translates which report, and nothing else depends on it.
        let plan_path = out.join("t.parts/plan");
        let mut plan: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&plan_path).unwrap()).unwrap();
        for (i, input) in plan["inputs"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            input["shard"] = assign(i).into();
        }
        fs::write(&plan_path, serde_json::to_string(&plan).unwrap()).unwrap();
        convert_sharded(&inputs, &trace, 4, &[]);
        assert_same_files(&expected, &out);
    }
}

/// The one line of a failed command, which must name each of `words`.
fn failure_line(out: &std::process::Output, code: i32, words: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {stderr}");
    for word in words {
        assert!(lines[0].contains(word), "'{word}' in: {}", lines[0]);
    }
    lines[0].to_string()
}

#[test]
fn a_missing_or_failed_shard_is_named_and_running_only_it_completes_the_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let expected = single(&inputs, tmp.path(), "single", "t.prv", &[]);
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in [0, 2] {
        assert_ok(&shard(&inputs, &trace, index, 4, &[]), "shard");
    }
    let line = failure_line(&merge(&trace, &[]), 1, &["shard 1", "shard 3", "--shard"]);
    assert!(
        !line.contains("shard 0") && !line.contains("shard 2"),
        "{line}"
    );
    assert!(!trace.exists(), "no trace written by a refused merge");
    // A shard run again after it finished leaves its part as it was.
    let part = out.join("t.parts/shard-0.part");
    let before = fs::read(&part).unwrap();
    let modified = fs::metadata(&part).unwrap().modified().unwrap();
    assert_ok(&shard(&inputs, &trace, 0, 4, &[]), "shard 0 again");
    assert_eq!(fs::read(&part).unwrap(), before);
    assert_eq!(fs::metadata(&part).unwrap().modified().unwrap(), modified);
    for index in [1, 3] {
        assert_ok(&shard(&inputs, &trace, index, 4, &[]), "missing shard");
    }
    assert_ok(&merge(&trace, &[]), "merge");
    assert_same_files(&expected, &out);
}

#[test]
fn a_bad_report_fails_its_shard_and_the_merge_says_which() {
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = mixed_inputs(tmp.path());
    let bad = tmp.path().join("bad.sqlite");
    let good = fs::read(&inputs[0]).unwrap();
    fs::write(&bad, &good[..good.len() / 3]).unwrap();
    inputs.push(bad.clone());
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let mut failed = Vec::new();
    for index in 0..3 {
        let run = shard(&inputs, &trace, index, 3, &[]);
        if !run.status.success() {
            failure_line(&run, 1, &["bad.sqlite", "truncated"]);
            failed.push(index);
        }
    }
    assert_eq!(failed.len(), 1, "only the shard with the bad report fails");
    failure_line(
        &merge(&trace, &[]),
        1,
        &[
            &format!("shard {} failed", failed[0]),
            "bad.sqlite",
            "truncated",
        ],
    );
    assert!(!trace.exists());
}

#[test]
fn skip_bad_converts_the_rest_lists_the_bad_and_exits_3_sharded_or_not() {
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = mixed_inputs(tmp.path());
    let bad = tmp.path().join("bad.sqlite");
    let good = fs::read(&inputs[0]).unwrap();
    fs::write(&bad, &good[..good.len() / 3]).unwrap();
    inputs.insert(2, bad.clone());
    // Without --skip-bad nothing is written.
    let none = tmp.path().join("none");
    fs::create_dir(&none).unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    failure_line(
        &convert(&refs, &none.join("t.prv"), &[]),
        1,
        &["bad.sqlite"],
    );
    assert!(files_under(&none).is_empty(), "nothing written");

    let expected = tmp.path().join("single");
    fs::create_dir(&expected).unwrap();
    // By the binary: what it prints about the skipped report is checked.
    let run = convert_spawned(&refs, &expected.join("t.prv"), &["--skip-bad"]);
    assert_eq!(
        run.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("skipped 1 bad report") && stderr.contains("bad.sqlite"),
        "{stderr}"
    );
    let list = fs::read_to_string(expected.join("t.skipped.txt")).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("{}\t", bad.display())),
        "{list}"
    );
    check_trace(&expected.join("t.prv"));

    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    // The shards succeed (a job array's dependent merge still runs); the merge says 3.
    for index in 0..3 {
        assert_ok(&shard(&inputs, &trace, index, 3, &["--skip-bad"]), "shard");
    }
    assert_eq!(merge(&trace, &[]).status.code(), Some(3));
    assert_same_files(&expected, &out);

    // A later run without bad reports removes the list of the earlier one.
    let refs: Vec<&Path> = refs.into_iter().filter(|p| *p != bad).collect();
    assert_ok(&convert(&refs, &expected.join("t.prv"), &[]), "clean run");
    assert!(!expected.join("t.skipped.txt").exists());
}

#[test]
fn plans_that_do_not_fit_are_refused_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    assert_ok(&shard(&inputs, &trace, 0, 3, &[]), "shard 0");
    let parts = out.join("t.parts");
    let redo = parts.display().to_string();

    // A report outside the plan.
    let mut more = inputs.clone();
    let extra = tmp.path().join("extra.sqlite");
    fs::copy(&inputs[3], &extra).unwrap();
    more.push(extra.clone());
    failure_line(
        &shard(&more, &trace, 1, 3, &[]),
        1,
        &["extra.sqlite", "not among", &redo],
    );
    // Other options, another shard count.
    failure_line(
        &shard(&inputs, &trace, 1, 3, &["-t", "nvtx"]),
        1,
        &["other options", "--trace=nvtx"],
    );
    failure_line(&shard(&inputs, &trace, 1, 4, &[]), 1, &["3 shards, not 4"]);
    // An input changed since the plan.
    let job_rank = inputs.iter().find(|p| p.ends_with("rank5.sqlite")).unwrap();
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(parts.join("plan")).unwrap()).unwrap();
    let shard_of_rank5 = plan["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"].as_str().unwrap().ends_with("rank5.sqlite"))
        .unwrap()["shard"]
        .as_u64()
        .unwrap() as u32;
    let mut bytes = fs::read(job_rank).unwrap();
    bytes.extend_from_slice(&[0; 4096]);
    fs::write(job_rank, bytes).unwrap();
    if shard_of_rank5 != 0 {
        failure_line(
            &shard(&inputs, &trace, shard_of_rank5, 3, &[]),
            1,
            &["rank5.sqlite", "changed since the plan", "size"],
        );
    }
    // Parts of another plan (other inputs) are refused by the merge.
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    for index in 0..3 {
        assert_ok(
            &shard(&inputs[..4], &other.join("t.prv"), index, 3, &[]),
            "other plan",
        );
    }
    for index in 0..3 {
        fs::copy(
            other.join(format!("t.parts/shard-{index}.part")),
            parts.join(format!("shard-{index}.part")),
        )
        .unwrap();
    }
    failure_line(&merge(&trace, &[]), 1, &["shard-1.part", "another plan"]);
}

#[test]
fn the_parts_directory_holds_only_what_the_tool_removes() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    // Not ours: refused (usage error), left as it is.
    fs::create_dir(out.join("t.parts")).unwrap();
    fs::write(out.join("t.parts/mine.txt"), "keep").unwrap();
    failure_line(
        &shard(&inputs, &trace, 0, 2, &[]),
        2,
        &["t.parts", "not made by nsys2prv-rs"],
    );
    assert_eq!(
        fs::read_to_string(out.join("t.parts/mine.txt")).unwrap(),
        "keep"
    );
    fs::remove_dir_all(out.join("t.parts")).unwrap();

    // --keep-parts keeps them; a file of someone else's in ours survives the merge.
    convert_sharded(&inputs, &trace, 2, &[]);
    for index in 0..2 {
        assert_ok(&shard(&inputs, &out.join("k.prv"), index, 2, &[]), "shard");
    }
    assert_ok(
        &merge(&out.join("k.prv"), &["--keep-parts"]),
        "merge --keep-parts",
    );
    assert!(out.join("k.parts/shard-1.part").is_file());
    fs::write(out.join("k.parts/notes.txt"), "mine").unwrap();
    assert_ok(&merge(&out.join("k.prv"), &[]), "merge again");
    // Only the note and the marker (the directory is still the tool's) are left.
    let left: Vec<_> = files_under(&out.join("k.parts"));
    assert_eq!(
        left,
        vec![
            out.join("k.parts/.nsys2prv-rs"),
            out.join("k.parts/notes.txt")
        ]
    );
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_file_system_under_the_parts_fails_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let full = tmp.path().join("full");
    fs::create_dir(&full).unwrap();
    // Room for the plan, not for a part of a third of the reports.
    let Some(_mount) = Mount::tmpfs(&full, "64k") else {
        missing_tool("a tmpfs mount", "run the tests as root");
        return;
    };
    let trace = full.join("t.prv");
    let run = shard(&inputs, &trace, 0, 3, &[]);
    failure_line(&run, 1, &["t.parts/shard-0.part", "No space left"]);
    let left: Vec<String> = fs::read_dir(full.join("t.parts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut left = left;
    left.sort();
    // The plan and the failure note stay; no half-written part.
    assert_eq!(left, [".nsys2prv-rs", "plan", "shard-0.failed"], "{left:?}");
    failure_line(&merge(&trace, &[]), 1, &["shard 0 failed", "No space left"]);
}

#[test]
fn a_damaged_part_is_named_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let out = tmp.path().join("sharded");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in 0..2 {
        assert_ok(&shard(&inputs, &trace, index, 2, &[]), "shard");
    }
    let part = out.join("t.parts/shard-1.part");
    let mut bytes = fs::read(&part).unwrap();
    // A byte among the records (the first section starts after the 16-byte magic).
    bytes[100] ^= 0x10;
    fs::write(&part, &bytes).unwrap();
    failure_line(&merge(&trace, &[]), 1, &["shard-1.part", "damaged part"]);
    assert!(!trace.exists());
    let written: Vec<PathBuf> = files_under(&out)
        .into_iter()
        .filter(|p| !p.starts_with(out.join("t.parts")))
        .collect();
    assert!(written.is_empty(), "{written:?}");
    // The index is damaged: the merge says so before it starts.
    let len = bytes.len();
    bytes[len - 40] ^= 0x10;
    fs::write(&part, &bytes).unwrap();
    failure_line(&merge(&trace, &[]), 1, &["shard-1.part", "--shard 1/2"]);
}

/// A job of one report per entry of `gpus`: the GPUs its process uses and whose
/// metrics are sampled (the generator numbers each GPU's metrics apart, as two
/// GPU models do).
fn metrics_job(dir: &Path, name: &str, gpus: &[Vec<u32>]) -> Vec<PathBuf> {
    use nsys_synth::{SchemaVersion, SynthDeviceSide, SynthSpec};
    let dir = dir.join(name);
    fs::create_dir(&dir).unwrap();
    gpus.iter()
        .enumerate()
        .map(|(rank, gpus)| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.utc_epoch_ns = SAMPLES_RECORDED + rank as i64 * 1_000;
            spec.seed = rank as u64 + 3;
            spec.processes[0].pid = 7000 + rank as u32;
            spec.processes[0].devices = gpus.clone();
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            spec.device = SynthDeviceSide {
                gpu_metric_samples: 40,
                metric_gpus: gpus.clone(),
                nic_samples: 5,
                ..SynthDeviceSide::default()
            };
            let path = dir.join(format!("rank{rank}.sqlite"));
            nsys_synth::write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// GPU metrics numbered as BSC does (by metric id) give the same bytes sharded;
/// a job whose reports number them apart is numbered by name in one process (with
/// a warning), and its shards, each deciding from its own reports, are refused
/// by the merge with what to do; with --metric-types name they merge.
#[test]
fn metric_numbering_is_the_same_sharded_and_shards_that_number_apart_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let same = metrics_job(tmp.path(), "same", &[vec![0], vec![0]]);
    let expected = single(&same, tmp.path(), "single_same", "t.prv", &[]);
    let pcf = fs::read_to_string(expected.join("t.pcf")).unwrap();
    assert!(
        pcf.contains("9400       GPC Clock Frequency [MHz]"),
        "{pcf}"
    );
    let out = tmp.path().join("sharded_same");
    fs::create_dir(&out).unwrap();
    convert_sharded(&same, &out.join("t.prv"), 2, &[]);
    assert_same_files(&expected, &out);

    let mixed = metrics_job(tmp.path(), "mixed", &[vec![0], vec![0, 1]]);
    let out = tmp.path().join("single_mixed");
    fs::create_dir(&out).unwrap();
    let run = binary()
        .args(&mixed)
        .arg(out.join("t.prv"))
        .output()
        .unwrap();
    assert_ok(&run, "single run of the mixed job");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        stderr
            .matches("GPU metrics numbered by metric name")
            .count(),
        1,
        "{stderr}"
    );
    let pcf = fs::read_to_string(out.join("t.pcf")).unwrap();
    assert!(
        pcf.contains("GPU metric GPC Clock Frequency [MHz]"),
        "{pcf}"
    );

    let out = tmp.path().join("sharded_mixed");
    fs::create_dir(&out).unwrap();
    for index in 0..2 {
        assert_ok(&shard(&mixed, &out.join("t.prv"), index, 2, &[]), "shard");
    }
    let refused = merge(&out.join("t.prv"), &[]);
    let line = failure_line(&refused, 1, &["numbered apart", "--metric-types name"]);
    assert!(!out.join("t.prv").exists(), "{line}");

    let by_name = ["--metric-types", "name"];
    let expected = single(&mixed, tmp.path(), "single_by_name", "t.prv", &by_name);
    let out = tmp.path().join("sharded_by_name");
    fs::create_dir(&out).unwrap();
    convert_sharded(&mixed, &out.join("t.prv"), 2, &by_name);
    assert_same_files(&expected, &out);
}

/// The files of `dir` as Paraver reads them (a `.prv.gz` decompressed), the
/// parts directory left out.
fn as_read(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    contents(dir)
        .into_iter()
        .filter(|(name, _)| !name.starts_with("t.parts"))
        .map(|(name, bytes)| {
            if name.to_string_lossy().ends_with(".prv.gz") {
                let mut text = Vec::new();
                let mut gz = flate2::read::MultiGzDecoder::new(&bytes[..]);
                std::io::Read::read_to_end(&mut gz, &mut text).unwrap();
                (name, text)
            } else {
                (name, bytes)
            }
        })
        .collect()
}

/// `merge --shard I/N` for every slice (last first), then the finishing merge
/// (keeping the parts); the slice files are removed after, for another count.
fn merge_by_slices(trace: &Path, count: u32) {
    for index in (0..count).rev() {
        assert_ok(
            &merge(trace, &[&format!("--shard={index}/{count}")]),
            &format!("merge --shard {index}/{count}"),
        );
    }
    assert_ok(&merge(trace, &["--keep-parts"]), "finishing merge");
    let parts = trace.with_file_name("t.parts");
    for entry in fs::read_dir(&parts).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if name.ends_with(".done") {
            // Each task wrote its slice (a body it cannot slice has no tallies).
            let note = fs::read_to_string(&path).unwrap();
            let tallies = note.contains("\"tallies\":{");
            assert!(tallies, "{}: {name}: {note}", trace.display());
        }
        if name.starts_with("slice-") {
            fs::remove_file(path).unwrap();
        }
    }
}

/// The merge split by time over any number of tasks, from parts of any number
/// of shards, writes the single run's files: `.prv` byte for byte, `.prv.gz`
/// the same text (its members end where slices do); many small slices and a
/// cut (its window's records sliced, what crosses its edges written by the
/// finishing merge) too. (Empty slices: paraver-writer's
/// `slices_written_apart_make_the_whole_trace`.)
#[test]
fn merge_split_by_time_slices_writes_the_single_runs_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let mixed = mixed_inputs(tmp.path());
    // The MPI job alone.
    let job: Vec<PathBuf> = mixed[6..].to_vec();
    let window = ["--time-window", "1ms:300ms"];
    let window_gz = ["--time-window", "30ms:200ms"];
    for (inputs, extra, trace, shards, counts) in [
        (&mixed, &[][..], "t.prv", 2, &[1, 2, 3, 4, 400][..]),
        (
            &mixed,
            &["--sync", "mpi-init"][..],
            "t.prv.gz",
            3,
            &[1, 3][..],
        ),
        (&mixed, &window[..], "t.prv", 2, &[1, 2, 3, 400][..]),
        (&job, &window_gz[..], "t.prv.gz", 3, &[3][..]),
    ] {
        let label = format!("{}{extra:?}", inputs.len()).replace(['[', ']', '"', ',', ' '], "");
        let expected = single(inputs, tmp.path(), &format!("single{label}"), trace, extra);
        let out = tmp.path().join(format!("sliced{label}"));
        fs::create_dir(&out).unwrap();
        let trace = out.join(trace);
        for index in 0..shards {
            assert_ok(&shard(inputs, &trace, index, shards, extra), "shard");
        }
        for &count in counts {
            merge_by_slices(&trace, count);
            let (left, right) = (as_read(&expected), as_read(&out));
            assert_eq!(left.len(), right.len(), "{count} slices {label}");
            for ((name, x), (other, y)) in left.iter().zip(&right) {
                assert_eq!(name, other);
                assert!(x == y, "{} differs, {count} slices {label}", name.display());
            }
        }
    }
}

/// A slice missing or failed: the finishing merge names it and the command to
/// run, and installs nothing; merging only that slice completes it. Parts of
/// another version (plan format) are refused as such.
#[test]
fn a_missing_or_failed_slice_is_named_and_nothing_is_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let expected = single(&inputs, tmp.path(), "single", "t.prv", &[]);
    let out = tmp.path().join("sliced");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in 0..2 {
        assert_ok(&shard(&inputs, &trace, index, 2, &[]), "shard");
    }
    // Before every shard is there, a slice cannot be merged.
    fs::rename(out.join("t.parts/shard-1.part"), out.join("shard-1.part")).unwrap();
    failure_line(
        &merge(&trace, &["--shard=0/3"]),
        1,
        &["shard 1", "--shard 1/2"],
    );
    fs::rename(out.join("shard-1.part"), out.join("t.parts/shard-1.part")).unwrap();
    assert_ok(&merge(&trace, &["--shard=0/3"]), "slice 0");
    // A slice that failed (as a task that ran out of time notes it).
    fs::write(
        out.join("t.parts/slice-2-of-3.failed"),
        "step 7.0\nkilled\n",
    )
    .unwrap();
    let line = failure_line(&merge(&trace, &[]), 1, &["slice 1 of 3", "slice 2 of 3"]);
    assert!(line.contains("failed (killed)"), "{line}");
    assert!(line.contains("merge --shard 1/3"), "{line}");
    assert!(line.contains("merge --shard 2/3"), "{line}");
    assert!(!line.contains("--shard 0/3"), "{line}");
    let installed: Vec<PathBuf> = files_under(&out)
        .into_iter()
        .filter(|p| !p.starts_with(out.join("t.parts")))
        .collect();
    assert!(installed.is_empty(), "nothing installed: {installed:?}");
    // A slice body cut short is refused too.
    for index in [1, 2] {
        assert_ok(&merge(&trace, &[&format!("--shard={index}/3")]), "slice");
    }
    let body = out.join("t.parts/slice-1-of-3.body");
    let len = fs::metadata(&body).unwrap().len();
    let file = fs::OpenOptions::new().write(true).open(&body).unwrap();
    file.set_len(len - 1).unwrap();
    drop(file);
    failure_line(
        &merge(&trace, &[]),
        1,
        &["slice 1 of 3", "merge --shard 1/3"],
    );
    assert!(!trace.exists());
    assert_ok(&merge(&trace, &["--shard=1/3"]), "slice 1 again");
    assert_ok(&merge(&trace, &[]), "finishing merge");
    assert_same_files(&expected, &out);

    // Parts of another version: the plan's format says so.
    let old = tmp.path().join("old");
    fs::create_dir(&old).unwrap();
    let trace = old.join("t.prv");
    assert_ok(&shard(&inputs, &trace, 0, 1, &[]), "shard");
    let plan = old.join("t.parts/plan");
    let text = fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"format\": 3"), "{text}");
    fs::write(&plan, text.replace("\"format\": 3", "\"format\": 2")).unwrap();
    for args in [&[][..], &["--shard=0/2"][..]] {
        failure_line(
            &merge(&trace, args),
            1,
            &[
                "parts of another version",
                "plan format 2",
                "run the shards again",
            ],
        );
    }
}

/// Task `task` of `count` of Slurm step `9.STEP` of `nsys2prv-rs --shard slurm`,
/// started with the variables Slurm gives a task (no scheduler needed: the
/// tasks meet through files), its stderr into `log`.
fn slurm_task(
    inputs: &[PathBuf],
    trace: &Path,
    (task, count): (u32, u32),
    step: u32,
    log: &Path,
) -> Command {
    let mut command = binary();
    command
        .env("SLURM_PROCID", task.to_string())
        .env("SLURM_NTASKS", count.to_string())
        .env("SLURM_JOB_ID", "9")
        .env("SLURM_STEP_ID", step.to_string())
        .args(["--shard", "slurm"])
        .args(inputs)
        .arg(trace)
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(log).unwrap());
    command
}

/// A `--shard slurm` step whose task 2 of 3 is killed outright after writing
/// its slice, before placing it in the trace: tasks 0 and 1 place theirs; task
/// 0 waits (saying for what) for task 1's slice, sees task 2's process gone
/// (they run on one node) and says so, and, slice 2 being written, copies it
/// as the finishing merge copies what is not placed: the single run's files,
/// with no one waiting for the job's time limit.
#[test]
fn a_task_killed_before_placing_its_slice_is_seen_gone_and_its_slice_copied() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let expected = single(&inputs, tmp.path(), "single", "t.prv", &[]);
    let out = tmp.path().join("step");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let log = |task: u32| tmp.path().join(format!("task{task}.log"));
    let mut tasks: Vec<std::process::Child> = (0..3)
        .map(|task| {
            let mut command = slurm_task(&inputs, &trace, (task, 3), 0, &log(task));
            if task == 2 {
                command.env("NSYS2PRV_TEST_INTERRUPT", "slice written:KILL");
            }
            command.spawn().unwrap()
        })
        .collect();
    let killed = tasks[2].wait().unwrap();
    assert_eq!(killed.signal(), Some(9), "task 2: {killed:?}");
    let task1 = tasks[1].wait().unwrap();
    let read_log = |task| fs::read_to_string(log(task)).unwrap_or_default();
    assert!(task1.success(), "task 1: {}", read_log(1));
    assert!(
        read_log(1).contains("slice 1 of 3: placed at byte"),
        "{}",
        read_log(1)
    );
    let task0 = tasks[0].wait().unwrap();
    let log0 = read_log(0);
    assert!(task0.success(), "task 0: {log0}");
    for said in [
        "task 2 of this step (process ",
        ") ended without a word: killed?",
        "2 of 3 slices placed by their tasks, the others copied",
    ] {
        assert!(log0.contains(said), "{said}: {log0}");
    }
    assert!(
        !out.join("t.parts").exists(),
        "parts removed once installed"
    );
    assert_same_files(&expected, &out);
}

/// A task waiting for the slices before its own gives up, naming the slice,
/// when that slice failed in its step (and says so for task 0 in its note).
#[test]
fn a_task_waiting_for_a_failed_slice_gives_up_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let out = tmp.path().join("step");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in 0..3 {
        assert_ok(&shard(&inputs, &trace, index, 3, &[]), "shard");
    }
    // Task 0 of step 9.5 planned, and its slice failed.
    let parts = out.join("t.parts");
    fs::write(parts.join("slurm-step-9.5"), "ok\n").unwrap();
    fs::write(parts.join("slice-0-of-3.failed"), "step 9.5\nkilled\n").unwrap();
    let log = tmp.path().join("task1.log");
    let status = slurm_task(&inputs, &trace, (1, 3), 5, &log)
        .arg("-q")
        .status()
        .unwrap();
    let stderr = fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {stderr}");
    assert!(
        lines[0].contains("slice 0 of 3 failed: slice 1 cannot be placed after it"),
        "{stderr}"
    );
    let note = fs::read_to_string(parts.join("slice-1-of-3.unplaced")).unwrap();
    assert!(note.starts_with("step 9.5\nslice 0 of 3 failed"), "{note}");
    assert!(parts.join("slice-1-of-3.done").exists());
}

/// The tasks of a simulated `--shard slurm` step of `count` tasks (step
/// `9.STEP`), started at once with `extra` options, their stderr into
/// `dir/taskI.log`: each task's exit status and log.
fn run_step(
    inputs: &[PathBuf],
    trace: &Path,
    count: u32,
    step: u32,
    extra: &[&str],
    dir: &Path,
) -> Vec<(std::process::ExitStatus, String)> {
    let log = |task: u32| dir.join(format!("step{step}-task{task}.log"));
    let children: Vec<std::process::Child> = (0..count)
        .map(|task| {
            slurm_task(inputs, trace, (task, count), step, &log(task))
                .args(extra)
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .enumerate()
        .map(|(task, mut child)| {
            let status = child.wait().unwrap();
            (status, fs::read_to_string(log(task as u32)).unwrap())
        })
        .collect()
}

/// The `error:` lines of a log.
fn error_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.starts_with("error:")).collect()
}

/// Files of `out` outside its parts directory: what a run installed.
fn installed(out: &Path) -> Vec<PathBuf> {
    files_under(out)
        .into_iter()
        .filter(|p| !p.starts_with(out.join("t.parts")))
        .collect()
}

/// `--nvtx-range` in a `--shard slurm` step: the tasks find the window
/// together, each over its own shard's reports (`shard-I.ranges`), and every
/// one combines them as one process does; task 0 stores it (`window`) for a
/// plain merge. With `#N` and without, the single run's files, byte for byte.
#[test]
fn a_slurm_step_finds_the_nvtx_window_over_its_tasks_as_one_process_does() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_training_job(&job, 6, SAMPLES_RECORDED);
    for (step, range) in [(1, "train_step#2"), (2, "forward")] {
        let cut = ["--nvtx-range", range];
        let expected = single(&inputs, tmp.path(), &format!("single{step}"), "t.prv", &cut);
        let out = tmp.path().join(format!("step{step}"));
        fs::create_dir(&out).unwrap();
        let trace = out.join("t.prv");
        let extra = [cut[0], cut[1], "-q", "--keep-parts"];
        for (task, (status, log)) in run_step(&inputs, &trace, 3, step, &extra, tmp.path())
            .iter()
            .enumerate()
        {
            assert!(status.success(), "{range}: task {task}: {log}");
        }
        let parts = out.join("t.parts");
        let plan = fs::read_to_string(parts.join("plan")).unwrap();
        assert!(plan.contains("\"window_by_tasks\": true"), "{plan}");
        assert!(!plan.contains("\"read_window\""), "{plan}");
        for task in 0..3 {
            assert!(parts.join(format!("shard-{task}.ranges")).is_file());
        }
        let window = fs::read_to_string(parts.join("window")).unwrap();
        assert!(window.contains("\"range\""), "{window}");
        // A plain merge of the kept parts reads the stored window.
        for name in ["t.prv", "t.pcf", "t.row"] {
            fs::remove_file(out.join(name)).unwrap();
        }
        fs::remove_dir_all(out.join("t.cfgs")).unwrap();
        let _ = fs::remove_file(out.join("t.pmf"));
        assert_ok(&merge(&trace, &[]), "merge of the kept parts");
        assert_same_files(&expected, &out);
    }
}

/// A report of one task's shard that cannot be read stops every task of the
/// step before any translates, each with the single run's one line naming the
/// report; nothing is installed.
#[test]
fn a_bad_report_in_the_window_pass_stops_every_task_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_training_job(&job, 6, SAMPLES_RECORDED);
    let bytes = fs::read(&inputs[4]).unwrap();
    fs::write(&inputs[4], &bytes[..bytes.len() / 2]).unwrap();
    let cut = ["--nvtx-range", "train_step#2"];
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let alone = convert(&refs, &tmp.path().join("single.prv"), &cut);
    assert_eq!(alone.status.code(), Some(1));
    let alone = String::from_utf8_lossy(&alone.stderr).to_string();
    let expected = error_lines(&alone);
    assert_eq!(expected.len(), 1, "{alone}");
    assert!(expected[0].contains("rank4.sqlite"), "{alone}");
    let out = tmp.path().join("step");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for (task, (status, log)) in run_step(&inputs, &trace, 3, 4, &cut, tmp.path())
        .iter()
        .enumerate()
    {
        assert_eq!(status.code(), Some(1), "task {task}: {log}");
        assert_eq!(error_lines(log), expected, "task {task}: {log}");
    }
    assert!(installed(&out).is_empty(), "{:?}", installed(&out));
    let parts = out.join("t.parts");
    for shard in 0..3 {
        assert!(!parts.join(format!("shard-{shard}.part")).exists());
    }
}

/// A task that cannot do its share of the window pass notes why
/// (`shard-I.failed` of its step): the tasks waiting for its ranges stop, naming
/// it and saying why; nothing is installed.
#[test]
fn tasks_waiting_for_a_failed_tasks_ranges_stop_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_training_job(&job, 6, SAMPLES_RECORDED);
    let out = tmp.path().join("step");
    let parts = out.join("t.parts");
    fs::create_dir_all(&parts).unwrap();
    // Task 2 of step 9.6 failed before the others looked for its ranges.
    fs::write(parts.join(".nsys2prv-rs"), "").unwrap();
    fs::write(parts.join("shard-2.failed"), "step 9.6\ndisk on fire\n").unwrap();
    let trace = out.join("t.prv");
    let log = |task: u32| tmp.path().join(format!("task{task}.log"));
    let children: Vec<std::process::Child> = (0..2)
        .map(|task| {
            slurm_task(&inputs, &trace, (task, 3), 6, &log(task))
                .args(["-q", "--nvtx-range", "train_step#2"])
                .spawn()
                .unwrap()
        })
        .collect();
    for (task, mut child) in children.into_iter().enumerate() {
        let status = child.wait().unwrap();
        let log = fs::read_to_string(log(task as u32)).unwrap();
        assert_eq!(status.code(), Some(1), "task {task}: {log}");
        assert_eq!(
            error_lines(&log),
            ["error: task 2 of this step failed: disk on fire"],
            "task {task}: {log}"
        );
    }
    assert!(installed(&out).is_empty(), "{:?}", installed(&out));
}

/// A range name no report has: every task stops, and the step says what one
/// process says.
#[test]
fn an_unknown_range_name_in_a_slurm_step_says_what_one_process_says() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_training_job(&job, 4, SAMPLES_RECORDED);
    let cut = ["--nvtx-range", "no_such_range"];
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let alone = convert(&refs, &tmp.path().join("single.prv"), &cut);
    assert_eq!(alone.status.code(), Some(1));
    let alone = String::from_utf8_lossy(&alone.stderr).to_string();
    let message = error_lines(&alone)[0]
        .trim_start_matches("error: ")
        .to_string();
    assert!(
        message.contains("no NVTX range named 'no_such_range'"),
        "{alone}"
    );
    let out = tmp.path().join("step");
    fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for (task, (status, log)) in run_step(&inputs, &trace, 2, 7, &cut, tmp.path())
        .iter()
        .enumerate()
    {
        assert_eq!(status.code(), Some(1), "task {task}: {log}");
        assert!(log.contains(&message), "task {task}: {log}");
    }
    assert!(installed(&out).is_empty(), "{:?}", installed(&out));
}
