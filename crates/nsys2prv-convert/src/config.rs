//! What a conversion is asked to do, typed: built from the command line by the
//! binary (or by a program calling the library), stored whole in the plan of a
//! sharded conversion, read back by its merge.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use nsys_semantics::cuts::NvtxRangeSpec;
use nsys_semantics::nvtx_config::NvtxConfig;
use nsys_semantics::ranks::RankSelection;
use nsys_semantics::Category;
use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// A conversion: its inputs, what to translate of them, the cut, the clock
/// alignment, the resources it may use, and what it writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub inputs: Inputs,
    pub selection: Selection,
    pub cuts: Cuts,
    /// How the reports' clocks are aligned (`--sync`).
    pub sync: ClockSync,
    pub resources: Resources,
    pub output: Output,
    /// Single run, dry run, or a step of a sharded conversion.
    pub mode: Mode,
    /// Only errors on stderr (`-q`): no progress, no closing line.
    pub quiet: bool,
}

/// The reports and how to read them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// Reports (`.nsys-rep`, `.qdrep`, `.sqlite`) or directories of them, as
    /// given. Empty in a sharded plan, which lists them with their fingerprints.
    pub reports: Vec<PathBuf>,
    /// Leave out reports that cannot be read, listed in `NAME.skipped.txt`
    /// (`--skip-bad`), instead of stopping.
    pub skip_bad: bool,
    /// Export `.nsys-rep` reports again even when an export exists
    /// (`--force-sqlite`, or `force_export` of BSC's configuration file).
    pub force_export: bool,
    /// Remove the exports made for the run once the trace is written (`-c`).
    pub clean_exports: bool,
}

/// What is translated of each report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Category words of `-t/--trace` (empty: every category), as given: the
    /// registry resolves them.
    pub trace: Vec<String>,
    /// Category words of `--exclude`.
    pub exclude: Vec<String>,
    /// BSC's `--exclude-kernels`: kernels and memory operations left out.
    pub exclude_kernels: bool,
    pub kernel_names: KernelNameChoice,
    pub metric_types: MetricTypesChoice,
    /// Callers written with each CPU sample (`--sampling-depth`).
    pub sampling_depth: u32,
    /// Keep the threads Nsight Systems adds to every process.
    pub keep_nsys_threads: bool,
    /// BSC's limits, ns in each report's own time (`--time-limit-start/end`).
    pub time_limit_start: Option<i64>,
    pub time_limit_end: Option<i64>,
    /// BSC's CUDA API filters: shortest call kept, names kept, names left out.
    pub cuda_calls_min_duration: Option<i64>,
    pub cuda_calls_include: Vec<String>,
    pub cuda_calls_exclude: Vec<String>,
    /// The NVTX configuration in force (BSC 0.6's `--config` content, else its
    /// defaults): the content, not the file, so every shard uses the same.
    pub nvtx: NvtxConfig,
    /// `--ranks`: the MPI ranks whose processes are translated (`None`: all).
    #[serde(default, with = "rank_list")]
    pub ranks: Option<RankSelection>,
}

/// The part of the trace kept (at most one of them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cuts {
    /// `--time-window`, in the uncut trace's time.
    pub time_window: Option<TimeWindow>,
    /// `--nvtx-range` (or BSC's `-f`).
    #[serde(with = "range_spec")]
    pub nvtx_range: Option<NvtxRangeSpec>,
    /// The window within which rows are read (resolved before translating:
    /// `convert::read_window`; a plan stores it, so every shard cuts alike).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_window: Option<nsys_semantics::options::ReadWindow>,
    /// Cut only in the merge, as before cuts were applied where rows are read
    /// (a hidden option: for comparing the two).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_merge_only: bool,
}

/// Nanoseconds from the start of the uncut trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeWindow {
    pub start: i64,
    /// `None`: to the end of the trace.
    pub end: Option<i64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClockSync {
    /// Session start times of each report only.
    #[default]
    Session,
    /// Also make the ends of MPI_Init coincide.
    MpiInit,
    /// Also make the ends of the first MPI_Barrier coincide.
    Barrier,
    /// Also make the ends of the first NCCL kernel coincide.
    Nccl,
}

impl ClockSync {
    /// Its name on the command line.
    pub fn flag_value(self) -> &'static str {
        match self {
            ClockSync::Session => "session",
            ClockSync::MpiInit => "mpi-init",
            ClockSync::Barrier => "barrier",
            ClockSync::Nccl => "nccl",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KernelNameChoice {
    #[default]
    Short,
    Demangled,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetricTypesChoice {
    /// As BSC nsys2prv 0.6 numbers them.
    #[default]
    Bsc,
    /// By metric name.
    Name,
}

/// What the run may use; not part of what the trace is (a sharded plan does
/// not record it: each shard and the merge have their own).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// Worker threads (`-j`; `None`: every core, or a Slurm task's CPUs).
    pub jobs: Option<usize>,
    /// Bytes for records before they spill (`--memory-limit`).
    pub memory_limit: u64,
    /// Where spilled records go (`None`: the output's directory).
    pub spill_dir: Option<PathBuf>,
}

/// The default `--memory-limit`: 1 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;

impl Default for Resources {
    fn default() -> Resources {
        Resources {
            jobs: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            spill_dir: None,
        }
    }
}

/// What is written, and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// The trace: `NAME.prv` or `NAME.prv.gz` (gzip); `.pcf`, `.row`, `.pmf`
    /// and the views go beside it.
    pub trace: PathBuf,
    /// The views' directory (`--cfgs-dir`; `None`: `NAME.cfgs/` beside the trace).
    pub views_dir: Option<PathBuf>,
    /// Every bundled view, also those the trace has no data for.
    pub all_views: bool,
    /// Name the rows as BSC nsys2prv's `-N` does.
    pub bsc_row_names: bool,
    /// The report after the conversion (`--report`, `--report=DIR`): run by the
    /// caller once the trace is installed; recorded here because it is one of
    /// the options the trace's metadata lists.
    pub report: Option<ReportRequest>,
    /// `-L` labels and the description for `NAME.pmf`.
    pub labels: Vec<String>,
    pub description_text: Option<String>,
    pub description_file: Option<PathBuf>,
    /// Keep `NAME.parts/` after the merge of a sharded conversion.
    pub keep_parts: bool,
    /// Print each phase's time and append it to `timings.csv` (`--timing`).
    pub timing: bool,
}

impl Output {
    /// An output of `trace` with every other setting at its default.
    pub fn new(trace: PathBuf) -> Output {
        Output {
            trace,
            views_dir: None,
            all_views: false,
            bsc_row_names: false,
            report: None,
            labels: Vec::new(),
            description_text: None,
            description_file: None,
            keep_parts: false,
            timing: false,
        }
    }
}

/// `--report` (printed) or `--report=DIR` (printed, and its files in DIR).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportRequest {
    Print,
    PrintAndWrite(PathBuf),
}

impl ReportRequest {
    /// Where the report's files go, if anywhere.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            ReportRequest::Print => None,
            ReportRequest::PrintAndWrite(dir) => Some(dir),
        }
    }
}

/// How the conversion runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Translate every report and write the trace.
    #[default]
    Convert,
    /// Only say what would be translated.
    DryRun,
    /// Only plan a sharded conversion into N shards.
    PlanShards(u32),
    /// Translate shard `index` of `count` (planning first if needed).
    Shard { index: u32, count: u32 },
    /// Every shard of a Slurm job step: task 0 plans and merges.
    SlurmStep,
}

impl Default for Selection {
    fn default() -> Selection {
        Selection {
            trace: Vec::new(),
            exclude: Vec::new(),
            exclude_kernels: false,
            kernel_names: KernelNameChoice::default(),
            metric_types: MetricTypesChoice::default(),
            sampling_depth: nsys_semantics::options::DEFAULT_SAMPLING_DEPTH,
            keep_nsys_threads: false,
            time_limit_start: None,
            time_limit_end: None,
            cuda_calls_min_duration: None,
            cuda_calls_include: Vec::new(),
            cuda_calls_exclude: Vec::new(),
            nvtx: NvtxConfig::default(),
            ranks: None,
        }
    }
}

impl Selection {
    /// The categories to translate: `trace` (default: all) less `exclude` and,
    /// with `exclude_kernels`, kernels and memory operations.
    pub fn categories(&self) -> Result<BTreeSet<Category>, UsageError> {
        let registry = nsys_semantics::Registry::standard();
        let parse = |words: &[String]| {
            registry
                .parse_list(words)
                .map_err(|e| UsageError(e.to_string()))
        };
        let mut categories = match self.trace.is_empty() {
            true => registry.all(),
            false => parse(&self.trace)?,
        };
        for c in parse(&self.exclude)? {
            categories.remove(&c);
        }
        if self.exclude_kernels {
            for c in parse(&["kernels".to_string(), "memory".to_string()])? {
                categories.remove(&c);
            }
        }
        if categories.is_empty() {
            return Err(UsageError(
                "no category left to translate (see --trace and --exclude)".into(),
            ));
        }
        Ok(categories)
    }
}

/// Output names that are surely a mistake (an input given last, or one file of
/// a trace) rather than a trace name to complete with `.prv`.
const NOT_TRACE_NAMES: &[&str] = &[
    ".sqlite",
    ".nsys-rep",
    ".qdrep",
    ".pcf",
    ".row",
    ".cfg",
    ".gz",
];

/// The trace to write for the output name given: as given when it ends in
/// `.prv` or `.prv.gz`; `NAME.prv` for another name, as BSC nsys2prv does;
/// `.gz` added with `compress`.
pub fn trace_name(output: &Path, compress: bool) -> Result<PathBuf, UsageError> {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let gz = if compress { ".gz" } else { "" };
    let trace = if name.ends_with(".prv.gz") {
        name
    } else if name.ends_with(".prv") {
        format!("{name}{gz}")
    } else if name.is_empty() || NOT_TRACE_NAMES.iter().any(|e| name.ends_with(e)) {
        return Err(UsageError(format!(
            "{}: the output must be NAME.prv, NAME.prv.gz or NAME (then NAME.prv is written)",
            output.display()
        )));
    } else {
        format!("{name}.prv{gz}")
    };
    Ok(output.with_file_name(trace))
}

impl Config {
    /// Converting `reports` into `trace` with every setting at its default.
    pub fn new(reports: Vec<PathBuf>, trace: PathBuf) -> Config {
        Config {
            inputs: Inputs {
                reports,
                ..Inputs::default()
            },
            selection: Selection::default(),
            cuts: Cuts::default(),
            sync: ClockSync::default(),
            resources: Resources::default(),
            output: Output::new(trace),
            mode: Mode::default(),
            quiet: false,
        }
    }

    /// The views' directory: the configured one, else `NAME.cfgs/` beside the trace.
    pub fn views_dir(&self, paths: &paraver_writer::OutputPaths) -> PathBuf {
        self.output
            .views_dir
            .clone()
            .unwrap_or_else(|| paths.prv.with_file_name(format!("{}.cfgs", paths.stem())))
    }

    /// What a sharded plan records: what shapes the trace, without the inputs
    /// (the plan lists them), the resources, the mode or the per-process
    /// settings (each shard and the merge have their own); the description file
    /// made absolute (the merge reads it, wherever it runs from).
    pub fn for_plan(&self) -> Config {
        let mut planned = self.clone();
        planned.inputs.reports = Vec::new();
        planned.inputs.clean_exports = false;
        planned.resources = Resources::default();
        planned.mode = Mode::Convert;
        planned.quiet = false;
        planned.output.keep_parts = false;
        planned.output.timing = false;
        if let Some(file) = &mut planned.output.description_file {
            *file = std::path::absolute(&*file).unwrap_or_else(|_| file.clone());
        }
        planned
    }

    /// The options that shape the trace as command-line arguments in one fixed
    /// form: what the trace's metadata lists (`NAME.pmf`'s flags) and what a
    /// plan that does not fit is said to differ in. Fails only for a path that
    /// is not UTF-8.
    pub fn shaping_options(&self) -> Result<Vec<String>, NotUtf8> {
        let s = &self.selection;
        let mut options = Vec::new();
        if !s.trace.is_empty() {
            options.push(format!("--trace={}", s.trace.join(",")));
        }
        if !s.exclude.is_empty() {
            options.push(format!("--exclude={}", s.exclude.join(",")));
        }
        if s.kernel_names == KernelNameChoice::Demangled {
            options.push("--kernel-names=demangled".into());
        }
        if s.metric_types == MetricTypesChoice::Name {
            options.push("--metric-types=name".into());
        }
        if self.sync != ClockSync::Session {
            options.push(format!("--sync={}", self.sync.flag_value()));
        }
        if let Some(dir) = &self.output.views_dir {
            options.push(format!("--cfgs-dir={}", utf8(dir)?));
        }
        if let Some(w) = self.cuts.time_window {
            let end = w.end.map(|e| format!("{e}ns")).unwrap_or_default();
            options.push(format!("--time-window={}ns:{end}", w.start));
        }
        if let Some(range) = &self.cuts.nvtx_range {
            options.push(format!("--nvtx-range={range}"));
        }
        if let Some(ranks) = &s.ranks {
            options.push(format!("--ranks={ranks}"));
        }
        if s.sampling_depth != nsys_semantics::options::DEFAULT_SAMPLING_DEPTH {
            options.push(format!("--sampling-depth={}", s.sampling_depth));
        }
        match &self.output.report {
            Some(ReportRequest::PrintAndWrite(dir)) => {
                options.push(format!("--report={}", utf8(dir)?))
            }
            Some(ReportRequest::Print) => options.push("--report".into()),
            None => {}
        }
        for label in &self.output.labels {
            options.push(format!("--label={label}"));
        }
        if let Some(text) = &self.output.description_text {
            options.push(format!("--description-text={text}"));
        }
        if let Some(file) = &self.output.description_file {
            let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
            options.push(format!("--description-file={}", utf8(&file)?));
        }
        for (set, flag) in [
            (s.keep_nsys_threads, "--keep-nsys-threads"),
            (self.output.all_views, "--all-views"),
            (self.inputs.skip_bad, "--skip-bad"),
            (self.inputs.force_export, "--force-sqlite"),
            (s.exclude_kernels, "--exclude-kernels"),
            (self.output.bsc_row_names, "--thread-name"),
        ] {
            if set {
                options.push(flag.into());
            }
        }
        if let Some(ns) = s.time_limit_start {
            options.push(format!("--time-limit-start={ns}"));
        }
        if let Some(ns) = s.time_limit_end {
            options.push(format!("--time-limit-end={ns}"));
        }
        if let Some(ns) = s.cuda_calls_min_duration {
            options.push(format!("--filter-cuda-calls-duration={ns}"));
        }
        for (names, flag) in [
            (&s.cuda_calls_include, "--filter-cuda-calls-include-name"),
            (&s.cuda_calls_exclude, "--filter-cuda-calls-exclude-name"),
        ] {
            if !names.is_empty() {
                options.push(format!("{flag}={}", names.join(",")));
            }
        }
        // The configuration's content (BSC's --config file was read into it).
        if s.nvtx != NvtxConfig::default() {
            let json = serde_json::to_string(&s.nvtx).expect("an NVTX configuration serialises");
            options.push(format!("--nvtx-config-json={json}"));
        }
        Ok(options)
    }
}

/// A path a plan cannot hold.
#[derive(Debug, thiserror::Error)]
#[error("{}: a sharded conversion needs file names in UTF-8", .0.display())]
pub struct NotUtf8(pub PathBuf);

pub(crate) fn utf8(path: &Path) -> Result<String, NotUtf8> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| NotUtf8(path.to_path_buf()))
}

/// `--ranks`'s list as text in the plan (its fixed form).
mod rank_list {
    use nsys_semantics::ranks::RankSelection;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        ranks: &Option<RankSelection>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match ranks {
            Some(ranks) => s.serialize_some(&ranks.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RankSelection>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// `NAME#N` as text in the plan.
mod range_spec {
    use nsys_semantics::cuts::NvtxRangeSpec;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        spec: &Option<NvtxRangeSpec>,
        out: S,
    ) -> Result<S::Ok, S::Error> {
        match spec {
            Some(spec) => out.serialize_some(&spec.to_string()),
            None => out.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        input: D,
    ) -> Result<Option<NvtxRangeSpec>, D::Error> {
        Option::<String>::deserialize(input)?
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Config {
        let mut config = Config::new(vec!["a.sqlite".into()], "out.prv.gz".into());
        config.selection.trace = vec!["cuda_api_trace".into(), "nvtx".into()];
        config.selection.kernel_names = KernelNameChoice::Demangled;
        config.selection.time_limit_start = Some(-5);
        config.cuts.nvtx_range = Some("step#2".parse().unwrap());
        config.sync = ClockSync::Nccl;
        config.output.labels = vec!["run 1".into()];
        config.output.report = Some(ReportRequest::Print);
        config.resources.jobs = Some(3);
        config.mode = Mode::Shard { index: 1, count: 4 };
        config
    }

    #[test]
    fn a_config_round_trips_through_json() {
        let config = sample();
        let text = serde_json::to_string(&config).unwrap();
        let back: Config = serde_json::from_str(&text).unwrap();
        assert_eq!(back, config);
        assert_eq!(back.cuts.nvtx_range.unwrap().to_string(), "step#2");
    }

    #[test]
    fn a_plan_keeps_what_shapes_the_trace_only() {
        let mut config = sample();
        let planned = config.for_plan();
        assert!(planned.inputs.reports.is_empty());
        assert_eq!(planned.resources, Resources::default());
        assert_eq!(planned.mode, Mode::Convert);
        assert_eq!(
            planned.shaping_options().unwrap(),
            config.shaping_options().unwrap()
        );
        // Per-process settings do not make another plan.
        config.resources.memory_limit = 1 << 20;
        config.quiet = true;
        config.output.timing = true;
        assert_eq!(config.for_plan(), planned);
        config.sync = ClockSync::Session;
        assert_ne!(config.for_plan(), planned);
    }
}
