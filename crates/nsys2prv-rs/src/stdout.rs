//! What the commands print on stdout (the report, its JSON with `--json -`, the
//! dry run, completions, the man page). A reader that goes away (`| head`) ends
//! the command quietly, as it ends `cat`: no message, and exit status 141
//! (128 + SIGPIPE, what a shell shows for `cat` killed by the signal). Rust
//! ignores SIGPIPE, so the write fails with `BrokenPipe` instead; `print!` would
//! panic on it.

use std::io::Write;

use anyhow::{Context, Result};

/// Exit status when stdout was closed: 128 + SIGPIPE.
pub const EXIT_CLOSED: u8 = 141;

/// The error a write to a closed stdout becomes, for `main` to recognise.
#[derive(Debug)]
pub struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for Closed {}

/// Writes `bytes` to stdout and flushes.
pub fn write(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed.into()),
        result => result.context("cannot write to stdout"),
    }
}

/// Whether `e` is (or was caused by) a closed stdout.
pub fn closed(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| cause.is::<Closed>())
}
