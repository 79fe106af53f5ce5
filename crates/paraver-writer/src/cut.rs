//! A cut: the part of a trace kept between two times, and the writers that
//! merge runs through it, clipping what crosses its edges.
//!
//! What a cut tracks (intervals and values open, the state straddling the
//! start) is per thread, so the cut body comes in four parts: what each run
//! leaves open at the window's start and at its end (each run read up to the
//! end, runs in parallel: [`edges`]); the opening block from it; the records
//! inside, each clipped on its own ([`Keep`]), merged by time segments on
//! every thread (`segments.rs`), or by time slices over merge tasks; the
//! closing block. The record-by-record writer ([`write_body`]) is the oracle
//! these are tested against, and the way for runs the segments cannot merge.

use std::collections::BTreeMap;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::cursor::RunCursor;
use crate::kmerge::{Merged, Merger};
use crate::lines::{LineFormatter, LINE_BLOCK};
use crate::output::TraceSink;
use crate::pcf::{PcfCatalog, Timing, MAX_CARRIED_DEPTH};
use crate::segments;
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
        if let View::Events { closing, pairs } = r.body {
            for pair in pairs.iter() {
                let value = if closing { 0 } else { c.values_of(pair) };
                self.cut.track(thread, pair.ty, value);
            }
        }
        match at_end(c, &r.body, time, self.cut.end) {
            AtEnd::Whole => self.lines.record(c, run_index, r, time),
            AtEnd::StateEnd { end, state } => {
                let clipped = Current {
                    time: r.time,
                    thread: r.thread,
                    rank: r.rank,
                    body: View::State { end, state },
                };
                self.lines.record(c, run_index, &clipped, time)
            }
            AtEnd::Dropped => {}
        }
    }
}

/// How the cut writes a record inside its window, whose end is `end`.
enum AtEnd {
    Whole,
    /// A state, ending at the window's end (`end` on its run's clock).
    StateEnd {
        end: i64,
        state: u32,
    },
    /// A state clipped to nothing, or a communication not wholly inside.
    Dropped,
}

/// The one rule of both cut writers for a record at trace time `time`: states
/// clipped to the window's end `end`, communications kept only when wholly
/// inside, events as they are.
fn at_end(c: &RunCursor, body: &View, time: i64, end: i64) -> AtEnd {
    match *body {
        View::Events { .. } => AtEnd::Whole,
        View::State {
            end: state_end,
            state,
        } => {
            let clipped = (state_end + c.shift).min(end);
            if clipped < time || (clipped == time && state_end + c.shift > time) {
                AtEnd::Dropped
            } else if clipped - c.shift == state_end {
                AtEnd::Whole
            } else {
                AtEnd::StateEnd {
                    end: clipped - c.shift,
                    state,
                }
            }
        }
        View::Comm(comm) => {
            let times = [comm.send_physical, comm.recv_logical, comm.recv_physical];
            match times.iter().all(|t| (0..=end).contains(&(t + c.shift))) {
                true => AtEnd::Whole,
                false => AtEnd::Dropped,
            }
        }
    }
}

/// Which records of a span of the merged runs a cut writes, and how: each
/// record on its own (what crosses the window's start is written by the
/// opening block, from [`edges`]). The record-by-record writer's phases
/// ([`CutState::phase`]) as a filter on one record.
///
/// Both kinds clip to the window's end `end`: states to it, communications
/// kept only when wholly inside.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keep {
    /// The communications at time 0: written before the opening block
    /// ([`Phase::Edge`]).
    Edge { end: i64 },
    /// The records after the start's communications and interval ends, up to
    /// the window's end (its communications and ends included)
    /// ([`Phase::Inside`]).
    Inside { end: i64 },
}

impl segments::Admit for Keep {
    /// The record `r` (at trace time `time`, of the run of `c`) as the cut
    /// writes it, or `None` when it leaves it out.
    #[inline]
    fn admit<'s>(&self, c: &RunCursor, r: Current<'s>, time: i64) -> Option<Current<'s>> {
        let (kept, end) = match *self {
            Keep::Edge { end } => (time == 0 && r.rank < CLOSING_RANK, end),
            Keep::Inside { end } => {
                let inside = (time > 0 || (time == 0 && r.rank > CLOSING_RANK))
                    && (time < end || (time == end && r.rank <= CLOSING_RANK));
                (inside, end)
            }
        };
        if !kept {
            return None;
        }
        match at_end(c, &r.body, time, end) {
            AtEnd::Whole => Some(r),
            AtEnd::StateEnd { end, state } => Some(Current {
                body: View::State { end, state },
                ..r
            }),
            AtEnd::Dropped => None,
        }
    }
}

/// What some runs leave open at a window's edges (global threads): values
/// open and states straddling at its start, values open at its end.
struct RunEdges {
    at_start: FxHashMap<(u64, u32), Vec<i64>>,
    straddling: BTreeMap<u64, (i64, u32)>,
    at_end: FxHashMap<(u64, u32), Vec<i64>>,
    /// Records read: those up to the window's end.
    read: u64,
    /// The (thread, type) of every event tracked, and the threads of every
    /// state before the start: what the runs' order across the runs would
    /// decide, were two runs to share one.
    keys: FxHashSet<(u64, u32)>,
    state_threads: FxHashSet<u64>,
}

/// Reads the runs of `cursors` (merged as the trace merges them, chunks
/// through readers sharing `read_budget`) up to the window's end, `length`,
/// tracking what the record-by-record writer tracks of their threads: what is
/// open once the records before the start are past, and once those up to the
/// end are.
fn edges_of_runs(
    cursors: &[RunCursor],
    catalog: &PcfCatalog,
    length: i64,
    read_budget: usize,
) -> std::io::Result<RunEdges> {
    let mut cut = CutState::new(length, catalog);
    let mut at_start = None;
    let mut read = 0;
    let mut keys = FxHashSet::default();
    let mut state_threads = FxHashSet::default();
    let mut merger = Merger::new(cursors, read_budget)?;
    loop {
        let next = merger.next(cursors, |m| {
            let (time, rank) = (m.time, m.rank);
            if time > length || (time == length && rank > CLOSING_RANK) {
                return false;
            }
            let before = time < 0 || (time == 0 && rank <= CLOSING_RANK);
            if !before && at_start.is_none() {
                at_start = Some((cut.open.clone(), std::mem::take(&mut cut.straddling)));
            }
            let c = &cursors[m.run];
            match m.record.body {
                View::Events { closing, pairs } => {
                    for pair in pairs.iter() {
                        let value = if closing { 0 } else { c.values_of(pair) };
                        cut.track(m.thread, pair.ty, value);
                        keys.insert((m.thread, pair.ty));
                    }
                }
                // (Only a record before the start can straddle it.)
                View::State { end, state } if time < 0 => {
                    state_threads.insert(m.thread);
                    let end = (end + c.shift).min(length);
                    if end > 0 {
                        cut.straddling.insert(m.thread, (end, state));
                    }
                }
                View::State { .. } | View::Comm(_) => {}
            }
            true
        })?;
        if next != Some(true) {
            break;
        }
        read += 1;
    }
    let (at_start, straddling) =
        at_start.unwrap_or_else(|| (cut.open.clone(), std::mem::take(&mut cut.straddling)));
    Ok(RunEdges {
        at_start,
        straddling,
        at_end: cut.open,
        read,
        keys,
        state_threads,
    })
}

/// Whether [`write_body_by_segments`] can write the cut of `cursors`: the
/// segments can merge them.
pub(crate) fn can_split(cursors: &[RunCursor]) -> bool {
    segments::can_merge(cursors)
}

/// What the runs leave open at a window's edges: at its start (values, and
/// states straddling it), and at its end.
pub(crate) struct Edges {
    start: CutState,
    end: FxHashMap<(u64, u32), Vec<i64>>,
    /// Records up to the window's end: those the record-by-record writer reads.
    pub(crate) read: u64,
}

/// What the runs of `cursors` leave open at the edges of a window of
/// `length` ns, each run read up to the window's end, runs in parallel. What
/// a thread leaves open depends on the order of its records only: when two
/// runs have records of one thread that it depends on (events of one type,
/// or states before the start; an MPI messages run, of communications only,
/// does not), the runs are read again merged as one, as the trace merges
/// them.
pub(crate) fn edges(
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    length: i64,
    read_budget: usize,
) -> std::io::Result<Edges> {
    // Runs are read on every thread at once: each thread's readers share a
    // share of the budget.
    let budget = read_budget / rayon::current_num_threads().max(1);
    let mut runs = cursors
        .par_iter()
        .map(|c| edges_of_runs(std::slice::from_ref(c), catalog, length, budget))
        .collect::<std::io::Result<Vec<RunEdges>>>()?;
    let mut keys = FxHashSet::default();
    let mut state_threads = FxHashSet::default();
    let shared = runs.iter_mut().any(|run| {
        let keys_shared = std::mem::take(&mut run.keys)
            .into_iter()
            .any(|key| !keys.insert(key));
        let states_shared = std::mem::take(&mut run.state_threads)
            .into_iter()
            .any(|thread| !state_threads.insert(thread));
        keys_shared || states_shared
    });
    if shared {
        runs = vec![edges_of_runs(cursors, catalog, length, read_budget)?];
    }
    let mut start = CutState::new(length, catalog);
    let mut end = FxHashMap::default();
    let mut read = 0;
    for run in runs {
        start.open.extend(run.at_start);
        start.straddling.extend(run.straddling);
        end.extend(run.at_end);
        read += run.read;
    }
    Ok(Edges { start, end, read })
}

/// The start of a cut body: the communications at time 0 (`Phase::Edge`),
/// then, at 0, what is open at the start (`edges`).
pub(crate) fn write_opening(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    edges: &mut Edges,
    batch_records: usize,
) -> std::io::Result<()> {
    let length = edges.start.end;
    segments::write_span(
        out,
        lines,
        catalog,
        cursors,
        batch_records,
        (Some(0), Some(1)),
        Some(&Keep::Edge { end: length }),
        &mut |_| {},
    )?;
    let start = std::mem::replace(&mut edges.start, CutState::new(length, catalog));
    let mut writer = CutWriter {
        out,
        lines,
        cut: start,
    };
    writer.open_window();
    writer.lines.write_out(writer.out)
}

/// The end of a cut body: what is still open at the window's end, ended there.
pub(crate) fn write_closing(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    edges: Edges,
) -> std::io::Result<()> {
    let mut cut = edges.start;
    cut.open = edges.end;
    let mut writer = CutWriter { out, lines, cut };
    writer.close_window();
    writer.lines.end_event_line();
    writer.lines.write_out(writer.out)
}

/// [`write_body`] by parts (see [`can_split`]): what every run leaves open at
/// the window's edges, found in parallel; the communications at its start;
/// the opening block; the records inside merged by time segments of about
/// `batch_records` records on every thread; the closing block. The same text
/// as [`write_body`]; a `.prv.gz` is cut into members as the segment merge
/// cuts them (by records written), the blocks as members of their own.
/// `progress` is told the records [`write_body`] reads (those up to the
/// window's end), once they are read.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_body_by_segments(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    length: i64,
    batch_records: usize,
    read_budget: usize,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let mut edges = edges(catalog, cursors, length, read_budget)?;
    let read = edges.read;
    progress(read);
    write_opening(out, lines, catalog, cursors, &mut edges, batch_records)?;
    segments::write_span(
        out,
        lines,
        catalog,
        cursors,
        batch_records,
        (Some(0), Some(length.saturating_add(1))),
        Some(&Keep::Inside { end: length }),
        &mut |_| {},
    )?;
    write_closing(out, lines, edges)?;
    progress(read);
    Ok(())
}
