//! Memory copies and sets on GPU stream rows: the operation by kind, its size, the
//! stream's Memory transfer state, and the launch links the API side draws arrows
//! to.

use nsys_reader::cuda::{GpuPlace, MEMCPY, MEMSET};
use nsys_reader::enums::{self, MEMCPY_OPER};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::cuda_api::CORRELATION_ID;
use crate::handoff::GpuLinks;
use crate::types::{interval, state};
use crate::view::bundled_view;

pub const CUDA_MEMORY_OP: u32 = 63_000_001;
pub const CUDA_MEMORY_SIZE: u32 = 63_000_002;

pub const MEMORY: Category = Category::named("memory");

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: MEMORY,
    aliases: &["memcpy", "memset"],
    // BSC's `kernels` translates memory operations too.
    bsc_names: &["cuda_api_trace", "cuda_gpu_trace", "kernels"],
    groups: &["cuda"],
    tables: &["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"],
    table_prefixes: &[],
    bytes_per_row: 170,
    background_bytes_per_row: 0,
    launched: true,
    event_types,
    states: &[state::MEMORY_TRANSFER],
    views: &[
        bundled_view!(
            "views/memory_operations.cfg",
            "Which copies and memsets run on each GPU stream, and when?",
        ),
        bundled_view!(
            "basics/memcpy_size.cfg",
            "How many bytes does each copy or memset move?",
        ),
        bundled_view!(
            "analysis/memcpy_bandwidth.cfg",
            "What bandwidth does each kind of copy reach, per stream?",
        )
        .on_gpu_streams(),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::GpuOperations,
        run: pass,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![
        interval(CUDA_MEMORY_OP, "CUDA memcpy/memset", ValueLabels::Names),
        interval(
            CUDA_MEMORY_SIZE,
            "CUDA memcpy/memset size (bytes)",
            ValueLabels::Bytes,
        ),
    ]
}

fn pass(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let rows = ctx.export.row_estimate(MEMCPY)? + ctx.export.row_estimate(MEMSET)?;
    ctx.with_links(rows, memory)
}

fn memory(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    let export = ctx.export;
    let kinds = enums::labels(export, "ENUM_CUDA_MEMCPY_OPER", MEMCPY_OPER)?;
    let mut kind_handles = rustc_hash::FxHashMap::default();
    let scan = export.memcpys(|m| {
        let handle = *kind_handles.entry(m.copy_kind).or_insert_with(|| {
            let label = kinds
                .get(&m.copy_kind)
                .cloned()
                .unwrap_or_else(|| format!("kind {}", m.copy_kind));
            ctx.run
                .names
                .intern(CUDA_MEMORY_OP, &format!("CUDA memcpy {label}"))
        });
        memory_op(ctx, links, &m.place, handle, m.bytes);
        Ok(())
    })?;
    ctx.note_scan(MEMCPY, scan);

    let memset = ctx.run.names.intern(CUDA_MEMORY_OP, "CUDA memset");
    let scan = export.memsets(|m| {
        memory_op(ctx, links, &m.place, memset, m.bytes);
        Ok(())
    })?;
    ctx.note_scan(MEMSET, scan);
    Ok(())
}

fn memory_op(ctx: &mut ReportContext, links: &mut GpuLinks, p: &GpuPlace, name: u32, bytes: i64) {
    if !ctx.within_limits(p.start, p.end) {
        return;
    }
    let thread = ctx.stream_thread(p);
    let pairs = [
        EventPair::name(CUDA_MEMORY_OP, name),
        EventPair::raw(CUDA_MEMORY_SIZE, bytes),
        EventPair::raw(CORRELATION_ID, p.correlation_id.unwrap_or(0)),
    ];
    let n = if p.correlation_id.is_some() { 3 } else { 2 };
    ctx.run.interval(thread, p.start, p.end, &pairs[..n]);
    ctx.states
        .add(thread, p.start, p.end, state::MEMORY_TRANSFER);
    links.add_memory(p, thread, bytes);
}
