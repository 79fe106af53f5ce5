//! `nsys2prv-rs report RUN1 RUN2 [RUN3 …]`: the efficiency model over runs, as POP
//! prints it for CPU runs, for GPUs. Per run the factors `report` computes
//! (parallel efficiency = load balance × communication × orchestration), and the
//! computational scalability relative to the first run, so that
//! global efficiency = parallel efficiency × computational scalability.
//!
//! With GPU metrics (SM issue throughput and the GPC clock) in every run, the
//! computational scalability splits into factors that multiply back to it:
//! useful time U = W / (I · f), with I the mean SM issue throughput and f the mean
//! GPC clock over the useful time, and W = U · I · f the work (issue cycles). So
//! CS = U₀/U = (W₀/W) · (I/I₀) · (f/f₀): work, issue-efficiency and
//! clock-frequency scalability. docs/report.md has the formulas with units.

use serde::Serialize;

use crate::diff::iteration_time;
use crate::model::{Model, Report};

/// POP's colours: green from this share up…
pub const GOOD: f64 = 0.80;
/// …orange from this one, red below.
pub const FAIR: f64 = 0.60;

#[derive(Clone, Debug, Serialize)]
pub struct Runs {
    pub generator: &'static str,
    pub version: &'static str,
    /// `strong` (the same problem on more GPUs) or `weak` (the same problem per GPU).
    pub scaling: &'static str,
    /// `elapsed` (the trace's time) or `iteration` (the median iteration, with
    /// `--iterations`): the time column, and what useful time is per.
    pub time: &'static str,
    pub runs: Vec<RunFactors>,
    /// Whether every run had the metrics the decomposition needs.
    pub decomposed: bool,
    pub notes: Vec<String>,
    /// The Paraver views that compute the same factors, per run.
    pub paraver: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunFactors {
    pub trace: String,
    pub gpus: usize,
    /// The trace's elapsed time, or the median iteration time (per iteration, the
    /// slowest task's) with `--iterations`.
    pub time_ns: f64,
    /// Useful (compute kernel) time summed over GPUs; with `--iterations`, per
    /// iteration (the total over the number of iterations).
    pub useful_ns: f64,
    pub parallel_efficiency: f64,
    pub load_balance: Option<f64>,
    pub communication_efficiency: Option<f64>,
    pub orchestration_efficiency: f64,
    /// U₀/U (strong) or (U₀/P₀)/(U/P) (weak), relative to the first run.
    pub computational_scalability: Option<f64>,
    /// Parallel efficiency × computational scalability.
    pub global_efficiency: Option<f64>,
    /// With the metrics: the decomposition of the computational scalability.
    pub metrics: Option<RunMetrics>,
    /// Speed-up of the time column against the first run (t₀/t).
    pub speedup: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunMetrics {
    /// Mean SM issue throughput over the useful time, a fraction (I).
    pub issue: f64,
    /// Mean GPC clock over the useful time, MHz (f).
    pub clock_mhz: f64,
    /// Mean SMs-active share over the useful time (shown, not a factor), when recorded.
    pub sm_active: Option<f64>,
    /// W = U · I · f, in millions of issue cycles (U in s × f in MHz × I),
    /// per GPU with weak scaling.
    pub work_mcycles: f64,
    /// W₀/W: less than 1 when the run issues more work than the first.
    pub work_scalability: Option<f64>,
    /// I/I₀.
    pub issue_scalability: Option<f64>,
    /// f/f₀.
    pub frequency_scalability: Option<f64>,
}

/// The mean over useful time of the first metric whose name starts with one of `prefixes`.
fn metric(report: &Report, prefixes: &[&str]) -> Option<f64> {
    report
        .useful_metrics
        .iter()
        .find(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
        .map(|(_, m)| m.mean)
}

/// A run's metrics over useful time: SM issue (fraction), GPC clock (MHz), SMs active.
type Sampled = (f64, f64, Option<f64>);

const ISSUE: &[&str] = &["SM Issue"];
const CLOCK: &[&str] = &["GPC Clock Frequency"];
const ACTIVE: &[&str] = &["SMs Active", "SM Active"];

impl Runs {
    /// The table over `reports`, the first the reference.
    pub fn of(reports: &[Report], weak: bool, per_iteration: bool) -> Runs {
        let mut notes = Vec::new();
        let per_iteration = per_iteration && reports.iter().all(|r| iteration_time(r).is_some());
        if !per_iteration && reports.iter().any(|r| r.iterations.is_some()) {
            notes.push("Times are the traces' elapsed times (--iterations NAME: the median iteration, and useful time per iteration).".into());
        }
        let decomposed = reports
            .iter()
            .all(|r| metric(r, ISSUE).is_some() && metric(r, CLOCK).is_some());
        if !decomposed {
            notes.push("Not every run recorded SM issue throughput and the GPC clock (nsys --gpu-metrics-devices): no decomposition of the computational scalability.".into());
        }
        let gpus_of = |r: &Report| r.gpu_count.max(1) as f64;
        let rows: Vec<(RunFactors, Option<Sampled>)> = reports
            .iter()
            .map(|r| {
                let model = r.efficiency.unwrap_or(Model {
                    load_balance: None,
                    communication_efficiency: None,
                    orchestration_efficiency: 0.0,
                    parallel_efficiency: 0.0,
                });
                let useful: u64 = r.gpus.iter().map(|g| g.useful_ns).sum();
                let (time_ns, useful_ns) = match (per_iteration, &r.iterations) {
                    (true, Some(it)) => (
                        iteration_time(r).unwrap_or(0.0),
                        useful as f64 / it.per_iteration.len().max(1) as f64,
                    ),
                    _ => (r.elapsed_ns as f64, useful as f64),
                };
                let m = decomposed.then(|| {
                    (
                        metric(r, ISSUE).unwrap_or(0.0) / 100.0,
                        metric(r, CLOCK).unwrap_or(0.0),
                        metric(r, ACTIVE).map(|a| a / 100.0),
                    )
                });
                (
                    RunFactors {
                        trace: r.trace.clone(),
                        gpus: r.gpu_count,
                        time_ns,
                        useful_ns,
                        parallel_efficiency: model.parallel_efficiency,
                        load_balance: model.load_balance,
                        communication_efficiency: model.communication_efficiency,
                        orchestration_efficiency: model.orchestration_efficiency,
                        computational_scalability: None,
                        global_efficiency: None,
                        metrics: None,
                        speedup: None,
                    },
                    m,
                )
            })
            .collect();
        let reference = rows.first().map(|(f, m)| (f.clone(), *m));
        let runs = rows
            .into_iter()
            .zip(reports)
            .map(|((mut f, m), r)| {
                if let Some((f0, m0)) = &reference {
                    let p0 = gpus_of(&reports[0]);
                    let p = gpus_of(r);
                    // Useful time per unit of problem: all of it (strong) or per GPU (weak).
                    let (u0, u) = if weak {
                        (f0.useful_ns / p0, f.useful_ns / p)
                    } else {
                        (f0.useful_ns, f.useful_ns)
                    };
                    f.computational_scalability = (u > 0.0).then(|| u0 / u);
                    f.global_efficiency = f
                        .computational_scalability
                        .map(|cs| cs * f.parallel_efficiency);
                    f.speedup = (f.time_ns > 0.0).then(|| f0.time_ns / f.time_ns);
                    if let (Some((i, clock, active)), Some((i0, clock0, _))) = (m, m0) {
                        let work = |u_ns: f64, i: f64, clock: f64| u_ns / 1e9 * clock * i;
                        let (w0, w) = (work(u0, *i0, *clock0), work(u, i, clock));
                        f.metrics = Some(RunMetrics {
                            issue: i,
                            clock_mhz: clock,
                            sm_active: active,
                            work_mcycles: w,
                            work_scalability: (w > 0.0).then(|| w0 / w),
                            issue_scalability: (*i0 > 0.0).then(|| i / i0),
                            frequency_scalability: (*clock0 > 0.0).then(|| clock / clock0),
                        });
                    }
                }
                f
            })
            .collect();
        Runs {
            generator: crate::model::GENERATOR,
            version: env!("CARGO_PKG_VERSION"),
            scaling: if weak { "weak" } else { "strong" },
            time: if per_iteration { "iteration" } else { "elapsed" },
            runs,
            decomposed,
            notes,
            paraver: "each run's NAME.cfgs/efficiency/ views (parallel_efficiency.cfg, load_balance.cfg, communication_efficiency.cfg, orchestration_efficiency.cfg) give its factors in Paraver; the computational scalability compares runs, which Paraver does not.".into(),
        }
    }

    /// The rows of the table: (label, how, value per run).
    pub fn table(&self) -> Vec<(&'static str, &'static str, Vec<Option<f64>>)> {
        let col = |f: &dyn Fn(&RunFactors) -> Option<f64>| self.runs.iter().map(f).collect();
        let mcol = |f: &dyn Fn(&RunMetrics) -> Option<f64>| {
            self.runs
                .iter()
                .map(|r| r.metrics.as_ref().and_then(f))
                .collect()
        };
        let mut rows = vec![
            (
                "Global efficiency",
                "PE x CS",
                col(&|r| r.global_efficiency),
            ),
            (
                "  Parallel efficiency",
                "LB x CommE x OrchE = avg(useful) / elapsed",
                col(&|r| Some(r.parallel_efficiency)),
            ),
            (
                "    Load balance",
                "avg(useful) / max(useful)",
                col(&|r| r.load_balance),
            ),
            (
                "    Communication efficiency",
                "max(useful) / max(useful + communication)",
                col(&|r| r.communication_efficiency),
            ),
            (
                "    Orchestration efficiency",
                "max(useful + communication) / elapsed",
                col(&|r| Some(r.orchestration_efficiency)),
            ),
            (
                "  Computational scalability",
                if self.scaling == "weak" {
                    "(U0/P0) / (U/P)"
                } else {
                    "U0 / U"
                },
                col(&|r| r.computational_scalability),
            ),
        ];
        if self.decomposed {
            rows.push((
                "    Work scalability",
                "W0 / W, W = U x issue x clock",
                mcol(&|m| m.work_scalability),
            ));
            rows.push((
                "    Issue efficiency scalability",
                "issue / issue0",
                mcol(&|m| m.issue_scalability),
            ));
            rows.push((
                "    Frequency scalability",
                "clock / clock0",
                mcol(&|m| m.frequency_scalability),
            ));
        }
        rows
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "GPU efficiency model over {} runs ({} scaling, relative to the first)\n",
            self.runs.len(),
            self.scaling
        ));
        for (i, r) in self.runs.iter().enumerate() {
            out.push_str(&format!("run {}: {}\n", i + 1, r.trace));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out.push('\n');
        let head: String = (1..=self.runs.len())
            .map(|i| format!("{:>10}", format!("run {i}")))
            .collect();
        out.push_str(&format!("{:<34}{head}\n", ""));
        let line = |label: &str, cells: Vec<String>| -> String {
            let cells: String = cells.iter().map(|c| format!("{c:>10}")).collect();
            format!("{label:<34}{cells}\n")
        };
        out.push_str(&line(
            "GPUs",
            self.runs.iter().map(|r| r.gpus.to_string()).collect(),
        ));
        let time = if self.time == "iteration" {
            "Median iteration ms"
        } else {
            "Elapsed ms"
        };
        out.push_str(&line(
            time,
            self.runs
                .iter()
                .map(|r| format!("{:.3}", r.time_ns / 1e6))
                .collect(),
        ));
        let useful = if self.time == "iteration" {
            "Useful ms per iteration (all GPUs)"
        } else {
            "Useful ms (all GPUs)"
        };
        out.push_str(&line(
            useful,
            self.runs
                .iter()
                .map(|r| format!("{:.3}", r.useful_ns / 1e6))
                .collect(),
        ));
        out.push_str(&line(
            "Speed-up",
            self.runs
                .iter()
                .map(|r| r.speedup.map_or("n/a".into(), |s| format!("{s:.2}")))
                .collect(),
        ));
        for (label, _, values) in self.table() {
            out.push_str(&line(
                label,
                values.iter().map(|v| crate::text::percent(*v)).collect(),
            ));
        }
        if self.decomposed {
            let m = |f: &dyn Fn(&RunMetrics) -> String| -> Vec<String> {
                self.runs
                    .iter()
                    .map(|r| r.metrics.as_ref().map_or("n/a".into(), f))
                    .collect()
            };
            out.push_str(&line(
                "SM issue over useful time",
                m(&|x| format!("{:.1}%", x.issue * 100.0)),
            ));
            out.push_str(&line(
                "GPC clock over useful time MHz",
                m(&|x| format!("{:.0}", x.clock_mhz)),
            ));
            out.push_str(&line(
                "SMs active over useful time",
                m(&|x| {
                    x.sm_active
                        .map_or("n/a".into(), |a| format!("{:.1}%", a * 100.0))
                }),
            ));
            out.push_str(&line(
                "Work, M issue cycles",
                m(&|x| format!("{:.1}", x.work_mcycles)),
            ));
        }
        out.push('\n');
        out.push_str(&format!("Paraver: {}\n", self.paraver));
        out
    }

    pub fn csv(&self) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["factor".to_string()];
        header.extend(self.runs.iter().map(|r| r.trace.clone()));
        w.write_record(&header).expect("CSV in memory");
        let mut put = |label: &str, values: Vec<String>| {
            let mut row = vec![label.trim().to_string()];
            row.extend(values);
            w.write_record(&row).expect("CSV in memory");
        };
        put(
            "GPUs",
            self.runs.iter().map(|r| r.gpus.to_string()).collect(),
        );
        put(
            "time_ns",
            self.runs.iter().map(|r| r.time_ns.to_string()).collect(),
        );
        put(
            "useful_ns",
            self.runs.iter().map(|r| r.useful_ns.to_string()).collect(),
        );
        for (label, _, values) in self.table() {
            put(
                label,
                values
                    .iter()
                    .map(|v| v.map_or(String::new(), |v| v.to_string()))
                    .collect(),
            );
        }
        w.into_inner().expect("CSV in memory")
    }
}

/// POP's colour class of a factor.
pub fn colour(x: Option<f64>) -> &'static str {
    match x {
        Some(x) if x >= GOOD => "good",
        Some(x) if x >= FAIR => "fair",
        Some(_) => "poor",
        None => "",
    }
}
