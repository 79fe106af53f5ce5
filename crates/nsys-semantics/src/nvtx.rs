//! NVTX: push/pop ranges (nested per thread and domain), start/end ranges (which
//! may overlap: each gets a lane of its own), marks, domains, categories, payloads
//! and thread names. The NCCL domain's ranges go to [`crate::nccl`]'s types.
//!
//! Types: the default domain uses 9600-9606; a domain BSC nsys2prv 0.6's
//! configuration lists (`--config`; by default `neSmiK`) the block at its
//! `event_type`; every other domain a block `9600 + 100·k` keyed by a hash of
//! its name (the same in every trace, the next free one if a configured block
//! holds it), with +0 ranges, +1 integer payload, +2 floating-point payload
//! (×1000, or rounded onto +1), +3 category, +4 marks, +5/+6 magnitudes of
//! negative payloads (BSC's pertalde rejects negative values). Start/end ranges
//! use 9004 for the first lane and 9005.. for overlapping ones, unless the
//! configuration projects a domain's onto its push/pop type.

use std::rc::Rc;

use nsys_reader::ids::{pid_of, tid_of};
use nsys_reader::nvtx::{kind, NvtxEvent, Payload, NVTX_EVENTS};
use nsys_reader::ReadError;
use paraver_writer::names::stable_hash;
use paraver_writer::{EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::handoff::{NcclRange, NcclRanges};
use crate::mpi::MPI;
use crate::nccl::{self, NCCL, NCCL_REGIONS};
use crate::nvtx_config::{FloatStrategy, NvtxConfig};
use crate::types::{interval, point, state};
use crate::view::bundled_view;
use crate::view::{between, TypeFamily};

pub use nsys2prv_events::NVTX_DEFAULT_DOMAIN as DEFAULT_DOMAIN;
use nsys2prv_events::NVTX_DOMAIN_STRIDE as DOMAIN_STRIDE;
/// Domain blocks 9700..=59900: below Extrae's OMPT types (60000-60019).
const DOMAIN_SLOTS: u64 = 503;
pub use nsys2prv_events::NVTX_START_END_FIRST_LANE as START_END_FIRST_LANE;
use nsys2prv_events::NVTX_START_END_LANES as START_END_LANES;
const PAYLOAD_INT: u32 = 1;
const PAYLOAD_FLOAT: u32 = 2;
const RANGE_CATEGORY: u32 = 3;
const MARK: u32 = 4;
/// Negative payloads, as magnitudes: BSC's pertalde rejects negative event values.
const NEGATIVE_PAYLOAD_INT: u32 = 5;
const NEGATIVE_PAYLOAD_FLOAT: u32 = 6;
/// Types a domain's block takes: ranges, payloads, category, marks, negatives.
pub const DOMAIN_BLOCK_WIDTH: u32 = NEGATIVE_PAYLOAD_FLOAT + 1;
pub use nsys2prv_events::NVTX_CONFIGURED_DOMAIN_TYPES as CONFIGURED_DOMAIN_TYPES;

pub const NVTX: Category = Category::named("nvtx");

/// One pass over `NVTX_EVENTS` serves NVTX, NCCL (its domain's ranges) and
/// 2022-era MPI (the `MPI` domain's ranges).
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: NVTX,
    aliases: &[],
    bsc_names: &["nvtx_pushpop_trace", "nvtx_startend_trace"],
    groups: &[],
    tables: &["NVTX_EVENTS"],
    table_prefixes: &[],
    bytes_per_row: 72,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: COMMUNICATION_STATES,
    views: &[
        bundled_view!(
            "views/nvtx_ranges.cfg",
            "Which NVTX ranges of the default domain is each thread in (nested)?",
        ),
        bundled_view!(
            "views/nvtx_start_end.cfg",
            "Which NVTX start/end ranges are open on each thread?",
        ),
        bundled_view!("views/nvtx_marks.cfg", "Where and when are the NVTX marks?"),
        bundled_view!(
            "views/nvtx_payloads.cfg",
            "Which integer payload does each NVTX range of the default domain carry?",
        ),
        bundled_view!(
            "views/nvtx_payloads_float.cfg",
            "Which floating-point payload does each NVTX range of the default domain carry?",
        ),
        bundled_view!(
            "analysis/nvtx_profile.cfg",
            "How much time does each thread spend in each NVTX range of the default domain?",
        ),
        bundled_view!(
            "templates/nvtx_domain_ranges.cfg",
            "Which ranges of the NVTX domain {name} is each thread in (nested)?",
            TypeFamily {
                dir: "views/nvtx_domains",
                name_of: domain_of_ranges,
                numbered: false,
            },
        ),
        bundled_view!(
            "templates/nvtx_domain_profile.cfg",
            "How much time does each thread spend in each range of the NVTX domain {name}?",
            TypeFamily {
                dir: "analysis/nvtx_domains",
                name_of: domain_of_ranges,
                numbered: false,
            },
        ),
        bundled_view!(
            "templates/nvtx_domain_payloads.cfg",
            "Which integer payload does each range of the NVTX domain {name} carry?",
            TypeFamily {
                dir: "views/nvtx_domain_payloads",
                name_of: domain_of_payloads,
                numbered: false,
            },
        ),
        bundled_view!(
            "templates/nvtx_domain_payloads_float.cfg",
            "Which floating-point payload does each range of the NVTX domain {name} carry?",
            TypeFamily {
                dir: "views/nvtx_domain_payloads_float",
                name_of: domain_of_float_payloads,
                numbered: false,
            },
        ),
    ],
    names_ranges: Some(is_range_type),
    pass: Some(Pass {
        stage: Stage::CallContext,
        run: pass,
        also_for: &[NCCL, MPI],
    }),
};

/// The domain of a named domain's push/pop range type, from its label.
fn domain_of_ranges(ty: u32, label: &str) -> Option<String> {
    domain_of(ty, 0, label, "NVTX push/pop ranges (domain ", ")")
}

fn domain_of_payloads(ty: u32, label: &str) -> Option<String> {
    domain_of(ty, PAYLOAD_INT, label, "NVTX payload (domain ", ")")
}

fn domain_of_float_payloads(ty: u32, label: &str) -> Option<String> {
    let prefix = "NVTX payload x1000 (floating point, domain ";
    domain_of(ty, PAYLOAD_FLOAT, label, prefix, ")")
}

/// The domain named in `label` when `ty` is type `offset` of a named domain's
/// block (hashed or configured).
fn domain_of(ty: u32, offset: u32, label: &str, prefix: &str, suffix: &str) -> Option<String> {
    let named = DEFAULT_DOMAIN + DOMAIN_STRIDE..CONFIGURED_DOMAIN_TYPES.end;
    (named.contains(&ty) && ty % DOMAIN_STRIDE == offset).then(|| between(label, prefix, suffix))?
}

pub use nsys2prv_events::is_nvtx_range_type as is_range_type;

/// States of the communication libraries' ranges (MPI, UCX, SHMEM), see
/// [`communication_state`].
const COMMUNICATION_STATES: &[u32] = &[
    state::WAITING_MESSAGE,
    state::BLOCKING_SEND,
    state::SYNCHRONIZATION,
    state::TEST_PROBE,
    state::WAIT,
    state::IMMEDIATE_SEND,
    state::IMMEDIATE_RECEIVE,
    state::IO,
    state::GROUP_COMMUNICATION,
    state::OTHERS,
    state::SEND_RECEIVE,
    state::MEMORY_TRANSFER,
    state::ATOMIC_MEMORY_OPERATION,
    state::ONE_SIDED,
];

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let wanted = Wanted {
        nvtx: ctx.options.wants(NVTX),
        nccl: ctx.options.wants(NCCL),
        mpi: ctx.options.wants(MPI),
    };
    ctx.handoff.nccl_ranges = translate(ctx, wanted)?;
    Ok(())
}

/// The block of types of a domain: the configured one, else the hashed one.
fn domain_base(name: &str, config: &NvtxConfig) -> u32 {
    match config.event_type(name) {
        Some(ty) => ty,
        None if name.is_empty() => DEFAULT_DOMAIN,
        None => hashed_base(name, config),
    }
}

/// The block `9600 + 100·k` of a domain, `k` from a hash of its name (the same
/// in every trace), or the next block no configured domain takes.
fn hashed_base(name: &str, config: &NvtxConfig) -> u32 {
    let first = stable_hash(name) % DOMAIN_SLOTS;
    (0..DOMAIN_SLOTS)
        .map(|i| DEFAULT_DOMAIN + DOMAIN_STRIDE * (1 + ((first + i) % DOMAIN_SLOTS) as u32))
        .find(|&base| {
            let block = base..base + DOMAIN_BLOCK_WIDTH;
            !config
                .blocks(DOMAIN_BLOCK_WIDTH)
                .any(|(taken, _)| taken.start < block.end && block.start < taken.end)
        })
        .unwrap_or(DEFAULT_DOMAIN + DOMAIN_STRIDE * (1 + first as u32))
}

fn domain_types(base: u32, domain: &str) -> Vec<EventTypeInfo> {
    let label = if domain.is_empty() {
        "default domain".to_string()
    } else {
        format!("domain {domain}")
    };
    // Scaled in the label rather than with PRECISION, which BSC's pertalde rejects.
    // Payloads and categories go with their range; marks are instants.
    use ValueLabels::{Names, Numeric};
    vec![
        interval(base, &format!("NVTX push/pop ranges ({label})"), Names),
        interval(
            base + PAYLOAD_INT,
            &format!("NVTX payload ({label})"),
            Numeric,
        ),
        interval(
            base + PAYLOAD_FLOAT,
            &format!("NVTX payload x1000 (floating point, {label})"),
            Numeric,
        ),
        interval(
            base + RANGE_CATEGORY,
            &format!("NVTX category ({label})"),
            Names,
        ),
        mark_type(base, &label),
        interval(
            base + NEGATIVE_PAYLOAD_INT,
            &format!("NVTX negative payload, magnitude ({label})"),
            Numeric,
        ),
        interval(
            base + NEGATIVE_PAYLOAD_FLOAT,
            &format!("NVTX negative payload x1000, magnitude (floating point, {label})"),
            Numeric,
        ),
    ]
}

/// The type of the marks of the NVTX domain `NCCL`, which a report declares when
/// it has that domain (and so NCCL ranges, types 9500–9507), where BSC's
/// configuration puts that domain by default.
pub(crate) fn nccl_domain_mark_type() -> u32 {
    domain_base(nccl::DOMAIN, &NvtxConfig::default()) + MARK
}

fn mark_type(base: u32, label: &str) -> EventTypeInfo {
    point(
        base + MARK,
        &format!("NVTX marks ({label})"),
        ValueLabels::Names,
    )
}

fn event_types() -> Vec<EventTypeInfo> {
    let mut types = domain_types(DEFAULT_DOMAIN, "");
    types.push(lane_type(0));
    types
}

fn lane_type(lane: u32) -> EventTypeInfo {
    let label = if lane == 0 {
        "NVTX start/end ranges".to_string()
    } else {
        format!("NVTX start/end ranges (lane {})", lane + 1)
    };
    interval(START_END_FIRST_LANE + lane, &label, ValueLabels::Names)
}

/// What a domain is, per (pid, domain id), and what the configuration says of it.
#[derive(Clone, Debug)]
struct Domain {
    name: String,
    base: u32,
    comm_library: bool,
    translate: bool,
    payloads: bool,
    float_strategy: FloatStrategy,
    /// Its start/end ranges go on its push/pop type.
    project: bool,
}

struct Definitions {
    domains: FxHashMap<(u32, i64), Domain>,
    categories: FxHashMap<(u32, i64, i64), String>,
    /// Ranges of a domain that was never created are in the default domain.
    undeclared: Domain,
}

/// A start/end range waiting for its lane.
struct StartEnd {
    thread: LocalThread,
    start: i64,
    end: Option<i64>,
    label: Rc<str>,
}

/// The text of a range or mark, with the `StringIds` id it came from (none for
/// inline text), so that its name handles can be cached by id.
struct RangeText {
    id: Option<i64>,
    text: Rc<str>,
}

/// What an NCCL range's JSON payload (by `jsonTextId`) translates to, with what
/// translating it counted, to count again on every range that has it.
struct NcclPayload {
    pairs: Vec<EventPair>,
    notes: nccl::PayloadNotes,
}

/// Per-id caches of the scan: a string registered once in `StringIds` is read,
/// interned and parsed once per report, not once per row.
#[derive(Default)]
struct TextCache {
    texts: FxHashMap<i64, Rc<str>>,
    /// (event type, string id) → name handle.
    handles: FxHashMap<(u32, i64), u32>,
    payloads: FxHashMap<i64, Rc<NcclPayload>>,
}

pub(crate) struct Wanted {
    pub nvtx: bool,
    pub nccl: bool,
    /// Ranges of the 2022-era `MPI` domain become MPI calls (50000001-05).
    pub mpi: bool,
}

fn translate(ctx: &mut ReportContext, wanted: Wanted) -> Result<NcclRanges, ReadError> {
    let defs = read_definitions(ctx)?;
    let mut pass = RangePass {
        defs: &defs,
        wanted,
        start_ends: Vec::new(),
        unclosed: Vec::new(),
        nccl: NcclRanges::default(),
        last_time: i64::MIN,
        translated: 0,
        cache: TextCache::default(),
        pairs: Vec::new(),
    };
    let export = ctx.export;
    // The most common first: SQLite tests them in this order.
    let kinds = [
        kind::PUSH_POP,
        kind::START_END,
        kind::MARK,
        kind::NVTXT_PUSH_POP,
        kind::NVTXT_START_END,
    ];
    let scan = export.nvtx_events(&kinds, |e| pass.event(ctx, e))?;
    ctx.note_skipped(NVTX_EVENTS, scan.skipped);
    let last = pass.last_time;
    for (thread, start, pairs) in std::mem::take(&mut pass.unclosed) {
        ctx.run.interval(thread, start, last.max(start), &pairs);
    }
    let start_ends = std::mem::take(&mut pass.start_ends);
    place_start_end_ranges(ctx, start_ends, last);
    ctx.count(NVTX_EVENTS, pass.translated);
    let mut nccl = pass.nccl;
    nccl.sort();
    Ok(nccl)
}

/// Domains, categories and thread names: definition rows, read first because
/// ranges refer to them and rows come in no particular order.
fn read_definitions(ctx: &mut ReportContext) -> Result<Definitions, ReadError> {
    let export = ctx.export;
    let mut rows = Vec::new();
    export.nvtx_events(
        &[kind::DOMAIN_CREATE, kind::CATEGORY, kind::THREAD_NAME],
        |e| {
            rows.push(e.clone());
            Ok(())
        },
    )?;
    // The latest name of a thread wins, whatever order the rows come in.
    rows.sort_by_key(|e| e.start);
    let config = &ctx.options.nvtx;
    let mut defs = Definitions {
        domains: FxHashMap::default(),
        categories: FxHashMap::default(),
        undeclared: describe_domain("", config),
    };
    for e in rows {
        let pid = pid_of(e.global_tid);
        let text = match (&e.text, e.text_id) {
            (Some(t), _) => t.clone(),
            (None, Some(id)) => export.string(id)?.unwrap_or_default(),
            (None, None) => String::new(),
        };
        match e.event_type {
            kind::DOMAIN_CREATE => {
                let domain = describe_domain(&text, &ctx.options.nvtx);
                if domain.base == NCCL_REGIONS {
                    // Its ranges have types of their own; its marks, its hashed block's.
                    let base = hashed_base(nccl::DOMAIN, &ctx.options.nvtx);
                    register_types(ctx, vec![mark_type(base, "domain NCCL")]);
                } else if domain.base != DEFAULT_DOMAIN {
                    register_types(ctx, domain_types(domain.base, &domain.name));
                }
                defs.domains.insert((pid, e.domain_id), domain);
            }
            kind::CATEGORY => {
                if let Some(c) = e.category {
                    defs.categories.insert((pid, e.domain_id, c), text);
                }
            }
            _ => {
                if let Some(rank) = crate::ranks::rank_in_thread_name(&text) {
                    ctx.nvtx_ranks.entry(pid).or_insert(rank);
                }
                ctx.nvtx_thread_names
                    .insert((pid, tid_of(e.global_tid)), text);
            }
        }
    }
    Ok(defs)
}

fn describe_domain(name: &str, config: &NvtxConfig) -> Domain {
    let base = if name == nccl::DOMAIN {
        NCCL_REGIONS
    } else {
        domain_base(name, config)
    };
    Domain {
        name: name.to_string(),
        base,
        comm_library: matches!(name, "MPI" | "UCX" | "SHMEM" | "OpenSHMEM" | "NVSHMEM"),
        translate: config.translates(name),
        payloads: config.payloads(name),
        float_strategy: config.float_strategy(name),
        project: config.projects(name),
    }
}

fn register_types(ctx: &mut ReportContext, types: Vec<EventTypeInfo>) {
    for t in types {
        if ctx.extra_types.iter().all(|k| k.ty != t.ty) {
            ctx.extra_types.push(t);
        }
    }
}

/// State of the scan over ranges and marks.
struct RangePass<'d> {
    defs: &'d Definitions,
    wanted: Wanted,
    start_ends: Vec<StartEnd>,
    unclosed: Vec<(LocalThread, i64, Vec<EventPair>)>,
    nccl: NcclRanges,
    last_time: i64,
    translated: u64,
    cache: TextCache,
    /// The pairs of the range being translated (a buffer reused across rows).
    pairs: Vec<EventPair>,
}

impl<'d> RangePass<'d> {
    fn event(&mut self, ctx: &mut ReportContext, e: &NvtxEvent) -> Result<(), ReadError> {
        self.last_time = self.last_time.max(e.start).max(e.end.unwrap_or(e.start));
        let pid = pid_of(e.global_tid);
        let domain = self.domain(pid, e.domain_id);
        let domain = &domain;
        let is_nccl = domain.base == NCCL_REGIONS;
        let as_mpi = domain.name == "MPI" && self.wanted.mpi;
        let wanted = if is_nccl {
            self.wanted.nccl && domain.translate
        } else {
            (self.wanted.nvtx && domain.translate) || as_mpi
        };
        if !wanted {
            return Ok(());
        }
        // Marks are instants; a range that never ended has no end to compare.
        let end = match e.event_type {
            kind::MARK => Some(e.start),
            _ => e.end,
        };
        if !ctx.within_limits_open(e.start, end) {
            return Ok(());
        }
        let text = self.text(ctx, e)?;
        let thread = ctx.cpu_thread(e.global_tid);
        self.translated += 1;
        match e.event_type {
            kind::MARK => {
                let base = if is_nccl {
                    hashed_base(nccl::DOMAIN, &ctx.options.nvtx)
                } else {
                    domain.base
                };
                let h = self.cache.handle(ctx, base + MARK, &text);
                ctx.run
                    .events(thread, e.start, &[EventPair::name(base + MARK, h)]);
            }
            kind::START_END | kind::NVTXT_START_END if domain.project => {
                self.push_pop(ctx, thread, e, domain, &text)?
            }
            kind::START_END | kind::NVTXT_START_END => self.start_ends.push(StartEnd {
                thread,
                start: e.start,
                end: e.end,
                label: if domain.name.is_empty() {
                    text.text
                } else {
                    format!("{}: {}", domain.name, text.text).into()
                },
            }),
            _ => self.push_pop(ctx, thread, e, domain, &text)?,
        }
        Ok(())
    }

    fn domain(&self, pid: u32, id: i64) -> &'d Domain {
        self.defs
            .domains
            .get(&(pid, id))
            .unwrap_or(&self.defs.undeclared)
    }

    fn text(&mut self, ctx: &ReportContext, e: &NvtxEvent) -> Result<RangeText, ReadError> {
        Ok(match (&e.text, e.text_id) {
            (Some(t), _) => RangeText {
                id: None,
                text: t.as_str().into(),
            },
            (None, Some(id)) => RangeText {
                id: Some(id),
                text: self.cache.text(ctx, id)?,
            },
            (None, None) => RangeText {
                id: None,
                text: "[unnamed]".into(),
            },
        })
    }

    fn push_pop(
        &mut self,
        ctx: &mut ReportContext,
        thread: LocalThread,
        e: &NvtxEvent,
        domain: &Domain,
        text: &RangeText,
    ) -> Result<(), ReadError> {
        if domain.name == "MPI" && self.wanted.mpi {
            self.mpi_call(ctx, thread, e, &text.text);
            return Ok(());
        }
        let base = domain.base;
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        pairs.push(EventPair::name(base, self.cache.handle(ctx, base, text)));
        if base == NCCL_REGIONS {
            let payload = match domain.payloads {
                true => self.nccl_payload(ctx, e)?,
                false => None,
            };
            if let Some(payload) = payload {
                let end = e.end.unwrap_or(i64::MAX);
                let call = nccl::call_of(ctx, &text.text, &payload);
                self.nccl.add(
                    thread,
                    NcclRange {
                        start: e.start,
                        end,
                        payload: payload.clone(),
                        call,
                    },
                );
                pairs.extend(payload);
            }
        } else {
            self.extras(ctx, e, domain, &mut pairs);
        }
        if domain.comm_library {
            if let Some(end) = e.end {
                ctx.states.add(
                    thread,
                    e.start,
                    end,
                    communication_state(&domain.name, &text.text),
                );
            }
        }
        match e.end {
            Some(end) => {
                ctx.run.interval(thread, e.start, end, &pairs);
                self.pairs = pairs;
            }
            None => self.unclosed.push((thread, e.start, pairs)),
        }
        Ok(())
    }

    /// The pairs of an NCCL range's JSON payload, if it has one: parsed per row
    /// when inline, once per id when registered in `StringIds`.
    fn nccl_payload(
        &mut self,
        ctx: &mut ReportContext,
        e: &NvtxEvent,
    ) -> Result<Option<Vec<EventPair>>, ReadError> {
        if let Some(json) = &e.json {
            let (pairs, notes) = nccl::payload_pairs(ctx, json);
            notes.count(ctx);
            return Ok(Some(pairs));
        }
        let Some(id) = e.json_text_id else {
            return Ok(None);
        };
        let payload = match self.cache.payloads.get(&id) {
            Some(p) => Rc::clone(p),
            None => {
                // As before the cache: an unreadable payload is no payload.
                let Some(json) = ctx.export.string(id).ok().flatten() else {
                    return Ok(None);
                };
                let (pairs, notes) = nccl::payload_pairs(ctx, &json);
                let p = Rc::new(NcclPayload { pairs, notes });
                self.cache.payloads.insert(id, Rc::clone(&p));
                p
            }
        };
        payload.notes.count(ctx);
        Ok(Some(payload.pairs.clone()))
    }

    /// A range of the 2022-era MPI domain: an MPI call with Extrae's numbering.
    fn mpi_call(
        &mut self,
        ctx: &mut ReportContext,
        thread: LocalThread,
        e: &NvtxEvent,
        name: &str,
    ) {
        let (pair, state) = crate::mpi::call_pair(ctx, name);
        match e.end {
            Some(end) => {
                ctx.run.interval(thread, e.start, end, &[pair]);
                ctx.states.add(thread, e.start, end, state);
                crate::mpi::note_sync_point(ctx, name, end);
            }
            None => self.unclosed.push((thread, e.start, vec![pair])),
        }
    }

    /// Payload and category pairs of a range of a (non-NCCL) domain.
    fn extras(
        &self,
        ctx: &mut ReportContext,
        e: &NvtxEvent,
        domain: &Domain,
        pairs: &mut Vec<EventPair>,
    ) {
        let base = domain.base;
        match e.payload.filter(|_| domain.payloads) {
            Some(Payload::Int(v)) => {
                pairs.push(payload_pair(base, v, PAYLOAD_INT, NEGATIVE_PAYLOAD_INT))
            }
            Some(Payload::Float(v)) if domain.float_strategy == FloatStrategy::Round => {
                let rounded = v.round() as i64;
                pairs.push(payload_pair(
                    base,
                    rounded,
                    PAYLOAD_INT,
                    NEGATIVE_PAYLOAD_INT,
                ));
            }
            Some(Payload::Float(v)) => {
                let scaled = (v * 1000.0).round() as i64;
                pairs.push(payload_pair(
                    base,
                    scaled,
                    PAYLOAD_FLOAT,
                    NEGATIVE_PAYLOAD_FLOAT,
                ));
            }
            None => {}
        }
        if let Some(c) = e.category {
            let pid = pid_of(e.global_tid);
            let name = self
                .defs
                .categories
                .get(&(pid, e.domain_id, c))
                .cloned()
                .unwrap_or_else(|| format!("category {c}"));
            pairs.push(EventPair::name(
                base + RANGE_CATEGORY,
                ctx.run.names.intern(base + RANGE_CATEGORY, &name),
            ));
        }
    }
}

impl TextCache {
    /// The string `id` of `StringIds`, read once.
    fn text(&mut self, ctx: &ReportContext, id: i64) -> Result<Rc<str>, ReadError> {
        if let Some(t) = self.texts.get(&id) {
            return Ok(Rc::clone(t));
        }
        let text: Rc<str> = match ctx.export.string(id)? {
            Some(t) => t.into(),
            None => format!("[string {id}]").into(),
        };
        self.texts.insert(id, Rc::clone(&text));
        Ok(text)
    }

    /// Name handle of `text` as a value of `ty`: by id for registered strings.
    fn handle(&mut self, ctx: &mut ReportContext, ty: u32, text: &RangeText) -> u32 {
        let Some(id) = text.id else {
            return ctx.run.names.intern(ty, &text.text);
        };
        *self
            .handles
            .entry((ty, id))
            .or_insert_with(|| ctx.run.names.intern(ty, &text.text))
    }
}

/// A payload value on its type: non-negative values as they are, negative ones
/// as their magnitude on the "negative" type.
fn payload_pair(base: u32, value: i64, positive: u32, negative: u32) -> EventPair {
    if value >= 0 {
        EventPair::raw(base + positive, value)
    } else {
        EventPair::raw(base + negative, value.checked_neg().unwrap_or(i64::MAX))
    }
}

/// Start/end ranges may overlap on one thread: each takes the first lane (type)
/// free at its start, so none clobbers another.
fn place_start_end_ranges(ctx: &mut ReportContext, mut ranges: Vec<StartEnd>, last_time: i64) {
    ranges.sort_by_key(|r| (r.thread, r.start));
    let mut lanes: FxHashMap<LocalThread, Vec<i64>> = FxHashMap::default();
    let mut widest = 0;
    for r in ranges {
        let end = r.end.unwrap_or(last_time).max(r.start);
        let busy = lanes.entry(r.thread).or_default();
        let lane = match busy.iter().position(|&until| until <= r.start) {
            Some(l) => l,
            None if (busy.len() as u32) < START_END_LANES => {
                busy.push(0);
                busy.len() - 1
            }
            None => {
                ctx.count("NVTX start/end ranges sharing a lane", 1);
                busy.len() - 1
            }
        };
        busy[lane] = end.max(r.start + 1);
        widest = widest.max(lane as u32 + 1);
        let ty = START_END_FIRST_LANE + lane as u32;
        let h = ctx.run.names.intern(ty, &r.label);
        ctx.run
            .interval(r.thread, r.start, end, &[EventPair::name(ty, h)]);
    }
    register_types(ctx, (1..widest).map(lane_type).collect());
}

/// Extrae's state for a call of a communication library seen through NVTX
/// (nsys 2022's MPI, UCX and SHMEM domains).
pub fn communication_state(domain: &str, call: &str) -> u32 {
    let c = call.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| c.contains(w));
    if domain == "MPI" {
        return crate::mpi_values::state_of(call);
    }
    if has(&["barrier", "quiet", "fence", "wait", "sync"]) {
        state::SYNCHRONIZATION
    } else if has(&["atomic", "fetch", "swap", "inc", "add"]) {
        state::ATOMIC_MEMORY_OPERATION
    } else if has(&["put", "get"]) {
        state::ONE_SIDED
    } else if has(&["to_all", "broadcast", "collect", "alltoall", "reduce"]) {
        state::GROUP_COMMUNICATION
    } else {
        state::OTHERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_types_are_stable_and_outside_other_ranges() {
        let config = NvtxConfig::default();
        assert_eq!(domain_base("", &config), DEFAULT_DOMAIN);
        let b = domain_base("Compute Domain", &config);
        assert_eq!(b, domain_base("Compute Domain", &config));
        assert!((9700..=59900).contains(&b) && b.is_multiple_of(100));
        assert!(is_range_type(b));
    }

    #[test]
    fn configured_domains_take_their_block_and_hashed_ones_step_aside() {
        let mut config = NvtxConfig::default();
        assert_eq!(domain_base("neSmiK", &config), 81_000);
        assert!(is_range_type(81_000));
        let hashed = domain_base("Compute Domain", &config);
        config.domains.insert(
            "mine".into(),
            crate::nvtx_config::DomainConfig {
                event_type: Some(hashed),
                translate: true,
                payloads: true,
                payload: None,
                project: None,
            },
        );
        assert_eq!(domain_base("mine", &config), hashed);
        let moved = domain_base("Compute Domain", &config);
        assert_ne!(moved, hashed);
        assert!((9700..=59900).contains(&moved) && moved.is_multiple_of(100));
        assert!(!is_range_type(60_000) && !is_range_type(60_100) && !is_range_type(9650));
    }

    #[test]
    fn communication_states_are_declared() {
        for (domain, call) in [
            ("MPI", "MPI_Send"),
            ("MPI", "MPI_Win_fence"),
            ("SHMEM", "shmem_barrier_all"),
            ("SHMEM", "shmem_int_atomic_add"),
            ("SHMEM", "shmem_putmem"),
            ("SHMEM", "shmem_broadcast64"),
            ("UCX", "ucp_worker_progress"),
        ] {
            let s = communication_state(domain, call);
            assert!(COMMUNICATION_STATES.contains(&s), "{domain} {call}: {s}");
        }
        assert!(crate::mpi_values::STATES
            .iter()
            .all(|s| COMMUNICATION_STATES.contains(s)));
    }

    #[test]
    fn communication_libraries_get_extrae_states() {
        assert_eq!(
            communication_state("MPI", "MPI_Send"),
            crate::mpi_values::state_of("MPI_Send")
        );
        assert_eq!(
            communication_state("SHMEM", "shmem_barrier_all"),
            state::SYNCHRONIZATION
        );
        assert_eq!(communication_state("SHMEM", "shmem_int_put"), 25);
    }
}
