//! `--ranks LIST`: only the listed ranks' reports and processes are converted, with
//! their own rank numbers; messages to ranks left out are counted in the closing line.
//! The definition checked: `--ranks` on a job writes the trace that converting just
//! those ranks' reports writes (the same `.prv`, `.pcf`, `.row` and views; the
//! metadata file lists other inputs and flags), and the messages it counts are those
//! that conversion finds without a partner.

use std::fs;
use std::path::{Path, PathBuf};

use end_to_end::sharding::*;
use end_to_end::*;

const JOB_START: i64 = 1_795_261_090_000_000_000;

/// Paths of the trace's files compared (all but the metadata file `NAME.pmf`, which
/// names the inputs and flags).
fn trace_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    contents(dir)
        .into_iter()
        .filter(|(p, _)| p.extension().is_none_or(|e| e != "pmf"))
        .collect()
}

/// [`convert`] with its closing line and warnings (no `-q`).
fn convert_saying(inputs: &[&Path], output: &Path, extra: &[&str]) -> std::process::Output {
    binary()
        .args(extra)
        .args(inputs)
        .arg(output)
        .output()
        .expect("run nsys2prv-rs")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Task names of the `.row` (`rank 3 (node02:5003)`).
fn task_names(row: &Path) -> Vec<String> {
    let text = fs::read_to_string(row).unwrap();
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .find(|l| l.starts_with("LEVEL TASK SIZE"))
        .expect("a task level");
    let n: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
    lines.take(n).map(str::to_string).collect()
}

/// The number in `N MPI messages to or from ranks left out` of the closing line.
fn messages_left_out(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("wrote "))
        .unwrap_or_else(|| panic!("no closing line in {stderr}"));
    let (_, tail) = line.split_once("; --ranks ").expect("the --ranks count");
    let words: Vec<&str> = tail.split_whitespace().collect();
    words[1].parse().unwrap_or_else(|_| panic!("{line}"))
}

/// `MPI: S sends and R receives have no partner` of a conversion's warnings: S + R.
fn unpaired(stderr: &str) -> u64 {
    let Some(line) = stderr.lines().find(|l| l.contains("have no partner")) else {
        return 0;
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "sends").unwrap();
    words[at - 1].parse::<u64>().unwrap() + words[at + 2].parse::<u64>().unwrap()
}

#[test]
fn a_rank_list_converts_what_those_ranks_reports_convert_to() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 12, JOB_START);
    let all: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    for (list, ranks) in [
        ("1-2,5", &[1, 2, 5][..]),
        ("::4", &[0, 4, 8]),
        ("9:", &[9, 10, 11]),
        ("3:11:3,0", &[0, 3, 6, 9]),
        ("7", &[7]),
    ] {
        let name = list.replace([':', ',', '-'], "_");
        let selected = tmp.path().join(format!("sel{name}"));
        let subset = tmp.path().join(format!("sub{name}"));
        fs::create_dir(&selected).unwrap();
        fs::create_dir(&subset).unwrap();
        let run = convert_saying(&all, &selected.join("t.prv"), &["--ranks", list]);
        assert_ok(&run, &format!("--ranks {list}"));
        let theirs: Vec<&Path> = ranks.iter().map(|&r| all[r]).collect();
        let reference = convert_saying(&theirs, &subset.join("t.prv"), &[]);
        assert_ok(&reference, &format!("ranks {ranks:?} alone"));
        assert_eq!(
            trace_files(&selected),
            trace_files(&subset),
            "--ranks {list}"
        );
        // Real rank numbers, one task each, in rank order.
        let tasks = task_names(&selected.join("t.row"));
        assert_eq!(tasks.len(), ranks.len(), "{tasks:?}");
        for (task, rank) in tasks.iter().zip(ranks) {
            assert!(
                task.starts_with(&format!("rank {rank} (node0")),
                "{task} for rank {rank}"
            );
        }
        // The ring's messages to and from the ranks left out: counted, not drawn.
        let left_out = messages_left_out(&stderr(&run));
        assert_eq!(left_out, unpaired(&stderr(&reference)), "--ranks {list}");
        assert!(left_out > 0, "a ring always crosses to a rank left out");
        assert!(
            !stderr(&run).contains("have no partner"),
            "{}",
            stderr(&run)
        );
        check_trace(&selected.join("t.prv"));
    }
}

#[test]
fn a_rank_list_that_keeps_everything_changes_no_byte_of_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 4, JOB_START);
    let all: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    assert_ok(&convert(&all, &a.join("t.prv"), &[]), "plain");
    let run = convert_saying(&all, &b.join("t.prv"), &["--ranks", "0:"]);
    assert_ok(&run, "--ranks 0:");
    assert_eq!(trace_files(&a), trace_files(&b));
    assert_eq!(messages_left_out(&stderr(&run)), 0);
    // The metadata file lists the option among the flags given.
    let pmf: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(b.join("t.pmf")).unwrap()).unwrap();
    let flags = pmf
        .pointer("/nsys2prv/flags")
        .or_else(|| find_key(&pmf, "flags"));
    assert!(
        flags
            .and_then(|f| f.as_array())
            .is_some_and(|f| f.iter().any(|v| v == "ranks")),
        "{pmf}"
    );
}

/// The first value under `key` anywhere in `value`.
fn find_key<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|v| find_key(v, key))),
        serde_json::Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

#[test]
fn sharded_runs_with_a_rank_list_write_what_one_process_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 10, JOB_START);
    let all: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let single = tmp.path().join("single");
    fs::create_dir(&single).unwrap();
    let extra = ["--ranks", "1-3,8"];
    assert_ok(&convert(&all, &single.join("t.prv"), &extra), "single");
    for count in [1, 3, 10] {
        let out = tmp.path().join(format!("n{count}"));
        fs::create_dir(&out).unwrap();
        convert_sharded(&inputs, &out.join("t.prv"), count, &extra);
        assert_same_files(&single, &out);
    }
    // The plan stores the list: a shard asking for other ranks is refused.
    let out = tmp.path().join("other");
    fs::create_dir(&out).unwrap();
    assert_ok(
        &shard(&inputs, &out.join("t.prv"), 0, 2, &extra),
        "first shard",
    );
    let other = shard(&inputs, &out.join("t.prv"), 1, 2, &["--ranks", "0"]);
    assert!(!other.status.success(), "a shard of another rank list");
    assert!(stderr(&other).contains("--ranks"), "{}", stderr(&other));
}

#[test]
fn a_dry_run_lists_only_the_ranks_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 8, JOB_START);
    let out = binary()
        .args(["--dry-run", "--ranks", "::3"])
        .args(&inputs)
        .arg(tmp.path().join("t.prv"))
        .output()
        .unwrap();
    assert_ok(&out, "--dry-run --ranks");
    let text = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rank") && l.contains(".sqlite"))
        .collect();
    assert_eq!(listed.len(), 3, "{text}");
    for rank in [0, 3, 6] {
        assert!(
            listed
                .iter()
                .any(|l| l.contains(&format!("rank{rank}.sqlite"))),
            "{text}"
        );
    }
    assert!(
        text.contains("--ranks 0::3: 5 reports left out (ranks 1-2, 4-5, 7)"),
        "{text}"
    );
    assert!(
        fs::read_dir(tmp.path()).unwrap().count() == 1,
        "nothing written"
    );
}

#[test]
fn bad_rank_lists_are_usage_errors_and_empty_selections_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 3, JOB_START);
    for bad in ["", "3-1", "1,,2", "x", "::0", "5:5", "1:2:3:4", "-2"] {
        let out = binary()
            .arg(format!("--ranks={bad}"))
            .args(&inputs)
            .arg(tmp.path().join("t.prv"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "--ranks={bad}: {}",
            stderr(&out)
        );
        let first = stderr(&out).lines().next().unwrap_or_default().to_string();
        assert!(first.contains("--ranks"), "--ranks={bad}: {first}");
    }
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let none = convert(&refs, &tmp.path().join("t.prv"), &["--ranks", "5-9"]);
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
    assert!(
        stderr(&none).contains(
            "no report has a process of those ranks (the 3 reports left out have ranks 0-2)"
        ),
        "{}",
        stderr(&none)
    );
    assert!(!tmp.path().join("t.prv").exists());
}
