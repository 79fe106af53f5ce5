//! Helpers shared by the end-to-end tests (`tests/tests/all/`, one module per area): the binary under
//! test, the corpus, conversions and trace checks.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use paraver_reader::validate::{ptd_comprovar, validate_trace, PtdOutcome, TraceStats};

pub mod bsc;
pub mod fixtures;
pub mod gui;
pub mod paramedir;
pub mod sharding;
pub mod skips;

pub use skips::{missing_tool, not_checked};

/// The shared corpus: `$NSYS2PRV_CORPUS`, else `../shared/corpus` beside the checkout.
/// `None` when it is missing (a failure under CI, and noted in the summary elsewhere).
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NSYS2PRV_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else {
        missing_tool(
            "the corpus",
            &format!("none at {}; set NSYS2PRV_CORPUS", dir.display()),
        );
        None
    }
}

/// The views (`.cfg` files) under `dir`, sorted; not the marker file the tool
/// writes beside them.
pub fn cfgs_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = files_under(dir);
    files.retain(|p| p.extension().is_some_and(|e| e == "cfg"));
    files
}

/// Every file below `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `nsys2prv-rs` binary under test: `$NSYS2PRV_BIN` when set (e.g. a release or
/// static build), else the workspace's own, built by cargo on first use.
///
/// `CARGO_BIN_EXE_*` exists only for the binary's own package, and a path guessed
/// beside this test's executable may hold a stale binary (`cargo test -p end-to-end`
/// does not build it). So the first call asks cargo to build it, with the profile this
/// test was built with, and takes its path from cargo's JSON messages: nothing is
/// guessed, and an up-to-date binary costs one no-op build per test executable.
/// `cargo test` releases its build lock before it runs the tests, so the nested build
/// cannot wait on it.
pub fn binary_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("NSYS2PRV_BIN") {
        Some(path) => PathBuf::from(path),
        None => build_binary(),
    })
}

/// The binary, with the clock of the metadata file's `translation_time` fixed
/// (`SOURCE_DATE_EPOCH`), so that runs compare byte for byte at any time.
pub fn binary() -> Command {
    let mut cmd = Command::new(binary_path());
    cmd.env("SOURCE_DATE_EPOCH", FIXED_EPOCH);
    cmd
}

/// The `SOURCE_DATE_EPOCH` of [`binary`]: 2025-03-01T09:00:00Z.
pub const FIXED_EPOCH: &str = "1740819600";

fn build_binary() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        // Set for this process's in-process conversions (main.rs), but a build script
        // (libsqlite3-sys's, through cc) reruns when it changes: the nested build sees
        // the environment a plain `cargo build` sees.
        .env_remove("SOURCE_DATE_EPOCH")
        .current_dir(workspace_root())
        .args(["build", "--message-format=json-render-diagnostics"])
        .args(["-p", "nsys2prv-rs", "--bin", "nsys2prv-rs"])
        .args(["--profile", test_profile()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run cargo to build nsys2prv-rs (set NSYS2PRV_BIN to test a given binary)");
    assert!(out.status.success(), "cargo could not build nsys2prv-rs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "nsys2prv-rs")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported no nsys2prv-rs executable")
}

/// The cargo profile this test executable was built with, from the directory cargo
/// put it in (`target/debug/deps/`, `target/release/deps/`, `target/NAME/deps/`).
fn test_profile() -> &'static str {
    static PROFILE: OnceLock<String> = OnceLock::new();
    PROFILE.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test's own path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name);
        match dir.and_then(|d| d.to_str()) {
            None | Some("debug") => "dev".to_string(),
            Some(name) => name.to_string(),
        }
    })
}

/// An NSYS_HOME whose `bin/nsys` copies `source` to the requested output, or
/// fails like an nsys too old for the report.
pub fn fake_nsys_home(dir: &Path, source: &Path, too_old: bool) -> PathBuf {
    let home = dir.join("nsys-home");
    std::fs::create_dir_all(home.join("bin")).unwrap();
    let log = dir.join("nsys.log");
    let body = if too_old {
        "echo 'Error: Version number is invalid' >&2; exit 1".to_string()
    } else {
        format!("cp '{}' \"$out\"", source.display())
    };
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'NVIDIA Nsight Systems version 2022.4.2.1'; exit 0; fi\n\
         echo \"$@\" >> '{}'\nout=\nwhile [ $# -gt 1 ]; do [ \"$1\" = --output ] && out=$2; shift; done\n{body}\n",
        log.display()
    );
    let nsys = home.join("bin/nsys");
    std::fs::write(&nsys, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nsys, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    home
}

/// Converts `inputs` into `output` quietly (`-q`, then `extra`), in this process:
/// the command line goes through the binary's own code (`nsys2prv_rs`: clap's
/// arguments, their problems, the `Config`, the conversion with `--report` after it,
/// the exit status and error line), without a process. What the binary would print
/// on stderr is the error line; stdout, the dry run's table. Warnings the library
/// prints go to this process's stderr (`-q` silences most): a test that reads
/// them, or needs signals, the environment, a terminal or the process itself, runs
/// [`convert_spawned`] or [`binary`].
pub fn convert(inputs: &[&Path], output: &Path, extra: &[&str]) -> Output {
    run_in_process(&conversion_line(inputs, output, extra))
}

/// [`convert`] as if run from the directory `cwd`: relative inputs and output are
/// taken from `cwd` (this process's directory is not changed: tests run on many
/// threads; paths in `extra` are passed as they are). `cwd` is taken as a process sees its working
/// directory: canonical (no `..`), so that absolute paths the tool writes (the
/// `.pmf`'s reports) are those the binary run from `cwd` writes.
pub fn convert_in(cwd: &Path, inputs: &[&Path], output: &Path, extra: &[&str]) -> Output {
    let cwd = cwd.canonicalize().expect("the working directory");
    let inputs: Vec<PathBuf> = inputs.iter().map(|p| cwd.join(p)).collect();
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    convert(&inputs, &cwd.join(output), extra)
}

/// [`convert`] by the binary, in a process of its own.
pub fn convert_spawned(inputs: &[&Path], output: &Path, extra: &[&str]) -> Output {
    let line = conversion_line(inputs, output, extra);
    binary().args(&line[1..]).output().expect("run nsys2prv-rs")
}

/// `nsys2prv-rs -q EXTRA... INPUTS... OUTPUT`.
fn conversion_line(inputs: &[&Path], output: &Path, extra: &[&str]) -> Vec<OsString> {
    let mut line: Vec<OsString> = vec!["nsys2prv-rs".into(), "-q".into()];
    line.extend(extra.iter().map(OsString::from));
    line.extend(inputs.iter().map(|p| p.as_os_str().to_owned()));
    line.push(output.as_os_str().to_owned());
    line
}

/// A conversion's command line (`argv[0]` first, no subcommand) run in this process
/// as the binary runs it, its result as the process's would be: exit status, stdout
/// (the dry run's table), stderr (the error line, or clap's message).
pub fn run_in_process(argv: &[OsString]) -> Output {
    use std::os::unix::process::ExitStatusExt;
    let done = |code: u8, stdout: Vec<u8>, stderr: String| Output {
        // A wait status: the exit code in the second byte.
        status: std::process::ExitStatus::from_raw(i32::from(code) << 8),
        stdout,
        stderr: stderr.into_bytes(),
    };
    let args = match nsys2prv_rs::parse_args(argv.to_vec()) {
        Ok(args) => args,
        Err(e) => {
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            return done(code, Vec::new(), e.render().to_string());
        }
    };
    assert!(
        args.command.is_none(),
        "run_in_process runs conversions; spawn binary() for a subcommand"
    );
    let config = match nsys2prv_rs::conversion_config(&args) {
        Ok(config) => config,
        Err(message) => return done(2, Vec::new(), format!("error: {message}\n")),
    };
    let result = nsys2prv_rs::convert(&config, &nsys2prv_convert::Silent);
    let (code, line) = nsys2prv_rs::outcome(&result);
    let stdout = match &result {
        Ok(finished) => finished.dry_run.clone().unwrap_or_default().into_bytes(),
        Err(_) => Vec::new(),
    };
    done(code, stdout, line.map(|l| l + "\n").unwrap_or_default())
}

/// Validates a produced trace with the project's validator and with BSC's
/// `ptd comprovar` (when installed); panics with every finding on failure.
pub fn check_trace(prv: &Path) -> TraceStats {
    let report = validate_trace(prv).expect("read the trace");
    let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{}:\n{}",
        prv.display(),
        errors.join("\n")
    );
    assert_every_label_declared(prv);
    match ptd_comprovar(prv) {
        Ok(PtdOutcome::Passed) => {}
        Ok(PtdOutcome::NotInstalled) => missing_tool("ptd", "pip install pertalde"),
        Err(out) => panic!("ptd comprovar rejected {}:\n{out}", prv.display()),
    }
    report.stats
}

/// Every type and state in the `.pcf` has the label a category declared, not the
/// writer's stand-in for an undeclared one (`Event type N`, `State N`): what is
/// not declared also has no declared timing for cuts.
pub fn assert_every_label_declared(prv: &Path) {
    let pcf = paraver_reader::TraceFiles::of(prv).pcf;
    let text = std::fs::read_to_string(&pcf).expect("read the .pcf");
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let stand_in = match words.as_slice() {
            [_, ty, "Event", "type", n] => ty == n,
            [id, "State", n] => id == n,
            _ => false,
        };
        assert!(!stand_in, "{}: undeclared: {line}", pcf.display());
    }
}

/// Count of intervals (non-zero values) of an event type in a trace.
pub fn begins(stats: &TraceStats, ty: u32) -> u64 {
    stats.event_begins.get(&ty).copied().unwrap_or(0)
}
