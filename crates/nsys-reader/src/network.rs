//! NIC counters (the NIC metric sampling of `nsys profile`): `NET_NIC_METRIC`
//! samples, named through `TARGET_INFO_NETWORK_METRICS` by (metricsListId,
//! metricsIdx), on NICs that `NIC_ID_MAP` and `TARGET_INFO_NIC_INFO` describe.
//! Known from NVIDIA's documentation only (no sample export has these rows).

use std::collections::HashMap;

use crate::{Export, ReadError, TableScan};

pub const NIC_METRIC: &str = "NET_NIC_METRIC";
pub const NETWORK_METRICS: &str = "TARGET_INFO_NETWORK_METRICS";
pub const NIC_ID_MAP: &str = "NIC_ID_MAP";
pub const NIC_INFO: &str = "TARGET_INFO_NIC_INFO";

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
    pub fn nic_samples(&self, mut f: impl FnMut(&NicSample)) -> Result<TableScan, ReadError> {
        let cols = [
            "start",
            "end",
            "globalId",
            "portId",
            "metricsListId",
            "metricsIdx",
            "value",
        ];
        let mut scan = TableScan::default();
        scan.rows = self.scan(NIC_METRIC, &cols, |row| {
            let sample = (|| {
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
            })();
            match sample {
                Some(s) => f(&s),
                None => scan.skipped += 1,
            }
            Ok(())
        })?;
        Ok(scan)
    }
}
