//! `.nsys-rep` inputs: exported once into `NAME.cache/` with the `nsys` found via
//! NSYS_HOME or PATH (a scripted stand-in here, so the test needs no Nsight
//! install), reused on re-runs, and clear errors when `nsys` is missing or too old.

use std::path::Path;
use std::process::Output;

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthSpec};

fn run_with(home: &Path, inputs: &[&Path], out: &Path) -> Output {
    binary()
        .env("NSYS_HOME", home)
        .arg("-q")
        .args(inputs)
        .arg(out)
        .output()
        .unwrap()
}

fn exports_made(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("nsys.log")).map_or(0, |l| l.lines().count())
}

#[test]
fn a_report_is_exported_once_into_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.sqlite");
    write_export(&SynthSpec::small(SchemaVersion::V3_24), &source).unwrap();
    let reports = dir.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let report = reports.join("rank0.nsys-rep");
    std::fs::write(&report, b"a report nsys would read").unwrap();
    let home = fake_nsys_home(dir.path(), &source, false);
    let out = dir.path().join("out/run.prv");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();

    let first = run_with(&home, &[&report], &out);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    check_trace(&out);
    assert_eq!(exports_made(dir.path()), 1);
    let cached: Vec<_> = std::fs::read_dir(dir.path().join("out/run.cache"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("sqlite".as_ref()))
        .collect();
    assert_eq!(cached.len(), 1, "one export in NAME.cache/");
    assert_eq!(
        std::fs::read_dir(&reports).unwrap().count(),
        1,
        "nothing written beside the report"
    );

    let again = run_with(&home, &[&reports], &out);
    assert!(again.status.success());
    assert_eq!(exports_made(dir.path()), 1, "the cached export is reused");
}

#[test]
fn an_export_beside_the_report_is_used_when_newer() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.nsys-rep");
    std::fs::write(&report, b"report").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_export(
        &SynthSpec::small(SchemaVersion::V3_0),
        &dir.path().join("r.sqlite"),
    )
    .unwrap();
    let home = fake_nsys_home(dir.path(), Path::new("/nonexistent"), false);
    let out = dir.path().join("t.prv");
    let result = run_with(&home, &[&report], &out);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(exports_made(dir.path()), 0);
}

#[test]
fn missing_or_too_old_nsys_gives_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.nsys-rep");
    std::fs::write(&report, b"report").unwrap();
    let out = dir.path().join("t.prv");

    let nowhere = dir.path().join("no-nsys-here");
    let missing = run_with(&nowhere, &[&report], &out);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("r.nsys-rep") && stderr.contains("NSYS_HOME"),
        "{stderr}"
    );

    let home = fake_nsys_home(dir.path(), Path::new("/nonexistent"), true);
    let old = run_with(&home, &[&report], &out);
    let stderr = String::from_utf8_lossy(&old.stderr);
    assert_eq!(old.status.code(), Some(1));
    assert!(
        stderr.contains("newer Nsight Systems") && stderr.contains("2022.4.2.1"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// With a real `nsys` on the PATH (Debian's 2022.4 here), a recorded sample alone.
#[test]
fn a_recorded_report_exports_with_the_real_nsys() {
    if std::process::Command::new("nsys")
        .arg("--version")
        .output()
        .is_err()
    {
        not_checked("nsys", "no nsys on PATH: the export with the real nsys");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("nvtx_osrt.nsys-rep");
    std::fs::copy(
        workspace_root().join("samples/nvtx_osrt/nvtx_osrt.nsys-rep"),
        &report,
    )
    .unwrap();
    let out = dir.path().join("real.prv");
    let result = binary().arg("-q").arg(&report).arg(&out).output().unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&out);
    assert!(begins(&stats, 66_400_000) > 0);
}
