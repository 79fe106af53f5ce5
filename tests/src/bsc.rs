//! BSC's own Python nsys2prv in the tests: installed from PyPI by
//! `scripts/bsc-nsys2prv.sh` into a cache (`$BSC_NSYS2PRV`), run on the same
//! inputs as ours, and BSC's own views (`cfgs/` of its sdist, downloaded there,
//! never copied into this repository) evaluated by `paramedir` on both traces.
//!
//! What a view computes is reduced to figures that do not depend on how a
//! translator numbers names or lays out rows: for a histogram, the Total row per
//! column label (per plane of a 3D histogram); for a timeline, the intervals with
//! a non-zero value (and a length) and their summed duration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::paramedir::{self, ViewResult};
use crate::{cfgs_under, workspace_root};

/// How to get BSC's nsys2prv, for the message of a test that did not run.
pub const HOW_TO_GET: &str = "BSC_NSYS2PRV=$(scripts/bsc-nsys2prv.sh | tail -1)";

/// The versions `scripts/bsc-nsys2prv.sh` installs.
pub const V06: &str = "0.6.0rc1";
pub const V058: &str = "0.5.8";

/// The cache `scripts/bsc-nsys2prv.sh` filled: `$BSC_NSYS2PRV`. When unset:
/// `None` after a note saying how to get it, so the caller does not run; under
/// CI (`CI` set) the comparison must run, so it panics.
pub fn bsc_nsys2prv() -> Option<PathBuf> {
    match std::env::var_os("BSC_NSYS2PRV").filter(|p| !p.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            for version in [V06, V058] {
                assert!(
                    dir.join(version).join(".ok").is_file(),
                    "BSC_NSYS2PRV={} has no ready nsys2prv {version}; {HOW_TO_GET}",
                    dir.display()
                );
            }
            Some(dir)
        }
        None if std::env::var_os("CI").is_some() => {
            panic!("CI needs BSC's nsys2prv for this test: set {HOW_TO_GET}")
        }
        None => {
            // In the NOT CHECKED summary, like every other missing tool.
            crate::missing_tool("BSC's nsys2prv (BSC_NSYS2PRV)", HOW_TO_GET);
            None
        }
    }
}

/// One installed version of BSC's nsys2prv.
pub struct Bsc {
    pub version: &'static str,
    dir: PathBuf,
}

impl Bsc {
    pub fn new(cache: &Path, version: &'static str) -> Self {
        Bsc {
            version,
            dir: cache.join(version),
        }
    }

    /// Its views, sorted.
    pub fn cfgs(&self) -> Vec<PathBuf> {
        cfgs_under(&self.cfgs_dir())
    }

    pub fn cfgs_dir(&self) -> PathBuf {
        self.dir.join("cfgs")
    }

    /// A view's name: its path under `cfgs/`.
    pub fn view_name(&self, cfg: &Path) -> String {
        cfg.strip_prefix(self.cfgs_dir())
            .unwrap_or(cfg)
            .display()
            .to_string()
    }

    /// Runs `nsys2prv -t TRACE [-m] INPUTS... bsc` the way it must be run: from a
    /// directory holding the exports (it reads `./NAME.sqlite` whatever path it
    /// is given), with our stand-in for `nsys stats` on PATH (0.5.8 asks it for
    /// `cuda_api_trace`). Returns the `.prv`, or why there is none.
    ///
    /// 0.6.0rc1 ends with a traceback when the export's `META_DATA_CAPTURE` lacks
    /// a `PWD` (its `.pmf` step), after writing the trace: the trace counts when
    /// it says it was "correctly translated".
    ///
    /// What BSC's tool writes is kept in the cache (`traces/KEY/` beside the
    /// version's venv), under a key of the version, the arguments, our `nsys`
    /// stand-in and the inputs' bytes: the same inputs are translated once, not
    /// in every test run (minutes of Python each), and any change of them is
    /// translated again.
    pub fn convert(&self, inputs: &[PathBuf], trace: &str, work: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(work).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        for input in inputs {
            let name = input.file_name().unwrap();
            let link = work.join(name);
            if !link.exists() {
                std::os::unix::fs::symlink(input, &link).map_err(|e| e.to_string())?;
            }
            names.push(name.to_owned());
        }
        let traces = self.dir.join("traces");
        let cached = traces.join(self.cache_key(inputs, trace)?);
        if cached.join(CACHED).is_file() {
            copy_files(&cached, work)?;
        } else {
            self.run(&names, inputs.len() > 1, trace, work)?;
            // Only what says it succeeded is kept; a failure runs again next time.
            let log = std::fs::read_to_string(work.join("bsc.log")).unwrap_or_default();
            if log.contains("correctly translated") && work.join("bsc.prv").is_file() {
                keep_in_cache(work, &traces, &cached)?;
            }
        }
        let log = std::fs::read_to_string(work.join("bsc.log")).map_err(|e| e.to_string())?;
        let prv = work.join("bsc.prv");
        if log.contains("correctly translated") && prv.is_file() {
            sort_by_time(&prv)?;
            Ok(prv)
        } else {
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            Err(format!(
                "nsys2prv {} failed (see {}): {}",
                self.version,
                work.join("bsc.log").display(),
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ))
        }
    }

    /// The cache key of a conversion: sha256 of what its output depends on.
    fn cache_key(&self, inputs: &[PathBuf], trace: &str) -> Result<String, String> {
        use sha2::{Digest, Sha256};
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        let mut hash = Sha256::new();
        hash.update(format!("{}\0-t {trace}\0{}\0", self.version, inputs.len()));
        hash.update(read(&workspace_root().join("scripts/bench/nsys"))?);
        for input in inputs {
            let bytes = read(input)?;
            let name = input.file_name().unwrap().to_string_lossy();
            hash.update(format!("\0{name}\0{}\0", bytes.len()));
            hash.update(&bytes);
        }
        Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Runs BSC's tool in `work` (its log in `bsc.log`).
    fn run(
        &self,
        names: &[std::ffi::OsString],
        merge: bool,
        trace: &str,
        work: &Path,
    ) -> Result<(), String> {
        let shim = workspace_root().join("scripts/bench");
        let path = std::env::join_paths(std::iter::once(shim).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        let mut cmd = Command::new(self.dir.join("venv/bin/nsys2prv"));
        cmd.current_dir(work)
            .env("PATH", path)
            .env_remove("NSYS_HOME")
            .args(["-t", trace]);
        if merge {
            cmd.arg("-m");
        }
        let out = cmd
            .args(names)
            .arg("bsc")
            .output()
            .map_err(|e| format!("cannot run nsys2prv {}: {e}", self.version))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(work.join("bsc.log"), &log).map_err(|e| e.to_string())
    }
}

/// The file that marks a complete entry of the conversion cache.
const CACHED: &str = ".complete";

/// Copies the files BSC's tool wrote in `work` (not the links to the inputs) into
/// the cache entry `entry`, whole or not at all: written beside it, then renamed.
fn keep_in_cache(work: &Path, traces: &Path, entry: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("caching BSC's output in {}: {e}", traces.display());
    std::fs::create_dir_all(traces).map_err(err)?;
    let partial = tempfile::tempdir_in(traces).map_err(err)?;
    copy_files(work, partial.path())?;
    std::fs::write(partial.path().join(CACHED), "").map_err(err)?;
    // Another run may have kept the same entry meanwhile: theirs stays.
    if std::fs::rename(partial.path(), entry).is_err() && !entry.join(CACHED).is_file() {
        return Err(format!("cannot keep BSC's output in {}", entry.display()));
    }
    Ok(())
}

/// Copies the regular files and directories under `from` into `to`; symbolic
/// links (the inputs) and the cache's marker are not copied.
fn copy_files(from: &Path, to: &Path) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(to).map_err(|e| err(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| err(from, e))? {
        let entry = entry.map_err(|e| err(from, e))?;
        let (path, kind) = (entry.path(), entry.file_type().map_err(|e| err(from, e))?);
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_files(&path, &target)?;
        } else if kind.is_file() && entry.file_name() != CACHED {
            std::fs::copy(&path, &target).map_err(|e| err(&path, e))?;
        }
    }
    Ok(())
}

/// Sorts a trace's records by time, keeping the order of records that share a
/// time: BSC's nsys2prv writes one category after another, and Paraver's format
/// is in time order; BSC's `-s` sorts with Paraver's `sort-trace.awk.sh`, which
/// is not installed here, and this sort does what it does. (On the inputs of
/// `bsc_views.rs` paramedir gave the same figures unsorted.) Every record kind
/// has its time (a state's begin, a communication's logical send) in its sixth
/// field.
pub fn sort_by_time(prv: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(prv).map_err(|e| format!("{}: {e}", prv.display()))?;
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let mut records: Vec<(i64, &str)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let time = l.split(':').nth(5).and_then(|t| t.parse().ok());
            time.map(|t| (t, l))
                .ok_or_else(|| format!("{}: a record without a time: {l}", prv.display()))
        })
        .collect::<Result<_, _>>()?;
    records.sort_by_key(|&(time, _)| time);
    let mut out = String::with_capacity(text.len());
    out.push_str(header);
    out.push('\n');
    for (_, line) in records {
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(prv, out).map_err(|e| format!("{}: {e}", prv.display()))
}

/// The `-t` list of BSC's categories an export has tables for (BSC fails on a
/// category whose table is missing), for version `version`.
pub fn categories_of(exports: &[PathBuf], version: &str) -> Vec<&'static str> {
    let tables: std::collections::BTreeSet<String> = exports
        .iter()
        .flat_map(|path| {
            let db = rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap();
            let mut stmt = db
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .unwrap();
            let names: Vec<String> = stmt
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            names
        })
        .collect();
    let has = |t: &str| tables.contains(t);
    let v06 = version == V06;
    let mut list = Vec::new();
    if has("CUPTI_ACTIVITY_KIND_RUNTIME") {
        list.push("cuda_api_trace");
    }
    if v06 && has("CUPTI_ACTIVITY_KIND_KERNEL") {
        list.push("kernels");
    }
    if has("NVTX_EVENTS") {
        list.push(if v06 { "nvtx" } else { "nvtx_pushpop_trace" });
        if has("CUPTI_ACTIVITY_KIND_KERNEL") {
            list.push("nccl");
        }
    }
    if has("GPU_METRICS") {
        list.push("gpu_metrics");
    }
    if has("MPI_P2P_EVENTS") || has("MPI_COLLECTIVES_EVENTS") {
        list.push("mpi_event_trace");
    }
    if has("CUPTI_ACTIVITY_KIND_GRAPH_TRACE") {
        list.push("graphs");
    }
    if v06 {
        if has("OSRT_API") {
            list.extend(["osrt", "pthread"]);
        }
        if has("CUDA_GPU_MEMORY_USAGE_EVENTS") {
            list.push("memory_usage");
        }
        if has("CUPTI_ACTIVITY_KIND_CUDA_EVENT") {
            list.push("cuda_events");
        }
        if has("NET_NIC_METRIC") {
            list.push("nic_metrics");
        }
    }
    list
}

/// What a view computed, by label.
pub type Figures = BTreeMap<String, f64>;

/// The figures of a view's result: `Total[PLANE/]COLUMN` of a histogram,
/// `intervals` (of non-zero value and length) and `duration` of a timeline.
pub fn figures(result: &ViewResult) -> Figures {
    let mut out = Figures::new();
    match result {
        ViewResult::Timeline(lines) => {
            // paramedir also prints the values a time passes through when
            // several events share it (zero-length lines): not intervals.
            let nonzero = lines.iter().filter(|l| l.3 != 0.0 && l.2 > 0.0);
            let (n, d) = nonzero.fold((0.0, 0.0), |(n, d), l| (n + 1.0, d + l.2));
            out.insert("intervals".into(), n);
            out.insert("duration".into(), d);
        }
        ViewResult::Histogram(h) => totals(&mut out, "", h),
        ViewResult::Planes(planes) => {
            for (plane, h) in planes {
                totals(&mut out, &format!("{plane}/"), h);
            }
        }
    }
    out
}

fn totals(out: &mut Figures, prefix: &str, h: &paramedir::Histogram) {
    if let Some(total) = h.summary.get("Total") {
        for (column, value) in h.columns.iter().zip(total) {
            out.insert(format!("Total {prefix}{column}"), *value);
        }
    }
}

/// Whether a view gave output: a figure that is not zero.
pub fn has_output(f: &Figures) -> bool {
    f.values().any(|v| *v != 0.0)
}

/// How a view compares on the two traces.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Output on neither trace.
    Neither,
    Same,
    /// Output on both, and the first figure that differs.
    Different(String),
    OnlyBsc,
    OnlyOurs,
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Neither => "no output on either",
            Verdict::Same => "same",
            Verdict::Different(_) => "different",
            Verdict::OnlyBsc => "only on BSC's",
            Verdict::OnlyOurs => "only on ours",
        }
    }
}

/// Equal within the decimals paramedir prints.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

pub fn compare(bsc: &Figures, ours: &Figures) -> Verdict {
    match (has_output(bsc), has_output(ours)) {
        (false, false) => return Verdict::Neither,
        (true, false) => return Verdict::OnlyBsc,
        (false, true) => return Verdict::OnlyOurs,
        (true, true) => {}
    }
    // A label on one side only counts as 0 on the other (an empty column).
    let labels: std::collections::BTreeSet<&String> = bsc.keys().chain(ours.keys()).collect();
    for label in labels {
        let b = bsc.get(label).copied().unwrap_or(0.0);
        let o = ours.get(label).copied().unwrap_or(0.0);
        if !close(b, o) {
            return Verdict::Different(format!("{label}: BSC {b} ours {o}"));
        }
    }
    Verdict::Same
}

/// What paramedir made of a view on a trace.
#[derive(Debug, Clone)]
pub enum Evaluated {
    Figures(Figures),
    /// paramedir died on it (Paraver's `SemanticException` on a view whose
    /// derived window finds no data): the reason.
    Crashed(String),
}

impl Evaluated {
    /// The figures, none for a crash.
    pub fn figures(&self) -> Figures {
        match self {
            Evaluated::Figures(f) => f.clone(),
            Evaluated::Crashed(_) => Figures::new(),
        }
    }
}

/// The figures of every view on a trace, evaluated in as few paramedir runs as
/// possible (the trace is loaded once per run). paramedir aborts on some views;
/// then the view after the last one it reported on is run alone, and the others
/// resume in one run.
pub fn evaluate(paramedir_bin: &Path, prv: &Path, cfgs: &[PathBuf]) -> Vec<Evaluated> {
    let mut out: Vec<Option<Evaluated>> = vec![None; cfgs.len()];
    let mut next = 0;
    while next < cfgs.len() {
        let batch = &cfgs[next..];
        let run = paramedir::run(paramedir_bin, prv, batch, &["-npr", "-tu"]);
        let finished = run.status.success();
        let mut reported = 0;
        for (i, slot) in out[next..].iter_mut().enumerate() {
            match run.result(i) {
                Some(Ok(result)) => {
                    *slot = Some(Evaluated::Figures(figures(&result)));
                    reported = i + 1;
                }
                Some(Err(e)) => panic!("{}: {}: {e}", prv.display(), batch[i].display()),
                None if !run.messages(i).is_empty() => {
                    *slot = Some(Evaluated::Figures(Figures::new()));
                    reported = i + 1;
                }
                None => {}
            }
        }
        if finished {
            for slot in out[next..].iter_mut().filter(|s| s.is_none()) {
                *slot = Some(Evaluated::Figures(Figures::new()));
            }
            break;
        }
        // The run died on a view at or after `next + reported`: try that one alone.
        let suspect = next + reported;
        let alone = paramedir::run(
            paramedir_bin,
            prv,
            &cfgs[suspect..=suspect],
            &["-npr", "-tu"],
        );
        out[suspect] = Some(if alone.status.success() {
            match alone.result(0) {
                Some(Ok(result)) => Evaluated::Figures(figures(&result)),
                Some(Err(e)) => panic!("{}: {}: {e}", prv.display(), cfgs[suspect].display()),
                None => Evaluated::Figures(Figures::new()),
            }
        } else {
            let why = alone
                .stdout
                .lines()
                .chain(alone.stderr.lines())
                .filter(|l| !l.trim().is_empty() && !l.ends_with("file written."))
                .collect::<Vec<_>>()
                .join(" / ");
            Evaluated::Crashed(why)
        });
        next = suspect + 1;
    }
    out.into_iter().map(Option::unwrap).collect()
}

/// A documented difference: a row of the table in `docs/bsc-differences.md`.
#[derive(Debug, Clone)]
pub struct Documented {
    /// The view, as `VERSION/PATH` under BSC's `cfgs/` (`0.6.0rc1/views/osrt_calls.cfg`).
    pub view: String,
    /// The input it was seen on, as the differential test names them.
    pub input: String,
    /// The figure that differs and its value on BSC's trace and on ours (`None`:
    /// the view gives no output on that trace).
    pub bsc: Option<(String, f64)>,
    pub ours: Option<(String, f64)>,
    /// A query on the input's exports (summed over its files) that gives the
    /// export's truth: ours' figure. `None` when the difference is not one of
    /// counting (a layout, a numbering).
    pub sql: Option<String>,
    /// Why: the last column.
    pub why: String,
}

/// The text between the first pair of backticks of a cell.
fn code(cell: &str) -> Option<&str> {
    let start = cell.find('`')? + 1;
    let len = cell[start..].find('`')?;
    Some(&cell[start..start + len])
}

/// A figure cell: `` `NAME` = VALUE `` (anything after the value is a comment),
/// or "no output".
fn figure_cell(cell: &str) -> Result<Option<(String, f64)>, String> {
    let cell = cell.trim();
    if cell.starts_with("no output") {
        return Ok(None);
    }
    let name = code(cell).ok_or_else(|| format!("not a figure: {cell:?}"))?;
    let value = cell
        .split_once('=')
        .and_then(|(_, v)| v.split_whitespace().next())
        .and_then(|v| v.replace(',', "").parse().ok())
        .ok_or_else(|| format!("no value in {cell:?}"))?;
    Ok(Some((name.to_owned(), value)))
}

/// The rows of the differences table: lines whose first cell names a view
/// (`` `VERSION/PATH.cfg` ``), then the input, BSC's figure, ours, the export's
/// truth (a query in backticks, or words), and why.
pub fn documented_differences() -> Vec<Documented> {
    let path = workspace_root().join("docs/bsc-differences.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = Vec::new();
    // Only the table of the section "## Documented differences" is the list the
    // test checks; other tables of the page (hand measurements) are prose.
    let mut in_section = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            in_section = heading.trim() == "Documented differences";
            continue;
        }
        if !in_section {
            continue;
        }
        let Some(body) = line.trim().strip_prefix('|') else {
            continue;
        };
        let cells: Vec<&str> = body.trim_end_matches('|').split('|').collect();
        let Some(view) = cells.first().and_then(|c| code(c)) else {
            continue;
        };
        if !view.ends_with(".cfg") {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        assert_eq!(cells.len(), 6, "{at}: a row has 6 cells: {line}");
        let figure = |i: usize| figure_cell(cells[i]).unwrap_or_else(|e| panic!("{at}: {e}"));
        rows.push(Documented {
            view: view.to_owned(),
            input: code(cells[1])
                .unwrap_or_else(|| panic!("{at}: no input"))
                .to_owned(),
            bsc: figure(2),
            ours: figure(3),
            sql: code(cells[4]).map(str::to_owned),
            why: cells[5].trim().to_owned(),
        });
    }
    rows
}

/// `query` on every file of an input, summed.
pub fn sql_truth(files: &[PathBuf], query: &str) -> Result<f64, String> {
    let mut total = 0.0;
    for file in files {
        let db =
            rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| format!("{}: {e}", file.display()))?;
        let value: Option<f64> = db
            .query_row(query, [], |r| r.get(0))
            .map_err(|e| format!("{}: {query}: {e}", file.display()))?;
        total += value.unwrap_or(0.0);
    }
    Ok(total)
}

/// How a documented row's figures compare with what was measured: the
/// mismatches, one line each.
pub fn check_documented(
    d: &Documented,
    bsc: &Figures,
    ours: &Figures,
    files: &[PathBuf],
) -> Vec<String> {
    let mut wrong = Vec::new();
    for (side, documented, measured) in [("BSC's", &d.bsc, bsc), ("our", &d.ours, ours)] {
        match documented {
            None if has_output(measured) => wrong.push(format!(
                "documented without output on {side} trace, which gives {}",
                key_figures(measured)
            )),
            Some((name, value)) => match measured.get(name) {
                Some(m) if close(*m, *value) => {}
                m => wrong.push(format!(
                    "{side} `{name}` documented {value}, measured {m:?}"
                )),
            },
            None => {}
        }
    }
    if let (Some(query), Some((name, value))) = (&d.sql, &d.ours) {
        match sql_truth(files, query) {
            Ok(truth) if close(truth, *value) => {}
            Ok(truth) => wrong.push(format!(
                "the export's truth is {truth}, ours `{name}` {value}: {query}"
            )),
            Err(e) => wrong.push(e),
        }
    }
    wrong
}

/// A view's figures, briefly (for messages and to fill the table).
pub fn key_figures(f: &Figures) -> String {
    let shown: Vec<String> = f
        .iter()
        .filter(|(_, v)| **v != 0.0)
        .take(3)
        .map(|(k, v)| format!("`{k}` = {v}"))
        .collect();
    if shown.is_empty() {
        "no output".into()
    } else {
        shown.join(", ")
    }
}
