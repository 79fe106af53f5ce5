//! SoC metrics (Tegra, Grace: `--soc-metrics`), from `SOC_METRICS` named through
//! `TARGET_INFO_SOC_METRICS`: counter events on one "SoC<n> metrics" row per SoC
//! under the report's first process (lowest pid with events; the SoC is the
//! node's). `<n>` is `typeId & 0xFF`, read as for GPU metrics (NVIDIA documents
//! the low byte of a metrics type id as the GPU; for SoC metrics this is an
//! assumption).
//!
//! Types are keyed by metric name, in a range of their own: 66800000 + 1 +
//! FNV-1a(name in lower case) mod 997, labelled `SoC metric <name>` (a name that
//! lands on a number another name of the report took moves to the next free
//! one, with a warning). SoC metric sets (memory controller, CPU, C2C) differ
//! from the GPU sets and the 50 hashed GPU-metric types are few, so they do not
//! share the GPU metric types 9400–9499. Values are scaled as GPU metrics are:
//! percentages and averages ×100 (`x100` in the label), clocks read back as
//! unsigned 32 bits when negative, other negative values written as 0 (counted).

use nsys_reader::gpu_metrics::{gpu_of_type, SOC_METRICS, TARGET_INFO_SOC_METRICS};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::context::{ReportContext, ThreadKey, ThreadKind};
use crate::metric_values::{is_clock, normalize, scale_of, split_unit, MetricType, Tally};
use crate::types::{level, HashedTypes};

pub const SOC_METRICS_FIRST: u32 = 66_800_000;
const SOC_SLOTS: u32 = 997;

/// The metric of a SoC metric type, from its label.
pub(crate) fn metric_name(ty: u32, label: &str) -> Option<String> {
    (SOC_METRICS_FIRST + 1..=SOC_METRICS_FIRST + SOC_SLOTS)
        .contains(&ty)
        .then(|| crate::view::metric_name(label, "SoC metric "))?
}

/// The type of each recorded metric name, per report.
struct SocTypes {
    hashed: HashedTypes,
    by_name: FxHashMap<String, Option<MetricType>>,
}

impl SocTypes {
    fn resolve(&mut self, ctx: &mut ReportContext, name: &str) -> Option<MetricType> {
        if let Some(&t) = self.by_name.get(name) {
            return t;
        }
        let t = self.hashed_type(ctx, name);
        self.by_name.insert(name.to_string(), t);
        t
    }

    fn hashed_type(&mut self, ctx: &mut ReportContext, name: &str) -> Option<MetricType> {
        let (base, unit) = split_unit(name);
        let key = match unit {
            Some(u) => format!("{} [{}]", normalize(base), normalize(u)),
            None => normalize(base),
        };
        let path = ctx.export.path().display().to_string();
        let Some(found) = self.hashed.resolve(&key) else {
            ctx.warnings.push(format!(
                "{path}: SoC metric '{name}' left out: all {SOC_SLOTS} types are taken"
            ));
            return None;
        };
        if let Some(other) = &found.displaced_by {
            ctx.warnings.push(format!(
                "{path}: SoC metric '{name}' hashes like '{other}'; it takes the next free type"
            ));
        }
        let t = MetricType {
            ty: found.ty,
            scale: scale_of(unit),
            clock: is_clock(base),
        };
        let label = if t.scale == 1 {
            format!("SoC metric {}", name.trim())
        } else {
            format!("SoC metric {} x{}", name.trim(), t.scale)
        };
        if ctx.extra_types.iter().all(|e| e.ty != t.ty) {
            ctx.extra_types
                .push(level(t.ty, &label, ValueLabels::Numeric));
        }
        Some(t)
    }
}

/// Samples of one time on one row, written as one event record.
#[derive(Default)]
struct Pending {
    at: Option<(i64, LocalThread, i64)>,
    pairs: Vec<EventPair>,
}

impl Pending {
    fn add(&mut self, ctx: &mut ReportContext, key: (i64, LocalThread, i64), pair: EventPair) {
        if self.at != Some(key) {
            self.flush(ctx);
            self.at = Some(key);
        }
        self.pairs.push(pair);
    }

    fn flush(&mut self, ctx: &mut ReportContext) {
        if let Some((time, thread, _)) = self.at.take() {
            ctx.run.events(thread, time, &self.pairs);
        }
        self.pairs.clear();
    }
}

pub(crate) fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(SOC_METRICS) {
        return Ok(());
    }
    let Some(owner) = ctx.thread_keys.iter().map(|k| k.pid).min() else {
        ctx.warnings.push(format!(
            "{}: {SOC_METRICS} left out: the report has no process to put the SoC rows under",
            export.path().display()
        ));
        return Ok(());
    };
    let names = export.soc_metric_names()?;
    let mut types = SocTypes {
        hashed: HashedTypes::new(SOC_METRICS_FIRST, SOC_SLOTS),
        by_name: FxHashMap::default(),
    };
    let mut by_id: FxHashMap<(i64, i64), Option<MetricType>> = FxHashMap::default();
    let mut rows: FxHashMap<u32, LocalThread> = FxHashMap::default();
    let mut pending = Pending::default();
    let mut tally = Tally::default();
    let (mut written, mut unnamed, mut untyped) = (0u64, 0u64, 0u64);
    let scan = export.soc_metrics(|m| {
        if !ctx.within_limits(m.timestamp, m.timestamp) {
            return Ok(());
        }
        let t = *by_id.entry((m.type_id, m.metric_id)).or_insert_with(|| {
            let name = names.get(&(m.type_id, m.metric_id)).cloned();
            let name = name.unwrap_or_else(|| {
                unnamed += 1;
                format!("Unnamed SoC metric {}", m.metric_id)
            });
            types.resolve(ctx, &name)
        });
        let Some(t) = t else {
            untyped += 1;
            return Ok(());
        };
        let soc = gpu_of_type(m.type_id);
        let thread = *rows.entry(soc).or_insert_with(|| {
            ctx.thread(ThreadKey {
                pid: owner,
                kind: ThreadKind::SocMetrics { soc },
            })
        });
        let pair = EventPair::raw(t.ty, tally.int(m.value, t));
        pending.add(ctx, (m.timestamp, thread, m.type_id), pair);
        written += 1;
        Ok(())
    })?;
    pending.flush(ctx);
    ctx.count(SOC_METRICS, written);
    tally.record(ctx, "SoC");
    if unnamed > 0 {
        ctx.warnings.push(format!(
            "{}: {unnamed} SoC metrics have no name in {TARGET_INFO_SOC_METRICS}; they are named by their metric id",
            export.path().display()
        ));
    }
    if untyped > 0 {
        ctx.count("SoC metric samples without a free type", untyped);
    }
    ctx.note_skipped(SOC_METRICS, scan.skipped);
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use crate::cuda_api::API;
    use crate::gpu_metrics::GPU_METRICS_CATEGORY;
    use crate::testing::{check, GLOBAL_PID};

    /// Samples of one time and SoC are one record on the SoC's row (`typeId & 0xFF`)
    /// under the report's process; each metric name has its hashed type in
    /// 66800001..=66800997; percentages are ×100, a negative clock is read as
    /// unsigned 32 bits, another negative value is 0; a metric without a name in
    /// TARGET_INFO_SOC_METRICS is named by its id, with a warning.
    #[test]
    fn samples_become_scaled_counters_on_the_socs_row() {
        let tid = GLOBAL_PID | 24_602;
        check(
            &[API, GPU_METRICS_CATEGORY],
            &format!(
                "INSERT INTO StringIds VALUES (90001, 'cudaFree_v2020');
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                     (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
                 VALUES (50, 60, 0, {tid}, 1, 90001, 0);
                 INSERT INTO TARGET_INFO_SOC_METRICS (typeId, sourceId, typeName, metricId, metricName)
                 VALUES (1, 0, 'SoC', 1, 'DRAM Read Bandwidth [%]'),
                        (1, 0, 'SoC', 2, 'CPU Clock Frequency [MHz]');
                 INSERT INTO SOC_METRICS (rawTimestamp, timestamp, typeId, metricId, value)
                 VALUES (1, 100, 1, 1, 42), (1, 100, 1, 2, -1294967296), (1, 100, 1, 3, 5),
                        (2, 200, 1, 1, -3);"
            ),
            expect![[r#"
                50 24601.24602 63000000="cudaFree" 9200=1
                50 24601.24602 state 31 until 60
                60 24601.24602 end 63000000="cudaFree" 9200=1
                100 24601:SocMetrics { soc: 1 } 66800406=4200 66800841=3000000000 66800694=5
                200 24601:SocMetrics { soc: 1 } 66800406=0
                warning: FIXTURE: 1 SoC metrics have no name in TARGET_INFO_SOC_METRICS; they are named by their metric id
            "#]],
        );
    }
}
