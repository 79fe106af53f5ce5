//! The k-way merge of sorted runs into the `.prv` body, then the `.pcf` and `.row`.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::io::Write;

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use rayon::prelude::*;

use crate::layout::{GlobalThread, TraceLayout};
use crate::lines::{EventsKey, LineFormatter, Prefix};
use crate::names::HandleValues as RunValues;
use crate::names::{assign_values, HandleValues};
use crate::output::{gzip_member, OutputFile, OutputPaths, TraceSink};
use crate::pcf::{PcfCatalog, Timing, UsedLabels};
use crate::record::{Body, Comm, EventPair, LocalThread, Record, Value, NO_SHARED};
use crate::run::{Payload, Run};
use crate::segments::{format_segment, Segment, Segmenter};
use crate::spill::{ChunkReader, DecodedBody, MIN_READ_BUFFER, READ_BUFFER};
use crate::WriteError;

/// One sorted run and how it maps into the trace.
pub struct MergeInput {
    pub run: Run,
    /// Added to every time of the run to put it on the common clock (before rebasing).
    pub time_offset: i64,
    /// Local thread → global (task, thread); must keep the order of local indices
    /// (the run is sorted by local index, the merge by global thread).
    pub threads: Vec<GlobalThread>,
}

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

/// Paraver keeps times as doubles: beyond 2^53 ns (104 days) they lose precision.
pub const MAX_SPAN: i64 = 1 << 53;

/// How often (in records) the progress callback is told.
pub const PROGRESS_STEP: u64 = 1 << 20;

/// Writes the `.prv` (merging `inputs`, which must be in canonical order: ties
/// between runs go to the earlier one), the `.pcf` and the `.row` at `paths`
/// (written in place: a caller that wants them atomic writes them elsewhere and
/// renames them; a failure may leave some of them behind).
pub fn write_trace(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    write_trace_cut(paths, layout, inputs, catalog, None, progress)
}

/// [`write_trace`], keeping only what lies inside `cut` (when given): see [`Cut`].
pub fn write_trace_cut(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    cut: Option<&Cut>,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    write_trace_within(
        paths,
        layout,
        inputs,
        catalog,
        cut,
        DEFAULT_READ_BUDGET,
        progress,
    )
}

/// [`write_trace_cut`] whose readers of spilled chunks share `read_budget` bytes
/// of buffers (however many chunks there are; each has at least 4 KiB).
pub fn write_trace_within(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    cut: Option<&Cut>,
    read_budget: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    let batching = Batching {
        records: BATCH_RECORDS,
        read_budget,
    };
    write_trace_batched(paths, layout, inputs, catalog, cut, batching, progress)
}

/// How the merge reads and batches.
#[derive(Clone, Copy)]
struct Batching {
    /// Records per batch of the parallel merge.
    records: usize,
    /// Bytes of read buffers all chunk readers share.
    read_budget: usize,
}

/// Read buffers of the merge when the caller sets no budget.
const DEFAULT_READ_BUDGET: usize = 256 << 20;

/// [`write_trace_cut`] with `batching`'s batch size and read buffers.
fn write_trace_batched(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    cut: Option<&Cut>,
    batching: Batching,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    let (mut origin, mut end) = time_span(inputs).ok_or(WriteError::EmptyTrace)?;
    if end.saturating_sub(origin) >= MAX_SPAN {
        return Err(WriteError::SpanTooLong(end.saturating_sub(origin)));
    }
    let empty_window = |cut: &Cut| WriteError::EmptyWindow {
        start: cut.window.start - origin,
        end: cut.window.end - origin,
        trace_end: end - origin,
    };
    let empty = cut.map(empty_window);
    let mut window = None;
    if let Some(cut) = cut {
        let (start, stop) = (cut.window.start.max(origin), cut.window.end.min(end));
        if stop <= start {
            return Err(empty_window(cut));
        }
        window = Some(CutState::new(stop - start, catalog));
        (origin, end) = (start, stop);
    }
    let reserved = |ty: u32| catalog.fixed_values_of(ty);
    let (global_names, mut handle_values) =
        assign_values(inputs.iter().map(|i| &i.run.names), &reserved);
    for values in &mut handle_values {
        for (ty, table) in catalog.shared_value_tables() {
            values.share(ty, table);
        }
    }

    let prv_file = OutputFile::create(&paths.prv)?;
    let mut body = BodyWriter::new(TraceSink::new(prv_file.file(), paths.gzip), catalog);
    body.cut = window;
    body.batch_records = batching.records;
    body.read_budget = batching.read_budget;
    let end_time = (end - origin) as u64;
    body.out
        .write_all(layout.header(end_time).as_bytes())
        .map_err(|e| WriteError::io(&paths.prv, e))?;
    let cursors: Vec<RunCursor> = inputs
        .iter()
        .zip(handle_values)
        .map(|(input, values)| RunCursor::new(input, values, origin))
        .collect();
    body.merge(&cursors, progress)
        .map_err(|e| WriteError::io(&paths.prv, e))?;
    let (sink, mut summary, used) = body.finish();
    sink.finish().map_err(|e| WriteError::io(&paths.prv, e))?;
    if let (Some(empty), 0) = (empty, summary.lines) {
        // Nothing happens in the window (Paraver rejects an empty body).
        return Err(empty);
    }
    summary.origin = origin;
    summary.end_time = end_time;
    summary.event_types = used.types.clone();

    let pcf_file = OutputFile::create(&paths.pcf)?;
    let mut pcf = std::io::BufWriter::new(pcf_file.file());
    catalog
        .write(&mut pcf, &used, &global_names)
        .and_then(|_| pcf.flush())
        .map_err(|e| WriteError::io(&paths.pcf, e))?;
    drop(pcf);
    let row_file = OutputFile::create(&paths.row)?;
    let mut row = std::io::BufWriter::new(row_file.file());
    layout
        .write_row(&mut row)
        .and_then(|_| row.flush())
        .map_err(|e| WriteError::io(&paths.row, e))?;
    drop(row);

    pcf_file.finish()?;
    row_file.finish()?;
    prv_file.finish()?;
    Ok(summary)
}

/// (origin, end) on the common clock: the origin is the earliest session start or
/// record, so the trace starts at 0 and no time is negative. `None` when every run
/// is empty.
pub fn time_span(inputs: &[MergeInput]) -> Option<(i64, i64)> {
    let non_empty = inputs.iter().filter(|i| !i.run.is_empty());
    let origin = non_empty
        .clone()
        .map(|i| {
            i.time_offset
                .min(i.run.min_time.saturating_add(i.time_offset))
        })
        .min()?;
    let end = non_empty
        .map(|i| i.run.max_time.saturating_add(i.time_offset))
        .max()?;
    Some((origin, end))
}

/// A cut: the part of the common clock that [`write_trace_cut`] keeps.
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

/// Deeper nesting than this on one thread and type is not nesting but a producer
/// that never closes: only the innermost levels are kept.
const MAX_CARRIED_DEPTH: usize = 64;

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

/// Rank of interval ends among records at one time (see [`Record::rank`]).
const CLOSING_RANK: u8 = 1;

/// `0:1:TASK:THREAD` of a global thread key (`task << 32 | thread`).
fn prefix_of(thread: u64) -> Prefix {
    Prefix::of(thread >> 32, thread & 0xffff_ffff)
}

/// What [`for_each_event`] is given for each event record: time, run thread,
/// whether it ends intervals, and its pairs.
pub type EventVisitor<'v> = dyn FnMut(i64, LocalThread, bool, &[EventPair]) + 'v;

/// Visits the event records of one run in time order (spilled chunks and the
/// records in memory merged; ties by rank, then thread), with the run's thread
/// numbers and the pairs' raw values (name handles unresolved).
pub fn for_each_event(run: &Run, visit: &mut EventVisitor) -> std::io::Result<()> {
    let mut all = Vec::new();
    for_each_record(run, &mut |time, thread, body| {
        if let View::Events { closing, pairs } = body {
            if pairs.shared.is_none() {
                visit(time, thread, *closing, pairs.own);
            } else {
                all.clear();
                all.extend(pairs.iter().copied());
                visit(time, thread, *closing, &all);
            }
        }
    })
}

/// Visits every record of one run in the run's order (spilled chunks and the
/// records in memory merged; ties by rank, then thread, then push order): time,
/// run thread, body.
pub(crate) fn for_each_record(
    run: &Run,
    visit: &mut dyn FnMut(i64, LocalThread, &View),
) -> std::io::Result<()> {
    let threads = run.old_of_new.len().max(run.new_of_old.len()) as u64;
    let cursors = [RunCursor {
        run,
        shift: 0,
        prefixes: Vec::new(),
        order: (0..threads.max(1)).collect(),
        values: RunValues::default(),
    }];
    let mut merger = Merger::new(&cursors, DEFAULT_READ_BUDGET)?;
    let mut visit_record = |m: Merged| visit(m.record.time, m.record.thread, &m.record.body);
    while merger.next(&cursors, &mut visit_record)?.is_some() {}
    Ok(())
}

/// The k-way merge of every run: their records in trace order. Two levels: the
/// streams of one run (its spilled chunks, then its records in memory) are merged
/// by the run's own order, (time, rank, run thread) with ties to the earlier
/// stream, which is the order a stable sort of everything the run pushed gives,
/// however it spilled; the runs are merged by (time on the common clock, rank,
/// global thread), ties to the earlier run. So the output does not depend on how
/// a run was cut into streams (spilled or not, or saved into a part file as one).
struct Merger<'a> {
    runs: Vec<RunStreams<'a>>,
    heap: BinaryHeap<MergeKey>,
}

/// A record as the merge hands it out: its run, its key (time on the common
/// clock, rank, global thread) and the record.
struct Merged<'s> {
    run: usize,
    time: i64,
    rank: u8,
    thread: u64,
    record: Current<'s>,
}

impl<'a> Merger<'a> {
    /// A merge of `cursors` whose chunk readers share `read_budget` bytes of
    /// buffers (each between [`MIN_READ_BUFFER`] and [`READ_BUFFER`]).
    fn new(cursors: &[RunCursor<'a>], read_budget: usize) -> std::io::Result<Self> {
        let chunks: usize = cursors.iter().map(|c| c.run.chunks.len()).sum();
        let buffer = (read_budget / chunks.max(1)).clamp(MIN_READ_BUFFER, READ_BUFFER);
        let mut runs = Vec::new();
        for (run, cursor) in cursors.iter().enumerate() {
            if let Some(streams) = RunStreams::open(run, cursor, buffer)? {
                runs.push(streams);
            }
        }
        let heap = runs
            .iter()
            .enumerate()
            .map(|(slot, r)| r.key(cursors, slot))
            .collect();
        Ok(Merger { runs, heap })
    }

    fn is_done(&self) -> bool {
        self.heap.is_empty()
    }

    /// Hands the next record to `visit` and moves past it; `None` once every
    /// run is done.
    fn next<R>(
        &mut self,
        cursors: &[RunCursor],
        visit: impl FnOnce(Merged) -> R,
    ) -> std::io::Result<Option<R>> {
        // The top is replaced in place (one sift) rather than popped and pushed.
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let Reverse((time, rank, thread, slot)) = *top;
        let run = &mut self.runs[slot];
        let result = visit(Merged {
            run: run.run,
            time,
            rank,
            thread,
            record: run.head().current(&cursors[run.run]),
        });
        if run.advance(&cursors[run.run])? {
            *top = run.key(cursors, slot);
        } else {
            PeekMut::pop(top);
        }
        Ok(Some(result))
    }
}

/// The streams of one run, merged by the run's order.
struct RunStreams<'a> {
    run: usize,
    streams: Vec<Stream<'a>>,
    /// (time, rank, run thread, stream) of each stream's current record; used
    /// only when the run has more than one stream.
    heap: BinaryHeap<Reverse<(i64, u8, LocalThread, usize)>>,
}

impl<'a> RunStreams<'a> {
    /// The run's spilled chunks in spill order, then its blocks in memory;
    /// `None` for a run without records.
    fn open(run: usize, c: &RunCursor<'a>, buffer: usize) -> std::io::Result<Option<Self>> {
        let mut streams = Vec::new();
        for chunk in &c.run.chunks {
            let mut reader = ChunkReader::open(chunk, buffer)?;
            if reader.advance()? {
                streams.push(Stream {
                    source: Source::Disk(reader),
                });
            }
        }
        for (thread, records) in c.run.blocks() {
            if !records.is_empty() {
                let source = Source::Memory {
                    records,
                    thread,
                    pos: 0,
                };
                streams.push(Stream { source });
            }
        }
        if streams.is_empty() {
            return Ok(None);
        }
        let heap = match streams.len() {
            1 => BinaryHeap::new(),
            _ => streams
                .iter()
                .enumerate()
                .map(|(i, s)| s.local_key(c, i))
                .collect(),
        };
        Ok(Some(RunStreams { run, streams, heap }))
    }

    /// The stream whose record comes next in the run's order.
    fn head(&self) -> &Stream<'a> {
        match self.heap.peek() {
            Some(Reverse((.., index))) => &self.streams[*index],
            None => &self.streams[0],
        }
    }

    /// Moves past the head record; `false` once the run is done.
    fn advance(&mut self, c: &RunCursor) -> std::io::Result<bool> {
        let Some(mut top) = self.heap.peek_mut() else {
            return self.streams[0].advance();
        };
        let Reverse((.., index)) = *top;
        if self.streams[index].advance()? {
            *top = self.streams[index].local_key(c, index);
            return Ok(true);
        }
        PeekMut::pop(top);
        Ok(!self.heap.is_empty())
    }

    /// The run's place in the merge of all runs (`slot`: its place among them).
    fn key(&self, cursors: &[RunCursor], slot: usize) -> MergeKey {
        let c = &cursors[self.run];
        let (time, rank, thread) = self.head().position(c);
        Reverse((time + c.shift, rank, c.order[thread as usize], slot))
    }
}

/// A run being merged, with its threads preformatted as `0:1:TASK:THREAD`.
pub(crate) struct RunCursor<'a> {
    run: &'a Run,
    pub(crate) shift: i64,
    pub(crate) prefixes: Vec<Prefix>,
    /// Run thread → position of its global thread in the trace.
    pub(crate) order: Vec<u64>,
    values: HandleValues,
}

impl<'a> RunCursor<'a> {
    fn new(input: &'a MergeInput, values: HandleValues, origin: i64) -> Self {
        let prefixes = input
            .threads
            .iter()
            .map(|t| Prefix::of(u64::from(t.task), u64::from(t.thread)))
            .collect();
        let order = input
            .threads
            .iter()
            .map(|t| (u64::from(t.task) << 32) | u64::from(t.thread))
            .collect();
        RunCursor {
            run: &input.run,
            shift: input.time_offset - origin,
            prefixes,
            order,
            values,
        }
    }
}

impl<'a> RunCursor<'a> {
    /// The run's sorted blocks of records in memory, with their run threads.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = (LocalThread, &'a [Record])> + 'a {
        self.run.blocks()
    }

    /// What the formatter needs of one of the run's in-memory records, of run
    /// thread `thread`.
    pub(crate) fn current(&self, r: &Record, thread: LocalThread) -> Current<'a> {
        Current {
            time: r.time,
            thread,
            rank: r.rank(),
            body: View::of(r.body, &self.run.payload()),
        }
    }

    /// Whether every record of the run is in memory (none spilled).
    fn in_memory(&self) -> bool {
        self.run.chunks.is_empty()
    }

    /// Whether the run's thread numbers follow the threads' places in the trace
    /// (the order keys the producer gave agree with the layout). Then ordering
    /// records that tie on time and kind by run thread, as the run does, or by
    /// place in the trace, as the merge of runs does, is the same.
    fn threads_in_trace_order(&self) -> bool {
        self.order.windows(2).all(|w| w[0] <= w[1])
    }

    /// The value a pair is written with (names resolved to their global value).
    pub(crate) fn values_of(&self, pair: &EventPair) -> i64 {
        match pair.value() {
            Value::Raw(v) => v,
            Value::Name(id) => self.values.value(pair.ty, id),
        }
    }
}

/// Where a stream's records come from: a chunk spilled to disk (producer thread
/// numbers), or a block of the run's in-memory records (of one run thread).
enum Source<'a> {
    Disk(ChunkReader),
    Memory {
        records: &'a [Record],
        thread: LocalThread,
        pos: usize,
    },
}

/// One sorted stream of one run.
struct Stream<'a> {
    source: Source<'a>,
}

/// The record a stream is at, with run thread numbers.
pub(crate) struct Current<'s> {
    pub(crate) time: i64,
    pub(crate) thread: LocalThread,
    pub(crate) rank: u8,
    pub(crate) body: View<'s>,
}

pub(crate) enum View<'s> {
    State {
        end: i64,
        state: u32,
    },
    Events {
        closing: bool,
        pairs: EventPairs<'s>,
    },
    Comm(Comm),
}

/// The pairs of an event record: a list the run shares between records (with
/// its number in the run), then the record's own.
#[derive(Clone, Copy)]
pub(crate) struct EventPairs<'s> {
    pub shared: Option<(u32, &'s [EventPair])>,
    pub own: &'s [EventPair],
}

impl<'s> EventPairs<'s> {
    /// Pairs of the record's own only.
    pub(crate) fn own(own: &'s [EventPair]) -> Self {
        EventPairs { shared: None, own }
    }

    pub(crate) fn len(&self) -> usize {
        self.shared.map_or(0, |(_, s)| s.len()) + self.own.len()
    }

    /// Every pair, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'s EventPair> {
        let shared: &'s [EventPair] = self.shared.map_or(&[], |(_, s)| s);
        shared.iter().chain(self.own.iter())
    }
}

impl<'s> View<'s> {
    /// A record's body, with what it points into.
    pub(crate) fn of(body: Body, payload: &Payload<'s>) -> Self {
        match body {
            Body::State { end, state } => View::State { end, state },
            Body::Events {
                first,
                count,
                shared,
                closing,
            } => {
                let shared = (shared != NO_SHARED).then(|| {
                    let (first, count) = payload.shared[shared as usize];
                    (shared, payload.pairs.get(first, count))
                });
                View::Events {
                    closing,
                    pairs: EventPairs {
                        shared,
                        own: payload.pairs.get(first, count),
                    },
                }
            }
            Body::Comm { index } => View::Comm(payload.comms[index as usize]),
        }
    }
}

impl<'a> Stream<'a> {
    fn current<'s>(&'s self, c: &'s RunCursor) -> Current<'s> {
        match &self.source {
            Source::Memory {
                records,
                thread,
                pos,
            } => c.current(&records[*pos], *thread),
            Source::Disk(reader) => {
                let renumber = |t: LocalThread| c.run.new_of_old[t as usize];
                let body = match reader.body {
                    DecodedBody::State { end, state } => View::State { end, state },
                    DecodedBody::Events { closing } => View::Events {
                        closing,
                        pairs: EventPairs::own(&reader.pairs),
                    },
                    DecodedBody::Comm => View::Comm(Comm {
                        receiver: renumber(reader.comm.receiver),
                        ..reader.comm
                    }),
                };
                Current {
                    time: reader.time,
                    thread: renumber(reader.thread),
                    rank: reader.rank(),
                    body,
                }
            }
        }
    }

    /// Moves to the next record; `false` when the stream is done.
    fn advance(&mut self) -> std::io::Result<bool> {
        match &mut self.source {
            Source::Memory { records, pos, .. } => {
                *pos += 1;
                Ok(*pos < records.len())
            }
            Source::Disk(reader) => reader.advance(),
        }
    }

    /// Time, rank and run thread of the current record (without its body).
    fn position(&self, c: &RunCursor) -> (i64, u8, LocalThread) {
        match &self.source {
            Source::Memory {
                records,
                thread,
                pos,
            } => {
                let r = &records[*pos];
                (r.time, r.rank(), *thread)
            }
            Source::Disk(reader) => (
                reader.time,
                reader.rank(),
                c.run.new_of_old[reader.thread as usize],
            ),
        }
    }

    /// The stream's place in its run's merge: time, rank, run thread, stream.
    fn local_key(&self, c: &RunCursor, index: usize) -> Reverse<(i64, u8, LocalThread, usize)> {
        let (time, rank, thread) = self.position(c);
        Reverse((time, rank, thread, index))
    }
}

/// Merge key of a run: time on the common clock, rank, global thread, then the
/// run's place (runs in canonical order).
type MergeKey = Reverse<(i64, u8, u64, usize)>;

/// Bytes of formatted lines collected before they are written out.
const LINE_BLOCK: usize = 64 * 1024;
/// Records per batch of the parallel merge.
const BATCH_RECORDS: usize = 1 << 14;
/// Segments per thread in a round of the segment merge: a few, so that a
/// thread that finishes early (or writes the previous round) finds work.
const SEGMENTS_PER_THREAD: usize = 4;
/// Event pairs per batch at most (records with many pairs, e.g. GPU metrics, end
/// a batch early), so that a batch and its text stay near 1 MiB each. Batches end
/// where the data says, never where timing does: the output is the same for any
/// thread count (a `.prv.gz` has one gzip member per batch).
const BATCH_PAIRS: usize = 1 << 16;

/// Writes the merged records as lines. Without a cut, the merge gathers batches
/// of records on one thread while other threads format the previous batches;
/// with a cut, records go one by one through the window's bookkeeping.
struct BodyWriter<'a> {
    out: TraceSink<'a>,
    /// Lines of the one-by-one path and of the window's edges, and the tallies.
    lines: LineFormatter,
    catalog: &'a PcfCatalog,
    cut: Option<CutState>,
    batch_records: usize,
    read_budget: usize,
}

impl<'a> BodyWriter<'a> {
    fn new(out: TraceSink<'a>, catalog: &'a PcfCatalog) -> Self {
        BodyWriter {
            out,
            lines: LineFormatter::new(catalog, LINE_BLOCK + 4096),
            catalog,
            cut: None,
            batch_records: BATCH_RECORDS,
            read_budget: DEFAULT_READ_BUDGET,
        }
    }

    fn merge(
        &mut self,
        cursors: &[RunCursor],
        progress: &mut dyn FnMut(u64),
    ) -> std::io::Result<()> {
        if self.cut.is_some() {
            self.merge_cut(cursors, progress)
        } else if !self.out.compresses()
            && cursors
                .iter()
                .all(|c| c.in_memory() && c.threads_in_trace_order())
        {
            // (Not for a `.prv.gz`: its gzip members follow the batches, so that
            // spilling or sharding never changes its bytes. Nor when a run
            // orders its threads otherwise than the trace does: the segments
            // merge by the trace's order only, see `segments`.)
            self.merge_segments(cursors, progress)
        } else {
            self.merge_in_parallel(cursors, progress)
        }
    }

    /// Runs held in memory, plain text: segments of the trace are merged and
    /// formatted on all threads (see [`crate::segments`]) while the previous round's texts are
    /// written, in order.
    fn merge_segments(
        &mut self,
        cursors: &[RunCursor],
        progress: &mut dyn FnMut(u64),
    ) -> std::io::Result<()> {
        let slots = SEGMENTS_PER_THREAD * rayon::current_num_threads().max(1);
        let mut segments = Segmenter::new(cursors, self.batch_records);
        let new_formatters = || -> Vec<LineFormatter> {
            (0..slots)
                .map(|_| LineFormatter::new(self.catalog, 0))
                .collect()
        };
        // Two sets: one formats a round while the other's texts, of the round
        // before, are written.
        let (mut formatting, mut writing) = (new_formatters(), new_formatters());
        let mut to_write = 0;
        let mut merged: u64 = 0;
        let out = &mut self.out;
        loop {
            let round: Vec<Segment> = segments.by_ref().take(slots).collect();
            if round.is_empty() && to_write == 0 {
                break;
            }
            let (written, ()) = rayon::join(
                || write_texts(out, &mut writing[..to_write]),
                || {
                    round
                        .par_iter()
                        .zip(formatting.par_iter_mut())
                        .for_each(|(segment, f)| format_segment(cursors, segment, f))
                },
            );
            written?;
            to_write = round.len();
            std::mem::swap(&mut formatting, &mut writing);
            merged += round.iter().map(Segment::records).sum::<usize>() as u64;
            progress(merged);
        }
        for f in formatting.into_iter().chain(writing) {
            self.lines.absorb(f);
        }
        Ok(())
    }

    /// Gathers round k+1 (on this thread) while round k is formatted (one batch per
    /// worker), then writes round k's bytes in batch order.
    fn merge_in_parallel(
        &mut self,
        cursors: &[RunCursor],
        progress: &mut dyn FnMut(u64),
    ) -> std::io::Result<()> {
        let width = rayon::current_num_threads().max(1);
        let mut gatherer =
            Gatherer::new(Merger::new(cursors, self.read_budget)?, self.batch_records);
        let mut formatters: Vec<LineFormatter> = (0..width)
            .map(|_| LineFormatter::new(self.catalog, 0))
            .collect();
        let mut round = Vec::new();
        let mut next = Vec::new();
        gatherer.fill(cursors, &mut round, width)?;
        let mut ends_open = false;
        let out = &mut self.out;
        // Compressed output: each batch's text is compressed where it was formatted.
        let compress = out.compresses();
        let mut members: Vec<Vec<u8>> = vec![Vec::new(); width];
        while !round.is_empty() {
            let (gathered, written) = rayon::join(
                || gatherer.fill(cursors, &mut next, width),
                || -> std::io::Result<bool> {
                    round
                        .par_iter()
                        .zip(formatters.par_iter_mut())
                        .zip(members.par_iter_mut())
                        .try_for_each(|((batch, f), member)| {
                            batch.format(cursors, f);
                            if compress {
                                *member = gzip_member(f.buf.as_slice())?;
                                f.buf.clear();
                            }
                            Ok::<(), std::io::Error>(())
                        })?;
                    let mut ends_open = false;
                    for (f, member) in formatters.iter_mut().zip(&mut members).take(round.len()) {
                        if compress {
                            out.write_member(std::mem::take(member))?;
                        } else {
                            out.write_all(f.buf.as_slice())?;
                            f.buf.clear();
                        }
                        ends_open = f.open_events.take().is_some();
                    }
                    Ok(ends_open)
                },
            );
            gathered?;
            ends_open = written?;
            progress(gatherer.gathered);
            std::mem::swap(&mut round, &mut next);
        }
        for f in formatters {
            self.lines.absorb(f);
        }
        if ends_open {
            self.lines.end_line();
        }
        self.flush_lines()
    }

    fn merge_cut(
        &mut self,
        cursors: &[RunCursor],
        progress: &mut dyn FnMut(u64),
    ) -> std::io::Result<()> {
        let mut merger = Merger::new(cursors, self.read_budget)?;
        let mut written: u64 = 0;
        while let Some(inside) = merger.next(cursors, |m| self.cut_record(cursors, &m))? {
            if !inside {
                break;
            }
            if self.lines.buf.len() >= LINE_BLOCK {
                self.flush_lines()?;
            }
            written += 1;
            if written.is_multiple_of(PROGRESS_STEP) {
                progress(written);
            }
        }
        self.open_window();
        self.close_window();
        self.lines.end_event_line();
        self.flush_lines()?;
        progress(written);
        Ok(())
    }

    /// Takes one merged record through the window; `false` once past its end.
    fn cut_record(&mut self, cursors: &[RunCursor], m: &Merged) -> bool {
        let cursor = &cursors[m.run];
        match self.cut.as_ref().expect("a cut").phase(m.time, m.rank) {
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
        let cut = self.cut.as_mut().expect("a cut");
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
        let cut = self.cut.as_mut().expect("a cut");
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
        let cut = self.cut.as_mut().expect("a cut");
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
        let end = self.cut.as_ref().expect("a cut").end;
        match r.body {
            View::Events { closing, pairs } => {
                let cut = self.cut.as_mut().expect("a cut");
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

    fn flush_lines(&mut self) -> std::io::Result<()> {
        self.out.write_all(self.lines.buf.as_slice())?;
        self.lines.buf.clear();
        Ok(())
    }

    fn finish(self) -> (TraceSink<'a>, TraceSummary, UsedLabels) {
        let (summary, used) = self.lines.finish();
        (self.out, summary, used)
    }
}

/// Writes the texts of `formatters` in order, emptying their buffers.
fn write_texts(out: &mut TraceSink, formatters: &mut [LineFormatter]) -> std::io::Result<()> {
    for f in formatters {
        out.write_all(f.buf.as_slice())?;
        f.buf.clear();
    }
    Ok(())
}

/// Pops merged records into batches that other threads can format: each batch
/// holds copies of its records' pairs and communications, and the event line
/// left open by the batch before it.
struct Gatherer<'a> {
    merger: Merger<'a>,
    batch_records: usize,
    /// The key of the last record gathered, when it was an event record.
    open_events: Option<EventsKey>,
    gathered: u64,
}

impl<'a> Gatherer<'a> {
    fn new(merger: Merger<'a>, batch_records: usize) -> Self {
        Gatherer {
            merger,
            batch_records: batch_records.max(1),
            open_events: None,
            gathered: 0,
        }
    }

    /// Refills `batches` (reusing their buffers) with up to `count` batches; fewer,
    /// or none, at the end of the merge.
    fn fill(
        &mut self,
        cursors: &[RunCursor],
        batches: &mut Vec<Batch>,
        count: usize,
    ) -> std::io::Result<()> {
        batches.resize_with(count, Batch::default);
        let mut filled = 0;
        while filled < count && !self.merger.is_done() {
            self.fill_batch(cursors, &mut batches[filled])?;
            filled += 1;
        }
        batches.truncate(filled);
        Ok(())
    }

    fn fill_batch(&mut self, cursors: &[RunCursor], batch: &mut Batch) -> std::io::Result<()> {
        batch.clear(self.open_events);
        while batch.items.len() < self.batch_records && batch.pairs.len() < BATCH_PAIRS {
            let gathered = self.merger.next(cursors, |m| {
                batch.push(m.run, m.time, &m.record);
                match m.record.body {
                    View::Events { .. } => Some((m.run, m.record.thread, m.time, m.rank)),
                    _ => None,
                }
            })?;
            let Some(open_events) = gathered else {
                break;
            };
            self.open_events = open_events;
        }
        self.gathered += batch.items.len() as u64;
        Ok(())
    }
}

/// Consecutive merged records, self-contained so that any thread can format them.
#[derive(Default)]
struct Batch {
    items: Vec<BatchItem>,
    pairs: Vec<EventPair>,
    comms: Vec<Comm>,
    /// The event line open before the first item.
    open_events: Option<EventsKey>,
}

struct BatchItem {
    /// Trace time (shifted onto the common clock and rebased).
    time: i64,
    run: usize,
    thread: LocalThread,
    rank: u8,
    body: ItemBody,
}

enum ItemBody {
    State {
        end: i64,
        state: u32,
    },
    Events {
        closing: bool,
        first: u32,
        count: u32,
    },
    Comm {
        index: u32,
    },
}

impl Batch {
    fn clear(&mut self, open_events: Option<EventsKey>) {
        self.items.clear();
        self.pairs.clear();
        self.comms.clear();
        self.open_events = open_events;
    }

    fn push(&mut self, run: usize, time: i64, r: &Current) {
        let body = match r.body {
            View::State { end, state } => ItemBody::State { end, state },
            View::Events { closing, pairs } => {
                let first = self.pairs.len() as u32;
                self.pairs.extend(pairs.iter());
                ItemBody::Events {
                    closing,
                    first,
                    count: pairs.len() as u32,
                }
            }
            View::Comm(comm) => {
                self.comms.push(comm);
                ItemBody::Comm {
                    index: self.comms.len() as u32 - 1,
                }
            }
        };
        self.items.push(BatchItem {
            time,
            run,
            thread: r.thread,
            rank: r.rank,
            body,
        });
    }

    fn format(&self, cursors: &[RunCursor], f: &mut LineFormatter) {
        f.open_events = self.open_events;
        for item in &self.items {
            let body = match item.body {
                ItemBody::State { end, state } => View::State { end, state },
                ItemBody::Events {
                    closing,
                    first,
                    count,
                } => View::Events {
                    closing,
                    pairs: EventPairs::own(&self.pairs[first as usize..(first + count) as usize]),
                },
                ItemBody::Comm { index } => View::Comm(self.comms[index as usize]),
            };
            let current = Current {
                time: item.time,
                thread: item.thread,
                rank: item.rank,
                body,
            };
            f.record(&cursors[item.run], item.run, &current, item.time);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{NodeInfo, TaskInfo};
    use crate::pcf::{EventTypeInfo, StateInfo, ValueLabels};
    use crate::run::RunBuilder;
    use crate::spill::{MemoryBudget, SpillPolicy};
    use paraver_reader::validate::validate_trace;

    const RANGE: u32 = 100;
    const MARK: u32 = 200;
    const SAMPLE: u32 = 300;

    fn layout() -> TraceLayout {
        TraceLayout {
            application: "app".into(),
            date: "01/01/2026 at 00:00".into(),
            nodes: vec![NodeInfo {
                name: "n".into(),
                cpus: 1,
            }],
            tasks: vec![TaskInfo {
                name: "t".into(),
                node: 0,
                threads: vec!["a".into(), "b".into()],
            }],
        }
    }

    fn catalog() -> PcfCatalog {
        PcfCatalog {
            states: (0..2)
                .map(|id| StateInfo {
                    id,
                    label: format!("S{id}"),
                    color: (1, 2, 3),
                })
                .collect(),
            types: [
                (RANGE, Timing::Interval),
                (MARK, Timing::Point),
                (SAMPLE, Timing::Level),
            ]
            .into_iter()
            .map(|(ty, timing)| {
                EventTypeInfo::new(ty, &format!("type {ty}"), ValueLabels::Numeric, timing)
            })
            .collect(),
        }
    }

    /// A run builder, spilling in tiny chunks into `spill` when given.
    fn builder(spill: Option<&std::path::Path>) -> RunBuilder {
        match spill {
            Some(dir) => RunBuilder::with_spill(SpillPolicy {
                dir: dir.to_path_buf(),
                chunk_bytes: 64,
                budget: MemoryBudget::new(0),
            }),
            None => RunBuilder::new(),
        }
    }

    /// Thread 0: ranges 5 over [0,100) and 6 over [20,60) nested in it, state 1
    /// over [0,100), a mark at 30, samples 7 at 10 and 9 at 50; thread 1: state 1
    /// over [40,45); messages 0→1 at 40→45 (inside) and 10→70 (straddling).
    fn run(spill: Option<&std::path::Path>) -> Run {
        let mut b = builder(spill);
        b.add_thread(0);
        b.add_thread(1);
        b.interval(0, 0, 100, &[EventPair::raw(RANGE, 5)]);
        b.interval(0, 20, 60, &[EventPair::raw(RANGE, 6)]);
        b.state(0, 0, 100, 1);
        b.state(1, 40, 45, 1);
        b.events(0, 30, &[EventPair::raw(MARK, 3)]);
        b.events(0, 10, &[EventPair::raw(SAMPLE, 7)]);
        b.events(0, 50, &[EventPair::raw(SAMPLE, 9)]);
        for (send, recv) in [(40, 45), (10, 70)] {
            let comm = Comm {
                send_physical: send,
                receiver: 1,
                recv_logical: recv,
                recv_physical: recv,
                size: 8,
                tag: 1,
            };
            b.comm(0, send, comm);
        }
        b.finish().unwrap()
    }

    fn write_cut(dir: &std::path::Path, name: &str, run: Run, window: TimeWindow) -> String {
        let paths = OutputPaths::for_trace(&dir.join(format!("{name}.prv"))).unwrap();
        let inputs = [MergeInput {
            run,
            time_offset: 1000,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let cut = Cut { window };
        let summary = write_trace_cut(
            &paths,
            &layout(),
            &inputs,
            &catalog(),
            Some(&cut),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(summary.origin, window.start.max(1000));
        let report = validate_trace(&paths.prv).unwrap();
        let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        std::fs::read_to_string(&paths.prv).unwrap()
    }

    fn body(text: &str) -> Vec<&str> {
        text.lines().skip(1).collect()
    }

    /// Thread 0: three event records at time 20 (one line) and two at 60, ends
    /// and begins; thread 1: a state and a range. Spilled in tiny chunks if asked.
    fn joined_lines_run(spill: Option<&std::path::Path>) -> Run {
        let mut b = builder(spill);
        b.add_thread(0);
        b.add_thread(1);
        b.events(0, 20, &[EventPair::raw(SAMPLE, 1)]);
        b.events(0, 20, &[EventPair::raw(MARK, 2)]);
        let range = b.shared_pairs(&[EventPair::raw(RANGE, 5)]);
        b.interval_shared(0, 20, 60, range, &[EventPair::raw(SAMPLE, 3)]);
        b.interval(0, 60, 90, &[EventPair::raw(RANGE, 6)]);
        b.state(1, 0, 90, 1);
        b.interval(1, 20, 30, &[EventPair::raw(RANGE, 4)]);
        b.finish().unwrap()
    }

    /// Writes `joined_lines_run` on a pool of `threads` with `batch` records per
    /// batch; returns the file's bytes (compressed for `.prv.gz`) and its text.
    fn write_batched(
        dir: &std::path::Path,
        threads: usize,
        batch: usize,
        gzip: bool,
        spill: bool,
    ) -> (Vec<u8>, String) {
        let name = format!(
            "t{threads}b{batch}s{spill}.prv{}",
            if gzip { ".gz" } else { "" }
        );
        let paths = OutputPaths::for_trace(&dir.join(name)).unwrap();
        let inputs = [MergeInput {
            run: joined_lines_run(spill.then_some(dir)),
            time_offset: 0,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let summary = pool
            .install(|| {
                write_trace_batched(
                    &paths,
                    &layout(),
                    &inputs,
                    &catalog(),
                    None,
                    Batching {
                        records: batch,
                        read_budget: DEFAULT_READ_BUDGET,
                    },
                    &mut |_| {},
                )
            })
            .unwrap();
        let bytes = std::fs::read(&paths.prv).unwrap();
        let mut text = String::new();
        if gzip {
            std::io::Read::read_to_string(
                &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
                &mut text,
            )
            .unwrap();
        } else {
            text = String::from_utf8(bytes.clone()).unwrap();
        }
        assert_eq!(
            summary.lines as usize,
            body(&text).len(),
            "{threads} threads, batch {batch}"
        );
        (bytes, text)
    }

    /// Any batch size, thread count, spilling, and compression give the same
    /// text, event lines that straddle a batch boundary included; a `.prv.gz` has
    /// the same bytes whatever the thread count.
    #[test]
    fn batches_and_threads_do_not_change_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let (_, whole) = write_batched(dir.path(), 1, 1 << 14, false, false);
        assert!(whole.contains(":20:300:1:200:2:100:5:300:3\n"), "{whole}");
        for batch in [1, 2, 3, 4, 1 << 14] {
            let (gz_one_thread, _) = write_batched(dir.path(), 1, batch, true, false);
            for threads in [1, 3, 8] {
                for spill in [false, true] {
                    let (_, text) = write_batched(dir.path(), threads, batch, false, spill);
                    assert_eq!(
                        text, whole,
                        "{threads} threads, batch {batch}, spill {spill}"
                    );
                    let (gz, text) = write_batched(dir.path(), threads, batch, true, spill);
                    assert_eq!(text, whole, "gzip, {threads} threads, batch {batch}");
                    assert!(
                        gz == gz_one_thread,
                        "gzip bytes, {threads} threads, batch {batch}"
                    );
                }
            }
        }
    }

    /// Two runs whose records interleave and tie (same times, threads that come
    /// before and after the other run's), merged from memory in segments of any
    /// size on any number of threads and from spilled chunks record by record:
    /// the same text.
    #[test]
    fn segments_merge_interleaved_runs_as_the_record_by_record_merge_does() {
        let dir = tempfile::tempdir().unwrap();
        let two_runs = |spill: bool| -> Vec<MergeInput> {
            (0..2u32)
                .map(|r| {
                    let mut b = builder(spill.then_some(dir.path()));
                    b.add_thread(0);
                    b.add_thread(1);
                    for i in 0..40i64 {
                        let t = i * 10 + i64::from(r) * (i % 3);
                        // Shared lists (written from a cache once formatted) with
                        // and without pairs of their own.
                        let range = b.shared_pairs(&[EventPair::raw(RANGE, 1 + i % 4)]);
                        let own = [EventPair::raw(SAMPLE, i)];
                        b.interval_shared(0, t, t + 10, range, &own[..(i % 2) as usize]);
                        b.events(1, t, &[EventPair::raw(MARK, i)]);
                        b.state(1, t, t + 5, 1);
                    }
                    MergeInput {
                        run: b.finish().unwrap(),
                        time_offset: 1000,
                        // Run 0's threads are the 1st and 3rd of the task, run 1's the 2nd and 4th.
                        threads: (0..2)
                            .map(|t| GlobalThread {
                                task: 0,
                                thread: 2 * t + r,
                            })
                            .collect(),
                    }
                })
                .collect()
        };
        let layout = TraceLayout {
            tasks: vec![TaskInfo {
                name: "t".into(),
                node: 0,
                threads: (0..4).map(|t| format!("{t}")).collect(),
            }],
            ..layout()
        };
        let write = |name: &str, spill: bool, threads: usize, batch: usize| -> String {
            let paths = OutputPaths::for_trace(&dir.path().join(name)).unwrap();
            let inputs = two_runs(spill);
            assert_eq!(inputs.iter().all(|i| i.run.chunks.is_empty()), !spill);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let batching = Batching {
                records: batch,
                read_budget: DEFAULT_READ_BUDGET,
            };
            pool.install(|| {
                write_trace_batched(
                    &paths,
                    &layout,
                    &inputs,
                    &catalog(),
                    None,
                    batching,
                    &mut |_| {},
                )
            })
            .unwrap();
            std::fs::read_to_string(&paths.prv).unwrap()
        };
        let record_by_record = write("spilled.prv", true, 1, 1 << 14);
        // Per run and step: a range begin (with the end of the one before when
        // they meet), a mark, a state; the last range's end.
        assert!(body(&record_by_record).len() > 2 * 40 * 3);
        for batch in [1, 2, 3, 7, 50, 1 << 14] {
            for threads in [1, 2, 3] {
                let segments = write(&format!("m{batch}t{threads}.prv"), false, threads, batch);
                assert_eq!(
                    segments, record_by_record,
                    "batch {batch}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn a_cut_clips_every_record_to_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let window = TimeWindow {
            start: 1030,
            end: 1080,
        };
        let text = write_cut(dir.path(), "cut", run(None), window);
        assert!(text.starts_with("#Paraver ("), "{text}");
        assert!(text.lines().next().unwrap().contains("):50_ns:"), "{text}");
        assert_eq!(
            body(&text),
            [
                // Re-opened at the start: outer range and last sample, then the inner range.
                "2:0:1:1:1:0:100:5:300:7",
                "2:0:1:1:1:0:100:6",
                "1:0:1:1:1:0:50:1",
                // The mark at the start is inside; the 10→70 message is not.
                "2:0:1:1:1:0:200:3",
                "3:0:1:1:1:10:10:0:1:1:2:15:15:8:1",
                "1:0:1:1:2:10:15:1",
                "2:0:1:1:1:20:300:9",
                "2:0:1:1:1:30:100:0",
                // The outer range ends at the window's end.
                "2:0:1:1:1:50:100:0",
            ]
        );
        // Spilled runs cut the same.
        let spilled = write_cut(dir.path(), "spilled", run(Some(dir.path())), window);
        assert_eq!(body(&spilled), body(&text));
    }

    #[test]
    fn ends_at_the_start_are_not_written_and_begins_at_the_end_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        // [60, 100): the inner range ended at 60; the outer one is still open.
        let text = write_cut(
            dir.path(),
            "late",
            run(None),
            TimeWindow {
                start: 1060,
                end: 1100,
            },
        );
        assert_eq!(
            body(&text),
            [
                "2:0:1:1:1:0:100:5:300:9",
                "1:0:1:1:1:0:40:1",
                "2:0:1:1:1:40:100:0",
            ]
        );
        // [0, 20): the inner range begins exactly at the end and is left out.
        let text = write_cut(
            dir.path(),
            "early",
            run(None),
            TimeWindow {
                start: 900,
                end: 1020,
            },
        );
        assert!(text.lines().next().unwrap().contains("):20_ns:"), "{text}");
        assert_eq!(
            body(&text),
            [
                "2:0:1:1:1:0:100:5",
                "1:0:1:1:1:0:20:1",
                "2:0:1:1:1:10:300:7",
                "2:0:1:1:1:20:100:0",
            ]
        );
    }

    #[test]
    fn a_window_outside_the_trace_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let paths = OutputPaths::for_trace(&dir.path().join("x.prv")).unwrap();
        let inputs = [MergeInput {
            run: run(None),
            time_offset: 0,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let cut = Cut {
            window: TimeWindow {
                start: 500,
                end: 600,
            },
        };
        let err = write_trace_cut(
            &paths,
            &layout(),
            &inputs,
            &catalog(),
            Some(&cut),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::EmptyWindow { .. }), "{err}");
    }

    #[test]
    fn events_of_a_run_are_visited_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        for spill in [None, Some(dir.path())] {
            let run = run(spill);
            let mut seen = Vec::new();
            for_each_event(&run, &mut |time, thread, closing, pairs| {
                seen.push((time, thread, closing, pairs[0].ty));
            })
            .unwrap();
            assert_eq!(
                seen,
                [
                    (0, 0, false, RANGE),
                    (10, 0, false, SAMPLE),
                    (20, 0, false, RANGE),
                    (30, 0, false, MARK),
                    (50, 0, false, SAMPLE),
                    (60, 0, true, RANGE),
                    (100, 0, true, RANGE),
                ]
            );
        }
    }
}
