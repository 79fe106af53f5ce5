//! Runs as the merge reads them: a run placed in the trace (its clock shift, its
//! threads' prefixes and places, its names' values), and the sorted streams its
//! records come in (spilled chunks read back, blocks in memory).

use crate::layout::GlobalThread;
use crate::names::HandleValues;
use crate::record::{Comm, EventPair, LocalThread, Record, Value, NO_SHARED};
use crate::run::Run;
use crate::spill::{ChunkReader, DecodedBody};
use crate::text::Prefix;
use crate::view::{Current, EventPairs, View};

/// A run being merged, with its threads preformatted as `0:1:TASK:THREAD`.
pub(crate) struct RunCursor<'a> {
    pub(crate) run: &'a Run,
    pub(crate) shift: i64,
    pub(crate) prefixes: Vec<Prefix>,
    /// Run thread → position of its global thread in the trace.
    pub(crate) order: Vec<u64>,
    values: HandleValues,
}

impl<'a> RunCursor<'a> {
    /// `run` in a trace whose time 0 is `origin` on the common clock: its times
    /// shifted by `time_offset`, its threads the trace's `threads`, its names
    /// written with `values`.
    pub(crate) fn new(
        run: &'a Run,
        time_offset: i64,
        threads: &[GlobalThread],
        values: HandleValues,
        origin: i64,
    ) -> Self {
        let prefixes = threads
            .iter()
            .map(|t| Prefix::of(u64::from(t.task), u64::from(t.thread)))
            .collect();
        let order = threads
            .iter()
            .map(|t| (u64::from(t.task) << 32) | u64::from(t.thread))
            .collect();
        RunCursor {
            run,
            shift: time_offset - origin,
            prefixes,
            order,
            values,
        }
    }

    /// `run` on its own: its own clock, its threads in its order, names as
    /// handles (nothing to format with).
    pub(crate) fn alone(run: &'a Run) -> Self {
        let threads = run.old_of_new.len().max(run.new_of_old.len()) as u64;
        RunCursor {
            run,
            shift: 0,
            prefixes: Vec::new(),
            order: (0..threads.max(1)).collect(),
            values: HandleValues::default(),
        }
    }

    /// The run's sorted blocks of records in memory, with their run threads.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = (LocalThread, &'a [Record])> + 'a {
        self.run.blocks()
    }

    /// What the formatter needs of one of the run's in-memory records, of run
    /// thread `thread`.
    #[inline]
    pub(crate) fn current(&self, r: &Record, thread: LocalThread) -> Current<'a> {
        Current {
            time: r.time,
            thread,
            rank: r.rank(),
            body: View::of(r.body, &self.run.payload()),
        }
    }

    /// Whether every record of the run is in memory (none spilled).
    pub(crate) fn in_memory(&self) -> bool {
        self.run.chunks.is_empty()
    }

    /// Whether the run's thread numbers follow the threads' places in the trace
    /// (the order keys the producer gave agree with the layout). Then ordering
    /// records that tie on time and kind by run thread, as the run does, or by
    /// place in the trace, as the merge of runs does, is the same.
    pub(crate) fn threads_in_trace_order(&self) -> bool {
        self.order.windows(2).all(|w| w[0] <= w[1])
    }

    /// The value a pair is written with (names resolved to their global value).
    #[inline]
    pub(crate) fn values_of(&self, pair: &EventPair) -> i64 {
        match pair.value() {
            Value::Raw(v) => v,
            Value::Name(id) => self.values.value(pair.ty, id),
        }
    }
}

/// The place in the trace of each thread of each run (`[run][run thread]`):
/// the threads of all runs numbered densely in the trace's order, so that a
/// merge key holds one in 32 bits (see [`crate::loser_tree::merge_key`]).
pub(crate) fn places_in_trace(cursors: &[RunCursor]) -> Vec<Vec<u32>> {
    let mut places: Vec<u64> = cursors
        .iter()
        .flat_map(|c| c.order.iter().copied())
        .collect();
    places.sort_unstable();
    places.dedup();
    cursors
        .iter()
        .map(|c| {
            c.order
                .iter()
                .map(|&order| places.partition_point(|&p| p < order) as u32)
                .collect()
        })
        .collect()
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

/// One sorted stream of one run, at its current record.
pub(crate) struct Stream<'a> {
    source: Source<'a>,
}

impl<'a> Stream<'a> {
    /// A spilled chunk, at its first record; `None` when it has none.
    pub(crate) fn of_chunk(mut reader: ChunkReader) -> std::io::Result<Option<Self>> {
        Ok(reader.advance()?.then_some(Stream {
            source: Source::Disk(reader),
        }))
    }

    /// A block of records of run thread `thread` in memory, at its first record;
    /// `None` when it has none.
    pub(crate) fn of_block(thread: LocalThread, records: &'a [Record]) -> Option<Self> {
        (!records.is_empty()).then_some(Stream {
            source: Source::Memory {
                records,
                thread,
                pos: 0,
            },
        })
    }

    /// The current record, with run thread numbers.
    #[inline]
    pub(crate) fn current<'s>(&'s self, c: &'s RunCursor) -> Current<'s> {
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
                        pairs: EventPairs {
                            // (The reader checked the list is the run's.)
                            shared: (reader.shared != NO_SHARED).then(|| {
                                let run = c.run;
                                let id = run.shared.len() as u32 + reader.shared;
                                (id, run.spilled_lists.get(reader.shared))
                            }),
                            own: &reader.pairs,
                        },
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

    /// The read buffer of a spilled chunk's stream, for another.
    pub(crate) fn into_buffer(self) -> Option<Vec<u8>> {
        match self.source {
            Source::Disk(reader) => Some(reader.into_buffer()),
            Source::Memory { .. } => None,
        }
    }

    /// Moves to the next record; `false` when the stream is done.
    #[inline]
    pub(crate) fn advance(&mut self) -> std::io::Result<bool> {
        match &mut self.source {
            Source::Memory { records, pos, .. } => {
                *pos += 1;
                Ok(*pos < records.len())
            }
            Source::Disk(reader) => reader.advance(),
        }
    }

    /// Time, rank and run thread of the current record (without its body).
    #[inline]
    pub(crate) fn position(&self, c: &RunCursor) -> (i64, u8, LocalThread) {
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
}
