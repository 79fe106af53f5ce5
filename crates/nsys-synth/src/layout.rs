//! CUDA contexts and streams of a process, numbered the way CUPTI numbers them.

use crate::SynthProcess;

/// The CUDA runtime creates seven streams with each primary context; real single-device
/// exports number them 6..=12, with the NULL stream second (7). Created streams follow.
const RUNTIME_STREAMS_PER_CONTEXT: i64 = 7;
const FIRST_STREAM_ID: i64 = 6;

/// `flag` (ENUM_CUPTI_STREAM_TYPE) and `priority` of the runtime's streams, in creation order.
/// Priority -5 is stored as the unsigned 32-bit 4294967291, as in real exports.
const RUNTIME_STREAM_TRAITS: [(i64, i64); 7] = [
    (1, 0),
    (3, 0),
    (2, 0),
    (2, 0),
    (2, 0),
    (2, 0),
    (1, 4_294_967_291),
];

/// `flag` of a stream created with `cudaStreamCreate`: "default".
const CREATED_STREAM_FLAG: i64 = 1;

pub(crate) struct ContextLayout {
    pub device_id: u32,
    pub context_id: i64,
    first_runtime_stream: i64,
    created_streams: Vec<i64>,
}

impl ContextLayout {
    pub(crate) fn null_stream(&self) -> i64 {
        self.first_runtime_stream + 1
    }

    /// Streams that carry the process's work on this device: the NULL stream, then created ones.
    pub(crate) fn work_streams(&self) -> impl Iterator<Item = i64> + '_ {
        std::iter::once(self.null_stream()).chain(self.created_streams.iter().copied())
    }

    /// Every stream of the context as (streamId, priority, flag), for TARGET_INFO_CUDA_STREAM.
    pub(crate) fn all_streams(&self) -> impl Iterator<Item = (i64, i64, i64)> + '_ {
        let runtime = (self.first_runtime_stream..)
            .zip(RUNTIME_STREAM_TRAITS)
            .map(|(id, (flag, priority))| (id, priority, flag));
        let created = self
            .created_streams
            .iter()
            .map(|&id| (id, 0, CREATED_STREAM_FLAG));
        runtime.chain(created)
    }
}

/// One primary context per device the process uses, numbered from 1 in device order.
/// `streams_per_device` counts the streams that carry work, the NULL stream included.
pub(crate) fn contexts(process: &SynthProcess) -> Vec<ContextLayout> {
    let created_per_context = i64::from(process.streams_per_device.max(1)) - 1;
    let mut next_stream = FIRST_STREAM_ID;
    process
        .devices
        .iter()
        .zip(1..)
        .map(|(&device_id, context_id)| {
            let first_runtime_stream = next_stream;
            let first_created = first_runtime_stream + RUNTIME_STREAMS_PER_CONTEXT;
            next_stream = first_created + created_per_context;
            ContextLayout {
                device_id,
                context_id,
                first_runtime_stream,
                created_streams: (first_created..next_stream).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::contexts;
    use crate::{SchemaVersion, SynthSpec};

    #[test]
    fn single_device_layout_matches_real_exports() {
        let spec = SynthSpec::small(SchemaVersion::V3_24);
        let layout = contexts(&spec.processes[0]);
        assert_eq!(layout.len(), 1);
        assert_eq!(layout[0].null_stream(), 7);
        assert_eq!(layout[0].work_streams().collect::<Vec<_>>(), [7, 13]);
        assert_eq!(layout[0].all_streams().count(), 8);
    }
}
