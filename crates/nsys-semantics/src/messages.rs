//! Point-to-point MPI messages: sends paired with receives across reports by
//! (sender rank, receiver rank, tag, communicator) in call order — MPI's
//! non-overtaking rule — as Paraver communications on the common clock.

use std::collections::{BTreeMap, VecDeque};

use paraver_writer::{Comm, GlobalThread, MergeInput, RunBuilder};

use crate::handoff::{CommKey, P2pEndpoint};
use crate::layout::TracePlan;
use crate::ranks::RankSelection;
use crate::report::ReportTranslation;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageStats {
    pub matched: u64,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    /// Endpoints of processes whose rank is unknown.
    pub without_rank: u64,
    /// Messages to or from ranks `--ranks` leaves out (not drawn).
    pub with_ranks_left_out: u64,
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
    match_messages_of(reports, plan, None)
}

/// [`match_messages`] of the ranks `selection` keeps (`--ranks`): a message
/// whose other end is a rank left out is counted, not paired.
pub fn match_messages_of(
    reports: &[ReportTranslation],
    plan: &TracePlan,
    selection: Option<&RankSelection>,
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
            let peer_left_out = selection
                .is_some_and(|s| u32::try_from(e.peer).is_ok_and(|peer| !s.contains(peer)));
            if peer_left_out {
                stats.with_ranks_left_out += 1;
                continue;
            }
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
        // Pairs as many as both sides have; the rest of either side stays counted.
        let paired = out.len().min(inn.len());
        pairs.extend(out.drain(..paired).zip(inn.drain(..paired)));
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

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::expect;

    use super::*;
    use crate::layout::plan_layout;
    use crate::mpi::MPI;
    use crate::testing::{translate, GLOBAL_PID};

    /// Rank `rank`'s report, its session `start_ns` late, with the MPI
    /// point-to-point calls `calls` (`(start, end, name, tag, peer, size)`) on its
    /// main thread, in the world communicator.
    fn rank(
        rank: u32,
        start_ns: i64,
        calls: &[(i64, i64, &str, i64, i64, i64)],
    ) -> ReportTranslation {
        let tid = GLOBAL_PID | 24_601;
        let mut rows: Vec<String> = Vec::new();
        for (start, end, name, tag, peer, size) in calls {
            let text = match *name {
                "MPI_Send" => 90001,
                "MPI_Recv" => 90002,
                other => panic!("{other}"),
            };
            rows.push(format!(
                "({start}, {end}, {tid}, {text}, NULL, NULL, {tag}, {peer}, {size}, NULL)"
            ));
        }
        translate(
            &[MPI],
            &format!(
                "UPDATE META_DATA_CAPTURE SET value = 'SLURM_PROCID=\"{rank}\"'
                     WHERE value LIKE 'SLURM_PROCID=%';
                 UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + {start_ns};
                 INSERT INTO StringIds VALUES (90001, 'MPI_Send'), (90002, 'MPI_Recv');
                 CREATE TABLE IF NOT EXISTS MPI_P2P_EVENTS (start INTEGER NOT NULL,
                     end INTEGER, globalTid INTEGER, textId INTEGER, commHandle INTEGER,
                     commUid INTEGER, tag INTEGER, remoteRank INTEGER, size INTEGER,
                     requestHandle INTEGER);
                 INSERT INTO MPI_P2P_EVENTS VALUES {};",
                rows.join(", ")
            ),
        )
    }

    /// The messages' run as text, one communication a line, then the counts.
    fn describe(reports: &[ReportTranslation]) -> String {
        let plan = plan_layout(reports, "app");
        let (input, stats) = match_messages(reports, &plan);
        let mut text = String::new();
        if let Some(input) = input {
            writeln!(text, "offset {}", input.time_offset).unwrap();
            let place = |t: u32| {
                let g = input.threads[t as usize];
                format!("{}.{}", g.task + 1, g.thread + 1)
            };
            for (t, record) in input.run.sorted_records() {
                let paraver_writer::record::Body::Comm { index } = record.body else {
                    panic!("not a communication: {record:?}");
                };
                let c = &input.run.comms[index as usize];
                writeln!(
                    text,
                    "{} -> {}: send {}/{}, receive {}/{}, {} bytes, tag {}",
                    place(t),
                    place(c.receiver),
                    record.time,
                    c.send_physical,
                    c.recv_logical,
                    c.recv_physical,
                    c.size,
                    c.tag
                )
                .unwrap();
            }
        }
        writeln!(text, "{stats:?}").unwrap();
        text
    }

    /// Sends pair with receives by (sender, receiver, tag) in call order (MPI's
    /// non-overtaking rule), on the common clock (rank 1's session starts 1000 ns
    /// late); each send or receive without a partner is counted.
    #[test]
    fn sends_pair_with_receives_in_call_order_on_the_common_clock() {
        let reports = [
            rank(
                0,
                0,
                &[
                    (100, 150, "MPI_Send", 7, 1, 64),
                    (200, 250, "MPI_Send", 7, 1, 128),
                    (300, 350, "MPI_Send", 9, 1, 8),
                    (400, 450, "MPI_Recv", 5, 1, 16),
                ],
            ),
            rank(
                1,
                1000,
                &[
                    // Clock 1000 ns late: 0 here is 1000 on rank 0's clock.
                    (-900, -500, "MPI_Recv", 7, 0, 64),
                    (-400, -300, "MPI_Recv", 7, 0, 128),
                    (-1000, -990, "MPI_Send", 5, 0, 16),
                    (0, 10, "MPI_Send", 11, 0, 4),
                ],
            ),
        ];
        expect![[r#"
            offset 1735732800000000000
            2.1 -> 1.1: send 0/0, receive 400/450, 16 bytes, tag 5
            1.1 -> 2.1: send 100/100, receive 100/500, 64 bytes, tag 7
            1.1 -> 2.1: send 200/200, receive 600/700, 128 bytes, tag 7
            MessageStats { matched: 3, unmatched_sends: 2, unmatched_receives: 0, without_rank: 0, with_ranks_left_out: 0, backwards: 0, worst_backwards_ns: 0 }
        "#]].assert_eq(&describe(&reports));
    }
}
