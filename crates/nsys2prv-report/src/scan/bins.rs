//! The heat maps' bins across the run.

/// Equal bins over `[0, end)`.
#[derive(Clone, Copy)]
pub struct Bins {
    pub(super) count: usize,
    end: u64,
}

impl Bins {
    pub fn new(count: usize, end: u64) -> Bins {
        Bins {
            count: count.max(1),
            end: end.max(1),
        }
    }

    /// Start of bin `i` (bin `count` is the end).
    pub fn edge(&self, i: usize) -> u64 {
        (u128::from(self.end) * i as u128 / self.count as u128) as u64
    }

    /// The bin `i` with `edge(i) <= time < edge(i + 1)` (the last for times past the end).
    pub(super) fn index(&self, time: u64) -> usize {
        let mut i = ((u128::from(time) * self.count as u128 / u128::from(self.end)) as usize)
            .min(self.count - 1);
        while i + 1 < self.count && self.edge(i + 1) <= time {
            i += 1;
        }
        while i > 0 && self.edge(i) > time {
            i -= 1;
        }
        i
    }

    /// Adds `[from, to)` (clipped to the bins) to `bins`, split at the edges.
    pub(super) fn add(&self, bins: &mut [u64], from: u64, to: u64) {
        let to = to.min(self.end);
        let mut at = from;
        while at < to {
            let i = self.index(at);
            let stop = self.edge(i + 1).min(to);
            bins[i] += stop - at;
            at = stop.max(at + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_split_intervals_at_their_edges() {
        let bins = Bins::new(4, 100);
        let mut b = vec![0; 4];
        bins.add(&mut b, 10, 60);
        assert_eq!(b, [15, 25, 10, 0]);
        bins.add(&mut b, 90, 200);
        assert_eq!(b, [15, 25, 10, 10]);
        let odd = Bins::new(3, 10);
        assert_eq!(
            (0..=3).map(|i| odd.edge(i)).collect::<Vec<_>>(),
            [0, 3, 6, 10]
        );
        let mut b = vec![0; 3];
        odd.add(&mut b, 0, 10);
        assert_eq!(b, [3, 3, 4]);
    }
}
