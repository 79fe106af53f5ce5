//! A cut known while a run is built: the run keeps of what lies outside it only
//! what the merge's cut ([`crate::cut`]) will use, so that records outside the
//! window are neither spilled, nor written into a shard's part, nor merged.
//!
//! What the merge's cut uses of a record before its window's start is small and
//! known exactly: per (thread, type), the stack of values left open (a 0 closes
//! the innermost, at most [`MAX_CARRIED_DEPTH`] deep) or the last value of a
//! type whose values hold; per thread, the state that straddles the start. It
//! uses nothing of a communication before the start, nor of anything after the
//! end. So, for a window in the run's own clock that holds the merge's window:
//!
//! * a record after the window's end is dropped when pushed;
//! * before its start, a communication, and a state that ends at or before the
//!   start, are dropped when pushed; a state that ends later is kept as it is;
//! * event records before the start are followed, in the order the merge would
//!   meet them, by what the cut tracks of them ([`Carried`]), when the run spills
//!   and when it is finished, instead of being stored; the finished run gets, per
//!   thread, a few records just before the start that make the cut track the same.
//!
//! Every record left out still counts in the run's span and thread table.

use std::collections::BTreeMap;

use crate::chunked::Pairs;
use crate::cut::MAX_CARRIED_DEPTH;
use crate::pcf::Timing;
use crate::record::{Body, EventPair, LocalThread, Record, NO_SHARED};

/// The window a run keeps (its own clock) and what it carries of the events
/// before the start.
pub(crate) struct KeepWindow {
    /// Events before this time are reduced to what the cut tracks of them.
    pub(crate) start: i64,
    /// Records after this time are dropped.
    pub(crate) end: i64,
    carried: BTreeMap<(LocalThread, u32), Carried>,
    /// What the run carries cannot be made to track what the records would have
    /// (see [`KeepWindow::carried_records`]): the run must be built whole.
    pub(crate) broken: bool,
    /// Records pushed but not stored (dropped, or carried).
    pub(crate) dropped: u64,
}

/// What the merge's cut tracks of one (thread, type)'s values before its
/// window, whichever way the type crosses the start: the stack an interval
/// type leaves open, and whether the last value was a 0 (a value that holds is
/// then none; else it is the top of the stack).
#[derive(Default)]
struct Carried {
    stack: Vec<EventPair>,
    last_closed: bool,
    /// (time, rank) of the last value followed: a later one must not sort before it.
    last: Option<(i64, u8)>,
}

impl KeepWindow {
    pub(crate) fn new(start: i64, end: i64) -> Self {
        KeepWindow {
            start,
            end,
            carried: BTreeMap::new(),
            broken: false,
            dropped: 0,
        }
    }

    /// Whether `record` is of no use to the cut, whatever else the run holds.
    #[inline]
    pub(crate) fn drops(&self, record: &Record) -> bool {
        if record.time > self.end {
            return true;
        }
        if record.time >= self.start {
            return false;
        }
        match record.body {
            Body::Comm { .. } => true,
            Body::State { end, .. } => end <= self.start,
            Body::Events { .. } => false,
        }
    }

    #[inline]
    fn carried_here(&self, record: &Record) -> bool {
        record.time < self.start && matches!(record.body, Body::Events { .. })
    }

    /// Takes the events before the start out of one thread's records (sorted
    /// stretches of `chunks` ending at `ends`), following them in the order the
    /// merge meets them: (time, rank), ties to the earlier stretch. Returns how
    /// many were taken out.
    pub(crate) fn reduce(
        &mut self,
        thread: LocalThread,
        chunks: &mut [Vec<Record>],
        ends: &mut Vec<usize>,
        pairs: &Pairs,
        shared: &[(u32, u32)],
    ) -> usize {
        // Each stretch is sorted: its events before the start come first.
        let mut before: Vec<Record> = Vec::new();
        let mut at = 0;
        let mut chunk_start = 0;
        let mut chunk = 0;
        for &end in ends.iter() {
            while at < end {
                while at >= chunk_start + chunks[chunk].len() {
                    chunk_start += chunks[chunk].len();
                    chunk += 1;
                }
                let r = &chunks[chunk][at - chunk_start];
                if r.time >= self.start {
                    break;
                }
                if self.carried_here(r) {
                    before.push(*r);
                }
                at += 1;
            }
            at = end;
        }
        if before.is_empty() {
            return 0;
        }
        before.sort_by_key(|r| (r.time, r.rank()));
        self.dropped += before.len() as u64;
        for r in &before {
            let Body::Events {
                first,
                count,
                shared: list,
                closing,
            } = r.body
            else {
                continue;
            };
            let own = pairs.get(first, count);
            let listed = match shared.get(list as usize) {
                Some(&(f, c)) => pairs.get(f, c),
                None => &[],
            };
            for pair in listed.iter().chain(own) {
                self.follow(thread, pair, closing, (r.time, r.rank()));
            }
        }
        // Out of the stretches, which keep their order.
        let mut kept_ends = Vec::with_capacity(ends.len());
        let (mut index, mut kept, mut stretch) = (0, 0, 0);
        for chunk in chunks.iter_mut() {
            chunk.retain(|r| {
                while stretch < ends.len() && ends[stretch] == index {
                    kept_ends.push(kept);
                    stretch += 1;
                }
                index += 1;
                let taken = r.time < self.start && matches!(r.body, Body::Events { .. });
                kept += usize::from(!taken);
                !taken
            });
        }
        kept_ends.extend(std::iter::repeat_n(kept, ends.len() - stretch));
        kept_ends.dedup();
        kept_ends.retain(|&e| e > 0);
        *ends = kept_ends;
        before.len()
    }

    /// Follows one value of `thread` as the merge's cut tracks it.
    fn follow(&mut self, thread: LocalThread, pair: &EventPair, closing: bool, at: (i64, u8)) {
        let c = self.carried.entry((thread, pair.ty)).or_default();
        if c.last.is_some_and(|last| at < last) {
            // Values spilled already come after this one in the merge.
            self.broken = true;
        }
        c.last = Some(at);
        let zero = closing || pair.value() == crate::record::Value::Raw(0);
        if zero {
            c.stack.pop();
            c.last_closed = true;
        } else {
            c.stack.push(*pair);
            if c.stack.len() > MAX_CARRIED_DEPTH {
                c.stack.remove(0);
            }
            c.last_closed = false;
        }
    }

    /// The records of `thread` (at `start - 2` and `start - 1`) that make the
    /// merge's cut track what its events before the start left: per type, its
    /// open values pushed in nesting order (one record per level); a type whose
    /// last value was a 0 over values still open gets one more value and a 0,
    /// which leaves the stack as it was for an interval type and nothing for a
    /// type whose values hold. Only when that stack is full is the type's
    /// `timing` needed (none known: the run is [`KeepWindow::broken`]).
    pub(crate) fn carried_records(
        &mut self,
        thread: LocalThread,
        timing: &dyn Fn(u32) -> Option<Timing>,
        pairs: &mut Pairs,
    ) -> Vec<Record> {
        let mut pushes: Vec<Vec<EventPair>> = Vec::new();
        let mut closed: Vec<EventPair> = Vec::new();
        let range = (thread, 0)..=(thread, u32::MAX);
        for (&(_, ty), c) in self.carried.range(range) {
            let Some(&top) = c.stack.last() else {
                continue;
            };
            let mut values = c.stack.clone();
            if c.last_closed {
                if values.len() < MAX_CARRIED_DEPTH {
                    values.push(top);
                    closed.push(top);
                } else {
                    match timing(ty) {
                        Some(Timing::Interval) => {}
                        Some(Timing::Level | Timing::Point) => continue,
                        None => {
                            self.broken = true;
                            continue;
                        }
                    }
                }
            }
            for (level, value) in values.into_iter().enumerate() {
                if pushes.len() <= level {
                    pushes.push(Vec::new());
                }
                pushes[level].push(value);
            }
        }
        let record = |list: &[EventPair], time, closing, pairs: &mut Pairs| {
            let (first, count) = pairs.push(list);
            Record {
                time,
                body: Body::Events {
                    first,
                    count,
                    shared: NO_SHARED,
                    closing,
                },
            }
        };
        let mut records: Vec<Record> = pushes
            .iter()
            .map(|level| record(level, self.start.saturating_sub(2), false, pairs))
            .collect();
        if !closed.is_empty() {
            records.push(record(&closed, self.start.saturating_sub(1), true, pairs));
        }
        records
    }
}
