//! `--dry-run`: what a conversion would translate, from row counts only (no
//! table is scanned), in a second or two whatever the input size.

use std::path::{Path, PathBuf};

use nsys_reader::{Export, ReadError};

use crate::options::{Category, Options};
use crate::ranks::{rank_in_file_name, RANK_VARIABLES};

/// Tables each category reads (OpenMP: every `OPENMP_EVENT_KIND_*` table).
fn tables_of(category: Category) -> &'static [&'static str] {
    match category {
        Category::CudaApi => &["CUPTI_ACTIVITY_KIND_RUNTIME"],
        Category::Kernels => &["CUPTI_ACTIVITY_KIND_KERNEL"],
        Category::Memory => &["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"],
        Category::Sync => &["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"],
        Category::Nvtx | Category::Nccl => &["NVTX_EVENTS"],
        Category::Mpi => &[
            "MPI_P2P_EVENTS",
            "MPI_COLLECTIVES_EVENTS",
            "MPI_START_WAIT_EVENTS",
            "MPI_OTHER_EVENTS",
        ],
        Category::Osrt => &["OSRT_API"],
        Category::OpenMp => &[],
        Category::OpenAcc => &[
            "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
            "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
        ],
        Category::Sched => &["SCHED_EVENTS"],
        Category::Graphs => &[
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
            "CUDA_GRAPH_NODE_EVENTS",
            "CUDA_GRAPH_EVENTS",
        ],
        Category::CudaEvents => &["CUPTI_ACTIVITY_KIND_CUDA_EVENT"],
        Category::GpuMemory => &[
            "CUDA_GPU_MEMORY_USAGE_EVENTS",
            "CUDA_GPU_MEMORY_POOL_EVENTS",
            "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
            "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
        ],
        Category::GpuMetrics => &["GPU_METRICS", "GENERIC_EVENTS", "SOC_METRICS"],
        Category::Network => &[
            "NET_NIC_METRIC",
            "NET_IB_SWITCH_METRIC",
            "NET_IB_SWITCH_CONGESTION_EVENT",
        ],
        Category::HostFunctions => &[
            "CUPTI_ACTIVITY_KIND_GRAPH_HOST_NODE_AND_HOST_LAUNCH",
            "CUDA_HOST_CALLBACK",
        ],
    }
}

/// `.prv` bytes a row becomes (its events, states and arrows), measured on the
/// bundled samples by translating each category alone (`-t CATEGORY`); the
/// categories the samples lack are estimated from their line counts at ~50
/// bytes a line. `tests/terminal_safety.rs` checks the estimate against the real
/// output of every sample.
fn bytes_per_row(category: Category) -> u64 {
    match category {
        Category::CudaApi => 140,
        Category::Kernels => 300,
        Category::Memory => 170,
        Category::Sync => 58,
        Category::CudaEvents => 145,
        Category::Nvtx => 72,
        Category::Osrt => 126,
        Category::OpenMp => 82,
        Category::Sched => 30,
        Category::Nccl => 150,
        Category::Mpi => 130,
        Category::OpenAcc => 150,
        Category::Graphs => 200,
        Category::HostFunctions => 150,
        Category::GpuMemory | Category::GpuMetrics | Category::Network => 50,
    }
}

/// The launch arrow of a kernel or memory operation, written when its API call
/// is translated too.
const LAUNCH_ARROW_BYTES: u64 = 68;

#[derive(Clone, Debug)]
pub struct Survey {
    pub path: PathBuf,
    pub host: Option<String>,
    pub product_version: Option<String>,
    /// Rank from the environment or, with several reports, the file name (the
    /// translation may find more in `MPI_RANKS` and NVTX thread names).
    pub rank: Option<u32>,
    pub rows: Vec<(Category, u64)>,
}

impl Survey {
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().map(|(_, n)| n).sum()
    }

    /// Estimated size of this report's part of the `.prv` (before gzip).
    pub fn estimated_bytes(&self) -> u64 {
        let with_api = self.rows.iter().any(|(c, _)| *c == Category::CudaApi);
        self.rows
            .iter()
            .map(|&(c, n)| {
                let arrow = matches!(c, Category::Kernels | Category::Memory) && with_api;
                n * (bytes_per_row(c) + if arrow { LAUNCH_ARROW_BYTES } else { 0 })
            })
            .sum()
    }
}

/// Counts the rows of the export at `path`; `name` is the report as given (see
/// [`crate::translate_report`]).
pub fn survey_report(
    path: &Path,
    name: &Path,
    options: &Options,
    several_reports: bool,
) -> Result<Survey, ReadError> {
    let export = Export::open(path)?;
    let meta = export.meta();
    let mut rows = Vec::new();
    for &category in options.categories.iter() {
        if category == Category::Nccl && options.wants(Category::Nvtx) {
            continue; // NVTX_EVENTS is counted once
        }
        let mut n = 0;
        for table in tables_of(category) {
            n += export.row_estimate(table)?;
        }
        if category == Category::OpenMp {
            for table in export
                .schema()
                .table_names()
                .filter(|t| t.starts_with("OPENMP_EVENT_KIND_"))
            {
                n += export.row_estimate(table)?;
            }
        }
        if n > 0 {
            rows.push((category, n));
        }
    }
    let rank = RANK_VARIABLES
        .iter()
        .find_map(|v| meta.env(v)?.trim().parse().ok())
        .or_else(|| several_reports.then(|| rank_in_file_name(name)).flatten());
    Ok(Survey {
        path: name.to_path_buf(),
        host: meta.hostname.clone(),
        product_version: meta.product_version.clone(),
        rank,
        rows,
    })
}
