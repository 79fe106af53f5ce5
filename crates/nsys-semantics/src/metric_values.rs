//! How metric samples (GPU and SoC metrics) are written: names and units, the
//! scale of their values, and the values changed on the way.

use crate::context::ReportContext;

/// How one metric is written: its type, the factor its values are scaled by,
/// and whether it is a clock (whose negative values are 32-bit overflows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetricType {
    pub ty: u32,
    pub scale: i64,
    pub clock: bool,
}

/// `Name [unit]` → (`Name`, `unit`); no suffix → (`Name`, None).
pub(crate) fn split_unit(name: &str) -> (&str, Option<&str>) {
    let trimmed = name.trim();
    if let Some(body) = trimmed.strip_suffix(']') {
        if let Some(open) = body.rfind('[') {
            return (body[..open].trim_end(), Some(body[open + 1..].trim()));
        }
    }
    (trimmed, None)
}

/// A NIC counter's name with its unit, as its `.pcf` label shows it.
pub(crate) fn counter_name(name: &str, unit: &str) -> String {
    let unit = unit.trim();
    if unit.is_empty() {
        name.to_string()
    } else {
        format!("{name} [{unit}]")
    }
}

/// Lower case, single blanks.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Percentages and averages are scaled ×100; counts, clocks and requests not.
pub(crate) fn scale_of(unit: Option<&str>) -> i64 {
    match unit {
        Some(u) if u.contains('%') || u.to_lowercase().starts_with("avg") => 100,
        _ => 1,
    }
}

/// Whether a metric is a clock frequency (negative values are 32-bit overflows).
pub(crate) fn is_clock(name: &str) -> bool {
    normalize(name).contains("clock frequency")
}

/// Values changed on the way, for the counts.
#[derive(Default)]
pub(crate) struct Tally {
    clamped: u64,
    unwrapped_clocks: u64,
    rounded: u64,
    /// Samples taken before the session started, left out.
    pub before_session: u64,
}

impl Tally {
    /// An integer sample, scaled.
    pub fn int(&mut self, value: i64, t: MetricType) -> i64 {
        let value = if value >= 0 {
            value
        } else if t.clock && value >= i64::from(i32::MIN) {
            self.unwrapped_clocks += 1;
            value & 0xFFFF_FFFF
        } else {
            self.clamped += 1;
            0
        };
        value.saturating_mul(t.scale)
    }

    /// A JSON sample, scaled and rounded.
    pub fn float(&mut self, value: f64, t: MetricType) -> i64 {
        if value < 0.0 && !(t.clock && value.fract() == 0.0) {
            self.clamped += 1;
            return 0;
        }
        if value < 0.0 {
            return self.int(value as i64, t);
        }
        let scaled = value * t.scale as f64;
        if scaled.fract() != 0.0 {
            self.rounded += 1;
        }
        // `as` saturates: no overflow on absurd values.
        scaled.round() as i64
    }

    /// Counts the changed values under `<prefix> metric …`.
    pub fn record(&self, ctx: &mut ReportContext, prefix: &str) {
        let counts = [
            ("negative values written as 0", self.clamped),
            (
                "clock values read as unsigned 32 bits",
                self.unwrapped_clocks,
            ),
            ("values rounded", self.rounded),
        ];
        for (what, n) in counts {
            if n > 0 {
                ctx.count(&format!("{prefix} metric {what}"), n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_units() {
        assert_eq!(scale_of(Some("Throughput %")), 100);
        assert_eq!(scale_of(Some("Avg Warps per Cycle")), 100);
        assert_eq!(scale_of(Some("MHz")), 1);
        assert_eq!(scale_of(None), 1);
        assert_eq!(split_unit("A [B] "), ("A", Some("B")));
        assert_eq!(split_unit("A"), ("A", None));
        assert!(is_clock("GPC  Clock Frequency") && !is_clock("SM Active"));
    }

    #[test]
    fn negative_values_never_reach_the_trace() {
        let pct = MetricType {
            ty: 9406,
            scale: 100,
            clock: false,
        };
        let clock = MetricType {
            ty: 9400,
            scale: 1,
            clock: true,
        };
        let mut tally = Tally::default();
        assert_eq!(tally.int(-5, pct), 0);
        assert_eq!(tally.int(87, pct), 8700);
        // 2 400 000 000 Hz stored in a signed 32-bit integer.
        assert_eq!(
            tally.int(2_400_000_000u32 as i32 as i64, clock),
            2_400_000_000
        );
        assert_eq!(tally.float(12.345, pct), 1235);
        assert_eq!(tally.float(-0.5, pct), 0);
        assert_eq!(
            (tally.clamped, tally.unwrapped_clocks, tally.rounded),
            (2, 1, 1)
        );
    }
}
