//! An interrupted run (SIGINT, or Slurm's SIGTERM) leaves no partial output.

use std::time::{Duration, Instant};

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthSpec};

#[test]
fn sigint_and_sigterm_remove_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.sqlite");
    let mut spec = SynthSpec::small(SchemaVersion::V3_24);
    let p = &mut spec.processes[0];
    (p.kernels, p.memcpys, p.memsets, p.extra_api_calls) = (150_000, 40_000, 10_000, 50_000);
    write_export(&spec, &input).unwrap();
    for signal in ["-INT", "-TERM"] {
        let out_dir = dir.path().join(format!("out{signal}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let out = out_dir.join("t.prv");
        let mut child = binary().arg("-q").arg(&input).arg(&out).spawn().unwrap();
        // Wait until the trace is being written (its temporary file exists).
        let started = Instant::now();
        let writing = loop {
            let temp = std::fs::read_dir(&out_dir)
                .unwrap()
                .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"));
            if temp || started.elapsed() > Duration::from_secs(60) {
                break temp;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if !writing {
            eprintln!("note: the run finished before it could be interrupted");
            let _ = child.wait();
            continue;
        }
        std::process::Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{signal}: {status:?}");
        let left: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".cfgs"))
            .collect();
        assert!(left.is_empty(), "{signal}: left behind {left:?}");
    }
}
