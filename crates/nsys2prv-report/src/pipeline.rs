//! Pipeline bubbles ("where is the bubble in my pipeline?"): the stages of a
//! pipeline-parallel job, found from the NCCL point-to-point transfers between
//! GPUs (chains of GPUs, stage 0 the end that sends first: activations go forward
//! before gradients come back) or given (`--pipeline-stages N`: the GPUs in rank
//! order cut into N equal blocks, as Megatron-LM orders ranks by default); per
//! stage and iteration, the bubble: the time between the stage's first and last
//! compute kernel of the iteration with no compute kernel running; with GPipe's
//! (p − 1)/(m + p − 1) beside the measured share. The figures' model is in `model`,
//! their text, page section and chart in `text`, `html` and `svg`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::model::{share, Gpu, Iterations, Pipeline, Stage, StageIteration};
use super::scan::{PipelineScan, Span, Transfers, WHOLE_RUN};

/// The stages, each a list of GPUs, and a note on how they were found.
type Stages = Vec<Vec<usize>>;

/// Stages from the transfers: GPUs linked by transfers form chains (every GPU with
/// one or two neighbours, no cycle), all of one length p ≥ 2; the s-th GPU of every
/// chain is stage s. A chain runs from the GPU that sent first on its links (the
/// activations of the first micro-batch go forward before any gradient comes
/// back); where its links disagree, the majority, and on a tie the lower GPU
/// (rank order) is stage 0, said in the note. `None`: no transfers, or not chains.
pub fn chains(transfers: &BTreeMap<(usize, usize), Transfers>) -> Option<(Stages, Option<String>)> {
    let mut neighbours: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for &(a, b) in transfers.keys() {
        if a != b {
            neighbours.entry(a).or_default().insert(b);
            neighbours.entry(b).or_default().insert(a);
        }
    }
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut paths: Vec<Vec<usize>> = Vec::new();
    for &start in neighbours.keys() {
        if seen.contains(&start) {
            continue;
        }
        let mut component = Vec::new();
        let mut stack = vec![start];
        seen.insert(start);
        while let Some(g) = stack.pop() {
            component.push(g);
            for &n in &neighbours[&g] {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        if component.iter().any(|g| neighbours[g].len() > 2) {
            return None;
        }
        let ends: Vec<usize> = component
            .iter()
            .copied()
            .filter(|g| neighbours[g].len() == 1)
            .collect();
        let &[first, _] = ends.as_slice() else {
            return None; // a cycle
        };
        let first = first.min(ends[1]);
        let mut path = vec![first];
        let mut previous = None;
        let mut at = first;
        while let Some(&next) = neighbours[&at].iter().find(|&&n| Some(n) != previous) {
            path.push(next);
            previous = Some(at);
            at = next;
        }
        if path.len() != component.len() {
            return None;
        }
        paths.push(path);
    }
    let length = paths.first()?.len();
    if paths.iter().any(|p| p.len() != length) {
        return None;
    }
    let mut mixed = false;
    for path in &mut paths {
        let (mut forward, mut backward) = (0, 0);
        for link in path.windows(2) {
            let there = transfers.get(&(link[0], link[1])).map(|t| t.first);
            let back = transfers.get(&(link[1], link[0])).map(|t| t.first);
            match (there, back) {
                (Some(a), Some(b)) if a < b => forward += 1,
                (Some(a), Some(b)) if a > b => backward += 1,
                (Some(_), None) => forward += 1,
                (None, Some(_)) => backward += 1,
                _ => {}
            }
        }
        mixed |= forward > 0 && backward > 0;
        if backward > forward {
            path.reverse();
        }
    }
    paths.sort();
    let stages = (0..length)
        .map(|s| paths.iter().map(|p| p[s]).collect())
        .collect();
    let note = mixed.then(|| {
        "The first transfers on the links of a pipeline chain do not all go the same way: its stage 0 is the end most links send from first (on a tie, the lower rank)."
            .to_string()
    });
    Some((stages, note))
}

/// `--pipeline-stages n`: the GPUs in the trace's order (tasks by rank, then
/// devices) cut into n blocks of equal size (the caller checked that n divides them).
pub fn in_rank_order(gpus: usize, n: usize) -> Stages {
    let size = gpus / n.max(1);
    (0..n)
        .map(|s| (s * size..(s + 1) * size).collect())
        .collect()
}

/// The pipeline's figures from the scan, or `None` when no pipeline is found or
/// given; with the notes to add to the report.
pub(crate) fn assemble(
    scan: &PipelineScan,
    gpus: &[Gpu],
    iterations: Option<&Iterations>,
    task_names: &[String],
    offset: u64,
    stages_given: Option<usize>,
    gpu_labels: &[String],
) -> (Option<Pipeline>, Vec<String>) {
    let mut notes = Vec::new();
    let chained = chains(&scan.transfers);
    // Micro-batches are counted on the chains' links only.
    let mut on_chains = true;
    let (stages, found_by) = match (stages_given, chained) {
        (Some(n), chained) => {
            let given = in_rank_order(gpus.len(), n);
            on_chains = chained.as_ref().is_some_and(|(found, _)| *found == given);
            if let Some((found, _)) = chained {
                if found != given {
                    notes.push(format!(
                        "--pipeline-stages {n} (the GPUs in rank order cut into {n} blocks) disagrees with the chain of NCCL point-to-point transfers, whose stage 0 is {}: the stages given are used.",
                        found[0].iter().map(|&g| gpus[g].name.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            (given, format!("--pipeline-stages {n}"))
        }
        (None, Some((found, note))) => {
            notes.extend(note);
            (found, "NCCL point-to-point transfers".to_string())
        }
        (None, None) => return (None, notes),
    };
    // Which spans are which iteration: the chosen range's occurrences on each task.
    let chosen = iterations.and_then(|it| {
        let candidate = scan.candidate_names.iter().position(|n| *n == it.range)? as u32;
        let by_task: HashMap<&str, HashMap<u64, usize>> = it
            .tasks
            .iter()
            .map(|t| {
                let begins = t
                    .iterations
                    .iter()
                    .enumerate()
                    .map(|(k, o)| (o.begin_ns, k + 1))
                    .collect();
                (t.task.as_str(), begins)
            })
            .collect();
        Some((candidate, by_task, it.range.clone()))
    });
    // Per GPU: iteration → span.
    let mut per_gpu: Vec<BTreeMap<usize, Span>> = vec![BTreeMap::new(); gpus.len()];
    for (&(gpu, key), span) in &scan.spans {
        let iteration = match &chosen {
            Some((candidate, by_task, _)) => {
                if key.0 != *candidate {
                    continue;
                }
                let task = task_names.get(gpus[gpu].task - 1).map(String::as_str);
                match task
                    .and_then(|t| by_task.get(t))
                    .and_then(|b| b.get(&(key.1 + offset)))
                {
                    Some(&k) => k,
                    None => continue,
                }
            }
            None if key == WHOLE_RUN => 1,
            None => continue,
        };
        per_gpu[gpu].insert(iteration, *span);
    }
    if chosen.is_none() {
        notes.push(
            "No iterations: each pipeline stage's bubble is over its whole run (from its first compute kernel to the end of its last)."
                .to_string(),
        );
    }
    if scan.spans_left_out > 0 {
        notes.push(format!(
            "{} spans of compute kernels were left out of the pipeline bubbles (--memory-limit).",
            scan.spans_left_out
        ));
    }
    let stage_figures: Vec<Stage> = stages
        .iter()
        .enumerate()
        .map(|(s, members)| stage(s, members, &per_gpu, gpu_labels))
        .collect();
    // The pipeline's span of each iteration, over every stage's GPUs.
    let mut extent: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for members in &stages {
        for &g in members {
            for (&k, span) in &per_gpu[g] {
                let e = extent.entry(k).or_insert((span.first, span.last));
                e.0 = e.0.min(span.first);
                e.1 = e.1.max(span.last);
            }
        }
    }
    let (mut bubble, mut total) = (0u64, 0u64);
    for members in &stages {
        for &g in members {
            for (k, span) in &per_gpu[g] {
                let (from, to) = extent[k];
                let length = to - from;
                total += length;
                bubble += length.saturating_sub(span.compute());
            }
        }
    }
    let p = stages.len() as u64;
    let micro_batches = chosen.as_ref().filter(|_| on_chains).and_then(|_| {
        let (first, second) = (stages.first()?, stages.get(1)?);
        let sent: u64 = first
            .iter()
            .flat_map(|&a| second.iter().map(move |&b| (a, b)))
            .filter_map(|key| scan.transfers.get(&key))
            .map(|t| t.count)
            .sum();
        let iterations = first.iter().map(|&g| per_gpu[g].len()).max()? as u64;
        let per = iterations * first.len() as u64;
        (sent > 0 && per > 0 && sent.is_multiple_of(per)).then_some(sent / per)
    });
    let pipeline = Pipeline {
        found_by,
        iteration_range: chosen.map(|c| c.2),
        stages: stage_figures,
        micro_batches,
        pipeline_share: share(bubble, total),
        gpipe_share: micro_batches.map(|m| (p - 1) as f64 / (m + p - 1) as f64),
    };
    (Some(pipeline), notes)
}

fn stage(
    s: usize,
    members: &[usize],
    per_gpu: &[BTreeMap<usize, Span>],
    gpu_labels: &[String],
) -> Stage {
    let mut by_iteration: BTreeMap<usize, StageIteration> = BTreeMap::new();
    for &g in members {
        for (&k, span) in &per_gpu[g] {
            let it = by_iteration.entry(k).or_insert(StageIteration {
                iteration: k,
                gpus: 0,
                span_ns: 0,
                bubble_ns: 0,
                in_nccl_ns: 0,
                idle_ns: 0,
                share: None,
            });
            it.gpus += 1;
            it.span_ns += span.length();
            it.bubble_ns += span.bubble();
            it.in_nccl_ns += span.in_nccl();
            it.idle_ns += span.idle();
        }
    }
    let per_iteration: Vec<StageIteration> = by_iteration
        .into_values()
        .map(|mut it| {
            it.share = share(it.bubble_ns, it.span_ns);
            it
        })
        .collect();
    let sum = |f: fn(&StageIteration) -> u64| per_iteration.iter().map(f).sum::<u64>();
    let (span_ns, bubble_ns) = (sum(|i| i.span_ns), sum(|i| i.bubble_ns));
    let label = match members {
        [one] => gpu_labels[*one].clone(),
        [first, rest @ ..] => format!("{} and {} more", gpu_labels[*first], rest.len()),
        [] => String::new(),
    };
    Stage {
        stage: s,
        gpus: members.to_vec(),
        label,
        iterations: per_iteration.len(),
        span_ns,
        bubble_ns,
        in_nccl_ns: sum(|i| i.in_nccl_ns),
        idle_ns: sum(|i| i.idle_ns),
        share: share(bubble_ns, span_ns),
        per_iteration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(list: &[(usize, usize, u64)]) -> BTreeMap<(usize, usize), Transfers> {
        list.iter()
            .map(|&(a, b, first)| {
                (
                    (a, b),
                    Transfers {
                        count: 4,
                        bytes: 100,
                        first,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_chain_runs_from_the_gpu_that_sends_first() {
        // 2 → 0 → 3 → 1: activations first, gradients later, on each link.
        let t = links(&[
            (2, 0, 10),
            (0, 2, 90),
            (0, 3, 20),
            (3, 0, 80),
            (3, 1, 30),
            (1, 3, 70),
        ]);
        let (stages, note) = chains(&t).unwrap();
        assert_eq!(stages, vec![vec![2], vec![0], vec![3], vec![1]]);
        assert!(note.is_none());
    }

    #[test]
    fn parallel_chains_give_stages_of_several_gpus() {
        let t = links(&[(0, 2, 1), (2, 0, 9), (1, 3, 1), (3, 1, 9)]);
        let (stages, _) = chains(&t).unwrap();
        assert_eq!(stages, vec![vec![0, 1], vec![2, 3]]);
        // One way only on a link still orients it.
        let (stages, _) = chains(&links(&[(3, 1, 5)])).unwrap();
        assert_eq!(stages, vec![vec![3], vec![1]]);
    }

    #[test]
    fn rings_stars_and_uneven_chains_are_not_pipelines() {
        assert!(chains(&links(&[(0, 1, 1), (1, 2, 2), (2, 0, 3)])).is_none());
        assert!(chains(&links(&[(0, 1, 1), (0, 2, 2), (0, 3, 3)])).is_none());
        assert!(chains(&links(&[(0, 1, 1), (2, 3, 1), (3, 4, 2)])).is_none());
        assert!(chains(&BTreeMap::new()).is_none());
    }

    #[test]
    fn links_that_disagree_are_said() {
        // 0 → 1 first, but 2 → 1 first: a tie, the lower GPU is stage 0.
        let t = links(&[(0, 1, 1), (1, 0, 5), (2, 1, 1), (1, 2, 5)]);
        let (stages, note) = chains(&t).unwrap();
        assert_eq!(stages, vec![vec![0], vec![1], vec![2]]);
        assert!(note.unwrap().contains("do not all go the same way"));
    }

    #[test]
    fn given_stages_cut_the_gpus_in_rank_order() {
        assert_eq!(
            in_rank_order(6, 3),
            vec![vec![0, 1], vec![2, 3], vec![4, 5]]
        );
    }
}
