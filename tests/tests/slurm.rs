//! The binary under a real Slurm: `scripts/slurm-local.sh start` runs a one-node cluster on
//! localhost, and `.ci/run` starts it and exports its `SLURM_CONF`. Without a responding Slurm
//! the test says how to start one and passes, except in CI (`CI` set), where it fails.

use std::path::PathBuf;
use std::process::{Command, Output};

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

fn takes_jobs(node_state: &str) -> bool {
    ["idle", "mix", "alloc"].contains(&node_state)
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
    Command::new("srun")
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
    if !slurm_is_running() {
        return;
    }
    let binary = end_to_end::binary_path().to_str().unwrap();
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
    let version = format!("nsys2prv-rs {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        lines,
        [format!("0: {version}"), format!("1: {version}")],
        "{stdout}"
    );
}
