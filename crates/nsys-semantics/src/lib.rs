//! How Nsight Systems categories become Paraver records: one module per category,
//! the global layout, value interning and clock alignment. Knows neither SQL nor
//! file formats: rows come from `nsys-reader`, records go to `paraver-writer`.

#![forbid(unsafe_code)]

pub mod catalog;
pub mod category;
pub mod clock;
mod context;
mod cpu_raw_counters;
mod cuda_api;
mod cuda_events;
mod cuda_graphs;
mod cuda_sync;
pub mod cuts;
mod gpu_idle;
mod gpu_memory;
mod gpu_metrics;
pub mod handoff;
mod host_functions;
mod kernels;
mod launch_queues;
pub mod layout;
mod memory;
pub mod messages;
pub mod metric_sets;
mod metric_values;
pub mod mpi;
mod mpi_values;
mod nccl;
pub mod nccl_match;
mod network;
mod nvtx;
pub mod nvtx_config;
mod openacc;
mod openmp;
pub mod options;
mod osrt;
pub mod ranks;
pub mod registry;
mod report;
mod sampling;
pub mod saved;
mod sched;
mod soc_metrics;
mod spilled_table;
pub mod survey;
#[cfg(any(test, feature = "test-category"))]
pub mod test_category;
#[cfg(test)]
mod testing;
mod types;
pub mod view;

pub use category::CategoryInfo;
pub use context::{ThreadKey, ThreadKind};
pub use layout::{plan_layout, plan_layout_named, RowNames, TracePlan};
pub use options::{Category, KernelNames, MetricTypes, Options};
pub use registry::{DeclaredView, Registry, UnknownCategory};
pub use report::{translate_report, translate_with, ReportTranslation};
pub use view::{TypeFamily, View};

/// Event type numbers other crates need: the shared numbering
/// ([`nsys2prv_events`]), by the names this crate's modules give them.
pub mod event_types {
    pub use nsys2prv_events::{
        is_nvtx_range_type, CORRELATION_ID, CUDA_API, CUDA_KERNEL, CUDA_MEMORY_OP,
        CUDA_MEMORY_SIZE, CUDA_TAGS, NCCL_KERNEL, NCCL_KERNEL_COLLECTIVE as KERNEL_COLLECTIVE,
        NCCL_MESSAGE_SIZE as MESSAGE_SIZE, NCCL_REGIONS, TAG_EVENT_WAIT, TAG_HOST_CALLBACK,
        TAG_LAUNCH, TAG_MEMORY, TAG_NCCL_P2P,
    };
}

/// A translation failure, naming the report.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    #[error(transparent)]
    Read(#[from] nsys_reader::ReadError),
    #[error("{0}: the report has no events to translate (no traced process has activity in the selected categories)")]
    Empty(std::path::PathBuf),
    /// `--ranks` leaves out every process of the report (its ranks, where known).
    #[error("{}: {}", .0.display(), describe_ranks(.1))]
    NotSelected(std::path::PathBuf, Vec<u32>),
    /// The cut applied where rows are read cannot give this report's part of
    /// the merge's cut (see `context::CutWhereRead::unsafe_for`): translate it
    /// whole.
    #[error("{}: the cut cannot be applied where this report's rows are read", .0.display())]
    CutUnsafe(std::path::PathBuf),
    #[error("{}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: paraver_writer::WriteError,
    },
}

/// Why `--ranks` left a report out.
fn describe_ranks(ranks: &[u32]) -> String {
    match ranks {
        [] => "no process of a known rank: left out by --ranks".to_string(),
        [one] => format!("rank {one}: left out by --ranks"),
        _ => {
            let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
            format!("ranks {}: left out by --ranks", list.join(", "))
        }
    }
}
