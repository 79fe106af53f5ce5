//! Spill files written past the page cache (`O_DIRECT`).
//!
//! A buffered write of a spill file copies every byte into the page cache (5 %
//! of a spilling conversion's CPU samples, all of it system time), the kernel
//! then allocates, dirties and writes back those pages, and closing the file
//! drops them again (1.5 % more): gigabytes of pages for bytes the merge reads
//! once, seconds later. Direct writes hand the device our own buffers instead.
//!
//! Spill files are anonymous (unlinked at creation): `O_DIRECT` is set on the
//! one open file (`fcntl`), and taken off again where the page cache is wanted
//! (a refused write, a reader of unaligned pieces). The bytes go in aligned
//! blocks, the last one padded with zeros (a chunk knows its length; readers
//! never look past it), written by one thread of the process from a few blocks
//! that every spill file shares: spilling allocates nothing, and the spilling
//! thread waits for the disk only when every block is in flight. The merge then
//! reads a chunk directly too, in aligned pieces ([`crate::spill`]). The same
//! fallbacks as the trace's direct writes ([`crate::direct`]): a file system
//! where direct writes are not known to be fast, `O_DIRECT` refused when set,
//! or a refused write (from there on, for that file) gets the page cache.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

use crate::direct::{direct_writes_suit, AlignedBlock, WriteMode, ALIGN};

/// Bytes per direct write of a spill file: 2 MiB writes run at about twice the
/// rate of 1 MiB ones here (and a spill file holds tens of megabytes).
const SPILL_BLOCK: usize = 2 << 20;
/// Blocks shared by every spill file of the process: one being filled by each
/// of two spilling threads, two in flight.
const SPILL_BLOCKS: usize = 4;
/// What a spill file that cannot be written directly buffers.
const BUFFERED: usize = 1 << 20;

/// The blocks every spill file shares, made when first needed.
struct BlockPool {
    /// Blocks not in use, and how many were made.
    free: Mutex<(Vec<AlignedBlock>, usize)>,
    returned: Condvar,
}

impl BlockPool {
    /// A block, once one is free when all are made.
    fn take(&self) -> AlignedBlock {
        let mut pool = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(mut block) = pool.0.pop() {
                block.clear();
                return block;
            }
            if pool.1 < SPILL_BLOCKS {
                pool.1 += 1;
                drop(pool);
                return AlignedBlock::of_size(SPILL_BLOCK, false);
            }
            pool = self
                .returned
                .wait(pool)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn give_back(&self, block: AlignedBlock) {
        let mut pool = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        pool.0.push(block);
        self.returned.notify_one();
    }
}

/// A spill file, as the writer thread needs it.
struct Target {
    /// The spill file's open file (a duplicate descriptor), with `O_DIRECT`.
    file: File,
    /// A direct write was refused: `O_DIRECT` is off, the page cache from
    /// there on.
    refused: AtomicBool,
}

/// A block to write at `offset` of `target`; the outcome goes to `done`.
struct Job {
    block: AlignedBlock,
    /// A test's block, one byte past the alignment (not the pool's).
    misaligned: bool,
    offset: u64,
    target: Arc<Target>,
    done: Sender<io::Result<()>>,
}

/// The writer thread and the blocks, shared by every spill file.
struct Spiller {
    jobs: Mutex<Sender<Job>>,
    pool: Arc<BlockPool>,
}

/// The process's spill writer: `None` when its thread could not start (spill
/// files then go through the page cache).
fn spiller() -> Option<&'static Spiller> {
    static SPILLER: OnceLock<Option<Spiller>> = OnceLock::new();
    SPILLER
        .get_or_init(|| {
            let pool = Arc::new(BlockPool {
                free: Mutex::new((Vec::new(), 0)),
                returned: Condvar::new(),
            });
            let (jobs, received) = channel::<Job>();
            let blocks = Arc::clone(&pool);
            std::thread::Builder::new()
                .name("spill-writer".into())
                .spawn(move || write_jobs(received, &blocks))
                .ok()?;
            Some(Spiller {
                jobs: Mutex::new(jobs),
                pool,
            })
        })
        .as_ref()
}

/// The writer thread: writes each block, gives it back, says how it went.
fn write_jobs(jobs: Receiver<Job>, pool: &BlockPool) {
    for job in jobs {
        let result = write_block(&job);
        if !job.misaligned {
            pool.give_back(job.block);
        }
        // The spill file's writer may be gone (it failed elsewhere): nothing to do.
        let _ = job.done.send(result);
    }
}

/// Writes a block directly while the file system accepts it, through the page
/// cache once it refused one.
fn write_block(job: &Job) -> io::Result<()> {
    let bytes = job.block.bytes();
    let target = &job.target;
    if !target.refused.load(Ordering::Relaxed) {
        match target.file.write_all_at(bytes, job.offset) {
            Ok(()) => return Ok(()),
            // Refused (an alignment this file system does not take, or no
            // direct writes at all): the same bytes through the page cache
            // (what a refused write left is overwritten with the same bytes).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                set_direct(&target.file, false)?;
                target.refused.store(true, Ordering::Relaxed)
            }
            Err(e) => return Err(e),
        }
    }
    target.file.write_all_at(bytes, job.offset)
}

/// A writer of a new anonymous spill file: [`SpillWriter::finish`] gives the
/// file and the number of bytes written (the file may be longer: padding).
pub(crate) struct SpillWriter {
    file: File,
    sink: Sink,
    /// Bytes written through the page cache (a direct sink counts its blocks).
    bytes: u64,
}

enum Sink {
    Buffered(BufWriter<File>),
    Direct(DirectSink),
}

struct DirectSink {
    spiller: &'static Spiller,
    target: Arc<Target>,
    block: Option<AlignedBlock>,
    misaligned: bool,
    /// File offset of the block being filled.
    offset: u64,
    in_flight: usize,
    done: Sender<io::Result<()>>,
    outcomes: Receiver<io::Result<()>>,
}

impl SpillWriter {
    /// A new anonymous spill file in `dir`.
    pub fn create(dir: &Path) -> io::Result<Self> {
        Self::start(dir, false)
    }

    /// [`create`](Self::create); `misaligned` makes every direct write start
    /// one byte past the alignment, so that file systems that check it refuse
    /// them (tests of the fallback).
    pub(crate) fn start(dir: &Path, misaligned: bool) -> io::Result<Self> {
        let file = tempfile::tempfile_in(dir)?;
        let direct = (misaligned || direct_writes_suit(&file))
            .then(spiller)
            .flatten()
            .filter(|_| set_direct(&file, true).is_ok());
        let sink = match direct {
            Some(spiller) => {
                let (done, outcomes) = channel();
                Sink::Direct(DirectSink {
                    spiller,
                    target: Arc::new(Target {
                        file: file.try_clone()?,
                        refused: AtomicBool::new(false),
                    }),
                    block: None,
                    misaligned,
                    offset: 0,
                    in_flight: 0,
                    done,
                    outcomes,
                })
            }
            None => Sink::Buffered(BufWriter::with_capacity(BUFFERED, file.try_clone()?)),
        };
        Ok(SpillWriter {
            file,
            sink,
            bytes: 0,
        })
    }

    /// Writes what is left and waits for it: the file, the bytes written and
    /// how. A file written [`WriteMode::Direct`] still has `O_DIRECT`: read it
    /// in aligned pieces, or take the flag off ([`set_direct`]).
    pub fn finish(self) -> io::Result<(File, u64, WriteMode)> {
        let mut bytes = self.bytes;
        let mode = match self.sink {
            Sink::Buffered(mut out) => {
                out.flush()?;
                WriteMode::Buffered
            }
            Sink::Direct(mut sink) => {
                // Every block but the last is full, and none is padded yet.
                bytes = sink.offset + sink.block.as_ref().map_or(0, |b| b.len() as u64);
                if let Some(mut block) = sink.block.take() {
                    block.pad_to_alignment();
                    sink.send(block)?;
                }
                sink.wait(0)?;
                if sink.target.refused.load(Ordering::Relaxed) {
                    WriteMode::FellBack
                } else {
                    WriteMode::Direct
                }
            }
        };
        Ok((self.file, bytes, mode))
    }
}

impl DirectSink {
    /// Hands `block` to the writer thread.
    fn send(&mut self, block: AlignedBlock) -> io::Result<()> {
        let offset = self.offset;
        self.offset += block.len() as u64;
        let job = Job {
            block,
            misaligned: self.misaligned,
            offset,
            target: Arc::clone(&self.target),
            done: self.done.clone(),
        };
        let jobs = self
            .spiller
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        jobs.send(job)
            .map_err(|_| io::Error::other("the spill files' writer thread stopped"))?;
        self.in_flight += 1;
        Ok(())
    }

    /// Waits until at most `most` blocks are in flight; the first error.
    fn wait(&mut self, most: usize) -> io::Result<()> {
        while self.in_flight > most {
            let outcome = self
                .outcomes
                .recv()
                .map_err(|_| io::Error::other("the spill files' writer thread stopped"))?;
            self.in_flight -= 1;
            outcome?;
        }
        // Errors of blocks already written, without waiting.
        while let Ok(outcome) = self.outcomes.try_recv() {
            self.in_flight -= 1;
            outcome?;
        }
        Ok(())
    }

    fn block(&mut self) -> &mut AlignedBlock {
        let (misaligned, pool) = (self.misaligned, &self.spiller.pool);
        self.block.get_or_insert_with(|| {
            if misaligned {
                AlignedBlock::of_size(SPILL_BLOCK, true)
            } else {
                pool.take()
            }
        })
    }
}

impl Write for SpillWriter {
    /// Records are encoded a few bytes at a time: those that fit in the block
    /// take the short way.
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Sink::Direct(DirectSink {
            block: Some(block), ..
        }) = &mut self.sink
        {
            // Strictly more room: a block that fills is sent below.
            if block.room() > buf.len() {
                block.push(buf);
                return Ok(buf.len());
            }
        }
        self.write_slow(buf)
    }

    /// What `write` does (it takes every byte): the trait's loop, not inlined,
    /// cost a tenth of a spilling conversion's samples.
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write(buf).map(|_| ())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl SpillWriter {
    #[inline(never)]
    fn write_slow(&mut self, buf: &[u8]) -> io::Result<usize> {
        let sink = match &mut self.sink {
            Sink::Buffered(out) => {
                out.write_all(buf)?;
                self.bytes += buf.len() as u64;
                return Ok(buf.len());
            }
            Sink::Direct(sink) => sink,
        };
        let mut rest = buf;
        while !rest.is_empty() {
            let block = sink.block();
            let n = rest.len().min(block.room());
            block.push(&rest[..n]);
            rest = &rest[n..];
            if block.room() == 0 {
                let full = sink.block.take().expect("the block just filled");
                sink.send(full)?;
                // Errors surface while writing, not only at the end.
                sink.wait(SPILL_BLOCKS)?;
            }
        }
        Ok(buf.len())
    }
}

/// Sets or clears `O_DIRECT` on `file`'s open file (every descriptor of it).
/// Setting it fails (`EINVAL`) where the file system has no direct I/O.
#[allow(unsafe_code)]
pub(crate) fn set_direct(file: &File, on: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL take and pass no memory, on a descriptor
    // that `file` keeps open for the calls.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes are whole multiples of the alignment: what a direct write takes.
const _: () = assert!(SPILL_BLOCK.is_multiple_of(ALIGN));

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ at every place (a shifted or repeated block shows).
    fn text(len: usize, seed: u64) -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    /// Writes `bytes` in pieces of the `pieces` lengths (cycled); the file's
    /// first bytes (as many as written) and the mode.
    fn write_through(bytes: &[u8], pieces: &[usize], misaligned: bool) -> (Vec<u8>, WriteMode) {
        let dir = tempfile::tempdir().unwrap();
        let mut out = SpillWriter::start(dir.path(), misaligned).unwrap();
        let mut rest = bytes;
        for &piece in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let n = piece.min(rest.len());
            out.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        let (file, written, mode) = out.finish().unwrap();
        assert_eq!(written, bytes.len() as u64);
        set_direct(&file, false).unwrap();
        let mut back = vec![0; bytes.len()];
        file.read_exact_at(&mut back, 0).unwrap();
        (back, mode)
    }

    /// Lengths around the alignment and the block size, in pieces that
    /// straddle blocks, come back whole.
    #[test]
    fn any_length_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let suits = direct_writes_suit(&tempfile::tempfile_in(dir.path()).unwrap());
        for len in [
            0,
            1,
            ALIGN - 1,
            ALIGN + 1,
            SPILL_BLOCK - 1,
            SPILL_BLOCK,
            SPILL_BLOCK + 1,
            (SPILL_BLOCKS + 3) * SPILL_BLOCK + ALIGN + 17,
        ] {
            let expected = text(len, len as u64);
            for pieces in [&[1 << 20][..], &[7, 4093, 65_537, 3 << 20]] {
                let (written, mode) = write_through(&expected, pieces, false);
                assert!(written == expected, "length {len}, pieces {pieces:?}");
                // Where direct writes are used, aligned blocks are taken.
                let want = if suits {
                    WriteMode::Direct
                } else {
                    WriteMode::Buffered
                };
                assert_eq!(mode, want, "length {len}");
            }
        }
    }

    /// Direct writes that the file system refuses (buffers one byte off the
    /// alignment) give the same bytes through the page cache.
    #[test]
    fn refused_direct_writes_fall_back_to_the_page_cache() {
        let expected = text(3 * SPILL_BLOCK + ALIGN + 3, 5);
        let (written, mode) = write_through(&expected, &[100_000], true);
        assert!(written == expected);
        // Where O_DIRECT opens, an unaligned buffer is refused (tmpfs takes any,
        // and some file systems refuse O_DIRECT at open: then it is buffered).
        let dir = tempfile::tempdir().unwrap();
        if direct_writes_suit(&tempfile::tempfile_in(dir.path()).unwrap()) {
            assert_eq!(mode, WriteMode::FellBack);
        }
    }

    /// Many spill files written at once from several threads (more blocks
    /// wanted than the pool holds) each come back whole.
    #[test]
    fn concurrent_spill_files_stay_apart() {
        let results: Vec<bool> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6u64)
                .map(|t| {
                    scope.spawn(move || {
                        let expected = text(2 * SPILL_BLOCK + 1000 * t as usize + 1, t);
                        let (written, _) = write_through(&expected, &[65_536 + t as usize], false);
                        written == expected
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(|&same| same));
    }
}
