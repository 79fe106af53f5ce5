//! Descriptive tables: processes, threads, host, session, GPUs, CUDA contexts and streams.

use anyhow::Result;
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};

use crate::catalog::{HELPER_THREADS, SYSTEM_PROCESSES};
use crate::ddl::create_and_fill;
use crate::ids::{global_pid, global_tid, global_vid, HW_ID, VM_ID};
use crate::layout::ContextLayout;
use crate::strings::StringIds;
use crate::timefmt::iso_seconds;
use crate::{SchemaVersion, SynthProcess, SynthSpec};

/// A profiled process together with its CUDA contexts.
pub(crate) struct ProcessPlan<'a> {
    pub process: &'a SynthProcess,
    pub contexts: Vec<ContextLayout>,
}

/// The command name Linux shows for a thread: base name of the executable, at most 15 bytes.
fn thread_comm(process_name: &str) -> &str {
    let base = process_name.rsplit('/').next().unwrap_or(process_name);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    &base[..end]
}

/// PROCESSES lists the profiled processes plus unrelated ones, as nsys lists the whole machine.
pub(crate) fn write_processes(conn: &Connection, spec: &SynthSpec) -> Result<()> {
    let profiled = spec
        .processes
        .iter()
        .map(|p| (global_pid(p.pid), p.pid, p.name.as_str()));
    let system = system_processes(spec).map(|(pid, name)| (global_pid(pid), pid, name));
    create_and_fill(conn, spec.schema, "PROCESSES", profiled.chain(system))
}

fn system_processes(spec: &SynthSpec) -> impl Iterator<Item = (u32, &'static str)> + '_ {
    SYSTEM_PROCESSES
        .into_iter()
        .filter(|(pid, _)| spec.processes.iter().all(|p| p.pid != *pid))
}

/// ThreadNames: the CUDA threads (named after the process), the helper threads nsys and CUDA
/// start in each profiled process, and the main thread of each system process.
pub(crate) fn write_thread_names(
    conn: &Connection,
    spec: &SynthSpec,
    strings: &mut StringIds,
) -> Result<()> {
    let mut rows = Vec::new();
    for process in &spec.processes {
        let comm = strings.intern(thread_comm(&process.name));
        for i in 0..process.cpu_threads {
            rows.push((comm, 20, global_tid(process.pid, process.pid + i)));
        }
        for (tid, (name, priority)) in helper_thread_ids(process).zip(HELPER_THREADS) {
            rows.push((strings.intern(name), priority, global_tid(process.pid, tid)));
        }
        if spec.device.host_functions > 0 {
            let tid = process.pid + crate::sim::CALLBACK_THREAD_OFFSET;
            rows.push((
                strings.intern("cuda-EvtHandlr"),
                20,
                global_tid(process.pid, tid),
            ));
        }
    }
    for (pid, name) in system_processes(spec) {
        rows.push((strings.intern(name), 20, global_tid(pid, pid)));
    }
    create_and_fill(conn, spec.schema, "ThreadNames", rows)
}

/// Helper threads start after the CUDA threads, leaving a gap as other threads come and go.
pub(crate) fn helper_thread_ids(process: &SynthProcess) -> impl Iterator<Item = u32> {
    let first = process.pid + process.cpu_threads + 10;
    first..first + HELPER_THREADS.len() as u32
}

/// ProcessStreams: the captured stdout and stderr of each profiled process.
pub(crate) fn write_process_streams(
    conn: &Connection,
    spec: &SynthSpec,
    strings: &mut StringIds,
) -> Result<()> {
    let session = spec.seed % 1_000_000 + 1_000_000;
    let mut rows = Vec::new();
    for process in &spec.processes {
        for (stream, content) in [("stdout", "run complete\n"), ("stderr", "")] {
            let file = format!(
                "/tmp/nvidia/nsight_systems/quadd_session_{session}/streams/pid_{}_{stream}.log",
                process.pid
            );
            rows.push((
                global_pid(process.pid),
                strings.intern(&file),
                strings.intern(content),
            ));
        }
    }
    create_and_fill(conn, spec.schema, "ProcessStreams", rows)
}

/// TARGET_INFO_SYSTEM_ENV: the host description; nameEnum values are the exporter's.
pub(crate) fn write_system_env(conn: &Connection, spec: &SynthSpec) -> Result<()> {
    let entries: [(&str, i64, &str); 12] = [
        ("CpuCores", 1, "64"),
        ("CpuSpeedMhz", 2, "2450"),
        ("CpuArchitecture", 3, "x86_64"),
        ("CpuDescription", 13, "AMD EPYC 7763 64-Core Processor"),
        ("NvDriverVersion", 205, "550.54.15"),
        ("HardwarePlatform", 600, "x86_64"),
        ("OsDescription", 605, "Rocky Linux 8.9 (Green Obsidian)"),
        ("CudaDriverVersion", 611, "12040"),
        ("SoftwareReleaseVersion", 618, "4.18.0-513.9.1.el8_9.x86_64"),
        ("Hostname", 619, spec.hostname.as_str()),
        ("HasCudaEvents", 812, "1"),
        ("SupportsMPI", 846, "1"),
    ];
    let rows = entries
        .into_iter()
        .map(|(name, name_enum, value)| (global_vid(), "Local (CLI)", name, name_enum, value));
    create_and_fill(conn, spec.schema, "TARGET_INFO_SYSTEM_ENV", rows)
}

/// TARGET_INFO_SESSION_START_TIME: wall clock of t = 0 as the host's clock (on UTC) has it.
pub(crate) fn write_session_start(conn: &Connection, spec: &SynthSpec) -> Result<()> {
    let epoch = spec.recorded_utc_epoch_ns();
    let text = iso_seconds(epoch);
    let row = (epoch, text.as_str(), text.as_str());
    create_and_fill(conn, spec.schema, "TARGET_INFO_SESSION_START_TIME", [row])
}

/// ANALYSIS_DETAILS: `duration` spans the trace; start/stop are on an unrelated raw clock.
pub(crate) fn write_analysis_details(
    conn: &Connection,
    spec: &SynthSpec,
    duration: i64,
) -> Result<()> {
    let raw_start = 160_000_000_000 + (spec.seed % 1_000_000_000) as i64;
    let row = (global_vid(), duration, raw_start, raw_start + duration);
    create_and_fill(conn, spec.schema, "ANALYSIS_DETAILS", [row])
}

/// A PCI bus location per GPU index, as on an 8-GPU node.
const BUS_LOCATIONS: [&str; 8] = [
    "0000:07:00.0",
    "0000:0f:00.0",
    "0000:47:00.0",
    "0000:4e:00.0",
    "0000:87:00.0",
    "0000:90:00.0",
    "0000:b7:00.0",
    "0000:bd:00.0",
];

/// A stable UUID for GPU `id` of `host`.
fn gpu_uuid(host: &str, id: u32) -> String {
    let mut fnv = fnv::FnvHasher::default();
    std::hash::Hasher::write(&mut fnv, host.as_bytes());
    let hash = std::hash::Hasher::finish(&fnv) ^ u64::from(id);
    let hex = format!("{hash:016x}{:016x}", hash.rotate_left(29) ^ 0x5bd1_e995);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// One TARGET_INFO_GPU row: an A100-SXM4-40GB, with the property values a real export has.
fn gpu_row(host: &str, id: u32) -> Vec<Value> {
    let index = id as usize % BUS_LOCATIONS.len();
    let text = |s: &str| Value::Text(s.to_owned());
    let int = Value::Integer;
    let id = i64::from(id);
    vec![
        int(global_vid()),
        int(id),
        text("NVIDIA A100-SXM4-40GB"),
        text(BUS_LOCATIONS[index]),
        int(1),
        int(41_943_040),
        int(42_409_000_960),
        int(1_555_200_000_000),
        int(1_410_000_000),
        int(108),
        int(id),
        text(&gpu_uuid(host, id as u32)),
        int(0),
        text("GA100"),
        int(id),
        text(""),
        text(""),
        int(161),
        int(0),
        int(65_536),
        int(4),
        int(65_536),
        int(49_152),
        int(166_912),
        int(167_936),
        int(65_536),
        int(32),
        int(5),
        int(64),
        int(32),
        int(1024),
        int(1024),
        int(1024),
        int(64),
        int(2_147_483_647),
        int(65_535),
        int(65_535),
        int(8),
        int(0),
        int(8),
        int(2),
    ]
}

/// TARGET_INFO_GPU: one row per GPU any profiled process uses.
pub(crate) fn write_gpus(conn: &Connection, spec: &SynthSpec) -> Result<()> {
    let mut ids: Vec<u32> = spec
        .processes
        .iter()
        .flat_map(|p| p.devices.iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(());
    }
    let rows = ids
        .into_iter()
        .map(|id| params_from_iter(gpu_row(&spec.hostname, id)));
    create_and_fill(conn, spec.schema, "TARGET_INFO_GPU", rows)
}

/// The CUDA context and stream tables, in the form each version has.
pub(crate) fn write_cuda_layout(
    conn: &Connection,
    version: SchemaVersion,
    plans: &[ProcessPlan<'_>],
) -> Result<()> {
    let contexts: Vec<(u32, &ContextLayout)> = plans
        .iter()
        .flat_map(|plan| plan.contexts.iter().map(|c| (plan.process.pid, c)))
        .collect();
    if contexts.is_empty() {
        return Ok(());
    }
    if version >= SchemaVersion::V3_7 {
        let rows = contexts.iter().map(|&(pid, c)| {
            let device = i64::from(c.device_id);
            (
                c.null_stream(),
                HW_ID,
                VM_ID,
                pid,
                device,
                c.context_id,
                0,
                0,
            )
        });
        create_and_fill(conn, version, "TARGET_INFO_CUDA_CONTEXT_INFO", rows)?;
    } else {
        let rows = contexts.iter().map(|&(pid, c)| {
            let device = i64::from(c.device_id);
            (c.null_stream(), HW_ID, VM_ID, pid, device, c.context_id)
        });
        create_and_fill(conn, version, "TARGET_INFO_CUDA_NULL_STREAM", rows)?;
    }
    if version >= SchemaVersion::V3_24 {
        // Each process sees the GPUs under their own index (no CUDA_VISIBLE_DEVICES remapping).
        let rows = contexts
            .iter()
            .map(|&(pid, c)| (c.device_id, c.device_id, pid));
        create_and_fill(conn, version, "TARGET_INFO_CUDA_DEVICE", rows)?;
    }
    let streams = contexts.iter().flat_map(|&(pid, c)| {
        c.all_streams().map(move |(stream, priority, flag)| {
            (stream, HW_ID, VM_ID, pid, c.context_id, priority, flag)
        })
    });
    create_and_fill(conn, version, "TARGET_INFO_CUDA_STREAM", streams)
}
