//! CPU IP samples with their call stacks (`COMPOSITE_EVENTS` +
//! `SAMPLING_CALLCHAINS`, `nsys profile --sample`), in Extrae's convention for
//! sampled call stacks so that Paraver users' sampling views work: each sample is
//! a point event on its thread with the sampled function (30000000), its caller
//! at level k (30000000 + k, k = 1..=`--sampling-depth`) and the sampled
//! function's module (40000039 "Library").
//!
//! All levels share one value table, written as one `.pcf` block as Extrae does:
//! a function has the same value at every level. Values 1 "Unresolved" and 2 are
//! reserved (BSC's `2dp_sampled_*` views filter them out): 1 is a frame whose
//! function and module are both unknown. The export gives an unresolved frame's
//! absolute address but no module load address, so the offset in the module
//! cannot be computed: unresolved frames are labelled per module,
//! `libc.so.6 (unresolved)`.
//!
//! A sample with a shorter call stack than its thread's previous sample sets the
//! levels it lacks to 0, so a "caller at level k" timeline never shows a caller
//! of an older sample (nsys takes most samples without a call stack). Samples add
//! no state: nsys takes them only while the thread runs (`threadState` is always
//! Running), which the scheduling category's background already shows.

use std::collections::BTreeSet;

use nsys_reader::ids::pid_of;
use nsys_reader::sampling::{Frame, COMPOSITE_EVENTS};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, LocalThread, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::options::MAX_SAMPLING_DEPTH;
use crate::types::point;
use crate::view::bundled_view;

/// The sampled function (Extrae's `SAMPLING_EV`); its caller at level k is this + k.
pub const SAMPLED_FUNCTION: u32 = 30_000_000;
/// The module of the sampled function (Extrae's `LIBRARY_EV`).
pub const LIBRARY: u32 = 40_000_039;
/// Value of a frame whose function and module are both unknown.
const UNRESOLVED: i64 = 1;

/// Extrae's reserved values of the sampled-function table (2 was "_NOT_Found").
const FUNCTION_VALUES: [(i64, &str); 3] = [(0, "End"), (1, "Unresolved"), (2, "_NOT_Found")];
/// Modules nsys gives frames it knows nothing about.
const UNKNOWN_MODULE: &str = "[Unknown]";

pub const SAMPLING: Category = Category::named("sampling");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: SAMPLING,
    aliases: &["samples", "cpu-sampling"],
    bsc_names: &[],
    groups: &[],
    // The dry run counts samples; a sample's frames are in its bytes per row.
    tables: &[COMPOSITE_EVENTS],
    table_prefixes: &[],
    bytes_per_row: 110,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[],
    views: &[
        bundled_view!(
            "views/sampled_functions.cfg",
            "Which function was each thread running when it was sampled?",
        ),
        bundled_view!(
            "views/sampled_callstack.cfg",
            "Which functions were on the call stack (levels 0-5) at each sample?",
        ),
        bundled_view!(
            "views/sampled_library.cfg",
            "Which library (module) was each sample in?",
        ),
        bundled_view!(
            "analysis/sampled_functions_profile.cfg",
            "In which functions does each thread spend its CPU time (samples per function)?",
        ),
        bundled_view!(
            "analysis/sampled_callers_profile.cfg",
            "Which callers (level 1) account for the samples of each thread?",
        ),
        bundled_view!(
            "analysis/samples_per_thread.cfg",
            "How many CPU samples does each thread have?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

/// The caller type of level `depth` (0: the sampled function).
pub fn level_type(depth: u32) -> u32 {
    SAMPLED_FUNCTION + depth
}

fn event_types() -> Vec<EventTypeInfo> {
    let functions = ValueLabels::fixed(&FUNCTION_VALUES);
    let mut types = vec![point(
        SAMPLED_FUNCTION,
        "Sampled functions",
        functions.clone(),
    )];
    types.extend((1..=MAX_SAMPLING_DEPTH).map(|k| {
        point(
            level_type(k),
            &format!("Sampled functions (depth {k})"),
            functions.clone(),
        )
        .sharing_values_with(SAMPLED_FUNCTION)
    }));
    types.push(point(
        LIBRARY,
        "Library",
        ValueLabels::fixed(&[(0, "Unknown")]),
    ));
    types
}

/// What the pass did, for the counts.
#[derive(Default)]
struct Tally {
    samples: u64,
    frames: u64,
    other_processes: u64,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    if !export.has_table(COMPOSITE_EVENTS) {
        return Ok(());
    }
    let depth = ctx.options.sampling_depth.min(MAX_SAMPLING_DEPTH);
    let mut processes = SampledProcesses::new(ctx)?;
    let mut labels = Labels::default();
    let mut levels: FxHashMap<LocalThread, u128> = FxHashMap::default();
    let mut pairs: Vec<EventPair> = Vec::new();
    let mut tally = Tally::default();
    let scan = export.samples(depth, |sample| {
        if !ctx.within_limits(sample.start, sample.start) {
            return Ok(());
        }
        if !processes.keeps(ctx, pid_of(sample.global_tid)) {
            tally.other_processes += 1;
            return Ok(());
        }
        let written = sample_pairs(ctx, &mut labels, &sample.frames, &mut pairs)?;
        let thread = ctx.cpu_thread(sample.global_tid);
        let before = levels.insert(thread, written).unwrap_or(0);
        reset_levels(before & !written, &mut pairs);
        ctx.run.events(thread, sample.start, &pairs);
        if let Some(cpu) = sample.cpu {
            ctx.saw_cpu(cpu);
        }
        tally.samples += 1;
        tally.frames += sample.frames.len() as u64;
        Ok(())
    })?;
    levels.remove(&paraver_writer::DISCARDED);
    record_counts(ctx, &tally, levels.len() as u64);
    ctx.note_skipped(COMPOSITE_EVENTS, scan.skipped);
    Ok(())
}

fn record_counts(ctx: &mut ReportContext, tally: &Tally, threads: u64) {
    let counts = [
        (COMPOSITE_EVENTS, tally.samples),
        ("sampled threads", threads),
        ("sample call-stack frames", tally.frames),
        (
            "COMPOSITE_EVENTS of other processes ignored",
            tally.other_processes,
        ),
    ];
    for (what, n) in counts {
        if n > 0 {
            ctx.count(what, n);
        }
    }
}

/// Fills `pairs` with a sample's function, callers and library; returns the
/// caller levels written, as bits (bit k: level k).
fn sample_pairs(
    ctx: &mut ReportContext,
    labels: &mut Labels,
    frames: &[Frame],
    pairs: &mut Vec<EventPair>,
) -> Result<u128, ReadError> {
    pairs.clear();
    let mut written = 0u128;
    for frame in frames.iter().filter(|f| f.depth <= MAX_SAMPLING_DEPTH) {
        let value = labels.function(ctx, frame)?;
        pairs.push(value.pair(level_type(frame.depth)));
        written |= 1 << frame.depth;
    }
    if written & 1 == 0 {
        // No frame for the sampled function itself.
        pairs.insert(0, EventPair::raw(SAMPLED_FUNCTION, UNRESOLVED));
        written |= 1;
    }
    let module = frames.iter().find(|f| f.depth == 0).and_then(|f| f.module);
    pairs.push(labels.library(ctx, module)?.pair(LIBRARY));
    Ok(written)
}

/// Ends (value 0) the caller levels in `levels` (bits; level 0 is never ended:
/// every sample writes it).
fn reset_levels(levels: u128, pairs: &mut Vec<EventPair>) {
    let mut rest = levels & !1;
    while rest != 0 {
        let level = rest.trailing_zeros();
        pairs.push(EventPair::raw(level_type(level), 0));
        rest &= rest - 1;
    }
}

/// A value of a sampling type: a name, or a reserved number.
#[derive(Clone, Copy)]
enum Label {
    Name(u32),
    Raw(i64),
}

impl Label {
    fn pair(self, ty: u32) -> EventPair {
        match self {
            Label::Name(handle) => EventPair::name(ty, handle),
            Label::Raw(value) => EventPair::raw(ty, value),
        }
    }
}

/// Labels resolved once per (symbol, module) string pair and per module.
#[derive(Default)]
struct Labels {
    functions: FxHashMap<(Option<i64>, Option<i64>), Label>,
    libraries: FxHashMap<Option<i64>, Label>,
}

impl Labels {
    fn function(&mut self, ctx: &mut ReportContext, frame: &Frame) -> Result<Label, ReadError> {
        let key = (frame.symbol, frame.module);
        if let Some(&label) = self.functions.get(&key) {
            return Ok(label);
        }
        let symbol = string(ctx, frame.symbol)?;
        let module = string(ctx, frame.module)?;
        let label = match function_label(symbol.as_deref(), module.as_deref()) {
            Some(text) => Label::Name(ctx.run.names.intern(SAMPLED_FUNCTION, &text)),
            None => Label::Raw(UNRESOLVED),
        };
        self.functions.insert(key, label);
        Ok(label)
    }

    fn library(
        &mut self,
        ctx: &mut ReportContext,
        module: Option<i64>,
    ) -> Result<Label, ReadError> {
        if let Some(&label) = self.libraries.get(&module) {
            return Ok(label);
        }
        let label = match string(ctx, module)?.filter(|m| is_known_module(m)) {
            Some(path) => Label::Name(ctx.run.names.intern(LIBRARY, &path)),
            None => Label::Raw(0),
        };
        self.libraries.insert(module, label);
        Ok(label)
    }
}

fn string(ctx: &ReportContext, id: Option<i64>) -> Result<Option<String>, ReadError> {
    match id {
        Some(id) => ctx.export.string(id),
        None => Ok(None),
    }
}

/// A frame's label: its function's name, or for an address nsys could not
/// resolve, `<module file name> (unresolved)`; `None` when the module is unknown
/// too.
fn function_label(symbol: Option<&str>, module: Option<&str>) -> Option<String> {
    match symbol.map(str::trim).filter(|s| !s.is_empty()) {
        Some(name) if !is_address(name) => Some(name.to_string()),
        _ => {
            let module = module.filter(|m| is_known_module(m))?;
            let file = module.rsplit('/').next().unwrap_or(module);
            Some(format!("{file} (unresolved)"))
        }
    }
}

/// `0x7d98c355100c`: what nsys writes for a function it could not resolve.
fn is_address(symbol: &str) -> bool {
    symbol
        .strip_prefix("0x")
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_known_module(module: &str) -> bool {
    let module = module.trim();
    !module.is_empty() && module != UNKNOWN_MODULE
}

/// Which processes' samples are kept: every one for a process-tree capture (the
/// default: the launched program and its children); for a system-wide capture,
/// the processes other categories traced and the launched ones.
struct SampledProcesses {
    launched: Option<BTreeSet<u32>>,
    decided: FxHashMap<u32, bool>,
}

impl SampledProcesses {
    fn new(ctx: &ReportContext) -> Result<Self, ReadError> {
        let export = ctx.export;
        let launched = if export.meta().system_wide_cpu_data {
            Some(export.launched_processes()?)
        } else {
            None
        };
        Ok(SampledProcesses {
            launched,
            decided: FxHashMap::default(),
        })
    }

    fn keeps(&mut self, ctx: &ReportContext, pid: u32) -> bool {
        let Some(launched) = &self.launched else {
            return true;
        };
        *self
            .decided
            .entry(pid)
            .or_insert_with(|| launched.contains(&pid) || ctx.has_process(pid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_labelled_by_function_or_by_module() {
        let label = |s: Option<&str>, m: Option<&str>| function_label(s, m);
        assert_eq!(
            label(Some("runVectorAddTest(int)"), Some("/app/a.out")).as_deref(),
            Some("runVectorAddTest(int)")
        );
        assert_eq!(
            label(
                Some("0x7d98c355100c"),
                Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
            )
            .as_deref(),
            Some("libc.so.6 (unresolved)")
        );
        assert_eq!(
            label(Some("0xffffffff8100"), Some("[kernel.kallsyms]")).as_deref(),
            Some("[kernel.kallsyms] (unresolved)")
        );
        assert_eq!(label(Some("0x1234"), Some("[Unknown]")), None);
        assert_eq!(label(None, None), None);
        // A guessed name of an unresolved frame is kept; terminators too.
        assert_eq!(
            label(Some("_start"), Some("/app/a.out")).as_deref(),
            Some("_start")
        );
        assert_eq!(
            label(Some("[Broken backtraces]"), Some("[Broken backtraces]")).as_deref(),
            Some("[Broken backtraces]")
        );
        assert!(!is_address("0x") && !is_address("0xg1") && is_address("0xAbC"));
    }

    #[test]
    fn levels_a_shorter_stack_lacks_are_ended() {
        let mut pairs = Vec::new();
        // Previous sample wrote levels 0..=5, this one 0 and 1.
        let before: u128 = 0b11_1111;
        reset_levels(before & !0b11, &mut pairs);
        let ended: Vec<(u32, i64)> = pairs
            .iter()
            .map(|p| match p.value() {
                paraver_writer::Value::Raw(v) => (p.ty, v),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            ended,
            [
                (30_000_002, 0),
                (30_000_003, 0),
                (30_000_004, 0),
                (30_000_005, 0)
            ]
        );
    }

    #[test]
    fn every_level_shares_the_function_table() {
        let types = event_types();
        assert_eq!(types.len(), 1 + MAX_SAMPLING_DEPTH as usize + 1);
        for t in &types[1..=MAX_SAMPLING_DEPTH as usize] {
            assert_eq!(t.shares_values_with, Some(SAMPLED_FUNCTION), "{}", t.ty);
        }
        assert!(level_type(MAX_SAMPLING_DEPTH) < 30_000_100);
    }
}
