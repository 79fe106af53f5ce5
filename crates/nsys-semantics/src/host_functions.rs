//! CUDA host functions (nsys 2026.x): host nodes of CUDA graphs and
//! `cudaLaunchHostFunc` calls.
//!
//! * GPU side (`CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH`): an
//!   interval on the GPU stream, 63000110 "CUDA host function" = `Graph host
//!   node` (a row with a graph node id) or `Host function launch`, with 9200 the
//!   correlation id and, for graph nodes, 63000100 the graph id and 63000102 the
//!   node id; the stream is in Synchronization meanwhile (it waits for the CPU).
//!   The call that launched it (`cudaLaunchHostFunc`, `cudaGraphLaunch`) gets a
//!   launch arrow (tag 55001).
//! * CPU side (`CUDA_HOST_CALLBACK`): an interval on the CPU thread that ran the
//!   function, 63000111 "CUDA host callback" named by the function, with 9200.
//! * A communication (tag 55004) goes from the start of the GPU side to the start
//!   of the callback with the same process and correlation id: the latest GPU
//!   side that began at or before the callback (graph host nodes of one launch
//!   share the launch's correlation id), else the first one.

use nsys_reader::host_functions::{HostCallback, HostLaunch, HOST_CALLBACK, HOST_LAUNCH};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;
use paraver_writer::{Comm, EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{NameCache, ReportContext, ThreadKey};
use crate::cuda_api::CORRELATION_ID;
use crate::cuda_graphs::{GRAPH_ID, GRAPH_NODE_ID};
use crate::handoff::{GpuLinks, TAG_HOST_CALLBACK};
use crate::types::{interval, state};
use crate::view::bundled_view;

pub use nsys2prv_events::CUDA_HOST_FUNCTION as HOST_FUNCTION;
pub const HOST_CALLBACK_CALL: u32 = 63_000_111;

pub const HOST_FUNCTIONS: Category = Category::named("host-functions");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: HOST_FUNCTIONS,
    aliases: &["host-funcs"],
    bsc_names: &[],
    groups: &[],
    tables: &[
        "CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH",
        "CUDA_HOST_CALLBACK",
    ],
    table_prefixes: &[],
    bytes_per_row: 150,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[state::SYNCHRONIZATION],
    views: &[bundled_view!(
        "views/host_functions.cfg",
        "When do GPU streams wait for host functions, and when do their callbacks run?",
    )],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::GpuOperations,
        run: pass,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![
        interval(HOST_FUNCTION, "CUDA host function", ValueLabels::Names),
        interval(HOST_CALLBACK_CALL, "CUDA host callback", ValueLabels::Names),
    ]
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    ctx.with_links(0, translate)
}

/// GPU sides by (pid, correlation id), each list in start order.
type GpuSides = FxHashMap<(u32, i64), Vec<(i64, LocalThread)>>;

fn translate(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    let gpu_sides = gpu_side(ctx, links)?;
    cpu_side(ctx, &gpu_sides)
}

fn gpu_side(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<GpuSides, ReadError> {
    let export = ctx.export;
    let mut sides = GpuSides::default();
    if !export.has_table(HOST_LAUNCH) {
        return Ok(sides);
    }
    let node = ctx.run.names.intern(HOST_FUNCTION, "Graph host node");
    let launch = ctx.run.names.intern(HOST_FUNCTION, "Host function launch");
    let scan = export.host_launches(|h| {
        let p = &h.place;
        if !ctx.within_limits(p.start, p.end) {
            return Ok(());
        }
        let thread = ctx.thread(ThreadKey::stream(
            pid_of(p.global_pid),
            p.device_id as u32,
            p.stream_id as u32,
        ));
        let name = if h.graph_node_id.is_some() {
            node
        } else {
            launch
        };
        ctx.run
            .interval(thread, p.start, p.end, &gpu_pairs(h, name));
        ctx.states
            .add(thread, p.start, p.end, state::SYNCHRONIZATION);
        // Written 1 ns long at least.
        ctx.gpu_idle.host_function(thread, p.end.max(p.start + 1));
        links.add_launch(p, thread, false);
        if let Some(c) = p.correlation_id {
            let key = (pid_of(p.global_pid), c);
            sides.entry(key).or_default().push((p.start, thread));
        }
        Ok(())
    })?;
    for list in sides.values_mut() {
        list.sort_unstable();
    }
    ctx.note_scan(HOST_LAUNCH, scan);
    Ok(sides)
}

fn gpu_pairs(h: &HostLaunch, name: u32) -> Vec<EventPair> {
    let mut pairs = vec![EventPair::name(HOST_FUNCTION, name)];
    let ids = [
        (CORRELATION_ID, h.place.correlation_id),
        (GRAPH_ID, h.graph_id),
        (GRAPH_NODE_ID, h.graph_node_id),
    ];
    pairs.extend(
        ids.iter()
            .filter_map(|&(ty, id)| Some(EventPair::raw(ty, id.filter(|&v| v > 0)?))),
    );
    pairs
}

/// The GPU side a callback runs for (see the module's rule).
fn gpu_side_of(sides: &GpuSides, c: &HostCallback) -> Option<(i64, LocalThread)> {
    let list = sides.get(&(pid_of(c.global_tid), c.correlation_id?))?;
    let before = list.partition_point(|&(start, _)| start <= c.start);
    list.get(before.saturating_sub(1)).copied()
}

fn cpu_side(ctx: &mut ReportContext, sides: &GpuSides) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(HOST_CALLBACK) {
        return Ok(());
    }
    let mut names = NameCache::default();
    let mut arrows = 0u64;
    let scan = export.host_callbacks(|c| {
        if !ctx.within_limits(c.start, c.end) {
            return Ok(());
        }
        let name = ctx.name(HOST_CALLBACK_CALL, &mut names, c.name_id, |n| n.to_string())?;
        let thread = ctx.cpu_thread(c.global_tid);
        let mut pairs = vec![EventPair::name(HOST_CALLBACK_CALL, name)];
        if let Some(id) = c.correlation_id.filter(|&v| v > 0) {
            pairs.push(EventPair::raw(CORRELATION_ID, id));
        }
        ctx.run.interval(thread, c.start, c.end, &pairs);
        if let Some((start, gpu)) = gpu_side_of(sides, c) {
            let comm = Comm {
                send_physical: start,
                receiver: thread,
                recv_logical: c.start,
                recv_physical: c.start,
                size: 0,
                tag: TAG_HOST_CALLBACK,
            };
            ctx.run.comm(gpu, start, comm);
            arrows += 1;
        }
        Ok(())
    })?;
    if scan.kept() > 0 {
        ctx.count(HOST_CALLBACK, scan.kept());
    }
    if arrows > 0 {
        ctx.count("host function arrows", arrows);
    }
    ctx.note_skipped(HOST_CALLBACK, scan.skipped);
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::testing::{check, GLOBAL_PID};

    /// The GPU side is an interval on its stream, named by whether it is a graph
    /// node (with the graph and node ids) or a `cudaLaunchHostFunc`, the stream in
    /// Synchronization meanwhile; the callback an interval on its CPU thread named
    /// by the function. Each callback gets an arrow from the latest GPU side of its
    /// correlation id that began at or before it (correlation 7: the node starting
    /// at 300 for the callback at 350, the one at 500 for the callback at 520);
    /// one with no GPU side (correlation 9) gets none.
    #[test]
    fn callbacks_are_linked_to_the_gpu_side_that_ran_them() {
        let tid = GLOBAL_PID | 24_602;
        check(
            &[HOST_FUNCTIONS],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'my_callback'), (90002, 'node_callback');
                 INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      graphNodeId, graphId)
                 VALUES (100, 200, 0, 1, 7, 5, {GLOBAL_PID}, NULL, NULL),
                        (300, 400, 0, 1, 7, 7, {GLOBAL_PID}, 41, 4),
                        (500, 600, 0, 1, 7, 7, {GLOBAL_PID}, 42, 4);
                 INSERT INTO CUDA_HOST_CALLBACK
                     (start, end, eventClass, globalTid, correlationId, nameId)
                 VALUES (120, 180, 0, {tid}, 5, 90001), (350, 380, 0, {tid}, 7, 90002),
                        (520, 580, 0, {tid}, 7, 90002), (700, 710, 0, {tid}, 9, 90001);"
            ),
            expect![[r#"
                100 24601:gpu0/s7 comm to 24601.24602 at 120 (physical send 100, receive 120) size 0 tag 55004
                100 24601:gpu0/s7 63000110="Host function launch" 9200=5
                100 24601:gpu0/s7 state 5 until 200
                120 24601.24602 63000111="my_callback" 9200=5
                180 24601.24602 end 63000111="my_callback" 9200=5
                200 24601:gpu0/s7 end 63000110="Host function launch" 9200=5
                200 24601:gpu0/s7 state 0 until 300
                300 24601:gpu0/s7 comm to 24601.24602 at 350 (physical send 300, receive 350) size 0 tag 55004
                300 24601:gpu0/s7 63000110="Graph host node" 9200=7 63000100=4 63000102=41
                300 24601:gpu0/s7 state 5 until 400
                350 24601.24602 63000111="node_callback" 9200=7
                380 24601.24602 end 63000111="node_callback" 9200=7
                400 24601:gpu0/s7 end 63000110="Graph host node" 9200=7 63000100=4 63000102=41
                400 24601:gpu0/s7 state 0 until 500
                500 24601:gpu0/s7 comm to 24601.24602 at 520 (physical send 500, receive 520) size 0 tag 55004
                500 24601:gpu0/s7 63000110="Graph host node" 9200=7 63000100=4 63000102=42
                500 24601:gpu0/s7 state 5 until 600
                520 24601.24602 63000111="node_callback" 9200=7
                580 24601.24602 end 63000111="node_callback" 9200=7
                600 24601:gpu0/s7 end 63000110="Graph host node" 9200=7 63000100=4 63000102=42
                700 24601.24602 63000111="my_callback" 9200=9
                710 24601.24602 end 63000111="my_callback" 9200=9
            "#]],
        );
    }
}
