//! What a written trace holds, as the writer counted it.

use std::collections::BTreeSet;

/// Tallies of a written `.prv` and the span it covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Common-clock time that became 0 in the trace.
    pub origin: i64,
    pub end_time: u64,
    pub lines: u64,
    pub states: u64,
    pub events: u64,
    pub comms: u64,
    /// Every event type in the body (with any value, 0 included): the types a
    /// view's filter can find in this trace.
    pub event_types: BTreeSet<u32>,
    /// Every communication tag in the body: the lines a view's tag filter can find.
    pub comm_tags: BTreeSet<i64>,
}
