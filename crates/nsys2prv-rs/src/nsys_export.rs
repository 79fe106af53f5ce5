//! Reading `.nsys-rep`/`.qdrep` reports: through the `.sqlite` beside them when it
//! is complete and newer, else through `nsys export --type sqlite` into a cache
//! next to the output (never the current directory, never beside the inputs,
//! which may be read-only), keyed by the report's size, time and content so
//! re-runs do not export again.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

/// Where exports go and how many `nsys` may run at once.
pub struct ExportSettings {
    pub cache_dir: PathBuf,
    pub jobs: usize,
}

/// The export of each report, exporting those that need it in parallel.
pub fn exports_of(reports: &[PathBuf], settings: &ExportSettings) -> Result<Vec<PathBuf>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.jobs)
        .build()
        .context("cannot start worker threads")?;
    pool.install(|| reports.par_iter().map(|r| export_of(r, settings)).collect())
}

fn export_of(report: &Path, settings: &ExportSettings) -> Result<PathBuf> {
    if let Some(sibling) = usable_sibling(report) {
        return Ok(sibling);
    }
    let cached = settings
        .cache_dir
        .join(format!("{}.{}.sqlite", stem(report), cache_key(report)?));
    if nsys_reader::Export::open(&cached).is_ok() {
        tracing::debug!(
            "{}: using cached export {}",
            report.display(),
            cached.display()
        );
        return Ok(cached);
    }
    std::fs::create_dir_all(&settings.cache_dir).with_context(|| {
        format!(
            "{}: cannot create the export cache",
            settings.cache_dir.display()
        )
    })?;
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

/// Exports under a temporary name in the cache, renamed when complete.
fn run_nsys_export(report: &Path, target: &Path) -> Result<()> {
    let nsys = nsys_binary();
    let partial = target.with_extension("partial.sqlite");
    let _ = std::fs::remove_file(&partial);
    let _guard = paraver_writer::output::track_pending(&partial);
    tracing::info!("{}: exporting with {}", report.display(), nsys.display());
    let output = Command::new(&nsys)
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
        .output();
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
