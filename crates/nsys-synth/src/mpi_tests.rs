//! MPI jobs written one file per rank: the tables or NVTX rows each version gets, and the
//! agreement between the files of a job (messages match, synchronising calls end together).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use tempfile::TempDir;

use crate::ids::global_tid;
use crate::tests::count;
use crate::{write_export, MpiPattern, SchemaVersion, SynthCounts, SynthMpi, SynthSpec};

const JOB_START: i64 = 1_735_732_800_000_000_000;
const ITERATIONS: u32 = 5;
const SKEW: i64 = 250_000;

struct RankFile {
    spec: SynthSpec,
    counts: SynthCounts,
    conn: Connection,
}

impl RankFile {
    fn mpi(&self) -> &SynthMpi {
        self.spec.mpi.as_ref().unwrap()
    }

    fn main_thread(&self) -> i64 {
        let pid = self.spec.processes[0].pid;
        global_tid(pid, pid)
    }

    /// Session time to true time: the true session start is `utc_epoch_ns`, whatever the
    /// recorded one says.
    fn true_time(&self, session: i64) -> i64 {
        self.spec.utc_epoch_ns + session
    }
}

/// Rank r's clock is early, exact or late by `skew` in turn, as the binary's `--skew-ns` does.
fn rank_spec(version: SchemaVersion, pattern: MpiPattern, ranks: u32, rank: u32) -> SynthSpec {
    let mut spec = SynthSpec::small(version);
    spec.utc_epoch_ns = JOB_START + i64::from(rank) * 3_700;
    spec.seed = u64::from(rank) + 1;
    spec.processes[0].pid = 4_000 + rank;
    spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
    spec.mpi = Some(SynthMpi {
        iterations: ITERATIONS,
        clock_skew_ns: (i64::from(rank % 3) - 1) * SKEW,
        ..SynthMpi::new(rank, ranks, pattern, JOB_START)
    });
    spec
}

fn job(version: SchemaVersion, pattern: MpiPattern, ranks: u32) -> (TempDir, Vec<RankFile>) {
    let dir = TempDir::new().unwrap();
    let files = (0..ranks)
        .map(|rank| {
            let spec = rank_spec(version, pattern, ranks, rank);
            let path = dir.path().join(format!("rank{rank}.sqlite"));
            let counts = write_export(&spec, &path).expect("rank file is written");
            let conn = Connection::open(&path).unwrap();
            RankFile { spec, counts, conn }
        })
        .collect();
    (dir, files)
}

fn tables_like(conn: &Connection, pattern: &str) -> HashSet<String> {
    let mut statement = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1")
        .unwrap();
    let names = statement.query_map([pattern], |row| row.get(0)).unwrap();
    names.collect::<rusqlite::Result<_>>().unwrap()
}

fn rows(conn: &Connection, table: &str) -> u64 {
    count(conn, &format!("SELECT count(*) FROM {table}")) as u64
}

fn names(tables: &[&str]) -> HashSet<String> {
    tables.iter().map(|t| t.to_string()).collect()
}

fn mpi_counts_from_tables(conn: &Connection) -> SynthCounts {
    let present = tables_like(conn, "MPI%");
    let rows_of = |table: &str| {
        if present.contains(table) {
            rows(conn, table)
        } else {
            0
        }
    };
    SynthCounts {
        mpi_p2p: rows_of("MPI_P2P_EVENTS"),
        mpi_collectives: rows_of("MPI_COLLECTIVES_EVENTS"),
        mpi_start_wait: rows_of("MPI_START_WAIT_EVENTS"),
        mpi_other: rows_of("MPI_OTHER_EVENTS"),
        ..SynthCounts::default()
    }
}

#[test]
fn ring_at_3_24_writes_the_mpi_tables_with_matching_counts() {
    let (_dir, files) = job(SchemaVersion::V3_24, MpiPattern::Ring, 4);
    let iterations = u64::from(ITERATIONS);
    for file in &files {
        let (conn, counts, rank) = (&file.conn, &file.counts, file.mpi().rank);
        let expected = names(&[
            "MPI_RANKS",
            "MPI_P2P_EVENTS",
            "MPI_COLLECTIVES_EVENTS",
            "MPI_OTHER_EVENTS",
            "MPI_COMMUNICATORS",
        ]);
        assert_eq!(tables_like(conn, "MPI%"), expected, "rank {rank}");
        assert!(tables_like(conn, "NVTX%").is_empty());
        assert_eq!(counts.mpi_p2p, 2 * iterations);
        assert_eq!(counts.mpi_collectives, 2 * iterations);
        assert_eq!(counts.mpi_start_wait, 0);
        assert_eq!(counts.mpi_other, 4, "Init, Comm_rank, Comm_size, Finalize");
        assert_eq!(counts.mpi_messages, iterations);
        assert_eq!(counts.nvtx_mpi_ranges, 0);
        let from_tables = mpi_counts_from_tables(conn);
        assert_eq!(from_tables.mpi_rows(), counts.mpi_rows(), "rank {rank}");
        assert_eq!(from_tables.mpi_p2p, counts.mpi_p2p);
        let main = file.main_thread();
        let ranks = count(
            conn,
            &format!("SELECT count(*) FROM MPI_RANKS WHERE globalTid = {main} AND rank = {rank}"),
        );
        assert_eq!((ranks, rows(conn, "MPI_RANKS")), (1, 1), "rank {rank}");
        let world = count(
            conn,
            &format!(
                "SELECT count(*) FROM MPI_COMMUNICATORS WHERE rank = {rank} AND localRank = {rank}
                 AND size = 4 AND members = '0,1,2,3' AND parentHandle IS NULL
                 AND commHandle = (SELECT DISTINCT commHandle FROM MPI_P2P_EVENTS)"
            ),
        );
        assert_eq!(world, 1, "rank {rank}");
        let handles = count(
            conn,
            "SELECT count(DISTINCT commHandle) FROM (SELECT commHandle FROM MPI_P2P_EVENTS
             UNION ALL SELECT commHandle FROM MPI_COLLECTIVES_EVENTS)",
        );
        assert_eq!(handles, 1, "one MPI_COMM_WORLD handle per rank");
        let names_resolve = count(
            conn,
            "SELECT count(*) FROM MPI_P2P_EVENTS e JOIN StringIds s ON s.id = e.textId
             WHERE s.value IN ('MPI_Send', 'MPI_Recv')",
        );
        assert_eq!(names_resolve as u64, counts.mpi_p2p);
    }
    let uids: HashSet<i64> = files
        .iter()
        .map(|f| count(&f.conn, "SELECT DISTINCT commUid FROM MPI_P2P_EVENTS"))
        .collect();
    assert_eq!(uids.len(), 1, "commUid is global");
    let handles: HashSet<i64> = files
        .iter()
        .map(|f| count(&f.conn, "SELECT DISTINCT commHandle FROM MPI_P2P_EVENTS"))
        .collect();
    assert_eq!(handles.len(), 4, "commHandle is process-local");
}

/// One point-to-point message end as a rank records it, in true time.
#[derive(Debug)]
struct MessageEnd {
    /// Sender and receiver world ranks.
    route: (u32, u32),
    tag: i64,
    bytes: i64,
    /// Sends: when the send started. Receives: when the data was there (the MPI_Recv's end, or
    /// the end of the wait that completed the MPI_Irecv).
    at: i64,
}

/// The completion of a receive: its own end, or that of the first wait on its request after it.
fn received_at(file: &RankFile, end: i64, request: Option<i64>) -> i64 {
    let Some(request) = request else {
        return end;
    };
    count(
        &file.conn,
        &format!(
            "SELECT min(end) FROM MPI_START_WAIT_EVENTS
             WHERE requestHandle = {request} AND start >= {end}"
        ),
    )
}

/// A row of MPI_P2P_EVENTS, with its call's name.
struct P2pRow {
    name: String,
    start: i64,
    end: i64,
    peer: u32,
    tag: i64,
    bytes: i64,
    request: Option<i64>,
}

fn p2p_rows(conn: &Connection) -> Vec<P2pRow> {
    let mut statement = conn
        .prepare(
            "SELECT s.value, e.start, e.end, e.remoteRank, e.tag, e.size, e.requestHandle
             FROM MPI_P2P_EVENTS e JOIN StringIds s ON s.id = e.textId ORDER BY e.start",
        )
        .unwrap();
    let rows = statement
        .query_map([], |r| {
            Ok(P2pRow {
                name: r.get(0)?,
                start: r.get(1)?,
                end: r.get(2)?,
                peer: r.get(3)?,
                tag: r.get(4)?,
                bytes: r.get(5)?,
                request: r.get(6)?,
            })
        })
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// Sends and receives of a rank, each in call order.
fn message_ends(file: &RankFile) -> (Vec<MessageEnd>, Vec<MessageEnd>) {
    let rank = file.mpi().rank;
    let (mut sends, mut receives) = (Vec::new(), Vec::new());
    for row in p2p_rows(&file.conn) {
        if row.name.to_ascii_lowercase().contains("send") {
            sends.push(MessageEnd {
                route: (rank, row.peer),
                tag: row.tag,
                bytes: row.bytes,
                at: file.true_time(row.start),
            });
        } else {
            receives.push(MessageEnd {
                route: (row.peer, rank),
                tag: row.tag,
                bytes: row.bytes,
                at: file.true_time(received_at(file, row.end, row.request)),
            });
        }
    }
    (sends, receives)
}

/// Messages matched as MPI does: same route and tag, in order.
fn check_every_send_has_one_matching_receive(files: &[RankFile]) {
    type Queue = Vec<MessageEnd>;
    let mut by_key: BTreeMap<((u32, u32), i64), (Queue, Queue)> = BTreeMap::new();
    for file in files {
        let (sends, receives) = message_ends(file);
        assert_eq!(sends.len() as u64, file.counts.mpi_messages);
        for send in sends {
            by_key
                .entry((send.route, send.tag))
                .or_default()
                .0
                .push(send);
        }
        for receive in receives {
            by_key
                .entry((receive.route, receive.tag))
                .or_default()
                .1
                .push(receive);
        }
    }
    let mut matched = 0;
    for (key, (sends, receives)) in &by_key {
        assert_eq!(sends.len(), receives.len(), "{key:?}: sends and receives");
        for (send, receive) in sends.iter().zip(receives) {
            assert_eq!(send.bytes, receive.bytes, "{key:?}");
            assert!(receive.at > send.at, "{key:?}: {receive:?} before {send:?}");
            matched += 1;
        }
    }
    let messages: u64 = files.iter().map(|f| f.counts.mpi_messages).sum();
    assert_eq!(matched, messages);
    assert!(matched > 0);
}

#[test]
fn every_send_has_one_matching_receive_in_the_peer_file() {
    for (version, pattern, ranks) in [
        (SchemaVersion::V3_24, MpiPattern::Ring, 4),
        (SchemaVersion::V3_24, MpiPattern::Ring, 1),
        (SchemaVersion::V3_16, MpiPattern::NonBlocking, 4),
        (SchemaVersion::V3_24, MpiPattern::NonBlocking, 2),
    ] {
        let (_dir, files) = job(version, pattern, ranks);
        check_every_send_has_one_matching_receive(&files);
    }
}

/// End of every call named `name` of a rank, in true time and in call order.
fn true_ends(file: &RankFile, table: &str, name: &str) -> Vec<i64> {
    let mut statement = file
        .conn
        .prepare(&format!(
            "SELECT e.end FROM {table} e JOIN StringIds s ON s.id = e.textId
             WHERE s.value = ?1 ORDER BY e.start"
        ))
        .unwrap();
    let ends = statement.query_map([name], |r| r.get(0)).unwrap();
    ends.map(|end| file.true_time(end.unwrap())).collect()
}

fn recorded_epoch(file: &RankFile) -> i64 {
    count(
        &file.conn,
        "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
    )
}

#[test]
fn init_and_barriers_end_together_in_true_time_and_skew_shows_in_recorded_time() {
    let (_dir, files) = job(SchemaVersion::V3_24, MpiPattern::Ring, 4);
    let init: Vec<Vec<i64>> = files
        .iter()
        .map(|f| true_ends(f, "MPI_OTHER_EVENTS", "MPI_Init"))
        .collect();
    let barriers: Vec<Vec<i64>> = files
        .iter()
        .map(|f| true_ends(f, "MPI_COLLECTIVES_EVENTS", "MPI_Barrier"))
        .collect();
    assert!(init.iter().all(|ends| ends == &init[0] && ends.len() == 1));
    assert!(barriers.iter().all(|ends| ends == &barriers[0]));
    assert_eq!(barriers[0].len(), ITERATIONS as usize);
    for file in &files {
        let skew = file.mpi().clock_skew_ns;
        assert_eq!(recorded_epoch(file), file.spec.utc_epoch_ns + skew);
        // What a reader aligning on utcEpochNs alone sees: MPI_Init ends off by the skew.
        let init_end = count(
            &file.conn,
            "SELECT e.end FROM MPI_OTHER_EVENTS e JOIN StringIds s ON s.id = e.textId
             WHERE s.value = 'MPI_Init'",
        );
        assert_eq!(recorded_epoch(file) + init_end - init[0][0], skew);
    }
    let skews: HashSet<i64> = files.iter().map(|f| f.mpi().clock_skew_ns).collect();
    assert_eq!(skews.len(), 3, "early, exact and late clocks");
}

#[test]
fn mpi_calls_never_overlap_cuda_calls_or_each_other_on_the_main_thread() {
    let (_dir, files) = job(SchemaVersion::V3_24, MpiPattern::Ring, 3);
    for file in &files {
        let main = file.main_thread();
        let mpi = "SELECT start, end FROM MPI_P2P_EVENTS UNION ALL
                   SELECT start, end FROM MPI_COLLECTIVES_EVENTS UNION ALL
                   SELECT start, end FROM MPI_OTHER_EVENTS";
        let crossing_cuda = count(
            &file.conn,
            &format!(
                "SELECT count(*) FROM ({mpi}) m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                 ON r.globalTid = {main} AND m.start < r.end AND r.start < m.end"
            ),
        );
        assert_eq!(crossing_cuda, 0);
        let crossing_mpi = count(
            &file.conn,
            &format!(
                "WITH m AS ({mpi}) SELECT count(*) FROM m a JOIN m b
                 ON a.start < b.start AND b.start < a.end"
            ),
        );
        assert_eq!(crossing_mpi, 0);
        let cuda_on_main = count(
            &file.conn,
            &format!("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid = {main}"),
        );
        assert!(cuda_on_main > 0, "the main thread also calls CUDA");
        let finalize_last = count(
            &file.conn,
            "SELECT (SELECT max(end) FROM MPI_OTHER_EVENTS)
                  >= (SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
        );
        assert_eq!(finalize_last, 1, "MPI_Finalize comes last");
    }
}

#[test]
fn nonblocking_records_one_wait_row_per_request() {
    let (_dir, files) = job(SchemaVersion::V3_16, MpiPattern::NonBlocking, 4);
    let iterations = u64::from(ITERATIONS);
    for file in &files {
        let (conn, counts) = (&file.conn, &file.counts);
        assert_eq!(counts.mpi_p2p, 4 * iterations);
        assert_eq!(counts.mpi_start_wait, 4 * iterations);
        assert_eq!(counts.mpi_collectives, iterations);
        assert_eq!(counts.mpi_messages, 2 * iterations);
        assert_eq!(mpi_counts_from_tables(conn).mpi_rows(), counts.mpi_rows());
        // Each Waitall: four rows over one interval, one per request the iteration posted.
        let waits = count(
            conn,
            "SELECT count(*) FROM (SELECT start, end FROM MPI_START_WAIT_EVENTS
             GROUP BY start, end HAVING count(*) = 4 AND count(DISTINCT requestHandle) = 4)",
        );
        assert_eq!(waits as u64, iterations);
        let unknown_requests = count(
            conn,
            "SELECT count(*) FROM MPI_START_WAIT_EVENTS w WHERE NOT EXISTS (
                 SELECT 1 FROM MPI_P2P_EVENTS p
                 WHERE p.requestHandle = w.requestHandle AND p.end <= w.start)",
        );
        assert_eq!(unknown_requests, 0);
        let bcasts_from_root_0 = count(
            conn,
            "SELECT count(*) FROM MPI_COLLECTIVES_EVENTS e JOIN StringIds s ON s.id = e.textId
             WHERE s.value = 'MPI_Bcast' AND e.rootRank = 0",
        );
        assert_eq!(bcasts_from_root_0 as u64, iterations);
        assert!(!tables_like(conn, "MPI_COMMUNICATORS").contains("MPI_COMMUNICATORS"));
        let comm_uid = count(
            conn,
            "SELECT count(*) FROM pragma_table_info('MPI_P2P_EVENTS') WHERE name = 'commUid'",
        );
        assert_eq!(comm_uid, 0, "commUid only from 3.24");
    }
}

fn nvtx_names(file: &RankFile) -> BTreeMap<String, i64> {
    let mut statement = file
        .conn
        .prepare(
            "SELECT s.value, count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId
             WHERE e.eventType = 59 AND e.domainId = 1 AND e.text IS NULL GROUP BY s.value",
        )
        .unwrap();
    let names = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    names.collect::<rusqlite::Result<_>>().unwrap()
}

#[test]
fn older_versions_record_mpi_as_an_nvtx_domain_with_rank_names() {
    for version in [
        SchemaVersion::V2_9,
        SchemaVersion::V3_0,
        SchemaVersion::V3_7,
    ] {
        let (_dir, files) = job(version, MpiPattern::Ring, 4);
        let iterations = i64::from(ITERATIONS);
        for file in &files {
            let (conn, rank, main) = (&file.conn, file.mpi().rank, file.main_thread());
            assert!(tables_like(conn, "MPI%").is_empty(), "{version}");
            assert_eq!(file.counts.mpi_rows(), file.counts.nvtx_mpi_ranges);
            let domain = count(
                conn,
                &format!(
                    "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI'
                     AND domainId = 1 AND end IS NULL AND globalTid = {main}"
                ),
            );
            assert_eq!(domain, 1, "{version}");
            let rank_name = count(
                conn,
                &format!(
                    "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 39
                     AND text = 'MPI Rank {rank}' AND globalTid = {main} AND start >
                     (SELECT e.end FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId
                      WHERE s.value = 'MPI_Init')"
                ),
            );
            assert_eq!(rank_name, 1, "{version} rank {rank}");
            let expected: BTreeMap<String, i64> = [
                ("MPI_Init", 1),
                ("MPI_Send", iterations),
                ("MPI_Recv", iterations),
                ("MPI_Allreduce", iterations),
                ("MPI_Barrier", iterations),
                ("MPI_Finalize", 1),
            ]
            .into_iter()
            .map(|(name, n)| (name.to_owned(), n))
            .collect();
            assert_eq!(nvtx_names(file), expected, "{version}");
            let ranges = count(
                conn,
                "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59",
            );
            assert_eq!(ranges as u64, file.counts.nvtx_mpi_ranges, "{version}");
            let nested = count(
                conn,
                "SELECT count(*) FROM NVTX_EVENTS a JOIN NVTX_EVENTS b ON a.eventType = 59
                 AND b.eventType = 59 AND a.start < b.start AND b.start < a.end",
            );
            assert_eq!(nested, 0, "MPI calls do not nest");
        }
    }
}

#[test]
fn event_type_enum_has_the_nvtx_ids_used() {
    let (_dir, files) = job(SchemaVersion::V3_0, MpiPattern::NonBlocking, 2);
    let known = count(
        &files[0].conn,
        "SELECT count(*) FROM ENUM_NSYS_EVENT_TYPE WHERE id IN (39, 59, 75)",
    );
    assert_eq!(known, 3);
    let waits = nvtx_names(&files[0]).get("MPI_Waitall").copied();
    assert_eq!(waits, Some(i64::from(ITERATIONS)), "one range per Waitall");
}

#[test]
fn without_mpi_there_is_no_mpi_nor_nvtx() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("plain.sqlite");
    let counts = write_export(&SynthSpec::small(SchemaVersion::V3_0), &path).unwrap();
    let conn = Connection::open(&path).unwrap();
    assert!(tables_like(&conn, "MPI%").is_empty());
    assert!(tables_like(&conn, "NVTX%").is_empty());
    assert_eq!(counts.mpi_rows() + counts.mpi_messages, 0);
}

fn rejected(spec: &SynthSpec, dir: &Path, name: &str) -> bool {
    write_export(spec, &dir.join(name)).is_err()
}

#[test]
fn inconsistent_mpi_specs_are_rejected() {
    let dir = TempDir::new().unwrap();
    let base = rank_spec(SchemaVersion::V3_24, MpiPattern::Ring, 4, 1);
    let mut outside = base.clone();
    outside.mpi.as_mut().unwrap().rank = 4;
    assert!(rejected(&outside, dir.path(), "rank.sqlite"));
    let mut early = base.clone();
    early.utc_epoch_ns = JOB_START - 1;
    assert!(rejected(&early, dir.path(), "early.sqlite"));
    let mut late = base.clone();
    late.utc_epoch_ns = JOB_START + 100_000_001;
    assert!(rejected(&late, dir.path(), "late.sqlite"));
    let mut threadless = base;
    threadless.processes[0].cpu_threads = 0;
    threadless.processes[0].kernels = 0;
    threadless.processes[0].memcpys = 0;
    threadless.processes[0].memsets = 0;
    threadless.processes[0].syncs = 0;
    threadless.processes[0].extra_api_calls = 0;
    assert!(rejected(&threadless, dir.path(), "threadless.sqlite"));
}
