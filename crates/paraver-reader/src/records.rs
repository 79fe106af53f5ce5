//! The `.prv`'s records as a stream, read one by one into storage the caller
//! keeps ([`RecordBuf`]), as rust-csv's `read_byte_record`: after the first
//! records, reading allocates nothing. The one loop over a trace's lines, shared
//! by the validator and the `report`.
//!
//! What is not a record is passed over: comments (`#`), empty lines, the
//! header's communicator lines. What the format frowns on but Paraver reads
//! (CRLF, trailing blanks, empty lines) is described as an [`Issue`] when asked
//! ([`PrvReader::collect_issues`]); a line that is not a record is an error with
//! its position, after which reading may go on.

use std::fmt;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use crate::prv::{parse_fields, trim_trailing_blanks, Lines, Record, RecordError};
use crate::Issue;

/// A record's fields, as [`PrvReader::read_record`] left them; reused by the
/// next read.
#[derive(Debug, Default, Clone)]
pub struct RecordBuf {
    fields: Vec<i128>,
    line: u64,
}

impl RecordBuf {
    pub fn new() -> Self {
        RecordBuf {
            fields: Vec::with_capacity(64),
            line: 0,
        }
    }

    /// The record's kind: 1 state, 2 event, 3 communication (cheaper than
    /// [`Self::record`] to pass over records of no interest).
    pub fn kind(&self) -> u8 {
        self.fields[0] as u8
    }

    /// The record's typed view.
    #[inline]
    pub fn record(&self) -> Record<'_> {
        Record::of_checked(&self.fields)
    }

    /// 1-based line of the record in its file.
    pub fn line(&self) -> u64 {
        self.line
    }
}

/// Why reading stopped at a line: the file could not be read there, or the line
/// is not a record.
#[derive(Debug)]
pub enum PrvErrorKind {
    Io(io::Error),
    Record(RecordError),
}

/// A reading error with its position: the file and the 1-based line.
#[derive(Debug)]
pub struct PrvError {
    pub path: PathBuf,
    pub line: u64,
    pub kind: PrvErrorKind,
}

impl fmt::Display for PrvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.path.display(), self.line)?;
        match &self.kind {
            PrvErrorKind::Io(e) => write!(f, "cannot read the trace: {e}"),
            PrvErrorKind::Record(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PrvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            PrvErrorKind::Io(e) => Some(e),
            PrvErrorKind::Record(_) => None,
        }
    }
}

/// Reads a `.prv` (plain or gzip: see [`crate::open_body`]) record by record.
pub struct PrvReader<R> {
    lines: Lines<R>,
    path: PathBuf,
    /// Communicator lines still expected after the header.
    communicator_lines: u64,
    issues: Option<Vec<Issue>>,
}

impl<R: BufRead> PrvReader<R> {
    /// A reader of `reader`, named `path` in errors.
    pub fn new(reader: R, path: &Path) -> Self {
        PrvReader {
            lines: Lines::new(reader),
            path: path.to_path_buf(),
            communicator_lines: 0,
            issues: None,
        }
    }

    /// Keeps the issues of the lines read, for [`Self::drain_issues`] (the
    /// validator's); without it they are not even described.
    pub fn collect_issues(mut self) -> Self {
        self.issues = Some(Vec::new());
        self
    }

    /// The issues found since the last call.
    pub fn drain_issues(&mut self) -> std::vec::Drain<'_, Issue> {
        self.issues.get_or_insert_with(Vec::new).drain(..)
    }

    /// Reads the first line (the header: [`Self::line`]); `Ok(false)` on an
    /// empty file.
    pub fn read_header(&mut self) -> Result<bool, PrvError> {
        let read = self.advance()?;
        if read && self.lines.crlf() {
            self.note(crlf_warning(1));
        }
        Ok(read)
    }

    /// The header announced `count` communicator lines: they follow it, and
    /// are passed over (a line that is not one ends them, an error issue).
    pub fn expect_communicator_lines(&mut self, count: u64) {
        self.communicator_lines = count;
    }

    /// Reads the next record into `record`; `Ok(false)` at the end of the file.
    /// After an error of kind [`PrvErrorKind::Record`] reading may go on with
    /// the next line.
    pub fn read_record(&mut self, record: &mut RecordBuf) -> Result<bool, PrvError> {
        loop {
            if !self.advance()? {
                return Ok(false);
            }
            let number = self.lines.number();
            if self.communicator_lines > 0 {
                self.communicator_lines -= 1;
                if matches!(self.lines.line().first(), Some(b'c' | b'C' | b'i' | b'I')) {
                    continue;
                }
                self.communicator_lines = 0;
                self.note(Issue::error(
                    Some(number),
                    "comm-lines",
                    "the header announces communicator lines, but this line is not one (Paraver refuses to load)".into(),
                ));
            }
            if self.lines.crlf() {
                self.note(crlf_warning(number));
            }
            let raw = self.lines.line();
            let line = trim_trailing_blanks(raw);
            let trailing = line.len() != raw.len();
            if line.is_empty() {
                self.note(Issue::warning(
                    Some(number),
                    "empty-line",
                    "empty line (Paraver skips it)".into(),
                ));
                continue;
            }
            if line[0] == b'#' {
                continue;
            }
            let parsed = parse_fields(line, &mut record.fields)
                .map_err(RecordError::Field)
                .and_then(|()| Record::check(&record.fields));
            if trailing {
                self.note(Issue::warning(
                    Some(number),
                    "trailing-space",
                    "trailing whitespace (Paraver ignores it; ptd comprovar rejects it)".into(),
                ));
            }
            record.line = number;
            return match parsed {
                Ok(()) => Ok(true),
                Err(e) => Err(self.error(number, PrvErrorKind::Record(e))),
            };
        }
    }

    /// The line read last, without its terminator (the text of an error's line).
    pub fn line(&self) -> &[u8] {
        self.lines.line()
    }

    /// The line read last without its trailing blanks.
    pub fn trimmed_line(&self) -> &[u8] {
        trim_trailing_blanks(self.lines.line())
    }

    /// 1-based number of the line read last.
    pub fn line_number(&self) -> u64 {
        self.lines.number()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn advance(&mut self) -> Result<bool, PrvError> {
        self.lines.advance().map_err(|e| {
            let at = self.lines.number() + 1;
            self.error(at, PrvErrorKind::Io(e))
        })
    }

    fn error(&self, line: u64, kind: PrvErrorKind) -> PrvError {
        PrvError {
            path: self.path.clone(),
            line,
            kind,
        }
    }

    fn note(&mut self, issue: Issue) {
        if let Some(issues) = &mut self.issues {
            issues.push(issue);
        }
    }
}

fn crlf_warning(line: u64) -> Issue {
    Issue::warning(
        Some(line),
        "crlf",
        "CRLF line ending (Paraver ignores the \\r)".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Severity;

    fn reader(text: &str) -> PrvReader<&[u8]> {
        PrvReader::new(text.as_bytes(), Path::new("t.prv")).collect_issues()
    }

    /// Every record and error of a body, one per line: `line: record` or
    /// `line: error`, and the issues as `line: [rule]`.
    fn read_all(text: &str) -> Vec<String> {
        let mut reader = reader(text);
        let mut out = Vec::new();
        assert!(reader.read_header().unwrap());
        let mut record = RecordBuf::new();
        loop {
            let read = reader.read_record(&mut record);
            out.extend(
                reader
                    .drain_issues()
                    .map(|i| format!("{}: [{}]", i.line.unwrap(), i.rule)),
            );
            match read {
                Ok(false) => break,
                Ok(true) => out.push(format!("{}: {:?}", record.line(), record.record())),
                Err(e) => out.push(e.to_string()),
            }
        }
        out
    }

    #[test]
    fn records_are_read_into_the_same_buffer() {
        let body = "#Paraver (x):100_ns:0:1:1(2:0)\n2:0:1:1:1:5:9:1:10:2:11:3\n1:0:1:1:2:0:50:1\n2:0:1:1:1:6:9:0\n";
        let mut reader = reader(body);
        reader.read_header().unwrap();
        let mut record = RecordBuf::new();
        assert!(reader.read_record(&mut record).unwrap());
        let storage = record.fields.as_ptr();
        let capacity = record.fields.capacity();
        let mut lines = vec![record.line()];
        while reader.read_record(&mut record).unwrap() {
            lines.push(record.line());
            // No allocation: the fields stay where the first record put them.
            assert_eq!(record.fields.as_ptr(), storage);
            assert_eq!(record.fields.capacity(), capacity);
        }
        assert_eq!(lines, [2, 3, 4]);
        let Record::Event { time, pairs, .. } = record.record() else {
            panic!("{:?}", record.record())
        };
        assert_eq!((time, pairs), (6, &[9, 0][..]));
    }

    #[test]
    fn errors_name_the_file_and_line_and_reading_goes_on() {
        let body = "#Paraver (x):100_ns:0:1:1(1:0)\n2:0:1:1:1:5:9\n\n# note\n4:0:1:1:1:5\n2:0:1:x:1:5:9:1\n1:0:1:1:1:0:10:1 \r\n";
        assert_eq!(
            read_all(body),
            [
                "t.prv:2: event record needs 6+2k fields, has 7",
                "3: [empty-line]",
                "t.prv:5: unknown record kind '4'",
                "t.prv:6: field 4 is not a decimal integer",
                "7: [crlf]",
                "7: [trailing-space]",
                "7: State { object: Object { cpu: 0, appl: 1, task: 1, thread: 1 }, begin: 0, end: 10, state: 1 }",
            ]
        );
    }

    #[test]
    fn communicator_lines_are_passed_over() {
        let mut reader =
            reader("#Paraver (x):100_ns:0:1:1(1:0),2\nc:1:1:1:1\nI:1:1\n2:0:1:1:1:5:9:1\n");
        reader.read_header().unwrap();
        reader.expect_communicator_lines(2);
        let mut record = RecordBuf::new();
        assert!(reader.read_record(&mut record).unwrap());
        assert_eq!(record.line(), 4);
        assert_eq!(reader.drain_issues().count(), 0);

        reader = self::reader("#Paraver (x):100_ns:0:1:1(1:0),2\n2:0:1:1:1:5:9:1\n");
        reader.read_header().unwrap();
        reader.expect_communicator_lines(2);
        assert!(reader.read_record(&mut record).unwrap());
        let issues: Vec<Issue> = reader.drain_issues().collect();
        assert_eq!(issues.len(), 1);
        assert_eq!(
            (issues[0].severity, issues[0].line, issues[0].rule),
            (Severity::Error, Some(2), "comm-lines")
        );
    }

    #[test]
    fn gzip_reads_as_plain_and_a_cut_stream_is_an_error_at_its_line() {
        use std::io::Write;
        let body = "#Paraver (x):100_ns:0:1:1(1:0)\n2:0:1:1:1:5:9:1\n2:0:1:1:1:7:9:0\n";
        let dir = std::env::temp_dir().join(format!("records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(body.as_bytes()).unwrap();
        let compressed = gz.finish().unwrap();
        let (plain, zipped, cut) = (
            dir.join("t.prv"),
            dir.join("t.prv.gz"),
            dir.join("c.prv.gz"),
        );
        std::fs::write(&plain, body).unwrap();
        std::fs::write(&zipped, &compressed).unwrap();
        std::fs::write(&cut, &compressed[..compressed.len() - 12]).unwrap();
        let times = |path: &Path, gzip: bool| -> Vec<Result<i128, String>> {
            let body = crate::open_body(path, gzip).unwrap();
            let mut reader = PrvReader::new(body, path);
            reader.read_header().unwrap();
            let mut record = RecordBuf::new();
            let mut out = Vec::new();
            loop {
                match reader.read_record(&mut record) {
                    Ok(false) => break,
                    Ok(true) => match record.record() {
                        Record::Event { time, .. } => out.push(Ok(time)),
                        other => panic!("{other:?}"),
                    },
                    Err(e) => {
                        assert!(matches!(e.kind, PrvErrorKind::Io(_)));
                        out.push(Err(format!("{}:{}", e.path.display(), e.line)));
                        break;
                    }
                }
            }
            out
        };
        assert_eq!(times(&plain, false), [Ok(5), Ok(7)]);
        assert_eq!(times(&zipped, true), [Ok(5), Ok(7)]);
        let read = times(&cut, true);
        assert_eq!(
            read.last().unwrap(),
            &Err(format!("{}:{}", cut.display(), read.len() + 1))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
