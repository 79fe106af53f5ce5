//! Words of the messages the conversion prints: counts, sizes, grouped warnings.

/// One warning for `lines` that say the same thing of different files: the line
/// itself when there is one; else `summary` (given the count) with the first few,
/// every line at `-v`.
pub fn warn_grouped(lines: &[String], summary: impl FnOnce(usize) -> String) {
    const SHOWN: usize = 3;
    match lines {
        [] => {}
        [line] => tracing::warn!("{line}"),
        _ => {
            let more = match lines.len().saturating_sub(SHOWN) {
                0 => String::new(),
                n => format!("; and {n} more (-v lists them)"),
            };
            let first: Vec<&str> = lines.iter().take(SHOWN).map(String::as_str).collect();
            tracing::warn!("{}: {}{more}", summary(lines.len()), first.join("; "));
            for line in lines {
                tracing::debug!("{line}");
            }
        }
    }
}

/// `1 report`, `3 reports`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// 3 significant digits: `25.9 kB`, `637 kB`, `1.27 MB`.
pub fn human_size(bytes: u64) -> String {
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in ["kB", "MB", "GB", "TB"] {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    let decimals = if unit == "B" || value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}
