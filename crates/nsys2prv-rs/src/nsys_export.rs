//! Reading `.nsys-rep`/`.qdrep` reports: through the `.sqlite` beside them when it
//! is complete and newer, else through `nsys export --type sqlite` into a cache
//! next to the output (never the current directory, never beside the inputs,
//! which may be read-only), keyed by the report's size, time and content so
//! re-runs do not export again.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use atomic_output::MARKER;

/// Where exports go and how many `nsys` may run at once.
pub struct ExportSettings {
    pub cache_dir: PathBuf,
    pub jobs: usize,
    /// `--force-sqlite`: export again even when an export exists.
    pub force: bool,
}

/// The usable export of `report` that already exists (beside it, or in the
/// cache), without creating anything.
pub fn existing_export(report: &Path, settings: &ExportSettings) -> Result<Option<PathBuf>> {
    if settings.force {
        return Ok(None);
    }
    if let Some(sibling) = usable_sibling(report) {
        return Ok(Some(sibling));
    }
    let cached = cached_export(report, settings)?;
    if nsys_reader::Export::open(&cached).is_ok() {
        tracing::debug!(
            "{}: using cached export {}",
            report.display(),
            cached.display()
        );
        return Ok(Some(cached));
    }
    Ok(None)
}

fn cached_export(report: &Path, settings: &ExportSettings) -> Result<PathBuf> {
    Ok(settings
        .cache_dir
        .join(format!("{}.{}.sqlite", stem(report), cache_key(report)?)))
}

/// Exports every report (in parallel, up to `jobs` at once) into the cache; one
/// result per report. A cache directory this run created and left empty (every
/// export failed) is removed again.
pub fn export_all(reports: &[PathBuf], settings: &ExportSettings) -> Result<Vec<Result<PathBuf>>> {
    if reports.is_empty() {
        return Ok(Vec::new());
    }
    let created = open_cache(&settings.cache_dir)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.jobs)
        .build()
        .context("cannot start worker threads")?;
    let results: Vec<Result<PathBuf>> = pool.install(|| {
        reports
            .par_iter()
            .map(|r| export_into_cache(r, settings))
            .collect()
    });
    if results.iter().any(Result::is_err) && created {
        remove_if_empty(&settings.cache_dir);
    }
    Ok(results)
}

/// Creates the cache directory with its marker, or checks that an existing one
/// is ours: it has the marker, or holds only exports named like ours (versions
/// before the marker). True when this call created it.
fn open_cache(dir: &Path) -> Result<bool> {
    let marker = dir.join(MARKER);
    if dir.is_dir() {
        if !marker.is_file() {
            if !holds_only_cached_exports(dir) {
                return Err(crate::cli::UsageError(format!(
                    "{}: exists and was not made by nsys2prv-rs (no {MARKER} file in it), so exports will not go there: give another output name",
                    dir.display()
                ))
                .into());
            }
            write_marker(&marker)?;
        }
        clean_partials(dir);
        return Ok(false);
    }
    std::fs::create_dir(dir)
        .with_context(|| format!("{}: cannot create the export cache", dir.display()))?;
    write_marker(&marker)?;
    Ok(true)
}

fn write_marker(marker: &Path) -> Result<()> {
    atomic_output::write_file(
        marker,
        b"Exports of Nsight Systems reports made by nsys2prv-rs; delete this directory to free the space.\n",
    )
    .with_context(|| format!("{}: cannot write", marker.display()))
}

/// `NAME.0123456789abcdef.sqlite` entries only.
fn holds_only_cached_exports(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .all(|e| e.path().is_file() && is_cached_export_name(&e.file_name().to_string_lossy()))
}

/// Removes partial exports of killed runs on this host
/// (`NAME.KEY.HOST.PID.partial.sqlite` whose process is gone).
fn clean_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let host = atomic_output::host_name();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(owner) = name.strip_suffix(".partial.sqlite") else {
            continue;
        };
        let mut parts = owner.rsplitn(3, '.');
        let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
        let on_this_host = parts.next() == Some(host.as_str());
        if let (Some(pid), true) = (pid, on_this_host) {
            if !atomic_output::process_alive(pid) {
                atomic_output::cleanup::remove_all(&entry.path());
            }
        }
    }
}

/// `-c/--clean`: removes the exports in the cache `dir` (ours: it has the
/// marker), then the directory when nothing else is left in it. Returns the
/// exports removed and the bytes they took.
pub fn remove_cache(dir: &Path) -> Result<(usize, u64)> {
    if !dir.join(MARKER).is_file() {
        return Ok((0, 0));
    }
    clean_partials(dir);
    let (mut removed, mut bytes) = (0, 0);
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("{}: cannot read", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = is_cached_export_name(&entry.file_name().to_string_lossy());
        if ours && path.is_file() {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(&path)
                .with_context(|| format!("{}: cannot remove", path.display()))?;
            removed += 1;
            bytes += size;
        }
    }
    remove_if_empty(dir);
    if dir.exists() {
        tracing::warn!(
            "{}: kept, it holds files nsys2prv-rs did not make",
            dir.display()
        );
    }
    Ok((removed, bytes))
}

/// Whether `name` is an export's of the cache: `NAME.0123456789abcdef.sqlite`.
fn is_cached_export_name(name: &str) -> bool {
    let key = name
        .strip_suffix(".sqlite")
        .and_then(|n| n.rsplit_once('.'))
        .map(|(_, key)| key);
    key.is_some_and(|k| k.len() == 16 && k.chars().all(|c| c.is_ascii_hexdigit()))
}

fn remove_if_empty(dir: &Path) {
    let only_marker = std::fs::read_dir(dir)
        .map(|d| d.flatten().all(|e| e.file_name() == MARKER))
        .unwrap_or(false);
    if only_marker {
        let _ = std::fs::remove_file(dir.join(MARKER));
        let _ = std::fs::remove_dir(dir);
    }
}

fn export_into_cache(report: &Path, settings: &ExportSettings) -> Result<PathBuf> {
    let cached = cached_export(report, settings)?;
    run_nsys_export(report, &cached)?;
    Ok(cached)
}

/// `X.sqlite` beside `X.nsys-rep`, if it is a complete export at least as new.
fn usable_sibling(report: &Path) -> Option<PathBuf> {
    let sibling = report.with_extension("sqlite");
    let newer = modified(&sibling)? >= modified(report)?;
    (newer && nsys_reader::Export::open(&sibling).is_ok()).then_some(sibling)
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

fn stem(report: &Path) -> String {
    report
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into())
}

/// Size, modification time and a hash of the first and last MiB: a changed
/// report gets a new export without reading gigabytes to notice.
fn cache_key(report: &Path) -> Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let meta =
        std::fs::metadata(report).with_context(|| format!("{}: cannot read", report.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut file = std::fs::File::open(report)
        .with_context(|| format!("{}: cannot read", report.display()))?;
    let mut hash = paraver_writer::names::stable_hash(&format!("{}:{mtime}", meta.len()));
    let mut buf = vec![0u8; 1 << 20];
    for start in [0, meta.len().saturating_sub(buf.len() as u64)] {
        file.seek(SeekFrom::Start(start))?;
        let n = file.read(&mut buf)?;
        for &b in &buf[..n] {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(format!("{hash:016x}"))
}

/// `$NSYS_HOME/bin/nsys`, else `nsys` on the PATH.
fn nsys_binary() -> PathBuf {
    std::env::var_os("NSYS_HOME")
        .map(|home| PathBuf::from(home).join("bin").join("nsys"))
        .unwrap_or_else(|| PathBuf::from("nsys"))
}

fn nsys_version(nsys: &Path) -> String {
    Command::new(nsys)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "of unknown version".into())
}

/// Exports under a temporary name in the cache (`NAME.KEY.HOST.PID.partial.sqlite`,
/// removed by an interrupt, or by a later run once this process is gone), renamed
/// when complete.
fn run_nsys_export(report: &Path, target: &Path) -> Result<()> {
    let nsys = nsys_binary();
    let partial = target.with_extension(format!(
        "{}.{}.partial.sqlite",
        atomic_output::host_name(),
        std::process::id()
    ));
    let _guard = atomic_output::cleanup::track(&partial);
    tracing::info!("{}: exporting with {}", report.display(), nsys.display());
    let mut command = Command::new(&nsys);
    command
        .args([
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
        ])
        .arg(&partial)
        .arg(report)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = atomic_output::cleanup::spawn_tracked(&mut command)
        .and_then(|(child, _tracked)| child.wait_with_output());
    let output = match output {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "{}: reading a report needs Nsight Systems' `nsys` (set NSYS_HOME or add it to PATH), or give its export: nsys export --type sqlite {}",
            report.display(),
            report.display()
        ),
        Err(e) => bail!("{}: cannot run {}: {e}", report.display(), nsys.display()),
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if said.contains("Version number is invalid") || said.contains("newer version") {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "{}: written by a newer Nsight Systems than the `nsys` found ({}, {}): export it with the nsys that recorded it (set NSYS_HOME) or give its .sqlite",
            report.display(),
            nsys.display(),
            nsys_version(&nsys)
        );
    }
    if !output.status.success() || nsys_reader::Export::open(&partial).is_err() {
        let _ = std::fs::remove_file(&partial);
        let last = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        bail!(
            "{}: `nsys export` failed ({}): {}",
            report.display(),
            output.status,
            last.trim()
        );
    }
    std::fs::rename(&partial, target)
        .with_context(|| format!("{}: cannot store the export", target.display()))?;
    Ok(())
}
