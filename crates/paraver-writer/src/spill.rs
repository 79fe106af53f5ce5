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

use crate::record::{Comm, EventPair, LocalThread, Record, Value, NO_SHARED};
use crate::view::{EventPairs, Payload, View};

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
    /// Records name the run's spilled shared lists ([`SharedLists`]) below
    /// this (0 for a section of a part file, whose records carry all their
    /// pairs).
    lists: u32,
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
            lists: 0,
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
/// Event records that name one of the run's spilled [`SharedLists`] before
/// their own pairs (only in the writer's own spill files).
const TAG_EVENTS_LISTED: u8 = 4;
const TAG_CLOSING_LISTED: u8 = 5;
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

/// Writes `records` (already sorted) with their payloads inline, but for the
/// shared lists of pairs that `lists` maps to the run's spilled lists (a
/// record's list `i` to `lists[i]`, unless [`NO_SHARED`]): those records carry
/// the list's number, below `lists_len`, and their own pairs only.
pub(crate) fn write_chunk(
    dir: &std::path::Path,
    records: impl Iterator<Item = (LocalThread, Record)>,
    count: usize,
    payload: &Payload,
    (lists, lists_len): (&[u32], u32),
) -> io::Result<SpilledChunk> {
    let (file, mut out) = spill_file(dir)?;
    let mut index = Vec::with_capacity(count.div_ceil(INDEX_STEP));
    let mut offset = 0;
    let mut last_time = i64::MAX;
    let mut encoded = Vec::new();
    for (n, (thread, r)) in records.enumerate() {
        last_time = r.time;
        let view = View::of(r.body, payload);
        if n % INDEX_STEP == 0 {
            index.push(IndexEntry {
                time: r.time,
                offset,
            });
        }
        let spilled_list = match &view {
            View::Events {
                pairs:
                    EventPairs {
                        shared: Some((id, _)),
                        ..
                    },
                ..
            } => lists.get(*id as usize).copied().unwrap_or(NO_SHARED),
            _ => NO_SHARED,
        };
        encoded.clear();
        encode_record(&mut encoded, r.time, thread, &view, spilled_list);
        out.write_all(&encoded)?;
        offset += encoded.len() as u64;
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
        lists: lists_len,
    })
}

/// The shared lists of pairs (a kernel's name and launch configuration, see
/// [`crate::run::RunBuilder::shared_pairs`]) that a run's spilled chunks name
/// rather than carry: each stored once for the whole run, so that a chunk's
/// records hold a list's number (not 11 of a kernel's 12 pairs) and the
/// formatter writes each list's text once, as it does for records in memory.
#[derive(Debug, Default)]
pub(crate) struct SharedLists {
    pairs: Vec<EventPair>,
    /// Where each list ends in `pairs` (it starts where the one before ends).
    ends: Vec<u32>,
}

impl SharedLists {
    pub(crate) fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    /// List `id` (one below [`SpilledChunk`]'s `lists`, which the reader checks).
    #[inline]
    pub(crate) fn get(&self, id: u32) -> &[EventPair] {
        let id = id as usize;
        let start = match id {
            0 => 0,
            _ => self.ends[id - 1] as usize,
        };
        &self.pairs[start..self.ends[id] as usize]
    }

    /// Adds a list; its number.
    pub(crate) fn push(&mut self, pairs: &[EventPair]) -> u32 {
        self.pairs.extend_from_slice(pairs);
        self.ends.push(self.pairs.len() as u32);
        self.ends.len() as u32 - 1
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.pairs.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
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

/// Writes one record with all its pairs inline (as part files hold records).
/// Always inlined: a call per record with the view built in memory cost 60
/// instructions per spilled record once `write_chunk` had a second caller
/// (callgrind, issue 28).
#[inline(always)]
pub(crate) fn encode_view(
    out: &mut impl Write,
    encoded: &mut Vec<u8>,
    time: i64,
    thread: LocalThread,
    body: &View,
) -> io::Result<()> {
    encoded.clear();
    encode_record(encoded, time, thread, body, NO_SHARED);
    out.write_all(encoded)
}

/// Appends one record to `out`: its tag, time and thread, then its body with
/// the payload inline; an event record with a `spilled_list` (not
/// [`NO_SHARED`]) gives that number in place of its shared list's pairs.
/// Built in memory and written at once: a write per field through a
/// `BufWriter` costs more than the copy.
fn encode_record(
    out: &mut Vec<u8>,
    time: i64,
    thread: LocalThread,
    body: &View,
    spilled_list: u32,
) {
    let named = spilled_list != NO_SHARED;
    let tag = match body {
        View::State { .. } => TAG_STATE,
        View::Events { closing: false, .. } if named => TAG_EVENTS_LISTED,
        View::Events { closing: true, .. } if named => TAG_CLOSING_LISTED,
        View::Events { closing: false, .. } => TAG_EVENTS,
        View::Events { closing: true, .. } => TAG_CLOSING,
        View::Comm(_) => TAG_COMM,
    };
    out.reserve(LONGEST_FIXED);
    let mut head = [0u8; HEAD];
    head[0] = tag;
    head[1..9].copy_from_slice(&time.to_le_bytes());
    head[9..].copy_from_slice(&thread.to_le_bytes());
    out.extend_from_slice(&head);
    match body {
        View::State { end, state } => {
            out.extend_from_slice(&end.to_le_bytes());
            out.extend_from_slice(&state.to_le_bytes());
        }
        View::Events { pairs, .. } => {
            let inline: &[EventPair] = match pairs.shared {
                Some((_, shared)) if !named => shared,
                _ => &[],
            };
            if named {
                out.extend_from_slice(&spilled_list.to_le_bytes());
            }
            let count = inline.len() + pairs.own.len();
            out.extend_from_slice(&(count as u32).to_le_bytes());
            out.reserve(PAIR * count);
            for p in inline.iter().chain(pairs.own) {
                let (kind, value) = match p.value() {
                    Value::Raw(v) => (VALUE_RAW, v),
                    Value::Name(h) => (VALUE_NAME, i64::from(h)),
                };
                let mut pair = [0u8; PAIR];
                pair[..4].copy_from_slice(&p.ty.to_le_bytes());
                pair[4] = kind;
                pair[5..].copy_from_slice(&value.to_le_bytes());
                out.extend_from_slice(&pair);
            }
        }
        View::Comm(c) => {
            for v in [
                c.send_physical,
                c.recv_logical,
                c.recv_physical,
                c.size,
                c.tag,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&c.receiver.to_le_bytes());
        }
    }
}

/// A pair's value as the spill file gives it: its kind, then its number.
#[inline]
fn value_of(kind: u8, number: i64) -> Value {
    if kind == VALUE_NAME {
        Value::Name(number as u32)
    } else {
        Value::Raw(number)
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
    /// The chunk's [`SpilledChunk::lists`].
    lists: u32,
    pub time: i64,
    pub thread: LocalThread,
    pub body: DecodedBody,
    /// An event record's spilled shared list (of the run's [`SharedLists`]),
    /// [`NO_SHARED`] for none; its own pairs follow in `pairs`.
    pub shared: u32,
    pub pairs: Vec<EventPair>,
    pub comm: Comm,
}

/// Bytes of a record's tag, time and thread.
const HEAD: usize = 1 + 8 + 4;
/// Bytes of the longest record without pairs (a communication); an event
/// record's head, list and count are fewer.
const LONGEST_FIXED: usize = HEAD + 5 * 8 + 4;
/// Bytes of one event pair: type, kind, value.
const PAIR: usize = 4 + 1 + 8;

impl ChunkReader {
    /// A reader of `chunk` with a buffer of `buffer` bytes.
    pub fn open(chunk: &SpilledChunk, buffer: usize) -> io::Result<Self> {
        Ok(Self::reading(
            SectionReader::new(chunk, buffer),
            chunk.records,
            chunk,
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
            chunk,
        )
    }

    /// The reader's buffer, for another reader.
    pub fn into_buffer(self) -> Vec<u8> {
        self.input.buf
    }

    fn reading(input: SectionReader, records: u64, chunk: &SpilledChunk) -> Self {
        ChunkReader {
            input,
            left: records,
            threads: chunk.threads,
            lists: chunk.lists,
            time: 0,
            thread: 0,
            body: DecodedBody::Events { closing: false },
            shared: NO_SHARED,
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
    #[inline]
    pub fn advance(&mut self) -> io::Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        // Nearly every record lies whole in the buffer: decoded from it in
        // place; one that crosses the buffer's end, field by field.
        match self.decode_buffered() {
            Some(result) => result?,
            None => self.decode_by_fields()?,
        }
        Ok(true)
    }

    /// Decodes the next record straight from the buffer, one bounds check for
    /// its fixed fields and one for its pairs; `None` (nothing consumed) when
    /// the buffer does not hold all of those.
    #[inline]
    fn decode_buffered(&mut self) -> Option<io::Result<()>> {
        let input = &self.input;
        let bytes = input.buf.get(input.pos..input.len)?;
        let fixed: &[u8; LONGEST_FIXED] = bytes.get(..LONGEST_FIXED)?.try_into().ok()?;
        let i64_at = |at: usize| i64::from_le_bytes(fixed[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().unwrap());
        let (tag, time, thread) = (fixed[0], i64_at(1), u32_at(9));
        let (body, used) = match tag {
            TAG_STATE => {
                let body = DecodedBody::State {
                    end: i64_at(HEAD),
                    state: u32_at(HEAD + 8),
                };
                (body, HEAD + 12)
            }
            TAG_EVENTS | TAG_CLOSING | TAG_EVENTS_LISTED | TAG_CLOSING_LISTED => {
                let listed = matches!(tag, TAG_EVENTS_LISTED | TAG_CLOSING_LISTED);
                let (shared, at) = match listed {
                    true => (u32_at(HEAD), HEAD + 4),
                    false => (NO_SHARED, HEAD),
                };
                let count = u32_at(at) as usize;
                let pairs = bytes.get(at + 4..(at + 4).checked_add(count.checked_mul(PAIR)?)?)?;
                self.shared = shared;
                self.pairs.clear();
                self.pairs.extend(pairs.chunks_exact(PAIR).map(|p| {
                    let ty = u32::from_le_bytes(p[..4].try_into().unwrap());
                    let v = i64::from_le_bytes(p[5..].try_into().unwrap());
                    EventPair::new(ty, value_of(p[4], v))
                }));
                let closing = matches!(tag, TAG_CLOSING | TAG_CLOSING_LISTED);
                (DecodedBody::Events { closing }, at + 4 + pairs.len())
            }
            TAG_COMM => {
                self.comm = Comm {
                    send_physical: i64_at(HEAD),
                    recv_logical: i64_at(HEAD + 8),
                    recv_physical: i64_at(HEAD + 16),
                    size: i64_at(HEAD + 24),
                    tag: i64_at(HEAD + 32),
                    receiver: u32_at(HEAD + 40),
                };
                (DecodedBody::Comm, LONGEST_FIXED)
            }
            _ => return Some(Err(self.corrupt())),
        };
        self.input.pos += used;
        (self.time, self.thread, self.body) = (time, thread, body);
        // What the record names, checked at once (the error's words from `check`).
        let beyond = thread >= self.threads
            || match body {
                DecodedBody::Comm => self.comm.receiver >= self.threads,
                DecodedBody::Events { .. } => self.shared != NO_SHARED && self.shared >= self.lists,
                DecodedBody::State { .. } => false,
            };
        Some(match beyond {
            false => Ok(()),
            true => self.check(),
        })
    }

    /// Decodes the next record field by field, across refills of the buffer.
    #[cold]
    fn decode_by_fields(&mut self) -> io::Result<()> {
        let tag = self.u8()?;
        self.time = self.i64()?;
        self.thread = self.u32()?;
        self.body = match tag {
            TAG_STATE => DecodedBody::State {
                end: self.i64()?,
                state: self.u32()?,
            },
            TAG_EVENTS | TAG_CLOSING | TAG_EVENTS_LISTED | TAG_CLOSING_LISTED => {
                self.shared = match tag {
                    TAG_EVENTS_LISTED | TAG_CLOSING_LISTED => self.u32()?,
                    _ => NO_SHARED,
                };
                let count = self.u32()?;
                self.pairs.clear();
                for _ in 0..count {
                    let ty = self.u32()?;
                    let kind = self.u8()?;
                    let v = self.i64()?;
                    self.pairs.push(EventPair::new(ty, value_of(kind, v)));
                }
                DecodedBody::Events {
                    closing: matches!(tag, TAG_CLOSING | TAG_CLOSING_LISTED),
                }
            }
            TAG_COMM => {
                self.comm.send_physical = self.i64()?;
                self.comm.recv_logical = self.i64()?;
                self.comm.recv_physical = self.i64()?;
                self.comm.size = self.i64()?;
                self.comm.tag = self.i64()?;
                self.comm.receiver = self.u32()?;
                DecodedBody::Comm
            }
            _ => return Err(self.corrupt()),
        };
        self.check()
    }

    /// Checks what the record just decoded names: its thread, a
    /// communication's receiver, an event record's spilled list.
    fn check(&self) -> io::Result<()> {
        if self.thread >= self.threads {
            return Err(self.beyond_run("thread", self.thread));
        }
        match self.body {
            DecodedBody::Comm if self.comm.receiver >= self.threads => {
                Err(self.beyond_run("receiving thread", self.comm.receiver))
            }
            DecodedBody::Events { .. } if self.shared != NO_SHARED && self.shared >= self.lists => {
                Err(self.corrupt())
            }
            _ => Ok(()),
        }
    }

    fn corrupt(&self) -> io::Error {
        self.input.damaged(io::Error::new(
            io::ErrorKind::InvalidData,
            "corrupt spill file",
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunked::Pairs;
    use crate::record::Body;

    /// What a reader decoded of one record, with its spilled list's number.
    #[derive(Debug, PartialEq)]
    enum Decoded {
        State(i64, LocalThread, i64, u32),
        Events(i64, LocalThread, bool, u32, Vec<EventPair>),
        Comm(i64, LocalThread, Comm),
    }

    fn decoded(r: &ChunkReader) -> Decoded {
        match r.body {
            DecodedBody::State { end, state } => Decoded::State(r.time, r.thread, end, state),
            DecodedBody::Events { closing } => {
                Decoded::Events(r.time, r.thread, closing, r.shared, r.pairs.clone())
            }
            DecodedBody::Comm => Decoded::Comm(r.time, r.thread, r.comm),
        }
    }

    fn read_all(mut reader: ChunkReader) -> io::Result<Vec<Decoded>> {
        let mut all = Vec::new();
        while reader.advance()? {
            all.push(decoded(&reader));
        }
        Ok(all)
    }

    /// A chunk of every kind of record (states, events with and without a
    /// shared list, named or inline, opening and closing, with no pairs or
    /// many, communications), written as a spill writes them; and what
    /// reading it back must give.
    /// With `named` false, every pair is inline (as in a part file).
    fn chunk_of_every_kind(dir: &std::path::Path, named: bool) -> (SpilledChunk, Vec<Decoded>) {
        let mut pairs = Pairs::default();
        let kernel = [
            EventPair::name(7, 3),
            EventPair::raw(8, -5),
            EventPair::raw(9, 1 << 40),
        ];
        let other = [EventPair::raw(10, 2)];
        let shared = vec![pairs.push(&kernel), pairs.push(&other)];
        let comms = vec![Comm {
            send_physical: 11,
            receiver: 2,
            recv_logical: 12,
            recv_physical: i64::MAX,
            size: 1 << 33,
            tag: -1,
        }];
        let mut records = Vec::new();
        let mut want = Vec::new();
        for i in 0..40i64 {
            let thread = (i % 3) as LocalThread;
            let own: Vec<EventPair> = (0..i % 5)
                .map(|k| EventPair::raw(20 + k as u32, i * k))
                .collect();
            let (first, count) = pairs.push(&own);
            let body = match i % 6 {
                0 => Body::State {
                    end: i + 3,
                    state: i as u32,
                },
                1 => Body::Comm { index: 0 },
                // The kernel's list, named in the chunk as list 5.
                2 | 3 => Body::Events {
                    first,
                    count,
                    shared: 0,
                    closing: i % 6 == 3,
                },
                // A list spilled inline.
                4 => Body::Events {
                    first,
                    count,
                    shared: 1,
                    closing: false,
                },
                _ => Body::Events {
                    first,
                    count,
                    shared: NO_SHARED,
                    closing: true,
                },
            };
            records.push((thread, Record { time: i * 10, body }));
            want.push(match i % 6 {
                0 => Decoded::State(i * 10, thread, i + 3, i as u32),
                1 => Decoded::Comm(i * 10, thread, comms[0]),
                2 | 3 if named => Decoded::Events(i * 10, thread, i % 6 == 3, 5, own),
                2 | 3 => {
                    let all = [&kernel[..], &own].concat();
                    Decoded::Events(i * 10, thread, i % 6 == 3, NO_SHARED, all)
                }
                4 => Decoded::Events(
                    i * 10,
                    thread,
                    false,
                    NO_SHARED,
                    [&other[..], &own].concat(),
                ),
                _ => Decoded::Events(i * 10, thread, true, NO_SHARED, own),
            });
        }
        let payload = Payload {
            pairs: &pairs,
            comms: &comms,
            shared: &shared,
        };
        let count = records.len();
        let chunk = write_chunk(
            dir,
            records.into_iter(),
            count,
            &payload,
            match named {
                true => (&[5, NO_SHARED], 6),
                false => (&[], 0),
            },
        )
        .unwrap();
        (chunk, want)
    }

    /// Records read back whatever the buffer's size: each record lies across
    /// the buffer's end at every offset for some size (decoded field by field
    /// there, in place elsewhere).
    #[test]
    fn records_straddling_the_buffer_at_every_offset_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (chunk, want) = chunk_of_every_kind(dir.path(), true);
        let longest = 1 + 8 + 4 + 4 + 4 + 7 * PAIR;
        for buffer in 1..=2 * longest + 1 {
            let got = read_all(ChunkReader::open(&chunk, buffer).unwrap()).unwrap();
            assert_eq!(got, want, "a buffer of {buffer} bytes");
        }
        // Spans of the chunk (as the segments read it), with buffers of every size.
        let span = chunk.span(0, 1);
        for most in 1..=2 * longest + 1 {
            let reader = ChunkReader::open_span(&chunk, span, most, Vec::new());
            let got = read_all(reader).unwrap();
            assert_eq!(got, want, "spans read {most} bytes at a time");
        }
    }

    /// A part file holding a chunk's bytes, read back as a section of it
    /// under the right checksum (so that decoding meets whatever they hold),
    /// with buffers of a few sizes (decoded in place, and field by field at
    /// the buffer's edges).
    struct Part {
        path: PathBuf,
        file: Arc<File>,
        records: u64,
    }

    impl Part {
        fn new(dir: &std::path::Path, bytes: &[u8], records: u64) -> Self {
            let path = dir.join("some.part");
            std::fs::write(&path, bytes).unwrap();
            let file = Arc::new(File::options().read(true).write(true).open(&path).unwrap());
            Part {
                path,
                file,
                records,
            }
        }

        fn read(&self, bytes: &[u8]) -> Vec<io::Result<Vec<Decoded>>> {
            self.file.write_all_at(bytes, 0).unwrap();
            let (len, crc) = (bytes.len() as u64, crc32fast::hash(bytes));
            let file = Arc::clone(&self.file);
            let section =
                SpilledChunk::section(file, 0, len, self.records, crc, self.path.clone(), 3);
            [5, 64, 4096]
                .into_iter()
                .map(|buffer| read_all(ChunkReader::open(&section, buffer).unwrap()))
                .collect()
        }
    }

    /// Damaged bytes (under a right checksum, as another program may write
    /// them) are an error naming the file, never a panic nor a record beyond
    /// the run: a part's records name no spilled list; every byte changed.
    #[test]
    fn damaged_records_are_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let bytes_of = |chunk: &SpilledChunk| {
            let mut bytes = vec![0; chunk.bytes() as usize];
            chunk.file.read_exact_at(&mut bytes, 0).unwrap();
            bytes
        };
        // A part's records carry their pairs: one naming a list is refused.
        let (chunk, _) = chunk_of_every_kind(dir.path(), true);
        let part = Part::new(dir.path(), &bytes_of(&chunk), chunk.records);
        for result in part.read(&bytes_of(&chunk)) {
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains("some.part: damaged part file (corrupt spill file)"),
                "{err}"
            );
        }
        let (chunk, want) = chunk_of_every_kind(dir.path(), false);
        let bytes = bytes_of(&chunk);
        let part = Part::new(dir.path(), &bytes, chunk.records);
        for result in part.read(&bytes) {
            assert_eq!(result.unwrap(), want);
        }
        let named = |err: &io::Error| err.to_string().contains("some.part: damaged part file");
        let (mut refused, mut read) = (0, 0);
        for at in 0..bytes.len() {
            for value in [0x00, 0x05, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] = value;
                for result in part.read(&damaged) {
                    match result {
                        Err(e) => {
                            assert!(named(&e), "byte {at} = {value}: {e}");
                            refused += 1;
                        }
                        Ok(records) => {
                            read += 1;
                            assert!(records.iter().all(|r| match r {
                                Decoded::Events(_, t, _, shared, _) =>
                                    *t < 3 && *shared == NO_SHARED,
                                Decoded::State(_, t, ..) => *t < 3,
                                Decoded::Comm(_, t, c) => *t < 3 && c.receiver < 3,
                            }))
                        }
                    }
                }
            }
        }
        // (Damage to a value reads as another value.)
        assert!(refused > 0 && read > 0, "{refused} refused, {read} read");
        // Cut short: the records counted are not all there.
        let short = Part::new(dir.path(), &bytes[..bytes.len() / 2], chunk.records);
        for result in short.read(&bytes[..bytes.len() / 2]) {
            assert!(named(&result.unwrap_err()));
        }
    }
}
