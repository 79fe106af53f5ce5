//! Per-report translation state shared by the category modules.

use std::collections::BTreeMap;

use nsys_reader::cuda::GpuPlace;
use nsys_reader::ids::{pid_of, tid_of};
use nsys_reader::{Export, ReadError, TableScan};
use paraver_writer::{EventTypeInfo, LocalThread, RunBuilder, StateTiler};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::handoff::{GpuLinks, Handoff, IdleInputs, NcclKernelOp, P2pEndpoint, SyncPoints};
use crate::options::Options;

/// A row of the trace as the report knows it. Its order is the layout's order of
/// a report's threads: by process, then CPU threads by tid, then GPU streams by
/// (device, stream).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ThreadKey {
    pub pid: u32,
    pub kind: ThreadKind,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ThreadKind {
    Cpu {
        tid: u32,
    },
    Stream {
        device: u32,
        stream: u32,
    },
    /// Hardware counters of one GPU, under the process that used it.
    Metrics {
        device: u32,
    },
    /// Counters of one network interface of the node, under a process of the report.
    Nic {
        nic: u32,
    },
    /// Counters and congestion events of one InfiniBand switch, under a process of the report.
    IbSwitch {
        switch: u32,
    },
    /// SoC metrics (Tegra, Grace) of one SoC of the node, under a process of the report.
    SocMetrics {
        soc: u32,
    },
}

impl ThreadKey {
    pub fn cpu(pid: u32, tid: u32) -> Self {
        ThreadKey {
            pid,
            kind: ThreadKind::Cpu { tid },
        }
    }

    pub fn stream(pid: u32, device: u32, stream: u32) -> Self {
        ThreadKey {
            pid,
            kind: ThreadKind::Stream { device, stream },
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self.kind, ThreadKind::Cpu { .. })
    }

    /// The key's order (pid, CPU before GPU, tid or (device, stream)) as one
    /// number, for the writer to sort threads by.
    pub fn order_key(&self) -> u128 {
        let (kind, a, b) = match self.kind {
            ThreadKind::Cpu { tid } => (0u128, tid, 0),
            ThreadKind::Stream { device, stream } => (1, device, stream),
            ThreadKind::Metrics { device } => (2, device, 0),
            ThreadKind::Nic { nic } => (3, nic, 0),
            ThreadKind::IbSwitch { switch } => (4, switch, 0),
            ThreadKind::SocMetrics { soc } => (5, soc, 0),
        };
        (u128::from(self.pid) << 99) | (kind << 96) | (u128::from(a) << 32) | u128::from(b)
    }
}

/// StringIds id → name handle of one event type, so each string is read and
/// transformed once per report.
#[derive(Default)]
pub(crate) struct NameCache {
    handles: FxHashMap<i64, u32>,
}

pub(crate) struct ReportContext<'a> {
    pub export: &'a Export,
    pub options: &'a Options,
    pub run: RunBuilder,
    pub states: StateTiler,
    threads: FxHashMap<ThreadKey, LocalThread>,
    /// (pid, tid) → OS thread name, read when first needed.
    os_thread_names: Option<std::collections::HashMap<(u32, u32), String>>,
    pub thread_keys: Vec<ThreadKey>,
    /// Rows translated (or skipped) per table, for the summary and the tests.
    pub counts: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    /// Event types whose number depends on the data (e.g. one per NVTX domain).
    pub extra_types: Vec<EventTypeInfo>,
    /// Names the application gave its threads through NVTX (win over the OS names).
    pub nvtx_thread_names: FxHashMap<(u32, u32), String>,
    /// pid → rank from the `MPI Rank N` thread names of 2022-era MPI tracing.
    pub nvtx_ranks: FxHashMap<u32, u32>,
    /// Names of device rows the export gives (a NIC's or an IB switch's name).
    pub row_labels: FxHashMap<ThreadKey, String>,
    /// Times every rank shares, for aligning clocks.
    pub sync_points: SyncPoints,
    /// Point-to-point message endpoints, paired across reports later.
    pub p2p: Vec<P2pEndpoint>,
    /// NCCL kernels with the call that launched them, matched across reports later.
    pub nccl_ops: Vec<NcclKernelOp>,
    /// What one category's pass hands another's.
    pub handoff: Handoff,
    /// What the passes hand over for the GPU idle causes, written after every pass.
    pub gpu_idle: IdleInputs,
    /// One more than the highest logical CPU a thread ran on (0: none seen).
    pub cpus_seen: u32,
    /// Rows left out by `--time-limit-start`/`--time-limit-end`.
    pub outside_limits: u64,
    /// With `--ranks`, the processes translated (`None`: every one).
    pub kept_processes: Option<FxHashSet<u32>>,
    /// The cut's read window in this report's own time (see
    /// [`ReportContext::left_out_by_cut`]).
    pub cut: Option<CutWhereRead>,
}

/// A cut applied where rows are read, in one report's own time, and what it
/// must check to give the merge's cut the same trace.
pub(crate) struct CutWhereRead {
    start: i64,
    end: i64,
    /// Per (table, thread): the ends of the intervals open at the last row's
    /// begin, and that begin.
    nesting: FxHashMap<(&'static str, LocalThread), (i64, Vec<i64>)>,
    /// Two intervals of a table on one thread overlap without nesting (or come
    /// out of begin order): leaving out closed ones could change what the
    /// merge sees open at the window's start.
    pub(crate) nesting_broken: bool,
    /// Rows left out before the window and after it.
    pub(crate) before: u64,
    pub(crate) after: u64,
}

impl CutWhereRead {
    /// The window of `options` in the time of a report whose times are put on
    /// the common clock by adding `utc_offset` (none without one: such a report
    /// is read whole).
    fn of(options: &Options, utc_offset: Option<i64>) -> Option<Self> {
        let window = options.read_window?;
        let offset = utc_offset?;
        Some(CutWhereRead {
            start: window.start.map_or(i64::MIN, |s| s.saturating_sub(offset)),
            end: window.end.map_or(i64::MAX, |e| e.saturating_sub(offset)),
            nesting: FxHashMap::default(),
            nesting_broken: false,
            before: 0,
            after: 0,
        })
    }

    /// Follows the intervals of `table` on `thread`, row after row.
    fn follow(&mut self, table: &'static str, thread: LocalThread, begin: i64, end: i64) {
        let (last_begin, open) = self
            .nesting
            .entry((table, thread))
            .or_insert((i64::MIN, Vec::new()));
        if begin < *last_begin {
            self.nesting_broken = true;
        }
        *last_begin = begin;
        while open.last().is_some_and(|&e| e <= begin) {
            open.pop();
        }
        if open.last().is_some_and(|&e| e < end) {
            self.nesting_broken = true;
        }
        open.push(end);
    }

    /// Whether the cut's left-out rows could make the merge see another trace:
    /// the nesting it relies on is broken, or every row of the report was left
    /// out (the report would not be in the trace at all).
    pub(crate) fn unsafe_for(&self, run_is_empty: bool) -> bool {
        (self.nesting_broken && self.before > 0) || (run_is_empty && self.before + self.after > 0)
    }
}

#[cfg(test)]
thread_local! {
    /// The most a report translated on this thread counted beside its run
    /// (tests read it, and reset it to 0 before a translation).
    pub(crate) static HELD_BESIDE_PEAK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl<'a> ReportContext<'a> {
    pub fn new(export: &'a Export, options: &'a Options) -> Self {
        let cut = CutWhereRead::of(options, export.meta().utc_offset());
        let mut run = match &options.spill {
            Some(policy) => RunBuilder::with_spill(policy.clone()),
            None => RunBuilder::new(),
        };
        // What the rows read whole write outside the window is reduced, as the
        // run is built, to what the merge's cut uses of it.
        if let Some(cut) = &cut {
            run.keep_window(cut.start, cut.end);
        }
        ReportContext {
            export,
            options,
            run,
            // State intervals spill too: a quarter of a run's share each.
            states: match &options.spill {
                Some(policy) => StateTiler::with_spill(policy.dir.clone(), policy.chunk_bytes / 4),
                None => StateTiler::new(),
            },
            threads: FxHashMap::default(),
            os_thread_names: None,
            thread_keys: Vec::new(),
            counts: BTreeMap::new(),
            warnings: Vec::new(),
            extra_types: Vec::new(),
            nvtx_thread_names: FxHashMap::default(),
            nvtx_ranks: FxHashMap::default(),
            row_labels: FxHashMap::default(),
            sync_points: SyncPoints::default(),
            p2p: Vec::new(),
            nccl_ops: Vec::new(),
            handoff: Handoff::default(),
            gpu_idle: IdleInputs::default(),
            cpus_seen: 0,
            outside_limits: 0,
            kept_processes: None,
            cut,
        }
    }

    /// With a cut applied where rows are read: whether the interval row of
    /// `table` on `thread` from `start` to `end`, which would be written, lies
    /// wholly outside the window, and is then left out: no records, but its
    /// thread stays (the caller made it), its times count in the run's span, and
    /// the thread's tiling of states is told where it was (see
    /// [`StateTiler::left_out_before`]). Only for tables whose rows are an
    /// interval with values of interval types (nested on their thread) and a
    /// state, whose names the caller resolved already, and that hand nothing to
    /// other passes: what the merge's cut would keep of the row is then nothing.
    pub fn left_out_by_cut(
        &mut self,
        table: &'static str,
        thread: LocalThread,
        start: i64,
        end: i64,
    ) -> bool {
        let Some(cut) = self.cut.as_mut() else {
            return false;
        };
        if thread == paraver_writer::DISCARDED {
            return false;
        }
        let (first, last) = (start.min(end), start.max(end));
        cut.follow(table, thread, first, last);
        // An end at the window's start, or a begin at its end, is kept: the
        // merge decides those.
        let before = last < cut.start;
        let after = first > cut.end;
        if !before && !after {
            return false;
        }
        self.run.left_out(first, last);
        if end > start {
            match before {
                true => self.states.left_out_before(thread, start),
                false => self.states.left_out_after(thread, start),
            }
        }
        match before {
            true => cut.before += 1,
            false => cut.after += 1,
        }
        true
    }

    /// Whether a row from `start` to `end` (the export's time; an instant:
    /// `start == end`) lies within `--time-limit-start`/`--time-limit-end`;
    /// the rows left out are counted.
    pub fn within_limits(&mut self, start: i64, end: i64) -> bool {
        let keep = self.options.time_limits.keeps(start, end);
        self.outside_limits += u64::from(!keep);
        keep
    }

    /// [`Self::within_limits`] for a row that may not have ended (an unclosed
    /// range: kept only without an end limit).
    pub fn within_limits_open(&mut self, start: i64, end: Option<i64>) -> bool {
        match end {
            Some(end) => self.within_limits(start, end),
            None => {
                let keep = self.options.time_limits.keeps_unended(start);
                self.outside_limits += u64::from(!keep);
                keep
            }
        }
    }

    /// Notes that a thread ran on logical CPU `cpu`, so the trace has a row for it.
    pub fn saw_cpu(&mut self, cpu: i64) {
        if let Ok(cpu) = u32::try_from(cpu) {
            self.cpus_seen = self.cpus_seen.max(cpu.saturating_add(1));
        }
    }

    /// Whether the process already owns a thread with events (tables such as
    /// SCHED_EVENTS also list processes that were not profiled).
    pub fn has_process(&self, pid: u32) -> bool {
        self.thread_keys.iter().any(|k| k.pid == pid)
    }

    /// The run's thread for `key` ([`paraver_writer::DISCARDED`] for a thread
    /// of Nsight Systems itself, unless kept, and for a process `--ranks`
    /// leaves out).
    pub fn thread(&mut self, key: ThreadKey) -> LocalThread {
        if let Some(&t) = self.threads.get(&key) {
            return t;
        }
        let left_out = self
            .kept_processes
            .as_ref()
            .is_some_and(|kept| !kept.contains(&key.pid));
        if left_out || key.is_cpu() && !self.options.keep_nsys_threads && self.is_nsys_thread(key) {
            self.threads.insert(key, paraver_writer::DISCARDED);
            return paraver_writer::DISCARDED;
        }
        let t = self.run.add_thread(key.order_key());
        debug_assert_eq!(t as usize, self.thread_keys.len());
        self.thread_keys.push(key);
        self.threads.insert(key, t);
        t
    }

    fn is_nsys_thread(&mut self, key: ThreadKey) -> bool {
        let export = self.export;
        let names = self
            .os_thread_names
            .get_or_insert_with(|| export.thread_names().unwrap_or_default());
        let ThreadKind::Cpu { tid } = key.kind else {
            return false;
        };
        names
            .get(&(key.pid, tid))
            .is_some_and(|n| crate::options::is_nsys_thread(n))
    }

    pub fn cpu_thread(&mut self, global_tid: i64) -> LocalThread {
        self.thread(ThreadKey::cpu(pid_of(global_tid), tid_of(global_tid)))
    }

    /// The row of the GPU stream a GPU operation ran on.
    pub fn stream_thread(&mut self, place: &GpuPlace) -> LocalThread {
        self.thread(ThreadKey::stream(
            pid_of(place.global_pid),
            place.device_id as u32,
            place.stream_id as u32,
        ))
    }

    /// Name handle for the string `string_id` as a value of `ty`, after `transform`.
    pub fn name(
        &mut self,
        ty: u32,
        cache: &mut NameCache,
        string_id: Option<i64>,
        transform: impl Fn(&str) -> String,
    ) -> Result<u32, ReadError> {
        let key = string_id.unwrap_or(i64::MIN);
        if let Some(&h) = cache.handles.get(&key) {
            return Ok(h);
        }
        let text = match string_id {
            Some(id) => self.export.string(id)?,
            None => None,
        };
        let name = match text {
            Some(t) if !t.is_empty() => transform(&t),
            _ => format!("[unknown name {}]", string_id.unwrap_or(-1)),
        };
        let handle = self.run.names.intern(ty, &name);
        cache.handles.insert(key, handle);
        Ok(handle)
    }

    /// Runs a pass that adds launch links, with room for `rows` more reserved up
    /// front (its tables' row estimates; as many GPU operations for the idle
    /// causes), so that what the links will hold counts in the run's share from
    /// the first row on.
    pub fn with_links(
        &mut self,
        rows: u64,
        pass: impl FnOnce(&mut Self, &mut GpuLinks) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let mut links = std::mem::take(&mut self.handoff.links);
        links.reserve(rows);
        // The operations stay in memory if the report has room for them.
        let held = self.held_bytes() + links.bytes();
        self.gpu_idle.reserve_operations(rows, held);
        self.set_held(self.held_bytes() + links.bytes());
        let result = pass(self, &mut links);
        self.handoff.links = links;
        self.count_held();
        result
    }

    /// Counts what the report holds beside its run (what passes hand each other,
    /// message endpoints) in the run's share of the memory limit.
    pub fn count_held(&mut self) {
        self.set_held(self.held_bytes());
    }

    /// [`Self::count_held`], with `beside` bytes that a pass holds outside the
    /// context (what it took from the handoff, what it gathers).
    pub fn count_held_beside(&mut self, beside: usize) {
        self.set_held(self.held_bytes() + beside);
    }

    fn set_held(&mut self, bytes: usize) {
        #[cfg(test)]
        HELD_BESIDE_PEAK.with(|peak| peak.set(peak.get().max(bytes)));
        self.run.set_outside_bytes(bytes);
    }

    pub(crate) fn held_bytes(&self) -> usize {
        self.handoff.bytes()
            + self.gpu_idle.bytes()
            + self.p2p.capacity() * std::mem::size_of::<P2pEndpoint>()
            + self.nccl_ops.capacity() * std::mem::size_of::<NcclKernelOp>()
    }

    pub fn count(&mut self, what: &str, n: u64) {
        *self.counts.entry(what.to_string()).or_default() += n;
    }

    /// Counts a scan of `table`: the rows translated (when there are any) and the
    /// rows skipped, with a warning.
    pub fn note_scan(&mut self, table: &str, scan: TableScan) {
        let translated = scan.kept();
        if translated > 0 {
            self.count(table, translated);
        }
        self.note_skipped(table, scan.skipped);
    }

    /// Records rows skipped for NULLs where values are required.
    pub fn note_skipped(&mut self, table: &str, skipped: u64) {
        if skipped > 0 {
            self.warnings.push(format!(
                "{}: {skipped} rows of {table} skipped (NULL where a value is required)",
                self.export.path().display()
            ));
            self.count(&format!("{table} skipped"), skipped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_follow_thread_key_order() {
        let mut keys = vec![
            ThreadKey::stream(2, 0, 7),
            ThreadKey::cpu(2, 9),
            ThreadKey::cpu(1, 30),
            ThreadKey::stream(1, 1, 3),
            ThreadKey::stream(1, 0, 99),
            ThreadKey::cpu(2, 3),
            ThreadKey {
                pid: 1,
                kind: ThreadKind::Metrics { device: 0 },
            },
            ThreadKey {
                pid: 2,
                kind: ThreadKind::Nic { nic: 1 },
            },
            ThreadKey {
                pid: 1,
                kind: ThreadKind::SocMetrics { soc: 0 },
            },
            ThreadKey {
                pid: 1,
                kind: ThreadKind::IbSwitch { switch: 2 },
            },
            ThreadKey {
                pid: 1,
                kind: ThreadKind::IbSwitch { switch: 0 },
            },
            ThreadKey {
                pid: 2,
                kind: ThreadKind::Nic { nic: 0 },
            },
        ];
        let mut by_number = keys.clone();
        keys.sort();
        by_number.sort_by_key(ThreadKey::order_key);
        assert_eq!(keys, by_number);
    }
}
