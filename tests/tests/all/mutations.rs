//! Never a panic, whatever the input (issue 13, item 9): copies of the bundled
//! sample exports, damaged in every way the issue lists, either translate into a
//! valid trace or fail with exit 1 and one line naming the file, and leave nothing
//! behind on failure. The damage comes from a seeded generator, so a failure
//! names its case and reproduces (`MUTATION_SEED=N` tries another seed).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use end_to_end::*;
use paraver_reader::validate::validate_trace;
use rusqlite::Connection;

/// SplitMix64: small, seeded, the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values written over required columns: NULL, negative, huge, wrong types.
const BAD_VALUES: &[&str] = &[
    "NULL",
    "-1",
    "-9223372036854775808",
    "9223372036854775807",
    "4294967296",
    "1e300",
    "'text'",
    "X'00FF'",
];

/// A damaged copy of an export and what was done to it.
struct Mutant {
    path: PathBuf,
    what: String,
}

fn tables_with_rows(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'ENUM_%' ORDER BY name")
        .unwrap();
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    names
        .into_iter()
        .filter(|t| {
            conn.query_row(&format!("SELECT count(*) > 0 FROM \"{t}\""), [], |r| {
                r.get::<_, bool>(0)
            })
            .unwrap_or(false)
        })
        .collect()
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    names
}

/// Rebuilds `table` without constraints (so NOT NULL columns take NULLs) and
/// without the columns not in `keep`.
fn rebuild(conn: &Connection, table: &str, keep: &[String]) -> rusqlite::Result<()> {
    let list: Vec<String> = keep.iter().map(|c| format!("\"{c}\"")).collect();
    conn.execute_batch(&format!(
        "CREATE TABLE \"__m\" AS SELECT {} FROM \"{table}\" ORDER BY rowid;
         DROP TABLE \"{table}\"; ALTER TABLE \"__m\" RENAME TO \"{table}\";",
        list.join(", ")
    ))
}

/// The kinds of damage, each a function of the copy, the generator and the
/// case number.
#[derive(Clone, Copy, Debug)]
enum Damage {
    Truncate,
    GarbagePages,
    DropTable,
    DropColumn,
    BadValues,
    DanglingIds,
    NonUtf8Names,
}

fn damage(path: &Path, kind: Damage, case: usize, cases: usize, rng: &mut Rng) -> String {
    match kind {
        Damage::Truncate => {
            let len = fs::metadata(path).unwrap().len();
            // Spread over the file, from the header to the last page.
            let at =
                (len * (case as u64 + 1) / (cases as u64 + 1)).saturating_sub(rng.next() % 512);
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(at)
                .unwrap();
            format!("truncated to {at} of {len} bytes")
        }
        Damage::GarbagePages => {
            let mut bytes = fs::read(path).unwrap();
            let page = u16::from_be_bytes([bytes[16], bytes[17]]).max(512) as usize;
            let size = bytes.len();
            let pages = size / page;
            let mut hit = Vec::new();
            for _ in 0..1 + rng.below(3) {
                let p = 1 + rng.below(pages.saturating_sub(1));
                for b in &mut bytes[p * page..((p + 1) * page).min(size)] {
                    *b = rng.next() as u8;
                }
                hit.push(p);
            }
            fs::write(path, bytes).unwrap();
            format!("pages {hit:?} of {page} bytes overwritten with garbage")
        }
        _ => damage_sql(path, kind, rng),
    }
}

fn damage_sql(path: &Path, kind: Damage, rng: &mut Rng) -> String {
    let conn = Connection::open(path).unwrap();
    let tables = tables_with_rows(&conn);
    let table = rng.pick(&tables).clone();
    let cols = columns(&conn, &table);
    let result = match kind {
        Damage::DropTable => {
            let what = format!("table {table} dropped");
            (what, conn.execute_batch(&format!("DROP TABLE \"{table}\"")))
        }
        Damage::DropColumn => {
            let mut keep = cols.clone();
            let col = keep.remove(rng.below(keep.len()));
            let what = format!("column {table}.{col} dropped");
            let result = if keep.is_empty() {
                conn.execute_batch(&format!("DROP TABLE \"{table}\""))
            } else {
                rebuild(&conn, &table, &keep)
            };
            (what, result)
        }
        Damage::BadValues => {
            let col = rng.pick(&cols).clone();
            let value = *rng.pick(BAD_VALUES);
            let every = 1 + rng.below(3);
            let what = format!("{value} in {table}.{col}, every {every} rows");
            let result = rebuild(&conn, &table, &cols).and_then(|_| {
                conn.execute_batch(&format!(
                    "UPDATE \"{table}\" SET \"{col}\" = {value} WHERE rowid % {every} = 0"
                ))
            });
            (what, result)
        }
        Damage::DanglingIds => {
            let ids: Vec<&String> = cols
                .iter()
                .filter(|c| {
                    c.ends_with("Id") || c.ends_with("Tid") || c.ends_with("Pid") || *c == "id"
                })
                .collect();
            match ids.is_empty() {
                true => (format!("{table}: no id column"), Ok(())),
                false => {
                    let col = (*rng.pick(&ids)).clone();
                    let what = format!("{table}.{col} pointing nowhere");
                    let result = conn.execute_batch(&format!(
                        "UPDATE \"{table}\" SET \"{col}\" = 987654321 + rowid WHERE rowid % 2 = 0"
                    ));
                    (what, result)
                }
            }
        }
        Damage::NonUtf8Names => {
            let result = conn.execute_batch(
                "UPDATE StringIds SET value = CAST(X'C328FF41' || CAST(value AS BLOB) AS TEXT) WHERE id % 3 = 0",
            );
            ("non-UTF-8 bytes in every third name".to_string(), result)
        }
        Damage::Truncate | Damage::GarbagePages => unreachable!("byte-level damage"),
    };
    match result {
        (what, Ok(())) => what,
        (what, Err(e)) => format!("({what}: refused by SQLite: {e})"),
    }
}

/// Runs the converter, stopping it (and failing) after a generous limit: a
/// damaged input must not make the tool spin.
fn convert_guarded(input: &Path, prv: &Path) -> Output {
    let mut child = binary()
        .arg("-q")
        .arg(input)
        .arg(prv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{}: still running after 120 s", input.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// What is wrong with a run's outcome, if anything.
fn problem(out: &Output, input: &Path, out_dir: &Path) -> Option<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let left: Vec<String> = fs::read_dir(out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    match out.status.code() {
        Some(0) => {
            let report = match validate_trace(&out_dir.join("t.prv")) {
                Ok(r) => r,
                Err(e) => return Some(format!("exit 0 but no readable trace: {e}")),
            };
            let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
            let mut expected = ["t.cfgs", "t.pcf", "t.pmf", "t.prv", "t.row"]
                .map(String::from)
                .to_vec();
            expected.sort();
            let mut found = left.clone();
            found.sort();
            if !errors.is_empty() {
                Some(format!("invalid trace: {}", errors.join("; ")))
            } else if found != expected {
                Some(format!("exit 0 but the directory holds {found:?}"))
            } else {
                None
            }
        }
        Some(1) => {
            let name = input.display().to_string();
            if stderr.lines().count() != 1 || !stderr.starts_with("error: ") {
                Some(format!("not one error line: {stderr}"))
            } else if !stderr.contains(&name) {
                Some(format!("the error does not name the input: {stderr}"))
            } else if !left.is_empty() {
                Some(format!("failed but left {left:?}: {stderr}"))
            } else {
                None
            }
        }
        other => Some(format!(
            "exit {other:?} (101 = panic, None = signal): {stderr}"
        )),
    }
}

/// Exports the damage starts from: one of each kind of bundled sample.
const BASES: &[&str] = &[
    "samples/synthetic/cuda_2025.5.sqlite",
    "samples/nvtx_osrt/nvtx_osrt.sqlite",
    "samples/openmp/openmp.sqlite",
    "samples/sched/sched.sqlite",
    "samples/mpi_2ranks/rank0.sqlite",
    "samples/synthetic/4ranks_2hosts_2022.4/rank1.sqlite",
];

/// (damage, cases per base): 20 truncation offsets on every base, and the rest.
const PLAN: &[(Damage, usize)] = &[
    (Damage::Truncate, 20),
    (Damage::GarbagePages, 4),
    (Damage::DropTable, 4),
    (Damage::DropColumn, 4),
    (Damage::BadValues, 6),
    (Damage::DanglingIds, 3),
    (Damage::NonUtf8Names, 1),
];

#[test]
fn damaged_samples_translate_or_fail_cleanly() {
    let seed: u64 = std::env::var("MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1_3A_FE);
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let mut runs = 0;
    let mut failed = 0;
    for (b, base) in BASES.iter().enumerate() {
        for &(kind, cases) in PLAN {
            for case in 0..cases {
                // One generator per case: a case reproduces alone.
                let mut rng = Rng(seed ^ ((b as u64) << 40) ^ ((kind as u64) << 32) ^ case as u64);
                let dir = tmp.path().join(format!("{b}-{kind:?}-{case}"));
                let out_dir = dir.join("out");
                fs::create_dir_all(&out_dir).unwrap();
                let mutant = Mutant {
                    path: dir.join("damaged.sqlite"),
                    what: String::new(),
                };
                fs::copy(workspace_root().join(base), &mutant.path).unwrap();
                let what = damage(&mutant.path, kind, case, cases, &mut rng);
                let mutant = Mutant { what, ..mutant };
                let out = convert_guarded(&mutant.path, &out_dir.join("t.prv"));
                runs += 1;
                failed += usize::from(out.status.code() == Some(1));
                if let Some(p) = problem(&out, &mutant.path, &out_dir) {
                    problems.push(format!(
                        "{base}, {kind:?} case {case} ({}): {p}",
                        mutant.what
                    ));
                }
                fs::remove_dir_all(&dir).unwrap();
            }
        }
    }
    assert!(runs >= 200, "{runs} runs");
    // The damage matters: some runs fail, others still translate.
    assert!(
        failed > runs / 10 && failed < runs,
        "{failed} of {runs} runs failed"
    );
    eprintln!("{runs} damaged copies: {failed} refused cleanly, the others translated");
    assert!(
        problems.is_empty(),
        "{} of {runs} runs:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
