//! Network counters and events, on rows under the report's first process (lowest
//! pid with events; they describe the node, not a process):
//!
//! * NIC counters (`NET_NIC_METRIC`) on one "NIC<n> counters" row per network
//!   interface. `<n>` is the NIC's `nicId` (through `NIC_ID_MAP`), or, without
//!   the map, the NIC's index among the report's NICs in `globalId` order.
//! * InfiniBand switch counters (`NET_IB_SWITCH_METRIC`) and congestion events
//!   (`NET_IB_SWITCH_CONGESTION_EVENT`) on one "IB switch<n> counters" row per
//!   switch. `<n>` is the switch's index in `NET_IB_DEVICE_INFO` (by `guid`,
//!   taken to be the rows' `globalId`); switches that table does not list come
//!   after, in the order the tables name them.
//!
//! Each sample is a counter event at its start, valued for [start, end]. NIC
//! counters of port 1 are numbered as BSC nsys2prv 0.6 numbers them, `9500 +
//! metricsIdx`, so that its views (`eth-bytes-sent.cfg`, `ib-packets-recv.cfg`,
//! …) read them (`--metric-types bsc`, the default, when the job allows it: see
//! [`crate::metric_sets`]). Otherwise types are keyed by metric name
//! (`TARGET_INFO_NETWORK_METRICS`), the same in every trace: NIC counters
//! 66700000 + 1 + FNV-1a(name) mod 997, switch counters 66710000 + 1 +
//! FNV-1a(name) mod 997 (a name that lands on a number another name of the
//! report took moves to the next free one, with a warning); the label carries
//! the unit. NIC ports other than 1 get their own types, named `<metric> (port
//! N)` and keyed by name (BSC puts every port on one type); switch counters
//! always carry their port. Negative values are written as 0 and counted
//! (counters are never negative; pertalde rejects them).
//!
//! A congestion event is a point event 66701001 valued by its congestion type
//! (labelled from `ENUM_NET_IB_CONGESTION_EVENT_TYPE`), with the packet that saw
//! it in 66701002–66701009 (source and destination LID, service level, operation
//! code, source and destination queue pair, ingress and egress port; NULL or
//! negative fields are left out).

use std::collections::{BTreeMap, HashMap};

use nsys_reader::network::{
    NetworkMetric, NicSample, BUILTIN_CONGESTION_TYPES, IB_CONGESTION, IB_CONGESTION_TYPES,
    IB_SWITCH_METRIC, NIC_METRIC,
};
use nsys_reader::{enums, ReadError};
use paraver_writer::{EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{ReportContext, ThreadKey, ThreadKind};
use crate::types::{level, point, HashedTypes};
use crate::view::bundled_view;
use crate::view::{metric_name, TypeFamily};

pub const NIC_COUNTERS_FIRST: u32 = 66_700_000;
/// BSC's numbering of NIC counters: 9500 + the counter's index in its list.
pub const NIC_COUNTERS_BSC_FIRST: u32 = 9500;
/// Indexes BSC's numbering holds here (9500–9519: NCCL's kernel fields follow).
const NIC_COUNTERS_BSC_SLOTS: i64 = 20;
pub const IB_CONGESTION_EVENT: u32 = 66_701_001;
/// Packet fields of a congestion event, in `CONGESTION_FIELDS` order.
pub const IB_CONGESTION_FIELDS_FIRST: u32 = 66_701_002;
pub const IB_SWITCH_COUNTERS_FIRST: u32 = 66_710_000;
const SLOTS: u32 = 997;

const FIELD_LABELS: [&str; 8] = [
    "IB congestion packet source LID",
    "IB congestion packet destination LID",
    "IB congestion packet service level",
    "IB congestion packet operation code",
    "IB congestion packet source QP",
    "IB congestion packet destination QP",
    "IB congestion switch ingress port",
    "IB congestion switch egress port",
];

pub const NETWORK: Category = Category::named("network");

/// The counter of a NIC counter type, from its label: `NIC Bytes sent [bytes]`
/// by name, `Bytes sent [bytes]` in BSC's numbering (9500 + index; the NCCL
/// types there are labelled `NCCL …`, and a counter replaces them only in a
/// trace without NCCL ranges).
fn nic_counter_name(ty: u32, label: &str) -> Option<String> {
    let bsc = NIC_COUNTERS_BSC_FIRST..NIC_COUNTERS_BSC_FIRST + NIC_COUNTERS_BSC_SLOTS as u32;
    if bsc.contains(&ty) {
        return (!label.starts_with("NCCL ")).then(|| label.to_string());
    }
    (NIC_COUNTERS_FIRST + 1..=NIC_COUNTERS_FIRST + SLOTS)
        .contains(&ty)
        .then(|| metric_name(label, "NIC "))?
}

/// The counter of an IB switch counter type, from its label.
fn ib_switch_counter_name(ty: u32, label: &str) -> Option<String> {
    (IB_SWITCH_COUNTERS_FIRST + 1..=IB_SWITCH_COUNTERS_FIRST + SLOTS)
        .contains(&ty)
        .then(|| metric_name(label, "IB switch "))?
}

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: NETWORK,
    aliases: &["nic-metrics", "nic", "ib-switch"],
    bsc_names: &["nic_metrics"],
    groups: &[],
    tables: &[
        "NET_NIC_METRIC",
        "NET_IB_SWITCH_METRIC",
        "NET_IB_SWITCH_CONGESTION_EVENT",
    ],
    table_prefixes: &[],
    bytes_per_row: 50,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/ib_congestion.cfg",
            "When do the InfiniBand switches report congestion, and of which kind?",
        ),
        bundled_view!(
            "templates/nic_counter.cfg",
            "How does the NIC counter {name} change over time?",
            TypeFamily {
                dir: "views/nic_counters",
                name_of: nic_counter_name,
                numbered: true,
            },
        ),
        bundled_view!(
            "templates/ib_switch_counter.cfg",
            "How does the InfiniBand switch counter {name} change over time?",
            TypeFamily {
                dir: "views/ib_switch_counters",
                name_of: ib_switch_counter_name,
                numbered: true,
            },
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::DeviceRows,
        run: translate,
        also_for: &[],
    }),
};

/// Congestion events and their packet fields are instants; the counters
/// (declared per report) hold until the next sample.
fn event_types() -> Vec<EventTypeInfo> {
    let mut types = vec![point(
        IB_CONGESTION_EVENT,
        "IB switch congestion event",
        ValueLabels::Names,
    )];
    types.extend(
        (IB_CONGESTION_FIELDS_FIRST..)
            .zip(FIELD_LABELS)
            .map(|(ty, label)| point(ty, label, ValueLabels::Numeric)),
    );
    types
}

/// Counter types of one kind of device (NICs or switches), per report.
struct CounterTypes {
    hashed: HashedTypes,
    /// Label prefix: `NIC` or `IB switch`.
    prefix: &'static str,
    /// Whether port 1 is named too (switches: every port).
    name_every_port: bool,
    /// Port 1's counters numbered by index as BSC does (NICs, `--metric-types bsc`).
    by_index: bool,
    by_key: FxHashMap<(i64, i64, i64), Option<u32>>,
}

impl CounterTypes {
    fn new(first: u32, prefix: &'static str, name_every_port: bool, by_index: bool) -> Self {
        CounterTypes {
            hashed: HashedTypes::new(first, SLOTS),
            prefix,
            name_every_port,
            by_index,
            by_key: FxHashMap::default(),
        }
    }

    /// The type of metric (list, index) on `port`; `None` when every type is taken.
    fn resolve(
        &mut self,
        ctx: &mut ReportContext,
        metrics: &HashMap<(i64, i64), NetworkMetric>,
        (list, index, port): (i64, i64, i64),
    ) -> Option<u32> {
        if let Some(&t) = self.by_key.get(&(list, index, port)) {
            return t;
        }
        let (name, unit) = match metrics.get(&(list, index)) {
            Some(m) => (m.name.clone(), m.unit.clone()),
            None => (
                format!("{} metric {list}.{index}", self.prefix),
                String::new(),
            ),
        };
        let name = if port > 1 || self.name_every_port {
            format!("{name} (port {port})")
        } else {
            name
        };
        // The job's counter sets were checked ([`crate::metric_sets`]): indexes
        // are below 20. Labelled exactly as BSC does (`name [unit]`): Paraver
        // finds a view's event type by its label in the `.pcf` first.
        let ty = if self.by_index && port <= 1 && (0..NIC_COUNTERS_BSC_SLOTS).contains(&index) {
            let ty = NIC_COUNTERS_BSC_FIRST + index as u32;
            if ctx.extra_types.iter().all(|e| e.ty != ty) {
                ctx.extra_types
                    .push(level(ty, &format!("{name} [{unit}]"), ValueLabels::Numeric));
            }
            Some(ty)
        } else {
            self.type_of(ctx, &name, unit.trim())
        };
        self.by_key.insert((list, index, port), ty);
        ty
    }

    fn type_of(&mut self, ctx: &mut ReportContext, name: &str, unit: &str) -> Option<u32> {
        let path = ctx.export.path().display().to_string();
        let Some(found) = self.hashed.resolve(name) else {
            ctx.warnings.push(format!(
                "{path}: {} metric '{name}' left out: all {SLOTS} types are taken",
                self.prefix
            ));
            return None;
        };
        if let Some(other) = &found.displaced_by {
            ctx.warnings.push(format!(
                "{path}: {} metric '{name}' hashes like '{other}'; it takes the next free type",
                self.prefix
            ));
        }
        self.declare(ctx, found.ty, name, unit);
        Some(found.ty)
    }

    /// Declares counter type `ty` for the report, once, labelled with its name and unit.
    fn declare(&self, ctx: &mut ReportContext, ty: u32, name: &str, unit: &str) {
        let label = format!(
            "{} {}",
            self.prefix,
            crate::metric_values::counter_name(name, unit)
        );
        if ctx.extra_types.iter().all(|e| e.ty != ty) {
            ctx.extra_types
                .push(level(ty, &label, ValueLabels::Numeric));
        }
    }
}

/// A counter value as written: negative values become 0 (counted).
fn counter_value(value: i64, clamped: &mut u64) -> i64 {
    if value < 0 {
        *clamped += 1;
        0
    } else {
        value
    }
}

/// The process that owns the node's network rows, or a warning why there is none.
fn owner(ctx: &mut ReportContext, table: &str) -> Option<u32> {
    let owner = ctx.thread_keys.iter().map(|k| k.pid).min();
    if owner.is_none() {
        ctx.warnings.push(format!(
            "{}: {table} left out: the report has no process to put the node's network rows under",
            ctx.export.path().display()
        ));
    }
    owner
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let tables = [NIC_METRIC, IB_SWITCH_METRIC, IB_CONGESTION];
    let Some(first) = tables.into_iter().find(|t| export.has_table(t)) else {
        return Ok(());
    };
    let Some(owner) = owner(ctx, first) else {
        return Ok(());
    };
    let metrics = export.network_metrics()?;
    nic_counters(ctx, owner, &metrics)?;
    let mut switches = Switches::read(ctx, owner)?;
    switch_counters(ctx, &mut switches, &metrics)?;
    congestion_events(ctx, &mut switches)
}

fn nic_counters(
    ctx: &mut ReportContext,
    owner: u32,
    metrics: &HashMap<(i64, i64), NetworkMetric>,
) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(NIC_METRIC) {
        return Ok(());
    }
    let nic_ids = export.nic_ids()?;
    let nic_names = export.nic_names()?;
    // Without NIC_ID_MAP, NICs are numbered by their globalId order: that needs
    // the distinct globalIds first (a handful).
    let mut dense: BTreeMap<i64, u32> = BTreeMap::new();
    if nic_ids.is_empty() {
        export.nic_samples(|s| {
            dense.insert(s.global_id, 0);
            Ok(())
        })?;
        for (i, v) in dense.values_mut().enumerate() {
            *v = i as u32;
        }
    }
    let by_index = ctx.options.nic_metric_types == crate::options::MetricTypes::Bsc;
    let mut types = CounterTypes::new(NIC_COUNTERS_FIRST, "NIC", false, by_index);
    let mut rows: FxHashMap<i64, LocalThread> = FxHashMap::default();
    let mut tally = Tally::default();
    let scan = export.nic_samples(|s| {
        if !ctx.within_limits(s.start, s.end) {
            return Ok(());
        }
        let thread = *rows.entry(s.global_id).or_insert_with(|| {
            let nic = nic_ids
                .get(&s.global_id)
                .map(|&n| n as u32)
                .or_else(|| dense.get(&s.global_id).copied())
                .unwrap_or(0);
            let key = ThreadKey {
                pid: owner,
                kind: ThreadKind::Nic { nic },
            };
            if let Some(name) = nic_names.get(&i64::from(nic)) {
                ctx.row_labels.insert(key, name.clone());
            }
            ctx.thread(key)
        });
        tally.sample(ctx, &mut types, metrics, thread, s);
        Ok(())
    })?;
    tally.record(ctx, NIC_METRIC, "NIC");
    if tally.written > 0 {
        ctx.count(NIC_METRIC, tally.written);
    }
    ctx.note_skipped(NIC_METRIC, scan.skipped);
    Ok(())
}

/// Samples written as they are, and samples changed or dropped on the way.
#[derive(Default)]
struct Tally {
    written: u64,
    clamped: u64,
    untyped: u64,
}

impl Tally {
    fn sample(
        &mut self,
        ctx: &mut ReportContext,
        types: &mut CounterTypes,
        metrics: &HashMap<(i64, i64), NetworkMetric>,
        thread: LocalThread,
        s: &NicSample,
    ) {
        let Some(ty) = types.resolve(ctx, metrics, (s.list_id, s.index, s.port)) else {
            self.untyped += 1;
            return;
        };
        let value = counter_value(s.value, &mut self.clamped);
        self.written += 1;
        ctx.run
            .events(thread, s.start, &[EventPair::raw(ty, value)]);
    }

    fn record(&self, ctx: &mut ReportContext, table: &str, prefix: &str) {
        if self.clamped > 0 {
            ctx.count(
                &format!("{prefix} metric negative values written as 0"),
                self.clamped,
            );
        }
        if self.untyped > 0 {
            ctx.count(
                &format!("{table} samples without a free type"),
                self.untyped,
            );
        }
    }
}

/// The report's IB switches: `globalId` → row number, and their rows.
struct Switches {
    owner: u32,
    numbers: FxHashMap<i64, u32>,
    names: BTreeMap<i64, String>,
    next: u32,
    rows: FxHashMap<i64, LocalThread>,
}

impl Switches {
    fn read(ctx: &ReportContext, owner: u32) -> Result<Self, ReadError> {
        let known: BTreeMap<i64, String> = ctx.export.ib_device_names()?.into_iter().collect();
        let numbers: FxHashMap<i64, u32> = known.keys().zip(0..).map(|(&g, n)| (g, n)).collect();
        Ok(Switches {
            owner,
            next: numbers.len() as u32,
            numbers,
            names: known,
            rows: FxHashMap::default(),
        })
    }

    fn thread(&mut self, ctx: &mut ReportContext, global_id: i64) -> LocalThread {
        if let Some(&t) = self.rows.get(&global_id) {
            return t;
        }
        let switch = *self.numbers.entry(global_id).or_insert_with(|| {
            self.next += 1;
            self.next - 1
        });
        let key = ThreadKey {
            pid: self.owner,
            kind: ThreadKind::IbSwitch { switch },
        };
        if let Some(name) = self.names.get(&global_id) {
            ctx.row_labels.insert(key, name.clone());
        }
        let t = ctx.thread(key);
        self.rows.insert(global_id, t);
        t
    }
}

fn switch_counters(
    ctx: &mut ReportContext,
    switches: &mut Switches,
    metrics: &HashMap<(i64, i64), NetworkMetric>,
) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(IB_SWITCH_METRIC) {
        return Ok(());
    }
    let mut types = CounterTypes::new(IB_SWITCH_COUNTERS_FIRST, "IB switch", true, false);
    let mut tally = Tally::default();
    let scan = export.ib_switch_samples(|s| {
        if !ctx.within_limits(s.start, s.end) {
            return Ok(());
        }
        let thread = switches.thread(ctx, s.global_id);
        tally.sample(ctx, &mut types, metrics, thread, s);
        Ok(())
    })?;
    tally.record(ctx, IB_SWITCH_METRIC, "IB switch");
    if tally.written > 0 {
        ctx.count(IB_SWITCH_METRIC, tally.written);
    }
    ctx.note_skipped(IB_SWITCH_METRIC, scan.skipped);
    Ok(())
}

fn congestion_events(ctx: &mut ReportContext, switches: &mut Switches) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(IB_CONGESTION) {
        return Ok(());
    }
    let labels = enums::labels(export, IB_CONGESTION_TYPES, BUILTIN_CONGESTION_TYPES)?;
    let mut names: FxHashMap<Option<i64>, u32> = FxHashMap::default();
    let mut pairs: Vec<EventPair> = Vec::with_capacity(9);
    let mut negative_fields = 0u64;
    let scan = export.ib_congestion_events(|e| {
        if !ctx.within_limits(e.start, e.start) {
            return Ok(());
        }
        let name = *names.entry(e.congestion_type).or_insert_with(|| {
            let label = match e.congestion_type {
                Some(t) => labels
                    .get(&t)
                    .cloned()
                    .unwrap_or_else(|| format!("Congestion type {t}")),
                None => "Congestion of unknown type".to_string(),
            };
            ctx.run.names.intern(IB_CONGESTION_EVENT, &label)
        });
        pairs.clear();
        pairs.push(EventPair::name(IB_CONGESTION_EVENT, name));
        for (ty, field) in (IB_CONGESTION_FIELDS_FIRST..).zip(e.fields) {
            match field {
                Some(v) if v >= 0 => pairs.push(EventPair::raw(ty, v)),
                Some(_) => negative_fields += 1,
                None => {}
            }
        }
        let thread = switches.thread(ctx, e.global_id);
        ctx.run.events(thread, e.start, &pairs);
        Ok(())
    })?;
    if scan.kept() > 0 {
        ctx.count(IB_CONGESTION, scan.kept());
    }
    if negative_fields > 0 {
        ctx.count(
            "IB congestion negative packet fields left out",
            negative_fields,
        );
    }
    ctx.note_skipped(IB_CONGESTION, scan.skipped);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::expect;

    use super::*;
    use crate::cuda_api::API;
    use crate::testing::{records, translate, GLOBAL_PID};

    /// NIC samples go on the row of their NIC's `nicId` (through NIC_ID_MAP)
    /// under the report's process: port 1 in BSC's numbering (9500 + index),
    /// another port on a type of its own keyed by name; a negative value is 0.
    /// Switch samples and congestion events go on the row of their switch: its
    /// index in NET_IB_DEVICE_INFO, switches it does not list after; a congestion
    /// event carries its packet's fields, negative ones left out. The types
    /// declared on the way follow the records.
    #[test]
    fn nic_and_switch_rows_and_types() {
        let tid = GLOBAL_PID | 24_602;
        let translation = translate(
            &[API, NETWORK],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaFree_v2020');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (50, 60, 0, {tid}, 1, 90001, 0);
                 INSERT INTO TARGET_INFO_NETWORK_METRICS
                     (metricsListId, metricsIdx, name, description, unit)
                 VALUES (0, 3, 'Bytes sent', 'sent', 'bytes'),
                        (1, 0, 'Port xmit wait', 'wait', 'ticks');
                 INSERT INTO NIC_ID_MAP (nicId, globalId) VALUES (2, 1000);
                 INSERT INTO NET_NIC_METRIC
                     (start, end, globalId, portId, metricsListId, metricsIdx, value)
                 VALUES (100, 200, 1000, 1, 0, 3, 10), (100, 200, 1000, 2, 0, 3, 20),
                        (300, 400, 1000, 1, 0, 3, -5);
                 INSERT INTO NET_IB_DEVICE_INFO (networkId, guid, name, des, lid)
                 VALUES (1, 77, 'switch-a', 'a switch', 4);
                 INSERT INTO NET_IB_SWITCH_METRIC
                     (start, end, globalId, portId, metricsListId, metricsIdx, value)
                 VALUES (110, 210, 88, 5, 1, 0, 7), (120, 220, 77, 5, 1, 0, 8);
                 INSERT INTO NET_IB_SWITCH_CONGESTION_EVENT
                     (start, globalId, congestionType, packetSLID, packetDLID, packetSL,
                      packetOpCode, packetSourceQP, packetDestinationQP, switchIngressPort,
                      switchEgressPort)
                 VALUES (500, 77, NULL, 11, 12, 0, -1, NULL, 14, 3, 4);"
            ),
        );
        let mut text = records(&translation);
        for t in &translation.extra_types {
            writeln!(text, "type {} {}", t.ty, t.label).unwrap();
        }
        expect![[r#"
            50 24601.24602 63000000="cudaFree" 9200=1
            50 24601.24602 state 31 until 60
            60 24601.24602 end 63000000="cudaFree" 9200=1
            100 24601:Nic { nic: 2 } 9503=10
            100 24601:Nic { nic: 2 } 66700678=20
            110 24601:IbSwitch { switch: 1 } 66710127=7
            120 24601:IbSwitch { switch: 0 } 66710127=8
            300 24601:Nic { nic: 2 } 9503=0
            500 24601:IbSwitch { switch: 0 } 66701001="Congestion of unknown type" 66701002=11 66701003=12 66701004=0 66701007=14 66701008=3 66701009=4
            type 9503 Bytes sent [bytes]
            type 66700678 NIC Bytes sent (port 2) [bytes]
            type 66710127 IB switch Port xmit wait (port 5) [ticks]
        "#]].assert_eq(&text);
    }
}
