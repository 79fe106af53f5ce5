//! Turning command-line inputs into the list of exports to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

const EXPORT_EXT: &str = "sqlite";
const REPORT_EXTS: &[&str] = &["nsys-rep", "qdrep"];

/// Expands directories into the reports inside, and reports into their exports;
/// drops repeated inputs (with a warning) so nothing is translated twice.
pub fn expand(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for input in inputs {
        for path in expand_one(input)? {
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.insert(key) {
                out.push(path);
            } else {
                tracing::warn!("{}: given more than once; translated once", path.display());
            }
        }
    }
    Ok(out)
}

fn expand_one(input: &Path) -> Result<Vec<PathBuf>> {
    if input.is_dir() {
        let found = reports_in_dir(input)?;
        if found.is_empty() {
            bail!(
                "{}: directory holds no Nsight Systems exports (*.sqlite)",
                input.display()
            );
        }
        return Ok(found);
    }
    if has_ext(input, REPORT_EXTS) {
        return Ok(vec![export_of_report(input)?]);
    }
    if !input.exists() {
        bail!("{}: no such file", input.display());
    }
    Ok(vec![input.to_path_buf()])
}

fn has_ext(path: &Path, exts: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The exports in a directory (not recursive), sorted; a report is used through its
/// export when one sits beside it.
fn reports_in_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list directory", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("{}: cannot list directory", dir.display()))?
            .path();
        if has_ext(&path, &[EXPORT_EXT]) {
            found.insert(path);
        } else if has_ext(&path, REPORT_EXTS) {
            found.insert(export_of_report(&path)?);
        }
    }
    Ok(found.into_iter().collect())
}

/// `X.nsys-rep` is read through `X.sqlite` beside it.
fn export_of_report(report: &Path) -> Result<PathBuf> {
    let export = report.with_extension(EXPORT_EXT);
    if export.is_file() {
        return Ok(export);
    }
    if !report.exists() {
        bail!("{}: no such file", report.display());
    }
    bail!(
        "{}: reports are read through their SQLite export; run `nsys export --type sqlite -o {} {}` first",
        report.display(),
        export.display(),
        report.display()
    )
}
