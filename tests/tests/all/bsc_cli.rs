//! BSC nsys2prv 0.6's command line with BSC's meaning (issue 26, item 2): its
//! time limits, CUDA call filters, `--exclude-kernels`, `-N`, `-c`, `--timing`,
//! `--config` and `-t` words; every problem of a command line named at once
//! (issue 27, item 7); thread names that carry their rank (issue 27, item 10).
//! Each counted against the export by SQL, and the same through a sharded run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use end_to_end::sharding::*;
use end_to_end::*;

const CUDA_SAMPLE: &str = "samples/synthetic/cuda_2025.5.sqlite";
const NVTX_SAMPLE: &str = "samples/nvtx_osrt/nvtx_osrt.sqlite";

fn sample(rel: &str) -> PathBuf {
    workspace_root().join(rel)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", stderr(out));
}

fn count(db: &Path, sql: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// The event types of a trace's `.pcf`.
fn pcf_types(prv: &Path) -> Vec<u32> {
    let pcf = fs::read_to_string(prv.with_extension("pcf")).unwrap();
    let mut types = Vec::new();
    let mut lines = pcf.lines();
    while let Some(line) = lines.next() {
        if line == "EVENT_TYPE" {
            for l in lines
                .by_ref()
                .take_while(|l| !l.is_empty() && *l != "VALUES")
            {
                if let Some(ty) = l.split_whitespace().nth(1).and_then(|t| t.parse().ok()) {
                    types.push(ty);
                }
            }
        }
    }
    types
}

fn row_threads(prv: &Path) -> Vec<String> {
    let row = fs::read_to_string(prv.with_extension("row")).unwrap();
    row.split("LEVEL THREAD SIZE")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn row_tasks(prv: &Path) -> Vec<String> {
    let row = fs::read_to_string(prv.with_extension("row")).unwrap();
    row.split("LEVEL TASK SIZE")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `--time-limit-start`/`--time-limit-end` keep the rows that lie wholly between
/// them in the report's own time, as BSC's queries (`start >= :limit_start AND
/// end <= :limit_end`) select them: kernels, memory operations, API calls and
/// OS runtime calls are counted against the export.
#[test]
fn time_limits_keep_the_rows_wholly_between_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cuda = sample(CUDA_SAMPLE);
    let (first, last) = (
        count(&cuda, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        count(&cuda, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
    );
    let (start, end) = (first + (last - first) / 4, first + (last - first) * 3 / 5);
    let within = |table: &str| {
        count(
            &cuda,
            &format!("SELECT count(*) FROM {table} WHERE start >= {start} AND end <= {end}"),
        )
    };
    let prv = tmp.path().join("cuda.prv");
    let limits = [
        format!("--time-limit-start={start}"),
        format!("--time-limit-end={end}"),
    ];
    let limits: Vec<&str> = limits.iter().map(String::as_str).collect();
    ok(&convert(&[&cuda], &prv, &limits));
    let stats = check_trace(&prv);
    let kernels = within("CUPTI_ACTIVITY_KIND_KERNEL");
    assert!(
        kernels > 0 && kernels < count(&cuda, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    );
    assert_eq!(
        begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
        kernels
    );
    assert_eq!(
        begins(&stats, 63_000_001),
        within("CUPTI_ACTIVITY_KIND_MEMCPY") + within("CUPTI_ACTIVITY_KIND_MEMSET")
    );
    assert_eq!(
        begins(&stats, 63_000_000),
        within("CUPTI_ACTIVITY_KIND_RUNTIME")
    );

    // Bare numbers are ns, as BSC's; units read too; OS runtime calls alike.
    let nvtx = sample(NVTX_SAMPLE);
    let prv = tmp.path().join("osrt.prv");
    ok(&convert(
        &[&nvtx],
        &prv,
        &[
            "-t",
            "osrt",
            "--time-limit-start",
            "40ms",
            "--time-limit-end",
            "60000000",
        ],
    ));
    let stats = check_trace(&prv);
    assert_eq!(
        begins(&stats, 66_400_000),
        count(
            &nvtx,
            "SELECT count(*) FROM OSRT_API WHERE eventClass = 27 AND start >= 40000000 AND end <= 60000000"
        )
    );

    // The dry run counts every row and says what the limits and filters leave out.
    let out = binary()
        .args([
            "--dry-run",
            "--time-limit-end=1",
            "--filter-cuda-calls-duration=9",
        ])
        .arg(&nvtx)
        .arg(tmp.path().join("dry.prv"))
        .output()
        .unwrap();
    ok(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("--time-limit-start/--time-limit-end, --filter-cuda-calls-* leave out more"),
        "{said}"
    );

    // Nothing between the limits: the report says so.
    let out = convert(
        &[&nvtx],
        &tmp.path().join("none.prv"),
        &["--time-limit-end", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--time-limit-end 1 ns"),
        "{}",
        stderr(&out)
    );
}

/// `--filter-cuda-calls-duration`, `-include-name` and `-exclude-name` write
/// the calls BSC's would (names as exported or as the trace shows them), and a
/// call left out takes its launch arrows with it.
#[test]
fn cuda_call_filters_keep_what_bsc_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let cuda = sample(CUDA_SAMPLE);
    let calls = |condition: &str| {
        count(
            &cuda,
            &format!(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE {condition}"
            ),
        )
    };
    let api_of = |extra: &[&str], name: &str| {
        let prv = tmp.path().join(format!("{name}.prv"));
        ok(&convert(&[&cuda], &prv, extra));
        begins(&check_trace(&prv), 63_000_000)
    };
    assert_eq!(
        api_of(&["--filter-cuda-calls-duration", "5000"], "duration"),
        calls("r.end - r.start >= 5000")
    );
    assert_eq!(
        api_of(
            &[
                "--filter-cuda-calls-include-name",
                "cudaLaunchKernel,cudaMemcpyAsync_v3020"
            ],
            "include"
        ),
        calls("s.value IN ('cudaLaunchKernel_v7000', 'cudaMemcpyAsync_v3020')")
    );
    assert_eq!(
        api_of(
            &[
                "--filter-cuda-calls-exclude-name=cudaLaunchKernel",
                "--filter-cuda-calls-duration=2000",
            ],
            "exclude"
        ),
        calls("s.value != 'cudaLaunchKernel_v7000' AND r.end - r.start >= 2000")
    );
    // Only the calls named keep their launch arrows: kernel launches are gone.
    let prv = tmp.path().join("exclude.prv");
    let pcf = fs::read_to_string(prv.with_extension("pcf")).unwrap();
    assert!(
        !pcf.contains("cudaLaunchKernel"),
        "a value only the filtered calls had"
    );
    let all = tmp.path().join("all.prv");
    ok(&convert(&[&cuda], &all, &[]));
    let arrows = |p: &Path| {
        fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("3:"))
            .count()
    };
    assert!(arrows(&prv) < arrows(&all));
    assert_eq!(
        begins(&check_trace(&prv), 63_000_006),
        begins(&check_trace(&all), 63_000_006),
        "kernels stay"
    );
}

/// `--exclude-kernels` leaves out kernels and memory operations (BSC's kernels
/// are both), and 0.6's `-t` words select what BSC's do.
#[test]
fn bsc_06_category_words_and_exclude_kernels() {
    let tmp = tempfile::tempdir().unwrap();
    let cuda = sample(CUDA_SAMPLE);
    let prv = tmp.path().join("nokernels.prv");
    ok(&convert(&[&cuda], &prv, &["--exclude-kernels"]));
    let stats = check_trace(&prv);
    for ty in [63_000_006, 63_000_007, 63_000_001] {
        assert_eq!(begins(&stats, ty), 0, "{ty}");
    }
    assert!(begins(&stats, 63_000_000) > 0);

    let prv = tmp.path().join("kernels.prv");
    ok(&convert(&[&cuda], &prv, &["-t", "kernels"]));
    let stats = check_trace(&prv);
    assert!(begins(&stats, 63_000_006) > 0 && begins(&stats, 63_000_001) > 0);
    assert_eq!(begins(&stats, 63_000_000), 0);

    let words = "nvtx,kernels,osrt,pthread,memory_usage,cuda_events,nic_metrics,openmp";
    for input in [cuda, sample(NVTX_SAMPLE)] {
        let prv = tmp.path().join("words.prv");
        ok(&convert(&[&input], &prv, &["-t", words]));
        check_trace(&prv);
    }
    let prv = tmp.path().join("nvtx_only.prv");
    ok(&convert(&[&sample(NVTX_SAMPLE)], &prv, &["-t", "nvtx"]));
    let stats = check_trace(&prv);
    assert!(begins(&stats, 9600) > 0);
    assert_eq!(begins(&stats, 66_400_000), 0);
}

/// Every problem of a command line is named in one message (exit 2); a
/// missing input is named only with other problems (alone it is the input's
/// own error, exit 1).
#[test]
fn every_problem_of_a_command_line_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("bad.toml");
    fs::write(&config, "[capabilities.nvtx]\nstack = 1\n").unwrap();
    let out = binary()
        .args(["-q", "-L", "run1", "-t", "nvtx,bogus", "--config"])
        .arg(&config)
        .args(["--time-limit-start=9", "--time-limit-end=3"])
        .arg(sample(NVTX_SAMPLE))
        .arg(tmp.path().join("missing.sqlite"))
        .arg(tmp.path().join("out.pcf"))
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[0], "error: 5 problems with the command line:",
        "{said}"
    );
    for word in [
        "unknown category 'bogus'",
        "out.pcf: the output must be",
        "bad.toml:2:1: unknown key `stack`",
        "--time-limit-end 3 is not after --time-limit-start 9",
        "missing.sqlite: no such file",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("  - ") && l.contains(word)),
            "{word}: {said}"
        );
    }
    assert!(
        fs::read_dir(tmp.path()).unwrap().count() == 1,
        "nothing written"
    );
    // One problem: one line, as before.
    let out = binary()
        .args(["-q", "-t", "bogus"])
        .arg(sample(NVTX_SAMPLE))
        .arg(tmp.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

/// Threads of different ranks are told apart by their rank; `-N` names rows
/// as BSC's does: `name (1.T.t)` and tasks by their first thread.
#[test]
fn thread_names_carry_their_rank_or_bscs_numbers_with_n() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks: Vec<PathBuf> = (0..3)
        .map(|r| sample(&format!("samples/mpi_3ranks/rank{r}.sqlite")))
        .collect();
    let refs: Vec<&Path> = ranks.iter().map(PathBuf::as_path).collect();
    let ours = tmp.path().join("ours.prv");
    ok(&convert(&refs, &ours, &[]));
    check_trace(&ours);
    let threads = row_threads(&ours);
    assert!(
        threads[0].starts_with("MPI Rank 0 (rank 0, "),
        "{threads:?}"
    );
    let workers: Vec<&String> = threads
        .iter()
        .filter(|t| t.starts_with("mpi_nonblocking (rank "))
        .collect();
    assert!(
        workers.iter().any(|t| t.contains("(rank 1, ")),
        "{threads:?}"
    );
    assert!(
        workers.iter().any(|t| t.contains("(rank 2, ")),
        "{threads:?}"
    );
    assert!(row_tasks(&ours)[1].starts_with("rank 1 ("));

    let bsc = tmp.path().join("bsc.prv");
    ok(&convert(&refs, &bsc, &["-N"]));
    check_trace(&bsc);
    let threads = row_threads(&bsc);
    assert_eq!(threads[0], "MPI Rank 0 (1.1.1)");
    assert!(threads[1].ends_with(" (1.1.2)"), "{threads:?}");
    assert_eq!(
        row_tasks(&bsc),
        ["MPI Rank 0 (1.1)", "MPI Rank 1 (1.2)", "MPI Rank 2 (1.3)"]
    );
    // Only the names differ.
    assert!(fs::read(&ours).unwrap() == fs::read(&bsc).unwrap());
}

/// `-c` removes the exports made for the run once the trace is written, and
/// never a `.sqlite` it was given.
#[test]
fn clean_removes_the_exports_made_for_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.nsys-rep");
    fs::write(&report, b"report").unwrap();
    let given = tmp.path().join("given.sqlite");
    fs::copy(sample("samples/sched/sched.sqlite"), &given).unwrap();
    let home = fake_nsys_home(tmp.path(), &sample(NVTX_SAMPLE), false);
    let run = |name: &str, extra: &[&str]| {
        let mut cmd = binary();
        cmd.env("NSYS_HOME", &home)
            .arg("-q")
            .args(extra)
            .arg(&report)
            .arg(&given)
            .arg(tmp.path().join(name));
        cmd.output().unwrap()
    };
    ok(&run("kept", &[]));
    assert!(tmp.path().join("kept.cache").is_dir());
    let out = run("cleaned", &["-c"]);
    ok(&out);
    assert!(!tmp.path().join("cleaned.cache").exists());
    check_trace(&tmp.path().join("cleaned.prv"));
    assert!(given.is_file() && report.is_file());
    // `clean = true` in a configuration file is the same.
    let config = tmp.path().join("c.toml");
    fs::write(&config, "clean = true\n").unwrap();
    ok(&run("configured", &["--config", config.to_str().unwrap()]));
    assert!(!tmp.path().join("configured.cache").exists());
}

/// `--timing` prints the phases and appends them to `timings.csv` with BSC's
/// columns; a `timings.csv` that is not one is refused before anything runs.
#[test]
fn timing_appends_bscs_timings_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        binary()
            .current_dir(tmp.path())
            .args(["--timing"])
            .arg(sample(NVTX_SAMPLE))
            .arg(name)
            .output()
            .unwrap()
    };
    let out = run("a");
    ok(&out);
    assert!(
        stderr(&out).contains("timing: Total Execution: "),
        "{}",
        stderr(&out)
    );
    ok(&run("b"));
    let csv = fs::read_to_string(tmp.path().join("timings.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "timestamp,region,duration_s,num_reports,total_events,trace_size_b"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(",Total Execution,"))
            .count(),
        2
    );
    let size = fs::metadata(tmp.path().join("b.prv")).unwrap().len();
    let last: Vec<&str> = lines.last().unwrap().split(',').collect();
    assert_eq!(last.len(), 6);
    assert_eq!(last[3], "1");
    assert_eq!(last[5], size.to_string());
    assert!(last[4].parse::<u64>().unwrap() > 0);

    fs::write(tmp.path().join("timings.csv"), "my,own,data\n").unwrap();
    let out = run("c");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("timings.csv is not a timings file"),
        "{}",
        stderr(&out)
    );
    assert!(!tmp.path().join("c.prv").exists());
    assert_eq!(
        fs::read_to_string(tmp.path().join("timings.csv")).unwrap(),
        "my,own,data\n"
    );
}

/// `--config`: BSC 0.6's TOML. Domains go on their configured types, are left
/// out with `translate = false` (or under `default = "exclude"`), lose their
/// payloads with `payloads = false`, and `project` puts start/end ranges on the
/// push/pop type; an unknown key is one line naming the file and position.
#[test]
fn config_numbers_and_selects_nvtx_domains() {
    let tmp = tempfile::tempdir().unwrap();
    let nvtx = sample(NVTX_SAMPLE);
    let convert_with = |name: &str, toml: &str| {
        let config = tmp.path().join(format!("{name}.toml"));
        fs::write(&config, toml).unwrap();
        let prv = tmp.path().join(format!("{name}.prv"));
        let out = convert(
            &[&nvtx],
            &prv,
            &["-t", "nvtx", "--config", config.to_str().unwrap()],
        );
        (out, prv)
    };
    let plain = tmp.path().join("plain.prv");
    ok(&convert(&[&nvtx], &plain, &["-t", "nvtx"]));
    let plain_stats = check_trace(&plain);
    let plain_types = pcf_types(&plain);
    assert!(plain_types.contains(&9004) && plain_types.contains(&9601));
    let domain_ranges = count(
        &nvtx,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND domainId != 0",
    );
    assert!(domain_ranges > 0);

    let (out, prv) = convert_with(
        "numbered",
        "[capabilities.nvtx.domains.SampleDomain]\nevent_type = 100500\n[capabilities.nvtx.domains.Default]\npayloads = false\n",
    );
    ok(&out);
    let stats = check_trace(&prv);
    assert_eq!(begins(&stats, 100_500), domain_ranges);
    assert_eq!(begins(&stats, 9600), begins(&plain_stats, 9600));
    let types = pcf_types(&prv);
    assert!(
        !types.contains(&9601) && !types.contains(&9602),
        "{types:?}"
    );
    assert!(types.contains(&100_503), "its category: {types:?}");
    // The per-domain views follow the domain to its types.
    let view = fs::read_to_string(
        tmp.path()
            .join("numbered.cfgs/views/nvtx_domains/sampledomain.cfg"),
    )
    .unwrap();
    assert!(view.contains("100500"), "{view}");

    let (out, prv) = convert_with(
        "excluded",
        "[capabilities.nvtx]\ndefault = \"exclude\"\n[capabilities.nvtx.domains.Default]\ntranslate = true\n",
    );
    ok(&out);
    let stats = check_trace(&prv);
    assert_eq!(begins(&stats, 9600), begins(&plain_stats, 9600));
    assert!(pcf_types(&prv)
        .iter()
        .all(|&t| !(9700..60_000).contains(&t) || t % 100 > 6));
    assert_eq!(
        stats
            .event_begins
            .keys()
            .filter(|&&t| (9700..=59_906).contains(&t))
            .count(),
        0,
        "no other domain"
    );

    let (out, prv) = convert_with("projected", "[capabilities.nvtx]\nproject = true\n");
    ok(&out);
    let stats = check_trace(&prv);
    let start_ends = count(
        &nvtx,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 60 AND domainId = 0",
    );
    assert!(start_ends > 0);
    assert_eq!(begins(&stats, 9004) + begins(&stats, 9005), 0);
    assert_eq!(
        begins(&stats, 9600),
        begins(&plain_stats, 9600) + start_ends
    );

    let (out, prv) = convert_with(
        "bad",
        "[capabilities.nvtx]\ndefault = \"include\"\nfoo = 3\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("bad.toml:3:1: unknown key `foo`"), "{said}");
    assert!(!prv.exists());
    let (out, _) = convert_with(
        "clash",
        "[capabilities.nvtx.domains.x]\nevent_type = 9000\n",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("domains.x.event_type = 9000"),
        "{}",
        stderr(&out)
    );
}

/// The new options shape the trace the same in a sharded conversion: the plan
/// records them (the configuration's content, not its file) and every shard
/// and the merge apply them.
#[test]
fn bsc_options_survive_a_sharded_conversion() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    let start_of_job = 1_795_261_090_000_000_000;
    let mut inputs = synthetic_mpi_job(&job, 4, start_of_job);
    inputs.push(sample(NVTX_SAMPLE));
    let rank0 = &inputs[0];
    let (first, last) = (
        count(rank0, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
        count(rank0, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
    );
    // The NVTX sample's domain ranges come first (ms 39-96 of its own time),
    // the synthetic ranks' calls later (ms 508-510 of theirs): the limits cut both.
    let domain_start = count(
        &inputs[4],
        "SELECT min(start) FROM NVTX_EVENTS WHERE domainId != 0 AND eventType = 59",
    );
    assert!(domain_start < first);
    let config = tmp.path().join("c.toml");
    fs::write(
        &config,
        "[capabilities.nvtx]\nproject = true\n[capabilities.nvtx.domains.SampleDomain]\nevent_type = 100500\n",
    )
    .unwrap();
    let flags = [
        format!("--time-limit-start={domain_start}"),
        format!("--time-limit-end={}", last - (last - first) / 5),
        "--filter-cuda-calls-duration=1500".into(),
        "--filter-cuda-calls-exclude-name=cudaMemcpyAsync".into(),
        "-N".into(),
        format!("--config={}", config.display()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let single = tmp.path().join("single");
    fs::create_dir(&single).unwrap();
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    ok(&convert(&refs, &single.join("t.prv"), &flags));
    let stats = check_trace(&single.join("t.prv"));
    assert!(begins(&stats, 100_500) > 0);
    let sharded = tmp.path().join("sharded");
    fs::create_dir(&sharded).unwrap();
    convert_sharded(&inputs, &sharded.join("t.prv"), 3, &flags);
    assert_same_files(&single, &sharded);

    // A shard given another configuration does not fit the plan.
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    ok(&shard(&inputs, &other.join("t.prv"), 0, 2, &flags));
    fs::write(&config, "[capabilities.nvtx]\nproject = false\n").unwrap();
    let out = shard(&inputs, &other.join("t.prv"), 1, 2, &flags);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("made with other options"),
        "{}",
        stderr(&out)
    );
}

/// The figure BSC 0.6's `nvtx_ranges.cfg` reads (type 9600 under "Stacked Val"
/// at thread level, as our `views/nvtx_ranges.cfg`) is, on our trace, each
/// push/pop range name's exclusive time in the default domain, as the export
/// says, whatever the ranges' categories, with start/end ranges and marks on
/// their own types. (BSC 0.6's own trace puts start/end ranges and marks on
/// 9600, which breaks the stack, and ranges with a category on 9601 and up:
/// docs/bsc-differences.md.)
#[test]
fn bscs_nvtx_ranges_view_reads_the_exports_exclusive_times() {
    use end_to_end::paramedir::{paramedir, run, ViewResult};
    let Some(paramedir) = paramedir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = sample(NVTX_SAMPLE);
    let prv = tmp.path().join("t.prv");
    ok(&convert(&[&input], &prv, &["-t", "nvtx"]));
    let view = tmp.path().join("t.cfgs/views/nvtx_ranges.cfg");
    let cfg = fs::read_to_string(&view).unwrap();
    assert!(cfg.contains("window_filter_module evt_type 1 9600\n"));
    assert!(cfg.contains("{compose_thread, Stacked Val}"));

    // The export: per thread, the time each name is the innermost open range.
    let conn =
        rusqlite::Connection::open_with_flags(&input, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT e.globalTid, e.start, e.end, COALESCE(e.text, s.value) FROM NVTX_EVENTS e
             LEFT JOIN StringIds s ON s.id = e.textId
             WHERE e.eventType = 59 AND COALESCE(e.domainId, 0) = 0 AND e.end IS NOT NULL",
        )
        .unwrap();
    let ranges: Vec<(i64, i64, i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut want: std::collections::BTreeMap<String, i64> = Default::default();
    let mut events: Vec<(i64, i64, bool, usize)> = Vec::new();
    for (i, r) in ranges.iter().enumerate() {
        events.push((r.0, r.1, true, i));
        events.push((r.0, r.2, false, i));
    }
    // Per thread by time, ends before begins at one time.
    events.sort_by_key(|&(tid, t, begin, _)| (tid, t, begin));
    let mut stack: Vec<usize> = Vec::new();
    let mut last = (0, 0);
    for (tid, t, begin, i) in events {
        if let (Some(&top), true) = (stack.last(), last.0 == tid) {
            *want.entry(ranges[top].3.clone()).or_default() += t - last.1;
        }
        if begin {
            stack.push(i);
        } else {
            stack.retain(|&j| j != i);
        }
        last = (tid, t);
    }
    assert!(want.len() >= 5, "{want:?}");

    // The view on our trace: durations by value, values named by the .pcf.
    let pcf = fs::read_to_string(prv.with_extension("pcf")).unwrap();
    let block = pcf
        .split("EVENT_TYPE")
        .find(|b| {
            b.lines()
                .nth(1)
                .is_some_and(|l| l.split_whitespace().nth(1) == Some("9600"))
        })
        .unwrap();
    let label = |value: i64| -> String {
        block
            .lines()
            .find_map(|l| {
                let (v, name) = l.trim().split_once(char::is_whitespace)?;
                (v.parse::<i64>().ok()? == value).then(|| name.trim().to_string())
            })
            .unwrap_or_else(|| panic!("value {value} has no label"))
    };
    // The view is fitted to the trace (microseconds for a long one); read it in
    // nanoseconds so that the figures compare exactly with the export's.
    let in_ns = tmp.path().join("nvtx_ranges_ns.cfg");
    let cfg_ns: String = cfg
        .lines()
        .map(|l| match l.starts_with("window_units ") {
            true => "window_units Nanoseconds\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect();
    fs::write(&in_ns, cfg_ns).unwrap();
    let result = run(&paramedir, &prv, &[in_ns], &[]);
    let Some(Ok(ViewResult::Timeline(lines))) = result.result(0) else {
        panic!("no timeline: {}", result.stdout)
    };
    let mut got: std::collections::BTreeMap<String, i64> = Default::default();
    for (_, _, duration, value) in lines.iter().filter(|l| l.3 != 0.0) {
        *got.entry(label(*value as i64)).or_default() += duration.round() as i64;
    }
    assert_eq!(got, want);
}
