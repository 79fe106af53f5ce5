//! Turning command-line inputs into the list of exports to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::nsys_export::{existing_export, export_all, ExportSettings};
use crate::output_set::MARKER;

const EXPORT_EXT: &str = "sqlite";
const REPORT_EXTS: &[&str] = &["nsys-rep", "qdrep"];

/// One report to translate: its `.sqlite` export, and the name the user gave
/// (the `.nsys-rep` for a report read through an export), which messages and
/// the rank fallback use.
#[derive(Clone, Debug)]
pub struct Input {
    pub export: PathBuf,
    pub name: PathBuf,
}

/// A report as found on disk, before any export.
#[derive(Clone, Debug)]
pub enum Found {
    /// A `.sqlite`, or a report whose usable export exists (beside it or cached).
    Ready(Input),
    /// A `.nsys-rep`/`.qdrep` that `nsys export` must convert first.
    NeedsExport(PathBuf),
}

/// Expands directories into the reports inside and finds each report's export
/// without creating anything (for `--dry-run` too).
pub fn find(inputs: &[PathBuf], settings: &ExportSettings) -> Result<Vec<Found>> {
    let files = report_files(inputs)?;
    let mut found = Vec::with_capacity(files.len());
    for file in files {
        if !has_ext(&file, REPORT_EXTS) {
            found.push(Found::Ready(Input {
                export: file.clone(),
                name: file,
            }));
        } else if let Some(export) = existing_export(&file, settings)? {
            found.push(Found::Ready(Input { export, name: file }));
        } else {
            found.push(Found::NeedsExport(file));
        }
    }
    Ok(found)
}

/// The report files the inputs name: files as given, directories expanded.
pub fn report_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        files.extend(expand_one(input)?);
    }
    Ok(files)
}

/// A report ready to translate, or the reason it cannot be (its export failed).
pub struct Prepared {
    pub name: PathBuf,
    pub export: Result<Input>,
}

/// [`find`], then exports the reports that need it (in parallel); drops repeated
/// inputs (with a warning) so nothing is translated twice. A failed export stops
/// here unless `keep_failures` (`--skip-bad`), which keeps it as a failed report.
pub fn expand(
    inputs: &[PathBuf],
    settings: &ExportSettings,
    keep_failures: bool,
) -> Result<Vec<Prepared>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut repeated = Vec::new();
    for prepared in prepare(find(inputs, settings)?, settings, keep_failures)? {
        let key = match &prepared.export {
            Ok(input) => input.export.clone(),
            Err(_) => prepared.name.clone(),
        };
        let key = std::fs::canonicalize(&key).unwrap_or(key);
        if seen.insert(key) {
            out.push(prepared);
        } else {
            repeated.push(format!(
                "{}: given more than once; translated once",
                prepared.name.display()
            ));
        }
    }
    warn_repeated(&repeated);
    Ok(out)
}

/// One warning for the inputs given more than once.
pub fn warn_repeated(lines: &[String]) {
    crate::convert::warn_grouped(lines, |n| {
        format!("{n} inputs given more than once, each translated once")
    });
}

/// Exports the `found` reports that need it (in parallel). A failed export stops
/// here unless `keep_failures`, which keeps it as a failed report.
pub fn prepare(
    found: Vec<Found>,
    settings: &ExportSettings,
    keep_failures: bool,
) -> Result<Vec<Prepared>> {
    let to_export: Vec<PathBuf> = found
        .iter()
        .filter_map(|f| match f {
            Found::NeedsExport(report) => Some(report.clone()),
            Found::Ready(_) => None,
        })
        .collect();
    let mut exported = export_all(&to_export, settings)?.into_iter();
    let mut out = Vec::with_capacity(found.len());
    for f in found {
        let (name, export) = match f {
            Found::Ready(input) => (input.name.clone(), Ok(input)),
            Found::NeedsExport(name) => {
                let export = exported.next().expect("one export per report");
                let input = export.map(|export| Input {
                    export,
                    name: name.clone(),
                });
                (name, input)
            }
        };
        match export {
            Err(e) if !keep_failures => return Err(e),
            export => out.push(Prepared { name, export }),
        }
    }
    Ok(out)
}

fn expand_one(input: &Path) -> Result<Vec<PathBuf>> {
    if input.is_dir() {
        let found = reports_in_dir(input)?;
        if found.is_empty() {
            bail!(
                "{}: directory holds no Nsight Systems reports (*.sqlite, *.nsys-rep, *.qdrep), in it or in its subdirectories",
                input.display()
            );
        }
        return Ok(found);
    }
    if !input.exists() {
        bail!("{}: no such file", input.display());
    }
    // A FIFO or a device would block or stream forever.
    if !input.is_file() {
        bail!(
            "{}: not a regular file; give an Nsight Systems report or its .sqlite export",
            input.display()
        );
    }
    Ok(vec![input.to_path_buf()])
}

fn has_ext(path: &Path, exts: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The reports under a directory and its subdirectories, sorted (exports, then
/// reports). Slurm jobs write reports into per-node or per-step directories.
/// Left out: directories the tool made (they hold its marker file: `NAME.cache/`
/// with exports of reports found anyway, `NAME.parts/`, views, report pages),
/// hidden directories (staging directories, file-system snapshots), and
/// symbolic links to directories (no loops). A subdirectory that cannot be
/// listed is skipped with a warning.
fn reports_in_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut exports = BTreeSet::new();
    let mut reports = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = match std::fs::read_dir(&current) {
            Ok(entries) => entries,
            Err(e) if current == dir => {
                return Err(e).with_context(|| format!("{}: cannot list directory", dir.display()))
            }
            Err(e) => {
                tracing::warn!(
                    "{}: cannot list directory ({e}); skipped",
                    current.display()
                );
                continue;
            }
        };
        for entry in entries {
            let entry =
                entry.with_context(|| format!("{}: cannot list directory", current.display()))?;
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if searchable(&path) {
                    pending.push(path);
                }
                continue;
            }
            if !path.is_file() {
                continue;
            }
            if has_ext(&path, &[EXPORT_EXT]) {
                exports.insert(path);
            } else if has_ext(&path, REPORT_EXTS) {
                reports.insert(path);
            }
        }
    }
    // A report with an export beside it goes through the export step (which uses
    // that export when it is complete and newer), so the export is not listed too.
    for report in &reports {
        exports.remove(&report.with_extension(EXPORT_EXT));
    }
    Ok(exports.into_iter().chain(reports).collect())
}

/// A subdirectory to search: not hidden, not made by the tool.
fn searchable(dir: &Path) -> bool {
    let hidden = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'));
    !hidden && !dir.join(MARKER).exists()
}
