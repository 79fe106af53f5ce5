//! `nsys2prv-rs report TRACE`: the command line of the `nsys2prv-report` crate. It
//! prints the summary and writes the files asked for.

use std::path::{Path, PathBuf};

use anyhow::Result;
use nsys2prv_report::files::{self, write_dir, write_file};
pub use nsys2prv_report::{check_out_dir, ReportOptions};
use nsys2prv_report::{html, WindowArg};

use crate::cli::{DiffArgs, ReportArgs};

/// `nsys2prv-rs report TRACE`.
pub fn run_command(args: &ReportArgs) -> Result<()> {
    if args.no_files {
        eprintln!("note: --no-files is no longer needed: files are written only with --out, --html or --json");
    }
    let options = ReportOptions {
        iterations: args.iterations.clone(),
        top: args.top,
        gap_threshold_ns: args.gap_threshold,
        memory_limit: args.memory_limit,
        print: true,
        out_dir: args.out.clone(),
        html: args.html.clone(),
        json: args.json.clone(),
        window: match (&args.time_window, &args.nvtx_range) {
            (Some(w), _) => Some(WindowArg::Time {
                start: w.start,
                end: w.end,
            }),
            (None, Some(spec)) => Some(WindowArg::Range(spec.clone())),
            (None, None) => None,
        },
        pipeline_stages: args.pipeline_stages.map(|n| n as usize),
    };
    match args.traces.as_slice() {
        [trace] => {
            if args.weak {
                eprintln!("note: --weak applies to several runs only");
            }
            run(trace, &options)
        }
        traces => run_several(traces, args.weak, &options),
    }
}

/// `nsys2prv-rs report RUN1 RUN2 …`: the model's factors over the runs.
fn run_several(traces: &[PathBuf], weak: bool, options: &ReportOptions) -> Result<()> {
    use nsys2prv_report::runs::Runs;
    let mut resolved = Vec::new();
    for trace in traces {
        let files = nsys2prv_report::resolve_trace(trace)?;
        nsys2prv_report::check_written_by_us(&files)?;
        resolved.push(files);
    }
    check_targets(
        options.out_dir.as_deref(),
        options.html.as_deref(),
        options.json.as_deref(),
    )?;
    let mut reports = Vec::new();
    for files in &resolved {
        reports.push(nsys2prv_report::analyze(files, options)?);
    }
    let runs = Runs::of(&reports, weak, options.iterations.is_some());
    if json_to_stdout(options.json.as_deref()) {
        crate::stdout::write(&files::json(&runs))?;
    } else {
        crate::stdout::write(runs.text().as_bytes())?;
    }
    let mut written = write_page_and_json(
        options.html.as_deref(),
        || nsys2prv_report::runs_html::page(&runs, &[]),
        options.json.as_deref(),
        || files::json(&runs),
    )?;
    if let Some(dir) = &options.out_dir {
        // The runs' own pages beside the table, linked from it.
        let links: Vec<Option<String>> = (1..=reports.len())
            .map(|i| Some(format!("run-{i}.html")))
            .collect();
        let mut all = vec![
            (
                "runs.html".to_string(),
                nsys2prv_report::runs_html::page(&runs, &links).into_bytes(),
            ),
            ("runs.json".to_string(), files::json(&runs)),
            ("runs.csv".to_string(), runs.csv()),
            ("runs.txt".to_string(), runs.text().into_bytes()),
        ];
        for (i, report) in reports.iter().enumerate() {
            all.push((
                format!("run-{}.html", i + 1),
                html::page(report).into_bytes(),
            ));
        }
        written.extend(write_dir(dir, &all)?);
    }
    say_written(&written);
    Ok(())
}

/// Computes the report of `trace`, prints it and writes the files asked for.
pub fn run(trace: &Path, options: &ReportOptions) -> Result<()> {
    let files = nsys2prv_report::resolve_trace(trace)?;
    check_targets(
        options.out_dir.as_deref(),
        options.html.as_deref(),
        options.json.as_deref(),
    )?;
    let report = nsys2prv_report::analyze(&files, options)?;
    if json_to_stdout(options.json.as_deref()) {
        crate::stdout::write(&files::json(&report))?;
    } else if options.print {
        crate::stdout::write(report.text(options.top).as_bytes())?;
    }
    let mut written = write_page_and_json(
        options.html.as_deref(),
        || html::page(&report),
        options.json.as_deref(),
        || files::json(&report),
    )?;
    if let Some(dir) = &options.out_dir {
        written.extend(write_dir(dir, &files::all(&report)?)?);
    }
    if options.print {
        say_written(&written);
    }
    Ok(())
}

/// `nsys2prv-rs diff BASE NEW`: prints the comparison, writes the files asked
/// for; `Ok(true)` when `--fail-if-slower` is exceeded.
pub fn run_diff(args: &DiffArgs) -> Result<bool> {
    use nsys2prv_report::diff::Diff;
    let base = nsys2prv_report::resolve_trace(&args.base)?;
    let new = nsys2prv_report::resolve_trace(&args.new)?;
    for files in [&base, &new] {
        nsys2prv_report::check_written_by_us(files)?;
    }
    check_targets(None, args.html.as_deref(), args.json.as_deref())?;
    let options = ReportOptions {
        iterations: args.iterations.clone(),
        top: args.top,
        gap_threshold_ns: args.gap_threshold,
        memory_limit: args.memory_limit,
        print: false,
        ..ReportOptions::default()
    };
    let base_report = nsys2prv_report::analyze(&base, &options)?;
    let new_report = nsys2prv_report::analyze(&new, &options)?;
    let diff = Diff::of(&base_report, &new_report);
    if json_to_stdout(args.json.as_deref()) {
        crate::stdout::write(&files::json(&diff))?;
    } else {
        crate::stdout::write(diff.text(args.top).as_bytes())?;
    }
    let written = write_page_and_json(
        args.html.as_deref(),
        || nsys2prv_report::diff_html::page(&diff),
        args.json.as_deref(),
        || files::json(&diff),
    )?;
    say_written(&written);
    let slower = args.fail_if_slower.is_some_and(|pct| diff.slower_than(pct));
    if let (true, Some(pct)) = (slower, args.fail_if_slower) {
        eprintln!(
            "error: NEW is slower than BASE by more than {pct} % in {} (--fail-if-slower): exit {}",
            diff.measure.what,
            nsys2prv_report::diff::SLOWER_EXIT
        );
    }
    Ok(slower)
}

/// `--json -`: the JSON goes to stdout, instead of the tables.
fn json_to_stdout(json: Option<&Path>) -> bool {
    json == Some(Path::new("-"))
}

/// Refuses, before the long part, the files that may not be replaced: the
/// directory of `--out`, the files of `--html` and `--json` (not stdout's `-`).
fn check_targets(out_dir: Option<&Path>, html: Option<&Path>, json: Option<&Path>) -> Result<()> {
    if let Some(dir) = out_dir {
        files::check_dir_target(dir)?;
    }
    for path in [html, json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
    Ok(())
}

/// Writes the page to `html` and the JSON to `json` where asked (the JSON not
/// when it went to stdout); what was written, in that order.
fn write_page_and_json(
    html: Option<&Path>,
    page: impl FnOnce() -> String,
    json: Option<&Path>,
    json_text: impl FnOnce() -> Vec<u8>,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    if let Some(path) = html {
        write_file(path, page().as_bytes())?;
        written.push(path.to_path_buf());
    }
    if let Some(path) = json.filter(|p| !json_to_stdout(Some(p))) {
        write_file(path, &json_text())?;
        written.push(path.to_path_buf());
    }
    Ok(written)
}

/// `wrote A, B` on stderr when files were written.
fn say_written(written: &[PathBuf]) {
    if !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", names.join(", "));
    }
}
