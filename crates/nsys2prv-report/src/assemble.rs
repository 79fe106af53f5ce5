//! From the accumulated pass to the report: names resolved, tables sorted, the
//! heat map's rows grouped, the overlap summary and the iteration stragglers.

use std::collections::{BTreeMap, BTreeSet};

use super::model::*;
use super::scan::{nearest_rank, HostContext, Latencies, NamedStatsAcc, Scan};
use super::types::*;

/// Rows of the heat map and the bar chart before GPUs are grouped.
pub const ROW_BUDGET: usize = 256;
/// Gaps listed over all GPUs.
const LONGEST_GAPS: usize = 20;
/// Stragglers named.
const SLOWEST_TASKS: usize = 5;

pub fn assemble(
    mut scan: Scan,
    trace: String,
    gap_threshold_ns: u64,
    window: Option<Window>,
    pipeline_stages: Option<usize>,
) -> Report {
    let elapsed = scan.elapsed;
    let offset = scan.window_start;
    let gpus = gpus(&scan);
    let efficiency = Model::of(&gpus, elapsed);
    // A window is what the user chose to look at: its start-up is theirs.
    let from_first_activity = match window {
        None => FromFirstActivity::of(&gpus, elapsed, scan.first_activity, offset),
        Some(_) => None,
    };
    let heatmap = heatmap(&scan, &gpus);
    let overlap = overlap(&gpus);
    let gaps = gaps(&gpus, gap_threshold_ns);
    let (kernels, kernel_metrics) = kernels(&scan);
    let nccl = nccl(&scan);
    let mpi = named(
        scan.mpi_stats()
            .map(|((ty, v), s)| (scan.names.value(ty, v, "MPI call"), s)),
    );
    let nvtx = named(
        scan.nvtx_stats()
            .map(|((ty, v), s)| (scan.names.value(ty, v, "range"), s)),
    );
    let useful_metrics = scan
        .useful_metric_means()
        .map(|(ty, mean, samples)| {
            let (name, scale) = scan.metric_name(ty);
            (
                name,
                UsefulMetric {
                    mean: mean / scale,
                    samples,
                },
            )
        })
        .collect();
    let memory = named(
        scan.memory_stats()
            .map(|(v, s)| (scan.names.value(MEMORY_OP, v, "memory operation"), s)),
    );
    let task_names: Vec<String> = (1..=scan.task_count).map(|t| scan.names.task(t)).collect();
    let (candidates, occurrences) = scan.take_occurrences();
    let occurrences = occurrences
        .into_iter()
        .map(|(c, task, begin, end)| (c, task, begin + offset, end + offset))
        .collect();
    let iterations = iterations(&candidates, occurrences, &task_names);
    let late_arrivals = late_arrivals(&scan, iterations.as_ref(), offset, &task_names);
    let idle_causes = idle_causes(&scan, &gpus, iterations.as_ref(), offset);
    let mut notes = notes(&scan, &gpus, &iterations);
    if let Some(idle) = &idle_causes {
        notes.extend(idle_notes(&scan, idle));
    }
    let launch_queues = launch_queues(&scan);
    if scan.launch_queues().left_out > 0 {
        notes.push(format!(
            "{} kernel launch latencies were left out of the latency quantiles (--memory-limit); counts, means and maxima have them.",
            scan.launch_queues().left_out
        ));
    }
    if scan.late_arrivals().waits_left_out > 0 {
        notes.push(format!(
            "{} NCCL collective waits were left out of the per-iteration late arrivals (--memory-limit).",
            scan.late_arrivals().waits_left_out
        ));
    }
    if let Some(late) = &from_first_activity {
        notes.push(late_start_note(late));
    }
    let pipeline = match scan.pipeline() {
        Some(found) => {
            let (pipeline, more) = crate::pipeline::assemble(
                found,
                &gpus,
                iterations.as_ref(),
                &task_names,
                offset,
                pipeline_stages,
                &gpus.iter().map(|g| short_name(&g.name)).collect::<Vec<_>>(),
            );
            notes.extend(more);
            pipeline
        }
        None => None,
    };
    Report {
        generator: GENERATOR,
        version: env!("CARGO_PKG_VERSION"),
        trace,
        elapsed_ns: elapsed,
        window,
        from_first_activity,
        tasks: scan.task_count,
        gpu_count: gpus.len(),
        stream_rows: gpus.iter().map(|g| g.streams).sum(),
        notes,
        gpus,
        efficiency,
        heatmap,
        overlap,
        gaps,
        kernels,
        kernel_metrics,
        nccl,
        mpi,
        memory,
        nvtx,
        useful_metrics,
        iterations,
        late_arrivals,
        idle_causes,
        pipeline,
        launch_queues,
    }
}

/// The distribution of `acc`'s latencies.
fn latency_stats(acc: &crate::scan::Latencies) -> LatencyStats {
    let mut sorted = acc.kept.clone();
    sorted.sort_unstable();
    LatencyStats {
        count: acc.count,
        mean_ns: if acc.count == 0 {
            0.0
        } else {
            acc.sum as f64 / acc.count as f64
        },
        median_ns: nearest_rank(&sorted, 0.5),
        p90_ns: nearest_rank(&sorted, 0.9),
        max_ns: acc.max,
    }
}

/// Launch latencies per stream and per kernel name, and the streams' queues,
/// most starved first.
fn launch_queues(scan: &Scan) -> Option<LaunchQueues> {
    let acc = scan.launch_queues();
    if acc.streams.iter().all(Option::is_none) && acc.latencies.is_empty() {
        return None;
    }
    let mut per_stream: BTreeMap<usize, Latencies> = BTreeMap::new();
    let mut per_kernel: BTreeMap<(u32, i64), Latencies> = BTreeMap::new();
    let mut all = Latencies::default();
    for (&(thread, ty, value), l) in &acc.latencies {
        per_stream.entry(thread).or_default().merge(l);
        per_kernel.entry((ty, value)).or_default().merge(l);
        all.merge(l);
    }
    let elapsed = scan.elapsed.max(1);
    let with_queue = (0..acc.streams.len()).filter(|&t| acc.streams[t].is_some());
    let threads: BTreeSet<usize> = with_queue.chain(per_stream.keys().copied()).collect();
    let mut streams: Vec<StreamQueue> = threads
        .into_iter()
        .map(|thread| {
            let q = acc
                .streams
                .get(thread)
                .cloned()
                .flatten()
                .unwrap_or_default();
            StreamQueue {
                stream: scan.stream_label(thread),
                mean_depth: q.depth_ns as f64 / elapsed as f64,
                max_depth: q.max_depth,
                starved_ns: q.starved_ns,
                starved_share: q.starved_ns as f64 / elapsed as f64,
                queued_idle_ns: q.queued_idle_ns,
                latency: per_stream.get(&thread).map(latency_stats),
            }
        })
        .collect();
    streams.sort_by(|a, b| {
        b.starved_ns
            .cmp(&a.starved_ns)
            .then_with(|| a.stream.cmp(&b.stream))
    });
    let mut kernels: Vec<KernelLatency> = per_kernel
        .iter()
        .map(|(&(ty, value), l)| KernelLatency {
            kernel: scan.names.value(ty, value, "kernel"),
            latency: latency_stats(l),
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.latency
            .p90_ns
            .cmp(&a.latency.p90_ns)
            .then_with(|| a.kernel.cmp(&b.kernel))
    });
    Some(LaunchQueues {
        streams,
        kernels,
        all: latency_stats(&all),
        left_out: acc.left_out,
    })
}

/// Who made NCCL collectives wait: per late rank, per collective, per iteration.
fn late_arrivals(
    scan: &Scan,
    iterations: Option<&Iterations>,
    offset: u64,
    task_names: &[String],
) -> Option<LateArrivals> {
    let acc = scan.late_arrivals();
    if acc.by_rank.is_empty() {
        return None;
    }
    let rank_name = |v: i64| scan.names.value(NCCL_WAITED_FOR_RANK, v, "rank");
    let mut ranks: Vec<LateRank> = acc
        .by_rank
        .iter()
        .map(|(&v, &(wait_ns, waits))| LateRank {
            rank: rank_name(v),
            wait_ns,
            waits,
        })
        .collect();
    ranks.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.rank.cmp(&b.rank)));
    let mut per_collective: Vec<LateCollective> = acc
        .by_collective
        .iter()
        .map(|(&(c, v), &(wait_ns, waits))| LateCollective {
            collective: match c {
                0 => "(unknown collective)".to_string(),
                c => scan.names.value(NCCL_COLLECTIVE, c, "collective"),
            },
            rank: rank_name(v),
            wait_ns,
            waits,
        })
        .collect();
    per_collective.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then_with(|| (&a.collective, &a.rank).cmp(&(&b.collective, &b.rank)))
    });
    per_collective.truncate(10);
    // Each wait in its task's iteration (by begin time), then per iteration number.
    let mut by_iteration: BTreeMap<usize, BTreeMap<i64, u64>> = BTreeMap::new();
    if let Some(it) = iterations {
        for &(time, task, rank, wait) in &acc.waits {
            let time = time + offset;
            let Some(name) = task_names.get(task as usize - 1) else {
                continue;
            };
            let Some(t) = it.tasks.iter().find(|t| &t.task == name) else {
                continue;
            };
            let k = t
                .iterations
                .partition_point(|o| o.begin_ns <= time)
                .checked_sub(1);
            let Some(k) =
                k.filter(|&k| time < t.iterations[k].begin_ns + t.iterations[k].duration_ns)
            else {
                continue;
            };
            *by_iteration
                .entry(k + 1)
                .or_default()
                .entry(rank)
                .or_default() += wait;
        }
    }
    let per_iteration = by_iteration
        .into_iter()
        .map(|(iteration, waits)| {
            let (&rank, &wait_ns) = waits
                .iter()
                .max_by_key(|(&v, &w)| (w, std::cmp::Reverse(v)))
                .expect("an iteration with waits");
            LateIteration {
                iteration,
                rank: rank_name(rank),
                wait_ns,
                total_wait_ns: waits.values().sum(),
            }
        })
        .collect();
    Some(LateArrivals {
        total_wait_ns: ranks.iter().map(|r| r.wait_ns).sum(),
        waits: ranks.iter().map(|r| r.waits).sum(),
        ranks,
        per_collective,
        per_iteration,
    })
}

/// What each GPU's host-bound time is put down to: at most this many.
const HOST_CONTEXTS: usize = 3;

/// The launching thread's range and call, in words.
fn context_words(scan: &Scan, (range, call): HostContext) -> String {
    let range = range.map(|(ty, v)| format!("NVTX {}", scan.names.value(ty, v, "range")));
    let call =
        call.map(|(ty, v)| format!("{}: {}", call_kind(ty), scan.names.value(ty, v, "call")));
    match (range, call) {
        (Some(r), Some(c)) => format!("{r} ({c})"),
        (Some(r), None) => r,
        (None, Some(c)) => c,
        (None, None) => "no call or range".into(),
    }
}

/// The split per GPU, over the run and per iteration; `None` without GPUs.
fn idle_causes(
    scan: &Scan,
    gpus: &[Gpu],
    iterations: Option<&Iterations>,
    offset: u64,
) -> Option<IdleCauses> {
    if gpus.is_empty() {
        return None;
    }
    let acc = scan.idle_causes();
    let mut total = IdleSplit::default();
    let mut gaps = 0;
    let list: Vec<GpuIdle> = gpus
        .iter()
        .enumerate()
        .map(|(g, gpu)| {
            let totals = acc.totals(g);
            let split = IdleSplit::from_causes(totals.by_cause);
            total = total.plus(split);
            gaps += totals.gaps;
            GpuIdle {
                gpu: gpu.name.clone(),
                split,
                gaps: totals.gaps,
                host_bound_in: acc
                    .host_contexts(g)
                    .into_iter()
                    .take(HOST_CONTEXTS)
                    .map(|(context, ns)| HostBoundIn {
                        what: context_words(scan, context),
                        ns,
                    })
                    .collect(),
            }
        })
        .collect();
    // Each piece clipped to the iterations of its GPU's task it overlaps.
    let mut by_iteration: BTreeMap<usize, IdleSplit> = BTreeMap::new();
    if let Some(it) = iterations {
        for &(gpu, cause, from, to) in &acc.pieces {
            let (from, to) = (from + offset, to + offset);
            let task = scan.names.task(gpus[gpu as usize].task);
            let Some(t) = it.tasks.iter().find(|t| t.task == task) else {
                continue;
            };
            let first = t
                .iterations
                .partition_point(|o| o.begin_ns + o.duration_ns <= from);
            for (k, o) in t.iterations.iter().enumerate().skip(first) {
                if o.begin_ns >= to {
                    break;
                }
                let (a, b) = (from.max(o.begin_ns), to.min(o.begin_ns + o.duration_ns));
                if b > a {
                    by_iteration
                        .entry(k + 1)
                        .or_default()
                        .add(cause as usize, b - a);
                }
            }
        }
    }
    Some(IdleCauses {
        total,
        gaps,
        gpus: list,
        per_iteration: by_iteration
            .into_iter()
            .map(|(iteration, split)| IterationIdle { iteration, split })
            .collect(),
    })
}

/// The notes about what the split could not see.
fn idle_notes(scan: &Scan, idle: &IdleCauses) -> Vec<String> {
    let mut notes = Vec::new();
    if idle.total.idle_ns > 0 && scan.seen.launches == 0 {
        notes.push(
            "The trace has no launch arrows (CUDA API calls not traced or not translated): all GPU idle time counts as 'other'."
                .to_string(),
        );
    }
    if scan.idle_causes().pieces_left_out > 0 {
        notes.push(format!(
            "{} pieces of GPU idle time were left out of the per-iteration split (--memory-limit).",
            scan.idle_causes().pieces_left_out
        ));
    }
    notes
}

fn gpus(scan: &Scan) -> Vec<Gpu> {
    (0..scan.gpu_count())
        .map(|g| {
            let t = scan.gpu_times(g);
            Gpu {
                name: format!("{} GPU {}", scan.names.task(t.task), t.device),
                task: t.task,
                device: t.device,
                node: scan.task_nodes.get(t.task - 1).cloned().unwrap_or_default(),
                streams: t.streams,
                useful_ns: t.useful,
                communication_ns: t.communication,
                idle_ns: scan.elapsed.saturating_sub(t.useful + t.communication),
                overlap_ns: t.overlap.to_vec(),
                bins_compute_ns: t.bins_compute.to_vec(),
                bins_communication_ns: t.bins_communication.to_vec(),
                gap_count: t.gap_count,
                gap_total_ns: t.gap_total,
                gaps: scan.gaps(g),
            }
        })
        .collect()
}

/// Rows of GPUs: one per GPU within the budget, else one per node, else runs of
/// consecutive GPUs; with the sentence that says so.
pub fn group_rows(gpus: &[Gpu], budget: usize) -> (Vec<(String, Vec<usize>)>, Option<String>) {
    if gpus.len() <= budget {
        let rows = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), vec![i]))
            .collect();
        return (rows, None);
    }
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        let list = by_node.entry(g.node.as_str()).or_insert_with(|| {
            order.push(g.node.as_str());
            Vec::new()
        });
        list.push(i);
    }
    let count = format_count(gpus.len() as u64);
    if by_node.len() > 1 && by_node.len() <= budget && !order.iter().any(|n| n.is_empty()) {
        let rows: Vec<(String, Vec<usize>)> = order
            .iter()
            .map(|n| {
                (
                    format!("{n} ({} GPUs)", by_node[n].len()),
                    by_node[n].clone(),
                )
            })
            .collect();
        let sentence = format!(
            "{count} GPUs are more rows than fit: one row per node ({} rows), each the mean of the node's GPUs.",
            rows.len()
        );
        return (rows, Some(sentence));
    }
    let size = gpus.len().div_ceil(budget);
    let rows: Vec<(String, Vec<usize>)> = (0..gpus.len())
        .step_by(size)
        .map(|first| {
            let members: Vec<usize> = (first..(first + size).min(gpus.len())).collect();
            let last = *members.last().expect("a row has a GPU");
            let label = format!(
                "{} … {}",
                short_name(&gpus[first].name),
                short_name(&gpus[last].name)
            );
            (label, members)
        })
        .collect();
    let sentence = format!(
        "{count} GPUs are more rows than fit: one row per {size} consecutive GPUs ({} rows), each the mean of its GPUs.",
        rows.len()
    );
    (rows, Some(sentence))
}

/// A GPU's name without its task's host and pid: `rank 3 (node01:4242) GPU 0` →
/// `rank 3 GPU 0`.
fn short_name(name: &str) -> String {
    match (name.find(" ("), name.rfind(") ")) {
        (Some(open), Some(close)) if open < close => {
            format!("{}{}", &name[..open], &name[close + 1..])
        }
        _ => name.to_string(),
    }
}

fn heatmap(scan: &Scan, gpus: &[Gpu]) -> Heatmap {
    let count = gpus.first().map_or(0, |g| g.bins_compute_ns.len());
    let edges: Vec<u64> = (0..=count).map(|i| scan.bins.edge(i)).collect();
    let (groups, grouping) = group_rows(gpus, ROW_BUDGET);
    let elapsed = scan.elapsed.max(1) as f64;
    let rows = groups
        .into_iter()
        .map(|(label, members)| {
            let n = members.len() as f64;
            let per_bin = |pick: fn(&Gpu) -> &[u64]| -> Vec<f64> {
                (0..count)
                    .map(|b| {
                        let width = (edges[b + 1] - edges[b]).max(1) as f64;
                        members
                            .iter()
                            .map(|&g| pick(&gpus[g])[b] as f64)
                            .sum::<f64>()
                            / n
                            / width
                    })
                    .collect()
            };
            let mean = |pick: fn(&Gpu) -> u64| {
                members.iter().map(|&g| pick(&gpus[g]) as f64).sum::<f64>() / n / elapsed
            };
            HeatmapRow {
                label,
                compute_share: per_bin(|g| &g.bins_compute_ns),
                communication_share: per_bin(|g| &g.bins_communication_ns),
                useful_share: mean(|g| g.useful_ns),
                communication_share_total: mean(|g| g.communication_ns),
                idle_share: mean(|g| g.idle_ns),
                gpus: members,
            }
        })
        .collect();
    Heatmap {
        bins: count,
        edges_ns: edges,
        grouping,
        rows,
    }
}

fn overlap(gpus: &[Gpu]) -> Overlap {
    let columns = gpus
        .iter()
        .map(|g| g.overlap_ns.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let rows: Vec<OverlapRow> = gpus
        .iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let nccl_ns: u64 = g.overlap_ns.iter().sum();
            (nccl_ns > 0).then(|| OverlapRow {
                gpu: i,
                nccl_ns,
                shares: (0..columns)
                    .map(|k| g.overlap_ns.get(k).copied().unwrap_or(0) as f64 / nccl_ns as f64)
                    .collect(),
            })
        })
        .collect();
    let column = |k: usize| rows.iter().map(move |r| r.shares[k]);
    let n = rows.len().max(1) as f64;
    let average: Vec<f64> = (0..columns).map(|k| column(k).sum::<f64>() / n).collect();
    let fold = |init: f64, f: fn(f64, f64) -> f64| -> Vec<f64> {
        (0..columns)
            .map(|k| {
                if rows.is_empty() {
                    0.0
                } else {
                    column(k).fold(init, f)
                }
            })
            .collect()
    };
    let minimum = fold(f64::INFINITY, f64::min);
    let maximum = fold(f64::NEG_INFINITY, f64::max);
    let average_over_maximum = average
        .iter()
        .zip(&maximum)
        .map(|(a, m)| (*m > 0.0).then(|| a / m))
        .collect();
    Overlap {
        columns,
        rows,
        average,
        minimum,
        maximum,
        average_over_maximum,
    }
}

fn gaps(gpus: &[Gpu], threshold_ns: u64) -> Gaps {
    let mut longest: Vec<Gap> = gpus.iter().flat_map(|g| g.gaps.iter().cloned()).collect();
    longest.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.gpu.cmp(&b.gpu))
            .then(a.begin_ns.cmp(&b.begin_ns))
    });
    longest.truncate(LONGEST_GAPS);
    Gaps {
        threshold_ns,
        count: gpus.iter().map(|g| g.gap_count).sum(),
        total_ns: gpus.iter().map(|g| g.gap_total_ns).sum(),
        longest,
    }
}

fn stats(name: String, acc: &NamedStatsAcc) -> NamedStats {
    let mut stats = NamedStats::named(name);
    stats.merge(&NamedStats {
        count: acc.count,
        total_ns: acc.total,
        min_ns: acc.min,
        max_ns: acc.max,
        bytes: (acc.sized > 0).then_some(acc.bytes),
        ..NamedStats::default()
    });
    stats
}

/// Statistics by name (values with one label merged), most time first.
fn named<'a>(list: impl Iterator<Item = (String, &'a NamedStatsAcc)>) -> Vec<NamedStats> {
    let mut by_name: BTreeMap<String, NamedStats> = BTreeMap::new();
    for (name, acc) in list {
        let s = stats(name.clone(), acc);
        by_name
            .entry(name)
            .or_insert_with_key(|n| NamedStats::named(n.clone()))
            .merge(&s);
    }
    let mut list: Vec<NamedStats> = by_name.into_values().collect();
    list.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    list
}

fn kernels(scan: &Scan) -> (Vec<KernelStats>, Vec<String>) {
    let mut metrics: BTreeMap<i64, BTreeMap<String, f64>> = BTreeMap::new();
    let mut metric_names: BTreeSet<String> = BTreeSet::new();
    for (kernel, ty, mean) in scan.kernel_metric_means() {
        let (name, scale) = scan.metric_name(ty);
        metric_names.insert(name.clone());
        metrics
            .entry(kernel)
            .or_default()
            .insert(name, mean / scale);
    }
    let by_name = named(
        scan.kernel_stats()
            .map(|(v, s)| (scan.names.value(CUDA_KERNEL, v, "kernel"), s)),
    );
    // Metrics by name too (values with one label merged: the first one's).
    let mut metrics_by_name: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for (v, m) in metrics {
        metrics_by_name
            .entry(scan.names.value(CUDA_KERNEL, v, "kernel"))
            .or_insert(m);
    }
    let total: u64 = by_name.iter().map(|k| k.total_ns).sum();
    let kernels = by_name
        .into_iter()
        .map(|stats| KernelStats {
            share: share(stats.total_ns, total).unwrap_or(0.0),
            metrics: metrics_by_name.remove(&stats.name).unwrap_or_default(),
            stats,
        })
        .collect();
    (kernels, metric_names.into_iter().collect())
}

fn nccl(scan: &Scan) -> Vec<CollectiveStats> {
    type Entry = (NamedStats, usize, f64, bool, BTreeMap<u64, NamedStats>);
    let mut by_name: BTreeMap<String, Entry> = BTreeMap::new();
    for n in scan.nccl_stats() {
        let entry = by_name.entry(n.name.clone()).or_insert_with(|| {
            (
                NamedStats::named(n.name.clone()),
                0,
                0.0,
                true,
                BTreeMap::new(),
            )
        });
        entry.0.merge(&stats(n.name.clone(), &n.stats));
        for (bytes, ranks) in &n.by_communicator {
            entry.1 = entry.1.max(*ranks);
            match bus_factor(&n.name, *ranks) {
                Some(f) => entry.2 += *bytes as f64 * f,
                None => entry.3 = false,
            }
        }
        for (size, acc) in &n.by_size {
            entry
                .4
                .entry(*size)
                .or_insert_with(|| NamedStats::named(n.name.clone()))
                .merge(&stats(n.name.clone(), acc));
        }
    }
    let mut list: Vec<CollectiveStats> = by_name
        .into_values()
        .map(|(stats, ranks, bus_bytes, known, sizes)| {
            let algorithm = stats.gb_per_s;
            let factor = bus_factor(&stats.name, ranks);
            CollectiveStats {
                ranks,
                algorithm_gb_per_s: algorithm,
                bus_gb_per_s: (known && algorithm.is_some())
                    .then(|| bus_bytes / stats.total_ns as f64),
                sizes: sizes
                    .into_iter()
                    .map(|(message_bytes, s)| MessageSizeStats {
                        message_bytes,
                        count: s.count,
                        total_ns: s.total_ns,
                        mean_ns: s.mean_ns,
                        bus_gb_per_s: factor
                            .filter(|_| s.total_ns > 0)
                            .map(|f| s.bytes.unwrap_or(0) as f64 * f / s.total_ns as f64),
                    })
                    .collect(),
                stats,
            }
        })
        .collect();
    list.sort_by(|a, b| {
        b.stats
            .total_ns
            .cmp(&a.stats.total_ns)
            .then(a.stats.name.cmp(&b.stats.name))
    });
    list
}

/// The iteration range: among the candidates, the one that repeats on some task
/// and takes the most time.
fn iterations(
    candidates: &[String],
    occurrences: Vec<(u32, u32, u64, u64)>,
    task_names: &[String],
) -> Option<Iterations> {
    let mut totals: BTreeMap<u32, (u64, BTreeMap<u32, usize>)> = BTreeMap::new();
    for (c, task, begin, end) in &occurrences {
        let entry = totals.entry(*c).or_default();
        entry.0 += end - begin;
        *entry.1.entry(*task).or_default() += 1;
    }
    let chosen = *totals
        .iter()
        .max_by_key(|(c, (total, per_task))| {
            let repeats = per_task.values().any(|&n| n >= 2);
            (
                repeats,
                *total,
                std::cmp::Reverse(candidates[**c as usize].as_str()),
            )
        })?
        .0;
    let mut per_task: BTreeMap<u32, Vec<Occurrence>> = BTreeMap::new();
    for (c, task, begin, end) in occurrences {
        if c == chosen {
            per_task.entry(task).or_default().push(Occurrence {
                begin_ns: begin,
                duration_ns: end - begin,
            });
        }
    }
    let tasks: Vec<TaskIterations> = per_task
        .into_iter()
        .map(|(task, mut list)| {
            list.sort_by_key(|o| (o.begin_ns, o.duration_ns));
            let durations = list.iter().map(|o| o.duration_ns);
            TaskIterations {
                task: task_names
                    .get(task as usize - 1)
                    .cloned()
                    .unwrap_or_else(|| format!("task {task}")),
                count: list.len(),
                mean_ns: durations.clone().sum::<u64>() as f64 / list.len() as f64,
                min_ns: durations.clone().min().unwrap_or(0),
                max_ns: durations.max().unwrap_or(0),
                iterations: list,
            }
        })
        .collect();
    let per_iteration = per_iteration(&tasks);
    let mut means: Vec<f64> = tasks.iter().map(|t| t.mean_ns).collect();
    means.sort_by(f64::total_cmp);
    let median = match means.len() {
        0 => 0.0,
        n if n % 2 == 1 => means[n / 2],
        n => (means[n / 2 - 1] + means[n / 2]) / 2.0,
    };
    let mut slowest: Vec<Straggler> = tasks
        .iter()
        .map(|t| Straggler {
            task: t.task.clone(),
            mean_ns: t.mean_ns,
            over_median: (median > 0.0).then(|| t.mean_ns / median),
        })
        .collect();
    slowest.sort_by(|a, b| b.mean_ns.total_cmp(&a.mean_ns).then(a.task.cmp(&b.task)));
    slowest.truncate(SLOWEST_TASKS);
    Some(Iterations {
        range: candidates[chosen as usize].clone(),
        tasks,
        per_iteration,
        slowest,
        median_task_mean_ns: median,
    })
}

/// Iteration k (by order within each task) across the tasks.
fn per_iteration(tasks: &[TaskIterations]) -> Vec<IterationSummary> {
    let count = tasks.iter().map(|t| t.iterations.len()).max().unwrap_or(0);
    (0..count)
        .map(|k| {
            let present: Vec<(&str, u64)> = tasks
                .iter()
                .filter_map(|t| {
                    t.iterations
                        .get(k)
                        .map(|o| (t.task.as_str(), o.duration_ns))
                })
                .collect();
            let durations = present.iter().map(|p| p.1);
            let slowest = present
                .iter()
                .max_by_key(|p| (p.1, std::cmp::Reverse(p.0)))
                .map_or(String::new(), |p| p.0.to_string());
            IterationSummary {
                iteration: k + 1,
                tasks: present.len(),
                mean_ns: durations.clone().sum::<u64>() as f64 / present.len().max(1) as f64,
                min_ns: durations.clone().min().unwrap_or(0),
                max_ns: durations.max().unwrap_or(0),
                slowest_task: slowest,
            }
        })
        .collect()
}

/// The start-up before the first GPU activity, in words.
fn late_start_note(late: &FromFirstActivity) -> String {
    format!(
        "The GPUs' first activity begins at {} s, {:.0}% into the trace: the start-up before it counts as idle. \
         The figures \"from the first GPU activity\" (marked *) leave it out; --time-window {}: leaves it out of every figure.",
        super::text::seconds(late.start_ns),
        late.share_before * 100.0,
        // Rounded down, readable, and the first activity still inside.
        super::text::time_arg(match late.start_ns {
            t if t >= 10_000_000 => t / 1_000_000 * 1_000_000,
            t if t >= 10_000 => t / 1_000 * 1_000,
            t => t,
        })
    )
}

/// What the trace lacks for the report's figures, in words.
fn notes(scan: &Scan, gpus: &[Gpu], iterations: &Option<Iterations>) -> Vec<String> {
    let mut notes = Vec::new();
    let seen = &scan.seen;
    if seen.bsc_header {
        notes.push(
            "The header is BSC nsys2prv's (a ':' before the task list, no nodes): read as if it had one node."
                .to_string(),
        );
    }
    if !scan.names.has_task_level {
        notes.push(
            "The .row names no tasks (BSC's nsys2prv writes no TASK level): tasks are numbered."
                .to_string(),
        );
    }
    if gpus.is_empty() {
        notes.push(
            "No GPU stream rows (CUDA-D<n>.S<m>): no GPU efficiency model, heat map, overlap or gaps."
                .to_string(),
        );
    } else {
        if seen.nccl_kernels == 0 && seen.memory_ops == 0 {
            notes.push(
                "No NCCL kernels (63000007) and no memory operations (63000001) on the GPUs: communication is 0."
                    .to_string(),
            );
        }
        if seen.nccl_kernels > 0 && seen.nccl_with_collective == 0 {
            notes.push(
                "NCCL kernels carry no collective (type 9520): they are listed by kernel name."
                    .to_string(),
            );
        }
        if seen.nccl_kernels > 0 && seen.nccl_with_size == 0 {
            notes.push(
                "NCCL kernels carry no message size (NCCL's NVTX payload was not traced or not translated): no bytes or bandwidth."
                    .to_string(),
            );
        }
        if seen.launches == 0 {
            notes.push(
                "No launch communications (tag 55001/55002): a gap's CPU side is read on its task's first thread."
                    .to_string(),
            );
        }
    }
    if iterations.is_none() {
        notes.push(match scan.iterations_asked() {
            Some(name) => format!("No occurrence of the NVTX range '{name}' ended in the trace: no iterations."),
            None => "No NVTX range named like an iteration (iter, step, epoch): no iterations; name one with --iterations."
                .to_string(),
        });
    }
    notes
}

/// `4096` → `4,096`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str, node: &str) -> Gpu {
        Gpu::example(name, node)
    }

    #[test]
    fn rows_are_grouped_per_node_then_in_runs() {
        let few: Vec<Gpu> = (0..4).map(|i| gpu(&format!("g{i}"), "n")).collect();
        let (rows, note) = group_rows(&few, 4);
        assert_eq!(rows.len(), 4);
        assert!(note.is_none());
        let many: Vec<Gpu> = (0..12)
            .map(|i| gpu(&format!("g{i}"), ["a", "b", "c"][i % 3]))
            .collect();
        let (rows, note) = group_rows(&many, 4);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].1, [1, 4, 7, 10]);
        assert!(note.unwrap().contains("one row per node (3 rows)"));
        let (rows, note) = group_rows(&many, 2);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].1, (6..12).collect::<Vec<_>>());
        assert!(note.unwrap().contains("12 GPUs"));
        assert_eq!(rows[0].0, "g0 … g5");
        assert_eq!(short_name("rank 3 (node01:4242) GPU 0"), "rank 3 GPU 0");
        assert_eq!(short_name("task 1 GPU 0"), "task 1 GPU 0");
        assert_eq!(format_count(4096), "4,096");
        assert_eq!(format_count(999), "999");
    }

    #[test]
    fn overlap_summary_rows() {
        let mut a = gpu("a", "n");
        a.overlap_ns = vec![30, 10];
        let mut b = gpu("b", "n");
        b.overlap_ns = vec![10, 10, 20];
        let o = overlap(&[a, b, gpu("c", "n")]);
        assert_eq!(o.columns, 3);
        assert_eq!(o.rows.len(), 2);
        assert_eq!(o.rows[0].shares, [0.75, 0.25, 0.0]);
        assert_eq!(o.rows[1].shares, [0.25, 0.25, 0.5]);
        assert_eq!(o.average, [0.5, 0.25, 0.25]);
        assert_eq!(o.minimum, [0.25, 0.25, 0.0]);
        assert_eq!(o.maximum, [0.75, 0.25, 0.5]);
        assert_eq!(
            o.average_over_maximum,
            [Some(0.5 / 0.75), Some(1.0), Some(0.5)]
        );
    }

    #[test]
    fn the_slowest_tasks_are_named() {
        let occ = vec![
            (0, 1, 0, 10),
            (0, 1, 10, 20),
            (0, 2, 0, 30),
            (0, 2, 30, 40),
            (0, 3, 0, 12),
        ];
        let names = vec!["r0".to_string(), "r1".into(), "r2".into()];
        let it = iterations(&["step".into()], occ, &names).unwrap();
        assert_eq!(it.slowest[0].task, "r1");
        assert_eq!(it.slowest[0].mean_ns, 20.0);
        assert_eq!(it.median_task_mean_ns, 12.0);
        assert_eq!(it.per_iteration[0].slowest_task, "r1");
        assert_eq!(it.per_iteration[0].max_ns, 30);
        assert_eq!(it.per_iteration[1].tasks, 2);
    }
}
