//! Growing storage in fixed-size chunks, for what a run holds: a vector that
//! doubles copies what it holds each time (and allocators without `mremap`,
//! such as the static binary's, fault the copy in afresh), and holds up to
//! twice what it needs while it does. Chunks are filled and never moved.

use crate::record::{EventPair, Record};

/// Records per chunk (1.5 MiB).
pub(crate) const RECORDS_PER_CHUNK: usize = 1 << 16;

/// One thread's records, in push order, in chunks.
#[derive(Default)]
pub(crate) struct ChunkedRecords {
    chunks: Vec<Vec<Record>>,
    /// Whether this thread ever filled a chunk: after a spill its first chunk
    /// is then made full-size at once rather than grown again by doubling.
    large: bool,
}

/// Emptied full-size record chunks of a run, reused after a spill instead of
/// being freed and allocated again: each fresh chunk is faulted in (and
/// zeroed) page by page, and the static binary's allocator returns a freed
/// one to the system at once. Chunks only come back here from a spill, so
/// what the pool and a run's records hold together never exceeds what the run
/// held when it last spilled (which its share of the memory limit bounds).
#[derive(Default)]
pub(crate) struct ChunkPool {
    spare: Vec<Vec<Record>>,
}

impl ChunkPool {
    /// An empty full-size chunk: a spare one if any.
    fn full_size(&mut self) -> Vec<Record> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(RECORDS_PER_CHUNK))
    }

    /// Keeps `chunk`'s buffer for reuse if it is a full-size one; frees it
    /// otherwise (a first chunk grown by doubling, a sort buffer).
    pub fn give_back(&mut self, mut chunk: Vec<Record>) {
        if chunk.capacity() == RECORDS_PER_CHUNK {
            chunk.clear();
            self.spare.push(chunk);
        }
    }

    /// Frees spare chunks beyond `most`.
    pub fn trim(&mut self, most: usize) {
        self.spare.truncate(most);
    }

    /// Spare chunks held.
    #[cfg(test)]
    pub fn spare(&self) -> usize {
        self.spare.len()
    }
}

impl ChunkedRecords {
    #[inline]
    pub fn push(&mut self, record: Record, pool: &mut ChunkPool) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < RECORDS_PER_CHUNK => last.push(record),
            _ => self.push_to_new_chunk(record, pool),
        }
    }

    #[cold]
    fn push_to_new_chunk(&mut self, record: Record, pool: &mut ChunkPool) {
        // The first chunk grows as a vector does (most threads have few
        // records); later ones, and the first of a thread that filled one
        // before, are made full-size. A spare chunk is taken even for a first
        // one: it is held already, and a new thread's chunk grown beside the
        // spares would take the run past what it held when it spilled.
        let mut chunk = if self.chunks.is_empty() && !self.large {
            pool.spare.pop().unwrap_or_else(|| Vec::with_capacity(16))
        } else {
            self.large = true;
            pool.full_size()
        };
        chunk.push(record);
        self.chunks.push(chunk);
    }

    /// Records the chunks have room for (held or not).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }

    /// The records in push order.
    pub fn iter(&self) -> impl Iterator<Item = &Record> + '_ {
        self.chunks.iter().flatten()
    }

    /// Every record; none is left.
    pub fn take(&mut self) -> Vec<Vec<Record>> {
        std::mem::take(&mut self.chunks)
    }
}

/// Pairs per chunk (1 MiB); a longer list of pairs gets a chunk of its own.
const PAIRS_PER_CHUNK: usize = 1 << 16;
const CHUNK_BITS: u32 = PAIRS_PER_CHUNK.trailing_zeros();

/// A run's event pairs in chunks: the lists of pairs records point to, each
/// within one chunk. A list's index is its chunk's slot times
/// [`PAIRS_PER_CHUNK`] plus its place in the chunk; a list longer than a chunk
/// takes a chunk as long, and the slots that its length covers.
#[derive(Default)]
pub struct Pairs {
    /// By slot; the slots that a long list covers hold empty chunks.
    chunks: Vec<Vec<EventPair>>,
    len: usize,
    /// Emptied full-size chunks kept by [`Pairs::clear`] for reuse (as the
    /// record chunks are, see [`ChunkPool`]).
    spare: Vec<Vec<EventPair>>,
}

impl Pairs {
    /// Stores `pairs`; their (index, count).
    #[inline]
    pub(crate) fn push(&mut self, pairs: &[EventPair]) -> (u32, u32) {
        // (A long list's chunk takes nothing more: its slots are its own.)
        let fits = self
            .chunks
            .last()
            .is_some_and(|last| last.len() + pairs.len() <= PAIRS_PER_CHUNK);
        if !fits {
            self.new_chunk(pairs.len());
        }
        let slot = self.chunks.len() - 1;
        let last = &mut self.chunks[slot];
        let first = (slot << CHUNK_BITS) + last.len();
        last.extend_from_slice(pairs);
        self.len += pairs.len();
        (first as u32, pairs.len() as u32)
    }

    #[cold]
    fn new_chunk(&mut self, room: usize) {
        // A long list before covers the slots of its length.
        if let Some(last) = self.chunks.last() {
            for _ in 1..last.len().div_ceil(PAIRS_PER_CHUNK) {
                self.chunks.push(Vec::new());
            }
        }
        // The first chunk grows as a vector does (small runs hold few pairs);
        // later ones are made full-size.
        let chunk = match self.spare.pop() {
            Some(spare) if !self.chunks.is_empty() && room <= PAIRS_PER_CHUNK => spare,
            spare => {
                self.spare.extend(spare);
                let size = if self.chunks.is_empty() {
                    16
                } else {
                    PAIRS_PER_CHUNK
                };
                Vec::with_capacity(room.max(size))
            }
        };
        self.chunks.push(chunk);
    }

    /// The list at `first` of `count` pairs.
    #[inline]
    pub(crate) fn get(&self, first: u32, count: u32) -> &[EventPair] {
        let slot = (first >> CHUNK_BITS) as usize;
        let at = (first as usize) & (PAIRS_PER_CHUNK - 1);
        &self.chunks[slot][at..at + count as usize]
    }

    /// Pairs stored.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every pair, keeping the first chunk's buffer, and the others of
    /// full size for reuse.
    pub(crate) fn clear(&mut self) {
        for mut chunk in self.chunks.drain(1.min(self.chunks.len())..) {
            if chunk.capacity() == PAIRS_PER_CHUNK {
                chunk.clear();
                self.spare.push(chunk);
            }
        }
        if let Some(first) = self.chunks.first_mut() {
            first.clear();
        }
        self.len = 0;
    }

    /// Frees the spare chunks.
    pub(crate) fn drop_spare(&mut self) {
        self.spare = Vec::new();
    }

    /// Frees the unused end of the last chunk, and the spare chunks.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.drop_spare();
        if let Some(last) = self.chunks.last_mut() {
            last.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Body;

    #[test]
    fn lists_of_any_length_come_back_as_stored() {
        let mut pairs = Pairs::default();
        let mut stored = Vec::new();
        let mut seed = 7u64;
        for i in 0..3_000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let n = match i % 500 {
                0 => PAIRS_PER_CHUNK + 3 + (seed % 1000) as usize,
                _ => (seed >> 40) as usize % 90,
            };
            let list: Vec<EventPair> = (0..n).map(|k| EventPair::raw(i as u32, k as i64)).collect();
            stored.push((pairs.push(&list), list));
        }
        for ((first, count), list) in &stored {
            assert_eq!(pairs.get(*first, *count), &list[..]);
        }
        assert_eq!(
            pairs.len(),
            stored.iter().map(|(_, l)| l.len()).sum::<usize>()
        );
        pairs.clear();
        assert!(pairs.is_empty());
        assert_eq!(pairs.push(&[EventPair::raw(1, 2)]), (0, 1));
    }

    #[test]
    fn records_keep_push_order_across_chunks() {
        let mut records = ChunkedRecords::default();
        let mut pool = ChunkPool::default();
        for t in 0..(3 * RECORDS_PER_CHUNK + 5) as i64 {
            records.push(
                Record {
                    time: t,
                    body: Body::Comm { index: 0 },
                },
                &mut pool,
            );
        }
        let n = 3 * RECORDS_PER_CHUNK + 5;
        assert!(records.iter().map(|r| r.time).eq(0..n as i64));
        let chunks = records.take();
        assert_eq!(chunks.len(), 4);
        assert!(chunks[1..]
            .iter()
            .all(|c| c.capacity() == RECORDS_PER_CHUNK));
    }
}
