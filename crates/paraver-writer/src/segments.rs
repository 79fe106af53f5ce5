//! The parallel merge of runs held in memory. The trace is cut by time into
//! segments of about a batch of records each; each segment is merged and
//! formatted on its own, on any thread, straight from the runs' records, and the
//! segments' texts are written in order. A segment holds every record of each of
//! its times, so no event line straddles two segments, and the text is the one
//! the record-by-record merge ([`crate::merge`]'s gatherer) writes.
//!
//! Segment bounds come from a sample of the runs' times, so they depend on the
//! data only, never on the thread count.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::lines::LineFormatter;
use crate::merge::RunCursor;
use crate::record::Record;

/// One run's records in a segment.
struct Part {
    run: usize,
    records: Range<usize>,
}

/// The records of every run whose trace times fall in one span of time.
pub(crate) struct Segment {
    /// In run order (which breaks ties between runs).
    parts: Vec<Part>,
}

impl Segment {
    pub(crate) fn records(&self) -> usize {
        self.parts.iter().map(|p| p.records.len()).sum()
    }
}

/// Cuts the runs of `cursors` (all in memory) into consecutive segments.
pub(crate) struct Segmenter<'c, 'a> {
    cursors: &'c [RunCursor<'a>],
    /// Trace times where segments end (exclusive), increasing; the last segment
    /// ends with the runs.
    bounds: std::vec::IntoIter<i64>,
    /// Per run: the first record not yet in a segment.
    next: Vec<usize>,
    done: bool,
}

impl<'c, 'a> Segmenter<'c, 'a> {
    /// Segments of about `target` records each.
    pub(crate) fn new(cursors: &'c [RunCursor<'a>], target: usize) -> Self {
        Segmenter {
            cursors,
            bounds: segment_bounds(cursors, target.max(1)).into_iter(),
            next: vec![0; cursors.len()],
            done: false,
        }
    }

    /// The part of run `run` before trace time `bound` (all that is left without one).
    fn part(&mut self, run: usize, bound: Option<i64>) -> Option<Part> {
        let c = &self.cursors[run];
        let records = c.records();
        let start = self.next[run];
        let end = match bound {
            Some(bound) => start + records[start..].partition_point(|r| r.time + c.shift < bound),
            None => records.len(),
        };
        self.next[run] = end;
        (end > start).then_some(Part {
            run,
            records: start..end,
        })
    }
}

impl Iterator for Segmenter<'_, '_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        while !self.done {
            let bound = self.bounds.next();
            self.done = bound.is_none();
            let parts: Vec<Part> = (0..self.cursors.len())
                .filter_map(|run| self.part(run, bound))
                .collect();
            if !parts.is_empty() {
                return Some(Segment { parts });
            }
        }
        None
    }
}

/// Trace times that cut the merged records into segments of about `target`
/// records: every `target`-th time of a sorted sample of all records' times.
/// A time shared by more records than that makes a larger segment.
fn segment_bounds(cursors: &[RunCursor], target: usize) -> Vec<i64> {
    // A few samples per run and segment keep the sizes near `target` without
    // sorting every time.
    let step = (target / (4 * cursors.len().max(1))).clamp(1, 1024);
    let mut samples: Vec<i64> = cursors
        .iter()
        .flat_map(|c| c.records().iter().step_by(step).map(|r| r.time + c.shift))
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
/// the trace, then run) and formats them into `f`, ending its last line.
pub(crate) fn format_segment(cursors: &[RunCursor], segment: &Segment, f: &mut LineFormatter) {
    if let [part] = segment.parts.as_slice() {
        let c = &cursors[part.run];
        for r in &c.records()[part.records.clone()] {
            format_record(c, part.run, r, f);
        }
    } else {
        merge_parts(cursors, &segment.parts, f);
    }
    f.end_event_line();
}

/// Merge key of a part at record `r`: trace time, rank, the thread's place in
/// the trace, the part (in run order).
type PartKey = Reverse<(i64, u8, u64, usize)>;

fn part_key(c: &RunCursor, r: &Record, part: usize) -> PartKey {
    Reverse((r.time + c.shift, r.rank(), c.order[r.thread as usize], part))
}

fn merge_parts(cursors: &[RunCursor], parts: &[Part], f: &mut LineFormatter) {
    let mut next: Vec<usize> = parts.iter().map(|p| p.records.start).collect();
    let mut heap: BinaryHeap<PartKey> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = &cursors[p.run];
            part_key(c, &c.records()[p.records.start], i)
        })
        .collect();
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((.., i)) = *top;
        let part = &parts[i];
        let c = &cursors[part.run];
        let records = c.records();
        format_record(c, part.run, &records[next[i]], f);
        next[i] += 1;
        if next[i] < part.records.end {
            *top = part_key(c, &records[next[i]], i);
        } else {
            PeekMut::pop(top);
        }
    }
}

fn format_record(c: &RunCursor, run: usize, r: &Record, f: &mut LineFormatter) {
    let time = r.time + c.shift;
    f.record(c, run, &c.current(r), time);
}
