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
    /// A node's CPU rows are named by the operating system's CPU numbers (row
    /// 1 is `node CPU 0`), as the scheduling events number them.
    pub fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        let total_cpus: u32 = self.nodes.iter().map(|n| n.cpus).sum();
        writeln!(out, "LEVEL CPU SIZE {total_cpus}")?;
        for node in &self.nodes {
            for cpu in 0..node.cpus {
                writeln!(out, "{} CPU {cpu}", node.name)?;
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
    // Every i64 of nanoseconds (years 1677 to 2262) is a valid date.
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ns))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:02}/{:02}/{:04} at {:02}:{:02}",
        t.day(),
        u8::from(t.month()),
        t.year(),
        t.hour(),
        t.minute()
    )
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
        assert_eq!(header_date(951_782_400_000_000_000), "29/02/2000 at 00:00");
        assert_eq!(header_date(-1), "31/12/1969 at 23:59");
        assert_eq!(header_date(i64::MIN), "21/09/1677 at 00:12");
    }
}
