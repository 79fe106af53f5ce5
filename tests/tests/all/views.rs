//! The bundled Paraver views (`cfgs/`): every cfg is parsed the way Paraver's cfg
//! loader reads it (paraver-format.md §5) and checked: known tags only,
//! `window_name` before `window_type`, function names from the loader's lists,
//! filters whose counts match, histograms with `Analyzer2D.AnalysisLimits:
//! Alltrace` and valid window indices, and every event type it names emitted by
//! the tool (`pcf_catalog()`) under the label the `.pcf` gives it. The conversion
//! installs exactly these files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use end_to_end::*;
use nsys_semantics::catalog::pcf_catalog;
use nsys_semantics::event_types::{CUDA_TAGS, TAG_NCCL_P2P};

const THREAD_FUNCTIONS: &[&str] = &[
    "State As Is",
    "Useful",
    "State Sign",
    "Given State",
    "In State",
    "Not In State",
    "State Record Dur.",
    "Last Evt Val",
    "Last Evt Type",
    "Next Evt Val",
    "Next Evt Type",
    "Avg Last Evt Val",
    "Avg Next Evt Val",
    "Last Evt Val w/o Bursts",
    "Given Evt Val",
    "In Evt Val",
    "Not In Evt Val",
    "In Evt Range",
    "Int. Between Evt",
    "Event Bytes",
    "Event Sent Bytes",
    "Last Tag",
    "Comm Size",
    "Comm Partner",
    "Comm Recv. Partner",
    "Last Send Dur.",
    "Next Recv Dur.",
    "Last Send Size",
    "Send Bytes in Transit",
    "Send Messages in Transit",
    "Send BandWidth",
    "Recv Bytes in Transit",
    "Recv Messages in Transit",
    "Recv BandWidth",
    "Number Of Sends",
    "Number Of Receives",
    "Application ID",
    "TaskID",
    "Thread ID",
    "Node ID",
    "Cpu ID",
    "In Appl ID",
];

const CPU_FUNCTIONS: &[&str] = &[
    "Active Thd",
    "Active Thd Sign",
    "Active Thd Val",
    "Active Thd Val Sign",
];

const AGGREGATE_FUNCTIONS: &[&str] = &[
    "Adding",
    "AddingSign",
    "Average",
    "Maximum",
    "Minimum",
    "Activity",
    "In Activity",
    "Mode",
    "Thread i",
    "Add Tasks",
    "Changed value",
];

const COMPOSE_FUNCTIONS: &[&str] = &[
    "As Is",
    "Sign",
    "1-Sign",
    "Mod",
    "Mod+1",
    "Div",
    "Prod",
    "Add",
    "Subs",
    "Complement",
    "Inverse Div",
    "Select Range",
    "Select Range [)",
    "Is In Range",
    "Is In Range [)",
    "Is Equal",
    "Is Equal (Sign)",
    "Floor",
    "Ceil",
    "Round",
    "Abs",
    "Stacked Val",
    "In Stacked Val",
    "Nesting level",
    "LRU Depth",
    "Enumerate",
    "Accumulate",
    "Delta",
    "Burst Time",
    "Divide by Burst Time",
    "Join Bursts",
    "Timer",
    "Begin Time",
    "End Time",
    "Translate",
    "sin",
    "cos",
    "sqrt (abs)",
    "arc tan",
    "log N",
    "exp",
];

const FILTER_FUNCTIONS: &[&str] = &["All", "None", "=", "!=", ">", "<", "[x,y]"];

/// Operations of composed (derived) windows (paraver-kernel's
/// `semanticderivedfunctions.cpp`).
const DERIVED_OPERATIONS: &[&str] = &[
    "add",
    "product",
    "substract",
    "divide",
    "maximum",
    "minimum",
    "different",
    "controlled: clear by",
    "controlled: maximum",
    "controlled: add",
    "controlled: enumerate",
    "controlled: average",
];

const STATISTICS: &[&str] = &[
    "Time",
    "% Time",
    "% Time Not Zero",
    "% Window Time",
    "# Bursts",
    "% # Bursts",
    "Integral",
    "Average value",
    "Maximum",
    "Minimum",
    "Average Burst Time",
    "Stdev Burst Time",
    "Average per Burst",
    "Average per Burst != 0",
    "Average value != 0",
    "# Bursts != 0",
    "Sum bursts",
    "#Sends",
    "#Receives",
    "Bytes sent",
    "Bytes received",
];

const WINDOW_TAGS: &[&str] = &[
    "window_name",
    "window_type",
    "window_id",
    "window_units",
    "window_level",
    "window_scale_relative",
    "window_end_time_relative",
    "window_begin_time_relative",
    "window_open",
    "window_comm_lines_enabled",
    "window_flags_enabled",
    "window_comm_tagsize",
    "window_selected_functions",
    "window_compose_functions",
    "window_filter_module",
    "window_semantic_module",
    "window_factors",
    "window_operation",
    "window_identifiers",
    "window_position_x",
    "window_position_y",
    "window_width",
    "window_height",
    "window_color_mode",
    "window_compute_y_max",
    "window_maximum_y",
    "window_minimum_y",
];

/// Colour modes of `window_color_mode` (paraver-kernel's `paraverlabels.h`).
const COLOR_MODES: &[&str] = &[
    "window_in_code_mode",
    "window_in_gradient_mode",
    "window_in_null_gradient_mode",
];

/// Time units of `window_units`: views written for a trace take one that suits
/// its length.
const TIME_UNITS: &[&str] = &["Nanoseconds", "Microseconds", "Milliseconds"];

const HISTOGRAM_TAGS: &[&str] = &[
    "Analyzer2D.Name:",
    "Analyzer2D.ControlWindow:",
    "Analyzer2D.DataWindow:",
    "Analyzer2D.Accumulator:",
    "Analyzer2D.Statistic:",
    "Analyzer2D.CalculateAll:",
    "Analyzer2D.HideCols:",
    "Analyzer2D.HorizVert:",
    "Analyzer2D.AnalysisLimits:",
    "Analyzer2D.ComputeYScale:",
    "Analyzer2D.ComputeYScaleZero:",
    "Analyzer2D.Minimum:",
    "Analyzer2D.Maximum:",
    "Analyzer2D.Delta:",
    "Analyzer2D.3D_ControlWindow:",
    "Analyzer3D.ComputeYScale:",
    "Analyzer2D.3D_Minimum:",
    "Analyzer2D.3D_Maximum:",
    "Analyzer2D.3D_Delta:",
    "Analyzer2D.X:",
    "Analyzer2D.Y:",
    "Analyzer2D.Width:",
    "Analyzer2D.Height:",
    "Analyzer2D.Zoom:",
    "Analyzer2D.Objects:",
];

/// Levels a window may have, from the coarsest.
const LEVELS: &[&str] = &["workload", "appl", "task", "thread"];

fn cfgs_dir() -> PathBuf {
    workspace_root().join("cfgs")
}

/// One window as the loader builds it.
#[derive(Default, Debug)]
struct Window {
    name: String,
    composed: bool,
    level: String,
    functions: BTreeMap<String, String>,
    compose: BTreeMap<String, String>,
    types: Vec<u32>,
    labels: Vec<String>,
    tags: Vec<i64>,
    parents: Vec<usize>,
    operation: Option<String>,
}

#[derive(Default, Debug)]
struct Histogram {
    tags: BTreeMap<String, String>,
}

#[derive(Default, Debug)]
struct Cfg {
    windows: Vec<Window>,
    histograms: Vec<Histogram>,
    declared_windows: usize,
    description: Vec<String>,
}

/// `{ N, { {LEVEL, FUNCTION}, ... } }` → (N, entries).
fn parse_functions(text: &str) -> Result<(usize, Vec<(String, String)>), String> {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or("not { N, { ... } }")?;
    let (count, rest) = inner.split_once(',').ok_or("no count")?;
    let count: usize = count.trim().parse().map_err(|_| "bad count")?;
    let list = rest
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or("no entry list")?;
    let mut entries = Vec::new();
    for part in list.split('}') {
        let part = part.trim().trim_start_matches(',').trim();
        if part.is_empty() {
            continue;
        }
        let entry = part.strip_prefix('{').ok_or("entry without {")?;
        let (level, function) = entry.split_once(", ").ok_or("entry without ', '")?;
        entries.push((level.to_string(), function.to_string()));
    }
    Ok((count, entries))
}

/// `LEVEL FUNCTION { N, { K v1 ... vK, ... } }` (the parameters of the window's
/// function at LEVEL) → (level, function, each parameter's values).
fn parse_semantic_module(text: &str) -> Result<(&str, &str, Vec<Vec<f64>>), String> {
    let (level, rest) = text.split_once(' ').ok_or("no level")?;
    let (function, params) = rest.split_once(" { ").ok_or("no { N, { ... } }")?;
    let (count, list) = params.split_once(", { ").ok_or("no parameter list")?;
    let count: usize = count.parse().map_err(|_| "bad parameter count")?;
    let list = list
        .strip_suffix(" } }")
        .ok_or("parameter list not closed")?;
    let values = list
        .split(", ")
        .map(|param| {
            let mut words = param.split(' ');
            let n: usize = words
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or("bad value count")?;
            let values: Vec<f64> = words
                .map(|v| v.parse().map_err(|_| "bad value"))
                .collect::<Result<_, _>>()?;
            if values.len() != n {
                return Err("value count differs from the values listed");
            }
            Ok(values)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if values.len() != count {
        return Err("parameter count differs from the parameters listed".into());
    }
    Ok((level, function, values))
}

/// Quoted labels: `"a" "b c"`.
fn parse_labels(text: &str) -> Vec<String> {
    text.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn parse_cfg(path: &Path) -> Result<Cfg, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut cfg = Cfg::default();
    let mut lines = text.lines().enumerate().peekable();
    let mut pending_name: Option<String> = None;
    let mut in_histogram = false;
    let mut header = Vec::new();
    while let Some((i, line)) = lines.next() {
        let at = |msg: String| format!("line {}: {msg}: {line}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        if line != line.trim_end() {
            return Err(at("trailing blanks".into()));
        }
        if line == "ConfigFile.BeginDescription" {
            loop {
                let Some((_, l)) = lines.next() else {
                    return Err(at("unterminated description".into()));
                };
                if l == "ConfigFile.EndDescription" {
                    break;
                }
                let first = l.split(' ').next().unwrap_or("");
                if WINDOW_TAGS.contains(&first)
                    || HISTOGRAM_TAGS.contains(&first)
                    || first.starts_with('<')
                    || first.starts_with("ConfigFile.")
                {
                    return Err(at(format!("description line read as a tag: {l}")));
                }
                cfg.description.push(l.to_string());
            }
            continue;
        }
        if line.starts_with('#') {
            if line.starts_with("#ParaverCFG") {
                header.push("#ParaverCFG");
            }
            continue;
        }
        if line.starts_with('<') {
            match line {
                "< NEW ANALYZER2D >" => {
                    cfg.histograms.push(Histogram::default());
                    in_histogram = true;
                }
                l if l.starts_with("< NEW DISPLAYING WINDOW ") && l.ends_with(" >") => {}
                _ => return Err(at("unknown < > tag".into())),
            }
            continue;
        }
        let (tag, value) = line.split_once(' ').unwrap_or((line, ""));
        if let Some(v) = tag.strip_prefix("ConfigFile.") {
            match v {
                "Version:" if value == "3.4" => header.push("version"),
                "NumWindows:" => {
                    cfg.declared_windows = value.parse().map_err(|_| at("bad count".into()))?
                }
                _ => return Err(at("unknown ConfigFile tag".into())),
            }
            continue;
        }
        if tag.starts_with("Analyzer2D.") || tag.starts_with("Analyzer3D.") {
            if !in_histogram || !HISTOGRAM_TAGS.contains(&tag) {
                return Err(at("unknown or misplaced histogram tag".into()));
            }
            let h = cfg.histograms.last_mut().expect("in a histogram");
            if h.tags.insert(tag.to_string(), value.to_string()).is_some() {
                return Err(at("tag given twice".into()));
            }
            continue;
        }
        if !WINDOW_TAGS.contains(&tag) {
            return Err(at("unknown tag".into()));
        }
        if in_histogram {
            return Err(at("window tag after a histogram".into()));
        }
        match tag {
            "window_name" => {
                if value.is_empty() {
                    return Err(at("empty name".into()));
                }
                pending_name = Some(value.to_string());
                continue;
            }
            "window_type" => {
                let name = pending_name
                    .take()
                    .ok_or_else(|| at("window_type without a window_name before it".into()))?;
                let composed = match value {
                    "single" => false,
                    "composed" => true,
                    _ => return Err(at("unknown window type".into())),
                };
                cfg.windows.push(Window {
                    name,
                    composed,
                    ..Window::default()
                });
                continue;
            }
            _ => {}
        }
        if pending_name.is_some() {
            return Err(at("window tag between window_name and window_type".into()));
        }
        let index = cfg.windows.len();
        let w = cfg
            .windows
            .last_mut()
            .ok_or_else(|| at("window tag before any window".into()))?;
        match tag {
            "window_id" => {
                let id: usize = value.parse().map_err(|_| at("bad id".into()))?;
                if id != index {
                    return Err(at(format!("window_id {id} is window {index}")));
                }
            }
            "window_units" => {
                if !TIME_UNITS.contains(&value) {
                    return Err(at("views use Nanoseconds (or, fitted, us or ms)".into()));
                }
            }
            "window_position_x" | "window_position_y" | "window_width" | "window_height" => {
                // Paraver reads them as 16-bit unsigned numbers.
                value
                    .parse::<u16>()
                    .map_err(|_| at("not a 16-bit unsigned number".into()))?;
            }
            "window_color_mode" => {
                if !COLOR_MODES.contains(&value) {
                    return Err(at("unknown colour mode".into()));
                }
            }
            "window_maximum_y" | "window_minimum_y" => {
                value
                    .parse::<f64>()
                    .map_err(|_| at("not a number".into()))?;
            }
            "window_level" => {
                if !LEVELS.contains(&value) {
                    return Err(at(
                        "level needs no resource model: thread, task, appl, workload".into(),
                    ));
                }
                w.level = value.to_string();
            }
            "window_open"
            | "window_compute_y_max"
            | "window_comm_lines_enabled"
            | "window_flags_enabled"
            | "window_comm_tagsize" => {
                if value != "true" && value != "false" {
                    return Err(at("not true/false".into()));
                }
            }
            "window_scale_relative" | "window_end_time_relative" | "window_begin_time_relative" => {
                value
                    .parse::<f64>()
                    .map_err(|_| at("not a number".into()))?;
            }
            "window_selected_functions" => {
                let (count, entries) = parse_functions(value).map_err(at)?;
                if count != entries.len() {
                    return Err(at(format!("count {count} for {} entries", entries.len())));
                }
                for (level, function) in entries {
                    let allowed: &[&str] = match level.as_str() {
                        "thread" if !w.composed => THREAD_FUNCTIONS,
                        "cpu" if !w.composed => CPU_FUNCTIONS,
                        "appl" | "task" | "node" | "system" | "workload" => AGGREGATE_FUNCTIONS,
                        "from_obj" | "to_obj" | "tag_msg" | "size_msg" | "bw_msg" | "evt_type"
                        | "evt_value"
                            if !w.composed =>
                        {
                            FILTER_FUNCTIONS
                        }
                        _ => return Err(at(format!("level '{level}' here"))),
                    };
                    if !allowed.contains(&function.as_str()) {
                        return Err(at(format!("unknown function '{function}' for {level}")));
                    }
                    w.functions.insert(level, function);
                }
            }
            "window_compose_functions" => {
                let (count, entries) = parse_functions(value).map_err(at)?;
                if count != entries.len() {
                    return Err(at(format!("count {count} for {} entries", entries.len())));
                }
                for (level, function) in entries {
                    let known = [
                        "compose_cpu",
                        "compose_appl",
                        "compose_task",
                        "compose_thread",
                        "compose_node",
                        "compose_system",
                        "compose_workload",
                        "topcompose1",
                        "topcompose2",
                    ];
                    if !known.contains(&level.as_str()) {
                        return Err(at(format!("unknown compose level '{level}'")));
                    }
                    if !COMPOSE_FUNCTIONS.contains(&function.as_str()) {
                        return Err(at(format!("unknown compose function '{function}'")));
                    }
                    w.compose.insert(level, function);
                }
            }
            "window_filter_module" => {
                if w.composed {
                    return Err(at("filters belong to single windows".into()));
                }
                let mut words = value.splitn(3, ' ');
                let what = words.next().unwrap_or("");
                let count: usize = words
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| at("no count".into()))?;
                let rest = words.next().unwrap_or("");
                match what {
                    "evt_type" => {
                        w.types = rest
                            .split(' ')
                            .map(|t| t.parse::<u32>())
                            .collect::<Result<_, _>>()
                            .map_err(|_| at("bad type".into()))?;
                        if w.types.len() != count {
                            return Err(at("count differs from the types listed".into()));
                        }
                    }
                    "evt_type_label" => {
                        w.labels = parse_labels(rest);
                        if w.labels.len() != count || rest.matches('"').count() != 2 * count {
                            return Err(at("count differs from the labels listed".into()));
                        }
                    }
                    "tag_msg" => {
                        w.tags = rest
                            .split(' ')
                            .map(|t| t.parse::<i64>())
                            .collect::<Result<_, _>>()
                            .map_err(|_| at("bad tag".into()))?;
                        if w.tags.len() != count {
                            return Err(at("count differs from the tags listed".into()));
                        }
                    }
                    _ => return Err(at("filter module not used by the views".into())),
                }
            }
            "window_semantic_module" => {
                let (level, function, params) = parse_semantic_module(value).map_err(at)?;
                // Paraver ignores parameters of a function the window does not use.
                let used = w.functions.get(level).or_else(|| w.compose.get(level));
                if used.map(String::as_str) != Some(function) {
                    return Err(at(format!(
                        "parameters of '{function}', not the window's {level} function"
                    )));
                }
                if params.is_empty() {
                    return Err(at("no parameters".into()));
                }
            }
            "window_factors" => {
                let factors: Vec<f64> = value
                    .split(' ')
                    .map(|f| f.parse())
                    .collect::<Result<_, _>>()
                    .map_err(|_| at("bad factor".into()))?;
                if factors.len() != 2 || !w.composed {
                    return Err(at("two factors, on a composed window".into()));
                }
            }
            "window_operation" => {
                if !w.composed || !DERIVED_OPERATIONS.contains(&value) {
                    return Err(at("unknown operation, or not on a composed window".into()));
                }
                w.operation = Some(value.to_string());
            }
            "window_identifiers" => {
                w.parents = value
                    .split(' ')
                    .map(|p| p.parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| at("bad window number".into()))?;
                if !w.composed
                    || w.parents.len() != 2
                    || w.parents.iter().any(|&p| p == 0 || p >= index)
                {
                    return Err(at("a composed window's two parents come before it".into()));
                }
            }
            _ => unreachable!("tag listed in WINDOW_TAGS"),
        }
    }
    if header != ["#ParaverCFG", "version"] {
        return Err(format!("header: {header:?}"));
    }
    if pending_name.is_some() {
        return Err("window_name without window_type".into());
    }
    Ok(cfg)
}

/// Checks the parsed cfg's internal consistency; returns the event types it names.
fn check_cfg(cfg: &Cfg) -> Result<Vec<(u32, String)>, String> {
    if cfg.windows.is_empty() || cfg.declared_windows != cfg.windows.len() {
        return Err(format!(
            "NumWindows {} for {} windows",
            cfg.declared_windows,
            cfg.windows.len()
        ));
    }
    if cfg.description.is_empty() {
        return Err("no description".into());
    }
    let mut types = Vec::new();
    for (i, w) in cfg.windows.iter().enumerate() {
        let at = |msg: &str| format!("window {} '{}': {msg}", i + 1, w.name);
        if w.level.is_empty() {
            return Err(at("no window_level"));
        }
        if w.composed {
            if w.operation.is_none() || w.parents.len() != 2 {
                return Err(at("composed without operation or parents"));
            }
            for &p in &w.parents {
                if cfg.windows[p - 1].level != w.level {
                    return Err(at("parents at another level"));
                }
            }
            continue;
        }
        let thread = w
            .functions
            .get("thread")
            .ok_or_else(|| at("no thread function"))?;
        let evt_type = w.functions.get("evt_type").map_or("All", String::as_str);
        if evt_type == "All" {
            if !w.types.is_empty() {
                return Err(at("types listed but evt_type is All"));
            }
            if thread.contains("Evt") {
                return Err(at("an event function reads every type"));
            }
        } else if w.types.is_empty() {
            return Err(at("evt_type filter without types"));
        }
        if w.labels.len() != w.types.len() {
            return Err(at(
                "every type needs its label (the label is what Paraver looks up)",
            ));
        }
        let tag_fn = w.functions.get("tag_msg").map_or("All", String::as_str);
        if (tag_fn == "All") != w.tags.is_empty() {
            return Err(at("tag filter function and tag list disagree"));
        }
        for tag in &w.tags {
            if !CUDA_TAGS.contains(tag) && *tag != TAG_NCCL_P2P {
                return Err(at(&format!("tag {tag} is not one the tool writes")));
            }
        }
        // "Everything but CUDA lines" (MPI messages) must leave out every CUDA tag.
        if tag_fn == "!=" && CUDA_TAGS.iter().any(|t| !w.tags.contains(t)) {
            return Err(at("a tag filter for MPI messages lets CUDA lines through"));
        }
        types.extend(w.types.iter().copied().zip(w.labels.iter().cloned()));
    }
    if cfg.histograms.len() > 1 {
        return Err("one histogram per cfg (paramedir writes one table)".into());
    }
    for h in &cfg.histograms {
        let get = |tag: &str| h.tags.get(tag).map(String::as_str);
        if get("Analyzer2D.AnalysisLimits:") != Some("Alltrace") {
            return Err("histogram without 'Analyzer2D.AnalysisLimits: Alltrace'".into());
        }
        for tag in ["Analyzer2D.ControlWindow:", "Analyzer2D.DataWindow:"] {
            let n: usize = get(tag)
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{tag} missing"))?;
            if n == 0 || n > cfg.windows.len() {
                return Err(format!("{tag} {n} of {} windows", cfg.windows.len()));
            }
        }
        let control: usize = get("Analyzer2D.ControlWindow:").unwrap().parse().unwrap();
        let data: usize = get("Analyzer2D.DataWindow:").unwrap().parse().unwrap();
        // Paraver takes a data window at the control window's level or a coarser
        // one (a task's value for each of its threads), never a finer one.
        let level = |w: usize| LEVELS.iter().position(|l| *l == cfg.windows[w - 1].level);
        if level(data) > level(control) {
            return Err("a data window finer than the control window".into());
        }
        if let Some(third) = get("Analyzer2D.3D_ControlWindow:") {
            let third: usize = third.parse().map_err(|_| "bad 3D control window")?;
            if third == 0 || third > cfg.windows.len() || level(third) != level(control) {
                return Err("the 3D control window must be a window at the control's level".into());
            }
            let num = |tag| get(tag).and_then(|v| v.parse::<f64>().ok());
            let (Some(min), Some(max), Some(delta)) = (
                num("Analyzer2D.3D_Minimum:"),
                num("Analyzer2D.3D_Maximum:"),
                num("Analyzer2D.3D_Delta:"),
            ) else {
                return Err("3D planes need Minimum, Maximum and Delta".into());
            };
            // Every plane is a matrix: keep them few.
            if !(delta > 0.0 && max > min && (max - min) / delta <= 100.0) {
                return Err("bad or too many 3D planes".into());
            }
        }
        let statistic = get("Analyzer2D.Statistic:").ok_or("no statistic")?;
        if !STATISTICS.contains(&statistic) {
            return Err(format!("unknown statistic '{statistic}'"));
        }
        if get("Analyzer2D.Name:").is_none_or(str::is_empty) {
            return Err("histogram without a name".into());
        }
        for (tag, want) in [
            ("Analyzer2D.Accumulator:", "Semantic"),
            ("Analyzer2D.CalculateAll:", "True"),
            ("Analyzer2D.HorizVert:", "Horizontal"),
        ] {
            if get(tag) != Some(want) {
                return Err(format!("{tag} must be {want}"));
            }
        }
        match get("Analyzer2D.ComputeYScale:") {
            Some("True") => {}
            Some("False") => {
                let num = |tag| get(tag).and_then(|v| v.parse::<f64>().ok());
                let (Some(min), Some(max), Some(delta)) = (
                    num("Analyzer2D.Minimum:"),
                    num("Analyzer2D.Maximum:"),
                    num("Analyzer2D.Delta:"),
                ) else {
                    return Err("fixed columns need Minimum, Maximum and Delta".into());
                };
                if !(delta > 0.0 && max > min && (max - min) / delta <= 1000.0) {
                    return Err("bad fixed columns".into());
                }
            }
            _ => return Err("Analyzer2D.ComputeYScale must be True or False".into()),
        }
    }
    Ok(types)
}

#[test]
fn every_bundled_cfg_parses_and_names_emitted_types_by_their_labels() {
    let catalog: BTreeMap<u32, String> = pcf_catalog()
        .types
        .into_iter()
        .map(|t| (t.ty, t.label))
        .collect();
    let files = files_under(&cfgs_dir());
    assert!(files.len() >= 40, "only {} cfgs", files.len());
    let mut folders = BTreeSet::new();
    let mut failures = Vec::new();
    let scratch = tempfile::tempdir().unwrap();
    for path in &files {
        let rel = path.strip_prefix(cfgs_dir()).unwrap().display().to_string();
        if path.extension().and_then(|e| e.to_str()) != Some("cfg") {
            failures.push(format!("{rel}: not a .cfg"));
            continue;
        }
        folders.insert(rel.split('/').next().unwrap().to_string());
        // A template is checked made for a type the catalog does not know,
        // which must carry the label it is given.
        let parsed = match rel.starts_with("templates/") {
            true => parse_cfg(&instantiate_template(scratch.path(), path)),
            false => parse_cfg(path),
        };
        let result = parsed.and_then(|cfg| {
            let types = check_cfg(&cfg)?;
            for (ty, label) in types {
                if ty == TEMPLATE_TYPE && label == TEMPLATE_LABEL {
                    continue;
                }
                match catalog.get(&ty) {
                    None => return Err(format!("type {ty} is not emitted by the tool")),
                    Some(known) if *known != label => {
                        return Err(format!("type {ty} is labelled '{known}', not '{label}'"))
                    }
                    Some(_) => {}
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            failures.push(format!("{rel}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        folders.into_iter().collect::<Vec<_>>(),
        ["analysis", "basics", "efficiency", "templates", "views"]
    );
}

const TEMPLATE_TYPE: u32 = 999_999_999;
const TEMPLATE_LABEL: &str = "Template type";

/// The template at `path` made for [`TEMPLATE_TYPE`], written into `dir`.
fn instantiate_template(dir: &Path, path: &Path) -> PathBuf {
    use nsys_semantics::view::{TEMPLATE_LABEL as LABEL, TEMPLATE_NAME, TEMPLATE_TYPE as TYPE};
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains(TYPE) && text.contains(LABEL),
        "{}: a template names its type and label",
        path.display()
    );
    let made = text
        .replace(TYPE, &TEMPLATE_TYPE.to_string())
        .replace(LABEL, TEMPLATE_LABEL)
        .replace(TEMPLATE_NAME, "some name");
    let out = dir.join(path.file_name().unwrap());
    std::fs::write(&out, made).unwrap();
    out
}

#[test]
fn the_checker_rejects_what_paraver_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(cfgs_dir().join("analysis/kernels_profile.cfg")).unwrap();
    assert!(parse_cfg_text(dir.path(), &good).is_ok());
    let cases = [
        ("Last Evt Val", "Last Evt Value"),
        ("Analyzer2D.AnalysisLimits: Alltrace\n", ""),
        (
            "Analyzer2D.AnalysisLimits: Alltrace",
            "Analyzer2D.AnalysisLimits: Alltrace # all",
        ),
        ("\"CUDA kernel\"", "\"CUDA kernels\""),
        ("evt_type 1 63000006", "evt_type 1 63000099"),
        ("Analyzer2D.ControlWindow: 1", "Analyzer2D.ControlWindow: 2"),
        ("Analyzer2D.Statistic: Time", "Analyzer2D.Statistic: Times"),
    ];
    for (from, to) in cases {
        assert!(good.contains(from), "{from}");
        let bad = good.replacen(from, to, 1);
        assert!(
            parse_cfg_text(dir.path(), &bad).is_err(),
            "accepted: {from} -> {to}"
        );
    }
    // window_name must come before window_type.
    let swapped = good.replacen(
        "window_name CUDA kernel\nwindow_type single",
        "window_type single\nwindow_name CUDA kernel",
        1,
    );
    assert_ne!(swapped, good);
    assert!(parse_cfg_text(dir.path(), &swapped).is_err());
    // Edits of other views.
    let others = [
        // MPI messages that let CUDA event waits and host callbacks through
        // (paramedir found the view empty on CUDA traces, yet drawing them).
        (
            "views/mpi_messages.cfg",
            "tag_msg 4 55001 55002 55003 55004",
            "tag_msg 2 55001 55002",
        ),
        // Parameters of another function than the window's: Paraver drops them.
        (
            "analysis/gpu_idle_gaps.cfg",
            "window_semantic_module thread State Record Dur.",
            "window_semantic_module thread State As Is",
        ),
    ];
    for (view, from, to) in others {
        let good = std::fs::read_to_string(cfgs_dir().join(view)).unwrap();
        assert!(parse_cfg_text(dir.path(), &good).is_ok(), "{view}");
        assert!(good.contains(from), "{view}: {from}");
        let bad = good.replacen(from, to, 1);
        assert!(
            parse_cfg_text(dir.path(), &bad).is_err(),
            "{view}: accepted {from} -> {to}"
        );
    }
}

/// Parses and checks cfg text, including the types against the catalog.
fn parse_cfg_text(dir: &Path, text: &str) -> Result<(), String> {
    let path = dir.join("x.cfg");
    std::fs::write(&path, text).unwrap();
    let cfg = parse_cfg(&path)?;
    let catalog: BTreeMap<u32, String> = pcf_catalog()
        .types
        .into_iter()
        .map(|t| (t.ty, t.label))
        .collect();
    for (ty, label) in check_cfg(&cfg)? {
        if catalog.get(&ty) != Some(&label) {
            return Err(format!("type {ty} '{label}'"));
        }
    }
    Ok(())
}

/// A conversion installs the views the trace has data for, each the bundled file
/// or the bundled file with absent types left out of its filters, and the
/// index; `--all-views` installs every bundled view (templates aside).
#[test]
fn a_conversion_installs_the_views_the_trace_fills_and_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/synthetic/cuda_2025.5.sqlite");
    let rel = |base: &Path, files: &[PathBuf]| -> BTreeSet<String> {
        files
            .iter()
            .map(|p| p.strip_prefix(base).unwrap().display().to_string())
            .collect()
    };
    let bundled: BTreeSet<String> = rel(&cfgs_dir(), &files_under(&cfgs_dir()))
        .into_iter()
        .filter(|v| !v.starts_with("templates/"))
        .collect();

    let out = dir.path().join("t.prv");
    let result = convert(&[&input], &out, &[]);
    assert!(result.status.success(), "{}", stderr(&result));
    let installed = dir.path().join("t.cfgs");
    let written = rel(&installed, &cfgs_under(&installed));
    assert!(
        written.is_subset(&bundled),
        "{:?}",
        written.difference(&bundled)
    );
    for view in [
        "views/cuda_activities.cfg",
        "views/kernels.cfg",
        "views/cuda_events.cfg",
        "analysis/kernel_duration_histogram.cfg",
        "views/start-here/where_gpu_time_goes.cfg",
        "views/start-here/where_ranks_wait.cfg",
        "views/start-here/compute_communication_overlap.cfg",
    ] {
        assert!(written.contains(view), "{view} not written");
    }
    // No MPI, OpenMP, NVTX or graphs in this CUDA report.
    for view in [
        "views/mpi_calls.cfg",
        "views/mpi_messages.cfg",
        "views/openmp.cfg",
        "views/nvtx_ranges.cfg",
        "views/cuda_graphs.cfg",
        "views/gpu_memory_usage.cfg",
    ] {
        assert!(!written.contains(view), "{view} written");
    }
    let index = std::fs::read_to_string(installed.join("INDEX.md")).unwrap();
    for view in &written {
        assert!(
            index.contains(&format!("[{view}]({view})")),
            "{view} not indexed"
        );
    }
    assert!(!index.contains("mpi_calls"));
    assert!(!index.contains("Without data in this trace"));

    // Every bundled view, those without data listed apart.
    let all = dir.path().join("all.prv");
    let result = convert(&[&input], &all, &["--all-views"]);
    assert!(result.status.success(), "{}", stderr(&result));
    let installed = dir.path().join("all.cfgs");
    assert_eq!(rel(&installed, &cfgs_under(&installed)), bundled);
    let index = std::fs::read_to_string(installed.join("INDEX.md")).unwrap();
    let without = index.find("## Without data in this trace").unwrap();
    assert!(index[without..].contains("[views/mpi_calls.cfg]"));
    assert!(!index[without..].contains("[views/kernels.cfg]"));
    for view in &bundled {
        let text = std::fs::read_to_string(installed.join(view)).unwrap();
        let original = std::fs::read_to_string(cfgs_dir().join(view)).unwrap();
        // Only filters change, and what fits the view to the trace's time and rows.
        assert_eq!(unfitted(&text), unfitted(&original), "{view}");
    }
}

/// A view's lines but those a conversion fits to the trace: the event types
/// it has, where the timelines open and in what unit, a histogram's rows.
fn unfitted(cfg: &str) -> Vec<&str> {
    const FITTED: &[&str] = &[
        "window_filter_module evt_type",
        "window_units ",
        "window_begin_time_relative ",
        "Analyzer2D.Objects:",
    ];
    cfg.lines()
        .filter(|l| !FITTED.iter().any(|f| l.starts_with(f)))
        .collect()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The views written beside a trace list only the event types it has (Paraver
/// asks whether to go on for each listed type it does not find): on a CUDA trace
/// without NCCL kernels, no view lists the NCCL kernel type next to others.
#[test]
fn views_beside_a_trace_list_only_its_types() {
    use nsys_synth::{write_export, SchemaVersion, SynthSpec};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("no_nccl.sqlite");
    write_export(&SynthSpec::small(SchemaVersion::V3_24), &input).unwrap();
    let conn = rusqlite::Connection::open(&input).unwrap();
    let removed = conn
        .execute(
            "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName IN
             (SELECT id FROM StringIds WHERE value LIKE 'nccl%')",
            [],
        )
        .unwrap();
    drop(conn);
    assert!(removed > 0);
    let out = dir.path().join("t.prv");
    let result = convert(&[&input], &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stats = check_trace(&out);
    assert_eq!(begins(&stats, 63_000_007), 0);
    let occurs =
        |ty: u32| stats.event_begins.contains_key(&ty) || stats.event_ends.contains_key(&ty);
    let installed = dir.path().join("t.cfgs");
    let mut fitted = Vec::new();
    for path in cfgs_under(&installed) {
        let rel = path.strip_prefix(&installed).unwrap().display().to_string();
        let cfg = parse_cfg(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        check_cfg(&cfg).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for w in cfg
            .windows
            .iter()
            .filter(|w| w.types.iter().any(|&t| occurs(t)))
        {
            let missing: Vec<u32> = w.types.iter().copied().filter(|&t| !occurs(t)).collect();
            assert!(missing.is_empty(), "{rel}: '{}' lists {missing:?}", w.name);
        }
        let Ok(bundled) = std::fs::read_to_string(cfgs_dir().join(&rel)) else {
            continue;
        };
        let filters = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.starts_with("window_filter_module evt_type"))
                .map(str::to_owned)
                .collect()
        };
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(unfitted(&written), unfitted(&bundled), "{rel}");
        if filters(&written) != filters(&bundled) {
            fitted.push(rel);
        }
    }
    assert_eq!(
        fitted,
        [
            "analysis/gpu_active.cfg",
            "efficiency/communication_efficiency.cfg",
            "efficiency/orchestration_efficiency.cfg",
            "views/cuda_activities.cfg",
            "views/start-here/compute_communication_overlap.cfg",
        ]
    );
}

/// Every bundled view has one entry in the registry (a category's or the general
/// views'), with the question the index shows; every entry is bundled; the views
/// made per type are the templates.
#[test]
fn every_view_has_one_entry_with_its_question() {
    let bundled: BTreeSet<String> = files_under(&cfgs_dir())
        .iter()
        .map(|p| p.strip_prefix(cfgs_dir()).unwrap().display().to_string())
        .collect();
    let registry = nsys_semantics::Registry::standard();
    let mut entries: BTreeMap<&str, usize> = BTreeMap::new();
    for declared in registry.views() {
        let view = declared.view;
        *entries.entry(view.path).or_default() += 1;
        assert!(bundled.contains(view.path), "{} is not bundled", view.path);
        assert!(
            view.question.ends_with('?') && view.question.len() > 20,
            "{}: question {:?}",
            view.path,
            view.question
        );
        assert_eq!(
            view.per_type.is_some(),
            view.path.starts_with("templates/"),
            "{}: templates, and only they, are made per type",
            view.path
        );
    }
    for view in &bundled {
        let count = entries.get(view.as_str()).copied().unwrap_or(0);
        assert_eq!(count, 1, "{view} has {count} entries in the registry");
    }
}
