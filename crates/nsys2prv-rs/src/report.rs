//! `nsys2prv-rs report TRACE`: the command line of the `nsys2prv-report` crate. It
//! prints the summary and writes the files asked for, each under a temporary
//! name (removed by an interrupt) and renamed into place.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nsys2prv_report::files::{self, MARKER};
pub use nsys2prv_report::{check_out_dir, ReportOptions};
use nsys2prv_report::{html, WindowArg, GENERATOR};

use crate::cli::ReportArgs;
use crate::interrupt::{self, Tracked};

/// `nsys2prv-rs report TRACE`.
pub fn run_command(args: &ReportArgs) -> Result<()> {
    if args.no_files {
        eprintln!("note: --no-files is no longer needed: files are written only with --out, --html or --json");
    }
    run(
        &args.trace,
        &ReportOptions {
            iterations: args.iterations.clone(),
            top: args.top,
            gap_threshold_ns: args.gap_threshold,
            memory_limit: args.memory_limit,
            print: true,
            out_dir: args.out.clone(),
            html: args.html.clone(),
            json: args.json.clone(),
            window: match (&args.time_window, &args.nvtx_range) {
                (Some(w), _) => Some(WindowArg::Time {
                    start: w.start,
                    end: w.end,
                }),
                (None, Some(spec)) => Some(WindowArg::Range(spec.clone())),
                (None, None) => None,
            },
        },
    )
}

/// Computes the report of `trace`, prints it and writes the files asked for.
pub fn run(trace: &Path, options: &ReportOptions) -> Result<()> {
    let files = nsys2prv_report::resolve_trace(trace)?;
    let json_to_stdout = options.json.as_deref() == Some(Path::new("-"));
    // Refuse what may not be replaced before the long part.
    if let Some(dir) = &options.out_dir {
        files::check_dir_target(dir)?;
    }
    for path in [&options.html, &options.json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
    let report = nsys2prv_report::analyze(&files, options)?;
    if json_to_stdout {
        crate::stdout::write(&files::json(&report))?;
    } else if options.print {
        crate::stdout::write(report.text(options.top).as_bytes())?;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(path) = options.html.as_ref() {
        write_file(path, html::page(&report).as_bytes())?;
        written.push(path.clone());
    }
    if let Some(path) = options.json.as_ref().filter(|_| !json_to_stdout) {
        write_file(path, &files::json(&report))?;
        written.push(path.clone());
    }
    if let Some(dir) = &options.out_dir {
        written.extend(write_dir(dir, &files::all(&report)?)?);
    }
    if options.print && !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", names.join(", "));
    }
    Ok(())
}

/// The directory a path is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A hidden temporary beside `target`, removed by an interrupt (and by
/// [`discard`] on failure).
fn temporary(target: &Path, make_dir: bool) -> std::io::Result<Tracked> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let prefix = format!(".{name}.nsys2prv-rs.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(6);
    // A file gets the permissions of any new file (0666 less the umask).
    #[cfg(unix)]
    if !make_dir {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let dir = parent_of(target);
    interrupt::create_tracked(|| {
        if make_dir {
            Ok(builder.tempdir_in(dir)?.keep())
        } else {
            Ok(builder.tempfile_in(dir)?.keep().map_err(|e| e.error)?.1)
        }
    })
}

/// Runs `fill` on a temporary; removes the temporary when it fails.
fn filled(
    temp: Tracked,
    fill: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<Tracked> {
    match fill(temp.path()) {
        Ok(()) => Ok(temp),
        Err(e) => {
            interrupt::remove_all(temp.path());
            Err(e)
        }
    }
}

/// Writes `bytes` to `path` under a temporary name, then renames it into place.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let written = temporary(path, false)
        .and_then(|temp| filled(temp, |t| std::fs::write(t, bytes)))
        .and_then(|temp| {
            interrupt::critical(|| std::fs::rename(temp.path(), path)).inspect_err(|_| {
                interrupt::remove_all(temp.path());
            })
        });
    written.with_context(|| format!("{}: cannot write the report", path.display()))
}

/// Writes the files into a staging directory beside `dir`, then puts it in the
/// place of `dir` (whose earlier content, checked to be a report's, is removed).
pub fn write_dir(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<Vec<PathBuf>> {
    let fill = |stage: &Path| -> std::io::Result<()> {
        let fresh = stage.join("new");
        std::fs::create_dir(&fresh)?;
        for (file, bytes) in files {
            std::fs::write(fresh.join(file), bytes)?;
        }
        std::fs::write(fresh.join(MARKER), format!("{GENERATOR}\n"))
    };
    let installed = temporary(dir, true)
        .and_then(|stage| filled(stage, fill))
        .and_then(|stage| {
            let moved = interrupt::critical(|| {
                if dir.exists() {
                    std::fs::rename(dir, stage.path().join("old"))?;
                }
                std::fs::rename(stage.path().join("new"), dir)
            });
            interrupt::remove_all(stage.path());
            moved
        });
    installed.with_context(|| format!("{}: cannot write the report", dir.display()))?;
    Ok(files.iter().map(|(f, _)| dir.join(f)).collect())
}
