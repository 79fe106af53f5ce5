//! Which numbering of metric types a whole job can use.
//!
//! BSC nsys2prv 0.6 numbers GPU metrics `9400 + metricId` and NIC counters
//! `9500 + metricsIdx`, and its views (`sm_active.cfg`, `eth-bytes-sent.cfg`, …)
//! read those numbers. The ids are the export's own: two GPU models (or two nsys
//! versions) give one id different metrics, and NCCL's types sit at 9500–9524.
//! So before translating, the metric tables of every report of the job are read
//! (they are small) and BSC's numbering is used only where it is unambiguous for
//! the whole trace:
//!
//! * GPU metrics: every metric id names one metric in the whole job, ids are
//!   below 100 (9400–9499), and no report has only the metrics of older exports
//!   (`GENERIC_EVENTS`, nsys 2021–2023, which carry names but no ids) beside
//!   reports with ids. Older exports alone are numbered by name (no warning: they
//!   have no ids).
//! * NIC counters: every index names one counter in the job, indexes are below
//!   20, and no report has the NVTX domain `NCCL` (whose ranges and payload
//!   fields are types 9500–9507 in BSC's numbering as in ours; NCCL kernels' own
//!   fields are 9520–9524).
//!
//! Otherwise that family is numbered by name, with a one-line warning saying why.
//! A sharded conversion decides per shard; the merge refuses a trace whose shards
//! decided differently (two labels for one type), see
//! [`crate::catalog::catalog_with_reports`].

use std::collections::{BTreeMap, BTreeSet};

use nsys_reader::gpu_metrics::{GENERIC_EVENTS, GPU_METRICS};
use nsys_reader::network::NIC_METRIC;
use nsys_reader::{Export, ReadError};

use crate::metric_values::counter_name;
use crate::options::{MetricTypes, Options};
use crate::report::ReportTranslation;

/// Highest GPU metric id BSC's numbering can hold: 9400 + 99.
const MAX_GPU_ID: i64 = 99;
/// Highest NIC counter index it can hold without meeting the types of NCCL's
/// kernels (9520–9524).
const MAX_NIC_INDEX: i64 = 19;

/// The metric sets of one report, or of a whole job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricSets {
    /// GPU metric id → the names reports give it.
    gpu: BTreeMap<i64, BTreeSet<String>>,
    /// Reports with GPU metrics in `GPU_METRICS` (with ids) and in
    /// `GENERIC_EVENTS` (names only).
    gpu_with_ids: bool,
    gpu_legacy: bool,
    /// NIC counter index → the names (with unit) reports give it.
    nic: BTreeMap<i64, BTreeSet<String>>,
    /// A report of the job has NCCL ranges (the NVTX domain `NCCL`): looked for
    /// only when a report has NIC counters.
    nccl: bool,
}

/// The numbering chosen for a job, and why a family fell back to names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricChoice {
    pub gpu: MetricTypes,
    pub nic: MetricTypes,
    pub warnings: Vec<String>,
}

impl MetricSets {
    /// What one export holds. Reads the small metric tables only.
    pub fn of_export(export: &Export) -> Result<MetricSets, ReadError> {
        let mut sets = MetricSets::default();
        if export.has_table(GPU_METRICS) {
            sets.gpu_with_ids = true;
            for ((_, id), name) in export.gpu_metric_names()? {
                sets.gpu.entry(id).or_default().insert(name);
            }
        }
        if export.has_table(GENERIC_EVENTS) {
            let types = export.generic_metric_types()?;
            sets.gpu_legacy = types.known && !(types.sources.is_empty() && types.types.is_empty());
        }
        if export.has_table(NIC_METRIC) {
            let mut lists = BTreeSet::new();
            export.scan(NIC_METRIC, &["metricsListId"], |row| {
                if let Some(list) = row.int(0) {
                    lists.insert(list);
                }
                Ok(())
            })?;
            for ((list, index), metric) in export.network_metrics()? {
                if lists.contains(&list) {
                    sets.nic
                        .entry(index)
                        .or_default()
                        .insert(counter_name(&metric.name, &metric.unit));
                }
            }
        }
        Ok(sets)
    }

    /// Whether a report has NIC counters: then the job's reports are looked at
    /// for NCCL ranges ([`has_nccl_ranges`], [`MetricSets::set_nccl`]).
    pub fn has_nic_counters(&self) -> bool {
        !self.nic.is_empty()
    }

    /// Records that a report of the job has NCCL ranges.
    pub fn set_nccl(&mut self) {
        self.nccl = true;
    }

    /// Adds another report's sets.
    pub fn merge(&mut self, other: MetricSets) {
        for (id, names) in other.gpu {
            self.gpu.entry(id).or_default().extend(names);
        }
        for (index, names) in other.nic {
            self.nic.entry(index).or_default().extend(names);
        }
        self.gpu_with_ids |= other.gpu_with_ids;
        self.gpu_legacy |= other.gpu_legacy;
        self.nccl |= other.nccl;
    }

    /// The numbering `wanted` allows for the job these sets describe.
    pub fn choose(&self, wanted: MetricTypes) -> MetricChoice {
        let mut choice = MetricChoice {
            gpu: wanted,
            nic: wanted,
            warnings: Vec::new(),
        };
        if wanted == MetricTypes::Name {
            return choice;
        }
        let fallback = "numbered by metric name as with --metric-types name";
        if let Some(why) = ambiguous(&self.gpu, MAX_GPU_ID) {
            choice.gpu = MetricTypes::Name;
            choice.warnings.push(format!(
                "GPU metrics {fallback}: {why} (GPUs of different models, or exports of different nsys versions), so BSC's numbering (9400 + metricId) cannot hold them apart"
            ));
        } else if self.gpu_legacy {
            choice.gpu = MetricTypes::Name;
            if self.gpu_with_ids {
                choice.warnings.push(format!(
                    "GPU metrics {fallback}: some reports are older exports (GPU metrics in GENERIC_EVENTS, nsys 2021-2023), which record no metric ids"
                ));
            }
        }
        if let Some(why) = ambiguous(&self.nic, MAX_NIC_INDEX) {
            choice.nic = MetricTypes::Name;
            choice.warnings.push(format!(
                "NIC counters {fallback}: {why}, so BSC's numbering (9500 + metric index) cannot hold them apart"
            ));
        } else if self.nccl && !self.nic.is_empty() {
            choice.nic = MetricTypes::Name;
            choice.warnings.push(format!(
                "NIC counters {fallback}: the job has NCCL ranges, whose types (9500-9507) BSC's NIC numbering (9500 + metric index) would share"
            ));
        }
        choice
    }
}

/// Why ids cannot number a family: an id with two names, or one out of range.
fn ambiguous(ids: &BTreeMap<i64, BTreeSet<String>>, max: i64) -> Option<String> {
    if let Some((id, names)) = ids.iter().find(|(_, names)| names.len() > 1) {
        let mut names = names.iter();
        return Some(format!(
            "id {id} is '{}' in one report and '{}' in another",
            names.next().unwrap(),
            names.next().unwrap()
        ));
    }
    ids.keys()
        .find(|&&id| !(0..=max).contains(&id))
        .map(|id| format!("id {id} is outside 0-{max}"))
}

/// Whether the conversion writes NCCL's ranges (the NVTX pass does): only then
/// do they take types NIC counters would.
pub fn writes_nccl_ranges(options: &Options) -> bool {
    options.wants(crate::nvtx::NVTX)
}

/// Why translated reports cannot make one trace: reports translated apart (the
/// shards of a sharded conversion, each choosing its numbering from its own
/// reports) that numbered metrics differently, so that one type has two labels,
/// or NIC counters in BSC's numbering beside NCCL ranges. `None` when they fit.
pub fn numbering_conflict(reports: &[ReportTranslation]) -> Option<String> {
    let metric = |ty: u32| (9400..9600).contains(&ty);
    let mut seen: BTreeMap<u32, (&str, &std::path::Path)> = BTreeMap::new();
    for report in reports {
        for t in report.extra_types.iter().filter(|t| metric(t.ty)) {
            let (label, path) = *seen.entry(t.ty).or_insert((&t.label, &report.path));
            if label != t.label {
                return Some(format!(
                    "event type {} is '{label}' in {} and '{}' in {}: their metrics were numbered apart (translated in different shards, which chose BSC's numbering or names from their own reports); convert with --metric-types name",
                    t.ty,
                    path.display(),
                    t.label,
                    report.path.display()
                ));
            }
        }
    }
    let nic_by_index = reports.iter().find(|r| {
        r.extra_type_categories
            .iter()
            .any(|&(ty, c)| c == crate::network::NETWORK && (9500..9600).contains(&ty))
    });
    let nccl = crate::nvtx::nccl_domain_mark_type();
    let with_nccl = reports
        .iter()
        .find(|r| r.extra_types.iter().any(|t| t.ty == nccl));
    match (nic_by_index, with_nccl) {
        (Some(nic), Some(ranges)) => Some(format!(
            "{} has NIC counters numbered as BSC does (9500 + index) and {} has NCCL ranges, which take those types (translated in different shards); convert with --metric-types name",
            nic.path.display(),
            ranges.path.display()
        )),
        _ => None,
    }
}

/// Whether the export has the NVTX domain `NCCL`, whose ranges and payload
/// fields are types 9500–9507 (NCCL's kernels alone use 9520–9524, which NIC
/// indexes below 20 leave alone).
pub fn has_nccl_ranges(export: &Export) -> Result<bool, ReadError> {
    let table = "NVTX_EVENTS";
    let schema = export.schema();
    if !schema.has_column(table, "eventType") {
        return Ok(false);
    }
    let mut named = Vec::new();
    if schema.has_column(table, "text") {
        named.push("text = 'NCCL'");
    }
    if schema.has_column(table, "textId") && export.has_table("StringIds") {
        named.push("textId IN (SELECT id FROM StringIds WHERE value = 'NCCL')");
    }
    if named.is_empty() {
        return Ok(false);
    }
    let condition = format!("eventType = 75 AND ({}) LIMIT 1", named.join(" OR "));
    let mut found = false;
    export.scan_where(table, &["eventType"], &condition, |_| {
        found = true;
        Ok(())
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(ids: &[(i64, &str)]) -> MetricSets {
        let mut sets = MetricSets {
            gpu_with_ids: true,
            ..MetricSets::default()
        };
        for &(id, name) in ids {
            sets.gpu.entry(id).or_default().insert(name.to_string());
        }
        sets
    }

    #[test]
    fn one_metric_set_keeps_bsc_numbering() {
        let mut job = gpu(&[
            (0, "GPC Clock Frequency [MHz]"),
            (3, "SMs Active [Throughput %]"),
        ]);
        job.merge(gpu(&[(3, "SMs Active [Throughput %]")]));
        let choice = job.choose(MetricTypes::Bsc);
        assert_eq!(
            (choice.gpu, choice.nic),
            (MetricTypes::Bsc, MetricTypes::Bsc)
        );
        assert!(choice.warnings.is_empty());
    }

    #[test]
    fn colliding_ids_fall_back_to_names_with_one_warning() {
        let mut job = gpu(&[(3, "SMs Active [Throughput %]")]);
        job.merge(gpu(&[(3, "SM Issue [Throughput %]")]));
        let choice = job.choose(MetricTypes::Bsc);
        assert_eq!(choice.gpu, MetricTypes::Name);
        assert_eq!(choice.warnings.len(), 1);
        assert!(choice.warnings[0].contains("id 3 is 'SM Issue [Throughput %]' in one report and 'SMs Active [Throughput %]' in another"), "{:?}", choice.warnings);
        // Asked for names: no warning.
        assert!(job.choose(MetricTypes::Name).warnings.is_empty());
        // An id past 99 would land on NCCL's types.
        let choice = gpu(&[(120, "X")]).choose(MetricTypes::Bsc);
        assert_eq!(choice.gpu, MetricTypes::Name);
    }

    #[test]
    fn older_exports_are_numbered_by_name_and_say_so_only_when_mixed() {
        let legacy = MetricSets {
            gpu_legacy: true,
            ..MetricSets::default()
        };
        let choice = legacy.choose(MetricTypes::Bsc);
        assert_eq!(choice.gpu, MetricTypes::Name);
        assert!(choice.warnings.is_empty());
        let mut mixed = gpu(&[(0, "GPC Clock Frequency [MHz]")]);
        mixed.merge(legacy);
        let choice = mixed.choose(MetricTypes::Bsc);
        assert_eq!(choice.gpu, MetricTypes::Name);
        assert_eq!(choice.warnings.len(), 1);
    }

    #[test]
    fn nic_counters_give_way_to_nccl() {
        let mut nic = MetricSets::default();
        nic.nic
            .entry(1)
            .or_default()
            .insert("Bytes sent [bytes]".into());
        assert_eq!(nic.choose(MetricTypes::Bsc).nic, MetricTypes::Bsc);
        nic.nccl = true;
        let choice = nic.choose(MetricTypes::Bsc);
        assert_eq!(
            (choice.gpu, choice.nic),
            (MetricTypes::Bsc, MetricTypes::Name)
        );
        assert!(choice.warnings[0].contains("NCCL"), "{:?}", choice.warnings);
    }
}
