//! Sorted runs: what one producer (one report) hands to the merge.
//!
//! A run keeps its records in memory until its share of the memory limit is used
//! (see [`SpillPolicy`]); then it sorts them and writes them to a temporary file
//! (a chunk), and starts over. The merge reads the chunks back in push order, so
//! the output is byte-identical whether a run spilled or not.
//!
//! Records are kept per thread, and what lies ahead of the producer (interval
//! ends) waits until the producer gets there: a producer that reads a table in
//! time order then pushes each thread's records in order, and sorting a run is
//! little more than merging its threads.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::chunked::{ChunkPool, ChunkedRecords, Pairs, RECORDS_PER_CHUNK};
use crate::loser_tree::{merge_key, LoserTree, DONE};
use crate::names::NameTables;
use crate::pcf::Timing;
use crate::window::KeepWindow;
use rustc_hash::FxHashMap;

use crate::record::{Body, Comm, EventPair, LocalThread, Record, DISCARDED, NO_SHARED};
use crate::spill::{write_chunk, SharedLists, SpillPolicy, SpilledChunk};
use crate::view::{Payload, View};
use crate::WriteError;

/// Collects the records of one producer in any order; `finish` sorts them.
///
/// Threads are numbered in the order the producer meets them; each may carry an
/// order key (its place in the final layout) so that sorting, and the numbering
/// `finish` gives, never depend on the order rows were read in.
#[derive(Default)]
pub struct RunBuilder {
    /// Records of each thread (by the producer's thread number), in push order
    /// but for the pending ones.
    threads: Vec<ThreadRecords>,
    /// The record chunks a spill emptied, for the records that follow.
    pool: ChunkPool,
    /// What a spill sorts a thread's records in when they came in too many
    /// stretches, kept for the next spill.
    sort_scratch: Vec<Record>,
    /// Records in `threads`, pending ones included.
    held: usize,
    pairs: Pairs,
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
    /// Records deferred so far: the push order of pending records.
    deferred: u64,
    /// Shared lists of pairs: where each lies in `pairs`, and each list's id.
    shared: Vec<(u32, u32)>,
    shared_ids: FxHashMap<Box<[EventPair]>, u32>,
    /// Chunks spilled so far: shared lists given out before a spill are gone.
    spills: u32,
    /// The shared lists that spilled chunks name (see [`SharedLists`]), each
    /// list's number, and the bytes they cost.
    spilled_lists: SharedLists,
    spilled_ids: FxHashMap<Box<[EventPair]>, u32>,
    spilled_lists_bytes: usize,
    /// Rows a cut left out while reading (see [`RunBuilder::left_out`]).
    left_out: u64,
    /// A cut known while building: what lies outside it is reduced to what the
    /// merge's cut uses of it (see [`RunBuilder::keep_window`]).
    window: Option<KeepWindow>,
}

/// A list of pairs stored once in a run (see [`RunBuilder::shared_pairs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPairs(u32);

impl SharedPairs {
    /// No shared list: a record with its own pairs only.
    pub const NONE: SharedPairs = SharedPairs(NO_SHARED);
}

/// Memory a shared list costs beside its pairs (its place, its key in the
/// interning table): counted roughly.
const SHARED_BYTES: usize = 64;

/// The run's spilled shared lists take at most this share of its room (a
/// sixteenth): so that they never hold more than the lists of a run of that
/// size kept in memory would (the formatter keeps each list's text), however
/// many chunks spill. Lists beyond are spilled inline, with each record.
const SPILLED_LISTS_SHARE: usize = 16;

/// One thread's records.
#[derive(Default)]
struct ThreadRecords {
    records: ChunkedRecords,
    /// Records held back until the producer pushes one at or after their time
    /// on this thread, while they are few (an interval's end, the ends of
    /// nested ranges): sorted, the next to leave last, so that releasing one is
    /// a pop and holding one mostly a push. Empty while `pending` is not.
    few_pending: Vec<Pending>,
    /// The held-back records of a thread that gathered more than
    /// [`FEW_PENDING`], the next to leave on top.
    pending: BinaryHeap<Reverse<Pending>>,
}

/// Held-back records kept in a sorted list; more go to a heap.
const FEW_PENDING: usize = 16;

/// A record held back, and its place in push order among the held ones.
#[derive(Clone, Copy)]
struct Pending {
    seq: u64,
    record: Record,
}

impl Pending {
    /// The order records leave the pending heap in: time, then push order.
    fn key(&self) -> (i64, u64) {
        (self.record.time, self.seq)
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl ThreadRecords {
    /// Moves the pending records at or before `time` into the records. Only
    /// records pushed later can be at or after them, and records that tie on
    /// time and kind keep the order they were pushed in: the sort in `finish`
    /// gives what it would have given on the records in push order.
    #[inline]
    fn release(&mut self, time: i64, pool: &mut ChunkPool) {
        while let Some(p) = self.few_pending.last() {
            if p.record.time > time {
                break;
            }
            self.records.push(p.record, pool);
            self.few_pending.pop();
        }
        while let Some(Reverse(p)) = self.pending.peek() {
            if p.record.time > time {
                break;
            }
            self.records.push(p.record, pool);
            self.pending.pop();
        }
    }

    /// Holds `p` back: in the sorted list while few are held, else in the heap
    /// (a thread that gets no more records from a pass may gather many).
    #[inline]
    fn hold(&mut self, p: Pending) {
        if self.pending.is_empty() && self.few_pending.len() < FEW_PENDING {
            let key = p.key();
            let at = self.few_pending.partition_point(|q| q.key() > key);
            self.few_pending.insert(at, p);
        } else {
            self.pending.extend(self.few_pending.drain(..).map(Reverse));
            self.pending.push(Reverse(p));
        }
    }

    /// Takes every record (pending ones released), in chunks, and where the
    /// sorted stretches they make end (indices over the chunks in order). A
    /// thread fed by a few passes holds a few stretches, each in order; one
    /// with more is sorted (stably: ties keep push order) into one: in
    /// `scratch` and back into its chunks when given one (a spill: the chunks
    /// are kept for reuse, and the buffer for the next spill's sort), else into
    /// one new vector (the chunks freed as they are copied).
    fn take_stretches(
        &mut self,
        pool: &mut ChunkPool,
        scratch: Option<&mut Vec<Record>>,
    ) -> (Vec<Vec<Record>>, Vec<usize>) {
        self.release(i64::MAX, pool);
        let ends = stretch_ends(self.records.iter());
        let mut chunks = self.records.take();
        if ends.len() <= MAX_STRETCHES {
            return (chunks, ends);
        }
        let len = chunks.iter().map(Vec::len).sum();
        if let Some(scratch) = scratch {
            scratch.clear();
            // (Exactly: an amortized reserve could double it.)
            scratch.reserve_exact(len);
            for chunk in &chunks {
                scratch.extend_from_slice(chunk);
            }
            scratch.sort_by_key(sort_key);
            let mut at = 0;
            for chunk in &mut chunks {
                let n = chunk.len();
                chunk.copy_from_slice(&scratch[at..at + n]);
                at += n;
            }
            return (chunks, vec![len]);
        }
        // Sized at once: collecting the chunks grew the vector by doubling,
        // copying and faulting in its records again each time.
        let mut all = Vec::with_capacity(len);
        for chunk in chunks {
            all.extend_from_slice(&chunk);
        }
        all.sort_by_key(sort_key);
        (vec![all], vec![len])
    }
}

/// Sorted stretches a thread's records may be kept in; more are sorted into one.
const MAX_STRETCHES: usize = 16;

/// Where the sorted stretches of `records` end (none for no records); stops
/// counting past [`MAX_STRETCHES`].
fn stretch_ends<'a>(records: impl Iterator<Item = &'a Record>) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut last: Option<(i64, u8)> = None;
    let mut n = 0;
    for r in records {
        let key = sort_key(r);
        if last.is_some_and(|l| key < l) {
            ends.push(n);
            if ends.len() > MAX_STRETCHES {
                return ends;
            }
        }
        last = Some(key);
        n += 1;
    }
    if n > 0 {
        ends.push(n);
    }
    ends
}

/// Sort key of a record within its thread: time, then kind (see [`Record::rank`]).
#[inline]
fn sort_key(r: &Record) -> (i64, u8) {
    (r.time, r.rank())
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

    /// The threads in order-key order (ties by number), and the place of each
    /// thread in that order.
    fn thread_order(&self) -> (Vec<LocalThread>, Vec<LocalThread>) {
        let threads = self.threads_seen.max(self.order_keys.len());
        let mut old_of_new: Vec<LocalThread> = (0..threads as LocalThread).collect();
        old_of_new.sort_by_key(|&t| (self.order_key(t), t));
        let mut new_of_old = vec![0; threads];
        for (new, &old) in old_of_new.iter().enumerate() {
            new_of_old[old as usize] = new as LocalThread;
        }
        (old_of_new, new_of_old)
    }

    /// Records pushed so far, spilled or not.
    pub fn len(&self) -> usize {
        self.held
            + self
                .chunks
                .iter()
                .map(|c| c.records as usize)
                .sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A row a cut leaves out where it is read: its records (on times `first` to
    /// `last`) are not made, but the run's span counts them, so that the trace's
    /// origin and end are those of the uncut run.
    pub fn left_out(&mut self, first: i64, last: i64) {
        self.min_time = self.min_time.min(first);
        self.max_time = self.max_time.max(last).max(first);
        self.left_out += 1;
    }

    /// Keeps of the records outside `start..=end` (the run's clock) only what a
    /// cut whose window lies inside it uses ([`crate::write_trace_cut`]): records
    /// after `end` are dropped, and those before `start` reduced to what the
    /// cut tracks of them (see [`crate::window`]), so that they are neither
    /// spilled nor kept for the merge. Such a run may only be merged with such a
    /// cut; the run's span and threads still count every record.
    pub fn keep_window(&mut self, start: i64, end: i64) {
        self.window = Some(KeepWindow::new(start, end));
    }

    /// Records pushed but not stored, by [`RunBuilder::keep_window`].
    pub fn dropped_by_window(&self) -> u64 {
        self.window.as_ref().map_or(0, |w| w.dropped)
    }

    /// Rows left out by [`RunBuilder::left_out`].
    pub fn left_out_rows(&self) -> u64 {
        self.left_out
    }

    /// A list of pairs that many records repeat (a kernel's name and launch
    /// configuration), stored once and formatted once: give it to
    /// [`RunBuilder::interval_shared`].
    pub fn shared_pairs(&mut self, pairs: &[EventPair]) -> SharedPairs {
        if pairs.is_empty() {
            return SharedPairs::NONE;
        }
        if let Some(&id) = self.shared_ids.get(pairs) {
            return SharedPairs(id);
        }
        let id = self.shared.len() as u32;
        let list = self.pairs.push(pairs);
        self.shared.push(list);
        self.shared_ids.insert(pairs.into(), id);
        SharedPairs(id)
    }

    /// Changes when the shared lists given out so far stop being valid (the
    /// run spilled them): a producer that keeps [`SharedPairs`] checks it.
    pub fn shared_epoch(&self) -> u32 {
        self.spills
    }

    /// The records of `thread`, made when first met.
    #[inline]
    fn thread_mut(&mut self, thread: LocalThread) -> &mut ThreadRecords {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, ThreadRecords::default);
        }
        &mut self.threads[t]
    }

    /// Notes what a record of `thread` at `time` touches (times up to `last`).
    #[inline]
    fn note(&mut self, thread: LocalThread, time: i64, last: i64) {
        self.note_span(thread, time, last);
        self.held += 1;
    }

    /// Counts a record of `thread` at `time` (touching times up to `last`) in
    /// the run's span and threads.
    #[inline]
    fn note_span(&mut self, thread: LocalThread, time: i64, last: i64) {
        self.min_time = self.min_time.min(time);
        self.max_time = self.max_time.max(last).max(time);
        self.threads_seen = self.threads_seen.max(thread as usize + 1);
    }

    /// Whether the window drops `record`: then it is only counted.
    #[inline]
    fn dropped(&mut self, thread: LocalThread, record: &Record, last: i64) -> bool {
        let Some(window) = self.window.as_mut() else {
            return false;
        };
        if !window.drops(record) {
            return false;
        }
        window.dropped += 1;
        self.note_span(thread, record.time, last);
        true
    }

    #[inline]
    fn push(&mut self, thread: LocalThread, record: Record, last: i64) {
        if self.dropped(thread, &record, last) {
            return;
        }
        self.note(thread, record.time, last);
        self.thread_mut(thread);
        let thread = &mut self.threads[thread as usize];
        thread.release(record.time, &mut self.pool);
        thread.records.push(record, &mut self.pool);
    }

    /// Holds `record` back until a record at or after its time is pushed on its thread.
    fn defer(&mut self, thread: LocalThread, record: Record) {
        if self.dropped(thread, &record, record.time) {
            return;
        }
        self.note(thread, record.time, record.time);
        let seq = self.deferred;
        self.deferred += 1;
        self.thread_mut(thread).hold(Pending { seq, record });
    }

    /// Point event(s) at `time`.
    pub fn events(&mut self, thread: LocalThread, time: i64, pairs: &[EventPair]) {
        if pairs.is_empty() || thread == DISCARDED {
            return;
        }
        let (first, count) = self.pairs.push(pairs);
        let body = Body::Events {
            first,
            count,
            shared: NO_SHARED,
            closing: false,
        };
        self.push(thread, Record { time, body }, time);
        self.spill_if_full();
    }

    /// An interval: `pairs` at `begin`, the same types with value 0 at `end`.
    /// A zero or negative length becomes 1 ns so the end still follows the begin.
    /// The end waits until the producer gets there.
    pub fn interval(&mut self, thread: LocalThread, begin: i64, end: i64, pairs: &[EventPair]) {
        self.interval_shared(thread, begin, end, SharedPairs::NONE, pairs);
    }

    /// An interval whose pairs are `shared`'s, then `pairs`.
    pub fn interval_shared(
        &mut self,
        thread: LocalThread,
        begin: i64,
        end: i64,
        shared: SharedPairs,
        pairs: &[EventPair],
    ) {
        self.interval_with(thread, begin, end, shared, pairs, false);
    }

    /// An interval that begins ahead of the records the producer pushes next (a
    /// GPU range found while reading the call that launched it): its begin waits
    /// too, so that the thread's records stay in order.
    pub fn interval_ahead(
        &mut self,
        thread: LocalThread,
        begin: i64,
        end: i64,
        pairs: &[EventPair],
    ) {
        self.interval_with(thread, begin, end, SharedPairs::NONE, pairs, true);
    }

    /// An interval of `pairs[..closed]` whose begin also carries the point
    /// events `pairs[closed..]` (after the interval's, on the same line): what
    /// [`RunBuilder::interval`] then [`RunBuilder::events`] at `begin` write, in
    /// one record fewer.
    pub fn interval_then_events(
        &mut self,
        thread: LocalThread,
        begin: i64,
        end: i64,
        pairs: &[EventPair],
        closed: usize,
    ) {
        let (interval, events) = pairs.split_at(closed.min(pairs.len()));
        if interval.is_empty() || events.is_empty() {
            self.interval(thread, begin, end, interval);
            return self.events(thread, begin, events);
        }
        if thread == DISCARDED {
            return;
        }
        let end = end.max(begin + 1);
        // One list: the begin takes all of it, the end (closing) its head.
        let (first, count) = self.pairs.push(pairs);
        let body = |count, closing| Body::Events {
            first,
            count,
            shared: NO_SHARED,
            closing,
        };
        self.push(
            thread,
            Record {
                time: begin,
                body: body(count, false),
            },
            end,
        );
        self.defer(
            thread,
            Record {
                time: end,
                body: body(interval.len() as u32, true),
            },
        );
        self.spill_if_full();
    }

    fn interval_with(
        &mut self,
        thread: LocalThread,
        begin: i64,
        end: i64,
        shared: SharedPairs,
        pairs: &[EventPair],
        begin_ahead: bool,
    ) {
        if (pairs.is_empty() && shared == SharedPairs::NONE) || thread == DISCARDED {
            return;
        }
        let end = end.max(begin + 1);
        let (first, count) = self.pairs.push(pairs);
        let record = |time, closing| Record {
            time,
            body: Body::Events {
                first,
                count,
                shared: shared.0,
                closing,
            },
        };
        if begin_ahead {
            self.defer(thread, record(begin, false));
        } else {
            self.push(thread, record(begin, false), end);
        }
        self.defer(thread, record(end, true));
        self.spill_if_full();
    }

    /// A state record; callers make states of one thread non-overlapping
    /// (see [`crate::states::StateTiler`]).
    pub fn state(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
        if thread == DISCARDED {
            return;
        }
        let body = Body::State { end, state };
        self.push(thread, Record { time: begin, body }, end);
        self.spill_if_full();
    }

    /// A communication from `sender` at `send_logical` to `comm.receiver`.
    pub fn comm(&mut self, sender: LocalThread, send_logical: i64, comm: Comm) {
        if sender == DISCARDED || comm.receiver == DISCARDED {
            return;
        }
        let index = self.comms.len() as u32;
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
        let record = Record {
            time: send_logical,
            body: Body::Comm { index },
        };
        if self.dropped(sender, &record, last) {
            return;
        }
        self.comms.push(comm);
        self.push(sender, record, last);
        self.spill_if_full();
    }

    /// Bytes held in memory.
    fn bytes(&self) -> usize {
        self.held * std::mem::size_of::<Record>()
            + self.pairs.len() * std::mem::size_of::<EventPair>()
            + self.comms.len() * std::mem::size_of::<Comm>()
            + self.shared.len() * SHARED_BYTES
    }

    /// Bytes that the producer holds for as long as it builds this run (tables
    /// to join rows with): they come out of the run's share, so the run spills
    /// sooner. The run keeps at least an eighth of its share, so that chunks do not
    /// become tiny when the producer holds more than the share.
    ///
    /// When it grows, what the run holds beyond its new room spills at once:
    /// the producer is about to fill what it now counts (a table read back
    /// whole), and waiting for the next record would hold both.
    pub fn set_outside_bytes(&mut self, bytes: usize) {
        let grew = bytes > self.outside_bytes;
        self.outside_bytes = bytes;
        if grew {
            self.trim_spares();
            self.spill_if_full();
        }
    }

    /// Frees what the run keeps from its last spill (spare chunks, the sort
    /// buffer) beyond what its share allows now that the producer holds more
    /// outside the run: records held at a spill take at most half the run's
    /// room (the sort's buffer the other half), and so may the spare chunks.
    fn trim_spares(&mut self) {
        let Some(p) = &self.spill else {
            return;
        };
        let room = p
            .chunk_bytes
            .saturating_sub(self.outside_bytes)
            .max(p.chunk_bytes / 8);
        let half = room / 2;
        self.pool
            .trim(half / (RECORDS_PER_CHUNK * std::mem::size_of::<Record>()));
        if self.sort_scratch.capacity() * std::mem::size_of::<Record>() > half {
            self.sort_scratch = Vec::new();
        }
        self.pairs.drop_spare();
    }

    fn spill_if_full(&mut self) {
        // Sorting merges the threads' records into a buffer as large as they
        // are: count that in.
        let sorting = self.held * std::mem::size_of::<Record>();
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
        if self.held == 0 || self.spill_error.is_some() || self.spill.is_none() {
            return Ok(());
        }
        let mut blocks = Vec::new();
        let mut taken = Vec::new();
        let mut held = self.held;
        let mut before = Vec::new();
        for (t, thread) in self.threads.iter_mut().enumerate() {
            let (mut chunks, mut ends) =
                thread.take_stretches(&mut self.pool, Some(&mut self.sort_scratch));
            if let Some(window) = self.window.as_mut() {
                let taken = window.take_before(&mut chunks, &mut ends);
                held -= taken.len();
                before.extend(taken.into_iter().map(|r| (t as LocalThread, r)));
            }
            push_blocks(&mut blocks, t as LocalThread, &chunks, &ends);
            taken.push(chunks);
        }
        let (_, places) = self.thread_order();
        let merged = BlockMerge::new(&taken, &blocks, &places);
        let lists = self.spilled_lists_of_epoch();
        let Some(policy) = &self.spill else {
            return Ok(());
        };
        let payload = Payload {
            pairs: &self.pairs,
            comms: &self.comms,
            shared: &self.shared,
        };
        // A window may leave nothing of what was held to write.
        let chunk = match held {
            0 => None,
            _ => Some(write_chunk(
                &policy.dir,
                merged,
                held,
                &payload,
                (&lists, self.spilled_lists.len()),
            )?),
        };
        if let Some(window) = self.window.as_mut() {
            if !before.is_empty() {
                let apart = write_before(&policy.dir, before, &payload)?;
                window.spilled_before.push(apart);
            }
        }
        // The full-size buffers are kept for the records that follow (the run
        // held them a moment ago, so its memory does not grow); the others go:
        // kept, a buffer each would stay resident without being counted, for
        // every thread of every run.
        for chunk in taken.into_iter().flatten() {
            self.pool.give_back(chunk);
        }
        self.chunks.extend(chunk);
        self.held = 0;
        self.pairs.clear();
        self.comms.clear();
        self.shared.clear();
        self.shared_ids.clear();
        self.spills += 1;
        Ok(())
    }

    /// The number among the run's spilled lists of each shared list given out
    /// since the last spill ([`NO_SHARED`] for one spilled inline): lists
    /// already there keep theirs (a kernel's configuration recurs from chunk
    /// to chunk), new ones are added while the run's share
    /// ([`SPILLED_LISTS_SHARE`]) and the memory budget allow (they stay in
    /// memory until the merge, as a finished run's records may).
    fn spilled_lists_of_epoch(&mut self) -> Vec<u32> {
        let Some(policy) = &self.spill else {
            return Vec::new();
        };
        let room = policy.chunk_bytes / SPILLED_LISTS_SHARE;
        let mut numbers = Vec::with_capacity(self.shared.len());
        for &(first, count) in &self.shared {
            let pairs = self.pairs.get(first, count);
            if let Some(&id) = self.spilled_ids.get(pairs) {
                numbers.push(id);
                continue;
            }
            // The list, and its key in `spilled_ids`.
            let cost = 2 * std::mem::size_of_val(pairs) + SHARED_BYTES;
            if self.spilled_lists_bytes + cost > room || !policy.may_retain(cost) {
                numbers.push(NO_SHARED);
                continue;
            }
            self.spilled_lists_bytes += cost;
            let id = self.spilled_lists.push(pairs);
            self.spilled_ids.insert(pairs.into(), id);
            numbers.push(id);
        }
        numbers
    }

    /// Renumbers threads in order-key order (`old_of_new` says which thread each
    /// new number was), then sorts by (time, rank, thread) so that records of
    /// one thread at one time keep the order they were pushed in. A spilling run
    /// keeps its last chunk in memory only while the shared budget allows.
    pub fn finish(self) -> Result<Run, WriteError> {
        self.finish_window(&|_| None).map(|(run, _)| run)
    }

    /// [`RunBuilder::finish`] for a run with a [`RunBuilder::keep_window`]:
    /// `timing` says how a type crosses a cut's start where what the run carries
    /// depends on it (`None`: not known for sure). With `true`, what the run
    /// carries could not be made to give the cut's trace (values spilled out of
    /// order, or a timing not known): build the run again without the window.
    pub fn finish_window(
        mut self,
        timing: &dyn Fn(u32) -> Option<Timing>,
    ) -> Result<(Run, bool), WriteError> {
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
        // Nothing more is pushed: the spare chunks go before the run waits.
        self.pool = ChunkPool::default();
        self.sort_scratch = Vec::new();
        self.comms.shrink_to_fit();
        let (old_of_new, new_of_old) = self.thread_order();
        let mut taken = Vec::with_capacity(old_of_new.len());
        let mut before = Vec::new();
        for &old in &old_of_new {
            let (mut chunks, mut ends) = match self.threads.get_mut(old as usize) {
                Some(thread) => thread.take_stretches(&mut self.pool, None),
                None => Default::default(),
            };
            if let Some(window) = self.window.as_mut() {
                let records = window.take_before(&mut chunks, &mut ends);
                if !records.is_empty() {
                    for chunk in &mut chunks {
                        if chunk.len() < chunk.capacity() / 2 {
                            chunk.shrink_to_fit();
                        }
                    }
                    before.extend(records.into_iter().map(|r| (old, r)));
                }
            }
            taken.push((chunks, ends));
        }
        if let Some(window) = self.window.as_mut() {
            follow_before(window, before, &self.pairs, &self.shared, &dir).map_err(spill_failed)?;
        }
        let mut thread_records = Vec::with_capacity(old_of_new.len());
        let mut blocks = Vec::new();
        for (&old, (mut chunks, mut ends)) in old_of_new.iter().zip(taken) {
            if let Some(window) = self.window.as_mut() {
                let carried = window.carried_records(old, timing, &mut self.pairs);
                if !carried.is_empty() {
                    let held: usize = chunks.iter().map(Vec::len).sum();
                    ends.push(held + carried.len());
                    chunks.push(carried);
                }
            }
            // The run waits for the merge: a last chunk mostly empty gives back
            // its unused room (the budget counts records, not capacity).
            if let Some(last) = chunks.last_mut() {
                if last.len() < last.capacity() / 2 {
                    last.shrink_to_fit();
                }
            }
            push_blocks(
                &mut blocks,
                thread_records.len() as LocalThread,
                &chunks,
                &ends,
            );
            thread_records.push(chunks);
        }
        drop(self.threads);
        let mut broken = false;
        if let Some(window) = &self.window {
            broken = window.broken;
            let empty =
                self.chunks.is_empty() && thread_records.iter().flatten().all(Vec::is_empty);
            if empty && window.dropped > 0 && !thread_records.is_empty() {
                // Every record was outside the window and left nothing open: one
                // state the cut does not use keeps the run (its span, its place
                // in the trace) as it was.
                let time = match window.start.checked_sub(1) {
                    Some(before) => before,
                    None => window.end.saturating_add(1),
                };
                let body = Body::State {
                    end: time,
                    state: 0,
                };
                thread_records[0].push(vec![Record { time, body }]);
                push_blocks(&mut blocks, 0, &thread_records[0], &[1]);
            }
        }
        // The run waits for the merge: keep only what it holds, not the buffers'
        // peak capacity.
        self.pairs.shrink_to_fit();
        for c in &mut self.comms {
            c.receiver = new_of_old[c.receiver as usize];
        }
        let mut spilled_lists = self.spilled_lists;
        spilled_lists.shrink_to_fit();
        let run = Run {
            old_of_new,
            new_of_old,
            thread_records,
            blocks,
            pairs: self.pairs,
            comms: self.comms,
            shared: self.shared,
            spilled_lists,
            chunks: self.chunks,
            names: self.names,
            min_time: self.min_time,
            max_time: self.max_time,
        };
        Ok((run, broken))
    }
}

/// Writes the events before a window's start that a spill takes out of the
/// run (`(producer thread, record)`), sorted as a chunk is: by (time, rank,
/// thread), ties in push order.
fn write_before(
    dir: &std::path::Path,
    mut before: Vec<(LocalThread, Record)>,
    payload: &Payload,
) -> std::io::Result<SpilledChunk> {
    before.sort_by_key(|(t, r)| (r.time, r.rank(), *t));
    let count = before.len();
    // (Read back only to follow the events before the window: every pair inline.)
    write_chunk(dir, before.into_iter(), count, payload, (&[], 0))
}

/// Follows every event before `window`'s start in the merge's order: those
/// spills wrote apart, read back, and those still held (`before`, pointing
/// into `pairs` and `shared`).
fn follow_before(
    window: &mut KeepWindow,
    mut before: Vec<(LocalThread, Record)>,
    pairs: &Pairs,
    shared: &[(u32, u32)],
    dir: &std::path::Path,
) -> std::io::Result<()> {
    let payload = Payload {
        pairs,
        comms: &[],
        shared,
    };
    if window.spilled_before.is_empty() {
        // Per thread, in push order for ties (a stable sort).
        before.sort_by_key(|(t, r)| (*t, r.time, r.rank()));
        for (thread, r) in before {
            if let View::Events { closing, pairs } = View::of(r.body, &payload) {
                window.follow(thread, closing, pairs.iter());
            }
        }
        return Ok(());
    }
    // Some are on disk: the held ones go too, and all are read back in order.
    if !before.is_empty() {
        let last = write_before(dir, before, &payload)?;
        window.spilled_before.push(last);
    }
    window.follow_spilled()
}

/// Appends the blocks of one thread whose records are `chunks` and whose
/// stretches end at `ends`: a block for each part of a stretch in one chunk
/// (they come one after the other, in push order).
fn push_blocks(
    blocks: &mut Vec<Block>,
    thread: LocalThread,
    chunks: &[Vec<Record>],
    ends: &[usize],
) {
    let mut chunk = 0;
    let mut chunk_start = 0;
    let mut start = 0;
    for &end in ends {
        while start < end {
            while start >= chunk_start + chunks[chunk].len() {
                chunk_start += chunks[chunk].len();
                chunk += 1;
            }
            let stop = end.min(chunk_start + chunks[chunk].len());
            blocks.push(Block {
                thread,
                chunk: chunk as u32,
                start: (start - chunk_start) as u32,
                end: (stop - chunk_start) as u32,
            });
            start = stop;
        }
    }
}

/// Sorted records `start..end` of chunk `chunk` of one thread's records.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub thread: LocalThread,
    chunk: u32,
    start: u32,
    end: u32,
}

impl Block {
    fn records<'a>(&self, records: &'a [Vec<Vec<Record>>]) -> &'a [Record] {
        let chunk = &records[self.thread as usize][self.chunk as usize];
        &chunk[self.start as usize..self.end as usize]
    }
}

/// The records of `blocks` (of `records`, by thread and chunk), merged by
/// (time, rank, `places` of the thread, block): a stable sort's order when a
/// thread's blocks are in push order.
pub(crate) struct BlockMerge<'a> {
    /// Each block's thread, the thread's place and the block's records.
    blocks: Vec<(LocalThread, u32, &'a [Record])>,
    next: Vec<usize>,
    tree: LoserTree,
}

impl<'a> BlockMerge<'a> {
    pub(crate) fn new(records: &'a [Vec<Vec<Record>>], blocks: &[Block], places: &[u32]) -> Self {
        let blocks: Vec<(LocalThread, u32, &[Record])> = blocks
            .iter()
            .map(|b| (b.thread, places[b.thread as usize], b.records(records)))
            .collect();
        let next = vec![0; blocks.len()];
        let keys = (0..blocks.len()).map(|i| Self::key(&blocks, &next, i));
        let tree = LoserTree::new(keys);
        BlockMerge { blocks, next, tree }
    }

    fn key(blocks: &[(LocalThread, u32, &[Record])], next: &[usize], block: usize) -> u128 {
        let (_, place, records) = blocks[block];
        match records.get(next[block]) {
            Some(r) => merge_key(r.time, r.rank(), place, block),
            None => DONE,
        }
    }
}

impl Iterator for BlockMerge<'_> {
    /// The record, with the thread of its block.
    type Item = (LocalThread, Record);

    fn next(&mut self) -> Option<Self::Item> {
        let block = self.tree.winner()?;
        let (thread, _, records) = self.blocks[block];
        let record = records[self.next[block]];
        self.next[block] += 1;
        self.tree
            .replace_winner(Self::key(&self.blocks, &self.next, block));
        Some((thread, record))
    }
}

/// A run's records: in memory, sorted blocks of each thread's records; before
/// them, the chunks spilled earlier (which use the producer's thread numbers);
/// and the payloads the records point into.
pub struct Run {
    /// For each thread number of the run, the number the producer had given it.
    pub old_of_new: Vec<LocalThread>,
    /// The run's number of each producer thread number (for spilled chunks).
    pub new_of_old: Vec<LocalThread>,
    /// The records in memory of each run thread, in chunks.
    thread_records: Vec<Vec<Vec<Record>>>,
    /// Sorted stretches of `thread_records`: by thread, a thread's in push order.
    blocks: Vec<Block>,
    /// Where each shared list of pairs lies in `pairs` (see [`Body::Events`]).
    pub(crate) shared: Vec<(u32, u32)>,
    /// The shared lists the spilled chunks name: in the merge, list `i` is the
    /// run's shared list `shared.len() + i`.
    pub(crate) spilled_lists: SharedLists,
    pub pairs: Pairs,
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
        self.in_memory()
            + self
                .chunks
                .iter()
                .map(|c| c.records as usize)
                .sum::<usize>()
    }

    pub fn pairs_of(&self, first: u32, count: u32) -> &[EventPair] {
        self.pairs.get(first, count)
    }

    /// The shared list `shared` of a record's [`Body::Events`] (empty for
    /// [`NO_SHARED`]): what the merge writes before the record's own pairs.
    pub fn shared_pairs_of(&self, shared: u32) -> &[EventPair] {
        match self.shared.get(shared as usize) {
            Some(&(first, count)) => self.pairs.get(first, count),
            None => &[],
        }
    }

    /// Records held in memory.
    pub fn in_memory(&self) -> usize {
        self.thread_records.iter().flatten().map(Vec::len).sum()
    }

    /// A run whose records are all in `chunks` (restored from a part file).
    pub(crate) fn of_chunks(
        old_of_new: Vec<LocalThread>,
        new_of_old: Vec<LocalThread>,
        chunks: Vec<SpilledChunk>,
        names: NameTables,
        (min_time, max_time): (i64, i64),
    ) -> Self {
        Run {
            old_of_new,
            new_of_old,
            thread_records: Vec::new(),
            blocks: Vec::new(),
            shared: Vec::new(),
            spilled_lists: SharedLists::default(),
            pairs: Pairs::default(),
            comms: Vec::new(),
            chunks,
            names,
            min_time,
            max_time,
        }
    }

    /// The sorted blocks of records in memory: each block's run thread and records.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = (LocalThread, &[Record])> + '_ {
        self.blocks
            .iter()
            .map(|b| (b.thread, b.records(&self.thread_records)))
    }

    /// The records in memory in the run's order, each with its run thread.
    pub fn sorted_records(&self) -> Vec<(LocalThread, Record)> {
        // The run's threads are numbered in their order.
        let places: Vec<u32> = (0..self.thread_records.len() as u32).collect();
        BlockMerge::new(&self.thread_records, &self.blocks, &places).collect()
    }

    /// What the run's records point into.
    pub(crate) fn payload(&self) -> Payload<'_> {
        Payload {
            pairs: &self.pairs,
            comms: &self.comms,
            shared: &self.shared,
        }
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
            .sorted_records()
            .iter()
            .map(|(_, r)| match r.body {
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
        let records = run.sorted_records();
        assert_eq!(records[0].1.time, 7);
        assert_eq!(records[1].1.time, 8);
        assert_eq!(run.pairs_of(0, 1)[0].value(), Value::Raw(5));
    }

    /// A builder and, beside it, every record it was given in push order: the
    /// run must hold what a stable sort of those by (time, rank, thread) gives.
    struct Pushed {
        builder: RunBuilder,
        records: Vec<(LocalThread, Record)>,
        pairs: u32,
        comms: u32,
    }

    impl Pushed {
        fn new(builder: RunBuilder) -> Self {
            Pushed {
                builder,
                records: Vec::new(),
                pairs: 0,
                comms: 0,
            }
        }

        fn events(&mut self, thread: LocalThread, time: i64, pairs: &[EventPair]) {
            self.builder.events(thread, time, pairs);
            self.push_events(thread, &[(time, false)], pairs.len());
        }

        fn interval(&mut self, thread: LocalThread, begin: i64, end: i64, pairs: &[EventPair]) {
            self.builder.interval(thread, begin, end, pairs);
            let end = end.max(begin + 1);
            self.push_events(thread, &[(begin, false), (end, true)], pairs.len());
        }

        fn interval_ahead(
            &mut self,
            thread: LocalThread,
            begin: i64,
            end: i64,
            pairs: &[EventPair],
        ) {
            self.builder.interval_ahead(thread, begin, end, pairs);
            let end = end.max(begin + 1);
            self.push_events(thread, &[(begin, false), (end, true)], pairs.len());
        }

        fn push_events(&mut self, thread: LocalThread, times: &[(i64, bool)], pairs: usize) {
            for &(time, closing) in times {
                let body = Body::Events {
                    first: self.pairs,
                    count: pairs as u32,
                    shared: NO_SHARED,
                    closing,
                };
                self.records.push((thread, Record { time, body }));
            }
            self.pairs += pairs as u32;
        }

        fn state(&mut self, thread: LocalThread, begin: i64, end: i64, state: u32) {
            self.builder.state(thread, begin, end, state);
            let body = Body::State { end, state };
            self.records.push((thread, Record { time: begin, body }));
        }

        fn comm(&mut self, sender: LocalThread, time: i64, comm: Comm) {
            self.builder.comm(sender, time, comm);
            let body = Body::Comm { index: self.comms };
            self.records.push((sender, Record { time, body }));
            self.comms += 1;
        }

        /// The run, checked against the stable sort of what was pushed.
        fn check(self) -> Run {
            let mut expected = self.records;
            expected.sort_by_key(|(t, r)| (r.time, r.rank(), *t));
            let run = self.builder.finish().unwrap();
            assert_eq!(run.sorted_records(), expected);
            run
        }
    }

    /// A reproducible stream of pseudo-random numbers below `n`.
    fn numbers(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut seed = seed;
        move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        }
    }

    /// Records pushed with many ties on (time, rank, thread), in a scrambled
    /// but reproducible order; states of each thread begin in increasing order.
    fn pushed_with_ties(b: RunBuilder) -> Pushed {
        let mut p = Pushed::new(b);
        let mut next = numbers(12345);
        let mut state_begin = [0i64; 3];
        for i in 0..20_000 {
            let thread = next(3) as LocalThread;
            let time = next(40) as i64;
            match next(5) {
                0 => p.events(thread, time, &[EventPair::raw(1, i)]),
                1 => p.interval(thread, time, time + next(3) as i64, &[EventPair::raw(2, i)]),
                2 => p.interval_ahead(thread, time, time + next(3) as i64, &[EventPair::raw(3, i)]),
                3 => p.comm(
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
                    p.state(thread, *begin, *begin + 1, i as u32);
                }
            }
        }
        p
    }

    #[test]
    fn scrambled_pushes_sort_as_a_stable_sort_of_push_order() {
        pushed_with_ties(RunBuilder::new()).check();
    }

    #[test]
    fn states_that_tie_keep_push_order() {
        let mut p = pushed_with_ties(RunBuilder::new());
        p.state(1, 5, 9, 7);
        p.state(1, 5, 6, 8);
        p.state(1, 5, 6, 6);
        p.check();
    }

    /// Two passes over the same threads in time order, with nested and
    /// back-to-back intervals and ranges ahead: each thread's records come in
    /// a few sorted stretches (kept as blocks), and the run is in order.
    #[test]
    fn passes_in_time_order_give_blocks_in_order() {
        let mut p = Pushed::new(RunBuilder::new());
        for pass in 0..3 {
            for step in 0..1000i64 {
                let t = step * 100;
                for thread in 0..4 {
                    p.interval(thread, t, t + 90, &[EventPair::raw(1, pass)]);
                    p.interval(thread, t + 10, t + 20, &[EventPair::raw(2, pass)]);
                    p.interval(thread, t + 20, t + 30, &[EventPair::raw(2, pass)]);
                    if pass == 1 {
                        p.interval_ahead(thread, t + 150, t + 160, &[EventPair::raw(3, 1)]);
                    }
                }
            }
        }
        let run = p.check();
        assert!(run.blocks.len() <= 4 * MAX_STRETCHES);
        assert!(run.blocks.len() >= 4);
    }

    /// A thread whose records come in more stretches than kept is sorted.
    #[test]
    fn a_thread_in_many_stretches_is_sorted_into_one_block() {
        let mut p = Pushed::new(RunBuilder::new());
        let mut next = numbers(7);
        for i in 0..5_000 {
            let time = next(1_000) as i64;
            p.events(0, time, &[EventPair::raw(1, i)]);
            p.interval(1, time, time + 5, &[EventPair::raw(2, i)]);
        }
        let run = p.check();
        assert_eq!(run.blocks.iter().filter(|b| b.thread == 0).count(), 1);
    }

    /// A spilling builder writes the same records, whatever its chunk size.
    #[test]
    fn spilled_chunks_hold_the_run_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for chunk_bytes in [16 << 10, 256 << 10] {
            let policy = SpillPolicy {
                dir: dir.path().to_path_buf(),
                chunk_bytes,
                budget: crate::spill::MemoryBudget::new(0),
            };
            let p = pushed_with_ties(RunBuilder::with_spill(policy));
            let mut expected = p.records.clone();
            expected.sort_by_key(|(t, r)| (r.time, r.rank(), *t));
            let run = p.builder.finish().unwrap();
            assert!(!run.chunks.is_empty());
            let mut times = Vec::new();
            crate::kmerge::for_each_record(&run, &mut |time, thread, _| times.push((time, thread)))
                .unwrap();
            let want: Vec<(i64, LocalThread)> =
                expected.iter().map(|(t, r)| (r.time, *t)).collect();
            assert_eq!(times, want, "chunks of {chunk_bytes} bytes");
        }
    }

    /// A run that spills several times reuses its full-size record chunks (and
    /// pair chunks) for the records after each spill: every record comes back
    /// once, with its own pairs, none left over from a chunk's earlier use.
    #[test]
    fn chunks_reused_after_a_spill_keep_records_intact() {
        let dir = tempfile::tempdir().unwrap();
        // A few full chunks in all before each spill (records and the buffer
        // they may be sorted in count twice).
        let policy = SpillPolicy {
            dir: dir.path().to_path_buf(),
            chunk_bytes: 2 * 2 * 3 * RECORDS_PER_CHUNK * std::mem::size_of::<Record>(),
            budget: crate::spill::MemoryBudget::new(0),
        };
        let mut b = RunBuilder::with_spill(policy);
        let mut expected = Vec::new();
        let mut reused = false;
        let mut spare_after_spill = 0;
        let mut next = numbers(99);
        for i in 0..(16 * RECORDS_PER_CHUNK) as i64 {
            let thread = (i % 3) as LocalThread;
            // Threads 0 and 1 in time order; thread 2 scrambled (sorted at
            // each spill in the buffer kept for the next one).
            let time = if thread == 2 {
                i - next(5_000) as i64
            } else {
                i
            };
            // Every tenth record carries a second pair: pair chunks fill unevenly.
            let pairs: Vec<EventPair> = (0..1 + (next(10) == 0) as i64)
                .map(|k| EventPair::raw(1 + k as u32, i * 2 + k))
                .collect();
            let spills = b.spills;
            b.events(thread, time, &pairs);
            expected.push((time, thread, pairs));
            if b.spills > spills {
                spare_after_spill = b.pool.spare();
                assert!(spare_after_spill > 0, "a spill keeps its full-size chunks");
            } else if b.pool.spare() < spare_after_spill {
                reused = true;
            }
        }
        assert!(b.spills >= 2, "{} spills", b.spills);
        assert!(reused, "chunks taken from the pool after a spill");
        assert!(!b.sort_scratch.is_empty(), "a thread sorted at a spill");
        // The merge's order: (time, thread), ties in push order.
        expected.sort_by_key(|(time, thread, _)| (*time, *thread));
        let run = b.finish().unwrap();
        let mut seen = Vec::new();
        crate::kmerge::for_each_record(&run, &mut |time, thread, view| match view {
            crate::view::View::Events { pairs, .. } => {
                seen.push((time, thread, pairs.iter().copied().collect()))
            }
            _ => unreachable!(),
        })
        .unwrap();
        assert_eq!(seen.len(), expected.len());
        assert!(seen == expected, "records changed by chunk reuse");
    }

    /// Records of threads that never filled a chunk before a spill (a later
    /// pass's threads) take the chunks the spill emptied rather than fresh
    /// memory: what the run's record chunks and its spare ones hold together
    /// stays within what they held when it spilled (docs/memory.md: "from its
    /// first spill to its end it holds about its share").
    #[test]
    fn new_threads_after_a_spill_take_the_spare_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let policy = SpillPolicy {
            dir: dir.path().to_path_buf(),
            chunk_bytes: 16 * RECORDS_PER_CHUNK * std::mem::size_of::<Record>(),
            budget: crate::spill::MemoryBudget::new(0),
        };
        let mut b = RunBuilder::with_spill(policy);
        let resident = |b: &RunBuilder| {
            b.pool.spare() * RECORDS_PER_CHUNK
                + b.threads
                    .iter()
                    .map(|t| t.records.capacity())
                    .sum::<usize>()
        };
        let mut time = 0i64;
        while b.spills == 0 {
            b.events(0, time, &[EventPair::raw(1, time)]);
            time += 1;
        }
        let at_spill = resident(&b);
        let spare = b.pool.spare();
        assert!(spare > 3, "{spare} spare chunks");
        // A chunk's worth of records on each of threads that had none, fewer
        // in all than the spill emptied (so that no spill follows).
        for thread in 1..spare as LocalThread {
            for _ in 0..RECORDS_PER_CHUNK {
                b.events(thread, time, &[EventPair::raw(1, time)]);
                time += 1;
            }
        }
        assert_eq!(b.spills, 1);
        assert!(
            resident(&b) <= at_spill,
            "{} records of room after the spill, {at_spill} at it",
            resident(&b)
        );
    }

    /// Lists of pairs given to `shared_pairs` are stored once, and records
    /// that use one read it before their own pairs.
    #[test]
    fn shared_lists_are_stored_once_and_read_before_own_pairs() {
        let mut b = RunBuilder::new();
        let config = [EventPair::raw(1, 10), EventPair::raw(2, 20)];
        for i in 0..100 {
            let shared = b.shared_pairs(&config);
            b.interval_shared(0, i * 10, i * 10 + 5, shared, &[EventPair::raw(3, i)]);
        }
        let other = b.shared_pairs(&[EventPair::raw(1, 11)]);
        b.interval_shared(0, 2000, 2001, other, &[]);
        let run = b.finish().unwrap();
        assert_eq!(run.shared.len(), 2);
        assert_eq!(run.pairs.len(), 2 + 100 + 1);
        let payload = run.payload();
        let records = run.sorted_records();
        let types_of = |r: &Record| match crate::view::View::of(r.body, &payload) {
            crate::view::View::Events { pairs, .. } => {
                pairs.iter().map(|p| (p.ty, p.value())).collect::<Vec<_>>()
            }
            _ => unreachable!(),
        };
        assert_eq!(
            types_of(&records[0].1),
            [(1, Value::Raw(10)), (2, Value::Raw(20)), (3, Value::Raw(0))]
        );
        assert_eq!(types_of(&records.last().unwrap().1), [(1, Value::Raw(11))]);
    }

    /// An interval with point events at its begin: one begin record carrying
    /// both, in that order, and an end that closes the interval's pairs only.
    #[test]
    fn interval_then_events_closes_only_the_interval() {
        let mut b = RunBuilder::new();
        let pairs = [EventPair::raw(1, 5), EventPair::raw(2, 7)];
        b.interval_then_events(0, 10, 20, &pairs, 1);
        b.interval_then_events(0, 30, 40, &pairs, 2);
        b.interval_then_events(0, 50, 60, &pairs, 0);
        let run = b.finish().unwrap();
        let records = run.sorted_records();
        type Seen = (i64, bool, Vec<(u32, Value)>);
        let seen: Vec<Seen> = records
            .iter()
            .map(|(_, r)| match r.body {
                Body::Events {
                    first,
                    count,
                    closing,
                    ..
                } => {
                    let pairs = run.pairs_of(first, count);
                    let pairs = pairs.iter().map(|p| (p.ty, p.value())).collect();
                    (r.time, closing, pairs)
                }
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (10, false, vec![(1, Value::Raw(5)), (2, Value::Raw(7))]),
                (20, true, vec![(1, Value::Raw(5))]),
                (30, false, vec![(1, Value::Raw(5)), (2, Value::Raw(7))]),
                (40, true, vec![(1, Value::Raw(5)), (2, Value::Raw(7))]),
                // No interval pairs: the point events alone.
                (50, false, vec![(1, Value::Raw(5)), (2, Value::Raw(7))]),
            ]
        );
    }
}
