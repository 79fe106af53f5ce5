//! `nsys2prv-rs diff BASE NEW`: what changed between two runs of a program, from
//! the reports of their two traces. Everything is matched by name (the `.pcf`'s
//! labels, which the report resolves), never by event value; tasks by their
//! order (rank k of one run against rank k of the other). Times are compared per
//! GPU (a total divided by the run's GPUs), so that runs of different sizes can
//! be compared; with the same GPU count that is the same change as the totals'.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{NamedStats, Report};
use crate::text::{clip, millis, percent};

/// Which program wrote a diff file (a later run may replace it).
pub const DIFF_GENERATOR: &str = "nsys2prv-rs diff";
/// Exit status of `diff --fail-if-slower PCT` when NEW is slower by more than PCT.
pub const SLOWER_EXIT: i32 = 4;
/// A rank whose median iteration changed this much more than the ranks' median
/// change is named as straggling (or catching up).
const STRAGGLER_POINTS: f64 = 0.05;
/// Changes smaller than this (a fraction) are "about the same".
const SAME: f64 = 0.005;

#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub generator: &'static str,
    pub version: &'static str,
    pub base: Run,
    pub new: Run,
    /// Set when the runs have different GPU counts: every time is per GPU.
    pub per_gpu_note: Option<String>,
    /// What the verdict and the gate compare.
    pub measure: Measure,
    pub verdict: String,
    /// Where the difference comes from, the largest first (in the direction of the change).
    pub contributors: Vec<Contributor>,
    pub efficiency: Vec<FactorRow>,
    /// Useful, communication and idle time per GPU.
    pub gpu_time: Vec<TimeRow>,
    pub iterations: Option<IterationDiff>,
    /// Compute kernels, by contribution to the time difference (largest first).
    pub kernels: Vec<RowDiff>,
    pub nccl: Vec<RowDiff>,
    pub nccl_sizes: Vec<RowDiff>,
    pub memory: Vec<RowDiff>,
    pub nvtx: Vec<RowDiff>,
    pub gaps: GapDiff,
    /// What one trace or both lack, from their reports' notes.
    pub notes: Vec<String>,
    /// The Paraver view to open both traces with.
    pub paraver: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub trace: String,
    pub tasks: usize,
    pub gpus: usize,
    pub elapsed_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Measure {
    /// `iteration time` (the median over iterations of the slowest task's
    /// iteration) or `GPU busy time per GPU` (without iterations in both runs).
    pub what: String,
    pub base_ns: f64,
    pub new_ns: f64,
    /// (new − base) / base.
    pub change: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Contributor {
    /// `kernel`, `NCCL`, `memory` or `GPU idle`.
    pub kind: &'static str,
    pub name: String,
    /// Change of its time per GPU, ns (positive: more time in NEW).
    pub delta_ns_per_gpu: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FactorRow {
    pub factor: &'static str,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// new − base (fractions; ×100: percentage points).
    pub delta: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimeRow {
    pub what: &'static str,
    pub base_ns_per_gpu: f64,
    pub new_ns_per_gpu: f64,
    pub change: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct IterationDiff {
    pub range: String,
    pub ranks: Vec<RankIterations>,
    /// Ranks (0-based task order) whose median changed more than the others'.
    pub stragglers: Vec<usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RankIterations {
    /// 0-based position among the tasks with iterations.
    pub rank: usize,
    pub base_task: Option<String>,
    pub new_task: Option<String>,
    pub base: Option<IterationFigures>,
    pub new: Option<IterationFigures>,
    pub change: Option<f64>,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct IterationFigures {
    pub count: usize,
    pub median_ns: f64,
    /// Interquartile range (Q3 − Q1), ns.
    pub spread_ns: f64,
}

/// One name (or one group of names of a short name) in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct RowDiff {
    pub name: String,
    /// The names of BASE and NEW grouped under this short name (launch
    /// configurations or template arguments that differ); empty when matched as is.
    pub grouped: Vec<String>,
    pub base: Option<Side>,
    pub new: Option<Side>,
    /// Change of its time per GPU, ns.
    pub delta_ns_per_gpu: f64,
    /// Change of its time per GPU, (new − base) / base; `None` when new or vanished.
    pub change: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    /// Share of the run's GPU time of its kind (compute kernels: of all compute
    /// kernel time).
    pub share: Option<f64>,
    pub bytes: Option<u64>,
    pub bus_gb_per_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GapDiff {
    pub threshold_ns: u64,
    pub base_count: u64,
    pub base_total_ns: u64,
    pub new_count: u64,
    pub new_total_ns: u64,
    /// What the launching threads were in when the longest gaps began (the
    /// gaps each report keeps: the longest per GPU).
    pub calls: Vec<GapCall>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GapCall {
    pub call: String,
    pub base_count: u64,
    pub base_total_ns: u64,
    pub new_count: u64,
    pub new_total_ns: u64,
}

/// The short name of a kernel label: `void ns::gemm<float>(float*)` → `gemm`
/// (namespaces, template arguments, parameters and the return type dropped).
pub fn short_name(label: &str) -> String {
    let name = label.replace("(anonymous namespace)::", "");
    let name = name.strip_prefix("void ").unwrap_or(&name);
    let end = name.find(['<', '(']).unwrap_or(name.len());
    let name = &name[..end];
    name.rsplit("::").next().unwrap_or(name).trim().to_string()
}

fn median(sorted: &[f64]) -> f64 {
    quantile(sorted, 0.5)
}

/// Linear interpolation between the closest ranks of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let at = q * (n - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
        }
    }
}

fn change(base: f64, new: f64) -> Option<f64> {
    (base > 0.0).then(|| (new - base) / base)
}

fn per_gpu(report: &Report, ns: u64) -> f64 {
    ns as f64 / report.gpu_count.max(1) as f64
}

/// The iteration time of a run: per iteration (k-th of each task), the slowest
/// task's; the median of those. `None` without iterations.
pub fn iteration_time(report: &Report) -> Option<f64> {
    let it = report.iterations.as_ref()?;
    let mut slowest: Vec<f64> = it.per_iteration.iter().map(|i| i.max_ns as f64).collect();
    if slowest.is_empty() {
        return None;
    }
    slowest.sort_by(f64::total_cmp);
    Some(median(&slowest))
}

/// Busy (useful + communication) time per GPU.
pub fn busy_per_gpu(report: &Report) -> f64 {
    let busy: u64 = report
        .gpus
        .iter()
        .map(|g| g.useful_ns + g.communication_ns)
        .sum();
    per_gpu(report, busy)
}

fn side(stats: &NamedStats, share: Option<f64>, bus: Option<f64>) -> Side {
    Side {
        count: stats.count,
        total_ns: stats.total_ns,
        mean_ns: stats.mean_ns,
        share,
        bytes: stats.bytes,
        bus_gb_per_s: bus,
    }
}

/// Rows of two name tables, matched by name; with `group_short`, the names left
/// unmatched on both sides that share a short name are grouped under it.
fn match_rows(
    base: &Report,
    new: &Report,
    base_rows: Vec<(String, Side)>,
    new_rows: Vec<(String, Side)>,
    group_short: bool,
) -> Vec<RowDiff> {
    let mut base_map: BTreeMap<String, Side> = base_rows.into_iter().collect();
    let mut new_map: BTreeMap<String, Side> = new_rows.into_iter().collect();
    let mut rows = Vec::new();
    let both: Vec<String> = base_map
        .keys()
        .filter(|k| new_map.contains_key(*k))
        .cloned()
        .collect();
    for name in both {
        let b = base_map.remove(&name);
        let n = new_map.remove(&name);
        rows.push(row(base, new, name, Vec::new(), b, n));
    }
    if group_short {
        let shorts = |m: &BTreeMap<String, Side>| -> BTreeSet<String> {
            m.keys().map(|k| short_name(k)).collect()
        };
        let common: Vec<String> = shorts(&base_map)
            .intersection(&shorts(&new_map))
            .cloned()
            .collect();
        for short in common {
            let take = |m: &mut BTreeMap<String, Side>| -> Vec<(String, Side)> {
                let keys: Vec<String> = m
                    .keys()
                    .filter(|k| short_name(k) == short)
                    .cloned()
                    .collect();
                keys.into_iter()
                    .map(|k| {
                        let s = m.remove(&k).expect("listed");
                        (k, s)
                    })
                    .collect()
            };
            let (b, n) = (take(&mut base_map), take(&mut new_map));
            let grouped = b.iter().chain(&n).map(|(k, _)| k.clone()).collect();
            rows.push(row(base, new, short, grouped, merge(b), merge(n)));
        }
    }
    for (name, s) in base_map {
        rows.push(row(base, new, name, Vec::new(), Some(s), None));
    }
    for (name, s) in new_map {
        rows.push(row(base, new, name, Vec::new(), None, Some(s)));
    }
    rows.sort_by(|a, b| {
        b.delta_ns_per_gpu
            .abs()
            .total_cmp(&a.delta_ns_per_gpu.abs())
            .then(a.name.cmp(&b.name))
    });
    rows
}

fn merge(sides: Vec<(String, Side)>) -> Option<Side> {
    let mut iter = sides.into_iter().map(|(_, s)| s);
    let mut acc = iter.next()?;
    for s in iter {
        acc.count += s.count;
        acc.total_ns += s.total_ns;
        acc.share = match (acc.share, s.share) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        acc.bytes = match (acc.bytes, s.bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        acc.bus_gb_per_s = None;
    }
    acc.mean_ns = acc.total_ns as f64 / acc.count.max(1) as f64;
    Some(acc)
}

fn row(
    base: &Report,
    new: &Report,
    name: String,
    grouped: Vec<String>,
    b: Option<Side>,
    n: Option<Side>,
) -> RowDiff {
    let b_ns = b.as_ref().map_or(0.0, |s| per_gpu(base, s.total_ns));
    let n_ns = n.as_ref().map_or(0.0, |s| per_gpu(new, s.total_ns));
    RowDiff {
        name,
        grouped,
        change: (b.is_some() && n.is_some())
            .then(|| change(b_ns, n_ns))
            .flatten(),
        base: b,
        new: n,
        delta_ns_per_gpu: n_ns - b_ns,
    }
}

fn kernel_rows(r: &Report) -> Vec<(String, Side)> {
    r.kernels
        .iter()
        .map(|k| (k.stats.name.clone(), side(&k.stats, Some(k.share), None)))
        .collect()
}

fn nccl_rows(r: &Report) -> Vec<(String, Side)> {
    let total: u64 = r.nccl.iter().map(|c| c.stats.total_ns).sum();
    r.nccl
        .iter()
        .map(|c| {
            let share = crate::model::share(c.stats.total_ns, total);
            (c.stats.name.clone(), side(&c.stats, share, c.bus_gb_per_s))
        })
        .collect()
}

fn nccl_size_rows(r: &Report) -> Vec<(String, Side)> {
    r.nccl
        .iter()
        .flat_map(|c| {
            c.sizes.iter().map(|s| {
                (
                    format!("{} {}", c.stats.name, size_label(s.message_bytes)),
                    Side {
                        count: s.count,
                        total_ns: s.total_ns,
                        mean_ns: s.mean_ns,
                        share: None,
                        bytes: Some(s.message_bytes * s.count),
                        bus_gb_per_s: s.bus_gb_per_s,
                    },
                )
            })
        })
        .collect()
}

/// `25 MiB`, `4 KiB`, `1000 B` (exact: sizes of one label are equal).
pub fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn named_rows(list: &[NamedStats]) -> Vec<(String, Side)> {
    let total: u64 = list.iter().map(|s| s.total_ns).sum();
    list.iter()
        .map(|s| {
            let share = crate::model::share(s.total_ns, total);
            (s.name.clone(), side(s, share, None))
        })
        .collect()
}

fn iteration_figures(durations: &[u64]) -> IterationFigures {
    let mut d: Vec<f64> = durations.iter().map(|&x| x as f64).collect();
    d.sort_by(f64::total_cmp);
    IterationFigures {
        count: d.len(),
        median_ns: median(&d),
        spread_ns: quantile(&d, 0.75) - quantile(&d, 0.25),
    }
}

fn iterations(base: &Report, new: &Report) -> Option<IterationDiff> {
    let (b, n) = (base.iterations.as_ref()?, new.iterations.as_ref()?);
    let figures = |t: &crate::model::TaskIterations| {
        let d: Vec<u64> = t.iterations.iter().map(|o| o.duration_ns).collect();
        iteration_figures(&d)
    };
    let ranks: Vec<RankIterations> = (0..b.tasks.len().max(n.tasks.len()))
        .map(|k| {
            let (bt, nt) = (b.tasks.get(k), n.tasks.get(k));
            let (bf, nf) = (bt.map(figures), nt.map(figures));
            RankIterations {
                rank: k,
                base_task: bt.map(|t| t.task.clone()),
                new_task: nt.map(|t| t.task.clone()),
                change: match (bf, nf) {
                    (Some(x), Some(y)) => change(x.median_ns, y.median_ns),
                    _ => None,
                },
                base: bf,
                new: nf,
            }
        })
        .collect();
    let mut changes: Vec<f64> = ranks.iter().filter_map(|r| r.change).collect();
    changes.sort_by(f64::total_cmp);
    let typical = (!changes.is_empty()).then(|| median(&changes));
    let stragglers = match typical {
        Some(typical) if ranks.len() > 1 => ranks
            .iter()
            .filter(|r| r.change.is_some_and(|c| c - typical > STRAGGLER_POINTS))
            .map(|r| r.rank)
            .collect(),
        _ => Vec::new(),
    };
    let range = if b.range == n.range {
        b.range.clone()
    } else {
        format!("{} / {}", b.range, n.range)
    };
    Some(IterationDiff {
        range,
        ranks,
        stragglers,
    })
}

fn gaps(base: &Report, new: &Report) -> GapDiff {
    let mut calls: BTreeMap<String, GapCall> = BTreeMap::new();
    for (is_new, r) in [(false, base), (true, new)] {
        for g in r.gpus.iter().flat_map(|g| &g.gaps) {
            let call = g
                .call
                .clone()
                .or_else(|| g.nvtx.as_ref().map(|n| format!("NVTX: {n}")))
                .unwrap_or_else(|| "no call or range".into());
            let entry = calls.entry(call.clone()).or_insert_with(|| GapCall {
                call,
                base_count: 0,
                base_total_ns: 0,
                new_count: 0,
                new_total_ns: 0,
            });
            if is_new {
                entry.new_count += 1;
                entry.new_total_ns += g.duration_ns;
            } else {
                entry.base_count += 1;
                entry.base_total_ns += g.duration_ns;
            }
        }
    }
    let mut calls: Vec<GapCall> = calls.into_values().collect();
    calls.sort_by(|a, b| {
        (b.new_total_ns.max(b.base_total_ns))
            .cmp(&a.new_total_ns.max(a.base_total_ns))
            .then(a.call.cmp(&b.call))
    });
    GapDiff {
        threshold_ns: new.gaps.threshold_ns,
        base_count: base.gaps.count,
        base_total_ns: base.gaps.total_ns,
        new_count: new.gaps.count,
        new_total_ns: new.gaps.total_ns,
        calls,
    }
}

/// A factor of a run's model.
type FactorOf = fn(&crate::model::Model) -> Option<f64>;
/// A time of a GPU.
type TimeOf = fn(&crate::model::Gpu) -> u64;

fn efficiency(base: &Report, new: &Report) -> Vec<FactorRow> {
    let get =
        |r: &Report, f: fn(&crate::model::Model) -> Option<f64>| r.efficiency.and_then(|m| f(&m));
    let factors: [(&'static str, FactorOf); 4] = [
        ("Parallel efficiency", |m| Some(m.parallel_efficiency)),
        ("Load balance", |m| m.load_balance),
        ("Communication efficiency", |m| m.communication_efficiency),
        ("Orchestration efficiency", |m| {
            Some(m.orchestration_efficiency)
        }),
    ];
    factors
        .into_iter()
        .map(|(factor, f)| {
            let (b, n) = (get(base, f), get(new, f));
            FactorRow {
                factor,
                base: b,
                new: n,
                delta: b.zip(n).map(|(b, n)| n - b),
            }
        })
        .collect()
}

fn gpu_time(base: &Report, new: &Report) -> Vec<TimeRow> {
    let sum = |r: &Report, f: fn(&crate::model::Gpu) -> u64| -> f64 {
        per_gpu(r, r.gpus.iter().map(f).sum())
    };
    let rows: [(&'static str, TimeOf); 3] = [
        ("useful", |g| g.useful_ns),
        ("communication", |g| g.communication_ns),
        ("idle", |g| g.idle_ns),
    ];
    rows.into_iter()
        .map(|(what, f)| {
            let (b, n) = (sum(base, f), sum(new, f));
            TimeRow {
                what,
                base_ns_per_gpu: b,
                new_ns_per_gpu: n,
                change: change(b, n),
            }
        })
        .collect()
}

/// The view to open both traces with in Paraver (the same value tables: the
/// values come from the names, the same in every trace nsys2prv-rs writes).
pub const PARAVER_VIEW: &str = "analysis/kernels_profile.cfg";
/// The same for NCCL kernels.
pub const PARAVER_NCCL_VIEW: &str = "analysis/nccl_kernels_profile.cfg";

impl Diff {
    /// Compares the reports of two runs.
    pub fn of(base: &Report, new: &Report) -> Diff {
        let per_gpu_note = (base.gpu_count != new.gpu_count).then(|| {
            format!(
                "The runs have {} and {} GPUs: every time is compared per GPU (a total divided by the run's GPUs), counts and totals are the runs' own.",
                base.gpu_count, new.gpu_count
            )
        });
        let measure = match (iteration_time(base), iteration_time(new)) {
            (Some(b), Some(n)) => Measure {
                what: "iteration time".into(),
                base_ns: b,
                new_ns: n,
                change: change(b, n),
            },
            _ => {
                let (b, n) = (busy_per_gpu(base), busy_per_gpu(new));
                Measure {
                    what: "GPU busy time per GPU".into(),
                    base_ns: b,
                    new_ns: n,
                    change: change(b, n),
                }
            }
        };
        let kernels = match_rows(base, new, kernel_rows(base), kernel_rows(new), true);
        let nccl = match_rows(base, new, nccl_rows(base), nccl_rows(new), false);
        let nccl_sizes = match_rows(base, new, nccl_size_rows(base), nccl_size_rows(new), false);
        let memory = match_rows(
            base,
            new,
            named_rows(&base.memory),
            named_rows(&new.memory),
            false,
        );
        let nvtx = match_rows(
            base,
            new,
            named_rows(&base.nvtx),
            named_rows(&new.nvtx),
            false,
        );
        let gpu_time = gpu_time(base, new);
        let idle = &gpu_time[2];
        let mut contributors: Vec<Contributor> = Vec::new();
        for (kind, rows) in [("kernel", &kernels), ("NCCL", &nccl), ("memory", &memory)] {
            contributors.extend(rows.iter().map(|r| Contributor {
                kind,
                name: r.name.clone(),
                delta_ns_per_gpu: r.delta_ns_per_gpu,
            }));
        }
        contributors.push(Contributor {
            kind: "GPU idle",
            name: "idle time".into(),
            delta_ns_per_gpu: idle.new_ns_per_gpu - idle.base_ns_per_gpu,
        });
        let slower = measure.change.unwrap_or(0.0) >= 0.0;
        contributors.retain(|c| (c.delta_ns_per_gpu > 0.0) == slower && c.delta_ns_per_gpu != 0.0);
        contributors.sort_by(|a, b| {
            b.delta_ns_per_gpu
                .abs()
                .total_cmp(&a.delta_ns_per_gpu.abs())
                .then(a.name.cmp(&b.name))
        });
        let iterations = iterations(base, new);
        let mut notes: Vec<String> = Vec::new();
        for (which, r) in [("BASE", base), ("NEW", new)] {
            notes.extend(r.notes.iter().map(|n| format!("{which}: {n}")));
        }
        if iterations.is_none() && (base.iterations.is_some() || new.iterations.is_some()) {
            notes.push("Only one run has iterations: the GPU busy time per GPU is compared instead (give both the same --iterations NAME).".into());
        }
        let mut diff = Diff {
            generator: DIFF_GENERATOR,
            version: env!("CARGO_PKG_VERSION"),
            base: run(base),
            new: run(new),
            per_gpu_note,
            verdict: String::new(),
            measure,
            contributors,
            efficiency: efficiency(base, new),
            gpu_time,
            iterations,
            kernels,
            nccl,
            nccl_sizes,
            memory,
            nvtx,
            gaps: gaps(base, new),
            notes,
            paraver: format!(
                "open each trace with its own NAME.cfgs/{PARAVER_VIEW} (kernel time per rank) and {PARAVER_NCCL_VIEW}; a name has the same value in both traces, so the profiles' columns are the same kernels (Paraver: Copy the first profile's properties, Paste them on the second, to see them side by side)."
            ),
        };
        diff.verdict = diff.verdict_line();
        diff
    }

    fn verdict_line(&self) -> String {
        let m = &self.measure;
        let how = match m.change {
            None => format!("{} cannot be compared (BASE has none)", m.what),
            Some(c) if c.abs() < SAME => format!(
                "NEW is as fast as BASE in {} ({} ms → {} ms, {:+.1} %)",
                m.what,
                millis(m.base_ns),
                millis(m.new_ns),
                c * 100.0
            ),
            Some(c) => format!(
                "NEW is {} than BASE by {:.1} % in {} ({} ms → {} ms)",
                if c > 0.0 { "slower" } else { "faster" },
                c.abs() * 100.0,
                m.what,
                millis(m.base_ns),
                millis(m.new_ns),
            ),
        };
        let top: Vec<String> = self
            .contributors
            .iter()
            .take(3)
            .map(|c| {
                let name = if c.kind == "GPU idle" {
                    "GPU idle time".to_string()
                } else {
                    format!("{} {}", c.kind, clip(&c.name, 48))
                };
                format!("{name} {:+.3} ms/GPU", c.delta_ns_per_gpu / 1e6)
            })
            .collect();
        let mut line = how;
        if !top.is_empty() && m.change.is_some_and(|c| c.abs() >= SAME) {
            line.push_str(&format!("; from: {}", top.join(", ")));
        }
        if let Some(it) = &self.iterations {
            if !it.stragglers.is_empty() {
                let names: Vec<String> = it
                    .stragglers
                    .iter()
                    .map(|&k| {
                        let r = &it.ranks[k];
                        format!(
                            "{} ({:+.1} %)",
                            r.new_task.as_deref().unwrap_or("?"),
                            r.change.unwrap_or(0.0) * 100.0
                        )
                    })
                    .collect();
                line.push_str(&format!("; straggling: {}", names.join(", ")));
            }
        }
        line
    }

    /// Whether NEW's measure grew by more than `percent` %.
    pub fn slower_than(&self, percent: f64) -> bool {
        self.measure.change.is_some_and(|c| c * 100.0 > percent)
    }

    /// The diff as text tables, `top` rows each.
    pub fn text(&self, top: usize) -> String {
        let mut out = String::new();
        let w = |out: &mut String, s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        w(
            &mut out,
            format!(
                "diff of {} (BASE) and {} (NEW)",
                self.base.trace, self.new.trace
            ),
        );
        for (which, r) in [("BASE", &self.base), ("NEW", &self.new)] {
            w(
                &mut out,
                format!(
                    "{which:<5} {} tasks, {} GPUs, {} s",
                    r.tasks,
                    r.gpus,
                    crate::text::seconds(r.elapsed_ns)
                ),
            );
        }
        if let Some(note) = &self.per_gpu_note {
            w(&mut out, format!("note: {note}"));
        }
        for note in &self.notes {
            w(&mut out, format!("note: {note}"));
        }
        w(&mut out, String::new());
        w(&mut out, format!("verdict: {}", self.verdict));
        w(&mut out, String::new());

        w(
            &mut out,
            format!(
                "{:<28} {:>10} {:>10} {:>10}",
                "efficiency", "BASE", "NEW", "change"
            ),
        );
        for f in &self.efficiency {
            w(
                &mut out,
                format!(
                    "{:<28} {:>10} {:>10} {:>10}",
                    f.factor,
                    percent(f.base),
                    percent(f.new),
                    f.delta
                        .map_or("n/a".into(), |d| format!("{:+.1} pt", d * 100.0))
                ),
            );
        }
        for t in &self.gpu_time {
            w(
                &mut out,
                format!(
                    "{:<28} {:>10} {:>10} {:>10}",
                    format!("{} ms per GPU", t.what),
                    millis(t.base_ns_per_gpu),
                    millis(t.new_ns_per_gpu),
                    signed_percent(t.change)
                ),
            );
        }
        w(&mut out, String::new());

        if let Some(it) = &self.iterations {
            w(
                &mut out,
                format!(
                    "Iterations ({}) per rank: median and spread (Q3 - Q1), ms",
                    it.range
                ),
            );
            w(
                &mut out,
                format!(
                    "{:<30} {:>6} {:>11} {:>9} {:>6} {:>11} {:>9} {:>9}",
                    "rank", "BASE n", "median", "spread", "NEW n", "median", "spread", "change"
                ),
            );
            for r in it.ranks.iter().take(top.max(it.stragglers.len())) {
                let f = |x: &Option<IterationFigures>| {
                    x.map_or(("-".into(), "-".into(), "-".into()), |x| {
                        (
                            x.count.to_string(),
                            millis(x.median_ns),
                            millis(x.spread_ns),
                        )
                    })
                };
                let (bc, bm, bs) = f(&r.base);
                let (nc, nm, ns) = f(&r.new);
                let mark = if it.stragglers.contains(&r.rank) {
                    " <- straggling"
                } else {
                    ""
                };
                let label = r
                    .new_task
                    .as_deref()
                    .or(r.base_task.as_deref())
                    .unwrap_or("?");
                w(
                    &mut out,
                    format!(
                        "{:<30} {bc:>6} {bm:>11} {bs:>9} {nc:>6} {nm:>11} {ns:>9} {:>9}{mark}",
                        clip(label, 30),
                        signed_percent(r.change)
                    ),
                );
            }
            w(&mut out, String::new());
        }

        rows_table(
            &mut out,
            "Kernels (by contribution to the time difference)",
            "kernel",
            &self.kernels,
            top,
            false,
        );
        rows_table(
            &mut out,
            "NCCL per collective",
            "collective",
            &self.nccl,
            top,
            true,
        );
        rows_table(
            &mut out,
            "NCCL per collective and message size",
            "collective and size",
            &self.nccl_sizes,
            top,
            true,
        );
        rows_table(
            &mut out,
            "Memory operations",
            "operation",
            &self.memory,
            top,
            false,
        );
        rows_table(&mut out, "NVTX ranges", "range", &self.nvtx, top, false);

        let g = &self.gaps;
        w(
            &mut out,
            format!(
                "GPU idle gaps of at least {} ms: BASE {} gaps, {} ms; NEW {} gaps, {} ms",
                millis(g.threshold_ns as f64),
                g.base_count,
                millis(g.base_total_ns as f64),
                g.new_count,
                millis(g.new_total_ns as f64)
            ),
        );
        if !g.calls.is_empty() {
            w(
                &mut out,
                format!(
                    "{:<60} {:>7} {:>11} {:>7} {:>11}",
                    "the launching thread was in (longest gaps)", "BASE n", "ms", "NEW n", "ms"
                ),
            );
            for c in g.calls.iter().take(top) {
                w(
                    &mut out,
                    format!(
                        "{:<60} {:>7} {:>11} {:>7} {:>11}",
                        clip(&c.call, 60),
                        c.base_count,
                        millis(c.base_total_ns as f64),
                        c.new_count,
                        millis(c.new_total_ns as f64)
                    ),
                );
            }
        }
        w(&mut out, String::new());
        w(&mut out, format!("Paraver: {}", self.paraver));
        out
    }
}

fn run(r: &Report) -> Run {
    Run {
        trace: r.trace.clone(),
        tasks: r.tasks,
        gpus: r.gpu_count,
        elapsed_ns: r.elapsed_ns,
    }
}

pub fn signed_percent(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or("n/a".into(), |x| format!("{:+.1}%", x * 100.0))
}

fn rows_table(
    out: &mut String,
    title: &str,
    what: &str,
    rows: &[RowDiff],
    top: usize,
    bandwidth: bool,
) {
    if rows.is_empty() {
        return;
    }
    let width = rows
        .iter()
        .take(top)
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(what.len(), 50);
    out.push_str(&format!(
        "{title} ({} of {})\n",
        rows.len().min(top),
        rows.len()
    ));
    let bw = if bandwidth {
        format!(" {:>9} {:>9}", "bus GB/s", "bus GB/s")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{what:<width$} {:>7} {:>11} {:>10} {:>6} {:>7} {:>11} {:>10} {:>6}{bw} {:>12} {:>9}\n",
        "BASE n",
        "total ms",
        "mean us",
        "share",
        "NEW n",
        "total ms",
        "mean us",
        "share",
        "delta ms/GPU",
        "change"
    ));
    for r in rows.iter().take(top) {
        let cells = |s: &Option<Side>| match s {
            Some(s) => (
                s.count.to_string(),
                millis(s.total_ns as f64),
                format!("{:.3}", s.mean_ns / 1e3),
                s.share.map_or("".into(), |x| format!("{:.1}%", x * 100.0)),
                s.bus_gb_per_s.map_or("n/a".into(), |x| format!("{x:.2}")),
            ),
            None => ("-".into(), "-".into(), "-".into(), "".into(), "-".into()),
        };
        let (bn, bt, bm, bsh, bb) = cells(&r.base);
        let (nn, nt, nm, nsh, nb) = cells(&r.new);
        let bw = if bandwidth {
            format!(" {bb:>9} {nb:>9}")
        } else {
            String::new()
        };
        let status = match (&r.base, &r.new) {
            (None, Some(_)) => "new".to_string(),
            (Some(_), None) => "vanished".to_string(),
            _ => signed_percent(r.change),
        };
        let name = if r.grouped.is_empty() {
            r.name.clone()
        } else {
            format!("{} ({} names)", r.name, r.grouped.len())
        };
        out.push_str(&format!(
            "{:<width$} {bn:>7} {bt:>11} {bm:>10} {bsh:>6} {nn:>7} {nt:>11} {nm:>10} {nsh:>6}{bw} {:>12} {status:>9}\n",
            clip(&name, width),
            format!("{:+.3}", r.delta_ns_per_gpu / 1e6),
        ));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_namespaces_templates_and_parameters() {
        assert_eq!(short_name("void cutlass::Kernel2<T>(T::Params)"), "Kernel2");
        assert_eq!(short_name("gemm_kernel"), "gemm_kernel");
        assert_eq!(
            short_name("void at::native::vectorized_elementwise_kernel<4>(int)"),
            "vectorized_elementwise_kernel"
        );
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(median(&v), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&[5.0], 0.75), 5.0);
        assert_eq!(size_label(25 << 20), "25 MiB");
        assert_eq!(size_label(1000), "1000 B");
    }
}
