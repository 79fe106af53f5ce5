//! CPU-side recordings added to an export [`crate::write_export`] wrote: CPU IP samples with
//! call stacks and context switches (`nsys profile --sample --cpuctxsw`), or NVTX push/pop
//! ranges, on every CPU thread of its processes. For benchmarks of CPU-only reports: with no
//! CUDA rows (`--rows 0`), a report of samples and one of NVTX ranges of the same size.
//!
//! The shapes follow real 2022-2026 exports: each thread runs on a CPU for 5-50 ms, then is
//! switched out for 0.1-5 ms (one SCHED_EVENTS row each way); while it runs it is sampled every
//! millisecond; as with nsys's default `--samples-per-backtrace=4`, one sample in four has a call
//! stack of 15-30 frames ending in `[Broken backtraces]` and the others only the sampled frame;
//! about 60 % of frames are addresses nsys did not resolve (`0x7f…`, flagged `unresolved`) in
//! one of ten modules, the rest named functions.

use std::path::Path;

use anyhow::{ensure, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::ddl::create_statement;
use crate::ids::global_tid;
use crate::rng::SplitMix64;
use crate::{SchemaVersion, SynthSpec};

/// What to add to each CPU thread of every process of the spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthCpu {
    /// CPU IP samples per thread (1 ms apart while it runs), with call stacks and the context
    /// switches of its runs.
    pub samples_per_thread: u64,
    /// NVTX push/pop ranges per thread, nested three deep.
    pub nvtx_ranges_per_thread: u64,
}

/// Rows added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounts {
    pub samples: u64,
    /// SAMPLING_CALLCHAINS rows: every frame of every sample, terminators included.
    pub frames: u64,
    pub sched_events: u64,
    pub nvtx_ranges: u64,
}

impl CpuCounts {
    pub fn total(&self) -> u64 {
        self.samples + self.frames + self.sched_events + self.nvtx_ranges
    }
}

/// The first sample or range of a thread, after the process started.
const FIRST_ACTIVITY: i64 = 300_000_000;
const SAMPLE_PERIOD: i64 = 1_000_000;
/// Logical CPUs the threads run on.
const CPUS: u64 = 16;
const MODULES: [&str; 10] = [
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libm.so.6",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
    "/usr/lib/x86_64-linux-gnu/libpthread.so.0",
    "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0",
    "/opt/app/lib/libsolver.so",
    "/opt/app/lib/libio.so",
    "/opt/app/bin/app",
    "[kernel.kallsyms]",
    "[vdso]",
];
/// Named functions, each in one of the modules.
const FUNCTIONS: usize = 300;
/// Distinct unresolved addresses.
const ADDRESSES: u64 = 4096;

/// Adds `cpu`'s recordings to the export at `path`, written from `spec`.
pub fn add_cpu_activity(path: &Path, spec: &SynthSpec, cpu: &SynthCpu) -> Result<CpuCounts> {
    let mut conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    conn.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")?;
    let tx = conn.transaction()?;
    let mut writer = CpuWriter::new(&tx, spec)?;
    let threads: Vec<(u32, u32)> = spec
        .processes
        .iter()
        .flat_map(|p| (0..p.cpu_threads).map(move |t| (p.pid, p.pid + t)))
        .collect();
    let mut end = 0;
    for (index, &(pid, tid)) in threads.iter().enumerate() {
        let start = FIRST_ACTIVITY + index as i64 * 137_000;
        if cpu.samples_per_thread > 0 {
            end = end.max(writer.sampled_thread(pid, tid, start, cpu.samples_per_thread)?);
        }
        if cpu.nvtx_ranges_per_thread > 0 {
            end = end.max(writer.nvtx_thread(pid, tid, start, cpu.nvtx_ranges_per_thread)?);
        }
    }
    tx.execute(
        "UPDATE ANALYSIS_DETAILS SET duration = MAX(duration, ?1)",
        [end + 1_000_000],
    )?;
    let counts = writer.counts;
    drop(writer);
    tx.commit()?;
    Ok(counts)
}

/// A frame as SAMPLING_CALLCHAINS holds it.
struct Frame {
    symbol: i64,
    module: i64,
    unresolved: Option<i64>,
    ip: i64,
}

struct CpuWriter<'c> {
    conn: &'c Connection,
    version: SchemaVersion,
    rng: SplitMix64,
    strings: Strings<'c>,
    /// (symbol, module) string ids of the named functions.
    functions: Vec<(i64, i64)>,
    modules: Vec<i64>,
    broken: i64,
    next_sample: i64,
    counts: CpuCounts,
    created: Vec<&'static str>,
}

impl<'c> CpuWriter<'c> {
    fn new(conn: &'c Connection, spec: &SynthSpec) -> Result<Self> {
        let mut strings = Strings::new(conn)?;
        let modules: Vec<i64> = MODULES
            .iter()
            .map(|m| strings.id(m))
            .collect::<Result<_>>()?;
        let functions = (0..FUNCTIONS)
            .map(|i| {
                let name = format!("app::solver::stage_{}::compute_{i}(double*, long)", i % 17);
                Ok((strings.id(&name)?, modules[i % MODULES.len()]))
            })
            .collect::<Result<_>>()?;
        let broken = strings.id("[Broken backtraces]")?;
        Ok(CpuWriter {
            conn,
            version: spec.schema,
            rng: SplitMix64::new(spec.seed ^ 0xC0FF_EE00),
            strings,
            functions,
            modules,
            broken,
            next_sample: 1,
            counts: CpuCounts::default(),
            created: Vec::new(),
        })
    }

    /// Creates `table` once: the version's statement, else this module's.
    fn table(&mut self, table: &'static str) -> Result<()> {
        if self.created.contains(&table) {
            return Ok(());
        }
        let exists: Option<String> = self
            .conn
            .query_row(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .optional()?;
        if exists.is_none() {
            let head = format!("CREATE TABLE {table} (");
            let sql = create_statement(self.version, table)
                .or_else(|| {
                    include_str!("../schema/cpu.sql")
                        .split("\n;\n")
                        .find_map(|chunk| chunk.find(&head).map(|at| &chunk[at..]))
                })
                .with_context(|| format!("no statement for {table}"))?;
            self.conn.execute_batch(sql)?;
            if table == "SCHED_EVENTS" && self.version >= SchemaVersion::V3_16 {
                self.conn.execute_batch(
                    "ALTER TABLE SCHED_EVENTS ADD COLUMN threadState INTEGER;
                     ALTER TABLE SCHED_EVENTS ADD COLUMN threadBlock INTEGER;",
                )?;
            }
        }
        self.created.push(table);
        Ok(())
    }

    /// One thread's runs, switches and samples from `start`; returns its last time.
    fn sampled_thread(&mut self, pid: u32, tid: u32, start: i64, samples: u64) -> Result<i64> {
        for table in ["SCHED_EVENTS", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"] {
            self.table(table)?;
        }
        let gtid = global_tid(pid, tid);
        let mut sched = self.conn.prepare(
            "INSERT INTO SCHED_EVENTS (start, cpu, isSchedIn, globalTid) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut sample = self.conn.prepare(
            "INSERT INTO COMPOSITE_EVENTS (id, start, cpu, threadState, globalTid, cpuCycles) \
             VALUES (?1, ?2, ?3, 1, ?4, 1)",
        )?;
        let mut frame = self.conn.prepare(
            "INSERT INTO SAMPLING_CALLCHAINS (id, symbol, module, kernelMode, thumbCode, \
             unresolved, specialEntry, originalIP, unwindMethod, stackDepth) \
             VALUES (?1, ?2, ?3, NULL, NULL, ?4, NULL, ?5, ?6, ?7)",
        )?;
        let (mut time, mut left) = (start, samples);
        while left > 0 {
            let cpu = self.rng.below(CPUS) as i64;
            let run_end = time + self.rng.range(5_000_000, 50_000_000);
            sched.execute(params![time, cpu, 1, gtid])?;
            let mut at = time + self.rng.range(10_000, SAMPLE_PERIOD);
            while at < run_end && left > 0 {
                let id = self.next_sample;
                self.next_sample += 1;
                sample.execute(params![id, at, cpu, gtid])?;
                let with_stack = self.counts.samples.is_multiple_of(4);
                let depth = if with_stack {
                    self.rng.range(15, 31)
                } else {
                    1
                };
                for level in 0..depth {
                    let f = self.frame()?;
                    let unwind = if with_stack { Some(1) } else { None };
                    frame.execute(params![
                        id,
                        f.symbol,
                        f.module,
                        f.unresolved,
                        f.ip,
                        unwind,
                        level
                    ])?;
                }
                if with_stack {
                    frame.execute(params![
                        id,
                        self.broken,
                        self.broken,
                        None::<i64>,
                        0,
                        None::<i64>,
                        depth
                    ])?;
                    self.counts.frames += 1;
                }
                self.counts.samples += 1;
                self.counts.frames += depth as u64;
                left -= 1;
                at += self.rng.jitter(SAMPLE_PERIOD);
            }
            let end = run_end.min(at);
            sched.execute(params![end, cpu, 0, gtid])?;
            self.counts.sched_events += 2;
            time = end + self.rng.log_range(100_000, 5_000_000);
        }
        Ok(time)
    }

    fn frame(&mut self) -> Result<Frame> {
        if self.rng.below(10) < 6 {
            let address = 0x7f00_0000_0000 + (self.rng.below(ADDRESSES) as i64) * 0x1_3579;
            let module = self.modules[(address as usize / 7) % self.modules.len()];
            Ok(Frame {
                symbol: self.strings.id(&format!("0x{address:x}"))?,
                module,
                unresolved: Some(1),
                ip: address,
            })
        } else {
            let (symbol, module) = self.functions[self.rng.below(FUNCTIONS as u64) as usize];
            Ok(Frame {
                symbol,
                module,
                unresolved: None,
                ip: 0x40_0000 + symbol * 64,
            })
        }
    }

    /// One thread's NVTX ranges from `start`, in blocks of three nested ones; returns the last end.
    fn nvtx_thread(&mut self, pid: u32, tid: u32, start: i64, ranges: u64) -> Result<i64> {
        self.table("NVTX_EVENTS")?;
        let gtid = global_tid(pid, tid);
        let mut insert = self.conn.prepare(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)",
        )?;
        let mut time = start;
        let mut written = 0;
        while written < ranges {
            let block = self.rng.range(900_000, 1_100_000);
            for level in 0..3.min(ranges - written) as i64 {
                let inset = level * block / 8;
                let name = format!("range_{}_{level}", self.rng.below(40));
                insert.execute(params![time + inset, time + block - inset, name, gtid])?;
                written += 1;
            }
            time += block + self.rng.range(1_000, 50_000);
        }
        self.counts.nvtx_ranges += written;
        Ok(time)
    }
}

/// StringIds ids of values, adding those the export lacks.
struct Strings<'c> {
    conn: &'c Connection,
    ids: std::collections::HashMap<String, i64>,
    next: i64,
}

impl<'c> Strings<'c> {
    fn new(conn: &'c Connection) -> Result<Self> {
        let mut ids = std::collections::HashMap::new();
        let mut statement = conn.prepare("SELECT id, value FROM StringIds")?;
        let rows =
            statement.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (id, value) = row?;
            ids.entry(value).or_insert(id);
        }
        let next = ids.values().max().map_or(0, |m| m + 1);
        ensure!(next >= 0, "bad StringIds ids");
        Ok(Strings { conn, ids, next })
    }

    fn id(&mut self, value: &str) -> Result<i64> {
        if let Some(&id) = self.ids.get(value) {
            return Ok(id);
        }
        let id = self.next;
        self.conn
            .prepare_cached("INSERT INTO StringIds (id, value) VALUES (?1, ?2)")?
            .execute(params![id, value])?;
        self.ids.insert(value.to_string(), id);
        self.next += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_export, SynthProcess};

    fn cpu_only(schema: SchemaVersion) -> SynthSpec {
        let mut spec = SynthSpec::small(schema);
        spec.processes = vec![SynthProcess {
            kernels: 0,
            memcpys: 0,
            memsets: 0,
            syncs: 0,
            extra_api_calls: 0,
            ..spec.processes[0].clone()
        }];
        spec
    }

    fn count(path: &Path, sql: &str) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn samples_have_nsys_shapes_and_every_row_is_counted() {
        for schema in [SchemaVersion::V3_0, SchemaVersion::V3_24] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("cpu.sqlite");
            let spec = cpu_only(schema);
            write_export(&spec, &path).unwrap();
            let cpu = SynthCpu {
                samples_per_thread: 400,
                nvtx_ranges_per_thread: 30,
            };
            let counts = add_cpu_activity(&path, &spec, &cpu).unwrap();
            assert_eq!(counts.samples, 800);
            assert_eq!(counts.nvtx_ranges, 60);
            assert_eq!(
                count(&path, "SELECT COUNT(*) FROM COMPOSITE_EVENTS") as u64,
                counts.samples
            );
            assert_eq!(
                count(&path, "SELECT COUNT(*) FROM SAMPLING_CALLCHAINS") as u64,
                counts.frames
            );
            assert_eq!(
                count(&path, "SELECT COUNT(*) FROM SCHED_EVENTS") as u64,
                counts.sched_events
            );
            assert_eq!(
                count(&path, "SELECT COUNT(*) FROM NVTX_EVENTS") as u64,
                counts.nvtx_ranges
            );
            // One sample in four with a stack ending in a terminator; the rest one frame.
            let stacks = count(
                &path,
                "SELECT COUNT(DISTINCT id) FROM SAMPLING_CALLCHAINS WHERE stackDepth > 0",
            );
            assert_eq!(stacks, 200);
            let per_frame = counts.frames as f64 / counts.samples as f64;
            assert!((4.5..7.0).contains(&per_frame), "{per_frame}");
            // Every sample lies in a run of its thread.
            let outside = count(
                &path,
                "SELECT COUNT(*) FROM COMPOSITE_EVENTS c WHERE (SELECT isSchedIn FROM SCHED_EVENTS s \
                 WHERE s.globalTid = c.globalTid AND s.start <= c.start ORDER BY s.start DESC LIMIT 1) IS NOT 1",
            );
            assert_eq!(outside, 0, "{schema}");
            let unresolved = count(
                &path,
                "SELECT COUNT(*) FROM SAMPLING_CALLCHAINS WHERE unresolved = 1",
            );
            let share = unresolved as f64 / counts.frames as f64;
            assert!((0.45..0.65).contains(&share), "{share}");
        }
    }
}
