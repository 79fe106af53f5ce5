//! Spilling sorted chunks of a run to temporary files when its memory share is
//! used, and reading them back for the merge. Files are anonymous (unlinked at
//! creation), so nothing is left behind whatever happens to the process. A chunk
//! may also be a section of a named file (a part of a sharded conversion, see
//! [`crate::saved::SavedRun`]); such a section carries a checksum that the merge
//! checks as it reads.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::record::{Comm, EventPair, LocalThread, Record, Value};
use crate::view::{Payload, View};

/// Memory shared by every run of one conversion.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    retained: AtomicUsize,
}

impl MemoryBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            retained: AtomicUsize::new(0),
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Reserves `bytes` of the half of the limit that finished runs may keep in
    /// memory until the merge; `false` when it is used up (the caller spills).
    fn try_retain(&self, bytes: usize) -> bool {
        let cap = self.limit / 2;
        self.retained
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                (held + bytes <= cap).then_some(held + bytes)
            })
            .is_ok()
    }
}

/// When and where a run spills.
#[derive(Clone, Debug)]
pub struct SpillPolicy {
    pub dir: PathBuf,
    /// A run's buffer is sorted and written out when it holds this many bytes.
    pub chunk_bytes: usize,
    pub budget: Arc<MemoryBudget>,
}

impl SpillPolicy {
    /// Whether a finished run may keep `bytes` in memory for the merge.
    pub(crate) fn may_retain(&self, bytes: usize) -> bool {
        self.budget.try_retain(bytes)
    }
}

/// A sorted chunk on disk: a whole anonymous spill file, or a section of a part
/// file. Readers share the file (positional reads), so a chunk costs no file
/// descriptor of its own.
#[derive(Debug)]
pub struct SpilledChunk {
    file: Arc<File>,
    offset: u64,
    bytes: u64,
    pub records: u64,
    /// CRC-32 of the chunk's bytes, checked as they are read back.
    checksum: Option<u32>,
    /// The file named in errors (a part file); `None` for anonymous spill files.
    origin: Option<PathBuf>,
    /// Every [`INDEX_STEP`]-th record's time and place, from the first: what lets
    /// the merge read only one span of time of the chunk. Empty for a section of
    /// a part file without one (then read whole, in order).
    index: Vec<IndexEntry>,
    /// For a section of a part file with an index: the CRC-32 of each block of
    /// records between two index entries (the last up to the end), checked as a
    /// span of time is read (the whole section's `checksum` covers whole reads).
    block_checksums: Vec<u32>,
    /// The time of the last record (`i64::MAX` when not known).
    last_time: i64,
    /// Records name threads (and receivers) below this: checked as a section of a
    /// part file is read (another program's file may hold anything its checksum
    /// covers); `u32::MAX` for the writer's own spill files.
    threads: u32,
}

/// Records between two entries of a spilled chunk's time index: 16 bytes per 64
/// records (a quarter of a byte per record) keeps what a span of time reads
/// beyond its own records to two entries' worth.
pub(crate) const INDEX_STEP: usize = 64;

/// A record of a spilled chunk: its time (on its run's clock) and where it
/// starts, from the chunk's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct IndexEntry {
    pub time: i64,
    pub offset: u64,
}

/// Records `first..` (from byte `start`, up to byte `end`, `records` of them) of
/// a spilled chunk: what a span of time reads of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkSpan {
    pub start: u64,
    pub end: u64,
    pub records: u64,
}

impl SpilledChunk {
    /// `bytes` bytes at `offset` of `file` holding `records` records, whose CRC-32
    /// is `checksum`; `origin` names the file in errors.
    /// Its records name threads below `threads` (the run's): a record naming
    /// another is an error when read.
    pub fn section(
        file: Arc<File>,
        offset: u64,
        bytes: u64,
        records: u64,
        checksum: u32,
        origin: PathBuf,
        threads: u32,
    ) -> Self {
        SpilledChunk {
            file,
            offset,
            bytes,
            records,
            checksum: Some(checksum),
            origin: Some(origin),
            index: Vec::new(),
            block_checksums: Vec::new(),
            last_time: i64::MAX,
            threads,
        }
    }

    /// A [`SpilledChunk::section`] with its time index: `index` (every
    /// [`INDEX_STEP`]-th record's time and offset), the CRC-32 of each block
    /// of records it delimits, and the time of the last record. An index that
    /// does not fit the section (another program's file) is an error.
    pub(crate) fn indexed_section(
        section: SpilledChunk,
        index: Vec<IndexEntry>,
        block_checksums: Vec<u32>,
        last_time: i64,
    ) -> Result<Self, String> {
        let blocks = section.records.div_ceil(INDEX_STEP as u64);
        let offsets_fit = index.first().is_none_or(|e| e.offset == 0)
            && index
                .windows(2)
                .all(|w| w[0].offset < w[1].offset && w[0].time <= w[1].time)
            && index.last().is_none_or(|e| e.offset < section.bytes);
        if index.len() as u64 != blocks || block_checksums.len() != index.len() || !offsets_fit {
            return Err(format!(
                "a time index of {} entries for {} records",
                index.len(),
                section.records
            ));
        }
        Ok(SpilledChunk {
            index,
            block_checksums,
            last_time,
            ..section
        })
    }

    /// The time of the chunk's last record, on its run's clock (`i64::MAX` when
    /// not known).
    pub(crate) fn last_time(&self) -> i64 {
        self.last_time
    }

    /// Whether the chunk has a time index (see [`SpilledChunk::span`]).
    pub(crate) fn is_indexed(&self) -> bool {
        !self.index.is_empty() || self.records == 0
    }

    /// The index entries: every [`INDEX_STEP`]-th record's time and offset.
    pub(crate) fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// The records from index entry `from` up to entry `to` (excluded; the
    /// chunk's end when past the last entry).
    pub(crate) fn span(&self, from: usize, to: usize) -> ChunkSpan {
        let at = |entry: usize| match self.index.get(entry) {
            Some(e) => (e.offset, (entry * INDEX_STEP) as u64),
            None => (self.bytes, self.records),
        };
        let ((start, first), (end, last)) = (at(from), at(to));
        ChunkSpan {
            start,
            end,
            records: last - first,
        }
    }

    /// Size on disk.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Copies the chunk's bytes to `out`; returns their CRC-32.
    pub fn copy_to(&self, out: &mut impl Write) -> io::Result<u32> {
        let mut reader = SectionReader::new(self, WRITE_BUFFER);
        let mut crc = crc32fast::Hasher::new();
        while reader.fill()? {
            let bytes = reader.take_buffered();
            crc.update(bytes);
            out.write_all(bytes)?;
        }
        Ok(crc.finalize())
    }
}

const TAG_STATE: u8 = 0;
const TAG_EVENTS: u8 = 1;
const TAG_CLOSING: u8 = 2;
const TAG_COMM: u8 = 3;
const VALUE_RAW: u8 = 0;
const VALUE_NAME: u8 = 1;
const WRITE_BUFFER: usize = 1 << 20;
/// Small: the merge may read hundreds of chunks at once.
pub(crate) const READ_BUFFER: usize = 64 << 10;
/// The least a chunk reader buffers, however many chunks are merged at once.
pub(crate) const MIN_READ_BUFFER: usize = 4 << 10;

/// A buffered reader of a whole spill file, whatever was read or written before.
pub(crate) fn read_from_start(file: &File) -> io::Result<BufReader<File>> {
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(0))?;
    Ok(BufReader::with_capacity(READ_BUFFER, file))
}

/// A buffered writer of a new anonymous spill file in `dir`.
pub(crate) fn spill_file(dir: &std::path::Path) -> io::Result<(File, BufWriter<File>)> {
    let file = tempfile::tempfile_in(dir)?;
    let writer = BufWriter::with_capacity(WRITE_BUFFER, file.try_clone()?);
    Ok((file, writer))
}

/// Writes `records` (already sorted) with their payloads inline.
pub(crate) fn write_chunk(
    dir: &std::path::Path,
    records: impl Iterator<Item = (LocalThread, Record)>,
    count: usize,
    payload: &Payload,
) -> io::Result<SpilledChunk> {
    let (file, mut out) = spill_file(dir)?;
    let mut index = Vec::with_capacity(count.div_ceil(INDEX_STEP));
    let mut offset = 0;
    let mut last_time = i64::MAX;
    for (n, (thread, r)) in records.enumerate() {
        last_time = r.time;
        let view = View::of(r.body, payload);
        if n % INDEX_STEP == 0 {
            index.push(IndexEntry {
                time: r.time,
                offset,
            });
        }
        encode_view(&mut out, r.time, thread, &view)?;
        offset += encoded_len(&view);
    }
    out.flush()?;
    let bytes = out.get_mut().stream_position()?;
    debug_assert_eq!(bytes, offset);
    drop(out);
    Ok(SpilledChunk {
        file: Arc::new(file),
        offset: 0,
        bytes,
        records: count as u64,
        checksum: None,
        origin: None,
        index,
        block_checksums: Vec::new(),
        last_time,
        threads: u32::MAX,
    })
}

/// Bytes [`encode_view`] writes for a record of body `body`.
fn encoded_len(body: &View) -> u64 {
    let head = 1 + 8 + 4;
    let body = match body {
        View::State { .. } => 8 + 4,
        View::Events { pairs, .. } => 4 + 13 * pairs.len(),
        View::Comm(_) => 5 * 8 + 4,
    };
    (head + body) as u64
}

/// A writer that counts and checksums what goes through it.
pub(crate) struct Checksummed<W> {
    inner: W,
    pub bytes: u64,
    pub crc: crc32fast::Hasher,
}

impl<W: Write> Checksummed<W> {
    pub fn new(inner: W) -> Self {
        Checksummed {
            inner,
            bytes: 0,
            crc: crc32fast::Hasher::new(),
        }
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Reads a chunk's bytes with positional reads into a buffer of its own,
/// checking the checksum once the last byte is in.
struct SectionReader {
    file: Arc<File>,
    next: u64,
    end: u64,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// The whole section's checksum (boxed, as `blocks`: a chunk reader
    /// stays small next to a block in memory).
    crc: Option<Box<(crc32fast::Hasher, u32)>>,
    /// A span of an indexed section: its blocks' checksums.
    blocks: Option<Box<BlockChecks>>,
    origin: Option<PathBuf>,
}

/// The blocks of records a span of an indexed section covers: where each ends
/// in the file and its CRC-32, checked as the span is read.
struct BlockChecks {
    ends: Vec<(u64, u32)>,
    next: usize,
    crc: crc32fast::Hasher,
}

impl BlockChecks {
    /// The blocks of `chunk` that bytes `start..end` cover (an indexed span
    /// starts and ends where blocks do).
    fn of(chunk: &SpilledChunk, start: u64, end: u64) -> Self {
        let first = chunk.index.partition_point(|e| e.offset < start);
        let ends = (first..chunk.index.len())
            .map(|b| {
                let block_end = chunk.index.get(b + 1).map_or(chunk.bytes, |e| e.offset);
                (chunk.offset + block_end, chunk.block_checksums[b])
            })
            .take_while(|&(block_end, _)| block_end <= chunk.offset + end)
            .collect();
        BlockChecks {
            ends,
            next: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    /// Checks `bytes`, read at file offset `at`: false on a block whose bytes
    /// do not match its checksum.
    fn check(&mut self, mut at: u64, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            let Some(&(end, expected)) = self.ends.get(self.next) else {
                return false;
            };
            let take = (end - at).min(bytes.len() as u64) as usize;
            self.crc.update(&bytes[..take]);
            (at, bytes) = (at + take as u64, &bytes[take..]);
            if at == end {
                if std::mem::take(&mut self.crc).finalize() != expected {
                    return false;
                }
                self.next += 1;
            }
        }
        true
    }
}

impl SectionReader {
    fn new(chunk: &SpilledChunk, buffer: usize) -> Self {
        Self::of_bytes(chunk, 0, chunk.bytes, vec![0; buffer.max(1)])
    }

    /// A reader of the chunk's bytes `start..end` (a checked section is read
    /// whole) into `buf` (not empty; its length is what one read asks for).
    fn of_bytes(chunk: &SpilledChunk, start: u64, end: u64, buf: Vec<u8>) -> Self {
        let whole = (start, end) == (0, chunk.bytes);
        let by_blocks = chunk.checksum.is_some() && !whole;
        debug_assert!(!by_blocks || !chunk.block_checksums.is_empty());
        debug_assert!(!buf.is_empty());
        SectionReader {
            file: Arc::clone(&chunk.file),
            next: chunk.offset + start,
            end: chunk.offset + end,
            buf,
            pos: 0,
            len: 0,
            crc: chunk
                .checksum
                .filter(|_| !by_blocks)
                .map(|c| Box::new((crc32fast::Hasher::new(), c))),
            blocks: by_blocks.then(|| Box::new(BlockChecks::of(chunk, start, end))),
            origin: chunk.origin.clone(),
        }
    }

    /// Refills the buffer when it is used up; `false` at the end of the chunk.
    fn fill(&mut self) -> io::Result<bool> {
        if self.pos < self.len {
            return Ok(true);
        }
        if self.next == self.end {
            return Ok(false);
        }
        let want = (self.end - self.next).min(self.buf.len() as u64) as usize;
        self.file
            .read_exact_at(&mut self.buf[..want], self.next)
            .map_err(|e| self.damaged(e))?;
        if let Some(blocks) = &mut self.blocks {
            if !blocks.check(self.next, &self.buf[..want]) {
                return Err(self.damaged(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "checksum mismatch",
                )));
            }
        }
        self.next += want as u64;
        (self.pos, self.len) = (0, want);
        if let Some(check) = &mut self.crc {
            let (crc, expected) = &mut **check;
            crc.update(&self.buf[..want]);
            if self.next == self.end && crc.clone().finalize() != *expected {
                return Err(self.damaged(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "checksum mismatch",
                )));
            }
        }
        Ok(true)
    }

    /// The next `N` bytes: straight from the buffer when it holds them (nearly
    /// always), else across a refill.
    #[inline]
    fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        match self.buf.get(self.pos..self.pos + N) {
            Some(bytes) if self.pos + N <= self.len => {
                b.copy_from_slice(bytes);
                self.pos += N;
            }
            _ => self.read_exact(&mut b).map_err(|e| self.damaged(e))?,
        }
        Ok(b)
    }

    /// The buffered bytes not consumed yet, consumed.
    fn take_buffered(&mut self) -> &[u8] {
        let bytes = &self.buf[self.pos..self.len];
        self.pos = self.len;
        bytes
    }

    /// An error that names the part file the chunk belongs to (once).
    fn damaged(&self, e: io::Error) -> io::Error {
        let named = e.get_ref().is_some_and(|inner| inner.is::<DamagedPart>());
        match &self.origin {
            Some(path) if !named => io::Error::new(
                e.kind(),
                DamagedPart(format!("{}: damaged part file ({e})", path.display())),
            ),
            _ => e,
        }
    }
}

/// A read error in a part file, with the file's name.
#[derive(Debug)]
struct DamagedPart(String);

impl std::fmt::Display for DamagedPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DamagedPart {}

impl Read for SectionReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.fill()? {
            return Ok(0);
        }
        let n = out.len().min(self.len - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Writes one record: its tag, time and thread, then its body with the payload
/// inline. Always inlined: a call per record with the view built in memory
/// cost 60 instructions per spilled record once `write_chunk` had a second
/// caller (callgrind, issue 28).
#[inline(always)]
pub(crate) fn encode_view(
    out: &mut impl Write,
    time: i64,
    thread: LocalThread,
    body: &View,
) -> io::Result<()> {
    let tag = match body {
        View::State { .. } => TAG_STATE,
        View::Events { closing: false, .. } => TAG_EVENTS,
        View::Events { closing: true, .. } => TAG_CLOSING,
        View::Comm(_) => TAG_COMM,
    };
    out.write_all(&[tag])?;
    out.write_all(&time.to_le_bytes())?;
    out.write_all(&thread.to_le_bytes())?;
    match body {
        View::State { end, state } => {
            out.write_all(&end.to_le_bytes())?;
            out.write_all(&state.to_le_bytes())
        }
        View::Events { pairs, .. } => {
            out.write_all(&(pairs.len() as u32).to_le_bytes())?;
            for p in pairs.iter() {
                let (kind, value) = match p.value() {
                    Value::Raw(v) => (VALUE_RAW, v),
                    Value::Name(h) => (VALUE_NAME, i64::from(h)),
                };
                out.write_all(&p.ty.to_le_bytes())?;
                out.write_all(&[kind])?;
                out.write_all(&value.to_le_bytes())?;
            }
            Ok(())
        }
        View::Comm(c) => {
            for v in [
                c.send_physical,
                c.recv_logical,
                c.recv_physical,
                c.size,
                c.tag,
            ] {
                out.write_all(&v.to_le_bytes())?;
            }
            out.write_all(&c.receiver.to_le_bytes())
        }
    }
}

/// A record read back from a chunk; its payload lives in the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodedBody {
    State { end: i64, state: u32 },
    Events { closing: bool },
    Comm,
}

/// Reads a chunk back one record at a time, reusing its buffers.
pub(crate) struct ChunkReader {
    input: SectionReader,
    left: u64,
    /// The chunk's [`SpilledChunk::threads`].
    threads: u32,
    pub time: i64,
    pub thread: LocalThread,
    pub body: DecodedBody,
    pub pairs: Vec<EventPair>,
    pub comm: Comm,
}

impl ChunkReader {
    /// A reader of `chunk` with a buffer of `buffer` bytes.
    pub fn open(chunk: &SpilledChunk, buffer: usize) -> io::Result<Self> {
        Ok(Self::reading(
            SectionReader::new(chunk, buffer),
            chunk.records,
            chunk.threads,
        ))
    }

    /// A reader of the records of `span` of `chunk` (see [`SpilledChunk::span`]),
    /// reading at most `most` bytes at a time into `buffer` (reused: it is only
    /// zeroed where it grows; [`ChunkReader::into_buffer`] gives it back).
    pub fn open_span(
        chunk: &SpilledChunk,
        span: ChunkSpan,
        most: usize,
        mut buffer: Vec<u8>,
    ) -> Self {
        let size = most.min((span.end - span.start) as usize).max(1);
        // A longer buffer reads the span in fewer reads.
        if buffer.len() < size {
            buffer.resize(size, 0);
        }
        Self::reading(
            SectionReader::of_bytes(chunk, span.start, span.end, buffer),
            span.records,
            chunk.threads,
        )
    }

    /// The reader's buffer, for another reader.
    pub fn into_buffer(self) -> Vec<u8> {
        self.input.buf
    }

    fn reading(input: SectionReader, records: u64, threads: u32) -> Self {
        ChunkReader {
            input,
            left: records,
            threads,
            time: 0,
            thread: 0,
            body: DecodedBody::Events { closing: false },
            pairs: Vec::new(),
            comm: Comm {
                send_physical: 0,
                receiver: 0,
                recv_logical: 0,
                recv_physical: 0,
                size: 0,
                tag: 0,
            },
        }
    }

    /// Reads the next record into `self`; `false` at the end of the chunk.
    pub fn advance(&mut self) -> io::Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        let tag = self.u8()?;
        self.time = self.i64()?;
        self.thread = self.u32()?;
        if self.thread >= self.threads {
            return Err(self.beyond_run("thread", self.thread));
        }
        self.body = match tag {
            TAG_STATE => DecodedBody::State {
                end: self.i64()?,
                state: self.u32()?,
            },
            TAG_EVENTS | TAG_CLOSING => {
                let count = self.u32()?;
                self.pairs.clear();
                for _ in 0..count {
                    let ty = self.u32()?;
                    let kind = self.u8()?;
                    let v = self.i64()?;
                    let value = if kind == VALUE_NAME {
                        Value::Name(v as u32)
                    } else {
                        Value::Raw(v)
                    };
                    self.pairs.push(EventPair::new(ty, value));
                }
                DecodedBody::Events {
                    closing: tag == TAG_CLOSING,
                }
            }
            TAG_COMM => {
                self.comm.send_physical = self.i64()?;
                self.comm.recv_logical = self.i64()?;
                self.comm.recv_physical = self.i64()?;
                self.comm.size = self.i64()?;
                self.comm.tag = self.i64()?;
                self.comm.receiver = self.u32()?;
                if self.comm.receiver >= self.threads {
                    return Err(self.beyond_run("receiving thread", self.comm.receiver));
                }
                DecodedBody::Comm
            }
            _ => {
                return Err(self.input.damaged(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "corrupt spill file",
                )))
            }
        };
        Ok(true)
    }

    /// A record naming a thread the run does not have (a part file another program
    /// wrote or damaged under a right checksum).
    fn beyond_run(&self, what: &str, thread: u32) -> io::Error {
        self.input.damaged(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "a record names {what} {thread} of a run of {} threads",
                self.threads
            ),
        ))
    }

    pub fn rank(&self) -> u8 {
        match self.body {
            DecodedBody::Comm => 0,
            DecodedBody::Events { closing: true } => 1,
            DecodedBody::Events { closing: false } => 2,
            DecodedBody::State { .. } => 3,
        }
    }

    #[inline]
    fn bytes<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        self.input.array()
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.bytes::<1>()?[0])
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn i64(&mut self) -> io::Result<i64> {
        Ok(i64::from_le_bytes(self.bytes()?))
    }
}
