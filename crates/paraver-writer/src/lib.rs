//! Paraver trace writer: records in sorted runs, merged into `.prv` (optionally
//! gzip), `.pcf` and `.row`. Knows the Paraver formats and nothing of Nsight.

// Unsafe code only where allowed: `output::start_writeback` (one system call).
#![deny(unsafe_code)]

mod chunked;
mod cursor;
mod cut;
#[cfg(target_os = "linux")]
pub mod direct;
mod gather;
mod kmerge;
pub mod layout;
mod lines;
mod loser_tree;
pub mod merge;
pub mod names;
pub mod output;
pub mod pcf;
pub mod record;
pub mod run;
pub mod saved;
mod segments;
pub mod spill;
pub mod states;
mod summary;
mod text;
mod view;
mod window;

pub use layout::{GlobalThread, NodeInfo, TaskInfo, TraceLayout};
pub use merge::{
    place_slice, write_trace, write_trace_cut, write_trace_within, Cut, MergeInput, SliceBody,
    SliceTallies, TimeWindow, TraceSummary, TraceWriter,
};
pub use names::NameTables;
pub use output::OutputPaths;
pub use pcf::{EventTypeInfo, PcfCatalog, StateInfo, Timing, ValueLabels};
pub use record::{Comm, EventPair, LocalThread, Value, DISCARDED};
pub use run::{Run, RunBuilder, SharedPairs};
pub use spill::{MemoryBudget, SpillPolicy};
pub use states::StateTiler;

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the output name must end in .prv or .prv.gz", .0.display())]
    BadOutputName(PathBuf),
    #[error("nothing to write: no records were produced")]
    EmptyTrace,
    #[error("the trace would span {} days: Paraver's times lose precision beyond 104 days (2^53 ns); the reports' clocks are far apart or a timestamp is corrupt", .0 / 86_400_000_000_000)]
    SpanTooLong(i64),
    #[error("cannot spill records to {}: {source}", dir.display())]
    Spill {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read back spilled records: {0}")]
    SpillRead(std::io::Error),
    #[error("nothing happens in the cut {start}..{end} ns of the trace (which runs from 0 to {trace_end} ns)")]
    EmptyWindow {
        start: i64,
        end: i64,
        trace_end: i64,
    },
}

impl WriteError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        WriteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
