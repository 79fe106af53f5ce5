//! Bad input (DESIGN.md §7, issue 8). Every input problem ends with exit code 1 and
//! exactly one `error: ` line naming the file, never a panic, and leaves nothing in
//! the output directory; inputs that are odd but usable (a future schema, NULLs,
//! non-UTF-8 text, negative times, unclosed ranges, a CPU-only report, the same
//! input twice) translate into a valid trace. A property test mutates real and
//! synthetic exports and checks that the tool either translates or fails cleanly.
//!
//! Every run here is the binary's (`convert_spawned`): what is checked is what the
//! process prints and how it exits.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use end_to_end::*;
use nsys_synth::{write_export, SchemaVersion, SynthCounts, SynthSpec};
use paraver_reader::validate::{validate_trace, TraceStats};
use proptest::prelude::*;
use rusqlite::Connection;

/// A real CPU-only export (NVTX and OS runtime) recorded with nsys 2022.4.
const NVTX_SAMPLE: &str = "samples/nvtx_osrt/nvtx_osrt.sqlite";
/// A synthetic CUDA export with a trace of about 640 KB.
const CUDA_SAMPLE: &str = "samples/synthetic/cuda_2025.5.sqlite";
const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

// ---------------------------------------------------------------------------
// Fixtures

/// Pristine inputs, generated once per test process and copied by each test.
struct Bases {
    synth: PathBuf,
    synth_counts: SynthCounts,
    synth_old: PathBuf,
}

fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(|| {
        let (synth, synth_counts) =
            generated(&SynthSpec::small(SchemaVersion::V3_24), "synth_3.24.sqlite");
        let (synth_old, _) = generated(&SynthSpec::small(SchemaVersion::V3_0), "synth_3.0.sqlite");
        Bases {
            synth,
            synth_counts,
            synth_old,
        }
    })
}

/// A synthetic export under the build's temporary directory, written afresh by each
/// test process (and renamed into place, so concurrent runs never see half a file).
fn generated(spec: &SynthSpec, name: &str) -> (PathBuf, SynthCounts) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad_input");
    fs::create_dir_all(&dir).unwrap();
    let staging = tempfile::tempdir_in(&dir).unwrap();
    let counts = write_export(spec, &staging.path().join(name)).unwrap();
    let path = dir.join(name);
    fs::rename(staging.path().join(name), &path).unwrap();
    (path, counts)
}

/// One test's input and output directories (outputs never share a directory with inputs).
struct Case {
    tmp: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("in")).unwrap();
        fs::create_dir(tmp.path().join("out")).unwrap();
        Case { tmp }
    }

    fn input(&self, name: &str) -> PathBuf {
        self.tmp.path().join("in").join(name)
    }

    fn out_dir(&self) -> PathBuf {
        self.tmp.path().join("out")
    }

    fn prv(&self) -> PathBuf {
        self.out_dir().join("t.prv")
    }

    /// A copy of `src` in the input directory.
    fn copy(&self, src: &Path, name: &str) -> PathBuf {
        let dst = self.input(name);
        fs::copy(src, &dst).unwrap();
        dst
    }

    /// A copy of the small synthetic CUDA export (schema 3.24).
    fn synth(&self, name: &str) -> PathBuf {
        self.copy(&bases().synth, name)
    }

    /// A copy of the real CPU-only sample (NVTX, OS runtime).
    fn nvtx_sample(&self, name: &str) -> PathBuf {
        self.copy(&workspace_root().join(NVTX_SAMPLE), name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.input(name);
        fs::write(&path, bytes).unwrap();
        path
    }
}

/// Runs the converter without `-q`, so warnings show.
fn run_verbose(inputs: &[&Path], output: &Path, extra: &[&str]) -> Output {
    binary()
        .args(extra)
        .args(inputs)
        .arg(output)
        .output()
        .expect("run nsys2prv-rs")
}

/// Like `convert`, killing the run (and failing the test) after `limit`: a damaged
/// input must not make the tool spin, nor write without end.
fn convert_within(inputs: &[&Path], output: &Path, limit: Duration) -> Output {
    let mut child = binary()
        .arg("-q")
        .args(inputs)
        .arg(output)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run nsys2prv-rs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?} on {inputs:?}: {}",
                stderr_of(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code 1, one `error: ` line naming every path in `names` (and containing every
/// word of `words`), no panic, and nothing left in `out_dir`.
fn assert_fails_cleanly(out: &Output, names: &[&Path], words: &[&str], out_dir: &Path) -> String {
    let stderr = stderr_of(out);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "panic: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "exit code: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    let line = lines[0];
    assert!(line.starts_with("error: "), "{line}");
    for name in names {
        assert!(
            line.contains(&name.display().to_string()),
            "the line must name {}: {line}",
            name.display()
        );
    }
    for word in words {
        assert!(line.contains(word), "the line must say '{word}': {line}");
    }
    assert_no_output(out_dir);
    line.to_string()
}

/// Nothing in the (dedicated) output directory: no trace files, no views, no
/// temporary files (the output set is installed as one unit, or not at all).
fn assert_no_output(out_dir: &Path) {
    let left: Vec<String> = match fs::read_dir(out_dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    assert!(left.is_empty(), "left in {}: {left:?}", out_dir.display());
}

/// Exit code 0, a valid trace (project validator and `ptd comprovar`), and no
/// temporary files beside it.
fn assert_translates(out: &Output, prv: &Path) -> TraceStats {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_no_temporaries(prv.parent().unwrap());
    check_trace(prv)
}

fn assert_no_temporaries(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.') && !name.ends_with(".tmp"),
            "temporary file left in {}: {name}",
            dir.display()
        );
    }
}

/// Warning lines of a verbose run.
fn warnings(out: &Output) -> Vec<String> {
    stderr_of(out)
        .lines()
        .filter(|l| l.contains("WARN"))
        .map(str::to_string)
        .collect()
}

fn sql(path: &Path, batch: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(batch)
        .unwrap_or_else(|e| panic!("{}: {e}\n{batch}", path.display()));
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    names
}

fn tables(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .unwrap();
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    names
}

/// Rebuilds `table` with only `keep` of its columns and no constraints (so NOT NULL
/// columns can then hold NULLs), keeping the rows in rowid order.
fn rebuild(conn: &Connection, table: &str, keep: &[String]) -> rusqlite::Result<()> {
    if keep.is_empty() {
        return conn.execute_batch(&format!("DROP TABLE \"{table}\""));
    }
    let list: Vec<String> = keep.iter().map(|c| format!("\"{c}\"")).collect();
    conn.execute_batch(&format!(
        "CREATE TABLE \"__rebuilt\" AS SELECT {list} FROM \"{table}\" ORDER BY rowid;
         DROP TABLE \"{table}\";
         ALTER TABLE \"__rebuilt\" RENAME TO \"{table}\";",
        list = list.join(", ")
    ))
}

/// Removes the NOT NULL (and other) constraints of `table`.
fn loosen(conn: &Connection, table: &str) {
    let cols = columns(conn, table);
    rebuild(conn, table, &cols).unwrap();
}

fn count(path: &Path, query: &str) -> u64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row(query, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// Times of every record of a `.prv` body.
fn record_times(prv: &Path) -> Vec<u64> {
    fs::read_to_string(prv)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("1:") || l.starts_with("2:") || l.starts_with("3:"))
        .map(|l| l.split(':').nth(5).unwrap().parse().unwrap())
        .collect()
}

// ---------------------------------------------------------------------------
// Inputs that cannot be read: exit 1, one line, nothing written.

#[test]
fn missing_file() {
    let case = Case::new();
    let input = case.input("no_such_report.sqlite");
    let out = convert_spawned(&[&input], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&input], &["no such file"], &case.out_dir());
}

#[test]
fn missing_file_among_good_ones() {
    let case = Case::new();
    let good = case.synth("good.sqlite");
    let missing = case.input("missing.sqlite");
    let out = convert_spawned(&[&good, &missing], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&missing], &["no such file"], &case.out_dir());
}

#[test]
fn directory_without_reports() {
    let case = Case::new();
    let dir = case.input("empty_dir");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("notes.txt"), "not a report").unwrap();
    let out = convert_spawned(&[&dir], &case.prv(), &[]);
    assert_fails_cleanly(
        &out,
        &[&dir],
        &["no Nsight Systems reports"],
        &case.out_dir(),
    );
}

#[test]
fn not_sqlite() {
    let case = Case::new();
    let text = case.write(
        "notes.sqlite",
        b"these are my notes, not a profile\n".repeat(10).as_slice(),
    );
    let out = convert_spawned(&[&text], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&text], &["not an SQLite file"], &case.out_dir());
    // A short file.
    let short = case.write("short.sqlite", b"SQLite");
    let out = convert_spawned(&[&short], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&short], &["not an SQLite file"], &case.out_dir());
    // A git-lfs pointer checked out instead of the export.
    let lfs = case.write(
        "lfs.sqlite",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n",
    );
    let out = convert_spawned(&[&lfs], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&lfs], &["git lfs pull"], &case.out_dir());
}

#[test]
fn zeroed_sqlite() {
    let case = Case::new();
    // The header zeroed (an export interrupted before its first page was written).
    let header = case.synth("zeroed_header.sqlite");
    let mut bytes = fs::read(&header).unwrap();
    bytes[..4096].fill(0);
    fs::write(&header, &bytes).unwrap();
    let out = convert_spawned(&[&header], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&header], &["zeroed", "export"], &case.out_dir());
    // The whole file zeroed (preallocated, never written).
    let whole = case.write("zeroed.sqlite", &vec![0u8; bytes.len()]);
    let out = convert_spawned(&[&whole], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&whole], &["zeroed"], &case.out_dir());
    // Header intact, every page after the first zeroed.
    let body = case.synth("zeroed_body.sqlite");
    let mut bytes = fs::read(&body).unwrap();
    bytes[4096..].fill(0);
    fs::write(&body, &bytes).unwrap();
    let out = convert_spawned(&[&body], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&body], &["damaged", "export"], &case.out_dir());
}

#[test]
fn truncated_sqlite() {
    let case = Case::new();
    let len = fs::metadata(&bases().synth).unwrap().len();
    for (name, keep, word) in [
        ("half.sqlite", len / 2, "truncated"),
        ("hundred.sqlite", 100, "truncated"),
        ("fifty.sqlite", 50, "truncated"),
        ("empty.sqlite", 0, "empty"),
    ] {
        let path = case.synth(name);
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(keep)
            .unwrap();
        let out = convert_spawned(&[&path], &case.prv(), &[]);
        assert_fails_cleanly(&out, &[&path], &[word], &case.out_dir());
    }
    // A truncated file among good ones fails the whole run.
    let good = case.synth("good.sqlite");
    let bad = case.input("half.sqlite");
    let out = convert_spawned(&[&good, &bad], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&bad], &["truncated"], &case.out_dir());
}

#[test]
fn sqlite_that_is_not_an_export() {
    let case = Case::new();
    let path = case.input("other.sqlite");
    sql(
        &path,
        "CREATE TABLE test (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO test (value) VALUES ('a'), ('b');",
    );
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    assert_fails_cleanly(
        &out,
        &[&path],
        &["not an Nsight Systems export", "test"],
        &case.out_dir(),
    );
    // An empty database.
    let empty = case.input("empty_db.sqlite");
    sql(&empty, "CREATE TABLE t (x); DROP TABLE t;");
    let out = convert_spawned(&[&empty], &case.prv(), &[]);
    assert_fails_cleanly(
        &out,
        &[&empty],
        &["not an Nsight Systems export"],
        &case.out_dir(),
    );
    // A failed export: only StringIds.
    let partial = case.synth("partial.sqlite");
    let conn = Connection::open(&partial).unwrap();
    for t in tables(&conn) {
        if t != "StringIds" {
            conn.execute_batch(&format!("DROP TABLE \"{t}\"")).unwrap();
        }
    }
    drop(conn);
    let out = convert_spawned(&[&partial], &case.prv(), &[]);
    assert_fails_cleanly(
        &out,
        &[&partial],
        &["incomplete", "nsys export"],
        &case.out_dir(),
    );
}

#[test]
fn empty_report() {
    let case = Case::new();
    let path = case.synth("empty.sqlite");
    sql(
        &path,
        &[
            KERNEL,
            RUNTIME,
            MEMCPY,
            MEMSET,
            SYNC,
            "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        ]
        .iter()
        .map(|t| format!("DELETE FROM {t};"))
        .collect::<String>(),
    );
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[&path], &["nothing was recorded"], &case.out_dir());
    // Two empty reports: the line names neither, but says how many.
    let other = case.copy(&path, "empty2.sqlite");
    sql(
        &other,
        "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + 1",
    );
    let out = convert_spawned(&[&path, &other], &case.prv(), &[]);
    assert_fails_cleanly(&out, &[], &["none of the 2 reports"], &case.out_dir());
}

/// Exit 1 when the trace cannot be written; the line names the output (or its directory).
#[test]
fn unwritable_output_directory() {
    let case = Case::new();
    let input = case.synth("good.sqlite");
    // The output's parent is a regular file.
    let file = case.out_dir().join("file");
    fs::write(&file, "").unwrap();
    let out = convert_spawned(&[&input], &file.join("t.prv"), &[]);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(&file.display().to_string()),
        "{stderr}"
    );
    fs::remove_file(&file).unwrap();
    // The output's directory does not exist.
    let missing = case.out_dir().join("missing");
    let out = convert_spawned(&[&input], &missing.join("t.prv"), &[]);
    assert_fails_cleanly(&out, &[&missing], &[], &case.out_dir());
    // A directory where nothing can be created.
    let proc_dir = Path::new("/proc/self");
    if proc_dir.is_dir() {
        let out = convert_spawned(&[&input], &proc_dir.join("t.prv"), &[]);
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("/proc/self"),
            "{stderr}"
        );
    }
    // A read-only directory: chmod 555, which root ignores, so as root a read-only
    // tmpfs instead.
    let ro = case.out_dir().join("ro");
    fs::create_dir(&ro).unwrap();
    let mount = if can_write_after_chmod(&ro) {
        match Mount::tmpfs(&ro, "ro,size=64k") {
            Some(m) => Some(m),
            None => {
                not_checked(
                    "a tmpfs mount",
                    "running as root without mount: the read-only directory case",
                );
                return;
            }
        }
    } else {
        None
    };
    let out = convert_spawned(&[&input], &ro.join("t.prv"), &[]);
    assert_fails_cleanly(&out, &[&ro], &[], &ro);
    drop(mount);
    set_mode(&ro, 0o755);
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// chmod 555 `dir`; true when a file can still be created in it (root).
fn can_write_after_chmod(dir: &Path) -> bool {
    set_mode(dir, 0o555);
    let probe = dir.join("probe");
    let writable = fs::write(&probe, "").is_ok();
    let _ = fs::remove_file(&probe);
    if writable {
        set_mode(dir, 0o755);
    }
    writable
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, options: &str) -> Option<Mount> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn disk_full() {
    let case = Case::new();
    // Its trace is about 640 KB.
    let input = case.copy(&workspace_root().join(CUDA_SAMPLE), "cuda.sqlite");
    let full = case.out_dir().join("full");
    fs::create_dir(&full).unwrap();
    // 256 KB: room for the views, not for the trace.
    let Some(mount) = Mount::tmpfs(&full, "size=256k") else {
        disk_full_by_file_size_limit(&case, &input);
        return;
    };
    for name in ["t.prv", "t.prv.gz"] {
        let out = convert_spawned(&[&input], &full.join(name), &[]);
        assert_fails_cleanly(&out, &[&full.join(name)], &["No space left"], &full);
    }
    drop(mount);
    // 64 KB: spilling to the full disk (the spill directory is the output's).
    let _mount = Mount::tmpfs(&full, "size=64k").unwrap();
    let out = convert_spawned(&[&input], &full.join("t.prv"), &["--memory-limit", "64K"]);
    // The temporary directory is named, and how to choose another: the input
    // is not to blame.
    let line = assert_fails_cleanly(&out, &[&full], &["No space left", "--tmp-dir"], &full);
    assert!(!line.contains("cuda.sqlite"), "{line}");
}

/// The line of a full disk names where the space ran out, and says so once.
#[test]

fn disk_full_message() {
    let case = Case::new();
    let input = case.copy(&workspace_root().join(CUDA_SAMPLE), "cuda.sqlite");
    let full = case.out_dir().join("full");
    fs::create_dir(&full).unwrap();
    let Some(_mount) = Mount::tmpfs(&full, "size=64k") else {
        not_checked(
            "a tmpfs mount",
            "run the tests as root: the disk-full cases",
        );
        return;
    };
    for extra in [&[][..], &["--memory-limit", "64K"][..]] {
        let out = convert_spawned(&[&input], &full.join("t.prv"), extra);
        let line = assert_fails_cleanly(&out, &[&full], &["No space left"], &full);
        assert_eq!(line.matches("No space left").count(), 1, "{line}");
    }
}

/// The disk fills up after the trace, while the views (`NAME.cfgs/`) are written:
/// the run fails, and must not leave the trace and half the views behind.
#[test]

fn disk_full_while_writing_views() {
    let case = Case::new();
    // Its trace (about 40 KB) fits in 64 KB; the views do not.
    let input = case.synth("small.sqlite");
    let full = case.out_dir().join("full");
    fs::create_dir(&full).unwrap();
    let Some(_mount) = Mount::tmpfs(&full, "size=64k") else {
        not_checked(
            "a tmpfs mount",
            "run the tests as root: the disk-full cases",
        );
        return;
    };
    let out = convert_spawned(&[&input], &full.join("t.prv"), &[]);
    assert_fails_cleanly(&out, &[&full], &["No space left"], &full);
}

/// Without a tmpfs: the file size limit (`ulimit -f`) with SIGXFSZ ignored makes
/// writes past 64 KiB fail with EFBIG, as a full disk would with ENOSPC.
fn disk_full_by_file_size_limit(case: &Case, input: &Path) {
    eprintln!("note: cannot mount a tmpfs: disk full simulated with a file size limit");
    let prv = case.prv();
    let out = Command::new("sh")
        .env("SOURCE_DATE_EPOCH", FIXED_EPOCH)
        .arg("-c")
        .arg("ulimit -f 128; trap '' XFSZ; exec \"$@\"")
        .arg("sh")
        .arg(binary_path())
        .arg("-q")
        .arg(input)
        .arg(&prv)
        .output()
        .unwrap();
    assert_fails_cleanly(&out, &[&prv], &["too large"], &case.out_dir());
}

// ---------------------------------------------------------------------------
// Inputs that are odd but usable: exit 0 and a valid trace.

#[test]
fn future_schema_translates_with_a_warning() {
    let case = Case::new();
    let path = case.synth("future.sqlite");
    sql(
        &path,
        &format!(
            "UPDATE META_DATA_EXPORT SET value = '4.2.0' WHERE name = 'EXPORT_SCHEMA_VERSION';
             UPDATE META_DATA_EXPORT SET value = '4' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR';
             UPDATE META_DATA_EXPORT SET value = '2' WHERE name = 'EXPORT_SCHEMA_VERSION_MINOR';
             UPDATE META_DATA_EXPORT SET value = '2031.1.0.7' WHERE name = 'EXPORT_PRODUCT_VERSION';
             CREATE TABLE QUANTUM_ACTIVITY
                 (start INTEGER NOT NULL, end INTEGER, globalTid INTEGER, qubits INTEGER);
             INSERT INTO QUANTUM_ACTIVITY VALUES (1000, 2000, 1, 64), (3000, NULL, 2, 128);
             ALTER TABLE {KERNEL} ADD COLUMN entanglement INTEGER DEFAULT 7;
             ALTER TABLE {KERNEL} ADD COLUMN futureName TEXT DEFAULT 'x';
             ALTER TABLE {RUNTIME} ADD COLUMN futureFlags BLOB;"
        ),
    );
    let out = run_verbose(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    let counts = &bases().synth_counts;
    assert_eq!(
        begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
        counts.kernels
    );
    assert_eq!(begins(&stats, 63_000_000), counts.runtime_rows);
    let warned = warnings(&out);
    assert!(
        warned
            .iter()
            .any(|w| w.contains(&path.display().to_string()) && w.contains("4.2.0")),
        "a warning about the unknown schema version expected: {}",
        stderr_of(&out)
    );
}

#[test]
fn cpu_only_report_translates() {
    let case = Case::new();
    let path = case.nvtx_sample("cpu_only.sqlite");
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    assert_eq!(begins(&stats, 63_000_000), 0, "no CUDA calls");
    assert_eq!(
        begins(&stats, 66_400_000),
        count(&path, "SELECT COUNT(*) FROM OSRT_API WHERE eventClass = 27")
    );
    assert!(
        stats.event_begins.keys().any(|t| (9600..60000).contains(t)),
        "NVTX ranges"
    );
    // A CUDA export whose CUDA tables are gone.
    let stripped = case.synth("stripped.sqlite");
    sql(
        &stripped,
        &format!(
            "DROP TABLE {KERNEL}; DROP TABLE {MEMCPY}; DROP TABLE {MEMSET}; DROP TABLE {SYNC};"
        ),
    );
    let prv = case.out_dir().join("stripped.prv");
    let out = convert_spawned(&[&stripped], &prv, &[]);
    let stats = assert_translates(&out, &prv);
    assert_eq!(begins(&stats, 63_000_006), 0);
    assert_eq!(
        begins(&stats, 63_000_000),
        bases().synth_counts.runtime_rows
    );
}

#[test]
fn duplicated_inputs_are_used_once() {
    let case = Case::new();
    let path = case.synth("report.sqlite");
    // Every trace is t.prv (its name is in the .row), each in its own directory.
    let out_prv = |name: &str| {
        let dir = case.out_dir().join(name);
        fs::create_dir(&dir).unwrap();
        dir.join("t.prv")
    };
    let once = out_prv("once");
    assert_translates(&convert_spawned(&[&path], &once, &[]), &once);
    let body = |prv: &Path| {
        let text = fs::read_to_string(prv).unwrap();
        text.split_once('\n').unwrap().1.to_string()
    };
    let row = |prv: &Path| fs::read_to_string(prv.with_extension("row")).unwrap();
    // The same path twice, the same file through a directory, and a copy.
    let copy = case.copy(&path, "copy.sqlite");
    let dir = case.input("");
    for (name, inputs) in [
        ("twice", vec![path.as_path(), path.as_path()]),
        ("dir", vec![dir.as_path(), path.as_path()]),
        ("copy", vec![path.as_path(), copy.as_path()]),
    ] {
        let prv = out_prv(name);
        let out = run_verbose(&inputs, &prv, &[]);
        assert_translates(&out, &prv);
        assert!(
            warnings(&out).iter().any(|w| w.contains("once")),
            "{name}: a warning expected: {}",
            stderr_of(&out)
        );
        assert_eq!(row(&prv), row(&once), "{name}: the same threads");
        assert_eq!(body(&prv), body(&once), "{name}: the same records");
    }
}

#[test]
fn same_pid_on_two_hosts() {
    let case = Case::new();
    let mut inputs = Vec::new();
    for (rank, host) in ["hostA", "hostB"].iter().enumerate() {
        let mut spec = SynthSpec::small(SchemaVersion::V3_24);
        spec.hostname = host.to_string();
        spec.env = vec![("SLURM_PROCID".into(), rank.to_string())];
        spec.seed += rank as u64;
        let path = case.input(&format!("{host}.sqlite"));
        write_export(&spec, &path).unwrap();
        inputs.push(path);
    }
    let pid = SynthSpec::small(SchemaVersion::V3_24).processes[0].pid;
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let out = convert_spawned(&refs, &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    assert_eq!(stats.nodes, 2);
    assert_eq!(stats.tasks, 2, "one task per (host, pid)");
    let row = fs::read_to_string(case.prv().with_extension("row")).unwrap();
    for host in ["hostA", "hostB"] {
        assert!(row.contains(&format!("{host}:{pid}")), "{row}");
    }
}

#[test]
fn unclosed_nvtx_ranges() {
    let case = Case::new();
    let closed = case.nvtx_sample("closed.sqlite");
    let closed_prv = case.out_dir().join("closed.prv");
    let reference = assert_translates(&convert_spawned(&[&closed], &closed_prv, &[]), &closed_prv);
    let path = case.nvtx_sample("unclosed.sqlite");
    let conn = Connection::open(&path).unwrap();
    loosen(&conn, "NVTX_EVENTS");
    // The last push/pop range of every thread and one start/end range never end.
    conn.execute_batch(
        "UPDATE NVTX_EVENTS SET end = NULL WHERE rowid IN (
             SELECT MAX(rowid) FROM NVTX_EVENTS WHERE eventType = 59 GROUP BY globalTid);
         UPDATE NVTX_EVENTS SET end = NULL, endGlobalTid = NULL WHERE rowid = (
             SELECT MIN(rowid) FROM NVTX_EVENTS WHERE eventType = 60);",
    )
    .unwrap();
    drop(conn);
    let out = run_verbose(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    let pushpop = |s: &TraceStats| -> u64 {
        s.event_begins
            .iter()
            .filter(|(t, _)| (9600..60000).contains(*t) && *t % 100 == 0)
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(
        pushpop(&stats),
        pushpop(&reference),
        "unclosed push/pop ranges are kept"
    );
}

#[test]
fn negative_timestamps() {
    let case = Case::new();
    let path = case.synth("negative.sqlite");
    // Every activity happened up to 20 s before the session started.
    let shift = 20_000_000_000i64;
    let mut batch: String = [KERNEL, RUNTIME, MEMCPY, MEMSET, SYNC]
        .iter()
        .map(|t| format!("UPDATE {t} SET start = start - {shift}, end = end - {shift};"))
        .collect();
    batch += &format!("UPDATE CUPTI_ACTIVITY_KIND_CUDA_EVENT SET timestamp = timestamp - {shift};");
    sql(&path, &batch);
    assert_eq!(
        count(
            &path,
            &format!("SELECT COUNT(*) FROM {RUNTIME} WHERE end > 0")
        ),
        0
    );
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    let counts = &bases().synth_counts;
    assert_eq!(begins(&stats, 63_000_000), counts.runtime_rows);
    assert_eq!(
        record_times(&case.prv()).into_iter().min(),
        Some(0),
        "rebased to 0"
    );
    // Negative and positive times in one report; a second report starts later.
    let mixed = case.synth("mixed.sqlite");
    sql(
        &mixed,
        &format!(
            "UPDATE {RUNTIME} SET start = start - {shift}, end = end - {shift}
             WHERE rowid % 7 = 0;"
        ),
    );
    let later = case.copy(&bases().synth_old, "later.sqlite");
    let prv = case.out_dir().join("mixed.prv");
    let out = convert_spawned(&[&mixed, &later], &prv, &[]);
    assert_translates(&out, &prv);
    assert_eq!(
        record_times(&prv).into_iter().min(),
        Some(0),
        "rebased to 0"
    );
}

/// Timestamps no clock can hold (±2^63, 1e300, text), as a damaged file has them:
/// those rows are skipped and counted, like rows without a time.
#[test]
fn absurd_timestamps() {
    let case = Case::new();
    let path = case.synth("absurd.sqlite");
    let conn = Connection::open(&path).unwrap();
    for table in [KERNEL, RUNTIME, MEMCPY] {
        loosen(&conn, table);
    }
    conn.execute_batch(&format!(
        "UPDATE {KERNEL} SET start = -9223372036854775808 WHERE rowid % 5 = 0;
         UPDATE {RUNTIME} SET end = 9223372036854775807 WHERE rowid % 7 = 0;
         UPDATE {MEMCPY} SET start = 1e300 WHERE rowid % 3 = 0;
         UPDATE {MEMCPY} SET end = 'soon' WHERE rowid % 3 = 1;"
    ))
    .unwrap();
    drop(conn);
    let out = run_verbose(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    for table in [KERNEL, RUNTIME, MEMCPY] {
        assert!(
            warnings(&out)
                .iter()
                .any(|w| w.contains(table) && w.contains("skipped")),
            "{table}: skipped rows are reported: {}",
            stderr_of(&out)
        );
    }
    let kernels = begins(&stats, 63_000_006) + begins(&stats, 63_000_007);
    assert!(kernels > 0 && kernels < bases().synth_counts.kernels);
    // The same in NVTX and OS runtime rows of a real export.
    let nvtx = case.nvtx_sample("nvtx.sqlite");
    let conn = Connection::open(&nvtx).unwrap();
    loosen(&conn, "NVTX_EVENTS");
    loosen(&conn, "OSRT_API");
    conn.execute_batch(
        "UPDATE NVTX_EVENTS SET end = 9223372036854775807 WHERE rowid % 4 = 0;
         UPDATE OSRT_API SET start = -9223372036854775808 WHERE rowid % 4 = 0;",
    )
    .unwrap();
    drop(conn);
    let prv = case.out_dir().join("nvtx.prv");
    let out = convert_spawned(&[&nvtx], &prv, &[]);
    assert_translates(&out, &prv);
}

/// NULLs in required and optional columns: rows skipped (and counted in a warning)
/// or translated without the missing detail; never a panic.
#[test]
fn nulls_in_activity_tables() {
    let case = Case::new();
    // Tables, their columns, and rows left alone (category names: see `empty_names`).
    let cuda: &[(&str, &[&str], &str)] = &[
        (
            KERNEL,
            &[
                "start",
                "end",
                "globalPid",
                "deviceId",
                "streamId",
                "correlationId",
                "shortName",
                "demangledName",
                "gridX",
                "registersPerThread",
            ],
            "0",
        ),
        (
            RUNTIME,
            &[
                "start",
                "end",
                "globalTid",
                "nameId",
                "correlationId",
                "eventClass",
            ],
            "0",
        ),
        (
            MEMCPY,
            &[
                "start",
                "end",
                "globalPid",
                "streamId",
                "bytes",
                "copyKind",
                "correlationId",
            ],
            "0",
        ),
        (
            MEMSET,
            &["start", "end", "globalPid", "bytes", "correlationId"],
            "0",
        ),
        (
            SYNC,
            &["start", "end", "globalPid", "syncType", "correlationId"],
            "0",
        ),
    ];
    let cpu: &[(&str, &[&str], &str)] = &[
        (
            "NVTX_EVENTS",
            &[
                "start",
                "end",
                "eventType",
                "globalTid",
                "endGlobalTid",
                "text",
                "textId",
                "domainId",
                "category",
                "int64Value",
            ],
            "eventType = 33",
        ),
        (
            "OSRT_API",
            &[
                "start",
                "end",
                "globalTid",
                "nameId",
                "eventClass",
                "nestingLevel",
            ],
            "0",
        ),
        ("StringIds", &["value"], "0"),
        ("ThreadNames", &["nameId", "globalTid"], "0"),
        ("PROCESSES", &["name", "pid", "globalPid"], "0"),
    ];
    for (base, list) in [
        (&bases().synth, cuda),
        (&workspace_root().join(NVTX_SAMPLE), cpu),
    ] {
        for (table, cols, except) in list {
            let name = table.to_lowercase();
            let path = case.copy(base, &format!("{name}.sqlite"));
            // Each column NULL in its own rows, and every column NULL in one row.
            let conn = Connection::open(&path).unwrap();
            loosen(&conn, table);
            let n = cols.len() + 1;
            for (i, col) in cols.iter().enumerate() {
                conn.execute_batch(&format!(
                    "UPDATE \"{table}\" SET \"{col}\" = NULL
                         WHERE (rowid % {n} = {i} OR rowid = 1) AND NOT ({except});"
                ))
                .unwrap();
            }
            drop(conn);
            let prv = case.out_dir().join(format!("{name}.prv"));
            let out = run_verbose(&[&path], &prv, &[]);
            assert_translates(&out, &prv);
            if cols.contains(&"start") {
                assert!(
                    warnings(&out)
                        .iter()
                        .any(|w| w.contains(*table) && w.contains("skipped")),
                    "{table}: rows skipped for NULLs are reported: {}",
                    stderr_of(&out)
                );
            }
        }
    }
}

#[test]
fn nulls_in_metadata() {
    let case = Case::new();
    let path = case.synth("meta.sqlite");
    let conn = Connection::open(&path).unwrap();
    for (table, col) in [
        ("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"),
        ("TARGET_INFO_SYSTEM_ENV", "value"),
        ("META_DATA_EXPORT", "value"),
        ("META_DATA_CAPTURE", "value"),
        ("PROCESSES", "name"),
        ("ThreadNames", "nameId"),
        ("StringIds", "value"),
    ] {
        loosen(&conn, table);
        conn.execute_batch(&format!("UPDATE \"{table}\" SET \"{col}\" = NULL"))
            .unwrap();
    }
    drop(conn);
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    assert_eq!(
        begins(&stats, 63_000_000),
        bases().synth_counts.runtime_rows
    );
}

/// Absurd values where numbers are expected (as left by a damaged file): the trace
/// stays as small as the data.
#[test]
fn garbage_in_metadata() {
    let case = Case::new();
    let path = case.synth("garbage.sqlite");
    let conn = Connection::open(&path).unwrap();
    for table in [
        "TARGET_INFO_SYSTEM_ENV",
        "TARGET_INFO_SESSION_START_TIME",
        "META_DATA_EXPORT",
    ] {
        loosen(&conn, table);
    }
    conn.execute_batch(
        "UPDATE TARGET_INFO_SYSTEM_ENV SET value = '4294967295';
         UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 9223372036854775807;
         UPDATE META_DATA_EXPORT SET value = '-9223372036854775808'
             WHERE name LIKE '%TIME_SHIFT';",
    )
    .unwrap();
    drop(conn);
    let out = convert_within(&[&path], &case.prv(), Duration::from_secs(60));
    let stats = assert_translates(&out, &case.prv());
    assert_eq!(
        begins(&stats, 63_000_000),
        bases().synth_counts.runtime_rows
    );
    let row = fs::metadata(case.prv().with_extension("row"))
        .unwrap()
        .len();
    assert!(row < 1 << 20, ".row of {row} bytes");
}

#[test]
fn non_utf8_strings() {
    let case = Case::new();
    // Kernel, API, host, process and thread names with invalid UTF-8, as text and as blobs.
    let path = case.synth("names.sqlite");
    sql(
        &path,
        &format!(
            "UPDATE StringIds SET value = CAST(X'6B65726E656CFFFE5F' AS TEXT) || value
                 WHERE id IN (SELECT shortName FROM {KERNEL});
             UPDATE StringIds SET value = X'637564614D616C6C6F63C328'
                 WHERE id IN (SELECT nameId FROM {RUNTIME} WHERE rowid % 3 = 0);
             UPDATE TARGET_INFO_SYSTEM_ENV SET value = CAST(X'6E6F6465FF3031' AS TEXT)
                 WHERE name = 'Hostname';
             UPDATE PROCESSES SET name = CAST(X'2E2FC0C1617070' AS TEXT);"
        ),
    );
    let out = convert_spawned(&[&path], &case.prv(), &[]);
    let stats = assert_translates(&out, &case.prv());
    assert_eq!(
        begins(&stats, 63_000_006) + begins(&stats, 63_000_007),
        bases().synth_counts.kernels
    );
    // NVTX text (inline and through StringIds) and thread names.
    // (Domain names are left alone: see `non_utf8_nvtx_domain_name`.)
    let nvtx = case.nvtx_sample("nvtx.sqlite");
    sql(
        &nvtx,
        "UPDATE NVTX_EVENTS SET text = CAST(X'72616E6765FF' AS TEXT) || text
             WHERE text IS NOT NULL AND eventType <> 75;
         UPDATE StringIds SET value = CAST(X'E282' AS TEXT) || value || CAST(X'EDA080' AS TEXT);",
    );
    let prv = case.out_dir().join("nvtx.prv");
    let out = convert_spawned(&[&nvtx], &prv, &[]);
    assert_translates(&out, &prv);
    // A file name that is not UTF-8.
    use std::os::unix::ffi::OsStrExt;
    let odd = case
        .tmp
        .path()
        .join("in")
        .join(std::ffi::OsStr::from_bytes(b"r\xe9port_\xff.sqlite"));
    fs::copy(&bases().synth, &odd).unwrap();
    let prv = case.out_dir().join("odd_name.prv");
    let out = convert_spawned(&[&odd], &prv, &[]);
    assert_translates(&out, &prv);
    // ... and one that fails: the line still names it (lossily).
    fs::write(&odd, "garbage that is not SQLite").unwrap();
    let out = convert_spawned(&[&odd], &case.out_dir().join("odd_fail.prv"), &[]);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("port_"), "{stderr}");
}

/// A domain name is part of event type labels (`NVTX push/pop ranges (domain D)`),
/// which must be ASCII for `ptd comprovar`.
#[test]

fn non_utf8_nvtx_domain_name() {
    let case = Case::new();
    let nvtx = case.nvtx_sample("nvtx.sqlite");
    sql(
        &nvtx,
        "UPDATE NVTX_EVENTS SET text = CAST(X'446F6DFF61696E' AS TEXT) WHERE eventType = 75;",
    );
    let out = convert_spawned(&[&nvtx], &case.prv(), &[]);
    assert_translates(&out, &case.prv());
}

/// Names that are empty (a category defined without a name, an empty range text, an
/// empty string in StringIds) still get a label in the `.pcf`.
#[test]

fn empty_names() {
    let case = Case::new();
    let nvtx = case.nvtx_sample("nvtx.sqlite");
    let conn = Connection::open(&nvtx).unwrap();
    loosen(&conn, "NVTX_EVENTS");
    conn.execute_batch(
        "UPDATE NVTX_EVENTS SET text = NULL WHERE eventType = 33;
         UPDATE NVTX_EVENTS SET text = '' WHERE eventType = 59 AND text IS NOT NULL;",
    )
    .unwrap();
    drop(conn);
    let out = convert_spawned(&[&nvtx], &case.prv(), &[]);
    assert_translates(&out, &case.prv());
    let cuda = case.synth("cuda.sqlite");
    sql(
        &cuda,
        &format!("UPDATE StringIds SET value = '' WHERE id IN (SELECT nameId FROM {RUNTIME});"),
    );
    let prv = case.out_dir().join("cuda.prv");
    let out = convert_spawned(&[&cuda], &prv, &[]);
    assert_translates(&out, &prv);
}

/// A FIFO or a device given as input would block or never end.
#[test]
fn special_files_as_input() {
    let case = Case::new();
    let fifo = case.input("fifo.sqlite");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let limit = Duration::from_secs(30);
    if made {
        let out = convert_within(&[&fifo], &case.prv(), limit);
        assert_fails_cleanly(&out, &[&fifo], &["not a regular file"], &case.out_dir());
        // In a directory, it is not a report.
        let out = convert_within(&[&case.input("")], &case.prv(), limit);
        assert_fails_cleanly(&out, &[], &["no Nsight Systems reports"], &case.out_dir());
    } else {
        not_checked("mkfifo", "the FIFO input case");
    }
    let null = Path::new("/dev/null");
    let out = convert_within(&[null], &case.prv(), limit);
    assert_fails_cleanly(&out, &[null], &[], &case.out_dir());
}

// Interruption: see interrupt.rs (deterministic, at numbered checkpoints).

// ---------------------------------------------------------------------------
// Property test: mutated exports translate or fail cleanly.

#[derive(Clone, Debug)]
enum Mutation {
    DropTable(usize),
    DropColumn(usize, usize),
    Null {
        table: usize,
        column: usize,
        every: u32,
    },
    Garbage {
        table: usize,
        column: usize,
        every: u32,
        value: usize,
    },
}

/// Values written over real ones: extremes, text, blobs, reals, invalid UTF-8.
const GARBAGE: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "-1",
    "0",
    "4294967295",
    "'garbage'",
    "''",
    "X'FFFE00'",
    "CAST(X'C328FF' AS TEXT)",
    "1e300",
    "-0.5",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::DropTable),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(t, c)| Mutation::DropColumn(t, c)),
        3 => (any::<usize>(), any::<usize>(), 1u32..5)
            .prop_map(|(table, column, every)| Mutation::Null { table, column, every }),
        3 => (any::<usize>(), any::<usize>(), 1u32..5, 0..GARBAGE.len()).prop_map(
            |(table, column, every, value)| Mutation::Garbage { table, column, every, value }
        ),
    ]
}

/// Exports the mutations start from: synthetic ones, the real sample, and one or
/// two small real exports of the corpus when it is there.
fn fuzz_bases() -> &'static Vec<PathBuf> {
    static LIST: OnceLock<Vec<PathBuf>> = OnceLock::new();
    LIST.get_or_init(|| {
        let b = bases();
        let mut list = vec![
            b.synth.clone(),
            b.synth_old.clone(),
            workspace_root().join(NVTX_SAMPLE),
        ];
        if let Some(corpus) = corpus_dir() {
            for rel in [
                "github/Faraz-Nasir+CUDA---Recap/report1.sqlite",
                "local/nvtx_pthreads/nvtx_pthreads.sqlite",
            ] {
                let p = corpus.join(rel);
                if p.is_file() {
                    list.push(p);
                }
            }
        }
        list
    })
}

/// Applies the mutations (indices taken modulo the tables and columns there are;
/// a mutation SQLite refuses is left out) and says what each one did.
fn mutate(path: &Path, mutations: &[Mutation]) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut done = Vec::new();
    for m in mutations {
        // ENUM_* tables are many and rarely read: aim at the others.
        let list: Vec<String> = tables(&conn)
            .into_iter()
            .filter(|t| !t.starts_with("ENUM_"))
            .collect();
        if list.is_empty() {
            break;
        }
        let pick = |i: usize| list[i % list.len()].clone();
        let (what, result) = match *m {
            Mutation::DropTable(t) => {
                let table = pick(t);
                let result = conn.execute_batch(&format!("DROP TABLE \"{table}\""));
                (format!("drop {table}"), result)
            }
            Mutation::DropColumn(t, c) => {
                let table = pick(t);
                let mut cols = columns(&conn, &table);
                let col = cols.remove(c % cols.len());
                (format!("drop {table}.{col}"), rebuild(&conn, &table, &cols))
            }
            Mutation::Null {
                table,
                column,
                every,
            } => {
                let table = pick(table);
                let cols = columns(&conn, &table);
                let col = &cols[column % cols.len()];
                let result = rebuild(&conn, &table, &cols).and_then(|_| {
                    conn.execute_batch(&format!(
                        "UPDATE \"{table}\" SET \"{col}\" = NULL WHERE rowid % {every} = 0"
                    ))
                });
                (format!("NULL in {table}.{col} every {every}"), result)
            }
            Mutation::Garbage {
                table,
                column,
                every,
                value,
            } => {
                let table = pick(table);
                let cols = columns(&conn, &table);
                let col = &cols[column % cols.len()];
                let value = GARBAGE[value];
                let result = rebuild(&conn, &table, &cols).and_then(|_| {
                    conn.execute_batch(&format!(
                        "UPDATE \"{table}\" SET \"{col}\" = {value} WHERE rowid % {every} = 0"
                    ))
                });
                (format!("{value} in {table}.{col} every {every}"), result)
            }
        };
        match result {
            Ok(()) => done.push(what),
            Err(e) => done.push(format!("({what}: refused: {e})")),
        }
    }
    done
}

/// What is wrong with the outcome of a run, if anything: exit 0 with a valid trace,
/// or exit 1 with one line naming the input and nothing written. Never a panic
/// (101) nor a signal.
fn outcome_problem(out: &Output, input: &Path, prv: &Path) -> Option<String> {
    let stderr = stderr_of(out);
    let out_dir = prv.parent().unwrap();
    match out.status.code() {
        Some(0) => {
            let report = validate_trace(prv).expect("read the trace");
            let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
            let temporaries = fs::read_dir(out_dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .any(|n| n.starts_with('.') || n.ends_with(".tmp"));
            if !errors.is_empty() {
                Some(format!("invalid trace:\n{}", errors.join("\n")))
            } else if temporaries {
                Some("temporary files left".to_string())
            } else {
                None
            }
        }
        Some(1) => {
            let left = fs::read_dir(out_dir).unwrap().count();
            if stderr.lines().count() != 1 || !stderr.starts_with("error: ") {
                Some(format!("not one error line: {stderr}"))
            } else if !stderr.contains(&input.display().to_string()) {
                Some(format!("the line does not name the input: {stderr}"))
            } else if left > 0 {
                Some(format!("{left} files left behind: {stderr}"))
            } else {
                None
            }
        }
        other => Some(format!(
            "exit {other:?} (101 = panic, None = signal): {stderr}"
        )),
    }
}

/// One case of the property. With `BAD_INPUT_HUNT` set, problems are printed
/// (`FINDING ...`, with `--nocapture`) instead of failing, to collect them all.
fn translate_or_fail_cleanly(
    base: usize,
    mutations: Vec<Mutation>,
    truncate: Option<u16>,
) -> Result<(), TestCaseError> {
    let bases = fuzz_bases();
    let src = &bases[base % bases.len()];
    let case = Case::new();
    let path = case.copy(src, "mutated.sqlite");
    let done = mutate(&path, &mutations);
    if let Some(permille) = truncate {
        let len = fs::metadata(&path).unwrap().len();
        let keep = len * u64::from(permille) / 1000;
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(keep)
            .unwrap();
    }
    let out = convert_within(&[&path], &case.prv(), Duration::from_secs(60));
    let Some(problem) = outcome_problem(&out, &path, &case.prv()) else {
        return Ok(());
    };
    let name = src.file_name().unwrap().to_string_lossy();
    let context = format!("{name} with {done:?}, truncated to {truncate:?} permille");
    if std::env::var_os("BAD_INPUT_HUNT").is_some() {
        eprintln!("FINDING {context}: {problem}");
        return Ok(());
    }
    Err(TestCaseError::fail(format!("{context}: {problem}")))
}

/// 48 cases from a fixed seed, so that a run is repeatable;
/// `PROPTEST_CASES=1000 BAD_INPUT_HUNT=1` (random seed, every problem printed) or
/// `PROPTEST_RNG_SEED=N` explore further.
fn fuzz_config() -> ProptestConfig {
    use proptest::test_runner::RngSeed;
    let defaults = ProptestConfig::default();
    let set = |var: &str| std::env::var_os(var).is_some();
    ProptestConfig {
        cases: if set("PROPTEST_CASES") {
            defaults.cases
        } else {
            48
        },
        rng_seed: if set("PROPTEST_RNG_SEED") || set("BAD_INPUT_HUNT") {
            defaults.rng_seed
        } else {
            RngSeed::Fixed(0xBAD_1A9)
        },
        max_shrink_iters: 64,
        failure_persistence: None,
        ..defaults
    }
}

proptest! {
    #![proptest_config(fuzz_config())]

    #[test]
    fn mutated_exports_translate_or_fail_cleanly(
        base in 0usize..5,
        mutations in prop::collection::vec(mutation(), 1..5),
        truncate in prop::option::weighted(0.15, 0u16..1000),
    ) {
        translate_or_fail_cleanly(base, mutations, truncate)?;
    }
}
