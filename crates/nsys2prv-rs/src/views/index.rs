//! `INDEX.md` of a views directory: each view written, the question it answers
//! and the categories it needs, from the categories' declarations.

use std::fmt::Write;

use super::TraceShape;

/// One view of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path under the views directory, `/`-separated.
    pub path: String,
    pub question: String,
    /// Names of the categories it needs (none: any trace).
    pub needs: Vec<&'static str>,
    /// The trace has data for it (`--all-views` also writes the others).
    pub has_data: bool,
}

pub const FILE: &str = "INDEX.md";

/// Sections of the index, by where the views are; the first that matches.
const SECTIONS: &[(&str, &str)] = &[
    ("views/start-here/", "Start here"),
    ("views/", "Timelines"),
    ("basics/", "Kernel and copy attributes (timelines)"),
    ("analysis/", "Profiles and histograms"),
    ("efficiency/", "GPU efficiency model"),
];

/// The index of the views in `entries` of the trace `trace`, written into the
/// views directory `views` (both as the user finds them from the trace's directory),
/// whose time and rows they are fitted to (`shape`).
pub fn render(trace: &str, views: &str, entries: &[Entry], shape: &TraceShape) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Paraver views of {trace}\n");
    let _ = writeln!(
        out,
        "Written by nsys2prv-rs {} with the views this trace has data for. Open one with \
         `wxparaver {trace} {views}/VIEW`, or compute it without the GUI with \
         `paramedir {trace} {views}/VIEW OUTPUT`, VIEW being a path below. New to \
         Paraver? Start with `views/start-here/`.\n",
        env!("CARGO_PKG_VERSION")
    );
    opening(&mut out, shape);
    let (with_data, without): (Vec<&Entry>, Vec<&Entry>) = entries.iter().partition(|e| e.has_data);
    for (prefix, title) in SECTIONS {
        let section: Vec<&Entry> = with_data
            .iter()
            .copied()
            .filter(|e| section_of(&e.path) == Some(*prefix))
            .collect();
        table(&mut out, title, &section);
    }
    let elsewhere: Vec<&Entry> = with_data
        .iter()
        .copied()
        .filter(|e| section_of(&e.path).is_none())
        .collect();
    table(&mut out, "Other views", &elsewhere);
    if !without.is_empty() {
        let _ = writeln!(
            out,
            "## Without data in this trace\n\nWritten because of `--all-views`: the trace \
             lacks what these views show (Paraver says so, or shows nothing).\n"
        );
        rows(&mut out, &without);
    }
    out
}

/// How the views open: where their windows go, and the part of the run the
/// timelines show (why their left may be empty, or why they start late).
fn opening(out: &mut String, shape: &TraceShape) {
    let _ = writeln!(
        out,
        "The views are laid out for a 1920x1080 screen, right of Paraver's main window: \
         timelines of names (kernels, calls, ranges: in code colour) at the top; states, \
         magnitudes (sizes, counts, metrics: in a gradient over the values Paraver finds when \
         the view opens), `basics/` and the timelines of histogram views below them; \
         histograms at the bottom, as tables, the three `views/start-here/` side by side. So \
         `views/states.cfg`, a view of names and the start-here views open side by side. Screenshots of the starter views: `docs/views.md` in nsys2prv-rs's \
         sources.\n"
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    let _ = write!(
        out,
        "Time 0 is the start of the profiling session, as in Nsight Systems; the trace's first \
         record is at {:.3} ms of {:.3} ms. ",
        ms(shape.first_record),
        ms(shape.span)
    );
    match shape.opening() {
        Some(at) => {
            let _ = writeln!(
                out,
                "Before it nothing was recorded: nsys starts the session when it launches the \
                 program, which then starts up (and initialises CUDA, if it uses it) before its \
                 first traced call. So the timelines open at {:.3} ms, on the part of the run \
                 that holds records; Paraver's \"Fit time scale\" (or zooming out) shows the \
                 whole trace. Histograms cover the whole trace.\n",
                ms((at * shape.span as f64) as u64)
            );
        }
        None => out.push_str("Timelines open on the whole trace.\n\n"),
    }
}

fn section_of(path: &str) -> Option<&'static str> {
    SECTIONS
        .iter()
        .map(|(prefix, _)| *prefix)
        .find(|prefix| path.starts_with(prefix))
}

fn table(out: &mut String, title: &str, entries: &[&Entry]) {
    if entries.is_empty() {
        return;
    }
    let _ = writeln!(out, "## {title}\n");
    rows(out, entries);
}

fn rows(out: &mut String, entries: &[&Entry]) {
    out.push_str("| view | question it answers | needs |\n|---|---|---|\n");
    for e in entries {
        let needs = match e.needs.is_empty() {
            true => "any trace".to_string(),
            false => e.needs.join(", "),
        };
        let _ = writeln!(
            out,
            "| [{}]({}) | {} | {} |",
            cell(&e.path),
            link(&e.path),
            cell(&e.question),
            needs
        );
    }
    out.push('\n');
}

/// Text for a table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|")
}

/// A relative link: blanks and parentheses escaped.
fn link(path: &str) -> String {
    path.replace(' ', "%20")
        .replace('(', "%28")
        .replace(')', "%29")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, question: &str, needs: &[&'static str], has_data: bool) -> Entry {
        Entry {
            path: path.into(),
            question: question.into(),
            needs: needs.to_vec(),
            has_data,
        }
    }

    fn shape(span: u64, first_record: u64) -> TraceShape {
        TraceShape {
            span,
            first_record,
            gpu_stream_rows: vec![],
        }
    }

    #[test]
    fn the_index_says_why_timelines_start_late() {
        let entries = [entry("views/a.cfg", "A?", &[], true)];
        // The synthetic sample: nothing before 216 ms of 270 ms.
        let late = render(
            "t.prv",
            "t.cfgs",
            &entries,
            &shape(270_072_049, 216_382_604),
        );
        assert!(
            late.contains("the trace's first record is at 216.383 ms of 270.072 ms"),
            "{late}"
        );
        assert!(
            late.contains("So the timelines open at 215.309 ms"),
            "{late}"
        );
        let early = render("t.prv", "t.cfgs", &entries, &shape(270_072_049, 1_000));
        assert!(
            early.contains("Timelines open on the whole trace."),
            "{early}"
        );
        assert!(!early.contains("open at"), "{early}");
        assert!(early.contains("`docs/views.md`"));
    }

    #[test]
    fn views_are_listed_by_section_with_what_they_need() {
        let index = render(
            "run.prv",
            "run.cfgs",
            &[
                entry("views/kernels.cfg", "Which kernel?", &["kernels"], true),
                entry("analysis/x.cfg", "How | much?", &["kernels", "nccl"], true),
                entry("views/start-here/a.cfg", "Where?", &[], true),
                entry("views/mpi_calls.cfg", "MPI?", &["mpi"], false),
            ],
            &shape(1_000_000, 0),
        );
        let start = index.find("## Start here").unwrap();
        let timelines = index.find("## Timelines").unwrap();
        let profiles = index.find("## Profiles and histograms").unwrap();
        let without = index.find("## Without data in this trace").unwrap();
        assert!(start < timelines && timelines < profiles && profiles < without);
        assert!(index
            .contains("| [views/start-here/a.cfg](views/start-here/a.cfg) | Where? | any trace |"));
        assert!(index.contains("| How \\| much? | kernels, nccl |"));
        assert!(index[without..].contains("views/mpi_calls.cfg"));
        assert!(!index[..without].contains("views/mpi_calls.cfg"));
        assert!(index.contains("wxparaver run.prv run.cfgs/VIEW"));
    }

    #[test]
    fn no_section_without_views() {
        let index = render(
            "t.prv",
            "t.cfgs",
            &[entry("views/a.cfg", "A?", &[], true)],
            &shape(1_000_000, 0),
        );
        assert!(!index.contains("## Start here"));
        assert!(!index.contains("Without data"));
    }
}
