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

/// A short piece of a line formatted once and copied many times, kept in a
/// fixed-size array so that copying it is a fixed-size copy (no `memcpy` call).
#[derive(Clone, Copy)]
pub(crate) struct Preformatted<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> Preformatted<N> {
    /// `text`, which must be shorter than `N` bytes.
    fn new(text: &str) -> Self {
        let mut bytes = [0; N];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Preformatted {
            bytes,
            len: text.len() as u8,
        }
    }
}

/// `0:1:TASK:THREAD` of a thread (at most `0:1:` and two 10-digit numbers).
pub(crate) type Prefix = Preformatted<32>;

impl Prefix {
    /// The prefix of (0-based) `task` and `thread`.
    pub fn of(task: u64, thread: u64) -> Self {
        Self::new(&format!("0:1:{}:{}", task + 1, thread + 1))
    }
}

/// `:TYPE` of an event type.
type TypeField = Preformatted<16>;

/// Room a field needs: `:`, a sign and 24 bytes (20 digits, written 8 at a time).
const FIELD_MAX: usize = 26;

/// The bytes of formatted lines. The vector is zero-filled ahead of what is
/// written (`len` marks the end of the text), so fields are written in place:
/// one room check per field and fixed-size copies, instead of a capacity check
/// and a `memcpy` call per piece.
#[derive(Default)]
pub(crate) struct LineBuf {
    bytes: Vec<u8>,
    len: usize,
}

impl LineBuf {
    pub fn with_capacity(capacity: usize) -> Self {
        LineBuf {
            bytes: vec![0; capacity],
            len: 0,
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Makes room for `n` more bytes.
    #[inline]
    fn room(&mut self, n: usize) {
        if self.bytes.len() - self.len < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        let size = (self.len + n).max(2 * self.bytes.len()).max(4096);
        self.bytes.resize(size, 0);
    }

    /// Appends `b`.
    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.room(1);
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// Appends the record kind and the thread: `K:0:1:TASK:THREAD`.
    #[inline]
    pub fn start(&mut self, kind: u8, prefix: &Prefix) {
        self.byte(kind);
        self.byte(b':');
        self.text(prefix);
    }

    /// Appends `:` and the thread without its record kind (a receiver).
    #[inline]
    pub fn thread(&mut self, prefix: &Prefix) {
        self.byte(b':');
        self.text(prefix);
    }

    /// Appends `bytes`.
    #[inline]
    fn extend(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends preformatted text.
    #[inline(always)]
    fn text<const N: usize>(&mut self, text: &Preformatted<N>) {
        self.room(N);
        self.bytes[self.len..self.len + N].copy_from_slice(&text.bytes);
        self.len += text.len as usize;
    }

    /// Appends `:` and the decimal number.
    #[inline(always)]
    pub fn field(&mut self, v: i64) {
        self.room(FIELD_MAX);
        let mut at = self.len;
        self.bytes[at] = b':';
        self.bytes[at + 1] = b'-';
        at += 1 + usize::from(v < 0);
        let m = v.unsigned_abs();
        self.len = if m < E8 {
            self.leading_digits(at, m as u32)
        } else if m < E16 {
            let at = self.leading_digits(at, (m / E8) as u32);
            self.eight_digits(at, (m % E8) as u32)
        } else {
            let at = self.leading_digits(at, (m / E16) as u32);
            let at = self.eight_digits(at, (m / E8 % E8) as u32);
            self.eight_digits(at, (m % E8) as u32)
        };
    }

    /// Writes `v` (< 10^8) at `at` without leading zeros; returns where it ends.
    /// (Writes 8 bytes: those past the digits are overwritten later.)
    #[inline]
    fn leading_digits(&mut self, at: usize, v: u32) -> usize {
        let digits = eight_digits(v);
        // Leading zeros are the low bytes; keep at least one digit.
        let zeros = ((digits.trailing_zeros() / 8) as usize).min(7);
        let text = (digits | ASCII_ZEROS) >> (8 * zeros);
        self.bytes[at..at + 8].copy_from_slice(&text.to_le_bytes());
        at + 8 - zeros
    }

    /// Writes the 8 digits of `v` (< 10^8, zero-padded) at `at`; returns where
    /// they end.
    #[inline]
    fn eight_digits(&mut self, at: usize, v: u32) -> usize {
        let text = eight_digits(v) | ASCII_ZEROS;
        self.bytes[at..at + 8].copy_from_slice(&text.to_le_bytes());
        at + 8
    }
}

const E8: u64 = 100_000_000;
const E16: u64 = E8 * E8;
/// `'0'` in every byte.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// The 8 decimal digits of `v` (< 10^8), one per byte, first digit in the lowest
/// byte (so `to_le_bytes` gives them in writing order), without the ASCII offset.
/// Lanes of one `u64` split 4+4, then 2+2, then 1+1 digits at once: a handful of
/// multiplications instead of a division per digit pair.
#[inline]
fn eight_digits(v: u32) -> u64 {
    let v = u64::from(v);
    // Two 32-bit lanes of 4 digits: the first four in the low lane.
    let fours = (v / 10_000) | ((v % 10_000) << 32);
    // x / 100 in each lane (exact for x < 10^4), then 16-bit lanes of 2 digits.
    let hundreds = ((fours * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let twos = ((fours - hundreds * 100) << 16) | hundreds;
    // x / 10 in each 16-bit lane (exact for x < 100), then bytes of 1 digit.
    let tens = ((twos * 103) >> 10) & 0x000f_000f_000f_000f;
    ((twos - tens * 10) << 8) | tens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(v: i64) -> String {
        let mut buf = LineBuf::default();
        buf.field(v);
        String::from_utf8(buf.as_slice().to_vec()).unwrap()
    }

    #[test]
    fn fields_are_colon_and_decimal() {
        let mut cases = vec![
            0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 99_999, 100_000,
        ];
        cases.extend((0..19).map(|p| 10i64.pow(p)));
        cases.extend((1..19).map(|p| 10i64.pow(p) - 1));
        cases.extend([123_456_789_012, i64::MAX, i64::MIN, -1, -10, -123_456]);
        cases.extend(0..20_000);
        // Every magnitude, with varied digits (a multiplicative sequence).
        let mut x: u64 = 1;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = (x >> (x % 64)) as i64;
            cases.extend([v, -v]);
        }
        for v in cases {
            assert_eq!(field(v), format!(":{v}"), "{v}");
        }
    }

    #[test]
    fn lines_grow_past_their_first_capacity() {
        let mut buf = LineBuf::with_capacity(3);
        let prefix = Prefix::of(4_294_967_294, 4_294_967_294);
        let mut want = String::new();
        for v in 0..1000 {
            buf.start(b'2', &prefix);
            buf.field(v * 1_000_003);
            buf.thread(&Prefix::of(0, 1));
            buf.byte(b'\n');
            want += &format!("2:0:1:4294967295:4294967295:{}:0:1:1:2\n", v * 1_000_003);
        }
        assert_eq!(String::from_utf8(buf.as_slice().to_vec()).unwrap(), want);
        buf.clear();
        assert_eq!(buf.len(), 0);
    }
}
