//! The gathering writer: one thread merges the runs record by record
//! ([`crate::kmerge`]) into batches, self-contained, that the other threads
//! format (and compress, for a `.prv.gz`: a gzip member per batch) while the next
//! round is gathered; texts are written in batch order. It serves every input:
//! spilled runs, part files, runs whose threads are not in the trace's order.

use std::io::Write;

use rayon::prelude::*;

use crate::cursor::RunCursor;
use crate::kmerge::Merger;
use crate::lines::{EventsKey, LineFormatter};
use crate::output::{gzip_member, TraceSink};
use crate::pcf::PcfCatalog;
use crate::record::{Comm, EventPair, LocalThread};
use crate::view::{Current, EventPairs, View};

/// Event pairs per batch at most (records with many pairs, e.g. GPU metrics, end
/// a batch early), so that a batch and its text stay near 1 MiB each. Batches end
/// where the data says, never where timing does: the output is the same for any
/// thread count (a `.prv.gz` has one gzip member per batch).
pub(crate) const BATCH_PAIRS: usize = 1 << 16;

/// Writes the body of a trace merged from `cursors`, in batches of
/// `batch_records` records (and chunk readers sharing `read_budget` bytes of
/// buffers): gathers round k+1 (on this thread) while round k is formatted (one
/// batch per worker), then writes round k's bytes in batch order. The tallies go
/// to `lines`.
pub(crate) fn write_body(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    batch_records: usize,
    read_budget: usize,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let width = rayon::current_num_threads().max(1);
    let mut gatherer = Gatherer::new(Merger::new(cursors, read_budget)?, batch_records);
    let mut formatters: Vec<LineFormatter> =
        (0..width).map(|_| LineFormatter::new(catalog, 0)).collect();
    let mut round = Vec::new();
    let mut next = Vec::new();
    gatherer.fill(cursors, &mut round, width)?;
    let mut ends_open = false;
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
        lines.absorb(f);
    }
    if ends_open {
        lines.end_line();
    }
    lines.write_out(out)
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
                // The two slices copied as they are (an iterator over both is
                // not always inlined).
                if let Some((_, shared)) = pairs.shared {
                    self.pairs.extend_from_slice(shared);
                }
                self.pairs.extend_from_slice(pairs.own);
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
