//! `diff`'s page: the two runs side by side, the changes as bars (red: more time
//! in NEW, green: less), one self-contained file like the report's page (inline
//! CSS, no script, nothing fetched).

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::diff::{signed_percent, Diff, RowDiff, Side};
use crate::text::millis;

const DIFF_STYLE: &str = r#"
.verdict { font-size: 17px; background: #fff; border-left: 6px solid #2b6cb0; padding: 8px 14px; margin: 10px 0; }
.verdict.slower { border-color: #c53030; }
.verdict.faster { border-color: #2f855a; }
td.bar { width: 220px; padding: 2px 4px; }
.bar-track { position: relative; height: 12px; background: #f7fafc; }
.bar-track .mid { position: absolute; left: 50%; top: 0; bottom: 0; border-left: 1px solid #a0aec0; }
.bar-track .up { position: absolute; left: 50%; top: 1px; height: 10px; background: #e53e3e; }
.bar-track .down { position: absolute; right: 50%; top: 1px; height: 10px; background: #38a169; }
td.new { color: #2b6cb0; }
td.vanished { color: #718096; }
tr.straggler td { background: #fff5f5; }
"#;

/// A bar of `delta` against `scale` (the largest |delta| of its table), red up, green down.
fn bar(delta: f64, scale: f64) -> Markup {
    let width = if scale > 0.0 {
        (delta.abs() / scale * 50.0).min(50.0)
    } else {
        0.0
    };
    let class = if delta > 0.0 { "up" } else { "down" };
    html! {
        div.bar-track {
            div.mid {}
            @if width > 0.0 {
                div class=(class) style=(format!("width:{width:.2}%")) {}
            }
        }
    }
}

pub fn page(d: &Diff) -> String {
    let title = format!("diff: {} → {}", d.base.trace, d.new.trace);
    let direction = match d.measure.change {
        Some(c) if c >= 0.005 => "verdict slower",
        Some(c) if c <= -0.005 => "verdict faster",
        _ => "verdict",
    };
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="generator" content=(format!("{} {}", d.generator, d.version));
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(crate::html::STYLE)) (PreEscaped(DIFF_STYLE)) }
            }
            body {
                main {
                    h1 { "What changed between two runs" }
                    p.lead {
                        "BASE " code { (d.base.trace) } " (" (d.base.tasks) " tasks, " (d.base.gpus) " GPUs, "
                        (crate::text::seconds(d.base.elapsed_ns)) " s) and NEW " code { (d.new.trace) }
                        " (" (d.new.tasks) " tasks, " (d.new.gpus) " GPUs, " (crate::text::seconds(d.new.elapsed_ns)) " s)."
                    }
                    div class=(direction) data-k="/verdict" { (d.verdict) }
                    @if d.per_gpu_note.is_some() || !d.notes.is_empty() {
                        ul.notes {
                            @if let Some(n) = &d.per_gpu_note { li { (n) } }
                            @for n in &d.notes { li { (n) } }
                        }
                    }
                    (efficiency(d))
                    (iterations(d))
                    (rows("kernels", "Kernels", "kernel", &d.kernels, false))
                    (rows("nccl", "NCCL per collective", "collective", &d.nccl, true))
                    (rows("nccl_sizes", "NCCL per collective and message size", "collective and size", &d.nccl_sizes, true))
                    (rows("memory", "Memory operations", "operation", &d.memory, false))
                    (rows("nvtx", "NVTX ranges", "range", &d.nvtx, false))
                    (gaps(d))
                    h2 { "In Paraver" }
                    p { (d.paraver) }
                    footer {
                        "Made by " (d.generator) " " (d.version)
                        " from the two traces alone. Every figure is in the diff's JSON (--json)."
                    }
                }
            }
        }
    };
    markup.into_string()
}

fn efficiency(d: &Diff) -> Markup {
    let pct = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0));
    let scale = d
        .gpu_time
        .iter()
        .map(|t| (t.new_ns_per_gpu - t.base_ns_per_gpu).abs())
        .fold(0.0, f64::max);
    html! {
        h2 { "Efficiency and GPU time" }
        table {
            tr { th.name { "" } th { "BASE" } th { "NEW" } th { "change" } }
            @for (i, f) in d.efficiency.iter().enumerate() {
                tr {
                    td.name { (f.factor) }
                    td data-k=(format!("/efficiency/{i}/base")) { (pct(f.base)) }
                    td data-k=(format!("/efficiency/{i}/new")) { (pct(f.new)) }
                    td { (f.delta.map_or("n/a".into(), |x| format!("{:+.1} pt", x * 100.0))) }
                }
            }
        }
        table {
            tr { th.name { "per GPU" } th { "BASE ms" } th { "NEW ms" } th { "change" } th { "delta" } }
            @for (i, t) in d.gpu_time.iter().enumerate() {
                tr {
                    td.name { (t.what) }
                    td data-k=(format!("/gpu_time/{i}/base_ns_per_gpu")) { (millis(t.base_ns_per_gpu)) }
                    td data-k=(format!("/gpu_time/{i}/new_ns_per_gpu")) { (millis(t.new_ns_per_gpu)) }
                    td { (signed_percent(t.change)) }
                    td.bar { (bar(t.new_ns_per_gpu - t.base_ns_per_gpu, scale)) }
                }
            }
        }
    }
}

fn iterations(d: &Diff) -> Markup {
    let Some(it) = &d.iterations else {
        return html! {};
    };
    let scale = it
        .ranks
        .iter()
        .filter_map(|r| r.change)
        .fold(0.0, |a: f64, c| a.max(c.abs()));
    let cell = |x: Option<f64>| x.map_or("-".into(), millis);
    html! {
        h2 { "Iterations (" (it.range) ") per rank" }
        p { "Median and spread (Q3 − Q1) of each rank's iterations; rank k of BASE against rank k of NEW. The iteration time of a run is the median, over iterations, of the slowest rank's." }
        table {
            tr {
                th.name { "rank" } th { "BASE n" } th { "median ms" } th { "spread ms" }
                th { "NEW n" } th { "median ms" } th { "spread ms" } th { "change" } th { "" }
            }
            @for r in &it.ranks {
                tr class=[it.stragglers.contains(&r.rank).then_some("straggler")] {
                    td.name { (r.new_task.as_deref().or(r.base_task.as_deref()).unwrap_or("?")) }
                    td { (r.base.map_or("-".into(), |x| x.count.to_string())) }
                    td data-k=(format!("/iterations/ranks/{}/base/median_ns", r.rank)) { (cell(r.base.map(|x| x.median_ns))) }
                    td { (cell(r.base.map(|x| x.spread_ns))) }
                    td { (r.new.map_or("-".into(), |x| x.count.to_string())) }
                    td data-k=(format!("/iterations/ranks/{}/new/median_ns", r.rank)) { (cell(r.new.map(|x| x.median_ns))) }
                    td { (cell(r.new.map(|x| x.spread_ns))) }
                    td { (signed_percent(r.change)) }
                    td.bar { (bar(r.change.unwrap_or(0.0), scale)) }
                }
            }
        }
    }
}

/// Rows of a name table shown on the page.
const PAGE_ROWS: usize = 30;

fn rows(key: &str, title: &str, what: &str, list: &[RowDiff], bandwidth: bool) -> Markup {
    if list.is_empty() {
        return html! {};
    }
    let scale = list
        .iter()
        .map(|r| r.delta_ns_per_gpu.abs())
        .fold(0.0, f64::max);
    let side = |s: &Option<Side>| -> [String; 4] {
        match s {
            Some(s) => [
                s.count.to_string(),
                millis(s.total_ns as f64),
                format!("{:.3}", s.mean_ns / 1e3),
                s.bus_gb_per_s.map_or("n/a".into(), |x| format!("{x:.2}")),
            ],
            None => ["-".into(), "-".into(), "-".into(), "-".into()],
        }
    };
    html! {
        h2 { (title) }
        p { (list.len()) " " (what) "s, by contribution to the time difference (delta of the time per GPU); the first " (PAGE_ROWS.min(list.len())) " shown." }
        table {
            tr {
                th.name { (what) }
                th { "BASE n" } th { "total ms" } th { "mean us" } @if bandwidth { th { "bus GB/s" } }
                th { "NEW n" } th { "total ms" } th { "mean us" } @if bandwidth { th { "bus GB/s" } }
                th { "delta ms/GPU" } th { "change" } th { "" }
            }
            @for (i, r) in list.iter().take(PAGE_ROWS).enumerate() {
                @let b = side(&r.base);
                @let n = side(&r.new);
                @let (status, class) = match (&r.base, &r.new) {
                    (None, Some(_)) => ("new".to_string(), Some("new")),
                    (Some(_), None) => ("vanished".to_string(), Some("vanished")),
                    _ => (signed_percent(r.change), None),
                };
                tr {
                    td.name title=(r.grouped.join("\n")) {
                        (r.name)
                        @if !r.grouped.is_empty() { " (" (r.grouped.len()) " names)" }
                    }
                    td { (b[0]) } td data-k=(format!("/{key}/{i}/base/total_ns")) { (b[1]) } td { (b[2]) }
                    @if bandwidth { td { (b[3]) } }
                    td { (n[0]) } td data-k=(format!("/{key}/{i}/new/total_ns")) { (n[1]) } td { (n[2]) }
                    @if bandwidth { td { (n[3]) } }
                    td data-k=(format!("/{key}/{i}/delta_ns_per_gpu")) { (format!("{:+.3}", r.delta_ns_per_gpu / 1e6)) }
                    td class=[class] { (status) }
                    td.bar { (bar(r.delta_ns_per_gpu, scale)) }
                }
            }
        }
    }
}

fn gaps(d: &Diff) -> Markup {
    let g = &d.gaps;
    html! {
        h2 { "GPU idle gaps" }
        p {
            "Gaps of at least " (millis(g.threshold_ns as f64)) " ms: BASE " (g.base_count) " gaps, "
            (millis(g.base_total_ns as f64)) " ms; NEW " (g.new_count) " gaps, " (millis(g.new_total_ns as f64)) " ms."
        }
        @if !g.calls.is_empty() {
            table {
                tr { th.name { "the launching thread was in (the longest gaps of each GPU)" } th { "BASE n" } th { "BASE ms" } th { "NEW n" } th { "NEW ms" } }
                @for c in g.calls.iter().take(PAGE_ROWS) {
                    tr {
                        td.name { (c.call) }
                        td { (c.base_count) } td { (millis(c.base_total_ns as f64)) }
                        td { (c.new_count) } td { (millis(c.new_total_ns as f64)) }
                    }
                }
            }
        }
    }
}
