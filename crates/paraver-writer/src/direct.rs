//! Writing the trace past the page cache (`O_DIRECT`), on a thread of its own.
//!
//! A buffered `write` copies every byte of the trace into the page cache, and
//! the kernel then writes it to disk: for a 1.8 GB trace that copy was the
//! largest single cost of a conversion (20 % of its CPU samples, all of it
//! system time, and pages the kernel must then allocate, dirty and reclaim).
//! Direct writes hand the device our own buffers instead. They need aligned
//! buffers, offsets and lengths, so text is gathered into aligned blocks,
//! written whole on a writer thread (the formatting threads never wait for the
//! disk); the last, partial block goes through the page cache like any short
//! file. A file system that refuses `O_DIRECT` (at open, or at the first write)
//! gets the same bytes through the page cache.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Alignment of direct writes: the largest logical block size of common
/// devices (512 and 4096 bytes) and the page size.
const ALIGN: usize = 4096;
/// Bytes per direct write: large enough that the writer thread's system calls
/// are few, small enough that the few blocks in flight cost little memory.
const BLOCK: usize = 4 << 20;
/// Blocks that exist at once: one being filled, the others queued or being
/// written.
const BLOCKS: usize = 3;

/// How the bytes reached the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// `O_DIRECT`, but for the last partial block.
    Direct,
    /// Through the page cache: `O_DIRECT` refused at open (or not tried).
    Buffered,
    /// `O_DIRECT` opened but its first write refused: the page cache from there.
    FellBack,
}

/// An aligned block of [`BLOCK`] bytes inside a vector one alignment longer
/// (the vector's heap memory never moves, so the aligned start stays aligned).
struct AlignedBlock {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBlock {
    /// A block that holds nothing and never will (the one left when the last
    /// block is handed over).
    fn empty() -> Self {
        AlignedBlock {
            storage: Vec::new(),
            start: 0,
            len: 0,
        }
    }

    fn new(misaligned: bool) -> Self {
        let storage = vec![0u8; BLOCK + 2 * ALIGN];
        let mut start = storage.as_ptr().align_offset(ALIGN);
        if misaligned {
            // Tests only: a start no device accepts for direct writes.
            start += 1;
        }
        AlignedBlock {
            storage,
            start,
            len: 0,
        }
    }

    fn room(&self) -> usize {
        BLOCK - self.len
    }

    fn push(&mut self, bytes: &[u8]) {
        let at = self.start + self.len;
        self.storage[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
}

/// What the writer thread is handed: a block to write at the current offset,
/// or the end (the last block, of any length).
enum Job {
    Full(AlignedBlock),
    Last(AlignedBlock),
}

/// A sink that writes an output file (created empty by the caller, written
/// from its start) with direct writes on a thread of its own.
pub struct DirectWriter {
    block: AlignedBlock,
    /// Blocks not in use yet (then blocks come back from the writer thread).
    spare: Vec<AlignedBlock>,
    jobs: Option<SyncSender<Job>>,
    written: Receiver<AlignedBlock>,
    worker: Option<JoinHandle<io::Result<WriteMode>>>,
}

impl DirectWriter {
    /// A direct writer of `file` (at `path`), or `None` where direct writes are
    /// not used: a file system where they may be slow or refused (see
    /// [`direct_writes_suit`]), `O_DIRECT` refused at open, no thread.
    pub fn open(path: &Path, file: &File) -> Option<Self> {
        if !direct_writes_suit(file) {
            return None;
        }
        Self::start(path, file, false).ok()
    }

    /// [`open`](Self::open) whatever the file system; `misaligned` makes every
    /// direct write unaligned, so that file systems that check alignment refuse
    /// them (tests of the fallback).
    pub(crate) fn start(path: &Path, file: &File, misaligned: bool) -> io::Result<Self> {
        let direct = open_direct(path)?;
        let buffered = file.try_clone()?;
        let (jobs, received) = sync_channel::<Job>(BLOCKS - 1);
        let (give_back, written) = sync_channel::<AlignedBlock>(BLOCKS);
        let worker = std::thread::Builder::new()
            .name("prv-writer".into())
            .spawn(move || write_blocks(&direct, &buffered, received, give_back))?;
        Ok(DirectWriter {
            block: AlignedBlock::new(misaligned),
            spare: (1..BLOCKS).map(|_| AlignedBlock::new(misaligned)).collect(),
            jobs: Some(jobs),
            written,
            worker: Some(worker),
        })
    }

    /// Hands the full block to the writer thread and takes an empty one.
    fn send_block(&mut self) -> io::Result<()> {
        let next = match self.spare.pop() {
            Some(block) => Some(block),
            None => self.written.recv().ok(),
        };
        let Some(mut next) = next else {
            // The writer thread stopped: its error says why.
            return Err(self.stop_with_error());
        };
        next.len = 0;
        let full = std::mem::replace(&mut self.block, next);
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(Job::Full(full)));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(self.stop_with_error()),
        }
    }

    /// Writes what is left and waits for the writer thread: how the bytes
    /// were written.
    pub fn finish(mut self) -> io::Result<WriteMode> {
        let last = std::mem::replace(&mut self.block, AlignedBlock::empty());
        let sent = self.jobs.take().map(|jobs| jobs.send(Job::Last(last)));
        if !matches!(sent, Some(Ok(()))) {
            return Err(self.stop_with_error());
        }
        self.stop()
    }

    fn stop(&mut self) -> io::Result<WriteMode> {
        self.jobs = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the trace's writer thread failed")),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn stop_with_error(&mut self) -> io::Error {
        match self.stop() {
            Err(e) => e,
            Ok(_) => io::ErrorKind::BrokenPipe.into(),
        }
    }
}

impl Write for DirectWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            let n = rest.len().min(self.block.room());
            self.block.push(&rest[..n]);
            rest = &rest[n..];
            if self.block.room() == 0 {
                self.send_block()?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for DirectWriter {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The writer thread: writes each block at its offset, directly while the file
/// system accepts it, through `buffered` (the same file) otherwise and for the
/// last block's tail; gives each block back once written.
fn write_blocks(
    direct: &File,
    buffered: &File,
    jobs: Receiver<Job>,
    give_back: SyncSender<AlignedBlock>,
) -> io::Result<WriteMode> {
    let mut mode = WriteMode::Direct;
    let mut offset = 0u64;
    for job in jobs {
        let (block, last) = match job {
            Job::Full(block) => (block, false),
            Job::Last(block) => (block, true),
        };
        let bytes = block.bytes();
        // Whole aligned blocks only: the last block's tail is written buffered.
        let aligned = if last {
            bytes.len() / ALIGN * ALIGN
        } else {
            bytes.len()
        };
        let mut direct_bytes = 0;
        if mode == WriteMode::Direct && aligned > 0 {
            match direct.write_all_at(&bytes[..aligned], offset) {
                Ok(()) => direct_bytes = aligned,
                // Refused (alignment this file system does not take, or no
                // direct writes at all): the same bytes through the page cache,
                // from the block's start (what a refused write left is
                // overwritten with the same bytes).
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => mode = WriteMode::FellBack,
                Err(e) => return Err(e),
            }
        }
        buffered.write_all_at(&bytes[direct_bytes..], offset + direct_bytes as u64)?;
        offset += bytes.len() as u64;
        if last {
            break;
        }
        // The writer may be gone (it failed, or stopped early): nothing to do.
        let _ = give_back.send(block);
    }
    Ok(mode)
}

/// Opens `path` for direct writes.
fn open_direct(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// Whether `file` is on a file system where direct writes of large blocks are
/// known to be fast: local disk file systems (ext2/3/4, XFS, Btrfs) and the
/// parallel ones of clusters (Lustre, GPFS). Elsewhere (NFS, where each direct
/// write is a synchronous round trip to the server; tmpfs; overlays) the page
/// cache stays.
#[allow(unsafe_code)]
pub fn direct_writes_suit(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    const EXT4: u32 = 0xEF53;
    const XFS: u32 = 0x5846_5342;
    const BTRFS: u32 = 0x9123_683E;
    const LUSTRE: u32 = 0x0BD0_0BD0;
    const GPFS: u32 = 0x4750_4653;
    let mut stats = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: fstatfs fills the statfs it is given (ours, of the right type,
    // alive for the call) about a descriptor that `file` keeps open.
    let filled = unsafe { libc::fstatfs(file.as_raw_fd(), stats.as_mut_ptr()) } == 0;
    if !filled {
        return false;
    }
    // SAFETY: fstatfs succeeded, so it filled the structure (and it was zeroed).
    // (Magic numbers are 32 bits; the field's type varies by libc.)
    let kind = unsafe { stats.assume_init() }.f_type as u32;
    [EXT4, XFS, BTRFS, LUSTRE, GPFS].contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of `len` bytes that differs at every place (a shifted or
    /// repeated block would show).
    fn text(len: usize) -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    /// Writes `bytes` in pieces of the `pieces` lengths (cycled) through a
    /// writer started with `misaligned`; the file's bytes and the mode.
    fn write_through(bytes: &[u8], pieces: &[usize], misaligned: bool) -> (Vec<u8>, WriteMode) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        let file = File::create(&path).unwrap();
        let mut writer = match DirectWriter::start(&path, &file, misaligned) {
            Ok(writer) => writer,
            // O_DIRECT refused at open (a file system without it): what the
            // sink then does is the page cache's plain writer.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return (bytes.to_vec(), WriteMode::Buffered)
            }
            Err(e) => panic!("{e}"),
        };
        let mut rest = bytes;
        for &piece in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let n = piece.min(rest.len());
            writer.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        let mode = writer.finish().unwrap();
        file.sync_all().unwrap();
        (std::fs::read(&path).unwrap(), mode)
    }

    /// Lengths around the alignment and the block size, written in pieces
    /// that straddle blocks, come back whole.
    #[test]
    fn any_length_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let suits = direct_writes_suit(&File::create(dir.path().join("probe")).unwrap());
        let lengths = [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK + ALIGN + 17,
            BLOCKS * BLOCK * 2 + 5,
        ];
        for len in lengths {
            let expected = text(len);
            for pieces in [&[1 << 20][..], &[7, 4093, 65_537, 3 << 20]] {
                let (written, mode) = write_through(&expected, pieces, false);
                // Where direct writes are used, aligned blocks are taken.
                if suits {
                    assert_eq!(mode, WriteMode::Direct, "length {len}");
                }
                assert!(written == expected, "length {len}, pieces {pieces:?}");
            }
        }
    }

    /// Direct writes that the file system refuses (here: buffers one byte off
    /// the alignment) give the same bytes through the page cache.
    #[test]
    fn refused_direct_writes_fall_back_to_the_page_cache() {
        let expected = text(2 * BLOCK + ALIGN + 3);
        let (written, mode) = write_through(&expected, &[100_000], true);
        assert!(written == expected);
        // Where O_DIRECT exists, an unaligned buffer is refused (tmpfs takes
        // any: then nothing was refused).
        let dir = tempfile::tempdir().unwrap();
        let probe = File::create(dir.path().join("probe")).unwrap();
        if direct_writes_suit(&probe) {
            assert_eq!(mode, WriteMode::FellBack);
        }
    }

    /// A writer thread that fails (here: the file is read-only) reports its
    /// error, not a hang or a panic.
    #[test]
    fn a_failed_write_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        File::create(&path).unwrap();
        let read_only = File::open(&path).unwrap();
        let Ok(mut writer) = DirectWriter::start(&path, &read_only, true) else {
            return;
        };
        let result = writer
            .write_all(&text(BLOCKS * BLOCK * 3))
            .and_then(|_| writer.finish().map(|_| ()));
        assert!(result.is_err());
    }
}
