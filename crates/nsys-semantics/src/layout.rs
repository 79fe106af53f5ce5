//! The global layout: nodes by host, tasks by (report, host, pid), threads of a task
//! in `ThreadKey` order; and each report's clock offset.

use std::collections::{BTreeMap, BTreeSet};

use paraver_writer::layout::header_date;
use paraver_writer::{GlobalThread, NodeInfo, TaskInfo, TraceLayout};

use crate::context::{ThreadKey, ThreadKind};
use crate::report::ReportTranslation;

const UNKNOWN_HOST: &str = "unknown-host";

/// How the reports map into one trace.
pub struct TracePlan {
    pub layout: TraceLayout,
    /// Report indices in canonical order (the merge order; independent of input order).
    pub order: Vec<usize>,
    /// Per report (by input index): local thread → global thread.
    pub threads: Vec<Vec<GlobalThread>>,
    /// Per report (by input index): offset that puts its times on the common clock.
    pub offsets: Vec<i64>,
}

/// One task before numbering.
struct TaskKey<'a> {
    rank: Option<u32>,
    host: &'a str,
    pid: u32,
    report: usize,
}

/// How the `.row` names tasks and CPU threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowNames {
    /// `rank 3 (host:pid)`; threads `name (rank 3, tid)` (`name (tid)`
    /// in a task without a rank), so two ranks' threads are told apart.
    #[default]
    Ours,
    /// BSC nsys2prv's `-N`: threads `name (1.T.t)` and tasks by their first
    /// thread's name, `name (1.T)`, with Paraver's task and thread numbers.
    Bsc,
}

pub fn plan_layout<R>(reports: &[ReportTranslation<R>], application: &str) -> TracePlan {
    plan_layout_named(reports, application, RowNames::Ours)
}

/// [`plan_layout`] with the `.row` names of `names`.
pub fn plan_layout_named<R>(
    reports: &[ReportTranslation<R>],
    application: &str,
    row_names: RowNames,
) -> TracePlan {
    let order = canonical_order(reports);
    let hosts: BTreeSet<&str> = reports.iter().map(host_of).collect();
    let nodes: Vec<&str> = hosts.into_iter().collect();

    // Each report's threads grouped by process once: a report may hold tens of
    // thousands of processes, and looking each one's threads up in the whole
    // list made the layout quadratic.
    let mut threads_by_pid: Vec<BTreeMap<u32, Vec<(ThreadKey, usize)>>> = reports
        .iter()
        .map(|report| {
            let mut groups: BTreeMap<u32, Vec<(ThreadKey, usize)>> = BTreeMap::new();
            for (i, t) in report.threads.iter().enumerate() {
                groups.entry(t.pid()).or_default().push((*t, i));
            }
            groups
        })
        .collect();
    let mut task_keys: Vec<TaskKey> = Vec::new();
    for &r in &order {
        let report = &reports[r];
        for &pid in threads_by_pid[r].keys() {
            task_keys.push(TaskKey {
                rank: report
                    .ranks
                    .get(&pid)
                    .copied()
                    .or_else(|| file_rank(reports, report, threads_by_pid[r].len())),
                host: host_of(report),
                pid,
                report: r,
            });
        }
    }
    let mut position = vec![0; reports.len()];
    for (p, &r) in order.iter().enumerate() {
        position[r] = p;
    }
    // Ranked processes first, in rank order; launchers and helpers after them.
    task_keys.sort_by_key(|k| (k.rank.is_none(), k.rank, k.host, k.pid, position[k.report]));

    let mut threads: Vec<Vec<GlobalThread>> = reports
        .iter()
        .map(|r| vec![GlobalThread { task: 0, thread: 0 }; r.threads.len()])
        .collect();
    let mut tasks = Vec::with_capacity(task_keys.len());
    for (task_index, key) in task_keys.iter().enumerate() {
        let report = &reports[key.report];
        let mut locals = threads_by_pid[key.report]
            .remove(&key.pid)
            .unwrap_or_default();
        locals.sort();
        let mut names = Vec::with_capacity(locals.len());
        for (thread_index, (thread, local)) in locals.iter().enumerate() {
            threads[key.report][*local] = GlobalThread {
                task: task_index as u32,
                thread: thread_index as u32,
            };
            let name = thread_name(report, thread);
            names.push(match (thread.kind, row_names, key.rank) {
                (ThreadKind::Cpu { tid }, RowNames::Ours, Some(rank)) => {
                    format!(
                        "{} (rank {rank}, {tid})",
                        cpu_thread_name(report, thread.pid, tid)
                    )
                }
                (ThreadKind::Cpu { tid }, RowNames::Bsc, _) => format!(
                    "{} (1.{}.{})",
                    cpu_thread_name(report, thread.pid, tid),
                    task_index + 1,
                    thread_index + 1
                ),
                _ => name,
            });
        }
        let first_cpu_thread = locals.iter().find_map(|(t, _)| match t.kind {
            ThreadKind::Cpu { tid } => Some(cpu_thread_name(report, t.pid, tid)),
            _ => None,
        });
        let task_label = match (row_names, first_cpu_thread) {
            (RowNames::Bsc, Some(first)) => format!("{first} (1.{})", task_index + 1),
            _ => task_name(report, key),
        };
        tasks.push(TaskInfo {
            name: task_label,
            node: nodes.binary_search(&key.host).unwrap_or(0) as u32,
            threads: names,
        });
    }

    let layout = TraceLayout {
        application: application.to_string(),
        date: header_date(
            reports
                .iter()
                .filter_map(|r| r.meta.utc_offset())
                .min()
                .unwrap_or(0),
        ),
        nodes: nodes
            .iter()
            .map(|&host| NodeInfo {
                name: host.to_string(),
                cpus: cpus_of(reports, host),
            })
            .collect(),
        tasks,
    };
    TracePlan {
        layout,
        order,
        threads,
        offsets: clock_offsets(reports),
    }
}

/// Last resort for merged per-rank reports: the number in the file name.
/// Only for a report of one process (`processes` is how many it has).
fn file_rank<R>(
    reports: &[ReportTranslation<R>],
    report: &ReportTranslation<R>,
    processes: usize,
) -> Option<u32> {
    if reports.len() < 2 || processes != 1 {
        return None;
    }
    crate::ranks::rank_in_file_name(&report.path)
}

fn host_of<R>(report: &ReportTranslation<R>) -> &str {
    report.meta.hostname.as_deref().unwrap_or(UNKNOWN_HOST)
}

/// Sort key that does not depend on the order the inputs were given in.
fn canonical_order<R>(reports: &[ReportTranslation<R>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |r: &ReportTranslation<R>| {
            (host_of(r).to_string(), r.meta.utc_offset(), r.path.clone())
        };
        key(&reports[a]).cmp(&key(&reports[b]))
    });
    order
}

/// CPUs of a host: the most any of its reports declares or ran threads on (1
/// when none says).
fn cpus_of<R>(reports: &[ReportTranslation<R>], host: &str) -> u32 {
    reports
        .iter()
        .filter(|r| host_of(r) == host)
        .map(|r| r.meta.cpu_cores.unwrap_or(1).max(r.cpus_seen))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Each report's offset to the common clock: its session start in UTC. Reports
/// that do not record one are aligned with the earliest report that does.
fn clock_offsets<R>(reports: &[ReportTranslation<R>]) -> Vec<i64> {
    let earliest = reports
        .iter()
        .filter_map(|r| r.meta.utc_offset())
        .min()
        .unwrap_or(0);
    reports
        .iter()
        .map(|r| r.meta.utc_offset().unwrap_or(earliest))
        .collect()
}

fn task_name<R>(report: &ReportTranslation<R>, key: &TaskKey) -> String {
    match (key.rank, process_name(report, key.pid)) {
        (Some(rank), _) => format!("rank {rank} ({}:{})", key.host, key.pid),
        (None, Some(name)) => format!("{name} ({}:{})", key.host, key.pid),
        (None, None) => format!("process {} ({})", key.pid, key.host),
    }
}

/// The process's name without its directory (`../bin/app` → `app`).
fn process_name<R>(report: &ReportTranslation<R>, pid: u32) -> Option<String> {
    let name = report.process_names.get(&pid)?;
    Some(name.rsplit('/').next().unwrap_or(name).to_string())
}

/// A CPU thread's name: the name nsys or NVTX gave it, else its process's.
fn cpu_thread_name<R>(report: &ReportTranslation<R>, pid: u32, tid: u32) -> String {
    let name = report
        .thread_names
        .get(&(pid, tid))
        .cloned()
        .or_else(|| process_name(report, pid))
        .unwrap_or_else(|| "thread".to_string());
    name.replace(['\n', '\r'], " ")
}

fn thread_name<R>(report: &ReportTranslation<R>, thread: &ThreadKey) -> String {
    let pid = thread.pid;
    match thread.kind {
        ThreadKind::Cpu { tid } => format!("{} ({tid})", cpu_thread_name(report, pid, tid)),
        ThreadKind::Stream { device, stream } => format!("CUDA-D{device}.S{stream}"),
        ThreadKind::Metrics { device } => format!("GPU{device} metrics"),
        ThreadKind::Nic { nic } => labelled(format!("NIC{nic} counters"), report, thread),
        ThreadKind::IbSwitch { switch } => {
            labelled(format!("IB switch{switch} counters"), report, thread)
        }
        ThreadKind::SocMetrics { soc } => format!("SoC{soc} metrics"),
    }
}

/// `row (label)` when the export names the device behind the row.
fn labelled<R>(row: String, report: &ReportTranslation<R>, thread: &ThreadKey) -> String {
    match report.row_labels.get(thread) {
        Some(label) if !label.trim().is_empty() => {
            format!("{row} ({})", label.replace(['\n', '\r'], " "))
        }
        _ => row,
    }
}

/// Counts by table over all reports (for summaries).
pub fn total_counts(reports: &[ReportTranslation]) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for r in reports {
        for (k, v) in &r.counts {
            *total.entry(k.clone()).or_default() += v;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::expect;

    use super::*;
    use crate::kernels::KERNELS;
    use crate::testing::{translate, GLOBAL_PID};

    /// A report of rank `rank` (none: no SLURM_PROCID) on `host`, whose session
    /// started `start_ns` after the others' earliest, with one kernel.
    fn report(rank: Option<u32>, host: &str, start_ns: i64) -> ReportTranslation {
        let rank = match rank {
            Some(r) => format!(
                "UPDATE META_DATA_CAPTURE SET value = 'SLURM_PROCID=\"{r}\"'
                                 WHERE value LIKE 'SLURM_PROCID=%';"
            ),
            None => "DELETE FROM META_DATA_CAPTURE WHERE value LIKE 'SLURM_%';".to_string(),
        };
        translate(
            &[KERNELS],
            &format!(
                "{rank}
                 UPDATE TARGET_INFO_SYSTEM_ENV SET value = '{host}' WHERE name = 'Hostname';
                 UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + {start_ns};
                 INSERT INTO StringIds VALUES (90001, 'k');
                 INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId,
                     streamId, globalPid, demangledName, shortName, registersPerThread, gridX,
                     gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
                     dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
                 VALUES (100, 200, 0, 1, 7, {GLOBAL_PID}, 90001, 90001, 1, 1, 1, 1, 1, 1, 1, 0,
                     0, 0, 0, 1);"
            ),
        )
    }

    /// The plan as text: nodes, tasks with their node and rows, then per report
    /// (in input order) its clock offset and where its threads go.
    fn describe(plan: &TracePlan) -> String {
        let mut text = String::new();
        for node in &plan.layout.nodes {
            writeln!(text, "node {}", node.name).unwrap();
        }
        for task in &plan.layout.tasks {
            writeln!(
                text,
                "task {:?} on node {}: {:?}",
                task.name, task.node, task.threads
            )
            .unwrap();
        }
        writeln!(text, "merge order {:?}", plan.order).unwrap();
        for (r, threads) in plan.threads.iter().enumerate() {
            let places: Vec<String> = threads
                .iter()
                .map(|t| format!("{}.{}", t.task + 1, t.thread + 1))
                .collect();
            writeln!(
                text,
                "report {r}: offset {}, threads {places:?}",
                plan.offsets[r]
            )
            .unwrap();
        }
        text
    }

    /// Tasks go by rank whatever the input order, a report without a rank after
    /// them; nodes by host name; each report's clock offset is its session start
    /// (ns since the epoch: the merge subtracts the earliest).
    #[test]
    fn tasks_go_by_rank_and_clocks_by_session_start() {
        let reports = [
            report(Some(1), "node02", 5_000),
            report(None, "node01", 9_000),
            report(Some(0), "node01", 0),
        ];
        expect![[r#"
            node node01
            node node02
            task "rank 0 (node01:24601)" on node 0: ["CUDA-D0.S7"]
            task "rank 1 (node02:24601)" on node 1: ["CUDA-D0.S7"]
            task "synth_app (node01:24601)" on node 0: ["CUDA-D0.S7"]
            merge order [2, 1, 0]
            report 0: offset 1735732800000005000, threads ["2.1"]
            report 1: offset 1735732800000009000, threads ["3.1"]
            report 2: offset 1735732800000000000, threads ["1.1"]
        "#]]
        .assert_eq(&describe(&plan_layout(&reports, "app")));
    }
}
