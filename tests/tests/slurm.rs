//! The binary under a real Slurm: `scripts/slurm-local.sh start` runs a one-node cluster on
//! localhost, and `.ci/run` starts it and exports its `SLURM_CONF`. Without a responding Slurm
//! the test says how to start one and passes, except in CI (`CI` set), where it fails.

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
    assert!(
        std::env::var_os("CI").is_none(),
        "Slurm is required in CI: {why}"
    );
    eprintln!(
        "note: Slurm test skipped: {why}; start a local cluster as root with \
         `export SLURM_CONF=$(scripts/slurm-local.sh start | tail -1)`"
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
