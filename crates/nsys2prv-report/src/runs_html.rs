//! The page of `report` over several runs: the factors table coloured as POP
//! colours it (green from 80 %, orange from 60 %, red below), one chart per factor
//! against the GPU count, and a link to each run's own page when written beside it.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::runs::{colour, Runs};

const RUNS_STYLE: &str = r#"
td.good { background: #c6f6d5; }
td.fair { background: #feebc8; }
td.poor { background: #fed7d7; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts figure { margin: 0; background: #fff; border: 1px solid #e2e8f0; padding: 4px 8px; }
.charts figcaption { font-size: 13px; font-weight: 600; }
svg.factor .line { fill: none; stroke: #2b6cb0; stroke-width: 2; }
svg.factor .dot { fill: #2b6cb0; }
svg.factor .band-good { fill: #c6f6d5; }
svg.factor .band-fair { fill: #feebc8; }
svg.factor .band-poor { fill: #fed7d7; }
"#;

const W: f64 = 380.0;
const H: f64 = 200.0;
const LEFT: f64 = 44.0;
const BOTTOM: f64 = 26.0;
const TOP: f64 = 10.0;
const RIGHT: f64 = 14.0;

/// One factor against the GPU count: the runs in order, on a log2 axis of GPUs
/// (POP's charts), the value from 0 to at least 100 %.
fn chart(label: &str, gpus: &[usize], values: &[Option<f64>]) -> Markup {
    let max_v = values
        .iter()
        .flatten()
        .fold(1.0f64, |a, &v| a.max(v))
        .max(1.0)
        * 1.05;
    let xs: Vec<f64> = gpus.iter().map(|&g| (g.max(1) as f64).log2()).collect();
    let (x0, x1) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    let px = |i: usize| {
        if x1 > x0 {
            LEFT + (xs[i] - x0) / span * (W - LEFT - RIGHT)
        } else {
            LEFT + (i as f64 + 0.5) / values.len() as f64 * (W - LEFT - RIGHT)
        }
    };
    let py = |v: f64| TOP + (1.0 - v / max_v) * (H - TOP - BOTTOM);
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", px(i), py(v))))
        .collect();
    let band = |from: f64, to: f64, class: &str| {
        html! { rect class=(class) x=(LEFT) y=(format!("{:.1}", py(to))) width=(W - LEFT - RIGHT) height=(format!("{:.1}", py(from) - py(to))) {} }
    };
    let ticks = [0.0, 0.25, 0.5, 0.75, 1.0];
    html! {
        figure {
            figcaption { (label.trim()) }
            svg.chart.factor width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(label.trim()) {
                (band(0.0, 0.6, "band-poor"))
                (band(0.6, 0.8, "band-fair"))
                (band(0.8, max_v, "band-good"))
                @for t in ticks {
                    line.grid x1=(LEFT) x2=(W - RIGHT) y1=(format!("{:.1}", py(t))) y2=(format!("{:.1}", py(t))) {}
                    text.tick x=(LEFT - 4.0) y=(format!("{:.1}", py(t) + 4.0)) text-anchor="end" { (format!("{:.0}%", t * 100.0)) }
                }
                line.axis x1=(LEFT) x2=(W - RIGHT) y1=(H - BOTTOM) y2=(H - BOTTOM) {}
                @for (i, g) in gpus.iter().enumerate() {
                    text.tick x=(format!("{:.1}", px(i))) y=(H - 8.0) text-anchor="middle" { (g) }
                }
                polyline.line points=(points.join(" ")) {}
                @for (i, v) in values.iter().enumerate() {
                    @if let Some(v) = v {
                        circle.dot cx=(format!("{:.1}", px(i))) cy=(format!("{:.1}", py(*v))) r="3.5" {
                            title { (format!("{} GPUs: {:.1}%", gpus[i], v * 100.0)) }
                        }
                    }
                }
            }
        }
    }
}

/// The page; `links[i]`: the address of run i's own page, when written.
pub fn page(runs: &Runs, links: &[Option<String>]) -> String {
    let table = runs.table();
    let gpus: Vec<usize> = runs.runs.iter().map(|r| r.gpus).collect();
    let pct = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.1}%", v * 100.0));
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="generator" content=(format!("{} {}", runs.generator, runs.version));
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "GPU efficiency over " (runs.runs.len()) " runs" }
                style { (PreEscaped(crate::html::STYLE)) (PreEscaped(RUNS_STYLE)) }
            }
            body {
                main {
                    h1 { "GPU efficiency over " (runs.runs.len()) " runs" }
                    p.lead {
                        "BSC's GPU efficiency model per run, with the computational scalability relative to the first run ("
                        (runs.scaling) " scaling). Cells coloured as POP colours them: green from 80 %, orange from 60 %, red below."
                    }
                    @if !runs.notes.is_empty() {
                        ul.notes { @for n in &runs.notes { li { (n) } } }
                    }
                    table {
                        tr {
                            th.name { "" }
                            @for (i, r) in runs.runs.iter().enumerate() {
                                th title=(r.trace) {
                                    @match links.get(i).cloned().flatten() {
                                        Some(href) => { a href=(href) { "run " (i + 1) } }
                                        None => { "run " (i + 1) }
                                    }
                                }
                            }
                            th.name { "how" }
                        }
                        tr { td.name { "GPUs" } @for (i, r) in runs.runs.iter().enumerate() { td data-k=(format!("/runs/{i}/gpus")) { (r.gpus) } } td.name {} }
                        tr {
                            td.name { @if runs.time == "iteration" { "Median iteration (ms)" } @else { "Elapsed (ms)" } }
                            @for (i, r) in runs.runs.iter().enumerate() { td data-k=(format!("/runs/{i}/time_ns")) { (format!("{:.3}", r.time_ns / 1e6)) } }
                            td.name {}
                        }
                        tr {
                            td.name { "Useful, all GPUs (ms)" }
                            @for (i, r) in runs.runs.iter().enumerate() { td data-k=(format!("/runs/{i}/useful_ns")) { (format!("{:.3}", r.useful_ns / 1e6)) } }
                            td.name { "compute kernel time" }
                        }
                        @for (label, how, values) in &table {
                            tr {
                                td.name style=(format!("padding-left:{}px", 8 + 10 * (label.len() - label.trim_start().len()))) { (label.trim()) }
                                @for v in values { td class=(colour(*v)) { (pct(*v)) } }
                                td.name { (how) }
                            }
                        }
                    }
                    h2 { "Each factor against the GPU count" }
                    div.charts {
                        @for (label, _, values) in &table { (chart(label, &gpus, values)) }
                    }
                    h2 { "Runs" }
                    ol {
                        @for (i, r) in runs.runs.iter().enumerate() {
                            li {
                                code { (r.trace) } " — " (r.gpus) " GPUs"
                                @if let Some(href) = links.get(i).cloned().flatten() { " — " a href=(href) { "its report" } }
                            }
                        }
                    }
                    h2 { "In Paraver" }
                    p { (runs.paraver) }
                    footer { "Made by " (runs.generator) " " (runs.version) " from the traces alone. Every figure is in the JSON (--json)." }
                }
            }
        }
    };
    markup.into_string()
}
