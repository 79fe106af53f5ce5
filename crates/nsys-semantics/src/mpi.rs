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
