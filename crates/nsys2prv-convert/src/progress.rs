//! How the library reports progress: the caller's [`Progress`] starts one
//! [`Phase`] per stretch of work (reading reports, writing records). The binary
//! draws bars or plain lines; [`Silent`] shows nothing.

/// Starts the display of a phase of work.
pub trait Progress: Sync {
    /// A phase named `name` of `total` items (unknown: `None`) counted in `unit`.
    fn phase(&self, name: &str, total: Option<u64>, unit: &str) -> Box<dyn Phase>;
}

/// One phase under way.
pub trait Phase: Send {
    /// `done` items so far.
    fn set(&mut self, done: u64);
    /// One more item done.
    fn inc(&mut self);
    /// The phase is over.
    fn finish(self: Box<Self>);
}

/// Shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: &str, _: Option<u64>, _: &str) -> Box<dyn Phase> {
        Box::new(Silent)
    }
}

impl Phase for Silent {
    fn set(&mut self, _: u64) {}
    fn inc(&mut self) {}
    fn finish(self: Box<Self>) {}
}
