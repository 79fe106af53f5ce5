//! A table a report gathers row by row for a pass that reads it only once every
//! other pass has run (the GPU idle causes' operations and launch arrows): one
//! row per kernel, held for the whole translation. When holding it would take
//! the report past its share of the memory limit, it is written to an
//! anonymous file in the spill directory as it comes, in push order, instead
//! of held in memory (issue 28: 48 bytes per kernel of these two stayed above a
//! small `--memory-limit`, since they did not spill), and read back whole when
//! that pass runs, after the tables the API calls needed are gone. The rows come
//! back in the order they were pushed, so what is computed from them is the same
//! either way.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A row of fixed size on disk: its fields in little endian.
pub(crate) trait FixedRow: Copy {
    const SIZE: usize;
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(bytes: &[u8]) -> Self;
}

/// Where the rows go once the table spills: the directory, and the report's
/// share of the memory limit (bytes: its run's chunk size), which the table
/// and what the report holds beside it may fill but for the run's floor.
#[derive(Clone, Debug)]
pub(crate) struct SpillOver {
    pub dir: PathBuf,
    pub share: usize,
}

impl SpillOver {
    /// Bytes the report may hold beside its run: the share but the eighth
    /// the run keeps for its records whatever else is held (the floor of
    /// `RunBuilder`'s room).
    fn beside_run(&self) -> usize {
        self.share - self.share / 8
    }
}

/// Write buffer of a spilled table (held while it is written).
const WRITE_BUFFER: usize = 256 << 10;
const READ_BUFFER: usize = 64 << 10;

pub(crate) struct SpilledTable<T> {
    rows: Vec<T>,
    spill_over: Option<SpillOver>,
    file: Option<BufWriter<File>>,
    /// Rows written to `file`.
    written: usize,
    /// Bytes being encoded (one row).
    scratch: Vec<u8>,
    error: Option<io::Error>,
}

impl<T> Default for SpilledTable<T> {
    fn default() -> Self {
        SpilledTable {
            rows: Vec::new(),
            spill_over: None,
            file: None,
            written: 0,
            scratch: Vec::new(),
            error: None,
        }
    }
}

/// A spilled table that could not be written or read back.
#[derive(Debug)]
pub(crate) struct TableSpillError {
    pub dir: PathBuf,
    pub source: io::Error,
}

impl<T: FixedRow> SpilledTable<T> {
    /// A table that spills to `spill_over.dir` once holding it would take the
    /// report past `spill_over.share` ([`SpilledTable::reserve`] says how).
    /// No spill directory: held.
    pub fn new(spill_over: Option<SpillOver>) -> Self {
        SpilledTable {
            spill_over,
            ..Self::default()
        }
    }

    /// Room for `n` more rows: in memory, exactly (so that the vector does not
    /// grow by doubling while the run's share counts it), unless that with
    /// `held` (what the report holds beside its run, this table included) would
    /// pass what the report may hold beside its run: then on disk from here on.
    /// A report that fits in its share keeps the table in memory (writing and
    /// reading it back costs CPU at every limit, issue 28).
    pub fn reserve(&mut self, n: usize, held: usize) {
        if self.file.is_some() || self.error.is_some() {
            return;
        }
        let to_hold = (self.rows.len() + n).saturating_mul(std::mem::size_of::<T>());
        let beside = held.saturating_sub(self.bytes()).saturating_add(to_hold);
        let dir = match &self.spill_over {
            Some(s) if beside > s.beside_run() => s.dir.clone(),
            _ => {
                self.rows.reserve_exact(n);
                return;
            }
        };
        match tempfile::tempfile_in(&dir) {
            Ok(file) => {
                self.file = Some(BufWriter::with_capacity(WRITE_BUFFER, file));
                // What was held so far goes first, in its order.
                for row in std::mem::take(&mut self.rows) {
                    self.write(&row);
                }
            }
            Err(e) => self.error = Some(e),
        }
    }

    pub fn push(&mut self, row: T) {
        if self.file.is_some() {
            self.write(&row);
        } else if self.error.is_none() {
            self.rows.push(row);
        }
    }

    fn write(&mut self, row: &T) {
        let Some(file) = &mut self.file else {
            return;
        };
        self.scratch.clear();
        row.encode(&mut self.scratch);
        match file.write_all(&self.scratch) {
            Ok(()) => self.written += 1,
            Err(e) => {
                self.error.get_or_insert(e);
                self.file = None;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len() + self.written
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held in memory (allocated, used or not; a spilled table's buffer).
    pub fn bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<T>()
            + if self.file.is_some() { WRITE_BUFFER } else { 0 }
    }

    /// Every row, in the order pushed.
    pub fn into_rows(self) -> Result<Vec<T>, TableSpillError> {
        let dir = || {
            self.spill_over
                .as_ref()
                .map_or_else(PathBuf::new, |s| s.dir.clone())
        };
        if let Some(source) = self.error {
            return Err(TableSpillError { dir: dir(), source });
        }
        let Some(file) = self.file else {
            return Ok(self.rows);
        };
        read_back(file, self.written).map_err(|source| TableSpillError { dir: dir(), source })
    }
}

fn read_back<T: FixedRow>(file: BufWriter<File>, n: usize) -> io::Result<Vec<T>> {
    let mut file = file.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    let mut rows = Vec::with_capacity(n);
    let mut bytes = vec![0u8; T::SIZE];
    for _ in 0..n {
        reader.read_exact(&mut bytes)?;
        rows.push(T::decode(&bytes));
    }
    Ok(rows)
}

/// Little-endian fields read in order from a row's bytes.
pub(crate) struct Fields<'a>(pub &'a [u8]);

impl Fields<'_> {
    pub fn u32(&mut self) -> u32 {
        let (head, rest) = self.0.split_at(4);
        self.0 = rest;
        u32::from_le_bytes(head.try_into().expect("4 bytes"))
    }

    pub fn i64(&mut self) -> i64 {
        let (head, rest) = self.0.split_at(8);
        self.0 = rest;
        i64::from_le_bytes(head.try_into().expect("8 bytes"))
    }
}

/// Where a table of a report whose run's share is `chunk_bytes` spills, in `dir`.
pub(crate) fn spill_over(dir: &Path, chunk_bytes: usize) -> SpillOver {
    SpillOver {
        dir: dir.to_path_buf(),
        share: chunk_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Row(u32, i64);

    impl FixedRow for Row {
        const SIZE: usize = 12;
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
        }
        fn decode(bytes: &[u8]) -> Self {
            let mut f = Fields(bytes);
            Row(f.u32(), f.i64())
        }
    }

    /// Held or spilled, the rows come back in the order pushed. A table spills
    /// once what it is to hold, with what the report holds beside it, passes
    /// the report's share but the run's eighth (the rows held so far go
    /// first), and then holds only its write buffer; a report that has room
    /// holds it.
    #[test]
    fn rows_come_back_in_push_order_held_or_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<Row> = (0..10_000).map(|i| Row(i as u32 % 7, -i * 3)).collect();
        let all = rows.len() * std::mem::size_of::<Row>();
        // (share, held beside the table, spills): the share's seven eighths
        // hold the table just, or not with 1,000 bytes more; a share of 0
        // spills from the first row.
        let share = (all * 8).div_ceil(7);
        let cases = [
            (usize::MAX, 0, false),
            (share, 0, false),
            (share, 1_000, true),
            (all, 0, true),
            (0, 0, true),
        ];
        for (share, beside, spills) in cases {
            let mut table = SpilledTable::new(Some(SpillOver {
                dir: dir.path().to_path_buf(),
                share,
            }));
            table.reserve(3, beside + table.bytes());
            rows[..3].iter().for_each(|&r| table.push(r));
            table.reserve(rows.len() - 3, beside + table.bytes());
            rows[3..].iter().for_each(|&r| table.push(r));
            assert_eq!(table.len(), rows.len());
            let held = if spills { WRITE_BUFFER } else { all };
            assert_eq!(table.bytes(), held, "share {share}, {beside} beside");
            assert_eq!(table.into_rows().unwrap(), rows, "share {share}");
        }
        // No directory: in memory.
        let mut table = SpilledTable::new(None);
        table.reserve(2, usize::MAX);
        table.push(Row(1, 2));
        assert_eq!(table.into_rows().unwrap(), [Row(1, 2)]);
    }

    /// A directory that cannot hold the file is named when the rows are read back.
    #[test]
    fn a_directory_that_cannot_hold_the_table_is_named() {
        let mut table = SpilledTable::<Row>::new(Some(SpillOver {
            dir: PathBuf::from("/nonexistent/spill"),
            share: 0,
        }));
        table.reserve(10, 0);
        table.push(Row(1, 2));
        let e = table.into_rows().unwrap_err();
        assert_eq!(e.dir, PathBuf::from("/nonexistent/spill"));
    }
}
