//! GPU metrics (both representations), SoC metrics, CUDA graphs (both modes), CUDA
//! host functions, CUDA events, GPU memory usage, NIC counters and IB switch
//! counters and congestion events: synthetic exports from `nsys-synth` and the real
//! corpus exports that have CUDA events. Counts preserved, samples on the right GPU
//! row, values within the recorded range, every trace valid.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_synth::{
    write_export, SchemaVersion, SynthCounts, SynthDeviceSide, SynthGraphMode, SynthSpec,
};

/// One event record of a trace: its row name, time and pairs.
struct EventLine {
    row: String,
    task: u32,
    time: u64,
    pairs: Vec<(u32, i64)>,
}

/// Thread names by (task, thread), from the header's thread counts and the `.row`.
fn row_names(prv: &Path) -> HashMap<(u32, u32), String> {
    let text = std::fs::read_to_string(prv).unwrap();
    let header = text.lines().next().unwrap();
    // `…:1(threads:node,threads:node,…)`: one application, its tasks.
    let tasks = header
        .rsplit_once('(')
        .map(|(_, t)| t.trim_end_matches(')').to_string())
        .unwrap_or_default();
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let names: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut out = HashMap::new();
    let mut next = 0;
    for (task, spec) in tasks.split(',').enumerate() {
        let threads: u32 = spec.split(':').next().unwrap().parse().unwrap();
        for thread in 0..threads {
            out.insert((task as u32 + 1, thread + 1), names[next].to_string());
            next += 1;
        }
    }
    out
}

fn event_lines(prv: &Path) -> Vec<EventLine> {
    let names = row_names(prv);
    let text = std::fs::read_to_string(prv).unwrap();
    text.lines()
        .filter(|l| l.starts_with("2:"))
        .map(|l| {
            let f: Vec<i64> = l.split(':').map(|x| x.parse().unwrap()).collect();
            let (task, thread) = (f[3] as u32, f[4] as u32);
            EventLine {
                row: names[&(task, thread)].clone(),
                task,
                time: f[5] as u64,
                pairs: f[6..].chunks(2).map(|p| (p[0] as u32, p[1])).collect(),
            }
        })
        .collect()
}

/// Values of `ty` per row name.
fn values_by_row(lines: &[EventLine], ty: u32) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for line in lines {
        for &(t, v) in &line.pairs {
            if t == ty {
                out.entry(line.row.clone()).or_default().push(v);
            }
        }
    }
    out
}

fn pcf_label(prv: &Path, ty: u32) -> Option<String> {
    let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
    pcf.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        let (_, t) = (words.next()?, words.next()?);
        (t == ty.to_string()).then(|| words.collect::<Vec<_>>().join(" "))
    })
}

fn run(inputs: &[&Path], output: &Path, extra: &[&str]) {
    let result = convert(inputs, output, extra);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// Two processes: the first on GPUs 0 and 1, the second sharing GPU 1.
fn two_process_spec(schema: SchemaVersion, device: SynthDeviceSide) -> SynthSpec {
    let mut spec = SynthSpec::small(schema);
    let mut second = spec.processes[0].clone();
    second.pid += 1000;
    second.devices = vec![1];
    spec.processes[0].devices = vec![0, 1];
    spec.processes.push(second);
    spec.device = device;
    spec
}

fn export(dir: &Path, name: &str, spec: &SynthSpec) -> (PathBuf, SynthCounts) {
    let path = dir.join(name);
    let counts = write_export(spec, &path).unwrap();
    (path, counts)
}

const METRIC_TYPES: std::ops::RangeInclusive<u32> = 9400..=9499;
const GPC_CLOCK: u32 = 9400;
const SMS_ACTIVE: u32 = 9406;
const COMPUTE_WARPS: u32 = 9416;

/// Metric values recorded at or after the session start (those before it are
/// left out): rows of `GPU_METRICS`, or the values of `GENERIC_EVENTS` samples.
fn metric_values_in_session(input: &Path, gpu: Option<i64>) -> u64 {
    let db = rusqlite::Connection::open(input).unwrap();
    let on_gpu = gpu.map_or(String::new(), |g| format!(" AND typeId & 255 = {g}"));
    let count = |sql: &str| -> u64 {
        db.query_row(sql, [], |r| r.get::<_, i64>(0))
            .unwrap_or(0)
            .try_into()
            .unwrap()
    };
    let current = count(&format!(
        "SELECT count(*) FROM GPU_METRICS WHERE timestamp >= 0{on_gpu}"
    ));
    if current > 0 {
        return current;
    }
    // One JSON object of the same metrics per legacy sample.
    let json: String = db
        .query_row("SELECT data FROM GENERIC_EVENTS LIMIT 1", [], |r| r.get(0))
        .unwrap();
    let per_sample = json.matches(':').count() as u64;
    per_sample
        * count(&format!(
            "SELECT count(*) FROM GENERIC_EVENTS WHERE timestamp >= 0{on_gpu}"
        ))
}

/// GPU metrics of exports of every schema, on two GPUs whose metric sets number
/// the metrics differently (as two GPU models do): BSC's numbering (the default,
/// `9400 + metricId`) cannot hold both, so they are numbered by name, with a
/// warning, as with `--metric-types name`; older exports have no ids and are
/// numbered by name anyway. BSC's numbering itself: the next test.
#[test]
fn gpu_metrics_of_both_representations_land_on_their_gpu_rows() {
    let dir = tempfile::tempdir().unwrap();
    for schema in SchemaVersion::all() {
        let device = SynthDeviceSide {
            gpu_metric_samples: 30,
            ..Default::default()
        };
        let spec = two_process_spec(schema, device);
        let first_pid = spec.processes[0].pid;
        let name = format!("metrics_{}", schema.schema_version());
        let (input, counts) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        assert!(counts.gpu_metric_values > metric_values_in_session(&input, None));
        for by_name in [false, true] {
            let output = dir.path().join(format!("{name}_{by_name}.prv"));
            let extra: &[&str] = if by_name {
                &["--metric-types", "name"]
            } else {
                &[]
            };
            let result = binary()
                .args(extra)
                .arg(&input)
                .arg(&output)
                .output()
                .unwrap();
            assert!(result.status.success());
            let stderr = String::from_utf8_lossy(&result.stderr);
            let warned = stderr.contains("GPU metrics numbered by metric name");
            assert_eq!(
                warned,
                !by_name && schema >= SchemaVersion::V3_16,
                "{stderr}"
            );
            let stats = check_trace(&output);
            let what = format!("{schema} (by name: {by_name})");
            // Every value of the session is kept (zeros are counted as ends); the
            // samples taken before it are not.
            let written: u64 = METRIC_TYPES
                .map(|t| begins(&stats, t) + stats.event_ends.get(&t).copied().unwrap_or(0))
                .sum();
            assert_eq!(written, metric_values_in_session(&input, None), "{what}");
            let lines = event_lines(&output);
            // One row per GPU, both under the first process (lowest pid of the users of GPU 1).
            let clocks = values_by_row(&lines, GPC_CLOCK);
            assert_eq!(
                clocks.keys().collect::<Vec<_>>(),
                ["GPU0 metrics", "GPU1 metrics"],
                "{what}"
            );
            let owners: Vec<u32> = lines
                .iter()
                .filter(|l| l.row.ends_with("metrics"))
                .map(|l| l.task)
                .collect();
            assert!(owners.iter().all(|&t| t == owners[0]));
            // The trace starts at the session start: the first sample in it is at
            // or after 0 of the session, and nothing is earlier than it.
            assert!(lines
                .iter()
                .all(|l| l.row.ends_with("metrics") || l.time > 0));
            let task_names = std::fs::read_to_string(output.with_extension("row")).unwrap();
            assert!(
                task_names.contains(&format!(":{first_pid})")),
                "{task_names}"
            );
            // The generator gives GPU n clocks of 1410 + 100 n MHz (± 15) and metric
            // id 0 to the GPC clock: samples are on their GPU's row, as recorded.
            for (gpu, values) in clocks.values().enumerate() {
                let centre = 1410 + 100 * gpu as i64;
                assert!(values.len() < 30 && values.len() > 20, "{what}");
                assert!(values
                    .iter()
                    .all(|v| (centre - 15..=centre + 15).contains(v)));
            }
            // Percentages ×100, within the recorded 0–100 %.
            for values in values_by_row(&lines, SMS_ACTIVE).values() {
                assert!(values
                    .iter()
                    .all(|v| (0..=10_000).contains(v) && v % 100 == 0));
            }
            if schema < SchemaVersion::V3_16 {
                // Half percents survive the ×100 scaling.
                let warps = values_by_row(&lines, COMPUTE_WARPS);
                assert!(warps.values().flatten().any(|v| v % 100 == 50), "{what}");
            }
            // Stable types, by name, whatever the representation and metric ids.
            assert_eq!(
                pcf_label(&output, SMS_ACTIVE).as_deref(),
                Some("GPU metric SMs Active [Throughput %] x100")
            );
            // The metric outside the built-in table gets a hashed type and its own label.
            let nvdec = (9450..=9499).find(|&t| begins(&stats, t) > 0);
            let label = pcf_label(&output, nvdec.expect("hashed type")).unwrap();
            assert!(label.starts_with("GPU metric NVDEC 0 Active"), "{label}");
        }
    }
}

/// BSC's numbering, on a GPU of one model: each metric id's type (`9400 +
/// metricId`), labelled with the bare metric name as BSC's `.pcf` has it, holding
/// the values as recorded (no scaling), the samples before the session left out.
#[test]
fn gpu_metrics_are_numbered_by_metric_id_as_bsc_does() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [SchemaVersion::V3_16, SchemaVersion::V3_24] {
        let device = SynthDeviceSide {
            gpu_metric_samples: 30,
            metric_gpus: vec![0],
            ..Default::default()
        };
        let spec = two_process_spec(schema, device);
        let name = format!("bsc_metrics_{}", schema.schema_version());
        let (input, _) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        let output = dir.path().join(format!("{name}.prv"));
        let result = binary().arg(&input).arg(&output).output().unwrap();
        assert!(result.status.success());
        assert!(!String::from_utf8_lossy(&result.stderr).contains("numbered by metric name"));
        check_trace(&output);
        let lines = event_lines(&output);
        let what = schema.to_string();
        let db = rusqlite::Connection::open(&input).unwrap();
        let mut stmt = db
            .prepare("SELECT DISTINCT metricId, metricName FROM TARGET_INFO_GPU_METRICS")
            .unwrap();
        let metrics: Vec<(i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(metrics.len() > 10);
        for (id, metric) in &metrics {
            let ty = 9400 + *id as u32;
            assert_eq!(pcf_label(&output, ty).as_deref(), Some(metric.as_str()));
            let recorded: Vec<i64> = db
                .prepare(&format!(
                    "SELECT value FROM GPU_METRICS WHERE metricId = {id} AND typeId & 255 = 0
                     AND timestamp >= 0 ORDER BY timestamp"
                ))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(
                values_by_row(&lines, ty).get("GPU0 metrics"),
                Some(&recorded),
                "{what}: {metric}"
            );
        }
    }
}

#[test]
fn metrics_of_unused_gpus_are_left_out_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 10,
        metric_gpus: vec![0, 3],
        ..Default::default()
    };
    let (input, counts) = export(dir.path(), "unused.sqlite", &spec);
    let output = dir.path().join("unused.prv");
    let result = binary().arg(&input).arg(&output).output().unwrap();
    assert!(result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains("of GPU(s) 3 left out"), "{stderr}");
    let stats = check_trace(&output);
    let row = std::fs::read_to_string(output.with_extension("row")).unwrap();
    assert!(
        row.contains("GPU0 metrics") && !row.contains("GPU3 metrics"),
        "{row}"
    );
    let written: u64 = METRIC_TYPES
        .map(|t| begins(&stats, t) + stats.event_ends.get(&t).copied().unwrap_or(0))
        .sum();
    assert!(counts.gpu_metric_values / 2 > written);
    assert_eq!(written, metric_values_in_session(&input, Some(0)));
}

#[test]
fn graphs_in_graph_mode_are_intervals_with_launch_arrows() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [SchemaVersion::V3_16, SchemaVersion::V3_24] {
        let device = SynthDeviceSide {
            graph_launches: 6,
            graph_mode: SynthGraphMode::Graph,
            ..Default::default()
        };
        let spec = two_process_spec(schema, device);
        let name = format!("graph_{}", schema.schema_version());
        let (input, counts) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        let output = dir.path().join(format!("{name}.prv"));
        run(&[&input], &output, &[]);
        let stats = check_trace(&output);
        assert_eq!(begins(&stats, 63_000_008), counts.graph_traces, "{schema}");
        // The exec ids of the launches (BSC's 63000101), those of the exec
        // creations on the CPU threads apart (63000107).
        assert_eq!(begins(&stats, 63_000_101), counts.graph_traces);
        assert_eq!(begins(&stats, 63_000_107), 2);
        assert_eq!(begins(&stats, 63_000_103), counts.graph_events);
        assert_eq!(
            stats.comm_tags.get(&55_001).copied(),
            Some(counts.kernels + counts.graph_traces),
            "{schema}: launch arrows"
        );
        let lines = event_lines(&output);
        let graphs = values_by_row(&lines, 63_000_008);
        assert!(graphs.keys().all(|row| row.starts_with("CUDA-D")));
        assert_eq!(
            pcf_label(&output, 63_000_008).as_deref(),
            Some("CUDA graph")
        );
        let pcf = std::fs::read_to_string(output.with_extension("pcf")).unwrap();
        assert!(pcf.contains("Graph Exec 1"));
    }
}

#[test]
fn graphs_in_node_mode_carry_node_ids_and_arrows_to_every_node() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [
        SchemaVersion::V3_0,
        SchemaVersion::V3_7,
        SchemaVersion::V3_24,
    ] {
        let device = SynthDeviceSide {
            graph_launches: 6,
            graph_mode: SynthGraphMode::Node,
            ..Default::default()
        };
        let spec = two_process_spec(schema, device);
        let name = format!("node_{}", schema.schema_version());
        let (input, counts) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        let output = dir.path().join(format!("{name}.prv"));
        run(&[&input], &output, &[]);
        let stats = check_trace(&output);
        // Node ids on kernels and copies (BSC's 63000102), those of the node
        // creation events (4 per graph) apart (63000108).
        let node_events = if schema == SchemaVersion::V3_7 { 0 } else { 8 };
        assert_eq!(
            begins(&stats, 63_000_102),
            counts.graph_node_kernels + counts.graph_node_memcpys,
            "{schema}"
        );
        assert_eq!(begins(&stats, 63_000_108), node_events, "{schema}");
        assert_eq!(begins(&stats, 63_000_103), counts.graph_events, "{schema}");
        assert_eq!(begins(&stats, 63_000_008), 0);
        assert_eq!(
            stats.comm_tags.get(&55_001).copied(),
            Some(counts.kernels),
            "{schema}: every node kernel has its launch arrow"
        );
        // The launch call has one arrow per node: the arrows leave cudaGraphLaunch calls.
        let kernels = begins(&stats, 63_000_006) + begins(&stats, 63_000_007);
        assert_eq!(kernels, counts.kernels);
    }
    // Excluding graphs drops the node ids, not the kernels.
    let spec = two_process_spec(
        SchemaVersion::V3_24,
        SynthDeviceSide {
            graph_launches: 3,
            graph_mode: SynthGraphMode::Node,
            ..Default::default()
        },
    );
    let (input, counts) = export(dir.path(), "excluded.sqlite", &spec);
    let output = dir.path().join("excluded.prv");
    run(&[&input], &output, &["--exclude", "graphs"]);
    let stats = check_trace(&output);
    assert_eq!(begins(&stats, 63_000_102), 0);
    assert_eq!(
        begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
        counts.kernels
    );
}

#[test]
fn cuda_events_link_each_record_to_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    for schema in SchemaVersion::all() {
        let spec = SynthSpec::small(schema);
        let name = format!("events_{}", schema.schema_version());
        let (input, counts) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        let output = dir.path().join(format!("{name}.prv"));
        run(&[&input], &output, &[]);
        let stats = check_trace(&output);
        let waits = counts.syncs / 3;
        assert_eq!(begins(&stats, 9301), counts.cuda_events + waits, "{schema}");
        assert_eq!(
            stats.comm_tags.get(&55_003).copied(),
            Some(waits),
            "{schema}"
        );
        let lines = event_lines(&output);
        let ops = values_by_row(&lines, 9301);
        for (row, values) in &ops {
            let on_stream = row.starts_with("CUDA-D");
            assert!(values
                .iter()
                .all(|&v| if on_stream { v == 1 || v == 3 } else { v == 2 }));
        }
    }
}

#[test]
fn memory_usage_is_an_allocated_bytes_counter_per_gpu() {
    let dir = tempfile::tempdir().unwrap();
    for schema in [SchemaVersion::V3_0, SchemaVersion::V3_24] {
        let device = SynthDeviceSide {
            memory_allocations: 8,
            ..Default::default()
        };
        let spec = two_process_spec(schema, device);
        let name = format!("memory_{}", schema.schema_version());
        let (input, counts) = export(dir.path(), &format!("{name}.sqlite"), &spec);
        let output = dir.path().join(format!("{name}.prv"));
        run(&[&input], &output, &[]);
        let stats = check_trace(&output);
        // BSC's numbers: 66500001 allocations, 66500002 frees.
        assert_eq!(begins(&stats, 66_500_001), 16, "{schema}: allocations");
        assert_eq!(begins(&stats, 66_500_002), 16, "{schema}: frees");
        let allocated =
            begins(&stats, 66_500_003) + stats.event_ends.get(&66_500_003).copied().unwrap_or(0);
        assert_eq!(allocated, counts.memory_usage);
        let lines = event_lines(&output);
        // Per (task, row), in time order: the counter returns to 0 once all is freed.
        let mut last: BTreeMap<(u32, String), (u64, i64)> = BTreeMap::new();
        for line in &lines {
            for &(t, v) in &line.pairs {
                if t == 66_500_003 {
                    assert!(line.row.ends_with("metrics"), "{}", line.row);
                    last.insert((line.task, line.row.clone()), (line.time, v));
                }
            }
        }
        assert!(last.values().all(|&(_, v)| v == 0), "{last:?}");
        // The second process used only GPU 1: its counter is on its own GPU1 row.
        let tasks: Vec<u32> = last.keys().map(|(t, _)| *t).collect();
        assert!(tasks.contains(&1) && tasks.contains(&2), "{tasks:?}");
        assert!(begins(&stats, 66_500_004) > 0, "pool sizes");
    }
}

#[test]
fn nic_counters_are_on_a_nic_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.device = SynthDeviceSide {
        nic_samples: 12,
        ..Default::default()
    };
    let (input, counts) = export(dir.path(), "nic.sqlite", &spec);
    let output = dir.path().join("nic.prv");
    run(&[&input], &output, &[]);
    check_trace(&output);
    let lines = event_lines(&output);
    let nic: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.row == "NIC0 counters (mlx5_0)")
        .collect();
    let pairs: usize = nic.iter().map(|l| l.pairs.len()).sum();
    assert_eq!(pairs as u64, counts.nic_samples);
    // BSC's numbering (9500 + the counter's index) and label (`name [unit]`).
    assert!(nic
        .iter()
        .flat_map(|l| &l.pairs)
        .all(|(t, _)| (9500..=9502).contains(t)));
    assert_eq!(
        pcf_label(&output, 9500).as_deref(),
        Some("Bytes received [bytes]")
    );
    // By name: types of their own, labelled as NIC counters.
    let by_name = dir.path().join("nic_by_name.prv");
    run(&[&input], &by_name, &["--metric-types", "name"]);
    check_trace(&by_name);
    let pcf = std::fs::read_to_string(by_name.with_extension("pcf")).unwrap();
    assert!(pcf.contains("NIC Bytes received [bytes]"), "{pcf}");
    assert_eq!(pcf_label(&by_name, 9500), None);
}

/// Pairs of the types in `types` on rows named `row`.
fn pairs_on(
    lines: &[EventLine],
    row: &str,
    types: std::ops::RangeInclusive<u32>,
) -> Vec<(u32, i64)> {
    lines
        .iter()
        .filter(|l| l.row == row)
        .flat_map(|l| l.pairs.iter().copied())
        .filter(|(t, _)| types.contains(t))
        .collect()
}

/// The type whose `.pcf` label is `label`.
fn type_labelled(prv: &Path, label: &str) -> Option<u32> {
    let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
    pcf.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        let (_, ty) = (words.next()?, words.next()?);
        (words.collect::<Vec<_>>().join(" ") == label).then(|| ty.parse().ok())?
    })
}

const SWITCH_COUNTERS: std::ops::RangeInclusive<u32> = 66_710_001..=66_710_997;
const CONGESTION: u32 = 66_701_001;

#[test]
fn ib_switch_counters_and_congestion_events_are_on_the_switch_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_16);
    spec.device = SynthDeviceSide {
        nic_samples: 3,
        ib_switch_samples: 6,
        ib_congestion_events: 5,
        ..Default::default()
    };
    let (input, counts) = export(dir.path(), "ib.sqlite", &spec);
    let output = dir.path().join("ib.prv");
    run(&[&input], &output, &[]);
    let stats = check_trace(&output);
    let lines = event_lines(&output);
    let row = "IB switch0 counters (Quantum-2 leaf-01)";
    // Every sample, on the switch row, within the recorded 0 .. 5e7.
    let samples = pairs_on(&lines, row, SWITCH_COUNTERS);
    assert_eq!(samples.len() as u64, counts.ib_switch_samples);
    assert!(samples.iter().all(|&(_, v)| (0..50_000_000).contains(&v)));
    let everywhere: usize = lines
        .iter()
        .flat_map(|l| &l.pairs)
        .filter(|(t, _)| SWITCH_COUNTERS.contains(t))
        .count();
    assert_eq!(everywhere, samples.len());
    // Types by metric name and port, with the unit of the shared catalogue.
    let port7 = type_labelled(&output, "IB switch port_xmit_data (port 7) [bytes]");
    let port1 = type_labelled(&output, "IB switch port_xmit_data (port 1) [bytes]");
    assert!(port7.is_some() && port1.is_some() && port7 != port1);
    assert_eq!(
        samples.iter().filter(|&&(t, _)| Some(t) == port7).count(),
        6
    );
    // Congestion events: point events on the switch row with their packet.
    assert_eq!(begins(&stats, CONGESTION), counts.ib_congestion_events);
    assert_eq!(stats.event_ends.get(&CONGESTION), None);
    let events = pairs_on(&lines, row, CONGESTION..=CONGESTION);
    assert_eq!(events.len() as u64, counts.ib_congestion_events);
    let ingress = values_by_row(&lines, 66_701_008);
    let egress = values_by_row(&lines, 66_701_009);
    assert_eq!(ingress.get(row).map(Vec::len), Some(5));
    assert!(ingress[row].iter().all(|&p| p == 1) && egress[row].iter().all(|&p| p == 7));
    let pcf = std::fs::read_to_string(output.with_extension("pcf")).unwrap();
    assert!(pcf.contains("Egress Port Queue Size"), "{pcf}");
    assert_eq!(
        pcf_label(&output, CONGESTION).as_deref(),
        Some("IB switch congestion event")
    );
    // NIC counters keep their own row and types (BSC's numbering).
    let nic = pairs_on(&lines, "NIC0 counters (mlx5_0)", 9500..=9519);
    assert_eq!(nic.len() as u64, counts.nic_samples);
    // Excluding the network drops all of it.
    let without = dir.path().join("without.prv");
    run(&[&input], &without, &["--exclude", "network"]);
    let stats = check_trace(&without);
    assert_eq!(begins(&stats, CONGESTION), 0);
    let row_file = std::fs::read_to_string(without.with_extension("row")).unwrap();
    assert!(!row_file.contains("IB switch"), "{row_file}");
}

#[test]
fn soc_metrics_are_on_a_soc_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.device = SynthDeviceSide {
        soc_metric_samples: 12,
        gpu_metric_samples: 5,
        ..Default::default()
    };
    let (input, counts) = export(dir.path(), "soc.sqlite", &spec);
    let output = dir.path().join("soc.prv");
    run(&[&input], &output, &[]);
    check_trace(&output);
    let lines = event_lines(&output);
    let soc = pairs_on(&lines, "SoC0 metrics", 66_800_001..=66_800_997);
    assert_eq!(soc.len() as u64, counts.soc_metric_rows);
    // The EMC clock as recorded (3200 MHz ± 15), percentages ×100 within 0–100 %.
    let clock = type_labelled(&output, "SoC metric EMC Clock Frequency [MHz]").expect("clock");
    let read = type_labelled(
        &output,
        "SoC metric CPU Memory Read Bandwidth [Throughput %] x100",
    )
    .expect("read bandwidth");
    let values = |ty: u32| soc.iter().filter(move |(t, _)| *t == ty).map(|&(_, v)| v);
    assert_eq!(values(clock).count(), 12);
    assert!(values(clock).all(|v| (3185..=3215).contains(&v)));
    assert!(values(read).all(|v| (0..=10_000).contains(&v) && v % 100 == 0));
    // Not on the GPU metric types, and the GPU row is still there.
    assert!(soc.iter().all(|&(t, _)| !METRIC_TYPES.contains(&t)));
    assert!(!values_by_row(&lines, GPC_CLOCK)["GPU0 metrics"].is_empty());
    let row_file = std::fs::read_to_string(output.with_extension("row")).unwrap();
    assert!(row_file.contains("SoC0 metrics"), "{row_file}");
}

const HOST_FUNCTION: u32 = 63_000_110;
const HOST_CALLBACK: u32 = 63_000_111;

#[test]
fn host_functions_are_intervals_with_launch_and_callback_arrows() {
    let dir = tempfile::tempdir().unwrap();
    let device = SynthDeviceSide {
        host_functions: 7,
        ..Default::default()
    };
    let spec = two_process_spec(SchemaVersion::V3_24, device);
    let (input, counts) = export(dir.path(), "host.sqlite", &spec);
    assert_eq!(counts.host_launches, 14);
    let output = dir.path().join("host.prv");
    run(&[&input], &output, &[]);
    let stats = check_trace(&output);
    assert_eq!(begins(&stats, HOST_FUNCTION), counts.host_launches);
    assert_eq!(
        stats.event_ends.get(&HOST_FUNCTION),
        Some(&counts.host_launches)
    );
    assert_eq!(begins(&stats, HOST_CALLBACK), counts.host_callbacks);
    // The GPU side on streams, the callback on the driver's callback thread.
    let lines = event_lines(&output);
    let gpu = values_by_row(&lines, HOST_FUNCTION);
    assert!(gpu.keys().all(|row| row.starts_with("CUDA-D")), "{gpu:?}");
    let cpu = values_by_row(&lines, HOST_CALLBACK);
    assert!(
        cpu.keys().all(|row| row.starts_with("cuda-EvtHandlr")),
        "{cpu:?}"
    );
    // Arrows: each launch call to its GPU side, each GPU side to its callback.
    assert_eq!(
        stats.comm_tags.get(&55_001).copied(),
        Some(counts.kernels + counts.host_launches)
    );
    assert_eq!(
        stats.comm_tags.get(&55_004).copied(),
        Some(counts.host_callbacks)
    );
    let pcf = std::fs::read_to_string(output.with_extension("pcf")).unwrap();
    assert!(pcf.contains("synth_host_callback") && pcf.contains("Host function launch"));
    assert_eq!(
        pcf_label(&output, HOST_FUNCTION).as_deref(),
        Some("CUDA host function")
    );
    // The stream waits for the CPU meanwhile (Synchronization, as host-side syncs are).
    let synchronizing = stats.state_time.get(&5).copied().unwrap_or(0);
    // Excluding them leaves the kernels and their arrows.
    let without = dir.path().join("without.prv");
    run(&[&input], &without, &["--exclude", "host-functions"]);
    let stats = check_trace(&without);
    assert_eq!(
        begins(&stats, HOST_FUNCTION) + begins(&stats, HOST_CALLBACK),
        0
    );
    assert_eq!(stats.comm_tags.get(&55_004), None);
    assert_eq!(stats.comm_tags.get(&55_001).copied(), Some(counts.kernels));
    assert!(stats.state_time.get(&5).copied().unwrap_or(0) < synchronizing);
}

#[test]
fn everything_at_once_in_several_reports() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<PathBuf> = (0..2u32)
        .map(|rank| {
            let device = SynthDeviceSide {
                gpu_metric_samples: 20,
                graph_launches: 3,
                graph_mode: SynthGraphMode::Graph,
                memory_allocations: 4,
                nic_samples: 5,
                ib_switch_samples: 4,
                ib_congestion_events: 3,
                soc_metric_samples: 6,
                host_functions: 2,
                ..Default::default()
            };
            let mut spec = two_process_spec(SchemaVersion::V3_24, device);
            spec.hostname = format!("node{:02}", rank + 1);
            spec.seed = u64::from(rank) + 7;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            export(dir.path(), &format!("all{rank}.sqlite"), &spec).0
        })
        .collect();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let output = dir.path().join("all.prv");
    run(&refs, &output, &[]);
    check_trace(&output);
    // Only these categories: the rows still appear.
    let only = dir.path().join("only.prv");
    run(&refs, &only, &["-t", "gpu-metrics,network"]);
    let stats = check_trace(&only);
    assert!(begins(&stats, SMS_ACTIVE) > 0);
    assert_eq!(begins(&stats, 63_000_006), 0);
}

/// Real exports with CUDA events: every record and every event wait is on the trace.
#[test]
fn corpus_cuda_events() {
    let Some(corpus) = corpus_dir() else { return };
    let manifest = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if !cols[0].ends_with(".sqlite") || !cols.get(6).is_some_and(|f| f.contains("cuda_event")) {
            continue;
        }
        let input = corpus.join(cols[0]);
        let output = dir.path().join(format!("c{checked}.prv"));
        run(&[&input], &output, &[]);
        let stats = check_trace(&output);
        let conn = rusqlite::Connection::open_with_flags(
            &input,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
        let records = count("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT");
        let waits = count(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE eventId NOT IN (0, 4294967295)",
        );
        let lines = event_lines(&output);
        let ops: Vec<i64> = values_by_row(&lines, 9301)
            .into_values()
            .flatten()
            .collect();
        let placed = |v: i64| ops.iter().filter(|&&o| o == v).count() as u64;
        assert_eq!(placed(1), records, "{}: records", cols[0]);
        assert_eq!(placed(2) + placed(3), waits, "{}: waits", cols[0]);
        let arrows = stats.comm_tags.get(&55_003).copied().unwrap_or(0);
        assert!(arrows <= waits && (waits == 0 || arrows > 0), "{}", cols[0]);
        checked += 1;
    }
    assert!(checked >= 5, "corpus exports with CUDA events: {checked}");
}
