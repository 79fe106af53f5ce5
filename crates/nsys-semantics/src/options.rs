//! What to translate.

use std::collections::BTreeSet;

/// A translatable category of Nsight data (the `-t/--trace` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    CudaApi,
    Kernels,
    Memory,
    Sync,
    Nvtx,
    Nccl,
    Osrt,
    OpenMp,
    OpenAcc,
    Sched,
    Mpi,
    Graphs,
    CudaEvents,
    GpuMemory,
    GpuMetrics,
    Network,
    HostFunctions,
}

impl Category {
    pub const ALL: [Category; 17] = [
        Category::CudaApi,
        Category::Kernels,
        Category::Memory,
        Category::Sync,
        Category::Nvtx,
        Category::Nccl,
        Category::Osrt,
        Category::OpenMp,
        Category::OpenAcc,
        Category::Sched,
        Category::Mpi,
        Category::Graphs,
        Category::CudaEvents,
        Category::GpuMemory,
        Category::GpuMetrics,
        Category::Network,
        Category::HostFunctions,
    ];

    const CUDA: [Category; 4] = [
        Category::CudaApi,
        Category::Kernels,
        Category::Memory,
        Category::Sync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::CudaApi => "cuda-api",
            Category::Kernels => "kernels",
            Category::Memory => "memory",
            Category::Sync => "sync",
            Category::Nvtx => "nvtx",
            Category::Nccl => "nccl",
            Category::Osrt => "osrt",
            Category::OpenMp => "openmp",
            Category::OpenAcc => "openacc",
            Category::Sched => "sched",
            Category::Mpi => "mpi",
            Category::Graphs => "graphs",
            Category::CudaEvents => "cuda-events",
            Category::GpuMemory => "gpu-memory",
            Category::GpuMetrics => "gpu-metrics",
            Category::Network => "network",
            Category::HostFunctions => "host-functions",
        }
    }

    /// Categories a `-t` word selects: a category name, a group (`cuda`, `all`), or
    /// one of BSC nsys2prv's names (`cuda_api_trace`, `cuda_gpu_trace`,
    /// `nvtx_pushpop_trace`, `nvtx_startend_trace`, `pthread`).
    pub fn parse_word(word: &str) -> Option<Vec<Category>> {
        let word = word.trim().to_ascii_lowercase().replace('_', "-");
        let found = match word.as_str() {
            "all" => Category::ALL.to_vec(),
            "cuda" => Category::CUDA.to_vec(),
            "nvtx" | "nvtx-pushpop-trace" | "nvtx-startend-trace" => vec![Category::Nvtx],
            "nccl" => vec![Category::Nccl],
            "osrt" | "pthread" | "pthreads" => vec![Category::Osrt],
            "openmp" | "omp" => vec![Category::OpenMp],
            "openacc" | "acc" => vec![Category::OpenAcc],
            "sched" | "scheduling" => vec![Category::Sched],
            "mpi" | "mpi-event-trace" => vec![Category::Mpi],
            "graphs" | "cuda-graphs" => vec![Category::Graphs],
            "cuda-events" | "events" => vec![Category::CudaEvents],
            "gpu-memory" | "memory-usage" => vec![Category::GpuMemory],
            "gpu-metrics" | "metrics" => vec![Category::GpuMetrics],
            "network" | "nic-metrics" | "nic" | "ib-switch" => vec![Category::Network],
            "host-functions" | "host-funcs" => vec![Category::HostFunctions],
            "cuda-api" | "cuda-api-trace" | "api" => vec![Category::CudaApi],
            "kernels" | "kernel" => vec![Category::Kernels],
            "memory" | "memcpy" | "memset" => vec![Category::Memory],
            "sync" | "synchronization" => vec![Category::Sync],
            "cuda-gpu-trace" => vec![Category::Kernels, Category::Memory],
            _ => return None,
        };
        Some(found)
    }
}

/// Which kernel name becomes the event value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelNames {
    /// `shortName`: `gemm`.
    #[default]
    Short,
    /// `demangledName`: `void gemm<float>(float*, int)`.
    Demangled,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub categories: BTreeSet<Category>,
    pub kernel_names: KernelNames,
    /// Where and when runs spill to disk (`None`: everything stays in memory).
    pub spill: Option<paraver_writer::SpillPolicy>,
    /// Decode each table's rows on a second thread while translating them: for
    /// when fewer reports than cores are being translated.
    pub decode_ahead: bool,
    /// Keep the threads Nsight Systems adds to the traced processes (hidden by
    /// default: see [`is_nsys_thread`]).
    pub keep_nsys_threads: bool,
}

/// Threads of the traced process that belong to Nsight Systems itself: its
/// injection and communication threads and CUPTI's worker.
pub fn is_nsys_thread(name: &str) -> bool {
    name.starts_with("[NSys") || name == "CUPTI worker thread"
}

impl Default for Options {
    fn default() -> Self {
        Options {
            categories: Category::ALL.into_iter().collect(),
            kernel_names: KernelNames::Short,
            spill: None,
            decode_ahead: false,
            keep_nsys_threads: false,
        }
    }
}

impl Options {
    pub fn wants(&self, c: Category) -> bool {
        self.categories.contains(&c)
    }
}
