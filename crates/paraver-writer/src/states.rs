//! Turns possibly nested or overlapping state intervals into the non-overlapping,
//! begin-ordered state records Paraver needs (paraver-format.md §2.6).
//!
//! Intervals come in two layers: calls (the foreground) and a background that
//! says what a thread does between calls (on or off a CPU). Any open call decides
//! the state over the background.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::PathBuf;

use crate::record::LocalThread;
use crate::run::RunBuilder;
use crate::spill::{read_from_start, spill_file};
use crate::WriteError;

#[derive(Clone, Copy, Debug)]
struct Interval {
    thread: LocalThread,
    begin: i64,
    end: i64,
    state: u32,
}

/// Order of the sweep: by thread and begin; outer intervals first when two begin
/// together, so the inner one ends on top.
type SweepKey = (LocalThread, i64, Reverse<i64>);

/// Marks a background interval's state (Extrae's states are small numbers), so
/// that intervals stay 24 bytes in memory and on disk.
const BACKGROUND: u32 = 1 << 31;

impl Interval {
    fn key(&self) -> SweepKey {
        (self.thread, self.begin, Reverse(self.end))
    }
}

/// Collects state intervals of one run; the most recently begun interval that is
/// still open decides the state (the innermost call of a nest). With a spill
/// directory, intervals beyond `max_in_memory` are sorted and written to
/// temporary files, and merged back when tiling: memory stays bounded however
/// many calls a report holds.
#[derive(Default)]
pub struct StateTiler {
    /// Intervals of each thread in the order they were added: producers add a
    /// thread's intervals in begin order, pass after pass, so sorting them is
    /// merging a few sorted stretches.
    threads: Vec<Vec<Interval>>,
    /// Intervals in `threads`.
    held: usize,
    spill: Option<(PathBuf, usize)>,
    chunks: Vec<IntervalChunk>,
    spill_error: Option<io::Error>,
    /// Per thread, what a cut left out where rows are read (see
    /// [`StateTiler::left_out_before`]).
    left_out: Vec<LeftOut>,
}

/// The intervals of one thread that a cut left out: the earliest begin of those
/// that end before the window, and of those that begin after it.
#[derive(Clone, Copy, Debug, Default)]
struct LeftOut {
    before: Option<i64>,
    after: Option<i64>,
}

impl StateTiler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A tiler that spills to `dir` when it holds `max_bytes` of intervals.
    pub fn with_spill(dir: PathBuf, max_bytes: usize) -> Self {
        let max_in_memory = (max_bytes / std::mem::size_of::<Interval>()).max(16);
        StateTiler {
            spill: Some((dir, max_in_memory)),
            ..Self::default()
        }
    }

    /// A call (or anything else the thread is in) with its state.
    pub fn add(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        self.push(thread, begin, end, state & !BACKGROUND);
    }

    /// What the thread does when no interval of [`StateTiler::add`] covers it
    /// (running on a CPU, switched out): shown where no call is open, instead of
    /// the tiling's `fill`. Background intervals of a thread should not overlap.
    pub fn add_background(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        self.push(thread, begin, end, state | BACKGROUND);
    }

    fn push(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        if end <= begin || thread == crate::record::DISCARDED {
            return;
        }
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, Vec::new);
        }
        self.threads[t].push(Interval {
            thread,
            begin,
            end,
            state,
        });
        self.held += 1;
        if matches!(&self.spill, Some((_, max)) if self.held >= *max) {
            if let Err(e) = self.spill_chunk() {
                self.spill_error.get_or_insert(e);
            }
        }
    }

    /// An interval of `thread` from `begin` that ends before a cut's window and
    /// is left out where it is read. Only what is open when the window starts
    /// reaches the cut trace; what this interval still decides is that the
    /// thread's tiling (the fill between intervals) starts no later than `begin`.
    pub fn left_out_before(&mut self, thread: LocalThread, begin: i64) {
        if let Some(l) = self.left_out_mut(thread) {
            l.before = Some(l.before.map_or(begin, |b| b.min(begin)));
        }
    }

    /// An interval of `thread` from `begin` that begins after a cut's window and
    /// is left out where it is read: the fill still runs up to the earliest such
    /// begin, so what the window's end clips is the uncut tiling's.
    pub fn left_out_after(&mut self, thread: LocalThread, begin: i64) {
        if let Some(l) = self.left_out_mut(thread) {
            l.after = Some(l.after.map_or(begin, |b| b.min(begin)));
        }
    }

    fn left_out_mut(&mut self, thread: LocalThread) -> Option<&mut LeftOut> {
        if thread == crate::record::DISCARDED {
            return None;
        }
        let t = thread as usize;
        if t >= self.left_out.len() {
            self.left_out.resize_with(t + 1, LeftOut::default);
        }
        Some(&mut self.left_out[t])
    }

    /// Chunks of intervals written to disk so far.
    pub fn spilled_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Sorts each thread's intervals by sweep key (stably: equal keys keep the
    /// order they were added in).
    fn sort_threads(&mut self) {
        for intervals in &mut self.threads {
            if !intervals.is_sorted_by_key(Interval::key) {
                intervals.sort_by_key(Interval::key);
            }
        }
    }

    /// Every interval held, sorted by sweep key (threads in order), emptied out.
    fn take_sorted(&mut self) -> Vec<Interval> {
        self.sort_threads();
        let mut all = Vec::with_capacity(self.held);
        for intervals in &mut self.threads {
            all.append(intervals);
        }
        self.held = 0;
        all
    }

    fn spill_chunk(&mut self) -> io::Result<()> {
        if self.spill.is_none() || self.spill_error.is_some() {
            return Ok(());
        }
        self.sort_threads();
        let Some((dir, _)) = &self.spill else {
            return Ok(());
        };
        // Written from each thread's own buffer, in thread order (what
        // `take_sorted` would gather): no buffer as large as all of them
        // allocated, faulted in and freed at each spill, and the threads'
        // buffers keep their room for what follows.
        let chunk = IntervalChunk::write(dir, self.threads.iter().flatten(), self.held);
        for intervals in &mut self.threads {
            // A buffer less than half used since the last spill is cut to
            // what it held: threads fill in turn (a report's streams, then
            // its CPU threads), and each keeping the room it once needed
            // held several times the tiler's share (issue 28: 88 MB of
            // intervals for a 32 MB share).
            if intervals.len() * 2 < intervals.capacity() {
                intervals.shrink_to(intervals.len());
            }
            intervals.clear();
        }
        self.held = 0;
        self.chunks.push(chunk?);
        Ok(())
    }

    /// Writes the tiles into `run`. Between the first begin and the last end of a
    /// thread, time covered by no interval (of either layer) gets `fill(thread)`
    /// when that is `Some`.
    pub fn tile_into(
        mut self,
        run: &mut RunBuilder,
        fill: impl Fn(LocalThread) -> Option<u32>,
    ) -> Result<(), WriteError> {
        let dir = self
            .spill
            .as_ref()
            .map(|(d, _)| d.clone())
            .unwrap_or_default();
        if let Some(source) = self.spill_error.take() {
            return Err(WriteError::Spill { dir, source });
        }
        let left_out = std::mem::take(&mut self.left_out);
        if self.chunks.is_empty() {
            self.sort_threads();
            let sorted = self.threads.iter().flatten().copied().map(Ok);
            tile_sorted(sorted, run, fill, &left_out).map_err(WriteError::SpillRead)
        } else {
            let sorted = self.take_sorted();
            let merged =
                MergedIntervals::new(&self.chunks, &sorted).map_err(WriteError::SpillRead)?;
            tile_sorted(merged, run, fill, &left_out).map_err(WriteError::SpillRead)
        }
    }
}

/// Tiles intervals sorted by [`Interval::key`], one thread after the other.
/// Threads whose intervals were all left out by a cut get the fill between the
/// last one before the window and the first after it, as they would uncut.
fn tile_sorted(
    intervals: impl Iterator<Item = io::Result<Interval>>,
    run: &mut RunBuilder,
    fill: impl Fn(LocalThread) -> Option<u32>,
    left_out: &[LeftOut],
) -> io::Result<()> {
    let left_out_of = |t: LocalThread| left_out.get(t as usize).copied().unwrap_or_default();
    let mut swept = vec![false; left_out.len()];
    let mut sweep: Option<ThreadSweep> = None;
    for interval in intervals {
        let interval = interval?;
        if sweep.as_ref().map(|s| s.out.thread) != Some(interval.thread) {
            if let Some(done) = sweep.take() {
                let after = left_out_of(done.out.thread).after;
                done.finish(run, after);
            }
            let t = interval.thread;
            if let Some(seen) = swept.get_mut(t as usize) {
                *seen = true;
            }
            sweep = Some(ThreadSweep::new(&interval, fill(t), left_out_of(t).before));
        }
        if let Some(s) = sweep.as_mut() {
            s.push(&interval, run);
        }
    }
    if let Some(done) = sweep {
        let after = left_out_of(done.out.thread).after;
        done.finish(run, after);
    }
    for (t, l) in left_out.iter().enumerate() {
        let t = t as LocalThread;
        if let (false, Some(begin), Some(end), Some(state)) =
            (swept[t as usize], l.before, l.after, fill(t))
        {
            let mut out = TileSink::new(t);
            out.tile(begin, end, state, run);
            out.flush(run);
        }
    }
    Ok(())
}

/// Sweeps one thread's intervals (in begin order) keeping a stack of open ones.
struct ThreadSweep {
    open: Vec<(i64, u32)>, // (end, state), latest begun on top
    cursor: i64,
    fill: Option<u32>,
    out: TileSink,
}

impl ThreadSweep {
    /// `left_out_before`: the earliest begin of the thread's intervals a cut
    /// left out before its window (the tiling starts there).
    fn new(first: &Interval, fill: Option<u32>, left_out_before: Option<i64>) -> Self {
        ThreadSweep {
            open: Vec::new(),
            cursor: left_out_before.map_or(first.begin, |b| b.min(first.begin)),
            fill,
            out: TileSink::new(first.thread),
        }
    }

    fn push(&mut self, iv: &Interval, run: &mut RunBuilder) {
        close_until(
            &mut self.open,
            &mut self.cursor,
            iv.begin,
            &mut self.out,
            run,
        );
        if self.open.is_empty() && self.cursor < iv.begin {
            if let Some(state) = self.fill {
                self.out.tile(self.cursor, iv.begin, state, run);
            }
        }
        if let Some(state) = shown(&self.open) {
            self.out.tile(self.cursor, iv.begin, state, run);
        }
        self.cursor = self.cursor.max(iv.begin);
        self.open.push((iv.end, iv.state));
    }

    /// `left_out_after`: the earliest begin of the thread's intervals a cut left
    /// out after its window: the tiles up to there are the uncut tiling's.
    fn finish(mut self, run: &mut RunBuilder, left_out_after: Option<i64>) {
        if let Some(next) = left_out_after.filter(|&next| next > self.cursor) {
            close_until(&mut self.open, &mut self.cursor, next, &mut self.out, run);
            let state = shown(&self.open).or(self.fill.filter(|_| self.open.is_empty()));
            if let Some(state) = state {
                self.out.tile(self.cursor, next, state, run);
            }
            self.cursor = next;
        }
        close_until(
            &mut self.open,
            &mut self.cursor,
            i64::MAX,
            &mut self.out,
            run,
        );
        self.out.flush(run);
    }
}

/// Emits tiles for every open interval that ends at or before `limit`.
fn close_until(
    open: &mut Vec<(i64, u32)>,
    cursor: &mut i64,
    limit: i64,
    out: &mut TileSink,
    run: &mut RunBuilder,
) {
    while let Some(first_end) = open.iter().map(|&(end, _)| end).min() {
        if first_end > limit {
            break;
        }
        let state = shown(open).expect("non-empty");
        out.tile(*cursor, first_end, state, run);
        *cursor = (*cursor).max(first_end);
        open.retain(|&(end, _)| end != first_end);
    }
}

/// The state of the open intervals: the latest begun call, else the latest begun
/// background interval.
fn shown(open: &[(i64, u32)]) -> Option<u32> {
    let latest = |background: bool| {
        open.iter()
            .rev()
            .find(|&&(_, state)| (state & BACKGROUND != 0) == background)
    };
    let &(_, state) = latest(false).or_else(|| latest(true))?;
    Some(state & !BACKGROUND)
}

/// Joins adjacent tiles of equal state before they become records.
struct TileSink {
    thread: LocalThread,
    pending: Option<(i64, i64, u32)>,
}

impl TileSink {
    fn new(thread: LocalThread) -> Self {
        TileSink {
            thread,
            pending: None,
        }
    }

    fn tile(&mut self, begin: i64, end: i64, state: u32, run: &mut RunBuilder) {
        if end <= begin {
            return;
        }
        match &mut self.pending {
            Some((_, p_end, p_state)) if *p_end == begin && *p_state == state => *p_end = end,
            _ => {
                self.flush(run);
                self.pending = Some((begin, end, state));
            }
        }
    }

    fn flush(&mut self, run: &mut RunBuilder) {
        if let Some((begin, end, state)) = self.pending.take() {
            run.state(self.thread, begin, end, state);
        }
    }
}

/// Sorted intervals in an anonymous temporary file, 24 bytes each.
struct IntervalChunk {
    file: File,
    intervals: u64,
}

const INTERVAL_BYTES: usize = 24;

impl IntervalChunk {
    /// Writes the `count` intervals of `intervals`.
    fn write<'a>(
        dir: &std::path::Path,
        intervals: impl Iterator<Item = &'a Interval>,
        count: usize,
    ) -> io::Result<Self> {
        let (file, mut out) = spill_file(dir)?;
        for iv in intervals {
            let mut bytes = [0u8; INTERVAL_BYTES];
            bytes[0..4].copy_from_slice(&iv.thread.to_le_bytes());
            bytes[4..8].copy_from_slice(&iv.state.to_le_bytes());
            bytes[8..16].copy_from_slice(&iv.begin.to_le_bytes());
            bytes[16..24].copy_from_slice(&iv.end.to_le_bytes());
            out.write_all(&bytes)?;
        }
        out.flush()?;
        drop(out);
        Ok(IntervalChunk {
            file,
            intervals: count as u64,
        })
    }

    fn reader(&self) -> io::Result<IntervalReader> {
        Ok(IntervalReader {
            input: read_from_start(&self.file)?,
            left: self.intervals,
        })
    }
}

struct IntervalReader {
    input: BufReader<File>,
    left: u64,
}

impl IntervalReader {
    fn next_interval(&mut self) -> io::Result<Option<Interval>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut b = [0u8; INTERVAL_BYTES];
        self.input.read_exact(&mut b)?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let i64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            i64::from_le_bytes(x)
        };
        Ok(Some(Interval {
            thread: u32_at(0),
            state: u32_at(4),
            begin: i64_at(8),
            end: i64_at(16),
        }))
    }
}

/// The spilled chunks (in spill order) and the sorted in-memory intervals, merged
/// by sweep key; equal keys come in the order they were added.
struct MergedIntervals<'a> {
    readers: Vec<IntervalReader>,
    memory: std::slice::Iter<'a, Interval>,
    heads: Vec<Option<Interval>>,
    heap: BinaryHeap<Reverse<(SweepKey, usize)>>,
}

impl<'a> MergedIntervals<'a> {
    fn new(chunks: &[IntervalChunk], memory: &'a [Interval]) -> io::Result<Self> {
        let readers = chunks
            .iter()
            .map(IntervalChunk::reader)
            .collect::<io::Result<_>>()?;
        let mut merged = MergedIntervals {
            readers,
            memory: memory.iter(),
            heads: vec![None; chunks.len() + 1],
            heap: BinaryHeap::new(),
        };
        for source in 0..merged.heads.len() {
            merged.refill(source)?;
        }
        Ok(merged)
    }

    /// Reads the next interval of `source` (the last source is memory).
    fn refill(&mut self, source: usize) -> io::Result<()> {
        let next = match self.readers.get_mut(source) {
            Some(reader) => reader.next_interval()?,
            None => self.memory.next().copied(),
        };
        if let Some(iv) = next {
            self.heap.push(Reverse((iv.key(), source)));
        }
        self.heads[source] = next;
        Ok(())
    }
}

impl Iterator for MergedIntervals<'_> {
    type Item = io::Result<Interval>;

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((_, source)) = self.heap.pop()?;
        let interval = self.heads[source].take()?;
        match self.refill(source) {
            Ok(()) => Some(Ok(interval)),
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Body;

    fn tiles(intervals: &[(i64, i64, u32)], fill: Option<u32>) -> Vec<(i64, i64, u32)> {
        let mut tiler = StateTiler::new();
        for &(b, e, s) in intervals {
            tiler.add(0, b, e, s);
        }
        let mut run = RunBuilder::new();
        tiler.tile_into(&mut run, |_| fill).unwrap();
        run.finish()
            .unwrap()
            .sorted_records()
            .iter()
            .map(|(_, r)| match r.body {
                Body::State { end, state } => (r.time, end, state),
                _ => unreachable!(),
            })
            .collect()
    }

    /// The tiles of one thread as a cut from `start` to `end` writes them: those
    /// that cross the window, clipped to it.
    fn clipped(tiles: &[(i64, i64, u32)], start: i64, end: i64) -> Vec<(i64, i64, u32)> {
        tiles
            .iter()
            .filter(|&&(b, e, _)| e > start && b <= end)
            .map(|&(b, e, s)| (b.max(start), e.min(end), s))
            .collect()
    }

    /// A fixed pseudo-random sequence: each call a number below its argument.
    fn xorshift() -> impl FnMut(u64) -> u64 {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Intervals a cut leaves out where they are read (wholly before or after
    /// its window) leave the tiling the window sees as it was.
    #[test]
    fn intervals_left_out_by_a_cut_keep_the_tiling_inside_it() {
        let mut random = xorshift();
        let mut next = |n: i64| random(n as u64) as i64;
        for case in 0..400 {
            // Calls on one thread, nested or one after the other, some overlapping.
            let mut intervals = Vec::new();
            let mut t = next(20);
            for _ in 0..2 + next(12) {
                let (b, len) = (t + next(15), 1 + next(30));
                intervals.push((b, b + len, 2 + next(3) as u32));
                t = b + next(20);
            }
            let last = intervals.iter().map(|i| i.1).max().unwrap();
            let start = next(last + 10);
            let end = start + next(last + 10 - start + 1);
            let fill = (case % 3 != 0).then_some(1);
            let whole = tiles(&intervals, fill);
            let mut tiler = StateTiler::new();
            for &(b, e, s) in &intervals {
                if e < start {
                    tiler.left_out_before(0, b);
                } else if b > end {
                    tiler.left_out_after(0, b);
                } else {
                    tiler.add(0, b, e, s);
                }
            }
            let mut run = RunBuilder::new();
            tiler.tile_into(&mut run, |_| fill).unwrap();
            let cut: Vec<(i64, i64, u32)> = run
                .finish()
                .unwrap()
                .sorted_records()
                .iter()
                .map(|(_, r)| match r.body {
                    Body::State { end, state } => (r.time, end, state),
                    _ => unreachable!(),
                })
                .collect();
            assert_eq!(
                clipped(&cut, start, end),
                clipped(&whole, start, end),
                "{intervals:?} cut to {start}..{end}, fill {fill:?}"
            );
        }
    }

    #[test]
    fn nested_interval_shows_inside_its_parent() {
        assert_eq!(
            tiles(&[(0, 100, 32), (10, 20, 17)], None),
            vec![(0, 10, 32), (10, 20, 17), (20, 100, 32)]
        );
    }

    #[test]
    fn gaps_are_filled_and_equal_neighbours_join() {
        assert_eq!(
            tiles(&[(0, 10, 5), (20, 30, 5), (30, 40, 5)], Some(1)),
            vec![(0, 10, 5), (10, 20, 1), (20, 40, 5)]
        );
    }

    /// Tiles of `intervals` (thread, begin, end, state) as (thread, begin, end, state).
    fn tiles_of(
        tiler: StateTiler,
        intervals: &[(u32, i64, i64, u32)],
    ) -> Vec<(u32, i64, i64, u32)> {
        let mut tiler = tiler;
        for &(t, b, e, s) in intervals {
            tiler.add(t, b, e, s);
        }
        let mut run = RunBuilder::new();
        tiler
            .tile_into(&mut run, |t| (t != 1).then_some(9))
            .unwrap();
        run.finish()
            .unwrap()
            .sorted_records()
            .iter()
            .map(|(thread, r)| match r.body {
                Body::State { end, state } => (*thread, r.time, end, state),
                _ => unreachable!(),
            })
            .collect()
    }

    /// Spilling in chunks of 16 intervals tiles exactly as in memory, intervals
    /// that begin and end together (with other states) included.
    #[test]
    fn spilled_intervals_tile_as_in_memory() {
        let mut next = xorshift();
        let intervals: Vec<(u32, i64, i64, u32)> = (0..2_000)
            .map(|_| {
                let begin = next(5_000) as i64;
                (
                    next(3) as u32,
                    begin,
                    begin + 1 + next(300) as i64,
                    next(6) as u32,
                )
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let in_memory = tiles_of(StateTiler::new(), &intervals);
        let spilled = tiles_of(
            StateTiler::with_spill(dir.path().to_path_buf(), 0),
            &intervals,
        );
        assert!(in_memory.len() > 1_000);
        assert_eq!(spilled, in_memory);
    }

    /// Calls win over the background; the background shows between calls and
    /// where there is no call, and the fill only where neither layer is.
    #[test]
    fn background_shows_where_no_call_is_open() {
        let mut tiler = StateTiler::new();
        // On a CPU 0..30, off 30..60, on 60..100; a call 20..70 (Synchronization)
        // and one 80..90 (I/O); a gap with nothing 100..110 before a last call.
        tiler.add_background(0, 0, 30, 1);
        tiler.add_background(0, 30, 60, 0);
        tiler.add_background(0, 60, 100, 1);
        tiler.add(0, 20, 70, 5);
        tiler.add(0, 80, 90, 12);
        tiler.add(0, 110, 120, 12);
        let mut run = RunBuilder::new();
        tiler.tile_into(&mut run, |_| Some(9)).unwrap();
        let tiles: Vec<(i64, i64, u32)> = run
            .finish()
            .unwrap()
            .sorted_records()
            .iter()
            .map(|(_, r)| match r.body {
                Body::State { end, state } => (r.time, end, state),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            tiles,
            vec![
                (0, 20, 1),
                (20, 70, 5),
                (70, 80, 1),
                (80, 90, 12),
                (90, 100, 1),
                (100, 110, 9),
                (110, 120, 12)
            ]
        );
    }

    #[test]
    fn partial_overlap_never_overlaps_in_output() {
        let out = tiles(&[(0, 50, 3), (40, 90, 4), (60, 70, 5)], Some(0));
        assert_eq!(out, vec![(0, 40, 3), (40, 60, 4), (60, 70, 5), (70, 90, 4)]);
    }
}
