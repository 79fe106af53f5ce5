//! Paraver's own loader on our output: every view written for a trace is evaluated
//! by `paramedir` (BSC's command-line Paraver) on the bundled samples, a set of
//! corpus reports chosen by feature, and synthetic exports of what the corpus
//! lacks (NCCL, GPU metrics, MPI tables, graphs, OpenACC, ...). The tool writes
//! only views the trace has data for, so paramedir must print no error or
//! warning for any of them, and the result of a view the trace fills must not be
//! empty. With `--all-views`, a view none of whose event types occur gets exactly
//! Paraver's "None of the events ..." and nothing worse. The efficiency figures
//! of `report` must equal, to the nanosecond, what paramedir computes from the
//! bundled efficiency views.
//!
//! Needs `PARAMEDIR` (see `end_to_end::paramedir`); skipped, and listed in the run's summary, without
//! it, except under CI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use end_to_end::fixtures::{add_nccl_ranges, openacc_export};
use end_to_end::paramedir::{
    paramedir, run, view_windows, ViewResult, ViewWindow, NONE_OF_THE_EVENTS, SOME_OF_THE_EVENTS,
};
use end_to_end::*;
use nsys_synth::{
    add_cpu_activity, write_export, MpiPattern, SchemaVersion, SynthCpu, SynthDeviceSide,
    SynthGraphMode, SynthMpi, SynthSpec,
};
use paraver_reader::validate::{validate_trace, TraceStats};

/// A trace to convert: its name and the reports that make it.
struct Case {
    name: String,
    inputs: Vec<PathBuf>,
    /// Written as `.prv.gz` (in gzip members, compressed in parallel).
    gzip: bool,
    /// Converted with `--all-views`: every bundled view, with or without data.
    all_views: bool,
}

impl Case {
    fn new(name: &str, inputs: Vec<PathBuf>) -> Self {
        Case {
            name: name.to_owned(),
            inputs,
            gzip: false,
            all_views: false,
        }
    }
}

fn sample(rel: &str) -> PathBuf {
    workspace_root().join("samples").join(rel)
}

/// Every bundled sample, multi-rank ones as one trace.
fn sample_cases() -> Vec<Case> {
    let ranks = |dir: &str, n: usize| -> Vec<PathBuf> {
        (0..n)
            .map(|r| sample(&format!("{dir}/rank{r}.sqlite")))
            .collect()
    };
    vec![
        Case::new("nvtx_osrt", vec![sample("nvtx_osrt/nvtx_osrt.sqlite")]),
        Case::new("sched", vec![sample("sched/sched.sqlite")]),
        Case::new("openmp", vec![sample("openmp/openmp.sqlite")]),
        Case::new("sampling", vec![sample("sampling/sampling.sqlite")]),
        Case::new("sched_only", vec![sample("sched_only/sched_only.sqlite")]),
        Case::new("mpi_2ranks", ranks("mpi_2ranks", 2)),
        Case::new("mpi_3ranks", ranks("mpi_3ranks", 3)),
        Case::new("cuda_2025.5", vec![sample("synthetic/cuda_2025.5.sqlite")]),
        Case {
            gzip: true,
            ..Case::new(
                "cuda_2025.5 gzip",
                vec![sample("synthetic/cuda_2025.5.sqlite")],
            )
        },
        Case::new(
            "4ranks_2hosts_2022.4",
            ranks("synthetic/4ranks_2hosts_2022.4", 4),
        ),
        Case {
            all_views: true,
            ..Case::new(
                "nvtx_osrt all views",
                vec![sample("nvtx_osrt/nvtx_osrt.sqlite")],
            )
        },
        Case {
            all_views: true,
            ..Case::new(
                "cuda_2025.5 all views",
                vec![sample("synthetic/cuda_2025.5.sqlite")],
            )
        },
    ]
}

/// Corpus features the chosen reports must cover between them.
const CORPUS_FEATURES: &[&str] = &[
    "kernel",
    "memcpy",
    "memset",
    "cuda_sync",
    "cuda_event",
    "multi_stream",
    "nvtx_pushpop",
    "nvtx_startend",
    "nvtx_mark",
    "nvtx_domains",
    "nvtx_payload",
    "mpi_nvtx",
    "ucx_nvtx",
    "shmem_nvtx",
    "openmp",
    "osrt",
    "sched",
    "multi_process",
];

/// Features of a report with something to translate.
const TRANSLATED: &[&str] = &[
    "kernel",
    "cuda_api",
    "nvtx_pushpop",
    "osrt",
    "openmp",
    "sched",
    "cpu_sampling",
];

/// For each feature of [`CORPUS_FEATURES`] not yet covered, the smallest corpus
/// export that has it; a `rankN.sqlite` comes with the other ranks of its job.
fn corpus_cases(corpus: &Path) -> Vec<Case> {
    let manifest = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
    let mut candidates: Vec<(u64, String, BTreeSet<String>)> = manifest
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let features: BTreeSet<String> = cols[6].split(',').map(str::to_owned).collect();
            let usable = cols[0].ends_with(".sqlite")
                && features.contains("opens_ok")
                && TRANSLATED.iter().any(|f| features.contains(*f));
            usable.then(|| (cols[2].parse().unwrap(), cols[0].to_owned(), features))
        })
        .collect();
    candidates.sort();
    let mut covered = BTreeSet::new();
    let mut cases = Vec::new();
    for feature in CORPUS_FEATURES {
        if covered.contains(*feature) {
            continue;
        }
        let (_, rel, features) = candidates
            .iter()
            .find(|(_, _, f)| f.contains(*feature))
            .unwrap_or_else(|| panic!("no corpus export has '{feature}'"));
        covered.extend(features.iter().cloned());
        let path = corpus.join(rel);
        if is_rank_file(&path) {
            let mut ranks: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| is_rank_file(p))
                .collect();
            ranks.sort();
            let dir = Path::new(rel).parent().unwrap().display();
            cases.push(Case::new(&format!("{dir} ({} ranks)", ranks.len()), ranks));
        } else {
            cases.push(Case::new(rel, vec![path]));
        }
    }
    cases
}

fn is_rank_file(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name.strip_prefix("rank")
        .and_then(|n| n.strip_suffix(".sqlite"))
        .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// Everything the corpus lacks: a 2-rank job (schema 3.24) with `MPI_*` tables,
/// NCCL kernels and NCCL NVTX ranges, GPU and SoC metrics (sampled all along the
/// run, so every kernel has metric values), graphs, host functions, memory usage,
/// NIC and InfiniBand counters; the same job in the 2023.4 form (MPI and metrics
/// as NVTX and JSON rows, graph nodes as kernels); an OpenACC export; CPU samples
/// with CPU core counters.
fn synthetic_cases(dir: &Path) -> Vec<Case> {
    let everything = SynthDeviceSide {
        gpu_metric_samples: METRIC_SAMPLES,
        graph_launches: 3,
        memory_allocations: 4,
        nic_samples: 5,
        ib_switch_samples: 4,
        ib_congestion_events: 3,
        soc_metric_samples: 6,
        host_functions: 2,
        ..SynthDeviceSide::default()
    };
    // What the 2023.4 schema can hold of it.
    let older = SynthDeviceSide {
        gpu_metric_samples: METRIC_SAMPLES,
        graph_launches: 3,
        graph_mode: SynthGraphMode::Node,
        memory_allocations: 4,
        ..SynthDeviceSide::default()
    };
    let new = synthetic_job(dir, SchemaVersion::V3_24, &everything, "job_2025");
    for path in &new {
        assert!(add_nccl_ranges(path) > 0);
    }
    let old = synthetic_job(dir, SchemaVersion::V3_7, &older, "job_2023");
    let acc = dir.join("openacc.sqlite");
    openacc_export(&acc);
    let counters = dir.join("cpu_counters.sqlite");
    let spec = SynthSpec::small(SchemaVersion::V3_24);
    write_export(&spec, &counters).unwrap();
    let cpu = SynthCpu {
        samples_per_thread: 100,
        cpu_counters: 3,
        ..SynthCpu::default()
    };
    add_cpu_activity(&counters, &spec, &cpu).unwrap();
    vec![
        Case::new("synthetic job 2025.5", new),
        Case::new("synthetic job 2023.4", old),
        Case::new("synthetic OpenACC", vec![acc]),
        Case::new("synthetic CPU samples and counters", vec![counters]),
        // NCCL point-to-point lines between the stages.
        Case::new(
            "synthetic pipeline",
            crate::bubble::pipeline_job(dir, 3, 1).0,
        ),
    ]
}

/// GPU metric samples, 100 us apart: enough to cover the synthetic job's run.
const METRIC_SAMPLES: u64 = 6000;

/// A 2-rank MPI job, one GPU per rank.
fn synthetic_job(
    dir: &Path,
    schema: SchemaVersion,
    device: &SynthDeviceSide,
    name: &str,
) -> Vec<PathBuf> {
    let job_start = SynthSpec::small(schema).utc_epoch_ns;
    (0..2u32)
        .map(|rank| {
            let mut spec = SynthSpec::small(schema);
            spec.hostname = format!("node{:02}", rank + 1);
            spec.utc_epoch_ns = job_start + i64::from(rank) * 3_700;
            spec.seed = u64::from(rank) + 7;
            spec.processes[0].pid = 5000 + rank;
            spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
            spec.mpi = Some(SynthMpi::new(rank, 2, MpiPattern::Ring, job_start));
            spec.device = device.clone();
            let path = dir.join(format!("{name}_rank{rank}.sqlite"));
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// A converted trace and what it holds, as far as views care.
struct Trace {
    prv: PathBuf,
    /// `NAME.cfgs`, the views written for it.
    views: PathBuf,
    stats: TraceStats,
}

fn convert_case(case: &Case, dir: &Path) -> Trace {
    let name: String = case
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let prv = dir.join(format!("{name}.prv{}", if case.gzip { ".gz" } else { "" }));
    let refs: Vec<&Path> = case.inputs.iter().map(PathBuf::as_path).collect();
    let options: &[&str] = if case.all_views {
        &["--all-views"]
    } else {
        &[]
    };
    let result = convert(&refs, &prv, options);
    assert!(
        result.status.success(),
        "{}: {}",
        case.name,
        String::from_utf8_lossy(&result.stderr)
    );
    let report = validate_trace(&prv).expect("read the trace");
    let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
    assert!(errors.is_empty(), "{}:\n{}", case.name, errors.join("\n"));
    Trace {
        prv,
        views: dir.join(format!("{name}.cfgs")),
        stats: report.stats,
    }
}

/// `NAME.<ext>` beside a `NAME.prv[.gz]`.
fn sibling(prv: &Path, ext: &str) -> PathBuf {
    let name = prv.to_str().unwrap();
    let base = name.strip_suffix(".gz").unwrap_or(name);
    PathBuf::from(format!("{}.{ext}", base.strip_suffix(".prv").unwrap()))
}

impl Trace {
    /// A type occurs in the body (with any value): paramedir's "loaded".
    fn loads(&self, ty: u32) -> bool {
        self.stats.event_begins.contains_key(&ty) || self.stats.event_ends.contains_key(&ty)
    }

    /// The trace has something for this window to show.
    fn fills(&self, w: &ViewWindow) -> bool {
        const COMM_FUNCTIONS: &[&str] = &["Send", "Recv", "Comm", "Number Of", "Tag"];
        if w.derived {
            true
        } else if w.lists_types() {
            // A type whose values are all 0 (kernels without dynamic shared
            // memory) is in the trace but shows nothing.
            self.stats
                .event_begins
                .iter()
                .any(|(&ty, &n)| n > 0 && w.selects_type(ty))
        } else if COMM_FUNCTIONS.iter().any(|f| w.thread_function.contains(f)) {
            self.stats.comm_tags.keys().any(|&tag| w.selects_tag(tag))
        } else if w.thread_function.contains("State") || w.thread_function == "Useful" {
            self.stats.state_time.keys().any(|&s| s != 0)
        } else {
            !self.stats.event_begins.is_empty()
        }
    }
}

/// What paramedir should do with a view on a trace.
struct Expected {
    /// Its messages about the view, in order.
    messages: Vec<&'static str>,
    /// It writes a result.
    result: bool,
    /// The trace fills every window of the view: the result must show something.
    fits: bool,
}

/// paramedir's rules (`CFGLoader::loadCFG`): no listed type occurs (and no window
/// takes every type) → "None of the events ..." and nothing written; some listed
/// type missing → "Some of the events ..." and the result written.
fn expected(windows: &[ViewWindow], trace: &Trace) -> Expected {
    let singles: Vec<&ViewWindow> = windows.iter().filter(|w| !w.derived).collect();
    let takes_all = singles.iter().any(|w| !w.lists_types());
    let listed: Vec<(&ViewWindow, u32)> = singles
        .iter()
        .filter(|w| w.lists_types())
        .flat_map(|w| w.types.iter().map(move |&t| (*w, t)))
        .collect();
    let loaded = |w: &ViewWindow, t: u32| match w.type_function.as_str() {
        "[x,y]" => trace
            .stats
            .event_begins
            .keys()
            .chain(trace.stats.event_ends.keys())
            .any(|&ty| w.selects_type(ty)),
        _ => trace.loads(t),
    };
    let some_exist = takes_all || listed.iter().any(|&(w, t)| loaded(w, t));
    let some_missing = listed.iter().any(|&(w, t)| !loaded(w, t));
    if !some_exist {
        return Expected {
            messages: vec![NONE_OF_THE_EVENTS],
            result: false,
            fits: false,
        };
    }
    Expected {
        messages: if some_missing {
            vec![SOME_OF_THE_EVENTS]
        } else {
            vec![]
        },
        result: true,
        fits: windows.iter().all(|w| trace.fills(w)),
    }
}

/// Every `.cfg` under `dir`, sorted.
fn views_under(dir: &Path) -> Vec<PathBuf> {
    let mut views = files_under(dir);
    views.retain(|p| p.extension().is_some_and(|e| e == "cfg"));
    views
}

/// What paramedir did with the views of a trace.
#[derive(Default)]
struct Outcome {
    /// Departures from [`expected`].
    problems: Vec<String>,
    /// Views (relative paths) the trace fills.
    filled: Vec<String>,
    /// Views with some event types in the trace, yet not filled, and views with none.
    partial: usize,
    absent: usize,
}

/// Evaluates every view written for `trace` in one paramedir run and checks what
/// it did against [`expected`].
fn check_views(paramedir: &Path, case: &Case, trace: &Trace) -> Outcome {
    let dir = &trace.views;
    let views = views_under(dir);
    let run = run(paramedir, &trace.prv, &views, &["-npr"]);
    let mut out = Outcome::default();
    let mut problem = |p: String| out.problems.push(format!("{}: {p}", case.name));
    if !run.status.success() {
        problem(format!("paramedir exited with {}", run.status));
    }
    for line in run.unexpected_lines() {
        problem(format!("paramedir: {line}"));
    }
    for (i, view) in views.iter().enumerate() {
        let rel = view.strip_prefix(dir).unwrap().display().to_string();
        let windows = view_windows(&std::fs::read_to_string(view).unwrap());
        let want = expected(&windows, trace);
        let said = run.messages(i);
        if said != want.messages {
            problem(format!(
                "{rel}: paramedir said {said:?}, expected {:?}",
                want.messages
            ));
        }
        if want.fits && !want.messages.is_empty() {
            problem(format!(
                "{rel}: lists event types the trace lacks, so Paraver asks whether to go on"
            ));
        }
        if !case.all_views && !want.messages.is_empty() {
            problem(format!(
                "{rel}: written for a trace that lacks its types (paramedir: {said:?})"
            ));
        }
        match (run.result(i), want.result) {
            (None, false) => {}
            (None, true) => problem(format!("{rel}: no result written")),
            (Some(_), false) => problem(format!("{rel}: a result written after an abort")),
            (Some(Err(e)), true) => problem(format!("{rel}: unreadable result: {e}")),
            (Some(Ok(result)), true) => {
                if want.fits && !result.has_data() {
                    problem(format!("{rel}: empty result, yet the trace has its data"));
                }
            }
        }
        if want.fits {
            out.filled.push(rel);
        } else if want.result {
            out.partial += 1;
        } else {
            out.absent += 1;
        }
    }
    out
}

/// Views that no trace of this test fills, and why.
const UNFILLED_VIEWS: &[(&str, &str)] = &[];

#[test]
fn every_view_loads_in_paramedir_on_every_trace() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut cases = sample_cases();
    if let Some(corpus) = corpus_dir() {
        cases.extend(corpus_cases(&corpus));
    }
    cases.extend(synthetic_cases(dir.path()));

    let mut problems = Vec::new();
    let mut filled: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut all_views = BTreeSet::new();
    for case in &cases {
        let trace = convert_case(case, dir.path());
        let outcome = check_views(&paramedir, case, &trace);
        eprintln!(
            "{}: {} views filled, {} partly, {} without any of their types",
            case.name,
            outcome.filled.len(),
            outcome.partial,
            outcome.absent
        );
        problems.extend(outcome.problems);
        all_views.extend(
            views_under(&trace.views)
                .iter()
                .map(|v| v.strip_prefix(&trace.views).unwrap().display().to_string()),
        );
        for view in outcome.filled {
            filled.entry(view).or_default().push(case.name.clone());
        }
    }
    let unfilled: Vec<&String> = all_views
        .iter()
        .filter(|v| !filled.contains_key(*v))
        .collect();
    let expected_unfilled: Vec<&str> = UNFILLED_VIEWS.iter().map(|(v, _)| *v).collect();
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(
        unfilled, expected_unfilled,
        "views that no test trace fills"
    );
}

/// A CSV table of `report --out DIR`, as rows of fields (header first).
fn report_csv(dir: &Path, name: &str) -> Vec<Vec<String>> {
    let path = dir.join(name);
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// One GPU of `report`'s `gpus.csv`.
struct ReportGpu {
    task: usize,
    useful: f64,
    communication: f64,
    idle: f64,
}

/// Tasks (1-based) of the `.row`.
fn task_count(prv: &Path) -> usize {
    let row = std::fs::read_to_string(sibling(prv, "row")).unwrap();
    let header = row
        .lines()
        .find(|l| l.starts_with("LEVEL TASK SIZE "))
        .unwrap();
    header.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Runs the efficiency views written for `trace` and `report`, and compares:
/// every GPU's useful, communication and idle time (ns) with its task's row of
/// `communication_efficiency.cfg` (tasks with one GPU), and the four figures with
/// what the views' descriptions say to read (traces whose tasks all have one GPU).
/// Returns the problems, and whether the figures were compared.
fn compare_efficiency(paramedir: &Path, case: &Case, trace: &Trace) -> (Vec<String>, bool) {
    let mut problems = Vec::new();
    let out_dir = sibling(&trace.prv, "report");
    let report = binary()
        .arg("report")
        .arg(&trace.prv)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("run report");
    assert!(
        report.status.success(),
        "{}: {}",
        case.name,
        String::from_utf8_lossy(&report.stderr)
    );
    let figures: BTreeMap<String, f64> = report_csv(&out_dir, "efficiency.csv")
        .into_iter()
        .skip(1)
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect();
    let gpus: Vec<ReportGpu> = report_csv(&out_dir, "gpus.csv")
        .into_iter()
        .skip(1)
        .map(|r| ReportGpu {
            task: r[1].parse().unwrap(),
            useful: r[4].parse().unwrap(),
            communication: r[5].parse().unwrap(),
            idle: r[6].parse().unwrap(),
        })
        .collect();
    if gpus.is_empty() {
        return (problems, false);
    }

    let views: Vec<PathBuf> = [
        "communication_efficiency",
        "load_balance",
        "orchestration_efficiency",
        "parallel_efficiency",
    ]
    .iter()
    .map(|v| trace.views.join(format!("efficiency/{v}.cfg")))
    .collect();
    let run = run(paramedir, &trace.prv, &views, &["-npr"]);
    assert!(
        run.unexpected_lines().is_empty() && (0..4).all(|i| run.messages(i).is_empty()),
        "{}: {}{}",
        case.name,
        run.stdout,
        run.stderr
    );
    let table = |i: usize| match run.result(i) {
        Some(Ok(ViewResult::Histogram(h))) => h,
        other => panic!("{}: {}: {other:?}", case.name, views[i].display()),
    };
    let (breakdown, balance, orchestration, parallel) = (table(0), table(1), table(2), table(3));
    let tasks = task_count(&trace.prv);
    assert_eq!(
        breakdown.rows.len(),
        tasks,
        "{}: one row per task",
        case.name
    );
    // A column left out (HideCols) is a time of 0.
    let cell = |row: usize, column: &str| -> f64 {
        let col = breakdown.columns.iter().position(|c| c == column);
        col.map_or(0.0, |c| breakdown.rows[row].1[c])
    };
    let gpus_of = |task: usize| gpus.iter().filter(|g| g.task == task).count();
    for gpu in gpus.iter().filter(|g| gpus_of(g.task) == 1) {
        let row = gpu.task - 1;
        let seen = (cell(row, "2"), cell(row, "1"), cell(row, "0"));
        let want = (gpu.useful, gpu.communication, gpu.idle);
        if seen != want {
            problems.push(format!(
                "{}: task {} (useful, communication, idle): paramedir {seen:?}, report {want:?} ns",
                case.name, gpu.task
            ));
        }
    }

    let one_gpu_each = (1..=tasks).all(|t| gpus_of(t) == 1);
    if one_gpu_each {
        let summary = |h: &end_to_end::paramedir::Histogram, row: &str| {
            h.cell(row, "1")
                .unwrap_or_else(|| panic!("{}: no {row} of column 1", case.name))
        };
        let max_busy = (0..tasks)
            .map(|r| cell(r, "1") + cell(r, "2"))
            .fold(0.0, f64::max);
        let max_useful = breakdown.cell("Maximum", "2").unwrap_or(0.0);
        let from_views = [
            ("load_balance", summary(&balance, "Avg/Max")),
            ("communication_efficiency", max_useful / max_busy),
            (
                "orchestration_efficiency",
                summary(&orchestration, "Maximum") / 100.0,
            ),
            ("parallel_efficiency", summary(&parallel, "Average") / 100.0),
        ];
        for (name, value) in from_views {
            // report writes 6 decimals.
            if (value - figures[name]).abs() > 5e-7 {
                problems.push(format!(
                    "{}: {name}: paramedir {value:.9}, report {}",
                    case.name, figures[name]
                ));
            }
        }
    }
    (problems, one_gpu_each)
}

#[test]
fn report_efficiency_equals_what_paramedir_computes_from_the_efficiency_views() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut cases = sample_cases();
    if let Some(corpus) = corpus_dir() {
        cases.extend(corpus_cases(&corpus));
    }
    let device = SynthDeviceSide {
        memory_allocations: 4,
        ..SynthDeviceSide::default()
    };
    let job = synthetic_job(dir.path(), SchemaVersion::V3_24, &device, "job");
    for path in &job {
        add_nccl_ranges(path);
    }
    cases.push(Case::new("synthetic job with NCCL", job));

    let mut problems = Vec::new();
    let mut compared = Vec::new();
    for case in &cases {
        let trace = convert_case(case, dir.path());
        let (found, figures) = compare_efficiency(&paramedir, case, &trace);
        problems.extend(found);
        if figures {
            compared.push(case.name.as_str());
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("efficiency figures compared on: {compared:?}");
    assert!(
        compared.len() >= 3,
        "too few traces with one GPU per task: {compared:?}"
    );
}

/// State labels of the `.pcf` (`STATES` section): label → state.
fn state_labels(prv: &Path) -> BTreeMap<String, u32> {
    let pcf = std::fs::read_to_string(sibling(prv, "pcf")).unwrap();
    pcf.lines()
        .skip_while(|l| *l != "STATES")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let (state, label) = l.split_once(' ').unwrap();
            (label.trim().to_owned(), state.parse().unwrap())
        })
        .collect()
}

/// `gpu_idle_gaps.cfg` averages the state records of every state (its data
/// window once counted Running records only): each cell of a state other than
/// Idle is the mean length of that thread's records in that state.
#[test]
fn gpu_idle_gaps_averages_the_records_of_every_state() {
    let Some(paramedir) = paramedir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let case = Case::new("cuda_2025.5", vec![sample("synthetic/cuda_2025.5.sqlite")]);
    let trace = convert_case(&case, dir.path());
    assert_eq!(
        task_count(&trace.prv),
        1,
        "threads are numbered in one task"
    );
    // (thread, state) → (total ns, records)
    let mut records: BTreeMap<(usize, u32), (f64, f64)> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace.prv).unwrap().lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f[0] != "1" {
            continue;
        }
        let (begin, end): (f64, f64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
        let cell = records
            .entry((f[4].parse().unwrap(), f[7].parse().unwrap()))
            .or_default();
        *cell = (cell.0 + end - begin, cell.1 + 1.0);
    }
    let view = trace.views.join("analysis/gpu_idle_gaps.cfg");
    let run = run(&paramedir, &trace.prv, &[view], &["-npr"]);
    assert!(run.unexpected_lines().is_empty() && run.messages(0).is_empty());
    let Some(Ok(ViewResult::Histogram(h))) = run.result(0) else {
        panic!("no histogram: {}{}", run.stdout, run.stderr)
    };
    let labels = state_labels(&trace.prv);
    let mut checked = 0;
    for (row, (name, cells)) in h.rows.iter().enumerate() {
        for (label, &value) in h.columns.iter().zip(cells) {
            let state = labels[label];
            if state == 0 {
                continue;
            }
            let (total, n) = records
                .get(&(row + 1, state))
                .copied()
                .unwrap_or((0.0, 0.0));
            let mean = if n > 0.0 { total / n } else { 0.0 };
            assert!(
                (value - mean).abs() <= 1e-6 * mean.max(1.0),
                "{name}, {label}: paramedir {value}, records {mean}"
            );
            checked += usize::from(n > 0.0);
        }
    }
    // Running, transfers, synchronization, API states on CPU threads and streams.
    assert!(checked >= 10, "{checked} cells");
    assert!(h.columns.iter().any(|c| c != "Running" && c != "Idle"));
}
