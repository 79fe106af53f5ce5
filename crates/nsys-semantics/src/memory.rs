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

pub use nsys2prv_events::{CUDA_MEMORY_OP, CUDA_MEMORY_SIZE};

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
    ctx.gpu_idle.operation(thread, p.start, p.end);
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

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::testing::{check, GLOBAL_PID};

    /// Each copy: an interval of its kind (by the export's enum, or `kind N` for a
    /// kind it does not know) and size, with its correlation id when it has one,
    /// and the stream's Memory transfer state; a memset the same, named `CUDA
    /// memset`.
    #[test]
    fn copies_and_sets_are_intervals_of_their_kind_and_size() {
        check(
            &[MEMORY],
            &format!(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes,
                      copyKind)
                 VALUES (100, 400, 0, 1, 7, 21, {GLOBAL_PID}, 4096, 1),
                        (500, 600, 0, 1, 7, 22, {GLOBAL_PID}, 8, 2),
                        (700, 710, 0, 1, 9, NULL, {GLOBAL_PID}, 1, 99);
                 INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET
                     (start, end, deviceId, contextId, streamId, correlationId, globalPid, value,
                      bytes)
                 VALUES (450, 480, 0, 1, 8, 23, {GLOBAL_PID}, 0, 1048576);"
            ),
            expect![[r#"
                100 24601:gpu0/s7 63000001="CUDA memcpy Host-to-Device" 63000002=4096 9200=21
                100 24601:gpu0/s7 state 17 until 400
                400 24601:gpu0/s7 end 63000001="CUDA memcpy Host-to-Device" 63000002=4096 9200=21
                400 24601:gpu0/s7 state 0 until 500
                450 24601:gpu0/s8 63000001="CUDA memset" 63000002=1048576 9200=23
                450 24601:gpu0/s8 state 17 until 480
                480 24601:gpu0/s8 end 63000001="CUDA memset" 63000002=1048576 9200=23
                500 24601:gpu0/s7 63000001="CUDA memcpy Device-to-Host" 63000002=8 9200=22
                500 24601:gpu0/s7 state 17 until 600
                600 24601:gpu0/s7 end 63000001="CUDA memcpy Device-to-Host" 63000002=8 9200=22
                700 24601:gpu0/s9 63000001="CUDA memcpy kind 99" 63000002=1
                700 24601:gpu0/s9 state 17 until 710
                710 24601:gpu0/s9 end 63000001="CUDA memcpy kind 99" 63000002=1
            "#]],
        );
    }
}
