//! One rank of a synthetic MPI job: what the spec asks for, and the calls the rank makes on the
//! job's shared timeline.
//!
//! Each rank's file is written on its own, from its own spec, yet the files must agree: a receive
//! ends after its send started, MPI_Init and barriers end at the same instant on every rank. So the
//! schedule is kept in *true time* (ns on an exact wall clock, anchored by
//! [`SynthMpi::job_start_ns`]), and every gap, duration and jitter is a pure function of (job, rank,
//! iteration, call): a rank works out when its peer sent by the very formula the peer's own file
//! uses. A rank's session timestamps are true time minus its `SynthSpec::utc_epoch_ns`; only the
//! recorded `utcEpochNs` carries the clock skew.

use std::fmt;
use std::str::FromStr;

use anyhow::{ensure, Result};

use crate::rng::SplitMix64;
use crate::SynthSpec;

/// What each iteration of the job communicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MpiPattern {
    /// MPI_Send to rank + 1 and MPI_Recv from rank - 1, then MPI_Allreduce and MPI_Barrier.
    Ring,
    /// MPI_Irecv from and MPI_Isend to both neighbours, MPI_Waitall on the four requests, then
    /// MPI_Bcast from rank 0.
    NonBlocking,
}

impl MpiPattern {
    fn name(self) -> &'static str {
        match self {
            Self::Ring => "ring",
            Self::NonBlocking => "nonblocking",
        }
    }
}

impl fmt::Display for MpiPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MpiPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ring" => Ok(Self::Ring),
            "nonblocking" | "non-blocking" => Ok(Self::NonBlocking),
            _ => Err(format!(
                "unknown MPI pattern {s:?}; expected ring or nonblocking"
            )),
        }
    }
}

/// MPI tracing of a spec's first process (its main thread), as rank `rank` of a job.
///
/// The job's ranks share one timeline: every rank's spec must have the same `world_size`,
/// `iterations`, `pattern` and `job_start_ns`, and a `utc_epoch_ns` (its true session start) at
/// most 100 ms after `job_start_ns`. MPI_Init then returns 500 ms after `job_start_ns` on every
/// rank, the iterations follow, then the process's CUDA work, then MPI_Finalize.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthMpi {
    /// Rank in MPI_COMM_WORLD.
    pub rank: u32,
    pub world_size: u32,
    pub iterations: u32,
    /// Error of this rank's clock: the recorded `utcEpochNs` is the true session start plus this,
    /// so aligning files on `utcEpochNs` alone leaves this rank off by it.
    pub clock_skew_ns: i64,
    pub pattern: MpiPattern,
    /// True wall clock (ns since the Unix epoch) of the job launch, the anchor of the timeline.
    pub job_start_ns: i64,
}

impl SynthMpi {
    /// Rank `rank` of `world_size`, 10 iterations, an exact clock.
    pub fn new(rank: u32, world_size: u32, pattern: MpiPattern, job_start_ns: i64) -> Self {
        Self {
            rank,
            world_size,
            iterations: 10,
            clock_skew_ns: 0,
            pattern,
            job_start_ns,
        }
    }
}

/// Latest a rank's session may start after the job launch (ns).
const MAX_LAUNCH_DELAY: i64 = 100_000_000;
/// MPI_Init returns on every rank this long after the launch: after every process has started
/// (sessions start within 100 ms of the launch, processes 150-250 ms into their session).
const INIT_RETURNS: i64 = 500_000_000;
/// MPI_Init starts this long after its process, as the runtime loads and connects.
const INIT_START_DELAY: (i64, i64) = (4_000_000, 5_000_000);
/// The first iteration starts this long after MPI_Init returns.
const ITERATIONS_DELAY: i64 = 2_000_000;
/// One iteration, communication and idle time; every rank's calls fit well inside.
const PERIOD: i64 = 500_000;
/// Load imbalance: rank r starts each iteration (r % 4) times this late, plus jitter (ns).
const IMBALANCE_STEP: i64 = 7_000;
const START_JITTER: (i64, i64) = (0, 10_000);
/// Fixed cost of a call, and the rates of a local copy and of the network (bytes per ns).
const CALL_OVERHEAD: i64 = 1_500;
const COPY_BYTES_PER_NS: i64 = 10;
const NETWORK_BYTES_PER_NS: i64 = 5;
/// Network latency of a message, and of each step of a broadcast tree.
const LATENCY: i64 = 3_000;
/// Idle time between two calls of a rank, and a blocking call's wake-up after its data arrived.
const CALL_GAP: (i64, i64) = (500, 2_000);
const WAKE_UP: (i64, i64) = (300, 1_000);
/// Blocking calls that wait take at least this long.
const MIN_WAIT: i64 = 800;
/// Non-blocking calls only post a request.
const POST_CALL: (i64, i64) = (800, 2_500);
/// Ring collectives end at these offsets into the iteration; the barrier on every rank at once.
const ALLREDUCE_RETURNS: i64 = 80_000;
const ALLREDUCE_EXIT_JITTER: (i64, i64) = (0, 800);
const BARRIER_RETURNS: i64 = 100_000;
/// Ring tags cycle through 100..116, so a reader must match messages by order as well as tag.
const RING_TAG: i64 = 100;
const RING_TAGS: u32 = 16;
/// Halo exchange tags: messages going up (to rank + 1) and down.
const TAG_UP: i64 = 200;
const TAG_DOWN: i64 = 201;
const ALLREDUCE_BYTES: i64 = 1_024;
const BCAST_BYTES: i64 = 4_096;
/// MPI_Finalize waits this long after the rank's last call, then takes this long.
const FINALIZE_GAP: (i64, i64) = (20_000, 200_000);
const FINALIZE: (i64, i64) = (2_000_000, 6_000_000);
/// The rank's CUDA work starts this long after its last iteration (ns).
const CUDA_DELAY: i64 = 1_000_000;

/// Checks what one file can check of the job: the rank exists and its session starts in time.
pub(crate) fn validate(spec: &SynthSpec, mpi: &SynthMpi) -> Result<()> {
    ensure!(
        mpi.rank < mpi.world_size,
        "MPI rank {} is not below the world size {}",
        mpi.rank,
        mpi.world_size
    );
    ensure!(
        spec.processes.first().is_some_and(|p| p.cpu_threads > 0),
        "MPI tracing needs a first process with a CPU thread"
    );
    let delay = spec.utc_epoch_ns.saturating_sub(mpi.job_start_ns);
    ensure!(
        (0..=MAX_LAUNCH_DELAY).contains(&delay),
        "the session of MPI rank {} starts {delay} ns after the job launch; it must be 0 to {MAX_LAUNCH_DELAY}",
        mpi.rank
    );
    Ok(())
}

/// What an MPI call records besides its interval and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// A point-to-point call with `peer`; `sends` tells a send from a receive.
    P2p {
        peer: u32,
        tag: i64,
        bytes: i64,
        request: Option<i64>,
        sends: bool,
    },
    Collective {
        root: Option<u32>,
        bytes: i64,
        recv_bytes: i64,
    },
    /// A wait completing these requests.
    Wait { requests: Vec<i64> },
    /// Init, Finalize, Comm_rank...: nothing but the call.
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MpiCall {
    pub name: &'static str,
    pub start: i64,
    pub end: i64,
    pub kind: CallKind,
}

impl MpiCall {
    fn other(name: &'static str, (start, end): (i64, i64)) -> Self {
        Self {
            name,
            start,
            end,
            kind: CallKind::Other,
        }
    }
}

/// Independent streams of draws, one per decision a rank makes in an iteration.
#[derive(Clone, Copy)]
enum Draw {
    IterationStart,
    SendToRecv,
    Wake,
    BcastWake,
    BeforeCollective,
    CollectiveExit,
    BeforeBarrier,
    PostGap(usize),
    PostCall(usize),
    BeforeWait,
    BeforeBcast,
    InitStart,
    CommRank,
    CommSize,
    RankName,
    FinalizeGap,
    Finalize,
    Handle,
}

impl Draw {
    fn salt(self) -> u64 {
        match self {
            Self::IterationStart => 1,
            Self::SendToRecv => 2,
            Self::Wake => 3,
            Self::BeforeCollective => 4,
            Self::CollectiveExit => 5,
            Self::BeforeBarrier => 6,
            Self::BeforeWait => 7,
            Self::BeforeBcast => 8,
            Self::InitStart => 9,
            Self::CommRank => 10,
            Self::CommSize => 11,
            Self::RankName => 12,
            Self::FinalizeGap => 13,
            Self::Finalize => 14,
            Self::Handle => 15,
            Self::BcastWake => 16,
            Self::PostGap(i) => 100 + i as u64,
            Self::PostCall(i) => 200 + i as u64,
        }
    }
}

fn mix(value: u64) -> u64 {
    SplitMix64::new(value).next_u64()
}

/// Arrival of a message of `bytes` sent at `sent`.
fn arrival(sent: i64, bytes: i64) -> i64 {
    sent + LATENCY + bytes / NETWORK_BYTES_PER_NS
}

/// Steps of a binomial broadcast tree over `ranks`.
fn tree_depth(ranks: u32) -> i64 {
    i64::from(ranks.max(1).next_power_of_two().trailing_zeros())
}

/// The job-wide schedule: the same numbers in every rank's file.
pub(crate) struct Job<'a> {
    mpi: &'a SynthMpi,
    seed: u64,
}

impl<'a> Job<'a> {
    pub(crate) fn new(mpi: &'a SynthMpi) -> Self {
        Self {
            mpi,
            seed: mix(mpi.job_start_ns as u64 ^ 0x4D50_495F_4A4F_4221),
        }
    }

    /// Uniform in `lo..hi`, the same for this (rank, iteration, draw) in every file of the job.
    fn draw(&self, rank: u32, iteration: u32, what: Draw, (lo, hi): (i64, i64)) -> i64 {
        let key = mix(mix(self.seed ^ u64::from(rank)) ^ u64::from(iteration)) ^ what.salt();
        SplitMix64::new(key).range(lo, hi)
    }

    fn next(&self, rank: u32) -> u32 {
        (rank + 1) % self.mpi.world_size
    }

    fn prev(&self, rank: u32) -> u32 {
        (rank + self.mpi.world_size - 1) % self.mpi.world_size
    }

    pub(crate) fn init_returns(&self) -> i64 {
        self.mpi.job_start_ns + INIT_RETURNS
    }

    fn iteration_start(&self, iteration: u32) -> i64 {
        self.init_returns() + ITERATIONS_DELAY + i64::from(iteration) * PERIOD
    }

    /// When every rank is done communicating.
    pub(crate) fn iterations_end(&self) -> i64 {
        self.iteration_start(self.mpi.iterations)
    }

    /// When `rank` makes its first call of `iteration`.
    fn first_call(&self, rank: u32, iteration: u32) -> i64 {
        let imbalance = i64::from(rank % 4) * IMBALANCE_STEP;
        self.iteration_start(iteration)
            + imbalance
            + self.draw(rank, iteration, Draw::IterationStart, START_JITTER)
    }

    // --- Ring ---

    fn ring_bytes(&self, sender: u32, iteration: u32) -> i64 {
        1_024 << ((sender + iteration) % 6)
    }

    fn ring_tag(&self, iteration: u32) -> i64 {
        RING_TAG + i64::from(iteration % RING_TAGS)
    }

    /// The interval of `rank`'s MPI_Send (eager: it returns once the data is copied out).
    fn ring_send(&self, rank: u32, iteration: u32) -> (i64, i64) {
        let start = self.first_call(rank, iteration);
        let copy = self.ring_bytes(rank, iteration) / COPY_BYTES_PER_NS;
        (start, start + CALL_OVERHEAD + copy)
    }

    fn ring_iteration(&self, rank: u32, iteration: u32) -> Vec<MpiCall> {
        let (next, prev) = (self.next(rank), self.prev(rank));
        let tag = self.ring_tag(iteration);
        let send = self.ring_send(rank, iteration);
        let recv_start = send.1 + self.draw(rank, iteration, Draw::SendToRecv, CALL_GAP);
        let incoming = self.ring_bytes(prev, iteration);
        let arrived = arrival(self.ring_send(prev, iteration).0, incoming);
        let recv_end =
            (recv_start + MIN_WAIT).max(arrived) + self.draw(rank, iteration, Draw::Wake, WAKE_UP);
        let allreduce_start =
            recv_end + self.draw(rank, iteration, Draw::BeforeCollective, CALL_GAP);
        let allreduce_end = self.iteration_start(iteration)
            + ALLREDUCE_RETURNS
            + self.draw(rank, iteration, Draw::CollectiveExit, ALLREDUCE_EXIT_JITTER);
        let barrier_start =
            allreduce_end + self.draw(rank, iteration, Draw::BeforeBarrier, CALL_GAP);
        let barrier_end = self.iteration_start(iteration) + BARRIER_RETURNS;
        vec![
            MpiCall {
                name: "MPI_Send",
                start: send.0,
                end: send.1,
                kind: CallKind::P2p {
                    peer: next,
                    tag,
                    bytes: self.ring_bytes(rank, iteration),
                    request: None,
                    sends: true,
                },
            },
            MpiCall {
                name: "MPI_Recv",
                start: recv_start,
                end: recv_end,
                kind: CallKind::P2p {
                    peer: prev,
                    tag,
                    bytes: incoming,
                    request: None,
                    sends: false,
                },
            },
            MpiCall {
                name: "MPI_Allreduce",
                start: allreduce_start,
                end: allreduce_end,
                kind: CallKind::Collective {
                    root: None,
                    bytes: ALLREDUCE_BYTES,
                    recv_bytes: ALLREDUCE_BYTES,
                },
            },
            MpiCall {
                name: "MPI_Barrier",
                start: barrier_start,
                end: barrier_end,
                kind: CallKind::Collective {
                    root: None,
                    bytes: 0,
                    recv_bytes: 0,
                },
            },
        ]
    }

    // --- Non-blocking halo exchange ---

    fn halo_bytes(&self, iteration: u32) -> i64 {
        2_048 << (iteration % 4)
    }

    /// `rank`'s four posting calls, in order: Irecv from prev (tag up), Irecv from next (tag
    /// down), Isend to next (tag up), Isend to prev (tag down).
    fn posts(&self, rank: u32, iteration: u32) -> [(i64, i64); 4] {
        let mut at = self.first_call(rank, iteration);
        let mut posts = [(0, 0); 4];
        for (i, post) in posts.iter_mut().enumerate() {
            if i > 0 {
                at += self.draw(rank, iteration, Draw::PostGap(i), CALL_GAP);
            }
            let end = at + self.draw(rank, iteration, Draw::PostCall(i), POST_CALL);
            *post = (at, end);
            at = end;
        }
        posts
    }

    fn waitall(&self, rank: u32, iteration: u32) -> (i64, i64) {
        let start = self.posts(rank, iteration)[3].1
            + self.draw(rank, iteration, Draw::BeforeWait, CALL_GAP);
        let bytes = self.halo_bytes(iteration);
        let from_prev = arrival(self.posts(self.prev(rank), iteration)[2].0, bytes);
        let from_next = arrival(self.posts(self.next(rank), iteration)[3].0, bytes);
        let end = (start + MIN_WAIT).max(from_prev).max(from_next)
            + self.draw(rank, iteration, Draw::Wake, WAKE_UP);
        (start, end)
    }

    fn bcast_start(&self, rank: u32, iteration: u32) -> i64 {
        self.waitall(rank, iteration).1 + self.draw(rank, iteration, Draw::BeforeBcast, CALL_GAP)
    }

    /// The root returns once its data is out; the others once it reached them down the tree.
    fn bcast_end(&self, rank: u32, iteration: u32) -> i64 {
        let start = self.bcast_start(rank, iteration);
        if rank == 0 {
            return start + CALL_OVERHEAD + BCAST_BYTES / COPY_BYTES_PER_NS;
        }
        let root_start = self.bcast_start(0, iteration);
        let reached = root_start
            + LATENCY * tree_depth(self.mpi.world_size)
            + BCAST_BYTES / NETWORK_BYTES_PER_NS;
        (start + MIN_WAIT).max(reached) + self.draw(rank, iteration, Draw::BcastWake, WAKE_UP)
    }

    /// Request handles of `rank`, reused every iteration as MPI libraries recycle requests.
    fn requests(&self, rank: u32) -> [i64; 4] {
        let base = 0x55D0_0000_0000 + (self.draw(rank, 0, Draw::Handle, (0, 0xFFFF)) << 16);
        [0x2A0, 0x420, 0x5A0, 0x720].map(|offset| base + offset)
    }

    fn nonblocking_iteration(&self, rank: u32, iteration: u32) -> Vec<MpiCall> {
        let (next, prev) = (self.next(rank), self.prev(rank));
        let bytes = self.halo_bytes(iteration);
        let requests = self.requests(rank);
        let targets = [
            ("MPI_Irecv", prev, TAG_UP, false),
            ("MPI_Irecv", next, TAG_DOWN, false),
            ("MPI_Isend", next, TAG_UP, true),
            ("MPI_Isend", prev, TAG_DOWN, true),
        ];
        let mut calls: Vec<MpiCall> = self
            .posts(rank, iteration)
            .into_iter()
            .zip(targets)
            .zip(requests)
            .map(
                |(((start, end), (name, peer, tag, sends)), request)| MpiCall {
                    name,
                    start,
                    end,
                    kind: CallKind::P2p {
                        peer,
                        tag,
                        bytes,
                        request: Some(request),
                        sends,
                    },
                },
            )
            .collect();
        let (wait_start, wait_end) = self.waitall(rank, iteration);
        calls.push(MpiCall {
            name: "MPI_Waitall",
            start: wait_start,
            end: wait_end,
            kind: CallKind::Wait {
                requests: requests.to_vec(),
            },
        });
        let root = rank == 0;
        calls.push(MpiCall {
            name: "MPI_Bcast",
            start: self.bcast_start(rank, iteration),
            end: self.bcast_end(rank, iteration),
            kind: CallKind::Collective {
                root: Some(0),
                bytes: if root { BCAST_BYTES } else { 0 },
                recv_bytes: if root { 0 } else { BCAST_BYTES },
            },
        });
        calls
    }

    // --- Set-up and tear-down ---

    /// MPI_Init, MPI_Comm_rank, MPI_Comm_size of a rank whose process started at `process_start`.
    fn start_up(&self, rank: u32, process_start: i64) -> Vec<MpiCall> {
        let init_start = process_start + self.draw(rank, 0, Draw::InitStart, INIT_START_DELAY);
        let init = (init_start, self.init_returns());
        let comm_rank_start = init.1 + self.draw(rank, 0, Draw::CommRank, CALL_GAP);
        let comm_rank = (comm_rank_start, comm_rank_start + 400);
        let comm_size_start = comm_rank.1 + self.draw(rank, 0, Draw::CommSize, CALL_GAP);
        let comm_size = (comm_size_start, comm_size_start + 300);
        vec![
            MpiCall::other("MPI_Init", init),
            MpiCall::other("MPI_Comm_rank", comm_rank),
            MpiCall::other("MPI_Comm_size", comm_size),
        ]
    }

    /// When the NVTX form names the thread "MPI Rank N": just after MPI_Init returns.
    pub(crate) fn rank_named(&self, rank: u32) -> i64 {
        self.init_returns() + self.draw(rank, 0, Draw::RankName, (3_000, 10_000))
    }

    fn finalize(&self, rank: u32, after: i64) -> MpiCall {
        let start = after + self.draw(rank, 0, Draw::FinalizeGap, FINALIZE_GAP);
        let end = start + self.draw(rank, 0, Draw::Finalize, FINALIZE);
        MpiCall::other("MPI_Finalize", (start, end))
    }

    /// Every call of `rank` up to its last iteration, in order.
    fn calls_until_finalize(&self, rank: u32, process_start: i64) -> Vec<MpiCall> {
        let mut calls = self.start_up(rank, process_start);
        for iteration in 0..self.mpi.iterations {
            calls.extend(match self.mpi.pattern {
                MpiPattern::Ring => self.ring_iteration(rank, iteration),
                MpiPattern::NonBlocking => self.nonblocking_iteration(rank, iteration),
            });
        }
        calls
    }

    /// `rank`'s handle of MPI_COMM_WORLD: an address in the MPI library, so it differs by rank.
    pub(crate) fn comm_world_handle(&self, rank: u32) -> i64 {
        0x7F00_0000_0000 + (self.draw(rank, 1, Draw::Handle, (0, 0xF_FFFF)) << 12) + 0x4C0
    }

    /// `commUid` of MPI_COMM_WORLD: the same on every rank of the job.
    pub(crate) fn comm_world_uid(&self) -> i64 {
        (mix(self.seed ^ 0x5549_4400) >> 1) as i64
    }
}

/// The MPI calls of the rank a spec describes, on the job's true timeline.
pub(crate) struct RankTimeline<'a> {
    pub mpi: &'a SynthMpi,
    pub job: Job<'a>,
    /// True wall clock of the session's t = 0 (`SynthSpec::utc_epoch_ns`).
    epoch: i64,
    /// Session time the rank's process starts at.
    pub process_start: i64,
    /// True times; MPI_Finalize is added by [`Self::finalize_after`].
    calls: Vec<MpiCall>,
}

impl<'a> RankTimeline<'a> {
    pub(crate) fn plan(spec: &SynthSpec, mpi: &'a SynthMpi, process_start: i64) -> Self {
        let job = Job::new(mpi);
        let calls = job.calls_until_finalize(mpi.rank, spec.utc_epoch_ns + process_start);
        Self {
            mpi,
            job,
            epoch: spec.utc_epoch_ns,
            process_start,
            calls,
        }
    }

    pub(crate) fn to_session(&self, true_time: i64) -> i64 {
        true_time - self.epoch
    }

    /// Session time the process's CUDA work may start: after its last iteration, so that the main
    /// thread is never in an MPI call and a CUDA call at once.
    pub(crate) fn cuda_start(&self) -> i64 {
        self.to_session(self.job.iterations_end()) + CUDA_DELAY
    }

    /// Adds MPI_Finalize after `session_time` (the end of everything else).
    pub(crate) fn finalize_after(&mut self, session_time: i64) {
        let after = self.epoch + session_time.max(self.to_session(self.job.iterations_end()));
        self.calls.push(self.job.finalize(self.mpi.rank, after));
    }

    /// The calls in session time.
    pub(crate) fn session_calls(&self) -> impl Iterator<Item = MpiCall> + '_ {
        self.calls.iter().map(|call| MpiCall {
            start: self.to_session(call.start),
            end: self.to_session(call.end),
            ..call.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(pattern: MpiPattern, ranks: u32) -> SynthMpi {
        SynthMpi {
            iterations: 40,
            ..SynthMpi::new(0, ranks, pattern, 1_740_819_600_000_000_000)
        }
    }

    #[test]
    fn calls_of_a_rank_follow_each_other_inside_their_iteration() {
        for pattern in [MpiPattern::Ring, MpiPattern::NonBlocking] {
            for ranks in [1, 2, 3, 8, 4096] {
                let mpi = job(pattern, ranks);
                let job = Job::new(&mpi);
                for rank in [0, 1, ranks / 2, ranks - 1]
                    .into_iter()
                    .filter(|&r| r < ranks)
                {
                    let calls = job.calls_until_finalize(rank, mpi.job_start_ns + 250_000_000);
                    for pair in calls.windows(2) {
                        let (a, b) = (&pair[0], &pair[1]);
                        assert!(a.start < a.end, "{pattern} {ranks}: {a:?}");
                        assert!(a.end < b.start, "{pattern} {ranks}: {a:?} then {b:?}");
                    }
                    let last = calls.last().unwrap();
                    assert!(last.end < job.iterations_end(), "{pattern} {ranks}");
                    for iteration in 0..mpi.iterations {
                        let (start, next) = (
                            job.iteration_start(iteration),
                            job.iteration_start(iteration + 1),
                        );
                        let inside = calls
                            .iter()
                            .filter(|c| c.start >= start && c.end < next)
                            .count();
                        let per_iteration = match pattern {
                            MpiPattern::Ring => 4,
                            MpiPattern::NonBlocking => 6,
                        };
                        assert_eq!(inside, per_iteration, "{pattern} {ranks} {iteration}");
                    }
                }
            }
        }
    }

    #[test]
    fn patterns_parse_and_print() {
        for pattern in [MpiPattern::Ring, MpiPattern::NonBlocking] {
            assert_eq!(pattern.to_string().parse::<MpiPattern>(), Ok(pattern));
        }
        assert!("mesh".parse::<MpiPattern>().is_err());
    }
}
