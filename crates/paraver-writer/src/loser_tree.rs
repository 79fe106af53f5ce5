//! The k-way merge of sorted streams of records, the one every merge of the
//! writer uses: a run's spills ([`crate::run::BlockMerge`]), the parallel merge
//! of runs in memory ([`crate::segments`]), and the record-by-record merge of
//! runs and of each run's streams ([`crate::kmerge`]): keys packed into 128
//! bits, and a tournament tree of losers over them.

/// Merge key packed so that keys compare as numbers: trace time, rank (see
/// [`crate::record::Record::rank`]), the thread's place among those merged
/// (dense, below 2^32 - 1), then the block's index (below 2^30; breaks ties in
/// block order).
#[inline]
pub(crate) fn merge_key(time: i64, rank: u8, place: u32, block: usize) -> u128 {
    debug_assert!(block < 1 << 30 && rank < 4);
    let time = (time as u64) ^ (1 << 63);
    let tail = (u64::from(rank) << 62) | (u64::from(place) << 30) | block as u64;
    (u128::from(time) << 64) | u128::from(tail)
}

/// The fields of a [`merge_key`]: time, rank, place, block.
#[inline]
pub(crate) fn unpack_key(key: u128) -> (i64, u8, u32, usize) {
    let time = ((key >> 64) as u64 ^ (1 << 63)) as i64;
    let tail = key as u64;
    let place = ((tail >> 30) & 0xffff_ffff) as u32;
    (
        time,
        (tail >> 62) as u8,
        place,
        (tail & ((1 << 30) - 1)) as usize,
    )
}

/// Key of a block with nothing left: after every other.
pub(crate) const DONE: u128 = u128::MAX;

/// A tournament tree of losers over the keys of k sorted streams: the smallest
/// key in log2(k) comparisons per record, where a binary heap takes about twice
/// as many and moves keys around.
pub(crate) struct LoserTree {
    /// Keys of the leaves (streams), padded to a power of two with `DONE`.
    keys: Vec<u128>,
    /// `nodes[1..]`: the leaf that lost at each inner node; `nodes[0]`: the winner.
    nodes: Vec<usize>,
}

impl LoserTree {
    pub(crate) fn new(keys: impl Iterator<Item = u128>) -> Self {
        let mut keys: Vec<u128> = keys.collect();
        let leaves = keys.len().next_power_of_two();
        keys.resize(leaves, DONE);
        let mut nodes = vec![0; leaves];
        // Winners of each subtree, bottom up: `winners[n]` for node n, leaves at
        // `leaves + i`.
        let mut winners = vec![0; 2 * leaves];
        for (i, w) in winners[leaves..].iter_mut().enumerate() {
            *w = i;
        }
        for n in (1..leaves).rev() {
            let (a, b) = (winners[2 * n], winners[2 * n + 1]);
            let (win, lose) = if keys[b] < keys[a] { (b, a) } else { (a, b) };
            winners[n] = win;
            nodes[n] = lose;
        }
        nodes[0] = winners[1.min(2 * leaves - 1)];
        LoserTree { keys, nodes }
    }

    /// The stream with the smallest key, or `None` once every one is `DONE`.
    #[inline]
    pub(crate) fn winner(&self) -> Option<usize> {
        let winner = self.nodes[0];
        (self.keys[winner] != DONE).then_some(winner)
    }

    /// The winner's key (`DONE` once every stream is done).
    #[inline]
    pub(crate) fn winner_key(&self) -> u128 {
        self.keys[self.nodes[0]]
    }

    /// Gives the winner its next key (`DONE` when it has no more) and plays its
    /// way back up. (Selects rather than branches: which key wins is as good as
    /// random.)
    #[inline]
    pub(crate) fn replace_winner(&mut self, key: u128) {
        let leaves = self.keys.len();
        // Leaves and nodes number below `leaves`, a power of two: masked, the
        // indices below need no bounds checks.
        let (keys, nodes) = (&mut self.keys[..leaves], &mut self.nodes[..leaves]);
        let mask = leaves - 1;
        let mut winner = nodes[0] & mask;
        keys[winner] = key;
        let mut winner_key = key;
        let mut n = (winner + leaves) / 2;
        while n > 0 {
            let loser = nodes[n] & mask;
            let loser_key = keys[loser];
            let swap = loser_key < winner_key;
            nodes[n] = if swap { winner } else { loser };
            winner = if swap { loser } else { winner };
            winner_key = if swap { loser_key } else { winner_key };
            n /= 2;
        }
        nodes[0] = winner;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_their_fields() {
        let keys = [
            merge_key(-5, 3, u32::MAX, (1 << 30) - 1),
            merge_key(0, 0, 0, 0),
            merge_key(0, 0, 0, 1),
            merge_key(0, 0, 1, 0),
            merge_key(0, 1, 0, 0),
            merge_key(1, 0, 0, 0),
            // (Places stop below u32::MAX, so no key is DONE.)
            merge_key(i64::MAX, 3, u32::MAX - 1, (1 << 30) - 1),
        ];
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().all(|&k| k < DONE));
        for (time, rank, place, block) in [
            (-5, 3, u32::MAX, (1 << 30) - 1),
            (0, 0, 0, 0),
            (i64::MIN, 1, 7, 12),
            (i64::MAX, 2, u32::MAX - 1, 3),
        ] {
            let key = merge_key(time, rank, place, block);
            assert_eq!(unpack_key(key), (time, rank, place, block));
        }
    }

    #[test]
    fn the_tree_merges_sorted_streams() {
        for k in [0usize, 1, 2, 3, 5, 8, 13] {
            let streams: Vec<Vec<u128>> = (0..k)
                .map(|s| (0..20).map(|i| (i * 7 + s * 3) as u128 % 50).collect())
                .map(|mut v: Vec<u128>| {
                    v.sort();
                    v
                })
                .collect();
            let mut next = vec![0; k];
            let mut tree = LoserTree::new(streams.iter().map(|s| s[0]));
            let mut merged = Vec::new();
            while let Some(i) = tree.winner() {
                merged.push(streams[i][next[i]]);
                next[i] += 1;
                tree.replace_winner(streams[i].get(next[i]).copied().unwrap_or(DONE));
            }
            let mut want: Vec<u128> = streams.concat();
            want.sort();
            assert_eq!(merged, want, "{k} streams");
        }
    }
}
