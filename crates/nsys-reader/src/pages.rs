//! Table scans read straight from the file's pages.
//!
//! A plain scan (`SELECT a, b, c FROM t`) costs SQLite's virtual machine about
//! a hundred instructions per column of every row, and its column API as many
//! again: a third of a conversion's time. The rows of a table are the cells of
//! the leaves of its B-tree, in rowid order, in a format that has been stable
//! since 2004 (<https://www.sqlite.org/fileformat2.html>); reading them here
//! costs a few instructions per column.
//!
//! Only what SQLite itself would return is returned: the same rows in the same
//! order, each column as stored (a REAL column's integral values as reals, as
//! SQLite converts them), `NULL` past the end of a short record (a column added
//! later, without a default), the rowid for an `INTEGER PRIMARY KEY`. Anything
//! else (a table without rowid, generated columns, defaults, a text encoding
//! other than UTF-8, a file that may be changing) is left to SQLite: see
//! [`PageFile::open`] and [`crate::schema::Schema::query`]. A damaged page is
//! an error naming what is wrong, never a panic.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::types::ValueRef;

use crate::query::{DirectScan, Field, Keep};

/// Bytes one read takes at most: the longest run of a table's consecutive
/// leaves read at once (see [`PageReader::page`]), and the reader's buffer.
const MAX_READ_BYTES: usize = 128 << 10;

/// Pages from a table's root to a leaf at most: SQLite's limit
/// (`BTCURSOR_MAX_DEPTH`), far more than any file holds (a level multiplies the
/// pages by tens at least); more means the pages loop, and SQLite reports it.
const MAX_DEPTH: usize = 20;

/// The longest record header SQLite reads (32768 columns of 3-byte serial
/// types); a longer one is damage to it.
const MAX_RECORD_HEADER: usize = 98_307;

/// A database file whose tables can be scanned here.
pub(crate) struct PageFile {
    file: File,
    page_size: usize,
    /// Bytes of a page that hold data (the rest is reserved for extensions).
    usable: usize,
    /// Pages in the file.
    pages: u32,
    /// Reads of the file, and the bytes they asked for: what the tests hold
    /// the scans to (a table's scan reads its own pages, not its neighbours').
    reads: AtomicU64,
    bytes_read: AtomicU64,
}

/// Why a scan stopped: the file is not what its pages say.
#[derive(Debug)]
pub(crate) enum ScanError {
    Io(std::io::Error),
    Damaged(String),
}

fn damaged<T>(what: impl Into<String>) -> Result<T, ScanError> {
    Err(ScanError::Damaged(what.into()))
}

impl PageFile {
    /// The pages of the export at `path`, when this reader can scan them: a
    /// rollback-journal or WAL-mode file with nothing beside it that could hold
    /// newer pages, UTF-8 text, SQLite's standard payload fractions. `None`
    /// otherwise, and SQLite reads every table.
    pub fn open(path: &Path) -> Option<PageFile> {
        let file = File::open(path).ok()?;
        let mut head = [0u8; 100];
        file.read_exact_at(&mut head, 0).ok()?;
        let page_size = match u16::from_be_bytes([head[16], head[17]]) {
            1 => 65_536,
            p => usize::from(p),
        };
        let reserved = usize::from(head[20]);
        let standard = page_size.is_power_of_two()
            && (512..=65_536).contains(&page_size)
            && matches!(head[18], 1 | 2)
            && matches!(head[19], 1 | 2)
            && page_size - reserved >= 480
            && head[21..24] == [64, 32, 32]
            && u32::from_be_bytes([head[56], head[57], head[58], head[59]]) == 1;
        let size = file.metadata().ok()?.len();
        // As SQLite counts them: a partial last page is a page, and the
        // header's count, when valid (written with the change counter), when
        // it says fewer.
        let mut pages = u32::try_from(size.div_ceil(page_size as u64)).ok()?;
        let be32 =
            |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        if be32(28) > 0 && be32(24) == be32(92) {
            pages = pages.min(be32(28));
        }
        // A file cut within a page it counts (SQLite never writes one) is left
        // to SQLite: it reads the missing bytes of a B-tree page as zeros but
        // reports an I/O error for those of an overflow page (read straight
        // from the file), depending on which column spans them (found by
        // fuzzing).
        let whole_pages = u64::from(pages) * page_size as u64 <= size;
        (standard && whole_pages).then_some(PageFile {
            file,
            page_size,
            usable: page_size - reserved,
            pages,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
        })
    }

    /// Hands every row of the table `scan` describes to `on_row`, in rowid
    /// order, until it returns `false`; returns the rows handed over. `on_row`'s
    /// error ends the scan and is returned as it is.
    pub fn scan<E>(
        &self,
        scan: &DirectScan,
        mut on_row: impl FnMut(&Row) -> Result<bool, E>,
    ) -> Result<u64, ScanOutcome<E>> {
        let failed = ScanOutcome::Failed;
        let mut reader = PageReader::new(self);
        let mut overflow = Overflow::default();
        let wanted = wanted_fields(scan);
        let mut fields = Vec::with_capacity(wanted);
        let mut rows = 0u64;
        let mut stack: Vec<Interior> = Vec::new();
        // Interior pages above the leaves (known once the first leaf is read:
        // a table's leaves all lie at one depth).
        let mut leaf_depth: Option<usize> = None;
        let mut next = Some(scan.root);
        let mut visited: u32 = 0;
        loop {
            if let Some(number) = next.take() {
                visited += 1;
                if visited > self.pages || stack.len() >= MAX_DEPTH {
                    let what = format!("the B-tree of root page {} loops", scan.root);
                    return Err(failed(ScanError::Damaged(what)));
                }
                // A leaf is read with the leaves its parent lists after it
                // that follow it in the file; any other page alone.
                let page = match stack.last() {
                    Some(parent) if leaf_depth == Some(stack.len()) => {
                        reader.page(number, parent.following())
                    }
                    _ => reader.page(number, std::iter::empty()),
                }
                .map_err(failed)?;
                let head = header_offset(number);
                // SQLite's checks of every page it enters: no more cells than
                // fit, and none but the root without cells.
                let is_root = stack.is_empty();
                if let Some(&kind @ (0x05 | 0x0d)) = page.get(head) {
                    let cells = be16(page, head + 3).map_err(|e| failed(in_page(e, number)))?;
                    if cells > (self.page_size - 8) / 6 {
                        let what = format!("page {number} has {cells} cells, more than fit");
                        return Err(failed(ScanError::Damaged(what)));
                    }
                    if cells == 0 && (!is_root || (kind == 0x05 && number != 1)) {
                        let what = format!("page {number} of the table's B-tree has no cells");
                        return Err(failed(ScanError::Damaged(what)));
                    }
                }
                match page.get(head) {
                    Some(0x05) => stack.push(Interior::new(number, page).map_err(failed)?),
                    Some(0x0d) => {
                        leaf_depth.get_or_insert(stack.len());
                        let cells =
                            cell_count(page, head, 8).map_err(|e| failed(in_page(e, number)))?;
                        for cell in 0..cells {
                            let in_this_page = |e| failed(in_page(e, number));
                            let (rowid, payload) =
                                cell_payload(self, page, head, cell, &mut overflow)
                                    .map_err(in_this_page)?;
                            decode_header(payload, wanted, &mut fields).map_err(in_this_page)?;
                            let row = Row {
                                scan,
                                rowid,
                                payload,
                                fields: &fields,
                            };
                            if !row.kept() {
                                continue;
                            }
                            rows += 1;
                            match on_row(&row) {
                                Ok(true) => {}
                                Ok(false) => return Ok(rows),
                                Err(e) => return Err(ScanOutcome::Stopped(e)),
                            }
                        }
                    }
                    Some(kind) => {
                        let what =
                            format!("page {number} of the table's B-tree has type {kind:#04x}");
                        return Err(failed(ScanError::Damaged(what)));
                    }
                    None => {
                        return Err(failed(ScanError::Damaged(format!(
                            "page {number} is empty"
                        ))))
                    }
                }
            }
            let Some(top) = stack.last_mut() else {
                return Ok(rows);
            };
            let parent = top.number;
            match top.next_child().map_err(|e| failed(in_page(e, parent)))? {
                Some(child) => next = Some(child),
                None => {
                    stack.pop();
                }
            }
        }
    }

    /// Fills `buf` from `offset`; bytes past the end of the file read as zeros
    /// (the pages counted lie within it when it is opened: only a file cut
    /// while being read has any).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        let mut filled = 0;
        while filled < buf.len() {
            match self
                .file
                .read_at(&mut buf[filled..], offset + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf[filled..].fill(0);
        Ok(())
    }

    /// Reads of the file so far, and the bytes they asked for.
    #[cfg(test)]
    pub fn read_counts(&self) -> (u64, u64) {
        (
            self.reads.load(Ordering::Relaxed),
            self.bytes_read.load(Ordering::Relaxed),
        )
    }

    fn check_page(&self, page: u32) -> Result<(), ScanError> {
        if page == 0 || page > self.pages {
            return damaged(format!(
                "page {page} is past the end of the file ({} pages)",
                self.pages
            ));
        }
        Ok(())
    }

    /// The most a leaf cell of a table keeps on its page; more overflows.
    fn max_local(&self) -> usize {
        self.usable - 35
    }

    /// The least a leaf cell that overflows keeps on its page.
    fn min_local(&self) -> usize {
        (self.usable - 12) * 32 / 255 - 23
    }
}

/// How a scan ended early: its pages were damaged, or the row handler failed.
#[derive(Debug)]
pub(crate) enum ScanOutcome<E> {
    Failed(ScanError),
    Stopped(E),
}

fn in_page(e: ScanError, page: u32) -> ScanError {
    match e {
        ScanError::Damaged(what) => ScanError::Damaged(format!("page {page}: {what}")),
        io => io,
    }
}

/// Page 1 begins with the file's 100-byte header.
fn header_offset(page: u32) -> usize {
    if page == 1 {
        100
    } else {
        0
    }
}

/// Reads pages through a window of consecutive pages.
struct PageReader<'f> {
    file: &'f PageFile,
    window: Vec<u8>,
    first: u32,
    count: u32,
    /// The most pages a read takes ([`MAX_READ_BYTES`] of them, one at least).
    most: u32,
}

impl<'f> PageReader<'f> {
    fn new(file: &'f PageFile) -> Self {
        PageReader {
            file,
            window: Vec::new(),
            first: 0,
            count: 0,
            most: (MAX_READ_BYTES / file.page_size).max(1) as u32,
        }
    }

    /// Page `page`, from the window, or read with those of the pages to be
    /// asked for next (`following`, in the order they will be) that continue
    /// it in the file.
    ///
    /// A table's leaves lie in rowid order but other tables' pages, written
    /// at the same time, often lie between them (a generated export of 7.57 M
    /// rows: of its kernels' 59 K leaves, 27 K follow the one before, 26 K
    /// after a page of another table; of its API calls' 29 K, none follows
    /// the one before): reading ahead through those pages, as this reader
    /// did, read that file 3.85 times over in a conversion. So a read
    /// takes only the pages the parent's list names next, while each is the
    /// page after the one before: a gap, even of one page, ends it.
    /// Measured on that export's three largest tables in the page cache
    /// (2 cores, a 4 KiB page): reading only their pages, 68 K reads of 456
    /// MB, took 0.12 s of system time; reading through gaps of one page, 42 K
    /// reads of 563 MB, 0.13 s; of two, 20 K of 739 MB, 0.17 s; of any size
    /// (128 KiB reads), 9.7 K of 1,090 MB, 0.23 s. Copying a page costs more
    /// than a read call. On a file out of the page cache the kernel's own
    /// read-ahead still reads it in large blocks (the same export evicted
    /// then read either way: 0.35 s against 0.42 s).
    fn page(
        &mut self,
        page: u32,
        following: impl Iterator<Item = u32>,
    ) -> Result<&[u8], ScanError> {
        self.file.check_page(page)?;
        let size = self.file.page_size;
        if !(self.first..self.first + self.count).contains(&page) {
            let most = self.most.min(self.file.pages - page + 1);
            let mut count = 1;
            for next in following {
                if count == most || next != page + count {
                    break;
                }
                count += 1;
            }
            self.window.resize(count as usize * size, 0);
            let offset = u64::from(page - 1) * size as u64;
            self.file
                .read_at(&mut self.window, offset)
                .map_err(ScanError::Io)?;
            self.first = page;
            self.count = count;
        }
        let at = (page - self.first) as usize * size;
        Ok(&self.window[at..at + size])
    }
}

/// Bytes `at..at + n` of `bytes`, or an error.
fn slice(bytes: &[u8], at: usize, n: usize) -> Result<&[u8], ScanError> {
    at.checked_add(n)
        .and_then(|end| bytes.get(at..end))
        .map_or_else(
            || damaged(format!("{n} bytes at offset {at} lie past its end")),
            Ok,
        )
}

fn be16(bytes: &[u8], at: usize) -> Result<usize, ScanError> {
    let b = slice(bytes, at, 2)?;
    Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Result<u32, ScanError> {
    let b = slice(bytes, at, 4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// SQLite's variable-length integer at `at`: its value and length.
#[inline]
fn varint(bytes: &[u8], at: usize) -> Result<(u64, usize), ScanError> {
    let mut value: u64 = 0;
    for i in 0..9 {
        let Some(&b) = bytes.get(at + i) else {
            return damaged("a number runs past the end of its cell");
        };
        if i == 8 {
            return Ok(((value << 8) | u64::from(b), 9));
        }
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    unreachable!("the loop returns by its ninth byte")
}

/// A cell's payload size as SQLite reads it: a variable-length integer of
/// seven bits a byte (nine at most, the ninth too), cut to 32 bits.
#[inline]
fn payload_size(bytes: &[u8], at: usize) -> Result<(usize, usize), ScanError> {
    let mut value: u64 = 0;
    for i in 0..9 {
        let Some(&b) = bytes.get(at + i) else {
            return damaged("a number runs past the end of its cell");
        };
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 || i == 8 {
            return Ok(((value & 0xffff_ffff) as usize, i + 1));
        }
    }
    unreachable!("the loop returns by its ninth byte")
}

/// An interior page of a table's B-tree, its children visited in order.
struct Interior {
    number: u32,
    page: Vec<u8>,
    head: usize,
    cells: usize,
    next: usize,
}

impl Interior {
    fn new(number: u32, bytes: &[u8]) -> Result<Self, ScanError> {
        let head = header_offset(number);
        let cells = cell_count(bytes, head, 12).map_err(|e| in_page(e, number))?;
        Ok(Interior {
            number,
            page: bytes.to_vec(),
            head,
            cells,
            next: 0,
        })
    }

    /// The child pages after the one [`Interior::next_child`] gave last, as
    /// far as they can be read (a damaged one ends them here; `next_child`
    /// reports it).
    fn following(&self) -> impl Iterator<Item = u32> + '_ {
        (self.next..=self.cells).map_while(|i| self.child(i).ok())
    }

    /// Child `i`: the page of cell `i`'s pointer, the right-most one at `i ==
    /// cells`.
    fn child(&self, i: usize) -> Result<u32, ScanError> {
        if i < self.cells {
            let cell = be16(&self.page, self.head + 12 + 2 * i)?;
            be32(&self.page, cell)
        } else {
            be32(&self.page, self.head + 8)
        }
    }

    /// The next child page (the right-most one last), or `None` when done.
    fn next_child(&mut self) -> Result<Option<u32>, ScanError> {
        let i = self.next;
        self.next += 1;
        if i <= self.cells {
            self.child(i).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// The cells of a page whose header (at `head`) is `header` bytes long, once
/// checked that their pointers lie on the page.
fn cell_count(page: &[u8], head: usize, header: usize) -> Result<usize, ScanError> {
    let cells = be16(page, head + 3)?;
    slice(page, head + header, 2 * cells)?;
    Ok(cells)
}

/// A payload too large for its page, put together from its overflow chain.
#[derive(Default)]
struct Overflow {
    bytes: Vec<u8>,
    page: Vec<u8>,
}

/// The rowid and record of cell `cell` of a leaf page (header at `head`): on
/// the page, or put together in `overflow` when it spans pages.
fn cell_payload<'p>(
    file: &PageFile,
    page: &'p [u8],
    head: usize,
    cell: usize,
    overflow: &'p mut Overflow,
) -> Result<(i64, &'p [u8]), ScanError> {
    let at = be16(page, head + 8 + 2 * cell)?;
    let (size, n) = payload_size(page, at)?;
    let (rowid, m) = varint(page, at + n)?;
    let start = at + n + m;
    let local = local_size(file, size);
    // The part on the page lies within its usable bytes (SQLite's check).
    if start + local > file.usable {
        return damaged(format!(
            "a cell's {local} bytes at offset {start} lie past the page's end"
        ));
    }
    let on_page = slice(page, start, local)?;
    if local == size {
        return Ok((rowid as i64, on_page));
    }
    let first = be32(page, start + local)?;
    overflow.bytes.clear();
    overflow.bytes.extend_from_slice(on_page);
    read_overflow(file, first, size, overflow)?;
    Ok((rowid as i64, &overflow.bytes))
}

/// Fields of a record a scan reads: up to the highest one it selects.
fn wanted_fields(scan: &DirectScan) -> usize {
    scan.fields
        .iter()
        .filter_map(|f| match f {
            Field::Column { index, .. } => Some(index + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The serial types and offsets of a record's first `wanted` fields (fewer
/// when it has fewer), checked to lie within it.
#[inline]
fn decode_header(
    payload: &[u8],
    wanted: usize,
    fields: &mut Vec<(u64, usize)>,
) -> Result<(), ScanError> {
    fields.clear();
    let (header, mut at) = varint(payload, 0)?;
    let header = usize::try_from(header).unwrap_or(usize::MAX);
    if header > payload.len() || header < at || header > MAX_RECORD_HEADER {
        let what = format!(
            "a record's header of {header} bytes does not fit its {} bytes",
            payload.len()
        );
        return damaged(what);
    }
    let mut offset = header;
    // Serial types below 128 (numbers, short strings) take one byte each, and
    // nearly always all of them do: one pass over those bytes, sizes by table.
    let types = &payload[at..header];
    // A header of no serial type at all (its size is its own length): SQLite
    // never writes one, and reports reading any column of it as damage (it
    // reads a type past the header's end).
    if types.is_empty() && wanted > 0 {
        return damaged("a record's header holds no field");
    }
    let head = &types[..types.len().min(wanted)];
    // Whether every serial type of the header was read (SQLite's rule below).
    let whole_header;
    if head.iter().all(|&b| b < 0x80 && b != 10 && b != 11) {
        fields.extend(head.iter().map(|&b| {
            let field = (u64::from(b), offset);
            offset += usize::from(ONE_BYTE_SIZES[usize::from(b)]);
            field
        }));
        whole_header = head.len() == types.len();
    } else {
        while at < header && fields.len() < wanted {
            let (ty, n) = varint(payload, at)?;
            at += n;
            fields.push((ty, offset));
            offset = offset.saturating_add(field_size(ty)?);
        }
        if at > header {
            return damaged("a record's serial type runs past its header");
        }
        whole_header = at == header;
    }
    // Offsets only grow: the last field's end within the record is enough.
    // When the whole header was read, its fields end where the record does
    // (SQLite reports anything else as damage).
    if offset > payload.len() || (whole_header && wanted > 0 && offset != payload.len()) {
        return damaged("a record's fields do not end where it does");
    }
    Ok(())
}

/// Bytes a field of each one-byte serial type takes (10 and 11, reserved, take
/// the slow path).
const ONE_BYTE_SIZES: [u8; 128] = {
    let mut sizes = [0u8; 128];
    let fixed = [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0];
    let mut ty = 0;
    while ty < 128 {
        sizes[ty] = if ty < 12 {
            fixed[ty]
        } else {
            ((ty - 12) / 2) as u8
        };
        ty += 1;
    }
    sizes
};

/// The current row of a scan: its rowid, and its record's fields as far as the
/// scan reads them.
pub(crate) struct Row<'a> {
    scan: &'a DirectScan,
    rowid: i64,
    payload: &'a [u8],
    /// (serial type, offset in `payload`) of each field read.
    fields: &'a [(u64, usize)],
}

impl Row<'_> {
    /// Whether the scan keeps the row (as SQLite's `=` on the column would).
    fn kept(&self) -> bool {
        match &self.scan.keep {
            Keep::All => true,
            Keep::ColumnIn { column, values } => match self.value(*column) {
                ValueRef::Integer(v) => values.contains(&v),
                ValueRef::Real(f) => values.iter().any(|&v| v as f64 == f),
                _ => false,
            },
        }
    }

    /// Result column `i`, as SQLite would give it.
    #[inline]
    pub fn value(&self, i: usize) -> ValueRef<'_> {
        match self.scan.fields.get(i) {
            Some(&Field::Column { index, real }) => match self.fields.get(index) {
                Some(&(ty, offset)) => match field_value(self.payload, ty, offset) {
                    ValueRef::Integer(v) if real => ValueRef::Real(v as f64),
                    value => value,
                },
                // A record written before the column was added.
                None => ValueRef::Null,
            },
            Some(Field::RowId) => ValueRef::Integer(self.rowid),
            Some(Field::Null) | None => ValueRef::Null,
        }
    }
}

/// Bytes of a leaf cell's payload of `size` bytes kept on its page.
fn local_size(file: &PageFile, size: usize) -> usize {
    if size <= file.max_local() {
        return size;
    }
    let min = file.min_local();
    let k = min + (size - min) % (file.usable - 4);
    if k <= file.max_local() {
        k
    } else {
        min
    }
}

/// Reads a payload's overflow chain, from page `first`, after the part on the
/// page already in `overflow.bytes`, until it holds `size` bytes.
fn read_overflow(
    file: &PageFile,
    first: u32,
    size: usize,
    overflow: &mut Overflow,
) -> Result<(), ScanError> {
    overflow.page.resize(file.page_size, 0);
    let mut page = first;
    let mut pages = 0u32;
    while overflow.bytes.len() < size {
        file.check_page(page)?;
        pages += 1;
        if pages > file.pages {
            return damaged("an overflow chain loops");
        }
        let offset = u64::from(page - 1) * file.page_size as u64;
        file.read_at(&mut overflow.page, offset)
            .map_err(ScanError::Io)?;
        let take = (size - overflow.bytes.len()).min(file.usable - 4);
        overflow
            .bytes
            .extend_from_slice(&overflow.page[4..4 + take]);
        page = be32(&overflow.page, 0)?;
    }
    Ok(())
}

/// Bytes a field of serial type `ty` takes.
#[inline]
fn field_size(ty: u64) -> Result<usize, ScanError> {
    const SIZES: [u8; 12] = [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0];
    match ty {
        // Reserved types, which SQLite reads as NULL of no bytes.
        0..=11 => Ok(usize::from(SIZES[ty as usize])),
        n => Ok(usize::try_from((n - 12) / 2).unwrap_or(usize::MAX)),
    }
}

/// The value of a field (its bytes checked by [`decode_header`]).
#[inline]
fn field_value(payload: &[u8], ty: u64, at: usize) -> ValueRef<'_> {
    let bytes = |n: usize| &payload[at..at + n];
    match ty {
        0 => ValueRef::Null,
        1 => ValueRef::Integer(i64::from(bytes(1)[0] as i8)),
        2 => ValueRef::Integer(i64::from(i16::from_be_bytes([
            payload[at],
            payload[at + 1],
        ]))),
        3 => {
            let b = bytes(3);
            ValueRef::Integer(i64::from(i32::from_be_bytes([b[0], b[1], b[2], 0]) >> 8))
        }
        4 => {
            let b = bytes(4);
            ValueRef::Integer(i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])))
        }
        5 => {
            let b = bytes(6);
            let v = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], 0, 0]) >> 16;
            ValueRef::Integer(v)
        }
        6 | 7 => {
            let b = bytes(8);
            let v = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            if ty == 6 {
                ValueRef::Integer(v)
            } else {
                // SQLite never stores a NaN (it binds one as NULL) and reads
                // one found in a file as NULL.
                let f = f64::from_bits(v as u64);
                if f.is_nan() {
                    ValueRef::Null
                } else {
                    ValueRef::Real(f)
                }
            }
        }
        8 => ValueRef::Integer(0),
        9 => ValueRef::Integer(1),
        // Reserved, NULL to SQLite.
        10 | 11 => ValueRef::Null,
        n if n % 2 == 0 => ValueRef::Blob(bytes(((n - 12) / 2) as usize)),
        n => ValueRef::Text(bytes(((n - 13) / 2) as usize)),
    }
}
