//! Device-side tables written after the CUDA model has run: GPU metric samples (both
//! representations), SoC metric samples, NIC counters, and IB switch counters and congestion
//! events. They depend only on the GPUs used and on how long the run
//! lasted, and draw from their own random stream, so other tables do not change with them.

use anyhow::{Context, Result};
use rusqlite::types::Value;
use rusqlite::{params, Connection};

use crate::ddl::{create_and_fill_named, create_or_fill_named, create_table, NamedRow};
use crate::ids::global_vid;
use crate::rng::SplitMix64;
use crate::strings::StringIds;
use crate::{SchemaVersion, SynthSpec};

/// Default GPU metrics sampling period: 10 kHz.
const METRICS_PERIOD: i64 = 100_000;
/// Sampling starts this many periods before the session's t = 0.
const SAMPLES_BEFORE_START: i64 = 2;
/// The GPU-metrics generic-event source, and the type number of its samples.
const METRICS_SOURCE: i64 = 3;
const METRICS_TYPE: i64 = 1;
/// The raw clock of samples runs from an unrelated origin.
const RAW_CLOCK_ORIGIN: i64 = 161_000_000_000;

#[derive(Clone, Copy)]
enum Values {
    /// An integer percentage.
    Percent,
    /// A percentage with a half (legacy JSON samples only).
    HalfPercent,
    /// A clock in MHz around this value, plus 100 per GPU id (so that tests can tell GPUs apart).
    Clock(i64),
    /// A count up to this value.
    Count(i64),
}

/// The metric set of an A100 as nsys 2024+ names it, plus one name outside nsys2prv-rs's table.
const CURRENT_METRICS: [(&str, Values); 16] = [
    ("GPC Clock Frequency [MHz]", Values::Clock(1410)),
    ("SYS Clock Frequency [MHz]", Values::Clock(1215)),
    ("GR Active [Throughput %]", Values::Percent),
    ("SMs Active [Throughput %]", Values::Percent),
    ("SM Issue [Throughput %]", Values::Percent),
    ("Tensor Active [Throughput %]", Values::Percent),
    ("Compute Warps in Flight [Throughput %]", Values::Percent),
    (
        "Unallocated Warps in Active SMs [Throughput %]",
        Values::Percent,
    ),
    ("DRAM Read Bandwidth [Throughput %]", Values::Percent),
    ("DRAM Write Bandwidth [Throughput %]", Values::Percent),
    ("PCIe RX Throughput [Throughput %]", Values::Percent),
    ("PCIe TX Throughput [Throughput %]", Values::Percent),
    ("PCIe Read Requests to BAR1 [Requests]", Values::Count(50)),
    (
        "NVLink RX Responses User Data [Throughput %]",
        Values::Percent,
    ),
    (
        "NVLink TX Responses User Data [Throughput %]",
        Values::Percent,
    ),
    ("NVDEC 0 Active [Throughput %]", Values::Percent),
];

/// The same metrics as 2022-2023 JSON samples name them (no units).
const LEGACY_METRICS: [(&str, Values); 12] = [
    ("GPC Clock Frequency", Values::Clock(1410)),
    ("GR Active", Values::Percent),
    ("SM Active", Values::Percent),
    ("SM Issue", Values::Percent),
    ("Tensor Active", Values::Percent),
    ("Compute Warps In Flight", Values::HalfPercent),
    ("Unallocated Warps in Active SMs", Values::Percent),
    ("DRAM Read Bandwidth", Values::Percent),
    ("DRAM Write Bandwidth", Values::Percent),
    ("PCIe TX Throughput", Values::Percent),
    ("PCIe RX Throughput", Values::Percent),
    ("NVDEC 0 Active", Values::Percent),
];

fn draw(rng: &mut SplitMix64, values: Values, gpu: u32) -> f64 {
    match values {
        Values::Percent => rng.range(0, 101) as f64,
        Values::HalfPercent => rng.range(0, 201) as f64 / 2.0,
        Values::Clock(mhz) => (mhz + 100 * i64::from(gpu) + rng.range(-15, 16)) as f64,
        Values::Count(max) => rng.range(0, max + 1) as f64,
    }
}

/// The generic-event type id of GPU `gpu`'s samples: `<HW:8><VM:8><Source:16><Type:32>`, with
/// the GPU in the low byte.
fn metrics_type_id(gpu: u32) -> i64 {
    global_vid() | (METRICS_SOURCE << 32) | (METRICS_TYPE << 8) | i64::from(gpu)
}

fn sampled_gpus(spec: &SynthSpec) -> Vec<u32> {
    let mut gpus: Vec<u32> = if spec.device.metric_gpus.is_empty() {
        spec.processes
            .iter()
            .flat_map(|p| p.devices.iter().copied())
            .collect()
    } else {
        spec.device.metric_gpus.clone()
    };
    gpus.sort_unstable();
    gpus.dedup();
    gpus
}

/// Sample times: every period from before the session start to its end.
fn sample_times(samples: u64, duration: i64) -> impl Iterator<Item = i64> {
    let samples = samples as i64;
    let span = duration + SAMPLES_BEFORE_START * METRICS_PERIOD;
    let period = METRICS_PERIOD.min((span / samples.max(1)).max(1_000));
    let first = -SAMPLES_BEFORE_START * period;
    (0..samples).map(move |i| first + i * period)
}

/// Writes the GPU metric samples; returns (rows, values).
pub(crate) fn write_gpu_metrics(
    conn: &Connection,
    spec: &SynthSpec,
    strings: &mut StringIds,
    duration: i64,
) -> Result<(u64, u64)> {
    let samples = spec.device.gpu_metric_samples;
    let gpus = sampled_gpus(spec);
    if samples == 0 || gpus.is_empty() {
        return Ok((0, 0));
    }
    let mut rng = SplitMix64::new(spec.seed ^ 0x6D65_7472_6963_7321);
    if spec.schema.has_gpu_metrics_table() {
        write_current(conn, spec.schema, &gpus, samples, duration, &mut rng)
    } else {
        write_legacy(
            conn,
            spec.schema,
            strings,
            &gpus,
            samples,
            duration,
            &mut rng,
        )
    }
}

fn write_current(
    conn: &Connection,
    version: SchemaVersion,
    gpus: &[u32],
    samples: u64,
    duration: i64,
    rng: &mut SplitMix64,
) -> Result<(u64, u64)> {
    let n = CURRENT_METRICS.len();
    // nsys numbers the metrics of each GPU on its own: ids differ from GPU to GPU.
    let metric_id = |gpu_index: usize, metric: usize| ((metric + gpu_index) % n) as i64;
    let mut catalogue: Vec<NamedRow> = Vec::new();
    for (g, &gpu) in gpus.iter().enumerate() {
        for (m, (name, _)) in CURRENT_METRICS.iter().enumerate() {
            catalogue.push(vec![
                ("typeId", Value::Integer(metrics_type_id(gpu))),
                ("sourceId", Value::Integer(METRICS_SOURCE)),
                ("typeName", Value::Text("GA100".to_owned())),
                ("metricId", Value::Integer(metric_id(g, m))),
                ("metricName", Value::Text((*name).to_owned())),
            ]);
        }
    }
    create_and_fill_named(conn, version, "TARGET_INFO_GPU_METRICS", &catalogue)?;
    create_table(conn, version, "GPU_METRICS")?;
    let mut insert = conn.prepare(
        "INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut rows = 0;
    for time in sample_times(samples, duration) {
        for (g, &gpu) in gpus.iter().enumerate() {
            for (m, &(_, values)) in CURRENT_METRICS.iter().enumerate() {
                let value = draw(rng, values, gpu) as i64;
                insert
                    .execute(params![time, metrics_type_id(gpu), metric_id(g, m), value])
                    .context("inserting into GPU_METRICS")?;
                rows += 1;
            }
        }
    }
    Ok((rows, rows))
}

fn write_legacy(
    conn: &Connection,
    version: SchemaVersion,
    strings: &mut StringIds,
    gpus: &[u32],
    samples: u64,
    duration: i64,
    rng: &mut SplitMix64,
) -> Result<(u64, u64)> {
    let null = || Value::Null;
    let source: NamedRow = vec![
        ("sourceId", Value::Integer(METRICS_SOURCE)),
        ("nameId", Value::Integer(strings.intern("GpuMetrics"))),
        // SessionNs: the samples are on the session clock.
        ("timeSourceId", Value::Integer(3)),
        ("sourceGroupId", Value::Integer(0)),
        ("hyperType", null()),
        ("hyperVersion", null()),
        ("hyperStructPrefix", null()),
        ("hyperMacroPrefix", null()),
        ("hyperFilterFlags", null()),
        ("hyperDomain", null()),
        (
            "data",
            Value::Text(r#"{"Name":"GpuMetrics","Version":1}"#.to_owned()),
        ),
    ];
    create_and_fill_named(conn, version, "GENERIC_EVENT_SOURCES", &[source])?;
    let type_name = strings.intern("GpuMetrics:GA100");
    let types: Vec<NamedRow> = gpus
        .iter()
        .map(|&gpu| {
            let mut row: NamedRow = vec![
                ("typeId", Value::Integer(metrics_type_id(gpu))),
                ("sourceId", Value::Integer(METRICS_SOURCE)),
                ("nameId", Value::Integer(type_name)),
                (
                    "data",
                    Value::Text(format!(r#"{{"MetricSet":"GA100","Gpu":{gpu}}}"#)),
                ),
            ];
            for column in [
                "hyperComment",
                "ftraceFormat",
                "etwProviderId",
                "etwProviderNameId",
                "etwTaskId",
                "etwTaskNameId",
                "etwEventId",
                "etwVersion",
                "etwGuidHigh",
                "etwGuidLow",
                "etwGuid",
            ] {
                row.push((column, null()));
            }
            row
        })
        .collect();
    create_and_fill_named(conn, version, "GENERIC_EVENT_TYPES", &types)?;
    create_table(conn, version, "GENERIC_EVENTS")?;
    let mut insert = conn.prepare(
        "INSERT INTO GENERIC_EVENTS (rawTimestamp, timestamp, typeId, data) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let (mut rows, mut values) = (0, 0);
    let mut json = String::new();
    for time in sample_times(samples, duration) {
        for &gpu in gpus {
            json.clear();
            json.push('{');
            for (m, &(name, kind)) in LEGACY_METRICS.iter().enumerate() {
                if m > 0 {
                    json.push(',');
                }
                json.push_str(&format!("\"{name}\":{}", draw(rng, kind, gpu)));
                values += 1;
            }
            json.push('}');
            insert
                .execute(params![
                    RAW_CLOCK_ORIGIN + time,
                    time,
                    metrics_type_id(gpu),
                    json
                ])
                .context("inserting into GENERIC_EVENTS")?;
            rows += 1;
        }
    }
    Ok((rows, values))
}

/// The one NIC: its `nicId` and the `globalId` its samples carry.
const NIC_ID: i64 = 0;
const NIC_METRICS: [(&str, &str, &str); 3] = [
    ("Bytes received", "Bytes received by the port", "bytes"),
    ("Bytes sent", "Bytes sent by the port", "bytes"),
    (
        "Packets received",
        "Packets received by the port",
        "packets",
    ),
];

/// Writes the NIC description and `samples` samples of each counter; returns the sample rows.
pub(crate) fn write_nic_metrics(conn: &Connection, spec: &SynthSpec, duration: i64) -> Result<u64> {
    let samples = spec.device.nic_samples;
    if samples == 0 {
        return Ok(0);
    }
    let version = spec.schema;
    let global_id = global_vid() | 0x4E49_4330;
    let info: NamedRow = vec![
        ("globalId", Value::Integer(global_vid())),
        ("GUID", Value::Integer(global_vid())),
        ("stateName", Value::Text("Local (CLI)".to_owned())),
        ("nicId", Value::Integer(NIC_ID)),
        ("name", Value::Text("mlx5_0".to_owned())),
        ("deviceId", Value::Integer(4117)),
        ("vendorId", Value::Integer(5555)),
        ("linkLayer", Value::Integer(1)),
    ];
    create_and_fill_named(conn, version, "TARGET_INFO_NIC_INFO", &[info])?;
    let map: NamedRow = vec![
        ("nicId", Value::Integer(NIC_ID)),
        ("globalId", Value::Integer(global_id)),
    ];
    create_and_fill_named(conn, version, "NIC_ID_MAP", &[map])?;
    let metrics: Vec<NamedRow> = NIC_METRICS
        .iter()
        .zip(0..)
        .map(|(&(name, description, unit), index)| {
            vec![
                ("metricsListId", Value::Integer(1)),
                ("metricsIdx", Value::Integer(index)),
                ("name", Value::Text(name.to_owned())),
                ("description", Value::Text(description.to_owned())),
                ("unit", Value::Text(unit.to_owned())),
            ]
        })
        .collect();
    create_and_fill_named(conn, version, "TARGET_INFO_NETWORK_METRICS", &metrics)?;
    create_table(conn, version, "NET_NIC_METRIC")?;
    let mut insert = conn.prepare(
        "INSERT INTO NET_NIC_METRIC (start, end, globalId, portId, metricsListId, metricsIdx, value)
         VALUES (?1, ?2, ?3, 1, 1, ?4, ?5)",
    )?;
    let mut rng = SplitMix64::new(spec.seed ^ 0x6E69_6373);
    let period = (duration / samples as i64).max(1_000);
    let mut rows = 0;
    for i in 0..samples as i64 {
        let start = i * period;
        for index in 0..NIC_METRICS.len() as i64 {
            let value = if index == 2 {
                rng.range(0, 10_000)
            } else {
                rng.range(0, 10_000_000)
            };
            insert.execute(params![start, start + period, global_id, index, value])?;
            rows += 1;
        }
    }
    Ok(rows)
}

/// The one IB switch: its `guid` (also the `globalId` of its rows), name and two sampled ports.
const SWITCH_GUID: i64 = 0x0002_C903_00A1_B2C3;
const SWITCH_PORTS: [i64; 2] = [1, 7];
/// Its counters, in metric list 2 of TARGET_INFO_NETWORK_METRICS (the NIC's are list 1).
const SWITCH_METRICS: [(&str, &str, &str); 2] = [
    (
        "port_xmit_data",
        "Data octets transmitted by the port",
        "bytes",
    ),
    ("port_rcv_data", "Data octets received by the port", "bytes"),
];
pub(crate) const SWITCH_VALUE_LIMIT: i64 = 50_000_000;

fn switch_description() -> Vec<NamedRow> {
    vec![vec![
        ("networkId", Value::Integer(1)),
        ("guid", Value::Integer(SWITCH_GUID)),
        ("name", Value::Text("Quantum-2 leaf-01".to_owned())),
        ("des", Value::Text("MF0;leaf-01:MQM9700/U1".to_owned())),
        ("lid", Value::Integer(11)),
    ]]
}

/// Writes the switch, `samples` samples of each counter on each port, and `events` congestion
/// events; returns (sample rows, event rows).
pub(crate) fn write_ib_switch(
    conn: &Connection,
    spec: &SynthSpec,
    duration: i64,
) -> Result<(u64, u64)> {
    let (samples, events) = (
        spec.device.ib_switch_samples,
        spec.device.ib_congestion_events,
    );
    if samples + events == 0 {
        return Ok((0, 0));
    }
    let version = spec.schema;
    create_and_fill_named(conn, version, "NET_IB_DEVICE_INFO", &switch_description())?;
    let ports: Vec<NamedRow> = SWITCH_PORTS
        .iter()
        .map(|&port| {
            vec![
                ("guid", Value::Integer(SWITCH_GUID)),
                ("portNumber", Value::Integer(port)),
                ("portLabel", Value::Text(format!("1/{port}"))),
                ("portLid", Value::Integer(11)),
            ]
        })
        .collect();
    create_and_fill_named(conn, version, "NET_IB_DEVICE_PORT_INFO", &ports)?;
    let mut rng = SplitMix64::new(spec.seed ^ 0x6962_7377);
    let rows = write_switch_samples(conn, version, samples, duration, &mut rng)?;
    let congestion = write_congestion(conn, version, events, duration, &mut rng)?;
    Ok((rows, congestion))
}

fn write_switch_samples(
    conn: &Connection,
    version: SchemaVersion,
    samples: u64,
    duration: i64,
    rng: &mut SplitMix64,
) -> Result<u64> {
    if samples == 0 {
        return Ok(0);
    }
    let metrics: Vec<NamedRow> = SWITCH_METRICS
        .iter()
        .zip(0..)
        .map(|(&(name, description, unit), index)| {
            vec![
                ("metricsListId", Value::Integer(2)),
                ("metricsIdx", Value::Integer(index)),
                ("name", Value::Text(name.to_owned())),
                ("description", Value::Text(description.to_owned())),
                ("unit", Value::Text(unit.to_owned())),
            ]
        })
        .collect();
    create_or_fill_named(conn, version, "TARGET_INFO_NETWORK_METRICS", &metrics)?;
    create_table(conn, version, "NET_IB_SWITCH_METRIC")?;
    let mut insert = conn.prepare(
        "INSERT INTO NET_IB_SWITCH_METRIC (start, end, globalId, portId, metricsListId, metricsIdx, value)
         VALUES (?1, ?2, ?3, ?4, 2, ?5, ?6)",
    )?;
    let period = (duration / samples as i64).max(1_000);
    let mut rows = 0;
    for i in 0..samples as i64 {
        let start = i * period;
        for port in SWITCH_PORTS {
            for index in 0..SWITCH_METRICS.len() as i64 {
                let value = rng.range(0, SWITCH_VALUE_LIMIT);
                insert.execute(params![
                    start,
                    start + period,
                    SWITCH_GUID,
                    port,
                    index,
                    value
                ])?;
                rows += 1;
            }
        }
    }
    Ok(rows)
}

fn write_congestion(
    conn: &Connection,
    version: SchemaVersion,
    events: u64,
    duration: i64,
    rng: &mut SplitMix64,
) -> Result<u64> {
    if events == 0 {
        return Ok(0);
    }
    create_table(conn, version, "NET_IB_SWITCH_CONGESTION_EVENT")?;
    let mut insert = conn.prepare(
        "INSERT INTO NET_IB_SWITCH_CONGESTION_EVENT (start, globalId, congestionType, packetSLID,
         packetDLID, packetSL, packetOpCode, packetSourceQP, packetDestinationQP, switchIngressPort,
         switchEgressPort) VALUES (?1, ?2, 1, ?3, ?4, 0, 4, ?5, ?6, ?7, ?8)",
    )?;
    for _ in 0..events {
        let start = rng.range(0, duration.max(1));
        let (ingress, egress) = (SWITCH_PORTS[0], SWITCH_PORTS[1]);
        let qp = rng.range(0x100, 0x10000);
        insert.execute(params![
            start,
            SWITCH_GUID,
            21,
            34,
            qp,
            qp + 1,
            ingress,
            egress
        ])?;
    }
    Ok(events)
}

/// The SoC metric set of a Grace CPU as the generator names it (the real names are not known).
const SOC_METRICS: [(&str, Values); 4] = [
    ("CPU Memory Read Bandwidth [Throughput %]", Values::Percent),
    ("CPU Memory Write Bandwidth [Throughput %]", Values::Percent),
    ("C2C Read Bandwidth [Throughput %]", Values::Percent),
    ("EMC Clock Frequency [MHz]", Values::Clock(3200)),
];
const SOC_SOURCE: i64 = 5;

/// Writes `samples` samples of each SoC metric of SoC 0; returns the rows.
pub(crate) fn write_soc_metrics(conn: &Connection, spec: &SynthSpec, duration: i64) -> Result<u64> {
    let samples = spec.device.soc_metric_samples;
    if samples == 0 {
        return Ok(0);
    }
    let version = spec.schema;
    let type_id = global_vid() | (SOC_SOURCE << 32) | (METRICS_TYPE << 8);
    let catalogue: Vec<NamedRow> = SOC_METRICS
        .iter()
        .zip(0..)
        .map(|(&(name, _), id)| {
            vec![
                ("typeId", Value::Integer(type_id)),
                ("sourceId", Value::Integer(SOC_SOURCE)),
                ("typeName", Value::Text("Grace".to_owned())),
                ("metricId", Value::Integer(id)),
                ("metricName", Value::Text(name.to_owned())),
            ]
        })
        .collect();
    create_and_fill_named(conn, version, "TARGET_INFO_SOC_METRICS", &catalogue)?;
    create_table(conn, version, "SOC_METRICS")?;
    let mut insert = conn.prepare(
        "INSERT INTO SOC_METRICS (rawTimestamp, timestamp, typeId, metricId, value)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut rng = SplitMix64::new(spec.seed ^ 0x736F_6373);
    let mut rows = 0;
    for time in sample_times(samples, duration) {
        for (id, &(_, values)) in (0..).zip(SOC_METRICS.iter()) {
            let value = draw(&mut rng, values, 0) as i64;
            insert.execute(params![RAW_CLOCK_ORIGIN + time, time, type_id, id, value])?;
            rows += 1;
        }
    }
    Ok(rows)
}
