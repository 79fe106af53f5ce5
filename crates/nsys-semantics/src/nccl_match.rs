//! NCCL across reports: point-to-point transfers (`ncclSend` → `ncclRecv`) paired
//! by (communicator, sender, receiver) in call order, as Paraver communications
//! from the sending GPU stream row to the receiving one; and each collective
//! instance (communicator, sequence number) matched across ranks, its kernels that
//! started before the last rank's marked with how long they waited and for whom.
//!
//! A rank's place in a communicator is not in nsys's export: it is taken as the
//! position of the report's world rank among the world ranks of the reports using
//! that communicator (what `torch.distributed.new_group` and `ncclCommSplit` with
//! the world rank as key give; the whole world's communicator is the identity).

use std::collections::{BTreeMap, BTreeSet};

use paraver_writer::{Comm, EventPair, GlobalThread, MergeInput, RunBuilder};

use nsys2prv_events::{NCCL_WAITED_FOR_RANK, NCCL_WAIT_TIME, TAG_NCCL_P2P};

use crate::handoff::{NcclCallKind, NcclKernelOp};
use crate::layout::TracePlan;
use crate::report::ReportTranslation;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NcclMatchStats {
    /// Send/receive pairs drawn as communications.
    pub transfers: u64,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    /// NCCL kernels of processes whose rank is unknown (left out of the matching).
    pub without_rank: u64,
    /// Transfers received (kernel end) before they were sent: clocks disagree.
    pub backwards: u64,
    /// Collective instances found on two ranks or more.
    pub collectives: u64,
    /// Collective instances whose calls differ between ranks (left out).
    pub mismatched_collectives: u64,
    /// Kernels that waited for a later rank, and their total wait (ns).
    pub waits: u64,
    pub wait_ns: i64,
}

/// One NCCL kernel on the trace's common clock (less the run's base).
#[derive(Clone)]
struct Placed<'a> {
    op: &'a NcclKernelOp,
    stream: GlobalThread,
    world_rank: u32,
    start: i64,
    end: i64,
}

/// The transfers and waits of all reports as one extra run (`None` when there is
/// neither), with what matching found.
pub fn match_nccl(
    reports: &[ReportTranslation],
    plan: &TracePlan,
) -> (Option<MergeInput>, NcclMatchStats) {
    let mut stats = NcclMatchStats::default();
    let base = plan.offsets.iter().copied().min().unwrap_or(0);
    let mut placed: Vec<Placed> = Vec::new();
    for &r in &plan.order {
        let report = &reports[r];
        for op in &report.nccl_ops {
            let Some(&world_rank) = report.ranks.get(&op.pid) else {
                stats.without_rank += 1;
                continue;
            };
            let shift = plan.offsets[r] - base;
            placed.push(Placed {
                op,
                stream: plan.threads[r][op.stream as usize],
                world_rank,
                start: op.start + shift,
                end: op.end + shift,
            });
        }
    }
    if placed.is_empty() {
        return (None, stats);
    }
    let comm_ranks = communicator_ranks(&placed);
    let mut out = Output::default();
    match_transfers(&placed, &comm_ranks, &mut out, &mut stats);
    match_collectives(&placed, &mut out, &mut stats);
    (out.finish(base), stats)
}

/// Communicator → world rank → its rank in the communicator.
fn communicator_ranks(placed: &[Placed]) -> BTreeMap<i64, BTreeMap<u32, i64>> {
    let mut members: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
    for p in placed {
        members
            .entry(p.op.call.comm)
            .or_default()
            .insert(p.world_rank);
    }
    members
        .into_iter()
        .map(|(comm, ranks)| {
            let places = ranks.into_iter().zip(0..).collect();
            (comm, places)
        })
        .collect()
}

/// Sends paired with receives by (communicator, sender, receiver) in start order.
fn match_transfers(
    placed: &[Placed],
    comm_ranks: &BTreeMap<i64, BTreeMap<u32, i64>>,
    out: &mut Output,
    stats: &mut NcclMatchStats,
) {
    type Key = (i64, i64, i64);
    let mut sends: BTreeMap<Key, Vec<&Placed>> = BTreeMap::new();
    let mut receives: BTreeMap<Key, Vec<&Placed>> = BTreeMap::new();
    for p in placed {
        let comm = p.op.call.comm;
        let me = comm_ranks[&comm][&p.world_rank];
        match p.op.call.kind {
            NcclCallKind::Send { peer } => sends.entry((comm, me, peer)).or_default().push(p),
            NcclCallKind::Recv { peer } => receives.entry((comm, peer, me)).or_default().push(p),
            NcclCallKind::Collective { .. } => {}
        }
    }
    for (key, mut out_side) in sends {
        let mut in_side = receives.remove(&key).unwrap_or_default();
        out_side.sort_by_key(|p| (p.start, p.end));
        in_side.sort_by_key(|p| (p.start, p.end));
        let paired = out_side.len().min(in_side.len());
        for (s, r) in out_side.iter().zip(&in_side) {
            if r.end < s.start {
                stats.backwards += 1;
            }
            out.transfer(s, r);
        }
        stats.transfers += paired as u64;
        stats.unmatched_sends += (out_side.len() - paired) as u64;
        stats.unmatched_receives += (in_side.len() - paired) as u64;
    }
    stats.unmatched_receives += receives.values().map(|v| v.len() as u64).sum::<u64>();
}

/// The n-th collective of each rank on a communicator is one instance; each kernel
/// that started before the instance's last one waited for that rank.
fn match_collectives(placed: &[Placed], out: &mut Output, stats: &mut NcclMatchStats) {
    // (communicator, world rank) → its collectives in start order.
    let mut sequences: BTreeMap<(i64, u32), Vec<&Placed>> = BTreeMap::new();
    for p in placed {
        if matches!(p.op.call.kind, NcclCallKind::Collective { .. }) {
            sequences
                .entry((p.op.call.comm, p.world_rank))
                .or_default()
                .push(p);
        }
    }
    // (communicator, sequence number) → the ranks' kernels.
    let mut instances: BTreeMap<(i64, usize), Vec<&Placed>> = BTreeMap::new();
    for ((comm, _), mut ops) in sequences {
        ops.sort_by_key(|p| (p.start, p.end));
        for (n, p) in ops.into_iter().enumerate() {
            instances.entry((comm, n)).or_default().push(p);
        }
    }
    for kernels in instances.values() {
        if kernels.len() < 2 {
            continue;
        }
        if kernels
            .iter()
            .any(|k| k.op.call.kind != kernels[0].op.call.kind)
        {
            stats.mismatched_collectives += 1;
            continue;
        }
        stats.collectives += 1;
        // The last to start; of equal starts, the highest rank (any fixed choice).
        let last = kernels
            .iter()
            .max_by_key(|k| (k.start, k.world_rank))
            .expect("two kernels or more");
        for k in kernels {
            let until = last.start.min(k.end);
            if k.world_rank == last.world_rank || until <= k.start {
                continue;
            }
            out.wait(k, last.world_rank, until);
            stats.waits += 1;
            stats.wait_ns += until - k.start;
        }
    }
}

/// The extra run being built: records by global thread, numbered at the end.
#[derive(Default)]
struct Output {
    transfers: Vec<(GlobalThread, GlobalThread, i64, Comm)>,
    waits: Vec<(GlobalThread, i64, i64, u32)>,
}

impl Output {
    fn transfer(&mut self, s: &Placed, r: &Placed) {
        self.transfers.push((
            s.stream,
            r.stream,
            s.start,
            Comm {
                send_physical: s.start,
                receiver: 0,
                recv_logical: r.start,
                recv_physical: r.end,
                size: s.op.call.bytes,
                tag: TAG_NCCL_P2P,
            },
        ));
    }

    fn wait(&mut self, k: &Placed, for_rank: u32, until: i64) {
        self.waits.push((k.stream, k.start, until, for_rank));
    }

    fn finish(mut self, base: i64) -> Option<MergeInput> {
        // Each thread's records in time order.
        self.transfers
            .sort_by_key(|&(s, _, logical, c)| (s, logical, c.recv_logical));
        self.waits.sort_unstable();
        if self.transfers.is_empty() && self.waits.is_empty() {
            return None;
        }
        // Local ids in global order, as the merge requires.
        let mut threads: Vec<GlobalThread> = self
            .transfers
            .iter()
            .flat_map(|&(s, r, _, _)| [s, r])
            .chain(self.waits.iter().map(|w| w.0))
            .collect();
        threads.sort_unstable();
        threads.dedup();
        let local = |t: GlobalThread| threads.binary_search(&t).expect("collected above") as u32;
        let mut run = RunBuilder::new();
        for (s, r, logical, comm) in self.transfers {
            let comm = Comm {
                receiver: local(r),
                ..comm
            };
            run.comm(local(s), logical, comm);
        }
        for (stream, start, until, rank) in self.waits {
            let name = run
                .names
                .intern(NCCL_WAITED_FOR_RANK, &format!("rank {rank}"));
            let pairs = [
                EventPair::name(NCCL_WAITED_FOR_RANK, name),
                EventPair::raw(NCCL_WAIT_TIME, until - start),
            ];
            run.interval(local(stream), start, until, &pairs);
        }
        Some(MergeInput {
            run: run.finish().expect("an in-memory run has nothing to spill"),
            time_offset: base,
            threads,
        })
    }
}
