//! The event numbering of the traces nsys2prv-rs writes (BSC nsys2prv's, which it
//! keeps): the type numbers, values and communication tags that the translation
//! (`nsys-semantics`) writes and the `report` reads back, and how an NVTX range is
//! named on the command line (`NAME[#N]`). One place for both sides, with no
//! dependencies, so that reading a trace needs none of the translation's crates.

#![forbid(unsafe_code)]

use std::ops::Range;

// --- CUDA ------------------------------------------------------------------------

/// A CUDA API call, valued by function name.
pub const CUDA_API: u32 = 63_000_000;
/// On API calls and the GPU operations they launched.
pub const CORRELATION_ID: u32 = 9200;
/// A memory operation on a GPU stream (copy or set), valued by kind.
pub const CUDA_MEMORY_OP: u32 = 63_000_001;
/// Its size in bytes, on the operation's begin line.
pub const CUDA_MEMORY_SIZE: u32 = 63_000_002;
/// A compute kernel on a GPU stream, valued by name.
pub const CUDA_KERNEL: u32 = 63_000_006;
/// An NCCL kernel on a GPU stream, valued by name.
pub const NCCL_KERNEL: u32 = 63_000_007;
/// Kind of a host-side CUDA synchronization (event, stream, context). Not 9300,
/// which nsys2prv reserves for MPI, nor 9301-9305, its CUDA events (0.6).
pub const CUDA_SYNC: u32 = 9350;

/// A CUDA event operation, a point valued by kind; on a GPU stream row,
/// [`CUDA_EVENT_STREAM_WAIT`] marks a `cudaStreamWaitEvent` on that stream (at the
/// call's end): what the stream runs next waits for the event.
pub const CUDA_EVENT_OP: u32 = 9301;
pub const CUDA_EVENT_STREAM_WAIT: i64 = 3;
/// A host function (`cudaLaunchHostFunc`, graph host node) on a GPU stream: the
/// stream waits for the CPU meanwhile.
pub const CUDA_HOST_FUNCTION: u32 = 63_000_110;
/// On a GPU stream row: the kernels launched on the stream (their launch call
/// begun) that have not started yet; a level, written at each change.
pub const LAUNCH_QUEUE_DEPTH: u32 = 9210;
/// With a kernel (its begin, 0 at its end): ns from the begin of the API call
/// that launched it to the kernel's begin.
pub const LAUNCH_LATENCY: u32 = 9211;
/// On a GPU stream row: why the GPU (every stream of the device) is idle, a level
/// written at each piece of an idle interval of the GPU, on the row of the
/// operation that ends the interval: one of the `GPU_IDLE_*` values at the
/// piece's begin, 0 where the interval ends. Split by [`split_idle_gap`], as the
/// report splits it.
pub const GPU_IDLE_CAUSE: u32 = 9360;
/// The operation that ends the gap had not been launched yet: the CPU was late.
pub const GPU_IDLE_HOST_BOUND: i64 = 1;
/// Launched, and its stream waited (a `cudaStreamWaitEvent`, a host function).
pub const GPU_IDLE_DEPENDENCY: i64 = 2;
/// Launched, with no wait the trace shows; or not known to be launched.
pub const GPU_IDLE_OTHER: i64 = 3;

/// Splits a GPU's idle interval `[begin, end)`, ended by an operation launched by
/// a call that began at `launch_call_begin` (`None`: no launch known) on a stream
/// that waited (`waited`), into `(GPU_IDLE_* value, from, to)` pieces in time
/// order, empty ones left out: host-bound until the launch (clipped to the
/// interval), then dependency/sync if the stream waited, else other. The one
/// definition the translation writes and the report computes.
pub fn split_idle_gap<T: Copy + Ord>(
    begin: T,
    end: T,
    launch_call_begin: Option<T>,
    waited: bool,
) -> impl Iterator<Item = (i64, T, T)> {
    let after_launch = if waited {
        GPU_IDLE_DEPENDENCY
    } else {
        GPU_IDLE_OTHER
    };
    let pieces = match launch_call_begin {
        None => [(GPU_IDLE_OTHER, begin, end), (GPU_IDLE_OTHER, end, end)],
        Some(call) => {
            let launched = call.clamp(begin, end);
            [
                (GPU_IDLE_HOST_BOUND, begin, launched),
                (after_launch, launched, end),
            ]
        }
    };
    pieces.into_iter().filter(|p| p.1 < p.2)
}

/// Communication tags of BSC nsys2prv: launch arrows to kernels (and graphs, host
/// functions), and to memory operations.
pub const TAG_LAUNCH: i64 = 55_001;
pub const TAG_MEMORY: i64 = 55_002;
/// Our own: a CUDA event record to the waits on it, a host function's GPU side
/// to its callback.
pub const TAG_EVENT_WAIT: i64 = 55_003;
pub const TAG_HOST_CALLBACK: i64 = 55_004;
/// Every tag of a CUDA line; any other communication is an MPI message (views of
/// MPI messages leave these out).
pub const CUDA_TAGS: [i64; 4] = [TAG_LAUNCH, TAG_MEMORY, TAG_EVENT_WAIT, TAG_HOST_CALLBACK];
/// An NCCL point-to-point transfer (`ncclSend` to `ncclRecv`) from the sending GPU
/// stream row to the receiving one. Not an MPI message: the views of MPI messages
/// written for a trace that has it leave it out too.
pub const TAG_NCCL_P2P: i64 = 55_005;

// --- GPU metrics -----------------------------------------------------------------

/// GPU metric types: 9400–9449 the built-in names, 9450–9499 other names by hash.
pub const GPU_METRICS: Range<u32> = 9400..9500;

// --- NCCL ------------------------------------------------------------------------

/// Ranges of the NVTX `NCCL` domain, and their payload types after it.
pub const NCCL_REGIONS: u32 = 9500;
pub const NCCL_MESSAGE_SIZE: u32 = 9501;
pub const NCCL_COMMUNICATOR: u32 = 9505;
/// The collective an NCCL kernel runs, on the kernel's begin line.
pub const NCCL_KERNEL_COLLECTIVE: u32 = 9520;
/// On an NCCL collective kernel that started before the last rank's kernel of the
/// same collective instance: the rank it waited for (value: a name, `rank N`), from
/// its start until that rank's kernel started.
pub const NCCL_WAITED_FOR_RANK: u32 = 9530;
/// Over the same stretch: how long it waited (ns).
pub const NCCL_WAIT_TIME: u32 = 9531;

// --- MPI -------------------------------------------------------------------------

/// Extrae's MPI call types, one per class of call (point-to-point, collective,
/// other, one-sided, I/O), valued by call; 0 ends any call.
pub const MPI_POINT_TO_POINT: u32 = 50_000_001;
pub const MPI_COLLECTIVE: u32 = 50_000_002;
pub const MPI_OTHER: u32 = 50_000_003;
pub const MPI_ONE_SIDED: u32 = 50_000_004;
pub const MPI_IO: u32 = 50_000_005;
/// `MPI_GLOBAL_OP_SENDSIZE` (`MPI_INIT_EV + 100000`): bytes sent, on a call's
/// begin line.
pub const MPI_SEND_SIZE_IN_COLLECTIVE: u32 = 50_100_001;

/// Whether `ty` is one of Extrae's MPI call types.
pub fn is_mpi_call_type(ty: u32) -> bool {
    (MPI_POINT_TO_POINT..=MPI_IO).contains(&ty)
}

// --- OS runtime ------------------------------------------------------------------

/// OS runtime call, valued by function name (BSC nsys2prv 0.6).
pub const OSRT_CALL: u32 = 66_400_000;

// --- NVTX ------------------------------------------------------------------------

/// Push/pop ranges of NVTX's default domain; each other domain has a block of
/// types starting at a multiple of [`NVTX_DOMAIN_STRIDE`] above it.
pub const NVTX_DEFAULT_DOMAIN: u32 = 9600;
pub const NVTX_DOMAIN_STRIDE: u32 = 100;
/// Where a configured domain's block may start (a multiple of 100): the hashed
/// blocks' range and above, up to here (Extrae's OMPT types at 60000 excluded).
pub const NVTX_CONFIGURED_DOMAIN_TYPES: Range<u32> = NVTX_DEFAULT_DOMAIN..1_000_000;
/// Start/end ranges, one type per lane of overlapping ranges.
pub const NVTX_START_END_FIRST_LANE: u32 = 9004;
pub const NVTX_START_END_LANES: u32 = 96;
/// Extrae's OpenMP types (60000-60019) and ours beside them (60100-60103): no
/// domain block.
pub const OPENMP_TYPES: Range<u32> = 60_000..60_200;

/// Whether `ty` holds NVTX ranges: push/pop ranges of any domain (hashed or
/// configured blocks: multiples of 100 from 9600 up to 1,000,000 but the
/// OpenMP types' 60000-60199), start/end lanes.
pub fn is_nvtx_range_type(ty: u32) -> bool {
    (NVTX_CONFIGURED_DOMAIN_TYPES.contains(&ty)
        && ty.is_multiple_of(NVTX_DOMAIN_STRIDE)
        && !OPENMP_TYPES.contains(&ty))
        || (NVTX_START_END_FIRST_LANE..NVTX_START_END_FIRST_LANE + NVTX_START_END_LANES)
            .contains(&ty)
}

/// `--nvtx-range NAME[#N]`: the ranges of a name, or the N-th of every thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvtxRangeSpec {
    pub name: String,
    /// 1-based occurrence per thread; `None`: all of them.
    pub occurrence: Option<usize>,
}

impl std::str::FromStr for NvtxRangeSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, occurrence) = match text.rsplit_once('#') {
            Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("'{text}': occurrence out of range"))?;
                if n == 0 {
                    return Err(format!("'{text}': occurrences count from 1"));
                }
                (name, Some(n))
            }
            _ => (text, None),
        };
        if name.is_empty() {
            return Err(format!(
                "'{text}': give the range's name, as NAME or NAME#N"
            ));
        }
        Ok(NvtxRangeSpec {
            name: name.to_string(),
            occurrence,
        })
    }
}

impl std::fmt::Display for NvtxRangeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.occurrence {
            Some(n) => write!(f, "{}#{n}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `--ranks LIST`: the MPI ranks a conversion keeps. `LIST` is items separated by
/// commas, each one of
///
/// * `N`: rank N;
/// * `A-B`: ranks A to B, both included (`A <= B`);
/// * `START:END[:STEP]`: as a Python slice of the ranks, `START`, `START+STEP`,
///   … below `END` (excluded); `START` is 0 and `STEP` 1 when left out, no
///   `END` means no limit (`::64`: 0, 64, 128, …; `8:`: 8 and up).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSelection {
    items: Vec<RankItem>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RankItem {
    /// `A-B` (or `N`: `N-N`), both included.
    Span { first: u32, last: u32 },
    /// `START:END:STEP`, `END` excluded.
    Slice {
        start: u32,
        end: Option<u32>,
        step: u32,
    },
}

impl RankSelection {
    pub fn contains(&self, rank: u32) -> bool {
        self.items.iter().any(|item| match *item {
            RankItem::Span { first, last } => (first..=last).contains(&rank),
            RankItem::Slice { start, end, step } => {
                rank >= start && end.is_none_or(|e| rank < e) && (rank - start).is_multiple_of(step)
            }
        })
    }
}

impl std::str::FromStr for RankSelection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = |item: &str, n: &str| -> Result<u32, String> {
            n.trim().parse::<u32>().map_err(|_| {
                format!(
                    "'{item}': '{}' is not a rank (a number from 0 to {})",
                    n.trim(),
                    u32::MAX
                )
            })
        };
        let mut items = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(format!(
                    "'{text}': an empty item (give ranks as N, A-B or START:END:STEP, separated by commas)"
                ));
            }
            let parsed = if item.contains(':') {
                let parts: Vec<&str> = item.split(':').collect();
                if parts.len() > 3 {
                    return Err(format!("'{item}': a slice is START:END or START:END:STEP"));
                }
                let optional = |n: &str| -> Result<Option<u32>, String> {
                    match n.trim() {
                        "" => Ok(None),
                        n => number(item, n).map(Some),
                    }
                };
                let start = optional(parts[0])?.unwrap_or(0);
                let end = optional(parts[1])?;
                let step = match parts.get(2) {
                    Some(s) => optional(s)?.unwrap_or(1),
                    None => 1,
                };
                if step == 0 {
                    return Err(format!("'{item}': the step must be 1 or more"));
                }
                if end.is_some_and(|e| e <= start) {
                    return Err(format!(
                        "'{item}': no rank lies from {start} to before {}",
                        end.unwrap_or_default()
                    ));
                }
                RankItem::Slice { start, end, step }
            } else if let Some((first, last)) = item.split_once('-') {
                let (first, last) = (number(item, first)?, number(item, last)?);
                if first > last {
                    return Err(format!("'{item}': the first rank is above the last"));
                }
                RankItem::Span { first, last }
            } else {
                let n = number(item, item)?;
                RankItem::Span { first: n, last: n }
            };
            items.push(parsed);
        }
        Ok(RankSelection { items })
    }
}

impl std::fmt::Display for RankSelection {
    /// The list in one fixed form (what the trace's metadata and plans record).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match *item {
                RankItem::Span { first, last } if first == last => write!(f, "{first}")?,
                RankItem::Span { first, last } => write!(f, "{first}-{last}")?,
                RankItem::Slice { start, end, step } => {
                    let end = end.map_or(String::new(), |e| e.to_string());
                    match step {
                        1 => write!(f, "{start}:{end}")?,
                        _ => write!(f, "{start}:{end}:{step}")?,
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvtx_range_types_are_domain_blocks_and_start_end_lanes() {
        for ty in [9600, 9700, 59_900, 60_200, 999_900, 9004, 9099] {
            assert!(is_nvtx_range_type(ty), "{ty}");
        }
        // Payload types of a block, OpenMP's types, past the lanes and the blocks.
        for ty in [
            9601, 9650, 60_000, 60_100, 9100, 9003, 1_000_000, 63_000_000,
        ] {
            assert!(!is_nvtx_range_type(ty), "{ty}");
        }
    }

    #[test]
    fn mpi_call_types_are_extraes_five_classes() {
        let classes = [
            MPI_POINT_TO_POINT,
            MPI_COLLECTIVE,
            MPI_OTHER,
            MPI_ONE_SIDED,
            MPI_IO,
        ];
        assert_eq!(
            classes,
            [50_000_001, 50_000_002, 50_000_003, 50_000_004, 50_000_005]
        );
        assert!(classes.iter().all(|ty| is_mpi_call_type(*ty)));
        assert!(!is_mpi_call_type(50_000_000) && !is_mpi_call_type(MPI_SEND_SIZE_IN_COLLECTIVE));
    }

    #[test]
    fn range_specs_read_a_name_and_an_occurrence() {
        let spec: NvtxRangeSpec = "train#3".parse().unwrap();
        assert_eq!((spec.name.as_str(), spec.occurrence), ("train", Some(3)));
        assert_eq!(spec.to_string(), "train#3");
        let spec: NvtxRangeSpec = "a#b".parse().unwrap();
        assert_eq!((spec.name.as_str(), spec.occurrence), ("a#b", None));
        assert!("x#0".parse::<NvtxRangeSpec>().is_err());
        assert!("#2".parse::<NvtxRangeSpec>().is_err());
    }

    #[test]
    fn rank_lists_take_numbers_spans_and_slices() {
        let list: RankSelection = "0-3, 64,128:130,::1000".parse().unwrap();
        let kept: Vec<u32> = (0..3000).filter(|&r| list.contains(r)).collect();
        assert_eq!(kept, [0, 1, 2, 3, 64, 128, 129, 1000, 2000]);
        assert_eq!(list.to_string(), "0-3,64,128:130,0::1000");
        let again: RankSelection = list.to_string().parse().unwrap();
        assert_eq!(again, list);
        let every: RankSelection = "1::2".parse().unwrap();
        assert!(every.contains(1) && every.contains(4_000_001) && !every.contains(2));
        assert!("8:".parse::<RankSelection>().unwrap().contains(u32::MAX));
        for bad in [
            "",
            "1,,2",
            "3-1",
            "a",
            "-1",
            "1-",
            "5:5",
            "::0",
            "1:2:3:4",
            "4294967296",
        ] {
            assert!(bad.parse::<RankSelection>().is_err(), "{bad}");
        }
    }
}
