//! `--dry-run`: what a conversion would translate, from row counts only (no
//! table is scanned), in a second or two whatever the input size.

use std::path::{Path, PathBuf};

use nsys_reader::{Export, ReadError};

use crate::options::{Category, Options};
use crate::ranks::{rank_in_file_name, RANK_VARIABLES};
use crate::registry::Registry;

/// The launch arrow of a kernel or memory operation, written when its API call
/// is translated too.
const LAUNCH_ARROW_BYTES: u64 = 68;

#[derive(Clone, Debug)]
pub struct Survey {
    pub path: PathBuf,
    pub host: Option<String>,
    pub product_version: Option<String>,
    /// Rank from the environment or, with several reports, the file name (the
    /// translation may find more in `MPI_RANKS` and NVTX thread names).
    pub rank: Option<u32>,
    /// Rows per category, with the `.prv` bytes a row becomes.
    pub rows: Vec<CategoryRows>,
}

#[derive(Clone, Debug)]
pub struct CategoryRows {
    pub category: Category,
    pub rows: u64,
    bytes_per_row: u64,
    launched: bool,
}

impl Survey {
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().map(|r| r.rows).sum()
    }

    /// Estimated size of this report's part of the `.prv` (before gzip).
    pub fn estimated_bytes(&self) -> u64 {
        let with_api = self
            .rows
            .iter()
            .any(|r| r.category == crate::cuda_api::CATEGORY.category);
        self.rows
            .iter()
            .map(|r| {
                let arrow = if r.launched && with_api {
                    LAUNCH_ARROW_BYTES
                } else {
                    0
                };
                r.rows * (r.bytes_per_row + arrow)
            })
            .sum()
    }
}

/// [`survey_with`] the standard registry.
pub fn survey_report(
    path: &Path,
    name: &Path,
    options: &Options,
    several_reports: bool,
) -> Result<Survey, ReadError> {
    survey_with(&Registry::standard(), path, name, options, several_reports)
}

/// What `path` holds for the selected categories, from row counts only: each
/// category's tables, a table read by two counted for the first. `name` is the
/// report as given (see [`crate::translate_report`]).
pub fn survey_with(
    registry: &Registry,
    path: &Path,
    name: &Path,
    options: &Options,
    several_reports: bool,
) -> Result<Survey, ReadError> {
    let export = Export::open(path)?;
    let meta = export.meta();
    let mut counted: Vec<&str> = Vec::new();
    let mut rows = Vec::new();
    for info in registry.iter().filter(|c| options.wants(c.category)) {
        let prefixed = export
            .schema()
            .table_names()
            .filter(|t| info.table_prefixes.iter().any(|p| t.starts_with(p)));
        let mut n = 0;
        for table in info.tables.iter().copied().chain(prefixed) {
            if !counted.contains(&table) {
                counted.push(table);
                n += export.row_estimate(table)?;
            }
        }
        if n > 0 {
            rows.push(CategoryRows {
                category: info.category,
                rows: n,
                bytes_per_row: info.bytes_per_row,
                launched: info.launched,
            });
        }
    }
    let rank = RANK_VARIABLES
        .iter()
        .find_map(|v| meta.env(v)?.trim().parse().ok())
        .or_else(|| several_reports.then(|| rank_in_file_name(name)).flatten());
    Ok(Survey {
        path: name.to_path_buf(),
        host: meta.hostname.clone(),
        product_version: meta.product_version.clone(),
        rank,
        rows,
    })
}
