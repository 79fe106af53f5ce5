//! The text of a Paraver view (`.cfg`), as far as choosing and fitting views
//! for a trace goes: which event types and communication tags its windows
//! select, and the same view with the types a trace lacks left out.

use std::collections::BTreeSet;

use nsys_semantics::handoff::TAG_NCCL_P2P;
use nsys_semantics::view::{TEMPLATE_LABEL, TEMPLATE_NAME, TEMPLATE_TYPE};

/// Thread functions that read communications rather than events or states
/// (paraver-kernel's `semanticthreadfunctions.cpp`).
const COMMUNICATION_FUNCTIONS: &[&str] = &["Send", "Recv", "Comm", "Number Of", "Tag"];

/// What one window of a view selects.
#[derive(Debug, Default)]
struct Window {
    /// A composed window takes its data from other windows.
    composed: bool,
    thread_function: String,
    /// `{evt_type, F}`: `=`, `[x,y]`, `All`, ...
    type_function: String,
    types: Vec<u32>,
    /// `{tag_msg, F}`: `All`, `=`, `!=`.
    tag_function: String,
    tags: Vec<i64>,
}

fn windows(cfg: &str) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    for line in cfg.lines() {
        if line.starts_with("window_name ") {
            windows.push(Window::default());
            continue;
        }
        let Some(w) = windows.last_mut() else {
            continue;
        };
        if line == "window_type composed" {
            w.composed = true;
        } else if let Some(functions) = line.strip_prefix("window_selected_functions ") {
            w.thread_function = function(functions, "thread").unwrap_or_default();
            w.type_function = function(functions, "evt_type").unwrap_or_else(|| "All".into());
            w.tag_function = function(functions, "tag_msg").unwrap_or_else(|| "All".into());
        } else if let Some(list) = line.strip_prefix("window_filter_module evt_type ") {
            w.types = numbers(list);
        } else if let Some(list) = line.strip_prefix("window_filter_module tag_msg ") {
            w.tags = numbers(list);
        }
    }
    windows
}

/// `F` of `{level, F}` in a `window_selected_functions` list.
fn function(functions: &str, level: &str) -> Option<String> {
    let start = functions.find(&format!("{{{level}, "))? + level.len() + 3;
    let len = functions[start..].find('}')?;
    Some(functions[start..start + len].to_owned())
}

/// The numbers of a filter list `N a b c` (the count left out).
fn numbers<T: std::str::FromStr>(list: &str) -> Vec<T> {
    list.split(' ')
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect()
}

impl Window {
    /// Whether a trace with these event types and communication tags gives this
    /// window something to show.
    fn has_data(&self, types: &BTreeSet<u32>, tags: &BTreeSet<i64>) -> bool {
        if self.composed {
            return true;
        }
        match self.type_function.as_str() {
            "=" => return self.types.iter().any(|t| types.contains(t)),
            "[x,y]" => {
                return match self.types[..] {
                    [low, high, ..] => types.range(low..=high).next().is_some(),
                    _ => false,
                }
            }
            _ => {}
        }
        let reads_communications = COMMUNICATION_FUNCTIONS
            .iter()
            .any(|f| self.thread_function.contains(f));
        !reads_communications || tags.iter().any(|&tag| self.selects_tag(tag))
    }

    fn selects_tag(&self, tag: i64) -> bool {
        match self.tag_function.as_str() {
            "=" => self.tags.contains(&tag),
            "!=" => !self.tags.contains(&tag),
            _ => true,
        }
    }
}

/// Whether every window of `cfg` has something to show in a trace with these
/// event types and communication tags: some type each window lists, some line
/// each window of communications lets through. Paraver says "None of the events
/// specified in the filter appear in the trace" for a view none of whose types
/// occur, and shows an empty window for a window without data.
pub fn has_data(cfg: &str, types: &BTreeSet<u32>, tags: &BTreeSet<i64>) -> bool {
    windows(cfg).iter().all(|w| w.has_data(types, tags))
}

/// `cfg` with each window's list of event types (`{evt_type, =}`) cut down to
/// the types in `trace_types`, and their labels with them; `None` when nothing
/// changes. Paraver asks "Some of the events specified in the filter doesn't
/// appear in the trace. Continue loading CFG file?" for every listed type it
/// does not find, so a CUDA view that also lists NCCL kernels would ask on every
/// trace without NCCL. A window none of whose types occur keeps its list: that
/// view has nothing to show on this trace, and Paraver says so.
/// `cfg` with NCCL's point-to-point tag added to every list of tags a window
/// leaves out (`{tag_msg, !=}`: the views of MPI messages, which list the CUDA
/// tags), for a trace that has NCCL lines; `None` when nothing changes. Traces
/// without them keep the bundled text, byte for byte.
pub fn leave_out_nccl_lines(cfg: &str, trace_tags: &BTreeSet<i64>) -> Option<String> {
    if !trace_tags.contains(&TAG_NCCL_P2P) {
        return None;
    }
    let mut out = String::with_capacity(cfg.len() + 8);
    let mut excludes = false;
    let mut changed = false;
    for line in cfg.lines() {
        if line.starts_with("window_name ") {
            excludes = false;
        } else if line.starts_with("window_selected_functions ") {
            excludes = line.contains("{tag_msg, !=}");
        } else if let Some(list) = line.strip_prefix("window_filter_module tag_msg ") {
            let mut tags: Vec<i64> = numbers(list);
            if excludes && !tags.contains(&TAG_NCCL_P2P) {
                tags.push(TAG_NCCL_P2P);
                let listed: Vec<String> = tags.iter().map(i64::to_string).collect();
                out.push_str(&format!(
                    "window_filter_module tag_msg {} {}\n",
                    tags.len(),
                    listed.join(" ")
                ));
                changed = true;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    changed.then_some(out)
}

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
            let types: Vec<u32> = numbers(list);
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

/// A template made into the view of type `ty`, labelled `label` in the `.pcf`,
/// of the domain or metric `name`. The label goes between quotes, where Paraver
/// looks it up; one it could not read back (a quote, a line break) is left
/// empty, which makes Paraver go by the number.
pub fn instantiate(template: &str, ty: u32, label: &str, name: &str) -> String {
    let plain = |s: &str| !s.chars().any(|c| c == '"' || c.is_control());
    let label = if plain(label) { label } else { "" };
    // Names go into window names and descriptions: one line each.
    let name: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    template
        .replace(TEMPLATE_TYPE, &ty.to_string())
        .replace(TEMPLATE_LABEL, label)
        .replace(TEMPLATE_NAME, &name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsys_semantics::Registry;

    fn view(name: &str) -> &'static str {
        let registry = Registry::standard();
        let declared = registry.views().find(|d| d.view.path == name);
        declared.unwrap().view.text
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

    #[test]
    fn a_view_has_data_when_every_window_finds_some() {
        let none = BTreeSet::new();
        let no_tags = BTreeSet::new();
        let types = |t: &[u32]| t.iter().copied().collect::<BTreeSet<u32>>();
        let overlap = view("analysis/comm_compute_overlap.cfg");
        assert!(has_data(
            overlap,
            &types(&[63_000_006, 63_000_007]),
            &no_tags
        ));
        assert!(!has_data(overlap, &types(&[63_000_006]), &no_tags));
        // A range filter finds any type between its ends.
        let mpi = view("analysis/mpi_profile.cfg");
        assert!(has_data(mpi, &types(&[50_000_003]), &no_tags));
        assert!(!has_data(mpi, &types(&[63_000_006]), &no_tags));
        // Lines: MPI messages are those of no CUDA tag.
        let messages = view("views/mpi_messages.cfg");
        assert!(!has_data(
            messages,
            &none,
            &BTreeSet::from([55_001, 55_003])
        ));
        assert!(has_data(messages, &none, &BTreeSet::from([55_001, 7])));
        // States: any trace.
        assert!(has_data(view("views/states.cfg"), &none, &no_tags));
    }

    #[test]
    fn templates_take_the_type_label_and_name() {
        let template = "window_name NVTX @NAME@\nwindow_filter_module evt_type 1 @TYPE@\n\
            window_filter_module evt_type_label 1 \"@LABEL@\"\n";
        assert_eq!(
            instantiate(template, 9700, "NVTX push/pop ranges (domain io)", "io"),
            "window_name NVTX io\nwindow_filter_module evt_type 1 9700\n\
             window_filter_module evt_type_label 1 \"NVTX push/pop ranges (domain io)\"\n"
        );
        let odd = instantiate(template, 9700, "NVTX (domain \"a\nb\")", "a\nb");
        assert!(odd.starts_with("window_name NVTX a b\n"), "{odd}");
        assert!(odd.ends_with("evt_type_label 1 \"\"\n"), "{odd}");
    }
}
