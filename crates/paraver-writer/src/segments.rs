//! The parallel merge of runs held in memory. The trace is cut by time into
//! segments of about a batch of records each; each segment is merged and
//! formatted on its own, on any thread, straight from the runs' records, and the
//! segments' texts are written in order. A segment holds every record of each of
//! its times, so no event line straddles two segments, and the text is the one
//! the record-by-record merge ([`crate::gather`]) writes.
//!
//! Segment bounds come from a sample of the runs' times, so they depend on the
//! data only, never on the thread count.

use std::io::Write;

use rayon::prelude::*;

use crate::cursor::{places_in_trace, RunCursor};
use crate::lines::LineFormatter;
use crate::loser_tree::{merge_key, LoserTree, DONE};
use crate::output::TraceSink;
use crate::pcf::PcfCatalog;
use crate::record::{LocalThread, Record};

/// Segments per thread in a round: a few, so that a thread that finishes early
/// (or writes the previous round) finds work.
const SEGMENTS_PER_THREAD: usize = 4;

/// Writes the body of a trace merged from `cursors` (every run in memory, its
/// threads in the trace's order), in segments of about `batch_records` records:
/// a round of segments is merged and formatted on all threads while the
/// previous round's texts are written, in order. The tallies go to `lines`.
pub(crate) fn write_body(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    batch_records: usize,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let slots = SEGMENTS_PER_THREAD * rayon::current_num_threads().max(1);
    let mut segments = Segmenter::new(cursors, batch_records);
    let new_formatters =
        || -> Vec<LineFormatter> { (0..slots).map(|_| LineFormatter::new(catalog, 0)).collect() };
    // Two sets: one formats a round while the other's texts, of the round
    // before, are written.
    let (mut formatting, mut writing) = (new_formatters(), new_formatters());
    let mut to_write = 0;
    let mut merged: u64 = 0;
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
        lines.absorb(f);
    }
    Ok(())
}

/// Writes the texts of `formatters` in order, emptying their buffers.
fn write_texts(out: &mut TraceSink, formatters: &mut [LineFormatter]) -> std::io::Result<()> {
    for f in formatters {
        out.write_all(f.buf.as_slice())?;
        f.buf.clear();
    }
    Ok(())
}

/// Sorted records of one block of a run: what the segments have not yet taken
/// of it, or its records in one segment.
#[derive(Clone, Copy)]
struct Part<'a> {
    run: usize,
    thread: LocalThread,
    /// The place of the block's thread in the trace, among the threads of all runs.
    place: u32,
    /// The run's shift to trace time.
    shift: i64,
    records: &'a [Record],
}

/// The records of every run whose trace times fall in one span of time.
pub(crate) struct Segment<'a> {
    /// In run order, then block order (which break ties between parts).
    parts: Vec<Part<'a>>,
}

impl Segment<'_> {
    pub(crate) fn records(&self) -> usize {
        self.parts.iter().map(|p| p.records.len()).sum()
    }
}

/// Cuts the runs of `cursors` (all in memory) into consecutive segments.
pub(crate) struct Segmenter<'a> {
    /// What is left of every block of every run, in run order, then block order.
    blocks: Vec<Part<'a>>,
    /// Trace times where segments end (exclusive), increasing; the last segment
    /// ends with the runs.
    bounds: std::vec::IntoIter<i64>,
    done: bool,
}

impl<'a> Segmenter<'a> {
    /// Segments of about `target` records each.
    pub(crate) fn new(cursors: &[RunCursor<'a>], target: usize) -> Self {
        // Threads' places in the trace, numbered densely so that a merge key fits
        // in 128 bits.
        let places = places_in_trace(cursors);
        let blocks: Vec<Part> = cursors
            .iter()
            .zip(&places)
            .enumerate()
            .flat_map(|(run, (c, places))| {
                c.blocks().map(move |(thread, records)| Part {
                    run,
                    thread,
                    place: places[thread as usize],
                    shift: c.shift,
                    records,
                })
            })
            .filter(|b| !b.records.is_empty())
            .collect();
        Segmenter {
            bounds: segment_bounds(&blocks, target.max(1)).into_iter(),
            blocks,
            done: false,
        }
    }
}

impl<'a> Iterator for Segmenter<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        while !self.done {
            let bound = self.bounds.next();
            self.done = bound.is_none();
            let parts: Vec<Part> = self
                .blocks
                .iter_mut()
                .filter_map(|b| b.take_before(bound))
                .collect();
            if !parts.is_empty() {
                return Some(Segment { parts });
            }
        }
        None
    }
}

impl<'a> Part<'a> {
    /// The block's records before trace time `bound` not yet in a segment (all
    /// that are left without one).
    fn take_before(&mut self, bound: Option<i64>) -> Option<Part<'a>> {
        let shift = self.shift;
        let n = match bound {
            Some(bound) => self.records.partition_point(|r| r.time + shift < bound),
            None => self.records.len(),
        };
        let (taken, rest) = self.records.split_at(n);
        self.records = rest;
        (n > 0).then_some(Part {
            records: taken,
            ..*self
        })
    }
}

/// Trace times that cut the merged records into segments of about `target`
/// records: every `target`-th time of a sorted sample of all records' times.
/// A time shared by more records than that makes a larger segment.
fn segment_bounds(blocks: &[Part], target: usize) -> Vec<i64> {
    // A few samples per block and segment keep the sizes near `target` without
    // sorting every time.
    let step = (target / (4 * blocks.len().max(1))).clamp(1, 1024);
    let mut samples: Vec<i64> = blocks
        .iter()
        .flat_map(|b| b.records.iter().step_by(step).map(|r| r.time + b.shift))
        .collect();
    samples.sort_unstable();
    let per_segment = (target / step).max(1);
    let mut bounds: Vec<i64> = Vec::with_capacity(samples.len() / per_segment + 1);
    for &time in samples.iter().skip(per_segment).step_by(per_segment) {
        if bounds.last() < Some(&time) {
            bounds.push(time);
        }
    }
    bounds
}

/// Merges the records of `segment` in trace order (time, rank, thread's place in
/// the trace, then part) and formats them into `f`, ending its last line.
pub(crate) fn format_segment(cursors: &[RunCursor], segment: &Segment, f: &mut LineFormatter) {
    if let [part] = segment.parts.as_slice() {
        let c = &cursors[part.run];
        for r in part.records {
            format_record(c, part, r, f);
        }
    } else {
        merge_parts(cursors, &segment.parts, f);
    }
    f.end_event_line();
}

/// Merge key of a part at record `r` (the part's index breaks ties).
fn part_key(part: &Part, r: &Record, index: usize) -> u128 {
    merge_key(r.time + part.shift, r.rank(), part.place, index)
}

fn merge_parts(cursors: &[RunCursor], parts: &[Part], f: &mut LineFormatter) {
    let mut next: Vec<usize> = vec![0; parts.len()];
    let keys = parts
        .iter()
        .enumerate()
        .map(|(i, p)| part_key(p, &p.records[0], i));
    let mut tree = LoserTree::new(keys);
    while let Some(i) = tree.winner() {
        let part = &parts[i];
        format_record(&cursors[part.run], part, &part.records[next[i]], f);
        next[i] += 1;
        let key = match part.records.get(next[i]) {
            Some(r) => part_key(part, r, i),
            None => DONE,
        };
        tree.replace_winner(key);
    }
}

fn format_record(c: &RunCursor, part: &Part, r: &Record, f: &mut LineFormatter) {
    let time = r.time + part.shift;
    f.record(c, part.run, &c.current(r, part.thread), time);
}
