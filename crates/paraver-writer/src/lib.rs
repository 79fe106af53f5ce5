//! Paraver trace writer: records in sorted runs, merged into `.prv` (optionally
//! gzip), `.pcf` and `.row`. Knows the Paraver formats and nothing of Nsight.

pub mod layout;
pub mod merge;
pub mod names;
pub mod output;
pub mod pcf;
pub mod record;
pub mod run;
pub mod spill;
pub mod states;
pub mod validate;

pub use layout::{GlobalThread, NodeInfo, TaskInfo, TraceLayout};
pub use merge::{write_trace, MergeInput, TraceSummary};
pub use names::NameTables;
pub use output::OutputPaths;
pub use pcf::{EventTypeInfo, PcfCatalog, StateInfo, ValueLabels};
pub use record::{Comm, EventPair, LocalThread, Value};
pub use run::{Run, RunBuilder};
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
    #[error("cannot spill records to the temporary directory: {0}")]
    Spill(std::io::Error),
}

impl WriteError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        WriteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
