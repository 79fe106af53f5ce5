//! Paraver (default build: 16-bit object ids) cannot load more than 65,535 tasks, or
//! 65,535 threads in one task: such a conversion is refused (exit 2) with the numbers
//! and the remedy, and nothing is written.

use std::fs;

use end_to_end::*;

const LIMIT: u32 = 65_535;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// 65,536 report names are refused before any is read: the files are empty (reading
/// one would fail with another error), and a dry run says the same.
#[test]
fn more_reports_than_paraver_loads_tasks_are_refused_before_any_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    fs::create_dir(&job).unwrap();
    for rank in 0..=LIMIT {
        fs::File::create(job.join(format!("rank{rank}.sqlite"))).unwrap();
    }
    let out = binary()
        .arg(&job)
        .arg(tmp.path().join("t.prv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("needs at least 65536 tasks")
            && text.contains("Paraver loads at most 65535")
            && text.contains("--ranks ::2"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "nothing written"
    );
    // Sharded: the plan is refused too.
    let out = binary()
        .args(["--shard", "0/4"])
        .arg(&job)
        .arg(tmp.path().join("t.prv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("65536 tasks"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1, "no plan");
}

/// One process with 65,536 CUDA-calling threads: refused once the layout is known,
/// before the trace is written.
#[test]
fn a_task_with_more_threads_than_paraver_loads_is_refused() {
    use nsys_synth::{SchemaVersion, SynthSpec};
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    let process = &mut spec.processes[0];
    process.cpu_threads = LIMIT + 1;
    process.streams_per_device = 1;
    // The shape of `nsys-synth --rows 400000 --threads 65536`: every thread calls.
    process.kernels = 112_000;
    process.memcpys = 40_000;
    process.memsets = 12_000;
    process.syncs = 8_000;
    process.extra_api_calls = 32_000;
    let report = tmp.path().join("threads.sqlite");
    nsys_synth::write_export(&spec, &report).unwrap();
    let out = binary()
        .args(["-t", "cuda-api"])
        .arg(&report)
        .arg(tmp.path().join("t.prv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("would have 65536 threads in task 'rank 0")
            && text.contains("at most 65535 threads in a task"),
        "{text}"
    );
    assert!(!tmp.path().join("t.prv").exists());
    assert!(!tmp.path().join("t.row").exists());
}
