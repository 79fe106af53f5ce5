//! What a category is. Each category declares one [`CategoryInfo`] in its own
//! module, and the registry ([`crate::registry`]) lists them once; the `-t` words,
//! the `.pcf` catalog, the dry run's row counts, the translation and the cuts all
//! come from these declarations.

use nsys_reader::ReadError;
use paraver_writer::EventTypeInfo;

use crate::context::ReportContext;
pub use crate::options::Category;
pub use crate::view::View;

/// Everything the rest of the tool knows about a category.
pub struct CategoryInfo {
    pub category: Category,
    /// Other `-t`/`--exclude` words for it (ours).
    pub aliases: &'static [&'static str],
    /// BSC nsys2prv's `-t` words that select it, with BSC's meaning: its
    /// `cuda_api_trace` also brings kernels and memory operations, so those two
    /// list it too.
    pub bsc_names: &'static [&'static str],
    /// Groups of categories it belongs to (`cuda`).
    pub groups: &'static [&'static str],
    /// Export tables it reads, for the dry run's row counts, and prefixes of
    /// families of tables (`OPENMP_EVENT_KIND_`). A table two categories read is
    /// counted for the first one selected.
    pub tables: &'static [&'static str],
    pub table_prefixes: &'static [&'static str],
    /// `.prv` bytes a row becomes (its events, states and arrows), for the dry
    /// run's size estimate: measured on the bundled samples by translating the
    /// category alone (`-t CATEGORY`); for categories the samples lack, their line
    /// counts at ~50 bytes a line. `tests/tests/all/terminal_safety.rs` checks the estimate
    /// against the real output of every sample.
    pub bytes_per_row: u64,
    /// More `.prv` bytes a row becomes when no other category of the report sets
    /// thread states: the background states it gives threads (scheduling's
    /// Running and Idle), which calls' states otherwise cover.
    pub background_bytes_per_row: u64,
    /// Whether its rows also get a launch arrow when CUDA API calls are translated.
    pub launched: bool,
    /// The event types it writes, with their labels, values and timing. Types
    /// numbered from the data (NVTX domains, hashed metric names) are declared by
    /// the translation, as [`ReportContext::extra_types`].
    pub event_types: fn() -> Vec<EventTypeInfo>,
    /// Extrae states it sets on threads (Idle and Running are always there).
    pub states: &'static [u32],
    /// Bundled views made for its events, each with the question it answers:
    /// written beside a trace that has this category (and what each view needs)
    /// and listed in the views' index. Adding a view is a `.cfg` under `cfgs/`
    /// and one entry here (`bundled_view!`, which embeds its text).
    pub views: &'static [View],
    /// Types of ranges an `--nvtx-range` cut can name.
    pub names_ranges: Option<fn(u32) -> bool>,
    /// Its own pass over the report, if it has one.
    pub(crate) pass: Option<Pass>,
}

/// A pass over a report's tables that writes a category's records (and those of
/// the categories in `also_for`: one pass over the NVTX table serves NVTX, NCCL
/// and 2022-era MPI). It runs when any of them is selected.
pub(crate) struct Pass {
    pub stage: Stage,
    pub run: fn(&mut ReportContext) -> Result<(), ReadError>,
    pub also_for: &'static [Category],
}

/// When a pass runs: passes that hand something to others (see
/// [`crate::handoff::Handoff`]) run first; within a stage, in registry order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// GPU operations, which API calls launch (launch links).
    GpuOperations,
    /// What API calls are matched with: synchronizations, NCCL ranges.
    CallContext,
    /// API calls, with their launch arrows.
    HostCalls,
    /// Everything that stands alone.
    Activity,
    /// Device and node rows, put under the processes the stages before found.
    DeviceRows,
}

impl CategoryInfo {
    /// Whether `word` (already normalized: lower case, `-` for `_`) selects it.
    pub fn is_selected_by(&self, word: &str) -> bool {
        let same = |w: &&str| normalize(w) == word;
        self.category.name() == word
            || self.aliases.iter().any(same)
            || self.bsc_names.iter().any(same)
            || self.groups.iter().any(same)
    }
}

/// A `-t` word as the registry compares it: trimmed, lower case, `-` for `_`.
pub fn normalize(word: &str) -> String {
    word.trim().to_ascii_lowercase().replace('_', "-")
}
