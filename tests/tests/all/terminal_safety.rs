//! Safe at the terminal (issue 13): the tool replaces only what it made, ranks of
//! `.nsys-rep` inputs come from the names given, BSC nsys2prv's command lines
//! run unchanged, a dry run changes nothing and estimates the size well, and the
//! messages say what happened.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use end_to_end::*;

const CUDA_SAMPLE: &str = "samples/synthetic/cuda_2025.5.sqlite";
const NVTX_SAMPLE: &str = "samples/nvtx_osrt/nvtx_osrt.sqlite";

fn sample(rel: &str) -> PathBuf {
    workspace_root().join(rel)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------
// Item 1: never delete what is not ours.

/// `--cfgs-dir .` once deleted the current directory with the reports in it.
#[test]
fn a_views_directory_the_tool_did_not_make_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fs::create_dir(&work).unwrap();
    let report = work.join("report.sqlite");
    fs::copy(sample(NVTX_SAMPLE), &report).unwrap();
    let mine = tmp.path().join("paraver-cfgs");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("my_view.cfg"), "my own view").unwrap();

    for cfgs in [work.clone(), mine.clone()] {
        let out = binary()
            .current_dir(&work)
            .args(["-q", "--cfgs-dir"])
            .arg(&cfgs)
            .arg("report.sqlite")
            .arg("out.prv")
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(said.contains(&cfgs.display().to_string()), "{said}");
        assert!(said.contains("--cfgs-dir"), "{said}");
    }
    assert_eq!(names_in(&work), ["report.sqlite"]);
    assert_eq!(fs::read(mine.join("my_view.cfg")).unwrap(), b"my own view");

    // The default NAME.cfgs/ is no different.
    fs::create_dir(work.join("out.cfgs")).unwrap();
    fs::write(work.join("out.cfgs/notes.txt"), "mine").unwrap();
    let out = convert(&[&report], &work.join("out.prv"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(fs::read(work.join("out.cfgs/notes.txt")).unwrap(), b"mine");
    assert_eq!(names_in(&work), ["out.cfgs", "report.sqlite"]);
}

/// Issue 27 item 6: a `.prv`, `.pcf` or `.row` that is not a Paraver file of its
/// kind is refused (exit 2, one line naming it), before anything is read or
/// written; Paraver files of another tool (BSC's nsys2prv) and empty files are
/// replaced.
#[test]
fn an_output_file_that_is_not_a_paraver_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let input = sample(NVTX_SAMPLE);
    let dir = tmp.path();
    let cases: [(&str, &[u8], &str); 7] = [
        ("bar.prv", b"my notes\n", "not a Paraver trace"),
        (
            "bar.prv.gz",
            b"#Paraver (01/01/2025 at 10:00):1_ns:0:1:1(1:1)\n",
            "gzip",
        ),
        (
            "bar.pcf",
            b"colour notes\nEVENT_TYPE\n",
            "not a Paraver .pcf",
        ),
        ("bar.row", b"thread names: main\n", "not a Paraver .row"),
        ("bar.prv", b"\x1f\x8b\x08\x00", "not a Paraver trace"),
        ("bar.pcf", b"\n\n# comment\nSTATES_COLOR\n", ""),
        ("bar.row", b"\nLEVEL NODE SIZE 1\nnode1\n", ""),
    ];
    for (name, content, refusal) in cases {
        let target = dir.join(name);
        fs::write(&target, content).unwrap();
        let output = if name.ends_with(".gz") {
            "bar.prv.gz"
        } else {
            "bar.prv"
        };
        let out = convert(&[&input], &dir.join(output), &[]);
        let said = stderr(&out);
        if refusal.is_empty() {
            assert!(out.status.success(), "{name}: {said}");
            assert_ne!(fs::read(&target).unwrap(), content, "{name} replaced");
        } else {
            assert_eq!(out.status.code(), Some(2), "{name}: {said}");
            assert_eq!(said.lines().count(), 1, "{said}");
            assert!(said.contains(&target.display().to_string()), "{said}");
            assert!(said.contains(refusal), "{said}");
            assert_eq!(fs::read(&target).unwrap(), content, "{name} kept");
            assert_eq!(names_in(dir), [name], "nothing else written");
            // A sharded conversion refuses it when planned, before any shard runs.
            let out = binary()
                .arg("-q")
                .args(["--plan-shards", "2"])
                .arg(&input)
                .arg(dir.join(output))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        }
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                fs::remove_dir_all(path).unwrap();
            } else {
                fs::remove_file(path).unwrap();
            }
        }
    }

    // BSC nsys2prv's output set (a Paraver trace whose .pcf begins with blank
    // lines and an indented DEFAULT_OPTIONS), and an empty .prv, are replaced.
    fs::write(
        dir.join("bsc.prv"),
        "#Paraver (27/11/2026 at 11:39):270072049_ns:0:1:1(5:1)\n",
    )
    .unwrap();
    fs::write(
        dir.join("bsc.pcf"),
        "\n    DEFAULT_OPTIONS\n\n    LEVEL THREAD\n",
    )
    .unwrap();
    fs::write(dir.join("bsc.row"), "LEVEL NODE SIZE 1\nnode1\n").unwrap();
    fs::write(dir.join("empty.prv"), "").unwrap();
    for name in ["bsc.prv", "empty.prv"] {
        let out = convert(&[&input], &dir.join(name), &[]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        check_trace(&dir.join(name));
    }
    // A directory in the trace's place is no trace.
    fs::create_dir(dir.join("d.prv")).unwrap();
    let out = convert(&[&input], &dir.join("d.prv"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));
}

/// An empty directory, one the tool made (marker), and one of an older version
/// (only bundled views, no marker) take the views.
#[test]
fn views_go_into_new_empty_or_own_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let input = sample(NVTX_SAMPLE);
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let args = |dir: &Path| ["--cfgs-dir".to_string(), dir.display().to_string()];
    let a = args(&empty);
    let out = convert(&[&input], &tmp.path().join("a.prv"), &[&a[0], &a[1]]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(empty.join(".nsys2prv-rs").is_file());
    assert!(empty.join("views/nvtx_ranges.cfg").is_file());
    // Ours now: replaced whole, including a file someone added.
    fs::write(empty.join("views/added.cfg"), "x").unwrap();
    let out = convert(&[&input], &tmp.path().join("a.prv"), &[&a[0], &a[1]]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!empty.join("views/added.cfg").exists());

    // Written by a version before the marker: the bundled files only.
    let old = tmp.path().join("old.cfgs");
    fs::create_dir_all(old.join("views")).unwrap();
    fs::write(old.join("views/nvtx_ranges.cfg"), "old").unwrap();
    let out = convert(&[&input], &tmp.path().join("old.prv"), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(old.join(".nsys2prv-rs").is_file());
    assert_ne!(fs::read(old.join("views/nvtx_ranges.cfg")).unwrap(), b"old");
}

/// An output directory where NAME.cache exists but is someone else's.
#[test]
fn an_export_cache_the_tool_did_not_make_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.nsys-rep");
    fs::write(&report, b"report").unwrap();
    let home = fake_nsys_home(tmp.path(), &sample(NVTX_SAMPLE), false);
    let cache = tmp.path().join("out.cache");
    fs::create_dir(&cache).unwrap();
    fs::write(cache.join("thesis.tex"), "mine").unwrap();
    let out = binary()
        .env("NSYS_HOME", &home)
        .arg("-q")
        .arg(&report)
        .arg(tmp.path().join("out.prv"))
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("out.cache"), "{said}");
    assert_eq!(names_in(&cache), ["thesis.tex"]);
    assert!(!tmp.path().join("out.prv").exists());
}

// ---------------------------------------------------------------------------
// Item 2: ranks of `.nsys-rep` inputs from the names given.

/// An NSYS_HOME whose `nsys export` copies `NAME.src` beside the report.
fn nsys_copying_sources(dir: &Path) -> PathBuf {
    let home = dir.join("nsys-home");
    fs::create_dir_all(home.join("bin")).unwrap();
    let script = "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'NVIDIA Nsight Systems version 2022.4.2.1'; exit 0; fi\n\
        echo \"$@\" >> \"$(dirname \"$0\")/log\"\nout=\nfor a; do [ \"$prev\" = --output ] && out=$a; prev=$a; report=$a; done\n\
        cp \"${report%.nsys-rep}.src\" \"$out\"\n";
    let nsys = home.join("bin/nsys");
    fs::write(&nsys, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&nsys, fs::Permissions::from_mode(0o755)).unwrap();
    home
}

/// Task names of a `.row`.
fn task_names(row: &Path) -> Vec<String> {
    let text = fs::read_to_string(row).unwrap();
    text.split("LEVEL TASK")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn ranks_of_nsys_rep_inputs_come_from_their_names() {
    for with_sqlite_beside in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path().join("job");
        fs::create_dir(&reports).unwrap();
        // Slurm's report_%q{SLURM_PROCID}: two CPU-only reports without any
        // rank in them, so the file name is the only source.
        for (rank, src) in [(5, NVTX_SAMPLE), (7, "samples/sched/sched.sqlite")] {
            let base = reports.join(format!("report_{rank}"));
            fs::write(base.with_extension("nsys-rep"), b"report").unwrap();
            let copy = if with_sqlite_beside { "sqlite" } else { "src" };
            fs::copy(sample(src), base.with_extension(copy)).unwrap();
        }
        let home = nsys_copying_sources(tmp.path());
        let out_prv = tmp.path().join("out.prv");
        let inputs = [
            reports.join("report_7.nsys-rep"),
            reports.join("report_5.nsys-rep"),
        ];
        let dry = binary()
            .env("NSYS_HOME", &home)
            .arg("--dry-run")
            .args(&inputs)
            .arg(&out_prv)
            .output()
            .unwrap();
        assert!(dry.status.success(), "{}", stderr(&dry));
        let out = binary()
            .env("NSYS_HOME", &home)
            .arg("-q")
            .args(&inputs)
            .arg(&out_prv)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let tasks = task_names(&tmp.path().join("out.row"));
        assert!(
            tasks[0].starts_with("rank 5 (") && tasks[1].starts_with("rank 7 ("),
            "sqlite beside: {with_sqlite_beside}: {tasks:?}"
        );
        // Once exported, the dry run reads the cached export and says the same.
        let dry = binary()
            .env("NSYS_HOME", &home)
            .arg("--dry-run")
            .args(&inputs)
            .arg(&out_prv)
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&dry.stdout).into_owned();
        for (rank, name) in [(5, "report_5.nsys-rep"), (7, "report_7.nsys-rep")] {
            let line = listing.lines().find(|l| l.contains(name)).unwrap();
            let columns: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(columns[2], rank.to_string(), "{listing}");
        }
    }
}

/// Issue 27 item 11: a directory is searched recursively (per-node and per-step
/// directories of a Slurm job), but not into what the tool made (marker file:
/// `NAME.cache/`, `NAME.parts/`, views), hidden directories, or symbolic links to
/// directories.
#[test]
fn directories_are_searched_recursively_but_not_into_our_own() {
    let tmp = tempfile::tempdir().unwrap();
    let jobs = tmp.path().join("jobs");
    let ranks = workspace_root().join("samples/mpi_3ranks");
    for (rank, rel) in [(0, "node1"), (1, "node2/step0"), (2, "")] {
        let dir = jobs.join(rel);
        fs::create_dir_all(&dir).unwrap();
        fs::copy(
            ranks.join(format!("rank{rank}.sqlite")),
            dir.join(format!("rank{rank}.sqlite")),
        )
        .unwrap();
    }
    // Copies that must not be found: in an export cache of ours, a snapshot, a link.
    for dir in ["old.cache", ".snapshot"] {
        fs::create_dir(jobs.join(dir)).unwrap();
        fs::copy(
            ranks.join("rank0.sqlite"),
            jobs.join(dir).join("rank0.sqlite"),
        )
        .unwrap();
    }
    fs::write(jobs.join("old.cache/.nsys2prv-rs"), "").unwrap();
    std::os::unix::fs::symlink(&jobs, jobs.join("node1/loop")).unwrap();
    let prv = jobs.join("out.prv");
    // A plan leaves out.parts/ (ours) in the directory; the conversion, out.cfgs/.
    let plan = binary()
        .args(["-q", "--plan-shards", "2"])
        .arg(&jobs)
        .arg(&prv)
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(jobs.join("out.parts/.nsys2prv-rs").is_file());
    for _ in 0..2 {
        let dry = binary()
            .arg("--dry-run")
            .arg(&jobs)
            .arg(&prv)
            .output()
            .unwrap();
        assert!(dry.status.success(), "{}", stderr(&dry));
        let listing = String::from_utf8_lossy(&dry.stdout).into_owned();
        let found: Vec<&str> = listing
            .lines()
            .filter(|l| l.contains(".sqlite"))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        let want: Vec<String> = ["node1/rank0", "node2/step0/rank1", "rank2"]
            .iter()
            .map(|r| jobs.join(format!("{r}.sqlite")).display().to_string())
            .collect();
        let mut found_sorted = found.clone();
        found_sorted.sort();
        assert_eq!(found_sorted, want, "{listing}");
        let out = convert(&[&jobs], &prv, &[]);
        let said = stderr(&out);
        assert!(out.status.success(), "{said}");
        assert!(!said.contains("more than once"), "{said}");
        assert_eq!(task_names(&jobs.join("out.row")).len(), 3);
    }
}

// ---------------------------------------------------------------------------
// Item 6: a dry run writes nothing, and its size estimate is close.

#[test]
fn a_dry_run_creates_exports_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.nsys-rep");
    fs::write(&report, b"report").unwrap();
    let home = fake_nsys_home(tmp.path(), &sample(NVTX_SAMPLE), false);
    let sqlite = tmp.path().join("s.sqlite");
    fs::copy(sample(CUDA_SAMPLE), &sqlite).unwrap();
    let before = names_in(tmp.path());
    let out = binary()
        .env("NSYS_HOME", &home)
        .arg("--dry-run")
        .arg(&report)
        .arg(&sqlite)
        .arg(tmp.path().join("out.prv"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("r.nsys-rep") && listing.contains("needs `nsys export`"),
        "{listing}"
    );
    assert!(listing.contains("1 report not exported yet"), "{listing}");
    assert_eq!(names_in(tmp.path()), before, "nothing created");
    assert!(!tmp.path().join("nsys.log").exists(), "nsys was not run");
}

/// Issue 27 item 5: the common case after a Slurm job, real `.nsys-rep` reports not
/// exported yet. The dry run lists them, says they need `nsys export` (and how long),
/// guesses the size from the report files and says the guess is rough; it exports
/// nothing. Once the conversion has exported them, it counts their rows.
#[test]
fn a_dry_run_of_reports_not_exported_lists_them_and_guesses_the_size() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("job");
    fs::create_dir(&dir).unwrap();
    let samples = sample("samples/mpi_3ranks");
    for rank in 0..3 {
        fs::copy(
            samples.join(format!("rank{rank}.nsys-rep")),
            dir.join(format!("report_{rank}.nsys-rep")),
        )
        .unwrap();
    }
    let home = fake_nsys_home(tmp.path(), &samples.join("rank0.sqlite"), false);
    let before = names_in(&dir);
    let out_prv = dir.join("run.prv");
    let dry = binary()
        .env("NSYS_HOME", &home)
        .arg("--dry-run")
        .arg(&dir)
        .arg(&out_prv)
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", stderr(&dry));
    let listing = String::from_utf8_lossy(&dry.stdout).into_owned();
    for rank in 0..3 {
        let line = listing
            .lines()
            .find(|l| l.contains(&format!("report_{rank}.nsys-rep")))
            .unwrap_or_else(|| panic!("report_{rank} not listed: {listing}"));
        assert!(line.contains("needs `nsys export` first (1"), "{line}");
    }
    assert!(!listing.contains("0 reports on 0 hosts"), "{listing}");
    assert!(
        listing.contains("3 reports not exported yet (495 kB of reports)"),
        "{listing}"
    );
    assert!(listing.contains("the dry run exports nothing"), "{listing}");
    let guess = listing
        .split("roughly ")
        .nth(1)
        .and_then(|s| s.split(" of .prv").next())
        .map(parse_size)
        .unwrap_or_else(|| panic!("no guess in {listing}"));
    assert!(
        listing.contains("a guess from the reports' size"),
        "{listing}"
    );
    assert_eq!(names_in(&dir), before, "nothing created");
    assert!(!tmp.path().join("nsys.log").exists(), "nsys was not run");

    // The real size, from the same reports' exports.
    let exports: Vec<PathBuf> = (0..3)
        .map(|r| samples.join(format!("rank{r}.sqlite")))
        .collect();
    let refs: Vec<&Path> = exports.iter().map(PathBuf::as_path).collect();
    let real_prv = tmp.path().join("real.prv");
    assert!(convert(&refs, &real_prv, &[]).status.success());
    let real = fs::metadata(&real_prv).unwrap().len() as f64;
    assert!(
        (real / 3.0..=real * 3.0).contains(&guess),
        "guessed {guess} bytes, {real} written"
    );

    // Exported by the conversion (with the real nsys), the dry run counts rows.
    let has_nsys = std::process::Command::new("nsys")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nsys {
        not_checked("nsys", "no nsys on PATH: the dry run after a real export");
        return;
    }
    let out = binary().arg("-q").arg(&dir).arg(&out_prv).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let dry = binary()
        .arg("--dry-run")
        .arg(&dir)
        .arg(&out_prv)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(listing.contains("3 reports on 1 host: "), "{listing}");
    assert!(!listing.contains("not exported"), "{listing}");
}

/// "12.3 kB" → bytes.
fn parse_size(text: &str) -> f64 {
    let (number, unit) = text.split_once(' ').unwrap();
    let scale = match unit {
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => panic!("unit {unit}"),
    };
    number.parse::<f64>().unwrap() * scale
}

#[test]
fn the_dry_run_size_estimate_is_within_ten_percent_on_every_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let sets = [
        "samples/synthetic/cuda_2025.5.sqlite",
        "samples/synthetic/4ranks_2hosts_2022.4",
        "samples/nvtx_osrt/nvtx_osrt.sqlite",
        "samples/openmp/openmp.sqlite",
        "samples/sched/sched.sqlite",
        "samples/sampling/sampling.sqlite",
        "samples/sched_only/sched_only.sqlite",
        "samples/mpi_2ranks",
        "samples/mpi_3ranks",
    ];
    for set in sets {
        let input = sample(set);
        let prv = tmp.path().join("t.prv");
        let dry = binary()
            .arg("--dry-run")
            .arg(&input)
            .arg(&prv)
            .output()
            .unwrap();
        assert!(dry.status.success(), "{set}: {}", stderr(&dry));
        let listing = String::from_utf8_lossy(&dry.stdout).into_owned();
        let estimate = listing
            .split("about ")
            .nth(1)
            .and_then(|s| s.split(" of .prv").next())
            .map(parse_size)
            .unwrap_or_else(|| panic!("{set}: no estimate in {listing}"));
        let out = convert(&[&input], &prv, &[]);
        assert!(out.status.success(), "{set}: {}", stderr(&out));
        let real = fs::metadata(&prv).unwrap().len() as f64;
        let error = (estimate - real).abs() / real;
        assert!(
            error < 0.10,
            "{set}: estimated {estimate} bytes, wrote {real} ({:.1} % off)",
            error * 100.0
        );
    }
}

// ---------------------------------------------------------------------------
// Item 8: Nsight's own threads are hidden unless asked for.

#[test]
fn nsys_threads_are_hidden_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let input = sample("samples/sched/sched.sqlite");
    let prv = tmp.path().join("t.prv");
    for (keep, shown) in [(false, false), (true, true)] {
        let extra: &[&str] = if keep { &["--keep-nsys-threads"] } else { &[] };
        let out = convert(&[&input], &prv, extra);
        assert!(out.status.success(), "{}", stderr(&out));
        check_trace(&prv);
        let row = fs::read_to_string(tmp.path().join("t.row")).unwrap();
        assert_eq!(row.contains("[NSys] ("), shown, "{row}");
        assert_eq!(row.contains("[NSys Comms] ("), shown, "{row}");
        assert!(row.contains("NVTX main ("), "{row}");
    }
}

// ---------------------------------------------------------------------------
// Item 5: BSC nsys2prv's command lines, unchanged.

/// `nsys2prv -t cuda_api_trace,nvtx_pushpop_trace -m in.sqlite out` as BSC's
/// documentation and the Leonardo workshop scripts write them.
#[test]
fn bsc_command_lines_run_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("report1.sqlite");
    fs::copy(sample(CUDA_SAMPLE), &input).unwrap();
    let run = |args: &[&str]| {
        binary()
            .current_dir(tmp.path())
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "-t",
        "cuda_api_trace,nvtx_pushpop_trace",
        "report1.sqlite",
        "trace",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    check_trace(&tmp.path().join("trace.prv"));
    assert!(tmp.path().join("trace.pcf").is_file() && tmp.path().join("trace.row").is_file());

    let leonardo = "nvtx_pushpop_trace,nccl,cuda_api_trace,gpu_metrics,cuda_gpu_trace";
    let out = run(&["-t", leonardo, "-m", "report1.sqlite", "leonardo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = check_trace(&tmp.path().join("leonardo.prv"));
    assert!(
        begins(&stats, 63_000_006) > 0,
        "kernels with cuda_gpu_trace"
    );

    // -z compresses (NAME.prv.gz, plain .pcf and .row), -s is accepted.
    let out = run(&[
        "-t",
        "cuda_api_trace",
        "-z",
        "-s",
        "report1.sqlite",
        "zipped",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tmp.path().join("zipped.prv.gz").is_file());
    assert!(!tmp.path().join("zipped.prv").exists());
    check_trace(&tmp.path().join("zipped.prv.gz"));

    // -f RANGE cuts like --nvtx-range (an unknown range is an error naming it).
    let out = run(&[
        "-t",
        "cuda_api_trace",
        "-f",
        "no_such_range",
        "report1.sqlite",
        "f",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no_such_range"), "{}", stderr(&out));

    // BSC's options run (bsc_cli.rs, pmf.rs for -L and --description-*).
    let out = run(&[
        "--time-limit-start=1",
        "--exclude-kernels",
        "--clean",
        "--label=run1",
        "--description-text=x",
        "report1.sqlite",
        "x",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// BSC nsys2prv always translates GPU activity with `cuda_api_trace`.
#[test]
fn bsc_cuda_api_trace_brings_gpu_activity() {
    let tmp = tempfile::tempdir().unwrap();
    let out_prv = tmp.path().join("t.prv");
    let out = convert(
        &[&sample(CUDA_SAMPLE)],
        &out_prv,
        &["-t", "cuda_api_trace,nvtx_pushpop_trace"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = check_trace(&out_prv);
    assert!(begins(&stats, 63_000_006) > 0, "kernels");
    assert!(begins(&stats, 63_000_001) > 0, "memory operations");
}

/// `--force-sqlite` exports again although an export sits beside the report.
#[test]
fn force_sqlite_exports_again() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.nsys-rep");
    fs::write(&report, b"report").unwrap();
    fs::copy(sample(NVTX_SAMPLE), tmp.path().join("r.sqlite")).unwrap();
    let home = fake_nsys_home(tmp.path(), &sample(NVTX_SAMPLE), false);
    let out_prv = tmp.path().join("out/t.prv");
    fs::create_dir(tmp.path().join("out")).unwrap();
    for (force, exports) in [(false, 0), (true, 1)] {
        let mut cmd = binary();
        cmd.env("NSYS_HOME", &home).arg("-q");
        if force {
            cmd.arg("--force-sqlite");
        }
        let out = cmd.arg(&report).arg(&out_prv).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let made = fs::read_to_string(tmp.path().join("nsys.log")).map_or(0, |l| l.lines().count());
        assert_eq!(made, exports, "--force-sqlite: {force}");
    }
}

// ---------------------------------------------------------------------------
// Item 7: messages that say what happened.

#[test]
fn a_time_without_unit_is_refused_with_the_units() {
    let tmp = tempfile::tempdir().unwrap();
    let out = convert(
        &[&sample(NVTX_SAMPLE)],
        &tmp.path().join("t.prv"),
        &["--time-window", "1500:3000"],
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--time-window") && said.contains("1500ms"),
        "{said}"
    );
    assert_eq!(names_in(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_failed_export_leaves_no_empty_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.nsys-rep");
    fs::write(&report, b"report").unwrap();
    let home = fake_nsys_home(tmp.path(), Path::new("/nonexistent"), false);
    let out_dir = tmp.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    let out = binary()
        .env("NSYS_HOME", &home)
        .arg("-q")
        .arg(&report)
        .arg(out_dir.join("t.prv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(names_in(&out_dir), Vec::<String>::new());
}

#[test]
fn excluding_every_category_of_a_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let input = sample(NVTX_SAMPLE);
    let out = convert(
        &[&input],
        &tmp.path().join("t.prv"),
        &["--exclude", "nvtx,osrt"],
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("nvtx (94 rows)") && said.contains("-t/--exclude leave out"),
        "{said}"
    );
}

#[test]
fn the_summary_counts_records_and_lines_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let prv = tmp.path().join("t.prv");
    let out = binary()
        .arg(sample(CUDA_SAMPLE))
        .arg(&prv)
        .output()
        .unwrap();
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    let lines = fs::read_to_string(&prv).unwrap().lines().count();
    assert!(
        said.contains(&format!(
            "{} records ({lines} lines with the header)",
            lines - 1
        )),
        "{said}"
    );
}
