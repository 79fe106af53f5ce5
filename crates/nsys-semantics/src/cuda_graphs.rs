//! CUDA graphs, in whichever mode nsys traced them (told apart by tables and
//! columns, not by the capture option):
//!
//! * graph mode (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`): each graph launch is an
//!   interval on its GPU stream, 63000008 "CUDA graph" = `Graph Exec <id>` (as BSC
//!   nsys2prv names it), with 63000100 graph id, 63000101 graph exec id and 9200
//!   the correlation id; the stream is Running meanwhile, and the
//!   `cudaGraphLaunch` call gets a launch arrow (tag 55001);
//! * node mode (activity rows with `graphNodeId`): kernels, copies and sets keep
//!   their own types and also carry 63000102 graph node id; their correlation id
//!   is the `cudaGraphLaunch` call's, so that call has an arrow to every node;
//! * construction, on the CPU thread that made it: 63000103 "CUDA graph API
//!   event" named by its event class (graph creation, exec creation, clone, node
//!   creation, exec node parameters) with the ids it names (63000106–63000108
//!   the graph, exec and node, 63000104/63000105 the node or graph it was cloned
//!   from), from `CUDA_GRAPH_NODE_EVENTS` and from `CUDA_GRAPH_EVENTS` in both of
//!   its forms (node events in nsys 2022, graph events later). Types of their
//!   own, not 63000100–63000102: those are BSC nsys2prv's ids of what runs on the
//!   GPU, which its views (`cuda_graph_id.cfg`, `graph_node_id.cfg`, …) count.

use nsys_reader::enums;
use nsys_reader::graphs::{GraphEvent, GRAPH_EVENTS, GRAPH_NODE_EVENTS, GRAPH_TRACE};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::cuda_api::CORRELATION_ID;
use crate::handoff::GpuLinks;
use crate::memory::MEMORY;
use crate::types::{interval, state};
use crate::view::bundled_view;

pub const CUDA_GRAPH: u32 = 63_000_008;
pub const GRAPH_ID: u32 = 63_000_100;
pub const GRAPH_EXEC_ID: u32 = 63_000_101;
pub const GRAPH_NODE_ID: u32 = 63_000_102;
pub const GRAPH_API_EVENT: u32 = 63_000_103;
pub const ORIGINAL_GRAPH_NODE_ID: u32 = 63_000_104;
pub const ORIGINAL_GRAPH_ID: u32 = 63_000_105;
/// The ids a construction event names.
pub const API_GRAPH_ID: u32 = 63_000_106;
pub const API_GRAPH_EXEC_ID: u32 = 63_000_107;
pub const API_GRAPH_NODE_ID: u32 = 63_000_108;

pub const GRAPHS: Category = Category::named("graphs");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: GRAPHS,
    aliases: &["cuda-graphs"],
    bsc_names: &["graphs"],
    groups: &[],
    tables: &[
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        "CUDA_GRAPH_NODE_EVENTS",
        "CUDA_GRAPH_EVENTS",
    ],
    table_prefixes: &[],
    bytes_per_row: 200,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[state::RUNNING],
    views: &[
        bundled_view!(
            "views/cuda_graphs.cfg",
            "Which CUDA graph runs on each GPU stream, and when?",
        ),
        bundled_view!(
            "views/cuda_graph_nodes.cfg",
            "Which graph node does each kernel or copy run as, and which nodes are made when?",
        ),
        bundled_view!(
            "analysis/cuda_graphs_profile.cfg",
            "How much GPU time does each CUDA graph take, per stream?",
        )
        .on_gpu_streams(),
        bundled_view!(
            "analysis/cuda_graph_launches.cfg",
            "How many times does each CUDA graph run, per stream?",
        )
        .on_gpu_streams(),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::GpuOperations,
        run: pass,
        also_for: &[],
    }),
};

/// `ENUM_NSYS_EVENT_CLASS` labels of graph events (stable since 2022).
const EVENT_CLASSES: &[(i64, &str)] = &[
    (77, "CUDA graph node creation"),
    (94, "CUDA graph exec creation"),
    (95, "CUDA graph creation"),
    (96, "CUDA graph clone"),
    (111, "CUDA graph exec-node set params"),
];

fn event_types() -> Vec<EventTypeInfo> {
    use ValueLabels::{Names, Numeric};
    vec![
        interval(CUDA_GRAPH, "CUDA graph", Names),
        interval(GRAPH_ID, "CUDA graph id", Numeric),
        interval(GRAPH_EXEC_ID, "CUDA graph exec id", Numeric),
        interval(GRAPH_NODE_ID, "CUDA graph node id", Numeric),
        interval(GRAPH_API_EVENT, "CUDA graph API event", Names),
        interval(
            ORIGINAL_GRAPH_NODE_ID,
            "CUDA graph node cloned from",
            Numeric,
        ),
        interval(ORIGINAL_GRAPH_ID, "CUDA graph cloned from", Numeric),
        interval(API_GRAPH_ID, "CUDA graph API event: graph id", Numeric),
        interval(
            API_GRAPH_EXEC_ID,
            "CUDA graph API event: graph exec id",
            Numeric,
        ),
        interval(API_GRAPH_NODE_ID, "CUDA graph API event: node id", Numeric),
    ]
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    ctx.with_links(0, translate)
}

fn translate(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    executions(ctx, links)?;
    if ctx.options.wants(MEMORY) {
        node_operations(ctx)?;
    }
    construction(ctx)
}

/// Graph mode: one interval per graph launch.
fn executions(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    let export = ctx.export;
    let mut names: FxHashMap<(Option<i64>, Option<i64>), u32> = FxHashMap::default();
    let scan = export.graph_executions(|g| {
        if !ctx.within_limits(g.place.start, g.place.end) {
            return Ok(());
        }
        let name = *names
            .entry((g.graph_id, g.graph_exec_id))
            .or_insert_with(|| {
                let label = match (g.graph_exec_id, g.graph_id) {
                    (Some(exec), _) => format!("Graph Exec {exec}"),
                    (None, Some(graph)) => format!("Graph {graph}"),
                    (None, None) => "Graph".to_string(),
                };
                ctx.run.names.intern(CUDA_GRAPH, &label)
            });
        let thread = ctx.stream_thread(&g.place);
        let mut pairs = vec![EventPair::name(CUDA_GRAPH, name)];
        let ids = [
            (GRAPH_ID, g.graph_id),
            (GRAPH_EXEC_ID, g.graph_exec_id),
            (CORRELATION_ID, g.place.correlation_id),
        ];
        for (ty, id) in ids {
            if let Some(id) = id.filter(|&v| v != 0) {
                pairs.push(EventPair::raw(ty, id));
            }
        }
        let p = &g.place;
        ctx.run.interval(thread, p.start, p.end, &pairs);
        ctx.states.add(thread, p.start, p.end, state::RUNNING);
        links.add_launch(p, thread, false);
        Ok(())
    })?;
    ctx.note_scan(GRAPH_TRACE, scan);
    Ok(())
}

/// Node mode: the node id of copies and sets (kernels get it in `cuda_gpu`).
fn node_operations(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let scan = export.graph_node_operations(|op| {
        if !ctx.options.time_limits.keeps(op.place.start, op.place.end) {
            return Ok(());
        }
        let thread = ctx.stream_thread(&op.place);
        let pair = EventPair::raw(GRAPH_NODE_ID, op.graph_node_id);
        ctx.run
            .interval(thread, op.place.start, op.place.end, &[pair]);
        Ok(())
    })?;
    if scan.kept() > 0 {
        ctx.count("graph node copies and sets", scan.kept());
    }
    Ok(())
}

/// CPU-side graph construction events.
fn construction(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(GRAPH_NODE_EVENTS) && !export.has_table(GRAPH_EVENTS) {
        return Ok(());
    }
    let classes = enums::labels(export, "ENUM_NSYS_EVENT_CLASS", EVENT_CLASSES)?;
    let mut handles: FxHashMap<i64, u32> = FxHashMap::default();
    for table in [GRAPH_NODE_EVENTS, GRAPH_EVENTS] {
        let scan = export.graph_events(table, |e| {
            if !ctx.within_limits(e.start, e.end) {
                return Ok(());
            }
            let name = *handles.entry(e.event_class).or_insert_with(|| {
                let label = classes
                    .get(&e.event_class)
                    .cloned()
                    .unwrap_or_else(|| format!("CUDA graph event class {}", e.event_class));
                ctx.run.names.intern(GRAPH_API_EVENT, &label)
            });
            emit_construction(ctx, e, name);
            Ok(())
        })?;
        ctx.note_scan(table, scan);
    }
    Ok(())
}

fn emit_construction(ctx: &mut ReportContext, e: &GraphEvent, name: u32) {
    let thread = ctx.cpu_thread(e.global_tid);
    let mut pairs = vec![EventPair::name(GRAPH_API_EVENT, name)];
    let ids = [
        (API_GRAPH_ID, e.graph_id),
        (API_GRAPH_EXEC_ID, e.graph_exec_id),
        (API_GRAPH_NODE_ID, e.graph_node_id),
        (ORIGINAL_GRAPH_NODE_ID, e.original_graph_node_id),
        (ORIGINAL_GRAPH_ID, e.original_graph_id),
    ];
    pairs.extend(
        ids.iter()
            .filter_map(|&(ty, id)| Some(EventPair::raw(ty, id?))),
    );
    ctx.run.interval(thread, e.start, e.end, &pairs);
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::cuda_api::API;
    use crate::testing::{check, GLOBAL_PID};

    /// Graph mode: each launch is an interval on its stream named `Graph Exec N`
    /// with its graph, exec and correlation ids, the stream Running meanwhile,
    /// and its `cudaGraphLaunch` call has a launch arrow to it. Node mode: a copy
    /// run as a graph node carries its node id. Construction: an interval on the
    /// CPU thread named by the event class (the export's label, else Nsight's),
    /// with the ids it names, from both tables of construction events.
    #[test]
    fn launches_nodes_and_construction() {
        let tid = GLOBAL_PID | 24_602;
        check(
            &[API, MEMORY, GRAPHS],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaGraphLaunch_v10000'), (90002, 'graph');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (100, 150, 0, {tid}, 21, 90001, 0);
                 INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      graphId, graphExecId)
                 VALUES (200, 900, 0, 1, 7, 21, {GLOBAL_PID}, 3, 12);
                 INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid,
                      bytes, copyKind, srcKind, dstKind, graphNodeId)
                 VALUES (300, 400, 0, 1, 7, 21, {GLOBAL_PID}, 4096, 1, 0, 3, 55);
                 INSERT INTO CUDA_GRAPH_EVENTS
                     (start, end, eventClass, globalTid, nameId, graphId, originalGraphId,
                      graphExecId)
                 VALUES (10, 20, 95, {tid}, 90002, 3, NULL, NULL),
                        (30, 40, 96, {tid}, 90002, 4, 3, NULL),
                        (50, 60, 94, {tid}, 90002, 3, NULL, 12);
                 INSERT INTO CUDA_GRAPH_NODE_EVENTS
                     (start, end, eventClass, globalTid, nameId, graphNodeId, originalGraphNodeId)
                 VALUES (25, 28, 77, {tid}, 90002, 55, NULL);"
            ),
            expect![[r#"
                10 24601.24602 63000103="CUDA graph creation" 63000106=3
                20 24601.24602 end 63000103="CUDA graph creation" 63000106=3
                25 24601.24602 63000103="CUDA graph node creation" 63000108=55
                28 24601.24602 end 63000103="CUDA graph node creation" 63000108=55
                30 24601.24602 63000103="CUDA graph clone" 63000106=4 63000105=3
                40 24601.24602 end 63000103="CUDA graph clone" 63000106=4 63000105=3
                50 24601.24602 63000103="CUDA graph exec creation" 63000106=3 63000107=12
                60 24601.24602 end 63000103="CUDA graph exec creation" 63000106=3 63000107=12
                100 24601.24602 comm to 24601:gpu0/s7 at 200 (physical send 100, receive 200) size 0 tag 55001
                100 24601.24602 comm to 24601:gpu0/s7 at 300 (physical send 100, receive 300) size 4096 tag 55002
                100 24601.24602 63000000="cudaGraphLaunch_v10000" 9200=21
                100 24601.24602 state 32 until 150
                150 24601.24602 end 63000000="cudaGraphLaunch_v10000" 9200=21
                200 24601:gpu0/s7 63000008="Graph Exec 12" 63000100=3 63000101=12 9200=21
                200 24601:gpu0/s7 state 1 until 300
                300 24601:gpu0/s7 63000001="CUDA memcpy Host-to-Device" 63000002=4096 9200=21
                300 24601:gpu0/s7 63000102=55
                300 24601:gpu0/s7 state 17 until 400
                400 24601:gpu0/s7 end 63000001="CUDA memcpy Host-to-Device" 63000002=4096 9200=21
                400 24601:gpu0/s7 end 63000102=55
                400 24601:gpu0/s7 state 1 until 900
                900 24601:gpu0/s7 end 63000008="Graph Exec 12" 63000100=3 63000101=12 9200=21
            "#]],
        );
    }
}
