//! GPU hardware metrics (`--gpu-metrics-devices`) in both of their representations,
//! and the CUDA device tables that tell which process used which GPU.
//!
//! * Current (by nsys 2024): `GPU_METRICS(timestamp, typeId, metricId, value)`, one
//!   row per sample per metric, named through `TARGET_INFO_GPU_METRICS` by
//!   (typeId, metricId). Metric ids are not stable across GPUs: use the names.
//! * Legacy (nsys 2021–2023): `GENERIC_EVENTS(timestamp, typeId, data)`, one row
//!   per sample per GPU with the values as a JSON object `{"SM Active": 12, …}`,
//!   for the types whose source is `GpuMetrics` in `GENERIC_EVENT_SOURCES`.
//!
//! In both, the GPU is `typeId & 0xFF` (= `TARGET_INFO_GPU.id`).
//!
//! SoC metrics (Tegra, Grace: `--soc-metrics`) have the shape of the current GPU
//! representation: `SOC_METRICS(timestamp, typeId, metricId, value)` named
//! through `TARGET_INFO_SOC_METRICS` by (typeId, metricId) (NVIDIA's SQLite schema
//! reference, nsys 2026.4).

use std::collections::{HashMap, HashSet};

use crate::{Export, ReadError, RowView, TableScan};

pub const GPU_METRICS: &str = "GPU_METRICS";
pub const TARGET_INFO_GPU_METRICS: &str = "TARGET_INFO_GPU_METRICS";
pub const GENERIC_EVENTS: &str = "GENERIC_EVENTS";
pub const GENERIC_EVENT_SOURCES: &str = "GENERIC_EVENT_SOURCES";
pub const GENERIC_EVENT_TYPES: &str = "GENERIC_EVENT_TYPES";
pub const SOC_METRICS: &str = "SOC_METRICS";
pub const TARGET_INFO_SOC_METRICS: &str = "TARGET_INFO_SOC_METRICS";
pub const TARGET_INFO_CUDA_DEVICE: &str = "TARGET_INFO_CUDA_DEVICE";
pub const TARGET_INFO_CUDA_CONTEXT_INFO: &str = "TARGET_INFO_CUDA_CONTEXT_INFO";
pub const TARGET_INFO_CUDA_NULL_STREAM: &str = "TARGET_INFO_CUDA_NULL_STREAM";

/// The GPU (`TARGET_INFO_GPU.id`) of a metrics `typeId`.
pub fn gpu_of_type(type_id: i64) -> u32 {
    (type_id & 0xFF) as u32
}

/// The generic-event source of a `typeId` (`<HW:8><VM:8><Source:16><Type:32>`).
pub fn source_of_type(type_id: i64) -> i64 {
    (type_id >> 32) & 0xFFFF
}

/// One row of `GPU_METRICS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricRow {
    pub timestamp: i64,
    pub type_id: i64,
    pub metric_id: i64,
    pub value: i64,
}

/// Which `GENERIC_EVENTS` types hold GPU metrics.
#[derive(Debug, Clone, Default)]
pub struct GenericMetricTypes {
    /// Sources whose description names `GpuMetrics`.
    pub sources: HashSet<i64>,
    /// Types of those sources listed in `GENERIC_EVENT_TYPES`.
    pub types: HashSet<i64>,
    /// Whether `GENERIC_EVENT_SOURCES` exists, so that sources can be told apart.
    pub known: bool,
}

impl GenericMetricTypes {
    pub fn is_metric(&self, type_id: i64) -> bool {
        self.types.contains(&type_id) || self.sources.contains(&source_of_type(type_id))
    }
}

/// One legacy sample: the metrics of one GPU at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericSample {
    pub timestamp: i64,
    pub type_id: i64,
    pub values: Vec<(String, f64)>,
}

/// Rows of a `GENERIC_EVENTS` scan: GPU-metric rows read or skipped, and rows of
/// other sources (ftrace, ETW, …) left alone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GenericScan {
    pub scan: TableScan,
    pub other_sources: u64,
}

/// A process's use of a CUDA device: its CUDA ordinal (the `deviceId` of its
/// kernels) and, where the export says, the physical GPU (`TARGET_INFO_GPU.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceUse {
    pub pid: u32,
    pub cuda_id: u32,
    pub gpu_id: Option<u32>,
}

impl Export {
    /// (typeId, metricId) → metric name, from `TARGET_INFO_GPU_METRICS` (small).
    pub fn gpu_metric_names(&self) -> Result<HashMap<(i64, i64), String>, ReadError> {
        self.metric_names(TARGET_INFO_GPU_METRICS)
    }

    /// (typeId, metricId) → metric name, from `TARGET_INFO_SOC_METRICS` (small).
    pub fn soc_metric_names(&self) -> Result<HashMap<(i64, i64), String>, ReadError> {
        self.metric_names(TARGET_INFO_SOC_METRICS)
    }

    /// Streams `SOC_METRICS`; rows with NULL timestamp, typeId, metricId or value
    /// are skipped.
    pub fn soc_metrics(
        &self,
        f: impl FnMut(&MetricRow) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.metric_rows(SOC_METRICS, f)
    }

    fn metric_names(&self, table: &str) -> Result<HashMap<(i64, i64), String>, ReadError> {
        let mut names = HashMap::new();
        self.scan(table, &["typeId", "metricId", "metricName"], |row| {
            if let (Some(t), Some(m), Some(name)) = (row.int(0), row.int(1), row.text(2)) {
                names.entry((t, m)).or_insert(name);
            }
            Ok(())
        })?;
        Ok(names)
    }

    /// Streams `GPU_METRICS`; rows with NULL timestamp, typeId, metricId or value
    /// are skipped.
    pub fn gpu_metrics(
        &self,
        f: impl FnMut(&MetricRow) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        self.metric_rows(GPU_METRICS, f)
    }

    fn metric_rows(
        &self,
        table: &str,
        f: impl FnMut(&MetricRow) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let cols = ["timestamp", "typeId", "metricId", "value"];
        let decode = |row: &RowView| {
            Some(MetricRow {
                timestamp: row.int(0)?,
                type_id: row.int(1)?,
                metric_id: row.int(2)?,
                value: row.int(3)?,
            })
        };
        self.scan_rows(table, &cols, "1", decode, f)
    }

    /// The `GENERIC_EVENTS` types that hold GPU metrics.
    pub fn generic_metric_types(&self) -> Result<GenericMetricTypes, ReadError> {
        let mut found = GenericMetricTypes {
            known: self.has_table(GENERIC_EVENT_SOURCES),
            ..Default::default()
        };
        let mut named = Vec::new();
        self.scan(
            GENERIC_EVENT_SOURCES,
            &["sourceId", "data", "nameId"],
            |row| {
                let Some(source) = row.int(0) else {
                    return Ok(());
                };
                if row.text(1).is_some_and(|d| names_gpu_metrics(&d)) {
                    found.sources.insert(source);
                } else if let Some(name_id) = row.int(2) {
                    named.push((source, name_id));
                }
                Ok(())
            },
        )?;
        for (source, name_id) in named {
            if self.string(name_id)?.is_some_and(|n| names_gpu_metrics(&n)) {
                found.sources.insert(source);
            }
        }
        let sources = found.sources.clone();
        self.scan(GENERIC_EVENT_TYPES, &["typeId", "sourceId"], |row| {
            if let (Some(t), Some(s)) = (row.int(0), row.int(1)) {
                if sources.contains(&s) {
                    found.types.insert(t);
                }
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// Streams the GPU-metric rows of `GENERIC_EVENTS` with their JSON parsed.
    /// Rows with a NULL timestamp or typeId, or data that is not a JSON object of
    /// numbers, are skipped.
    pub fn generic_gpu_metrics(
        &self,
        types: &GenericMetricTypes,
        mut f: impl FnMut(&GenericSample) -> Result<(), ReadError>,
    ) -> Result<GenericScan, ReadError> {
        let mut out = GenericScan::default();
        // `Some(None)`: a row of another source, neither translated nor skipped.
        let decode = |row: &RowView| {
            let type_id = row.int(1)?;
            if !types.is_metric(type_id) {
                return Some(None);
            }
            Some(Some((row.int(0)?, type_id, row.text(2)?)))
        };
        let columns = ["timestamp", "typeId", "data"];
        let mut bad_json = 0;
        out.scan = self.scan_rows(GENERIC_EVENTS, &columns, "1", decode, |row| {
            let Some((timestamp, type_id, data)) = row else {
                out.other_sources += 1;
                return Ok(());
            };
            match json_numbers(data) {
                Some(values) => f(&GenericSample {
                    timestamp: *timestamp,
                    type_id: *type_id,
                    values,
                })?,
                None => bad_json += 1,
            }
            Ok(())
        })?;
        out.scan.skipped += bad_json;
        out.scan.rows -= out.other_sources;
        Ok(out)
    }

    /// Which process used which CUDA device: `TARGET_INFO_CUDA_DEVICE` (3.17+,
    /// with the physical GPU), then the contexts of `TARGET_INFO_CUDA_CONTEXT_INFO`
    /// (3.7+) or `TARGET_INFO_CUDA_NULL_STREAM` (up to 3.4), which give only the
    /// CUDA ordinal. Sorted, without repeats.
    pub fn cuda_device_uses(&self) -> Result<Vec<DeviceUse>, ReadError> {
        let mut uses = Vec::new();
        self.scan(
            TARGET_INFO_CUDA_DEVICE,
            &["pid", "cudaId", "gpuId"],
            |row| {
                if let (Some(pid), Some(cuda)) = (row.int(0), row.int(1)) {
                    uses.push(DeviceUse {
                        pid: pid as u32,
                        cuda_id: cuda as u32,
                        gpu_id: row.int(2).map(|g| g as u32),
                    });
                }
                Ok(())
            },
        )?;
        for table in [TARGET_INFO_CUDA_CONTEXT_INFO, TARGET_INFO_CUDA_NULL_STREAM] {
            self.scan(table, &["processId", "deviceId"], |row| {
                if let (Some(pid), Some(cuda)) = (row.int(0), row.int(1)) {
                    uses.push(DeviceUse {
                        pid: pid as u32,
                        cuda_id: cuda as u32,
                        gpu_id: None,
                    });
                }
                Ok(())
            })?;
        }
        uses.sort_unstable();
        uses.dedup();
        Ok(uses)
    }
}

/// Whether a source description (JSON or a name) is the GPU-metrics source.
fn names_gpu_metrics(text: &str) -> bool {
    let squeezed: String = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    squeezed.contains("gpumetrics")
}

/// The numbers of a JSON sample: members `"name": number` (or a numeric string)
/// of the object and of nested objects, and `{"name": …, "value": …}` elements,
/// in the order the text has them (the order of the sample's events). `None` when
/// the text is not a JSON object.
pub fn json_numbers(text: &str) -> Option<Vec<(String, f64)>> {
    let value: Node = serde_json::from_str(text).ok()?;
    if !matches!(value, Node::Object(_)) {
        return None;
    }
    let mut out = Vec::new();
    collect_numbers(value, &mut out);
    Some(out)
}

fn collect_numbers(value: Node, out: &mut Vec<(String, f64)>) {
    match value {
        Node::Object(members) => {
            if let Some(pair) = name_value_pair(&members) {
                out.push(pair);
                return;
            }
            for (key, v) in members {
                match v {
                    Node::Number(n) => out.push((key, n)),
                    Node::String(s) => {
                        if let Ok(n) = s.trim().parse::<f64>() {
                            if n.is_finite() {
                                out.push((key, n));
                            }
                        }
                    }
                    nested @ (Node::Object(_) | Node::Array(_)) => collect_numbers(nested, out),
                    Node::Other => {}
                }
            }
        }
        Node::Array(items) => {
            for item in items {
                collect_numbers(item, out);
            }
        }
        _ => {}
    }
}

/// `{"name": "SM Active", "value": 12}` (any capitalisation) → ("SM Active", 12).
fn name_value_pair(members: &[(String, Node)]) -> Option<(String, f64)> {
    let find = |keys: &[&str]| {
        members
            .iter()
            .find(|(k, _)| keys.iter().any(|key| k.eq_ignore_ascii_case(key)))
            .map(|(_, v)| v)
    };
    let name = match find(&["name", "metricName", "metric"])? {
        Node::String(s) => s.clone(),
        _ => return None,
    };
    match find(&["value"])? {
        Node::Number(n) => Some((name, *n)),
        _ => None,
    }
}

/// A JSON value whose objects keep their members in the text's order (a
/// `serde_json::Value` sorts them).
enum Node {
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    String(String),
    Number(f64),
    /// true, false, null.
    Other,
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> serde::de::Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Other)
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Other)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Number(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_owned()))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry()? {
            members.push(member);
        }
        Ok(Node::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(text: &str) -> Option<Vec<(String, f64)>> {
        json_numbers(text)
    }

    #[test]
    fn members_keep_their_order() {
        assert_eq!(
            owned(r#"{"Z": 1, "A": 2, "M": {"y": 3, "b": 4}}"#),
            Some(vec![
                ("Z".into(), 1.0),
                ("A".into(), 2.0),
                ("y".into(), 3.0),
                ("b".into(), 4.0)
            ])
        );
    }

    #[test]
    fn flat_objects_give_their_numbers() {
        assert_eq!(
            owned(r#"{"GR Active": 12, "SM Active": 8.5, "Name": "x", "ok": true}"#),
            Some(vec![("GR Active".into(), 12.0), ("SM Active".into(), 8.5)])
        );
    }

    #[test]
    fn nested_and_name_value_forms_are_read() {
        assert_eq!(
            owned(r#"{"metrics": [{"name": "DRAM \"Read\"", "value": 3}], "v": {"A\u0041": "4"}}"#),
            Some(vec![("DRAM \"Read\"".into(), 3.0), ("AA".into(), 4.0)])
        );
    }

    #[test]
    fn bad_json_is_refused_without_panicking() {
        for text in [
            "",
            "[1]",
            "{",
            r#"{"a":}"#,
            r#"{"a":1} x"#,
            r#"{"a":"\u12"}"#,
            "{\"é\\",
        ] {
            assert_eq!(owned(text), None, "{text}");
        }
        // serde_json refuses nesting beyond 128 levels.
        let deep = "{\"a\":".repeat(200) + "1" + &"}".repeat(200);
        assert_eq!(owned(&deep), None);
    }

    #[test]
    fn type_ids_carry_gpu_and_source() {
        let type_id = (1i64 << 48) | (7 << 32) | (3 << 8) | 2;
        assert_eq!(gpu_of_type(type_id), 2);
        assert_eq!(source_of_type(type_id), 7);
    }

    #[test]
    fn sources_are_recognised_by_name() {
        assert!(names_gpu_metrics(r#"{"Name":"GpuMetrics","Version":1}"#));
        assert!(names_gpu_metrics("GPU Metrics"));
        assert!(!names_gpu_metrics(r#"{"Name":"FTrace"}"#));
    }
}
