//! Formatting merged records into `.prv` body lines, and keeping the tallies the
//! `.pcf` needs (states, types and tracked values seen).
//!
//! A formatter only appends to its buffer, so several can format consecutive
//! batches of the merge at once; their buffers written in batch order are the
//! same bytes one formatter would have produced.

use std::io::Write;

use rustc_hash::FxHashSet;

use crate::cursor::RunCursor;
use crate::pcf::{PcfCatalog, UsedLabels};
use crate::record::EventPair;
use crate::summary::TraceSummary;
use crate::text::{LineBuf, Prefix, TypeField};
use crate::view::{Current, View};

/// Bytes of formatted lines collected before they are written out.
pub(crate) const LINE_BLOCK: usize = 64 * 1024;

/// (run, run thread, time, rank) of an event line: records with the same key share
/// one line.
pub(crate) type EventsKey = (usize, u32, i64, u8);

/// Slots of the cache of recent types (a power of two; a trace has a few
/// hundred types at most, so conflicts are rare).
const RECENT_TYPES_LOG2: u32 = 10;
const RECENT_TYPES: usize = 1 << RECENT_TYPES_LOG2;
const NOT_FIXED: u16 = u16::MAX;

pub(crate) struct LineFormatter {
    /// Formatted bytes not yet written out (ending inside an open event line).
    pub buf: LineBuf,
    /// The event line still open at the end of `buf`.
    pub open_events: Option<EventsKey>,
    pub summary: TraceSummary,
    /// States seen: a bit each for the small numbers states have, a set for others.
    small_states: u128,
    states: FxHashSet<u32>,
    types: FxHashSet<u32>,
    recent_types: Vec<(u32, u16)>,
    /// `:TYPE` of each type in `recent_types`.
    recent_type_fields: Vec<TypeField>,
    /// The tag of the last communication, already in `summary.comm_tags`.
    last_tag: Option<i64>,
    fixed: Vec<(u32, FxHashSet<i64>)>,
    /// Text of each run's shared lists of pairs, opening and closing, made
    /// the first time the list is written.
    shared_texts: Vec<Vec<SharedTexts>>,
}

/// The text of a shared list of pairs, opening (`[0]`) and closing (`[1]`),
/// once made.
type SharedTexts = [Option<Box<[u8]>>; 2];

impl LineFormatter {
    pub fn new(catalog: &PcfCatalog, capacity: usize) -> Self {
        LineFormatter {
            buf: LineBuf::with_capacity(capacity),
            open_events: None,
            summary: TraceSummary::default(),
            small_states: 0,
            states: FxHashSet::default(),
            types: FxHashSet::default(),
            recent_types: vec![(u32::MAX, NOT_FIXED); RECENT_TYPES],
            // The text of the placeholder type, so that the cache is right for it too.
            recent_type_fields: vec![TypeField::new(":4294967295"); RECENT_TYPES],
            last_tag: None,
            fixed: catalog
                .fixed_types()
                .map(|t| (t, FxHashSet::default()))
                .collect(),
            shared_texts: Vec::new(),
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
                    self.buf.start(b'2', prefix);
                    self.buf.field(time);
                    self.open_events = Some(key);
                }
                if let Some((id, shared)) = pairs.shared {
                    self.shared_pairs(c, run_index, id, closing, shared);
                }
                self.pairs(c, closing, pairs.own);
            }
            View::State { end, state } => {
                self.end_event_line();
                self.state_line(prefix, time, end + c.shift, state);
            }
            View::Comm(comm) => {
                self.end_event_line();
                self.buf.start(b'3', prefix);
                self.buf.field(time);
                self.buf.field(comm.send_physical + c.shift);
                self.buf.thread(&c.prefixes[comm.receiver as usize]);
                for v in [
                    comm.recv_logical + c.shift,
                    comm.recv_physical + c.shift,
                    comm.size,
                    comm.tag,
                ] {
                    self.buf.field(v);
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

    /// A run's shared list `id` of pairs: its text, made once.
    fn shared_pairs(
        &mut self,
        c: &RunCursor,
        run: usize,
        id: u32,
        closing: bool,
        pairs: &[EventPair],
    ) {
        if self.shared_texts.len() <= run {
            self.shared_texts.resize_with(run + 1, Vec::new);
        }
        let texts = &mut self.shared_texts[run];
        if texts.len() <= id as usize {
            texts.resize_with(id as usize + 1, Default::default);
        }
        if let Some(text) = &texts[id as usize][usize::from(closing)] {
            // The types and values were tallied when the text was made.
            self.buf.extend(text);
            self.summary.events += pairs.len() as u64;
            return;
        }
        let start = self.buf.len();
        self.pairs(c, closing, pairs);
        let text = self.buf.as_slice()[start..].into();
        self.shared_texts[run][id as usize][usize::from(closing)] = Some(text);
    }

    #[inline]
    fn pairs(&mut self, c: &RunCursor, closing: bool, pairs: &[EventPair]) {
        for pair in pairs {
            let value = if closing { 0 } else { c.values_of(pair) };
            self.event(pair.ty, value);
        }
    }

    /// `:type:value` on the open event line.
    pub fn event(&mut self, ty: u32, value: i64) {
        let slot = self.note_type(ty, value);
        self.buf.text(&self.recent_type_fields[slot]);
        self.buf.field(value);
        self.summary.events += 1;
    }

    /// Starts an event line of its own (at a window's edge), closing any open one.
    pub fn start_event_line(&mut self, prefix: &Prefix, time: i64) {
        self.end_event_line();
        self.buf.start(b'2', prefix);
        self.buf.field(time);
    }

    pub fn state_line(&mut self, prefix: &Prefix, begin: i64, end: i64, state: u32) {
        self.buf.start(b'1', prefix);
        self.buf.field(begin);
        self.buf.field(end);
        self.buf.field(i64::from(state));
        match 1u128.checked_shl(state) {
            Some(bit) => self.small_states |= bit,
            None => {
                self.states.insert(state);
            }
        }
        self.summary.states += 1;
        self.end_line();
    }

    /// Tallies a pair; returns the type's slot in the cache of recent types.
    fn note_type(&mut self, ty: u32, value: i64) -> usize {
        // A direct-mapped cache of recent types (whether their values are
        // tracked, and their text) spares a hash, a search and a number
        // formatting per pair.
        let slot = (ty.wrapping_mul(0x9e37_79b9) >> (32 - RECENT_TYPES_LOG2)) as usize;
        if self.recent_types[slot].0 != ty {
            self.types.insert(ty);
            let fixed = self.fixed.iter().position(|(t, _)| *t == ty);
            self.recent_types[slot] = (ty, fixed.map_or(NOT_FIXED, |i| i as u16));
            self.recent_type_fields[slot] = TypeField::new(&format!(":{ty}"));
        }
        let fixed = self.recent_types[slot].1;
        if fixed != NOT_FIXED {
            self.fixed[fixed as usize].1.insert(value);
        }
        slot
    }

    pub fn end_event_line(&mut self) {
        if self.open_events.take().is_some() {
            self.end_line();
        }
    }

    pub fn end_line(&mut self) {
        self.buf.byte(b'\n');
        self.summary.lines += 1;
    }

    /// Writes the formatted bytes to `out` and empties the buffer.
    pub fn write_out(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(self.buf.as_slice())?;
        self.buf.clear();
        Ok(())
    }

    /// Adds another formatter's tallies to this one's (its bytes are not taken).
    pub fn absorb(&mut self, other: LineFormatter) {
        self.summary.lines += other.summary.lines;
        self.summary.states += other.summary.states;
        self.summary.events += other.summary.events;
        self.summary.comms += other.summary.comms;
        self.summary.comm_tags.extend(other.summary.comm_tags);
        self.small_states |= other.small_states;
        self.states.extend(other.states);
        self.types.extend(other.types);
        for ((ty, mine), (other_ty, theirs)) in self.fixed.iter_mut().zip(other.fixed) {
            debug_assert_eq!(*ty, other_ty);
            mine.extend(theirs);
        }
    }

    pub fn finish(self) -> (TraceSummary, UsedLabels) {
        let used = UsedLabels {
            states: (0..128)
                .filter(|s| self.small_states & (1 << s) != 0)
                .chain(self.states)
                .collect(),
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
