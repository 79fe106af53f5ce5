//! Formatting merged records into `.prv` body lines, and keeping the tallies the
//! `.pcf` needs (states, types and tracked values seen).
//!
//! A formatter only appends to its buffer, so several can format consecutive
//! batches of the merge at once; their buffers written in batch order are the
//! same bytes one formatter would have produced.

use rustc_hash::FxHashSet;

use crate::merge::{Current, RunCursor, TraceSummary, View};
use crate::pcf::{PcfCatalog, UsedLabels};
use crate::record::EventPair;

/// (run, run thread, time, rank) of an event line: records with the same key share
/// one line.
pub(crate) type EventsKey = (usize, u32, i64, u8);

const RECENT_TYPES: usize = 64;
const NOT_FIXED: u16 = u16::MAX;

pub(crate) struct LineFormatter {
    /// Formatted bytes not yet written out (ending inside an open event line).
    pub buf: Vec<u8>,
    /// The event line still open at the end of `buf`.
    pub open_events: Option<EventsKey>,
    pub summary: TraceSummary,
    states: FxHashSet<u32>,
    types: FxHashSet<u32>,
    recent_types: [(u32, u16); RECENT_TYPES],
    /// The tag of the last communication, already in `summary.comm_tags`.
    last_tag: Option<i64>,
    fixed: Vec<(u32, FxHashSet<i64>)>,
}

impl LineFormatter {
    pub fn new(catalog: &PcfCatalog, capacity: usize) -> Self {
        LineFormatter {
            buf: Vec::with_capacity(capacity),
            open_events: None,
            summary: TraceSummary::default(),
            states: FxHashSet::default(),
            types: FxHashSet::default(),
            recent_types: [(u32::MAX, NOT_FIXED); RECENT_TYPES],
            last_tag: None,
            fixed: catalog
                .fixed_types()
                .map(|t| (t, FxHashSet::default()))
                .collect(),
        }
    }

    /// Appends one record at trace time `time`; events of the same key as the
    /// open line join it.
    pub fn record(&mut self, c: &RunCursor, run_index: usize, r: &Current, time: i64) {
        let prefix = &c.prefixes[r.thread as usize];
        match r.body {
            View::Events { closing, pairs } => {
                let key = (run_index, r.thread, time, r.rank);
                if self.open_events != Some(key) {
                    self.end_event_line();
                    self.buf.extend_from_slice(b"2:");
                    self.buf.extend_from_slice(prefix);
                    push_int(&mut self.buf, time);
                    self.open_events = Some(key);
                }
                self.pairs(c, closing, pairs);
            }
            View::State { end, state } => {
                self.end_event_line();
                self.state_line(prefix, time, end + c.shift, state);
            }
            View::Comm(comm) => {
                self.end_event_line();
                self.buf.extend_from_slice(b"3:");
                self.buf.extend_from_slice(prefix);
                push_int(&mut self.buf, time);
                push_int(&mut self.buf, comm.send_physical + c.shift);
                self.buf.push(b':');
                self.buf
                    .extend_from_slice(&c.prefixes[comm.receiver as usize]);
                for v in [
                    comm.recv_logical + c.shift,
                    comm.recv_physical + c.shift,
                    comm.size,
                    comm.tag,
                ] {
                    push_int(&mut self.buf, v);
                }
                self.summary.comms += 1;
                // A trace has a handful of tags: most lines find theirs at once.
                if self.last_tag != Some(comm.tag) {
                    self.summary.comm_tags.insert(comm.tag);
                    self.last_tag = Some(comm.tag);
                }
                self.end_line();
            }
        }
    }

    fn pairs(&mut self, c: &RunCursor, closing: bool, pairs: &[EventPair]) {
        for pair in pairs {
            let value = if closing { 0 } else { c.values_of(pair) };
            self.event(pair.ty, value);
        }
    }

    /// `:type:value` on the open event line.
    pub fn event(&mut self, ty: u32, value: i64) {
        self.note_type(ty, value);
        push_int(&mut self.buf, ty as i64);
        push_int(&mut self.buf, value);
        self.summary.events += 1;
    }

    /// Starts an event line of its own (at a window's edge), closing any open one.
    pub fn start_event_line(&mut self, prefix: &[u8], time: i64) {
        self.end_event_line();
        self.buf.extend_from_slice(b"2:");
        self.buf.extend_from_slice(prefix);
        push_int(&mut self.buf, time);
    }

    pub fn state_line(&mut self, prefix: &[u8], begin: i64, end: i64, state: u32) {
        self.buf.extend_from_slice(b"1:");
        self.buf.extend_from_slice(prefix);
        push_int(&mut self.buf, begin);
        push_int(&mut self.buf, end);
        push_int(&mut self.buf, state as i64);
        self.states.insert(state);
        self.summary.states += 1;
        self.end_line();
    }

    fn note_type(&mut self, ty: u32, value: i64) {
        // A direct-mapped cache of recent types (and whether their values are
        // tracked) spares a hash and a search per pair.
        let slot = (ty % RECENT_TYPES as u32) as usize;
        if self.recent_types[slot].0 != ty {
            self.types.insert(ty);
            let fixed = self.fixed.iter().position(|(t, _)| *t == ty);
            self.recent_types[slot] = (ty, fixed.map_or(NOT_FIXED, |i| i as u16));
        }
        let fixed = self.recent_types[slot].1;
        if fixed != NOT_FIXED {
            self.fixed[fixed as usize].1.insert(value);
        }
    }

    pub fn end_event_line(&mut self) {
        if self.open_events.take().is_some() {
            self.end_line();
        }
    }

    pub fn end_line(&mut self) {
        self.buf.push(b'\n');
        self.summary.lines += 1;
    }

    /// Adds another formatter's tallies to this one's (its bytes are not taken).
    pub fn absorb(&mut self, other: LineFormatter) {
        self.summary.lines += other.summary.lines;
        self.summary.states += other.summary.states;
        self.summary.events += other.summary.events;
        self.summary.comms += other.summary.comms;
        self.summary.comm_tags.extend(other.summary.comm_tags);
        self.states.extend(other.states);
        self.types.extend(other.types);
        for ((ty, mine), (other_ty, theirs)) in self.fixed.iter_mut().zip(other.fixed) {
            debug_assert_eq!(*ty, other_ty);
            mine.extend(theirs);
        }
    }

    pub fn finish(self) -> (TraceSummary, UsedLabels) {
        let used = UsedLabels {
            states: self.states.into_iter().collect(),
            types: self.types.into_iter().collect(),
            fixed_values: self
                .fixed
                .into_iter()
                .map(|(t, s)| (t, s.into_iter().collect()))
                .collect(),
        };
        (self.summary, used)
    }
}

/// Appends `:` and the decimal number.
pub(crate) fn push_int(line: &mut Vec<u8>, v: i64) {
    let mut buf = itoa::Buffer::new();
    line.push(b':');
    line.extend_from_slice(buf.format(v).as_bytes());
}
