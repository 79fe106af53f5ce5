//! Interrupts at any moment leave the old output set or the new one, byte for
//! byte, and nothing else (issue 13, item 3). The moments are the tool's
//! numbered checkpoints (`NSYS2PRV_TEST_INTERRUPT=N:SIGNAL` makes the tool send
//! itself the signal there and stop the converting thread), so every run of this
//! test interrupts at the same places: no sleeps, no timing.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use end_to_end::*;

const SAMPLE: &str = "samples/synthetic/cuda_2025.5.sqlite";

/// Every file and directory under `dir` (relative path → bytes; directories
/// map to `None`).
type Snapshot = BTreeMap<PathBuf, Option<Vec<u8>>>;

fn snapshot(dir: &Path) -> Snapshot {
    fn walk(root: &Path, rel: &Path, out: &mut Snapshot) {
        for entry in fs::read_dir(root.join(rel)).unwrap() {
            let entry = entry.unwrap();
            let path = rel.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                out.insert(path.clone(), None);
                walk(root, &path, out);
            } else {
                out.insert(path, Some(fs::read(entry.path()).unwrap()));
            }
        }
    }
    let mut out = Snapshot::new();
    walk(dir, Path::new(""), &mut out);
    out
}

fn restore(snapshot: &Snapshot, dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    for (rel, bytes) in snapshot {
        match bytes {
            None => fs::create_dir_all(dir.join(rel)).unwrap(),
            Some(b) => fs::write(dir.join(rel), b).unwrap(),
        }
    }
}

/// Which set a snapshot is, for messages.
fn differences(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push(format!("only in the directory: {}", k.display())),
            Some(w) if w != v => out.push(format!("differs: {}", k.display())),
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        out.push(format!("missing: {}", k.display()));
    }
    out
}

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    input: PathBuf,
    old: Snapshot,
    new: Snapshot,
    /// (number, name) of every checkpoint of a run.
    checkpoints: Vec<(u64, String)>,
}

fn run(
    input: &Path,
    out_dir: &Path,
    tmp_dir: &Path,
    interrupt: Option<&str>,
    extra: &[&str],
) -> Output {
    let mut cmd = binary();
    cmd.arg("-q")
        .args(extra)
        .arg("--tmp-dir")
        .arg(tmp_dir)
        .arg(input)
        .arg(out_dir.join("t.prv"));
    if let Some(plan) = interrupt {
        cmd.env("NSYS2PRV_TEST_INTERRUPT", plan);
    }
    cmd.output().unwrap()
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let input = workspace_root().join(SAMPLE);
    let spill = root.join("spill");
    fs::create_dir(&spill).unwrap();
    // The old set: another selection, so every trace file differs.
    let old_dir = root.join("old");
    fs::create_dir(&old_dir).unwrap();
    let out = run(&input, &old_dir, &spill, None, &["--exclude", "kernels"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new_dir = root.join("new");
    fs::create_dir(&new_dir).unwrap();
    let out = run(&input, &new_dir, &spill, None, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (old, new) = (snapshot(&old_dir), snapshot(&new_dir));
    assert_ne!(old.get(Path::new("t.prv")), new.get(Path::new("t.prv")));

    let listed = run(&input, &root.join("old"), &spill, Some("list"), &[]);
    assert!(listed.status.success());
    let checkpoints: Vec<(u64, String)> = String::from_utf8_lossy(&listed.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("checkpoint "))
        .map(|l| {
            let (n, name) = l.split_once(' ').unwrap();
            (n.parse().unwrap(), name.to_string())
        })
        .collect();
    // That run replaced the old set with the new one: put the old one back.
    fs::remove_dir_all(&old_dir).unwrap();
    restore(&old, &old_dir);
    assert!(checkpoints.len() > 20, "{checkpoints:?}");
    Fixture {
        _tmp: tmp,
        root,
        input,
        old,
        new,
        checkpoints,
    }
}

/// `count` checkpoints spread over the run: every kind of checkpoint at least
/// once, the rest evenly over the list.
fn spread(checkpoints: &[(u64, String)], count: usize) -> Vec<(u64, String)> {
    let mut picked: BTreeMap<u64, String> = BTreeMap::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (n, name) in checkpoints {
        if kinds.insert(name.clone()) || !name.starts_with("writing views") {
            picked.insert(*n, name.clone());
        }
    }
    let step = checkpoints.len() as f64 / count as f64;
    let mut i = 0.0;
    while picked.len() < count.min(checkpoints.len()) {
        let (n, name) = &checkpoints[(i as usize).min(checkpoints.len() - 1)];
        picked.insert(*n, name.clone());
        i += step;
    }
    picked.into_iter().collect()
}

/// The first checkpoint inside the commit: from there on, the new set is
/// installed whatever happens.
fn first_commit_checkpoint(checkpoints: &[(u64, String)]) -> u64 {
    checkpoints
        .iter()
        .find(|(_, name)| name == "old views moved aside" || name == "renamed into place")
        .map(|(n, _)| *n)
        .expect("the commit has checkpoints")
}

#[test]
fn sigint_sigterm_and_sighup_leave_the_old_set_or_the_new_one() {
    let f = fixture();
    let committed_from = first_commit_checkpoint(&f.checkpoints);
    let moments = spread(&f.checkpoints, 50);
    assert_eq!(moments.len(), 50);
    let mut runs = 0;
    for (i, (n, name)) in moments.iter().enumerate() {
        let mut signals = vec![("INT", 130, "SIGINT"), ("TERM", 143, "SIGTERM")];
        if i % 5 == 0 {
            signals.push(("HUP", 129, "SIGHUP"));
        }
        for (signal, code, signal_name) in signals {
            let case = f.root.join(format!("case-{n}-{signal}"));
            restore(&f.old, &case);
            let spill = f.root.join(format!("spill-{n}-{signal}"));
            fs::create_dir(&spill).unwrap();
            let out = run(&f.input, &case, &spill, Some(&format!("{n}:{signal}")), &[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let at = format!("{signal} at checkpoint {n} ({name})");
            assert_eq!(out.status.code(), Some(code), "{at}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{at}: {stderr}");
            assert!(
                stderr.starts_with(&format!("error: interrupted by {signal_name}")),
                "{at}: {stderr}"
            );
            let (expected, which) = if *n < committed_from {
                (&f.old, "old")
            } else {
                (&f.new, "new")
            };
            let found = snapshot(&case);
            assert!(
                found == *expected,
                "{at}: not the {which} set: {:?}",
                differences(&found, expected)
            );
            assert!(
                fs::read_dir(&spill).unwrap().next().is_none(),
                "{at}: temporaries left in --tmp-dir"
            );
            fs::remove_dir_all(&case).unwrap();
            runs += 1;
        }
    }
    assert!(runs >= 100);
}

#[test]
fn after_sigkill_the_next_run_cleans_up() {
    let f = fixture();
    let moments = spread(&f.checkpoints, 10);
    for (n, name) in &moments {
        let case = f.root.join(format!("kill-{n}"));
        restore(&f.old, &case);
        let spill = f.root.join(format!("spill-kill-{n}"));
        fs::create_dir(&spill).unwrap();
        let at = format!("SIGKILL at checkpoint {n} ({name})");
        let out = run(&f.input, &case, &spill, Some(&format!("{n}:KILL")), &[]);
        assert_eq!(out.status.signal(), Some(9), "{at}");
        let killed = snapshot(&case);
        // Paraver opens t.prv and reads the labels beside it: a new body never
        // sits beside old labels (or old metadata), even half-way through a commit.
        let file = |s: &Snapshot, name: &str| s.get(Path::new(name)).cloned();
        if file(&killed, "t.prv") == file(&f.new, "t.prv") {
            for labels in ["t.pcf", "t.row", "t.pmf"] {
                assert_eq!(
                    file(&killed, labels),
                    file(&f.new, labels),
                    "{at}: {labels}"
                );
            }
        }
        if killed != f.old && killed != f.new {
            // What the killed run left: a staging directory beside the set.
            assert!(
                killed
                    .keys()
                    .any(|k| k.to_string_lossy().contains(".nsys2prv-rs.")),
                "{at}: {:?}",
                differences(&killed, &f.old)
            );
        }
        let out = run(&f.input, &case, &spill, None, &[]);
        assert!(
            out.status.success(),
            "{at}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let found = snapshot(&case);
        assert!(
            found == f.new,
            "{at}, then a clean run: {:?}",
            differences(&found, &f.new)
        );
        assert!(fs::read_dir(&spill).unwrap().next().is_none(), "{at}");
    }
}

/// A run killed while committing (its journal written, some files renamed) is
/// finished by the next run before anything else: the set it was installing
/// appears whole.
#[test]
fn a_commit_cut_short_is_finished_by_the_next_run() {
    let f = fixture();
    let renames: Vec<u64> = f
        .checkpoints
        .iter()
        .filter(|(_, name)| name == "renamed into place")
        .map(|(n, _)| *n)
        .collect();
    assert!(renames.len() >= 3, "{:?}", f.checkpoints);
    let case = f.root.join("half");
    restore(&f.old, &case);
    let spill = f.root.join("spill-half");
    fs::create_dir(&spill).unwrap();
    let out = run(
        &f.input,
        &case,
        &spill,
        Some(&format!("{}:KILL", renames[1])),
        &[],
    );
    assert_eq!(out.status.signal(), Some(9));
    // A dry run changes nothing, not even this.
    let before = snapshot(&case);
    let dry = run(&f.input, &case, &spill, None, &["--dry-run"]);
    assert!(dry.status.success());
    assert_eq!(snapshot(&case), before);
    // A run that fails early (unknown category) still finishes the commit: the
    // staging directory of a dead run is recognised by host and pid.
    let out = run(
        &f.input,
        &case,
        &spill,
        None,
        &["--nvtx-range", "no such range"],
    );
    assert_eq!(out.status.code(), Some(1));
    let found = snapshot(&case);
    assert!(found == f.new, "{:?}", differences(&found, &f.new));
}

/// Leftovers of versions before staging directories (`.t.prv.XXXXXX.tmp`,
/// `.t.cfgs.XXXXXX/`) are removed; files that only look similar are not.
#[test]
fn leftovers_of_older_versions_are_removed_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let spill = dir.join("spill");
    fs::create_dir(&spill).unwrap();
    fs::write(dir.join(".t.prv.Ab12Cd.tmp"), "partial").unwrap();
    fs::write(dir.join(".t.pcf.Zz99zz.tmp"), "partial").unwrap();
    fs::create_dir(dir.join(".t.cfgs.Qw3rty")).unwrap();
    fs::write(dir.join(".t.cfgs.Qw3rty/x.cfg"), "view").unwrap();
    let keep = [
        ".t.prv.notours.tmp",
        ".u.prv.Ab12Cd.tmp",
        "t.prv.Ab12Cd.tmp",
        "notes.txt",
    ];
    for name in keep {
        fs::write(dir.join(name), "user's").unwrap();
    }
    let out = run(&workspace_root().join(SAMPLE), dir, &spill, None, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut left: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
    expected.extend(["spill", "t.cfgs", "t.pcf", "t.pmf", "t.prv", "t.row"].map(String::from));
    expected.sort();
    assert_eq!(left, expected);
}
