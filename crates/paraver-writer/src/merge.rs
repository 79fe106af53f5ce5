//! The k-way merge of sorted runs into the `.prv` body, then the `.pcf` and `.row`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use rustc_hash::FxHashSet;

use crate::layout::{GlobalThread, TraceLayout};
use crate::names::{assign_values, HandleValues};
use crate::output::{OutputPaths, PendingFile, TraceSink};
use crate::pcf::{PcfCatalog, UsedLabels};
use crate::record::{Body, Comm, EventPair, LocalThread, Record, Value};
use crate::run::Run;
use crate::spill::{ChunkReader, DecodedBody};
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
}

/// How often (in records) the progress callback is told.
pub const PROGRESS_STEP: u64 = 1 << 20;

/// Writes the `.prv` (merging `inputs`, which must be in canonical order: ties
/// between runs go to the earlier one), the `.pcf` and the `.row`, and renames them
/// into place only when all three are complete.
pub fn write_trace(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    let (origin, end) = time_span(inputs).ok_or(WriteError::EmptyTrace)?;
    let reserved = |ty: u32| catalog.fixed_values_of(ty);
    let (global_names, handle_values) =
        assign_values(inputs.iter().map(|i| &i.run.names), &reserved);

    let prv_file = PendingFile::create(&paths.prv)?;
    let mut body = BodyWriter::new(TraceSink::new(prv_file.file(), paths.gzip), catalog);
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
    summary.origin = origin;
    summary.end_time = end_time;

    let pcf_file = PendingFile::create(&paths.pcf)?;
    let mut pcf = std::io::BufWriter::new(pcf_file.file());
    catalog
        .write(&mut pcf, &used, &global_names)
        .and_then(|_| pcf.flush())
        .map_err(|e| WriteError::io(&paths.pcf, e))?;
    drop(pcf);
    let row_file = PendingFile::create(&paths.row)?;
    let mut row = std::io::BufWriter::new(row_file.file());
    layout
        .write_row(&mut row)
        .and_then(|_| row.flush())
        .map_err(|e| WriteError::io(&paths.row, e))?;
    drop(row);

    pcf_file.commit()?;
    row_file.commit()?;
    prv_file.commit()?;
    Ok(summary)
}

/// (origin, end) on the common clock: the origin is the earliest session start or
/// record, so the trace starts at 0 and no time is negative.
fn time_span(inputs: &[MergeInput]) -> Option<(i64, i64)> {
    let non_empty = inputs.iter().filter(|i| !i.run.is_empty());
    let origin = non_empty
        .clone()
        .map(|i| i.time_offset.min(i.run.min_time + i.time_offset))
        .min()?;
    let end = non_empty.map(|i| i.run.max_time + i.time_offset).max()?;
    Some((origin, end))
}

/// A run being merged, with its threads preformatted as `0:1:TASK:THREAD`.
struct RunCursor<'a> {
    run: &'a Run,
    shift: i64,
    prefixes: Vec<Vec<u8>>,
    /// Run thread → position of its global thread in the trace.
    order: Vec<u64>,
    values: HandleValues,
}

impl<'a> RunCursor<'a> {
    fn new(input: &'a MergeInput, values: HandleValues, origin: i64) -> Self {
        let prefixes = input
            .threads
            .iter()
            .map(|t| format!("0:1:{}:{}", t.task + 1, t.thread + 1).into_bytes())
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

/// Where a stream's records come from: a chunk spilled to disk (producer thread
/// numbers), or the run's in-memory records (run thread numbers).
enum Source<'a> {
    Disk(ChunkReader),
    Memory { records: &'a [Record], pos: usize },
}

/// One sorted stream of one run.
struct Stream<'a> {
    run: usize,
    source: Source<'a>,
}

/// The record a stream is at, with run thread numbers.
struct Current<'s> {
    time: i64,
    thread: LocalThread,
    rank: u8,
    body: View<'s>,
}

enum View<'s> {
    State {
        end: i64,
        state: u32,
    },
    Events {
        closing: bool,
        pairs: &'s [EventPair],
    },
    Comm(Comm),
}

impl<'a> Stream<'a> {
    /// The streams of every run: its spilled chunks in spill order, then its
    /// in-memory records, so ties within a thread keep push order.
    fn all(cursors: &[RunCursor<'a>]) -> std::io::Result<Vec<Stream<'a>>> {
        let mut streams = Vec::new();
        for (run, c) in cursors.iter().enumerate() {
            for chunk in &c.run.chunks {
                let mut reader = ChunkReader::open(chunk)?;
                if reader.advance()? {
                    streams.push(Stream {
                        run,
                        source: Source::Disk(reader),
                    });
                }
            }
            if !c.run.records.is_empty() {
                let source = Source::Memory {
                    records: &c.run.records,
                    pos: 0,
                };
                streams.push(Stream { run, source });
            }
        }
        Ok(streams)
    }

    fn current<'s>(&'s self, c: &'s RunCursor) -> Current<'s> {
        match &self.source {
            Source::Memory { records, pos } => {
                let r = &records[*pos];
                let body = match r.body {
                    Body::State { end, state } => View::State { end, state },
                    Body::Events {
                        first,
                        count,
                        closing,
                    } => View::Events {
                        closing,
                        pairs: c.run.pairs_of(first, count),
                    },
                    Body::Comm { index } => View::Comm(c.run.comms[index as usize]),
                };
                Current {
                    time: r.time,
                    thread: r.thread,
                    rank: r.rank(),
                    body,
                }
            }
            Source::Disk(reader) => {
                let renumber = |t: LocalThread| c.run.new_of_old[t as usize];
                let body = match reader.body {
                    DecodedBody::State { end, state } => View::State { end, state },
                    DecodedBody::Events { closing } => View::Events {
                        closing,
                        pairs: &reader.pairs,
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
            Source::Memory { records, pos } => {
                *pos += 1;
                Ok(*pos < records.len())
            }
            Source::Disk(reader) => reader.advance(),
        }
    }

    fn key(&self, cursors: &[RunCursor], index: usize) -> MergeKey {
        let c = &cursors[self.run];
        let r = self.current(c);
        Reverse((r.time + c.shift, r.rank, c.order[r.thread as usize], index))
    }
}

/// Merge key: time, rank, global thread, then the stream (runs in canonical
/// order, a run's chunks in push order).
type MergeKey = Reverse<(i64, u8, u64, usize)>;

/// Formats records into lines with one reused buffer; joins events of one thread
/// and time into one line.
struct BodyWriter<'a> {
    out: TraceSink<'a>,
    line: Vec<u8>,
    /// (run, thread, time, rank) of the event line still open in `line`.
    open_events: Option<(usize, u32, i64, u8)>,
    summary: TraceSummary,
    states: FxHashSet<u32>,
    types: FxHashSet<u32>,
    recent_types: [(u32, u16); RECENT_TYPES],
    fixed: Vec<(u32, FxHashSet<i64>)>,
}

const RECENT_TYPES: usize = 64;
const NOT_FIXED: u16 = u16::MAX;

impl<'a> BodyWriter<'a> {
    fn new(out: TraceSink<'a>, catalog: &PcfCatalog) -> Self {
        BodyWriter {
            out,
            line: Vec::with_capacity(256),
            open_events: None,
            summary: TraceSummary::default(),
            states: FxHashSet::default(),
            types: FxHashSet::default(),
            recent_types: [(u32::MAX, NOT_FIXED); RECENT_TYPES],
            fixed: catalog
                .fixed_types()
                .map(|t| (t, FxHashSet::default()))
                .collect(),
        }
    }

    fn merge(
        &mut self,
        cursors: &[RunCursor],
        progress: &mut dyn FnMut(u64),
    ) -> std::io::Result<()> {
        let mut streams = Stream::all(cursors)?;
        let mut heap: BinaryHeap<MergeKey> = streams
            .iter()
            .enumerate()
            .map(|(i, s)| s.key(cursors, i))
            .collect();
        let mut written: u64 = 0;
        while let Some(Reverse((time, _, _, index))) = heap.pop() {
            let stream = &streams[index];
            let cursor = &cursors[stream.run];
            let current = stream.current(cursor);
            self.record(cursor, stream.run, &current, time)?;
            if streams[index].advance()? {
                heap.push(streams[index].key(cursors, index));
            }
            written += 1;
            if written.is_multiple_of(PROGRESS_STEP) {
                progress(written);
            }
        }
        self.end_event_line()?;
        progress(written);
        Ok(())
    }

    fn record(
        &mut self,
        c: &RunCursor,
        run_index: usize,
        r: &Current,
        time: i64,
    ) -> std::io::Result<()> {
        let prefix = &c.prefixes[r.thread as usize];
        match r.body {
            View::Events { closing, pairs } => {
                let key = (run_index, r.thread, time, r.rank);
                if self.open_events != Some(key) {
                    self.end_event_line()?;
                    self.line.extend_from_slice(b"2:");
                    self.line.extend_from_slice(prefix);
                    push_int(&mut self.line, time);
                    self.open_events = Some(key);
                }
                for pair in pairs {
                    let value = if closing { 0 } else { self.value_of(c, pair) };
                    self.note_type(pair.ty, value);
                    push_int(&mut self.line, pair.ty as i64);
                    push_int(&mut self.line, value);
                    self.summary.events += 1;
                }
                Ok(())
            }
            View::State { end, state } => {
                self.end_event_line()?;
                self.line.extend_from_slice(b"1:");
                self.line.extend_from_slice(prefix);
                push_int(&mut self.line, time);
                push_int(&mut self.line, end + c.shift);
                push_int(&mut self.line, state as i64);
                self.states.insert(state);
                self.summary.states += 1;
                self.end_line()
            }
            View::Comm(comm) => {
                self.end_event_line()?;
                self.line.extend_from_slice(b"3:");
                self.line.extend_from_slice(prefix);
                push_int(&mut self.line, time);
                push_int(&mut self.line, comm.send_physical + c.shift);
                self.line.push(b':');
                self.line
                    .extend_from_slice(&c.prefixes[comm.receiver as usize]);
                for v in [
                    comm.recv_logical + c.shift,
                    comm.recv_physical + c.shift,
                    comm.size,
                    comm.tag,
                ] {
                    push_int(&mut self.line, v);
                }
                self.summary.comms += 1;
                self.end_line()
            }
        }
    }

    fn value_of(&self, c: &RunCursor, pair: &EventPair) -> i64 {
        match pair.value {
            Value::Raw(v) => v,
            Value::Name(id) => c.values.value(pair.ty, id),
        }
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

    fn end_event_line(&mut self) -> std::io::Result<()> {
        if self.open_events.take().is_some() {
            self.end_line()?;
        }
        Ok(())
    }

    fn end_line(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.line.clear();
        self.summary.lines += 1;
        Ok(())
    }

    fn finish(self) -> (TraceSink<'a>, TraceSummary, UsedLabels) {
        let used = UsedLabels {
            states: self.states.into_iter().collect(),
            types: self.types.into_iter().collect(),
            fixed_values: self
                .fixed
                .into_iter()
                .map(|(t, s)| (t, s.into_iter().collect()))
                .collect(),
        };
        (self.out, self.summary, used)
    }
}

/// Appends `:` and the decimal number.
fn push_int(line: &mut Vec<u8>, v: i64) {
    let mut buf = itoa::Buffer::new();
    line.push(b':');
    line.extend_from_slice(buf.format(v).as_bytes());
}
