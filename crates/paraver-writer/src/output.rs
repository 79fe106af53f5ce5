//! The output file names and the sinks the trace is written through (plain or
//! gzip members).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

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

    /// The same file names in `dir` (a staging directory).
    pub fn in_dir(&self, dir: &Path) -> OutputPaths {
        let moved = |p: &Path| dir.join(p.file_name().unwrap_or_default());
        OutputPaths {
            prv: moved(&self.prv),
            pcf: moved(&self.pcf),
            row: moved(&self.row),
            gzip: self.gzip,
        }
    }

    /// The trace's file names: `.prv[.gz]`, `.pcf`, `.row`.
    pub fn files(&self) -> [&Path; 3] {
        [&self.prv, &self.pcf, &self.row]
    }
}

/// A new output file (created or truncated). The caller decides where: the
/// command line writes into a staging directory and renames the complete set into
/// place, so atomicity and interrupts are its business, not the writer's.
pub struct OutputFile {
    path: PathBuf,
    file: File,
}

impl OutputFile {
    pub fn create(path: &Path) -> Result<Self, WriteError> {
        let file = File::create(path).map_err(|e| WriteError::io(path, e))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The file at `path`, created if missing, not truncated (the caller
    /// writes at offsets and sets its length).
    pub fn open_or_create(path: &Path) -> Result<Self, WriteError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| WriteError::io(path, e))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the file to disk (so a rename after it never exposes a short file).
    pub fn finish(self) -> Result<(), WriteError> {
        self.file
            .sync_all()
            .map_err(|e| WriteError::io(&self.path, e))
    }
}

/// A buffered writer over an output file: plain, or gzip-compressed. A `.prv.gz`
/// is a series of gzip members (one per block of text, like pigz's): zlib, and so
/// Paraver, reads them as one stream, and blocks can be compressed on any thread
/// (see [`TraceSink::write_member`]). Text written directly is compressed on a
/// thread of its own, so that compression overlaps formatting.
pub enum TraceSink<'a> {
    Plain(BufWriter<Writeback<&'a File>>),
    /// A plain trace written past the page cache (see [`crate::direct`]).
    #[cfg(target_os = "linux")]
    Direct(crate::direct::DirectWriter),
    Gzip(GzipMembers<'a>),
    ThreadedGzip(ThreadedGzip),
}

const BUFFER: usize = 1 << 20;
/// Buffer of a plain sink: small, so that the merge's blocks of lines (most of
/// them larger) bypass it and go to the file without another copy.
const PLAIN_BUFFER: usize = 64 << 10;

impl<'a> TraceSink<'a> {
    /// The sink of a new output file: a plain trace is written directly to
    /// disk where the file system suits it (see [`crate::direct`]), through
    /// the page cache otherwise.
    pub fn for_output(output: &'a OutputFile, gzip: bool) -> Self {
        #[cfg(target_os = "linux")]
        if !gzip {
            if let Some(direct) = crate::direct::DirectWriter::open(output.path(), output.file()) {
                return TraceSink::Direct(direct);
            }
        }
        Self::new(output.file(), gzip)
    }

    /// A sink writing `file` through the page cache.
    pub fn new(file: &'a File, gzip: bool) -> Self {
        if !gzip {
            let file = Writeback::new(file);
            return TraceSink::Plain(BufWriter::with_capacity(PLAIN_BUFFER, file));
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
            #[cfg(target_os = "linux")]
            TraceSink::Direct(d) => d.finish().map(|_| ()),
            TraceSink::Gzip(gz) => gz.finish(),
            TraceSink::ThreadedGzip(t) => t.finish(),
        }
    }

    /// Whether the sink compresses: then text may be handed over already
    /// compressed, as members made by [`gzip_member`].
    pub fn compresses(&self) -> bool {
        matches!(self, TraceSink::Gzip(_) | TraceSink::ThreadedGzip(_))
    }

    /// Appends a gzip member made by [`gzip_member`] after everything written so
    /// far (plain sinks take `member` as text).
    pub fn write_member(&mut self, member: Vec<u8>) -> std::io::Result<()> {
        match self {
            TraceSink::Plain(w) => w.write_all(&member),
            #[cfg(target_os = "linux")]
            TraceSink::Direct(d) => d.write_all(&member),
            TraceSink::Gzip(gz) => gz.write_member(&member),
            TraceSink::ThreadedGzip(t) => t.write_member(member),
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            TraceSink::Plain(w) => w,
            #[cfg(target_os = "linux")]
            TraceSink::Direct(w) => w,
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

/// Bytes after which a [`Writeback`] file starts writing them to disk.
const WRITEBACK_STEP: u64 = 8 << 20;

/// A file written from its start that asks the kernel to begin writing each
/// 8 MiB to disk as soon as they are written, in the background: the `fsync`
/// that precedes the rename of the output into place then waits for the last
/// few MiB only, not for the whole trace (0.1 s of a 1 s conversion writing
/// 200 MB here, with the disk idle meanwhile).
pub struct Writeback<F> {
    file: F,
    written: u64,
    started: u64,
}

impl<F: Write + AsFd> Writeback<F> {
    fn new(file: F) -> Self {
        Writeback {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl<F: Write + AsFd> Write for Writeback<F> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_STEP {
            start_writeback(self.file.as_fd(), self.started, self.written - self.started);
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Starts writing `len` bytes of `file` from `offset` to disk, without waiting.
/// Only a hint: whether it works changes nothing but when the final `fsync`
/// returns.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn start_writeback(file: BorrowedFd, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range takes a descriptor (open for the whole call: it is
    // borrowed) and numbers; it touches none of our memory.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: BorrowedFd, _offset: u64, _len: u64) {}

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
                let mut out = BufWriter::with_capacity(BUFFER, Writeback::new(file));
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
    fn staged_paths_keep_the_names() {
        let p = OutputPaths::for_trace(Path::new("/x/run.prv.gz")).unwrap();
        let s = p.in_dir(Path::new("/y/stage"));
        assert_eq!(s.prv, Path::new("/y/stage/run.prv.gz"));
        assert_eq!(s.pcf, Path::new("/y/stage/run.pcf"));
        assert!(s.gzip);
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
