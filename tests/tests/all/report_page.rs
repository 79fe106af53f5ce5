//! `nsys2prv-rs report --out DIR` on real conversions: its figures against numbers
//! computed here from the SQLite exports (busy time per bin, useful and
//! communication time, overlap, gaps, iteration times), every figure of the page
//! against the JSON, and the page rendered by headless Chromium (a bundled
//! multi-rank sample and a generated 1,024-rank job).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthSpec};
use rusqlite::Connection;
use serde_json::Value;

type Intervals = Vec<(u64, u64)>;

/// Sorted, merged intervals.
fn union(mut list: Intervals) -> Intervals {
    list.sort_unstable();
    let mut out: Intervals = Vec::new();
    for (b, e) in list {
        match out.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => out.push((b, e)),
        }
    }
    out
}

/// Time of `merged` within `[from, to)`.
fn within(merged: &[(u64, u64)], from: u64, to: u64) -> u64 {
    merged
        .iter()
        .map(|&(b, e)| e.min(to).saturating_sub(b.max(from)))
        .sum()
}

/// Per number k of compute kernels running: the time an NCCL kernel runs.
fn overlap(nccl: &[(u64, u64)], compute: &[(u64, u64)]) -> Vec<u64> {
    let mut edges: Vec<(u64, i32, i32)> = Vec::new();
    for &(b, e) in nccl {
        edges.extend([(b, 1, 0), (e, -1, 0)]);
    }
    for &(b, e) in compute {
        edges.extend([(b, 0, 1), (e, 0, -1)]);
    }
    edges.sort_unstable();
    let (mut n, mut c, mut last) = (0i32, 0i32, 0u64);
    let mut out = vec![0u64; 1];
    for (t, dn, dc) in edges {
        if n > 0 && t > last {
            let k = c as usize;
            if out.len() <= k {
                out.resize(k + 1, 0);
            }
            out[k] += t - last;
        }
        n += dn;
        c += dc;
        last = t;
    }
    out
}

/// One rank's GPU activity from its export, on the trace's clock (session starts
/// aligned: the earliest is 0).
struct RankActivity {
    compute: Intervals,
    nccl: Intervals,
    memory: Intervals,
}

fn epoch(db: &Connection) -> i64 {
    db.query_row(
        "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

fn intervals(db: &Connection, sql: &str, offset: i64) -> Intervals {
    let mut stmt = db.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .map(|row| {
            let (b, e) = row.unwrap();
            ((b + offset) as u64, (e + offset) as u64)
        })
        .collect()
}

fn rank_activity(db: &Connection, offset: i64) -> RankActivity {
    let kernels = "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                   JOIN StringIds s ON s.id = k.shortName WHERE s.value";
    RankActivity {
        compute: intervals(db, &format!("{kernels} NOT LIKE '%nccl%'"), offset),
        nccl: intervals(db, &format!("{kernels} LIKE '%nccl%'"), offset),
        memory: intervals(
            db,
            "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY \
             UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET",
            offset,
        ),
    }
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Converts `inputs` and writes the report of the trace into `dir/rep`.
fn convert_and_report(inputs: &[&Path], dir: &Path, extra: &[&str]) -> (PathBuf, Value) {
    let prv = dir.join("t.prv");
    let out = convert(inputs, &prv, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rep = dir.join("rep");
    let mut cmd = binary();
    cmd.arg("report")
        .arg(&prv)
        .arg("--out")
        .arg(&rep)
        .args(extra);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = serde_json::from_slice(&std::fs::read(rep.join("report.json")).unwrap()).unwrap();
    (rep, json)
}

/// The JSON's GPU of rank `r`.
fn gpu_of_rank(json: &Value, r: usize) -> &Value {
    json["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("rank {r} ("))
        })
        .unwrap_or_else(|| panic!("no GPU of rank {r}"))
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn sample(path: &str) -> Vec<PathBuf> {
    let dir = workspace_root().join(path);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    files
}

#[test]
fn gpu_figures_match_the_exports_of_the_multi_rank_sample() {
    let inputs = sample("samples/synthetic/4ranks_2hosts_2022.4");
    let dir = tempfile::tempdir().unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let threshold = 20_000; // 20 us: this sample's GPUs idle in short gaps.
    let (_, json) = convert_and_report(&refs, dir.path(), &["--gap-threshold", "20us"]);
    let edges = u64s(&json["heatmap"]["edges_ns"]);
    assert_eq!(edges.len(), 241);
    let end = json["elapsed_ns"].as_u64().unwrap();
    assert_eq!(*edges.last().unwrap(), end);
    let dbs: Vec<Connection> = inputs.iter().map(|p| open(p)).collect();
    let first = dbs.iter().map(epoch).min().unwrap();
    let mut longest: Option<(u64, u64)> = None;
    for (r, db) in dbs.iter().enumerate() {
        let a = rank_activity(db, epoch(db) - first);
        let compute = union(a.compute.clone());
        let communication = union([a.nccl.clone(), a.memory.clone()].concat());
        let all = union([compute.clone(), communication.clone()].concat());
        let g = gpu_of_rank(&json, r);
        // Busy time in every bin, compute and communication.
        let bins = |merged: &[(u64, u64)]| -> Vec<u64> {
            edges
                .windows(2)
                .map(|w| within(merged, w[0], w[1]))
                .collect()
        };
        assert_eq!(u64s(&g["bins_compute_ns"]), bins(&compute), "rank {r}");
        assert_eq!(
            u64s(&g["bins_communication_ns"]),
            bins(&communication),
            "rank {r}"
        );
        let useful = within(&compute, 0, end);
        assert_eq!(g["useful_ns"], useful, "rank {r}");
        assert_eq!(
            g["communication_ns"],
            within(&all, 0, end) - useful,
            "rank {r}"
        );
        // Overlap: NCCL time by compute kernels running meanwhile.
        let mut expected = overlap(&a.nccl, &a.compute);
        while expected.len() > 1 && expected.last() == Some(&0) {
            expected.pop();
        }
        let mut got = u64s(&g["overlap_ns"]);
        while got.len() > 1 && got.last() == Some(&0) {
            got.pop();
        }
        assert_eq!(got, expected, "rank {r}");
        // Gaps between activities, at or above the threshold.
        let gaps: Vec<(u64, u64)> = all
            .windows(2)
            .map(|w| (w[0].1, w[1].0 - w[0].1))
            .filter(|g| g.1 >= threshold)
            .collect();
        assert_eq!(g["gap_count"], gaps.len() as u64, "rank {r}");
        assert_eq!(
            g["gap_total_ns"],
            gaps.iter().map(|g| g.1).sum::<u64>(),
            "rank {r}"
        );
        let rank_longest = gaps.iter().max_by_key(|g| (g.1, std::cmp::Reverse(g.0)));
        if let Some(&(begin, duration)) = rank_longest {
            assert_eq!(g["gaps"][0]["begin_ns"], begin, "rank {r}");
            assert_eq!(g["gaps"][0]["duration_ns"], duration, "rank {r}");
            // Every gap says what the launching thread was doing.
            assert!(g["gaps"][0]["thread"]
                .as_str()
                .unwrap()
                .starts_with("rank "));
            if longest.is_none_or(|l| duration > l.1) {
                longest = Some((begin, duration));
            }
        }
    }
    let (begin, duration) = longest.expect("this sample has gaps above 20 us");
    assert_eq!(json["gaps"]["longest"][0]["duration_ns"], duration);
    assert_eq!(json["gaps"]["longest"][0]["begin_ns"], begin);
}

#[test]
fn iteration_times_match_the_exports() {
    let inputs = sample("samples/mpi_3ranks");
    let dir = tempfile::tempdir().unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let (rep, json) = convert_and_report(&refs, dir.path(), &["--iterations", "iteration"]);
    let it = &json["iterations"];
    assert_eq!(it["range"], "iteration");
    let mut means: BTreeMap<usize, f64> = BTreeMap::new();
    for (r, path) in inputs.iter().enumerate() {
        let db = open(path);
        let expected: Vec<u64> = intervals(
            &db,
            "SELECT start, end FROM NVTX_EVENTS WHERE text = 'iteration' ORDER BY start",
            0,
        )
        .iter()
        .map(|(b, e)| e - b)
        .collect();
        let task = it["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| {
                t["task"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("rank {r} ("))
            })
            .unwrap();
        let got: Vec<u64> = task["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["duration_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(got, expected, "rank {r}");
        means.insert(
            r,
            expected.iter().sum::<u64>() as f64 / expected.len() as f64,
        );
    }
    // Rank r works (r + 1) times longer: the slowest is named first.
    let slowest = means.iter().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
    assert!(it["slowest"][0]["task"]
        .as_str()
        .unwrap()
        .starts_with(&format!("rank {slowest} (")));
    let text = std::fs::read_to_string(rep.join("report.txt")).unwrap();
    assert!(text.contains("Slowest tasks"), "{text}");
    check_page_figures(&rep);
}

/// Every `data-k` figure of the page equals the JSON at that pointer (in the unit
/// the page shows), every number in a table cell is such a figure, and nothing
/// points outside the file.
pub(crate) fn check_page_figures(rep: &Path) {
    let page = std::fs::read_to_string(rep.join("report.html")).unwrap();
    let json: Value =
        serde_json::from_slice(&std::fs::read(rep.join("report.json")).unwrap()).unwrap();
    assert!(!page.contains("http:") && !page.contains("https:"));
    assert!(!page.contains("<script") && !page.contains("@import") && !page.contains("url("));
    let mut figures = 0;
    let mut rest = page.as_str();
    while let Some(at) = rest.find("<span data-k=\"") {
        rest = &rest[at + 14..];
        let (pointer, after) = rest.split_once('"').unwrap();
        let after = after.strip_prefix(" data-u=\"").unwrap();
        let (unit, after) = after.split_once("\">").unwrap();
        let (text, _) = after.split_once("</span>").unwrap();
        let value = json
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{pointer} is not in the JSON"));
        check_figure(pointer, unit, text, value);
        figures += 1;
    }
    assert!(figures > 20, "{figures} figures");
    // Table cells: names, or figures.
    let mut cells = page.as_str();
    while let Some(at) = cells.find("<td") {
        cells = &cells[at..];
        let (cell, after) = cells.split_once("</td>").unwrap();
        cells = after;
        if cell.starts_with("<td class=\"name\"") {
            continue;
        }
        let mut bare = cell.to_string();
        while let Some(b) = bare.find("<span data-k=") {
            let e = bare[b..].find("</span>").unwrap() + b + 7;
            bare.replace_range(b..e, "");
        }
        assert!(
            !bare.chars().any(|c| c.is_ascii_digit()),
            "a number that is not a figure: {cell}"
        );
    }
}

fn check_figure(pointer: &str, unit: &str, text: &str, value: &Value) {
    if text == "n/a" {
        assert!(value.is_null(), "{pointer}: n/a for {value}");
        return;
    }
    let shown: f64 = text
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{pointer}: '{text}'"));
    let v = value
        .as_f64()
        .unwrap_or_else(|| panic!("{pointer}: {value}"));
    let (expected, half_step) = match unit {
        "s" => (v / 1e9, 0.5e-6),
        "ms" => (v / 1e6, 0.5e-3),
        "us" => (v / 1e3, 0.5e-3),
        "%" => (v * 100.0, 0.05),
        "GB/s" => (v, 0.5e-3),
        "x" | "v" => (v, 0.005),
        "n" => (v, 0.0),
        other => panic!("{pointer}: unit {other}"),
    };
    assert!(
        (shown - expected).abs() <= half_step * 1.0001 + 1e-9,
        "{pointer}: page {text} {unit}, JSON {value}"
    );
}

/// Headless Chromium, when installed (required in CI).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.is_file() {
        return Some(path);
    }
    missing_tool(
        "chromium",
        &format!(
            "none at {} (set CHROMIUM); apt-get install chromium",
            path.display()
        ),
    );
    None
}

fn chromium_command(chromium: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Measures every SVG of the page after layout (a copy with this script; the page
/// itself has none) and prints the sizes into the DOM that --dump-dom returns.
const MEASURE: &str = r#"<script>
const out = [];
for (const svg of document.querySelectorAll("svg")) {
  const box = svg.getBoundingClientRect();
  const image = svg.querySelector("image");
  const ib = image ? image.getBoundingClientRect() : null;
  const clipped = [];
  for (const text of svg.querySelectorAll("text")) {
    const t = text.getBoundingClientRect();
    if (t.width > 0 && (t.left < box.left - 0.5 || t.right > box.right + 0.5 ||
                        t.top < box.top - 0.5 || t.bottom > box.bottom + 0.5)) {
      clipped.push(text.textContent);
    }
  }
  out.push({ cls: svg.getAttribute("class"), w: box.width, h: box.height,
             shown: getComputedStyle(svg.parentElement).display !== "none" && box.width > 0,
             image: ib ? [ib.width, ib.height] : null, clipped: clipped });
}
const pre = document.createElement("pre");
pre.id = "layout";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

/// Renders the page: a screenshot that is not blank, SVGs laid out with their size,
/// and no console error or network request.
pub(crate) fn check_rendering(rep: &Path, height: u32) {
    let Some(chromium) = chromium() else { return };
    let page = rep.join("report.html");
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("page.png");
    screenshot(&chromium, &profile.path().join("p1"), &page, height, &shot);

    let check = profile.path().join("check.html");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(
        &check,
        text.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .unwrap();
    let out = chromium_command(&chromium, &profile.path().join("p2"))
        .arg("--dump-dom")
        .arg(format!("file://{}", check.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let layout = dom
        .split_once("<pre id=\"layout\">")
        .and_then(|(_, r)| r.split_once("</pre>"))
        .map(|(l, _)| l.replace("&quot;", "\""))
        .unwrap_or_else(|| {
            panic!(
                "no layout in the DOM: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let svgs: Vec<Value> = serde_json::from_str(&layout).unwrap();
    let shown: Vec<&Value> = svgs.iter().filter(|s| s["shown"] == true).collect();
    assert!(shown.len() >= 2, "{layout}");
    for svg in &shown {
        let (w, h) = (svg["w"].as_f64().unwrap(), svg["h"].as_f64().unwrap());
        assert!(
            w >= 1000.0 && h >= 50.0,
            "an SVG laid out at {w}x{h}: {svg}"
        );
        // Issue 27: the bars' last tick, "100%", stood past the chart's edge.
        let clipped = svg["clipped"].as_array().unwrap();
        assert!(clipped.is_empty(), "labels cut at the chart's edge: {svg}");
        if let Some(image) = svg["image"].as_array() {
            assert!(image[0].as_f64().unwrap() >= 900.0, "{svg}");
            assert!(image[1].as_f64().unwrap() >= 10.0, "{svg}");
        }
    }
    assert!(
        shown.iter().any(|s| s["cls"] == "chart heatmap"),
        "{layout}"
    );
}

/// The screenshot has the page's content: many colours, much of it not background.
fn check_screenshot(path: &Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let background = pixels[0].to_vec();
    let content = pixels.iter().filter(|p| p[..3] != background[..3]).count();
    let colours: std::collections::HashSet<[u8; 3]> =
        pixels.iter().map(|p| [p[0], p[1], p[2]]).collect();
    assert!(
        content * 10 > pixels.len(),
        "blank screenshot: {content} of {} pixels",
        pixels.len()
    );
    assert!(colours.len() > 100, "{} colours", colours.len());
}

#[test]
fn the_page_of_the_multi_rank_sample_renders_and_holds_the_json_figures() {
    let inputs = sample("samples/synthetic/4ranks_2hosts_2022.4");
    let dir = tempfile::tempdir().unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let (rep, json) = convert_and_report(&refs, dir.path(), &["--gap-threshold", "20us"]);
    assert_eq!(json["heatmap"]["rows"].as_array().unwrap().len(), 4);
    assert!(json["heatmap"]["grouping"].is_null());
    check_page_figures(&rep);
    check_rendering(&rep, 2400);
}

#[test]
fn a_generated_job_of_1024_ranks_gets_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    // 1,024 ranks, 8 GPUs per node, a little work each.
    let paths: Vec<PathBuf> = (0..1024u32)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_16);
            spec.hostname = format!("node{:03}", rank / 8 + 1);
            spec.utc_epoch_ns += i64::from(rank) * 1_100;
            spec.seed = u64::from(rank) + 7;
            let process = &mut spec.processes[0];
            process.pid = 10_000 + rank % 8;
            process.devices = vec![rank % 8];
            process.kernels = 16;
            process.memcpys = 6;
            process.memsets = 2;
            process.syncs = 2;
            process.extra_api_calls = 4;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            let path = inputs.join(format!("rank{rank}.sqlite"));
            write_export(&spec, &path).unwrap();
            path
        })
        .collect();
    assert_eq!(paths.len(), 1024);
    let (rep, json) = convert_and_report(&[inputs.as_path()], dir.path(), &[]);
    assert_eq!(json["gpu_count"], 1024);
    let rows = json["heatmap"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 128, "one row per node");
    let grouping = json["heatmap"]["grouping"].as_str().unwrap();
    assert!(grouping.contains("1,024 GPUs") && grouping.contains("one row per node"));
    let page = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(page.contains(grouping), "the grouping is said on the page");
    check_page_figures(&rep);
    check_rendering(&rep, 3000);
}

#[test]
fn kernel_metric_means_match_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("m.sqlite");
    let mut spec = SynthSpec::small(SchemaVersion::V3_16);
    spec.processes[0].kernels = 400;
    spec.device.gpu_metric_samples = 3000;
    write_export(&spec, &input).unwrap();
    let (rep, json) = convert_and_report(&[input.as_path()], dir.path(), &[]);
    let metric = "SMs Active [Throughput %]";
    assert!(
        json["kernel_metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == metric),
        "{}",
        json["kernel_metrics"]
    );
    let db = open(&input);
    // Samples of the metric on GPU 0, and every compute kernel's executions (one
    // clock: the trace shifts both alike).
    let samples: Vec<(i64, f64)> = db
        .prepare(
            "SELECT g.timestamp, g.value FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS t \
             ON t.typeId = g.typeId AND t.metricId = g.metricId \
             WHERE t.metricName = ?1 AND (g.typeId & 255) = 0",
        )
        .unwrap()
        .query_map([metric], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(samples.len() > 100);
    let mut by_kernel: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    let mut stmt = db
        .prepare(
            "SELECT s.value, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds s ON s.id = k.shortName WHERE s.value NOT LIKE '%nccl%'",
        )
        .unwrap();
    let kernels = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap();
    for kernel in kernels {
        let (name, start, end) = kernel.unwrap();
        for (t, v) in &samples {
            if *t >= start && *t < end {
                let e = by_kernel.entry(name.clone()).or_default();
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    assert!(!by_kernel.is_empty(), "no sample fell in a kernel");
    for k in json["kernels"].as_array().unwrap() {
        let name = k["name"].as_str().unwrap();
        let got = k["metrics"][metric].as_f64();
        match by_kernel.get(name) {
            Some((sum, n)) => {
                let expected = sum / *n as f64;
                let got = got.unwrap_or_else(|| panic!("{name}: no {metric}"));
                // The trace keeps percentages x100 as integers.
                assert!(
                    (got - expected).abs() <= 0.005 + 1e-9,
                    "{name}: {got} vs {expected}"
                );
            }
            None => assert!(got.is_none(), "{name}: {got:?} without samples"),
        }
    }
    check_page_figures(&rep);
}

/// Screenshots `page` into `shot` with a window `height` pixels high (Chromium's
/// profile in `profile`): Chromium succeeds, says no console error or network
/// request, and the screenshot has content.
fn screenshot(chromium: &Path, profile: &Path, page: &Path, height: u32, shot: &Path) {
    let out = chromium_command(chromium, profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size=1300,{height}"))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    for bad in [
        "CONSOLE",
        "Uncaught",
        "net::ERR",
        "Failed to load",
        "Refused to",
    ] {
        assert!(!log.contains(bad), "chromium said {bad}:\n{log}");
    }
    check_screenshot(shot);
}

/// Renders a page of `diff` or of `report` over runs in headless Chromium: no
/// console error or network request, a screenshot with content (kept as
/// `$TMPDIR/nsys2prv-pages/NAME.png` to look at); `None` without Chromium.
pub(crate) fn render_in_chromium(page: &Path, name: &str) -> Option<PathBuf> {
    let chromium = chromium()?;
    let profile = tempfile::tempdir().unwrap();
    let shots = std::env::temp_dir().join("nsys2prv-pages");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join(format!("{name}.png"));
    screenshot(&chromium, &profile.path().join("p"), page, 2000, &shot);
    Some(shot)
}
