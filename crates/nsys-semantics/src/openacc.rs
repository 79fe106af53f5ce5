//! OpenACC on CPU threads: the three `CUPTI_ACTIVITY_KIND_OPENACC_*` tables as
//! intervals, with BSC nsys2prv's numbers, `66A0000T` where T is the table
//! (0 other, 1 data, 2 launch) and A the attribute:
//!
//! | A | type | value |
//! |---|---|---|
//! | 0 | 66000000 / 66000001 / 66000002 OpenACC / OpenACC Data / OpenACC Launch | `eventKind + 1` (ENUM_OPENACC_EVENT_KIND) |
//! | 1 | 6610000T region | `name@file:line` (values named, the same in every trace) |
//! | 2 | 6620000T function | function name |
//! | 3 | 66300001 data bytes | bytes |
//!
//! Every row is one interval on its CPU thread. Launch parameters and object
//! names are ours, in the 10000s digit inside nsys2prv's OpenACC block 660xxxxx
//! (the 664-666 blocks hold OS runtime, nsys2prv's memory usage and scheduling):
//! 66010002 gangs, 66020002 workers, 66030002 vector length, 66040002 launched
//! kernel name and 66040001 data variable name. Numbers that are 0 are left out
//! (a 0 would read as an interval end).
//!
//! States: waits 5 Synchronization, enqueue upload/download 17 Memory transfer,
//! enqueue launch 32 Configuring accelerator, everything else 15 Others.

use nsys_reader::enums;
use nsys_reader::openacc::{kind, AccEvent, AccTable, EVENT_KIND, EVENT_KIND_TABLE};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::{NameCache, ReportContext};
use crate::types::{interval, state};
use crate::view::bundled_view;

const BASE: u32 = 66_000_000;
/// nsys2prv's attributes, in the 100000s digit.
const KIND: u32 = 0;
const REGION: u32 = 100_000;
const FUNCTION: u32 = 200_000;
const BYTES: u32 = 300_000;
/// Ours, in the 10000s digit.
const GANGS: u32 = 10_000;
const WORKERS: u32 = 20_000;
const VECTOR_LENGTH: u32 = 30_000;
/// Launched kernel (launch table) or variable (data table).
const OBJECT_NAME: u32 = 40_000;

/// The type of `attribute` for rows of `table`.
pub fn acc_type(table: AccTable, attribute: u32) -> u32 {
    let t = match table {
        AccTable::Other => 0,
        AccTable::Data => 1,
        AccTable::Launch => 2,
    };
    BASE + attribute + t
}

fn table_label(table: AccTable) -> &'static str {
    match table {
        AccTable::Other => "OpenACC",
        AccTable::Data => "OpenACC Data",
        AccTable::Launch => "OpenACC Launch",
    }
}

pub const OPENACC: Category = Category::named("openacc");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: OPENACC,
    aliases: &["acc"],
    bsc_names: &["openacc"],
    groups: &[],
    tables: &[
        "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
        "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
        "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
    ],
    table_prefixes: &[],
    bytes_per_row: 150,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[
        state::SYNCHRONIZATION,
        state::MEMORY_TRANSFER,
        state::CONFIGURING,
        state::OTHERS,
    ],
    views: &[bundled_view!(
        "views/openacc.cfg",
        "Which OpenACC constructs does each thread run, and when?",
    )],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    use ValueLabels::{Bytes, Names, Numeric};
    let mut types = Vec::new();
    for table in AccTable::ALL {
        let label = table_label(table);
        types.push(kind_type(
            table,
            EVENT_KIND.iter().map(|&(k, l)| (k, l.to_string())),
        ));
        types.push(interval(
            acc_type(table, REGION),
            &format!("{label} region"),
            Names,
        ));
        types.push(interval(
            acc_type(table, FUNCTION),
            &format!("{label} function"),
            Names,
        ));
    }
    let data = AccTable::Data;
    let launch = AccTable::Launch;
    types.extend([
        interval(acc_type(data, BYTES), "OpenACC Data bytes", Bytes),
        interval(acc_type(data, OBJECT_NAME), "OpenACC Data variable", Names),
        interval(acc_type(launch, GANGS), "OpenACC Launch gangs", Numeric),
        interval(acc_type(launch, WORKERS), "OpenACC Launch workers", Numeric),
        interval(
            acc_type(launch, VECTOR_LENGTH),
            "OpenACC Launch vector length",
            Numeric,
        ),
        interval(
            acc_type(launch, OBJECT_NAME),
            "OpenACC Launch kernel",
            Names,
        ),
    ]);
    types
}

/// The event-kind type of a table: values are `eventKind + 1`, as in nsys2prv.
fn kind_type(table: AccTable, labels: impl Iterator<Item = (i64, String)>) -> EventTypeInfo {
    let mut values = vec![(0, "End".to_string())];
    values.extend(labels.map(|(k, l)| (k + 1, l)));
    interval(
        acc_type(table, KIND),
        table_label(table),
        ValueLabels::Fixed(values),
    )
}

/// A region: table, name, source file and line ids.
type RegionKey = (AccTable, Option<i64>, Option<i64>, Option<i64>);

/// Name handles of one report, per table.
#[derive(Default)]
struct Names {
    regions: FxHashMap<RegionKey, u32>,
    functions: FxHashMap<AccTable, NameCache>,
    objects: FxHashMap<AccTable, NameCache>,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let present: Vec<AccTable> = AccTable::ALL
        .into_iter()
        .filter(|t| export.has_table(t.name()))
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    note_unknown_kinds(ctx)?;
    let mut names = Names::default();
    for table in present {
        let scan = export.openacc_events(table, |e| emit(ctx, &mut names, table, e))?;
        ctx.note_scan(table.name(), scan);
    }
    Ok(())
}

/// Event kinds the built-in labels lack (a newer CUPTI) are labelled from the
/// export's enum table through the report's extra types.
fn note_unknown_kinds(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let labels = enums::labels(ctx.export, EVENT_KIND_TABLE, EVENT_KIND)?;
    if labels.len() > EVENT_KIND.len() {
        for table in AccTable::ALL {
            let all = labels.iter().map(|(&k, l)| (k, l.clone()));
            ctx.extra_types.push(kind_type(table, all));
        }
    }
    Ok(())
}

fn emit(
    ctx: &mut ReportContext,
    names: &mut Names,
    table: AccTable,
    e: &AccEvent,
) -> Result<(), ReadError> {
    if !ctx.within_limits(e.start, e.end) {
        return Ok(());
    }
    let thread = ctx.cpu_thread(e.global_tid);
    let mut pairs = Pairs::default();
    pairs.push(EventPair::raw(acc_type(table, KIND), e.event_kind + 1));
    let region = region_name(ctx, names, table, e)?;
    pairs.push(EventPair::name(acc_type(table, REGION), region));
    if e.func_name.is_some() {
        let cache = names.functions.entry(table).or_default();
        let handle = ctx.name(
            acc_type(table, FUNCTION),
            cache,
            e.func_name,
            str::to_string,
        )?;
        pairs.push(EventPair::name(acc_type(table, FUNCTION), handle));
    }
    let object = match table {
        AccTable::Data => e.var_name,
        AccTable::Launch => e.kernel_name,
        AccTable::Other => None,
    };
    if object.is_some() {
        let cache = names.objects.entry(table).or_default();
        let ty = acc_type(table, OBJECT_NAME);
        let handle = ctx.name(ty, cache, object, str::to_string)?;
        pairs.push(EventPair::name(ty, handle));
    }
    let numbers = [
        (BYTES, e.bytes),
        (GANGS, e.num_gangs),
        (WORKERS, e.num_workers),
        (VECTOR_LENGTH, e.vector_length),
    ];
    for (attribute, value) in numbers {
        // 0 would read as an end; absent columns are None.
        if let Some(v) = value.filter(|&v| v != 0) {
            pairs.push(EventPair::raw(acc_type(table, attribute), v));
        }
    }
    emit_interval(ctx, thread, e, pairs.as_slice());
    Ok(())
}

fn emit_interval(ctx: &mut ReportContext, thread: LocalThread, e: &AccEvent, pairs: &[EventPair]) {
    ctx.run.interval(thread, e.start, e.end, pairs);
    ctx.states
        .add(thread, e.start, e.end, state_of_kind(e.event_kind));
}

/// Extrae's state for an OpenACC event kind.
pub fn state_of_kind(event_kind: i64) -> u32 {
    match event_kind {
        kind::WAIT | kind::IMPLICIT_WAIT => state::SYNCHRONIZATION,
        kind::ENQUEUE_UPLOAD | kind::ENQUEUE_DOWNLOAD => state::MEMORY_TRANSFER,
        kind::ENQUEUE_LAUNCH => state::CONFIGURING,
        _ => state::OTHERS,
    }
}

/// `name@file:line`, as nsys2prv labels regions.
fn region_name(
    ctx: &mut ReportContext,
    names: &mut Names,
    table: AccTable,
    e: &AccEvent,
) -> Result<u32, ReadError> {
    let key = (table, e.name_id, e.src_file, e.line_no);
    if let Some(&handle) = names.regions.get(&key) {
        return Ok(handle);
    }
    let text = |id: Option<i64>| -> Result<Option<String>, ReadError> {
        Ok(match id {
            Some(id) => ctx.export.string(id)?.filter(|s| !s.is_empty()),
            None => None,
        })
    };
    let name = text(e.name_id)?.unwrap_or_else(|| "[unnamed]".into());
    let file = text(e.src_file)?.unwrap_or_else(|| "?".into());
    let label = match e.line_no {
        Some(line) => format!("{name}@{file}:{line}"),
        None => format!("{name}@{file}"),
    };
    let handle = ctx.run.names.intern(acc_type(table, REGION), &label);
    names.regions.insert(key, handle);
    Ok(handle)
}

/// The pairs of one interval (at most 8: kind, region, function, object and four numbers).
struct Pairs {
    pairs: [EventPair; 8],
    len: usize,
}

impl Default for Pairs {
    fn default() -> Self {
        Pairs {
            pairs: [EventPair::raw(0, 0); 8],
            len: 0,
        }
    }
}

impl Pairs {
    fn push(&mut self, pair: EventPair) {
        if self.len < self.pairs.len() {
            self.pairs[self.len] = pair;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[EventPair] {
        &self.pairs[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_nsys2prv() {
        assert_eq!(acc_type(AccTable::Data, KIND), 66_000_001);
        assert_eq!(acc_type(AccTable::Data, REGION), 66_100_001);
        assert_eq!(acc_type(AccTable::Data, FUNCTION), 66_200_001);
        assert_eq!(acc_type(AccTable::Data, BYTES), 66_300_001);
        assert_eq!(acc_type(AccTable::Launch, KIND), 66_000_002);
        assert_eq!(acc_type(AccTable::Other, FUNCTION), 66_200_000);
        assert_eq!(acc_type(AccTable::Launch, GANGS), 66_010_002);
        assert_eq!(acc_type(AccTable::Data, OBJECT_NAME), 66_040_001);
    }

    #[test]
    fn kinds_get_extrae_states() {
        assert_eq!(state_of_kind(kind::WAIT), state::SYNCHRONIZATION);
        assert_eq!(state_of_kind(kind::ENQUEUE_UPLOAD), state::MEMORY_TRANSFER);
        assert_eq!(state_of_kind(kind::ENQUEUE_LAUNCH), state::CONFIGURING);
        assert_eq!(state_of_kind(kind::COMPUTE_CONSTRUCT), state::OTHERS);
    }
}
