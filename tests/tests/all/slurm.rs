//! The binary under a real Slurm: `scripts/slurm-local.sh start` runs a one-node cluster on
//! localhost, and `.ci/run` starts it and exports its `SLURM_CONF`. Without a responding Slurm
//! the test passes and the run's summary lists it with how to start one, except in CI (`CI`
//! set), where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use end_to_end::sharding::*;
use end_to_end::*;

/// How long a job step may wait for the node before srun gives up (a bound, not a measure: a
/// stuck cluster fails the test instead of hanging it).
const IMMEDIATE_SECONDS: &str = "60";

/// True when `sinfo` answers and lists a node that can take jobs.
fn slurm_is_running() -> bool {
    // Without a configuration sinfo retries for a minute before it fails.
    let conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"));
    let why = if !conf.is_file() {
        format!("no Slurm configuration at {}", conf.display())
    } else {
        match sinfo_node_states() {
            Ok(states) if states.iter().any(|s| takes_jobs(s)) => return true,
            Ok(states) => format!("no node ready (sinfo: {states:?})"),
            Err(why) => why,
        }
    };
    missing_tool(
        "Slurm",
        &format!(
            "{why}; start a local cluster as root with \
             `export SLURM_CONF=$(scripts/slurm-local.sh start | tail -1)`"
        ),
    );
    false
}

/// Whether a node in `node_state` (sinfo's `%t`) runs jobs now or once it is free: a node
/// still completing the previous test's job (`comp`) does; one not responding (`idle*`),
/// down or drained does not.
fn takes_jobs(node_state: &str) -> bool {
    ["idle", "mix", "alloc", "comp"].contains(&node_state)
}

/// The tests share one node: each holds the cluster alone, so none waits on another's job and
/// none sees the node completing another's job step.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster for one test, or `None` when there is no Slurm (outside CI).
fn cluster() -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = CLUSTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    slurm_is_running().then_some(guard)
}

/// The state of each node, as `sinfo` reports it.
fn sinfo_node_states() -> Result<Vec<String>, String> {
    match Command::new("sinfo")
        .args(["--noheader", "--Node", "--format=%t"])
        .output()
    {
        Err(e) => Err(format!("sinfo cannot run ({e})")),
        Ok(out) if !out.status.success() => Err(format!(
            "sinfo failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(out) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| line.trim().to_string())
            .collect()),
    }
}

fn srun(tasks: usize, args: &[&str]) -> Output {
    // Passed on to the tasks, as `binary()` does for single runs.
    Command::new("srun")
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .arg(format!("--ntasks={tasks}"))
        .arg(format!("--immediate={IMMEDIATE_SECONDS}"))
        .arg("--label")
        .arg("--quiet")
        .args(args)
        .output()
        .expect("run srun")
}

#[test]
fn srun_runs_the_binary_once_per_task() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let binary = binary_path().to_str().unwrap();
    let out = srun(2, &[binary, "--version"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "srun -n 2 {binary} --version: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // --label prefixes each line with its task's rank.
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    let local = Command::new(binary).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&local.stdout).trim().to_string();
    assert!(
        version.starts_with("nsys2prv-rs "),
        "--version: {version:?}"
    );
    assert_eq!(
        lines,
        [format!("0: {version}"), format!("1: {version}")],
        "{stdout}"
    );
}

/// Converts `inputs` in one process into `dir/single/t.prv`.
fn single_run(inputs: &[PathBuf], dir: &Path) -> PathBuf {
    let out = dir.join("single");
    std::fs::create_dir(&out).unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    assert_ok(&convert(&refs, &out.join("t.prv"), &[]), "single run");
    out
}

/// The recorded samples (which span seconds), and a synthetic job of 256 ranks.
fn input_sets(dir: &Path) -> Vec<(&'static str, Vec<PathBuf>)> {
    let samples = workspace_root().join("samples");
    let recorded: Vec<PathBuf> = [
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
    std::fs::create_dir(&job).unwrap();
    let synthetic = synthetic_mpi_job(&job, 256, 1_795_261_090_000_000_000);
    vec![("samples", recorded), ("256 reports", synthetic)]
}

/// For each input set: converts it in one process, runs `sharded(what, inputs, dir,
/// out)` to write `out/t.prv` (`out` = `dir/NAME`, empty), and checks that it wrote the
/// same files.
fn each_input_set(name: &str, sharded: impl Fn(&str, &[PathBuf], &Path, &Path)) {
    let tmp = tempfile::tempdir().unwrap();
    for (what, inputs) in input_sets(tmp.path()) {
        let dir = tmp.path().join(what.replace(' ', "_"));
        std::fs::create_dir(&dir).unwrap();
        let expected = single_run(&inputs, &dir);
        let out = dir.join(name);
        std::fs::create_dir(&out).unwrap();
        sharded(what, &inputs, &dir, &out);
        assert_same_files(&expected, &out);
    }
}

#[test]
fn srun_with_four_tasks_writes_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    each_input_set("srun", |what, inputs, _dir, out| {
        let mut args = vec![binary_path().to_str().unwrap(), "-q", "--shard", "slurm"];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let trace = out.join("t.prv");
        args.push(trace.to_str().unwrap());
        let run = srun(4, &args);
        assert_ok(&run, &format!("srun -n 4 --shard slurm ({what})"));
        assert!(
            !out.join("t.parts").exists(),
            "parts removed after the merge"
        );
    });
}

/// Runs `sbatch` with `args`; returns its stdout (the job id with --parsable).
fn sbatch(args: &[&str]) -> String {
    // Exported to the job (sbatch's default --export=ALL), as `binary()` sets it.
    let out = Command::new("sbatch")
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .arg("--parsable")
        .args(args)
        .output()
        .expect("run sbatch");
    assert_ok(&out, &format!("sbatch {args:?}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_job_array_then_a_dependent_merge_write_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    each_input_set("array", |what, inputs, dir, out| {
        let trace = out.join("t.prv");
        // The job scripts of the README.
        let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        let translate = dir.join("translate.sh");
        std::fs::write(
            &translate,
            format!(
                "#!/bin/bash\n{} -q --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT {} {}\n",
                binary_path().display(),
                names.join(" "),
                trace.display()
            ),
        )
        .unwrap();
        let logs = dir.join("slurm-%A_%a.out");
        let array = sbatch(&[
            "--array=0-3",
            &format!("--output={}", logs.display()),
            translate.to_str().unwrap(),
        ]);
        let merge_log = dir.join("merge.out");
        sbatch(&[
            "--wait",
            &format!("--dependency=afterok:{array}"),
            &format!("--output={}", merge_log.display()),
            "--wrap",
            &format!("{} merge -q {}", binary_path().display(), trace.display()),
        ]);
        let log = std::fs::read_to_string(&merge_log).unwrap_or_default();
        assert!(
            trace.is_file(),
            "no trace from the merge job ({what}): {log}"
        );
    });
}

/// A fenced `bash` block of a Markdown file that Slurm runs (it holds `#SBATCH`, `sbatch` or
/// `srun`): a job script (its first line `#!`, named by a `# NAME.sh:` comment) or the
/// commands that submit job scripts.
struct ScriptBlock {
    origin: String,
    text: String,
}

impl ScriptBlock {
    fn is_job_script(&self) -> bool {
        self.text.starts_with("#!")
    }

    /// `NAME.sh` of a job script, from its `# NAME.sh: ...` comment.
    fn name(&self) -> Option<String> {
        self.text.lines().find_map(|l| {
            let name = l.strip_prefix("# ")?.split(':').next()?;
            name.ends_with(".sh").then(|| name.to_string())
        })
    }
}

/// The README and every Markdown file under `docs/` (the guide).
fn documents() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut docs = vec![root.join("README.md")];
    if root.join("docs").is_dir() {
        docs.extend(
            files_under(&root.join("docs"))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    docs
}

fn slurm_blocks() -> Vec<ScriptBlock> {
    let mut blocks = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut open: Option<(usize, Vec<&str>)> = None;
        for (n, line) in text.lines().enumerate() {
            match (&mut open, line.trim_end()) {
                (None, "```bash") => open = Some((n + 2, Vec::new())),
                (Some(_), "```") => {
                    let (first, lines) = open.take().unwrap();
                    let body = lines.join("\n") + "\n";
                    let slurm = ["#SBATCH", "sbatch ", "srun "]
                        .iter()
                        .any(|w| body.contains(w));
                    if slurm {
                        blocks.push(ScriptBlock {
                            origin: format!("{}:{first}", doc.display()),
                            text: body,
                        });
                    }
                }
                (Some((_, lines)), _) => lines.push(line),
                _ => {}
            }
        }
    }
    blocks
}

/// The only changes made to the documents' scripts: sizes, scaled down to the local node
/// (one node, 8 CPUs) and to three reports. Each must apply exactly once.
const SCALED_DOWN: [(&str, &str); 2] = [
    (
        "#SBATCH --nodes=16 --ntasks-per-node=4 --cpus-per-task=8",
        "#SBATCH --nodes=1 --ntasks-per-node=4 --cpus-per-task=2",
    ),
    ("shards=64\n", "shards=4\n"),
];

/// A directory holding three recorded reports named as the documents name them
/// (`report_N.nsys-rep`). Without an `nsys` to export them, their exports lie beside them,
/// which the tool reads instead (as it would a user's).
fn job_directory(parent: &Path, name: &str, with_nsys: bool) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    let samples = workspace_root().join("samples/mpi_3ranks");
    for rank in 0..3 {
        let report = dir.join(format!("report_{rank}.nsys-rep"));
        std::fs::copy(samples.join(format!("rank{rank}.nsys-rep")), &report).unwrap();
        if !with_nsys {
            std::fs::copy(
                samples.join(format!("rank{rank}.sqlite")),
                report.with_extension("sqlite"),
            )
            .unwrap();
        }
    }
    dir
}

fn job_logs(dir: &Path) -> String {
    let mut logs = String::new();
    for file in files_under(dir) {
        if file.extension().is_some_and(|e| e == "out") {
            logs += &format!("--- {}\n", file.display());
            logs += &std::fs::read_to_string(&file).unwrap_or_default();
        }
    }
    logs
}

/// Every Slurm script of the README (and guide) runs as written under the local Slurm, sizes
/// scaled down (`SCALED_DOWN`), with `nsys2prv-rs` on the PATH: the job scripts nothing submits
/// by `sbatch --wait`, the submission commands by bash with `SBATCH_WAIT=1` (each `sbatch`
/// returns when its job is over, so the dependent merge has run when bash ends). Each writes
/// the trace one process writes.
#[test]
fn every_slurm_script_of_the_documents_runs_as_written() {
    let mut blocks = slurm_blocks();
    for (from, to) in SCALED_DOWN {
        let matching: Vec<&mut ScriptBlock> = blocks
            .iter_mut()
            .filter(|b| b.text.contains(from))
            .collect();
        assert_eq!(matching.len(), 1, "{from:?} must be in exactly one script");
        for block in matching {
            assert_eq!(block.text.matches(from).count(), 1, "{from:?}");
            block.text = block.text.replace(from, to);
        }
    }
    let (scripts, submissions): (Vec<&ScriptBlock>, Vec<&ScriptBlock>) =
        blocks.iter().partition(|b| b.is_job_script());
    for script in &scripts {
        assert!(
            script.name().is_some(),
            "{}: a job script says its name (`# NAME.sh: ...`)",
            script.origin
        );
    }
    // convert.sh, shards.sh, translate.sh and the array's submission, at least.
    assert!(
        scripts.len() >= 3 && !submissions.is_empty(),
        "{} scripts",
        blocks.len()
    );

    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(binary_path(), bin.join("nsys2prv-rs")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let with_nsys = Command::new("nsys")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());

    let reference = job_directory(tmp.path(), "reference", with_nsys);
    let single = binary()
        .current_dir(&reference)
        .args(["-q", "--sync", "mpi-init"])
        .args((0..3).map(|r| format!("report_{r}.nsys-rep")))
        .arg("run.prv.gz")
        .output()
        .unwrap();
    assert_ok(&single, "one process");

    let submitted = |name: &str| submissions.iter().any(|s| s.text.contains(name));
    let mut ran = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let name = block.name();
        if block.is_job_script() && submitted(name.as_deref().unwrap()) {
            continue;
        }
        let dir = job_directory(tmp.path(), &format!("block{i}"), with_nsys);
        for script in &scripts {
            std::fs::write(dir.join(script.name().unwrap()), &script.text).unwrap();
        }
        let out = match &name {
            Some(name) => Command::new("sbatch")
                .current_dir(&dir)
                .env("PATH", &path)
                .args(["--wait", "--output=slurm-%j.out", name])
                .output()
                .expect("run sbatch"),
            None => Command::new("bash")
                .current_dir(&dir)
                .env("PATH", &path)
                .env("SBATCH_WAIT", "1")
                .args(["-euo", "pipefail", "-c", &block.text])
                .output()
                .expect("run bash"),
        };
        let said = format!(
            "{}:\n{}\n{}{}{}",
            block.origin,
            block.text,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            job_logs(&dir)
        );
        assert!(out.status.success(), "{said}");
        // A merge split over tasks cuts the .prv.gz into gzip members where
        // its slices end: the text Paraver reads is one process's.
        for file in ["run.prv.gz", "run.pcf", "run.row"] {
            let (got, want) = (dir.join(file), reference.join(file));
            assert!(
                as_read(&got) == as_read(&want),
                "{file} differs from one process's: {said}"
            );
        }
        assert!(!dir.join("run.parts").exists(), "{said}");
        ran.push(block.origin.clone());
    }
    eprintln!("ran as written: {}", ran.join(", "));
}

/// The bytes of `file` as Paraver reads them (a `.prv.gz` decompressed);
/// `None` when it cannot be read.
fn as_read(file: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(file).ok()?;
    if !file.to_string_lossy().ends_with(".gz") {
        return Some(bytes);
    }
    let mut text = Vec::new();
    let mut gz = flate2::read::MultiGzDecoder::new(&bytes[..]);
    std::io::Read::read_to_end(&mut gz, &mut text).ok()?;
    Some(text)
}

/// The recorded samples, converted by `srun` with three tasks: each translates
/// its shard and merges its time slice of the trace (kept with --keep-parts to
/// show it), task 0 finishes: one process's files, byte for byte.
#[test]
fn srun_with_three_tasks_merges_by_time_slices() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_, inputs) = input_sets(tmp.path()).remove(0);
    let expected = single_run(&inputs, tmp.path());
    let out = tmp.path().join("srun");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let mut args = vec![binary_path().to_str().unwrap(), "-v", "--keep-parts"];
    args.extend(["--shard", "slurm"]);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.push(trace.to_str().unwrap());
    let run = srun(3, &args);
    assert_ok(&run, "srun -n 3 --shard slurm");
    // Each task placed its slice in the trace: task 0 only wrote the header.
    let stderr = String::from_utf8_lossy(&run.stderr);
    for task in 0..3 {
        let placed = format!("{task}: slice {task} of 3: placed at byte");
        assert!(stderr.contains(&placed), "{placed}: {stderr}");
    }
    assert!(
        stderr.contains("0: ") && stderr.contains("3 of 3 slices placed by their tasks"),
        "{stderr}"
    );
    let parts = out.join("t.parts");
    for slice in 0..3 {
        let done = parts.join(format!("slice-{slice}-of-3.done"));
        let note = std::fs::read_to_string(&done).unwrap_or_default();
        assert!(note.contains("\"lines\""), "{}: {note}", done.display());
    }
    std::fs::remove_dir_all(&parts).unwrap();
    assert_same_files(&expected, &out);
}

/// A job array translates, a second array (after it) merges one time slice
/// per task, a job after that finishes the trace: one process's files.
#[test]
fn a_job_array_then_a_merge_array_then_a_merge_write_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (_, inputs) = input_sets(dir).remove(0);
    let expected = single_run(&inputs, dir);
    let out = dir.join("arrays");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let script = |name: &str, command: String| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/bash
{command}
"
            ),
        )
        .unwrap();
        path
    };
    let binary = binary_path().display().to_string();
    let tasks = "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT";
    let translate = script(
        "translate.sh",
        format!(
            "{binary} -q --shard {tasks} {} {}",
            names.join(" "),
            trace.display()
        ),
    );
    let slice = script(
        "slice.sh",
        format!("{binary} merge -q --shard {tasks} {}", trace.display()),
    );
    let logs = format!("--output={}", dir.join("slurm-%A_%a.out").display());
    let array = sbatch(&["--array=0-1", &logs, translate.to_str().unwrap()]);
    let merges = sbatch(&[
        "--array=0-2",
        &format!("--dependency=afterok:{array}"),
        &logs,
        slice.to_str().unwrap(),
    ]);
    let merge_log = dir.join("merge.out");
    sbatch(&[
        "--wait",
        &format!("--dependency=afterok:{merges}"),
        &format!("--output={}", merge_log.display()),
        "--wrap",
        &format!("{binary} merge -q {}", trace.display()),
    ]);
    let log = std::fs::read_to_string(&merge_log).unwrap_or_default();
    assert!(
        trace.is_file(),
        "no trace from the finishing merge: {log}{}",
        job_logs(dir)
    );
    assert!(
        !out.join("t.parts").exists(),
        "parts removed after the merge"
    );
    assert_same_files(&expected, &out);
}

/// `--ranks` under srun: the plan stores the list, every task translates only its
/// ranks' reports, and the trace is the single run's.
#[test]
fn srun_with_a_rank_list_writes_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 16, 1_795_261_090_000_000_000);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let single = tmp.path().join("single");
    std::fs::create_dir(&single).unwrap();
    let ranks = ["--ranks", "::4,13"];
    assert_ok(&convert(&refs, &single.join("t.prv"), &ranks), "single");
    let out = tmp.path().join("srun");
    std::fs::create_dir(&out).unwrap();
    let mut args = vec![binary_path().to_str().unwrap(), "-q", "--shard", "slurm"];
    args.extend(ranks);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let trace = out.join("t.prv");
    args.push(trace.to_str().unwrap());
    assert_ok(&srun(3, &args), "srun -n 3 --shard slurm --ranks");
    assert_same_files(&single, &out);
}

/// A cut under srun: the plan resolves the window where rows are read, every
/// task reads its reports within it, each merges a time slice of the window
/// (task 0 writes what crosses its edges), and the trace is the single run's
/// cut in the merge alone (`--cut-in-merge`).
#[test]
fn srun_with_a_cut_writes_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let inputs = synthetic_mpi_job(&job, 16, 1_795_261_090_000_000_000);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let uncut = single_run(&inputs, tmp.path()).join("t.prv");
    // The middle third of the activity.
    let text = std::fs::read_to_string(&uncut).unwrap();
    let end: i64 = text
        .lines()
        .next()
        .unwrap()
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("_ns")
        .parse()
        .unwrap();
    let first = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(':').nth(5)?.parse::<i64>().ok())
        .min()
        .unwrap();
    let third = (end - first) / 3;
    let window = format!("{}ns:{}ns", first + third, first + 2 * third);
    let in_merge = tmp.path().join("in_merge");
    std::fs::create_dir(&in_merge).unwrap();
    let cut = ["--time-window", window.as_str()];
    let merge_only = [cut[0], cut[1], "--cut-in-merge"];
    assert_ok(
        &convert(&refs, &in_merge.join("t.prv"), &merge_only),
        "single",
    );
    let out = tmp.path().join("srun");
    std::fs::create_dir(&out).unwrap();
    let mut args = vec![binary_path().to_str().unwrap(), "-q", "--shard", "slurm"];
    args.extend(cut);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let trace = out.join("t.prv");
    args.push(trace.to_str().unwrap());
    assert_ok(&srun(3, &args), "srun -n 3 --shard slurm --time-window");
    assert_same_files(&in_merge, &out);
}

/// One task alone: it translates, merges the one slice, places it after the
/// header and finishes; `.prv` and `.prv.gz` as one process writes them (the
/// `.prv.gz` as Paraver reads it).
#[test]
fn srun_with_one_task_writes_what_one_process_writes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_, inputs) = input_sets(tmp.path()).remove(0);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    for trace in ["t.prv", "t.prv.gz"] {
        let name = trace.replace('.', "_");
        let single = tmp.path().join(format!("single_{name}"));
        std::fs::create_dir(&single).unwrap();
        assert_ok(&convert(&refs, &single.join(trace), &[]), "single run");
        let out = tmp.path().join(format!("srun_{name}"));
        std::fs::create_dir(&out).unwrap();
        let mut args = vec![binary_path().to_str().unwrap(), "-q", "--shard", "slurm"];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let output = out.join(trace);
        args.push(output.to_str().unwrap());
        assert_ok(&srun(1, &args), &format!("srun -n 1 --shard slurm {trace}"));
        let names = |dir: &Path| -> Vec<PathBuf> {
            files_under(dir)
                .into_iter()
                .map(|p| p.strip_prefix(dir).unwrap().to_path_buf())
                .collect()
        };
        assert_eq!(names(&single), names(&out), "{trace}");
        for file in names(&single) {
            let (x, y) = (as_read(&single.join(&file)), as_read(&out.join(&file)));
            assert!(x.is_some() && x == y, "{} differs", file.display());
        }
    }
}

/// Task 2 of 3 killed (SIGKILL) after writing its slice, before placing it:
/// Slurm ends the step (`--kill-on-bad-exit`). Task 0, on the same node, may
/// see task 2 gone and finish the set first (copying the written slice): then
/// the set is one process's files; or Slurm ends it first: then nothing is
/// installed, and a plain `merge` finishes the trace from the slices (reusing
/// those placed), once the slices it names are merged again: one process's
/// files. Never a mix.
#[test]
fn srun_with_a_task_killed_before_placing_its_slice_installs_the_set_whole_or_not() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_, inputs) = input_sets(tmp.path()).remove(0);
    let expected = single_run(&inputs, tmp.path());
    let out = tmp.path().join("srun");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let script = format!(
        "if [ \"$SLURM_PROCID\" = 2 ]; then export NSYS2PRV_TEST_INTERRUPT='slice written:KILL'; fi; \
         exec {} -q --shard slurm {} {}",
        binary_path().display(),
        names.join(" "),
        trace.display()
    );
    let run = srun(3, &["--kill-on-bad-exit=1", "bash", "-c", &script]);
    assert!(!run.status.success(), "the step fails");
    let installed: Vec<PathBuf> = files_under(&out)
        .into_iter()
        .filter(|p| !p.starts_with(out.join("t.parts")))
        .collect();
    if !installed.is_empty() {
        // Task 0 finished before Slurm ended the step: the whole set.
        assert_same_files(&expected, &out);
        return;
    }
    assert!(out.join("t.parts/slice-2-of-3.done").is_file());
    // The step may have ended before other tasks wrote their slices: the
    // finishing merge names each slice to merge again; merged, it finishes.
    let missing: Vec<u32> = (0..3)
        .filter(|i| !out.join(format!("t.parts/slice-{i}-of-3.done")).exists())
        .collect();
    if !missing.is_empty() {
        let refused = merge(&trace, &[]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{stderr}");
        for i in &missing {
            let rerun = format!("nsys2prv-rs merge --shard {i}/3");
            assert!(stderr.contains(&rerun), "{rerun}: {stderr}");
            assert_ok(&merge(&trace, &[&format!("--shard={i}/3")]), "slice");
        }
    }
    assert_ok(&merge(&trace, &[]), "merge after the step");
    assert_same_files(&expected, &out);
}

/// A task killed outright (SIGKILL: no failure note) in a step run without
/// `--kill-on-bad-exit`: the tasks on its node see its process gone and stop,
/// naming it, rather than wait for its part until the job's time limit (the
/// step's `--time` bounds the test if they do not). The kept parts finish the
/// set once the shard is translated again.
#[test]
fn srun_with_a_task_killed_outright_ends_the_step_naming_it() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_, inputs) = input_sets(tmp.path()).remove(0);
    let expected = single_run(&inputs, tmp.path());
    let out = tmp.path().join("srun");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let script = format!(
        "if [ \"$SLURM_PROCID\" = 1 ]; then export NSYS2PRV_TEST_INTERRUPT='shard translated:KILL'; fi; \
         exec {} --shard slurm {} {}",
        binary_path().display(),
        names.join(" "),
        trace.display()
    );
    let run = srun(
        3,
        &["--kill-on-bad-exit=0", "--time=3", "bash", "-c", &script],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the step fails\n{stdout}{stderr}");
    // Both other tasks stop on it (srun --label prefixes their lines).
    for task in [0, 2] {
        let line = format!("{task}: error: task 1 of this step (process ");
        assert!(
            stdout.contains(&line) || stderr.contains(&line),
            "task {task} names task 1:\n{stdout}{stderr}"
        );
    }
    assert!(
        stdout.contains("ended without a word") || stderr.contains("ended without a word"),
        "{stdout}{stderr}"
    );
    let installed: Vec<PathBuf> = files_under(&out)
        .into_iter()
        .filter(|p| !p.starts_with(out.join("t.parts")))
        .collect();
    assert!(installed.is_empty(), "nothing installed: {installed:?}");
    assert!(!out.join("t.parts/shard-1.part").exists());
    // Translated again, shard 1 completes the kept parts.
    let shard = Command::new(binary_path())
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .args(["-q", "--shard", "1/3"])
        .args(&names)
        .arg(&trace)
        .output()
        .unwrap();
    assert_ok(&shard, "shard 1 again");
    assert_ok(&merge(&trace, &[]), "merge after the step");
    assert_same_files(&expected, &out);
}

/// `srun -n 3 nsys2prv-rs merge --shard $SLURM_PROCID/$SLURM_NTASKS` after the
/// shards: the slices' tasks run at once, so each places its slice in the
/// trace, and the finishing merge only writes the header: one process's files.
#[test]
fn srun_of_merge_slices_places_them_for_the_finishing_merge() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_, inputs) = input_sets(tmp.path()).remove(0);
    let expected = single_run(&inputs, tmp.path());
    let out = tmp.path().join("split");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("t.prv");
    for index in 0..2 {
        assert_ok(&shard(&inputs, &trace, index, 2, &[]), "shard");
    }
    let script = format!(
        "exec {} merge -q --shard $SLURM_PROCID/$SLURM_NTASKS {}",
        binary_path().display(),
        trace.display()
    );
    assert_ok(
        &srun(3, &["bash", "-c", &script]),
        "srun -n 3 merge --shard",
    );
    for slice in 0..3 {
        let placed = out.join(format!("t.parts/slice-{slice}-of-3.placed"));
        assert!(placed.is_file(), "{}", placed.display());
    }
    let finished = binary().args(["merge", "-v"]).arg(&trace).output().unwrap();
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(finished.status.success(), "{stderr}");
    assert!(
        stderr.contains("3 of 3 slices placed by their tasks"),
        "{stderr}"
    );
    assert_same_files(&expected, &out);
}

/// `--nvtx-range` under srun: the tasks find the window together, each over
/// its own shard's reports, and the trace is the single run's, byte for byte
/// (`NAME#N` and `NAME`); a report that cannot be read stops every task with
/// the single run's line naming it, nothing installed; a name no report has
/// gets the single run's message.
#[test]
fn srun_with_an_nvtx_range_finds_the_window_over_the_tasks() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let inputs = synthetic_training_job(&job, 6, 1_795_261_090_000_000_000);
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let step = |name: &str, cut: &[&str]| -> (PathBuf, Output) {
        let out = tmp.path().join(name);
        std::fs::create_dir(&out).unwrap();
        let mut args = vec![binary_path().to_str().unwrap(), "-q", "--shard", "slurm"];
        args.extend(cut);
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let trace = out.join("t.prv");
        args.push(trace.to_str().unwrap());
        let output = srun(3, &args);
        (out, output)
    };
    // A task's error lines (srun --label: `I: error: ...`; not srun's own).
    let error_lines = |stderr: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(stderr)
            .lines()
            .filter_map(|l| {
                let line = l.split_once(": ").map_or(l, |(task, rest)| {
                    if task.bytes().all(|b| b.is_ascii_digit()) {
                        rest
                    } else {
                        l
                    }
                });
                line.strip_prefix("error: ").map(str::to_string)
            })
            .collect()
    };
    for (name, range) in [("numbered", "train_step#2"), ("every", "forward")] {
        let cut = ["--nvtx-range", range];
        let single = tmp.path().join(format!("single_{name}"));
        std::fs::create_dir(&single).unwrap();
        assert_ok(&convert(&refs, &single.join("t.prv"), &cut), "single");
        let (out, output) = step(&format!("srun_{name}"), &cut);
        assert_ok(
            &output,
            &format!("srun -n 3 --shard slurm --nvtx-range {range}"),
        );
        assert_same_files(&single, &out);
    }
    // A name no report has.
    let cut = ["--nvtx-range", "no_such_range"];
    let alone = convert(&refs, &tmp.path().join("unknown.prv"), &cut);
    let message = error_lines(&alone.stderr)[0].clone();
    assert!(message.contains("no NVTX range named"), "{message}");
    let (out, output) = step("srun_unknown", &cut);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&message), "{stderr}");
    assert!(files_under(&out)
        .iter()
        .all(|p| p.starts_with(out.join("t.parts"))));
    // A damaged report (the fifth, in one task's shard).
    let bytes = std::fs::read(&inputs[4]).unwrap();
    std::fs::write(&inputs[4], &bytes[..bytes.len() / 2]).unwrap();
    let cut = ["--nvtx-range", "train_step#2"];
    let alone = convert(&refs, &tmp.path().join("damaged.prv"), &cut);
    let expected = error_lines(&alone.stderr);
    assert_eq!(expected.len(), 1, "{expected:?}");
    assert!(expected[0].contains("rank4.sqlite"), "{expected:?}");
    let (out, output) = step("srun_damaged", &cut);
    assert!(!output.status.success());
    // Every task stops with that line (srun --label: `I: error: ...`).
    assert_eq!(
        error_lines(&output.stderr),
        vec![expected[0].clone(); 3],
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(files_under(&out)
        .iter()
        .all(|p| p.starts_with(out.join("t.parts"))));
}
