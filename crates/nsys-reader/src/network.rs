//! Network counters (the NIC and InfiniBand-switch metric sampling of `nsys
//! profile`):
//!
//! * `NET_NIC_METRIC` samples, named through `TARGET_INFO_NETWORK_METRICS` by
//!   (metricsListId, metricsIdx), on NICs that `NIC_ID_MAP` and
//!   `TARGET_INFO_NIC_INFO` describe;
//! * `NET_IB_SWITCH_METRIC` samples, with the same columns and the same
//!   catalogue, on IB switches that `NET_IB_DEVICE_INFO` names (by `guid`, which
//!   is taken to be the samples' `globalId`: the schema reference does not say
//!   how they join) and whose ports `NET_IB_DEVICE_PORT_INFO` labels;
//! * `NET_IB_SWITCH_CONGESTION_EVENT`: one row per congestion event seen by a
//!   switch (a time, no end), with the packet that saw it.
//!
//! Columns from NVIDIA's SQLite schema reference (nsys 2026.4, schema 3.28.1);
//! no sample export has these rows.

use std::collections::HashMap;

use crate::{Export, ReadError, RowView, TableScan};

pub const NIC_METRIC: &str = "NET_NIC_METRIC";
pub const NETWORK_METRICS: &str = "TARGET_INFO_NETWORK_METRICS";
pub const NIC_ID_MAP: &str = "NIC_ID_MAP";
pub const NIC_INFO: &str = "TARGET_INFO_NIC_INFO";
pub const IB_SWITCH_METRIC: &str = "NET_IB_SWITCH_METRIC";
pub const IB_CONGESTION: &str = "NET_IB_SWITCH_CONGESTION_EVENT";
pub const IB_DEVICE_INFO: &str = "NET_IB_DEVICE_INFO";
pub const IB_DEVICE_PORT_INFO: &str = "NET_IB_DEVICE_PORT_INFO";
pub const IB_CONGESTION_TYPES: &str = "ENUM_NET_IB_CONGESTION_EVENT_TYPE";

/// `ENUM_NET_IB_CONGESTION_EVENT_TYPE` as nsys 2025.1 writes it.
pub const BUILTIN_CONGESTION_TYPES: &[(i64, &str)] = &[(1, "Egress Port Queue Size")];

/// One congestion event of an IB switch; packet fields are `None` when NULL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CongestionEvent {
    pub start: i64,
    pub global_id: i64,
    pub congestion_type: Option<i64>,
    /// Source LID, destination LID, service level, operation code, source QP,
    /// destination QP, ingress port, egress port, in `CONGESTION_FIELDS` order.
    pub fields: [Option<i64>; 8],
}

/// The packet columns of `NET_IB_SWITCH_CONGESTION_EVENT`, in `CongestionEvent::fields` order.
pub const CONGESTION_FIELDS: [&str; 8] = [
    "packetSLID",
    "packetDLID",
    "packetSL",
    "packetOpCode",
    "packetSourceQP",
    "packetDestinationQP",
    "switchIngressPort",
    "switchEgressPort",
];

/// One sample: the value of a metric over [start, end] on one port of a NIC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicSample {
    pub start: i64,
    pub end: i64,
    pub global_id: i64,
    pub port: i64,
    pub list_id: i64,
    pub index: i64,
    pub value: i64,
}

/// The name and unit of a network metric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkMetric {
    pub name: String,
    pub unit: String,
}

impl Export {
    /// (metricsListId, metricsIdx) → name and unit.
    pub fn network_metrics(&self) -> Result<HashMap<(i64, i64), NetworkMetric>, ReadError> {
        let mut metrics = HashMap::new();
        self.scan(
            NETWORK_METRICS,
            &["metricsListId", "metricsIdx", "name", "unit"],
            |row| {
                if let (Some(list), Some(index), Some(name)) = (row.int(0), row.int(1), row.text(2))
                {
                    let unit = row.text(3).unwrap_or_default();
                    metrics
                        .entry((list, index))
                        .or_insert(NetworkMetric { name, unit });
                }
                Ok(())
            },
        )?;
        Ok(metrics)
    }

    /// globalId of a NIC's samples → its `nicId`.
    pub fn nic_ids(&self) -> Result<HashMap<i64, i64>, ReadError> {
        let mut ids = HashMap::new();
        self.scan(NIC_ID_MAP, &["globalId", "nicId"], |row| {
            if let (Some(global), Some(nic)) = (row.int(0), row.int(1)) {
                ids.entry(global).or_insert(nic);
            }
            Ok(())
        })?;
        Ok(ids)
    }

    /// nicId → NIC name (e.g. `mlx5_0`).
    pub fn nic_names(&self) -> Result<HashMap<i64, String>, ReadError> {
        let mut names = HashMap::new();
        self.scan(NIC_INFO, &["nicId", "name"], |row| {
            if let (Some(nic), Some(name)) = (row.int(0), row.text(1)) {
                names.entry(nic).or_insert(name);
            }
            Ok(())
        })?;
        Ok(names)
    }

    /// Streams `NET_NIC_METRIC`; rows with NULL start, NIC, metric or value are
    /// skipped.
    pub fn nic_samples(
        &self,
        f: impl FnMut(&NicSample) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.network_samples(NIC_METRIC, f)
    }

    /// Streams `NET_IB_SWITCH_METRIC` (the columns of `NET_NIC_METRIC`, the
    /// switch in `globalId`); rows with NULL start, switch, metric or value are
    /// skipped.
    pub fn ib_switch_samples(
        &self,
        f: impl FnMut(&NicSample) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.network_samples(IB_SWITCH_METRIC, f)
    }

    /// IB device `guid` → its name (`name`, else the description `des`).
    pub fn ib_device_names(&self) -> Result<HashMap<i64, String>, ReadError> {
        let mut names = HashMap::new();
        self.scan(IB_DEVICE_INFO, &["guid", "name", "des"], |row| {
            let name = row.text(1).filter(|n| !n.trim().is_empty()).or(row.text(2));
            if let (Some(guid), Some(name)) = (row.int(0), name) {
                names.entry(guid).or_insert(name);
            }
            Ok(())
        })?;
        Ok(names)
    }

    /// (IB device `guid`, port number) → the port's label.
    pub fn ib_port_labels(&self) -> Result<HashMap<(i64, i64), String>, ReadError> {
        let mut labels = HashMap::new();
        self.scan(
            IB_DEVICE_PORT_INFO,
            &["guid", "portNumber", "portLabel"],
            |row| {
                if let (Some(guid), Some(port), Some(label)) = (row.int(0), row.int(1), row.text(2))
                {
                    labels.entry((guid, port)).or_insert(label);
                }
                Ok(())
            },
        )?;
        Ok(labels)
    }

    /// Streams `NET_IB_SWITCH_CONGESTION_EVENT`; rows with NULL start or switch
    /// are skipped.
    pub fn ib_congestion_events(
        &self,
        f: impl FnMut(&CongestionEvent) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols: Vec<&str> = ["start", "globalId", "congestionType"]
            .into_iter()
            .chain(CONGESTION_FIELDS)
            .collect();
        let decode = |row: &RowView| {
            Some(CongestionEvent {
                start: row.int(0)?,
                global_id: row.int(1)?,
                congestion_type: row.int(2),
                fields: std::array::from_fn(|i| row.int(3 + i)),
            })
        };
        self.scan_rows(IB_CONGESTION, &cols, "1", decode, f)
    }

    fn network_samples(
        &self,
        table: &str,
        f: impl FnMut(&NicSample) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "globalId",
            "portId",
            "metricsListId",
            "metricsIdx",
            "value",
        ];
        let decode = |row: &RowView| {
            let start = row.int(0)?;
            Some(NicSample {
                start,
                end: row.int(1).unwrap_or(start),
                global_id: row.int(2)?,
                port: row.int(3).unwrap_or(1),
                list_id: row.int(4)?,
                index: row.int(5)?,
                value: row.int(6)?,
            })
        };
        self.scan_rows(table, &cols, "1", decode, f)
    }
}
