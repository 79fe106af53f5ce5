//! The device-side tables of [`crate::SynthDeviceSide`]: which tables each version gets, and
//! that the returned counts match the rows.

use rusqlite::Connection;
use tempfile::TempDir;

use crate::tests::{count, has_column, has_table};
use crate::{write_export, SchemaVersion, SynthCounts, SynthDeviceSide, SynthGraphMode, SynthSpec};

fn rows(conn: &Connection, table: &str) -> u64 {
    if !has_table(conn, table) {
        return 0;
    }
    count(conn, &format!("SELECT count(*) FROM {table}")) as u64
}

/// Two processes, one on GPUs 0 and 1, one sharing GPU 1, with every device-side feature the
/// version supports.
fn device_spec(version: SchemaVersion, mode: SynthGraphMode) -> SynthSpec {
    let mut spec = SynthSpec::small(version);
    let mut second = spec.processes[0].clone();
    second.pid += 1000;
    second.devices = vec![1];
    spec.processes[0].devices = vec![0, 1];
    spec.processes.push(second);
    let graphs = mode == SynthGraphMode::Node || version >= SchemaVersion::V3_16;
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 40,
        metric_gpus: Vec::new(),
        graph_launches: if graphs { 5 } else { 0 },
        graph_mode: mode,
        memory_allocations: if version >= SchemaVersion::V3_0 { 6 } else { 0 },
        nic_samples: if version >= SchemaVersion::V3_16 {
            7
        } else {
            0
        },
        ..SynthDeviceSide::default()
    };
    spec
}

fn write(spec: &SynthSpec, dir: &TempDir, name: &str) -> (Connection, SynthCounts) {
    let path = dir.path().join(name);
    let counts = write_export(spec, &path).expect("export is written");
    (Connection::open(path).unwrap(), counts)
}

#[test]
fn gpu_metrics_take_the_form_of_their_version() {
    let dir = TempDir::new().unwrap();
    for version in SchemaVersion::all() {
        let spec = device_spec(version, SynthGraphMode::Node);
        let (conn, counts) = write(&spec, &dir, &format!("m{version}.sqlite"));
        let gpus = 2;
        if version >= SchemaVersion::V3_16 {
            assert_eq!(rows(&conn, "GPU_METRICS"), counts.gpu_metric_rows);
            assert_eq!(counts.gpu_metric_rows, 40 * gpus * 16, "{version}");
            assert!(!has_table(&conn, "GENERIC_EVENTS"));
            // Metric ids differ between the GPUs.
            let differing = count(
                &conn,
                "SELECT count(*) FROM TARGET_INFO_GPU_METRICS a JOIN TARGET_INFO_GPU_METRICS b
                 ON a.metricName = b.metricName AND a.typeId < b.typeId AND a.metricId != b.metricId",
            );
            assert_eq!(differing, 16, "{version}");
        } else {
            assert_eq!(rows(&conn, "GENERIC_EVENTS"), counts.gpu_metric_rows);
            assert_eq!(counts.gpu_metric_rows, 40 * gpus, "{version}");
            assert_eq!(counts.gpu_metric_values, 40 * gpus * 12, "{version}");
            assert!(!has_table(&conn, "GPU_METRICS"));
            let table = "GENERIC_EVENTS";
            let first: i64 = count(&conn, &format!("SELECT min(timestamp) FROM {table}"));
            assert!(first < 0, "sampling starts before the session");
            let json: String = conn
                .query_row(&format!("SELECT data FROM {table} LIMIT 1"), [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert!(json.starts_with("{\"GPC Clock Frequency\":"), "{json}");
        }
    }
}

#[test]
fn graphs_in_node_mode_correlate_every_node_with_its_launch() {
    let dir = TempDir::new().unwrap();
    for version in SchemaVersion::all() {
        let spec = device_spec(version, SynthGraphMode::Node);
        let (conn, counts) = write(&spec, &dir, &format!("n{version}.sqlite"));
        let launches = 5 * spec.processes.len() as u64;
        assert_eq!(counts.graph_launches, launches);
        assert_eq!(counts.graph_node_kernels, 3 * launches);
        assert_eq!(counts.graph_node_memcpys, launches);
        assert_eq!(counts.graph_traces, 0);
        let nodes = count(
            &conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
             ON r.correlationId = k.correlationId AND (r.globalTid & -16777216) = k.globalPid
             JOIN StringIds s ON s.id = r.nameId
             WHERE k.graphNodeId IS NOT NULL AND s.value LIKE 'cudaGraphLaunch%'",
        );
        assert_eq!(nodes as u64, 3 * launches, "{version}");
        let graph_rows = rows(&conn, "CUDA_GRAPH_EVENTS") + rows(&conn, "CUDA_GRAPH_NODE_EVENTS");
        assert_eq!(graph_rows, counts.graph_events, "{version}");
        match version {
            // Node form: one row per node of each process's graph.
            SchemaVersion::V2_9 | SchemaVersion::V3_0 => {
                assert_eq!(counts.graph_events, 4 * 2);
                assert!(has_column(&conn, "CUDA_GRAPH_EVENTS", "graphNodeId"));
            }
            SchemaVersion::V3_7 => assert_eq!(counts.graph_events, 0),
            _ => {
                assert_eq!(rows(&conn, "CUDA_GRAPH_NODE_EVENTS"), 4 * 2);
                assert_eq!(rows(&conn, "CUDA_GRAPH_EVENTS"), 2 * 2);
                assert!(has_column(&conn, "CUDA_GRAPH_EVENTS", "graphExecId"));
            }
        }
    }
}

#[test]
fn graphs_in_graph_mode_have_one_trace_row_per_launch() {
    let dir = TempDir::new().unwrap();
    for version in [SchemaVersion::V3_16, SchemaVersion::V3_24] {
        let spec = device_spec(version, SynthGraphMode::Graph);
        let (conn, counts) = write(&spec, &dir, &format!("g{version}.sqlite"));
        assert_eq!(counts.graph_traces, 10);
        assert_eq!(rows(&conn, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"), 10);
        assert_eq!(counts.graph_node_kernels, 0);
        let mode: String = conn
            .query_row(
                "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%GRAPH_TRACE_OPTIONS:MODE'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(mode, "Graph");
    }
    let mut spec = device_spec(SchemaVersion::V3_7, SynthGraphMode::Graph);
    spec.device.graph_launches = 1;
    assert!(write_export(&spec, &dir.path().join("bad.sqlite")).is_err());
}

#[test]
fn every_allocation_is_freed_and_pools_are_recorded() {
    let dir = TempDir::new().unwrap();
    for version in [SchemaVersion::V3_0, SchemaVersion::V3_24] {
        let spec = device_spec(version, SynthGraphMode::Node);
        let (conn, counts) = write(&spec, &dir, &format!("a{version}.sqlite"));
        assert_eq!(counts.memory_usage, 2 * 6 * 2);
        assert_eq!(
            rows(&conn, "CUDA_GPU_MEMORY_USAGE_EVENTS"),
            counts.memory_usage
        );
        let balance = count(
            &conn,
            "SELECT sum(CASE memoryOperationType WHEN 0 THEN bytes ELSE -bytes END)
             FROM CUDA_GPU_MEMORY_USAGE_EVENTS",
        );
        assert_eq!(balance, 0);
        assert!(counts.memory_pool_events > 0);
        assert_eq!(
            rows(&conn, "CUDA_GPU_MEMORY_POOL_EVENTS"),
            counts.memory_pool_events
        );
    }
}

#[test]
fn nic_counters_and_totals() {
    let dir = TempDir::new().unwrap();
    let spec = device_spec(SchemaVersion::V3_24, SynthGraphMode::Graph);
    let (conn, counts) = write(&spec, &dir, "nic.sqlite");
    assert_eq!(counts.nic_samples, 7 * 3);
    assert_eq!(rows(&conn, "NET_NIC_METRIC"), 21);
    assert!(has_column(&conn, "TARGET_INFO_NIC_INFO", "GUID"));
    assert_eq!(
        counts.device_rows(),
        counts.gpu_metric_rows
            + counts.graph_traces
            + counts.graph_events
            + counts.memory_usage
            + counts.memory_pool_events
            + 21
    );
}

#[test]
fn small_specs_write_no_device_tables() {
    let dir = TempDir::new().unwrap();
    let (conn, counts) = write(&SynthSpec::small(SchemaVersion::V3_24), &dir, "s.sqlite");
    assert_eq!(counts.device_rows(), 0);
    for table in [
        "GPU_METRICS",
        "CUDA_GRAPH_EVENTS",
        "CUDA_GPU_MEMORY_USAGE_EVENTS",
        "NET_NIC_METRIC",
        "NET_IB_SWITCH_METRIC",
        "NET_IB_SWITCH_CONGESTION_EVENT",
        "SOC_METRICS",
        "CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH",
        "CUDA_HOST_CALLBACK",
    ] {
        assert!(!has_table(&conn, table), "{table}");
    }
}

#[test]
fn ib_switch_soc_and_nic_share_the_network_catalogue() {
    let dir = TempDir::new().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_16);
    spec.device = SynthDeviceSide {
        nic_samples: 4,
        ib_switch_samples: 5,
        ib_congestion_events: 6,
        soc_metric_samples: 7,
        ..SynthDeviceSide::default()
    };
    let (conn, counts) = write(&spec, &dir, "ib.sqlite");
    // Two ports, two counters.
    assert_eq!(counts.ib_switch_samples, 5 * 2 * 2);
    assert_eq!(rows(&conn, "NET_IB_SWITCH_METRIC"), 20);
    assert_eq!(counts.ib_congestion_events, 6);
    assert_eq!(rows(&conn, "NET_IB_SWITCH_CONGESTION_EVENT"), 6);
    assert_eq!(counts.soc_metric_rows, 7 * 4);
    assert_eq!(rows(&conn, "SOC_METRICS"), 28);
    // NIC list 1 and switch list 2 in one catalogue.
    assert_eq!(rows(&conn, "TARGET_INFO_NETWORK_METRICS"), 3 + 2);
    let unnamed = count(
        &conn,
        "SELECT count(*) FROM NET_IB_SWITCH_METRIC s LEFT JOIN TARGET_INFO_NETWORK_METRICS m
         ON m.metricsListId = s.metricsListId AND m.metricsIdx = s.metricsIdx WHERE m.name IS NULL",
    );
    assert_eq!(unnamed, 0);
    let unknown_switch = count(
        &conn,
        "SELECT count(*) FROM NET_IB_SWITCH_CONGESTION_EVENT WHERE globalId NOT IN
         (SELECT guid FROM NET_IB_DEVICE_INFO)",
    );
    assert_eq!(unknown_switch, 0);
    assert_eq!(
        counts.device_rows(),
        counts.nic_samples + 20 + 6 + 28,
        "{counts:?}"
    );
    // Older versions refuse them.
    spec.schema = SchemaVersion::V3_7;
    spec.device.nic_samples = 0;
    assert!(write_export(&spec, &dir.path().join("old.sqlite")).is_err());
}

#[test]
fn host_functions_link_launch_gpu_side_and_callback() {
    let dir = TempDir::new().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.device.host_functions = 9;
    let (conn, counts) = write(&spec, &dir, "host.sqlite");
    assert_eq!((counts.host_launches, counts.host_callbacks), (9, 9));
    let linked = count(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH g
         JOIN CUDA_HOST_CALLBACK c ON c.correlationId = g.correlationId
         JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId
         JOIN StringIds s ON s.id = r.nameId
         WHERE s.value LIKE 'cudaLaunchHostFunc%' AND g.graphNodeId IS NULL
           AND r.start < g.start AND g.start <= c.start AND c.end <= g.end",
    );
    assert_eq!(linked, 9);
    let on_callback_thread = count(
        &conn,
        "SELECT count(*) FROM CUDA_HOST_CALLBACK c JOIN ThreadNames t ON t.globalTid = c.globalTid
         JOIN StringIds s ON s.id = t.nameId WHERE s.value = 'cuda-EvtHandlr'",
    );
    assert_eq!(on_callback_thread, 9);
    spec.schema = SchemaVersion::V3_16;
    assert!(write_export(&spec, &dir.path().join("old.sqlite")).is_err());
}
