//! CPU core hardware counters (`nsys profile --cpu-core-events=... --event-sample`):
//!
//! * `PERF_EVENT_SOC_OR_CPU_RAW_EVENT`: one row per counter and sampling period
//!   of a component (a core, or a cache under it): the counter's increment over
//!   `[start, end)` in `count`. Older exports call the same table, with the
//!   same columns, `PERF_EVENT_CPU_RAW_EVENT`;
//! * `TARGET_INFO_PERF_METRIC`: the counters (`id`, `name`, `unit`, and from
//!   some version on a GUI name `displayName`);
//! * `TARGET_INFO_COMPONENT`: the components (`componentId`, `name` such as
//!   `Core` or `Cache`, `instance`, `parentId`).
//!
//! Columns from NVIDIA's SQLite schema reference (nsys 2026.4, schema 3.28.1,
//! and an earlier release for the older table name); no real export we have holds
//! these rows (nsys 2022.4 on a virtual machine records none: see
//! `docs/trace-contents.md`, CPU core counters).

use crate::query::Query;
use crate::{Export, ReadError, RowView, TableScan};

pub const RAW_EVENT: &str = "PERF_EVENT_SOC_OR_CPU_RAW_EVENT";
/// The table's name in older exports.
pub const OLD_RAW_EVENT: &str = "PERF_EVENT_CPU_RAW_EVENT";
pub const PERF_METRIC: &str = "TARGET_INFO_PERF_METRIC";
pub const COMPONENT: &str = "TARGET_INFO_COMPONENT";

/// One sample: the increment of counter `event` on `component` over `[start, end)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawCounterSample {
    pub start: i64,
    pub end: i64,
    pub component: i64,
    pub event: i64,
    pub count: i64,
}

/// A counter of `TARGET_INFO_PERF_METRIC`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfMetric {
    pub id: i64,
    /// `displayName` where the export has one, else `name`.
    pub name: String,
    pub unit: String,
}

/// A component of `TARGET_INFO_COMPONENT`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Component {
    pub id: i64,
    pub name: String,
    /// The instance number, as stored (nsys writes integers; text and reals are
    /// read as numbers where they are).
    pub instance: Option<f64>,
    pub parent: Option<i64>,
}

impl Export {
    /// The raw-counter table of this export, if it has one.
    pub fn raw_counter_table(&self) -> Option<&'static str> {
        [RAW_EVENT, OLD_RAW_EVENT]
            .into_iter()
            .find(|t| self.has_table(t))
    }

    /// Streams the raw counter samples in the order of their midpoints, `start +
    /// (end - start) / 2` (then table order): the samples of one sampling period
    /// come together (SQLite sorts them). Rows with NULL start, end, componentId,
    /// eventId or count are skipped (counted in the scan).
    pub fn raw_counter_samples(
        &self,
        f: impl FnMut(&RawCounterSample) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let Some(table) = self.raw_counter_table() else {
            return Ok(TableScan::default());
        };
        let cols = ["start", "end", "componentId", "eventId", "count"];
        let schema = self.schema();
        let list: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} AS c{i}", schema.column(table, None, c)))
            .collect();
        let query = Query {
            sql: format!(
                "SELECT {} FROM \"{table}\" ORDER BY c0 + (c1 - c0) / 2, rowid",
                list.join(", ")
            ),
            checked_times: 0,
            direct: None,
        };
        let decode = |row: &RowView| {
            Some(RawCounterSample {
                start: row.int(0)?,
                end: row.int(1)?,
                component: row.int(2)?,
                event: row.int(3)?,
                count: row.int(4)?,
            })
        };
        self.scan_query(table, &query, decode, f)
    }

    /// The counters, in table order (rows without an id are left out).
    pub fn perf_metrics(&self) -> Result<Vec<PerfMetric>, ReadError> {
        let mut metrics = Vec::new();
        self.scan(PERF_METRIC, &["id", "name", "unit", "displayName"], |row| {
            if let Some(id) = row.int(0) {
                let display = row.text(3).filter(|n| !n.trim().is_empty());
                metrics.push(PerfMetric {
                    id,
                    name: display.or_else(|| row.text(1)).unwrap_or_default(),
                    unit: row.text(2).unwrap_or_default(),
                });
            }
            Ok(())
        })?;
        Ok(metrics)
    }

    /// The components, in table order (rows without an id are left out).
    pub fn components(&self) -> Result<Vec<Component>, ReadError> {
        let mut components = Vec::new();
        self.scan(
            COMPONENT,
            &["componentId", "name", "instance", "parentId"],
            |row| {
                if let Some(id) = row.int(0) {
                    components.push(Component {
                        id,
                        name: row.text(1).unwrap_or_default(),
                        instance: row.float(2),
                        parent: row.int(3),
                    });
                }
                Ok(())
            },
        )?;
        Ok(components)
    }
}
