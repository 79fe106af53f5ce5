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
//!
//! CPU core counters (`--cpu-core-events` with `--event-sample=system-wide`) come with the
//! samples: every CPU the threads ran on counts up to three counters per 1 ms period, from the
//! first switch-in to the last switch-out, in `PERF_EVENT_SOC_OR_CPU_RAW_EVENT` (3.24; the older
//! name `PERF_EVENT_CPU_RAW_EVENT` for older schemas), on components `Core <cpu>` under a `Socket`
//! (instructions, cycles) and a `Cache` under each core (L2 misses), described in
//! `TARGET_INFO_COMPONENT` and `TARGET_INFO_PERF_METRIC`. A period whose midpoint falls in a run
//! of one of the threads counts at a busy rate, others at an idle one. The tables and columns are
//! those of NVIDIA's schema reference; the ids, names and rates are made up (nsys 2022.4 on this
//! project's virtual machine records no CPU counters to copy them from).

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
    /// CPU core counters sampled on every CPU the sampled threads ran on (0 to 3; needs
    /// `samples_per_thread`, which makes the runs).
    pub cpu_counters: u32,
}

/// Rows added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounts {
    pub samples: u64,
    /// SAMPLING_CALLCHAINS rows: every frame of every sample, terminators included.
    pub frames: u64,
    pub sched_events: u64,
    pub nvtx_ranges: u64,
    /// Rows of the raw counter table.
    pub counter_samples: u64,
}

impl CpuCounts {
    pub fn total(&self) -> u64 {
        self.samples + self.frames + self.sched_events + self.nvtx_ranges + self.counter_samples
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
/// Period of the CPU counters' samples.
const COUNTER_PERIOD: i64 = 1_000_000;
/// A CPU counter: its TARGET_INFO_PERF_METRIC row, whether a core (else its cache) counts it, and
/// the counts of a busy and of an idle period.
struct Counter {
    id: i64,
    name: &'static str,
    display_name: Option<&'static str>,
    unit: &'static str,
    on_core: bool,
    busy: i64,
    idle: i64,
}

const COUNTERS: [Counter; 3] = [
    Counter {
        id: 6,
        name: "instructions",
        display_name: Some("Instructions Retired"),
        unit: "",
        on_core: true,
        busy: 2_400_000,
        idle: 40_000,
    },
    Counter {
        id: 5,
        name: "cycles",
        display_name: Some("CPU Cycles"),
        unit: "cycles",
        on_core: true,
        busy: 2_900_000,
        idle: 300_000,
    },
    Counter {
        id: 12,
        name: "l2_rqsts.miss",
        display_name: None,
        unit: "",
        on_core: false,
        busy: 9_000,
        idle: 200,
    },
];
/// TARGET_INFO_COMPONENT ids: the socket, core `c` and its cache.
const SOCKET_COMPONENT: i64 = 1;
const CORE_COMPONENT: i64 = 100;
const CACHE_COMPONENT: i64 = 1000;

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
    ensure!(
        cpu.cpu_counters <= COUNTERS.len() as u32,
        "at most {} CPU counters",
        COUNTERS.len()
    );
    ensure!(
        cpu.cpu_counters == 0 || cpu.samples_per_thread > 0,
        "CPU counters need CPU samples (the threads' runs on the CPUs)"
    );
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
    if cpu.cpu_counters > 0 {
        writer.counters(cpu.cpu_counters as usize)?;
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
    /// The runs of the sampled threads: (cpu, start, end).
    runs: Vec<(i64, i64, i64)>,
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
            runs: Vec::new(),
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
            self.runs.push((cpu, time, end));
            self.counts.sched_events += 2;
            time = end + self.rng.log_range(100_000, 5_000_000);
        }
        Ok(time)
    }

    /// The first `n` [`COUNTERS`] of every CPU a run was on, every [`COUNTER_PERIOD`] from the
    /// first run's start to the last run's end, with the components and metrics they refer to.
    fn counters(&mut self, n: usize) -> Result<()> {
        let table = match self.version >= SchemaVersion::V3_24 {
            true => "PERF_EVENT_SOC_OR_CPU_RAW_EVENT",
            false => "PERF_EVENT_CPU_RAW_EVENT",
        };
        for t in ["TARGET_INFO_PERF_METRIC", "TARGET_INFO_COMPONENT", table] {
            self.table(t)?;
        }
        let mut metric = self.conn.prepare(
            "INSERT INTO TARGET_INFO_PERF_METRIC (id, name, description, unit, displayName) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for c in &COUNTERS[..n] {
            let description = format!("{} (synthetic)", c.display_name.unwrap_or(c.name));
            metric.execute(params![c.id, c.name, description, c.unit, c.display_name])?;
        }
        let mut component = self.conn.prepare(
            "INSERT INTO TARGET_INFO_COMPONENT (componentId, name, instance, parentId) \
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        component.execute(params![SOCKET_COMPONENT, "Socket", 0, None::<i64>])?;
        let mut cpus: Vec<i64> = self.runs.iter().map(|r| r.0).collect();
        cpus.sort_unstable();
        cpus.dedup();
        for &cpu in &cpus {
            component.execute(params![CORE_COMPONENT + cpu, "Core", cpu, SOCKET_COMPONENT])?;
            component.execute(params![
                CACHE_COMPONENT + cpu,
                "Cache",
                None::<i64>,
                CORE_COMPONENT + cpu
            ])?;
        }
        let (Some(first), Some(last)) = (
            self.runs.iter().map(|r| r.1).min(),
            self.runs.iter().map(|r| r.2).max(),
        ) else {
            return Ok(());
        };
        let mut sample = self.conn.prepare(&format!(
            "INSERT INTO {table} (start, end, vmId, componentId, eventId, count) \
             VALUES (?1, ?2, 1, ?3, ?4, ?5)"
        ))?;
        for &cpu in &cpus {
            let mut runs: Vec<(i64, i64)> = self
                .runs
                .iter()
                .filter(|r| r.0 == cpu)
                .map(|r| (r.1, r.2))
                .collect();
            runs.sort_unstable();
            let mut start = first - self.rng.range(0, COUNTER_PERIOD);
            while start < last {
                let end = start + COUNTER_PERIOD;
                let middle = start + COUNTER_PERIOD / 2;
                let busy = runs.iter().any(|&(s, e)| s <= middle && middle < e);
                for c in &COUNTERS[..n] {
                    let component = match c.on_core {
                        true => CORE_COMPONENT + cpu,
                        false => CACHE_COMPONENT + cpu,
                    };
                    let count = self.rng.jitter(if busy { c.busy } else { c.idle });
                    sample.execute(params![start, end, component, c.id, count.max(0)])?;
                    self.counts.counter_samples += 1;
                }
                start = end;
            }
        }
        Ok(())
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
                cpu_counters: 0,
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

    #[test]
    fn cpu_counters_cover_every_cpu_the_threads_ran_on() {
        for (schema, table) in [
            (SchemaVersion::V3_16, "PERF_EVENT_CPU_RAW_EVENT"),
            (SchemaVersion::V3_24, "PERF_EVENT_SOC_OR_CPU_RAW_EVENT"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("cpu.sqlite");
            let spec = cpu_only(schema);
            write_export(&spec, &path).unwrap();
            let cpu = SynthCpu {
                samples_per_thread: 200,
                cpu_counters: 3,
                ..SynthCpu::default()
            };
            let counts = add_cpu_activity(&path, &spec, &cpu).unwrap();
            assert_eq!(
                count(&path, &format!("SELECT COUNT(*) FROM {table}")) as u64,
                counts.counter_samples
            );
            // Every CPU with a switch has a core and a cache, and three counters per period.
            let cpus = count(&path, "SELECT COUNT(DISTINCT cpu) FROM SCHED_EVENTS");
            assert_eq!(
                count(&path, "SELECT COUNT(*) FROM TARGET_INFO_COMPONENT"),
                1 + 2 * cpus
            );
            assert_eq!(
                count(
                    &path,
                    &format!("SELECT COUNT(DISTINCT componentId) FROM {table}")
                ),
                2 * cpus
            );
            assert_eq!(
                count(
                    &path,
                    &format!("SELECT COUNT(*) FROM {table} WHERE eventId = 6")
                ) * 3,
                counts.counter_samples as i64
            );
            // Periods of 1 ms, back to back on a component.
            assert_eq!(
                count(
                    &path,
                    &format!("SELECT COUNT(*) FROM {table} WHERE end - start != 1000000")
                ),
                0
            );
            // Busy periods count more instructions than idle ones.
            let busy = count(
                &path,
                &format!("SELECT COUNT(*) FROM {table} WHERE eventId = 6 AND count > 1000000"),
            );
            assert!(
                busy > 0 && busy < counts.counter_samples as i64 / 3,
                "{busy}"
            );
        }
        let spec = cpu_only(SchemaVersion::V3_24);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.sqlite");
        write_export(&spec, &path).unwrap();
        let without_samples = SynthCpu {
            cpu_counters: 1,
            ..SynthCpu::default()
        };
        assert!(add_cpu_activity(&path, &spec, &without_samples).is_err());
    }
}
