//! Statistics of the occurrences of one name (a kernel, a call, an operation).

/// count, total, min, max, bytes (and how many occurrences gave a size: none,
/// and the bytes are unknown, not 0)
#[derive(Default, Clone, Copy)]
pub struct NamedStatsAcc {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
    pub bytes: u64,
    pub sized: u64,
}

impl NamedStatsAcc {
    pub(super) fn add(&mut self, duration: u64, bytes: Option<u64>) {
        if self.count == 0 || duration < self.min {
            self.min = duration;
        }
        self.max = self.max.max(duration);
        self.count += 1;
        self.total += duration;
        self.add_bytes(bytes);
    }

    pub(super) fn add_bytes(&mut self, bytes: Option<u64>) {
        if let Some(bytes) = bytes {
            self.bytes += bytes;
            self.sized += 1;
        }
    }
}
