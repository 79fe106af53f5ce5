//! The report as text tables, for the terminal.

use std::fmt::Write as _;

use super::model::*;

/// Rows of per-GPU tables printed before the rest is summarised.
const GPU_ROWS: usize = 32;
/// Stage columns of the per-iteration table printed at most.
const STAGE_COLUMNS: usize = 8;

pub fn seconds(ns: u64) -> String {
    format!("{:.6}", ns as f64 / 1e9)
}

/// A time as `--time-window` takes it, exactly: `2s`, `1500ms`, `4us`, `123ns`.
pub fn time_arg(ns: u64) -> String {
    match ns {
        0 => "0".to_string(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

pub fn millis(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

pub fn percent(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{:.1}%", x * 100.0),
        _ => "n/a".into(),
    }
}

/// Shortens a name to `width` characters (keeping its start).
pub fn clip(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 48)
}

impl Report {
    /// The printed tables.
    pub fn text(&self, top: usize) -> String {
        let mut out = String::new();
        let streams: usize = self.gpus.iter().map(|g| g.streams).sum();
        let window = match &self.window {
            Some(w) => format!(
                ", from {} s to {} s ({})",
                seconds(w.start_ns),
                seconds(w.end_ns),
                w.chosen_by
            ),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "GPU efficiency report of {}{window}: {} s, {} tasks, {} GPUs ({} stream rows)",
            self.trace,
            seconds(self.elapsed_ns),
            self.tasks,
            self.gpus.len(),
            streams
        );
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out.push('\n');
        self.gpu_table(&mut out);
        self.model_table(&mut out);
        self.overlap_table(&mut out);
        self.gap_table(&mut out);
        self.kernel_table(&mut out, top);
        self.nccl_table(&mut out);
        self.late_arrival_table(&mut out);
        if let Some(idle) = &self.idle_causes {
            idle_table(idle, &mut out);
        }
        self.pipeline_table(&mut out);
        self.launch_queue_tables(&mut out, top);
        named_table(&mut out, "MPI calls", "call", &self.mpi, top);
        self.memory_table(&mut out);
        self.iteration_table(&mut out);
        out
    }

    fn gpu_table(&self, out: &mut String) {
        if self.gpus.is_empty() {
            return;
        }
        let width = name_width(self.gpus.iter().map(|g| g.name.as_str()));
        let late = self.from_first_activity.as_ref();
        let _ = write!(
            out,
            "{:<width$}  {:>12}  {:>12}  {:>12}  {:>7}  {:>7}  {:>7}",
            "GPU", "useful s", "comm s", "idle s", "useful", "comm", "idle"
        );
        if late.is_some() {
            let _ = write!(out, "  {:>12}  {:>7}", "idle s*", "idle*");
        }
        out.push('\n');
        let elapsed = self.elapsed_ns;
        for (i, g) in self.gpus.iter().enumerate().take(GPU_ROWS) {
            let _ = write!(
                out,
                "{:<width$}  {:>12}  {:>12}  {:>12}  {:>7}  {:>7}  {:>7}",
                clip(&g.name, width),
                seconds(g.useful_ns),
                seconds(g.communication_ns),
                seconds(g.idle_ns),
                percent(share(g.useful_ns, elapsed)),
                percent(share(g.communication_ns, elapsed)),
                percent(share(g.idle_ns, elapsed)),
            );
            if let Some(late) = late {
                let idle = late.idle_ns[i];
                let _ = write!(
                    out,
                    "  {:>12}  {:>7}",
                    seconds(idle),
                    percent(share(idle, late.elapsed_ns))
                );
            }
            out.push('\n');
        }
        if let Some(late) = late {
            let _ = writeln!(
                out,
                "* from the first GPU activity on: {} s, {} of the time before it left out",
                seconds(late.elapsed_ns),
                percent(Some(late.share_before))
            );
        }
        if self.gpus.len() > GPU_ROWS {
            let _ = writeln!(
                out,
                "… and {} more GPUs (all in the JSON and CSV files)",
                self.gpus.len() - GPU_ROWS
            );
        }
        out.push('\n');
    }

    fn model_table(&self, out: &mut String) {
        let Some(m) = &self.efficiency else { return };
        let rows = [
            (
                "Parallel efficiency",
                Some(m.parallel_efficiency),
                "avg(useful) / elapsed = LB x CommE x OrchE",
            ),
            (
                "  Load balance",
                m.load_balance,
                "avg(useful) / max(useful)",
            ),
            (
                "  Communication efficiency",
                m.communication_efficiency,
                "max(useful) / max(useful + communication)",
            ),
            (
                "  Orchestration efficiency",
                Some(m.orchestration_efficiency),
                "max(useful + communication) / elapsed",
            ),
        ];
        let late = self.from_first_activity.as_ref();
        let later: Option<&Model> = late.and_then(|l| l.efficiency.as_ref());
        let later_rows = later.map(|m| {
            [
                Some(m.parallel_efficiency),
                m.load_balance,
                m.communication_efficiency,
                Some(m.orchestration_efficiency),
            ]
        });
        if later_rows.is_some() {
            let _ = writeln!(out, "{:<28} {:>7}  {:>7}", "", "whole", "from 1st*");
        }
        for (i, (name, value, how)) in rows.into_iter().enumerate() {
            match &later_rows {
                Some(l) => {
                    let _ = writeln!(
                        out,
                        "{name:<28} {:>7}  {:>9}   {how}",
                        percent(value),
                        percent(l[i])
                    );
                }
                None => {
                    let _ = writeln!(out, "{name:<28} {:>7}   {how}", percent(value));
                }
            }
        }
        if let Some(late) = late.filter(|_| later.is_some()) {
            let _ = writeln!(
                out,
                "* from the first GPU activity, at {} s, on (elapsed {} s instead of {} s)",
                seconds(late.start_ns),
                seconds(late.elapsed_ns),
                seconds(self.elapsed_ns)
            );
        }
        out.push('\n');
    }

    fn overlap_table(&self, out: &mut String) {
        let o = &self.overlap;
        if o.rows.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "Compute/communication overlap: share of NCCL kernel time with k compute kernels running"
        );
        let width = name_width(o.rows.iter().map(|r| self.gpus[r.gpu].name.as_str()));
        let mut header = format!("{:<width$}  {:>12}", "GPU", "NCCL s");
        for k in 0..o.columns {
            let _ = write!(header, "  {:>7}", format!("k={k}"));
        }
        let _ = writeln!(out, "{header}");
        let line = |out: &mut String, name: &str, total: String, cells: Vec<Option<f64>>| {
            let mut text = format!("{:<width$}  {:>12}", clip(name, width), total);
            for c in cells {
                let _ = write!(text, "  {:>7}", percent(c));
            }
            let _ = writeln!(out, "{text}");
        };
        for r in o.rows.iter().take(GPU_ROWS) {
            let cells = r.shares.iter().map(|s| Some(*s)).collect();
            line(out, &self.gpus[r.gpu].name, seconds(r.nccl_ns), cells);
        }
        if o.rows.len() > GPU_ROWS {
            let _ = writeln!(out, "… and {} more GPUs", o.rows.len() - GPU_ROWS);
        }
        let some = |v: &[f64]| v.iter().map(|x| Some(*x)).collect();
        line(out, "average", String::new(), some(&o.average));
        line(out, "maximum", String::new(), some(&o.maximum));
        line(out, "minimum", String::new(), some(&o.minimum));
        line(
            out,
            "avg/max",
            String::new(),
            o.average_over_maximum.clone(),
        );
        out.push('\n');
    }

    fn gap_table(&self, out: &mut String) {
        let g = &self.gaps;
        if self.gpus.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "GPU idle gaps of at least {} ms between two activities: {} gaps, {} s in all",
            millis(g.threshold_ns as f64),
            g.count,
            seconds(g.total_ns)
        );
        if g.longest.is_empty() {
            out.push('\n');
            return;
        }
        let width = name_width(g.longest.iter().map(|x| self.gpus[x.gpu].name.as_str()));
        let _ = writeln!(
            out,
            "{:<width$}  {:>12}  {:>12}  the launching thread was in",
            "GPU", "at s", "gap ms"
        );
        for gap in g.longest.iter().take(10) {
            let _ = writeln!(
                out,
                "{:<width$}  {:>12}  {:>12}  {}",
                clip(&self.gpus[gap.gpu].name, width),
                seconds(gap.begin_ns),
                millis(gap.duration_ns as f64),
                gap_context(gap)
            );
        }
        out.push('\n');
    }

    fn kernel_table(&self, out: &mut String, top: usize) {
        if self.kernels.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "Top kernels by GPU time ({} of {} kernels)",
            top.min(self.kernels.len()),
            self.kernels.len()
        );
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>7}  {:>12}  {:>12}",
            "kernel", "calls", "total s", "share", "mean us", "max us"
        );
        for k in self.kernels.iter().take(top) {
            let s = &k.stats;
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>7}  {:>12.3}  {:>12.3}",
                clip(&s.name, 40),
                s.count,
                seconds(s.total_ns),
                percent(Some(k.share)),
                s.mean_ns / 1e3,
                s.max_ns as f64 / 1e3
            );
        }
        out.push('\n');
    }

    fn nccl_table(&self, out: &mut String) {
        if self.nccl.is_empty() {
            return;
        }
        let _ = writeln!(out, "NCCL kernels per collective");
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>12}  {:>16}  {:>6}  {:>9}  {:>9}",
            "collective", "calls", "total s", "mean us", "bytes", "ranks", "algo GB/s", "bus GB/s"
        );
        let bandwidth = |x: Option<f64>| x.map_or("n/a".into(), |v| format!("{v:.3}"));
        for c in &self.nccl {
            let s = &c.stats;
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>12.3}  {:>16}  {:>6}  {:>9}  {:>9}",
                clip(&s.name, 40),
                s.count,
                seconds(s.total_ns),
                s.mean_ns / 1e3,
                bytes(s.bytes),
                c.ranks,
                bandwidth(c.algorithm_gb_per_s),
                bandwidth(c.bus_gb_per_s)
            );
        }
        out.push('\n');
    }

    /// Who made NCCL collectives wait: per late rank, per collective, per iteration.
    fn late_arrival_table(&self, out: &mut String) {
        let Some(late) = &self.late_arrivals else {
            return;
        };
        let _ = writeln!(
            out,
            "Late arrivals at NCCL collectives: {} s waited in {} kernels for the last rank of their collective",
            seconds(late.total_wait_ns),
            late.waits
        );
        let _ = writeln!(
            out,
            "{:<40}  {:>14}  {:>9}",
            "late rank", "wait caused s", "waits"
        );
        for l in &late.ranks {
            let _ = writeln!(
                out,
                "{:<40}  {:>14}  {:>9}",
                clip(&l.rank, 40),
                seconds(l.wait_ns),
                l.waits
            );
        }
        let _ = writeln!(
            out,
            "{:<40}  {:<12}  {:>14}  {:>9}",
            "collective", "late rank", "wait caused s", "waits"
        );
        for l in &late.per_collective {
            let _ = writeln!(
                out,
                "{:<40}  {:<12}  {:>14}  {:>9}",
                clip(&l.collective, 40),
                clip(&l.rank, 12),
                seconds(l.wait_ns),
                l.waits
            );
        }
        if !late.per_iteration.is_empty() {
            let _ = writeln!(
                out,
                "{:>9}  {:<12}  {:>14}  {:>14}",
                "iteration", "late rank", "its cost s", "all waits s"
            );
            for l in late.per_iteration.iter().take(50) {
                let _ = writeln!(
                    out,
                    "{:>9}  {:<12}  {:>14}  {:>14}",
                    l.iteration,
                    clip(&l.rank, 12),
                    seconds(l.wait_ns),
                    seconds(l.total_wait_ns)
                );
            }
        }
        out.push('\n');
    }

    /// Pipeline bubbles per stage, and per iteration.
    fn pipeline_table(&self, out: &mut String) {
        let Some(p) = &self.pipeline else { return };
        let per = match &p.iteration_range {
            Some(range) => format!("per iteration of '{range}'"),
            None => "over the whole run".to_string(),
        };
        let _ = writeln!(
            out,
            "Pipeline bubbles: {} stages (from {}), {per}",
            p.stages.len(),
            p.found_by
        );
        let _ = writeln!(
        out,
        "bubble: time between a stage's first and last compute kernel of the iteration with no compute kernel running"
    );
        let width = p
            .stages
            .iter()
            .map(|s| s.label.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 40);
        let _ = writeln!(
            out,
            "{:>5}  {:<width$}  {:>10}  {:>12}  {:>12}  {:>7}  {:>12}  {:>12}",
            "stage", "GPUs", "iterations", "span s", "bubble s", "share", "in NCCL s", "idle s"
        );
        for s in &p.stages {
            let _ = writeln!(
                out,
                "{:>5}  {:<width$}  {:>10}  {:>12}  {:>12}  {:>7}  {:>12}  {:>12}",
                s.stage,
                clip(&s.label, width),
                s.iterations,
                seconds(s.span_ns),
                seconds(s.bubble_ns),
                percent(s.share),
                seconds(s.in_nccl_ns),
                seconds(s.idle_ns),
            );
        }
        if p.stages.iter().any(|s| s.gpus.len() > 1) {
            let _ = writeln!(out, "(times are summed over each stage's GPUs)");
        }
        if let Some(shared) = p.pipeline_share {
            let _ = write!(
            out,
            "Whole pipeline: {} of the stages' time within each iteration's pipeline span is bubble",
            percent(Some(shared))
        );
            match (p.micro_batches, p.gpipe_share) {
                (Some(m), Some(g)) => {
                    let _ = writeln!(
                    out,
                    "; GPipe's (p-1)/(m+p-1) for p = {} stages and m = {m} micro-batches: {} (equal stages, free transfers)",
                    p.stages.len(),
                    percent(Some(g))
                );
                }
                _ => out.push('\n'),
            }
        }
        let iterations = p
            .stages
            .iter()
            .flat_map(|s| s.per_iteration.iter().map(|i| i.iteration))
            .max()
            .unwrap_or(0);
        if p.iteration_range.is_some() && iterations > 0 {
            let shown = p.stages.len().min(STAGE_COLUMNS);
            let mut header = format!("{:>9}", "iteration");
            for s in &p.stages[..shown] {
                let _ = write!(header, "  {:>20}", format!("stage {} bubble ms", s.stage));
            }
            let _ = writeln!(out, "{header}");
            for k in 1..=iterations.min(50) {
                let mut line = format!("{k:>9}");
                for s in &p.stages[..shown] {
                    let cell = match s.per_iteration.iter().find(|i| i.iteration == k) {
                        Some(i) => format!("{} ({})", millis(i.bubble_ns as f64), percent(i.share)),
                        None => "-".to_string(),
                    };
                    let _ = write!(line, "  {cell:>20}");
                }
                let _ = writeln!(out, "{line}");
            }
            if iterations > 50 {
                let _ = writeln!(out, "… and {} more iterations", iterations - 50);
            }
            if p.stages.len() > shown {
                let _ = writeln!(
                    out,
                    "… and {} more stages (all in the JSON)",
                    p.stages.len() - shown
                );
            }
        }
        out.push('\n');
    }

    fn launch_queue_tables(&self, out: &mut String, top: usize) {
        let Some(q) = &self.launch_queues else {
            return;
        };
        let us = |ns: u64| format!("{:.3}", ns as f64 / 1e3);
        let latency = |l: Option<&LatencyStats>| match l {
            Some(l) => format!(
                "{:>9}  {:>11}  {:>11}  {:>11}",
                l.count,
                us(l.median_ns),
                us(l.p90_ns),
                us(l.max_ns)
            ),
            None => format!("{:>9}  {:>11}  {:>11}  {:>11}", 0, "n/a", "n/a", "n/a"),
        };
        let _ = writeln!(
            out,
            "Launch queues: GPU streams whose queue ran empty most (starved: idle with no kernel launched, between two operations of the stream), and launch latency (launch call begin to kernel begin; {} kernels, median {} us, p90 {} us, max {} us)",
            q.all.count,
            us(q.all.median_ns),
            us(q.all.p90_ns),
            us(q.all.max_ns)
        );
        let w = name_width(q.streams.iter().map(|s| s.stream.as_str()));
        let _ = writeln!(
            out,
            "{:<w$}  {:>10}  {:>8}  {:>13}  {:>10}  {:>9}  {:>9}  {:>11}  {:>11}  {:>11}",
            "stream",
            "starved s",
            "starved",
            "queued idle s",
            "mean depth",
            "max depth",
            "kernels",
            "median us",
            "p90 us",
            "max us"
        );
        for s in q.streams.iter().take(top) {
            let _ = writeln!(
                out,
                "{:<w$}  {:>10}  {:>8}  {:>13}  {:>10.3}  {:>9}  {}",
                clip(&s.stream, w),
                seconds(s.starved_ns),
                percent(Some(s.starved_share)),
                seconds(s.queued_idle_ns),
                s.mean_depth,
                s.max_depth,
                latency(s.latency.as_ref())
            );
        }
        if q.streams.len() > top {
            let _ = writeln!(out, "… {} more streams", q.streams.len() - top);
        }
        let w = name_width(q.kernels.iter().map(|k| k.kernel.as_str()));
        let _ = writeln!(
            out,
            "{:<w$}  {:>9}  {:>11}  {:>11}  {:>11}",
            "kernel (longest p90 first)", "kernels", "median us", "p90 us", "max us"
        );
        for k in q.kernels.iter().take(top) {
            let _ = writeln!(
                out,
                "{:<w$}  {}",
                clip(&k.kernel, w),
                latency(Some(&k.latency))
            );
        }
        out.push('\n');
    }

    fn memory_table(&self, out: &mut String) {
        if self.memory.is_empty() {
            return;
        }
        let _ = writeln!(out, "Memory operations");
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>16}  {:>10}",
            "operation", "count", "total s", "bytes", "GB/s"
        );
        for s in &self.memory {
            let _ = writeln!(
                out,
                "{:<40}  {:>9}  {:>12}  {:>16}  {:>10}",
                clip(&s.name, 40),
                s.count,
                seconds(s.total_ns),
                bytes(s.bytes),
                s.gb_per_s.map_or("n/a".into(), |v| format!("{v:.3}"))
            );
        }
        out.push('\n');
    }

    fn iteration_table(&self, out: &mut String) {
        let Some(it) = &self.iterations else { return };
        let _ = writeln!(out, "Iterations (NVTX range '{}') per task", it.range);
        let width = name_width(it.tasks.iter().map(|t| t.task.as_str()));
        let _ = writeln!(
            out,
            "{:<width$}  {:>6}  {:>12}  {:>12}  {:>12}",
            "task", "count", "mean ms", "min ms", "max ms"
        );
        for t in it.tasks.iter().take(GPU_ROWS) {
            let _ = writeln!(
                out,
                "{:<width$}  {:>6}  {:>12}  {:>12}  {:>12}",
                clip(&t.task, width),
                t.iterations.len(),
                millis(t.mean_ns),
                millis(t.min_ns as f64),
                millis(t.max_ns as f64),
            );
        }
        if it.tasks.len() > GPU_ROWS {
            let _ = writeln!(out, "… and {} more tasks", it.tasks.len() - GPU_ROWS);
        }
        if it.tasks.len() > 1 {
            let _ = writeln!(
                out,
                "Slowest tasks (mean iteration time; median of the tasks' means {} ms):",
                millis(it.median_task_mean_ns)
            );
            for s in &it.slowest {
                let _ = writeln!(
                    out,
                    "  {}  {} ms  {}",
                    s.task,
                    millis(s.mean_ns),
                    s.over_median
                        .map_or(String::new(), |r| format!("{r:.2}x the median"))
                );
            }
            let _ = writeln!(
                out,
                "{:>9}  {:>12}  {:>12}  {:>12}  slowest task",
                "iteration", "mean ms", "max ms", "max/mean"
            );
            for s in it.per_iteration.iter().take(50) {
                let ratio = if s.mean_ns > 0.0 {
                    format!("{:.3}", s.max_ns as f64 / s.mean_ns)
                } else {
                    "n/a".into()
                };
                let _ = writeln!(
                    out,
                    "{:>9}  {:>12}  {:>12}  {:>12}  {}",
                    s.iteration,
                    millis(s.mean_ns),
                    millis(s.max_ns as f64),
                    ratio,
                    s.slowest_task
                );
            }
            if it.per_iteration.len() > 50 {
                let _ = writeln!(out, "… and {} more iterations", it.per_iteration.len() - 50);
            }
        }
        out.push('\n');
    }
}

/// Iterations listed in the idle-cause table (the JSON has them all).
const IDLE_ITERATION_ROWS: usize = 50;

/// The text table.
fn idle_table(idle: &IdleCauses, out: &mut String) {
    let [host, dependency, other] = idle.total.shares();
    let _ = writeln!(
        out,
        "Why the GPUs were idle: {} s idle in {} gaps between operations: host-bound {}, dependency/sync {}, other {}",
        seconds(idle.total.idle_ns),
        idle.gaps,
        percent(host),
        percent(dependency),
        percent(other)
    );
    let width = idle
        .gpus
        .iter()
        .map(|g| g.gpu.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    let _ = writeln!(
        out,
        "{:<width$}  {:>12}  {:>13}  {:>13}  {:>12}  host-bound mostly in",
        "GPU", "idle s", "host-bound s", "dependency s", "other s"
    );
    for g in &idle.gpus {
        let what = g
            .host_bound_in
            .first()
            .map(|h| clip(&h.what, 48))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<width$}  {:>12}  {:>13}  {:>13}  {:>12}  {what}",
            clip(&g.gpu, width),
            seconds(g.split.idle_ns),
            seconds(g.split.host_bound_ns),
            seconds(g.split.dependency_ns),
            seconds(g.split.other_ns),
        );
    }
    if !idle.per_iteration.is_empty() {
        let _ = writeln!(
            out,
            "{:>9}  {:>12}  {:>13}  {:>13}  {:>12}",
            "iteration", "idle s", "host-bound s", "dependency s", "other s"
        );
        for i in idle.per_iteration.iter().take(IDLE_ITERATION_ROWS) {
            let _ = writeln!(
                out,
                "{:>9}  {:>12}  {:>13}  {:>13}  {:>12}",
                i.iteration,
                seconds(i.split.idle_ns),
                seconds(i.split.host_bound_ns),
                seconds(i.split.dependency_ns),
                seconds(i.split.other_ns),
            );
        }
    }
    out.push('\n');
}

/// What a gap's launching thread was in, in words.
pub fn gap_context(gap: &Gap) -> String {
    let mut parts = vec![gap.thread.clone()];
    if let Some(call) = &gap.call {
        parts.push(call.clone());
    }
    if let Some(range) = &gap.nvtx {
        parts.push(format!("NVTX {range}"));
    }
    if gap.call.is_none() && gap.nvtx.is_none() {
        parts.push("no call or range".into());
    }
    parts.join(": ")
}

/// Bytes, or `n/a` when the trace gives no size.
fn bytes(b: Option<u64>) -> String {
    b.map_or("n/a".into(), |b| b.to_string())
}

fn named_table(out: &mut String, title: &str, what: &str, list: &[NamedStats], top: usize) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title} ({} of {})", top.min(list.len()), list.len());
    let _ = writeln!(
        out,
        "{:<40}  {:>9}  {:>12}  {:>12}  {:>12}  {:>16}",
        what, "calls", "total s", "mean us", "max us", "bytes"
    );
    for s in list.iter().take(top) {
        let _ = writeln!(
            out,
            "{:<40}  {:>9}  {:>12}  {:>12.3}  {:>12.3}  {:>16}",
            clip(&s.name, 40),
            s.count,
            seconds(s.total_ns),
            s.mean_ns / 1e3,
            s.max_ns as f64 / 1e3,
            bytes(s.bytes)
        );
    }
    out.push('\n');
}
