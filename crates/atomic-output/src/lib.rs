//! Output that appears whole or not at all, and never over what the tool did not
//! make. Every file and directory nsys2prv-rs writes for a user goes through
//! here: a temporary beside its final place (same directory, so the rename is
//! atomic), named `.NAME.nsys2prv-rs.HOST.PID.XXXXXX[.tmp]` so a later run
//! recognises it and knows whether its owner still lives, registered with
//! [`cleanup`] so an interrupt removes it, synced, then renamed into place.
//!
//! Whether a target may be replaced is the caller's to check (a Paraver file of
//! its kind, a directory carrying [`MARKER`], a report naming its generator):
//! this crate only guarantees that nothing else is touched on the way.
//!
//! A crate of its own, below everything that writes files (the conversion
//! library, the report, the binary), so that none of them depends on another
//! for it.

pub mod cleanup;
mod owner;

use std::fs::File;
use std::io::Write;
use std::path::Path;

pub use cleanup::{checkpoint, Tracked};
pub use owner::{host_name, parse_owner, process_alive};

/// The file in a directory (views, report, parts, exports cache) that says
/// nsys2prv-rs made it, and may replace or remove it.
pub const MARKER: &str = ".nsys2prv-rs";

/// The word in every temporary's name.
pub const TAG: &str = "nsys2prv-rs";

/// `.NAME.nsys2prv-rs.`: how this tool's temporaries for `NAME` begin; the rest
/// is `HOST.PID.XXXXXX` (see [`parse_owner`]), and `.tmp` for a file.
pub fn temporary_prefix(name: &str) -> String {
    format!(".{name}.{TAG}.")
}

/// The directory a path is in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn name_of(target: &Path) -> String {
    target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into())
}

fn builder(prefix: &str) -> tempfile::Builder<'_, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).rand_bytes(6);
    builder
}

/// A new, empty directory named `.NAME.nsys2prv-rs.HOST.PID.XXXXXX` in `dir`,
/// removed by an interrupt while the returned value lives (the caller removes
/// it, or renames its content into place, before dropping it).
pub fn staging_dir(dir: &Path, name: &str) -> std::io::Result<Tracked> {
    let prefix = format!(
        "{}{}.{}.",
        temporary_prefix(name),
        host_name(),
        std::process::id()
    );
    cleanup::create_tracked(|| Ok(builder(&prefix).tempdir_in(dir)?.keep()))
}

/// A new, empty file `.NAME.nsys2prv-rs.HOST.PID.XXXXXX.tmp` beside `target`,
/// with the permissions of any new file (0666 less the umask), open for writing.
fn temporary_file_beside(target: &Path) -> std::io::Result<(Tracked, File)> {
    let prefix = format!(
        "{}{}.{}.",
        temporary_prefix(&name_of(target)),
        host_name(),
        std::process::id()
    );
    let mut builder = builder(&prefix);
    builder.suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut file = None;
    let tracked = cleanup::create_tracked(|| {
        let (made, path) = builder
            .tempfile_in(parent_dir(target))?
            .keep()
            .map_err(|e| e.error)?;
        file = Some(made);
        Ok(path)
    })?;
    let file = file.expect("created with its path");
    Ok((tracked, file))
}

/// How a rename into place counts for the interrupt message.
#[derive(Clone, Copy)]
enum Installs {
    /// The run's output: once renamed, an interrupt says the new output is in place.
    Output,
    /// A file the run makes on its way (a part of a sharded conversion).
    Intermediate,
}

fn write_with(
    path: &Path,
    installs: Installs,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (temporary, mut file) = temporary_file_beside(path)?;
    let written = fill(&mut file).and_then(|()| file.sync_all());
    drop(file);
    let renamed = written.and_then(|()| {
        let rename = || std::fs::rename(temporary.path(), path);
        match installs {
            Installs::Output => cleanup::critical(rename),
            Installs::Intermediate => cleanup::critical_intermediate(rename),
        }
    });
    if renamed.is_err() {
        cleanup::remove_all(temporary.path());
    }
    renamed
}

/// Writes `bytes` to `path` as part of the run's output: to a temporary beside
/// it, synced, then renamed over `path` (which the caller has checked may be
/// replaced). On error the temporary is removed and `path` is as it was.
pub fn install_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, Installs::Output, |file| file.write_all(bytes))
}

/// As [`install_file`], for a file the run makes on its way (not its output).
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, Installs::Intermediate, |file| file.write_all(bytes))
}

/// As [`write_file`], with the content written by `fill` (which may wrap the
/// file in a buffer; the file is synced after it returns).
pub fn write_file_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_with(path, Installs::Intermediate, fill)
}

/// Writes `bytes` to `path` only if nothing is there: the first writer wins
/// (concurrent shards installing one plan). Returns false when `path` existed.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let (temporary, mut file) = temporary_file_beside(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    // A hard link never replaces.
    let linked = written.and_then(|()| std::fs::hard_link(temporary.path(), path));
    cleanup::remove_all(temporary.path());
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether `file` (a name in a directory) is a temporary of this tool for
/// `name`, with its owner: `Some((host, pid))`.
pub fn temporary_owner<'a>(file: &'a str, name: &str) -> Option<(&'a str, u32)> {
    file.strip_prefix(&temporary_prefix(name))
        .and_then(parse_owner)
}

/// Whether `file` is a temporary of this tool, for any name.
pub fn is_temporary_name(file: &str) -> bool {
    file.starts_with('.') && file.contains(&format!(".{TAG}.")) && {
        let rest = file.rsplit_once(&format!(".{TAG}.")).map(|(_, r)| r);
        rest.and_then(parse_owner).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_stays() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        std::fs::write(&target, "old").unwrap();
        install_file(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        write_file(&target, b"newer").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "newer");
        assert_eq!(names(dir.path()), ["t.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.part");
        std::fs::write(&target, "old").unwrap();
        let failed = write_file_with(&target, |file| {
            file.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(names(dir.path()), ["t.part"]);
    }

    #[test]
    fn a_failed_rename_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // A directory in the way: rename(file, non-empty dir) fails.
        let target = dir.path().join("busy");
        std::fs::create_dir_all(target.join("inside")).unwrap();
        assert!(install_file(&target, b"x").is_err());
        assert_eq!(names(dir.path()), ["busy"]);
    }

    #[test]
    fn the_first_new_file_wins() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("plan");
        assert!(write_new(&target, b"first").unwrap());
        assert!(!write_new(&target, b"second").unwrap());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "first");
        assert_eq!(names(dir.path()), ["plan"]);
    }

    #[test]
    fn temporaries_are_named_after_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let stage = staging_dir(dir.path(), "t").unwrap();
        let file = stage.path().file_name().unwrap().to_str().unwrap();
        let (host, pid) = temporary_owner(file, "t").unwrap();
        assert_eq!((host, pid), (host_name().as_str(), std::process::id()));
        assert!(is_temporary_name(file));
        assert!(temporary_owner(file, "u").is_none());
        assert!(!is_temporary_name("t.prv"));
        cleanup::remove_all(stage.path());
        assert!(names(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn files_get_the_permissions_of_a_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("page.html");
        install_file(&target, b"x").unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&target), mode(&plain));
    }
}
