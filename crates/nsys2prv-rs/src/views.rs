//! The Paraver views (`.cfg`) bundled in the binary and installed next to each trace.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

// (relative path, contents) of every bundled view: `views/` timelines (one per GPU
// metric under `views/gpu_metrics/`), `basics/` one kernel attribute or id each,
// `analysis/` histograms, `efficiency/` the GPU efficiency model. Listed by
// `build.rs` from `cfgs/`.
include!(concat!(env!("OUT_DIR"), "/views.rs"));

/// Creates `dir` and writes every view and the marker in it. Nothing is created
/// recursively: if an interrupt removes the staging directory meanwhile, it
/// stays removed (see `interrupt`).
pub fn write(dir: &Path, marker: &str) -> Result<()> {
    let create = |d: &Path| match std::fs::create_dir(d) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(e).with_context(|| format!("{}: cannot create directory", d.display()))
        }
        _ => Ok(()),
    };
    create(dir)?;
    std::fs::write(dir.join(crate::output_set::MARKER), marker)
        .with_context(|| format!("{}: cannot write the views", dir.display()))?;
    let mut last_parent = None;
    for (rel, text) in VIEWS {
        let rel = Path::new(rel);
        if let Some(parent) = rel.parent().filter(|p| last_parent != Some(*p)) {
            for ancestor in parent.ancestors().collect::<Vec<_>>().into_iter().rev() {
                if !ancestor.as_os_str().is_empty() {
                    create(&dir.join(ancestor))?;
                }
            }
            last_parent = Some(parent);
        }
        crate::interrupt::checkpoint("writing views");
        let path = dir.join(rel);
        std::fs::write(&path, text)
            .with_context(|| format!("{}: cannot write view", path.display()))?;
    }
    Ok(())
}

/// Drops from the views' event-type filters the types the trace lacks (see
/// [`fit_filters`]), so that Paraver opens them without asking whether to go on.
/// `dir` holds the views written by [`write`].
pub fn fit_to(dir: &Path, trace_types: &BTreeSet<u32>) -> Result<()> {
    for (rel, text) in VIEWS {
        if let Some(fitted) = fit_filters(text, trace_types) {
            let path = dir.join(rel);
            std::fs::write(&path, fitted)
                .with_context(|| format!("{}: cannot write view", path.display()))?;
        }
    }
    Ok(())
}

/// `cfg` with each window's list of event types (`{evt_type, =}`) cut down to
/// the types in `trace_types`, and their labels with them; `None` when nothing
/// changes. Paraver asks "Some of the events specified in the filter doesn't
/// appear in the trace. Continue loading CFG file?" for every listed type it
/// does not find, so a CUDA view that also lists NCCL kernels would ask on every
/// trace without NCCL. A window none of whose types occur keeps its list: that
/// view has nothing to show on this trace, and Paraver says so.
pub fn fit_filters(cfg: &str, trace_types: &BTreeSet<u32>) -> Option<String> {
    let mut out = String::with_capacity(cfg.len());
    let mut changed = false;
    let mut lists_types = false;
    // Positions kept of the window's type list, for its label list.
    let mut kept: Option<Vec<usize>> = None;
    for line in cfg.lines() {
        let mut fitted = None;
        if line.starts_with("window_name ") {
            (lists_types, kept) = (false, None);
        } else if line.starts_with("window_selected_functions ") {
            lists_types = line.contains("{evt_type, =}");
        } else if let Some(list) = line.strip_prefix("window_filter_module evt_type_label ") {
            if let Some(keep) = &kept {
                // A missing label is written empty, which Paraver reads as "use the number".
                let labels = quoted(list);
                let label = |i: usize| format!("\"{}\"", labels.get(i).copied().unwrap_or(""));
                fitted = Some(format!(
                    "window_filter_module evt_type_label {} {}",
                    keep.len(),
                    keep.iter().map(|&i| label(i)).collect::<Vec<_>>().join(" ")
                ));
            }
        } else if let Some(list) = line.strip_prefix("window_filter_module evt_type ") {
            let types: Vec<u32> = list
                .split(' ')
                .skip(1)
                .filter_map(|t| t.parse().ok())
                .collect();
            let keep: Vec<usize> = (0..types.len())
                .filter(|&i| trace_types.contains(&types[i]))
                .collect();
            if lists_types && !keep.is_empty() && keep.len() < types.len() {
                fitted = Some(format!(
                    "window_filter_module evt_type {} {}",
                    keep.len(),
                    keep.iter()
                        .map(|&i| types[i].to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
                kept = Some(keep);
            }
        }
        changed |= fitted.is_some();
        out.push_str(fitted.as_deref().unwrap_or(line));
        out.push('\n');
    }
    changed.then_some(out)
}

/// The quoted strings of a label list: `"a" "b c"` gives `a`, `b c`.
fn quoted(list: &str) -> Vec<&str> {
    list.split('"').skip(1).step_by(2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &str) -> &'static str {
        VIEWS.iter().find(|(rel, _)| *rel == name).unwrap().1
    }

    fn filter_lines(cfg: &str) -> Vec<&str> {
        cfg.lines()
            .filter(|l| l.starts_with("window_filter_module evt_type"))
            .collect()
    }

    #[test]
    fn absent_types_leave_the_filters_and_their_labels() {
        let cuda_only = BTreeSet::from([63_000_000, 63_000_001, 63_000_006, 9200]);
        let fitted = fit_filters(view("views/cuda_activities.cfg"), &cuda_only).unwrap();
        assert_eq!(
            filter_lines(&fitted),
            [
                "window_filter_module evt_type 3 63000000 63000001 63000006",
                "window_filter_module evt_type_label 3 \"CUDA library call\" \"CUDA memcpy/memset\" \"CUDA kernel\"",
            ]
        );
        // Only the filter lines change.
        let original = view("views/cuda_activities.cfg");
        let other = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with("window_filter_module evt_type"))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(other(&fitted), other(original));
    }

    #[test]
    fn views_with_every_type_or_none_stay_as_they_are() {
        let all = BTreeSet::from([63_000_000, 63_000_001, 63_000_006, 63_000_007]);
        assert_eq!(fit_filters(view("views/cuda_activities.cfg"), &all), None);
        // No NCCL kernel at all: the NCCL window keeps its type (Paraver then says
        // the view has nothing to show), the kernel window is whole anyway.
        let kernels = BTreeSet::from([63_000_006]);
        assert_eq!(
            fit_filters(view("analysis/comm_compute_overlap.cfg"), &kernels),
            None
        );
        assert_eq!(
            fit_filters(view("views/nccl_kernels.cfg"), &BTreeSet::new()),
            None
        );
    }

    #[test]
    fn each_window_is_fitted_on_its_own() {
        // GPU useful (kernels) and GPU busy (copies, kernels, NCCL kernels).
        let no_nccl = BTreeSet::from([63_000_001, 63_000_006]);
        let fitted =
            fit_filters(view("efficiency/communication_efficiency.cfg"), &no_nccl).unwrap();
        assert_eq!(
            filter_lines(&fitted),
            [
                "window_filter_module evt_type 1 63000006",
                "window_filter_module evt_type_label 1 \"CUDA kernel\"",
                "window_filter_module evt_type 2 63000001 63000006",
                "window_filter_module evt_type_label 2 \"CUDA memcpy/memset\" \"CUDA kernel\"",
            ]
        );
    }

    #[test]
    fn only_equality_filters_are_fitted() {
        let cfg = "window_name W\nwindow_type single\n\
            window_selected_functions { 2, { {thread, Last Evt Val}, {evt_type, [x,y]} } }\n\
            window_filter_module evt_type 2 50000001 50000005\n";
        assert_eq!(fit_filters(cfg, &BTreeSet::from([50_000_001])), None);
    }
}
