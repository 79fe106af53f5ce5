//! CUDA runtime and driver API calls on CPU threads: the call as an event interval,
//! the thread state it implies, launch arrows to the GPU work, and the
//! synchronizations the calls performed.

use nsys_reader::cuda::{ApiCall, RUNTIME, SYNCHRONIZATION};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;
use paraver_writer::{Comm, EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::cuda_sync::{CUDA_SYNC, SYNC};
use crate::handoff::{GpuLinks, NcclKernelOp, NcclRanges, SyncCall, SyncCalls};
use crate::launch_queues::{LaunchQueues, LAUNCH_LATENCY, LAUNCH_QUEUE_DEPTH};
use crate::types::{interval, level, state};
use crate::view::bundled_view;

pub use nsys2prv_events::{CORRELATION_ID, CUDA_API};

pub const API: Category = Category::named("cuda-api");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: API,
    aliases: &["api"],
    bsc_names: &["cuda_api_trace"],
    groups: &["cuda"],
    tables: &["CUPTI_ACTIVITY_KIND_RUNTIME"],
    table_prefixes: &[],
    bytes_per_row: 140,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[
        state::SYNCHRONIZATION,
        state::MEMORY_TRANSFER,
        state::CONFIGURING,
        state::ALLOCATING,
        state::FREEING,
        state::FORK_JOIN,
        state::OTHERS,
    ],
    views: &[
        bundled_view!(
            "views/cuda_api_calls.cfg",
            "Which CUDA runtime and driver calls does each CPU thread make, and when?",
        ),
        bundled_view!(
            "basics/correlation_id.cfg",
            "Which call launched each GPU operation (the correlation id they share)?",
        ),
        bundled_view!(
            "analysis/cuda_api_profile.cfg",
            "How much time does each CPU thread spend in each CUDA call?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::HostCalls,
        run: pass,
        also_for: &[SYNC],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![
        interval(CUDA_API, "CUDA library call", ValueLabels::Names),
        interval(CORRELATION_ID, "CUDA correlation ID", ValueLabels::Numeric),
        level(
            LAUNCH_QUEUE_DEPTH,
            "CUDA launch queue depth (kernels launched, not started)",
            ValueLabels::Numeric,
        ),
        interval(
            LAUNCH_LATENCY,
            "CUDA kernel launch latency (ns)",
            ValueLabels::Numeric,
        ),
    ]
}

/// What the API side emits: calls (`cuda-api`), synchronizations (`sync`), or both.
pub(crate) struct ApiOutputs {
    pub calls: bool,
    pub syncs: bool,
}

/// API calls with their launch arrows (the GPU side has run), and the
/// synchronizations they made (`sync`).
fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let outputs = ApiOutputs {
        calls: ctx.options.wants(API),
        syncs: ctx.options.wants(SYNC),
    };
    let mut handoff = std::mem::take(&mut ctx.handoff);
    handoff.links.sort();
    let handoff_bytes = handoff.bytes();
    let links = std::mem::take(&mut handoff.links);
    let result = translate(
        ctx,
        links,
        &handoff.syncs,
        &handoff.nccl_ranges,
        handoff_bytes,
        outputs,
    );
    // No pass after this one reads them: the run gets their share back.
    drop(handoff);
    ctx.count_held();
    result
}

/// Name handle and state of an API function, resolved once per name id.
#[derive(Clone, Copy)]
struct ApiName {
    handle: u32,
    state: u32,
    /// Whether `--filter-cuda-calls-include-name`/`-exclude-name` keep it.
    kept: bool,
}

fn translate(
    ctx: &mut ReportContext,
    links: GpuLinks,
    syncs: &SyncCalls,
    nccl: &NcclRanges,
    handoff_bytes: usize,
    outputs: ApiOutputs,
) -> Result<(), ReadError> {
    let export = ctx.export;
    let mut names: FxHashMap<i64, ApiName> = FxHashMap::default();
    // Counted as they happen, never as differences (issue 27).
    let (mut arrows, mut synced, mut filtered, mut emitted) = (0u64, 0u64, 0u64, 0u64);
    let mut launched = links.finder();
    let mut matcher = syncs.matcher();
    // What the pass gathers per launch (the idle causes' arrows, the launch
    // queues' call begins) is reserved from the links up front (the arrows on
    // disk if the report has no room for them beside the rest) and counted in
    // the run's share with what the passes handed over, so the run spills
    // sooner rather than the report growing past the limit.
    let mut queues = if outputs.calls {
        LaunchQueues::for_links(&links)
    } else {
        LaunchQueues::default()
    };
    let held = ctx.held_bytes() + handoff_bytes + queues.bytes();
    ctx.gpu_idle.reserve_arrows(links.len(), held);
    ctx.count_held_beside(handoff_bytes + queues.bytes());
    let sync_pair = |s: &SyncCall| [EventPair::name(CUDA_SYNC, s.kind)];
    let scan = export.api_calls(|call| {
        let thread = ctx.cpu_thread(call.global_tid);
        let pid = pid_of(call.global_tid);
        let held = match call.correlation_id {
            Some(c) if syncs.len() > 0 => matcher.take(pid, c, call.start, call.end, thread),
            _ => Vec::new(),
        };
        if outputs.syncs {
            for s in &held {
                // Inside the call, so ahead of its begin: it waits in the run
                // until the producer gets there.
                ctx.run
                    .interval_ahead(thread, s.start, s.end, &sync_pair(s));
                synced += 1;
            }
        }
        if !outputs.calls {
            return Ok(());
        }
        let name = api_name(ctx, &mut names, call.name_id)?;
        let (first_link, launches) = match call.correlation_id {
            Some(c) => launched.take_placed(pid, c),
            None => (0, &[][..]),
        };
        // A call left out by BSC's filters takes its launch arrows with it.
        let by_filter = name.kept && ctx.options.api_calls.keeps_duration(call.start, call.end);
        let kept = by_filter && ctx.within_limits(call.start, call.end);
        filtered += u64::from(!by_filter);
        // The arrows of the whole trace, a cut's or not, for the idle causes.
        if kept {
            for link in launches {
                ctx.gpu_idle
                    .arrow(thread, link.thread, call.start, link.start);
            }
        }
        // The arrows first: they sort before the call's begin at its time, so
        // the run gets its records in order (pass order only matters between
        // records of one thread, time and kind).
        // A call wholly outside a cut applied where rows are read makes no
        // records (its arrows would not be kept either: their send is outside);
        // what it hands the GPU side (NCCL payloads on the kernel's stream,
        // below) is not its to leave out.
        let kept = kept && !ctx.left_out_by_cut(RUNTIME, thread, call.start, call.end);
        for link in launches.iter().filter(|_| kept) {
            ctx.run.comm(
                thread,
                call.start,
                Comm {
                    send_physical: call.start,
                    receiver: link.thread,
                    recv_logical: link.start,
                    recv_physical: link.start,
                    size: link.bytes(),
                    tag: link.tag(),
                },
            );
            arrows += 1;
        }
        if kept {
            emit_call(ctx, thread, call, name, !held.is_empty());
            emitted += 1;
        }
        for (place, link) in (first_link..).zip(launches) {
            if link.kernel_end().is_some() {
                queues.add(place, call.start);
            }
            if let Some(end) = link.nccl_end() {
                // The NCCL call this launch was made in describes the kernel.
                if let Some(range) = nccl.enclosing(thread, call.start) {
                    ctx.run
                        .interval_ahead(link.thread, link.start, end, &range.payload);
                    if let Some(described) = &range.call {
                        ctx.nccl_ops.push(NcclKernelOp {
                            pid,
                            stream: link.thread,
                            start: link.start,
                            end,
                            call: described.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    })?;
    let repeats = launched.repeats();
    if outputs.calls {
        // The links go with the queues' write, made into its launches.
        queues.write(ctx, links);
        ctx.count(RUNTIME, emitted);
        if ctx.options.api_calls.is_set() {
            ctx.count(
                "CUDA API calls filtered out (--filter-cuda-calls-*)",
                filtered,
            );
        }
        ctx.count("launch arrows", arrows);
        ctx.note_skipped(RUNTIME, scan.skipped);
        if repeats > 0 {
            ctx.count("API calls repeating a correlation id", repeats);
        }
    }
    // Syncs no call held go to the nearest call with their id, behind what the
    // scan pushed on its thread (the run sorts them in).
    let (nearest, orphans) = matcher.leftovers();
    if outputs.syncs {
        for &(s, thread) in &nearest {
            ctx.run
                .interval_ahead(thread, s.start, s.end, &sync_pair(s));
        }
        synced += nearest.len() as u64;
        ctx.count(SYNCHRONIZATION, synced);
        if orphans > 0 {
            ctx.warnings.push(format!(
                "{}: {orphans} synchronizations have no API call with their correlation id and were left out",
                export.path().display()
            ));
        }
    }
    Ok(())
}

fn emit_call(
    ctx: &mut ReportContext,
    thread: LocalThread,
    call: &ApiCall,
    name: ApiName,
    synchronizes: bool,
) {
    let pairs = [
        EventPair::name(CUDA_API, name.handle),
        EventPair::raw(CORRELATION_ID, call.correlation_id.unwrap_or(0)),
    ];
    let n = if call.correlation_id.is_some() { 2 } else { 1 };
    ctx.run.interval(thread, call.start, call.end, &pairs[..n]);
    let state = if synchronizes {
        state::SYNCHRONIZATION
    } else {
        name.state
    };
    ctx.states.add(thread, call.start, call.end, state);
}

fn api_name(
    ctx: &mut ReportContext,
    cache: &mut FxHashMap<i64, ApiName>,
    name_id: i64,
) -> Result<ApiName, ReadError> {
    if let Some(&n) = cache.get(&name_id) {
        return Ok(n);
    }
    let raw = ctx
        .export
        .string(name_id)?
        .unwrap_or_else(|| format!("[unknown API call {name_id}]"));
    let name = strip_version_suffix(&raw);
    let kept = ctx.options.api_calls.keeps_name(&raw, name);
    let api = ApiName {
        // A name the filters leave out is no value of the trace's.
        handle: if kept {
            ctx.run.names.intern(CUDA_API, name)
        } else {
            0
        },
        state: state_of_call(name),
        kept,
    };
    cache.insert(name_id, api);
    Ok(api)
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`; `cuMemAlloc_v2` stays (NVIDIA's
/// own rule: drop 6 characters when they start with `_v`).
pub fn strip_version_suffix(name: &str) -> &str {
    let bytes = name.as_bytes();
    if bytes.len() > 6
        && &bytes[bytes.len() - 6..bytes.len() - 4] == b"_v"
        && name.is_char_boundary(bytes.len() - 6)
    {
        &name[..bytes.len() - 6]
    } else {
        name
    }
}

/// Extrae's state for a CUDA call, by what the call does.
pub fn state_of_call(name: &str) -> u32 {
    let n = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    if has(&[
        "synchronize",
        "streamwaitevent",
        "streamquery",
        "eventquery",
    ]) {
        state::SYNCHRONIZATION
    } else if has(&["memcpy", "memset", "memprefetch"]) {
        state::MEMORY_TRANSFER
    } else if has(&["launch", "configurecall", "setupargument"]) {
        state::CONFIGURING
    } else if has(&[
        "malloc",
        "memalloc",
        "hostalloc",
        "hostregister",
        "mempoolcreate",
    ]) {
        state::ALLOCATING
    } else if has(&["free", "hostunregister"]) {
        state::FREEING
    } else if has(&["devicereset", "threadexit"]) {
        state::FORK_JOIN
    } else {
        state::OTHERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a report holds per GPU operation beside its run, at most, while it is
    /// translated with a spill directory (issue 28): the launch links (32 bytes)
    /// and the queues' call begins (8) through the API calls, or the idle
    /// causes' operations and arrows read back (24 + 24) once the links are
    /// gone. Those two spill as they come rather than being held beside the
    /// links; each table was reserved whole up front, so this is what the run's
    /// share counted. It was 104 bytes per kernel (links, queues, operations and
    /// arrows, 32 + 24 + 24 + 24), which did not spill.
    #[test]
    fn the_report_holds_at_most_48_bytes_per_kernel_beside_its_run() {
        use crate::context::HELD_BESIDE_PEAK;
        use paraver_writer::{MemoryBudget, SpillPolicy};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kernels.sqlite");
        let mut spec = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_24);
        spec.processes[0].kernels = 50_000;
        let counts = nsys_synth::write_export(&spec, &path).unwrap();
        let operations = (counts.kernels + counts.memcpys + counts.memsets) as usize;
        let options = crate::Options {
            spill: Some(SpillPolicy {
                dir: dir.path().to_path_buf(),
                chunk_bytes: 256 << 10,
                budget: MemoryBudget::new(1 << 20),
            }),
            ..crate::Options::default()
        };
        HELD_BESIDE_PEAK.with(|peak| peak.set(0));
        let report = crate::translate_report(&path, &path, &options).unwrap();
        assert_eq!(report.counts["kernel launch latencies"], counts.kernels);
        assert!(report.counts["GPU idle intervals"] > 0);
        let peak = HELD_BESIDE_PEAK.with(|peak| peak.get());
        // The spilled tables' write buffers (256 KiB each) and what does not
        // grow with the operations (syncs, NCCL ranges) beside.
        let fixed = 2 * (256 << 10) + (64 << 10);
        assert!(
            peak <= 48 * operations + fixed,
            "{peak} bytes held beside the run for {operations} GPU operations: {} per operation",
            peak.saturating_sub(fixed) / operations
        );
    }

    /// A report whose share has room for the idle causes' operations and
    /// arrows beside its other tables holds them, counted in the run's share,
    /// and counts what it counts without a limit (issue 28: they spilled past
    /// an eighth of the share, written and read back at every limit; here
    /// they take more than an eighth of a 3 MiB share, and the links, queues
    /// and these tables fit in its seven eighths).
    #[test]
    fn the_report_holds_its_idle_tables_when_its_share_has_room() {
        use crate::context::HELD_BESIDE_PEAK;
        use paraver_writer::{MemoryBudget, SpillPolicy};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kernels.sqlite");
        let mut spec = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_24);
        spec.processes[0].kernels = 20_000;
        let counts = nsys_synth::write_export(&spec, &path).unwrap();
        let operations = (counts.kernels + counts.memcpys + counts.memsets) as usize;
        let options = crate::Options {
            spill: Some(SpillPolicy {
                dir: dir.path().to_path_buf(),
                chunk_bytes: 3 << 20,
                budget: MemoryBudget::new(6 << 20),
            }),
            ..crate::Options::default()
        };
        HELD_BESIDE_PEAK.with(|peak| peak.set(0));
        let held = crate::translate_report(&path, &path, &options).unwrap();
        let peak = HELD_BESIDE_PEAK.with(|peak| peak.get());
        // The links (32 bytes), operations and arrows (24 + 24) together.
        assert!(
            peak >= 80 * operations,
            "{peak} bytes held beside the run for {operations} GPU operations"
        );
        assert!(48 * operations > (3 << 20) / 8);
        let unlimited = crate::Options::default();
        let free = crate::translate_report(&path, &path, &unlimited).unwrap();
        assert!(held.counts["GPU idle intervals"] > 0);
        // All but the run's spills.
        let mut counts = held.counts.clone();
        counts.retain(|what, _| !what.starts_with("spilled "));
        assert_eq!(counts, free.counts);
    }

    #[test]
    fn version_suffixes_follow_nvidias_rule() {
        assert_eq!(
            strip_version_suffix("cudaLaunchKernel_v7000"),
            "cudaLaunchKernel"
        );
        assert_eq!(strip_version_suffix("cuMemAlloc_v2"), "cuMemAlloc_v2");
        assert_eq!(strip_version_suffix("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(strip_version_suffix("_v1234"), "_v1234");
    }

    #[test]
    fn calls_get_extrae_states() {
        assert_eq!(state_of_call("cudaMemcpyAsync"), state::MEMORY_TRANSFER);
        assert_eq!(
            state_of_call("cudaStreamSynchronize"),
            state::SYNCHRONIZATION
        );
        assert_eq!(state_of_call("cuLaunchKernel"), state::CONFIGURING);
        assert_eq!(state_of_call("cuMemAlloc_v2"), state::ALLOCATING);
        assert_eq!(state_of_call("cudaFreeHost"), state::FREEING);
        assert_eq!(state_of_call("cudaGetDevice"), state::OTHERS);
    }
}
