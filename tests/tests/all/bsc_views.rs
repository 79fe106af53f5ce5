//! BSC's own views give the same figures on our traces as on BSC's (issue 26).
//!
//! BSC's Python nsys2prv (0.6.0rc1, and 0.5.8) and nsys2prv-rs translate the
//! same inputs with the same `-t` list: the bundled sample BSC can read (the
//! 2022.4 ones it cannot: it needs `META_DATA_EXPORT`), real corpus exports when
//! `../shared/corpus` is there, and generated jobs (a two-rank training job with
//! GPU metrics, NCCL and NVTX; a four-rank job on two nodes with MPI tables; NIC,
//! InfiniBand and the other device-side tables). Every view of BSC's `cfgs/` is
//! evaluated by `paramedir` on both traces and their figures compared by label
//! (`end_to_end::bsc`). A view that gives output on either trace must give the
//! same figures on both, unless the difference is listed, for that input, in the
//! table of `docs/bsc-differences.md` (which also explains and proves it); a
//! listed difference that no longer occurs fails too, so the table cannot drift.
//!
//! Prints, per input, how many views are the same, different, or give output on
//! one side only. Needs `PARAMEDIR` and `BSC_NSYS2PRV` (`scripts/bsc-nsys2prv.sh`);
//! without them it says so and does not run, except under CI, where it fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use end_to_end::bsc::{
    bsc_nsys2prv, categories_of, check_documented, compare, documented_differences, evaluate,
    key_figures, Bsc, Documented, Evaluated, Verdict, V058, V06,
};
use end_to_end::paramedir::paramedir;
use end_to_end::*;
use nsys_synth::{
    write_export, MpiPattern, SchemaVersion, SynthDeviceSide, SynthMpi, SynthProcess, SynthSpec,
    SynthTraining,
};

/// One input: a name for the summary and the differences table, and its exports.
struct Input {
    name: &'static str,
    files: Vec<PathBuf>,
    /// The BSC versions that translate it.
    versions: &'static [&'static str],
    /// Options of ours beyond BSC's `-t` list.
    ours_args: &'static [&'static str],
}

/// Launch of the generated jobs: 2025-03-01T09:00:00Z.
const JOB_START: i64 = 1_740_819_600_000_000_000;

/// A data-parallel training job of `ranks` ranks on `hosts` nodes, one GPU per
/// rank, with GPU metrics, NCCL and NVTX, as `nsys-synth --training` writes it;
/// with MPI, rank r's clock is early, exact or late by `skew_ns` in turn.
fn training_job(
    dir: &Path,
    name: &str,
    (ranks, hosts): (u32, u32),
    mpi: bool,
    skew_ns: i64,
) -> Vec<PathBuf> {
    (0..ranks)
        .map(|rank| {
            let (node, local) = (rank % hosts, rank / hosts);
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.hostname = format!("node{:02}", node + 1);
            spec.utc_epoch_ns = JOB_START + i64::from(rank) * 2_750;
            spec.seed = 1_000_003 + u64::from(rank);
            spec.processes = vec![SynthProcess {
                pid: 31_000 + 101 * rank,
                name: "python3".into(),
                cpu_threads: 2,
                devices: vec![local % 4],
                streams_per_device: 4,
                kernels: 0,
                memcpys: 0,
                memsets: 0,
                syncs: 0,
                extra_api_calls: 0,
            }];
            spec.env = vec![
                ("SLURM_PROCID".into(), rank.to_string()),
                ("SLURM_NTASKS".into(), ranks.to_string()),
                ("PWD".into(), "/home/synth/run".into()),
            ];
            spec.mpi = mpi.then(|| SynthMpi {
                clock_skew_ns: (i64::from(rank % 3) - 1) * skew_ns,
                ..SynthMpi::new(rank, ranks, MpiPattern::Ring, JOB_START)
            });
            spec.device = SynthDeviceSide {
                gpu_metric_samples: 4_000,
                ..SynthDeviceSide::default()
            };
            let shape = SynthTraining::new(1);
            spec.training = Some(SynthTraining {
                steps: shape.steps_for_rows(10_000),
                ..shape
            });
            let path = dir.join(format!("{name}_rank{rank}.sqlite"));
            let _ = std::fs::remove_file(&path);
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// One rank with every device-side table BSC translates: NIC and InfiniBand
/// counters, GPU metrics, graphs, GPU memory usage and CUDA events.
fn device_side(dir: &Path) -> Vec<PathBuf> {
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    spec.env.push(("PWD".into(), "/home/synth/run".into()));
    spec.device = SynthDeviceSide {
        gpu_metric_samples: 2_000,
        graph_launches: 3,
        memory_allocations: 4,
        nic_samples: 40,
        ib_switch_samples: 10,
        ib_congestion_events: 3,
        ..SynthDeviceSide::default()
    };
    let path = dir.join("device_side.sqlite");
    let _ = std::fs::remove_file(&path);
    write_export(&spec, &path).unwrap();
    // BSC reads `streamId` of the memory usage events, which NVIDIA's 3.28
    // schema reference lists (whether 3.24 has it is not known), and names the
    // NIC from the enum tables real exports have (the rows of a real 3.4 export).
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(
        "ALTER TABLE CUDA_GPU_MEMORY_USAGE_EVENTS ADD COLUMN streamId INTEGER;
         CREATE TABLE ENUM_NET_DEVICE_ID (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
         INSERT INTO ENUM_NET_DEVICE_ID VALUES (4117, 'CntX4Lx', 'ConnectX-4 Lx');
         CREATE TABLE ENUM_NET_VENDOR_ID (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
         INSERT INTO ENUM_NET_VENDOR_ID VALUES (5555, 'NVIDIA', 'NVIDIA / Mellanox');",
    )
    .unwrap();
    vec![path]
}

fn inputs(dir: &Path) -> Vec<Input> {
    let both: &'static [&'static str] = &[V06, V058];
    let mut inputs = vec![Input {
        name: "cuda_2025.5",
        files: vec![workspace_root().join("samples/synthetic/cuda_2025.5.sqlite")],
        versions: both,
        ours_args: &[],
    }];
    if let Some(corpus) = corpus_dir() {
        inputs.push(Input {
            name: "real-cuda-2025.5",
            files: vec![corpus.join("github/cestwc+balinski-and-gomory-cuda/report1.sqlite")],
            versions: &[V06],
            ours_args: &[],
        });
        inputs.push(Input {
            name: "real-osrt-2024.5",
            files: vec![
                corpus.join("github/gonzalo-villegas-curulla+CUDA_Cpp_Intro/report12.sqlite")
            ],
            versions: &[V06],
            ours_args: &[],
        });
    }
    inputs.push(Input {
        name: "training-2ranks",
        files: training_job(dir, "training", (2, 1), false, 0),
        versions: both,
        ours_args: &[],
    });
    inputs.push(Input {
        name: "training-4ranks-2nodes-mpi",
        files: training_job(dir, "fourranks", (4, 2), true, 0),
        versions: &[V06],
        ours_args: &[],
    });
    // Nodes whose clocks disagree by 3 ms: BSC aligns the reports on the end of
    // MPI_Init whenever MPI is traced, ours with --sync mpi-init (by default ours
    // keeps the recorded clocks: docs/bsc-differences.md).
    inputs.push(Input {
        name: "training-4ranks-skewed-clocks",
        files: training_job(dir, "skewed", (4, 2), true, 3_000_000),
        versions: &[V06],
        ours_args: &["--sync", "mpi-init"],
    });
    inputs.push(Input {
        name: "device-side",
        files: device_side(dir),
        versions: &[V06],
        ours_args: &[],
    });
    inputs
}

/// What one comparison (one BSC version on one input) found.
#[derive(Default)]
struct Outcome {
    /// The summary line: views same / different / only on one side.
    summary: String,
    /// One line per view that is not the same.
    details: Vec<String>,
    problems: Vec<String>,
    /// The rows of the differences table it saw.
    listed_seen: Vec<usize>,
}

/// Translates `input` with BSC's `version` and with ours, evaluates BSC's views
/// on both and compares them (see the file's documentation).
fn compare_one(
    paramedir: &Path,
    cache: &Path,
    dir: &Path,
    input: &Input,
    version: &'static str,
    documented: &[Documented],
) -> Outcome {
    let mut o = Outcome::default();
    let bsc = Bsc::new(cache, version);
    let work = dir.join(format!("{}-{version}", input.name));
    let trace = categories_of(&input.files, version).join(",");
    let bsc_prv = match bsc.convert(&input.files, &trace, &work) {
        Ok(prv) => prv,
        Err(e) => {
            o.problems.push(format!("{version} {}: {e}", input.name));
            return o;
        }
    };
    let ours = work.join("ours.prv");
    let files: Vec<&Path> = input.files.iter().map(PathBuf::as_path).collect();
    let mut args = vec!["-t", trace.as_str()];
    args.extend(input.ours_args);
    let out = convert(&files, &ours, &args);
    assert!(
        out.status.success(),
        "{}: nsys2prv-rs -t {trace}: {}",
        input.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let cfgs = bsc.cfgs();
    let on_bsc = evaluate(paramedir, &bsc_prv, &cfgs);
    let on_ours = evaluate(paramedir, &ours, &cfgs);
    let mut by_verdict: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut documented_here = 0;
    for (i, cfg) in cfgs.iter().enumerate() {
        let view = format!("{version}/{}", bsc.view_name(cfg));
        let (figures_bsc, figures_ours) = (on_bsc[i].figures(), on_ours[i].figures());
        let verdict = compare(&figures_bsc, &figures_ours);
        for (side, e) in [("BSC's", &on_bsc[i]), ("our", &on_ours[i])] {
            if let Evaluated::Crashed(why) = e {
                o.details.push(format!(
                    "  {version} {} {view}: paramedir aborts on {side} trace: {why}",
                    input.name
                ));
            }
        }
        *by_verdict.entry(verdict.word()).or_default() += 1;
        let listed = documented
            .iter()
            .position(|d| d.view == view && d.input == input.name);
        o.listed_seen.extend(listed);
        match (&verdict, listed) {
            (Verdict::Neither | Verdict::Same, None) => {}
            (Verdict::Neither | Verdict::Same, Some(_)) => o.problems.push(format!(
                "{view} on {}: listed in docs/bsc-differences.md but {} now",
                input.name,
                verdict.word()
            )),
            (_, Some(l)) => {
                documented_here += 1;
                let wrong =
                    check_documented(&documented[l], &figures_bsc, &figures_ours, &input.files);
                for w in wrong {
                    o.problems.push(format!("{view} on {}: {w}", input.name));
                }
            }
            (_, None) => {
                let what = match &verdict {
                    Verdict::Different(first) => format!("different ({first})"),
                    other => other.word().to_owned(),
                };
                o.problems.push(format!(
                    "{view} on {}: {what}, and not in docs/bsc-differences.md",
                    input.name
                ));
            }
        }
        if !matches!(verdict, Verdict::Neither | Verdict::Same) {
            o.details.push(format!(
                "  {version} {} {view}: {} (BSC: {}; ours: {})",
                input.name,
                verdict.word(),
                key_figures(&figures_bsc),
                key_figures(&figures_ours)
            ));
        }
    }
    let count = |v: Verdict| by_verdict.get(v.word()).copied().unwrap_or(0);
    let with_output = cfgs.len() - count(Verdict::Neither);
    o.summary = format!(
        "{version} on {} (-t {trace}{}): {with_output} of {} views give output: \
         same {}, different {}, only on BSC's {}, only on ours {} ({documented_here} documented)",
        input.name,
        input
            .ours_args
            .iter()
            .fold(String::new(), |s, a| s + " " + a),
        cfgs.len(),
        count(Verdict::Same),
        count(Verdict::Different(String::new())),
        count(Verdict::OnlyBsc),
        count(Verdict::OnlyOurs),
    );
    o
}

#[test]
fn bsc_views_give_the_same_figures_on_our_traces() {
    let Some(paramedir) = paramedir() else {
        return;
    };
    let Some(cache) = bsc_nsys2prv() else {
        return;
    };
    // `BSC_VIEWS_WORKDIR=DIR` keeps the inputs, traces and BSC's logs there. By
    // default they go to a fixed directory under target/tmp, emptied first: an
    // export records its own path, so only there are the generated inputs the same
    // bytes in every run, and BSC's conversions of them come from its cache.
    let kept = std::env::var_os("BSC_VIEWS_WORKDIR").map(PathBuf::from);
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bsc_views");
    if kept.is_none() && scratch.exists() {
        std::fs::remove_dir_all(&scratch).unwrap();
    }
    let dir = kept.as_deref().unwrap_or(&scratch);
    std::fs::create_dir_all(dir).unwrap();
    let documented = documented_differences();
    // `BSC_VIEWS_ONLY=NAME,...` compares only those inputs (while investigating).
    let only = std::env::var("BSC_VIEWS_ONLY").ok();
    let inputs: Vec<Input> = inputs(dir)
        .into_iter()
        .filter(|i| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|n| n == i.name))
        })
        .collect();
    let jobs: Vec<(&Input, &'static str)> = inputs
        .iter()
        .flat_map(|i| i.versions.iter().map(move |&v| (i, v)))
        .collect();
    // Two at a time: BSC's tool and paramedir use one core each.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut outcomes: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(input, version)) = jobs.get(n) else {
                            return done;
                        };
                        let o = compare_one(&paramedir, &cache, dir, input, version, &documented);
                        done.push((n, o));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a comparison panicked"))
            .collect()
    });
    outcomes.sort_by_key(|(n, _)| *n);
    let mut problems: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (_, o) in &outcomes {
        problems.extend(o.problems.iter().cloned());
        seen.extend(o.listed_seen.iter().copied());
    }
    let compared: std::collections::BTreeSet<&str> = inputs.iter().map(|i| i.name).collect();
    for (l, d) in documented.iter().enumerate() {
        if !seen.contains(&l) && compared.contains(d.input.as_str()) {
            problems.push(format!(
                "docs/bsc-differences.md lists {} on {}, which the test did not evaluate",
                d.view, d.input
            ));
        }
    }
    let report = format!(
        "BSC's views on BSC's trace and on ours:\n{}\n\nDifferences:\n{}",
        outcomes
            .iter()
            .map(|(_, o)| o.summary.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        outcomes
            .iter()
            .flat_map(|(_, o)| o.details.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{report}");
    assert!(
        problems.is_empty(),
        "{report}\n\n{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Proofs of the documented differences: ours against the export, by SQL. They
// need neither BSC's tool nor paramedir.

/// One value of `sql` on `db`.
fn sql_count(db: &Path, sql: &str) -> i64 {
    let db = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    db.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or(0)
}

/// Per event record of `ty` with a value other than 0: the row it is on (its
/// `.row` name), and, for an interval, its length (to the next record of `ty` on
/// that row that closes it: intervals of one row nest).
fn intervals_of(prv: &Path, ty: u32) -> Vec<(String, i64)> {
    let text = std::fs::read_to_string(prv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    // `…:1(threads:node,threads:node,…)`: one application, its tasks.
    let tasks = header.rsplit_once('(').unwrap().1.trim_end_matches(')');
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let names: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut first_of_task = vec![0];
    for spec in tasks.split(',') {
        let n: usize = spec.split(':').next().unwrap().parse().unwrap();
        first_of_task.push(first_of_task.last().unwrap() + n);
    }
    let mut open: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut out: Vec<(String, i64)> = Vec::new();
    let mut begins: Vec<i64> = Vec::new();
    for line in lines.filter(|l| l.starts_with("2:")) {
        let f: Vec<i64> = line.split(':').map(|x| x.parse().unwrap()).collect();
        let thread = first_of_task[f[3] as usize - 1] + f[4] as usize - 1;
        for pair in f[6..].chunks(2).filter(|p| p[0] == i64::from(ty)) {
            if pair[1] != 0 {
                open.entry(thread).or_default().push(out.len());
                out.push((names[thread].to_owned(), -1));
                begins.push(f[5]);
            } else if let Some(i) = open.get_mut(&thread).and_then(Vec::pop) {
                out[i].1 = f[5] - begins[i];
            }
        }
    }
    out
}

fn converted(dir: &Path, name: &str, inputs: &[PathBuf], extra: &[&str]) -> PathBuf {
    let prv = dir.join(format!("{name}.prv"));
    let files: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let out = convert(&files, &prv, extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_trace(&prv);
    prv
}

/// corrId.cfg: ours writes the correlation id (9200) on every CUDA API call and
/// every kernel, copy and memset that has one, as nsys records them; BSC only on
/// NCCL kernels (on every one in graph node mode).
#[test]
fn correlation_ids_mark_every_cuda_call_and_gpu_operation() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let prv = converted(dir.path(), "cuda", std::slice::from_ref(&input), &[]);
    let ours = intervals_of(&prv, 9200);
    let tables = [
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ];
    let truth: i64 = tables
        .iter()
        .map(|t| {
            sql_count(
                &input,
                &format!("SELECT count(*) FROM {t} WHERE correlationId > 0"),
            )
        })
        .sum();
    assert!(truth > 2000);
    assert_eq!(ours.len() as i64, truth);
    // On the calls' CPU threads and on the GPU streams.
    assert!(ours.iter().any(|(row, _)| row.starts_with("CUDA-D")));
    assert!(ours.iter().any(|(row, _)| !row.starts_with("CUDA-D")));
}

/// osrt_calls.cfg: ours writes every OS runtime call of `OSRT_API` as 66400000
/// (pthread calls too, which are also 61000000); BSC's 66400000 leaves out the
/// calls whose name has `pthread` (its 61000000 has them).
#[test]
fn os_runtime_calls_are_every_call_of_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite")];
    if let Some(corpus) = corpus_dir() {
        inputs.push(corpus.join("github/gonzalo-villegas-curulla+CUDA_Cpp_Intro/report12.sqlite"));
    }
    for (i, input) in inputs.iter().enumerate() {
        let prv = converted(
            dir.path(),
            &format!("osrt{i}"),
            std::slice::from_ref(input),
            &[],
        );
        let calls = intervals_of(&prv, 66_400_000);
        let count = sql_count(input, "SELECT count(*) FROM OSRT_API WHERE eventClass = 27");
        let time = sql_count(
            input,
            "SELECT sum(end - start) FROM OSRT_API WHERE eventClass = 27",
        );
        assert_eq!(calls.len() as i64, count, "{}", input.display());
        assert_eq!(
            calls.iter().map(|c| c.1).sum::<i64>(),
            time,
            "{}",
            input.display()
        );
        let pthread = sql_count(
            input,
            "SELECT count(*) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
             WHERE o.eventClass = 27 AND s.value LIKE '%pthread%'",
        );
        assert!(pthread > 0, "{}", input.display());
        assert!(intervals_of(&prv, 61_000_000).len() as i64 >= pthread);
    }
}

/// nccl_size.cfg, nccl_reduction_op.cfg, nccl_bw_mbs.cfg (and BSC's NIC views,
/// which read the same types): ours writes the payload of every NCCL range
/// (message size 9501, reduction 9502, …) on the range, on the CPU thread that
/// called NCCL, and on the NCCL kernel it launched. BSC 0.6 leaves NCCL payloads
/// out of exports of schema 3.24 and later ("not supported", it warns); 0.5.8
/// writes them on the kernel only.
#[test]
fn nccl_payloads_are_on_the_call_and_on_its_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = training_job(dir.path(), "nccl", (2, 1), false, 0);
    let prv = converted(dir.path(), "nccl", &inputs, &[]);
    let sizes = intervals_of(&prv, 9501);
    let truth: i64 = inputs
        .iter()
        .map(|f| {
            sql_count(
                f,
                "SELECT count(*) FROM NVTX_EVENTS e JOIN NVTX_EVENTS d
                 ON d.eventType = 75 AND d.text = 'NCCL' AND d.domainId = e.domainId
                 WHERE e.eventType = 59 AND e.jsonText LIKE '%Message size%'",
            )
        })
        .sum();
    assert!(truth > 50);
    let on_gpu = sizes
        .iter()
        .filter(|(row, _)| row.starts_with("CUDA-D"))
        .count();
    assert_eq!(on_gpu as i64, truth, "on the NCCL kernels");
    assert_eq!((sizes.len() - on_gpu) as i64, truth, "on the NCCL calls");
}

/// gpu-gaps.cfg, model/Device_State.cfg, mips_kernel_2dh.cfg on a job with NIC
/// counters: BSC puts each node's NIC counters in a task of their own, which
/// these task-level views count as a process whose GPU is always idle (and which
/// moves rows that views pick by position); ours puts them on rows of the node's
/// first process, so the trace has one task per process of the export.
#[test]
fn node_counters_stay_in_a_process_of_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = device_side(dir.path());
    let prv = converted(dir.path(), "device", &inputs, &[]);
    let processes = sql_count(
        &inputs[0],
        "SELECT count(DISTINCT globalTid / 16777216) FROM CUPTI_ACTIVITY_KIND_RUNTIME",
    );
    assert_eq!(processes, 1);
    let stats = check_trace(&prv);
    assert_eq!(stats.tasks as i64, processes);
    let counters = intervals_of(&prv, 9501);
    assert!(!counters.is_empty());
    assert!(counters
        .iter()
        .all(|(row, _)| row.starts_with("NIC0 counters")));
}
