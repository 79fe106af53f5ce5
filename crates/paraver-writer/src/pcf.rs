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

/// Deeper nesting than this on one thread and type is not nesting but a producer
/// that never closes: a cut carries only the innermost levels across its start.
pub(crate) const MAX_CARRIED_DEPTH: usize = 64;

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
    /// The type whose value table this one shares (`None`: its own). Types that
    /// share one are written in one `.pcf` block with one VALUES table, as Extrae
    /// writes the levels of a sampled call stack; their name values are those of
    /// the table's type, which producers intern names under.
    pub shares_values_with: Option<u32>,
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
#[derive(Default, Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UsedLabels {
    pub states: BTreeSet<u32>,
    pub types: BTreeSet<u32>,
    pub fixed_values: BTreeMap<u32, BTreeSet<i64>>,
}

impl UsedLabels {
    /// Adds what `other` saw (another slice of the same trace).
    pub fn extend(&mut self, other: UsedLabels) {
        self.states.extend(other.states);
        self.types.extend(other.types);
        for (ty, values) in other.fixed_values {
            self.fixed_values.entry(ty).or_default().extend(values);
        }
    }
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
            shares_values_with: None,
        }
    }

    /// This type, sharing the value table (and `.pcf` block) of `table`.
    pub fn sharing_values_with(self, table: u32) -> Self {
        EventTypeInfo {
            shares_values_with: (table != self.ty).then_some(table),
            ..self
        }
    }
}

impl PcfCatalog {
    pub fn type_info(&self, ty: u32) -> Option<&EventTypeInfo> {
        self.types.iter().find(|t| t.ty == ty)
    }

    /// The type whose value table `ty` uses: itself unless it shares another's.
    pub fn value_table_of(&self, ty: u32) -> u32 {
        self.type_info(ty)
            .and_then(|t| t.shares_values_with)
            .unwrap_or(ty)
    }

    /// Types that share another type's value table, with that type.
    pub fn shared_value_tables(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.types
            .iter()
            .filter_map(|t| Some((t.ty, t.shares_values_with?)))
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
        let mut written = BTreeSet::new();
        for &ty in &used.types {
            let table = self.value_table_of(ty);
            if written.insert(table) {
                let group: Vec<u32> = used
                    .types
                    .iter()
                    .copied()
                    .filter(|&t| self.value_table_of(t) == table)
                    .collect();
                self.write_block(out, table, &group, used, names)?;
            }
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

    /// One EVENT_TYPE block: the used types of one value table (usually just one
    /// type), then that table's VALUES.
    fn write_block(
        &self,
        out: &mut impl Write,
        table: u32,
        group: &[u32],
        used: &UsedLabels,
        names: &GlobalNames,
    ) -> io::Result<()> {
        let fallback = |ty: u32| {
            EventTypeInfo::new(
                ty,
                &format!("Event type {ty}"),
                ValueLabels::Numeric,
                Timing::Level,
            )
        };
        let info_of = |ty: u32| self.type_info(ty).cloned().unwrap_or_else(|| fallback(ty));
        writeln!(out, "\n\nEVENT_TYPE")?;
        for &ty in group {
            let info = info_of(ty);
            writeln!(
                out,
                "{:<4} {:<10} {}",
                info.gradient,
                ty,
                one_line(&info.label)
            )?;
        }
        let info = info_of(table);
        if let Some(p) = info.precision {
            writeln!(out, "PRECISION {p}")?;
        }
        match &info.values {
            ValueLabels::Numeric | ValueLabels::Bytes => {}
            ValueLabels::Names => {
                writeln!(out, "VALUES\n0      End")?;
                for (value, name) in names.by_type.get(&table).into_iter().flatten() {
                    writeln!(out, "{value:<6} {}", one_line(name))?;
                }
            }
            ValueLabels::Fixed(fixed) => {
                // Raw values seen (of any type of the group), names given values,
                // and the table's value 0.
                let mut rows: BTreeMap<i64, String> = BTreeMap::new();
                let label_of = |v: i64| fixed.iter().find(|(t, _)| *t == v).map(|(_, l)| l.clone());
                let seen = group
                    .iter()
                    .flat_map(|ty| used.fixed_values.get(ty).into_iter().flatten());
                for &v in seen {
                    rows.insert(v, label_of(v).unwrap_or_else(|| format!("Unknown ({v})")));
                }
                rows.extend(
                    names
                        .by_type
                        .get(&table)
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
    use super::*;

    /// Types sharing a value table are written as Extrae writes sampled call-stack
    /// levels: one block listing the used types, then one VALUES table.
    #[test]
    fn types_sharing_a_table_share_one_block() {
        let table = ValueLabels::fixed(&[(0, "End"), (1, "Unresolved"), (2, "_NOT_Found")]);
        let level = |ty: u32, label: &str| {
            EventTypeInfo::new(ty, label, table.clone(), Timing::Point).sharing_values_with(100)
        };
        let catalog = PcfCatalog {
            states: vec![],
            types: vec![
                level(100, "Sampled functions"),
                level(101, "Sampled functions (depth 1)"),
                level(102, "Sampled functions (depth 2)"),
                EventTypeInfo::new(200, "Other", ValueLabels::Numeric, Timing::Point),
            ],
        };
        assert_eq!(catalog.value_table_of(102), 100);
        assert_eq!(catalog.value_table_of(100), 100);
        let used = UsedLabels {
            types: BTreeSet::from([100, 102, 200]),
            fixed_values: BTreeMap::from([(102, BTreeSet::from([1]))]),
            ..UsedLabels::default()
        };
        let names = GlobalNames {
            by_type: BTreeMap::from([(100, BTreeMap::from([(7, "main".to_string())]))]),
        };
        let mut out = Vec::new();
        catalog.write(&mut out, &used, &names).unwrap();
        let text = String::from_utf8(out).unwrap();
        let body = &text[text.find("EVENT_TYPE").unwrap()..];
        assert_eq!(
            body,
            "EVENT_TYPE\n0    100        Sampled functions\n0    102        Sampled functions (depth 2)\n\
             VALUES\n0      End\n1      Unresolved\n7      main\n\n\n\
             EVENT_TYPE\n0    200        Other\n"
        );
    }

    #[test]
    fn labels_become_one_ascii_line() {
        assert_eq!(one_line("gemm"), "gemm");
        assert_eq!(one_line(" "), "(empty name)");
        assert_eq!(one_line("a\tb\nc"), "a b c");
        assert_eq!(one_line("déjà"), "d\\u{00E9}j\\u{00E0}");
    }
}
