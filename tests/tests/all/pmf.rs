//! `NAME.pmf`, the trace's metadata file in BSC nsys2prv 0.6's JSON format: it
//! has exactly BSC's fields with BSC's value types (a fixed list here, and the
//! file BSC's own tool writes for the same input, when `$BSC_NSYS2PRV` has it),
//! and what they hold comes from the reports; `-L`, `--description-text`
//! and `--description-file` fill the user's part; the file is part of the output
//! set (ours and BSC's are replaced, any other file of that name refused); a
//! sharded conversion writes
//! the same file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use end_to_end::sharding::convert_sharded;
use end_to_end::*;
use nsys_synth::{add_cpu_activity, write_export, SchemaVersion, SynthCpu, SynthSpec};
use serde_json::Value;

/// A 2-rank MPI job on two nodes with GPU metrics, started under Slurm with
/// modules loaded.
fn gpu_job(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let job = SynthSpec::small(SchemaVersion::V3_24).utc_epoch_ns;
    (0..2u32)
        .map(|rank| {
            let mut spec = SynthSpec::small(SchemaVersion::V3_24);
            spec.hostname = format!("node{:02}", rank + 1);
            spec.utc_epoch_ns = job + i64::from(rank) * 3_700;
            spec.seed = u64::from(rank) + 3;
            spec.processes[0].pid = 7000 + rank;
            spec.env = [
                ("SLURM_PROCID", rank.to_string()),
                ("SLURM_JOB_ID", "4242".into()),
                ("SLURM_JOB_NAME", "train".into()),
                ("SLURM_NTASKS", "2".into()),
                ("SLURM_NNODES", "2".into()),
                ("LOADEDMODULES", "gcc/12.2:cuda/12.4:openmpi/4.1".into()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            spec.mpi = Some(nsys_synth::SynthMpi::new(
                rank,
                2,
                nsys_synth::MpiPattern::Ring,
                job,
            ));
            spec.device.gpu_metric_samples = 40;
            let path = dir.join(format!("rank{rank}.sqlite"));
            write_export(&spec, &path).unwrap();
            path
        })
        .collect()
}

/// One CPU-only process (NVTX ranges on two threads), no modules.
fn cpu_report(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    let process = &mut spec.processes[0];
    (process.kernels, process.memcpys, process.memsets) = (0, 0, 0);
    (process.syncs, process.extra_api_calls) = (0, 0);
    let path = dir.join("cpu.sqlite");
    write_export(&spec, &path).unwrap();
    let cpu = SynthCpu {
        nvtx_ranges_per_thread: 12,
        ..SynthCpu::default()
    };
    add_cpu_activity(&path, &spec, &cpu).unwrap();
    path
}

fn read_pmf(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every field of a metadata file, by its path, with the type of its value (the
/// entries of a list of objects under `path[]`).
fn fields(value: &Value) -> BTreeSet<String> {
    fn walk(value: &Value, path: &str, out: &mut BTreeSet<String>) {
        let kind = |v: &Value| match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "float",
            Value::String(_) => "string",
            Value::Array(_) => "list",
            Value::Object(_) => "object",
        };
        match value {
            Value::Object(map) => {
                out.insert(format!("{path}: object"));
                for (key, v) in map {
                    walk(v, &format!("{path}.{key}"), out);
                }
            }
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
                out.insert(format!("{path}: list of objects"));
                for item in items {
                    walk(item, &format!("{path}[]"), out);
                }
            }
            Value::Array(items) if items.is_empty() => {
                out.insert(format!("{path}: empty list"));
            }
            Value::Array(items) => {
                let kinds: BTreeSet<&str> = items.iter().map(kind).collect();
                let kinds: Vec<&str> = kinds.into_iter().collect();
                out.insert(format!("{path}: list of {}", kinds.join(",")));
            }
            other => {
                out.insert(format!("{path}: {}", kind(other)));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(value, "", &mut out);
    out
}

/// The fields BSC nsys2prv 0.6.0rc1 writes (`parse_nsys_stats.py`, the end of
/// `main`), for a trace with GPU rows and a job with modules loaded (`gpu`), or
/// one without either; given labels (without, `user_labels` is an empty list).
fn bsc_fields(gpu: bool) -> BTreeSet<String> {
    let mut list: Vec<String> = [
        ": object",
        "._format: object",
        "._format.name: string",
        "._format.version: string",
        ".user_metadata: object",
        ".user_metadata.user_description: string",
        ".user_metadata.user_labels: list of string",
        ".execution_metadata: object",
        ".execution_metadata.capture_time: string",
        ".execution_metadata.pwd: string",
        ".execution_metadata.running_command: string",
        ".execution_metadata.nsys_metadata: object",
        ".execution_metadata.nsys_metadata.nsys_version: string",
        ".execution_metadata.nsys_metadata.sqlite_version: string",
        ".execution_metadata.nsys_metadata.profiled_events: list of string",
        ".execution_metadata.slurm_metadata: object",
        ".translation_metadata: object",
        ".translation_metadata.trace_files: object",
        ".translation_metadata.trace_files.paraver_file: string",
        ".translation_metadata.trace_files.configuration_file: string",
        ".translation_metadata.trace_files.row_file: string",
        ".translation_metadata.trace_files.metadata_file: string",
        ".translation_metadata.nsys2prv_version: string",
        ".translation_metadata.translation_time: string",
        ".translation_metadata.flags: list of string",
        ".translation_metadata.events: list of string",
        ".translation_metadata.input_reports: list of string",
        ".translation_metadata.paraver_object_model: object",
        ".translation_metadata.paraver_object_model.thread_table: list of objects",
        ".translation_metadata.paraver_object_model.thread_table[]: object",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for field in [
        "job_name",
        "job_id",
        "job_nodelist",
        "job_partition",
        "job_qos",
        "job_gpus",
        "job_cpus_on_node",
        "job_start_time",
        "job_end_time",
        "nnodes",
        "ntasks",
        "nprocs",
        "cpus_per_task",
        "ntasks_per_node",
        "threads_per_core",
    ] {
        list.push(format!(
            ".execution_metadata.slurm_metadata.{field}: string"
        ));
    }
    let thread = ".translation_metadata.paraver_object_model.thread_table[]";
    for (field, kind) in [
        ("hostname", "string"),
        ("task", "integer"),
        ("thread", "integer"),
        ("device", if gpu { "list of integer" } else { "integer" }),
        ("row_name", "string"),
        ("Pid", "integer"),
        ("Tid", "integer"),
        ("report", "string"),
    ] {
        list.push(format!("{thread}.{field}: {kind}"));
    }
    let streams = ".translation_metadata.paraver_object_model.stream_table";
    let modules = ".execution_metadata.loaded_modules";
    if gpu {
        list.push(format!("{modules}: list of string"));
        list.push(format!("{streams}: list of objects"));
        list.push(format!("{streams}[]: object"));
        for (field, kind) in [
            ("Device", "string"),
            ("task", "integer"),
            ("thread", "integer"),
            ("Strm", "integer"),
            ("deviceid", "integer"),
            ("row_name", "string"),
            ("Pid", "integer"),
            ("report", "string"),
        ] {
            list.push(format!("{streams}[].{field}: {kind}"));
        }
    } else {
        list.push(format!("{modules}: string"));
        list.push(format!("{streams}: string"));
    }
    list.into_iter().collect()
}

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Our `.pmf` for `inputs`, converted with BSC-style options into `dir/ours.prv`.
fn ours(inputs: &[PathBuf], dir: &Path, extra: &[&str]) -> Value {
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let prv = dir.join("ours.prv");
    let out = convert(&refs, &prv, extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_trace(&prv);
    read_pmf(&dir.join("ours.pmf"))
}

#[test]
fn the_metadata_file_has_bsc_s_fields_and_says_what_the_reports_say() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = gpu_job(&dir.path().join("job"));
    let pmf = ours(
        &inputs,
        dir.path(),
        &[
            "-L",
            "first",
            "--label=second",
            "--description-text",
            "a run",
        ],
    );
    assert_eq!(fields(&pmf), bsc_fields(true));
    let exec = &pmf["execution_metadata"];
    // The first report's: rank 0, which started first.
    assert_eq!(exec["capture_time"], "2025-01-01T12:00:00");
    assert_eq!(exec["pwd"], "/home/synth/run");
    assert_eq!(
        exec["loaded_modules"],
        serde_json::json!(["gcc/12.2", "cuda/12.4", "openmpi/4.1"])
    );
    assert_eq!(exec["running_command"], "./synth_app");
    assert_eq!(exec["nsys_metadata"]["nsys_version"], "2025.5.2.266");
    assert_eq!(exec["nsys_metadata"]["sqlite_version"], "3.24.0");
    assert_eq!(
        exec["nsys_metadata"]["profiled_events"],
        serde_json::json!(["kernels", "mpi", "gpu_metrics", "cuda_api_calls"])
    );
    let slurm = &exec["slurm_metadata"];
    assert_eq!(
        (&slurm["job_id"], &slurm["job_name"], &slurm["ntasks"]),
        (&"4242".into(), &"train".into(), &"2".into())
    );
    assert_eq!(slurm["job_partition"], "no data");
    let user = &pmf["user_metadata"];
    assert_eq!(user["user_labels"], serde_json::json!(["first", "second"]));
    assert_eq!(user["user_description"], "a run");
    let translation = &pmf["translation_metadata"];
    assert_eq!(
        translation["trace_files"],
        serde_json::json!({"paraver_file": "ours.prv", "configuration_file": "ours.pcf",
                           "row_file": "ours.row", "metadata_file": "ours.pmf"})
    );
    let version = translation["nsys2prv_version"].as_str().unwrap();
    assert!(version.starts_with("nsys2prv-rs v"), "{version}");
    assert_eq!(translation["translation_time"], "01/03/2025 at 09:00");
    assert_eq!(
        translation["flags"],
        serde_json::json!(["label", "description_text", "source_rep", "output"])
    );
    assert_eq!(
        translation["events"],
        serde_json::json!([
            "cuda_api_trace",
            "kernels",
            "sync",
            "cuda_events",
            "gpu_metrics",
            "nccl",
            "mpi_event_trace"
        ])
    );
    let reports: Vec<String> = inputs
        .iter()
        .map(|p| std::path::absolute(p).unwrap().display().to_string())
        .collect();
    assert_eq!(translation["input_reports"], serde_json::json!(reports));

    // The object model is the .row's: every CPU thread and GPU row once, in place.
    let model = &translation["paraver_object_model"];
    let row = std::fs::read_to_string(dir.path().join("ours.row")).unwrap();
    let row_threads: Vec<&str> = row
        .lines()
        .skip_while(|l| !l.starts_with("LEVEL THREAD "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut rows: Vec<(u64, u64, String, &str)> = Vec::new();
    for table in ["thread_table", "stream_table"] {
        for entry in model[table].as_array().unwrap() {
            let task = entry["task"].as_u64().unwrap();
            let thread = entry["thread"].as_u64().unwrap();
            let name = entry["row_name"].as_str().unwrap().to_string();
            rows.push((task, thread, name, table));
            assert_eq!(
                entry["report"],
                serde_json::json!(reports[task as usize - 1])
            );
        }
    }
    rows.sort();
    let names: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(names, row_threads);
    let streams: Vec<&Value> = model["stream_table"].as_array().unwrap().iter().collect();
    assert!(streams
        .iter()
        .any(|s| s["Strm"] == 99 && s["row_name"] == "GPU0 metrics"));
    assert!(streams.iter().all(|s| s["Device"]
        .as_str()
        .unwrap()
        .ends_with(&format!(" ({})", s["deviceid"]))));
    for thread in model["thread_table"].as_array().unwrap() {
        assert_eq!(thread["device"], serde_json::json!([0]), "{thread}");
        let host = format!("node{:02}", thread["task"].as_u64().unwrap());
        assert_eq!(thread["hostname"], serde_json::json!(host));
        assert_eq!(
            thread["Pid"].as_u64().unwrap(),
            7000 + thread["task"].as_u64().unwrap() - 1
        );
    }
}

#[test]
fn a_cpu_only_report_has_bsc_s_fields_for_no_gpu_and_no_modules() {
    let dir = tempfile::tempdir().unwrap();
    let input = cpu_report(&dir.path().join("in"));
    let pmf = ours(&[input], dir.path(), &["-t", "nvtx", "-L", "cpu"]);
    assert_eq!(fields(&pmf), bsc_fields(false));
    assert_eq!(
        pmf["execution_metadata"]["loaded_modules"],
        "No loaded modules found."
    );
    let model = &pmf["translation_metadata"]["paraver_object_model"];
    assert_eq!(
        model["stream_table"],
        "No GPU activity detected, so no stream table generated."
    );
    assert_eq!(model["thread_table"][0]["device"], -1);
    assert_eq!(
        pmf["translation_metadata"]["flags"],
        serde_json::json!(["trace", "label", "source_rep", "output"])
    );
    assert_eq!(
        pmf["translation_metadata"]["events"],
        serde_json::json!(["nvtx"])
    );
}

/// A report of nsys 2022.4 records no command, directory or environment: those
/// fields say "no data", as BSC's Slurm fields do.
#[test]
fn what_a_report_does_not_record_is_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let pmf = ours(&[input], dir.path(), &["-L", "2022"]);
    assert_eq!(fields(&pmf), bsc_fields(false));
    let exec = &pmf["execution_metadata"];
    assert_eq!(exec["pwd"], "no data");
    assert_eq!(exec["running_command"], "no data");
    assert_eq!(exec["capture_time"], "2026-11-21T11:37:56");
    assert_eq!(exec["nsys_metadata"]["nsys_version"], "2022.4.2.1");
    assert_eq!(
        exec["nsys_metadata"]["profiled_events"],
        serde_json::json!(["nvtx", "osrt", "pthread"])
    );
}

/// BSC nsys2prv 0.6 run on the same inputs, from their directory, with
/// `scripts/bench/nsys` standing in for `nsys stats`: its `.pmf` has the same
/// fields with the same value types as ours. BSC's tool is
/// `$BSC_NSYS2PRV/0.6.0rc1/venv/bin/nsys2prv` (`$BSC_NSYS2PRV`: the cache that
/// `scripts/bsc-nsys2prv.sh` fills, as for the comparison of BSC's views).
#[test]
fn the_fields_are_those_bsc_0_6_writes_for_the_same_input() {
    let Some(cache) = std::env::var_os("BSC_NSYS2PRV").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs BSC nsys2prv 0.6 for this test: set BSC_NSYS2PRV (scripts/bsc-nsys2prv.sh)"
        );
        eprintln!(
            "note: BSC_NSYS2PRV is unset, so the .pmf is not compared with BSC nsys2prv 0.6's; \
             to run it: BSC_NSYS2PRV=DIR with DIR/0.6.0rc1/venv/bin/nsys2prv \
             (python3 -m venv DIR/0.6.0rc1/venv && DIR/0.6.0rc1/venv/bin/pip install --pre nsys2prv==0.6.0rc1)"
        );
        return;
    };
    let bsc = PathBuf::from(cache).join("0.6.0rc1/venv/bin/nsys2prv");
    assert!(bsc.is_file(), "{}: not there", bsc.display());
    let dir = tempfile::tempdir().unwrap();
    let stand_in = workspace_root().join("scripts/bench");
    let path = format!(
        "{}:{}",
        stand_in.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let gpu = gpu_job(&dir.path().join("gpu"));
    let cpu = vec![cpu_report(&dir.path().join("cpu"))];
    for (inputs, bsc_args, our_args) in [
        (
            &gpu,
            &[
                "-t",
                "cuda_api_trace,mpi_event_trace,gpu_metrics",
                "-m",
                "-L",
                "first",
                "-L",
                "second",
                "--description-text",
                "a run",
            ][..],
            &["-L", "first", "-L", "second", "--description-text", "a run"][..],
        ),
        (
            &cpu,
            &["-t", "nvtx", "--exclude-kernels"][..],
            &["-t", "nvtx"][..],
        ),
    ] {
        let work = inputs[0].parent().unwrap();
        let names: Vec<&str> = inputs
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        run_ok(
            Command::new(&bsc)
                .current_dir(work)
                .env("PATH", &path)
                .env_remove("NSYS_HOME")
                .args(bsc_args)
                .args(&names)
                .arg("bsc"),
            &format!("BSC nsys2prv 0.6 on {names:?}"),
        );
        let theirs = read_pmf(&work.join("bsc.pmf"));
        let ours = ours(inputs, work, our_args);
        assert_eq!(fields(&ours), fields(&theirs), "{names:?}");
    }
}

#[test]
fn labels_repeat_and_a_description_file_wins_with_its_lines_joined() {
    let dir = tempfile::tempdir().unwrap();
    let input = cpu_report(&dir.path().join("in"));
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "Baseline run.\nNode 3 was slow.\n").unwrap();
    let notes_arg = notes.to_str().unwrap();
    let pmf = ours(
        std::slice::from_ref(&input),
        dir.path(),
        &[
            "-L",
            "baseline",
            "-L",
            "a label, with a comma",
            "--description-text",
            "ignored",
            "--description-file",
            notes_arg,
        ],
    );
    let user = &pmf["user_metadata"];
    assert_eq!(
        user["user_labels"],
        serde_json::json!(["baseline", "a label, with a comma"])
    );
    assert_eq!(user["user_description"], "Baseline run. Node 3 was slow. ");
    assert_eq!(
        pmf["translation_metadata"]["flags"],
        serde_json::json!([
            "label",
            "description_text",
            "description_file",
            "source_rep",
            "output"
        ])
    );

    // Without any: empty, as BSC writes it.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let pmf = ours(std::slice::from_ref(&input), &plain, &[]);
    assert_eq!(
        pmf["user_metadata"],
        serde_json::json!({"user_description": "", "user_labels": []})
    );
}

#[test]
fn an_unreadable_description_file_is_a_usage_error_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let input = cpu_report(&dir.path().join("in"));
    let missing = dir.path().join("no-such-notes.txt");
    let prv = dir.path().join("t.prv");
    let out = convert(
        &[&input],
        &prv,
        &["--description-file", missing.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no-such-notes.txt: cannot read the description file"),
        "{stderr}"
    );
    let left: Vec<PathBuf> = files_under(dir.path())
        .into_iter()
        .filter(|p| !p.starts_with(dir.path().join("in")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn only_trace_metadata_files_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = cpu_report(&dir.path().join("in"));
    let prv = dir.path().join("t.prv");
    let pmf = dir.path().join("t.pmf");
    // A file of that name that is not trace metadata stays, and nothing is written.
    let notes = "notes on the run, not a metadata file\n";
    std::fs::write(&pmf, notes).unwrap();
    let out = convert(&[&input], &prv, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("t.pmf: exists and is not a trace metadata file"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&pmf).unwrap(), notes);
    assert!(!prv.exists());

    // BSC's is replaced, as its .prv, .pcf and .row are.
    let theirs = r#"{"_format": {"name": "traceMetadata", "version": "0.1.0"},
        "translation_metadata": {"nsys2prv_version": "nsys2prv v0.6.0-rc1"}}"#;
    std::fs::write(&pmf, theirs).unwrap();
    assert!(convert(&[&input], &prv, &[]).status.success());
    assert!(read_pmf(&pmf)["translation_metadata"]["nsys2prv_version"]
        .as_str()
        .unwrap()
        .starts_with("nsys2prv-rs "));

    // Ours is replaced, with the rest of the set.
    std::fs::remove_file(&pmf).unwrap();
    assert!(convert(&[&input], &prv, &["-L", "one"]).status.success());
    assert_eq!(read_pmf(&pmf)["user_metadata"]["user_labels"][0], "one");
    assert!(convert(&[&input], &prv, &["-L", "two"]).status.success());
    assert_eq!(read_pmf(&pmf)["user_metadata"]["user_labels"][0], "two");
}

/// The merge of a sharded conversion writes the metadata file: the same bytes
/// as one process (the translation time fixed by `SOURCE_DATE_EPOCH`, the
/// reports given by the same absolute paths).
#[test]
fn a_sharded_conversion_writes_the_same_metadata_file() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = gpu_job(&dir.path().join("job"));
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "sharded\n").unwrap();
    let extra = ["-L", "x", "--description-file", notes.to_str().unwrap()];
    let single = dir.path().join("single");
    std::fs::create_dir(&single).unwrap();
    let expected = ours(&inputs, &single, &extra);
    let sharded = dir.path().join("sharded");
    std::fs::create_dir(&sharded).unwrap();
    convert_sharded(&inputs, &sharded.join("ours.prv"), 2, &extra);
    assert_eq!(
        std::fs::read(sharded.join("ours.pmf")).unwrap(),
        std::fs::read(single.join("ours.pmf")).unwrap()
    );
    assert_eq!(expected["user_metadata"]["user_description"], "sharded ");
}

/// Without `SOURCE_DATE_EPOCH`, the translation time is the clock's, in BSC's form.
#[test]
fn the_translation_time_is_the_local_time_in_bsc_s_form() {
    let dir = tempfile::tempdir().unwrap();
    let input = cpu_report(&dir.path().join("in"));
    let prv = dir.path().join("t.prv");
    let out = binary()
        .env_remove("SOURCE_DATE_EPOCH")
        .args(["-q", input.to_str().unwrap(), prv.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let time = read_pmf(&dir.path().join("t.pmf"))["translation_metadata"]["translation_time"]
        .as_str()
        .unwrap()
        .to_string();
    let digits: Vec<&str> = time.split(['/', ' ', ':']).collect();
    assert_eq!(digits.len(), 6, "{time}");
    assert_eq!(digits[3], "at", "{time}");
    assert!(digits[2].parse::<u32>().unwrap() >= 2025, "{time}");
}
