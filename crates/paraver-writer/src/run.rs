//! Sorted runs: what one producer (one report) hands to the merge.
//!
//! A run keeps its records in memory until its share of the memory limit is used
//! (see [`SpillPolicy`]); then it sorts them and writes them to a temporary file
//! (a chunk), and starts over. The merge reads the chunks back in push order, so
//! the output is byte-identical whether a run spilled or not.

use rayon::slice::ParallelSliceMut;

use crate::names::NameTables;
use crate::record::{Body, Comm, EventPair, LocalThread, Record, DISCARDED};
use crate::spill::{write_chunk, SpillPolicy, SpilledChunk};
use crate::WriteError;

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
    spill: Option<SpillPolicy>,
    chunks: Vec<SpilledChunk>,
    spill_error: Option<std::io::Error>,
    threads_seen: usize,
    min_time: i64,
    max_time: i64,
    /// Bytes the producer holds outside the run while building it (see
    /// [`RunBuilder::set_outside_bytes`]).
    outside_bytes: usize,
    /// Begin of the last state pushed on each thread: states that come in
    /// strictly increasing begin order per thread never tie in the sort.
    last_state_begin: Vec<i64>,
    /// A thread got a state that did not begin after its previous one: ties
    /// between states are then possible, and only a stable sort orders them.
    states_unordered: bool,
}

impl RunBuilder {
    pub fn new() -> Self {
        RunBuilder {
            min_time: i64::MAX,
            max_time: i64::MIN,
            ..Default::default()
        }
    }

    /// A builder that spills sorted chunks to disk as `policy` says.
    pub fn with_spill(policy: SpillPolicy) -> Self {
        RunBuilder {
            spill: Some(policy),
            ..Self::new()
        }
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

    /// Records pushed so far, spilled or not.
    pub fn len(&self) -> usize {
        self.records.len()
            + self
                .chunks
                .iter()
                .map(|c| c.records as usize)
                .sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push_pairs(&mut self, pairs: &[EventPair]) -> (u32, u32) {
        let first = self.pairs.len() as u32;
        self.pairs.extend_from_slice(pairs);
        (first, pairs.len() as u32)
    }

    fn push(&mut self, record: Record, last: i64) {
        self.min_time = self.min_time.min(record.time);
        self.max_time = self.max_time.max(last).max(record.time);
        self.threads_seen = self.threads_seen.max(record.thread as usize + 1);
        self.records.push(record);
    }

    /// Point event(s) at `time`.
    pub fn events(&mut self, thread: LocalThread, time: i64, pairs: &[EventPair]) {
        if pairs.is_empty() || thread == DISCARDED {
            return;
        }
        let (first, count) = self.push_pairs(pairs);
        let body = Body::Events {
            first,
            count,
            closing: false,
        };
        self.push(Record { time, thread, body }, time);
        self.spill_if_full();
    }

    /// An interval: `pairs` at `begin`, the same types with value 0 at `end`.
    /// A zero or negative length becomes 1 ns so the end still follows the begin.
    pub fn interval(&mut self, thread: LocalThread, begin: i64, end: i64, pairs: &[EventPair]) {
        if pairs.is_empty() || thread == DISCARDED {
            return;
        }
        let end = end.max(begin + 1);
        let (first, count) = self.push_pairs(pairs);
        for (time, closing) in [(begin, false), (end, true)] {
            let body = Body::Events {
                first,
                count,
                closing,
            };
            self.push(Record { time, thread, body }, time);
        }
        self.spill_if_full();
    }

    /// A state record; callers make states of one thread non-overlapping
    /// (see [`crate::states::StateTiler`]).
    pub fn state(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        if thread == DISCARDED {
            return;
        }
        self.note_state_begin(thread, begin);
        let body = Body::State { end, state };
        self.push(
            Record {
                time: begin,
                thread,
                body,
            },
            end,
        );
        self.spill_if_full();
    }

    fn note_state_begin(&mut self, thread: LocalThread, begin: i64) {
        let thread = thread as usize;
        if thread >= self.last_state_begin.len() {
            self.last_state_begin.resize(thread + 1, i64::MIN);
        }
        let last = &mut self.last_state_begin[thread];
        self.states_unordered |= begin <= *last;
        *last = begin;
    }

    /// A communication from `sender` at `send_logical` to `comm.receiver`.
    pub fn comm(&mut self, sender: LocalThread, send_logical: i64, comm: Comm) {
        if sender == DISCARDED || comm.receiver == DISCARDED {
            return;
        }
        let index = self.comms.len() as u32;
        self.comms.push(comm);
        self.threads_seen = self.threads_seen.max(comm.receiver as usize + 1);
        let first = send_logical
            .min(comm.send_physical)
            .min(comm.recv_logical)
            .min(comm.recv_physical);
        let last = send_logical
            .max(comm.send_physical)
            .max(comm.recv_logical)
            .max(comm.recv_physical);
        self.min_time = self.min_time.min(first);
        let body = Body::Comm { index };
        self.push(
            Record {
                time: send_logical,
                thread: sender,
                body,
            },
            last,
        );
        self.spill_if_full();
    }

    /// Bytes held in memory.
    fn bytes(&self) -> usize {
        self.records.len() * std::mem::size_of::<Record>()
            + self.pairs.len() * std::mem::size_of::<EventPair>()
            + self.comms.len() * std::mem::size_of::<Comm>()
    }

    /// Bytes that the producer holds for as long as it builds this run (tables
    /// to join rows with): they come out of the run's share, so the run spills
    /// sooner. The run keeps at least an eighth of its share, so that chunks do not
    /// become tiny when the producer holds more than the share.
    pub fn set_outside_bytes(&mut self, bytes: usize) {
        self.outside_bytes = bytes;
    }

    fn spill_if_full(&mut self) {
        // Growing the records may double their buffer (and the stable sort that
        // `sort_records` falls back to takes one as large): count that in.
        let sorting = self.records.len() * std::mem::size_of::<Record>();
        let outside = self.outside_bytes;
        let full = matches!(&self.spill, Some(p)
            if self.bytes() + sorting >= p.chunk_bytes.saturating_sub(outside).max(p.chunk_bytes / 8));
        if full {
            if let Err(e) = self.spill_chunk() {
                self.spill_error.get_or_insert(e);
            }
        }
    }

    /// Sorts the in-memory records by (time, rank, order key) and writes them out.
    fn spill_chunk(&mut self) -> std::io::Result<()> {
        let Some(policy) = &self.spill else {
            return Ok(());
        };
        if self.records.is_empty() || self.spill_error.is_some() {
            return Ok(());
        }
        let push_order_known = !self.states_unordered && self.order_keys_unique();
        let keys = &self.order_keys;
        let key = |t: LocalThread| keys.get(t as usize).copied().unwrap_or(t as u128);
        sort_records(&mut self.records, push_order_known, key);
        let chunk = write_chunk(&policy.dir, &self.records, &self.pairs, &self.comms)?;
        self.chunks.push(chunk);
        self.records.clear();
        self.pairs.clear();
        self.comms.clear();
        Ok(())
    }

    /// Whether no two threads share an order key (then the spill's sort key
    /// tells threads apart, as the thread numbers do in `finish`).
    fn order_keys_unique(&self) -> bool {
        let threads = self.threads_seen.max(self.order_keys.len());
        let mut keys: Vec<u128> = (0..threads as LocalThread)
            .map(|t| self.order_key(t))
            .collect();
        keys.sort_unstable();
        keys.windows(2).all(|w| w[0] != w[1])
    }

    /// Renumbers threads in order-key order (`old_of_new` says which thread each
    /// new number was), then sorts by (time, rank, thread) so that records of
    /// one thread at one time keep the order they were pushed in. A spilling run
    /// keeps its last chunk in memory only while the shared budget allows.
    pub fn finish(mut self) -> Result<Run, WriteError> {
        let dir = self
            .spill
            .as_ref()
            .map(|p| p.dir.clone())
            .unwrap_or_default();
        let spill_failed = |source| WriteError::Spill {
            dir: dir.clone(),
            source,
        };
        if let Some(policy) = &self.spill {
            // Every finished run draws on the shared budget, spilled before or not:
            // many small runs would otherwise hold all their records until the merge.
            if !policy.may_retain(self.bytes()) {
                self.spill_chunk().map_err(spill_failed)?;
            }
        }
        if let Some(e) = self.spill_error.take() {
            return Err(spill_failed(e));
        }
        // The run waits for the merge: keep only what it holds, not the buffers'
        // peak capacity.
        self.records.shrink_to_fit();
        self.pairs.shrink_to_fit();
        self.comms.shrink_to_fit();
        let threads = self.threads_seen.max(self.order_keys.len());
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
        sort_records(&mut self.records, !self.states_unordered, |t| t);
        Ok(Run {
            old_of_new,
            new_of_old,
            records: self.records,
            pairs: self.pairs,
            comms: self.comms,
            chunks: self.chunks,
            names: self.names,
            min_time: self.min_time,
            max_time: self.max_time,
        })
    }
}

/// Sorts `records` by (time, rank, `thread_key`), records that tie on that in
/// the order they were pushed: what a stable sort gives, without the buffer as
/// large as the records that it takes (and faults in). When `push_order_known`,
/// a record's body says its push order among the records it can tie with (see
/// [`push_order`]), so an unstable in-place sort gives the same order.
/// In parallel: translating one large report leaves other cores idle here.
fn sort_records<K: Ord>(
    records: &mut [Record],
    push_order_known: bool,
    thread_key: impl Fn(LocalThread) -> K + Sync,
) {
    if push_order_known {
        let tie_key = |r: &Record| (r.rank(), thread_key(r.thread), push_order(r));
        records.par_sort_unstable_by(|a, b| {
            a.time
                .cmp(&b.time)
                .then_with(|| tie_key(a).cmp(&tie_key(b)))
        });
    } else {
        records.par_sort_by_key(|r| (r.time, r.rank(), thread_key(r.thread)));
    }
}

/// The push order of a record among those of its rank: event records point to
/// their pairs and communications to their payloads, both appended as records
/// are pushed (every event record has at least one pair). States have none:
/// they tie only when a thread's states do not begin in increasing order,
/// which `RunBuilder::states_unordered` notes.
fn push_order(record: &Record) -> u32 {
    match record.body {
        Body::Events { first, .. } => first,
        Body::Comm { index } => index,
        Body::State { .. } => 0,
    }
}

/// Records sorted by (time, rank, thread), with the payloads they point into,
/// after the chunks spilled earlier (which use the producer's thread numbers).
pub struct Run {
    /// For each thread number of the run, the number the producer had given it.
    pub old_of_new: Vec<LocalThread>,
    /// The run's number of each producer thread number (for spilled chunks).
    pub new_of_old: Vec<LocalThread>,
    pub records: Vec<Record>,
    pub pairs: Vec<EventPair>,
    pub comms: Vec<Comm>,
    pub chunks: Vec<SpilledChunk>,
    pub names: NameTables,
    /// Earliest and latest time touched by any record (`i64::MAX`/`MIN` when empty).
    pub min_time: i64,
    pub max_time: i64,
}

impl Run {
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records in memory and on disk.
    pub fn len(&self) -> usize {
        self.records.len()
            + self
                .chunks
                .iter()
                .map(|c| c.records as usize)
                .sum::<usize>()
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
        let run = b.finish().unwrap();
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
        let run = b.finish().unwrap();
        assert_eq!(run.records[0].time, 7);
        assert_eq!(run.records[1].time, 8);
        assert_eq!(run.pairs[0].value(), Value::Raw(5));
    }

    /// Records pushed with many ties on (time, rank, thread), in a scrambled
    /// but reproducible order; states of each thread begin in increasing order.
    fn pushed_with_ties() -> RunBuilder {
        let mut b = RunBuilder::new();
        let mut seed = 12345u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut state_begin = [0i64; 3];
        for i in 0..20_000 {
            let thread = next(3) as LocalThread;
            let time = next(40) as i64;
            match next(4) {
                0 => b.events(thread, time, &[EventPair::raw(1, i)]),
                1 => b.interval(thread, time, time + next(3) as i64, &[EventPair::raw(2, i)]),
                2 => b.comm(
                    thread,
                    time,
                    Comm {
                        send_physical: time,
                        receiver: next(3) as LocalThread,
                        recv_logical: time + 1,
                        recv_physical: time + 1,
                        size: i,
                        tag: 0,
                    },
                ),
                _ => {
                    let begin = &mut state_begin[thread as usize];
                    *begin += 1 + next(2) as i64;
                    b.state(thread, *begin, *begin + 1, i as u32);
                }
            }
        }
        b
    }

    #[test]
    fn unstable_sort_keeps_push_order_of_ties() {
        let b = pushed_with_ties();
        assert!(!b.states_unordered);
        let mut expected = b.records.clone();
        expected.sort_by_key(|r| (r.time, r.rank(), r.thread));
        assert_eq!(b.finish().unwrap().records, expected);
    }

    #[test]
    fn states_that_tie_keep_push_order() {
        let mut b = pushed_with_ties();
        b.state(1, 5, 9, 7);
        b.state(1, 5, 6, 8);
        b.state(1, 5, 6, 6);
        assert!(b.states_unordered);
        let mut expected = b.records.clone();
        expected.sort_by_key(|r| (r.time, r.rank(), r.thread));
        assert_eq!(b.finish().unwrap().records, expected);
    }
}
