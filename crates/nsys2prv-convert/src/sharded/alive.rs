//! Whether a task of a Slurm step is still running, for the tasks that wait on
//! it.
//!
//! The tasks of `--shard slurm` wait for one another through files in
//! `NAME.parts/` (task 0's word on the plan, the others' ranges, parts and
//! slices). A task that fails writes a note, and the others stop; a task
//! killed outright (`SIGKILL`, the out-of-memory killer) writes none, and Slurm
//! does not end the step unless `srun --kill-on-bad-exit` was given: the
//! others would wait until the job's time limit. So each task notes where it
//! runs (`task-I.alive`: the step, its node, its process and when that process
//! started), and a task that waits on a task of the same node checks that the
//! process is still there. A task on another node cannot be checked from
//! here: for those, `--kill-on-bad-exit` (docs/slurm.md).
//!
//! Same node means the same host name, the same boot and the same process
//! namespace (containers may give each task its own): otherwise the process
//! number says nothing, and the task is taken to be running.

use super::parts::{write_note, PartsDir};

/// What `task-I.alive` says: the lines `step`, `node`, `pid`, `start`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Whereabouts {
    step: String,
    /// Host name, boot id and process namespace: see [`this_node`].
    node: String,
    pid: u32,
    /// The process's start time (clock ticks since boot, `/proc/PID/stat`
    /// field 22): a process number reused by another process is not the task.
    start: u64,
}

impl Whereabouts {
    fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n",
            self.step, self.node, self.pid, self.start
        )
    }

    fn parse(text: &str) -> Option<Whereabouts> {
        let mut lines = text.lines();
        let step = lines.next()?.to_string();
        let node = lines.next()?.to_string();
        let pid = lines.next()?.parse().ok()?;
        let start = lines.next()?.parse().ok()?;
        Some(Whereabouts {
            step,
            node,
            pid,
            start,
        })
    }
}

/// This node, as far as process numbers go: host name, boot id and process
/// namespace; `None` where `/proc` does not tell them.
fn this_node() -> Option<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let host = read("/proc/sys/kernel/hostname")?;
    let boot = read("/proc/sys/kernel/random/boot_id")?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("{host} {boot} {}", namespace.display()))
}

/// The start time of process `pid` (`/proc/PID/stat` field 22), or `None` when
/// there is no such process, or it has ended and waits to be reaped (a zombie:
/// its parent, `slurmstepd`, has not looked yet).
fn start_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    // Field 3, the state, is the first after the name; field 22 the 20th.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Notes that this process is task `task` of `step`. Best effort: a task that
/// cannot write it is only checked less (a warning says so).
pub(crate) fn note(parts: &PartsDir, task: u32, step: &str) {
    let Some(node) = this_node() else {
        return;
    };
    let pid = std::process::id();
    let Some(start) = start_of(pid) else {
        return;
    };
    let whereabouts = Whereabouts {
        step: step.to_string(),
        node,
        pid,
        start,
    };
    if let Err(e) = write_note(&parts.alive_path(task), whereabouts.text().as_bytes()) {
        tracing::warn!("{e:#}");
    }
}

/// Why task `task` of `step` can no longer write what it is waited for: it ran
/// on this node, its process is gone, and (looked at once more, after that)
/// it had not `written` it: a task that wrote its note and then ended is not
/// lost. `None` while it runs, and whenever that cannot be known (no note of
/// this step yet, another node).
pub(crate) fn gone(
    parts: &PartsDir,
    task: u32,
    step: &str,
    written: impl FnOnce() -> bool,
) -> Option<String> {
    let text = std::fs::read_to_string(parts.alive_path(task)).ok()?;
    let noted = Whereabouts::parse(&text)?;
    if noted.step != step || Some(&noted.node) != this_node().as_ref() {
        return None;
    }
    if start_of(noted.pid) == Some(noted.start) || written() {
        return None;
    }
    Some(format!(
        "task {task} of this step (process {}) ended without a word: killed? \
         (srun --kill-on-bad-exit=1 ends a step when one of its tasks dies)",
        noted.pid
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts_dir() -> (tempfile::TempDir, PartsDir) {
        let dir = tempfile::tempdir().unwrap();
        let parts = PartsDir {
            dir: dir.path().join("t.parts"),
        };
        std::fs::create_dir(&parts.dir).unwrap();
        (dir, parts)
    }

    #[test]
    fn a_running_task_is_not_gone_and_an_ended_one_is() {
        let (_dir, parts) = parts_dir();
        note(&parts, 3, "7.0");
        assert_eq!(gone(&parts, 3, "7.0", || false), None, "this process runs");
        // A note of another step says nothing of this one.
        assert_eq!(gone(&parts, 3, "7.1", || false), None);
        // No note yet: not known.
        assert_eq!(gone(&parts, 4, "7.0", || false), None);

        // A process that has ended: not reaped yet (a zombie), then reaped.
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = start_of(pid).expect("running");
        let ended = Whereabouts {
            step: "7.0".into(),
            node: this_node().unwrap(),
            pid,
            start,
        };
        write_note(&parts.alive_path(5), ended.text().as_bytes()).unwrap();
        assert_eq!(gone(&parts, 5, "7.0", || false), None, "running");
        // (SIGKILL; `kill` does not reap it.)
        child.kill().unwrap();
        // Killed, not reaped: a zombie, as soon as the signal is delivered.
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
        {
            std::thread::yield_now();
        }
        let why = gone(&parts, 5, "7.0", || false).expect("a zombie");
        assert!(why.contains("task 5 of this step"), "{why}");
        assert!(why.contains("--kill-on-bad-exit"), "{why}");
        child.wait().unwrap();
        assert!(gone(&parts, 5, "7.0", || false).is_some(), "reaped");

        // This process's number with another start time: reused, not the task.
        let reused = Whereabouts {
            pid: std::process::id(),
            start: start_of(std::process::id()).unwrap() + 1,
            ..ended.clone()
        };
        write_note(&parts.alive_path(6), reused.text().as_bytes()).unwrap();
        assert!(gone(&parts, 6, "7.0", || false).is_some());

        // On another node (or boot, or process namespace): not known from here.
        let elsewhere = Whereabouts {
            node: "node99 other-boot pid:[1]".into(),
            ..ended
        };
        write_note(&parts.alive_path(7), elsewhere.text().as_bytes()).unwrap();
        assert_eq!(gone(&parts, 7, "7.0", || false), None);

        // A damaged note: not known.
        write_note(&parts.alive_path(8), b"7.0\nx\n").unwrap();
        assert_eq!(gone(&parts, 8, "7.0", || false), None);
    }

    #[test]
    fn a_start_time_is_read_past_any_command_name() {
        let own = start_of(std::process::id()).expect("this process");
        assert!(own > 0);
        assert_eq!(start_of(u32::MAX), None);
    }
}
