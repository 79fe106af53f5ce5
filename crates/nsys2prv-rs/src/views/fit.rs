//! A view made for one trace, as Paraver's GUI opens it: timelines open on the
//! part of the run that holds records, in a time unit that suits the trace's
//! length, and histograms about GPU streams list only those rows. The bundled
//! files carry what holds for any trace (window sizes and places, colour modes,
//! a semantic scale Paraver computes when the view opens, histograms as tables);
//! this adds what needs the trace.

/// What of a trace its views are fitted to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceShape {
    /// The trace's length (the header's end time), ns.
    pub span: u64,
    /// When its first record is, ns from time 0 (the profiling session's start,
    /// as in Nsight Systems).
    pub first_record: u64,
    /// The GPU stream rows: 0-based thread numbers in Paraver's order.
    pub gpu_stream_rows: Vec<u32>,
}

/// Records starting after this share of the trace leave a lead-in worth skipping.
const LATE_START: f64 = 0.10;
/// How much of the part with records is shown before the first one, so that it
/// does not sit on the window's edge.
const MARGIN: f64 = 0.02;

impl TraceShape {
    /// Where open timelines begin, as a share of the trace (Paraver's
    /// `window_begin_time_relative`), when the first record comes late: nsys
    /// starts the session when it launches the program, which often spends a
    /// large part of the run starting up (and CUDA initialising) before its first
    /// traced call, leaving the left of the timeline empty.
    pub fn opening(&self) -> Option<f64> {
        if self.span == 0 || (self.first_record as f64) <= LATE_START * self.span as f64 {
            return None;
        }
        let first = self.first_record.min(self.span) as f64;
        let span = self.span as f64;
        Some(((first - MARGIN * (span - first)) / span).max(0.0))
    }

    /// The time unit of timelines: a trace's length reads in a few digits and a
    /// kernel's time still shows (Paraver writes the axis without decimals).
    pub fn time_unit(&self) -> &'static str {
        match self.span {
            s if s < 10_000_000 => "Nanoseconds",
            s if s < 100_000_000_000 => "Microseconds",
            _ => "Milliseconds",
        }
    }
}

/// Thread and compose functions whose values are times, in the window's unit:
/// views with one keep nanoseconds, as their descriptions say.
const TIME_VALUED_FUNCTIONS: &[&str] = &[
    "State Record Dur.",
    "Int. Between Evt",
    "Last Send Dur.",
    "Next Recv Dur.",
    "Send BandWidth",
    "Recv BandWidth",
    "Burst Time",
    "Divide by Burst Time",
    "Timer",
    "Begin Time",
    "End Time",
];

/// `cfg` made for a trace of this `shape`: open windows begin at
/// [`TraceShape::opening`]; a view of timelines only, none of whose values are
/// times, takes [`TraceShape::time_unit`] (a histogram's figures stay in
/// nanoseconds); with `stream_rows`, its histogram lists only the GPU stream rows.
pub fn fit_to_trace(cfg: &str, shape: &TraceShape, stream_rows: bool) -> String {
    let has_histogram = cfg.lines().any(|l| l == HISTOGRAM);
    let time_valued = cfg
        .lines()
        .filter(|l| {
            l.starts_with("window_selected_functions ")
                || l.starts_with("window_compose_functions ")
        })
        .any(|l| {
            TIME_VALUED_FUNCTIONS
                .iter()
                .any(|f| l.contains(&format!(", {f}}}")))
        });
    let unit = (!has_histogram && !time_valued).then(|| shape.time_unit());
    let opening = shape.opening();
    let rows = (stream_rows && !shape.gpu_stream_rows.is_empty()).then(|| {
        let rows: Vec<String> = shape.gpu_stream_rows.iter().map(u32::to_string).collect();
        format!("{OBJECTS} {}", rows.join(","))
    });

    let lines: Vec<&str> = cfg.lines().collect();
    let mut out = String::with_capacity(cfg.len() + 64);
    let mut window = 0..0;
    let mut objects_written = false;
    for (i, &line) in lines.iter().enumerate() {
        if line.starts_with("window_name ") {
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.starts_with("window_name ") || *l == HISTOGRAM)
                .map_or(lines.len(), |p| i + 1 + p);
            window = i..end;
        }
        let open = || window.contains(&i) && lines[window.clone()].contains(&"window_open true");
        let fitted = if let (Some(unit), true) = (unit, line.starts_with("window_units ")) {
            format!("window_units {unit}")
        } else if let (Some(at), true) = (opening, line.starts_with("window_begin_time_relative "))
        {
            match open() {
                true => format!("window_begin_time_relative {at:.12}"),
                false => line.to_string(),
            }
        } else if let (Some(rows), true) = (&rows, line.starts_with(OBJECTS)) {
            objects_written = true;
            rows.clone()
        } else {
            line.to_string()
        };
        out.push_str(&fitted);
        out.push('\n');
    }
    if let (Some(rows), false) = (rows, objects_written) {
        if has_histogram {
            out.push_str(&rows);
            out.push('\n');
        }
    }
    out
}

const HISTOGRAM: &str = "< NEW ANALYZER2D >";
/// The rows a histogram shows: 0-based object numbers, comma-separated, or `All`.
const OBJECTS: &str = "Analyzer2D.Objects:";

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(span: u64, first_record: u64) -> TraceShape {
        TraceShape {
            span,
            first_record,
            gpu_stream_rows: vec![2, 3, 7],
        }
    }

    const TIMELINE: &str = "window_name Kernels\nwindow_type single\nwindow_units Nanoseconds\n\
        window_begin_time_relative 0.000000000000\nwindow_open true\n\
        window_selected_functions { 14, { {thread, Last Evt Val}, {evt_type, =} } }\n\
        window_name Hidden\nwindow_type single\nwindow_units Nanoseconds\n\
        window_begin_time_relative 0.000000000000\nwindow_open false\n";

    #[test]
    fn timelines_open_where_the_records_start_when_they_start_late() {
        // The sample: records from 216 ms of 270 ms.
        let s = shape(270_072_049, 216_382_604);
        let at = s.opening().unwrap();
        let first = 216_382_604.0 / 270_072_049.0;
        assert!(at < first && at > first - 0.01, "{at} {first}");
        let fitted = fit_to_trace(TIMELINE, &s, false);
        assert!(fitted.contains(&format!(
            "window_begin_time_relative {at:.12}\nwindow_open true"
        )));
        // A hidden window is left alone.
        assert!(fitted.contains("window_begin_time_relative 0.000000000000\nwindow_open false"));
        // Records from the start: nothing moves.
        assert_eq!(shape(270_072_049, 1_000).opening(), None);
        assert_eq!(shape(0, 0).opening(), None);
        assert!(fit_to_trace(TIMELINE, &shape(1000, 50), false)
            .contains("window_begin_time_relative 0.000000000000\nwindow_open true"));
    }

    #[test]
    fn timelines_take_a_unit_for_the_trace_length_unless_their_values_are_times() {
        assert_eq!(shape(9_999_999, 0).time_unit(), "Nanoseconds");
        assert_eq!(shape(270_072_049, 0).time_unit(), "Microseconds");
        assert_eq!(shape(200_000_000_000, 0).time_unit(), "Milliseconds");
        let fitted = fit_to_trace(TIMELINE, &shape(270_072_049, 0), false);
        assert_eq!(fitted.matches("window_units Microseconds").count(), 2);
        let durations = TIMELINE.replace("Last Evt Val", "State Record Dur.");
        let fitted = fit_to_trace(&durations, &shape(270_072_049, 0), false);
        assert_eq!(fitted.matches("window_units Nanoseconds").count(), 2);
        // A histogram's figures stay in nanoseconds.
        let histogram = format!("{TIMELINE}\n< NEW ANALYZER2D >\nAnalyzer2D.Statistic: Time\n");
        let fitted = fit_to_trace(&histogram, &shape(270_072_049, 0), false);
        assert_eq!(fitted.matches("window_units Nanoseconds").count(), 2);
    }

    #[test]
    fn histograms_about_gpu_streams_list_their_rows() {
        let histogram = format!("{TIMELINE}\n< NEW ANALYZER2D >\nAnalyzer2D.Statistic: Time\n");
        let fitted = fit_to_trace(&histogram, &shape(1000, 0), true);
        assert!(fitted.ends_with("Analyzer2D.Statistic: Time\nAnalyzer2D.Objects: 2,3,7\n"));
        let listed = format!("{histogram}Analyzer2D.Objects: All\n");
        let fitted = fit_to_trace(&listed, &shape(1000, 0), true);
        assert_eq!(fitted.matches("Analyzer2D.Objects:").count(), 1);
        assert!(fitted.contains("Analyzer2D.Objects: 2,3,7\n"));
        // Not asked, or no GPU stream: every row.
        assert!(!fit_to_trace(&histogram, &shape(1000, 0), false).contains("Objects"));
        let no_streams = TraceShape {
            gpu_stream_rows: vec![],
            ..shape(1000, 0)
        };
        assert!(!fit_to_trace(&histogram, &no_streams, true).contains("Objects"));
    }
}
