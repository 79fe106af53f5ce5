//! Sorted runs: what one producer (one report) hands to the merge.

use crate::names::NameTables;
use crate::record::{Body, Comm, EventPair, LocalThread, Record};

/// Collects the records of one producer in any order; `finish` sorts them.
///
/// Threads are numbered in the order the producer meets them; each may carry an
/// order key (its place in the final layout) so that sorting, and the numbering
/// `finish` gives, never depend on the order rows were read in.
#[derive(Default)]
pub struct RunBuilder {
    records: Vec<Record>,
    pairs: Vec<EventPair>,
    comms: Vec<Comm>,
    order_keys: Vec<u128>,
    pub names: NameTables,
}

impl RunBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new thread whose place among the run's threads is `order_key`.
    pub fn add_thread(&mut self, order_key: u128) -> LocalThread {
        self.order_keys.push(order_key);
        (self.order_keys.len() - 1) as LocalThread
    }

    fn order_key(&self, thread: LocalThread) -> u128 {
        self.order_keys
            .get(thread as usize)
            .copied()
            .unwrap_or(thread as u128)
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn push_pairs(&mut self, pairs: &[EventPair]) -> (u32, u32) {
        let first = self.pairs.len() as u32;
        self.pairs.extend_from_slice(pairs);
        (first, pairs.len() as u32)
    }

    /// Point event(s) at `time`.
    pub fn events(&mut self, thread: LocalThread, time: i64, pairs: &[EventPair]) {
        if pairs.is_empty() {
            return;
        }
        let (first, count) = self.push_pairs(pairs);
        self.records.push(Record {
            time,
            thread,
            body: Body::Events {
                first,
                count,
                closing: false,
            },
        });
    }

    /// An interval: `pairs` at `begin`, the same types with value 0 at `end`.
    /// A zero or negative length becomes 1 ns so the end still follows the begin.
    pub fn interval(&mut self, thread: LocalThread, begin: i64, end: i64, pairs: &[EventPair]) {
        if pairs.is_empty() {
            return;
        }
        let end = end.max(begin + 1);
        let (first, count) = self.push_pairs(pairs);
        for (time, closing) in [(begin, false), (end, true)] {
            self.records.push(Record {
                time,
                thread,
                body: Body::Events {
                    first,
                    count,
                    closing,
                },
            });
        }
    }

    /// A state record; callers make states of one thread non-overlapping
    /// (see [`crate::states::StateTiler`]).
    pub fn state(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        self.records.push(Record {
            time: begin,
            thread,
            body: Body::State { end, state },
        });
    }

    /// A communication from `sender` at `send_time` (logical = physical) to `comm.receiver`.
    pub fn comm(&mut self, sender: LocalThread, send_logical: i64, comm: Comm) {
        let index = self.comms.len() as u32;
        self.comms.push(comm);
        self.records.push(Record {
            time: send_logical,
            thread: sender,
            body: Body::Comm { index },
        });
    }

    /// Renumbers threads in order-key order (`old_of_new` says which thread each
    /// new number was), then sorts by (time, rank, thread), stably, so records of
    /// one thread at one time keep the order they were pushed in.
    pub fn finish(mut self) -> Run {
        let threads = self
            .records
            .iter()
            .map(|r| r.thread)
            .chain(self.comms.iter().map(|c| c.receiver))
            .max()
            .map_or(0, |t| t as usize + 1)
            .max(self.order_keys.len());
        let mut old_of_new: Vec<LocalThread> = (0..threads as LocalThread).collect();
        old_of_new.sort_by_key(|&t| (self.order_key(t), t));
        let mut new_of_old = vec![0; threads];
        for (new, &old) in old_of_new.iter().enumerate() {
            new_of_old[old as usize] = new as LocalThread;
        }
        for r in &mut self.records {
            r.thread = new_of_old[r.thread as usize];
        }
        for c in &mut self.comms {
            c.receiver = new_of_old[c.receiver as usize];
        }
        self.records.sort_by_key(|r| (r.time, r.rank(), r.thread));
        let (mut min_time, mut max_time) = (i64::MAX, i64::MIN);
        for r in &self.records {
            min_time = min_time.min(r.first_time(&self.comms));
            max_time = max_time.max(r.last_time(&self.comms));
        }
        Run {
            old_of_new,
            records: self.records,
            pairs: self.pairs,
            comms: self.comms,
            names: self.names,
            min_time,
            max_time,
        }
    }
}

/// Records sorted by (time, rank, thread), with the payloads they point into.
pub struct Run {
    /// For each thread number of the run, the number the producer had given it.
    pub old_of_new: Vec<LocalThread>,
    pub records: Vec<Record>,
    pub pairs: Vec<EventPair>,
    pub comms: Vec<Comm>,
    pub names: NameTables,
    /// Earliest and latest time touched by any record (`i64::MAX`/`MIN` when empty).
    pub min_time: i64,
    pub max_time: i64,
}

impl Run {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn pairs_of(&self, first: u32, count: u32) -> &[EventPair] {
        &self.pairs[first as usize..(first + count) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Value;

    #[test]
    fn ends_sort_before_begins_at_the_same_time() {
        let mut b = RunBuilder::new();
        b.interval(0, 10, 20, &[EventPair::raw(1, 5)]);
        b.interval(0, 0, 10, &[EventPair::raw(1, 4)]);
        let run = b.finish();
        let seq: Vec<(i64, bool)> = run
            .records
            .iter()
            .map(|r| match r.body {
                Body::Events { closing, .. } => (r.time, closing),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(seq, vec![(0, false), (10, true), (10, false), (20, true)]);
        assert_eq!((run.min_time, run.max_time), (0, 20));
    }

    #[test]
    fn zero_length_interval_keeps_its_end_after_its_begin() {
        let mut b = RunBuilder::new();
        b.interval(0, 7, 7, &[EventPair::raw(1, 5)]);
        let run = b.finish();
        assert_eq!(run.records[0].time, 7);
        assert_eq!(run.records[1].time, 8);
        assert_eq!(run.pairs[0].value, Value::Raw(5));
    }
}
