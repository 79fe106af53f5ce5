//! The report's files: JSON (serde), CSV tables (csv) and the page, written only
//! where asked, each under a temporary name (removed by an interrupt) and renamed
//! into place (`atomic-output`). A file or directory that is there already is
//! replaced only when the report wrote it (a page or JSON that names the
//! generator, a directory with the marker file).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::model::{Report, GENERATOR};
use crate::UsageError;
use atomic_output::cleanup::{self, Tracked};
pub use atomic_output::MARKER;

/// Bytes of a file read to find the generator's name.
const SNIFF: usize = 4096;

/// Refuses a target file that exists and is not a report's.
pub fn check_file_target(path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let ours = path.is_file()
        && std::fs::File::open(path)
            .and_then(|f| {
                use std::io::Read;
                let mut head = Vec::with_capacity(SNIFF);
                f.take(SNIFF as u64).read_to_end(&mut head)?;
                let head = String::from_utf8_lossy(&head);
                Ok(head.contains(GENERATOR) || head.contains(crate::diff::DIFF_GENERATOR))
            })
            .unwrap_or(false);
    if ours {
        Ok(())
    } else {
        Err(UsageError(format!(
            "{}: exists and was not written by {GENERATOR}; not replacing it (choose another name)",
            path.display()
        ))
        .into())
    }
}

/// Refuses a target directory that exists, is not empty and has no marker.
pub fn check_dir_target(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if dir.is_dir() && (empty || dir.join(MARKER).is_file()) {
        Ok(())
    } else {
        Err(UsageError(format!(
            "{}: exists and was not made by {GENERATOR} (no {MARKER} in it); not replacing it (choose another directory)",
            dir.display()
        ))
        .into())
    }
}

/// The files of a report directory (`--out DIR`): (file name, content).
pub fn all(report: &Report) -> Result<Vec<(String, Vec<u8>)>> {
    let mut set = vec![
        ("report.json".to_string(), json(report)),
        (
            "report.html".to_string(),
            crate::html::page(report).into_bytes(),
        ),
        (
            "report.txt".to_string(),
            report.text(usize::MAX).into_bytes(),
        ),
    ];
    set.extend(csv_tables(report)?);
    Ok(set)
}

/// Writes `bytes` to `path` under a temporary name, then renames it into place.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_output::install_file(path, bytes)
        .with_context(|| format!("{}: cannot write the report", path.display()))
}

/// A staging directory beside `dir`, removed by an interrupt.
fn temporary(dir: &Path) -> std::io::Result<Tracked> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    atomic_output::staging_dir(atomic_output::parent_dir(dir), &name)
}

/// Runs `fill` on a temporary; removes the temporary when it fails.
fn filled(
    temp: Tracked,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<Tracked> {
    match fill(temp.path()) {
        Ok(()) => Ok(temp),
        Err(e) => {
            cleanup::remove_all(temp.path());
            Err(e)
        }
    }
}

/// Writes the files into a staging directory beside `dir`, then puts it in the
/// place of `dir` (whose earlier content, checked to be a report's, is removed).
pub fn write_dir(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<Vec<PathBuf>> {
    let fill = |stage: &Path| -> std::io::Result<()> {
        let fresh = stage.join("new");
        std::fs::create_dir(&fresh)?;
        for (file, bytes) in files {
            std::fs::write(fresh.join(file), bytes)?;
        }
        std::fs::write(fresh.join(MARKER), format!("{GENERATOR}\n"))
    };
    let installed = temporary(dir)
        .and_then(|stage| filled(stage, fill))
        .and_then(|stage| {
            let moved = cleanup::critical(|| {
                if dir.exists() {
                    std::fs::rename(dir, stage.path().join("old"))?;
                }
                std::fs::rename(stage.path().join("new"), dir)
            });
            cleanup::remove_all(stage.path());
            moved
        });
    installed.with_context(|| format!("{}: cannot write the report", dir.display()))?;
    Ok(files.iter().map(|(f, _)| dir.join(f)).collect())
}

/// `value` as the JSON files hold it: pretty, with a final newline.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("a report serialises");
    text.push(b'\n');
    text
}

fn csv_of<R: Serialize>(rows: impl IntoIterator<Item = R>) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    Ok(writer.into_inner().map_err(|e| e.into_error())?)
}

/// A table whose columns are known only at run time (a header, then rows).
fn csv_rows(header: &[String], rows: impl IntoIterator<Item = Vec<String>>) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header)?;
    for row in rows {
        writer.write_record(&row)?;
    }
    Ok(writer.into_inner().map_err(|e| e.into_error())?)
}

#[derive(Serialize)]
struct GpuRow<'a> {
    gpu: &'a str,
    task: usize,
    device: u32,
    streams: usize,
    useful_ns: u64,
    communication_ns: u64,
    idle_ns: u64,
    elapsed_ns: u64,
    node: &'a str,
    gap_count: u64,
    gap_total_ns: u64,
}

#[derive(Serialize)]
struct StatsRow<'a> {
    name: &'a str,
    count: u64,
    total_ns: u64,
    mean_ns: f64,
    min_ns: u64,
    max_ns: u64,
    bytes: Option<u64>,
}

impl<'a> From<&'a super::model::NamedStats> for StatsRow<'a> {
    fn from(s: &'a super::model::NamedStats) -> Self {
        StatsRow {
            name: &s.name,
            count: s.count,
            total_ns: s.total_ns,
            mean_ns: s.mean_ns,
            min_ns: s.min_ns,
            max_ns: s.max_ns,
            bytes: s.bytes,
        }
    }
}

#[derive(Serialize)]
struct NcclRow<'a> {
    name: &'a str,
    count: u64,
    total_ns: u64,
    mean_ns: f64,
    min_ns: u64,
    max_ns: u64,
    bytes: Option<u64>,
    ranks: usize,
    algorithm_gb_per_s: Option<f64>,
    bus_gb_per_s: Option<f64>,
}

#[derive(Serialize)]
struct IterationRow<'a> {
    range: &'a str,
    task: &'a str,
    iteration: usize,
    begin_ns: u64,
    duration_ns: u64,
}

#[derive(Serialize)]
struct PipelineRow {
    stage: usize,
    iteration: usize,
    gpus: usize,
    span_ns: u64,
    bubble_ns: u64,
    in_nccl_ns: u64,
    idle_ns: u64,
    share: Option<f64>,
}

#[derive(Serialize)]
struct GapRow<'a> {
    gpu: &'a str,
    begin_ns: u64,
    duration_ns: u64,
    thread: &'a str,
    call: Option<&'a str>,
    nvtx: Option<&'a str>,
}

#[derive(Serialize)]
struct BinRow<'a> {
    gpu: &'a str,
    bin: usize,
    begin_ns: u64,
    end_ns: u64,
    compute_ns: u64,
    communication_ns: u64,
}

/// The CSV tables: (file name, content).
pub fn csv_tables(r: &Report) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    files.push((
        "gpus.csv".to_string(),
        csv_of(r.gpus.iter().map(|g| GpuRow {
            gpu: &g.name,
            task: g.task,
            device: g.device,
            streams: g.streams,
            useful_ns: g.useful_ns,
            communication_ns: g.communication_ns,
            idle_ns: g.idle_ns,
            elapsed_ns: r.elapsed_ns,
            node: &g.node,
            gap_count: g.gap_count,
            gap_total_ns: g.gap_total_ns,
        }))?,
    ));
    let mut model = vec![
        ("elapsed_ns".to_string(), Some(r.elapsed_ns as f64)),
        ("gpus".to_string(), Some(r.gpus.len() as f64)),
    ];
    if let Some(m) = &r.efficiency {
        model.extend([
            ("load_balance".to_string(), m.load_balance),
            (
                "communication_efficiency".to_string(),
                m.communication_efficiency,
            ),
            (
                "orchestration_efficiency".to_string(),
                Some(m.orchestration_efficiency),
            ),
            (
                "parallel_efficiency".to_string(),
                Some(m.parallel_efficiency),
            ),
        ]);
    }
    files.push((
        "efficiency.csv".to_string(),
        csv_rows(
            &["metric".into(), "value".into()],
            model
                .into_iter()
                .map(|(k, v)| vec![k, v.map_or(String::new(), |v| v.to_string())]),
        )?,
    ));
    let mut header: Vec<String> = [
        "kernel", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "share",
    ]
    .map(String::from)
    .to_vec();
    header.extend(r.kernel_metrics.iter().cloned());
    files.push((
        "kernels.csv".to_string(),
        csv_rows(
            &header,
            r.kernels.iter().map(|k| {
                let s = &k.stats;
                let mut row = vec![
                    s.name.clone(),
                    s.count.to_string(),
                    s.total_ns.to_string(),
                    s.mean_ns.to_string(),
                    s.min_ns.to_string(),
                    s.max_ns.to_string(),
                    k.share.to_string(),
                ];
                row.extend(
                    r.kernel_metrics
                        .iter()
                        .map(|m| k.metrics.get(m).map_or(String::new(), |v| v.to_string())),
                );
                row
            }),
        )?,
    ));
    files.push((
        "nccl.csv".to_string(),
        csv_of(r.nccl.iter().map(|c| NcclRow {
            name: &c.stats.name,
            count: c.stats.count,
            total_ns: c.stats.total_ns,
            mean_ns: c.stats.mean_ns,
            min_ns: c.stats.min_ns,
            max_ns: c.stats.max_ns,
            bytes: c.stats.bytes,
            ranks: c.ranks,
            algorithm_gb_per_s: c.algorithm_gb_per_s,
            bus_gb_per_s: c.bus_gb_per_s,
        }))?,
    ));
    files.push((
        "mpi.csv".to_string(),
        csv_of(r.mpi.iter().map(StatsRow::from))?,
    ));
    files.push((
        "memory.csv".to_string(),
        csv_of(r.memory.iter().map(StatsRow::from))?,
    ));
    let mut overlap_header = vec!["gpu".to_string(), "nccl_ns".to_string()];
    overlap_header.extend((0..r.overlap.columns).map(|k| format!("share_{k}_compute")));
    files.push((
        "overlap.csv".to_string(),
        csv_rows(
            &overlap_header,
            r.overlap.rows.iter().map(|row| {
                let mut cells = vec![r.gpus[row.gpu].name.clone(), row.nccl_ns.to_string()];
                cells.extend(row.shares.iter().map(f64::to_string));
                cells
            }),
        )?,
    ));
    files.push((
        "gaps.csv".to_string(),
        csv_of(r.gpus.iter().flat_map(|g| {
            g.gaps.iter().map(move |gap| GapRow {
                gpu: &g.name,
                begin_ns: gap.begin_ns,
                duration_ns: gap.duration_ns,
                thread: &gap.thread,
                call: gap.call.as_deref(),
                nvtx: gap.nvtx.as_deref(),
            })
        }))?,
    ));
    let edges = &r.heatmap.edges_ns;
    files.push((
        "bins.csv".to_string(),
        csv_of(r.gpus.iter().flat_map(|g| {
            (0..g.bins_compute_ns.len()).map(move |b| BinRow {
                gpu: &g.name,
                bin: b,
                begin_ns: edges[b],
                end_ns: edges[b + 1],
                compute_ns: g.bins_compute_ns[b],
                communication_ns: g.bins_communication_ns[b],
            })
        }))?,
    ));
    if let Some(it) = &r.iterations {
        files.push((
            "iterations.csv".to_string(),
            csv_of(it.tasks.iter().flat_map(|t| {
                t.iterations.iter().enumerate().map(|(k, o)| IterationRow {
                    range: &it.range,
                    task: &t.task,
                    iteration: k + 1,
                    begin_ns: o.begin_ns,
                    duration_ns: o.duration_ns,
                })
            }))?,
        ));
    }
    if let Some(p) = &r.pipeline {
        files.push((
            "pipeline.csv".to_string(),
            csv_of(p.stages.iter().flat_map(|s| {
                s.per_iteration.iter().map(move |i| PipelineRow {
                    stage: s.stage,
                    iteration: i.iteration,
                    gpus: i.gpus,
                    span_ns: i.span_ns,
                    bubble_ns: i.bubble_ns,
                    in_nccl_ns: i.in_nccl_ns,
                    idle_ns: i.idle_ns,
                    share: i.share,
                })
            }))?,
        ));
    }
    Ok(files)
}
