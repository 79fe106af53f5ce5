//! Point-to-point MPI messages: sends paired with receives across reports by
//! (sender rank, receiver rank, tag, communicator) in call order — MPI's
//! non-overtaking rule — as Paraver communications on the common clock.

use std::collections::{BTreeMap, VecDeque};

use paraver_writer::{Comm, GlobalThread, MergeInput, RunBuilder};

use crate::handoff::{CommKey, P2pEndpoint};
use crate::layout::TracePlan;
use crate::report::ReportTranslation;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageStats {
    pub matched: u64,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    /// Endpoints of processes whose rank is unknown.
    pub without_rank: u64,
    /// Messages received before they were sent: clocks of two nodes disagree.
    pub backwards: u64,
    /// Largest such disagreement (ns).
    pub worst_backwards_ns: i64,
}

/// An endpoint on the trace's common clock.
struct Placed<'a> {
    endpoint: &'a P2pEndpoint,
    thread: GlobalThread,
    logical: i64,
    physical: i64,
}

type Key = (i64, i64, i64, CommKey);

/// The messages of all reports as one extra run, or `None` when there is no
/// message. Its times are on the common clock less the earliest report offset,
/// which becomes the run's offset (so the trace origin stays the earliest session
/// start).
pub fn match_messages(
    reports: &[ReportTranslation],
    plan: &TracePlan,
) -> (Option<MergeInput>, MessageStats) {
    let mut stats = MessageStats::default();
    let base = plan.offsets.iter().copied().min().unwrap_or(0);
    let mut sends: BTreeMap<Key, VecDeque<Placed>> = BTreeMap::new();
    let mut receives: BTreeMap<Key, VecDeque<Placed>> = BTreeMap::new();
    for &r in &plan.order {
        let report = &reports[r];
        for e in &report.p2p {
            let Some(&rank) = report.ranks.get(&e.pid) else {
                stats.without_rank += 1;
                continue;
            };
            let placed = Placed {
                endpoint: e,
                thread: plan.threads[r][e.thread as usize],
                logical: e.logical + plan.offsets[r] - base,
                physical: e.physical + plan.offsets[r] - base,
            };
            let (key, side) = if e.is_send {
                ((i64::from(rank), e.peer, e.tag, e.comm.clone()), &mut sends)
            } else {
                (
                    (e.peer, i64::from(rank), e.tag, e.comm.clone()),
                    &mut receives,
                )
            };
            side.entry(key).or_default().push_back(placed);
        }
    }
    let mut pairs = Vec::new();
    for (key, mut out) in sends {
        let mut inn = receives.remove(&key).unwrap_or_default();
        sort_by_call_time(&mut out);
        sort_by_call_time(&mut inn);
        while let (Some(s), Some(r)) = (out.pop_front(), inn.pop_front()) {
            pairs.push((s, r));
        }
        stats.unmatched_sends += out.len() as u64;
        stats.unmatched_receives += inn.len() as u64;
    }
    stats.unmatched_receives += receives.values().map(|v| v.len() as u64).sum::<u64>();
    stats.matched = pairs.len() as u64;
    (build_run(&pairs, base, &mut stats), stats)
}

fn sort_by_call_time(queue: &mut VecDeque<Placed>) {
    queue.make_contiguous().sort_by_key(|p| p.logical);
}

fn build_run(
    pairs: &[(Placed, Placed)],
    base: i64,
    stats: &mut MessageStats,
) -> Option<MergeInput> {
    if pairs.is_empty() {
        return None;
    }
    // Local ids in global order, as the merge requires.
    let mut threads: Vec<GlobalThread> = pairs
        .iter()
        .flat_map(|(s, r)| [s.thread, r.thread])
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let local = |t: GlobalThread| threads.binary_search(&t).expect("collected above") as u32;
    let mut run = RunBuilder::new();
    for (s, r) in pairs {
        if r.physical < s.logical {
            stats.backwards += 1;
            stats.worst_backwards_ns = stats.worst_backwards_ns.max(s.logical - r.physical);
        }
        run.comm(
            local(s.thread),
            s.logical,
            Comm {
                send_physical: s.physical,
                receiver: local(r.thread),
                recv_logical: r.logical,
                recv_physical: r.physical,
                size: s.endpoint.size,
                tag: s.endpoint.tag,
            },
        );
    }
    Some(MergeInput {
        run: run.finish().expect("an in-memory run has nothing to spill"),
        time_offset: base,
        threads,
    })
}
