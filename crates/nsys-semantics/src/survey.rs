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
    background_bytes_per_row: u64,
    sets_states: bool,
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
        let with_states = self.rows.iter().any(|r| r.sets_states);
        self.rows
            .iter()
            .map(|r| {
                let arrow = if r.launched && with_api {
                    LAUNCH_ARROW_BYTES
                } else {
                    0
                };
                let background = if with_states {
                    0
                } else {
                    r.background_bytes_per_row
                };
                r.rows * (r.bytes_per_row + arrow + background)
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
                background_bytes_per_row: info.background_bytes_per_row,
                sets_states: !info.states.is_empty(),
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

/// Tables every export has whatever was recorded, not worth naming: strings,
/// target and export information.
fn is_background_table(table: &str) -> bool {
    const TABLES: &[&str] = &[
        "StringIds",
        "ANALYSIS_DETAILS",
        "EXPORT_META_DATA",
        "UnwindMethodType",
    ];
    const PREFIXES: &[&str] = &["TARGET_INFO_", "META_DATA_", "ENUM_", "sqlite_"];
    TABLES.contains(&table) || PREFIXES.iter().any(|p| table.starts_with(p))
}

/// Tables of what nsys saw besides events: the process list, its own overhead and
/// diagnostics.
const PROCESS_LIST: &[&str] = &[
    "PROCESSES",
    "ThreadNames",
    "ProcessStreams",
    "PROFILER_OVERHEAD",
    "DIAGNOSTIC_EVENT",
];

/// Tables a category reads with its own, which its row count leaves out.
const READ_ALONG: &[&str] = &["SAMPLING_CALLCHAINS"];

/// What a report holds, from row counts only: rows per category (every
/// category of the standard registry), and tables with rows that no category
/// reads, told apart from the housekeeping every export has.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    pub categories: Vec<(Category, u64)>,
    /// Tables with rows that are not translated (`OSRT_CALLCHAINS`, …).
    pub untranslated: Vec<(String, u64)>,
    /// Tables of [`PROCESS_LIST`] with rows.
    pub process_list: Vec<(String, u64)>,
}

impl Contents {
    /// Why a report that translated into nothing did, with `wanted` the
    /// selected categories: left out by the selection, rows that are no events
    /// of a traced thread, tables nothing translates, or nothing recorded.
    pub fn why_empty(&self, wanted: impl Fn(Category) -> bool) -> String {
        let list = |items: Vec<String>| items.join(", ");
        let (selected, excluded): (Vec<_>, Vec<_>) =
            self.categories.iter().partition(|(c, _)| wanted(*c));
        let rows = |items: &[&(Category, u64)]| {
            list(
                items
                    .iter()
                    .map(|(c, n)| format!("{} ({n} rows)", c.name()))
                    .collect(),
            )
        };
        let tables = |items: &[(String, u64)]| {
            list(items.iter().map(|(t, n)| format!("{t} {n} rows")).collect())
        };
        if !excluded.is_empty() {
            format!(
                "nothing selected to translate: the report has {}, which -t/--exclude leave out",
                rows(&excluded)
            )
        } else if !selected.is_empty() {
            format!(
                "the report has no events to translate: its rows of {} are not events of a traced thread (markers, processes that were not profiled)",
                rows(&selected)
            )
        } else if !self.untranslated.is_empty() {
            format!(
                "the report has no events to translate: it holds only {}, which are not translated",
                tables(&self.untranslated)
            )
        } else if self.process_list.is_empty() {
            "nothing was recorded: the report holds only target information".to_string()
        } else {
            format!(
                "nothing was recorded: the report holds only a process list and target information ({})",
                tables(&self.process_list)
            )
        }
    }
}

/// [`Contents`] of the export at `path`.
pub fn contents(path: &Path) -> Result<Contents, ReadError> {
    let registry = Registry::standard();
    let export = Export::open(path)?;
    let survey = survey_with(&registry, path, path, &registry.options(), false)?;
    let mut contents = Contents {
        categories: survey.rows.iter().map(|r| (r.category, r.rows)).collect(),
        ..Contents::default()
    };
    let read_by_a_category = |table: &str| {
        READ_ALONG.contains(&table)
            || registry.iter().any(|c| {
                c.tables.contains(&table) || c.table_prefixes.iter().any(|p| table.starts_with(p))
            })
    };
    let mut others: Vec<&str> = export
        .schema()
        .table_names()
        .filter(|t| !read_by_a_category(t) && !is_background_table(t))
        .filter(|t| !PROCESS_LIST.contains(t))
        .collect();
    others.sort_unstable();
    for (tables, list) in [
        (PROCESS_LIST.to_vec(), &mut contents.process_list),
        (others, &mut contents.untranslated),
    ] {
        for table in tables {
            let rows = export.row_estimate(table)?;
            if rows > 0 {
                list.push((table.to_string(), rows));
            }
        }
    }
    Ok(contents)
}
