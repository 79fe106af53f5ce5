//! The `.pcf` (§3): labels of the states, event types and values of a trace.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead};

use crate::prv::Lines;
use crate::{parse_decimal, parse_signed, shorten, Issue};

/// What a `.pcf` declares.
#[derive(Debug, Default, Clone)]
pub struct Pcf {
    /// State → label.
    pub states: BTreeMap<u32, String>,
    /// State → colour.
    pub state_colors: BTreeMap<u32, [u8; 3]>,
    pub types: HashMap<u32, PcfType>,
}

/// An event type of the `.pcf`.
#[derive(Debug, Default, Clone)]
pub struct PcfType {
    pub label: String,
    /// Value → label, if a block gave the type a VALUES table.
    pub values: Option<HashMap<i64, String>>,
}

impl Pcf {
    /// The label of `value` of `ty`, if the `.pcf` has one.
    pub fn value_label(&self, ty: u32, value: i64) -> Option<&str> {
        self.types
            .get(&ty)?
            .values
            .as_ref()?
            .get(&value)
            .map(String::as_str)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Preamble,
    DefaultOptions,
    DefaultSemantic,
    States,
    StatesColor,
    EventTypes,
    EventValues,
    GradientColor,
    GradientNames,
}

/// Reads a `.pcf`; what does not follow the format is passed to `issue` and skipped.
pub fn read_pcf(reader: impl BufRead, issue: &mut dyn FnMut(Issue)) -> io::Result<Pcf> {
    let mut parser = Parser {
        issue,
        pcf: Pcf::default(),
        section: Section::Preamble,
        block_types: Vec::new(),
        block_has_lines: false,
        block_line: 0,
    };
    let mut lines = Lines::new(reader);
    while lines.advance()? {
        let text = String::from_utf8_lossy(lines.line());
        if matches!(text, std::borrow::Cow::Owned(_)) {
            parser.warn(
                lines.number(),
                "pcf-encoding",
                "line is not valid UTF-8".into(),
            );
        }
        parser.line(lines.number(), &text);
    }
    parser.close_block();
    parser.check_state_colors();
    Ok(parser.pcf)
}

struct Parser<'a> {
    issue: &'a mut dyn FnMut(Issue),
    pcf: Pcf,
    section: Section,
    /// Types of the current EVENT_TYPE block (they share one VALUES table).
    block_types: Vec<u32>,
    /// Whether the current EVENT_TYPE block had any type line (valid or not).
    block_has_lines: bool,
    block_line: u64,
}

impl Parser<'_> {
    fn error(&mut self, line: u64, rule: &'static str, message: String) {
        (self.issue)(Issue::error(Some(line), rule, message));
    }

    fn warn(&mut self, line: u64, rule: &'static str, message: String) {
        (self.issue)(Issue::warning(Some(line), rule, message));
    }

    fn line(&mut self, lineno: u64, raw: &str) {
        let text = raw.replace('\t', " ");
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            return;
        }
        if text == "VALUES" {
            self.values_keyword(lineno);
            return;
        }
        if let Some(section) = keyword(text) {
            self.close_block();
            self.section = section;
            self.block_line = lineno;
            return;
        }
        if let Some(rest) = text
            .strip_prefix("PRECISION ")
            .or((text == "PRECISION").then_some(""))
        {
            self.precision(lineno, rest);
            return;
        }
        if !text.is_ascii() {
            self.warn(
                lineno,
                "pcf-non-ascii",
                "label is not ASCII (Paraver shows it, but ptd comprovar rejects the pcf)".into(),
            );
        }
        match self.section {
            Section::Preamble => self.error(
                lineno,
                "pcf-syntax",
                format!("line before any section keyword: '{}'", shorten(text)),
            ),
            Section::DefaultOptions => self.option(lineno, text),
            Section::DefaultSemantic => {}
            Section::States => self.state(lineno, text),
            Section::StatesColor => self.color(lineno, text, true),
            Section::GradientColor => self.color(lineno, text, false),
            Section::GradientNames => self.gradient_name(lineno, text),
            Section::EventTypes => self.event_type(lineno, text),
            Section::EventValues => self.event_value(lineno, text),
        }
    }

    fn option(&mut self, lineno: u64, text: &str) {
        if text.split_whitespace().count() < 2 {
            self.error(
                lineno,
                "pcf-syntax",
                format!(
                    "expected 'KEY value' in DEFAULT_OPTIONS: '{}'",
                    shorten(text)
                ),
            );
        }
    }

    fn state(&mut self, lineno: u64, text: &str) {
        match split_id_label(text) {
            Some((id, label)) if (0..=i64::from(i32::MAX)).contains(&id) => {
                if self.pcf.states.insert(id as u32, label.into()).is_some() {
                    self.warn(lineno, "pcf-dup", format!("state {id} listed twice"));
                }
            }
            Some((id, _)) => self.error(
                lineno,
                "pcf-state",
                format!("state {id} outside 0..2^31-1, Paraver drops this label"),
            ),
            None => self.error(
                lineno,
                "pcf-state",
                format!("expected '<state> <label>': '{}'", shorten(text)),
            ),
        }
    }

    fn color(&mut self, lineno: u64, text: &str, is_state: bool) {
        let parsed = text
            .split_once(' ')
            .and_then(|(id, rgb)| Some((parse_signed(id)?, parse_rgb(rgb.trim())?)));
        match parsed {
            Some((id, rgb)) if is_state => {
                if let Ok(id) = u32::try_from(id) {
                    self.pcf.state_colors.insert(id, rgb);
                }
            }
            Some(_) => {}
            None => self.error(
                lineno,
                "pcf-color",
                format!(
                    "expected '<id> {{R,G,B}}' with components 0-255: '{}'",
                    shorten(text)
                ),
            ),
        }
    }

    fn gradient_name(&mut self, lineno: u64, text: &str) {
        if split_id_label(text).is_none() {
            self.error(
                lineno,
                "pcf-syntax",
                format!(
                    "expected '<n> <label>' in GRADIENT_NAMES: '{}'",
                    shorten(text)
                ),
            );
        }
    }

    /// `<gradient> <type> <label...>`
    fn event_type(&mut self, lineno: u64, text: &str) {
        self.block_has_lines = true;
        let parsed = text.split_once(' ').and_then(|(gradient, rest)| {
            parse_signed(gradient)?;
            split_id_label(rest.trim_start())
        });
        match parsed {
            Some((ty, label)) if (0..=i64::from(i32::MAX)).contains(&ty) => {
                let ty = ty as u32;
                if let Entry::Vacant(slot) = self.pcf.types.entry(ty) {
                    slot.insert(PcfType {
                        label: label.into(),
                        values: None,
                    });
                } else {
                    self.warn(
                        lineno,
                        "pcf-dup",
                        format!("event type {ty} declared again (Paraver merges the entries)"),
                    );
                }
                self.block_types.push(ty);
            }
            Some((ty, _)) => self.error(
                lineno,
                "pcf-type",
                format!("type {ty} outside 0..2^31-1, Paraver drops this line"),
            ),
            None => self.error(
                lineno,
                "pcf-type",
                format!("expected '<gradient> <type> <label>': '{}'", shorten(text)),
            ),
        }
    }

    /// `<value> <label...>`, shared by every type of the current block.
    fn event_value(&mut self, lineno: u64, text: &str) {
        match split_id_label(text) {
            Some((value, label)) if i32::try_from(value).is_ok() => {
                for ty in &self.block_types {
                    if let Some(values) = self.pcf.types.get_mut(ty).and_then(|t| t.values.as_mut())
                    {
                        values.insert(value, label.into());
                    }
                }
            }
            Some((value, _)) => self.error(
                lineno,
                "pcf-value",
                format!("value {value} outside int32, Paraver drops this label"),
            ),
            None => self.error(
                lineno,
                "pcf-value",
                format!("expected '<value> <label>': '{}'", shorten(text)),
            ),
        }
    }

    fn precision(&mut self, lineno: u64, rest: &str) {
        let in_event = matches!(self.section, Section::EventTypes | Section::EventValues);
        if !in_event || parse_decimal(rest.trim()).is_none() {
            self.error(
                lineno,
                "pcf-syntax",
                "expected 'PRECISION <n>' inside an EVENT_TYPE block".into(),
            );
        }
    }

    /// Called at every section keyword (not VALUES): ends the current EVENT_TYPE block.
    fn close_block(&mut self) {
        if self.section == Section::EventTypes && !self.block_has_lines {
            let line = self.block_line;
            self.error(
                line,
                "pcf-type",
                "EVENT_TYPE block without any type line".into(),
            );
        }
        self.block_types.clear();
        self.block_has_lines = false;
    }

    /// VALUES is handled apart because it must keep the block's types.
    fn values_keyword(&mut self, lineno: u64) {
        if self.section != Section::EventTypes || self.block_types.is_empty() {
            self.error(
                lineno,
                "pcf-syntax",
                "VALUES outside an EVENT_TYPE block with types".into(),
            );
            self.section = Section::EventValues;
            return;
        }
        for ty in &self.block_types {
            self.pcf
                .types
                .entry(*ty)
                .or_default()
                .values
                .get_or_insert_with(HashMap::new);
        }
        self.section = Section::EventValues;
    }

    fn check_state_colors(&mut self) {
        let missing: Vec<u32> = self
            .pcf
            .states
            .keys()
            .filter(|s| !self.pcf.state_colors.contains_key(s))
            .copied()
            .collect();
        if !missing.is_empty() {
            (self.issue)(Issue::warning(
                None,
                "pcf-state-color",
                format!(
                    "states {missing:?} have no STATES_COLOR entry (ptd comprovar rejects this)"
                ),
            ));
        }
    }
}

/// Section keywords alone on a line (§3); VALUES switches an EVENT_TYPE block to values.
fn keyword(text: &str) -> Option<Section> {
    Some(match text {
        "DEFAULT_OPTIONS" => Section::DefaultOptions,
        "DEFAULT_SEMANTIC" => Section::DefaultSemantic,
        "STATES" => Section::States,
        "STATES_COLOR" => Section::StatesColor,
        "EVENT_TYPE" => Section::EventTypes,
        "GRADIENT_COLOR" => Section::GradientColor,
        "GRADIENT_NAMES" => Section::GradientNames,
        _ => return None,
    })
}

/// `<integer> <label>` with a non-empty label.
fn split_id_label(text: &str) -> Option<(i64, &str)> {
    let (id, label) = text.split_once(' ')?;
    let label = label.trim();
    (!label.is_empty()).then_some((parse_signed(id)?, label))
}

fn parse_rgb(text: &str) -> Option<[u8; 3]> {
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let parts: Vec<u8> = inner
        .split(',')
        .map(|c| c.trim().parse().ok())
        .collect::<Option<_>>()?;
    parts.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_states_types_and_values_are_read() {
        let text = "STATES\n0    Idle\n1    Running\n\nSTATES_COLOR\n0 {1,2,3}\n1 {4,5,6}\n\n\
                    EVENT_TYPE\n0    63000006   CUDA kernel\n0    63000007   NCCL kernel\nVALUES\n\
                    0      End\n7      my kernel\n\nEVENT_TYPE\n0 9101 Kernel grid size X\n";
        let mut issues = Vec::new();
        let pcf = read_pcf(text.as_bytes(), &mut |i| issues.push(i)).unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(pcf.states[&1], "Running");
        assert_eq!(pcf.state_colors[&1], [4, 5, 6]);
        assert_eq!(pcf.types[&63_000_006].label, "CUDA kernel");
        assert_eq!(pcf.value_label(63_000_007, 7), Some("my kernel"));
        assert_eq!(pcf.value_label(63_000_006, 0), Some("End"));
        assert!(pcf.types[&9101].values.is_none());
        assert_eq!(pcf.value_label(9101, 1), None);
    }
}
