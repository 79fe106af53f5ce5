//! The output file set, written under temporary names and renamed only when complete,
//! so a failed or interrupted run never leaves a partial trace behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use flate2::write::GzEncoder;
use flate2::Compression;
use tempfile::NamedTempFile;

use crate::WriteError;

/// `NAME.prv` or `NAME.prv.gz`, with `NAME.pcf` and `NAME.row` beside it.
#[derive(Clone, Debug)]
pub struct OutputPaths {
    pub prv: PathBuf,
    pub pcf: PathBuf,
    pub row: PathBuf,
    pub gzip: bool,
}

impl OutputPaths {
    pub fn for_trace(prv: &Path) -> Result<Self, WriteError> {
        let name = prv.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let (stem, gzip) = if let Some(stem) = name.strip_suffix(".prv.gz") {
            (stem, true)
        } else if let Some(stem) = name.strip_suffix(".prv") {
            (stem, false)
        } else {
            return Err(WriteError::BadOutputName(prv.to_path_buf()));
        };
        if stem.is_empty() {
            return Err(WriteError::BadOutputName(prv.to_path_buf()));
        }
        let sibling = |ext: &str| prv.with_file_name(format!("{stem}.{ext}"));
        Ok(OutputPaths {
            prv: prv.to_path_buf(),
            pcf: sibling("pcf"),
            row: sibling("row"),
            gzip,
        })
    }

    /// Base name without extension (`NAME`).
    pub fn stem(&self) -> String {
        let name = self
            .pcf
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("trace");
        name.trim_end_matches(".pcf").to_string()
    }
}

/// Temporary files being written, for an interrupt handler to remove: destructors
/// do not run when a signal ends the process.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Set once the pending files were removed: files created afterwards (while the
/// process is exiting) are removed at once.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Creates something on disk and registers its path in one step under the
/// registry's lock, so an interrupt cannot fall between the two.
pub fn create_tracked<T>(
    create: impl FnOnce() -> std::io::Result<T>,
    path_of: impl Fn(&T) -> &Path,
) -> std::io::Result<(T, PendingGuard)> {
    let mut pending = PENDING
        .lock()
        .map_err(|_| std::io::Error::other("poisoned lock"))?;
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted",
        ));
    }
    let created = create()?;
    let path = path_of(&created).to_path_buf();
    pending.push(path.clone());
    Ok((created, PendingGuard(path)))
}

/// Registers `path` until the returned guard is dropped.
pub fn track_pending(path: &Path) -> PendingGuard {
    if let Ok(mut p) = PENDING.lock() {
        if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            remove_path(path);
        } else {
            p.push(path.to_path_buf());
        }
    }
    PendingGuard(path.to_path_buf())
}

/// Removes every temporary file still being written and ends the process with
/// `code`, keeping the registry locked so no other thread can create or commit a
/// file in between (for an interrupt handler).
pub fn remove_pending_files_and_exit(code: i32, message: &str) -> ! {
    let pending = PENDING.lock();
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Ok(mut pending) = pending {
        for path in pending.drain(..) {
            remove_path(&path);
        }
        eprintln!("{message}");
        std::process::exit(code);
    }
    eprintln!("{message}");
    std::process::exit(code)
}

/// Runs `commit` (a rename into place) unless the run was interrupted, under the
/// registry's lock so an interrupt cannot remove files half-way through it.
pub fn commit_unless_interrupted<T>(
    commit: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let _held = PENDING.lock();
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted",
        ));
    }
    commit()
}

fn remove_path(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// Unregisters its path when dropped.
pub struct PendingGuard(PathBuf);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if let Ok(mut p) = PENDING.lock() {
            if let Some(i) = p.iter().position(|q| *q == self.0) {
                p.swap_remove(i);
            }
        }
    }
}

/// A file being written next to its final path; dropped without `commit`, it vanishes.
pub struct PendingFile {
    target: PathBuf,
    temp: NamedTempFile,
    _guard: PendingGuard,
}

impl PendingFile {
    pub fn create(target: &Path) -> Result<Self, WriteError> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let prefix = format!(
            ".{}.",
            target.file_name().and_then(|n| n.to_str()).unwrap_or("out")
        );
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Temporary files are private by default; the trace gets the permissions of
        // any new file (0666 less the umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let (temp, _guard) = create_tracked(|| builder.tempfile_in(dir), |t| t.path())
            .map_err(|e| WriteError::io(target, e))?;
        Ok(PendingFile {
            target: target.to_path_buf(),
            temp,
            _guard,
        })
    }

    pub fn file(&self) -> &File {
        self.temp.as_file()
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes to disk and renames over the final name.
    pub fn commit(self) -> Result<(), WriteError> {
        let target = self.target;
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| WriteError::io(&target, e))?;
        commit_unless_interrupted(|| self.temp.persist(&target).map_err(|e| e.error))
            .map_err(|e| WriteError::io(&target, e))?;
        Ok(())
    }
}

/// A buffered writer over a pending file: plain, or gzip-compressed. A `.prv.gz`
/// is a series of gzip members (one per block of text, like pigz's): zlib, and so
/// Paraver, reads them as one stream, and blocks can be compressed on any thread
/// (see [`TraceSink::write_member`]). Text written directly is compressed on a
/// thread of its own, so that compression overlaps formatting.
pub enum TraceSink<'a> {
    Plain(BufWriter<&'a File>),
    Gzip(GzipMembers<'a>),
    ThreadedGzip(ThreadedGzip),
}

const BUFFER: usize = 1 << 20;

impl<'a> TraceSink<'a> {
    pub fn new(file: &'a File, gzip: bool) -> Self {
        if !gzip {
            return TraceSink::Plain(BufWriter::with_capacity(BUFFER, file));
        }
        match file.try_clone().and_then(ThreadedGzip::start) {
            Ok(threaded) => TraceSink::ThreadedGzip(threaded),
            Err(_) => TraceSink::Gzip(GzipMembers {
                block: Vec::with_capacity(BUFFER),
                out: BufWriter::with_capacity(BUFFER, file),
            }),
        }
    }

    pub fn finish(self) -> std::io::Result<()> {
        match self {
            TraceSink::Plain(mut w) => w.flush(),
            TraceSink::Gzip(gz) => gz.finish(),
            TraceSink::ThreadedGzip(t) => t.finish(),
        }
    }

    /// Whether the sink compresses: then text may be handed over already
    /// compressed, as members made by [`gzip_member`].
    pub fn compresses(&self) -> bool {
        !matches!(self, TraceSink::Plain(_))
    }

    /// Appends a gzip member made by [`gzip_member`] after everything written so
    /// far (plain sinks take `member` as text).
    pub fn write_member(&mut self, member: Vec<u8>) -> std::io::Result<()> {
        match self {
            TraceSink::Plain(w) => w.write_all(&member),
            TraceSink::Gzip(gz) => gz.write_member(&member),
            TraceSink::ThreadedGzip(t) => t.write_member(member),
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            TraceSink::Plain(w) => w,
            TraceSink::Gzip(w) => w,
            TraceSink::ThreadedGzip(w) => w,
        }
    }
}

/// Fast compression: the trace is written once and read by Paraver through zlib.
fn gzip_encoder<W: Write>(inner: W) -> GzEncoder<W> {
    GzEncoder::new(inner, Compression::fast())
}

/// `text` compressed as one gzip member.
pub fn gzip_member(text: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut member = Vec::with_capacity(text.len() / 3 + 64);
    write_gzip_member(&mut member, text)?;
    Ok(member)
}

/// Writes `text` as one gzip member into `out`.
fn write_gzip_member(out: &mut impl Write, text: &[u8]) -> std::io::Result<()> {
    let mut gz = gzip_encoder(out);
    gz.write_all(text)?;
    gz.finish().map(|_| ())
}

/// Compression on the writing thread (when no thread can be started): text in
/// blocks, each compressed as a member.
pub struct GzipMembers<'a> {
    block: Vec<u8>,
    out: BufWriter<&'a File>,
}

impl GzipMembers<'_> {
    fn write_block(&mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            write_gzip_member(&mut self.out, &self.block)?;
            self.block.clear();
        }
        Ok(())
    }

    fn write_member(&mut self, member: &[u8]) -> std::io::Result<()> {
        self.write_block()?;
        self.out.write_all(member)
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.write_block()?;
        self.out.flush()
    }
}

impl Write for GzipMembers<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.block.extend_from_slice(buf);
        if self.block.len() >= BUFFER {
            self.write_block()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the compression thread is handed: text to compress, or a member
/// compressed elsewhere.
enum GzBlock {
    Text(Vec<u8>),
    Member(Vec<u8>),
}

impl Write for TraceSink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

/// Collects text in 1 MiB blocks and hands them to a thread that compresses each
/// as a gzip member and writes them, with the members it is given, in order.
pub struct ThreadedGzip {
    block: Vec<u8>,
    blocks: Option<std::sync::mpsc::SyncSender<GzBlock>>,
    worker: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl ThreadedGzip {
    fn start(file: File) -> std::io::Result<Self> {
        let (blocks, received) = std::sync::mpsc::sync_channel::<GzBlock>(4);
        let worker = std::thread::Builder::new()
            .name("gzip".into())
            .spawn(move || {
                let mut out = BufWriter::with_capacity(BUFFER, file);
                for block in received {
                    match block {
                        GzBlock::Text(text) => write_gzip_member(&mut out, &text)?,
                        GzBlock::Member(member) => out.write_all(&member)?,
                    }
                }
                out.flush()
            })?;
        Ok(ThreadedGzip {
            block: Vec::with_capacity(BUFFER),
            blocks: Some(blocks),
            worker: Some(worker),
        })
    }

    fn send_block(&mut self) -> std::io::Result<()> {
        let block = std::mem::replace(&mut self.block, Vec::with_capacity(BUFFER));
        self.send(GzBlock::Text(block))
    }

    fn write_member(&mut self, member: Vec<u8>) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.send_block()?;
        }
        self.send(GzBlock::Member(member))
    }

    fn send(&mut self, block: GzBlock) -> std::io::Result<()> {
        let sent = self.blocks.as_ref().map(|tx| tx.send(block));
        match sent {
            Some(Ok(())) => Ok(()),
            // The worker stopped: its error comes out of `finish`.
            _ => Err(self
                .stop()
                .err()
                .unwrap_or_else(|| std::io::ErrorKind::BrokenPipe.into())),
        }
    }

    /// Ends the stream and waits for the worker's result.
    fn stop(&mut self) -> std::io::Result<()> {
        self.blocks = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the compression thread failed")),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.send_block()?;
        }
        self.stop()
    }
}

impl Write for ThreadedGzip {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.block.extend_from_slice(buf);
        if self.block.len() >= BUFFER {
            self.send_block()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ThreadedGzip {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_trace() {
        let p = OutputPaths::for_trace(Path::new("/x/run.prv.gz")).unwrap();
        assert!(p.gzip);
        assert_eq!(p.pcf, Path::new("/x/run.pcf"));
        assert_eq!(p.row, Path::new("/x/run.row"));
        assert_eq!(p.stem(), "run");
        assert!(OutputPaths::for_trace(Path::new("run.txt")).is_err());
        assert!(OutputPaths::for_trace(Path::new(".prv")).is_err());
    }

    #[test]
    fn uncommitted_files_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.prv");
        {
            let f = PendingFile::create(&target).unwrap();
            let mut w = TraceSink::new(f.file(), false);
            w.write_all(b"x").unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let f = PendingFile::create(&target).unwrap();
        f.commit().unwrap();
        assert!(target.exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let plain = dir.path().join("plain");
            std::fs::File::create(&plain).unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(
                mode(&target),
                mode(&plain),
                "same permissions as any new file"
            );
        }
    }
}

#[cfg(test)]
mod gzip_tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn threaded_gzip_writes_everything_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv.gz");
        let file = File::create(&path).unwrap();
        let mut sink = TraceSink::new(&file, true);
        assert!(matches!(sink, TraceSink::ThreadedGzip(_)));
        let mut expected = Vec::new();
        for i in 0..300_000u32 {
            let line = format!("2:0:1:1:1:{i}:63000006:{}\n", i % 97);
            sink.write_all(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        sink.finish().unwrap();
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(File::open(&path).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        assert!(text == expected);
    }

    /// Text and members compressed elsewhere, in any mix, read back as one text in
    /// the order written, with the threaded sink and the one without a thread.
    #[test]
    fn members_and_text_interleave_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for threaded in [true, false] {
            let path = dir.path().join(format!("m{threaded}.prv.gz"));
            let file = File::create(&path).unwrap();
            let mut sink = if threaded {
                TraceSink::new(&file, true)
            } else {
                TraceSink::Gzip(GzipMembers {
                    block: Vec::new(),
                    out: BufWriter::new(&file),
                })
            };
            assert!(sink.compresses());
            let mut expected = Vec::new();
            for i in 0..2_000u32 {
                let text = format!("line {i}\n").repeat(1 + (i as usize % 300));
                if i % 3 == 0 {
                    sink.write_member(gzip_member(text.as_bytes()).unwrap())
                        .unwrap();
                } else {
                    sink.write_all(text.as_bytes()).unwrap();
                }
                expected.extend_from_slice(text.as_bytes());
            }
            sink.finish().unwrap();
            let mut text = Vec::new();
            flate2::read::MultiGzDecoder::new(File::open(&path).unwrap())
                .read_to_end(&mut text)
                .unwrap();
            assert!(text == expected, "threaded: {threaded}");
        }
    }
}
