//! The event types and row names the report reads (BSC nsys2prv's numbering, which
//! nsys2prv-rs keeps), and how it recognises them.

pub use nsys2prv_events::{
    is_nvtx_range_type as is_nvtx_type, CUDA_API, CUDA_EVENT_OP, CUDA_EVENT_STREAM_WAIT,
    CUDA_HOST_FUNCTION, CUDA_KERNEL, CUDA_MEMORY_OP as MEMORY_OP, CUDA_MEMORY_SIZE as MEMORY_SIZE,
    CUDA_SYNC, GPU_METRICS as METRICS, LAUNCH_LATENCY, LAUNCH_QUEUE_DEPTH,
    MPI_SEND_SIZE_IN_COLLECTIVE as MPI_SEND_SIZE, NCCL_COMMUNICATOR, NCCL_KERNEL,
    NCCL_KERNEL_COLLECTIVE as NCCL_COLLECTIVE, NCCL_MESSAGE_SIZE, NCCL_WAITED_FOR_RANK,
    NCCL_WAIT_TIME, OSRT_CALL as OS_RUNTIME,
};

/// Communication tags of a launch (kernel) and of a memory operation's call.
pub const LAUNCH_TAG: i128 = nsys2prv_events::TAG_LAUNCH as i128;
pub const COPY_TAG: i128 = nsys2prv_events::TAG_MEMORY as i128;
/// Communication tag of an NCCL point-to-point transfer between GPU stream rows.
pub const NCCL_P2P_TAG: i128 = nsys2prv_events::TAG_NCCL_P2P as i128;

/// `CUDA-D<dev>.S<stream>` → device.
pub fn stream_device(thread_name: &str) -> Option<u32> {
    let rest = thread_name.strip_prefix("CUDA-D")?;
    let (device, stream) = rest.split_once(".S")?;
    stream.parse::<u64>().ok()?;
    device.parse().ok()
}

/// `GPU<n> metrics` (nsys2prv-rs) or `Metrics GPU<n>` (BSC nsys2prv) → n.
pub fn metrics_device(thread_name: &str) -> Option<u32> {
    thread_name
        .strip_prefix("GPU")
        .and_then(|r| r.strip_suffix(" metrics"))
        .or_else(|| thread_name.strip_prefix("Metrics GPU"))?
        .parse()
        .ok()
}

pub fn is_mpi_type(ty: u32) -> bool {
    nsys2prv_events::is_mpi_call_type(ty)
}

/// CPU-side calls a thread can be in when a GPU goes idle.
pub fn is_call_type(ty: u32) -> bool {
    matches!(ty, CUDA_API | CUDA_SYNC | OS_RUNTIME) || is_mpi_type(ty)
}

pub fn is_metric_type(ty: u32) -> bool {
    METRICS.contains(&ty)
}

/// What kind of call a call type is, in words.
pub fn call_kind(ty: u32) -> &'static str {
    match ty {
        CUDA_API => "CUDA",
        CUDA_SYNC => "CUDA sync",
        OS_RUNTIME => "OS runtime",
        _ if is_mpi_type(ty) => "MPI",
        _ => "call",
    }
}

/// Whether a range label names `name` (a start/end range's label is `domain: name`,
/// BSC's `domain:name`).
pub fn label_is(label: &str, name: &str) -> bool {
    label == name || bare(label) == name
}

pub fn looks_like_iteration(label: &str) -> bool {
    let lower = label.to_lowercase();
    ["iter", "step", "epoch"].iter().any(|w| lower.contains(w))
}

/// The bare range name of a label (`domain: name` → `name`; BSC's default
/// domain `:name` → `name`).
pub fn bare(label: &str) -> &str {
    match label.strip_prefix(':') {
        Some(name) => name,
        None => label.rsplit_once(": ").map_or(label, |(_, n)| n),
    }
}

/// Whether an event type's label is NCCL's message size (ours or BSC's column).
pub fn is_size_label(label: &str) -> bool {
    let lower = label.to_lowercase();
    lower.contains("nccl") && lower.contains("message size")
}

/// nccl-tests' bus bandwidth factor of a collective over `n` ranks.
pub fn bus_factor(collective: &str, n: usize) -> Option<f64> {
    let name = collective.to_lowercase();
    let n = n as f64;
    if n < 1.0 {
        return None;
    }
    if name.contains("allreduce") {
        Some(2.0 * (n - 1.0) / n)
    } else if name.contains("reducescatter")
        || name.contains("allgather")
        || name.contains("alltoall")
    {
        Some((n - 1.0) / n)
    } else if name.contains("broadcast")
        || name.contains("reduce")
        || name.contains("sendrecv")
        || name.contains("send")
        || name.contains("recv")
    {
        Some(1.0)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_recognised() {
        assert_eq!(stream_device("CUDA-D0.S7"), Some(0));
        assert_eq!(stream_device("CUDA-D12.S13"), Some(12));
        assert_eq!(stream_device("main (4242)"), None);
        assert_eq!(stream_device("GPU0 metrics"), None);
        assert_eq!(metrics_device("GPU3 metrics"), Some(3));
        assert_eq!(metrics_device("Metrics GPU1"), Some(1));
        assert_eq!(metrics_device("GPU metrics"), None);
    }

    #[test]
    fn range_labels_match_their_bare_name() {
        assert!(label_is("iteration", "iteration"));
        assert!(label_is("MyDomain: step", "step"));
        assert!(label_is(":train_step", "train_step"));
        assert!(!label_is("stepper", "step"));
        assert_eq!(bare("a: b"), "b");
        assert_eq!(bare("std::vector"), "std::vector");
        assert!(is_nvtx_type(9600) && is_nvtx_type(9700) && is_nvtx_type(9004));
        assert!(!is_nvtx_type(9650) && !is_nvtx_type(63_000_000));
    }

    #[test]
    fn bus_bandwidth_factors_follow_nccl_tests() {
        assert_eq!(bus_factor("AllReduce", 4), Some(1.5));
        assert_eq!(bus_factor("ncclDevKernel_AllGather_RING_LL", 4), Some(0.75));
        assert_eq!(bus_factor("Broadcast", 8), Some(1.0));
        assert_eq!(bus_factor("SendRecv", 2), Some(1.0));
        assert_eq!(bus_factor("Mystery", 2), None);
        assert!(is_size_label("NCCL message size (bytes)"));
        assert!(is_size_label("NCCL Message size [bytes]"));
        assert!(!is_size_label("NCCL NCCL communicator ID"));
    }
}
