//! Turning command-line inputs into the list of exports to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::nsys_export::{exports_of, ExportSettings};

const EXPORT_EXT: &str = "sqlite";
const REPORT_EXTS: &[&str] = &["nsys-rep", "qdrep"];

/// Expands directories into the reports inside and reports into their exports
/// (exporting them if needed); drops repeated inputs (with a warning) so nothing
/// is translated twice.
pub fn expand(inputs: &[PathBuf], settings: &ExportSettings) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        files.extend(expand_one(input)?);
    }
    let (reports, exports): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|p| has_ext(p, REPORT_EXTS));
    let exported = exports_of(&reports, settings)?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for path in exports.into_iter().chain(exported) {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(key) {
            out.push(path);
        } else {
            tracing::warn!("{}: given more than once; translated once", path.display());
        }
    }
    Ok(out)
}

fn expand_one(input: &Path) -> Result<Vec<PathBuf>> {
    if input.is_dir() {
        let found = reports_in_dir(input)?;
        if found.is_empty() {
            bail!(
                "{}: directory holds no Nsight Systems reports (*.sqlite, *.nsys-rep, *.qdrep)",
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

/// The reports of a directory (not recursive), sorted.
fn reports_in_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut exports = BTreeSet::new();
    let mut reports = BTreeSet::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list directory", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("{}: cannot list directory", dir.display()))?
            .path();
        if !path.is_file() {
            continue;
        }
        if has_ext(&path, &[EXPORT_EXT]) {
            exports.insert(path);
        } else if has_ext(&path, REPORT_EXTS) {
            reports.insert(path);
        }
    }
    // A report with an export beside it goes through the export step (which uses
    // that export when it is complete and newer), so the export is not listed too.
    for report in &reports {
        exports.remove(&report.with_extension(EXPORT_EXT));
    }
    Ok(exports.into_iter().chain(reports).collect())
}
