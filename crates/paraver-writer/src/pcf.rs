//! The `.pcf` file: labels for the states, event types and values a trace uses.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use crate::names::GlobalNames;

/// How the values of an event type are labelled.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ValueLabels {
    /// Plain numbers (ids, counts): no VALUES table.
    Numeric,
    /// Sizes in bytes: no VALUES table.
    Bytes,
    /// Names interned by producers (`Value::Name`), plus `0 End`.
    Names,
    /// A fixed table; only the values that occur are written.
    Fixed(Vec<(i64, String)>),
}

impl ValueLabels {
    /// A fixed table from `(value, label)` pairs.
    pub fn fixed(table: &[(i64, &str)]) -> Self {
        ValueLabels::Fixed(table.iter().map(|&(v, l)| (v, l.to_string())).collect())
    }
}

/// How the events of a type lie in time, which says how they cross a cut's edges
/// ([`crate::Cut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Timing {
    /// A begin with a value and an end with 0, written as one interval
    /// ([`crate::RunBuilder::interval`]); intervals nest. One open at a cut's start
    /// begins again there, one open at its end ends there.
    Interval,
    /// An instant (a mark, a fault): never repeated at a cut's start.
    Point,
    /// A value that holds until the next one (a sampled counter): repeated at a
    /// cut's start with its last value before it.
    Level,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct EventTypeInfo {
    pub ty: u32,
    pub label: String,
    pub values: ValueLabels,
    pub timing: Timing,
    /// Views show value × 10^-precision.
    pub precision: Option<u32>,
    /// Legacy colour group; Extrae writes 7 for counters.
    pub gradient: u32,
}

#[derive(Clone, Debug)]
pub struct StateInfo {
    pub id: u32,
    pub label: String,
    pub color: (u8, u8, u8),
}

/// Everything the producers may emit; the writer keeps what was used.
#[derive(Clone, Debug, Default)]
pub struct PcfCatalog {
    pub states: Vec<StateInfo>,
    pub types: Vec<EventTypeInfo>,
}

/// What the merge saw: states, event types, and the values of fixed-table types.
#[derive(Default, Debug)]
pub struct UsedLabels {
    pub states: BTreeSet<u32>,
    pub types: BTreeSet<u32>,
    pub fixed_values: BTreeMap<u32, BTreeSet<i64>>,
}

const HEADER: &str = "DEFAULT_OPTIONS

LEVEL               THREAD
UNITS               NANOSEC
LOOK_BACK           100
SPEED               1
FLAG_ICONS          ENABLED
NUM_OF_STATE_COLORS 1000
YMAX_SCALE          37


DEFAULT_SEMANTIC

THREAD_FUNC          State As Is
";

impl EventTypeInfo {
    pub fn new(ty: u32, label: &str, values: ValueLabels, timing: Timing) -> Self {
        EventTypeInfo {
            ty,
            label: label.into(),
            values,
            timing,
            precision: None,
            gradient: 0,
        }
    }
}

impl PcfCatalog {
    pub fn type_info(&self, ty: u32) -> Option<&EventTypeInfo> {
        self.types.iter().find(|t| t.ty == ty)
    }

    /// The fixed value table of a type, if it has one.
    pub fn fixed_values_of(&self, ty: u32) -> Option<&[(i64, String)]> {
        match &self.type_info(ty)?.values {
            ValueLabels::Fixed(table) => Some(table.as_slice()),
            _ => None,
        }
    }

    /// Types whose used values must be recorded during the merge.
    pub fn fixed_types(&self) -> impl Iterator<Item = u32> + '_ {
        self.types
            .iter()
            .filter(|t| matches!(t.values, ValueLabels::Fixed(_)))
            .map(|t| t.ty)
    }

    pub fn write(
        &self,
        out: &mut impl Write,
        used: &UsedLabels,
        names: &GlobalNames,
    ) -> io::Result<()> {
        out.write_all(HEADER.as_bytes())?;
        self.write_states(out, used)?;
        for &ty in &used.types {
            self.write_type(out, ty, used, names)?;
        }
        Ok(())
    }

    fn write_states(&self, out: &mut impl Write, used: &UsedLabels) -> io::Result<()> {
        // Idle is what Paraver fills gaps with, so it is always labelled.
        let shown: Vec<&StateInfo> = self
            .states
            .iter()
            .filter(|s| s.id == 0 || used.states.contains(&s.id))
            .collect();
        writeln!(out, "\n\nSTATES")?;
        for s in &shown {
            writeln!(out, "{:<4} {}", s.id, one_line(&s.label))?;
        }
        for id in used
            .states
            .iter()
            .filter(|id| shown.iter().all(|s| s.id != **id))
        {
            writeln!(out, "{id:<4} State {id}")?;
        }
        writeln!(out, "\n\nSTATES_COLOR")?;
        for s in &shown {
            let (r, g, b) = s.color;
            writeln!(out, "{:<4} {{{r},{g},{b}}}", s.id)?;
        }
        Ok(())
    }

    fn write_type(
        &self,
        out: &mut impl Write,
        ty: u32,
        used: &UsedLabels,
        names: &GlobalNames,
    ) -> io::Result<()> {
        let fallback = EventTypeInfo::new(
            ty,
            &format!("Event type {ty}"),
            ValueLabels::Numeric,
            Timing::Level,
        );
        let info = self.type_info(ty).unwrap_or(&fallback);
        writeln!(
            out,
            "\n\nEVENT_TYPE\n{:<4} {:<10} {}",
            info.gradient,
            ty,
            one_line(&info.label)
        )?;
        if let Some(p) = info.precision {
            writeln!(out, "PRECISION {p}")?;
        }
        match &info.values {
            ValueLabels::Numeric | ValueLabels::Bytes => {}
            ValueLabels::Names => {
                writeln!(out, "VALUES\n0      End")?;
                for (value, name) in names.by_type.get(&ty).into_iter().flatten() {
                    writeln!(out, "{value:<6} {}", one_line(name))?;
                }
            }
            ValueLabels::Fixed(table) => {
                // Raw values seen, names given values, and the table's value 0.
                let mut rows: BTreeMap<i64, String> = BTreeMap::new();
                let label_of = |v: i64| table.iter().find(|(t, _)| *t == v).map(|(_, l)| l.clone());
                for &v in used.fixed_values.get(&ty).into_iter().flatten() {
                    rows.insert(v, label_of(v).unwrap_or_else(|| format!("Unknown ({v})")));
                }
                rows.extend(
                    names
                        .by_type
                        .get(&ty)
                        .into_iter()
                        .flatten()
                        .map(|(v, n)| (*v, n.clone())),
                );
                if let Some(zero) = label_of(0) {
                    rows.insert(0, zero);
                }
                writeln!(out, "VALUES")?;
                for (value, label) in rows {
                    writeln!(out, "{value:<6} {}", one_line(&label))?;
                }
            }
        }
        Ok(())
    }
}

/// A label as the `.pcf` can hold it: one line, no tabs, ASCII only (BSC's pertalde
/// rejects other bytes), with other characters written as `\u{XXXX}`, and never
/// empty (a value line without a label is not a label).
fn one_line(label: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii() && !c.is_ascii_control();
    if label.trim().is_empty() {
        return "(empty name)".into();
    }
    if label.chars().all(plain) {
        return label.into();
    }
    let mut out = String::with_capacity(label.len() + 8);
    for c in label.chars() {
        match c {
            _ if plain(c) => out.push(c),
            '\n' | '\r' | '\t' => out.push(' '),
            _ => out.push_str(&format!("\\u{{{:04X}}}", c as u32)),
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn labels_become_one_ascii_line() {
        assert_eq!(one_line("gemm"), "gemm");
        assert_eq!(one_line(" "), "(empty name)");
        assert_eq!(one_line("a\tb\nc"), "a b c");
        assert_eq!(one_line("déjà"), "d\\u{00E9}j\\u{00E0}");
    }
}
