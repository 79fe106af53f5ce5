//! The object model of a trace: nodes, one application, tasks and their threads.

use std::io::{self, Write};

/// A node (host) with its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub name: String,
    pub cpus: u32,
}

/// A task (process) on a node (0-based index into `nodes`), with its thread names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    pub name: String,
    pub node: u32,
    pub threads: Vec<String>,
}

/// 0-based task and thread indices of the trace's single application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GlobalThread {
    pub task: u32,
    pub thread: u32,
}

#[derive(Clone, Debug, Default)]
pub struct TraceLayout {
    pub application: String,
    /// Header date text, `dd/mm/yyyy at HH:MM`.
    pub date: String,
    pub nodes: Vec<NodeInfo>,
    pub tasks: Vec<TaskInfo>,
}

/// Paraver's default build stores object ids in 16 bits (paraver-format.md §2.2).
pub const PARAVER_OBJECT_LIMIT: usize = 65_535;

impl TraceLayout {
    pub fn thread_count(&self) -> usize {
        self.tasks.iter().map(|t| t.threads.len()).sum()
    }

    /// `#Paraver (DATE):END_ns:N(c1,...):1:T(t1:n1,...)`
    pub fn header(&self, end_time: u64) -> String {
        let cpus: Vec<String> = self.nodes.iter().map(|n| n.cpus.to_string()).collect();
        let tasks: Vec<String> = self
            .tasks
            .iter()
            .map(|t| format!("{}:{}", t.threads.len(), t.node + 1))
            .collect();
        format!(
            "#Paraver ({}):{}_ns:{}({}):1:{}({})\n",
            self.date,
            end_time,
            self.nodes.len(),
            cpus.join(","),
            self.tasks.len(),
            tasks.join(",")
        )
    }

    /// The `.row` file: CPU, NODE, APPL, TASK and THREAD blocks in global order.
    pub fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        let total_cpus: u32 = self.nodes.iter().map(|n| n.cpus).sum();
        writeln!(out, "LEVEL CPU SIZE {total_cpus}")?;
        for node in &self.nodes {
            for cpu in 1..=node.cpus {
                writeln!(out, "{}.cpu{cpu}", node.name)?;
            }
        }
        writeln!(out, "\nLEVEL NODE SIZE {}", self.nodes.len())?;
        for node in &self.nodes {
            writeln!(out, "{}", node.name)?;
        }
        writeln!(out, "\nLEVEL APPL SIZE 1\n{}", self.application)?;
        writeln!(out, "\nLEVEL TASK SIZE {}", self.tasks.len())?;
        for task in &self.tasks {
            writeln!(out, "{}", task.name)?;
        }
        writeln!(out, "\nLEVEL THREAD SIZE {}", self.thread_count())?;
        for thread in self.tasks.iter().flat_map(|t| &t.threads) {
            writeln!(out, "{thread}")?;
        }
        Ok(())
    }
}

/// `dd/mm/yyyy at HH:MM` (UTC) for a Unix time in ns, for the header.
pub fn header_date(unix_ns: i64) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000);
    let (days, day_secs) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{d:02}/{m:02}/{y:04} at {:02}:{:02}",
        day_secs / 3600,
        (day_secs % 3600) / 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lists_nodes_tasks_and_threads() {
        let layout = TraceLayout {
            application: "app".into(),
            date: "21/11/2025 at 10:00".into(),
            nodes: vec![
                NodeInfo {
                    name: "a".into(),
                    cpus: 4,
                },
                NodeInfo {
                    name: "b".into(),
                    cpus: 2,
                },
            ],
            tasks: vec![
                TaskInfo {
                    name: "t1".into(),
                    node: 0,
                    threads: vec!["x".into(), "y".into()],
                },
                TaskInfo {
                    name: "t2".into(),
                    node: 1,
                    threads: vec!["z".into()],
                },
            ],
        };
        assert_eq!(
            layout.header(1000),
            "#Paraver (21/11/2025 at 10:00):1000_ns:2(4,2):1:2(2:1,1:2)\n"
        );
    }

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(header_date(0), "01/01/1970 at 00:00");
        assert_eq!(
            header_date(1_763_719_200_000_000_000),
            "21/11/2025 at 10:00"
        );
    }
}
