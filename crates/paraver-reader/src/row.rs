//! The `.row` (§4): `LEVEL <LEVEL> SIZE <n>` headings, each followed by n labels.

use std::io::{self, BufRead};

use crate::prv::Lines;
use crate::{parse_decimal, shorten, Issue};

/// The levels Paraver knows.
pub const LEVELS: [&str; 7] = [
    "CPU", "NODE", "SYSTEM", "WORKLOAD", "APPL", "TASK", "THREAD",
];

/// What a `.row` names.
#[derive(Debug, Default, Clone)]
pub struct Row {
    pub levels: Vec<RowLevel>,
}

/// One `LEVEL` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLevel {
    pub name: String,
    /// The SIZE its heading declares.
    pub size: u64,
    /// Line of the heading.
    pub line: u64,
    /// The labels that follow it, as written (at most `size`).
    pub labels: Vec<String>,
}

impl Row {
    /// The labels of a level (`TASK`, `THREAD`, ...); empty when it has no block.
    pub fn labels(&self, level: &str) -> &[String] {
        self.level(level).map_or(&[], |l| l.labels.as_slice())
    }

    pub fn level(&self, level: &str) -> Option<&RowLevel> {
        self.levels.iter().find(|l| l.name == level)
    }
}

/// Reads a `.row`; a block with fewer labels than its SIZE (a blank line or a new
/// heading comes first), an unknown or repeated level, and lines outside any block
/// are passed to `issue`.
pub fn read_row(reader: impl BufRead, issue: &mut dyn FnMut(Issue)) -> io::Result<Row> {
    let mut row = Row::default();
    let mut open: Option<RowLevel> = None;
    let mut lines = Lines::new(reader);
    while lines.advance()? {
        let lineno = lines.number();
        let raw = String::from_utf8_lossy(lines.line());
        let text = raw.trim();
        let heading = parse_heading(text);
        if let Some(mut block) = open.take() {
            if heading.is_none() && !text.is_empty() {
                block.labels.push(raw.into_owned());
                if (block.labels.len() as u64) < block.size {
                    open = Some(block);
                } else {
                    row.levels.push(block);
                }
                continue;
            }
            // A blank line or a new heading inside a block means SIZE is too large.
            issue(short_block(&block));
            row.levels.push(block);
        }
        match heading {
            Some((level, size)) => {
                if !LEVELS.contains(&level) {
                    issue(Issue::warning(
                        Some(lineno),
                        "row-level",
                        format!("unknown level '{}' (Paraver skips it)", shorten(level)),
                    ));
                }
                if row.level(level).is_some() {
                    issue(Issue::error(
                        Some(lineno),
                        "row-dup",
                        format!("LEVEL {level} appears twice"),
                    ));
                }
                let block = RowLevel {
                    name: level.to_string(),
                    size,
                    line: lineno,
                    labels: Vec::new(),
                };
                if size == 0 {
                    row.levels.push(block);
                } else {
                    open = Some(block);
                }
            }
            None if text.is_empty() || text.starts_with('#') => {}
            None => issue(Issue::error(
                Some(lineno),
                "row-syntax",
                format!(
                    "line outside any LEVEL block (is a SIZE too small?): '{}'",
                    shorten(text)
                ),
            )),
        }
    }
    if let Some(block) = open {
        issue(short_block(&block));
        row.levels.push(block);
    }
    Ok(row)
}

fn parse_heading(text: &str) -> Option<(&str, u64)> {
    let mut words = text.split_whitespace();
    let (Some("LEVEL"), Some(level), Some("SIZE"), Some(size), None) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return None;
    };
    Some((level, parse_decimal(size)?))
}

fn short_block(b: &RowLevel) -> Issue {
    Issue::error(
        Some(b.line),
        "row-labels",
        format!(
            "LEVEL {} SIZE {} but only {} label lines follow",
            b.name,
            b.size,
            b.labels.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_labels_are_read() {
        let text = "LEVEL CPU SIZE 1\nn.cpu1\n\nLEVEL TASK SIZE 2\nrank 0 (n:1)\nrank 1 (n:2)\n\n\
                    LEVEL THREAD SIZE 1\nmain (1)\n";
        let mut issues = Vec::new();
        let row = read_row(text.as_bytes(), &mut |i| issues.push(i)).unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(row.labels("TASK"), ["rank 0 (n:1)", "rank 1 (n:2)"]);
        assert_eq!(row.labels("THREAD"), ["main (1)"]);
        assert!(row.labels("NODE").is_empty());
        let short = read_row("LEVEL TASK SIZE 3\na\n\n".as_bytes(), &mut |i| {
            issues.push(i)
        });
        assert_eq!(short.unwrap().labels("TASK"), ["a"]);
        assert_eq!(issues[0].rule, "row-labels");
    }
}
