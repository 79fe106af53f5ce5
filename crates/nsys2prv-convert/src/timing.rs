//! `--timing` (BSC nsys2prv's): each phase's wall time, printed and appended to
//! `timings.csv` in the current directory with BSC's columns, so scripts that
//! gather BSC's timings read ours. The file is created with BSC's header; an
//! existing one is appended to only when it has that header (it is BSC's or
//! ours), else the run is refused before it starts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

/// BSC's file name, in the current directory.
pub const TIMINGS_CSV: &str = "timings.csv";
/// BSC's header line.
const HEADER: &str = "timestamp,region,duration_s,num_reports,total_events,trace_size_b";

/// The phases of a run, as they end.
#[derive(Debug)]
pub struct Timings {
    started: Instant,
    last: Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Default for Timings {
    fn default() -> Self {
        Timings::new(Instant::now())
    }
}

impl Timings {
    pub fn new(started: Instant) -> Self {
        Timings {
            started,
            last: started,
            phases: Vec::new(),
        }
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// Ends phase `name` now.
    pub fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.phases
            .push((name, now.duration_since(self.last).as_secs_f64()));
        self.last = now;
    }

    /// Prints the phases and the total, and appends them to `timings.csv`.
    pub fn report(&self, reports: usize, events: u64, trace_bytes: u64) -> Result<()> {
        let total = self.started.elapsed().as_secs_f64();
        let mut rows: Vec<(&str, f64)> = self.phases.clone();
        rows.push(("Total Execution", total));
        for (name, seconds) in &rows {
            eprintln!("timing: {name}: {seconds:.3} s");
        }
        let path = PathBuf::from(TIMINGS_CSV);
        let new = !path.exists();
        let mut text = String::new();
        if new {
            text += HEADER;
            text.push('\n');
        }
        let now = timestamp();
        for (name, seconds) in rows {
            text += &format!("{now},{name},{seconds},{reports},{events},{trace_bytes}\n");
        }
        // One write in append mode: concurrent runs (shards) do not interleave lines.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("{}: cannot append the timings", path.display()))?;
        eprintln!("timings appended to {}", path.display());
        Ok(())
    }
}

/// Why `timings.csv` in the current directory cannot take our timings: it
/// exists with another first line than BSC's header.
pub fn problem_with_csv() -> Option<String> {
    let path = Path::new(TIMINGS_CSV);
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("--timing: {TIMINGS_CSV}: cannot read: {e}")),
    };
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    (!text.is_empty() && first.trim_end() != HEADER).then(|| {
        format!(
            "--timing: {} is not a timings file of BSC nsys2prv's (its first line is not \"{HEADER}\"): move it away or run elsewhere",
            std::env::current_dir()
                .map(|d| d.join(TIMINGS_CSV))
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
        )
    })
}

/// Local time as ISO 8601 without offset, as BSC's `datetime.now().isoformat()`
/// (seconds with microseconds); UTC when the offset cannot be told.
fn timestamp() -> String {
    let utc = time::OffsetDateTime::now_utc();
    let offset = time::UtcOffset::from_whole_seconds(local_offset_seconds(utc.unix_timestamp()))
        .unwrap_or(time::UtcOffset::UTC);
    let t = utc.to_offset(offset);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// The local time zone's offset from UTC at `t` (s since the epoch), from the C
/// library (the `time` crate will not read it in a process with threads).
#[allow(unsafe_code)] // SAFETY comments at each block
fn local_offset_seconds(t: i64) -> i32 {
    // SAFETY: localtime_r writes only into `tm`, which outlives the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        // (The libc crate marks `time_t` deprecated on musl targets only: it
        // is to become 64-bit there, which it already is for our builds.)
        #[allow(deprecated)]
        let time: libc::time_t = t as libc::time_t;
        if libc::localtime_r(&time, &mut tm).is_null() {
            return 0;
        }
        i32::try_from(tm.tm_gmtoff).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_look_like_isoformat() {
        let t = timestamp();
        assert_eq!(t.len(), 26, "{t}");
        assert_eq!(&t[10..11], "T");
    }
}
