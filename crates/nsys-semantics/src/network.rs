//! NIC counters (`NET_NIC_METRIC`) on one "NIC<n> counters" row per network
//! interface, under the report's first process (lowest pid with events; the
//! counters describe the node, not a process). `<n>` is the NIC's `nicId`
//! (through `NIC_ID_MAP`), or, without the map, the NIC's index among the
//! report's NICs in `globalId` order.
//!
//! Each sample is a counter event at its start, valued for [start, end]. Types
//! are keyed by metric name, the same in every trace: 66700000 + 1 +
//! FNV-1a(name) mod 997 (a name that lands on a number another name of the
//! report took moves to the next free one, with a warning); the label carries
//! the unit from `TARGET_INFO_NETWORK_METRICS`. Ports other than 1 of a NIC get
//! their own types, named `<metric> (port N)`. Negative values are written as 0
//! and counted (counters are never negative; pertalde rejects them).

use std::collections::BTreeMap;

use nsys_reader::network::{NetworkMetric, NIC_METRIC};
use nsys_reader::ReadError;
use paraver_writer::names::stable_hash;
use paraver_writer::{EventPair, EventTypeInfo, LocalThread};
use rustc_hash::FxHashMap;

use crate::catalog::numeric;
use crate::context::{ReportContext, ThreadKey, ThreadKind};

pub const NIC_COUNTERS_FIRST: u32 = 66_700_000;
const NIC_SLOTS: u32 = 997;

pub(crate) fn event_types() -> Vec<EventTypeInfo> {
    Vec::new()
}

/// Metric key (name, port) → type, per report.
#[derive(Default)]
struct NicTypes {
    by_key: FxHashMap<(i64, i64, i64), u32>,
    slots: BTreeMap<u32, String>,
}

impl NicTypes {
    fn resolve(
        &mut self,
        ctx: &mut ReportContext,
        metrics: &std::collections::HashMap<(i64, i64), NetworkMetric>,
        (list, index, port): (i64, i64, i64),
    ) -> u32 {
        if let Some(&t) = self.by_key.get(&(list, index, port)) {
            return t;
        }
        let (name, unit) = match metrics.get(&(list, index)) {
            Some(m) => (m.name.clone(), m.unit.clone()),
            None => (format!("NIC metric {list}.{index}"), String::new()),
        };
        let name = if port > 1 {
            format!("{name} (port {port})")
        } else {
            name
        };
        let home = (stable_hash(&name) % u64::from(NIC_SLOTS)) as u32;
        let slot = (0..NIC_SLOTS)
            .map(|i| (home + i) % NIC_SLOTS)
            .find(|s| self.slots.get(s).is_none_or(|taken| *taken == name))
            .unwrap_or(home);
        if slot != home {
            ctx.warnings.push(format!(
                "{}: NIC metric '{name}' hashes like '{}'; it takes the next free type",
                ctx.export.path().display(),
                self.slots[&home]
            ));
        }
        self.slots.insert(slot, name.clone());
        let ty = NIC_COUNTERS_FIRST + 1 + slot;
        let label = if unit.trim().is_empty() {
            format!("NIC {name}")
        } else {
            format!("NIC {name} [{}]", unit.trim())
        };
        if ctx.extra_types.iter().all(|e| e.ty != ty) {
            ctx.extra_types.push(numeric(ty, &label));
        }
        self.by_key.insert((list, index, port), ty);
        ty
    }
}

pub(crate) fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(NIC_METRIC) {
        return Ok(());
    }
    let Some(owner) = ctx.thread_keys.iter().map(|k| k.pid).min() else {
        ctx.warnings.push(format!(
            "{}: {NIC_METRIC} left out: the report has no process to put the node's NIC rows under",
            export.path().display()
        ));
        return Ok(());
    };
    let metrics = export.network_metrics()?;
    let nic_ids = export.nic_ids()?;
    // Without NIC_ID_MAP, NICs are numbered by their globalId order: that needs
    // the distinct globalIds first (a handful).
    let mut dense: BTreeMap<i64, u32> = BTreeMap::new();
    if nic_ids.is_empty() {
        export.nic_samples(|s| {
            dense.insert(s.global_id, 0);
        })?;
        for (i, v) in dense.values_mut().enumerate() {
            *v = i as u32;
        }
    }
    let mut types = NicTypes::default();
    let mut rows: FxHashMap<i64, LocalThread> = FxHashMap::default();
    let mut clamped = 0u64;
    let scan = export.nic_samples(|s| {
        let thread = *rows.entry(s.global_id).or_insert_with(|| {
            let nic = nic_ids
                .get(&s.global_id)
                .map(|&n| n as u32)
                .or_else(|| dense.get(&s.global_id).copied())
                .unwrap_or(0);
            ctx.thread(ThreadKey {
                pid: owner,
                kind: ThreadKind::Nic { nic },
            })
        });
        let ty = types.resolve(ctx, &metrics, (s.list_id, s.index, s.port));
        let value = if s.value < 0 {
            clamped += 1;
            0
        } else {
            s.value
        };
        ctx.run
            .events(thread, s.start, &[EventPair::raw(ty, value)]);
    })?;
    if scan.rows > scan.skipped {
        ctx.count(NIC_METRIC, scan.rows - scan.skipped);
    }
    if clamped > 0 {
        ctx.count("NIC metric negative values written as 0", clamped);
    }
    ctx.note_skipped(NIC_METRIC, scan.skipped);
    Ok(())
}
