//! Progress and messages: a bar on a terminal, a plain line every few seconds
//! otherwise (Slurm logs), nothing with `-q`. [`Bars`] is what the library's
//! conversion reports its phases to.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub fn init_logging(quiet: bool, verbose: bool) {
    let level = if quiet {
        "error"
    } else if verbose {
        "debug"
    } else {
        "info"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("NSYS2PRV_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .compact()
        .init();
}

/// The binary's display of the library's progress.
pub struct Bars {
    pub quiet: bool,
}

impl nsys2prv_convert::Progress for Bars {
    fn phase(
        &self,
        name: &str,
        total: Option<u64>,
        unit: &str,
    ) -> Box<dyn nsys2prv_convert::progress::Phase> {
        Box::new(Progress::new(self.quiet, name, total, unit))
    }
}

impl nsys2prv_convert::progress::Phase for Progress {
    fn set(&mut self, done: u64) {
        Progress::set(self, done);
    }

    fn inc(&mut self) {
        Progress::inc(self);
    }

    fn finish(self: Box<Self>) {
        Progress::finish(*self);
    }
}

/// One phase of work with a known or unknown total.
pub struct Progress {
    bar: Option<ProgressBar>,
    plain: Option<PlainLine>,
    done: u64,
}

struct PlainLine {
    phase: String,
    unit: String,
    total: Option<u64>,
    last: Instant,
    started: Instant,
}

const PLAIN_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    pub fn new(quiet: bool, phase: &str, total: Option<u64>, unit: &str) -> Progress {
        if quiet {
            return Progress {
                bar: None,
                plain: None,
                done: 0,
            };
        }
        if std::io::stderr().is_terminal() {
            let bar = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let template = match total {
                Some(_) => format!(
                    "{phase:>10} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{rate}}, ETA {{eta}})"
                ),
                None => format!("{phase:>10} {{spinner}} {{human_pos}} {unit} ({{rate}})"),
            };
            if let Ok(style) = ProgressStyle::with_template(&template) {
                let style = style.progress_chars("=> ").with_key(
                    "rate",
                    |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{}", rate(state.per_sec()));
                    },
                );
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            return Progress {
                bar: Some(bar),
                plain: None,
                done: 0,
            };
        }
        let now = Instant::now();
        Progress {
            bar: None,
            plain: Some(PlainLine {
                phase: phase.to_string(),
                unit: unit.to_string(),
                total,
                last: now,
                started: now,
            }),
            done: 0,
        }
    }

    pub fn set(&mut self, done: u64) {
        self.done = done;
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
        if let Some(p) = &mut self.plain {
            if p.last.elapsed() >= PLAIN_EVERY {
                p.last = Instant::now();
                let secs = p.started.elapsed().as_secs_f64().max(1e-9);
                let rate = rate(done as f64 / secs);
                match p.total {
                    Some(t) => eprintln!("{}: {done}/{t} ({rate})", p.phase),
                    None => eprintln!("{}: {done} ({rate})", p.phase),
                }
            }
        }
    }

    pub fn inc(&mut self) {
        self.set(self.done + 1);
    }

    /// Clears the bar; off a terminal, says how long the phase took.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        if let Some(p) = self.plain {
            let secs = p.started.elapsed().as_secs_f64();
            eprintln!("{}: {} {} in {secs:.2} s", p.phase, self.done, p.unit);
        }
    }
}

/// A rate with 3 significant digits: `850/s`, `12.3 k/s`, `1.52 M/s`.
fn rate(per_second: f64) -> String {
    let (value, unit) = match per_second {
        r if r >= 1e6 => (r / 1e6, " M"),
        r if r >= 1e3 => (r / 1e3, " k"),
        r => (r, ""),
    };
    let decimals = match value {
        _ if unit.is_empty() => 0,
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{value:.decimals$}{unit}/s")
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates_have_three_significant_digits() {
        assert_eq!(super::rate(849.7), "850/s");
        assert_eq!(super::rate(12_345.678), "12.3 k/s");
        assert_eq!(super::rate(523_424.123_4), "523 k/s");
        assert_eq!(super::rate(1_523_424.0), "1.52 M/s");
    }
}
