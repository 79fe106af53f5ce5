//! Process and thread names (the tables list the whole machine, not just the
//! profiled processes: callers keep the ones that own events).

use std::collections::HashMap;

use crate::ids::{pid_of, tid_of};
use crate::{Export, ReadError};

impl Export {
    /// (pid, tid) → thread name; the last row wins when a thread is named twice.
    pub fn thread_names(&self) -> Result<HashMap<(u32, u32), String>, ReadError> {
        let mut ids = Vec::new();
        self.scan("ThreadNames", &["globalTid", "nameId"], |row| {
            if let (Some(gtid), Some(name_id)) = (row.int(0), row.int(1)) {
                ids.push((gtid, name_id));
            }
            Ok(())
        })?;
        let mut names = HashMap::new();
        for (gtid, name_id) in ids {
            if let Some(name) = self.string(name_id)? {
                names.insert((pid_of(gtid), tid_of(gtid)), name);
            }
        }
        Ok(names)
    }

    /// Pids of the processes nsys launched (whose output it kept in
    /// `ProcessStreams`).
    pub fn launched_processes(&self) -> Result<std::collections::BTreeSet<u32>, ReadError> {
        let mut pids = std::collections::BTreeSet::new();
        self.scan("ProcessStreams", &["globalPid"], |row| {
            pids.extend(row.int(0).map(pid_of));
            Ok(())
        })?;
        Ok(pids)
    }

    /// pid → process name.
    pub fn process_names(&self) -> Result<HashMap<u32, String>, ReadError> {
        let mut names = HashMap::new();
        self.scan("PROCESSES", &["pid", "name", "globalPid"], |row| {
            let pid = row.int(0).or_else(|| row.int(2).map(|g| pid_of(g) as i64));
            if let (Some(pid), Some(name)) = (pid, row.text(1)) {
                names.insert(pid as u32, name);
            }
            Ok(())
        })?;
        Ok(names)
    }
}
