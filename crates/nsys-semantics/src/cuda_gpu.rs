//! Kernels, memory copies and sets on GPU stream rows.

use nsys_reader::cuda::{GpuPlace, KERNEL, MEMCPY, MEMSET};
use nsys_reader::enums::{self, MEMCPY_OPER};
use nsys_reader::ids::pid_of;
use nsys_reader::ReadError;
use paraver_writer::{EventPair, LocalThread, Value};
use rustc_hash::FxHashMap;

use crate::catalog::*;
use crate::context::{NameCache, ReportContext, ThreadKey};
use crate::cuda_graphs::GRAPH_NODE_ID;
use crate::nccl;
use crate::options::{Category, KernelNames};

/// A GPU operation that an API call launched: the target of a launch arrow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuLink {
    pub pid: u32,
    pub correlation: i64,
    pub thread: LocalThread,
    pub start: i64,
    pub end: i64,
    pub bytes: i64,
    pub tag: i64,
    /// An NCCL kernel: it takes the payload of the NCCL call that launched it.
    pub nccl: bool,
}

/// GPU operations by (pid, correlation id), sorted for lookup from the API side.
#[derive(Default)]
pub(crate) struct GpuLinks(Vec<GpuLink>);

impl GpuLinks {
    pub(crate) fn add(
        &mut self,
        place: &GpuPlace,
        thread: LocalThread,
        bytes: i64,
        tag: i64,
        nccl: bool,
    ) {
        if let Some(correlation) = place.correlation_id {
            self.0.push(GpuLink {
                pid: pid_of(place.global_pid),
                correlation,
                thread,
                start: place.start,
                end: place.end,
                bytes,
                tag,
                nccl,
            });
        }
    }

    pub fn sort(&mut self) {
        self.0.sort_by_key(|l| (l.pid, l.correlation, l.start));
    }

    /// Every GPU operation launched by this call (several in graph node mode).
    pub fn find(&self, pid: u32, correlation: i64) -> &[GpuLink] {
        let lo = self
            .0
            .partition_point(|l| (l.pid, l.correlation) < (pid, correlation));
        let hi = self.0[lo..].partition_point(|l| (l.pid, l.correlation) == (pid, correlation));
        &self.0[lo..lo + hi]
    }
}

fn stream_thread(ctx: &mut ReportContext, place: &GpuPlace) -> LocalThread {
    ctx.thread(ThreadKey::stream(
        pid_of(place.global_pid),
        place.device_id as u32,
        place.stream_id as u32,
    ))
}

/// NCCL's kernels are told apart by name, as nsys2prv does.
fn is_nccl(name: &str) -> bool {
    name.contains("nccl")
}

pub(crate) fn kernels(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
    let export = ctx.export;
    let use_demangled = ctx.options.kernel_names == KernelNames::Demangled;
    let mut names = NameCache::default();
    let mut nccl_names = NameCache::default();
    let with_nccl_fields = ctx.options.wants(Category::Nccl);
    let with_graph_nodes = ctx.options.wants(Category::Graphs);
    let mut nccl_fields_cache: FxHashMap<u32, Vec<EventPair>> = FxHashMap::default();
    let mut pairs: Vec<EventPair> = Vec::with_capacity(24);
    let mut failure = None;
    let scan = export.kernels(|k| {
        if failure.is_some() {
            return;
        }
        let (primary, fallback) = if use_demangled {
            (k.demangled_name, k.short_name)
        } else {
            (k.short_name, k.demangled_name)
        };
        let name_id = primary.or(fallback);
        let name = match kernel_name(ctx, name_id, &mut names, &mut nccl_names) {
            Ok(n) => n,
            Err(e) => {
                failure = Some(e);
                return;
            }
        };
        let thread = stream_thread(ctx, &k.place);
        let p = &k.place;
        let is_nccl = name.ty == NCCL_KERNEL;
        // One buffer for every row: a kernel has a dozen pairs.
        pairs.clear();
        pairs.push(name);
        pairs.extend((0..3).map(|i| EventPair::raw(KERNEL_GRID[i], k.grid[i])));
        pairs.extend((0..3).map(|i| EventPair::raw(KERNEL_BLOCK[i], k.block[i])));
        pairs.extend([
            EventPair::raw(KERNEL_STATIC_SHARED, k.static_shared_memory),
            EventPair::raw(KERNEL_DYNAMIC_SHARED, k.dynamic_shared_memory),
            EventPair::raw(KERNEL_LOCAL_MEMORY, k.local_memory_total),
            EventPair::raw(KERNEL_REGISTERS, k.registers_per_thread),
        ]);
        if let Some(c) = p.correlation_id {
            pairs.push(EventPair::raw(CORRELATION_ID, c));
        }
        if let Some(node) = k.graph_node_id.filter(|_| with_graph_nodes) {
            pairs.push(EventPair::raw(GRAPH_NODE_ID, node));
        }
        if is_nccl {
            let first = &mut ctx.sync_points.first_nccl_end;
            *first = Some(first.map_or(p.end, |t| t.min(p.end)));
        }
        if is_nccl && with_nccl_fields {
            pairs.extend(nccl_fields(ctx, &mut nccl_fields_cache, name));
        }
        ctx.run.interval(thread, p.start, p.end, &pairs);
        ctx.states.add(thread, p.start, p.end, state::RUNNING);
        links.add(p, thread, 0, TAG_LAUNCH, is_nccl);
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    ctx.count(KERNEL, scan.rows - scan.skipped);
    ctx.note_skipped(KERNEL, scan.skipped);
    Ok(())
}

/// The fields an NCCL kernel's name encodes, parsed once per name.
fn nccl_fields(
    ctx: &mut ReportContext,
    cache: &mut FxHashMap<u32, Vec<EventPair>>,
    name: EventPair,
) -> Vec<EventPair> {
    let Value::Name(handle) = name.value() else {
        return Vec::new();
    };
    if let Some(pairs) = cache.get(&handle) {
        return pairs.clone();
    }
    let text = ctx.run.names.names_of(NCCL_KERNEL)[handle as usize].to_string();
    let pairs = nccl::kernel_pairs(ctx, &text);
    cache.insert(handle, pairs.clone());
    pairs
}

/// The kernel's name as a value of 63000006, or of 63000007 for NCCL kernels.
fn kernel_name(
    ctx: &mut ReportContext,
    name_id: Option<i64>,
    names: &mut NameCache,
    nccl_names: &mut NameCache,
) -> Result<EventPair, ReadError> {
    let handle = ctx.name(CUDA_KERNEL, names, name_id, str::to_string)?;
    let name = &ctx.run.names.names_of(CUDA_KERNEL)[handle as usize];
    if is_nccl(name) {
        let nccl = ctx.name(NCCL_KERNEL, nccl_names, name_id, str::to_string)?;
        return Ok(EventPair::name(NCCL_KERNEL, nccl));
    }
    Ok(EventPair::name(CUDA_KERNEL, handle))
}

pub(crate) fn memory(ctx: &mut ReportContext, links: &mut GpuLinks) -> Result<(), ReadError> {
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
    })?;
    ctx.count(MEMCPY, scan.rows - scan.skipped);
    ctx.note_skipped(MEMCPY, scan.skipped);

    let memset = ctx.run.names.intern(CUDA_MEMORY_OP, "CUDA memset");
    let scan = export.memsets(|m| memory_op(ctx, links, &m.place, memset, m.bytes))?;
    ctx.count(MEMSET, scan.rows - scan.skipped);
    ctx.note_skipped(MEMSET, scan.skipped);
    Ok(())
}

fn memory_op(ctx: &mut ReportContext, links: &mut GpuLinks, p: &GpuPlace, name: u32, bytes: i64) {
    let thread = stream_thread(ctx, p);
    let pairs = [
        EventPair::name(CUDA_MEMORY_OP, name),
        EventPair::raw(CUDA_MEMORY_SIZE, bytes),
        EventPair::raw(CORRELATION_ID, p.correlation_id.unwrap_or(0)),
    ];
    let n = if p.correlation_id.is_some() { 3 } else { 2 };
    ctx.run.interval(thread, p.start, p.end, &pairs[..n]);
    ctx.states
        .add(thread, p.start, p.end, state::MEMORY_TRANSFER);
    links.add(p, thread, bytes, TAG_MEMORY, false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_by_process_and_correlation() {
        let mut links = GpuLinks::default();
        let place = |pid: i64, corr| GpuPlace {
            global_pid: pid << 24,
            correlation_id: Some(corr),
            ..Default::default()
        };
        links.add(&place(1, 5), 0, 0, TAG_LAUNCH, false);
        links.add(&place(2, 5), 1, 0, TAG_LAUNCH, false);
        links.add(&place(1, 5), 2, 0, TAG_LAUNCH, false);
        links.sort();
        assert_eq!(links.find(1, 5).len(), 2);
        assert_eq!(links.find(2, 5)[0].thread, 1);
        assert!(links.find(3, 5).is_empty());
    }
}
