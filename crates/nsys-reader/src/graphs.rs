//! CUDA graphs (`--cuda-graph-trace=graph|node`).
//!
//! * Graph mode: one `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per graph launch, on the
//!   stream it ran on; the graph's kernels are not in the KERNEL table.
//! * Node mode: the graph's kernels, copies and sets are ordinary activity rows
//!   with `graphNodeId` set (kernels are read by [`Export::kernels`]; copies and
//!   sets by [`Export::graph_node_operations`]).
//! * Construction, CPU side: `CUDA_GRAPH_NODE_EVENTS` (node creation) and, under
//!   one name with two meanings, `CUDA_GRAPH_EVENTS`: node events in 2.9–3.0
//!   (a `graphNodeId` column), graph and exec events later (a `graphId` column).

use crate::cuda::{GpuPlace, MEMCPY, MEMSET};
use crate::{Export, ReadError, RowView, TableScan};

pub const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
pub const GRAPH_NODE_EVENTS: &str = "CUDA_GRAPH_NODE_EVENTS";
pub const GRAPH_EVENTS: &str = "CUDA_GRAPH_EVENTS";

/// One execution of a whole graph (graph mode).
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphExecution {
    pub place: GpuPlace,
    pub graph_id: Option<i64>,
    pub graph_exec_id: Option<i64>,
}

/// A copy or set that ran as a graph node (node mode).
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphNodeOperation {
    pub place: GpuPlace,
    pub graph_node_id: i64,
}

/// What a CPU-side graph event is about; ids are `None` when NULL or 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphEvent {
    pub start: i64,
    pub end: i64,
    pub global_tid: i64,
    pub event_class: i64,
    pub name_id: Option<i64>,
    pub graph_node_id: Option<i64>,
    pub original_graph_node_id: Option<i64>,
    pub graph_id: Option<i64>,
    pub original_graph_id: Option<i64>,
    pub graph_exec_id: Option<i64>,
}

/// The two meanings of `CUDA_GRAPH_EVENTS`, told apart by its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphEventsForm {
    /// 2.9–3.0: node creation events (`graphNodeId`).
    Nodes,
    /// Later: graph, exec and clone events (`graphId`, `graphExecId`).
    Graphs,
}

const PLACE: [&str; 6] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
];

fn place(row: &crate::RowView) -> Option<GpuPlace> {
    Some(GpuPlace {
        start: row.int(0)?,
        end: row.int(1)?,
        device_id: row.int(2).unwrap_or(0),
        stream_id: row.int(3).unwrap_or(0),
        correlation_id: row.int(4).filter(|&c| c != 0),
        global_pid: row.int(5)?,
    })
}

fn id(value: Option<i64>) -> Option<i64> {
    value.filter(|&v| v != 0)
}

impl Export {
    /// The form of `CUDA_GRAPH_EVENTS`, if the table exists.
    pub fn graph_events_form(&self) -> Option<GraphEventsForm> {
        let schema = self.schema();
        if !schema.has_table(GRAPH_EVENTS) {
            return None;
        }
        if schema.has_column(GRAPH_EVENTS, "graphId")
            || schema.has_column(GRAPH_EVENTS, "graphExecId")
        {
            Some(GraphEventsForm::Graphs)
        } else {
            Some(GraphEventsForm::Nodes)
        }
    }

    /// Streams the graph executions of graph mode.
    pub fn graph_executions(
        &self,
        f: impl FnMut(&GraphExecution) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols: Vec<&str> = PLACE
            .iter()
            .copied()
            .chain(["graphId", "graphExecId"])
            .collect();
        let decode = |row: &RowView| {
            Some(GraphExecution {
                place: place(row)?,
                graph_id: row.int(PLACE.len()),
                graph_exec_id: row.int(PLACE.len() + 1),
            })
        };
        self.scan_rows(GRAPH_TRACE, &cols, "1", decode, f)
    }

    /// Streams the copies and sets that ran as graph nodes (node mode); only the
    /// rows with a `graphNodeId` are read, so ordinary copies cost SQLite's filter.
    pub fn graph_node_operations(
        &self,
        mut f: impl FnMut(&GraphNodeOperation) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols: Vec<&str> = PLACE.iter().copied().chain(["graphNodeId"]).collect();
        let mut scan = TableScan::default();
        for table in [MEMCPY, MEMSET] {
            if !self.schema().has_column(table, "graphNodeId") {
                continue;
            }
            let decode = |row: &RowView| {
                Some(GraphNodeOperation {
                    place: place(row)?,
                    graph_node_id: row.int(PLACE.len())?,
                })
            };
            let condition = "graphNodeId IS NOT NULL AND graphNodeId != 0";
            scan.add(self.scan_rows(table, &cols, condition, decode, &mut f)?);
        }
        Ok(scan)
    }

    /// Streams the CPU-side graph events of `table` (`CUDA_GRAPH_NODE_EVENTS` or
    /// `CUDA_GRAPH_EVENTS`, in either form); rows with NULL start, end, class or
    /// thread are skipped.
    pub fn graph_events(
        &self,
        table: &str,
        f: impl FnMut(&GraphEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "globalTid",
            "eventClass",
            "nameId",
            "graphNodeId",
            "originalGraphNodeId",
            "graphId",
            "originalGraphId",
            "graphExecId",
        ];
        let decode = |row: &RowView| {
            Some(GraphEvent {
                start: row.int(0)?,
                end: row.int(1)?,
                global_tid: row.int(2)?,
                event_class: row.int(3)?,
                name_id: row.int(4),
                graph_node_id: id(row.int(5)),
                original_graph_node_id: id(row.int(6)),
                graph_id: id(row.int(7)),
                original_graph_id: id(row.int(8)),
                graph_exec_id: id(row.int(9)),
            })
        };
        self.scan_rows(table, &cols, "1", decode, f)
    }
}
