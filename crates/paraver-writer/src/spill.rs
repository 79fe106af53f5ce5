//! Spilling sorted chunks of a run to temporary files when its memory share is
//! used, and reading them back for the merge. Files are anonymous (unlinked at
//! creation), so nothing is left behind whatever happens to the process.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::record::{Body, Comm, EventPair, LocalThread, Record, Value};

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

/// A sorted chunk on disk.
#[derive(Debug)]
pub struct SpilledChunk {
    file: File,
    pub records: u64,
}

const TAG_STATE: u8 = 0;
const TAG_EVENTS: u8 = 1;
const TAG_CLOSING: u8 = 2;
const TAG_COMM: u8 = 3;
const VALUE_RAW: u8 = 0;
const VALUE_NAME: u8 = 1;
const WRITE_BUFFER: usize = 1 << 20;
/// Small: the merge may read hundreds of chunks at once.
const READ_BUFFER: usize = 64 << 10;

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
    records: &[Record],
    pairs: &[EventPair],
    comms: &[Comm],
) -> io::Result<SpilledChunk> {
    let (file, mut out) = spill_file(dir)?;
    for r in records {
        encode(&mut out, r, pairs, comms)?;
    }
    out.flush()?;
    drop(out);
    Ok(SpilledChunk {
        file,
        records: records.len() as u64,
    })
}

fn encode(out: &mut impl Write, r: &Record, pairs: &[EventPair], comms: &[Comm]) -> io::Result<()> {
    let tag = match r.body {
        Body::State { .. } => TAG_STATE,
        Body::Events { closing: false, .. } => TAG_EVENTS,
        Body::Events { closing: true, .. } => TAG_CLOSING,
        Body::Comm { .. } => TAG_COMM,
    };
    out.write_all(&[tag])?;
    out.write_all(&r.time.to_le_bytes())?;
    out.write_all(&r.thread.to_le_bytes())?;
    match r.body {
        Body::State { end, state } => {
            out.write_all(&end.to_le_bytes())?;
            out.write_all(&state.to_le_bytes())
        }
        Body::Events { first, count, .. } => {
            out.write_all(&count.to_le_bytes())?;
            for p in &pairs[first as usize..(first + count) as usize] {
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
        Body::Comm { index } => {
            let c = &comms[index as usize];
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
    input: BufReader<File>,
    left: u64,
    pub time: i64,
    pub thread: LocalThread,
    pub body: DecodedBody,
    pub pairs: Vec<EventPair>,
    pub comm: Comm,
}

impl ChunkReader {
    pub fn open(chunk: &SpilledChunk) -> io::Result<Self> {
        Ok(ChunkReader {
            input: read_from_start(&chunk.file)?,
            left: chunk.records,
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
        })
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
                DecodedBody::Comm
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "corrupt spill file",
                ))
            }
        };
        Ok(true)
    }

    pub fn rank(&self) -> u8 {
        match self.body {
            DecodedBody::Comm => 0,
            DecodedBody::Events { closing: true } => 1,
            DecodedBody::Events { closing: false } => 2,
            DecodedBody::State { .. } => 3,
        }
    }

    fn bytes<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.input.read_exact(&mut b)?;
        Ok(b)
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
