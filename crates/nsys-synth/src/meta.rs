//! Export and capture metadata, and the ENUM_* tables.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;

use crate::ddl::{create_and_fill, create_statement, create_table};
use crate::timefmt::iso_seconds;
use crate::{SchemaVersion, SynthSpec};

/// The export took a few seconds after the capture ended.
const EXPORT_DELAY_NS: i64 = 4_000_000_000;

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// The export's own description: product, schema, when, where and with which options.
fn export_entries(spec: &SynthSpec, path: &Path, duration: i64) -> Vec<(String, String)> {
    let version = spec.schema;
    let mut schema_parts = version.schema_version().split('.');
    let mut part = || schema_parts.next().unwrap_or_default().to_owned();
    let utc = iso_seconds(spec.recorded_utc_epoch_ns() + duration + EXPORT_DELAY_NS);
    let report = path.with_extension("nsys-rep");
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let files = [
        ("INPUT_FILE", file_name(&report)),
        ("OUTPUT_FILE", file_name(path)),
        ("INPUT_PATH", report.display().to_string()),
        ("OUTPUT_PATH", path.display().to_string()),
        ("INPUT_PATH_ABS", absolute(&report).display().to_string()),
        ("OUTPUT_PATH_ABS", absolute(path).display().to_string()),
    ];
    let mut entries: Vec<(String, String)> = [
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems".to_owned()),
        (
            "EXPORT_PRODUCT_VERSION",
            version.product_version().to_owned(),
        ),
        ("EXPORT_PRODUCT_DATE", version.product_date().to_owned()),
        ("EXPORT_SCHEMA_VERSION", version.schema_version().to_owned()),
        ("EXPORT_SCHEMA_VERSION_MAJOR", part()),
        ("EXPORT_SCHEMA_VERSION_MINOR", part()),
        ("EXPORT_SCHEMA_VERSION_MICRO", part()),
        (
            "EXPORT_SCHEMA_VERSION_CKSUM",
            version.schema_checksum().to_owned(),
        ),
        ("EXPORT_PLATFORM", "linux-desktop".to_owned()),
        ("EXPORT_ARCH", "x64".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut push = |key: &str, value: &str| entries.push((key.to_owned(), value.to_owned()));
    // The exporter really spells OUTPUT as OUTUPT up to 3.7.
    let spell = |key: &str| {
        if version.spells_output_correctly() {
            key.to_owned()
        } else {
            key.replace("OUTPUT", "OUTUPT")
        }
    };
    if version.has_capture_metadata() {
        push("EXPORT_TIME_UTC", &utc);
        push("EXPORT_TIME_LOCAL", &format!("{utc} +0000 UTC"));
        push("EXPORT_HOST", &spec.hostname);
        push("EXPORT_USER", "synth");
        for (key, value) in &files {
            push(&spell(&format!("EXPORT_PARAM_{key}")), value);
        }
        for (key, value) in [
            ("EXPORT_PARAM_OVERWRITE", "true"),
            ("EXPORT_PARAM_APPEND", "false"),
            ("EXPORT_PARAM_LAZY", "true"),
            ("EXPORT_PARAM_TIME_NORMALIZE", "false"),
            ("EXPORT_PARAM_TIME_SHIFT", "0"),
            ("EXPORT_PARAM_TABLES_TO_EXPORT", ""),
            ("EXPORT_PARAM_TIMES_TO_EXPORT", ""),
            ("EXPORT_CONFIG_TIME_SHIFT", "0"),
            ("EXPORT_TIME", "0.02 sec"),
        ] {
            push(key, value);
        }
    } else {
        push("EXPORT_TIME", "0.04");
        push("EXPORT_TIME_UTC", &utc);
        push("EXPORT_TIME_LOCAL", &utc);
        push("EXPORT_HOST", &spec.hostname);
        push("EXPORT_USER", "synth");
        for (key, value) in &files {
            push(&spell(&format!("EXPORT_{key}")), value);
        }
        push("EXPORT_OVERWRITE", "true");
        push("EXPORT_LAZY", "true");
    }
    entries
}

/// A stable session UUID derived from the seed.
fn session_uuid(seed: u64) -> String {
    let a = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let b = a.rotate_left(31) ^ 0xD6E8_FEB8_6659_FD93;
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFF,
        b >> 52,
        b & 0xFFFF_FFFF_FFFF
    )
}

/// Where the launched command ran.
const WORKING_DIR: &str = "/home/synth/run";

/// How the capture was configured, including the launched command's environment.
fn capture_entries(spec: &SynthSpec, duration: i64) -> Vec<(String, String)> {
    let command = spec.processes.first().map_or("", |p| p.name.as_str());
    let nvtx_trace = if spec.mpi.is_some() { "true" } else { "false" };
    let mut entries: Vec<(String, String)> = [
        ("DEVICE_ID", "Local (CLI)"),
        ("CAPTURE_EVENT_TYPE", "Cuda"),
        ("RATE_HZ", "0"),
        ("START_TRIGGER", "Immediate"),
        ("STOP_TRIGGER", "Delayed"),
        ("DEVICE_TYPE", "Unix"),
        ("DEVICE_DISPLAY_NAME", &spec.hostname),
        ("PROCESS_0:HOW_TO_ATTACH", "LaunchAnother"),
        ("PROCESS_0:LAUNCH_AS_ROOT", "false"),
        ("PROCESS_0:COMMAND", command),
        ("PROCESS_0:WORKING_DIR", WORKING_DIR),
        ("PROCESS_0:PID", "0"),
        ("PROCESS_0:USER_NAME", ""),
        // nsys turns NVTX tracing on with MPI tracing.
        ("PROCESS_0:COLLECT_NVTX_TRACE", nvtx_trace),
        ("PROCESS_0:COLLECT_CUDA_TRACE", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    // nsys records the whole environment; PWD is in every real one.
    let pwd = ("PWD".to_owned(), WORKING_DIR.to_owned());
    let has_pwd = spec.env.iter().any(|(name, _)| name == "PWD");
    let env = spec.env.iter().chain((!has_pwd).then_some(&pwd));
    entries.extend(env.map(|(name, value)| {
        (
            "PROCESS_0:ENVIRONMENT_VARIABLE".to_owned(),
            format!("{name}=\"{value}\""),
        )
    }));
    let run_ms = (duration / 1_000_000).to_string();
    let graph_mode = match (spec.device.graph_launches, spec.device.graph_mode) {
        (1.., crate::SynthGraphMode::Node) => "Node",
        _ => "Graph",
    };
    let uuid = session_uuid(spec.seed);
    entries.extend(
        [
            ("PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE", graph_mode),
            ("PROFILING_SESSION_ID", ""),
            ("PROFILING_SESSION_UUID", &uuid),
            ("RUN_DURATION_MS", &run_ms),
            ("INCLUDE_CHILDREN", "true"),
            ("SAMPLE_ALL_TASKS", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    entries
}

/// `EXPORT_META_DATA` up to 3.1; `META_DATA_EXPORT` and `META_DATA_CAPTURE` from 3.4. Older
/// versions have no place for the environment, so it is not recorded there.
pub(crate) fn write_metadata(
    conn: &Connection,
    spec: &SynthSpec,
    path: &Path,
    duration: i64,
) -> Result<()> {
    let export = export_entries(spec, path, duration);
    if spec.schema.has_capture_metadata() {
        create_and_fill(conn, spec.schema, "META_DATA_EXPORT", export)?;
        create_and_fill(
            conn,
            spec.schema,
            "META_DATA_CAPTURE",
            capture_entries(spec, duration),
        )
    } else {
        create_and_fill(conn, spec.schema, "EXPORT_META_DATA", export)
    }
}

/// Rows of the 36 most useful ENUM_* tables as schema 3.24.0 writes them (see the file header).
const ENUM_SQL: &str = include_str!("../schema/enum-values.sql");

/// Names and labels that older exports spell differently, and their `Undefined` unwind method
/// numbered 1000 instead of 255.
const PRE_3_17_ENUM_FIXUPS: &str = include_str!("../schema/enum-fixups-pre-3.17.sql");

/// Enum ids are append-only: older versions stop earlier.
fn enum_id_limits(version: SchemaVersion) -> &'static str {
    match version {
        SchemaVersion::V2_9 | SchemaVersion::V3_24 => "",
        SchemaVersion::V3_0 => {
            "DELETE FROM ENUM_NSYS_EVENT_TYPE WHERE id >= 134;
             DELETE FROM ENUM_NSYS_EVENT_CLASS WHERE id >= 98;"
        }
        SchemaVersion::V3_7 => {
            "DELETE FROM ENUM_NSYS_EVENT_TYPE WHERE id >= 144;
             DELETE FROM ENUM_NSYS_EVENT_CLASS WHERE id >= 98;"
        }
        SchemaVersion::V3_16 => {
            "DELETE FROM ENUM_NSYS_EVENT_TYPE WHERE id >= 147;
             DELETE FROM ENUM_NSYS_EVENT_CLASS WHERE id BETWEEN 98 AND 106 OR id >= 111;
             DELETE FROM ENUM_SCHEDULING_THREAD_BLOCK WHERE id >= 53;"
        }
    }
}

/// The name `version` gives an enum table: 3.0 misspells the kernel launch type one.
fn enum_table_name(version: SchemaVersion, table: &str) -> &str {
    match (version, table) {
        (SchemaVersion::V3_0, "ENUM_CUDA_KERNEL_LAUNCH_TYPE") => "ENUM_CUDA_KRENEL_LAUNCH_TYPE",
        _ => table,
    }
}

fn write_unwind_methods(conn: &Connection, version: SchemaVersion) -> Result<()> {
    let methods = [
        "Unknown",
        "FramePointer",
        "UnwindTable",
        "LR_FramePointer",
        "LR_UnwindTable",
        "KernelContext",
        "DWARF_EH",
        "DWARF_DF",
        "LBR",
    ];
    let rows = methods
        .into_iter()
        .zip(0..)
        .map(|(name, number)| (number, name));
    create_and_fill(conn, version, "UnwindMethodType", rows)
}

/// 2.9/3.0's `UnwindMethodType`, and from 3.0 the ENUM_* tables that the version's real exports
/// contain (those whose DDL is in its schema file).
pub(crate) fn write_enums(conn: &Connection, version: SchemaVersion) -> Result<()> {
    if version <= SchemaVersion::V3_0 {
        write_unwind_methods(conn, version)?;
    }
    if version == SchemaVersion::V2_9 {
        return Ok(());
    }
    for statement in ENUM_SQL.split(";\n") {
        let Some((_, insert)) = statement.split_once("INSERT INTO ") else {
            continue;
        };
        let table = insert.split_whitespace().next().unwrap_or_default();
        let name = enum_table_name(version, table);
        if create_statement(version, name).is_some() {
            create_table(conn, version, name)?;
            conn.execute_batch(&format!("INSERT INTO {name}{}", &insert[table.len()..]))?;
        }
    }
    if version < SchemaVersion::V3_24 {
        conn.execute_batch(PRE_3_17_ENUM_FIXUPS)?;
    }
    conn.execute_batch(enum_id_limits(version))?;
    Ok(())
}
