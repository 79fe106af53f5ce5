//! The parallel merge of runs. The trace is cut by time into segments of about
//! a batch of records each; each segment is merged and formatted on its own, on
//! any thread, straight from the runs' records (blocks in memory, and the span
//! of each spilled chunk that holds the segment's times, found by the chunk's
//! time index), and the segments' texts are written in order. A segment holds
//! every record of each of its times, so no event line straddles two segments,
//! and the text is the one the record-by-record merge ([`crate::gather`])
//! writes.
//!
//! Segment bounds come from a sample of the runs' times, so they depend on the
//! data only, never on the thread count. A `.prv.gz` is cut into gzip members
//! where the gathering merge cuts its batches (by records and pairs counted from
//! the first record, whatever the segments), so its bytes are the same too.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use rayon::prelude::*;

use crate::cursor::{places_in_trace, RunCursor, Stream};
use crate::gather::BATCH_PAIRS;
use crate::lines::LineFormatter;
use crate::loser_tree::{merge_key, LoserTree, DONE};
use crate::output::{gzip_member, TraceSink};
use crate::pcf::PcfCatalog;
use crate::record::{LocalThread, Record};
use crate::spill::{ChunkReader, ChunkSpan, SpilledChunk, INDEX_STEP, READ_BUFFER};
use crate::view::{Current, View};

/// Which records of a span are written, and how: a cut's filter
/// (`cut::Keep`), applied to each merged record on its own.
pub(crate) trait Admit: Sync {
    /// The record `r` (at trace time `time`, of the run of `c`) as it is
    /// written, or `None` when it is left out.
    fn admit<'s>(&self, c: &RunCursor, r: Current<'s>, time: i64) -> Option<Current<'s>>;
}

/// Segments per thread in a round: a few, so that a thread that finishes early
/// (or writes the previous round) finds work. Fewer when segments grow
/// ([`segment_records`]): the records in flight stay about the same.
const SEGMENTS_PER_THREAD: usize = 4;

/// A segment reads, from every spilled chunk it merges, the index block of
/// [`INDEX_STEP`] records before its start again (the previous segment read
/// them): segments hold at least this many times those records, so that the
/// re-read stays a small share of what is read (an eighth).
const REREAD_SHARE: usize = 8;

/// Segments grow to at most this many batches (see [`segment_records`]).
const MAX_GROWTH: usize = 8;

/// Records per segment when merging `chunks` spilled chunks (or part files of
/// a sharded conversion) in batches of `batch_records`: a batch, or more with
/// many chunks, so that each segment's re-read of the block before its start in
/// every chunk ([`REREAD_SHARE`]) does not read the chunks many times over (a
/// segment of 16 K records re-read 64 K records at 1,024 reports); at most
/// [`MAX_GROWTH`] batches, to bound the text in flight.
pub(crate) fn segment_records(batch_records: usize, chunks: usize) -> usize {
    let batch = batch_records.max(1);
    chunks
        .saturating_mul(INDEX_STEP * REREAD_SHARE)
        .clamp(batch, batch.saturating_mul(MAX_GROWTH))
}

/// Segments formatted in a round on `threads` threads when they hold
/// `segment` records and batches `batch_records`: [`SEGMENTS_PER_THREAD`] per
/// thread of one batch each, fewer of larger segments (so that about as many
/// records are in flight), one per thread at least.
fn segments_per_round(threads: usize, batch_records: usize, segment: usize) -> usize {
    let records = SEGMENTS_PER_THREAD * threads * batch_records.max(1);
    records.div_ceil(segment.max(1)).max(threads)
}

/// Whether the segments can merge `cursors`: every spilled chunk has its time
/// index, and each run's threads follow the trace's order (strictly when it
/// spilled: a run's streams then tie on a thread's place only for one thread).
pub(crate) fn can_merge(cursors: &[RunCursor]) -> bool {
    cursors.iter().all(|c| {
        if c.in_memory() {
            c.threads_in_trace_order()
        } else {
            c.run.chunks.iter().all(SpilledChunk::is_indexed)
                && c.order.windows(2).all(|w| w[0] < w[1])
        }
    })
}

/// Writes the body of a trace merged from `cursors` (see [`can_merge`]), in
/// segments of about `batch_records` records: a round of segments is merged and
/// formatted on all threads while the previous round's texts are written (and
/// compressed, for a `.prv.gz`), in order. The tallies go to `lines`.
pub(crate) fn write_body(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    batch_records: usize,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    write_span(
        out,
        lines,
        catalog,
        cursors,
        batch_records,
        (None, None),
        None,
        progress,
    )
}

/// [`write_body`] of the records at trace times `from..to` only (each end
/// open when `None`). A `.prv.gz` span is cut into members from its own first
/// record (so its members depend on where the span starts), and its last
/// member ends with the span. With `keep`, only the records it admits are
/// written, as it gives them (see [`Admit`]); members then count those.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_span(
    out: &mut TraceSink,
    lines: &mut LineFormatter,
    catalog: &PcfCatalog,
    cursors: &[RunCursor],
    batch_records: usize,
    (from, to): (Option<i64>, Option<i64>),
    keep: Option<&dyn Admit>,
    progress: &mut dyn FnMut(u64),
) -> std::io::Result<()> {
    let threads = rayon::current_num_threads().max(1);
    let places = places_in_trace(cursors);
    let mut segments = Segmenter::within(cursors, &places, batch_records, from, to);
    let slots = segments_per_round(threads, batch_records, segments.records);
    let compress = out.compresses();
    let new_slots = || -> Vec<Slot> {
        (0..slots)
            .map(|_| Slot {
                f: LineFormatter::new(catalog, 0),
                marks: compress.then(Vec::new),
                buffers: Buffers::default(),
            })
            .collect()
    };
    // Two sets: one formats a round while the other's texts, of the round
    // before, are written.
    let (mut formatting, mut writing) = (new_slots(), new_slots());
    // Members are cut by batches, whatever the segments' size.
    let mut members = MemberCutter::new(batch_records);
    let mut to_write = 0;
    let mut merged: u64 = 0;
    loop {
        let round: Vec<Segment> = segments.by_ref().take(slots).collect();
        if round.is_empty() && to_write == 0 {
            break;
        }
        let (written, formatted) = rayon::join(
            || match compress {
                true => members.write(out, &mut writing[..to_write]),
                false => write_texts(out, &mut writing[..to_write]),
            },
            || {
                round
                    .par_iter()
                    .zip(formatting.par_iter_mut())
                    .map(|(segment, slot)| format_segment(cursors, &places, segment, slot, keep))
                    .collect::<std::io::Result<Vec<u64>>>()
            },
        );
        written?;
        merged += formatted?.iter().sum::<u64>();
        to_write = round.len();
        std::mem::swap(&mut formatting, &mut writing);
        progress(merged);
    }
    if compress {
        members.finish(out)?;
    }
    for slot in formatting.into_iter().chain(writing) {
        lines.absorb(slot.f);
    }
    Ok(())
}

/// Where a segment's text is formatted, and for a `.prv.gz` where each of its
/// records ends in it.
struct Slot {
    f: LineFormatter,
    marks: Option<Vec<Mark>>,
    /// Read buffers of spilled chunks, kept from one segment to the next.
    buffers: Buffers,
}

/// Read buffers a slot keeps for its next segment, up to [`KEPT_BUFFER_BYTES`].
#[derive(Default)]
struct Buffers {
    kept: Vec<Vec<u8>>,
    bytes: usize,
}

/// Bytes of read buffers a slot keeps at most: beyond, they are freed (a slot
/// merging many chunks would keep up to 64 KiB for each).
const KEPT_BUFFER_BYTES: usize = 1 << 20;

impl Buffers {
    fn take(&mut self) -> Vec<u8> {
        let buffer = self.kept.pop().unwrap_or_default();
        self.bytes -= buffer.len();
        buffer
    }

    fn keep(&mut self, buffer: Option<Vec<u8>>) {
        if let Some(buffer) = buffer {
            if self.bytes + buffer.len() <= KEPT_BUFFER_BYTES {
                self.bytes += buffer.len();
                self.kept.push(buffer);
            }
        }
    }
}

/// The end of a record's text in its segment's text (before the end of an
/// event line it may leave open), and its pairs.
#[derive(Clone, Copy)]
struct Mark {
    end: usize,
    pairs: u32,
}

/// Writes the texts of `slots` in order, emptying their buffers.
fn write_texts(out: &mut TraceSink, slots: &mut [Slot]) -> std::io::Result<()> {
    for slot in slots {
        out.write_all(slot.f.buf.as_slice())?;
        slot.f.buf.clear();
    }
    Ok(())
}

/// The text of a whole gzip member: a range of one slot's text, or text carried
/// over from slots before.
enum MemberText {
    Within(usize, std::ops::Range<usize>),
    Carried(Vec<u8>),
}

/// Cuts the text of a `.prv.gz` into gzip members where the gathering merge
/// ends its batches: after `batch_records` records, or after the record that
/// brings a batch's pairs to [`BATCH_PAIRS`], counted from the first record.
struct MemberCutter {
    batch_records: usize,
    /// Records and pairs of the member being cut.
    records: usize,
    pairs: usize,
    /// Its text so far, and where its last record ends in it.
    text: Vec<u8>,
    last_end: usize,
}

impl MemberCutter {
    fn new(batch_records: usize) -> Self {
        MemberCutter {
            batch_records: batch_records.max(1),
            records: 0,
            pairs: 0,
            text: Vec::new(),
            last_end: 0,
        }
    }

    /// Cuts the texts of `slots` into members, compresses the whole ones on
    /// every thread (straight from the slots' texts, but for a member that
    /// began in an earlier slot), and writes them in order, emptying the slots'
    /// buffers.
    fn write(&mut self, out: &mut TraceSink, slots: &mut [Slot]) -> std::io::Result<()> {
        let mut whole = Vec::new();
        for (index, slot) in slots.iter().enumerate() {
            let text = slot.f.buf.as_slice();
            let mut from = 0;
            let mut last_end = None;
            for mark in slot.marks.iter().flatten() {
                self.records += 1;
                self.pairs += mark.pairs as usize;
                if self.records >= self.batch_records || self.pairs >= BATCH_PAIRS {
                    whole.push(if self.text.is_empty() {
                        MemberText::Within(index, from..mark.end)
                    } else {
                        self.text.extend_from_slice(&text[from..mark.end]);
                        MemberText::Carried(std::mem::take(&mut self.text))
                    });
                    (self.records, self.pairs, self.last_end) = (0, 0, 0);
                    from = mark.end;
                    last_end = None;
                } else {
                    last_end = Some(mark.end);
                }
            }
            if let Some(end) = last_end {
                self.last_end = self.text.len() + (end - from);
            }
            self.text.extend_from_slice(&text[from..]);
        }
        let compressed: Vec<Vec<u8>> = whole
            .par_iter()
            .map(|member| match member {
                MemberText::Within(index, range) => {
                    gzip_member(&slots[*index].f.buf.as_slice()[range.clone()])
                }
                MemberText::Carried(text) => gzip_member(text),
            })
            .collect::<std::io::Result<_>>()?;
        for member in compressed {
            out.write_member(member)?;
        }
        for slot in slots {
            slot.f.buf.clear();
            if let Some(marks) = &mut slot.marks {
                marks.clear();
            }
        }
        Ok(())
    }

    /// The last member, and the end of the last line (as the gathering merge
    /// writes it: after the members, as text).
    fn finish(&mut self, out: &mut TraceSink) -> std::io::Result<()> {
        if self.records > 0 {
            out.write_member(gzip_member(&self.text[..self.last_end])?)?;
            self.text.drain(..self.last_end);
        }
        out.write_all(&self.text)?;
        self.text.clear();
        Ok(())
    }
}

/// What is left of one sorted stream of a run, or its share of one segment: a
/// block of records in memory (of one run thread), or records of a spilled
/// chunk (with the producer's thread numbers).
#[derive(Clone, Copy)]
enum Part<'a> {
    Block {
        run: usize,
        thread: LocalThread,
        /// The place of the block's thread in the trace, among the threads of all runs.
        place: u32,
        /// The run's shift to trace time.
        shift: i64,
        records: &'a [Record],
    },
    Chunk {
        run: usize,
        shift: i64,
        chunk: &'a SpilledChunk,
        /// Left: records from this index entry on, but those before trace time
        /// `after`. In a segment: `span`, less the records before `after` and
        /// from trace time `before` on.
        from: usize,
        span: ChunkSpan,
        after: Option<i64>,
        before: Option<i64>,
        done: bool,
    },
}

/// The records of every run whose trace times fall in one span of time.
pub(crate) struct Segment<'a> {
    /// In run order, then stream order (a run's chunks, then its blocks), which
    /// breaks ties between parts.
    parts: Vec<Part<'a>>,
}

#[cfg(test)]
impl Segment<'_> {
    /// The records the segment reads from spilled chunks (the spans of its
    /// chunks, re-read blocks included).
    pub(crate) fn chunk_records(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Chunk { span, .. } => span.records,
                Part::Block { .. } => 0,
            })
            .sum()
    }
}

/// Cuts the runs of `cursors` into consecutive segments.
pub(crate) struct Segmenter<'a> {
    /// What is left of every stream of every run, in run order, then stream order.
    parts: Vec<Part<'a>>,
    /// The streams with records left, by the trace time of their next record
    /// (chunks first, always), then place in `parts`: a segment visits only
    /// the streams with records before its bound, not every stream of a trace
    /// of tens of thousands of threads.
    waiting: BinaryHeap<Reverse<(i64, usize)>>,
    /// Trace times where segments end (exclusive), increasing; the last segment
    /// ends with the runs, or at the last bound when `open_end` is false.
    bounds: std::vec::IntoIter<i64>,
    open_end: bool,
    done: bool,
    /// Records per segment aimed at ([`segment_records`]).
    pub(crate) records: usize,
}

/// Every sorted stream of every run, in run order, then stream order.
fn streams<'a>(cursors: &[RunCursor<'a>], places: &[Vec<u32>]) -> Vec<Part<'a>> {
    let mut parts = Vec::new();
    for (run, (c, places)) in cursors.iter().zip(places).enumerate() {
        for chunk in &c.run.chunks {
            if chunk.records > 0 {
                parts.push(Part::Chunk {
                    run,
                    shift: c.shift,
                    chunk,
                    from: 0,
                    span: chunk.span(0, 0),
                    after: None,
                    before: None,
                    done: false,
                });
            }
        }
        for (thread, records) in c.blocks() {
            if !records.is_empty() {
                parts.push(Part::Block {
                    run,
                    thread,
                    place: places[thread as usize],
                    shift: c.shift,
                    records,
                });
            }
        }
    }
    parts
}

impl<'a> Segmenter<'a> {
    /// Segments of about `batch_records` records each (more when many chunks
    /// spilled: [`segment_records`]) of the records at trace times `from..to`
    /// (each end open when `None`); `places` are the threads' places in the
    /// trace ([`places_in_trace`]).
    pub(crate) fn within(
        cursors: &[RunCursor<'a>],
        places: &[Vec<u32>],
        batch_records: usize,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Self {
        let mut parts = streams(cursors, places);
        if from.is_some() {
            // Records before the span: left behind unread (a chunk moves to
            // the index entry before `from`).
            for part in &mut parts {
                part.take_before(from);
            }
        }
        let chunks = parts
            .iter()
            .filter(|p| matches!(p, Part::Chunk { .. }) && p.next_time().is_some())
            .count();
        let target = segment_records(batch_records, chunks);
        let inside = |t: &i64| from.is_none_or(|f| *t > f) && to.is_none_or(|e| *t < e);
        let mut bounds: Vec<i64> = segment_bounds(&parts, target, to)
            .into_iter()
            .filter(inside)
            .collect();
        bounds.extend(to);
        let waiting = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.next_time().map(|t| Reverse((t, i))))
            .collect();
        Segmenter {
            bounds: bounds.into_iter(),
            open_end: to.is_none(),
            parts,
            waiting,
            done: false,
            records: target,
        }
    }
}

/// The trace times that cut the records of `cursors` into `count` slices of
/// about as many records each (`count - 1` of them, non-decreasing: slice `i`
/// is from bound `i - 1` to bound `i`, the first and last open; equal bounds
/// make an empty slice). Computed from the runs' blocks and their chunks' time
/// indexes only (no record is read), so every process that has the same runs
/// finds the same bounds; every record of one time falls in one slice. With
/// `within` (a cut's span of trace times `from..to`), only the records in it
/// are counted, and the bounds lie in it.
pub(crate) fn slice_bounds(
    cursors: &[RunCursor],
    count: u32,
    within: Option<(i64, i64)>,
) -> Vec<i64> {
    let places = places_in_trace(cursors);
    let parts = streams(cursors, &places);
    let mut samples = samples(&parts, INDEX_STEP, within.map(|(_, to)| to));
    if let Some((from, _)) = within {
        samples.retain(|&(time, _)| time >= from);
    }
    let total: u64 = samples.iter().map(|&(_, w)| u64::from(w)).sum();
    let count = u64::from(count.max(1));
    let mut bounds = Vec::with_capacity(count as usize - 1);
    let mut before = 0u64;
    let mut samples = samples.iter().peekable();
    for k in 1..count {
        // The first sample with at least k/count of the records before it.
        let wanted = (u128::from(total) * u128::from(k)).div_ceil(u128::from(count)) as u64;
        while before < wanted {
            match samples.next() {
                Some(&(_, weight)) => before += u64::from(weight),
                None => break,
            }
        }
        // Records of one time stay together: a bound is a sample's time.
        let bound = match samples.peek() {
            Some(&&(time, _)) => time,
            None => within.map_or(i64::MAX, |(_, to)| to),
        };
        bounds.push(bounds.last().map_or(bound, |&last: &i64| last.max(bound)));
    }
    bounds
}

impl<'a> Iterator for Segmenter<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        while !self.done {
            let bound = self.bounds.next();
            self.done = bound.is_none();
            if bound.is_none() && !self.open_end {
                break;
            }
            // The streams with a record before the bound (the others would
            // give nothing), in their order in `parts`.
            let mut visited = Vec::new();
            while let Some(&Reverse((time, i))) = self.waiting.peek() {
                if bound.is_some_and(|bound| time >= bound) {
                    break;
                }
                self.waiting.pop();
                visited.push(i);
            }
            visited.sort_unstable();
            let mut parts = Vec::with_capacity(visited.len());
            for i in visited {
                parts.extend(self.parts[i].take_before(bound));
                if let Some(time) = self.parts[i].next_time() {
                    self.waiting.push(Reverse((time, i)));
                }
            }
            if !parts.is_empty() {
                return Some(Segment { parts });
            }
        }
        None
    }
}

impl<'a> Part<'a> {
    /// The trace time of the stream's next record (a chunk: the earliest
    /// time, as its spans are found by its index), `None` when none is left.
    fn next_time(&self) -> Option<i64> {
        match self {
            Part::Block { records, shift, .. } => records.first().map(|r| r.time + shift),
            Part::Chunk { done, .. } => (!*done).then_some(i64::MIN),
        }
    }

    /// The stream's records before trace time `bound` not yet in a segment (all
    /// that are left without one).
    fn take_before(&mut self, bound: Option<i64>) -> Option<Part<'a>> {
        match self {
            Part::Block { shift, records, .. } => {
                let shift = *shift;
                let n = match bound {
                    Some(bound) => records_before(records, |r| r.time + shift < bound),
                    None => records.len(),
                };
                let (taken, rest) = records.split_at(n);
                *records = rest;
                (n > 0).then_some(match *self {
                    Part::Block {
                        run,
                        thread,
                        place,
                        shift,
                        ..
                    } => Part::Block {
                        run,
                        thread,
                        place,
                        shift,
                        records: taken,
                    },
                    Part::Chunk { .. } => unreachable!(),
                })
            }
            Part::Chunk {
                run,
                shift,
                chunk,
                from,
                after,
                done,
                ..
            } => {
                // Done, or every record left was taken.
                if *done || after.is_some_and(|after| chunk.last_time() + *shift < after) {
                    *done = true;
                    return None;
                }
                let index = chunk.index();
                // Entries `from..to` are before the bound: the span reads up to
                // the first record at or after it (or the chunk's end).
                let to = match bound {
                    Some(bound) => {
                        *from + index[*from..].partition_point(|e| e.time + *shift < bound)
                    }
                    None => index.len(),
                };
                if to == *from {
                    return None;
                }
                let taken = Part::Chunk {
                    run: *run,
                    shift: *shift,
                    chunk,
                    from: *from,
                    span: chunk.span(*from, to),
                    after: *after,
                    before: bound,
                    done: false,
                };
                // The next span starts at the last entry before the bound.
                *from = to - 1;
                *after = bound;
                *done = bound.is_none();
                Some(taken)
            }
        }
    }
}

/// How many of `records` (sorted) come first and satisfy `before`: a
/// galloping search, as a segment takes a few records of each of many streams
/// (a trace of tens of thousands of threads), often none.
fn records_before<T>(records: &[T], before: impl Fn(&T) -> bool) -> usize {
    let mut end = 1;
    while end <= records.len() && before(&records[end - 1]) {
        end *= 2;
    }
    // Records before `end / 2` satisfy `before`; from `end - 1` on, they do not.
    let low = end / 2;
    let high = (end - 1).min(records.len());
    low + records[low..high].partition_point(before)
}

/// Trace times that cut the merged records into segments of about `target`
/// records: a sorted sample of all records' times (every `step`-th record of
/// each block, each entry of each chunk's index), each standing for the records
/// up to the next, cut every `target` records. A time shared by more records
/// than that makes a larger segment. Only times before `to` are sampled (the
/// bounds before it are the same: the samples are sorted).
fn segment_bounds(parts: &[Part], target: usize, to: Option<i64>) -> Vec<i64> {
    // A few samples per block and segment keep the sizes near `target` without
    // sorting every time.
    let step = (target / (4 * parts.len().max(1))).clamp(1, 1024);
    let samples = samples(parts, step, to);
    let mut bounds: Vec<i64> = Vec::with_capacity(samples.len() * step / target + 1);
    let mut records = 0;
    for &(time, weight) in &samples {
        if records >= target && bounds.last() < Some(&time) {
            bounds.push(time);
            records = 0;
        }
        records += weight as usize;
    }
    bounds
}

/// A sorted sample of the times of the records of `parts`: every `step`-th
/// record of each block, each entry of each chunk's index, each with the
/// records it stands for; only those before trace time `to`, when given (a
/// cut's window need not sample the trace after it).
fn samples(parts: &[Part], step: usize, to: Option<i64>) -> Vec<(i64, u32)> {
    let mut samples: Vec<(i64, u32)> = Vec::new();
    for part in parts {
        match *part {
            Part::Block { shift, records, .. } => {
                let records = match to {
                    Some(to) => &records[..records_before(records, |r| r.time + shift < to)],
                    None => records,
                };
                samples.extend(
                    records
                        .iter()
                        .step_by(step)
                        .map(|r| (r.time + shift, step as u32)),
                )
            }
            Part::Chunk { shift, chunk, .. } => {
                let index = chunk.index();
                let index = match to {
                    Some(to) => &index[..index.partition_point(|e| e.time + shift < to)],
                    None => index,
                };
                samples.extend(index.iter().map(|e| (e.time + shift, INDEX_STEP as u32)))
            }
        }
    }
    samples.sort_unstable_by_key(|&(time, _)| time);
    samples
}

/// Merges the records of `segment` in trace order (time, rank, thread's place in
/// the trace, then part) and formats them into `slot`, ending its last line;
/// returns the number of records.
fn format_segment(
    cursors: &[RunCursor],
    places: &[Vec<u32>],
    segment: &Segment,
    slot: &mut Slot,
    keep: Option<&dyn Admit>,
) -> std::io::Result<u64> {
    let Slot { f, marks, buffers } = slot;
    let records = match segment.parts.as_slice() {
        [Part::Block {
            run,
            thread,
            shift,
            records,
            ..
        }] => {
            let c = &cursors[*run];
            let mut count = 0;
            for r in *records {
                let current = c.current(r, *thread);
                count += format(f, marks, keep, (c, *run), current, r.time + shift);
            }
            count
        }
        parts if parts.iter().all(|p| matches!(p, Part::Block { .. })) => {
            merge_blocks(cursors, parts, f, marks, keep)
        }
        parts => merge_streams(cursors, places, parts, (f, marks, keep), buffers)?,
    };
    f.end_event_line();
    Ok(records)
}

/// Formats one merged record at trace time `time` of run `run` (through a
/// cut's `keep`, when given), noting where it ends; returns 1 if it was
/// written, 0 if the cut left it out.
#[inline]
fn format(
    f: &mut LineFormatter,
    marks: &mut Option<Vec<Mark>>,
    keep: Option<&dyn Admit>,
    (c, run): (&RunCursor, usize),
    current: Current,
    time: i64,
) -> u64 {
    let current = match keep {
        None => current,
        Some(keep) => match keep.admit(c, current, time) {
            Some(kept) => kept,
            None => return 0,
        },
    };
    f.record(c, run, &current, time);
    mark(f, marks, &current.body);
    1
}

/// Notes where the record just formatted ends, for a `.prv.gz`.
#[inline]
fn mark(f: &LineFormatter, marks: &mut Option<Vec<Mark>>, body: &View) {
    if let Some(marks) = marks {
        let pairs = match body {
            View::Events { pairs, .. } => pairs.len() as u32,
            _ => 0,
        };
        marks.push(Mark {
            end: f.buf.len(),
            pairs,
        });
    }
}

/// Merge key of a block at record `r` (the part's index breaks ties).
#[inline]
fn block_key(place: u32, shift: i64, r: &Record, index: usize) -> u128 {
    merge_key(r.time + shift, r.rank(), place, index)
}

/// The merge of parts that are all blocks in memory.
fn merge_blocks(
    cursors: &[RunCursor],
    parts: &[Part],
    f: &mut LineFormatter,
    marks: &mut Option<Vec<Mark>>,
    keep: Option<&dyn Admit>,
) -> u64 {
    let blocks: Vec<(usize, LocalThread, u32, i64, &[Record])> = parts
        .iter()
        .map(|p| match *p {
            Part::Block {
                run,
                thread,
                place,
                shift,
                records,
            } => (run, thread, place, shift, records),
            Part::Chunk { .. } => unreachable!("merge_blocks takes blocks only"),
        })
        .collect();
    let mut next: Vec<usize> = vec![0; blocks.len()];
    let keys = blocks
        .iter()
        .enumerate()
        .map(|(i, &(_, _, place, shift, records))| block_key(place, shift, &records[0], i));
    let mut tree = LoserTree::new(keys);
    let mut count = 0;
    while let Some(i) = tree.winner() {
        let (run, thread, place, shift, records) = blocks[i];
        let c = &cursors[run];
        let r = &records[next[i]];
        let current = c.current(r, thread);
        count += format(f, marks, keep, (c, run), current, r.time + shift);
        next[i] += 1;
        let key = match records.get(next[i]) {
            Some(r) => block_key(place, shift, r, i),
            None => DONE,
        };
        tree.replace_winner(key);
    }
    count
}

/// One part of a segment being merged: a block or a span of a chunk, as a
/// stream, and the trace time it stops at.
struct Reading<'a> {
    run: usize,
    stream: Stream<'a>,
    before: Option<i64>,
}

impl Reading<'_> {
    /// The merge key at the current record; `DONE` once past `before`.
    #[inline]
    fn key(&self, c: &RunCursor, places: &[u32], index: usize) -> u128 {
        let (time, rank, thread) = self.stream.position(c);
        let time = time + c.shift;
        if self.before.is_some_and(|before| time >= before) {
            return DONE;
        }
        merge_key(time, rank, places[thread as usize], index)
    }
}

/// The merge of parts some of which are spans of spilled chunks: each read
/// from its span's first byte, past the records of earlier segments.
fn merge_streams(
    cursors: &[RunCursor],
    places: &[Vec<u32>],
    parts: &[Part],
    (f, marks, keep): (
        &mut LineFormatter,
        &mut Option<Vec<Mark>>,
        Option<&dyn Admit>,
    ),
    buffers: &mut Buffers,
) -> std::io::Result<u64> {
    let mut readings = Vec::with_capacity(parts.len());
    for part in parts {
        let reading = match *part {
            Part::Block {
                run,
                thread,
                records,
                ..
            } => Stream::of_block(thread, records).map(|stream| Reading {
                run,
                stream,
                before: None,
            }),
            Part::Chunk {
                run,
                chunk,
                span,
                after,
                before,
                shift,
                ..
            } => {
                let buffer = buffers.take();
                let reader = ChunkReader::open_span(chunk, span, READ_BUFFER, buffer);
                let mut stream = Stream::of_chunk(reader)?;
                // Records an earlier segment took.
                if let (Some(after), Some(s)) = (after, &mut stream) {
                    let c = &cursors[run];
                    while s.position(c).0 + shift < after {
                        if !s.advance()? {
                            stream = None;
                            break;
                        }
                    }
                }
                stream.map(|stream| Reading {
                    run,
                    stream,
                    before,
                })
            }
        };
        readings.push(reading);
    }
    let key_of = |i: usize, r: &Option<Reading>| match r {
        Some(r) => r.key(&cursors[r.run], &places[r.run], i),
        None => DONE,
    };
    let keys: Vec<u128> = readings
        .iter()
        .enumerate()
        .map(|(i, r)| key_of(i, r))
        .collect();
    let mut tree = LoserTree::new(keys.into_iter());
    let mut count = 0;
    while let Some(i) = tree.winner() {
        // (A part with a key has a stream.)
        let Some(reading) = readings[i].as_mut() else {
            break;
        };
        let c = &cursors[reading.run];
        let current = reading.stream.current(c);
        let time = current.time + c.shift;
        count += format(f, marks, keep, (c, reading.run), current, time);
        if !reading.stream.advance()? {
            if let Some(done) = readings[i].take() {
                buffers.keep(done.stream.into_buffer());
            }
        }
        tree.replace_winner(key_of(i, &readings[i]));
    }
    // Streams that stopped at the segment's end.
    for reading in readings.into_iter().flatten() {
        buffers.keep(reading.stream.into_buffer());
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::{records_before, segment_records, segments_per_round};

    /// Segments grow with the chunks they merge, up to eight batches, and
    /// fewer are formatted at once: about as many records in flight.
    #[test]
    fn segments_grow_with_the_chunks_they_merge() {
        let batch = 1 << 14;
        assert_eq!(segment_records(batch, 0), batch);
        assert_eq!(segment_records(batch, 32), batch);
        assert_eq!(segment_records(batch, 64), 2 * batch);
        assert_eq!(segment_records(batch, 256), 8 * batch);
        assert_eq!(segment_records(batch, 1024), 8 * batch);
        assert_eq!(segment_records(batch, usize::MAX), 8 * batch);
        assert_eq!(segment_records(0, 0), 1);
        assert_eq!(segments_per_round(2, batch, batch), 8);
        assert_eq!(segments_per_round(2, batch, 2 * batch), 4);
        assert_eq!(segments_per_round(2, batch, 8 * batch), 2);
        assert_eq!(segments_per_round(3, batch, 3 * batch), 4);
    }

    #[test]
    fn records_before_agrees_with_a_binary_search() {
        for len in 0..40usize {
            let times: Vec<usize> = (0..len).collect();
            for bound in 0..=len + 1 {
                assert_eq!(
                    records_before(&times, |t| *t < bound),
                    times.partition_point(|t| *t < bound),
                    "{len} records, bound {bound}"
                );
            }
        }
    }
}
