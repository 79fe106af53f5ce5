//! Event types and states: numbers kept from BSC nsys2prv (so its views and BSC's
//! analysis tools work), state numbers from Extrae.

use paraver_writer::{EventTypeInfo, PcfCatalog, StateInfo, ValueLabels};

pub const CUDA_API: u32 = 63_000_000;
pub const CUDA_MEMORY_OP: u32 = 63_000_001;
pub const CUDA_MEMORY_SIZE: u32 = 63_000_002;
pub const CUDA_KERNEL: u32 = 63_000_006;
pub const NCCL_KERNEL: u32 = 63_000_007;
pub const KERNEL_GRID: [u32; 3] = [9101, 9102, 9103];
pub const KERNEL_BLOCK: [u32; 3] = [9104, 9105, 9106];
pub const KERNEL_STATIC_SHARED: u32 = 9107;
pub const KERNEL_DYNAMIC_SHARED: u32 = 9108;
pub const KERNEL_LOCAL_MEMORY: u32 = 9109;
pub const KERNEL_REGISTERS: u32 = 9110;
pub const CORRELATION_ID: u32 = 9200;
/// Kind of a host-side CUDA synchronization (event, stream, context). Not 9300,
/// which nsys2prv reserves for MPI, nor 9301-9305, its CUDA events (0.6).
pub const CUDA_SYNC: u32 = 9350;

/// Communication tags of BSC nsys2prv.
pub const TAG_LAUNCH: i64 = 55_001;
pub const TAG_MEMORY: i64 = 55_002;
/// Our own: a CUDA event record to the waits on it, a host function's GPU side
/// to its callback.
pub const TAG_EVENT_WAIT: i64 = 55_003;
pub const TAG_HOST_CALLBACK: i64 = 55_004;
/// Every tag of a CUDA line; any other communication is an MPI message (views of
/// MPI messages leave these out).
pub const CUDA_TAGS: [i64; 4] = [TAG_LAUNCH, TAG_MEMORY, TAG_EVENT_WAIT, TAG_HOST_CALLBACK];

pub mod state {
    pub const IDLE: u32 = 0;
    pub const RUNNING: u32 = 1;
    pub const SYNCHRONIZATION: u32 = 5;
    pub const FORK_JOIN: u32 = 7;
    pub const OTHERS: u32 = 15;
    pub const MEMORY_TRANSFER: u32 = 17;
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

pub(crate) fn named(ty: u32, label: &str) -> EventTypeInfo {
    EventTypeInfo {
        ty,
        label: label.into(),
        values: ValueLabels::Names,
        precision: None,
        gradient: 0,
    }
}

pub(crate) fn numeric(ty: u32, label: &str) -> EventTypeInfo {
    EventTypeInfo {
        ty,
        label: label.into(),
        values: ValueLabels::Numeric,
        precision: None,
        gradient: 0,
    }
}

/// Every type and state the translator may emit, with its label.
pub fn pcf_catalog() -> PcfCatalog {
    let types: Vec<EventTypeInfo> = [
        named(CUDA_API, "CUDA library call"),
        named(CUDA_MEMORY_OP, "CUDA memcpy/memset"),
        numeric(CUDA_MEMORY_SIZE, "CUDA memcpy/memset size (bytes)"),
        named(CUDA_KERNEL, "CUDA kernel"),
        named(NCCL_KERNEL, "NCCL kernel"),
        numeric(KERNEL_GRID[0], "Kernel grid size X"),
        numeric(KERNEL_GRID[1], "Kernel grid size Y"),
        numeric(KERNEL_GRID[2], "Kernel grid size Z"),
        numeric(KERNEL_BLOCK[0], "Kernel block size X"),
        numeric(KERNEL_BLOCK[1], "Kernel block size Y"),
        numeric(KERNEL_BLOCK[2], "Kernel block size Z"),
        numeric(KERNEL_STATIC_SHARED, "Kernel static shared memory (bytes)"),
        numeric(
            KERNEL_DYNAMIC_SHARED,
            "Kernel dynamic shared memory (bytes)",
        ),
        numeric(KERNEL_LOCAL_MEMORY, "Kernel local memory total (bytes)"),
        numeric(KERNEL_REGISTERS, "Kernel registers per thread"),
        numeric(CORRELATION_ID, "CUDA correlation ID"),
        named(CUDA_SYNC, "CUDA synchronization"),
    ]
    .into_iter()
    .chain(crate::nvtx::event_types())
    .chain(crate::nccl::event_types())
    .chain(crate::mpi::event_types())
    .chain(crate::cuda_graphs::event_types())
    .chain(crate::cuda_events::event_types())
    .chain(crate::gpu_memory::event_types())
    .chain(crate::gpu_metrics::event_types())
    .chain(crate::network::event_types())
    .chain(crate::host_functions::event_types())
    .chain(crate::osrt::event_types())
    .chain(crate::sched::event_types())
    .chain(crate::openmp::event_types())
    .chain(crate::openacc::event_types())
    .collect();
    PcfCatalog {
        states: STATES
            .iter()
            .map(|&(id, label, color)| StateInfo {
                id,
                label: label.into(),
                color,
            })
            .collect(),
        types,
    }
}

/// The catalog plus the data-numbered types (NVTX domains) of every report. Two
/// different labels for one number (a hash collision between domain names) are
/// reported: their values share one type in the trace.
pub fn catalog_for_reports(reports: &[crate::ReportTranslation]) -> PcfCatalog {
    let mut catalog = pcf_catalog();
    for info in reports.iter().flat_map(|r| &r.extra_types) {
        match catalog.types.iter_mut().find(|t| t.ty == info.ty) {
            None => catalog.types.push(info.clone()),
            // A report may know enum values the built-in table lacks.
            Some(known) if known.label == info.label => merge_fixed_values(known, info),
            Some(known) if known.label != info.label => tracing::warn!(
                "event type {} labels both '{}' and '{}' (their names hash alike); their values share the type",
                info.ty,
                known.label,
                info.label
            ),
            Some(_) => {}
        }
    }
    catalog
}

fn merge_fixed_values(known: &mut EventTypeInfo, extra: &EventTypeInfo) {
    if let (ValueLabels::Fixed(table), ValueLabels::Fixed(more)) =
        (&mut known.values, &extra.values)
    {
        for (value, label) in more {
            if table.iter().all(|(v, _)| v != value) {
                table.push((*value, label.clone()));
            }
        }
    }
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
mod hashed_tests {
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
}
