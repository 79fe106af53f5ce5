//! Reads Paraver traces: `NAME.prv` (or `NAME.prv.gz`) streamed line by line, and its
//! `NAME.pcf` and `NAME.row`. Written from the format specification
//! (`paraver-format.md`), not from our writer, so that the validator built on it
//! ([`validate`]) can catch the writer's mistakes. Knows nothing of Nsight.
//!
//! The parsers are lenient: what they cannot read they pass over and describe as an
//! [`Issue`], which the validator reports and other readers (the `report` command)
//! may ignore.

#![forbid(unsafe_code)]

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_checks;
pub mod pcf;
pub mod prv;
pub mod records;
pub mod row;
pub mod validate;

use std::fmt;
use std::path::{Path, PathBuf};

pub use pcf::{Pcf, PcfType};
pub use prv::{open_body, parse_header, parse_record, Header, Lines, Object, Record};
pub use records::{PrvError, PrvErrorKind, PrvReader, RecordBuf};
pub use row::{Row, RowLevel};

/// How bad a problem is: errors make a trace invalid, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
        })
    }
}

/// Something a parser could not read as the format says, with a short stable rule
/// name (e.g. `pcf-value`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub severity: Severity,
    /// 1-based line number, when the problem belongs to one line.
    pub line: Option<u64>,
    pub rule: &'static str,
    pub message: String,
}

impl Issue {
    pub fn error(line: Option<u64>, rule: &'static str, message: String) -> Self {
        Issue {
            severity: Severity::Error,
            line,
            rule,
            message,
        }
    }

    pub fn warning(line: Option<u64>, rule: &'static str, message: String) -> Self {
        Issue {
            severity: Severity::Warning,
            line,
            rule,
            message,
        }
    }
}

/// A trace's file set (§1): `NAME.prv` or `NAME.prv.gz` with `NAME.pcf` and `NAME.row`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFiles {
    pub prv: PathBuf,
    pub pcf: PathBuf,
    pub row: PathBuf,
    pub gzip: bool,
    /// Whether the name ends in `.prv` or `.prv.gz` after a non-empty `NAME`
    /// (Paraver rejects other names); otherwise the companions are guessed from the
    /// name without its extension.
    pub name_ok: bool,
}

impl TraceFiles {
    pub fn of(prv: &Path) -> Self {
        let name = prv.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let (stem, gzip) = if let Some(stem) = name.strip_suffix(".prv.gz") {
            (stem.to_string(), true)
        } else if let Some(stem) = name.strip_suffix(".prv") {
            (stem.to_string(), false)
        } else {
            let stem = Path::new(name).with_extension("");
            (stem.to_string_lossy().into_owned(), name.ends_with(".gz"))
        };
        let name_ok = !stem.is_empty() && (name.ends_with(".prv") || name.ends_with(".prv.gz"));
        let sibling = |ext: &str| prv.with_file_name(format!("{stem}.{ext}"));
        TraceFiles {
            prv: prv.to_path_buf(),
            pcf: sibling("pcf"),
            row: sibling("row"),
            gzip,
            name_ok,
        }
    }

    /// `NAME` with its directory: the trace's path without `.prv` or `.prv.gz`.
    pub fn base(&self) -> PathBuf {
        self.pcf.with_extension("")
    }
}

/// A text shortened to 80 characters, for messages that quote a line.
pub(crate) fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Removes the line terminator; returns whether the line ended in CRLF.
pub(crate) fn strip_eol(line: &mut Vec<u8>) -> bool {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
        return true;
    }
    false
}

/// Strict unsigned decimal: digits only, no sign, no spaces; `None` on overflow too.
pub(crate) fn parse_decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// An optionally negative strict decimal.
pub(crate) fn parse_signed(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    parse_decimal(digits)?;
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sets_pair_the_companions() {
        let files = TraceFiles::of(Path::new("/x/run.prv.gz"));
        assert!(files.gzip && files.name_ok);
        assert_eq!(files.pcf, Path::new("/x/run.pcf"));
        assert_eq!(files.row, Path::new("/x/run.row"));
        assert_eq!(files.base(), Path::new("/x/run"));
        let plain = TraceFiles::of(Path::new("a.b.prv"));
        assert!(!plain.gzip && plain.name_ok);
        assert_eq!(plain.pcf, Path::new("a.b.pcf"));
        let odd = TraceFiles::of(Path::new("/x/run.txt"));
        assert!(!odd.name_ok);
        assert_eq!(odd.pcf, Path::new("/x/run.pcf"));
        assert!(!TraceFiles::of(Path::new(".prv")).name_ok);
    }
}
