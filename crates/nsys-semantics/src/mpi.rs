//! MPI: calls from the `MPI_*` tables (nsys 2024+) as Extrae's types 50000001-05
//! with Extrae's values and thread states, collective sizes, the point-to-point
//! endpoints that [`crate::messages`] pairs across reports, and the times used to
//! align clocks (`--sync`). 2022-era reports record MPI as an NVTX domain, which
//! [`crate::nvtx`] translates with [`call_pair`].

use std::rc::Rc;

use nsys_reader::ids::pid_of;
use nsys_reader::mpi::{Communicator, MpiCall, MpiDetail};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::handoff::{CommKey, P2pEndpoint};
use crate::mpi_values::{self, MpiClass};
use crate::types::interval;
use crate::view::bundled_view;

pub const MPI: Category = Category::named("mpi");

/// The `MPI_*` tables; the NVTX pass translates the 2022-era `MPI` domain.
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: MPI,
    aliases: &[],
    bsc_names: &["mpi_event_trace"],
    groups: &[],
    tables: &[
        "MPI_P2P_EVENTS",
        "MPI_COLLECTIVES_EVENTS",
        "MPI_START_WAIT_EVENTS",
        "MPI_OTHER_EVENTS",
    ],
    table_prefixes: &[],
    bytes_per_row: 130,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: mpi_values::STATES,
    views: &[
        bundled_view!(
            "views/mpi_calls.cfg",
            "Which MPI calls does each thread make, and which messages do they exchange?",
        ),
        bundled_view!(
            "views/mpi_messages.cfg",
            "How many bytes of MPI messages does each sender have in transit?",
        ),
        bundled_view!(
            "analysis/mpi_profile.cfg",
            "How much time does each thread spend in each MPI call?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: pass,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    let mut types: Vec<EventTypeInfo> = MpiClass::ALL
        .iter()
        .map(|&class| {
            let mut table: Vec<(i64, String)> = vec![(0, "Outside MPI".to_string())];
            table.extend(
                mpi_values::MPI_CALLS
                    .iter()
                    .filter(|c| c.class == class)
                    .map(|c| (c.value, c.name.to_string())),
            );
            interval(class.event_type(), class.label(), ValueLabels::Fixed(table))
        })
        .collect();
    types.extend([
        interval(
            mpi_values::SEND_SIZE_IN_COLLECTIVE,
            "Send Size in MPI Global OP",
            ValueLabels::Bytes,
        ),
        interval(
            mpi_values::RECV_SIZE_IN_COLLECTIVE,
            "Recv Size in MPI Global OP",
            ValueLabels::Bytes,
        ),
        interval(
            mpi_values::ROOT_IN_COLLECTIVE,
            "Root in MPI Global OP",
            ValueLabels::Numeric,
        ),
    ]);
    types
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let endpoints = translate(ctx)?;
    ctx.p2p.extend(endpoints);
    Ok(())
}

/// The event pair and thread state of an MPI call, by name. Known calls keep
/// Extrae's value (the writer reserves it); `PMPI_` names use the `MPI_` label.
pub(crate) fn call_pair(ctx: &mut ReportContext, name: &str) -> (EventPair, u32) {
    let known = mpi_values::lookup(name);
    let class = known
        .map(|c| c.class)
        .unwrap_or_else(|| mpi_values::guess_class(name));
    let label = known.map(|c| c.name).unwrap_or(name);
    let ty = class.event_type();
    let pair = EventPair::name(ty, ctx.run.names.intern(ty, label));
    (pair, mpi_values::state_of(name))
}

/// The calls of the `MPI_*` tables, and the report's message endpoints.
fn translate(ctx: &mut ReportContext) -> Result<Vec<P2pEndpoint>, ReadError> {
    let export = ctx.export;
    if !export.has_mpi_tables() {
        return Ok(Vec::new());
    }
    let comms = export.mpi_communicators()?;
    let mut pass = CallScan {
        comms: &comms,
        names: FxHashMap::default(),
        seen_waits: FxHashSet::default(),
        waits: Vec::new(),
        endpoints: Vec::new(),
        translated: 0,
        duplicates: 0,
    };
    let scan = export.mpi_calls(|call| pass.call(ctx, call))?;
    ctx.count("MPI calls", pass.translated);
    ctx.count("MPI wait rows for the same call", pass.duplicates);
    ctx.note_skipped("MPI tables", scan.skipped);
    let mut endpoints = pass.endpoints;
    complete_receives(&mut endpoints, &mut pass.waits);
    Ok(endpoints)
}

/// What a call's name decides, worked out once per `StringIds` id.
struct CallName {
    text: String,
    pair: EventPair,
    state: u32,
    /// Whether the call may be a clock synchronisation point (init, barrier).
    sync_point: bool,
    direction: P2pDirection,
    /// Non-blocking (`MPI_I*`): the receive's data arrives at its wait.
    immediate: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum P2pDirection {
    Send,
    Receive,
    /// Neither, or both (a Sendrecv's two rows cannot be told apart).
    Unpaired,
}

impl CallName {
    fn new(ctx: &mut ReportContext, text: String) -> Self {
        let (pair, state) = call_pair(ctx, &text);
        let lower = text.to_ascii_lowercase();
        let direction = match (lower.contains("send"), lower.contains("recv")) {
            (true, false) => P2pDirection::Send,
            (false, true) => P2pDirection::Receive,
            _ => P2pDirection::Unpaired,
        };
        let bare = lower.trim_start_matches('p');
        CallName {
            pair,
            state,
            sync_point: bare.starts_with("mpi_init") || bare == "mpi_barrier",
            direction,
            immediate: lower.starts_with("mpi_i") || lower.starts_with("pmpi_i"),
            text,
        }
    }
}

struct CallScan<'c> {
    comms: &'c std::collections::HashMap<i64, Communicator>,
    names: FxHashMap<Option<i64>, Rc<CallName>>,
    /// (thread, start, end) of start/wait rows: one row per request of one call.
    seen_waits: FxHashSet<(i64, i64, i64)>,
    waits: Vec<(u32, i64, i64, i64)>,
    endpoints: Vec<P2pEndpoint>,
    translated: u64,
    duplicates: u64,
}

impl CallScan<'_> {
    fn call(&mut self, ctx: &mut ReportContext, call: &MpiCall) -> Result<(), ReadError> {
        if !ctx.within_limits_open(call.start, call.end) {
            return Ok(());
        }
        let end = call.end.unwrap_or(call.start).max(call.start);
        let pid = pid_of(call.global_tid);
        if let MpiDetail::StartWait { request } = call.detail {
            if let Some(r) = request {
                self.waits.push((pid, r, call.start, end));
            }
            if !self.seen_waits.insert((call.global_tid, call.start, end)) {
                self.duplicates += 1;
                return Ok(());
            }
        }
        let thread = ctx.cpu_thread(call.global_tid);
        let name = self.name(ctx, call.name_id)?;
        let mut pairs = vec![name.pair];
        match call.detail {
            MpiDetail::Collective {
                root,
                size,
                recv_size,
                ..
            } => {
                pairs.extend(size.map(|s| EventPair::raw(mpi_values::SEND_SIZE_IN_COLLECTIVE, s)));
                pairs.extend(
                    recv_size.map(|s| EventPair::raw(mpi_values::RECV_SIZE_IN_COLLECTIVE, s)),
                );
                pairs.extend(root.map(|r| EventPair::raw(mpi_values::ROOT_IN_COLLECTIVE, r)));
            }
            MpiDetail::P2p {
                comm,
                tag,
                remote_rank,
                size,
                request,
            } => {
                self.endpoint(
                    pid,
                    thread,
                    name.direction,
                    name.immediate,
                    call.start,
                    end,
                    comm,
                    tag,
                    remote_rank,
                    size,
                    request,
                );
            }
            _ => {}
        }
        ctx.run.interval(thread, call.start, end, &pairs);
        ctx.states.add(thread, call.start, end, name.state);
        if name.sync_point {
            note_sync_point(ctx, &name.text, end);
        }
        self.translated += 1;
        Ok(())
    }

    fn name(
        &mut self,
        ctx: &mut ReportContext,
        id: Option<i64>,
    ) -> Result<Rc<CallName>, ReadError> {
        if let Some(n) = self.names.get(&id) {
            return Ok(Rc::clone(n));
        }
        let text = match id {
            None => "MPI (unnamed call)".to_string(),
            Some(id) => ctx
                .export
                .string(id)?
                .unwrap_or_else(|| format!("MPI call {id}")),
        };
        let name = Rc::new(CallName::new(ctx, text));
        self.names.insert(id, Rc::clone(&name));
        Ok(name)
    }

    #[allow(clippy::too_many_arguments)]
    fn endpoint(
        &mut self,
        pid: u32,
        thread: LocalThread,
        direction: P2pDirection,
        immediate: bool,
        start: i64,
        end: i64,
        comm: Option<i64>,
        tag: Option<i64>,
        remote: Option<i64>,
        size: Option<i64>,
        request: Option<i64>,
    ) {
        let is_send = match direction {
            P2pDirection::Send => true,
            P2pDirection::Receive => false,
            P2pDirection::Unpaired => return,
        };
        let (Some(remote), Some(tag)) = (remote, tag) else {
            return;
        };
        let communicator = comm.and_then(|h| self.comms.get(&h));
        let peer = communicator
            .and_then(|c| c.members.get(usize::try_from(remote).ok()?).copied())
            .unwrap_or(remote);
        self.endpoints.push(P2pEndpoint {
            pid,
            thread,
            is_send,
            peer,
            tag,
            comm: comm_key(communicator),
            size: size.unwrap_or(0),
            logical: start,
            physical: if is_send { start } else { end },
            request: if immediate { request } else { None },
        });
    }
}

fn comm_key(comm: Option<&Communicator>) -> CommKey {
    match comm {
        None => CommKey::World,
        Some(c) => match c.uid {
            Some(uid) => CommKey::Uid(uid),
            None if c.members.is_empty() => CommKey::World,
            None => {
                let mut sorted = c.members.clone();
                sorted.sort_unstable();
                let world =
                    sorted.iter().enumerate().all(|(i, &m)| m == i as i64) && sorted == c.members;
                if world {
                    // Every rank in order: the world (or a duplicate of it).
                    CommKey::World
                } else {
                    CommKey::Members(c.members.clone())
                }
            }
        },
    }
}

/// A non-blocking receive's data arrives when the wait on its request returns.
fn complete_receives(endpoints: &mut [P2pEndpoint], waits: &mut [(u32, i64, i64, i64)]) {
    waits.sort_unstable();
    for e in endpoints.iter_mut().filter(|e| !e.is_send) {
        let Some(request) = e.request else { continue };
        let from = waits.partition_point(|w| (w.0, w.1, w.2) < (e.pid, request, e.logical));
        if let Some(&(pid, r, _, end)) = waits.get(from) {
            if pid == e.pid && r == request {
                e.physical = end;
            }
        }
    }
}

/// Remembers the end of the first MPI_Init and of the first and last barrier.
pub(crate) fn note_sync_point(ctx: &mut ReportContext, name: &str, end: i64) {
    let bare = name.trim_start_matches('P').to_ascii_lowercase();
    let points = &mut ctx.sync_points;
    if bare.starts_with("mpi_init") && !bare.starts_with("mpi_initialized") {
        points.mpi_init_end = Some(points.mpi_init_end.map_or(end, |t| t.min(end)));
    } else if bare == "mpi_barrier" {
        points.first_barrier_end = Some(points.first_barrier_end.map_or(end, |t| t.min(end)));
        points.last_barrier_end = Some(points.last_barrier_end.map_or(end, |t| t.max(end)));
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::expect;

    use super::*;
    use crate::testing::{records, translate, GLOBAL_PID};

    /// Calls are intervals of Extrae's types and states on their thread, with a
    /// collective's sizes and root; a wait row repeated for one call is written
    /// once. The point-to-point endpoints left for the pairing across reports: the
    /// peer is the world rank of the remote rank in its communicator (rank 1 of
    /// members 3,5 is 5), a receive arrives at the end of its call or, when
    /// non-blocking, of the wait on its request; calls that neither send nor
    /// receive leave none. MPI_Init's end and the barriers' ends are the sync
    /// points of `--sync`.
    #[test]
    fn calls_endpoints_and_sync_points() {
        let tid = GLOBAL_PID | 24_602;
        let translation = translate(
            &[MPI],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'MPI_Init'), (90002, 'MPI_Send'),
                     (90003, 'MPI_Irecv'), (90004, 'MPI_Wait'), (90005, 'MPI_Allreduce'),
                     (90006, 'MPI_Bcast'), (90007, 'MPI_Barrier'), (90008, 'MPI_Sendrecv');
                 INSERT INTO MPI_COMMUNICATORS (rank, timestamp, commHandle, size, members, commUid)
                 VALUES (0, 0, 7, 2, '3,5', NULL);
                 INSERT INTO MPI_OTHER_EVENTS (start, end, globalTid, textId)
                 VALUES (0, 50, {tid}, 90001);
                 INSERT INTO MPI_P2P_EVENTS
                     (start, end, globalTid, textId, commHandle, commUid, tag, remoteRank, size,
                      requestHandle)
                 VALUES (100, 120, {tid}, 90002, 7, NULL, 9, 1, 64, NULL),
                        (200, 210, {tid}, 90003, 7, NULL, 9, 0, 32, 42),
                        (220, 230, {tid}, 90008, NULL, NULL, 9, 1, 16, NULL);
                 INSERT INTO MPI_START_WAIT_EVENTS (start, end, globalTid, textId, requestHandle)
                 VALUES (300, 400, {tid}, 90004, 42), (300, 400, {tid}, 90004, 42);
                 INSERT INTO MPI_COLLECTIVES_EVENTS
                     (start, end, globalTid, textId, commHandle, commUid, rootRank, size,
                      recvSize, requestHandle)
                 VALUES (450, 480, {tid}, 90005, NULL, NULL, NULL, 128, 128, NULL),
                        (485, 490, {tid}, 90006, NULL, NULL, 0, 8, NULL, NULL),
                        (500, 520, {tid}, 90007, NULL, NULL, NULL, NULL, NULL, NULL);"
            ),
        );
        let mut text = records(&translation);
        for e in &translation.p2p {
            writeln!(
                text,
                "{} thread {} peer {} tag {} {:?} size {} at {} arrives {}",
                if e.is_send { "send" } else { "receive" },
                e.thread,
                e.peer,
                e.tag,
                e.comm,
                e.size,
                e.logical,
                e.physical
            )
            .unwrap();
        }
        writeln!(text, "{:?}", translation.sync_points).unwrap();
        expect![[r#"
            0 24601.24602 50000003="MPI_Init"
            0 24601.24602 state 15 until 50
            50 24601.24602 end 50000003="MPI_Init"
            50 24601.24602 state 1 until 100
            100 24601.24602 50000001="MPI_Send"
            100 24601.24602 state 4 until 120
            120 24601.24602 end 50000001="MPI_Send"
            120 24601.24602 state 1 until 200
            200 24601.24602 50000001="MPI_Irecv"
            200 24601.24602 state 11 until 210
            210 24601.24602 end 50000001="MPI_Irecv"
            210 24601.24602 state 1 until 220
            220 24601.24602 50000001="MPI_Sendrecv"
            220 24601.24602 state 16 until 230
            230 24601.24602 end 50000001="MPI_Sendrecv"
            230 24601.24602 state 1 until 300
            300 24601.24602 50000001="MPI_Wait"
            300 24601.24602 state 8 until 400
            400 24601.24602 end 50000001="MPI_Wait"
            400 24601.24602 state 1 until 450
            450 24601.24602 50000002="MPI_Allreduce" 50100001=128 50100002=128
            450 24601.24602 state 13 until 480
            480 24601.24602 end 50000002="MPI_Allreduce" 50100001=128 50100002=128
            480 24601.24602 state 1 until 485
            485 24601.24602 50000002="MPI_Bcast" 50100001=8 50100003=0
            485 24601.24602 state 13 until 490
            490 24601.24602 end 50000002="MPI_Bcast" 50100001=8 50100003=0
            490 24601.24602 state 1 until 500
            500 24601.24602 50000002="MPI_Barrier"
            500 24601.24602 state 5 until 520
            520 24601.24602 end 50000002="MPI_Barrier"
            send thread 0 peer 5 tag 9 Members([3, 5]) size 64 at 100 arrives 100
            receive thread 0 peer 3 tag 9 Members([3, 5]) size 32 at 200 arrives 400
            SyncPoints { mpi_init_end: Some(50), first_barrier_end: Some(520), last_barrier_end: Some(520), first_nccl_end: None }
        "#]].assert_eq(&text);
    }
}
