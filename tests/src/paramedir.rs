//! BSC Paraver's own loader in the tests: runs `paramedir` (Paraver's command-line
//! analyser, built by `../shared/tools/paraver/build.sh`) on a trace and views,
//! and reads back what it printed and wrote.
//!
//! paramedir exits 0 on most errors (see `../shared/tools/paraver/README.md`),
//! so a run is judged by its messages and output files, never by its status alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to get paramedir, for the message of a skipped test.
pub const HOW_TO_GET: &str = "PARAMEDIR=$(../shared/tools/paraver/build.sh | tail -1)";

/// paramedir's message for a view none of whose event types occur in the trace.
pub const NONE_OF_THE_EVENTS: &str =
    "None of the events specified in the filter appear in the trace. File creation aborted.";
/// paramedir's warning for a view some of whose event types do not occur.
pub const SOME_OF_THE_EVENTS: &str =
    "Some of the events specified in the filter doesn't appear in the trace.";

/// `$PARAMEDIR`. When unset: `None`, so the caller skips, and the skip is listed
/// at the end of the run with how to get it; under CI (`CI` set) it panics.
pub fn paramedir() -> Option<PathBuf> {
    match std::env::var_os("PARAMEDIR").filter(|p| !p.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "PARAMEDIR={} is not a file; {HOW_TO_GET}",
                path.display()
            );
            Some(path)
        }
        None => {
            crate::missing_tool(
                "paramedir",
                &format!("PARAMEDIR is unset; export {HOW_TO_GET}"),
            );
            None
        }
    }
}

/// One paramedir run: the trace loaded once, every view evaluated on it.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub status: std::process::ExitStatus,
    views: Vec<PathBuf>,
    dir: tempfile::TempDir,
}

/// Runs `paramedir OPTIONS PRV VIEW1 OUT1 VIEW2 OUT2 ...` in a new directory with a
/// HOME of its own (paramedir writes `$HOME/.paraver/paraver.xml`).
pub fn run(paramedir: &Path, prv: &Path, views: &[PathBuf], options: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("temporary directory");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("temporary HOME");
    let mut cmd = Command::new(paramedir);
    cmd.current_dir(dir.path())
        .env("HOME", &home)
        .args(options)
        .arg(prv);
    for (i, view) in views.iter().enumerate() {
        cmd.arg(view).arg(output_name(i));
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", paramedir.display()));
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status,
        views: views.to_vec(),
        dir,
    }
}

/// Output names are given, never derived from the views' file names, which repeat.
fn output_name(index: usize) -> String {
    format!("view{index:03}")
}

impl Run {
    /// What paramedir said about view `index` (its stdout lines `VIEW: message`).
    pub fn messages(&self, index: usize) -> Vec<&str> {
        let prefix = format!("{}: ", self.views[index].display());
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .collect()
    }

    /// Lines that are neither "X.csv file written." nor a message about one view:
    /// trace errors ("Error reading event record", "[ERROR] ..."), cfgs it could
    /// not load ("[Warning] Cannot load 'X.cfg' file.", on stderr), crashes.
    pub fn unexpected_lines(&self) -> Vec<&str> {
        let about_a_view = |l: &str| {
            self.views
                .iter()
                .any(|v| l.starts_with(&format!("{}: ", v.display())))
        };
        let written = |l: &str| l.ends_with(".csv file written.");
        let mut lines: Vec<&str> = self
            .stdout
            .lines()
            .filter(|l| !l.trim().is_empty() && !written(l) && !about_a_view(l))
            .collect();
        lines.extend(self.stderr.lines().filter(|l| !l.trim().is_empty()));
        lines
    }

    /// The result of view `index`, if paramedir wrote one: a timeline's `.csv` or
    /// a histogram's table.
    pub fn result(&self, index: usize) -> Option<Result<ViewResult, String>> {
        let base = self.dir.path().join(output_name(index));
        let csv = self.dir.path().join(format!("{}.csv", output_name(index)));
        if csv.is_file() {
            Some(read(&csv).and_then(|t| parse_timeline(&t)))
        } else if base.is_file() {
            Some(read(&base).and_then(|t| parse_histogram(&t)))
        } else {
            None
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// What a view computed.
#[derive(Debug)]
pub enum ViewResult {
    /// Per line: object, begin, duration, value.
    Timeline(Vec<(String, f64, f64, f64)>),
    Histogram(Histogram),
    /// A 3D histogram: one table per plane (with values), by plane label.
    Planes(Vec<(String, Histogram)>),
}

/// A histogram as paramedir writes it: column labels, one row per object, then
/// the summary rows (Total, Average, Maximum, Minimum, StDev, Avg/Max).
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    pub columns: Vec<String>,
    pub rows: Vec<(String, Vec<f64>)>,
    pub summary: BTreeMap<String, Vec<f64>>,
}

impl Histogram {
    /// The cell of the row named `row` (an object or a summary row) in `column`.
    pub fn cell(&self, row: &str, column: &str) -> Option<f64> {
        let col = self.columns.iter().position(|c| c == column)?;
        let cells = self
            .rows
            .iter()
            .find(|(name, _)| name == row)
            .map(|(_, cells)| cells)
            .or_else(|| self.summary.get(row))?;
        cells.get(col).copied()
    }
}

impl ViewResult {
    /// Whether the view shows anything: a timeline with a non-zero value, a
    /// histogram with a non-zero cell outside the column of value 0 (labelled
    /// `0`, `End` or `Idle`), which only says how long nothing happened.
    pub fn has_data(&self) -> bool {
        match self {
            ViewResult::Timeline(lines) => lines.iter().any(|l| l.3 != 0.0),
            ViewResult::Planes(planes) => planes
                .iter()
                .any(|(_, h)| ViewResult::Histogram(h.clone()).has_data()),
            ViewResult::Histogram(h) => {
                let zero_column = |c: &str| {
                    matches!(c, "End" | "Idle") || c.parse::<f64>().is_ok_and(|v| v == 0.0)
                };
                h.rows.iter().any(|(_, cells)| {
                    cells
                        .iter()
                        .zip(&h.columns)
                        .any(|(v, c)| *v != 0.0 && !zero_column(c))
                })
            }
        }
    }
}

fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("not a number: {text:?}"))
}

fn parse_timeline(text: &str) -> Result<ViewResult, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 4 {
                return Err(format!("timeline line without 4 fields: {line:?}"));
            }
            Ok((f[0].to_owned(), number(f[1])?, number(f[2])?, number(f[3])?))
        })
        .collect::<Result<_, _>>()
        .map(ViewResult::Timeline)
}

const SUMMARY_ROWS: [&str; 6] = ["Total", "Average", "Maximum", "Minimum", "StDev", "Avg/Max"];

/// A histogram's table, or a 3D histogram's planes: each a line with the plane's
/// label, then its table.
fn parse_histogram(text: &str) -> Result<ViewResult, String> {
    let is_label = |l: &str| !l.is_empty() && !l.contains('\t');
    if !text.lines().next().is_some_and(is_label) {
        return parse_table(text).map(ViewResult::Histogram);
    }
    let mut planes: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        match planes.last_mut() {
            Some((_, table)) if !is_label(line) => {
                table.push_str(line);
                table.push('\n');
            }
            _ => planes.push((line.to_owned(), String::new())),
        }
    }
    planes
        .into_iter()
        .map(|(label, table)| Ok((label, parse_table(&table)?)))
        .collect::<Result<_, String>>()
        .map(ViewResult::Planes)
}

fn parse_table(text: &str) -> Result<Histogram, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty histogram")?;
    let mut h = Histogram {
        columns: cells(header).skip(1).map(str::to_owned).collect(),
        ..Histogram::default()
    };
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let mut fields = cells(line);
        let name = fields.next().unwrap_or("").to_owned();
        let values = fields.map(number).collect::<Result<Vec<_>, _>>()?;
        if values.len() != h.columns.len() {
            return Err(format!(
                "{} cells under {} columns: {line:?}",
                values.len(),
                h.columns.len()
            ));
        }
        if SUMMARY_ROWS.contains(&name.as_str()) {
            h.summary.insert(name, values);
        } else if h.summary.is_empty() {
            h.rows.push((name, values));
        } else {
            return Err(format!("object row after the summary: {line:?}"));
        }
    }
    Ok(h)
}

/// Tab-separated cells; paramedir ends every line with a tab.
fn cells(line: &str) -> impl Iterator<Item = &str> {
    line.strip_suffix('\t').unwrap_or(line).split('\t')
}

/// What one window of a view selects: enough to tell whether a trace has data
/// for it and what paramedir will say about it.
#[derive(Debug, Default, Clone)]
pub struct ViewWindow {
    pub name: String,
    /// A composed window: its data comes from the windows it combines.
    pub derived: bool,
    /// `{thread, F}`: `State As Is`, `Last Evt Val`, `Send Bytes in Transit`, ...
    pub thread_function: String,
    /// `{evt_type, F}` (`=`, `[x,y]`, `All`, ...) and the listed types.
    pub type_function: String,
    pub types: Vec<u32>,
    /// `{tag_msg, F}` and the listed communication tags.
    pub tag_function: String,
    pub tags: Vec<i64>,
}

/// The windows of a `.cfg`, in order.
pub fn view_windows(cfg: &str) -> Vec<ViewWindow> {
    let mut windows: Vec<ViewWindow> = Vec::new();
    for line in cfg.lines() {
        if let Some(name) = line.strip_prefix("window_name ") {
            windows.push(ViewWindow {
                name: name.to_owned(),
                type_function: "All".into(),
                tag_function: "All".into(),
                ..ViewWindow::default()
            });
            continue;
        }
        let Some(w) = windows.last_mut() else {
            continue;
        };
        if line == "window_type composed" {
            w.derived = true;
        } else if line.starts_with("window_selected_functions ") {
            let function = |level: &str| -> Option<String> {
                let start = line.find(&format!("{{{level}, "))? + level.len() + 3;
                let len = line[start..].find('}')?;
                Some(line[start..start + len].to_owned())
            };
            w.thread_function = function("thread").unwrap_or_default();
            w.type_function = function("evt_type").unwrap_or_else(|| "All".into());
            w.tag_function = function("tag_msg").unwrap_or_else(|| "All".into());
        } else if let Some(list) = line.strip_prefix("window_filter_module evt_type ") {
            w.types = list
                .split(' ')
                .skip(1)
                .filter_map(|t| t.parse().ok())
                .collect();
        } else if let Some(list) = line.strip_prefix("window_filter_module tag_msg ") {
            w.tags = list
                .split(' ')
                .skip(1)
                .filter_map(|t| t.parse().ok())
                .collect();
        }
    }
    windows
}

impl ViewWindow {
    /// The window keeps events of type `ty` (for filters that list types).
    pub fn selects_type(&self, ty: u32) -> bool {
        match self.type_function.as_str() {
            "=" => self.types.contains(&ty),
            "[x,y]" => self.types.len() >= 2 && (self.types[0]..=self.types[1]).contains(&ty),
            _ => false,
        }
    }

    /// The window's filter names event types (rather than taking all or none).
    pub fn lists_types(&self) -> bool {
        matches!(self.type_function.as_str(), "=" | "[x,y]")
    }

    /// The window keeps communications with tag `tag`.
    pub fn selects_tag(&self, tag: i64) -> bool {
        match self.tag_function.as_str() {
            "All" => true,
            "=" => self.tags.contains(&tag),
            "!=" => !self.tags.contains(&tag),
            _ => false,
        }
    }
}
