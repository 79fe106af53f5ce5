//! Turns possibly nested or overlapping state intervals into the non-overlapping,
//! begin-ordered state records Paraver needs (paraver-format.md §2.6).

use crate::record::LocalThread;
use crate::run::RunBuilder;
use rayon::slice::ParallelSliceMut;

#[derive(Clone, Copy, Debug)]
struct Interval {
    thread: LocalThread,
    begin: i64,
    end: i64,
    state: u32,
}

/// Collects state intervals of one run; the most recently begun interval that is
/// still open decides the state (the innermost call of a nest).
#[derive(Default)]
pub struct StateTiler {
    intervals: Vec<Interval>,
}

impl StateTiler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        if end > begin {
            self.intervals.push(Interval {
                thread,
                begin,
                end,
                state,
            });
        }
    }

    /// Writes the tiles into `run`. Between the first begin and the last end of a
    /// thread, time covered by no interval gets `fill(thread)` when that is `Some`.
    pub fn tile_into(mut self, run: &mut RunBuilder, fill: impl Fn(LocalThread) -> Option<u32>) {
        // Outer intervals first when two begin together, so the inner one ends on top.
        self.intervals
            .par_sort_by_key(|i| (i.thread, i.begin, std::cmp::Reverse(i.end)));
        for group in self.intervals.chunk_by(|a, b| a.thread == b.thread) {
            let thread = group[0].thread;
            let mut out = TileSink::new(thread, run);
            tile_thread(group, fill(thread), &mut out);
            out.flush();
        }
    }
}

/// Sweeps one thread's intervals (sorted by begin) keeping a stack of open ones.
fn tile_thread(group: &[Interval], fill: Option<u32>, out: &mut TileSink) {
    let mut open: Vec<(i64, u32)> = Vec::new(); // (end, state), latest begun on top
    let mut cursor = group[0].begin;
    for iv in group {
        close_until(&mut open, &mut cursor, iv.begin, out);
        if open.is_empty() && cursor < iv.begin {
            if let Some(state) = fill {
                out.tile(cursor, iv.begin, state);
            }
        }
        if let Some(&(_, state)) = open.last() {
            out.tile(cursor, iv.begin, state);
        }
        cursor = cursor.max(iv.begin);
        open.push((iv.end, iv.state));
    }
    close_until(&mut open, &mut cursor, i64::MAX, out);
}

/// Emits tiles for every open interval that ends at or before `limit`.
fn close_until(open: &mut Vec<(i64, u32)>, cursor: &mut i64, limit: i64, out: &mut TileSink) {
    while let Some(first_end) = open.iter().map(|&(end, _)| end).min() {
        if first_end > limit {
            break;
        }
        let (_, state) = *open.last().expect("non-empty");
        out.tile(*cursor, first_end, state);
        *cursor = (*cursor).max(first_end);
        open.retain(|&(end, _)| end != first_end);
    }
}

/// Joins adjacent tiles of equal state before they become records.
struct TileSink<'a> {
    thread: LocalThread,
    run: &'a mut RunBuilder,
    pending: Option<(i64, i64, u32)>,
}

impl<'a> TileSink<'a> {
    fn new(thread: LocalThread, run: &'a mut RunBuilder) -> Self {
        TileSink {
            thread,
            run,
            pending: None,
        }
    }

    fn tile(&mut self, begin: i64, end: i64, state: u32) {
        if end <= begin {
            return;
        }
        match &mut self.pending {
            Some((_, p_end, p_state)) if *p_end == begin && *p_state == state => *p_end = end,
            _ => {
                self.flush();
                self.pending = Some((begin, end, state));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((begin, end, state)) = self.pending.take() {
            self.run.state(self.thread, begin, end, state);
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
        tiler.tile_into(&mut run, |_| fill);
        run.finish()
            .unwrap()
            .records
            .iter()
            .map(|r| match r.body {
                Body::State { end, state } => (r.time, end, state),
                _ => unreachable!(),
            })
            .collect()
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

    #[test]
    fn partial_overlap_never_overlaps_in_output() {
        let out = tiles(&[(0, 50, 3), (40, 90, 4), (60, 70, 5)], Some(0));
        assert_eq!(out, vec![(0, 40, 3), (40, 60, 4), (60, 70, 5), (70, 90, 4)]);
    }
}
