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
    let json_to_stdout = options.json.as_deref() == Some(Path::new("-"));
    if let Some(dir) = &options.out_dir {
        files::check_dir_target(dir)?;
    }
    for path in [&options.html, &options.json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
    let mut reports = Vec::new();
    for files in &resolved {
        reports.push(nsys2prv_report::analyze(files, options)?);
    }
    let runs = Runs::of(&reports, weak, options.iterations.is_some());
    let json = || {
        let mut text = serde_json::to_vec_pretty(&runs).expect("the runs serialise");
        text.push(b'\n');
        text
    };
    if json_to_stdout {
        crate::stdout::write(&json())?;
    } else {
        crate::stdout::write(runs.text().as_bytes())?;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(path) = options.html.as_ref() {
        let page = nsys2prv_report::runs_html::page(&runs, &[]);
        write_file(path, page.as_bytes())?;
        written.push(path.clone());
    }
    if let Some(path) = options.json.as_ref().filter(|_| !json_to_stdout) {
        write_file(path, &json())?;
        written.push(path.clone());
    }
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
            ("runs.json".to_string(), json()),
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
    if !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", names.join(", "));
    }
    Ok(())
}

/// Computes the report of `trace`, prints it and writes the files asked for.
pub fn run(trace: &Path, options: &ReportOptions) -> Result<()> {
    let files = nsys2prv_report::resolve_trace(trace)?;
    let json_to_stdout = options.json.as_deref() == Some(Path::new("-"));
    // Refuse what may not be replaced before the long part.
    if let Some(dir) = &options.out_dir {
        files::check_dir_target(dir)?;
    }
    for path in [&options.html, &options.json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
    let report = nsys2prv_report::analyze(&files, options)?;
    if json_to_stdout {
        crate::stdout::write(&files::json(&report))?;
    } else if options.print {
        crate::stdout::write(report.text(options.top).as_bytes())?;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(path) = options.html.as_ref() {
        write_file(path, html::page(&report).as_bytes())?;
        written.push(path.clone());
    }
    if let Some(path) = options.json.as_ref().filter(|_| !json_to_stdout) {
        write_file(path, &files::json(&report))?;
        written.push(path.clone());
    }
    if let Some(dir) = &options.out_dir {
        written.extend(write_dir(dir, &files::all(&report)?)?);
    }
    if options.print && !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", names.join(", "));
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
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    for path in [&args.html, &args.json].into_iter().flatten() {
        if path.as_os_str() != "-" {
            files::check_file_target(path)?;
        }
    }
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
    let json = || {
        let mut text = serde_json::to_vec_pretty(&diff).expect("a diff serialises");
        text.push(b'\n');
        text
    };
    if json_to_stdout {
        crate::stdout::write(&json())?;
    } else {
        crate::stdout::write(diff.text(args.top).as_bytes())?;
    }
    let mut written: Vec<String> = Vec::new();
    if let Some(path) = &args.html {
        write_file(path, nsys2prv_report::diff_html::page(&diff).as_bytes())?;
        written.push(path.display().to_string());
    }
    if let Some(path) = args.json.as_ref().filter(|_| !json_to_stdout) {
        write_file(path, &json())?;
        written.push(path.display().to_string());
    }
    if !written.is_empty() {
        eprintln!("wrote {}", written.join(", "));
    }
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
