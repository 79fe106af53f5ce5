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
    bsc_nsys2prv, categories_of, compare, documented_differences, evaluate, Bsc, Evaluated,
    Verdict, V058, V06,
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
}

/// Launch of the generated jobs: 2025-03-01T09:00:00Z.
const JOB_START: i64 = 1_740_819_600_000_000_000;

/// A data-parallel training job of `ranks` ranks on `hosts` nodes, one GPU per
/// rank, with GPU metrics, NCCL and NVTX, as `nsys-synth --training` writes it.
fn training_job(dir: &Path, name: &str, ranks: u32, hosts: u32, mpi: bool) -> Vec<PathBuf> {
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
            spec.mpi = mpi.then(|| SynthMpi::new(rank, ranks, MpiPattern::Ring, JOB_START));
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
    }];
    if let Some(corpus) = corpus_dir() {
        inputs.push(Input {
            name: "real-cuda-2025.5",
            files: vec![corpus.join("github/cestwc+balinski-and-gomory-cuda/report1.sqlite")],
            versions: &[V06],
        });
        inputs.push(Input {
            name: "real-osrt-2024.5",
            files: vec![
                corpus.join("github/gonzalo-villegas-curulla+CUDA_Cpp_Intro/report12.sqlite")
            ],
            versions: &[V06],
        });
    }
    inputs.push(Input {
        name: "training-2ranks",
        files: training_job(dir, "training", 2, 1, false),
        versions: both,
    });
    inputs.push(Input {
        name: "training-4ranks-2nodes-mpi",
        files: training_job(dir, "fourranks", 4, 2, true),
        versions: &[V06],
    });
    inputs.push(Input {
        name: "device-side",
        files: device_side(dir),
        versions: &[V06],
    });
    inputs
}

/// Counts of one (version, input) comparison.
#[derive(Default)]
struct Tally {
    by_verdict: BTreeMap<&'static str, usize>,
    documented: usize,
}

#[test]
fn bsc_views_give_the_same_figures_on_our_traces() {
    let Some(paramedir) = paramedir() else {
        return;
    };
    let Some(cache) = bsc_nsys2prv() else {
        return;
    };
    // `BSC_VIEWS_WORKDIR=DIR` keeps the inputs, traces and BSC's logs there.
    let temp = tempfile::tempdir().unwrap();
    let kept = std::env::var_os("BSC_VIEWS_WORKDIR").map(PathBuf::from);
    let dir = kept.as_deref().unwrap_or(temp.path());
    std::fs::create_dir_all(dir).unwrap();
    let documented = documented_differences();
    let mut listed_seen = vec![false; documented.len()];
    let mut problems: Vec<String> = Vec::new();
    let mut summary: Vec<String> = Vec::new();
    let mut details: Vec<String> = Vec::new();
    // `BSC_VIEWS_ONLY=NAME,...` compares only those inputs (while investigating).
    let only = std::env::var("BSC_VIEWS_ONLY").ok();
    for input in inputs(dir) {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|n| n == input.name))
        {
            continue;
        }
        for &version in input.versions {
            let bsc = Bsc::new(&cache, version);
            let work = dir.join(format!("{}-{version}", input.name));
            let trace = categories_of(&input.files, version).join(",");
            let bsc_prv = match bsc.convert(&input.files, &trace, &work) {
                Ok(prv) => prv,
                Err(e) => {
                    problems.push(format!("{version} {}: {e}", input.name));
                    continue;
                }
            };
            let ours = work.join("ours.prv");
            let files: Vec<&Path> = input.files.iter().map(PathBuf::as_path).collect();
            let out = convert(&files, &ours, &["-t", &trace]);
            assert!(
                out.status.success(),
                "{}: nsys2prv-rs -t {trace}: {}",
                input.name,
                String::from_utf8_lossy(&out.stderr)
            );
            let cfgs = bsc.cfgs();
            let on_bsc = evaluate(&paramedir, &bsc_prv, &cfgs);
            let on_ours = evaluate(&paramedir, &ours, &cfgs);
            let mut tally = Tally::default();
            for (i, cfg) in cfgs.iter().enumerate() {
                let view = format!("{version}/{}", bsc.view_name(cfg));
                let verdict = compare(&on_bsc[i].figures(), &on_ours[i].figures());
                for (side, e) in [("BSC's", &on_bsc[i]), ("our", &on_ours[i])] {
                    if let Evaluated::Crashed(why) = e {
                        details.push(format!(
                            "  {version} {} {view}: paramedir aborts on {side} trace: {why}",
                            input.name
                        ));
                    }
                }
                *tally.by_verdict.entry(verdict.word()).or_default() += 1;
                let listed = documented
                    .iter()
                    .position(|d| d.view == view && d.input == input.name);
                if let Some(l) = listed {
                    listed_seen[l] = true;
                }
                match (&verdict, listed) {
                    (Verdict::Neither | Verdict::Same, None) => {}
                    (Verdict::Neither | Verdict::Same, Some(_)) => problems.push(format!(
                        "{view} on {}: listed in docs/bsc-differences.md but {} now",
                        input.name,
                        verdict.word()
                    )),
                    (_, Some(_)) => tally.documented += 1,
                    (_, None) => {
                        let what = match &verdict {
                            Verdict::Different(first) => format!("different ({first})"),
                            other => other.word().to_owned(),
                        };
                        problems.push(format!(
                            "{view} on {}: {what}, and not in docs/bsc-differences.md",
                            input.name
                        ));
                    }
                }
                if !matches!(verdict, Verdict::Neither | Verdict::Same) {
                    details.push(format!("  {version} {} {view}: {verdict:?}", input.name));
                }
            }
            let with_output: usize = tally
                .by_verdict
                .iter()
                .filter(|(w, _)| **w != Verdict::Neither.word())
                .map(|(_, n)| n)
                .sum();
            let count = |v: Verdict| tally.by_verdict.get(v.word()).copied().unwrap_or(0);
            summary.push(format!(
                "{version} on {} (-t {trace}): {with_output} of {} views give output: \
                 same {}, different {}, only on BSC's {}, only on ours {} ({} documented)",
                input.name,
                cfgs.len(),
                count(Verdict::Same),
                count(Verdict::Different(String::new())),
                count(Verdict::OnlyBsc),
                count(Verdict::OnlyOurs),
                tally.documented,
            ));
        }
    }
    let ran: std::collections::BTreeSet<&str> = summary
        .iter()
        .filter_map(|s| s.split(" on ").nth(1)?.split(' ').next())
        .collect();
    for (d, seen) in documented.iter().zip(&listed_seen) {
        if !seen && ran.contains(d.input.as_str()) {
            problems.push(format!(
                "docs/bsc-differences.md lists {} on {}, which the test did not evaluate",
                d.view, d.input
            ));
        }
    }
    let report = format!(
        "BSC's views on BSC's trace and on ours:\n{}\n\nDifferences:\n{}",
        summary.join("\n"),
        details.join("\n")
    );
    eprintln!("{report}");
    assert!(
        problems.is_empty(),
        "{report}\n\n{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
