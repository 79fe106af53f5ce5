//! Report-level metadata: versions, host, session start, clock parameters, environment.

use crate::{Export, ReadError};

/// `TARGET_INFO_SYSTEM_ENV.nameEnum` of the host name, stable across versions.
const HOSTNAME_ENUM: i64 = 619;
const CPU_CORES_ENUM: i64 = 1;
/// More CPUs than any machine has: a damaged value (each CPU is a line of the `.row`).
const MAX_CPU_CORES: u32 = 1 << 16;
/// Session starts and time shifts beyond ±2^62 ns (year 2116) are damaged values;
/// within it, their difference cannot overflow.
const MAX_CLOCK_NS: u64 = 1 << 62;
/// The environment nsys itself ran in, `;`-separated `NAME=value` pairs.
const DEVICE_ENVIRONMENT_ENUM: i64 = 610;

/// The newest export schema (major, minor) this reader was checked against: 3.25,
/// written by nsys 2026.2. Newer exports are read as far as their tables and columns
/// are recognisable, with a warning.
pub const NEWEST_KNOWN_SCHEMA: (u32, u32) = (3, 25);

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Metadata {
    pub product_version: Option<String>,
    pub schema_version: Option<String>,
    pub hostname: Option<String>,
    pub cpu_cores: Option<u32>,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: wall clock of session time 0.
    pub session_start_utc_ns: Option<i64>,
    /// Exported with `--ts-normalize`: timestamps are already UTC epoch ns.
    pub time_normalized: bool,
    /// Exported with `--ts-shift`: this offset was added to every timestamp.
    pub time_shift: i64,
    /// Environment variables recorded for the profiled process (`NAME`, `value`),
    /// then those of the nsys launcher (`DeviceEnvironment`).
    pub environment: Vec<(String, String)>,
    /// CPU sampling and context switches were recorded for the whole machine
    /// (`--sample=system-wide`; 2023.3+ say so), not just the launched process tree.
    pub system_wide_cpu_data: bool,
    /// `TARGET_INFO_SESSION_START_TIME.localTime`: the session start in the target's
    /// local time, as nsys wrote it (`2025-03-01T10:00:00`).
    pub session_start_local: Option<String>,
    /// The command nsys launched (`PROCESS_n:COMMAND` of the lowest n that has one)
    /// followed by its arguments (`PROCESS_n:ARGUMENT_i`, by i); empty when not recorded.
    pub launch_command: Vec<String>,
    /// `TARGET_INFO_GPU` ids and names.
    pub gpu_names: Vec<(i64, String)>,
}

impl Metadata {
    pub(crate) fn read(export: &Export) -> Result<Metadata, ReadError> {
        let mut meta = Metadata::default();
        let mut launcher_env = Vec::new();
        for table in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
            export.scan(table, &["name", "value"], |row| {
                let (Some(name), value) = (row.text(0), row.text(1)) else {
                    return Ok(());
                };
                meta.apply_export_key(&name, value);
                Ok(())
            })?;
        }
        export.scan(
            "TARGET_INFO_SYSTEM_ENV",
            &["name", "nameEnum", "value"],
            |row| {
                let (name, name_enum, value) = (row.text(0), row.int(1), row.text(2));
                let is =
                    |label: &str, id: i64| name.as_deref() == Some(label) || name_enum == Some(id);
                if is("Hostname", HOSTNAME_ENUM) && meta.hostname.is_none() {
                    meta.hostname = value.filter(|v| !v.trim().is_empty());
                } else if is("CpuCores", CPU_CORES_ENUM) && meta.cpu_cores.is_none() {
                    meta.cpu_cores = value
                        .and_then(|v| v.trim().parse().ok())
                        .filter(|n| (1..=MAX_CPU_CORES).contains(n));
                } else if is("DeviceEnvironment", DEVICE_ENVIRONMENT_ENUM) {
                    launcher_env.extend(
                        value
                            .iter()
                            .flat_map(|v| v.split(';'))
                            .filter_map(parse_env_assignment),
                    );
                }
                Ok(())
            },
        )?;
        export.scan(
            "TARGET_INFO_SESSION_START_TIME",
            &["utcEpochNs", "localTime"],
            |row| {
                let plausible = row.int(0).filter(|t| t.unsigned_abs() <= MAX_CLOCK_NS);
                meta.session_start_utc_ns = meta.session_start_utc_ns.or(plausible);
                if meta.session_start_local.is_none() {
                    meta.session_start_local = row.text(1).filter(|t| !t.trim().is_empty());
                }
                Ok(())
            },
        )?;
        export.scan("TARGET_INFO_GPU", &["id", "name"], |row| {
            if let (Some(id), Some(name)) = (row.int(0), row.text(1)) {
                meta.gpu_names.push((id, name));
            }
            Ok(())
        })?;
        let mut command = LaunchCommand::default();
        export.scan("META_DATA_CAPTURE", &["name", "value"], |row| {
            if let (Some(name), Some(value)) = (row.text(0), row.text(1)) {
                command.note(&name, &value);
                if name.ends_with("ENVIRONMENT_VARIABLE") {
                    if let Some(pair) = parse_env_assignment(&value) {
                        meta.environment.push(pair);
                    }
                } else if name == "LINUX_PERF_OPTIONS:COLLECTION_MODE" {
                    meta.system_wide_cpu_data = value.trim().eq_ignore_ascii_case("SystemWide");
                }
            }
            Ok(())
        })?;
        meta.environment.extend(launcher_env);
        meta.launch_command = command.words();
        Ok(meta)
    }

    fn apply_export_key(&mut self, name: &str, value: Option<String>) {
        match name {
            "EXPORT_PRODUCT_VERSION" => self.product_version = value,
            "EXPORT_SCHEMA_VERSION" => self.schema_version = value,
            "EXPORT_PARAM_TIME_NORMALIZE" => {
                self.time_normalized = value.is_some_and(|v| v.eq_ignore_ascii_case("true"))
            }
            "EXPORT_PARAM_TIME_SHIFT" | "EXPORT_CONFIG_TIME_SHIFT" => {
                if let Some(shift) = value.and_then(|v| v.trim().parse::<i64>().ok()) {
                    if shift != 0 && shift.unsigned_abs() <= MAX_CLOCK_NS {
                        self.time_shift = shift;
                    }
                }
            }
            _ => {}
        }
    }

    /// What to add to an event timestamp of this report to get UTC epoch ns
    /// (`None` when the report does not say when its session started).
    pub fn utc_offset(&self) -> Option<i64> {
        if self.time_normalized {
            self.time_shift.checked_neg()
        } else {
            self.session_start_utc_ns
                .and_then(|s| s.checked_sub(self.time_shift))
        }
    }

    /// `EXPORT_SCHEMA_VERSION` when it is newer than [`NEWEST_KNOWN_SCHEMA`].
    pub fn newer_schema(&self) -> Option<&str> {
        let version = self.schema_version.as_deref()?.trim();
        let mut parts = version.split('.').map(str::parse::<u32>);
        let major = parts.next()?.ok()?;
        let minor = parts.next().and_then(Result::ok).unwrap_or(0);
        ((major, minor) > NEWEST_KNOWN_SCHEMA).then_some(version)
    }

    /// Value of an environment variable recorded for the process.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.environment
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The `PROCESS_n:COMMAND` and `PROCESS_n:ARGUMENT_i` rows of `META_DATA_CAPTURE`.
#[derive(Default)]
struct LaunchCommand {
    /// (n, command).
    commands: Vec<(u32, String)>,
    /// (n, i, argument).
    arguments: Vec<(u32, u32, String)>,
}

impl LaunchCommand {
    fn note(&mut self, name: &str, value: &str) {
        let Some((process, key)) = name
            .strip_prefix("PROCESS_")
            .and_then(|rest| rest.split_once(':'))
        else {
            return;
        };
        let Ok(process) = process.parse::<u32>() else {
            return;
        };
        if key == "COMMAND" {
            self.commands.push((process, value.to_string()));
        } else if let Some(Ok(index)) = key.strip_prefix("ARGUMENT_").map(str::parse::<u32>) {
            self.arguments.push((process, index, value.to_string()));
        }
    }

    /// The command of the lowest process number that has one, then its arguments.
    fn words(mut self) -> Vec<String> {
        self.commands.sort_by_key(|(process, _)| *process);
        let Some((process, command)) = self.commands.into_iter().next() else {
            return Vec::new();
        };
        self.arguments.sort_by_key(|(_, index, _)| *index);
        std::iter::once(command)
            .chain(
                self.arguments
                    .into_iter()
                    .filter(|(p, _, _)| *p == process)
                    .map(|(_, _, argument)| argument),
            )
            .collect()
    }
}

/// `NAME="value"` (as META_DATA_CAPTURE writes it) → (`NAME`, `value`).
fn parse_env_assignment(text: &str) -> Option<(String, String)> {
    let (name, value) = text.split_once('=')?;
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    Some((name.trim().to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_command_is_the_first_process_s_with_its_arguments_in_order() {
        let mut command = LaunchCommand::default();
        for (name, value) in [
            ("PROCESS_1:COMMAND", "other"),
            ("PROCESS_0:ARGUMENT_10", "k"),
            ("PROCESS_0:COMMAND", "python3"),
            ("PROCESS_1:ARGUMENT_0", "x"),
            ("PROCESS_0:ARGUMENT_2", "c"),
            ("PROCESS_0:ARGUMENT_0", "train.py"),
            ("PROCESS_0:WORKING_DIR", "/w"),
            ("PROCESS_0:ARGUMENT_1", "--epochs=2"),
        ] {
            command.note(name, value);
        }
        assert_eq!(
            command.words(),
            ["python3", "train.py", "--epochs=2", "c", "k"]
        );
        assert!(LaunchCommand::default().words().is_empty());
    }

    #[test]
    fn env_assignments_lose_their_quotes() {
        assert_eq!(
            parse_env_assignment("SLURM_PROCID=\"3\""),
            Some(("SLURM_PROCID".into(), "3".into()))
        );
        assert_eq!(parse_env_assignment("novalue"), None);
    }

    #[test]
    fn newer_schemas_are_told_apart() {
        let meta = |v: &str| Metadata {
            schema_version: Some(v.to_string()),
            ..Default::default()
        };
        assert_eq!(meta("3.24.18").newer_schema(), None);
        assert_eq!(meta("3.25.0").newer_schema(), None);
        assert_eq!(meta("2.9.1").newer_schema(), None);
        assert_eq!(meta("3.26.1").newer_schema(), Some("3.26.1"));
        assert_eq!(meta("4.0").newer_schema(), Some("4.0"));
        assert_eq!(meta("garbage").newer_schema(), None);
        assert_eq!(Metadata::default().newer_schema(), None);
    }

    #[test]
    fn normalized_exports_are_already_utc() {
        let meta = Metadata {
            time_normalized: true,
            session_start_utc_ns: Some(5),
            ..Default::default()
        };
        assert_eq!(meta.utc_offset(), Some(0));
        let shifted = Metadata {
            session_start_utc_ns: Some(100),
            time_shift: 10,
            ..Default::default()
        };
        assert_eq!(shifted.utc_offset(), Some(90));
        let damaged = Metadata {
            session_start_utc_ns: Some(i64::MIN + 1),
            time_shift: 10,
            ..Default::default()
        };
        assert_eq!(damaged.utc_offset(), None);
    }
}
