//! The k-way merge of runs, record by record, on loser trees
//! ([`crate::loser_tree`]): what the gathering and cut writers read, and how a
//! run alone is read in its order (to save it, or to find its cut's ranges).

use crate::cursor::{places_in_trace, RunCursor, Stream};
use crate::loser_tree::{merge_key, unpack_key, LoserTree, DONE};
use crate::record::{EventPair, LocalThread};
use crate::run::Run;
use crate::spill::{ChunkReader, MIN_READ_BUFFER, READ_BUFFER};
use crate::view::{Current, View};

/// Read buffers of the merge when the caller sets no budget.
pub(crate) const DEFAULT_READ_BUDGET: usize = 256 << 20;

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
    let cursors = [RunCursor::alone(run)];
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
/// place of the thread in the trace), ties to the earlier run. So the output does
/// not depend on how a run was cut into streams (spilled or not, or saved into a
/// part file as one).
pub(crate) struct Merger<'a> {
    /// The runs with records, in run order (their slots in `tree`).
    runs: Vec<RunStreams<'a>>,
    /// Each run's key at its next record.
    tree: LoserTree,
}

/// A record as the merge hands it out: its run, its key (time on the common
/// clock, rank, global thread) and the record.
pub(crate) struct Merged<'s> {
    pub(crate) run: usize,
    pub(crate) time: i64,
    pub(crate) rank: u8,
    pub(crate) thread: u64,
    pub(crate) record: Current<'s>,
}

impl<'a> Merger<'a> {
    /// A merge of `cursors` whose chunk readers share `read_budget` bytes of
    /// buffers (each between [`MIN_READ_BUFFER`] and [`READ_BUFFER`]).
    pub(crate) fn new(cursors: &[RunCursor<'a>], read_budget: usize) -> std::io::Result<Self> {
        let chunks: usize = cursors.iter().map(|c| c.run.chunks.len()).sum();
        let buffer = (read_budget / chunks.max(1)).clamp(MIN_READ_BUFFER, READ_BUFFER);
        let mut runs = Vec::new();
        for (run, (cursor, places)) in cursors.iter().zip(places_in_trace(cursors)).enumerate() {
            if let Some(streams) = RunStreams::open(run, cursor, places, buffer)? {
                runs.push(streams);
            }
        }
        let keys = runs
            .iter()
            .enumerate()
            .map(|(slot, r)| r.key(&cursors[r.run], slot));
        let tree = LoserTree::new(keys);
        Ok(Merger { runs, tree })
    }

    pub(crate) fn is_done(&self) -> bool {
        self.tree.winner().is_none()
    }

    /// Hands the next record to `visit` and moves past it; `None` once every
    /// run is done.
    #[inline]
    pub(crate) fn next<R>(
        &mut self,
        cursors: &[RunCursor],
        visit: impl FnOnce(Merged) -> R,
    ) -> std::io::Result<Option<R>> {
        let Some(slot) = self.tree.winner() else {
            return Ok(None);
        };
        let run = &mut self.runs[slot];
        let c = &cursors[run.run];
        let record = run.head().current(c);
        let result = visit(Merged {
            run: run.run,
            time: record.time + c.shift,
            rank: record.rank,
            thread: c.order[record.thread as usize],
            record,
        });
        let key = if run.advance(c)? {
            run.key(c, slot)
        } else {
            DONE
        };
        self.tree.replace_winner(key);
        Ok(Some(result))
    }
}

/// The streams of one run, merged by the run's order.
struct RunStreams<'a> {
    run: usize,
    /// The place in the trace of each run thread (see [`places_in_trace`]).
    places: Vec<u32>,
    streams: Vec<Stream<'a>>,
    /// Each stream's key (time, rank, run thread, stream) at its current record;
    /// `None` for a run of one stream.
    tree: Option<LoserTree>,
    /// The stream whose record comes next in the run's order.
    head: usize,
}

impl<'a> RunStreams<'a> {
    /// The run's spilled chunks in spill order, then its blocks in memory;
    /// `None` for a run without records.
    fn open(
        run: usize,
        c: &RunCursor<'a>,
        places: Vec<u32>,
        buffer: usize,
    ) -> std::io::Result<Option<Self>> {
        let mut streams = Vec::new();
        for chunk in &c.run.chunks {
            streams.extend(Stream::of_chunk(ChunkReader::open(chunk, buffer)?)?);
        }
        for (thread, records) in c.blocks() {
            streams.extend(Stream::of_block(thread, records));
        }
        if streams.is_empty() {
            return Ok(None);
        }
        let tree = (streams.len() > 1).then(|| {
            let keys = streams.iter().enumerate().map(|(i, s)| stream_key(s, c, i));
            LoserTree::new(keys)
        });
        let head = tree.as_ref().and_then(LoserTree::winner).unwrap_or(0);
        Ok(Some(RunStreams {
            run,
            places,
            streams,
            tree,
            head,
        }))
    }

    /// The stream whose record comes next in the run's order.
    #[inline]
    fn head(&self) -> &Stream<'a> {
        &self.streams[self.head]
    }

    /// Moves past the head record; `false` once the run is done.
    #[inline]
    fn advance(&mut self, c: &RunCursor) -> std::io::Result<bool> {
        let stream = &mut self.streams[self.head];
        let more = stream.advance()?;
        let Some(tree) = &mut self.tree else {
            return Ok(more);
        };
        tree.replace_winner(if more {
            stream_key(stream, c, self.head)
        } else {
            DONE
        });
        match tree.winner() {
            Some(head) => {
                self.head = head;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The run's key in the merge of all runs at its head record: time on the
    /// common clock, rank, the thread's place in the trace, then `slot` (its
    /// place among the runs).
    #[inline]
    fn key(&self, c: &RunCursor, slot: usize) -> u128 {
        let (time, rank, thread) = match &self.tree {
            // The head's position, from its key in the run's merge.
            Some(tree) => {
                let (time, rank, thread, _) = unpack_key(tree.winner_key());
                (time, rank, thread)
            }
            None => self.head().position(c),
        };
        merge_key(time + c.shift, rank, self.places[thread as usize], slot)
    }
}

/// A stream's key in its run's merge: time, rank, run thread (the run's
/// threads are numbered in its order), then the stream's index.
#[inline]
fn stream_key(stream: &Stream, c: &RunCursor, index: usize) -> u128 {
    let (time, rank, thread) = stream.position(c);
    merge_key(time, rank, thread, index)
}
