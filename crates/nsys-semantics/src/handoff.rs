//! What the categories of one report hand each other while it is translated (in
//! [`crate::context::ReportContext::handoff`]): the GPU operations that API calls
//! launched, and the synchronizations and NCCL ranges the API side is matched
//! with; and what a report hands the run (MPI message endpoints, times every rank
//! shares). Depends on no category, so that categories depend on it and not on
//! each other.

use nsys_reader::cuda::GpuPlace;
use nsys_reader::ids::pid_of;
use paraver_writer::{EventPair, LocalThread, DISCARDED};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::spilled_table::{Fields, FixedRow, SpillOver, SpilledTable};

pub use nsys2prv_events::{
    CUDA_TAGS, TAG_EVENT_WAIT, TAG_HOST_CALLBACK, TAG_LAUNCH, TAG_MEMORY, TAG_NCCL_P2P,
};

#[derive(Default)]
pub(crate) struct Handoff {
    /// GPU operations by launch (filled by kernels, memory, graphs and host
    /// functions; read by the CUDA API side).
    pub links: GpuLinks,
    /// Host-side synchronizations (filled by `sync`, read by the API side).
    pub syncs: SyncCalls,
    /// NCCL ranges with their payloads (filled by NVTX, read by the API side).
    pub nccl_ranges: NcclRanges,
}

impl Handoff {
    /// Bytes held (allocated, used or not).
    pub fn bytes(&self) -> usize {
        self.links.bytes() + self.syncs.bytes() + self.nccl_ranges.bytes()
    }
}

/// A GPU operation that an API call launched: the target of a launch arrow.
/// There is one per kernel and memory operation of a report, so it is kept to
/// 32 bytes: the pid (24 bits, see [`nsys_reader::ids`]) shares a word with the
/// operation's kind, and the kind says what `value` holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuLink {
    pid_kind: u32,
    pub thread: LocalThread,
    pub correlation: i64,
    pub start: i64,
    /// A kernel's end, a memory operation's bytes; 0 for other launches.
    value: i64,
}

const PID_BITS: u32 = 24;
const PID_MASK: u32 = (1 << PID_BITS) - 1;
const KIND_LAUNCH: u32 = 0;
/// An NCCL kernel: it takes the payload of the NCCL call that launched it.
const KIND_NCCL_LAUNCH: u32 = 1;
const KIND_MEMORY: u32 = 2;
/// A compute kernel (graphs and host functions are `KIND_LAUNCH`): it counts in
/// its stream's launch queue.
const KIND_KERNEL: u32 = 3;

impl GpuLink {
    pub fn pid(&self) -> u32 {
        self.pid_kind & PID_MASK
    }

    fn kind(&self) -> u32 {
        self.pid_kind >> PID_BITS
    }

    /// The end of an NCCL kernel (which takes its NCCL call's payload); `None`
    /// for any other operation.
    pub fn nccl_end(&self) -> Option<i64> {
        (self.kind() == KIND_NCCL_LAUNCH).then_some(self.value)
    }

    /// A kernel's end (compute or NCCL): kernels count in their stream's launch
    /// queue ([`crate::launch_queues`]); `None` for graphs, host functions and
    /// memory operations.
    pub fn kernel_end(&self) -> Option<i64> {
        matches!(self.kind(), KIND_KERNEL | KIND_NCCL_LAUNCH).then_some(self.value)
    }

    /// Bytes the arrow carries: a memory operation's size, 0 for a launch.
    pub fn bytes(&self) -> i64 {
        if self.kind() == KIND_MEMORY {
            self.value
        } else {
            0
        }
    }

    pub fn tag(&self) -> i64 {
        if self.kind() == KIND_MEMORY {
            TAG_MEMORY
        } else {
            TAG_LAUNCH
        }
    }
}

/// GPU operations by (pid, correlation id), sorted for lookup from the API side.
#[derive(Default)]
pub(crate) struct GpuLinks(Vec<GpuLink>);

impl GpuLinks {
    /// A kernel, graph or host function that a call launched (`nccl`: an NCCL
    /// kernel).
    pub fn add_launch(&mut self, place: &GpuPlace, thread: LocalThread, nccl: bool) {
        let (kind, value) = if nccl {
            (KIND_NCCL_LAUNCH, place.end)
        } else {
            (KIND_LAUNCH, 0)
        };
        self.push(place, thread, kind, value);
    }

    /// A kernel that a call launched (`nccl`: an NCCL kernel).
    pub fn add_kernel(&mut self, place: &GpuPlace, thread: LocalThread, nccl: bool) {
        let (kind, value) = if nccl {
            (KIND_NCCL_LAUNCH, place.end)
        } else {
            (KIND_KERNEL, place.end)
        };
        self.push(place, thread, kind, value);
    }

    /// A memory copy or set of `bytes` that a call made.
    pub fn add_memory(&mut self, place: &GpuPlace, thread: LocalThread, bytes: i64) {
        self.push(place, thread, KIND_MEMORY, bytes);
    }

    fn push(&mut self, place: &GpuPlace, thread: LocalThread, kind: u32, value: i64) {
        if let Some(correlation) = place.correlation_id {
            self.0.push(GpuLink {
                pid_kind: (pid_of(place.global_pid) & PID_MASK) | (kind << PID_BITS),
                thread,
                correlation,
                start: place.start,
                value,
            });
        }
    }

    /// Room for `n` more links, so the vector does not grow by doubling (and
    /// copying) while the run's share counts what it holds. Exactly `n`: a
    /// second pass's reserve on top of the kernels' would otherwise double the
    /// capacity (`Vec::reserve` grows to at least twice what it holds), half of
    /// it never used (issue 28: 32 MiB of 67 on a 3 M-row report).
    pub fn reserve(&mut self, n: u64) {
        self.0.reserve_exact(usize::try_from(n).unwrap_or(0));
    }

    /// How many links there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The links, in the order they are held.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &GpuLink> {
        self.0.iter()
    }

    /// The links, in the order they are held, to be made into what follows
    /// from them where they lie.
    pub fn into_vec(self) -> Vec<GpuLink> {
        self.0
    }

    /// Bytes held (allocated, used or not).
    pub fn bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<GpuLink>()
    }

    pub fn sort(&mut self) {
        self.0.sort_by_key(|l| (l.pid(), l.correlation, l.start));
    }

    /// Every GPU operation launched by this call (several in graph node mode);
    /// the links must be sorted.
    #[cfg(test)]
    pub fn find(&self, pid: u32, correlation: i64) -> &[GpuLink] {
        self.finder().find(pid, correlation)
    }

    /// A [`LinkFinder`] over the links, which must be sorted.
    pub fn finder(&self) -> LinkFinder<'_> {
        LinkFinder {
            links: &self.0,
            next: 0,
            taken: vec![0; self.0.len().div_ceil(64)],
            repeats: 0,
        }
    }
}

/// Finds the links of calls that come in time order, whose correlation ids
/// mostly grow: each search starts where the previous one ended and widens
/// exponentially, a few comparisons on memory just read instead of a binary
/// search over every link of the report.
///
/// Each GPU operation belongs to one call: the first call with its (process,
/// correlation id) takes its links, and a later call with the same id gets none
/// (nsys 2022.2 records a runtime call and the versioned call it wraps with one
/// id; older ones let a driver call and a runtime call share one), so no
/// operation gets two arrows.
pub(crate) struct LinkFinder<'a> {
    links: &'a [GpuLink],
    /// Where the previous search ended.
    next: usize,
    /// Bit `i`: the links starting at `i` (a call's group) were taken.
    taken: Vec<u64>,
    /// Calls whose id's operations an earlier call had taken.
    repeats: u64,
}

impl<'a> LinkFinder<'a> {
    /// Every GPU operation launched by this call (several in graph node mode).
    pub fn find(&mut self, pid: u32, correlation: i64) -> &'a [GpuLink] {
        let key = (pid, correlation);
        let lo = lower_bound_near(self.links, key, self.next);
        let n = self.links[lo..]
            .iter()
            .take_while(|l| l.key() == key)
            .count();
        self.next = lo + n;
        &self.links[lo..lo + n]
    }

    /// The GPU operations this call launched, unless an earlier call with the
    /// same id took them.
    #[cfg(test)]
    pub fn take(&mut self, pid: u32, correlation: i64) -> &'a [GpuLink] {
        self.take_placed(pid, correlation).1
    }

    /// [`LinkFinder::take`], with the place of the first link taken among the
    /// sorted links.
    pub fn take_placed(&mut self, pid: u32, correlation: i64) -> (usize, &'a [GpuLink]) {
        let found = self.find(pid, correlation);
        let first = self.next - found.len();
        if found.is_empty() {
            return (first, found);
        }
        let (word, bit) = (first / 64, 1u64 << (first % 64));
        if self.taken[word] & bit != 0 {
            self.repeats += 1;
            return (first, &[]);
        }
        self.taken[word] |= bit;
        (first, found)
    }

    /// Calls that found their operations taken by an earlier call with their id.
    pub fn repeats(&self) -> u64 {
        self.repeats
    }
}

impl GpuLink {
    fn key(&self) -> (u32, i64) {
        (self.pid(), self.correlation)
    }
}

/// The first position of the sorted `links` whose key is not below `key` (what
/// `partition_point` finds), searched outward from `hint`.
fn lower_bound_near(links: &[GpuLink], key: (u32, i64), hint: usize) -> usize {
    let below = |i: usize| links[i].key() < key;
    let hint = hint.min(links.len());
    if hint < links.len() && below(hint) {
        // Forward: `lo` stays below the key, the answer is after it.
        let (mut lo, mut step) = (hint, 1);
        while lo + step < links.len() && below(lo + step) {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(links.len());
        lo + 1 + links[lo + 1..hi].partition_point(|l| l.key() < key)
    } else {
        // Backward: `hi` is not below the key (or the end), the answer is at or before it.
        let (mut hi, mut step) = (hint, 1);
        while hi >= step && !below(hi - step) {
            hi -= step;
            step *= 2;
        }
        let lo = hi.saturating_sub(step);
        lo + links[lo..hi].partition_point(|l| l.key() < key)
    }
}

/// A GPU operation's busy interval on its stream row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BusyOp {
    pub stream: LocalThread,
    /// Its place among the operations as handed over (numbered when they are
    /// read back, not stored): what a stable sort would keep, in what would
    /// be padding.
    pub place: u32,
    pub start: i64,
    pub end: i64,
}

impl FixedRow for BusyOp {
    const SIZE: usize = 20;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.stream.to_le_bytes());
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut f = Fields(bytes);
        BusyOp {
            stream: f.u32(),
            place: 0,
            start: f.i64(),
            end: f.i64(),
        }
    }
}

/// A launch arrow written from a CPU thread into a stream row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrow {
    pub stream: LocalThread,
    pub sender: LocalThread,
    pub call: i64,
    pub op_start: i64,
}

impl FixedRow for Arrow {
    const SIZE: usize = 24;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.stream.to_le_bytes());
        out.extend_from_slice(&self.sender.to_le_bytes());
        out.extend_from_slice(&self.call.to_le_bytes());
        out.extend_from_slice(&self.op_start.to_le_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut f = Fields(bytes);
        Arrow {
            stream: f.u32(),
            sender: f.u32(),
            call: f.i64(),
            op_start: f.i64(),
        }
    }
}

/// What the passes that write GPU operations, launch arrows, stream waits and
/// host functions hand over for the GPU idle causes (`crate::gpu_idle`), written
/// after every pass. The operations and arrows (one each per kernel) spill to
/// the spill directory when holding them would take the report past its share
/// ([`crate::spilled_table`]): held, they stay in memory through the CUDA API
/// pass beside its own per-kernel tables.
#[derive(Default)]
pub(crate) struct IdleInputs {
    /// Whether they are gathered at all (the kernels category is selected).
    enabled: bool,
    pub ops: SpilledTable<BusyOp>,
    pub arrows: SpilledTable<Arrow>,
    /// (stream row, time) of each `cudaStreamWaitEvent` point.
    pub stream_waits: Vec<(LocalThread, i64)>,
    /// (stream row, end) of each host function.
    pub host_function_ends: Vec<(LocalThread, i64)>,
}

impl IdleInputs {
    /// `spill_over`: where the operations and arrows spill, and the report's
    /// share they count in.
    pub fn new(enabled: bool, spill_over: Option<SpillOver>) -> Self {
        IdleInputs {
            enabled,
            ops: SpilledTable::new(spill_over.clone()),
            arrows: SpilledTable::new(spill_over),
            ..Default::default()
        }
    }

    /// Room for `n` more GPU operations, so that what they will hold counts in the
    /// run's share from the first on (as [`GpuLinks::reserve`]), or on disk if
    /// with `held` (what the report holds beside its run, these inputs
    /// included) they would take the report past its share.
    pub fn reserve_operations(&mut self, n: u64, held: usize) {
        if self.enabled {
            // Exactly: see `GpuLinks::reserve`.
            self.ops
                .reserve(usize::try_from(n).unwrap_or(usize::MAX), held);
        }
    }

    /// Room for `n` more launch arrows (at most one per launch link), reserved
    /// before the API calls are read so that the vector does not grow by
    /// doubling to twice what it needs, or on disk as
    /// [`IdleInputs::reserve_operations`].
    pub fn reserve_arrows(&mut self, n: usize, held: usize) {
        if self.enabled {
            self.arrows.reserve(n, held);
        }
    }

    /// A GPU operation written on `stream` (an interval of less than 1 ns is
    /// written as 1 ns, and counts so).
    pub fn operation(&mut self, stream: LocalThread, start: i64, end: i64) {
        if self.enabled && stream != DISCARDED {
            self.ops.push(BusyOp {
                stream,
                place: 0,
                start,
                end: end.max(start + 1),
            });
        }
    }

    /// A launch arrow written from `sender` at `call` to `stream` at `op_start`.
    pub fn arrow(&mut self, sender: LocalThread, stream: LocalThread, call: i64, op_start: i64) {
        if self.enabled && sender != DISCARDED && stream != DISCARDED {
            self.arrows.push(Arrow {
                stream,
                sender,
                call,
                op_start,
            });
        }
    }

    /// A stream wait point written on `stream` at `time`.
    pub fn stream_wait(&mut self, stream: LocalThread, time: i64) {
        if self.enabled && stream != DISCARDED {
            self.stream_waits.push((stream, time));
        }
    }

    /// A host function written on `stream`, ending at `end`.
    pub fn host_function(&mut self, stream: LocalThread, end: i64) {
        if self.enabled && stream != DISCARDED {
            self.host_function_ends.push((stream, end));
        }
    }

    /// Bytes held (allocated, used or not).
    pub fn bytes(&self) -> usize {
        self.ops.bytes()
            + self.arrows.bytes()
            + (self.stream_waits.capacity() + self.host_function_ends.capacity())
                * std::mem::size_of::<(LocalThread, i64)>()
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SyncCall {
    pub pid: u32,
    pub correlation: i64,
    pub start: i64,
    pub end: i64,
    /// Name handle of the sync kind (value of `CUDA_SYNC`).
    pub kind: u32,
}

/// Synchronizations by (pid, correlation id).
#[derive(Default)]
pub(crate) struct SyncCalls(Vec<SyncCall>);

impl SyncCalls {
    pub fn new(mut calls: Vec<SyncCall>) -> Self {
        calls.sort_by_key(|s| (s.pid, s.correlation, s.start, s.end, s.kind));
        SyncCalls(calls)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<SyncCall>()
    }

    /// A [`SyncMatcher`] for the API calls of the report.
    pub fn matcher(&self) -> SyncMatcher<'_> {
        SyncMatcher {
            syncs: &self.0,
            owner: vec![Owner::None; self.0.len()],
        }
    }
}

/// Where a call lies from a row with the same correlation id: `Holds` when the
/// row is inside the call, else how far apart they are (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Placement {
    Holds,
    Apart(i64),
}

/// How the call `[call_start, call_end]` lies from the row `[start, end]`.
pub(crate) fn placement(call_start: i64, call_end: i64, start: i64, end: i64) -> Placement {
    if call_start <= start && end <= call_end {
        Placement::Holds
    } else if end < call_start {
        Placement::Apart(call_start - end)
    } else if call_end < start {
        Placement::Apart(start - call_end)
    } else {
        Placement::Apart(0)
    }
}

/// The call a row belongs to among the calls with its correlation id (in table
/// order): the first that holds it, else the nearest (the first of equals).
pub(crate) fn owner_among<T>(
    calls: &[T],
    interval: impl Fn(&T) -> (i64, i64),
    start: i64,
    end: i64,
) -> Option<&T> {
    calls.iter().min_by_key(|c| {
        let (call_start, call_end) = interval(c);
        placement(call_start, call_end, start, end)
    })
}

#[derive(Clone, Copy, Debug)]
enum Owner {
    None,
    /// Emitted on a call that holds it.
    Taken,
    /// The nearest call seen so far, none holding it.
    Nearest(Placement, LocalThread),
}

/// Gives each synchronization to one API call with its (process, correlation
/// id), as the calls come: the first call that holds it takes it at once (the
/// sync is written while that call is read, so the thread's records stay in
/// order); if none does, the nearest call gets it once every call was read
/// ([`SyncMatcher::leftovers`]). No sync is written twice, whatever number of
/// calls share its id.
pub(crate) struct SyncMatcher<'a> {
    syncs: &'a [SyncCall],
    owner: Vec<Owner>,
}

impl<'a> SyncMatcher<'a> {
    /// The syncs a call `[start, end]` on `thread` takes: those with its id that
    /// it holds and no earlier call took.
    pub fn take(
        &mut self,
        pid: u32,
        correlation: i64,
        start: i64,
        end: i64,
        thread: LocalThread,
    ) -> Vec<&'a SyncCall> {
        let key = (pid, correlation);
        let lo = self.syncs.partition_point(|s| (s.pid, s.correlation) < key);
        let mut taken = Vec::new();
        for (i, s) in self.syncs.iter().enumerate().skip(lo) {
            if (s.pid, s.correlation) != key {
                break;
            }
            let here = placement(start, end, s.start, s.end);
            match self.owner[i] {
                Owner::Taken => {}
                _ if here == Placement::Holds => {
                    self.owner[i] = Owner::Taken;
                    taken.push(s);
                }
                Owner::Nearest(best, _) if best <= here => {}
                _ => self.owner[i] = Owner::Nearest(here, thread),
            }
        }
        taken
    }

    /// The syncs no call held, each with the thread of the nearest call with
    /// its id; and how many syncs had no call at all.
    pub fn leftovers(&self) -> (Vec<(&'a SyncCall, LocalThread)>, u64) {
        let mut nearest = Vec::new();
        let mut orphans = 0u64;
        for (s, owner) in self.syncs.iter().zip(&self.owner) {
            match *owner {
                Owner::Taken => {}
                Owner::Nearest(_, thread) => nearest.push((s, thread)),
                Owner::None => orphans += 1,
            }
        }
        (nearest, orphans)
    }
}

/// An NCCL range with its payload, on the thread that called NCCL.
#[derive(Debug, Clone)]
pub(crate) struct NcclRange {
    pub start: i64,
    pub end: i64,
    pub payload: Vec<EventPair>,
    /// What the call is, when its name and payload say (communicator, peer).
    pub call: Option<NcclCall>,
}

/// An NCCL call as its range's name and payload describe it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclCall {
    pub kind: NcclCallKind,
    /// The communicator's id as NCCL's payload gives it (its `commHash`, the same
    /// on every rank of the communicator).
    pub comm: i64,
    /// Bytes the call moves (0 when the payload does not say).
    pub bytes: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NcclCallKind {
    /// `ncclSend` to, or `ncclRecv` from, the peer (its rank in the communicator).
    Send {
        peer: i64,
    },
    Recv {
        peer: i64,
    },
    /// Any other call: a collective, by its range's name (`ncclAllReduce`).
    Collective {
        name: String,
    },
}

/// An NCCL kernel with the call that launched it, in this report's clock: what
/// `nccl_match` pairs across reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NcclKernelOp {
    pub pid: u32,
    /// The GPU stream row the kernel ran on.
    pub stream: LocalThread,
    pub start: i64,
    pub end: i64,
    pub call: NcclCall,
}

/// NCCL ranges by thread, sorted by start, to find the range a launch was made in.
#[derive(Default)]
pub(crate) struct NcclRanges {
    by_thread: FxHashMap<LocalThread, Vec<NcclRange>>,
}

impl NcclRanges {
    pub fn add(&mut self, thread: LocalThread, range: NcclRange) {
        if !range.payload.is_empty() {
            self.by_thread.entry(thread).or_default().push(range);
        }
    }

    fn bytes(&self) -> usize {
        let range = std::mem::size_of::<NcclRange>();
        let pair = std::mem::size_of::<EventPair>();
        self.by_thread
            .values()
            .flatten()
            .map(|r| range + r.payload.capacity() * pair)
            .sum()
    }

    pub fn sort(&mut self) {
        for ranges in self.by_thread.values_mut() {
            ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        }
    }

    /// The innermost range with a payload that contains `time` on `thread`: binary
    /// search, then a short walk back over ranges that started earlier.
    pub fn enclosing(&self, thread: LocalThread, time: i64) -> Option<&NcclRange> {
        let ranges = self.by_thread.get(&thread)?;
        let after = ranges.partition_point(|r| r.start <= time);
        ranges[..after].iter().rev().find(|r| r.end > time)
    }
}

/// How a communicator is recognised by every rank that uses it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CommKey {
    World,
    Uid(i64),
    Members(Vec<i64>),
}

/// One side of a point-to-point message, in this report's clock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct P2pEndpoint {
    pub pid: u32,
    pub thread: LocalThread,
    pub is_send: bool,
    /// World rank of the other side.
    pub peer: i64,
    pub tag: i64,
    pub comm: CommKey,
    pub size: i64,
    /// When the call began (logical time).
    pub logical: i64,
    /// When data left (send) or arrived (receive: end of the call, or of the wait
    /// that completed a non-blocking receive).
    pub physical: i64,
    /// The request of a non-blocking call, to find the wait that completed it.
    pub(crate) request: Option<i64>,
}

/// Times every rank shares, in this report's clock, for `--sync`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct SyncPoints {
    pub mpi_init_end: Option<i64>,
    pub first_barrier_end: Option<i64>,
    pub last_barrier_end: Option<i64>,
    pub first_nccl_end: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_by_process_and_correlation() {
        let mut links = GpuLinks::default();
        let place = |pid: i64, corr| GpuPlace {
            global_pid: pid << 24,
            correlation_id: Some(corr),
            ..Default::default()
        };
        links.add_launch(&place(1, 5), 0, false);
        links.add_memory(&place(2, 5), 1, 4096);
        links.add_launch(&place(1, 5), 2, true);
        links.sort();
        assert_eq!(links.find(1, 5).len(), 2);
        assert_eq!(links.find(1, 5)[1].nccl_end(), Some(0));
        assert_eq!(links.find(1, 5)[0].nccl_end(), None);
        let copy = links.find(2, 5)[0];
        assert_eq!(
            (copy.thread, copy.bytes(), copy.tag()),
            (1, 4096, TAG_MEMORY)
        );
        assert_eq!(links.find(1, 5)[0].tag(), TAG_LAUNCH);
        assert!(links.find(3, 5).is_empty());
        assert_eq!(std::mem::size_of::<GpuLink>(), 32);
    }

    /// What a pass reserves on top of what an earlier pass added is what it
    /// holds: the kernels' pass reserves for its rows, the memory pass for its
    /// own on top of them, and neither capacity doubles (issue 28: `Vec::reserve`
    /// grew the links to twice the report's GPU operations, all of it counted
    /// in the run's share and half of it never used).
    #[test]
    fn reserving_for_a_second_pass_holds_what_both_need() {
        let kernel = |corr| GpuPlace {
            global_pid: 1 << 24,
            correlation_id: Some(corr),
            ..Default::default()
        };
        let mut links = GpuLinks::default();
        let mut idle = IdleInputs::new(true, None);
        links.reserve(1000);
        idle.reserve_operations(1000, 0);
        for corr in 0..1000 {
            links.add_kernel(&kernel(corr), 0, false);
            idle.operation(0, corr, corr + 1);
        }
        links.reserve(10);
        idle.reserve_operations(10, 0);
        idle.reserve_arrows(links.len(), 0);
        assert_eq!(links.bytes(), 1010 * std::mem::size_of::<GpuLink>());
        assert_eq!(
            idle.bytes(),
            1010 * std::mem::size_of::<BusyOp>() + 1000 * std::mem::size_of::<Arrow>()
        );
        // Without the idle causes nothing is reserved for them.
        let mut off = IdleInputs::new(false, None);
        off.reserve_operations(1000, 0);
        off.reserve_arrows(1000, 0);
        assert_eq!(off.bytes(), 0);
    }

    /// Searching from where the last search ended finds what a binary search finds,
    /// whatever order the calls come in.
    #[test]
    fn links_are_found_from_any_previous_position() {
        let mut links = GpuLinks::default();
        let correlations = [1, 2, 2, 3, 7, 7, 7, 8, 20, 21, 40, 41, 42, 43, 44, 45, 90];
        for (pid, corr) in [1i64, 2].iter().flat_map(|&p| correlations.map(|c| (p, c))) {
            let place = GpuPlace {
                global_pid: pid << 24,
                correlation_id: Some(corr),
                ..Default::default()
            };
            links.add_launch(&place, 0, false);
        }
        links.sort();
        let binary = |pid: u32, c: i64| {
            let lo = links.0.partition_point(|l| l.key() < (pid, c));
            let hi = links.0.partition_point(|l| l.key() <= (pid, c));
            lo..hi
        };
        let queries: Vec<(u32, i64)> = (0..3).flat_map(|p| (0..100).map(move |c| (p, c))).collect();
        let reversed: Vec<(u32, i64)> = queries.iter().rev().copied().collect();
        let scattered: Vec<(u32, i64)> = (0..300).map(|i| queries[(i * 77) % 300]).collect();
        for order in [queries, reversed, scattered] {
            let mut finder = links.finder();
            for (pid, c) in order {
                let found = finder.find(pid, c);
                let want = &links.0[binary(pid, c)];
                assert_eq!(found.len(), want.len(), "({pid}, {c})");
                assert!(found.iter().zip(want).all(|(a, b)| a.key() == b.key()));
            }
        }
    }

    #[test]
    fn the_first_call_with_an_id_takes_its_links() {
        let mut links = GpuLinks::default();
        let place = |corr| GpuPlace {
            global_pid: 1 << 24,
            correlation_id: Some(corr),
            ..Default::default()
        };
        links.add_launch(&place(5), 0, false);
        links.add_memory(&place(5), 1, 64);
        links.add_launch(&place(6), 2, false);
        links.sort();
        let mut finder = links.finder();
        assert_eq!(finder.take(1, 5).len(), 2);
        assert!(finder.take(1, 5).is_empty());
        assert_eq!(finder.take(1, 6).len(), 1);
        assert!(finder.take(1, 7).is_empty());
        assert!(finder.take(1, 5).is_empty());
        assert_eq!(finder.repeats(), 2);
    }

    fn sync(correlation: i64, start: i64, end: i64) -> SyncCall {
        SyncCall {
            pid: 1,
            correlation,
            start,
            end,
            kind: 0,
        }
    }

    /// A sync goes to the first call that holds it, or else to the nearest call with
    /// its id; never to two; syncs without a call are counted apart.
    #[test]
    fn each_sync_goes_to_one_call() {
        let syncs = SyncCalls::new(vec![
            sync(1, 10, 20),
            sync(2, 100, 110),
            sync(3, 500, 510),
            sync(1, 30, 40),
        ]);
        let mut m = syncs.matcher();
        // Id 1: the first call holds both its syncs; a later one gets none.
        let starts = |v: Vec<&SyncCall>| v.iter().map(|s| s.start).collect::<Vec<_>>();
        assert_eq!(starts(m.take(1, 1, 5, 45, 0)), [10, 30]);
        assert!(m.take(1, 1, 0, 1000, 1).is_empty());
        // Id 2: a call 50 ns before, another holding it, then one inside too.
        assert!(m.take(1, 2, 0, 50, 2).is_empty());
        assert_eq!(starts(m.take(1, 2, 90, 120, 3)), [100]);
        assert!(m.take(1, 2, 95, 115, 4).is_empty());
        // Id 3: no call holds it: 30 ns after beats 90 before and 30 after (first seen wins).
        assert!(m.take(1, 3, 400, 410, 5).is_empty());
        assert!(m.take(1, 3, 540, 600, 6).is_empty());
        assert!(m.take(1, 3, 540, 600, 7).is_empty());
        let (nearest, orphans) = m.leftovers();
        assert_eq!(nearest.len(), 1);
        assert_eq!((nearest[0].0.start, nearest[0].1), (500, 6));
        assert_eq!(orphans, 0);
        // Another process's call takes nothing; with no call at all a sync is an orphan.
        let mut m = syncs.matcher();
        assert!(m.take(2, 1, 0, 1000, 0).is_empty());
        let (nearest, orphans) = m.leftovers();
        assert!(nearest.is_empty());
        assert_eq!(orphans, 4);
    }

    #[test]
    fn placement_orders_holding_calls_first_then_by_distance() {
        assert_eq!(placement(0, 100, 10, 20), Placement::Holds);
        assert_eq!(placement(0, 15, 10, 20), Placement::Apart(0));
        assert_eq!(placement(30, 40, 10, 20), Placement::Apart(10));
        assert_eq!(placement(0, 5, 10, 20), Placement::Apart(5));
        assert!(Placement::Holds < Placement::Apart(0));
        let calls = [(0, 5), (25, 30), (0, 100), (12, 18)];
        assert_eq!(owner_among(&calls, |&c| c, 10, 20), Some(&(0, 100)));
        // Equally near: the first.
        assert_eq!(owner_among(&calls[..2], |&c| c, 10, 20), Some(&(0, 5)));
        assert_eq!(owner_among(&calls[1..2], |&c| c, 10, 20), Some(&(25, 30)));
        assert_eq!(owner_among(&calls[..0], |&c| c, 10, 20), None);
    }

    #[test]
    fn innermost_enclosing_range_is_found() {
        let mut r = NcclRanges::default();
        let payload = |v| vec![EventPair::raw(9501, v)];
        r.add(
            0,
            NcclRange {
                start: 0,
                end: 100,
                payload: payload(1),
                call: None,
            },
        );
        r.add(
            0,
            NcclRange {
                start: 10,
                end: 20,
                payload: payload(2),
                call: None,
            },
        );
        r.sort();
        assert_eq!(r.enclosing(0, 15).unwrap().start, 10);
        assert_eq!(r.enclosing(0, 50).unwrap().start, 0);
        assert!(r.enclosing(0, 100).is_none());
        assert!(r.enclosing(1, 15).is_none());
    }
}
