//! NCCL: its NVTX domain's ranges (type 9500) with their payload fields (9501+), the
//! fields a kernel name encodes (9520+), and the link from a range to the NCCL
//! kernel it launched.
//!
//! Payload fields, in this fixed order (matched by key, case-insensitively, since
//! NCCL's field names vary with its version): 9501 message size (bytes), 9502
//! reduction operation, 9503 root, 9504 data type, 9505 communicator, 9506 peer,
//! 9507 element count.

use paraver_writer::{EventPair, EventTypeInfo, Value, ValueLabels};
use serde_json::Value as Json;

use crate::category::{Category, CategoryInfo};
use crate::context::ReportContext;
use crate::handoff::{NcclCall, NcclCallKind};
use crate::types::interval;
use crate::view::bundled_view;

/// Ranges of the NVTX `NCCL` domain.
pub use nsys2prv_events::{NCCL_MESSAGE_SIZE as MESSAGE_SIZE, NCCL_REGIONS};
pub const REDUCTION_OP: u32 = 9502;
pub const ROOT: u32 = 9503;
pub const DATA_TYPE: u32 = 9504;
pub use nsys2prv_events::NCCL_COMMUNICATOR as COMMUNICATOR;
pub use nsys2prv_events::{NCCL_WAITED_FOR_RANK, NCCL_WAIT_TIME};
pub const PEER: u32 = 9506;
pub const COUNT: u32 = 9507;
pub use nsys2prv_events::NCCL_KERNEL_COLLECTIVE as KERNEL_COLLECTIVE;
pub const KERNEL_ALGORITHM: u32 = 9521;
pub const KERNEL_PROTOCOL: u32 = 9522;
pub const KERNEL_DATA_TYPE: u32 = 9523;
pub const KERNEL_REDUCTION_OP: u32 = 9524;

/// Name of the NVTX domain NCCL registers.
pub const DOMAIN: &str = "NCCL";

pub const NCCL: Category = Category::named("nccl");

/// No pass of its own: the NVTX pass reads its ranges, the kernel pass its kernels'
/// names, and the API pass puts a range's payload on the kernel it launched.
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: NCCL,
    aliases: &[],
    bsc_names: &["nccl"],
    groups: &[],
    tables: &["NVTX_EVENTS"],
    table_prefixes: &[],
    bytes_per_row: 150,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/nccl_regions.cfg",
            "Which NCCL calls (NVTX NCCL domain) does each thread make, and when?",
        ),
        bundled_view!(
            "views/nccl_collective.cfg",
            "Which collective does each NCCL kernel run?",
        ),
        bundled_view!(
            "views/nccl_message_size.cfg",
            "How many bytes does each NCCL call move?",
        ),
        bundled_view!(
            "views/nccl_reduction_op.cfg",
            "Which reduction does each NCCL call apply?",
        ),
        bundled_view!(
            "views/nccl_kernels.cfg",
            "Which NCCL kernel runs on each GPU stream, and when?",
        ),
        bundled_view!(
            "views/nccl_transfers.cfg",
            "Which GPU stream sends NCCL point-to-point data to which, when, and how much?",
        ),
        bundled_view!(
            "views/nccl_collective_wait.cfg",
            "How long does each NCCL collective kernel wait for the last rank, and for which one?",
        ),
        bundled_view!(
            "analysis/nccl_calls.cfg",
            "How much time does each thread spend in each NCCL call?",
        ),
        bundled_view!(
            "analysis/nccl_kernels_profile.cfg",
            "How much GPU time does each NCCL kernel take, per stream?",
        )
        .on_gpu_streams(),
    ],
    names_ranges: Some(|ty| ty == NCCL_REGIONS),
    pass: None,
};

fn event_types() -> Vec<EventTypeInfo> {
    use ValueLabels::{Bytes, Names, Numeric};
    vec![
        interval(NCCL_REGIONS, "NCCL regions", Names),
        interval(MESSAGE_SIZE, "NCCL message size (bytes)", Bytes),
        interval(REDUCTION_OP, "NCCL reduction operation", Names),
        interval(ROOT, "NCCL root", Numeric),
        interval(DATA_TYPE, "NCCL data type", Names),
        interval(COMMUNICATOR, "NCCL communicator", Names),
        interval(PEER, "NCCL peer", Numeric),
        interval(COUNT, "NCCL element count", Numeric),
        interval(KERNEL_COLLECTIVE, "NCCL kernel collective", Names),
        interval(KERNEL_ALGORITHM, "NCCL kernel algorithm", Names),
        interval(KERNEL_PROTOCOL, "NCCL kernel protocol", Names),
        interval(KERNEL_DATA_TYPE, "NCCL kernel data type", Names),
        interval(
            KERNEL_REDUCTION_OP,
            "NCCL kernel reduction operation",
            Names,
        ),
        interval(
            NCCL_WAITED_FOR_RANK,
            "NCCL collective waited for rank",
            Names,
        ),
        interval(NCCL_WAIT_TIME, "NCCL collective wait time (ns)", Numeric),
    ]
}

/// The payload field type a JSON key maps to, and whether its values are names.
fn field_of(key: &str) -> Option<(u32, bool)> {
    let k = key.to_ascii_lowercase();
    let found = if k.contains("size") || k.contains("bytes") {
        (MESSAGE_SIZE, false)
    } else if k.contains("reduc") || k == "op" || k.contains("operation") {
        (REDUCTION_OP, true)
    } else if k.contains("root") {
        (ROOT, false)
    } else if k.contains("type") {
        (DATA_TYPE, true)
    } else if k.contains("comm") {
        (COMMUNICATOR, true)
    } else if k.contains("peer") {
        (PEER, false)
    } else if k.contains("count") {
        (COUNT, false)
    } else {
        return None;
    };
    Some(found)
}

/// The payload pairs of one NCCL range from its JSON text (unknown keys are
/// noted for the caller to count, not translated).
pub(crate) fn payload_pairs(ctx: &mut ReportContext, json: &str) -> (Vec<EventPair>, PayloadNotes) {
    let mut notes = PayloadNotes::default();
    let Ok(Json::Object(fields)) = serde_json::from_str::<Json>(json) else {
        notes.not_understood = true;
        return (Vec::new(), notes);
    };
    let mut pairs: Vec<EventPair> = Vec::new();
    for (key, value) in flatten(&fields) {
        let Some((ty, is_name)) = field_of(&key) else {
            notes.fields_not_translated += 1;
            continue;
        };
        if pairs.iter().any(|p| p.ty == ty) {
            continue;
        }
        let pair = if is_name {
            let text = match value {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(EventPair::name(ty, ctx.run.names.intern(ty, &text)))
        } else {
            json_integer(value).map(|v| EventPair::raw(ty, v))
        };
        pairs.extend(pair);
    }
    pairs.sort_by_key(|p| p.ty);
    (pairs, notes)
}

/// The call an NCCL range describes, from its name (`ncclSend`, `ncclRecv`,
/// `ncclAllReduce`, ...) and its translated payload: `None` without a communicator,
/// or for a send or receive without a peer.
pub(crate) fn call_of(ctx: &ReportContext, name: &str, payload: &[EventPair]) -> Option<NcclCall> {
    let find = |ty| payload.iter().find(|p| p.ty == ty).map(EventPair::value);
    let comm = match find(COMMUNICATOR)? {
        Value::Name(handle) => {
            communicator_id(ctx.run.names.names_of(COMMUNICATOR).get(handle as usize)?)
        }
        Value::Raw(v) => v,
    };
    let raw = |ty| match find(ty) {
        Some(Value::Raw(v)) => Some(v),
        _ => None,
    };
    let kind = match name {
        "ncclSend" => NcclCallKind::Send { peer: raw(PEER)? },
        "ncclRecv" => NcclCallKind::Recv { peer: raw(PEER)? },
        other => NcclCallKind::Collective {
            name: other.to_string(),
        },
    };
    Some(NcclCall {
        kind,
        comm,
        bytes: raw(MESSAGE_SIZE).unwrap_or(0),
    })
}

/// A communicator's id from its payload text: the number NCCL writes (decimal or
/// hex), else the text's stable hash, so that equal texts give equal ids.
fn communicator_id(text: &str) -> i64 {
    json_integer(&Json::String(text.to_string()))
        .unwrap_or_else(|| paraver_writer::names::stable_hash(text) as i64)
}

/// What translating one payload left out, counted per range that has the payload.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PayloadNotes {
    not_understood: bool,
    fields_not_translated: u64,
}

impl PayloadNotes {
    pub fn count(&self, ctx: &mut ReportContext) {
        if self.not_understood {
            ctx.count("NCCL payloads not understood", 1);
        }
        if self.fields_not_translated > 0 {
            ctx.count(
                "NCCL payload fields not translated",
                self.fields_not_translated,
            );
        }
    }
}

/// Key/value leaves of a JSON object, one level of nesting flattened.
fn flatten(fields: &serde_json::Map<String, Json>) -> Vec<(String, &Json)> {
    let mut out = Vec::new();
    for (key, value) in fields {
        match value {
            Json::Object(inner) => out.extend(inner.iter().map(|(k, v)| (k.clone(), v))),
            _ => out.push((key.clone(), value)),
        }
    }
    out
}

fn json_integer(value: &Json) -> Option<i64> {
    match value {
        Json::Number(n) => n
            .as_i64()
            // Paraver reads values as signed 64-bit: above 2^63-1 is clamped, not wrapped.
            .or_else(|| n.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
            .or_else(|| n.as_f64().map(|f| f.round() as i64)),
        Json::String(s) => {
            let s = s.trim();
            match s.strip_prefix("0x") {
                Some(hex) => i64::from_str_radix(hex, 16).ok(),
                None => s.parse().ok(),
            }
        }
        Json::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

const ALGORITHMS: &[&str] = &["RING", "TREE", "COLLNET", "NVLS", "PAT", "DIRECT", "CHAIN"];
const PROTOCOLS: &[&str] = &["LL", "LL128", "SIMPLE"];
const OPS: &[&str] = &[
    "Sum",
    "Prod",
    "Max",
    "Min",
    "Avg",
    "PreMulSum",
    "SumPostDiv",
];
const DATA_TYPES: &[&str] = &[
    "i8", "u8", "i32", "u32", "i64", "u64", "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64",
    "int8_t", "uint8_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "half", "float", "double",
    "bfloat16", "int", "char",
];

/// Fields an NCCL kernel name encodes: `ncclDevKernel_AllReduce_Sum_f32_RING_LL`
/// (NCCL ≥ 2.19) or `ncclKernel_AllReduce_RING_LL_Sum_float` (older).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelFields {
    pub collective: Option<String>,
    pub algorithm: Option<String>,
    pub protocol: Option<String>,
    pub data_type: Option<String>,
    pub op: Option<String>,
}

pub fn parse_kernel_name(name: &str) -> KernelFields {
    let base = name
        .split(['(', '<', ' '])
        .find(|s| s.contains("nccl"))
        .unwrap_or(name);
    let mut tokens = base.split('_').skip(1);
    let mut fields = KernelFields {
        collective: tokens.next().filter(|t| !t.is_empty()).map(str::to_string),
        ..Default::default()
    };
    let mut algorithm: Vec<&str> = Vec::new();
    for token in tokens {
        if ALGORITHMS.contains(&token) {
            algorithm.push(token);
        } else if PROTOCOLS.contains(&token) {
            fields.protocol = Some(token.to_string());
        } else if OPS.contains(&token) {
            fields.op = Some(token.to_string());
        } else if DATA_TYPES.contains(&token) {
            fields.data_type = Some(token.to_string());
        }
    }
    if !algorithm.is_empty() {
        fields.algorithm = Some(algorithm.join("_"));
    }
    fields
}

/// The 9520+ pairs of an NCCL kernel, interned in the run.
pub(crate) fn kernel_pairs(ctx: &mut ReportContext, name: &str) -> Vec<EventPair> {
    let f = parse_kernel_name(name);
    [
        (KERNEL_COLLECTIVE, f.collective),
        (KERNEL_ALGORITHM, f.algorithm),
        (KERNEL_PROTOCOL, f.protocol),
        (KERNEL_DATA_TYPE, f.data_type),
        (KERNEL_REDUCTION_OP, f.op),
    ]
    .into_iter()
    .filter_map(|(ty, v)| v.map(|v| EventPair::name(ty, ctx.run.names.intern(ty, &v))))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_of_both_nccl_generations() {
        let new = parse_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
        assert_eq!(new.collective.as_deref(), Some("AllReduce"));
        assert_eq!(new.op.as_deref(), Some("Sum"));
        assert_eq!(new.data_type.as_deref(), Some("f32"));
        assert_eq!(new.algorithm.as_deref(), Some("RING"));
        assert_eq!(new.protocol.as_deref(), Some("LL"));
        let old = parse_kernel_name("ncclKernel_AllReduce_COLLNET_DIRECT_LL128_Prod_float");
        assert_eq!(old.algorithm.as_deref(), Some("COLLNET_DIRECT"));
        assert_eq!(old.protocol.as_deref(), Some("LL128"));
        assert_eq!(old.op.as_deref(), Some("Prod"));
        assert_eq!(old.data_type.as_deref(), Some("float"));
        let p2p = parse_kernel_name("ncclDevKernel_SendRecv");
        assert_eq!(p2p.collective.as_deref(), Some("SendRecv"));
        assert_eq!(p2p.algorithm, None);
    }

    #[test]
    fn payload_keys_map_to_fixed_types() {
        assert_eq!(
            field_of("Message size [bytes]"),
            Some((MESSAGE_SIZE, false))
        );
        assert_eq!(field_of("Reduction operation"), Some((REDUCTION_OP, true)));
        assert_eq!(field_of("Root"), Some((ROOT, false)));
        assert_eq!(field_of("Data type"), Some((DATA_TYPE, true)));
        assert_eq!(field_of("NCCL communicator ID"), Some((COMMUNICATOR, true)));
        assert_eq!(field_of("something else"), None);
        assert_eq!(json_integer(&Json::String("0x10".into())), Some(16));
    }
}
