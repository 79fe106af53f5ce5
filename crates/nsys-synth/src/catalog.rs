//! What the synthetic application calls and runs: kernels, copies, API names and their costs.
//!
//! Names follow what real exports contain: runtime API names carry the `_vNNNN` suffix, driver
//! names do not (apart from the API's own `_v2`), demangled kernel names are in nsys's style
//! (`float *`, `(int)4`, `>>`).

/// A kernel the application launches. Durations are typical, in ns.
pub(crate) struct KernelDef {
    pub short: &'static str,
    pub demangled: &'static str,
    pub mangled: &'static str,
    pub registers: i64,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub static_shared: i64,
    pub dynamic_shared: i64,
    pub shared_executed: i64,
    pub duration: i64,
    /// Relative launch frequency.
    pub weight: u64,
}

/// `names` = [short, demangled, mangled]; `shape` = [grid, block]; `shared` = [static, dynamic,
/// executed] bytes.
pub(crate) const fn kernel(
    names: [&'static str; 3],
    registers: i64,
    shape: [[i64; 3]; 2],
    shared: [i64; 3],
    duration: i64,
    weight: u64,
) -> KernelDef {
    let [short, demangled, mangled] = names;
    let [grid, block] = shape;
    KernelDef {
        short,
        demangled,
        mangled,
        registers,
        grid,
        block,
        static_shared: shared[0],
        dynamic_shared: shared[1],
        shared_executed: shared[2],
        duration,
        weight,
    }
}

/// `gemm_kernel` appears twice on purpose: one short name shared by two template instances.
pub(crate) const KERNELS: &[KernelDef] = &[
    kernel(
        [
            "gemm_kernel",
            "void gemm_kernel<float>(const float *, const float *, float *, int, int, int)",
            "_Z11gemm_kernelIfEvPKT_S2_PS0_iii",
        ],
        128,
        [[64, 64, 1], [16, 16, 1]],
        [8192, 0, 32768],
        180_000,
        6,
    ),
    kernel(
        [
            "gemm_kernel",
            "void gemm_kernel<double>(const double *, const double *, double *, int, int, int)",
            "_Z11gemm_kernelIdEvPKT_S2_PS0_iii",
        ],
        168,
        [[64, 64, 1], [16, 16, 1]],
        [16384, 0, 32768],
        340_000,
        2,
    ),
    kernel(
        [
            "saxpy",
            "saxpy(int, float, const float *, float *)",
            "_Z5saxpyifPKfPf",
        ],
        16,
        [[4096, 1, 1], [256, 1, 1]],
        [0, 0, 8192],
        9_000,
        10,
    ),
    kernel(
        [
            "vectorAdd",
            "vectorAdd(const float *, const float *, float *, int)",
            "_Z9vectorAddPKfS0_Pfi",
        ],
        16,
        [[4096, 1, 1], [256, 1, 1]],
        [0, 0, 8192],
        12_000,
        8,
    ),
    kernel(
        [
            "vectorized_elementwise_kernel",
            "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, at::detail::Array<char *, (int)1>>(int, at::native::FillFunctor<float>, at::detail::Array<char *, (int)1>)",
            "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
        ],
        18,
        [[1024, 1, 1], [128, 1, 1]],
        [0, 0, 8192],
        4_000,
        8,
    ),
    kernel(
        [
            "stencil_2d",
            "stencil_2d",
            "stencil_2d",
        ],
        40,
        [[128, 128, 1], [32, 8, 1]],
        [4352, 0, 16384],
        60_000,
        4,
    ),
    kernel(
        [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
            "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
        ],
        96,
        [[2, 1, 1], [640, 1, 1]],
        [0, 5264, 102400],
        250_000,
        3,
    ),
    kernel(
        [
            "ncclDevKernel_AllGather_RING_LL",
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
            "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE",
        ],
        96,
        [[2, 1, 1], [640, 1, 1]],
        [0, 5264, 102400],
        120_000,
        1,
    ),
    kernel(
        [
            "ncclDevKernel_SendRecv",
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
            "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE",
        ],
        96,
        [[1, 1, 1], [640, 1, 1]],
        [0, 5264, 102400],
        80_000,
        1,
    ),
];

/// Total of `KERNELS` weights, for weighted picking.
pub(crate) fn kernel_weight_total() -> u64 {
    KERNELS.iter().map(|k| k.weight).sum()
}

/// `localMemoryTotal` as an A100 reports it.
pub(crate) const LOCAL_MEMORY_TOTAL: i64 = 127_401_984;

pub(crate) const LAUNCH_KERNEL: &str = "cudaLaunchKernel_v7000";
pub(crate) const LAUNCH_KERNEL_DRIVER: &str = "cuLaunchKernel";
/// (asynchronous, blocking) variants of the calls that issue memsets and copies.
pub(crate) const MEMSET_CALLS: [&str; 2] = ["cudaMemsetAsync_v3020", "cudaMemset_v3020"];
pub(crate) const MEMSET_DRIVER_CALLS: [&str; 2] = ["cuMemsetD8Async", "cuMemsetD8_v2"];
pub(crate) const MEMCPY_DRIVER_CALLS: [&str; 2] = ["cuMemcpyAsync", "cuMemcpy"];
pub(crate) const STREAM_SYNCHRONIZE: &str = "cudaStreamSynchronize_v3020";
pub(crate) const DEVICE_SYNCHRONIZE: &str = "cudaDeviceSynchronize_v3020";
pub(crate) const EVENT_SYNCHRONIZE: &str = "cudaEventSynchronize_v3020";
pub(crate) const EVENT_RECORD: &str = "cudaEventRecord_v3020";
pub(crate) const STREAM_WAIT_EVENT: &str = "cudaStreamWaitEvent_v3020";

/// `ENUM_CUDA_MEM_KIND` ids (nsys's own numbering).
pub(crate) mod mem_kind {
    pub const PAGEABLE: i64 = 0;
    pub const PINNED: i64 = 1;
    pub const DEVICE: i64 = 2;
    pub const ARRAY: i64 = 3;
    pub const UNKNOWN: i64 = 7;
}

/// How one `copyKind` (`ENUM_CUDA_MEMCPY_OPER` id = index in `COPY_KINDS`) is issued and behaves.
pub(crate) struct CopyKindDef {
    /// Runtime call used on a created stream.
    pub async_api: &'static str,
    /// Runtime call used on the NULL stream; it blocks until the copy is done.
    pub blocking_api: &'static str,
    pub src_kind: i64,
    pub dst_kind: i64,
    /// Transfer speed in bytes per ns (= GB/s).
    pub bytes_per_ns: i64,
    /// Peer-to-peer copies name both devices and contexts.
    pub peer: bool,
    /// Unified-memory migrations: no API call, correlationId 0, context and stream 0.
    pub migration: bool,
}

const fn copy(
    async_api: &'static str,
    blocking_api: &'static str,
    src_kind: i64,
    dst_kind: i64,
    bytes_per_ns: i64,
) -> CopyKindDef {
    CopyKindDef {
        async_api,
        blocking_api,
        src_kind,
        dst_kind,
        bytes_per_ns,
        peer: false,
        migration: false,
    }
}

const fn migration() -> CopyKindDef {
    CopyKindDef {
        async_api: "",
        blocking_api: "",
        src_kind: mem_kind::UNKNOWN,
        dst_kind: mem_kind::UNKNOWN,
        bytes_per_ns: 6,
        peer: false,
        migration: true,
    }
}

const MEMCPY_ASYNC: &str = "cudaMemcpyAsync_v3020";
const MEMCPY_BLOCKING: &str = "cudaMemcpy_v3020";
const TO_ARRAY_ASYNC: &str = "cudaMemcpy2DToArrayAsync_v3020";
const TO_ARRAY_BLOCKING: &str = "cudaMemcpy2DToArray_v3020";
const FROM_ARRAY_ASYNC: &str = "cudaMemcpy2DFromArrayAsync_v3020";
const FROM_ARRAY_BLOCKING: &str = "cudaMemcpy2DFromArray_v3020";

pub(crate) const COPY_KINDS: [CopyKindDef; 14] = {
    use mem_kind::*;
    [
        copy(MEMCPY_ASYNC, MEMCPY_BLOCKING, UNKNOWN, UNKNOWN, 10),
        copy(MEMCPY_ASYNC, MEMCPY_BLOCKING, PAGEABLE, DEVICE, 12),
        copy(MEMCPY_ASYNC, MEMCPY_BLOCKING, DEVICE, PAGEABLE, 12),
        copy(TO_ARRAY_ASYNC, TO_ARRAY_BLOCKING, PINNED, ARRAY, 10),
        copy(FROM_ARRAY_ASYNC, FROM_ARRAY_BLOCKING, ARRAY, PINNED, 10),
        copy(
            "cudaMemcpy2DArrayToArray_v3020",
            "cudaMemcpy2DArrayToArray_v3020",
            ARRAY,
            ARRAY,
            200,
        ),
        copy(FROM_ARRAY_ASYNC, FROM_ARRAY_BLOCKING, ARRAY, DEVICE, 200),
        copy(TO_ARRAY_ASYNC, TO_ARRAY_BLOCKING, DEVICE, ARRAY, 200),
        copy(MEMCPY_ASYNC, MEMCPY_BLOCKING, DEVICE, DEVICE, 600),
        copy(MEMCPY_ASYNC, MEMCPY_BLOCKING, PINNED, PINNED, 8),
        CopyKindDef {
            peer: true,
            ..copy(
                "cudaMemcpyPeerAsync_v4000",
                "cudaMemcpyPeer_v4000",
                DEVICE,
                DEVICE,
                40,
            )
        },
        migration(),
        migration(),
        migration(),
    ]
};

/// `migrationCause` values seen on migrations: 2 = page fault (coherence), 3 = speculative prefetch.
pub(crate) const MIGRATION_CAUSES: [i64; 2] = [2, 3];

/// `eventClass` of CUDA runtime and driver API rows.
pub(crate) const RUNTIME_CLASS: i64 = 0;
pub(crate) const DRIVER_CLASS: i64 = 1;

/// An API call that launches nothing, with its usual duration range in ns.
pub(crate) struct ExtraCall {
    pub name: &'static str,
    pub event_class: i64,
    pub min: i64,
    pub max: i64,
}

const fn extra(name: &'static str, event_class: i64, min: i64, max: i64) -> ExtraCall {
    ExtraCall {
        name,
        event_class,
        min,
        max,
    }
}

pub(crate) const EXTRA_CALLS: &[ExtraCall] = &[
    extra("cudaMalloc_v3020", RUNTIME_CLASS, 20_000, 400_000),
    extra("cudaFree_v3020", RUNTIME_CLASS, 10_000, 150_000),
    extra("cudaGetDevice_v3020", RUNTIME_CLASS, 200, 1_000),
    extra("cudaSetDevice_v3020", RUNTIME_CLASS, 300, 1_500),
    extra("cudaStreamQuery_v3020", RUNTIME_CLASS, 500, 2_000),
    extra("cudaGetLastError_v3020", RUNTIME_CLASS, 100, 400),
    extra("cudaEventCreate_v3020", RUNTIME_CLASS, 1_000, 4_000),
    extra("cudaEventDestroy_v3020", RUNTIME_CLASS, 1_000, 3_000),
    extra("cudaPointerGetAttributes_v4000", RUNTIME_CLASS, 500, 2_000),
    extra("cudaHostAlloc_v3020", RUNTIME_CLASS, 50_000, 900_000),
    extra("cudaFreeHost_v3020", RUNTIME_CLASS, 30_000, 300_000),
    extra("cuMemAlloc_v2", DRIVER_CLASS, 20_000, 300_000),
    extra("cuMemFree_v2", DRIVER_CLASS, 10_000, 100_000),
    extra("cuCtxGetCurrent", DRIVER_CLASS, 100, 400),
    extra("cuDeviceGetAttribute", DRIVER_CLASS, 100, 500),
    extra("cuPointerGetAttribute", DRIVER_CLASS, 300, 1_000),
    extra("cuModuleGetLoadingMode", DRIVER_CLASS, 500, 2_000),
    extra("cuLibraryGetKernel", DRIVER_CLASS, 300, 1_000),
    extra("cuKernelGetName", DRIVER_CLASS, 300, 1_000),
];

/// Threads nsys and CUDA add to a profiled process: (name, priority). They own no events.
pub(crate) const HELPER_THREADS: [(&str, i64); 4] = [
    ("[NSys]", 10),
    ("[NSys Comms]", 10),
    ("CUPTI worker thread", 10),
    ("cuda-EvtHandlr", 20),
];

/// Unrelated processes of the machine, listed in PROCESSES as real exports list every process.
pub(crate) const SYSTEM_PROCESSES: [(u32, &str); 2] = [(1, "systemd"), (1187, "sshd")];
