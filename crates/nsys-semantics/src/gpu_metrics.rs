//! GPU hardware metrics on one "GPU<n> metrics" row per GPU, under the process
//! that used the GPU: counter events (a value per sample, no end).
//!
//! Both representations are read: `GPU_METRICS` + `TARGET_INFO_GPU_METRICS`
//! (nsys 2024+) and the JSON samples of `GENERIC_EVENTS` (nsys 2021–2023).
//!
//! **Types** (`--metric-types`, decided for the whole job by
//! [`crate::metric_sets`]):
//!
//! * `bsc` (the default): `9400 + metricId`, the export's id, values as
//!   recorded, as BSC nsys2prv 0.6 writes them, so that its views
//!   (`sm_active.cfg`, `tensor_util_per_kernel-2dh.cfg`, …) read them. Ids are
//!   nsys's per GPU model: a job whose reports give one id two names, and the
//!   older exports (no ids), are numbered by name instead.
//! * `name`: one type per metric **name**, the same on every GPU model and in
//!   every trace. A built-in table of the metric names of the Turing/Ampere/Hopper
//!   metric sets gives 9400 + k (9400–9449). A name is matched without its case
//!   and without repeated blanks; a name without a `[unit]` (the 2021–2023 names)
//!   takes the first unit the table lists for it, and a few renamed metrics are
//!   aliases (`SM Active` = `SMs Active`, `DRAM Read Throughput` = `DRAM Read
//!   Bandwidth`). Any other name gets 9450 + FNV-1a(name) mod 50; a name that
//!   lands on a slot another name of the report took moves to the next free one
//!   (with a warning), and when the 50 are taken the samples are counted and
//!   dropped. Values are integers (BSC's pertalde rejects PRECISION in the
//!   `.pcf`): percentages and per-cycle averages are ×100 (`SMs Active
//!   [Throughput %] x100` holds 8750 for 87.5 %), other units as recorded.
//!
//! Types are declared per report, with the metric's name as label: the bare
//! name in BSC's numbering, as BSC writes it (Paraver finds a view's types by
//! their labels in the `.pcf` before their numbers), `GPU metric NAME` (plus
//! ` x100` when scaled) by name.
//!
//! **Values.** Negative values: clock frequencies are 32-bit values that
//! overflowed (NVIDIA stores some clocks in Hz) and are read back as unsigned 32
//! bits; any other negative value is written as 0 and counted. Samples taken
//! before the session started (negative timestamps) are left out and counted, as
//! BSC does: a sample's value covers the period that ends at its timestamp, so
//! they describe only time before the session, and keeping them would start the
//! trace before the session (every whole-run figure would count that time).
//!
//! **Rows.** The GPU of a sample is `typeId & 0xFF` (`TARGET_INFO_GPU.id`). Its
//! row belongs to the lowest pid, among the processes with events in the report,
//! that used the GPU: known exactly from `TARGET_INFO_CUDA_DEVICE` (nsys 2025+:
//! GPU id, CUDA ordinal, pid); otherwise from the contexts
//! (`TARGET_INFO_CUDA_CONTEXT_INFO` / `_NULL_STREAM`) and the GPU stream rows,
//! taking the CUDA ordinal for the GPU id (true without `CUDA_VISIBLE_DEVICES`).
//! Samples of a GPU no such process used are dropped and counted; when no process
//! of the report used any GPU (metrics without CUDA tracing), every GPU goes to
//! the report's first process.

use std::collections::BTreeMap;

use nsys_reader::gpu_metrics::{
    gpu_of_type, DeviceUse, GENERIC_EVENTS, GPU_METRICS, TARGET_INFO_GPU_METRICS,
};
use nsys_reader::{Export, ReadError};
use paraver_writer::names::stable_hash;
use paraver_writer::{EventPair, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{ReportContext, ThreadKey, ThreadKind};
use crate::kernels::KERNELS;
use crate::metric_values::{is_clock, normalize, scale_of, split_unit, MetricType, Tally};
use crate::soc_metrics;
use crate::types::level;
use crate::view::bundled_view;
use crate::view::{metric_name, TypeFamily};

pub const METRICS_FIRST: u32 = 9400;
/// 9400–9449: the built-in names; 9450–9499: other names, by hash.
const HASHED_FIRST: u32 = 9450;
const HASHED_SLOTS: u32 = 50;

pub const GPU_METRICS_CATEGORY: Category = Category::named("gpu-metrics");

/// GPU metrics, and SoC metrics ([`crate::soc_metrics`]).
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: GPU_METRICS_CATEGORY,
    aliases: &["metrics"],
    bsc_names: &["gpu_metrics"],
    groups: &[],
    tables: &["GPU_METRICS", "GENERIC_EVENTS", "SOC_METRICS"],
    table_prefixes: &[],
    bytes_per_row: 50,
    background_bytes_per_row: 0,
    launched: false,
    event_types: || Vec::new(),
    states: &[],
    views: &[
        bundled_view!(
            "templates/gpu_metric.cfg",
            "How does the GPU metric {name} change over time, per GPU?",
            TypeFamily {
                dir: "views/gpu_metrics",
                name_of: gpu_metric_name,
                numbered: true,
            },
        ),
        bundled_view!(
            "templates/gpu_metric_per_kernel.cfg",
            "What is the average GPU metric {name} while each kernel runs, per stream?",
            TypeFamily {
                dir: "analysis/gpu_metrics_per_kernel",
                name_of: gpu_metric_name,
                numbered: true,
            },
        )
        .on_gpu_streams()
        .needs(&[KERNELS]),
        bundled_view!(
            "templates/soc_metric.cfg",
            "How does the SoC metric {name} change over time?",
            TypeFamily {
                dir: "views/soc_metrics",
                name_of: soc_metrics::metric_name,
                numbered: true,
            },
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::DeviceRows,
        run: pass,
        also_for: &[],
    }),
};

/// The metric of a GPU metric type, from its label: `GPU metric NAME[ xSCALE]`
/// by name, the bare name in BSC's numbering.
fn gpu_metric_name(ty: u32, label: &str) -> Option<String> {
    if !(METRICS_FIRST..HASHED_FIRST + HASHED_SLOTS).contains(&ty) {
        return None;
    }
    metric_name(label, "GPU metric ").or_else(|| Some(label.to_string()))
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    translate(ctx)?;
    soc_metrics::translate(ctx)
}

/// A metric of the built-in table: its name as nsys 2024+ writes it, the unit
/// of its `[unit]` suffix, older names of the same metric, and its scale.
struct Known {
    name: &'static str,
    unit: &'static str,
    aliases: &'static [&'static str],
}

const PCT: &str = "Throughput %";
const AVG: &str = "Avg";
const PER_CYCLE: &str = "Avg Warps per Cycle";

/// The built-in metric names; k-th entry → type 9400 + k. Append only: the
/// numbers are part of every trace written.
const KNOWN: &[Known] = &[
    k("GPC Clock Frequency", "MHz", &[]),
    k("SYS Clock Frequency", "MHz", &[]),
    k("GR Active", PCT, &[]),
    k("GR Active", "Workloads", &[]),
    k("Sync Compute in Flight", PCT, &[]),
    k("Async Compute in Flight", PCT, &[]),
    k("SMs Active", PCT, &["SM Active"]),
    k("SM Issue", PCT, &[]),
    k("Tensor Active", PCT, &[]),
    k("Tensor Active / FP16 Active", PCT, &[]),
    k("Vertex/Tess/Geometry Warps in Flight", PCT, &[]),
    k("Vertex/Tess/Geometry Warps in Flight", AVG, &[]),
    k("Vertex/Tess/Geometry Warps in Flight", PER_CYCLE, &[]),
    k("Pixel Warps in Flight", PCT, &[]),
    k("Pixel Warps in Flight", AVG, &[]),
    k("Pixel Warps in Flight", PER_CYCLE, &[]),
    k("Compute Warps in Flight", PCT, &[]),
    k("Compute Warps in Flight", AVG, &[]),
    k("Compute Warps in Flight", PER_CYCLE, &[]),
    k("Unallocated Warps in Active SMs", PCT, &[]),
    k("Unallocated Warps in Active SMs", AVG, &[]),
    k("Unallocated Warps in Active SMs", PER_CYCLE, &[]),
    k("DRAM Read Bandwidth", PCT, &["DRAM Read Throughput"]),
    k("DRAM Write Bandwidth", PCT, &["DRAM Write Throughput"]),
    k("PCIe RX Throughput", PCT, &[]),
    k("PCIe TX Throughput", PCT, &[]),
    k("PCIe Read Requests to BAR1", "Requests", &[]),
    k("PCIe Write Requests to BAR1", "Requests", &[]),
    k("NVLink RX Responses User Data", PCT, &[]),
    k("NVLink RX Responses Protocol Data", PCT, &[]),
    k("NVLink RX Requests User Data", PCT, &[]),
    k("NVLink RX Requests Protocol Data", PCT, &[]),
    k("NVLink TX Responses User Data", PCT, &[]),
    k("NVLink TX Responses Protocol Data", PCT, &[]),
    k("NVLink TX Requests User Data", PCT, &[]),
    k("NVLink TX Requests Protocol Data", PCT, &[]),
    k("NVLink RX Throughput", PCT, &[]),
    k("NVLink TX Throughput", PCT, &[]),
    k("Sync Copy Engine Active", PCT, &[]),
    k("Sync Copy Engine Active", "Workloads", &[]),
    k("Async Copy Engine Active 0", PCT, &[]),
    k("Async Copy Engine Active 0", "Workloads", &[]),
    k("Async Copy Engine Active 1", PCT, &[]),
    k("Async Copy Engine Active 1", "Workloads", &[]),
    k("Async Copy Engine Active 2", PCT, &[]),
    k("Async Copy Engine Active 2", "Workloads", &[]),
    k("Dispatch Started", "Count", &[]),
    k("Draw Started", "Count", &[]),
];

const fn k(name: &'static str, unit: &'static str, aliases: &'static [&'static str]) -> Known {
    Known {
        name,
        unit,
        aliases,
    }
}

/// The built-in entry a recorded name stands for.
fn known_index(name: &str) -> Option<usize> {
    let (base, unit) = split_unit(name);
    let base = normalize(base);
    let unit = unit.map(normalize);
    let base_matches = |known: &Known| {
        normalize(known.name) == base || known.aliases.iter().any(|a| normalize(a) == base)
    };
    match unit {
        Some(unit) => KNOWN
            .iter()
            .position(|known| base_matches(known) && normalize(known.unit) == unit),
        None => KNOWN.iter().position(base_matches),
    }
}

fn label(name: &str, scale: i64) -> String {
    if scale == 1 {
        format!("GPU metric {name}")
    } else {
        format!("GPU metric {name} x{scale}")
    }
}

fn known_type(index: usize) -> MetricType {
    let known = &KNOWN[index];
    MetricType {
        ty: METRICS_FIRST + index as u32,
        scale: scale_of(Some(known.unit)),
        clock: is_clock(known.name),
    }
}

/// The metric types of one report: by metric id (BSC's numbering), or by name
/// (built-in, or hashed for other names). Each type is declared, with its label,
/// the first time the report uses it; samples hold until the next one.
pub(crate) struct MetricTypes {
    numbering: crate::options::MetricTypes,
    by_name: FxHashMap<String, Option<MetricType>>,
    /// Hashed slot → the normalized name that took it.
    slots: BTreeMap<u32, String>,
}

impl MetricTypes {
    fn new(numbering: crate::options::MetricTypes) -> Self {
        MetricTypes {
            numbering,
            by_name: FxHashMap::default(),
            slots: BTreeMap::new(),
        }
    }

    /// The type of metric `id` (of `GPU_METRICS`) named `name`: `9400 + id` in
    /// BSC's numbering, else by name.
    pub fn resolve_id(
        &mut self,
        ctx: &mut ReportContext,
        id: i64,
        name: &str,
    ) -> Option<MetricType> {
        if self.numbering == crate::options::MetricTypes::Name {
            return self.resolve(ctx, name);
        }
        // The job's metric sets were checked ([`crate::metric_sets`]): ids are
        // 0..=99. Without that check, others are left out (counted by the caller).
        let id = u32::try_from(id)
            .ok()
            .filter(|&id| id < HASHED_FIRST + HASHED_SLOTS - METRICS_FIRST)?;
        let t = MetricType {
            ty: METRICS_FIRST + id,
            scale: 1,
            clock: is_clock(split_unit(name).0),
        };
        // Labelled exactly as BSC does, with the bare name: Paraver finds a
        // view's event type by its label in the `.pcf` first, so BSC's views
        // find the metric they name even where ids differ.
        declare(ctx, t.ty, name);
        Some(t)
    }

    /// The type of a recorded metric name; `None` when every hashed slot is taken.
    pub fn resolve(&mut self, ctx: &mut ReportContext, name: &str) -> Option<MetricType> {
        if let Some(&t) = self.by_name.get(name) {
            return t;
        }
        let t = match known_index(name) {
            Some(i) => {
                let t = known_type(i);
                let known = &KNOWN[i];
                declare(
                    ctx,
                    t.ty,
                    &label(&format!("{} [{}]", known.name, known.unit), t.scale),
                );
                Some(t)
            }
            None => self.hashed(ctx, name),
        };
        self.by_name.insert(name.to_string(), t);
        t
    }

    fn hashed(&mut self, ctx: &mut ReportContext, name: &str) -> Option<MetricType> {
        let (base, unit) = split_unit(name);
        let key = match unit {
            Some(u) => format!("{} [{}]", normalize(base), normalize(u)),
            None => normalize(base),
        };
        let home = (stable_hash(&key) % u64::from(HASHED_SLOTS)) as u32;
        let slot = (0..HASHED_SLOTS)
            .map(|i| (home + i) % HASHED_SLOTS)
            .find(|s| self.slots.get(s).is_none_or(|taken| *taken == key));
        let Some(slot) = slot else {
            ctx.warnings.push(format!(
                "{}: GPU metric '{name}' left out: the {HASHED_SLOTS} types for metrics outside the built-in table are taken",
                ctx.export.path().display()
            ));
            return None;
        };
        if slot != home {
            ctx.warnings.push(format!(
                "{}: GPU metric '{name}' hashes to type {} like '{}'; it takes type {}",
                ctx.export.path().display(),
                HASHED_FIRST + home,
                self.slots[&home],
                HASHED_FIRST + slot
            ));
        }
        self.slots.insert(slot, key);
        let t = MetricType {
            ty: HASHED_FIRST + slot,
            scale: scale_of(unit),
            clock: is_clock(base),
        };
        declare(ctx, t.ty, &label(name.trim(), t.scale));
        Some(t)
    }
}

/// Declares metric type `ty` for the report, once.
fn declare(ctx: &mut ReportContext, ty: u32, label: &str) {
    if ctx.extra_types.iter().all(|e| e.ty != ty) {
        ctx.extra_types.push(level(ty, label, ValueLabels::Numeric));
    }
}

/// CUDA ordinal → physical GPU, per process.
#[derive(Default)]
pub(crate) struct DeviceMap {
    exact: FxHashMap<(u32, u32), u32>,
    uses: Vec<DeviceUse>,
}

impl DeviceMap {
    pub fn read(export: &Export) -> Result<Self, ReadError> {
        let uses = export.cuda_device_uses()?;
        let exact = uses
            .iter()
            .filter_map(|u| Some(((u.pid, u.cuda_id), u.gpu_id?)))
            .collect();
        Ok(DeviceMap { exact, uses })
    }

    /// The GPU a process's CUDA ordinal stands for (the ordinal itself when the
    /// export does not say).
    pub fn gpu_of(&self, pid: u32, cuda_id: u32) -> u32 {
        self.exact.get(&(pid, cuda_id)).copied().unwrap_or(cuda_id)
    }
}

/// Which process's row each GPU's samples go to.
struct Owners {
    by_gpu: BTreeMap<u32, u32>,
    /// Used for every GPU when no process of the report used one.
    fallback: Option<u32>,
}

impl Owners {
    fn find(ctx: &ReportContext, map: &DeviceMap) -> Owners {
        let mut by_gpu: BTreeMap<u32, u32> = BTreeMap::new();
        let mut claim = |gpu: u32, pid: u32| {
            let owner = by_gpu.entry(gpu).or_insert(pid);
            *owner = (*owner).min(pid);
        };
        for u in &map.uses {
            if ctx.has_process(u.pid) {
                claim(map.gpu_of(u.pid, u.cuda_id), u.pid);
            }
        }
        for key in &ctx.thread_keys {
            if let ThreadKind::Stream { device, .. } = key.kind {
                claim(map.gpu_of(key.pid, device), key.pid);
            }
        }
        let fallback = if by_gpu.is_empty() {
            ctx.thread_keys
                .iter()
                .map(|k| k.pid)
                .min()
                .or_else(|| map.uses.iter().map(|u| u.pid).min())
        } else {
            None
        };
        Owners { by_gpu, fallback }
    }

    fn owner(&self, gpu: u32) -> Option<u32> {
        self.by_gpu.get(&gpu).copied().or(self.fallback)
    }
}

/// Rows per GPU, resolved once per metrics typeId (`None`: nobody used the GPU).
struct Rows {
    owners: Owners,
    threads: FxHashMap<i64, Option<LocalThread>>,
    unowned: u64,
}

impl Rows {
    fn thread(&mut self, ctx: &mut ReportContext, type_id: i64) -> Option<LocalThread> {
        if let Some(&t) = self.threads.get(&type_id) {
            return t;
        }
        let gpu = gpu_of_type(type_id);
        let t = self.owners.owner(gpu).map(|pid| {
            ctx.thread(ThreadKey {
                pid,
                kind: ThreadKind::Metrics { device: gpu },
            })
        });
        self.threads.insert(type_id, t);
        t
    }
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(GPU_METRICS) && !export.has_table(GENERIC_EVENTS) {
        return Ok(());
    }
    let map = DeviceMap::read(export)?;
    let mut rows = Rows {
        owners: Owners::find(ctx, &map),
        threads: FxHashMap::default(),
        unowned: 0,
    };
    let mut types = MetricTypes::new(ctx.options.gpu_metric_types);
    let mut tally = Tally::default();
    current(ctx, &mut rows, &mut types, &mut tally)?;
    legacy(ctx, &mut rows, &mut types, &mut tally)?;
    tally.record(ctx, "GPU");
    if tally.before_session > 0 {
        ctx.count(
            "GPU metric samples before the session start left out",
            tally.before_session,
        );
    }
    if rows.unowned > 0 {
        let gpus: Vec<String> = rows
            .threads
            .iter()
            .filter(|(_, t)| t.is_none())
            .map(|(type_id, _)| gpu_of_type(*type_id))
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .map(|g| g.to_string())
            .collect();
        ctx.warnings.push(format!(
            "{}: {} GPU metric rows of GPU(s) {} left out: no traced process of the report used them",
            export.path().display(),
            rows.unowned,
            gpus.join(", ")
        ));
        ctx.count("GPU metric rows of unused GPUs", rows.unowned);
    }
    Ok(())
}

/// `GPU_METRICS`: one row per metric per sample. Rows of one sample usually come
/// together; those are written as one event record.
fn current(
    ctx: &mut ReportContext,
    rows: &mut Rows,
    types: &mut MetricTypes,
    tally: &mut Tally,
) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(GPU_METRICS) {
        return Ok(());
    }
    let names = export.gpu_metric_names()?;
    let mut by_id: FxHashMap<(i64, i64), Option<MetricType>> = FxHashMap::default();
    let mut pending: Option<(i64, LocalThread)> = None;
    let mut pending_type = i64::MIN;
    let mut pairs: Vec<EventPair> = Vec::with_capacity(32);
    let (mut written, mut unnamed, mut untyped) = (0u64, 0u64, 0u64);
    let scan = export.gpu_metrics(|m| {
        if m.timestamp < 0 {
            tally.before_session += 1;
            return Ok(());
        }
        if !ctx.within_limits(m.timestamp, m.timestamp) {
            return Ok(());
        }
        let Some(thread) = rows.thread(ctx, m.type_id) else {
            rows.unowned += 1;
            return Ok(());
        };
        let t = *by_id.entry((m.type_id, m.metric_id)).or_insert_with(|| {
            let name = match names.get(&(m.type_id, m.metric_id)) {
                Some(n) => n.clone(),
                None => {
                    unnamed += 1;
                    format!("Unnamed GPU metric {}", m.metric_id)
                }
            };
            types.resolve_id(ctx, m.metric_id, &name)
        });
        let Some(t) = t else {
            untyped += 1;
            return Ok(());
        };
        if pending != Some((m.timestamp, thread)) || pending_type != m.type_id {
            if let Some((time, thread)) = pending {
                ctx.run.events(thread, time, &pairs);
            }
            pairs.clear();
            pending = Some((m.timestamp, thread));
            pending_type = m.type_id;
        }
        pairs.push(EventPair::raw(t.ty, tally.int(m.value, t)));
        written += 1;
        Ok(())
    })?;
    if let Some((time, thread)) = pending {
        ctx.run.events(thread, time, &pairs);
    }
    ctx.count(GPU_METRICS, written);
    if unnamed > 0 {
        ctx.warnings.push(format!(
            "{}: {unnamed} GPU metrics have no name in {TARGET_INFO_GPU_METRICS}; they are named by their metric id",
            export.path().display()
        ));
    }
    if untyped > 0 {
        ctx.count("GPU metric samples without a free type", untyped);
    }
    ctx.note_skipped(GPU_METRICS, scan.skipped);
    Ok(())
}

/// `GENERIC_EVENTS`: one row per sample per GPU, the metrics as JSON.
fn legacy(
    ctx: &mut ReportContext,
    rows: &mut Rows,
    types: &mut MetricTypes,
    tally: &mut Tally,
) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(GENERIC_EVENTS) {
        return Ok(());
    }
    let metric_types = export.generic_metric_types()?;
    if !metric_types.known {
        ctx.warnings.push(format!(
            "{}: {GENERIC_EVENTS} left out: without GENERIC_EVENT_SOURCES its GPU metrics cannot be told from other events",
            export.path().display()
        ));
        return Ok(());
    }
    let mut pairs: Vec<EventPair> = Vec::with_capacity(32);
    let (mut samples, mut values, mut untyped) = (0u64, 0u64, 0u64);
    let scan = export.generic_gpu_metrics(&metric_types, |s| {
        if s.timestamp < 0 {
            tally.before_session += 1;
            return Ok(());
        }
        if !ctx.within_limits(s.timestamp, s.timestamp) {
            return Ok(());
        }
        let Some(thread) = rows.thread(ctx, s.type_id) else {
            rows.unowned += 1;
            return Ok(());
        };
        pairs.clear();
        for (name, value) in &s.values {
            match types.resolve(ctx, name) {
                Some(t) => pairs.push(EventPair::raw(t.ty, tally.float(*value, t))),
                None => untyped += 1,
            }
        }
        if !pairs.is_empty() {
            ctx.run.events(thread, s.timestamp, &pairs);
            samples += 1;
            values += pairs.len() as u64;
        }
        Ok(())
    })?;
    ctx.count(GENERIC_EVENTS, samples);
    ctx.count("GENERIC_EVENTS metric values", values);
    if scan.other_sources > 0 {
        ctx.count(
            "GENERIC_EVENTS of other sources ignored",
            scan.other_sources,
        );
    }
    if untyped > 0 {
        ctx.count("GPU metric samples without a free type", untyped);
    }
    ctx.note_skipped(GENERIC_EVENTS, scan.scan.skipped);
    Ok(())
}

/// The built-in table as (type, name [unit], scale), for the guide (`docs/trace-contents.md`) and tests.
#[cfg(test)]
pub fn builtin_table() -> Vec<(u32, String, i64)> {
    (0..KNOWN.len())
        .map(|i| {
            let t = known_type(i);
            (
                t.ty,
                format!("{} [{}]", KNOWN[i].name, KNOWN[i].unit),
                t.scale,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_their_builtin_type_with_or_without_unit() {
        let ty = |name: &str| known_index(name).map(|i| known_type(i).ty);
        assert_eq!(ty("SMs Active [Throughput %]"), Some(9406));
        assert_eq!(ty("SM Active"), Some(9406));
        assert_eq!(ty("sm  active [throughput %]"), Some(9406));
        assert_eq!(ty("Compute Warps In Flight"), Some(9416));
        assert_eq!(ty("Compute Warps in Flight [Avg]"), Some(9417));
        assert_eq!(ty("DRAM Read Throughput"), Some(9422));
        assert_eq!(ty("GPC Clock Frequency [MHz]"), Some(9400));
        assert_eq!(ty("SMs Active [Foo]"), None);
        assert_eq!(ty("NVDEC 0 Active"), None);
    }

    #[test]
    fn the_builtin_table_fits_its_range_and_names_are_unique() {
        assert!(KNOWN.len() <= (HASHED_FIRST - METRICS_FIRST) as usize);
        let mut seen = std::collections::HashSet::new();
        for k in KNOWN {
            assert!(
                seen.insert((normalize(k.name), normalize(k.unit))),
                "{}",
                k.name
            );
        }
    }

    #[test]
    fn the_guide_lists_the_builtin_table() {
        let guide = include_str!("../../../docs/trace-contents.md");
        for (ty, name, scale) in builtin_table() {
            let scaled = if scale == 1 {
                String::new()
            } else {
                format!(" x{scale}")
            };
            let cell = format!("| {ty} | {name}{scaled} |");
            assert!(guide.contains(&cell), "docs/trace-contents.md lacks {cell}");
        }
    }
}
