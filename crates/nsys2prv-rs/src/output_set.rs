//! The output set — `NAME.prv[.gz]`, `NAME.pcf`, `NAME.row`, `NAME.pmf` and the
//! views directory — changes as one unit. Everything is written into a staging
//! directory beside its final place (`.NAME.nsys2prv-rs.HOST.PID.XXXXXX/`) and
//! renamed into place in one critical section that interrupts wait for: views,
//! `.pcf`, `.row`, `.pmf`, and the `.prv` last, so Paraver never finds a new
//! `.prv` beside old labels. The tool replaces only what it made: a views directory carries a
//! marker file, and a directory without it is refused; a `.prv`, `.pcf` or `.row`
//! is replaced only when it is a Paraver file of that kind (by whatever tool: BSC's
//! nsys2prv writes the same names) or empty; a `.pmf` only when this tool wrote
//! it (one of ours names nsys2prv-rs as its translator). A run killed outright
//! (SIGKILL, a crash) leaves its staging directory; the next run on the same
//! output removes it, or finishes its renames if it died while committing.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use paraver_writer::OutputPaths;

use crate::cli::UsageError;
use crate::interrupt::{self, checkpoint, Tracked};

/// The file in a views (or cache) directory that says nsys2prv-rs made it.
pub const MARKER: &str = ".nsys2prv-rs";
/// Written into a staging directory when its renames begin.
const JOURNAL: &str = ".committing";
/// Where a replaced views directory goes inside a staging directory.
const REPLACED: &str = ".replaced";
const TAG: &str = "nsys2prv-rs";
/// The first line of `NAME.skipped.txt`, by which a later run knows it is ours.
pub const SKIPPED_HEADER: &str = "# reports nsys2prv-rs --skip-bad left out of ";

/// `NAME.skipped.txt` beside the trace.
pub fn skipped_list_path(trace: &OutputPaths) -> PathBuf {
    trace
        .prv
        .with_file_name(format!("{}.skipped.txt", trace.stem()))
}

/// The output set of a run, staged until [`OutputSet::commit`].
pub struct OutputSet {
    trace: OutputPaths,
    views: PathBuf,
    trace_stage: Stage,
    /// When the views go to another directory than the trace.
    views_stage: Option<Stage>,
}

/// A staging directory, removed when dropped (by an interrupt, or at the end).
struct Stage {
    dir: PathBuf,
    target_dir: PathBuf,
    _tracked: Tracked,
}

impl Drop for Stage {
    fn drop(&mut self) {
        interrupt::remove_all(&self.dir);
    }
}

impl OutputSet {
    /// Checks that the views target may be replaced, removes what killed runs
    /// left for this output, and creates the staging directories.
    pub fn prepare(trace: &OutputPaths, views: &Path) -> Result<OutputSet> {
        let trace_dir = parent_dir(&trace.prv);
        let views_dir = parent_dir(views);
        check_targets(trace, views)?;
        let stem = trace.stem();
        let views_name = file_name(views);
        clean_leftovers(&trace_dir, &stem);
        clean_leftovers(&views_dir, &views_name);
        let separate = !same_dir(&trace_dir, &views_dir);
        let trace_stage = Stage::create(&trace_dir, &stem)?;
        let views_stage = match separate {
            true => Some(Stage::create(&views_dir, &views_name)?),
            false => None,
        };
        checkpoint("staging directories created");
        Ok(OutputSet {
            trace: trace.clone(),
            views: views.to_path_buf(),
            trace_stage,
            views_stage,
        })
    }

    /// Where the writer writes the trace.
    pub fn staged_trace(&self) -> OutputPaths {
        self.trace.in_dir(&self.trace_stage.dir)
    }

    /// Where the list of skipped reports is written, when there are some.
    pub fn staged_skipped(&self) -> PathBuf {
        skipped_list_path(&self.trace.in_dir(&self.trace_stage.dir))
    }

    /// Where the metadata file (`NAME.pmf`) is written.
    pub fn staged_pmf(&self) -> PathBuf {
        crate::pmf::path_of(&self.trace.in_dir(&self.trace_stage.dir))
    }

    /// The views directory the set installs.
    pub fn views(&self) -> &Path {
        &self.views
    }

    /// Where the views are written (not created yet).
    pub fn staged_views(&self) -> PathBuf {
        let stage = self.views_stage.as_ref().unwrap_or(&self.trace_stage);
        stage.dir.join(file_name(&self.views))
    }

    /// Installs the set (see the module doc), then removes the staging
    /// directories with what the new set replaced.
    pub fn commit(self) -> Result<()> {
        let mut stale: Vec<PathBuf> = stale_sibling(&self.trace, &self.views)
            .into_iter()
            .collect();
        // A list of skipped reports of an earlier run would describe this trace.
        let skipped = skipped_list_path(&self.trace);
        if !self.staged_skipped().exists() && is_our_skipped_list(&skipped) {
            stale.push(skipped);
        }
        let stages: Vec<&Stage> = self.views_stage.iter().chain([&self.trace_stage]).collect();
        interrupt::critical(|| {
            for stage in &stages {
                install(&stage.dir, &stage.target_dir)?;
            }
            for old in &stale {
                let replaced = self.trace_stage.dir.join(REPLACED);
                create_dir_if_missing(&replaced)?;
                fs::rename(old, replaced.join(file_name(old)))?;
            }
            Ok(())
        })
        .with_context(|| format!("{}: cannot install the trace", self.trace.prv.display()))?;
        checkpoint("output set installed");
        Ok(())
    }
}

impl Stage {
    fn create(dir: &Path, name: &str) -> Result<Stage> {
        let prefix = format!(".{name}.{TAG}.{}.{}.", host_name(), std::process::id());
        let tracked = interrupt::create_tracked(|| {
            let made = tempfile::Builder::new()
                .prefix(&prefix)
                .rand_bytes(6)
                .tempdir_in(dir)?;
            Ok(made.keep())
        })
        .with_context(|| format!("{}: cannot create a staging directory", dir.display()))?;
        let path = tracked.path().to_path_buf();
        Ok(Stage {
            dir: path,
            target_dir: dir.to_path_buf(),
            _tracked: tracked,
        })
    }
}

/// Renames every entry of `stage` into `target_dir`: directories (views) first,
/// replacing an older views directory of ours, then `.pcf`, `.row`, and the
/// trace body last. Also finishes the commit of a run killed half-way.
fn install(stage: &Path, target_dir: &Path) -> std::io::Result<()> {
    fs::File::create(stage.join(JOURNAL))?.sync_all()?;
    let mut entries: Vec<(u8, PathBuf)> = Vec::new();
    for entry in fs::read_dir(stage)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == JOURNAL || name == REPLACED {
            continue;
        }
        entries.push((install_order(&entry.path()), entry.path()));
    }
    entries.sort();
    for (_, staged) in entries {
        let target = target_dir.join(staged.file_name().unwrap_or_default());
        if staged.is_dir() && target.symlink_metadata().is_ok() {
            if !may_replace(&target) {
                return Err(std::io::Error::other(format!(
                    "{} is not a views directory of nsys2prv-rs",
                    target.display()
                )));
            }
            let replaced = stage.join(REPLACED);
            create_dir_if_missing(&replaced)?;
            fs::rename(
                &target,
                replaced.join(staged.file_name().unwrap_or_default()),
            )?;
            checkpoint("old views moved aside");
        }
        fs::rename(&staged, &target)?;
        checkpoint("renamed into place");
    }
    Ok(())
}

/// Views directories first, then labels (and the metadata file and the list of
/// skipped reports), then the trace body.
fn install_order(path: &Path) -> u8 {
    let name = path.file_name().and_then(OsStr::to_str).unwrap_or("");
    if path.is_dir() {
        0
    } else if [".pcf", ".row", ".pmf", ".skipped.txt"]
        .iter()
        .any(|ext| name.ends_with(ext))
    {
        1
    } else {
        2
    }
}

fn create_dir_if_missing(dir: &Path) -> std::io::Result<()> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// `NAME.prv` when writing `NAME.prv.gz` (or the reverse), when the views
/// directory being replaced says an earlier run of ours wrote it: left there,
/// Paraver would open it with the new labels.
fn stale_sibling(trace: &OutputPaths, views: &Path) -> Option<PathBuf> {
    let name = file_name(&trace.prv);
    let other = match name.strip_suffix(".gz") {
        Some(plain) => trace.prv.with_file_name(plain),
        None => trace.prv.with_file_name(format!("{name}.gz")),
    };
    if !other.is_file() {
        return None;
    }
    let marker = fs::read_to_string(views.join(MARKER)).unwrap_or_default();
    if marker
        .lines()
        .any(|l| l.trim() == format!("trace {}", file_name(&other)))
    {
        return Some(other);
    }
    tracing::warn!(
        "{}: left as it was, but it does not go with the new {} and {}: remove it",
        other.display(),
        file_name(&trace.pcf),
        file_name(&trace.row)
    );
    None
}

/// A `NAME.skipped.txt` that a run of the tool wrote.
fn is_our_skipped_list(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; SKIPPED_HEADER.len()];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == SKIPPED_HEADER.as_bytes())
}

/// The marker's text for the views of `trace`.
pub fn marker_text(trace: &OutputPaths) -> String {
    format!(
        "Paraver views written by nsys2prv-rs; the tool replaces this directory.\ntrace {}\n",
        file_name(&trace.prv)
    )
}

/// Refuses (a usage error, exit 2) an output set whose files exist and are not
/// what the tool would replace: a views directory not made by the tool, or a
/// `.prv`, `.pcf` or `.row` that is not a Paraver file of its kind. Cheap: runs
/// before any report is read, and again when the set is staged.
pub fn check_targets(trace: &OutputPaths, views: &Path) -> Result<()> {
    let files = [
        (&trace.prv, TargetKind::Trace { gzip: trace.gzip }),
        (&trace.pcf, TargetKind::Pcf),
        (&trace.row, TargetKind::Row),
    ];
    for (path, kind) in files {
        if let Some(why) = not_replaceable(path, kind) {
            return Err(UsageError(format!(
                "{}: exists and {why}, so it will not be replaced: give another output name, or move it away",
                path.display()
            ))
            .into());
        }
    }
    check_metadata_target(trace)?;
    check_views_target(views, trace)
}

#[derive(Clone, Copy)]
enum TargetKind {
    Trace { gzip: bool },
    Pcf,
    Row,
}

/// Section keywords of a `.pcf`; the first line that is not blank or a comment
/// is one of them in every `.pcf` Paraver tools write (Extrae, BSC's nsys2prv,
/// this tool).
const PCF_SECTIONS: [&str; 7] = [
    "DEFAULT_OPTIONS",
    "DEFAULT_SEMANTIC",
    "STATES",
    "STATES_COLOR",
    "EVENT_TYPE",
    "GRADIENT_COLOR",
    "GRADIENT_NAMES",
];

/// Why the existing `path` may not be replaced by a file of `kind`; `None` when
/// it is absent, empty, or a Paraver file of that kind: a trace whose first line
/// begins `#Paraver` (read through gzip for `.prv.gz`), a `.pcf` whose first line
/// (past blank lines and `#` comments) is a section keyword, a `.row` whose first
/// such line is a `LEVEL` heading.
fn not_replaceable(path: &Path, kind: TargetKind) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    let meta = path.symlink_metadata().ok()?;
    if meta.is_dir() {
        return Some("is a directory".into());
    }
    let opened = match kind {
        TargetKind::Trace { gzip } => paraver_reader::prv::open_body(path, gzip),
        _ => fs::File::open(path).map(|f| Box::new(BufReader::new(f)) as Box<dyn BufRead>),
    };
    let reader = match opened {
        Ok(r) => r,
        Err(e) => return Some(format!("cannot be read ({e})")),
    };
    // The first 64 KiB are plenty for the first meaningful line.
    let mut head = Vec::new();
    if let Err(e) = reader.take(64 << 10).read_to_end(&mut head) {
        let what = match kind {
            TargetKind::Trace { gzip: true } => "is not a gzip-compressed Paraver trace",
            _ => "cannot be read",
        };
        return Some(format!("{what} ({e})"));
    }
    if head.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&head);
    let first_line = text.lines().next().unwrap_or("");
    let first_meaningful = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    match kind {
        TargetKind::Trace { .. } if !first_line.starts_with("#Paraver") => {
            Some("is not a Paraver trace (its first line is not #Paraver …)".into())
        }
        TargetKind::Pcf if !PCF_SECTIONS.contains(&first_meaningful) => Some(
            "is not a Paraver .pcf (it does not begin with a section such as DEFAULT_OPTIONS or EVENT_TYPE)"
                .into(),
        ),
        TargetKind::Row if !first_meaningful.starts_with("LEVEL ") => {
            Some("is not a Paraver .row (it does not begin with a LEVEL heading)".into())
        }
        _ => None,
    }
}

/// A views target the tool may replace: absent, empty, or made by the tool.
fn check_views_target(views: &Path, trace: &OutputPaths) -> Result<()> {
    let Ok(meta) = views.symlink_metadata() else {
        return Ok(());
    };
    if meta.is_dir() && may_replace(views) {
        return Ok(());
    }
    let default = views == trace.prv.with_file_name(format!("{}.cfgs", trace.stem()));
    let what_to_do = if default {
        "give another output name or --cfgs-dir NEW_DIR"
    } else {
        "give --cfgs-dir a new or empty directory"
    };
    Err(UsageError(format!(
        "{}: exists and was not written by nsys2prv-rs (no {MARKER} file in it), so the views will not replace it: {what_to_do}",
        views.display()
    ))
    .into())
}

/// A `NAME.pmf` the tool may replace: absent, written by the tool, or another
/// translator's trace metadata (BSC nsys2prv writes its own beside its traces).
fn check_metadata_target(trace: &OutputPaths) -> Result<()> {
    let pmf = crate::pmf::path_of(trace);
    if pmf.symlink_metadata().is_err() || crate::pmf::may_replace(&pmf) {
        return Ok(());
    }
    Err(UsageError(format!(
        "{}: exists and is not a trace metadata file (neither ours nor BSC nsys2prv's), so it will not be replaced: give another output name or move it",
        pmf.display()
    ))
    .into())
}

/// An empty directory (nothing is lost), or one of ours.
fn may_replace(dir: &Path) -> bool {
    let empty = fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none());
    empty || is_ours(dir)
}

/// A directory with the marker, or one holding only views the tool bundles or
/// bundled before (as written by versions before the marker).
fn is_ours(dir: &Path) -> bool {
    if !dir.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return false;
    }
    if dir.join(MARKER).is_file() {
        return true;
    }
    let mut files = Vec::new();
    if !list_files(dir, Path::new(""), &mut files) {
        return false;
    }
    !files.is_empty()
        && files
            .iter()
            .all(|f| crate::views::is_bundled(f) || was_bundled(f))
}

/// The GPU metric views bundled before they were made per trace from a template:
/// `views/gpu_metrics/9400_….cfg` to `9447_….cfg`.
fn was_bundled(rel: &Path) -> bool {
    let Some(name) = rel
        .strip_prefix("views/gpu_metrics")
        .ok()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".cfg"))
    else {
        return false;
    };
    let Some((number, metric)) = name.split_once('_') else {
        return false;
    };
    let words = metric
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    number
        .parse::<u32>()
        .is_ok_and(|n| (9400..=9447).contains(&n))
        && words
        && !name.contains('/')
}

/// Relative paths of the regular files under `dir`; false on anything else
/// (symlinks, special files, unreadable directories).
fn list_files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> bool {
    let Ok(entries) = fs::read_dir(dir.join(rel)) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let Ok(kind) = entry.file_type() else {
            return false;
        };
        let path = rel.join(entry.file_name());
        if kind.is_dir() {
            if !list_files(dir, &path, out) {
                return false;
            }
        } else if kind.is_file() {
            out.push(path);
        } else {
            return false;
        }
    }
    true
}

/// Removes what earlier runs on this output left when they were killed: their
/// staging directories (finishing the renames of one killed while committing),
/// and the temporary files of versions before staging (`.NAME.prv.XXXXXX.tmp`,
/// `.NAME.cfgs.XXXXXX/`). A staging directory of a live process, or of another
/// host (whose processes cannot be checked), is left alone.
pub fn clean_leftovers(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let staging_prefix = format!(".{name}.{TAG}.");
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(owner) = file.strip_prefix(&staging_prefix) {
            clean_stage(&path, dir, owner);
        } else if is_old_temporary(&file, name) {
            tracing::info!("{}: removing what an interrupted run left", path.display());
            interrupt::remove_all(&path);
        }
    }
}

fn clean_stage(stage: &Path, target_dir: &Path, owner: &str) {
    let Some((host, pid)) = parse_owner(owner) else {
        return;
    };
    if host != host_name() {
        tracing::warn!(
            "{}: left by a run on {host}; remove it once no conversion runs there",
            stage.display()
        );
        return;
    }
    if process_alive(pid) {
        return;
    }
    if stage.join(JOURNAL).is_file() {
        tracing::info!(
            "{}: finishing the commit of a run that was killed",
            stage.display()
        );
        if let Err(e) = install(stage, target_dir) {
            tracing::warn!("{}: cannot finish its commit: {e}", stage.display());
            return;
        }
    } else {
        tracing::info!("{}: removing what a killed run left", stage.display());
    }
    interrupt::remove_all(stage);
}

/// `HOST.PID.XXXXXX` → (HOST, PID).
fn parse_owner(owner: &str) -> Option<(&str, u32)> {
    let mut parts = owner.rsplitn(3, '.');
    let _random = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid))
}

/// `.NAME.prv.XXXXXX.tmp` (and `.pcf`, `.row`, `.prv.gz`) and `.NAME.cfgs.XXXXXX`
/// of the versions that wrote beside the output without a staging directory.
fn is_old_temporary(file: &str, name: &str) -> bool {
    let random = |s: &str| s.len() == 6 && s.chars().all(|c| c.is_ascii_alphanumeric());
    if let Some(rest) = file.strip_prefix(&format!(".{name}.")) {
        let temporary = ["prv.", "prv.gz.", "pcf.", "row."].iter().any(|ext| {
            rest.strip_prefix(ext)
                .and_then(|r| r.strip_suffix(".tmp"))
                .is_some_and(random)
        });
        if temporary {
            return true;
        }
    }
    // Views: `.NAME.XXXXXX` where NAME is a views directory's name.
    name.ends_with(".cfgs") && file.strip_prefix(&format!(".{name}.")).is_some_and(random)
}

pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This machine's name (staging directories carry it, so a run never removes
/// what a run on another node of a shared file system is writing).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer outlives the call and its length is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match ok {
        true => String::from_utf8_lossy(&buf[..end]).replace(['/', '.'], "_"),
        false => "localhost".into(),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The last component of `path`, lossily as text ("" for none).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_of_versions_before_the_marker_are_recognised() {
        let was = |p: &str| was_bundled(Path::new(p));
        assert!(was("views/gpu_metrics/9406_sms_active_throughput.cfg"));
        assert!(was("views/gpu_metrics/9447_draw_started_count.cfg"));
        assert!(!was("views/gpu_metrics/9448_x.cfg"));
        assert!(!was("views/gpu_metrics/9406_My.cfg"));
        assert!(!was("views/gpu_metrics/notes.txt"));
        assert!(!was("views/9406_sms_active_throughput.cfg"));
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("t.cfgs");
        fs::create_dir_all(old.join("views/gpu_metrics")).unwrap();
        fs::write(old.join("views/kernels.cfg"), "old").unwrap();
        fs::write(
            old.join("views/gpu_metrics/9400_gpc_clock_frequency_mhz.cfg"),
            "old",
        )
        .unwrap();
        assert!(is_ours(&old));
        fs::write(old.join("views/gpu_metrics/mine.cfg"), "mine").unwrap();
        assert!(!is_ours(&old));
    }

    #[test]
    fn owners_parse_with_dotted_hosts() {
        assert_eq!(parse_owner("node01.4242.aB3dE9"), Some(("node01", 4242)));
        assert_eq!(parse_owner("a_b.7.xxxxxx"), Some(("a_b", 7)));
        assert_eq!(parse_owner("node.x.abcdef"), None);
    }

    #[test]
    fn old_temporaries_are_recognised_exactly() {
        assert!(is_old_temporary(".t.prv.AbC123.tmp", "t"));
        assert!(is_old_temporary(".t.prv.gz.AbC123.tmp", "t"));
        assert!(is_old_temporary(".t.cfgs.AbC123", "t.cfgs"));
        assert!(!is_old_temporary(".t.prv.AbC1234.tmp", "t"));
        assert!(!is_old_temporary(".t.prv.AbC123", "t"));
        assert!(!is_old_temporary("t.prv", "t"));
        assert!(!is_old_temporary(".t.cfgs.AbC123", "t"));
    }
}
