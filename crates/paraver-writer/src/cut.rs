//! A cut: the part of a trace kept between two times, and the writer that
//! merges runs record by record through it, clipping what crosses its edges.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::cursor::RunCursor;
use crate::kmerge::{Merged, Merger};
use crate::lines::{LineFormatter, LINE_BLOCK};
use crate::output::TraceSink;
use crate::pcf::{PcfCatalog, Timing, MAX_CARRIED_DEPTH};
use crate::text::Prefix;
use crate::view::{Current, View};

/// A cut: the part of the common clock that [`crate::write_trace_cut`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// First kept time (common clock); it becomes 0 in the trace.
    pub start: i64,
    /// End of the window (exclusive for begins, inclusive for ends); it becomes the
    /// header's end time.
    pub end: i64,
}

/// A cut applied while merging: every record is kept only if it lies inside the
/// window, and what crosses an edge is clipped to it, so every category is cut
/// alike and the result is a valid trace of its own:
///
/// * the window is clamped to the trace's span and rebased: its start becomes 0
///   and the header's end time is its length;
/// * a state that straddles an edge is clipped to it;
/// * how an event type crosses the start is its declared [`Timing`] in the
///   catalog: an interval open at the start begins again at the start with its
///   value, nested ones in their nesting order, and one still open at the end ends
///   there; a value that holds until the next one (a sampled counter, or a type the
///   catalog does not declare) is repeated at the start with its last value before
///   it; points (marks) are never repeated;
/// * a communication is kept only if its send and receive times all lie inside.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub window: TimeWindow,
}

/// How a type's values cross the window's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carry {
    Interval,
    Level,
    Point,
}

/// Where a record falls with respect to the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the start (and interval ends at the start): only tracked.
    Before,
    /// A communication at the start: written before what the start re-opens.
    Edge,
    Inside,
    /// At or after the end: the merge stops.
    After,
}

/// What the merge tracks to clip a cut: values open on each (thread, type) and the
/// state that straddles the start, per global thread (`task << 32 | thread`).
struct CutState {
    /// Window length (trace times run from 0 to `end`).
    end: i64,
    /// Per type: how it crosses the start, from its declared timing.
    carry_of: FxHashMap<u32, Carry>,
    open: FxHashMap<(u64, u32), Vec<i64>>,
    straddling: BTreeMap<u64, (i64, u32)>,
    started: bool,
}

impl CutState {
    fn new(end: i64, catalog: &PcfCatalog) -> Self {
        let carry_of = catalog
            .types
            .iter()
            .map(|t| {
                let carry = match t.timing {
                    Timing::Interval => Carry::Interval,
                    Timing::Point => Carry::Point,
                    Timing::Level => Carry::Level,
                };
                (t.ty, carry)
            })
            .collect();
        CutState {
            end,
            carry_of,
            open: FxHashMap::default(),
            straddling: BTreeMap::new(),
            started: false,
        }
    }

    fn phase(&self, time: i64, rank: u8) -> Phase {
        if time < 0 || (time == 0 && rank == CLOSING_RANK) {
            Phase::Before
        } else if time == 0 && rank < CLOSING_RANK && !self.started {
            Phase::Edge
        } else if time < self.end || (time == self.end && rank <= CLOSING_RANK) {
            Phase::Inside
        } else {
            Phase::After
        }
    }

    /// A type the catalog does not declare is taken for a value that holds.
    fn carry(&self, ty: u32) -> Carry {
        self.carry_of.get(&ty).copied().unwrap_or(Carry::Level)
    }

    /// Tracks one type:value of `thread`: what stays open, to re-open it at the
    /// window's start and close it at its end (a 0 closes the innermost value).
    fn track(&mut self, thread: u64, ty: u32, value: i64) {
        match self.carry(ty) {
            Carry::Point => {}
            Carry::Level if value == 0 => {
                self.open.remove(&(thread, ty));
            }
            Carry::Level => {
                self.open.insert((thread, ty), vec![value]);
            }
            Carry::Interval if value == 0 => {
                if let Some(stack) = self.open.get_mut(&(thread, ty)) {
                    stack.pop();
                    if stack.is_empty() {
                        self.open.remove(&(thread, ty));
                    }
                }
            }
            Carry::Interval => {
                let stack = self.open.entry((thread, ty)).or_default();
                stack.push(value);
                if stack.len() > MAX_CARRIED_DEPTH {
                    stack.remove(0);
                }
            }
        }
    }

    /// Open values per thread and type, in thread then type order.
    fn open_by_thread(&self) -> BTreeMap<u64, Vec<(u32, Vec<i64>)>> {
        let mut by_thread: BTreeMap<u64, Vec<(u32, Vec<i64>)>> = BTreeMap::new();
        for (&(thread, ty), values) in &self.open {
            by_thread
                .entry(thread)
                .or_default()
                .push((ty, values.clone()));
        }
        for types in by_thread.values_mut() {
            types.sort_unstable_by_key(|(ty, _)| *ty);
        }
        by_thread
    }
}

/// Rank of interval ends among records at one time (see
/// [`crate::record::Record::rank`]).
const CLOSING_RANK: u8 = 1;

/// `0:1:TASK:THREAD` of a global thread key (`task << 32 | thread`).
fn prefix_of(thread: u64) -> Prefix {
    Prefix::of(thread >> 32, thread & 0xffff_ffff)
}

/// How often (in records) the progress callback is told.
const PROGRESS_STEP: u64 = 1 << 20;

/// Writes the body of a trace cut to a window of `length` ns (trace times, which
/// start at the window's start), merging `cursors` record by record; the tallies
/// go to `lines`.
pub(crate) fn write_body(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    length: i64,
    read_budget: usize,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let mut writer = CutWriter {
        out,
        lines,
        cut: CutState::new(length, catalog),
    };
    let mut merger = Merger::new(cursors, read_budget)?;
    let mut written: u64 = 0;
    while let Some(inside) = merger.next(cursors, |m| writer.cut_record(cursors, &m))? {
        if !inside {
            break;
        }
        if writer.lines.buf.len() >= LINE_BLOCK {
            writer.lines.write_out(writer.out)?;
        }
        written += 1;
        if written.is_multiple_of(PROGRESS_STEP) {
            progress(written);
        }
    }
    writer.open_window();
    writer.close_window();
    writer.lines.end_event_line();
    writer.lines.write_out(writer.out)?;
    progress(written);
    Ok(())
}

/// Merged records through the window's bookkeeping, into lines.
struct CutWriter<'w, 's> {
    out: &'w mut TraceSink<'s>,
    lines: &'w mut LineFormatter,
    cut: CutState,
}

impl CutWriter<'_, '_> {
    /// Takes one merged record through the window; `false` once past its end.
    fn cut_record(&mut self, cursors: &[RunCursor], m: &Merged) -> bool {
        let cursor = &cursors[m.run];
        match self.cut.phase(m.time, m.rank) {
            Phase::Before => self.before_window(cursor, &m.record, m.thread),
            Phase::Edge => self.record_cut(cursor, m.run, &m.record, m.time, m.thread),
            Phase::Inside => {
                self.open_window();
                self.record_cut(cursor, m.run, &m.record, m.time, m.thread);
            }
            Phase::After => return false,
        }
        true
    }

    /// A record before the window: only what it leaves open at the start is kept.
    fn before_window(&mut self, c: &RunCursor, r: &Current, thread: u64) {
        let cut = &mut self.cut;
        match r.body {
            View::Events { closing, pairs } => {
                for pair in pairs.iter() {
                    let value = if closing { 0 } else { c.values_of(pair) };
                    cut.track(thread, pair.ty, value);
                }
            }
            View::State { end, state } => {
                let end = (end + c.shift).min(cut.end);
                if end > 0 {
                    cut.straddling.insert(thread, (end, state));
                }
            }
            View::Comm(_) => {}
        }
    }

    /// Writes, at time 0, what is open when the window starts: the values of each
    /// thread (one line per nesting level), then the states that straddle the start.
    fn open_window(&mut self) {
        let cut = &mut self.cut;
        if cut.started {
            return;
        }
        cut.started = true;
        let open = cut.open_by_thread();
        let straddling = std::mem::take(&mut cut.straddling);
        for (thread, types) in open {
            let depth = types.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
            for level in 0..depth {
                self.lines.start_event_line(&prefix_of(thread), 0);
                for (ty, values) in types.iter().filter(|(_, v)| v.len() > level) {
                    self.lines.event(*ty, values[level]);
                }
                self.lines.end_line();
            }
        }
        self.lines.end_event_line();
        for (thread, (end, state)) in straddling {
            self.lines.state_line(&prefix_of(thread), 0, end, state);
        }
    }

    /// Ends, at the window's end, every interval still open (one line per level).
    fn close_window(&mut self) {
        let cut = &mut self.cut;
        let end = cut.end;
        let open = cut.open_by_thread();
        let intervals: Vec<(u64, Vec<(u32, usize)>)> = open
            .into_iter()
            .map(|(thread, types)| {
                let types = types
                    .into_iter()
                    .filter(|(ty, _)| cut.carry(*ty) == Carry::Interval)
                    .map(|(ty, values)| (ty, values.len()))
                    .collect();
                (thread, types)
            })
            .collect();
        cut.open.clear();
        self.lines.end_event_line();
        for (thread, types) in intervals {
            let depth = types.iter().map(|(_, n)| *n).max().unwrap_or(0);
            for level in 0..depth {
                self.lines.start_event_line(&prefix_of(thread), end);
                for (ty, _) in types.iter().filter(|(_, n)| *n > level) {
                    self.lines.event(*ty, 0);
                }
                self.lines.end_line();
            }
        }
    }

    /// A record inside the window: events as they are (tracked), states clipped to
    /// the window's end, communications only when wholly inside.
    fn record_cut(&mut self, c: &RunCursor, run_index: usize, r: &Current, time: i64, thread: u64) {
        let end = self.cut.end;
        match r.body {
            View::Events { closing, pairs } => {
                let cut = &mut self.cut;
                for pair in pairs.iter() {
                    let value = if closing { 0 } else { c.values_of(pair) };
                    cut.track(thread, pair.ty, value);
                }
                self.lines.record(c, run_index, r, time)
            }
            View::State {
                end: state_end,
                state,
            } => {
                let clipped = (state_end + c.shift).min(end);
                if clipped < time || (clipped == time && state_end + c.shift > time) {
                    return;
                }
                let body = View::State {
                    end: clipped - c.shift,
                    state,
                };
                let clipped_record = Current {
                    time: r.time,
                    thread: r.thread,
                    rank: r.rank,
                    body,
                };
                self.lines.record(c, run_index, &clipped_record, time)
            }
            View::Comm(comm) => {
                let times = [comm.send_physical, comm.recv_logical, comm.recv_physical];
                if times.iter().all(|t| (0..=end).contains(&(t + c.shift))) {
                    self.lines.record(c, run_index, r, time)
                }
            }
        }
    }
}
