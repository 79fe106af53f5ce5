//! The bytes of `.prv` lines: a buffer written in place, decimal fields, and
//! short pieces (a thread's `0:1:TASK:THREAD`, an event type's `:TYPE`)
//! formatted once and copied as fixed-size arrays.

/// A short piece of a line formatted once and copied many times, kept in a
/// fixed-size array so that copying it is a fixed-size copy (no `memcpy` call).
#[derive(Clone, Copy)]
pub(crate) struct Preformatted<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> Preformatted<N> {
    /// `text`, which must be shorter than `N` bytes.
    pub(crate) fn new(text: &str) -> Self {
        let mut bytes = [0; N];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Preformatted {
            bytes,
            len: text.len() as u8,
        }
    }
}

/// `0:1:TASK:THREAD` of a thread (at most `0:1:` and two 10-digit numbers).
pub(crate) type Prefix = Preformatted<32>;

impl Prefix {
    /// The prefix of (0-based) `task` and `thread`.
    pub fn of(task: u64, thread: u64) -> Self {
        Self::new(&format!("0:1:{}:{}", task + 1, thread + 1))
    }
}

/// `:TYPE` of an event type.
pub(crate) type TypeField = Preformatted<16>;

/// Room a field needs: `:`, a sign and 24 bytes (20 digits, written 8 at a time).
const FIELD_MAX: usize = 26;

/// The bytes of formatted lines. The vector is zero-filled ahead of what is
/// written (`len` marks the end of the text), so fields are written in place:
/// one room check per field and fixed-size copies, instead of a capacity check
/// and a `memcpy` call per piece.
#[derive(Default)]
pub(crate) struct LineBuf {
    bytes: Vec<u8>,
    len: usize,
}

impl LineBuf {
    pub fn with_capacity(capacity: usize) -> Self {
        LineBuf {
            bytes: vec![0; capacity],
            len: 0,
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Makes room for `n` more bytes.
    #[inline]
    fn room(&mut self, n: usize) {
        if self.bytes.len() - self.len < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        let size = (self.len + n).max(2 * self.bytes.len()).max(4096);
        self.bytes.resize(size, 0);
    }

    /// Appends `b`.
    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.room(1);
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// Appends the record kind and the thread: `K:0:1:TASK:THREAD`.
    #[inline]
    pub fn start(&mut self, kind: u8, prefix: &Prefix) {
        self.byte(kind);
        self.byte(b':');
        self.text(prefix);
    }

    /// Appends `:` and the thread without its record kind (a receiver).
    #[inline]
    pub fn thread(&mut self, prefix: &Prefix) {
        self.byte(b':');
        self.text(prefix);
    }

    /// Appends `bytes`.
    #[inline]
    pub fn extend(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends preformatted text.
    #[inline(always)]
    pub fn text<const N: usize>(&mut self, text: &Preformatted<N>) {
        self.room(N);
        self.bytes[self.len..self.len + N].copy_from_slice(&text.bytes);
        self.len += text.len as usize;
    }

    /// Appends `:` and the decimal number.
    #[inline(always)]
    pub fn field(&mut self, v: i64) {
        self.room(FIELD_MAX);
        let mut at = self.len;
        self.bytes[at] = b':';
        self.bytes[at + 1] = b'-';
        at += 1 + usize::from(v < 0);
        let m = v.unsigned_abs();
        self.len = if m < E8 {
            self.leading_digits(at, m as u32)
        } else if m < E16 {
            let at = self.leading_digits(at, (m / E8) as u32);
            self.eight_digits(at, (m % E8) as u32)
        } else {
            let at = self.leading_digits(at, (m / E16) as u32);
            let at = self.eight_digits(at, (m / E8 % E8) as u32);
            self.eight_digits(at, (m % E8) as u32)
        };
    }

    /// Writes `v` (< 10^8) at `at` without leading zeros; returns where it ends.
    /// (Writes 8 bytes: those past the digits are overwritten later.)
    #[inline]
    fn leading_digits(&mut self, at: usize, v: u32) -> usize {
        let digits = eight_digits(v);
        // Leading zeros are the low bytes; keep at least one digit.
        let zeros = ((digits.trailing_zeros() / 8) as usize).min(7);
        let text = (digits | ASCII_ZEROS) >> (8 * zeros);
        self.bytes[at..at + 8].copy_from_slice(&text.to_le_bytes());
        at + 8 - zeros
    }

    /// Writes the 8 digits of `v` (< 10^8, zero-padded) at `at`; returns where
    /// they end.
    #[inline]
    fn eight_digits(&mut self, at: usize, v: u32) -> usize {
        let text = eight_digits(v) | ASCII_ZEROS;
        self.bytes[at..at + 8].copy_from_slice(&text.to_le_bytes());
        at + 8
    }
}

const E8: u64 = 100_000_000;
const E16: u64 = E8 * E8;
/// `'0'` in every byte.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// The 8 decimal digits of `v` (< 10^8), one per byte, first digit in the lowest
/// byte (so `to_le_bytes` gives them in writing order), without the ASCII offset.
/// Lanes of one `u64` split 4+4, then 2+2, then 1+1 digits at once: a handful of
/// multiplications instead of a division per digit pair.
#[inline]
fn eight_digits(v: u32) -> u64 {
    let v = u64::from(v);
    // Two 32-bit lanes of 4 digits: the first four in the low lane.
    let fours = (v / 10_000) | ((v % 10_000) << 32);
    // x / 100 in each lane (exact for x < 10^4), then 16-bit lanes of 2 digits.
    let hundreds = ((fours * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let twos = ((fours - hundreds * 100) << 16) | hundreds;
    // x / 10 in each 16-bit lane (exact for x < 100), then bytes of 1 digit.
    let tens = ((twos * 103) >> 10) & 0x000f_000f_000f_000f;
    ((twos - tens * 10) << 8) | tens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(v: i64) -> String {
        let mut buf = LineBuf::default();
        buf.field(v);
        String::from_utf8(buf.as_slice().to_vec()).unwrap()
    }

    #[test]
    fn fields_are_colon_and_decimal() {
        let mut cases = vec![
            0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 99_999, 100_000,
        ];
        cases.extend((0..19).map(|p| 10i64.pow(p)));
        cases.extend((1..19).map(|p| 10i64.pow(p) - 1));
        cases.extend([123_456_789_012, i64::MAX, i64::MIN, -1, -10, -123_456]);
        cases.extend(0..20_000);
        // Every magnitude, with varied digits (a multiplicative sequence).
        let mut x: u64 = 1;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = (x >> (x % 64)) as i64;
            cases.extend([v, -v]);
        }
        for v in cases {
            assert_eq!(field(v), format!(":{v}"), "{v}");
        }
    }

    #[test]
    fn lines_grow_past_their_first_capacity() {
        let mut buf = LineBuf::with_capacity(3);
        let prefix = Prefix::of(4_294_967_294, 4_294_967_294);
        let mut want = String::new();
        for v in 0..1000 {
            buf.start(b'2', &prefix);
            buf.field(v * 1_000_003);
            buf.thread(&Prefix::of(0, 1));
            buf.byte(b'\n');
            want += &format!("2:0:1:4294967295:4294967295:{}:0:1:1:2\n", v * 1_000_003);
        }
        assert_eq!(String::from_utf8(buf.as_slice().to_vec()).unwrap(), want);
        buf.clear();
        assert_eq!(buf.len(), 0);
    }
}
