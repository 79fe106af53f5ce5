//! The report as one self-contained HTML page: inline CSS and SVG, no script, no
//! font and nothing fetched, so a copy opens anywhere. Written with `maud`, whose
//! templates are Rust (checked when compiled) and escape every name.
//!
//! Every figure on the page is an element `data-k="/json/pointer" data-u="unit"`:
//! the JSON output holds it at that pointer, in the unit's base (ns, fractions,
//! counts), and the tests compare the two.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::assemble::format_count;
use super::model::*;
use super::svg;
use super::text::gap_context;

/// Rows of per-GPU and per-task tables shown open; longer ones are folded.
const OPEN_ROWS: usize = 32;
/// Rows of the name tables (kernels, NCCL, MPI, memory).
const TOP_ROWS: usize = 25;

pub(crate) const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a202c; margin: 0; background: #f7f8fa; }
main { max-width: 1260px; margin: 0 auto; padding: 12px 24px 48px; }
h1 { font-size: 24px; margin: 16px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #cbd2d9; padding-bottom: 4px; }
p.lead { color: #4a5568; margin: 0 0 8px; }
nav a { margin-right: 12px; color: #2b6cb0; text-decoration: none; }
ul.notes { background: #fffbea; border-left: 4px solid #d69e2e; padding: 8px 8px 8px 28px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0 16px; }
.card { background: #fff; border: 1px solid #e2e8f0; border-radius: 6px; padding: 8px 14px; min-width: 170px; }
.card .big { font-size: 26px; font-weight: 600; }
.card .how { color: #718096; font-size: 12px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #e2e8f0; padding: 3px 8px; text-align: right; }
th { background: #edf2f7; }
td.name, th.name { text-align: left; max-width: 460px; overflow-wrap: anywhere; }
tr.summary td { background: #f0f4f8; font-weight: 600; }
svg.chart { display: block; background: #fff; border: 1px solid #e2e8f0; margin: 6px 0; }
svg .label { font-size: 11px; fill: #2d3748; }
svg .tick { font-size: 11px; fill: #4a5568; }
svg .axis { stroke: #4a5568; stroke-width: 1; }
svg .grid { stroke: #e2e8f0; stroke-width: 1; }
svg .frame { fill: none; stroke: #a0aec0; }
svg .task-line { fill: none; stroke: #a0aec0; stroke-width: 1; }
svg .slow-line { fill: none; stroke-width: 2; }
svg .mean-line { fill: none; stroke: #4a5568; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .band { fill: #cbd5e0; opacity: 0.7; }
.toggle input { position: absolute; opacity: 0; }
.toggle label { display: inline-block; padding: 4px 12px; border: 1px solid #a0aec0; border-radius: 4px; cursor: pointer; margin-right: 6px; background: #fff; }
#map-compute:checked ~ label[for=map-compute], #map-communication:checked ~ label[for=map-communication] { background: #2b6cb0; color: #fff; border-color: #2b6cb0; }
.map-communication { display: none; }
#map-communication:checked ~ .maps .map-communication { display: block; }
#map-communication:checked ~ .maps .map-compute { display: none; }
details > summary { cursor: pointer; color: #2b6cb0; margin: 4px 0; }
footer { color: #718096; font-size: 12px; margin-top: 32px; }
"#;

/// A figure: its text, tagged with its JSON pointer and unit.
fn fig(pointer: &str, unit: &str, text: String) -> Markup {
    html! { span data-k=(pointer) data-u=(unit) { (text) } }
}

fn seconds(pointer: &str, ns: u64) -> Markup {
    fig(pointer, "s", format!("{:.6}", ns as f64 / 1e9))
}

fn millis(pointer: &str, ns: f64) -> Markup {
    fig(pointer, "ms", format!("{:.3}", ns / 1e6))
}

fn micros(pointer: &str, ns: f64) -> Markup {
    fig(pointer, "us", format!("{:.3}", ns / 1e3))
}

fn percent(pointer: &str, x: Option<f64>) -> Markup {
    fig(
        pointer,
        "%",
        x.filter(|x| x.is_finite())
            .map_or("n/a".into(), |x| format!("{:.1}", x * 100.0)),
    )
}

fn count(pointer: &str, n: u64) -> Markup {
    fig(pointer, "n", format_count(n))
}

/// Bytes, or `n/a` when the trace gives no size.
fn bytes(pointer: &str, b: Option<u64>) -> Markup {
    fig(pointer, "n", b.map_or("n/a".into(), format_count))
}

fn rate(pointer: &str, x: Option<f64>) -> Markup {
    fig(
        pointer,
        "GB/s",
        x.map_or("n/a".into(), |x| format!("{x:.3}")),
    )
}

fn ratio(pointer: &str, x: Option<f64>) -> Markup {
    fig(pointer, "x", x.map_or("n/a".into(), |x| format!("{x:.2}")))
}

fn plain(pointer: &str, x: f64) -> Markup {
    fig(pointer, "v", format!("{x:.2}"))
}

pub fn page(r: &Report) -> String {
    let title = format!("GPU report: {}", r.trace);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="generator" content=(format!("{} {}", r.generator, r.version));
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                main {
                    (header(r))
                    (efficiency(r))
                    (heatmap(r))
                    (overlap(r))
                    (iterations(r))
                    (gaps(r))
                    (kernels(r))
                    (nccl(r))
                    (late_arrivals(r))
                    (idle_causes(r.idle_causes.as_ref()))
                    (pipeline(r))
                    (launch_queues(r))
                    (named_table("mpi", "MPI calls", "call", &r.mpi))
                    (memory(r))
                    footer {
                        "Made by " (r.generator) " " (r.version)
                        " from the trace alone (no Paraver needed). Every figure is also in the report's JSON (--json)."
                    }
                }
            }
        }
    };
    markup.into_string()
}

fn header(r: &Report) -> Markup {
    html! {
        h1 { "GPU efficiency report" }
        p.lead {
            "Trace " code { (r.trace) }
            @if let Some(w) = &r.window {
                ", from " (seconds("/window/start_ns", w.start_ns)) " s to "
                (seconds("/window/end_ns", w.end_ns)) " s (" (w.chosen_by) ")"
            }
            ": "
            (seconds("/elapsed_ns", r.elapsed_ns)) " s, "
            (count("/tasks", r.tasks as u64)) " tasks, "
            (count("/gpu_count", r.gpu_count as u64)) " GPUs ("
            (count("/stream_rows", r.stream_rows as u64)) " stream rows)."
        }
        nav {
            a href="#efficiency" { "Efficiency" }
            a href="#utilization" { "Utilization" }
            a href="#overlap" { "Overlap" }
            a href="#iterations" { "Iterations" }
            a href="#gaps" { "Gaps" }
            a href="#kernels" { "Kernels" }
            a href="#nccl" { "NCCL" }
            a href="#mpi" { "MPI" }
            a href="#memory" { "Memory" }
            @if r.pipeline.is_some() { a href="#pipeline" { "Pipeline" } }
        }
        @if !r.notes.is_empty() {
            ul.notes {
                @for note in &r.notes { li { (note) } }
            }
        }
    }
}

fn efficiency(r: &Report) -> Markup {
    html! {
        h2 #efficiency { "Efficiency" }
        @match &r.efficiency {
            None => p { "No GPU stream rows in the trace: no efficiency model." },
            Some(m) => {
                div.cards {
                    (card("Parallel efficiency", percent("/efficiency/parallel_efficiency", Some(m.parallel_efficiency)),
                        "avg(useful) / elapsed = LB × CommE × OrchE"))
                    (card("Load balance", percent("/efficiency/load_balance", m.load_balance),
                        "avg(useful) / max(useful)"))
                    (card("Communication efficiency", percent("/efficiency/communication_efficiency", m.communication_efficiency),
                        "max(useful) / max(useful + communication)"))
                    (card("Orchestration efficiency", percent("/efficiency/orchestration_efficiency", Some(m.orchestration_efficiency)),
                        "max(useful + communication) / elapsed"))
                }
                @if let Some(late) = &r.from_first_activity {
                    @if let Some(l) = &late.efficiency {
                        p {
                            strong { "From the first GPU activity on" } " (at "
                            (seconds("/from_first_activity/start_ns", late.start_ns)) " s; the "
                            (percent("/from_first_activity/share_before", Some(late.share_before)))
                            "% before it is start-up, left out here): elapsed "
                            (seconds("/from_first_activity/elapsed_ns", late.elapsed_ns)) " s."
                        }
                        div.cards {
                            (card("Parallel efficiency", percent("/from_first_activity/efficiency/parallel_efficiency", Some(l.parallel_efficiency)),
                                "from the first GPU activity on"))
                            (card("Load balance", percent("/from_first_activity/efficiency/load_balance", l.load_balance),
                                "from the first GPU activity on"))
                            (card("Communication efficiency", percent("/from_first_activity/efficiency/communication_efficiency", l.communication_efficiency),
                                "from the first GPU activity on"))
                            (card("Orchestration efficiency", percent("/from_first_activity/efficiency/orchestration_efficiency", Some(l.orchestration_efficiency)),
                                "from the first GPU activity on"))
                        }
                    }
                }
                p {
                    "Useful: a compute kernel runs on one of the GPU's streams. Communication: an NCCL kernel or a memory "
                    "operation runs and no compute kernel. Idle: neither. Per GPU"
                    @if r.heatmap.grouping.is_some() { " (grouped as in the heat map below)" }
                    ":"
                }
                (svg::efficiency_bars(r))
                (folded(r.gpus.len(), "Per-GPU times", gpu_table(r)))
            }
        }
    }
}

fn card(title: &str, value: Markup, how: &str) -> Markup {
    html! {
        div.card {
            div { (title) }
            div.big { (value) "%" }
            div.how { (how) }
        }
    }
}

/// A table, shown open when short and folded when long.
fn folded(rows: usize, summary: &str, table: Markup) -> Markup {
    html! {
        @if rows <= OPEN_ROWS {
            (table)
        } @else {
            details {
                summary { (summary) " (" (format_count(rows as u64)) " rows)" }
                (table)
            }
        }
    }
}

fn gpu_table(r: &Report) -> Markup {
    html! {
        table {
            tr { th.name { "GPU" } th.name { "node" } th { "streams" } th { "useful s" } th { "comm s" } th { "idle s" }
                 @if r.from_first_activity.is_some() { th { "idle s from the first GPU activity" } }
                 }
            @for (i, g) in r.gpus.iter().enumerate() {
                @let p = format!("/gpus/{i}");
                tr {
                    td.name { (g.name) } td.name { (g.node) }
                    td { (count(&format!("{p}/streams"), g.streams as u64)) }
                    td { (seconds(&format!("{p}/useful_ns"), g.useful_ns)) }
                    td { (seconds(&format!("{p}/communication_ns"), g.communication_ns)) }
                    td { (seconds(&format!("{p}/idle_ns"), g.idle_ns)) }
                    @if let Some(late) = &r.from_first_activity {
                        td { (seconds(&format!("/from_first_activity/idle_ns/{i}"), late.idle_ns[i])) }
                    }
                }
            }
        }
    }
}

fn heatmap(r: &Report) -> Markup {
    let map = &r.heatmap;
    html! {
        h2 #utilization { "GPU utilization over time" }
        @if map.rows.is_empty() {
            p { "No GPU stream rows: no utilization map." }
        } @else {
            p {
                "One row per GPU, the run cut into " (count("/heatmap/bins", map.bins as u64)) " bins of "
                (millis("/heatmap/edges_ns/1", map.edges_ns.get(1).copied().unwrap_or(0) as f64))
                " ms"
                @if let Some(w) = &r.window { " (times from the window's start, " (seconds("/window/start_ns", w.start_ns)) " s into the trace)" }
                "; the darker a cell, the more of its bin the GPU was busy."
                @if let Some(g) = &map.grouping { " " strong { (g) } }
            }
            div.toggle {
                input type="radio" name="map" id="map-compute" checked;
                label for="map-compute" { "Compute kernels" }
                input type="radio" name="map" id="map-communication";
                label for="map-communication" { "NCCL kernels and memory operations" }
                div.maps {
                    div.map-compute { (svg::heatmap(r, false)) }
                    div.map-communication { (svg::heatmap(r, true)) }
                }
            }
        }
    }
}

fn overlap(r: &Report) -> Markup {
    let o = &r.overlap;
    html! {
        h2 #overlap { "Compute/communication overlap" }
        @if o.rows.is_empty() {
            p { "No NCCL kernels on the GPUs: nothing to overlap." }
        } @else {
            p {
                "Share of each GPU's NCCL kernel time during which k compute kernels ran on the same GPU "
                "(k = 0: communication not overlapped), as in BSC's analysis of nsys2prv traces "
                "(the view " code { "analysis/comm_compute_overlap.cfg" } ")."
            }
            @let head = html! {
                tr { th.name { "GPU" } th { "NCCL s" }
                     @for k in 0..o.columns { th { "k=" (k) " %" } } }
            };
            @let summary = html! {
                @for (name, key, values) in [("average", "average", &o.average), ("maximum", "maximum", &o.maximum), ("minimum", "minimum", &o.minimum)] {
                    tr.summary { td.name { (name) } td {}
                        @for (k, v) in values.iter().enumerate() { td { (percent(&format!("/overlap/{key}/{k}"), Some(*v))) } } }
                }
                tr.summary { td.name { "avg/max" } td {}
                    @for (k, v) in o.average_over_maximum.iter().enumerate() { td { (percent(&format!("/overlap/average_over_maximum/{k}"), *v)) } } }
            };
            table { (head) (summary) }
            (folded(o.rows.len(), "Per-GPU overlap", html! {
                table {
                    (head)
                    @for (i, row) in o.rows.iter().enumerate() {
                        tr {
                            td.name { (r.gpus[row.gpu].name) }
                            td { (seconds(&format!("/overlap/rows/{i}/nccl_ns"), row.nccl_ns)) }
                            @for (k, s) in row.shares.iter().enumerate() {
                                td { (percent(&format!("/overlap/rows/{i}/shares/{k}"), Some(*s))) }
                            }
                        }
                    }
                }
            }))
        }
    }
}

fn iterations(r: &Report) -> Markup {
    html! {
        h2 #iterations { "Iterations" }
        @match &r.iterations {
            None => p { "No iterations: the trace has no NVTX range named like an iteration, or none ended "
                        "(name one with " code { "--iterations NAME" } ")." },
            Some(it) => {
                p {
                    "Occurrences of the NVTX range " strong { (it.range) } " on the tasks that have it. "
                    "Median of the tasks' mean iteration time: "
                    (millis("/iterations/median_task_mean_ns", it.median_task_mean_ns)) " ms."
                }
                (svg::iterations_chart(it))
                h3 { "Slowest tasks" }
                table {
                    tr { th.name { "task" } th { "mean ms" } th { "× median" } }
                    @for (i, s) in it.slowest.iter().enumerate() {
                        tr {
                            td.name { (s.task) }
                            td { (millis(&format!("/iterations/slowest/{i}/mean_ns"), s.mean_ns)) }
                            td { (ratio(&format!("/iterations/slowest/{i}/over_median"), s.over_median)) }
                        }
                    }
                }
                (folded(it.per_iteration.len(), "Per iteration", html! {
                    table {
                        tr { th { "iteration" } th { "tasks" } th { "mean ms" } th { "min ms" } th { "max ms" } th.name { "slowest task" } }
                        @for (i, s) in it.per_iteration.iter().enumerate() {
                            @let p = format!("/iterations/per_iteration/{i}");
                            tr {
                                td { (count(&format!("{p}/iteration"), s.iteration as u64)) }
                                td { (count(&format!("{p}/tasks"), s.tasks as u64)) }
                                td { (millis(&format!("{p}/mean_ns"), s.mean_ns)) }
                                td { (millis(&format!("{p}/min_ns"), s.min_ns as f64)) }
                                td { (millis(&format!("{p}/max_ns"), s.max_ns as f64)) }
                                td.name { (s.slowest_task) }
                            }
                        }
                    }
                }))
                (folded(it.tasks.len(), "Per task", html! {
                    table {
                        tr { th.name { "task" } th { "iterations" } th { "mean ms" } th { "min ms" } th { "max ms" } }
                        @for (i, t) in it.tasks.iter().enumerate() {
                            @let p = format!("/iterations/tasks/{i}");
                            tr {
                                td.name { (t.task) }
                                td { (count(&format!("{p}/count"), t.count as u64)) }
                                td { (millis(&format!("{p}/mean_ns"), t.mean_ns)) }
                                td { (millis(&format!("{p}/min_ns"), t.min_ns as f64)) }
                                td { (millis(&format!("{p}/max_ns"), t.max_ns as f64)) }
                            }
                        }
                    }
                }))
            }
        }
    }
}

fn gaps(r: &Report) -> Markup {
    let g = &r.gaps;
    html! {
        h2 #gaps { "GPU idle gaps" }
        @if r.gpus.is_empty() {
            p { "No GPU stream rows: no gaps." }
        } @else {
            p {
                "Idle time between two activities of a GPU (no kernel, no memory operation on any of its streams) of at least "
                (millis("/gaps/threshold_ns", g.threshold_ns as f64)) " ms: "
                (count("/gaps/count", g.count)) " gaps, " (seconds("/gaps/total_ns", g.total_ns)) " s in all. "
                "Each with what the thread that launches the GPU's work was doing when the gap began."
            }
            @if !g.longest.is_empty() {
                table {
                    tr { th.name { "GPU" } th { "begins at s" } th { "gap ms" } th.name { "launching thread was in" } }
                    @for (i, gap) in g.longest.iter().enumerate() {
                        @let p = format!("/gaps/longest/{i}");
                        tr {
                            td.name { (r.gpus[gap.gpu].name) }
                            td { (seconds(&format!("{p}/begin_ns"), gap.begin_ns)) }
                            td { (millis(&format!("{p}/duration_ns"), gap.duration_ns as f64)) }
                            td.name { (gap_context(gap)) }
                        }
                    }
                }
            }
        }
    }
}

fn kernels(r: &Report) -> Markup {
    html! {
        h2 #kernels { "Top kernels" }
        @if r.kernels.is_empty() {
            p { "No compute kernels." }
        } @else {
            p {
                "By GPU time over all GPUs (the first " (TOP_ROWS) "; the files list all)."
                @if !r.kernel_metrics.is_empty() {
                    " GPU metrics: the mean of the samples taken while the kernel ran (kernels shorter than the "
                    "sampling period may have none)."
                }
            }
            table {
                tr { th.name { "kernel" } th { "calls" } th { "total s" } th { "share %" } th { "mean us" } th { "max us" }
                     @for m in &r.kernel_metrics { th { (m) } } }
                @for (i, k) in r.kernels.iter().enumerate().take(TOP_ROWS) {
                    @let p = format!("/kernels/{i}");
                    tr {
                        td.name { (k.stats.name) }
                        td { (count(&format!("{p}/count"), k.stats.count)) }
                        td { (seconds(&format!("{p}/total_ns"), k.stats.total_ns)) }
                        td { (percent(&format!("{p}/share"), Some(k.share))) }
                        td { (micros(&format!("{p}/mean_ns"), k.stats.mean_ns)) }
                        td { (micros(&format!("{p}/max_ns"), k.stats.max_ns as f64)) }
                        @for m in &r.kernel_metrics {
                            td { @if let Some(v) = k.metrics.get(m) {
                                (plain(&format!("{p}/metrics/{}", pointer_escape(m)), *v))
                            } }
                        }
                    }
                }
            }
        }
    }
}

/// A JSON pointer token (RFC 6901).
fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn nccl(r: &Report) -> Markup {
    html! {
        h2 #nccl { "NCCL collectives" }
        @if r.nccl.is_empty() {
            p { "No NCCL kernels." }
        } @else {
            p { "NCCL kernels by collective. Bandwidths where the NCCL payload gives message sizes: algorithm "
                "bandwidth = bytes / kernel time; bus bandwidth = algorithm bandwidth × the collective's factor over its "
                "ranks (as nccl-tests: 2(n−1)/n for AllReduce, (n−1)/n for AllGather, ReduceScatter and AllToAll, 1 otherwise)." }
            table {
                tr { th.name { "collective" } th { "calls" } th { "total s" } th { "mean us" } th { "bytes" } th { "ranks" }
                     th { "algo GB/s" } th { "bus GB/s" } }
                @for (i, c) in r.nccl.iter().enumerate().take(TOP_ROWS) {
                    @let p = format!("/nccl/{i}");
                    tr {
                        td.name { (c.stats.name) }
                        td { (count(&format!("{p}/count"), c.stats.count)) }
                        td { (seconds(&format!("{p}/total_ns"), c.stats.total_ns)) }
                        td { (micros(&format!("{p}/mean_ns"), c.stats.mean_ns)) }
                        td { (bytes(&format!("{p}/bytes"), c.stats.bytes)) }
                        td { (count(&format!("{p}/ranks"), c.ranks as u64)) }
                        td { (rate(&format!("{p}/algorithm_gb_per_s"), c.algorithm_gb_per_s)) }
                        td { (rate(&format!("{p}/bus_gb_per_s"), c.bus_gb_per_s)) }
                    }
                }
            }
        }
    }
}

/// Who made NCCL collectives wait (only for traces with matched collectives).
fn late_arrivals(r: &Report) -> Markup {
    let Some(late) = &r.late_arrivals else {
        return html! {};
    };
    html! {
        h2 #late_arrivals { "Late arrivals at NCCL collectives" }
        p { "For every NCCL collective instance matched across ranks (communicator and sequence number), the kernels "
            "that started before the last rank's waited from their start until it started: "
            (seconds("/late_arrivals/total_wait_ns", late.total_wait_ns)) " s in "
            (count("/late_arrivals/waits", late.waits)) " kernels. The ranks that made the others wait:" }
        table {
            tr { th.name { "late rank" } th { "wait caused s" } th { "kernels that waited" } }
            @for (i, l) in late.ranks.iter().enumerate().take(TOP_ROWS) {
                @let p = format!("/late_arrivals/ranks/{i}");
                tr {
                    td.name { (l.rank) }
                    td { (seconds(&format!("{p}/wait_ns"), l.wait_ns)) }
                    td { (count(&format!("{p}/waits"), l.waits)) }
                }
            }
        }
        table {
            tr { th.name { "collective" } th.name { "late rank" } th { "wait caused s" } th { "kernels that waited" } }
            @for (i, l) in late.per_collective.iter().enumerate() {
                @let p = format!("/late_arrivals/per_collective/{i}");
                tr {
                    td.name { (l.collective) }
                    td.name { (l.rank) }
                    td { (seconds(&format!("{p}/wait_ns"), l.wait_ns)) }
                    td { (count(&format!("{p}/waits"), l.waits)) }
                }
            }
        }
        @if !late.per_iteration.is_empty() {
            table {
                tr { th { "iteration" } th.name { "rank that made others wait most" } th { "its cost s" } th { "all waits s" } }
                @for (i, l) in late.per_iteration.iter().enumerate().take(50) {
                    @let p = format!("/late_arrivals/per_iteration/{i}");
                    tr {
                        td { (count(&format!("{p}/iteration"), l.iteration as u64)) }
                        td.name { (l.rank) }
                        td { (seconds(&format!("{p}/wait_ns"), l.wait_ns)) }
                        td { (seconds(&format!("{p}/total_wait_ns"), l.total_wait_ns)) }
                    }
                }
            }
        }
    }
}

/// Iterations listed in the idle-cause table (the JSON has them all).
const IDLE_ITERATION_ROWS: usize = 50;
/// GPUs drawn as idle-cause bars.
const IDLE_BAR_ROWS: usize = 64;

/// Colours of host-bound, dependency/sync and other.
const IDLE_COLOURS: [&str; 3] = ["#c53030", "#805ad5", "#a0aec0"];
const IDLE_NAMES: [&str; 3] = ["host-bound", "dependency/sync", "other"];

/// A GPU's bar: per cause with time, its colour index, left edge, width and time.
fn idle_segments(g: &GpuIdle, longest: f64, left: f64, width: f64) -> Vec<(usize, f64, f64, u64)> {
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
fn idle_bars(idle: &IdleCauses) -> Markup {
    const ROW: f64 = 18.0;
    let (label, width) = (svg::LABEL_WIDTH, svg::PLOT_WIDTH);
    let mut rows: Vec<&GpuIdle> = idle.gpus.iter().collect();
    if rows.len() > IDLE_BAR_ROWS {
        rows.sort_by_key(|g| std::cmp::Reverse(g.split.idle_ns));
        rows.truncate(IDLE_BAR_ROWS);
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
                text.label x="4" y=(y + 12.0) { (super::text::clip(&g.gpu, 34)) }
                @for (c, x, w, ns) in idle_segments(g, longest, label, width) {
                    rect x=(format!("{x:.2}")) y=(y) width=(format!("{w:.2}")) height=(ROW - 4.0) fill=(IDLE_COLOURS[c]) {
                        title { (g.gpu) ", " (IDLE_NAMES[c]) ": " (super::text::seconds(ns)) " s" }
                    }
                }
            }
            @let y = ROW * rows.len() as f64 + 18.0;
            @for (c, name) in IDLE_NAMES.iter().enumerate() {
                rect x=(label + 200.0 * c as f64) y=(y - 9.0) width="10" height="10" fill=(IDLE_COLOURS[c]) {}
                text.label x=(label + 200.0 * c as f64 + 14.0) y=(y) { (name) }
            }
        }
    }
}

/// The page's section.
fn idle_causes(idle: Option<&IdleCauses>) -> Markup {
    let Some(idle) = idle else {
        return html! {};
    };
    let split = |p: &str, s: &IdleSplit| {
        html! {
            td { (seconds(&format!("{p}/idle_ns"), s.idle_ns)) }
            td { (seconds(&format!("{p}/host_bound_ns"), s.host_bound_ns)) }
            td { (seconds(&format!("{p}/dependency_ns"), s.dependency_ns)) }
            td { (seconds(&format!("{p}/other_ns"), s.other_ns)) }
        }
    };
    html! {
        h2 #idle_causes { "Why the GPUs were idle" }
        p { "Every idle interval of a GPU (nothing running on any of its streams, between two operations) split by what the "
            "operation that ended it waited for: " b { "host-bound" } " until the call that launched it began (the CPU was late), "
            b { "dependency/sync" } " from then while its stream waited for a CUDA event (cudaStreamWaitEvent) or a host function, "
            b { "other" } " for the rest (launch latency, or no launch arrow in the trace). "
            (seconds("/idle_causes/idle_ns", idle.total.idle_ns)) " s idle in "
            (count("/idle_causes/gaps", idle.gaps)) " gaps." }
        (idle_bars(idle))
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
                @for (i, it) in idle.per_iteration.iter().enumerate().take(IDLE_ITERATION_ROWS) {
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

/// Launch latency and queues per stream, latency per kernel (traces with both
/// kernels and CUDA API calls).
fn launch_queues(r: &Report) -> Markup {
    let Some(q) = &r.launch_queues else {
        return html! {};
    };
    let latency = |p: &str, l: &LatencyStats| {
        html! {
            td { (count(&format!("{p}/count"), l.count)) }
            td { (micros(&format!("{p}/median_ns"), l.median_ns as f64)) }
            td { (micros(&format!("{p}/p90_ns"), l.p90_ns as f64)) }
            td { (micros(&format!("{p}/max_ns"), l.max_ns as f64)) }
        }
    };
    html! {
        h2 #launch_queues { "Launch queues: is the GPU starving for launches?" }
        p { "A kernel is queued on its stream from the begin of the API call that launched it until it starts; "
            "its launch latency is that time. A stream is starved while it runs nothing and nothing is queued, "
            "between two of its operations: it waited for the CPU. Idle with kernels queued, it waited on something else "
            "(an event, another stream). Launch latency over all "
            (count("/launch_queues/all/count", q.all.count)) " kernels: median "
            (micros("/launch_queues/all/median_ns", q.all.median_ns as f64)) " us, p90 "
            (micros("/launch_queues/all/p90_ns", q.all.p90_ns as f64)) " us, max "
            (micros("/launch_queues/all/max_ns", q.all.max_ns as f64)) " us." }
        table {
            tr { th.name { "stream (most starved first)" } th { "starved s" } th { "starved %" } th { "queued idle s" }
                 th { "mean depth" } th { "max depth" } th { "kernels" } th { "median us" } th { "p90 us" } th { "max us" } }
            @for (i, s) in q.streams.iter().enumerate().take(TOP_ROWS) {
                @let p = format!("/launch_queues/streams/{i}");
                tr {
                    td.name { (s.stream) }
                    td { (seconds(&format!("{p}/starved_ns"), s.starved_ns)) }
                    td { (percent(&format!("{p}/starved_share"), Some(s.starved_share))) }
                    td { (seconds(&format!("{p}/queued_idle_ns"), s.queued_idle_ns)) }
                    td { (plain(&format!("{p}/mean_depth"), s.mean_depth)) }
                    td { (count(&format!("{p}/max_depth"), s.max_depth.max(0) as u64)) }
                    @if let Some(l) = &s.latency {
                        (latency(&format!("{p}/latency"), l))
                    } @else {
                        td { "n/a" } td { "n/a" } td { "n/a" } td { "n/a" }
                    }
                }
            }
        }
        table {
            tr { th.name { "kernel (longest p90 first)" } th { "kernels" } th { "median us" } th { "p90 us" } th { "max us" } }
            @for (i, k) in q.kernels.iter().enumerate().take(TOP_ROWS) {
                @let p = format!("/launch_queues/kernels/{i}");
                tr {
                    td.name { (k.kernel) }
                    (latency(&format!("{p}/latency"), &k.latency))
                }
            }
        }
    }
}

fn named_table(key: &str, title: &str, what: &str, list: &[NamedStats]) -> Markup {
    html! {
        h2 id=(key) { (title) }
        @if list.is_empty() {
            p { "None in the trace." }
        } @else {
            table {
                tr { th.name { (what) } th { "calls" } th { "total s" } th { "mean us" } th { "max us" } th { "bytes" } }
                @for (i, s) in list.iter().enumerate().take(TOP_ROWS) {
                    @let p = format!("/{key}/{i}");
                    tr {
                        td.name { (s.name) }
                        td { (count(&format!("{p}/count"), s.count)) }
                        td { (seconds(&format!("{p}/total_ns"), s.total_ns)) }
                        td { (micros(&format!("{p}/mean_ns"), s.mean_ns)) }
                        td { (micros(&format!("{p}/max_ns"), s.max_ns as f64)) }
                        td { (bytes(&format!("{p}/bytes"), s.bytes)) }
                    }
                }
            }
        }
    }
}

/// The page's section: the definition, a bar per stage and the tables.
fn pipeline(r: &Report) -> Markup {
    let Some(p) = &r.pipeline else {
        return html! {};
    };
    html! {
        h2 #pipeline { "Pipeline bubbles" }
        p {
            (p.stages.len()) " stages, from " (p.found_by) ", "
            @match &p.iteration_range {
                Some(range) => { "per iteration of " strong { (range) } }
                None => { "over the whole run (no iterations)" }
            }
            ". The bubble of a stage in an iteration is the time between its first and its last compute kernel "
            "launched in the iteration with no compute kernel running: waiting for or moving a neighbour's data "
            "(NCCL kernels), or nothing running."
        }
        @if let Some(shared) = p.pipeline_share {
            p {
                "Whole pipeline: " (percent("/pipeline/pipeline_share", Some(shared)))
                "% of the stages' time within each iteration's pipeline span (first compute kernel of any stage to the last of any) is bubble"
                @if let (Some(m), Some(g)) = (p.micro_batches, p.gpipe_share) {
                    "; GPipe's (p−1)/(m+p−1) for p = " (p.stages.len())
                    " stages and m = " (count("/pipeline/micro_batches", m)) " micro-batches: "
                    (percent("/pipeline/gpipe_share", Some(g))) "% (equal stages, free transfers)"
                }
                "."
            }
        }
        (pipeline_bars(p))
        table {
            tr { th { "stage" } th.name { "GPUs" } th { "iterations" } th { "span s" } th { "bubble s" } th { "share %" }
                 th { "in NCCL s" } th { "idle s" } }
            @for (i, s) in p.stages.iter().enumerate() {
                @let k = format!("/pipeline/stages/{i}");
                tr {
                    td { (count(&format!("{k}/stage"), s.stage as u64)) }
                    td.name { (s.label) }
                    td { (count(&format!("{k}/iterations"), s.iterations as u64)) }
                    td { (seconds(&format!("{k}/span_ns"), s.span_ns)) }
                    td { (seconds(&format!("{k}/bubble_ns"), s.bubble_ns)) }
                    td { (percent(&format!("{k}/share"), s.share)) }
                    td { (seconds(&format!("{k}/in_nccl_ns"), s.in_nccl_ns)) }
                    td { (seconds(&format!("{k}/idle_ns"), s.idle_ns)) }
                }
            }
        }
        @if p.iteration_range.is_some() {
            details {
                summary { "Per stage and iteration" }
                table {
                    tr { th { "stage" } th { "iteration" } th { "span s" } th { "bubble s" } th { "share %" } th { "in NCCL s" } th { "idle s" } }
                    @for (i, s) in p.stages.iter().enumerate() {
                        @for (j, it) in s.per_iteration.iter().enumerate().take(50) {
                            @let k = format!("/pipeline/stages/{i}/per_iteration/{j}");
                            tr {
                                td { (count(&format!("/pipeline/stages/{i}/stage"), s.stage as u64)) }
                                td { (count(&format!("{k}/iteration"), it.iteration as u64)) }
                                td { (seconds(&format!("{k}/span_ns"), it.span_ns)) }
                                td { (seconds(&format!("{k}/bubble_ns"), it.bubble_ns)) }
                                td { (percent(&format!("{k}/share"), it.share)) }
                                td { (seconds(&format!("{k}/in_nccl_ns"), it.in_nccl_ns)) }
                                td { (seconds(&format!("{k}/idle_ns"), it.idle_ns)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A bar per stage over its span: compute, bubble in NCCL kernels, bubble idle,
/// the rest of the bubble (memory operations).
fn pipeline_bars(p: &Pipeline) -> Markup {
    let rows: Vec<(String, [f64; 4])> = p
        .stages
        .iter()
        .map(|s| {
            let span = s.span_ns.max(1) as f64;
            let bubble = s.bubble_ns as f64 / span;
            let nccl = s.in_nccl_ns as f64 / span;
            let idle = s.idle_ns as f64 / span;
            let label = format!("stage {}: {}", s.stage, s.label);
            let shares = if s.span_ns == 0 {
                [0.0; 4]
            } else {
                [1.0 - bubble, nccl, idle, (bubble - nccl - idle).max(0.0)]
            };
            (label, shares)
        })
        .collect();
    svg::stage_bars(
        &rows,
        &[
            ("compute", svg::USEFUL_COLOUR),
            ("bubble: in NCCL kernels", svg::COMMUNICATION_COLOUR),
            ("bubble: nothing running", svg::IDLE_COLOUR),
            ("bubble: memory operations", "#9f7aea"),
        ],
    )
}

fn memory(r: &Report) -> Markup {
    html! {
        h2 #memory { "Memory operations" }
        @if r.memory.is_empty() {
            p { "None in the trace." }
        } @else {
            table {
                tr { th.name { "operation" } th { "count" } th { "total s" } th { "mean us" } th { "bytes" } th { "GB/s" } }
                @for (i, s) in r.memory.iter().enumerate() {
                    @let p = format!("/memory/{i}");
                    tr {
                        td.name { (s.name) }
                        td { (count(&format!("{p}/count"), s.count)) }
                        td { (seconds(&format!("{p}/total_ns"), s.total_ns)) }
                        td { (micros(&format!("{p}/mean_ns"), s.mean_ns)) }
                        td { (bytes(&format!("{p}/bytes"), s.bytes)) }
                        td { (rate(&format!("{p}/gb_per_s"), s.gb_per_s)) }
                    }
                }
            }
        }
    }
}
