//! The page's charts, as inline SVG written by hand: a few rectangles, lines and
//! texts per chart, sized for 4 or 4,096 GPUs. The heat maps' cells are one small
//! PNG (a pixel per cell, drawn scaled) inside the SVG: a rectangle per cell would
//! be a million elements at 4,096 GPUs.

use base64::Engine as _;
use maud::{html, Markup};

use super::model::{Heatmap, Iterations, Report};
use super::text::clip;

/// Width of a chart's plot area and of its labels' column, in px.
pub(crate) const PLOT_WIDTH: f64 = 960.0;
pub(crate) const LABEL_WIDTH: f64 = 230.0;
const AXIS_HEIGHT: f64 = 34.0;
/// Room right of the plot for the last tick's label, centred on its edge
/// ("100%", "250 ms": up to about 50 px at 11 px).
pub(crate) const RIGHT_MARGIN: f64 = 30.0;
/// Room above the first row for its label.
const TOP: f64 = 8.0;
/// Height budget of a chart with a row per GPU (or group of GPUs).
const ROWS_HEIGHT: f64 = 640.0;

/// Colours from idle (0) to busy (1).
pub const COMPUTE_RAMP: [[u8; 3]; 3] = [[247, 251, 255], [107, 174, 214], [8, 48, 107]];
pub const COMMUNICATION_RAMP: [[u8; 3]; 3] = [[255, 245, 235], [253, 141, 60], [127, 39, 4]];
pub const USEFUL_COLOUR: &str = "#2b6cb0";
pub const COMMUNICATION_COLOUR: &str = "#dd6b20";
pub const IDLE_COLOUR: &str = "#d9dde3";

/// The colour of a share on a ramp.
pub fn ramp(stops: &[[u8; 3]; 3], x: f64) -> [u8; 3] {
    let x = if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (a, b, t) = if x < 0.5 {
        (stops[0], stops[1], x * 2.0)
    } else {
        (stops[1], stops[2], (x - 0.5) * 2.0)
    };
    let mix = |i: usize| (a[i] as f64 + (b[i] as f64 - a[i] as f64) * t).round() as u8;
    [mix(0), mix(1), mix(2)]
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// Row height for `rows` rows, and every how many rows a label fits.
fn row_layout(rows: usize) -> (f64, usize) {
    let height = (ROWS_HEIGHT / rows.max(1) as f64).floor().clamp(2.0, 18.0);
    let every = (12.0 / height).ceil().max(1.0) as usize;
    (height, every)
}

/// Round tick steps (1, 2, 5 × 10^k) for an axis from 0 to `max`.
pub fn ticks(max: f64, at_most: usize) -> Vec<f64> {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return vec![0.0];
    }
    let rough = max / at_most.max(1) as f64;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|t| *t <= max * (1.0 + 1e-9))
        .collect()
}

/// A time for an axis label: `1.5 s`, `250 ms`, `40 us`.
pub fn time_label(ns: f64) -> String {
    let trim = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ns == 0.0 {
        "0".into()
    } else if ns >= 1e9 {
        format!("{} s", trim(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{} ms", trim(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} us", trim(ns / 1e3))
    } else {
        format!("{} ns", trim(ns))
    }
}

/// A one-pixel-per-cell PNG of `rows` × `columns` shares, as a data URI.
fn cells_png(cells: &[Vec<f64>], stops: &[[u8; 3]; 3]) -> String {
    let rows = cells.len().max(1);
    let columns = cells.first().map_or(1, |r| r.len().max(1));
    let mut pixels = Vec::with_capacity(rows * columns * 3);
    for row in cells {
        for &x in row {
            pixels.extend_from_slice(&ramp(stops, x));
        }
    }
    pixels.resize(rows * columns * 3, 255);
    let mut png = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png, columns as u32, rows as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let written = encoder
            .write_header()
            .and_then(|mut w| w.write_image_data(&pixels));
        written.expect("a PNG of in-memory pixels encodes");
    }
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// Row labels on the left of a chart (every `every`-th row).
fn row_labels(labels: &[&str], height: f64, every: usize) -> Markup {
    html! {
        @for (i, label) in labels.iter().enumerate() {
            @if i % every == 0 {
                text x=(LABEL_WIDTH - 6.0) y=(i as f64 * height + height / 2.0 + 4.0)
                    text-anchor="end" class="label" { (clip(label, 36)) }
            }
        }
    }
}

/// A time axis under a plot of `height` px over `[0, elapsed)`.
fn time_axis(elapsed: u64, height: f64) -> Markup {
    let scale = PLOT_WIDTH / elapsed.max(1) as f64;
    html! {
        line x1=(LABEL_WIDTH) y1=(height) x2=(LABEL_WIDTH + PLOT_WIDTH) y2=(height) class="axis" {}
        @for t in ticks(elapsed as f64, 8) {
            @let x = LABEL_WIDTH + t * scale;
            line x1=(x) y1=(height) x2=(x) y2=(height + 5.0) class="axis" {}
            text x=(x) y=(height + 18.0) text-anchor="middle" class="tick" { (time_label(t)) }
        }
    }
}

/// A utilization map: rows of the heat map, colour = share of the bin.
pub fn heatmap(report: &Report, communication: bool) -> Markup {
    let map: &Heatmap = &report.heatmap;
    let cells: Vec<Vec<f64>> = map
        .rows
        .iter()
        .map(|r| {
            if communication {
                r.communication_share.clone()
            } else {
                r.compute_share.clone()
            }
        })
        .collect();
    let stops = if communication {
        &COMMUNICATION_RAMP
    } else {
        &COMPUTE_RAMP
    };
    let (row_height, every) = row_layout(map.rows.len());
    let height = row_height * map.rows.len() as f64;
    let labels: Vec<&str> = map.rows.iter().map(|r| r.label.as_str()).collect();
    let what = if communication {
        "share of each time bin with an NCCL kernel or a memory operation running"
    } else {
        "share of each time bin with a compute kernel running"
    };
    html! {
        svg class="chart heatmap" width=(LABEL_WIDTH + PLOT_WIDTH + RIGHT_MARGIN) height=(TOP + height + AXIS_HEIGHT + 44.0)
            role="img" aria-label=(what) {
            title { (what) }
            g transform=(format!("translate(0,{TOP})")) {
            (row_labels(&labels, row_height, every))
            image x=(LABEL_WIDTH) y="0" width=(PLOT_WIDTH) height=(height)
                preserveAspectRatio="none" style="image-rendering:pixelated"
                href=(cells_png(&cells, stops)) {}
            rect x=(LABEL_WIDTH) y="0" width=(PLOT_WIDTH) height=(height) class="frame" {}
            (time_axis(report.elapsed_ns, height))
            (legend(stops, LABEL_WIDTH, height + AXIS_HEIGHT + 8.0))
            }
        }
    }
}

fn legend(stops: &[[u8; 3]; 3], x: f64, y: f64) -> Markup {
    html! {
        text x=(x - 6.0) y=(y + 11.0) text-anchor="end" class="tick" { "busy 0%" }
        @for i in 0..20 {
            rect x=(x + i as f64 * 12.0) y=(y) width="12" height="14"
                fill=(hex(ramp(stops, (i as f64 + 0.5) / 20.0))) {}
        }
        text x=(x + 246.0) y=(y + 11.0) class="tick" { "100%" }
    }
}

/// Efficiency per row: useful, communication and idle shares as stacked bars.
pub fn efficiency_bars(report: &Report) -> Markup {
    let rows = &report.heatmap.rows;
    let (row_height, every) = row_layout(rows.len());
    let bar = (row_height - if row_height > 6.0 { 2.0 } else { 0.0 }).max(1.0);
    let height = row_height * rows.len() as f64;
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    html! {
        svg class="chart bars" width=(LABEL_WIDTH + PLOT_WIDTH + RIGHT_MARGIN) height=(TOP + height + AXIS_HEIGHT + 30.0)
            role="img" aria-label="useful, communication and idle share of each GPU" {
            title { "Useful, communication and idle share of the run per GPU" }
            g transform=(format!("translate(0,{TOP})")) {
            (row_labels(&labels, row_height, every))
            @for (i, r) in rows.iter().enumerate() {
                @let y = i as f64 * row_height;
                @let useful = r.useful_share * PLOT_WIDTH;
                @let comm = r.communication_share_total * PLOT_WIDTH;
                @let idle = r.idle_share * PLOT_WIDTH;
                g {
                    title { (r.label) ": useful " (pct(r.useful_share)) ", communication "
                        (pct(r.communication_share_total)) ", idle " (pct(r.idle_share)) }
                    rect x=(LABEL_WIDTH) y=(y) width=(useful) height=(bar) fill=(USEFUL_COLOUR) {}
                    rect x=(LABEL_WIDTH + useful) y=(y) width=(comm) height=(bar) fill=(COMMUNICATION_COLOUR) {}
                    rect x=(LABEL_WIDTH + useful + comm) y=(y) width=(idle) height=(bar) fill=(IDLE_COLOUR) {}
                }
            }
            line x1=(LABEL_WIDTH) y1=(height) x2=(LABEL_WIDTH + PLOT_WIDTH) y2=(height) class="axis" {}
            @for k in 0..=4 {
                @let x = LABEL_WIDTH + PLOT_WIDTH * k as f64 / 4.0;
                line x1=(x) y1=(height) x2=(x) y2=(height + 5.0) class="axis" {}
                text x=(x) y=(height + 18.0) text-anchor="middle" class="tick" { (k * 25) "%" }
            }
            @let y = height + AXIS_HEIGHT;
            rect x=(LABEL_WIDTH) y=(y) width="12" height="12" fill=(USEFUL_COLOUR) {}
            text x=(LABEL_WIDTH + 16.0) y=(y + 10.0) class="tick" { "useful (compute kernels)" }
            rect x=(LABEL_WIDTH + 200.0) y=(y) width="12" height="12" fill=(COMMUNICATION_COLOUR) {}
            text x=(LABEL_WIDTH + 216.0) y=(y + 10.0) class="tick" { "communication (NCCL, memory operations)" }
            rect x=(LABEL_WIDTH + 480.0) y=(y) width="12" height="12" fill=(IDLE_COLOUR) {}
            text x=(LABEL_WIDTH + 496.0) y=(y + 10.0) class="tick" { "idle" }
            }
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Horizontal bars, one per row, each cut into its shares (adding up to 1) in the
/// colours of `legend`, with a 0–100 % axis and the legend below.
pub fn stage_bars(rows: &[(String, [f64; 4])], legend: &[(&str, &str); 4]) -> Markup {
    let row_height = 22.0;
    let height = row_height * rows.len() as f64;
    html! {
        svg class="chart pipeline" width=(LABEL_WIDTH + PLOT_WIDTH + RIGHT_MARGIN) height=(TOP + height + AXIS_HEIGHT + 30.0)
            role="img" aria-label="compute and bubble share of each pipeline stage" {
            title { "Compute and bubble share of each pipeline stage's span" }
            g transform=(format!("translate(0,{TOP})")) {
                @for (i, (label, shares)) in rows.iter().enumerate() {
                    @let y = i as f64 * row_height;
                    text x=(LABEL_WIDTH - 6.0) y=(y + row_height / 2.0 + 4.0) text-anchor="end" class="label" { (clip(label, 36)) }
                    g {
                        title { (label) ": compute " (pct(shares[0])) ", bubble in NCCL kernels " (pct(shares[1]))
                            ", with nothing running " (pct(shares[2])) ", in memory operations " (pct(shares[3])) }
                        @for k in 0..shares.len() {
                            @let x = LABEL_WIDTH + shares[..k].iter().sum::<f64>() * PLOT_WIDTH;
                            rect x=(x) y=(y) width=(shares[k] * PLOT_WIDTH) height=(row_height - 4.0) fill=(legend[k].1) {}
                        }
                    }
                }
                line x1=(LABEL_WIDTH) y1=(height) x2=(LABEL_WIDTH + PLOT_WIDTH) y2=(height) class="axis" {}
                @for k in 0..=4 {
                    @let x = LABEL_WIDTH + PLOT_WIDTH * k as f64 / 4.0;
                    line x1=(x) y1=(height) x2=(x) y2=(height + 5.0) class="axis" {}
                    text x=(x) y=(height + 18.0) text-anchor="middle" class="tick" { (k * 25) "%" }
                }
                @let y = height + AXIS_HEIGHT;
                @for (k, (name, colour)) in legend.iter().enumerate() {
                    @let x = LABEL_WIDTH + 240.0 * k as f64;
                    rect x=(x) y=(y) width="12" height="12" fill=(colour) {}
                    text x=(x + 16.0) y=(y + 10.0) class="tick" { (name) }
                }
            }
        }
    }
}

/// Colours of the highlighted (slowest) tasks.
const HIGHLIGHT: [&str; 5] = ["#c53030", "#d69e2e", "#805ad5", "#2f855a", "#b83280"];
/// Up to this many tasks, each gets its own grey line; above, a min–max band.
const LINES_PER_TASK: usize = 32;

/// Time of each iteration per task: a line per task (or the band of all tasks),
/// the slowest tasks in colour.
pub fn iterations_chart(it: &Iterations) -> Markup {
    let height = 260.0;
    let count = it.per_iteration.len().max(1);
    let max = it.per_iteration.iter().map(|s| s.max_ns).max().unwrap_or(0) as f64;
    let y_ticks = ticks(max, 5);
    let top = y_ticks.last().copied().unwrap_or(max).max(max).max(1.0);
    let x = |k: usize| {
        if count == 1 {
            LABEL_WIDTH + PLOT_WIDTH / 2.0
        } else {
            LABEL_WIDTH + PLOT_WIDTH * k as f64 / (count - 1) as f64
        }
    };
    let y = |ns: f64| height - height * ns / top;
    let line_of = |task: &str| -> String {
        it.tasks
            .iter()
            .find(|t| t.task == task)
            .map(|t| {
                t.iterations
                    .iter()
                    .enumerate()
                    .map(|(k, o)| format!("{:.1},{:.1}", x(k), y(o.duration_ns as f64)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    let band: String = it
        .per_iteration
        .iter()
        .enumerate()
        .map(|(k, s)| format!("{:.1},{:.1}", x(k), y(s.max_ns as f64)))
        .chain(
            it.per_iteration
                .iter()
                .enumerate()
                .rev()
                .map(|(k, s)| format!("{:.1},{:.1}", x(k), y(s.min_ns as f64))),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let mean: String = it
        .per_iteration
        .iter()
        .enumerate()
        .map(|(k, s)| format!("{:.1},{:.1}", x(k), y(s.mean_ns)))
        .collect::<Vec<_>>()
        .join(" ");
    let x_ticks = ticks((count - 1) as f64, 10);
    html! {
        svg class="chart iterations" width=(LABEL_WIDTH + PLOT_WIDTH + 70.0) height=(TOP * 2.0 + height + AXIS_HEIGHT + 20.0)
            role="img" aria-label="time of each iteration per task" {
            title { "Time of each iteration (" (it.range) ") per task" }
            g transform=(format!("translate(0,{})", TOP * 2.0)) {
            @if it.tasks.len() <= LINES_PER_TASK {
                @for t in &it.tasks {
                    polyline points=(line_of(&t.task)) class="task-line" { title { (t.task) } }
                }
            } @else {
                polygon points=(band) class="band" { title { "fastest to slowest task" } }
                polyline points=(mean) class="mean-line" { title { "mean over tasks" } }
            }
            @for (i, s) in it.slowest.iter().enumerate().take(3) {
                polyline points=(line_of(&s.task)) stroke=(HIGHLIGHT[i]) class="slow-line" { title { (s.task) } }
                @if count <= 60 {
                    @if let Some(t) = it.tasks.iter().find(|t| t.task == s.task) {
                        @for (k, o) in t.iterations.iter().enumerate() {
                            circle cx=(x(k)) cy=(y(o.duration_ns as f64)) r="3" fill=(HIGHLIGHT[i]) {}
                        }
                    }
                }
                text x=(LABEL_WIDTH - 10.0) y=(14.0 + 16.0 * i as f64) text-anchor="end" class="label"
                    style=(format!("fill:{}", HIGHLIGHT[i])) { (clip(&s.task, 30)) }
            }
            line x1=(LABEL_WIDTH) y1="0" x2=(LABEL_WIDTH) y2=(height) class="axis" {}
            @for t in &y_ticks {
                line x1=(LABEL_WIDTH - 4.0) y1=(y(*t)) x2=(LABEL_WIDTH + PLOT_WIDTH) y2=(y(*t)) class="grid" {}
                text x=(LABEL_WIDTH + PLOT_WIDTH + 4.0) y=(y(*t) + 4.0) class="tick" { (time_label(*t)) }
            }
            line x1=(LABEL_WIDTH) y1=(height) x2=(LABEL_WIDTH + PLOT_WIDTH) y2=(height) class="axis" {}
            @for t in &x_ticks {
                @let k = *t as usize;
                text x=(x(k)) y=(height + 18.0) text-anchor="middle" class="tick" { (k + 1) }
            }
            text x=(LABEL_WIDTH + PLOT_WIDTH / 2.0) y=(height + AXIS_HEIGHT) text-anchor="middle" class="tick" { "iteration" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_and_ticks() {
        assert_eq!(ramp(&COMPUTE_RAMP, 0.0), COMPUTE_RAMP[0]);
        assert_eq!(ramp(&COMPUTE_RAMP, 1.0), COMPUTE_RAMP[2]);
        assert_eq!(ramp(&COMPUTE_RAMP, 0.5), COMPUTE_RAMP[1]);
        assert_eq!(ramp(&COMPUTE_RAMP, f64::NAN), COMPUTE_RAMP[0]);
        assert_eq!(ticks(1000.0, 5), [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        assert_eq!(ticks(0.0, 5), [0.0]);
        assert_eq!(time_label(1.5e9), "1.5 s");
        assert_eq!(time_label(250e6), "250 ms");
        assert_eq!(time_label(40e3), "40 us");
        assert_eq!(row_layout(4), (18.0, 1));
        assert_eq!(row_layout(256), (2.0, 6));
    }

    #[test]
    fn cells_become_a_png() {
        let uri = cells_png(&[vec![0.0, 1.0], vec![0.5, 0.25]], &COMPUTE_RAMP);
        let data = uri.strip_prefix("data:image/png;base64,").unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 2));
        assert_eq!(&buf[3..6], &COMPUTE_RAMP[2]);
    }
}
