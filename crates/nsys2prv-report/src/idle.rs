//! Why the GPUs were idle: the idle intervals' split into host-bound,
//! dependency/sync and other time (see `scan/idle_causes.rs` for the rules), per
//! GPU, per iteration and over the run, with what the launching thread was in
//! while the GPU starved; as text, JSON (the model) and HTML (a table and a stacked
//! bar per GPU).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use maud::{html, Markup};
use serde::Serialize;

use super::html::{count, fig, seconds as html_seconds};
use super::model::{Gpu, Iterations};
use super::scan::{HostContext, IdleCause, Scan};
use super::svg;
use super::text::{clip, percent, seconds};
use super::types::call_kind;

/// What each GPU's host-bound time is put down to: at most this many.
const HOST_CONTEXTS: usize = 3;
/// Iterations listed in the text and on the page (the JSON has them all).
const ITERATION_ROWS: usize = 50;
/// GPUs drawn as bars on the page.
const BAR_ROWS: usize = 64;

/// Idle time and its causes, which add up to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IdleSplit {
    pub idle_ns: u64,
    /// Before the operation that ended the gap was launched: the CPU was late.
    pub host_bound_ns: u64,
    /// After it was launched, while its stream waited (an event, a host function).
    pub dependency_ns: u64,
    /// The rest: launch latency, or no launch known.
    pub other_ns: u64,
}

impl IdleSplit {
    fn add(&mut self, cause: IdleCause, ns: u64) {
        self.idle_ns += ns;
        match cause {
            IdleCause::HostBound => self.host_bound_ns += ns,
            IdleCause::Dependency => self.dependency_ns += ns,
            IdleCause::Other => self.other_ns += ns,
        }
    }

    fn from_causes(by_cause: [u64; 3]) -> Self {
        IdleSplit {
            idle_ns: by_cause.iter().sum(),
            host_bound_ns: by_cause[0],
            dependency_ns: by_cause[1],
            other_ns: by_cause[2],
        }
    }

    fn plus(self, other: IdleSplit) -> IdleSplit {
        IdleSplit {
            idle_ns: self.idle_ns + other.idle_ns,
            host_bound_ns: self.host_bound_ns + other.host_bound_ns,
            dependency_ns: self.dependency_ns + other.dependency_ns,
            other_ns: self.other_ns + other.other_ns,
        }
    }

    fn shares(&self) -> [Option<f64>; 3] {
        let share = |x: u64| (self.idle_ns > 0).then(|| x as f64 / self.idle_ns as f64);
        [
            share(self.host_bound_ns),
            share(self.dependency_ns),
            share(self.other_ns),
        ]
    }
}

/// Why the GPUs were idle (traces with GPU stream rows).
#[derive(Clone, Debug, Serialize)]
pub struct IdleCauses {
    /// Over every GPU.
    #[serde(flatten)]
    pub total: IdleSplit,
    /// Gaps between operations, over every GPU.
    pub gaps: u64,
    pub gpus: Vec<GpuIdle>,
    /// Per iteration (when the trace has iterations), over the GPUs of the tasks.
    pub per_iteration: Vec<IterationIdle>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuIdle {
    pub gpu: String,
    #[serde(flatten)]
    pub split: IdleSplit,
    pub gaps: u64,
    /// What the launching thread was in when the gaps began, most host-bound time
    /// first (at most 3).
    pub host_bound_in: Vec<HostBoundIn>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostBoundIn {
    pub what: String,
    pub ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IterationIdle {
    /// 1-based, by order within each task.
    pub iteration: usize,
    #[serde(flatten)]
    pub split: IdleSplit,
}

/// The launching thread's range and call, in words.
fn context_words(scan: &Scan, (range, call): HostContext) -> String {
    let range = range.map(|(ty, v)| format!("NVTX {}", scan.names.value(ty, v, "range")));
    let call =
        call.map(|(ty, v)| format!("{}: {}", call_kind(ty), scan.names.value(ty, v, "call")));
    match (range, call) {
        (Some(r), Some(c)) => format!("{r} ({c})"),
        (Some(r), None) => r,
        (None, Some(c)) => c,
        (None, None) => "no call or range".into(),
    }
}

/// The split per GPU, over the run and per iteration; `None` without GPUs.
pub(crate) fn assemble(
    scan: &Scan,
    gpus: &[Gpu],
    iterations: Option<&Iterations>,
    offset: u64,
) -> Option<IdleCauses> {
    if gpus.is_empty() {
        return None;
    }
    let acc = scan.idle_causes();
    let mut total = IdleSplit::default();
    let mut gaps = 0;
    let list: Vec<GpuIdle> = gpus
        .iter()
        .enumerate()
        .map(|(g, gpu)| {
            let totals = acc.totals(g);
            let split = IdleSplit::from_causes(totals.by_cause);
            total = total.plus(split);
            gaps += totals.gaps;
            GpuIdle {
                gpu: gpu.name.clone(),
                split,
                gaps: totals.gaps,
                host_bound_in: acc
                    .host_contexts(g)
                    .into_iter()
                    .take(HOST_CONTEXTS)
                    .map(|(context, ns)| HostBoundIn {
                        what: context_words(scan, context),
                        ns,
                    })
                    .collect(),
            }
        })
        .collect();
    // Each piece clipped to the iterations of its GPU's task it overlaps.
    let mut by_iteration: BTreeMap<usize, IdleSplit> = BTreeMap::new();
    if let Some(it) = iterations {
        for &(gpu, cause, from, to) in &acc.pieces {
            let (from, to) = (from + offset, to + offset);
            let task = scan.names.task(gpus[gpu as usize].task);
            let Some(t) = it.tasks.iter().find(|t| t.task == task) else {
                continue;
            };
            let first = t
                .iterations
                .partition_point(|o| o.begin_ns + o.duration_ns <= from);
            for (k, o) in t.iterations.iter().enumerate().skip(first) {
                if o.begin_ns >= to {
                    break;
                }
                let (a, b) = (from.max(o.begin_ns), to.min(o.begin_ns + o.duration_ns));
                if b > a {
                    by_iteration.entry(k + 1).or_default().add(cause, b - a);
                }
            }
        }
    }
    Some(IdleCauses {
        total,
        gaps,
        gpus: list,
        per_iteration: by_iteration
            .into_iter()
            .map(|(iteration, split)| IterationIdle { iteration, split })
            .collect(),
    })
}

/// The notes about what the split could not see.
pub(crate) fn notes(scan: &Scan, idle: &IdleCauses) -> Vec<String> {
    let mut notes = Vec::new();
    if idle.total.idle_ns > 0 && scan.seen.launches == 0 {
        notes.push(
            "The trace has no launch arrows (CUDA API calls not traced or not translated): all GPU idle time counts as 'other'."
                .to_string(),
        );
    }
    if scan.idle_causes().pieces_left_out > 0 {
        notes.push(format!(
            "{} pieces of GPU idle time were left out of the per-iteration split (--memory-limit).",
            scan.idle_causes().pieces_left_out
        ));
    }
    notes
}

/// The text table.
pub(crate) fn text(idle: &IdleCauses, out: &mut String) {
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
        for i in idle.per_iteration.iter().take(ITERATION_ROWS) {
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

/// Colours of host-bound, dependency/sync and other.
const COLOURS: [&str; 3] = ["#c53030", "#805ad5", "#a0aec0"];
const NAMES: [&str; 3] = ["host-bound", "dependency/sync", "other"];

/// A GPU's bar: per cause with time, its colour index, left edge, width and time.
fn segments(g: &GpuIdle, longest: f64, left: f64, width: f64) -> Vec<(usize, f64, f64, u64)> {
    let parts = [
        g.split.host_bound_ns,
        g.split.dependency_ns,
        g.split.other_ns,
    ];
    let mut x = left;
    let mut list = Vec::new();
    for (c, ns) in parts.into_iter().enumerate() {
        let w = ns as f64 / longest * width;
        if ns > 0 {
            list.push((c, x, w, ns));
        }
        x += w;
    }
    list
}

/// One stacked bar per GPU (the 64 idle longest above 64 GPUs): its idle time split
/// by cause, on a scale shared by every GPU (the longest idle time fills the width).
fn bars(idle: &IdleCauses) -> Markup {
    const ROW: f64 = 18.0;
    let (label, width) = (svg::LABEL_WIDTH, svg::PLOT_WIDTH);
    let mut rows: Vec<&GpuIdle> = idle.gpus.iter().collect();
    if rows.len() > BAR_ROWS {
        rows.sort_by_key(|g| std::cmp::Reverse(g.split.idle_ns));
        rows.truncate(BAR_ROWS);
    }
    let longest = rows
        .iter()
        .map(|g| g.split.idle_ns)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let height = ROW * rows.len() as f64 + 28.0;
    html! {
        svg class="chart idle" width=(label + width + svg::RIGHT_MARGIN) height=(height) role="img"
            aria-label="GPU idle time by cause, one bar per GPU" {
            title { "GPU idle time by cause: host-bound, dependency/sync, other" }
            @for (i, g) in rows.iter().enumerate() {
                @let y = ROW * i as f64 + 4.0;
                text.label x="4" y=(y + 12.0) { (clip(&g.gpu, 34)) }
                @for (c, x, w, ns) in segments(g, longest, label, width) {
                    rect x=(format!("{x:.2}")) y=(y) width=(format!("{w:.2}")) height=(ROW - 4.0) fill=(COLOURS[c]) {
                        title { (g.gpu) ", " (NAMES[c]) ": " (seconds(ns)) " s" }
                    }
                }
            }
            @let y = ROW * rows.len() as f64 + 18.0;
            @for (c, name) in NAMES.iter().enumerate() {
                rect x=(label + 200.0 * c as f64) y=(y - 9.0) width="10" height="10" fill=(COLOURS[c]) {}
                text.label x=(label + 200.0 * c as f64 + 14.0) y=(y) { (name) }
            }
        }
    }
}

/// The page's section.
pub(crate) fn html(idle: Option<&IdleCauses>) -> Markup {
    let Some(idle) = idle else {
        return html! {};
    };
    let split = |p: &str, s: &IdleSplit| {
        html! {
            td { (html_seconds(&format!("{p}/idle_ns"), s.idle_ns)) }
            td { (html_seconds(&format!("{p}/host_bound_ns"), s.host_bound_ns)) }
            td { (html_seconds(&format!("{p}/dependency_ns"), s.dependency_ns)) }
            td { (html_seconds(&format!("{p}/other_ns"), s.other_ns)) }
        }
    };
    html! {
        h2 #idle_causes { "Why the GPUs were idle" }
        p { "Every idle interval of a GPU (nothing running on any of its streams, between two operations) split by what the "
            "operation that ended it waited for: " b { "host-bound" } " until the call that launched it began (the CPU was late), "
            b { "dependency/sync" } " from then while its stream waited for a CUDA event (cudaStreamWaitEvent) or a host function, "
            b { "other" } " for the rest (launch latency, or no launch arrow in the trace). "
            (html_seconds("/idle_causes/idle_ns", idle.total.idle_ns)) " s idle in "
            (count("/idle_causes/gaps", idle.gaps)) " gaps." }
        (bars(idle))
        table {
            tr { th.name { "GPU" } th { "idle s" } th { "host-bound s" } th { "dependency/sync s" } th { "other s" } th { "gaps" } th.name { "host-bound mostly in" } }
            @for (i, g) in idle.gpus.iter().enumerate() {
                @let p = format!("/idle_causes/gpus/{i}");
                tr {
                    td.name { (g.gpu) }
                    (split(&p, &g.split))
                    td { (count(&format!("{p}/gaps"), g.gaps)) }
                    td.name {
                        @for (k, h) in g.host_bound_in.iter().enumerate() {
                            @if k > 0 { br; }
                            (h.what) " " (fig(&format!("{p}/host_bound_in/{k}/ns"), "s", format!("{:.6}", h.ns as f64 / 1e9))) " s"
                        }
                    }
                }
            }
            tr.summary {
                td.name { "all GPUs" }
                (split("/idle_causes", &idle.total))
                td { (count("/idle_causes/gaps", idle.gaps)) }
                td.name {}
            }
        }
        @if !idle.per_iteration.is_empty() {
            table {
                tr { th { "iteration" } th { "idle s" } th { "host-bound s" } th { "dependency/sync s" } th { "other s" } }
                @for (i, it) in idle.per_iteration.iter().enumerate().take(ITERATION_ROWS) {
                    @let p = format!("/idle_causes/per_iteration/{i}");
                    tr {
                        td { (count(&format!("{p}/iteration"), it.iteration as u64)) }
                        (split(&p, &it.split))
                    }
                }
            }
        }
    }
}
