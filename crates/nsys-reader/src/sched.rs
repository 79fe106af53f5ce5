//! Thread scheduling (`SCHED_EVENTS`): context-switch points of the machine's
//! threads, profiled or not. Rows are not guaranteed to be in time order.

use crate::{Export, ReadError, RowView, TableScan};

pub const SCHED_EVENTS: &str = "SCHED_EVENTS";
pub const ENUM_THREAD_STATE: &str = "ENUM_SAMPLING_THREAD_STATE";
pub const ENUM_THREAD_BLOCK: &str = "ENUM_SCHEDULING_THREAD_BLOCK";

/// Built-in labels of `ENUM_SAMPLING_THREAD_STATE` (schema 3.24.0), for exports
/// without `ENUM_*` tables.
pub const THREAD_STATE: &[(i64, &str)] = &[
    (0, "Unknown"),
    (1, "Running"),
    (2, "Interruptible"),
    (3, "Uninterruptible"),
    (4, "Stopped"),
    (5, "Terminated"),
    (6, "Unscheduled"),
    (7, "Waiting"),
    (8, "OS runtime"),
    (9, "Initialized"),
    (10, "Transition"),
];

/// Built-in labels of `ENUM_SCHEDULING_THREAD_BLOCK` (schema 3.24.0).
pub const THREAD_BLOCK: &[(i64, &str)] = &[
    (0, "NonBlocked"),
    (1, "Unknown"),
    (2, "SigSuspend"),
    (3, "Stopped"),
    (4, "Nanosleep"),
    (5, "Intr"),
    (6, "Mutex"),
    (7, "CondVar"),
    (8, "Sem"),
    (9, "Join"),
    (10, "SigWaitInfo"),
    (11, "WaitCtx"),
    (12, "Send"),
    (13, "Receive"),
    (14, "Reply"),
    (15, "Stack"),
    (16, "WaitThread"),
    (17, "WaitPage"),
    (18, "NetSend"),
    (19, "NetReply"),
    (20, "FreePage"),
    (21, "PageIn"),
    (22, "PoolAllocation"),
    (23, "DelayExecution"),
    (24, "Suspended"),
    (25, "UserRequest"),
    (26, "EventPair"),
    (27, "Queue"),
    (28, "LPCReceive"),
    (29, "LPCReply"),
    (30, "VirtualMemory"),
    (31, "PageOut"),
    (32, "Rendezvous"),
    (33, "KeyedEvent"),
    (34, "Terminated"),
    (35, "ProcessInSwap"),
    (36, "CPURateControl"),
    (37, "WrCalloutStack"),
    (38, "Kernel"),
    (39, "Resource"),
    (40, "PushLock"),
    (41, "WindowsMutex"),
    (42, "QuantumEnd"),
    (43, "DispatchInt"),
    (44, "Preempted"),
    (45, "YieldExecution"),
    (46, "FastMutex"),
    (47, "GuardedMutex"),
    (48, "Rundown"),
    (49, "ReadyToRun"),
    (50, "AlertByThreadId"),
    (51, "DeferredPreempt"),
    (52, "PhysicalFault"),
    (53, "MqSend"),
    (54, "MqReceive"),
    (55, "MuonMutex"),
    (56, "Barrier"),
    (57, "RwlockRead"),
    (58, "RwlockWrite"),
    (59, "TraceBuffer"),
    (60, "InterruptAttachEvent"),
    (61, "TimerDelegate"),
];

/// One context switch of a thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedEvent {
    pub start: i64,
    pub cpu: i64,
    /// Switched onto `cpu` (`true`) or off it (`false`).
    pub is_sched_in: bool,
    pub global_tid: i64,
    /// `ENUM_SAMPLING_THREAD_STATE` id (3.13.2+).
    pub thread_state: Option<i64>,
    /// `ENUM_SCHEDULING_THREAD_BLOCK` id (3.13.2+).
    pub thread_block: Option<i64>,
}

impl Export {
    /// Streams `SCHED_EVENTS` in table order. Rows with NULL start, cpu, isSchedIn
    /// or globalTid are skipped.
    pub fn sched_events(
        &self,
        f: impl FnMut(&SchedEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "cpu",
            "isSchedIn",
            "globalTid",
            "threadState",
            "threadBlock",
        ];
        let decode = |row: &RowView| {
            Some(SchedEvent {
                start: row.int(0)?,
                cpu: row.int(1)?,
                is_sched_in: row.int(2)? != 0,
                global_tid: row.int(3)?,
                thread_state: row.int(4),
                thread_block: row.int(5),
            })
        };
        self.scan_rows(SCHED_EVENTS, &cols, "1", decode, f)
    }
}
