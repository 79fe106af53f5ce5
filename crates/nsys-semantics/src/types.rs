//! Declaring event types and states: constructors that say how a type lies in
//! time, Extrae's state table, and types numbered by a hash of a name.

use paraver_writer::{EventTypeInfo, StateInfo, Timing, ValueLabels};

/// A type whose events are intervals: a begin with the value, an end with 0.
pub(crate) fn interval(ty: u32, label: &str, values: ValueLabels) -> EventTypeInfo {
    EventTypeInfo::new(ty, label, values, Timing::Interval)
}

/// A type whose events are instants (marks, faults).
pub(crate) fn point(ty: u32, label: &str, values: ValueLabels) -> EventTypeInfo {
    EventTypeInfo::new(ty, label, values, Timing::Point)
}

/// A type whose value holds until the next one (a sampled counter).
pub(crate) fn level(ty: u32, label: &str, values: ValueLabels) -> EventTypeInfo {
    EventTypeInfo::new(ty, label, values, Timing::Level)
}

/// Extrae's state numbers (paraver-format.md §3) that the categories set.
pub mod state {
    pub const IDLE: u32 = 0;
    pub const RUNNING: u32 = 1;
    pub const WAITING_MESSAGE: u32 = 3;
    pub const BLOCKING_SEND: u32 = 4;
    pub const SYNCHRONIZATION: u32 = 5;
    pub const TEST_PROBE: u32 = 6;
    pub const FORK_JOIN: u32 = 7;
    pub const WAIT: u32 = 8;
    pub const BLOCKED: u32 = 9;
    pub const IMMEDIATE_SEND: u32 = 10;
    pub const IMMEDIATE_RECEIVE: u32 = 11;
    pub const IO: u32 = 12;
    pub const GROUP_COMMUNICATION: u32 = 13;
    pub const OTHERS: u32 = 15;
    pub const SEND_RECEIVE: u32 = 16;
    pub const MEMORY_TRANSFER: u32 = 17;
    pub const ATOMIC_MEMORY_OPERATION: u32 = 21;
    pub const ONE_SIDED: u32 = 25;
    pub const ALLOCATING: u32 = 30;
    pub const FREEING: u32 = 31;
    pub const CONFIGURING: u32 = 32;
}

/// Extrae's state table (paraver-format.md §3).
const STATES: &[(u32, &str, (u8, u8, u8))] = &[
    (0, "Idle", (117, 195, 255)),
    (1, "Running", (0, 0, 255)),
    (2, "Not created", (255, 255, 255)),
    (3, "Waiting a message", (255, 0, 0)),
    (4, "Blocking Send", (255, 0, 174)),
    (5, "Synchronization", (179, 0, 0)),
    (6, "Test/Probe", (0, 255, 0)),
    (7, "Scheduling and Fork/Join", (255, 255, 0)),
    (8, "Wait/WaitAll", (235, 0, 0)),
    (9, "Blocked", (0, 162, 0)),
    (10, "Immediate Send", (255, 0, 255)),
    (11, "Immediate Receive", (100, 100, 177)),
    (12, "I/O", (172, 174, 41)),
    (13, "Group Communication", (255, 144, 26)),
    (14, "Tracing Disabled", (2, 255, 177)),
    (15, "Others", (192, 224, 0)),
    (16, "Send Receive", (66, 66, 66)),
    (17, "Memory transfer", (255, 0, 96)),
    (18, "Profiling", (169, 169, 169)),
    (19, "On-line analysis", (169, 0, 0)),
    (20, "Remote memory access", (0, 109, 255)),
    (21, "Atomic memory operation", (200, 61, 68)),
    (22, "Memory ordering operation", (200, 66, 0)),
    (23, "Distributed locking", (0, 41, 0)),
    (24, "Overhead", (139, 121, 177)),
    (25, "One-sided op", (116, 116, 116)),
    (26, "Startup latency", (200, 50, 89)),
    (27, "Waiting links", (255, 171, 98)),
    (28, "Data copy", (0, 68, 189)),
    (29, "RTT", (52, 43, 0)),
    (30, "Allocating memory", (255, 46, 0)),
    (31, "Freeing memory", (100, 216, 32)),
    (32, "Configuring accelerator", (118, 185, 0)),
    (33, "Stream Registration", (80, 185, 160)),
];

/// The label and colour of each of Extrae's states.
pub(crate) fn extrae_states() -> Vec<StateInfo> {
    STATES
        .iter()
        .map(|&(id, label, color)| StateInfo {
            id,
            label: label.into(),
            color,
        })
        .collect()
}

/// Types numbered by a hash of a name, per report: `first + 1 + FNV-1a(key) mod
/// slots`, so a name keeps its type in every trace. A key that lands on a slot
/// another key took moves to the next free one.
pub(crate) struct HashedTypes {
    first: u32,
    slots: u32,
    taken: std::collections::BTreeMap<u32, String>,
}

/// Where a key landed: its type and, when it had to move, the key whose slot it
/// wanted.
pub(crate) struct HashedType {
    pub ty: u32,
    pub displaced_by: Option<String>,
}

impl HashedTypes {
    pub fn new(first: u32, slots: u32) -> Self {
        HashedTypes {
            first,
            slots,
            taken: std::collections::BTreeMap::new(),
        }
    }

    /// The type of `key`; `None` when every slot is taken by other keys.
    pub fn resolve(&mut self, key: &str) -> Option<HashedType> {
        let home = (paraver_writer::names::stable_hash(key) % u64::from(self.slots)) as u32;
        let slot = (0..self.slots)
            .map(|i| (home + i) % self.slots)
            .find(|s| self.taken.get(s).is_none_or(|k| k == key))?;
        let displaced_by = (slot != home).then(|| self.taken[&home].clone());
        self.taken.insert(slot, key.to_string());
        Some(HashedType {
            ty: self.first + 1 + slot,
            displaced_by,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_types_are_stable_and_never_shared() {
        let mut a = HashedTypes::new(1000, 3);
        let x = a.resolve("x").unwrap().ty;
        assert_eq!(a.resolve("x").unwrap().ty, x);
        let others: Vec<u32> = ["y", "z"].map(|k| a.resolve(k).unwrap().ty).to_vec();
        let mut all = vec![x, others[0], others[1]];
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|t| (1001..=1003).contains(t)));
        assert!(a.resolve("w").is_none());
        let mut b = HashedTypes::new(1000, 3);
        assert_eq!(b.resolve("x").unwrap().ty, x);
    }

    #[test]
    fn named_states_are_in_the_table() {
        use state::*;
        let ids: Vec<u32> = STATES.iter().map(|s| s.0).collect();
        for s in [
            IDLE,
            RUNNING,
            WAITING_MESSAGE,
            BLOCKING_SEND,
            SYNCHRONIZATION,
            TEST_PROBE,
            FORK_JOIN,
            WAIT,
            BLOCKED,
            IMMEDIATE_SEND,
            IMMEDIATE_RECEIVE,
            IO,
            GROUP_COMMUNICATION,
            OTHERS,
            SEND_RECEIVE,
            MEMORY_TRANSFER,
            ATOMIC_MEMORY_OPERATION,
            ONE_SIDED,
            ALLOCATING,
            FREEING,
            CONFIGURING,
        ] {
            assert!(ids.contains(&s), "{s}");
        }
    }
}
