//! A cut known while a run is built: the run keeps of what lies outside it only
//! what the merge's cut ([`crate::cut`]) will use, so that records outside the
//! window are neither spilled, nor written into a shard's part, nor merged.
//!
//! What the merge's cut uses of a record before its window's start is small and
//! known exactly: per (thread, type), the stack of values left open (a 0 closes
//! the innermost, at most [`MAX_CARRIED_DEPTH`] deep) or the last value of a
//! type whose values hold; per thread, the state that straddles the start. It
//! uses nothing of a communication before the start, nor of anything after the
//! end. So, for a window in the run's own clock that holds the merge's window:
//!
//! * a record after the window's end is dropped when pushed;
//! * before its start, a communication, and a state that ends at or before the
//!   start, are dropped when pushed; a state that ends later is kept as it is;
//! * event records before the start are followed, in the order the merge would
//!   meet them, by what the cut tracks of them ([`Carried`]) when the run is
//!   finished, instead of being kept (a spill writes them apart, to be read back
//!   once in order: a later spill may hold earlier ones); the finished run gets,
//!   per thread, a few records just before the start that make the cut track the
//!   same.
//!
//! Every record left out still counts in the run's span and thread table.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use crate::chunked::Pairs;
use crate::pcf::{Timing, MAX_CARRIED_DEPTH};
use crate::record::{Body, EventPair, LocalThread, Record, Value, NO_SHARED};
use crate::spill::{ChunkReader, DecodedBody, SpilledChunk, READ_BUFFER};

/// The window a run keeps (its own clock) and what it carries of the events
/// before the start.
pub(crate) struct KeepWindow {
    /// Events before this time are reduced to what the cut tracks of them.
    pub(crate) start: i64,
    /// Records after this time are dropped.
    pub(crate) end: i64,
    carried: BTreeMap<(LocalThread, u32), Carried>,
    /// What the run carries cannot be made to track what the records would have
    /// (a full stack of a type whose timing is not known, see
    /// [`KeepWindow::carried_records`]): the run must be built whole.
    pub(crate) broken: bool,
    /// Records pushed but not stored (dropped, or carried).
    pub(crate) dropped: u64,
    /// The events before the start that spills took out, sorted in each chunk,
    /// followed when the run is finished (a later spill may hold earlier ones).
    pub(crate) spilled_before: Vec<SpilledChunk>,
}

/// What the merge's cut tracks of one (thread, type)'s values before its
/// window, whichever way the type crosses the start: the stack an interval
/// type leaves open, and whether the last value was a 0 (a value that holds is
/// then none; else it is the top of the stack).
#[derive(Default)]
struct Carried {
    /// Innermost last; a deque: a type whose values are never closed (a
    /// sampled counter) drops its oldest at every value once full.
    stack: VecDeque<EventPair>,
    last_closed: bool,
}

impl KeepWindow {
    pub(crate) fn new(start: i64, end: i64) -> Self {
        KeepWindow {
            start,
            end,
            carried: BTreeMap::new(),
            broken: false,
            dropped: 0,
            spilled_before: Vec::new(),
        }
    }

    /// Whether `record` is of no use to the cut, whatever else the run holds.
    #[inline]
    pub(crate) fn drops(&self, record: &Record) -> bool {
        if record.time > self.end {
            return true;
        }
        if record.time >= self.start {
            return false;
        }
        match record.body {
            Body::Comm { .. } => true,
            Body::State { end, .. } => end <= self.start,
            Body::Events { .. } => false,
        }
    }

    #[inline]
    fn carried_here(&self, record: &Record) -> bool {
        record.time < self.start && matches!(record.body, Body::Events { .. })
    }

    /// Takes the events before the start out of one thread's records (sorted
    /// stretches of `chunks` ending at `ends`), in stretch order: sorted
    /// stably by (time, rank), they are in the order the merge meets them.
    pub(crate) fn take_before(
        &mut self,
        chunks: &mut [Vec<Record>],
        ends: &mut Vec<usize>,
    ) -> Vec<Record> {
        // Each stretch is sorted: its records before the start come first.
        let mut before: Vec<Record> = Vec::new();
        let (mut at, mut chunk_start, mut chunk) = (0, 0, 0);
        for &end in ends.iter() {
            while at < end {
                while at >= chunk_start + chunks[chunk].len() {
                    chunk_start += chunks[chunk].len();
                    chunk += 1;
                }
                let r = &chunks[chunk][at - chunk_start];
                if r.time >= self.start {
                    break;
                }
                if self.carried_here(r) {
                    before.push(*r);
                }
                at += 1;
            }
            at = end;
        }
        if before.is_empty() {
            return before;
        }
        self.dropped += before.len() as u64;
        // Out of the stretches, which keep their order.
        let mut kept_ends = Vec::with_capacity(ends.len());
        let (mut index, mut kept, mut stretch) = (0, 0, 0);
        for chunk in chunks.iter_mut() {
            chunk.retain(|r| {
                while stretch < ends.len() && ends[stretch] == index {
                    kept_ends.push(kept);
                    stretch += 1;
                }
                index += 1;
                let taken = r.time < self.start && matches!(r.body, Body::Events { .. });
                kept += usize::from(!taken);
                !taken
            });
        }
        kept_ends.extend(std::iter::repeat_n(kept, ends.len() - stretch));
        kept_ends.dedup();
        kept_ends.retain(|&e| e > 0);
        *ends = kept_ends;
        before
    }

    /// Follows one event record of `thread`, whose pairs are `pairs`, as the
    /// merge's cut tracks it (a thread's records in the merge's order).
    pub(crate) fn follow<'p>(
        &mut self,
        thread: LocalThread,
        closing: bool,
        pairs: impl Iterator<Item = &'p EventPair>,
    ) {
        for pair in pairs {
            let c = self.carried.entry((thread, pair.ty)).or_default();
            if closing || pair.value() == Value::Raw(0) {
                c.stack.pop_back();
                c.last_closed = true;
            } else {
                c.stack.push_back(*pair);
                if c.stack.len() > MAX_CARRIED_DEPTH {
                    c.stack.pop_front();
                }
                c.last_closed = false;
            }
        }
    }

    /// Follows the events that spills wrote apart ([`KeepWindow::spilled_before`],
    /// each chunk sorted by (time, rank, thread)), merged as the run's streams
    /// are: by (time, rank, thread), ties to the earlier chunk.
    pub(crate) fn follow_spilled(&mut self) -> std::io::Result<()> {
        let chunks = std::mem::take(&mut self.spilled_before);
        let mut readers = Vec::with_capacity(chunks.len());
        let mut heads = BinaryHeap::new();
        for (index, chunk) in chunks.iter().enumerate() {
            let mut reader = ChunkReader::open(chunk, READ_BUFFER)?;
            if reader.advance()? {
                heads.push(Reverse((reader.time, reader.rank(), reader.thread, index)));
            }
            readers.push(reader);
        }
        while let Some(Reverse((_, _, thread, index))) = heads.pop() {
            let reader = &mut readers[index];
            if let DecodedBody::Events { closing } = reader.body {
                let pairs = std::mem::take(&mut reader.pairs);
                self.follow(thread, closing, pairs.iter());
                readers[index].pairs = pairs;
            }
            let reader = &mut readers[index];
            if reader.advance()? {
                heads.push(Reverse((reader.time, reader.rank(), reader.thread, index)));
            }
        }
        Ok(())
    }

    /// The records of `thread` (at `start - 2` and `start - 1`) that make the
    /// merge's cut track what its events before the start left: per type, its
    /// open values pushed in nesting order (one record per level); a type whose
    /// last value was a 0 over values still open gets one more value and a 0,
    /// which leaves the stack as it was for an interval type and nothing for a
    /// type whose values hold. Only when that stack is full is the type's
    /// `timing` needed (none known: the run is [`KeepWindow::broken`]).
    pub(crate) fn carried_records(
        &mut self,
        thread: LocalThread,
        timing: &dyn Fn(u32) -> Option<Timing>,
        pairs: &mut Pairs,
    ) -> Vec<Record> {
        let mut pushes: Vec<Vec<EventPair>> = Vec::new();
        let mut closed: Vec<EventPair> = Vec::new();
        let range = (thread, 0)..=(thread, u32::MAX);
        for (&(_, ty), c) in self.carried.range(range) {
            let Some(&top) = c.stack.back() else {
                continue;
            };
            let mut values: Vec<EventPair> = c.stack.iter().copied().collect();
            if c.last_closed {
                if values.len() < MAX_CARRIED_DEPTH {
                    values.push(top);
                    closed.push(top);
                } else {
                    match timing(ty) {
                        Some(Timing::Interval) => {}
                        Some(Timing::Level | Timing::Point) => continue,
                        None => {
                            self.broken = true;
                            continue;
                        }
                    }
                }
            }
            for (level, value) in values.into_iter().enumerate() {
                if pushes.len() <= level {
                    pushes.push(Vec::new());
                }
                pushes[level].push(value);
            }
        }
        let record = |list: &[EventPair], time, closing, pairs: &mut Pairs| {
            let (first, count) = pairs.push(list);
            Record {
                time,
                body: Body::Events {
                    first,
                    count,
                    shared: NO_SHARED,
                    closing,
                },
            }
        };
        let mut records: Vec<Record> = pushes
            .iter()
            .map(|level| record(level, self.start.saturating_sub(2), false, pairs))
            .collect();
        if !closed.is_empty() {
            records.push(record(&closed, self.start.saturating_sub(1), true, pairs));
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::{GlobalThread, NodeInfo, TaskInfo, TraceLayout};
    use crate::pcf::{EventTypeInfo, PcfCatalog, StateInfo, Timing, ValueLabels};
    use crate::record::{Comm, EventPair};
    use crate::run::{Run, RunBuilder};
    use crate::spill::{MemoryBudget, SpillPolicy};
    use crate::{write_trace_cut, Cut, MergeInput, OutputPaths, TimeWindow};

    const RANGE: u32 = 100;
    const MARK: u32 = 200;
    const SAMPLE: u32 = 300;
    /// Added to the run's times to put them on the common clock.
    const OFFSET: i64 = 1_000;

    fn catalog() -> PcfCatalog {
        PcfCatalog {
            states: (0..3)
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

    fn timing(ty: u32) -> Option<Timing> {
        catalog()
            .types
            .iter()
            .find(|t| t.ty == ty)
            .map(|t| t.timing)
    }

    /// A run of two threads pushed as a producer of several passes would, in
    /// any order: ranges that nest and ranges that overlap without nesting (two
    /// passes of the same type on one thread), ranges nested deeper than a cut
    /// carries and closed over, values that hold (0 among them, and more than a
    /// cut carries before a 0), marks, states tiling each thread, messages.
    /// With `window` (run clock), built with [`RunBuilder::keep_window`]; with
    /// `spill`, in tiny chunks there.
    fn run(window: Option<(i64, i64)>, spill: Option<&std::path::Path>) -> Run {
        let mut b = match spill {
            Some(dir) => RunBuilder::with_spill(SpillPolicy {
                dir: dir.to_path_buf(),
                chunk_bytes: 256,
                budget: MemoryBudget::new(0),
            }),
            None => RunBuilder::new(),
        };
        if let Some((start, end)) = window {
            b.keep_window(start, end);
        }
        b.add_thread(0);
        b.add_thread(1);
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as i64
        };
        for pass in 0..2 {
            for _ in 0..300 {
                let begin = next(2_000);
                let length = 1 + next(if pass == 0 { 40 } else { 400 });
                let value = 1 + next(5);
                b.interval(0, begin, begin + length, &[EventPair::raw(RANGE, value)]);
            }
        }
        // Nested deeper than a cut carries, and closed over at 301.
        for k in 0..70 {
            b.interval(1, 100 + k, 1_900 - k, &[EventPair::raw(RANGE, 10 + k)]);
        }
        b.interval(1, 300, 301, &[EventPair::raw(RANGE, 99)]);
        for t in 0..2 {
            for _ in 0..200 {
                let at = next(2_000);
                b.events(t, at, &[EventPair::raw(SAMPLE, next(4))]);
                b.events(t, next(2_000), &[EventPair::raw(MARK, 1 + next(9))]);
            }
            let mut at = 0;
            while at < 2_000 {
                let end = at + 1 + next(150);
                b.state(t, at, end, next(3) as u32);
                at = end;
            }
        }
        // More values that hold than a cut carries, then a 0.
        for k in 0..70 {
            b.events(1, 1_000 + k, &[EventPair::raw(SAMPLE, 5 + k)]);
        }
        b.events(1, 1_100, &[EventPair::raw(SAMPLE, 0)]);
        for _ in 0..100 {
            let send = next(2_000);
            let recv = send + next(300);
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
        let (run, broken) = b.finish_window(&timing).unwrap();
        assert!(!broken);
        run
    }

    /// The trace of `run` cut to `window` (common clock).
    fn cut_trace(dir: &std::path::Path, name: &str, run: Run, window: TimeWindow) -> String {
        let paths = OutputPaths::for_trace(&dir.join(format!("{name}.prv"))).unwrap();
        let layout = TraceLayout {
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
        };
        let inputs = [MergeInput {
            run,
            time_offset: OFFSET,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let cut = Cut { window };
        write_trace_cut(
            &paths,
            &layout,
            &inputs,
            &catalog(),
            Some(&cut),
            &mut |_| {},
        )
        .unwrap();
        std::fs::read_to_string(&paths.prv).unwrap()
    }

    /// A run kept to a window holding the cut's gives the cut's trace byte for
    /// byte, in memory and spilled, and holds little more than the window.
    #[test]
    fn a_run_kept_to_the_window_gives_the_same_cut() {
        let dir = tempfile::tempdir().unwrap();
        for (start, end) in [
            (700, 900),
            (1_050, 1_200),
            (300, 301),
            (0, 2_500),
            (1_500, 1_600),
        ] {
            let window = TimeWindow {
                start: start + OFFSET,
                end: end + OFFSET,
            };
            let whole = run(None, None);
            let records = whole.len();
            let expected = cut_trace(dir.path(), "whole", whole, window);
            for margin in [0, 13] {
                let keep = Some((start - margin, end + margin));
                let kept = run(keep, None);
                if end - start <= 200 {
                    assert!(
                        kept.len() * 4 < records,
                        "kept {} of {records} records for [{start}, {end}]",
                        kept.len()
                    );
                }
                let name = format!("kept{start}_{margin}");
                assert_eq!(cut_trace(dir.path(), &name, kept, window), expected);
                let spill = dir.path().join(format!("spill{start}_{margin}"));
                std::fs::create_dir_all(&spill).unwrap();
                let spilled = run(keep, Some(&spill));
                assert!(!spilled.chunks.is_empty());
                let name = format!("spilled{start}_{margin}");
                assert_eq!(cut_trace(dir.path(), &name, spilled, window), expected);
            }
        }
    }
}
