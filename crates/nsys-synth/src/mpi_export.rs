//! Writing a rank's MPI calls in the form its version has: the `MPI_*` tables (3.16 and later),
//! or, as nsys 2022.x did, an NVTX domain "MPI" with one push/pop range per call.

use anyhow::Result;
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::ddl::{create_and_fill_named, create_statement, NamedRow};
use crate::ids::global_tid;
use crate::mpi::{CallKind, MpiCall, RankTimeline};
use crate::strings::StringIds;
use crate::{SchemaVersion, SynthCounts};

/// `ENUM_NSYS_EVENT_TYPE` ids of the NVTX rows the 2022-era MPI interposer writes.
const NVTX_THREAD_NAME: i64 = 39;
const NVTX_PUSH_POP_RANGE: i64 = 59;
const NVTX_DOMAIN_CREATE: i64 = 75;
/// The interposer creates its domain first, so it gets the first id; 0 is the default domain.
const MPI_DOMAIN_ID: i64 = 1;
/// The domain is created this long after the process starts, before MPI_Init is called (ns).
const DOMAIN_CREATE_DELAY: i64 = 100_000;

/// Where a rank's MPI rows go: its main thread in its export.
pub(crate) struct MpiOutput<'a, 'c> {
    pub conn: &'c Connection,
    pub version: SchemaVersion,
    /// The rank's process; its main thread (tid = pid) makes the calls.
    pub pid: u32,
    pub strings: &'a mut StringIds,
}

impl MpiOutput<'_, '_> {
    fn main_thread(&self) -> i64 {
        global_tid(self.pid, self.pid)
    }

    /// Writes the rank's calls and returns the MPI counts and the last end time written.
    pub(crate) fn write(&mut self, timeline: &RankTimeline<'_>) -> Result<(SynthCounts, i64)> {
        let calls: Vec<MpiCall> = timeline.session_calls().collect();
        let last_end = calls.iter().map(|c| c.end).max().unwrap_or(0);
        let counts = if self.version.has_mpi_tables() {
            self.write_tables(timeline, &calls)?
        } else {
            self.write_nvtx(timeline, &calls)?
        };
        Ok((counts, last_end))
    }

    // --- MPI_* tables ---

    fn write_tables(
        &mut self,
        timeline: &RankTimeline<'_>,
        calls: &[MpiCall],
    ) -> Result<SynthCounts> {
        let rank = timeline.mpi.rank;
        let comm = Communicator {
            handle: timeline.job.comm_world_handle(rank),
            uid: timeline.job.comm_world_uid(),
        };
        let rows = self.event_rows(calls, comm);
        let ranks = vec![vec![
            ("globalTid", int(self.main_thread())),
            ("rank", int(rank.into())),
        ]];
        for (table, table_rows) in [
            ("MPI_RANKS", &ranks),
            ("MPI_P2P_EVENTS", &rows.p2p),
            ("MPI_COLLECTIVES_EVENTS", &rows.collectives),
            ("MPI_START_WAIT_EVENTS", &rows.start_wait),
            ("MPI_OTHER_EVENTS", &rows.other),
        ] {
            self.write_lazily(table, table_rows)?;
        }
        // Only the newest documentation has communicators; write them where the version has them.
        if create_statement(self.version, "MPI_COMMUNICATORS").is_some() {
            let created = timeline.to_session(timeline.job.init_returns());
            let world = communicator_row(timeline, comm, created);
            self.write_lazily("MPI_COMMUNICATORS", &[world])?;
        }
        Ok(rows.counts())
    }

    /// The rows of the four event tables; a wait gets one row per request it completes.
    fn event_rows(&mut self, calls: &[MpiCall], comm: Communicator) -> TableRows {
        let mut rows = TableRows::default();
        for call in calls {
            let common = self.common_columns(call);
            match &call.kind {
                CallKind::P2p { sends, .. } => {
                    rows.messages += u64::from(*sends);
                    rows.p2p.push(p2p_row(common, &call.kind, comm));
                }
                CallKind::Collective { .. } => {
                    let row = collective_row(common, &call.kind, comm);
                    rows.collectives.push(row);
                }
                CallKind::Wait { requests } => rows.start_wait.extend(
                    requests
                        .iter()
                        .map(|&request| with(&common, [("requestHandle", int(request))])),
                ),
                CallKind::Other => rows.other.push(common),
            }
        }
        rows
    }

    /// Tables exist only when they have rows, as in nsys's lazy export.
    fn write_lazily(&self, table: &str, rows: &[NamedRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        create_and_fill_named(self.conn, self.version, table, rows)
    }

    /// start, end, globalTid and textId: what every MPI event table begins with.
    fn common_columns(&mut self, call: &MpiCall) -> NamedRow {
        vec![
            ("start", int(call.start)),
            ("end", int(call.end)),
            ("globalTid", int(self.main_thread())),
            ("textId", int(self.strings.intern(call.name))),
        ]
    }

    // --- NVTX form ---

    /// The domain-create row, "MPI Rank N" on the main thread after MPI_Init, and one push/pop
    /// range per traced call, in time order as the exporter writes them.
    fn write_nvtx(
        &mut self,
        timeline: &RankTimeline<'_>,
        calls: &[MpiCall],
    ) -> Result<SynthCounts> {
        let main = self.main_thread();
        let domain_created = timeline.process_start + DOMAIN_CREATE_DELAY;
        let rank_named = timeline.to_session(timeline.job.rank_named(timeline.mpi.rank));
        let mut rows = vec![
            nvtx_row(NvtxRow {
                start: domain_created,
                end: None,
                event_type: NVTX_DOMAIN_CREATE,
                global_tid: main,
                text: Some("MPI".to_owned()),
                text_id: None,
                domain_id: MPI_DOMAIN_ID,
            }),
            nvtx_row(NvtxRow {
                start: rank_named,
                end: None,
                event_type: NVTX_THREAD_NAME,
                global_tid: main,
                text: Some(format!("MPI Rank {}", timeline.mpi.rank)),
                text_id: None,
                domain_id: 0,
            }),
        ];
        let mut ranges = 0;
        for call in calls.iter().filter(|c| traced_by_interposer(c.name)) {
            rows.push(nvtx_row(NvtxRow {
                start: call.start,
                end: Some(call.end),
                event_type: NVTX_PUSH_POP_RANGE,
                global_tid: main,
                text: None,
                text_id: Some(self.strings.intern(call.name)),
                domain_id: MPI_DOMAIN_ID,
            }));
            ranges += 1;
        }
        rows.sort_by_key(|row| match row[0].1 {
            Value::Integer(start) => start,
            _ => unreachable!("NVTX rows start with their start time"),
        });
        create_and_fill_named(self.conn, self.version, "NVTX_EVENTS", &rows)?;
        Ok(SynthCounts {
            nvtx_mpi_ranges: ranges,
            ..SynthCounts::default()
        })
    }
}

/// The 2022.4 interposer did not trace MPI_Comm_rank, MPI_Comm_size or MPI_Comm_split (a real
/// 4-rank export of a program calling them has no range for them).
fn traced_by_interposer(name: &str) -> bool {
    !name.starts_with("MPI_Comm_")
}

/// MPI_COMM_WORLD as one rank sees it.
#[derive(Clone, Copy)]
struct Communicator {
    handle: i64,
    uid: i64,
}

#[derive(Default)]
struct TableRows {
    p2p: Vec<NamedRow>,
    collectives: Vec<NamedRow>,
    start_wait: Vec<NamedRow>,
    other: Vec<NamedRow>,
    messages: u64,
}

impl TableRows {
    fn counts(&self) -> SynthCounts {
        SynthCounts {
            mpi_p2p: self.p2p.len() as u64,
            mpi_collectives: self.collectives.len() as u64,
            mpi_start_wait: self.start_wait.len() as u64,
            mpi_other: self.other.len() as u64,
            mpi_messages: self.messages,
            ..SynthCounts::default()
        }
    }
}

fn int(value: i64) -> Value {
    Value::Integer(value)
}

fn optional(value: Option<i64>) -> Value {
    value.map_or(Value::Null, Value::Integer)
}

fn with<const N: usize>(common: &NamedRow, more: [(&'static str, Value); N]) -> NamedRow {
    common.iter().cloned().chain(more).collect()
}

/// `remoteRank` is a world rank: every call here is on MPI_COMM_WORLD. `commUid` is dropped by
/// versions without it.
fn p2p_row(common: NamedRow, kind: &CallKind, comm: Communicator) -> NamedRow {
    let CallKind::P2p {
        peer,
        tag,
        bytes,
        request,
        ..
    } = kind
    else {
        unreachable!("a point-to-point call")
    };
    with(
        &common,
        [
            ("commHandle", int(comm.handle)),
            ("commUid", int(comm.uid)),
            ("tag", int(*tag)),
            ("remoteRank", int((*peer).into())),
            ("size", int(*bytes)),
            ("requestHandle", optional(*request)),
        ],
    )
}

/// `rootRank` is NULL for collectives without a root.
fn collective_row(common: NamedRow, kind: &CallKind, comm: Communicator) -> NamedRow {
    let CallKind::Collective {
        root,
        bytes,
        recv_bytes,
    } = kind
    else {
        unreachable!("a collective call")
    };
    with(
        &common,
        [
            ("commHandle", int(comm.handle)),
            ("commUid", int(comm.uid)),
            ("rootRank", optional(root.map(i64::from))),
            ("size", int(*bytes)),
            ("recvSize", int(*recv_bytes)),
            ("requestHandle", Value::Null),
        ],
    )
}

/// MPI_COMM_WORLD, created when MPI_Init returns. `members` lists the world ranks by local rank,
/// comma-separated (the exporter's text format is not documented).
fn communicator_row(timeline: &RankTimeline<'_>, comm: Communicator, created: i64) -> NamedRow {
    let mpi = timeline.mpi;
    let members: Vec<String> = (0..mpi.world_size).map(|r| r.to_string()).collect();
    vec![
        ("rank", int(mpi.rank.into())),
        ("timestamp", int(created)),
        ("commHandle", int(comm.handle)),
        ("parentHandle", Value::Null),
        ("localRank", int(mpi.rank.into())),
        ("size", int(mpi.world_size.into())),
        ("groupRoot", int(0)),
        ("groupRootUid", int(comm.uid)),
        ("members", Value::Text(members.join(","))),
        ("commUid", int(comm.uid)),
    ]
}

struct NvtxRow {
    start: i64,
    end: Option<i64>,
    event_type: i64,
    global_tid: i64,
    text: Option<String>,
    text_id: Option<i64>,
    domain_id: i64,
}

/// An NVTX_EVENTS row with no category, color or payload, as the interposer writes them.
fn nvtx_row(row: NvtxRow) -> NamedRow {
    let mut columns = vec![
        ("start", int(row.start)),
        ("end", optional(row.end)),
        ("eventType", int(row.event_type)),
        ("text", row.text.map_or(Value::Null, Value::Text)),
        ("globalTid", int(row.global_tid)),
        ("textId", optional(row.text_id)),
        ("domainId", int(row.domain_id)),
    ];
    columns.extend(
        [
            "rangeId",
            "category",
            "color",
            "endGlobalTid",
            "uint64Value",
            "int64Value",
            "doubleValue",
            "uint32Value",
            "int32Value",
            "floatValue",
            "jsonTextId",
            "jsonText",
            "binaryData",
        ]
        .map(|name| (name, Value::Null)),
    );
    columns
}
