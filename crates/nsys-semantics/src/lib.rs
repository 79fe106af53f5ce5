//! How Nsight Systems categories become Paraver records: one module per category,
//! the global layout, value interning and clock alignment. Knows neither SQL nor
//! file formats: rows come from `nsys-reader`, records go to `paraver-writer`.

pub mod catalog;
pub mod clock;
mod context;
mod cuda_api;
mod cuda_events;
mod cuda_gpu;
mod cuda_graphs;
mod cuda_sync;
pub mod cuts;
mod gpu_memory;
mod gpu_metrics;
mod host_functions;
pub mod layout;
pub mod messages;
pub mod mpi;
mod mpi_values;
mod nccl;
mod network;
mod nvtx;
mod openacc;
mod openmp;
pub mod options;
mod osrt;
pub mod ranks;
mod report;
mod sched;
mod soc_metrics;
pub mod survey;

pub use context::{ThreadKey, ThreadKind};
pub use layout::{plan_layout, TracePlan};
pub use options::{Category, KernelNames, Options};
pub use report::{translate_report, ReportTranslation};

/// A translation failure, naming the report.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    #[error(transparent)]
    Read(#[from] nsys_reader::ReadError),
    #[error("{0}: the report has no events to translate (no traced process has activity in the selected categories)")]
    Empty(std::path::PathBuf),
    #[error("{}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: paraver_writer::WriteError,
    },
}
