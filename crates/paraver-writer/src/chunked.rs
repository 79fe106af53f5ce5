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
}

impl ChunkedRecords {
    #[inline]
    pub fn push(&mut self, record: Record) {
        match self.chunks.last_mut() {
            // The first chunk grows as a vector does (most threads have few
            // records); later ones are made full-size.
            Some(last) if last.len() < RECORDS_PER_CHUNK => last.push(record),
            _ => {
                let mut chunk = Vec::with_capacity(if self.chunks.is_empty() {
                    16
                } else {
                    RECORDS_PER_CHUNK
                });
                chunk.push(record);
                self.chunks.push(chunk);
            }
        }
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
        let size = if self.chunks.is_empty() {
            16
        } else {
            PAIRS_PER_CHUNK
        };
        self.chunks.push(Vec::with_capacity(room.max(size)));
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

    /// Forgets every pair, keeping the first chunk's buffer.
    pub(crate) fn clear(&mut self) {
        self.chunks.truncate(1);
        if let Some(first) = self.chunks.first_mut() {
            first.clear();
        }
        self.len = 0;
    }

    /// Frees the unused end of the last chunk.
    pub(crate) fn shrink_to_fit(&mut self) {
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
        for t in 0..(3 * RECORDS_PER_CHUNK + 5) as i64 {
            records.push(Record {
                time: t,
                body: Body::Comm { index: 0 },
            });
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
