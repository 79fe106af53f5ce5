//! The conversion called in process, through the library's `Config`, writes the
//! same bytes as the binary given the equivalent command line; a sharded
//! conversion driven through the library (plan, shards, merge) writes the same
//! bytes as a single run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nsys2prv_convert::config::{ClockSync, Config, Mode, TimeWindow};
use nsys2prv_convert::{MergeSettings, Silent};

/// The metadata file's clock, fixed for the binary and for this process.
const FIXED_EPOCH: &str = "1740819600";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample(name: &str) -> Vec<PathBuf> {
    let dir = workspace().join("samples").join(name);
    let mut reports: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    reports.sort();
    assert!(!reports.is_empty(), "{}: no .sqlite", dir.display());
    reports
}

/// The binary of this workspace, built by cargo with the profile of this test
/// (its path from cargo's own messages; `NSYS2PRV_BIN` to test another).
fn binary() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("NSYS2PRV_BIN") {
            return PathBuf::from(path);
        }
        let exe = std::env::current_exe().unwrap();
        let profile = match exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
        {
            Some(d) if d != "debug" => d.to_string_lossy().into_owned(),
            _ => "dev".into(),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            // Set for this process's conversions, but libsqlite3-sys's build script
            // reruns when it changes: build as a plain `cargo build` does.
            .env_remove("SOURCE_DATE_EPOCH")
            .current_dir(workspace())
            .args(["build", "--message-format=json-render-diagnostics"])
            .args([
                "-p",
                "nsys2prv-rs",
                "--bin",
                "nsys2prv-rs",
                "--profile",
                &profile,
            ])
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run cargo");
        assert!(out.status.success(), "cargo could not build nsys2prv-rs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "nsys2prv-rs")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo named no executable")
    })
}

fn fix_clock() {
    static SET: OnceLock<()> = OnceLock::new();
    // The same value from every thread, before any conversion reads it.
    SET.get_or_init(|| std::env::set_var("SOURCE_DATE_EPOCH", FIXED_EPOCH));
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                found.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

fn assert_same_files(a: &Path, b: &Path) {
    let (a_files, b_files) = (files(a), files(b));
    assert_eq!(
        a_files.keys().collect::<Vec<_>>(),
        b_files.keys().collect::<Vec<_>>(),
        "{} and {} hold other files",
        a.display(),
        b.display()
    );
    for (name, bytes) in &a_files {
        assert!(
            *bytes == b_files[name],
            "{}: differs between {} and {}",
            name.display(),
            a.display(),
            b.display()
        );
    }
    assert!(a_files
        .keys()
        .any(|n| n.to_string_lossy() == "t.prv" || n.to_string_lossy() == "t.prv.gz"));
}

fn quiet(mut config: Config) -> Config {
    config.quiet = true;
    config
}

#[test]
fn a_sample_converted_in_process_is_the_binarys_trace() {
    fix_clock();
    let reports = sample("mpi_2ranks");
    let dir = tempfile::tempdir().unwrap();
    let (lib, bin) = (dir.path().join("lib"), dir.path().join("bin"));
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(&bin).unwrap();

    let config = quiet(Config::new(reports.clone(), lib.join("t.prv")));
    let finished = nsys2prv_convert::run(&config, &Silent).unwrap();
    assert_eq!(finished.skipped, 0);
    assert_eq!(finished.trace, Some(lib.join("t.prv")));

    let status = Command::new(binary())
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .arg("-q")
        .args(&reports)
        .arg(bin.join("t.prv"))
        .status()
        .unwrap();
    assert!(status.success());
    assert_same_files(&lib, &bin);
}

#[test]
fn options_reach_the_trace_as_the_command_lines_do() {
    fix_clock();
    let reports = sample("mpi_3ranks");
    let dir = tempfile::tempdir().unwrap();
    let (lib, bin) = (dir.path().join("lib"), dir.path().join("bin"));
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(&bin).unwrap();

    let mut config = quiet(Config::new(reports.clone(), lib.join("t.prv.gz")));
    config.sync = ClockSync::MpiInit;
    config.cuts.time_window = Some(TimeWindow {
        start: 1_000_000,
        end: None,
    });
    config.selection.exclude = vec!["osrt".into()];
    config.output.labels = vec!["in process".into()];
    config.output.all_views = true;
    nsys2prv_convert::run(&config, &Silent).unwrap();

    let status = Command::new(binary())
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .args(["-q", "-z", "--sync", "mpi-init", "--time-window", "1ms:"])
        .args(["--exclude", "osrt", "-L", "in process", "--all-views"])
        .args(&reports)
        .arg(bin.join("t.prv"))
        .status()
        .unwrap();
    assert!(status.success());
    assert_same_files(&lib, &bin);
}

#[test]
fn a_sharded_conversion_through_the_library_is_the_single_runs_trace() {
    fix_clock();
    let reports = sample("mpi_3ranks");
    let dir = tempfile::tempdir().unwrap();
    let (single, sharded) = (dir.path().join("single"), dir.path().join("sharded"));
    std::fs::create_dir_all(&single).unwrap();
    std::fs::create_dir_all(&sharded).unwrap();

    let config = quiet(Config::new(reports.clone(), single.join("t.prv")));
    nsys2prv_convert::run(&config, &Silent).unwrap();

    let trace = sharded.join("t.prv");
    let mut config = quiet(Config::new(reports, trace.clone()));
    config.mode = Mode::PlanShards(2);
    nsys2prv_convert::run(&config, &Silent).unwrap();
    for index in 0..2 {
        config.mode = Mode::Shard { index, count: 2 };
        let finished = nsys2prv_convert::run(&config, &Silent).unwrap();
        assert_eq!(finished.trace, None, "a shard writes no trace");
    }
    // The plan holds the Config; the merge needs only the trace.
    let plan = std::fs::read_to_string(sharded.join("t.parts/plan")).unwrap();
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["config"]["sync"], "Session");
    let settings = MergeSettings {
        quiet: true,
        ..MergeSettings::default()
    };
    let finished = nsys2prv_convert::merge(&trace, &settings, &Silent).unwrap();
    assert_eq!(finished.trace, Some(trace));
    assert!(
        !sharded.join("t.parts").exists(),
        "the parts go after the merge"
    );
    assert_same_files(&single, &sharded);
}
