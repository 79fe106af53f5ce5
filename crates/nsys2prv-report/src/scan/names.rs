//! What the scan reads besides the records: the trace's names (`.row`, `.pcf`),
//! the body as records, and the span of `--nvtx-range` (a first pass of its own).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{bail, Context, Result};
use paraver_reader::pcf::{read_pcf, Pcf};
use paraver_reader::prv::{open_body, Record};
use paraver_reader::row::read_row;
use paraver_reader::{PrvErrorKind, PrvReader, RecordBuf, TraceFiles};

use crate::types::*;

/// The trace's tables of names: `.row` levels and `.pcf` labels.
pub struct Names {
    pub tasks: Vec<String>,
    pub threads: Vec<String>,
    pub nodes: Vec<String>,
    /// Whether the `.row` has a TASK level (BSC's nsys2prv writes none).
    pub has_task_level: bool,
    pub pcf: Pcf,
}

impl Names {
    pub fn read(files: &TraceFiles) -> Result<Names> {
        let row = std::fs::File::open(&files.row)
            .and_then(|f| read_row(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .row", files.row.display()))?;
        let pcf = std::fs::File::open(&files.pcf)
            .and_then(|f| read_pcf(std::io::BufReader::new(f), &mut |_| {}))
            .with_context(|| format!("{}: cannot read the trace's .pcf", files.pcf.display()))?;
        Ok(Names {
            tasks: row.labels("TASK").to_vec(),
            threads: row.labels("THREAD").to_vec(),
            nodes: row.labels("NODE").to_vec(),
            has_task_level: row.level("TASK").is_some(),
            pcf,
        })
    }

    /// The `.pcf` label of a value, else `what value`.
    pub fn value(&self, ty: u32, value: i64, what: &str) -> String {
        self.pcf
            .value_label(ty, value)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{what} {value}"))
    }

    pub fn type_label(&self, ty: u32) -> Option<&str> {
        self.pcf.types.get(&ty).map(|t| t.label.as_str())
    }

    pub fn task(&self, task: usize) -> String {
        self.tasks
            .get(task - 1)
            .cloned()
            .unwrap_or_else(|| format!("task {task}"))
    }

    /// `the trace has 'a', 'b' and 3 more` (its NVTX ranges), for errors.
    pub fn range_list(&self) -> String {
        let ranges = self.nvtx_ranges();
        if ranges.is_empty() {
            return "the trace has no NVTX ranges".to_string();
        }
        let shown: Vec<String> = ranges.iter().take(30).map(|r| format!("'{r}'")).collect();
        let more = match ranges.len().saturating_sub(30) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("the trace has {}{more}", shown.join(", "))
    }

    /// The NVTX range names the trace has (bare, sorted, unique).
    pub fn nvtx_ranges(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for (ty, t) in &self.pcf.types {
            if !is_nvtx_type(*ty) {
                continue;
            }
            for (v, label) in t.values.iter().flatten() {
                if *v != 0 {
                    names.insert(bare(label).to_string());
                }
            }
        }
        names.into_iter().collect()
    }
}

/// The span of `--nvtx-range NAME[#N]` in a trace, found by a first pass over
/// its NVTX events (as the conversion's cut: from the first begin of a range of
/// that name to the last end, or with `#N` from the earliest to the latest of
/// every thread's N-th): (start, end, ranges, tasks).
pub fn nvtx_range_window(
    files: &TraceFiles,
    names: &Names,
    spec: &crate::NvtxRangeSpec,
) -> Result<(u64, u64, usize, usize)> {
    let targets: BTreeSet<(u32, i64)> = names
        .pcf
        .types
        .iter()
        .filter(|(ty, _)| is_nvtx_type(**ty))
        .flat_map(|(ty, t)| {
            t.values
                .iter()
                .flatten()
                .filter(|(v, label)| **v != 0 && label_is(label, &spec.name))
                .map(move |(v, _)| (*ty, *v))
        })
        .collect();
    if targets.is_empty() {
        return Err(crate::UsageError(format!(
            "--nvtx-range {spec}: no NVTX range of that name; {}",
            names.range_list()
        ))
        .into());
    }
    let prv = files.prv.display().to_string();
    let mut body = open_trace(files)?;
    let mut open: HashMap<(i128, i128, u32), Vec<Option<u64>>> = HashMap::new();
    // (task, thread) → (begin, end) of each range found, in order of end.
    let mut found: BTreeMap<(i128, i128), Vec<(u64, u64)>> = BTreeMap::new();
    let mut record = RecordBuf::new();
    while next_record(&mut body, &mut record, &prv, b'2'..=b'2')? {
        let Record::Event {
            object,
            time,
            pairs,
        } = record.record()
        else {
            continue;
        };
        let time = time.clamp(0, i128::from(u64::MAX)) as u64;
        for pair in pairs.chunks_exact(2) {
            let (ty, value) = (pair[0] as u32, pair[1] as i64);
            if !is_nvtx_type(ty) {
                continue;
            }
            let stack = open.entry((object.task, object.thread, ty)).or_default();
            if value != 0 {
                stack.push(targets.contains(&(ty, value)).then_some(time));
            } else if let Some(Some(begin)) = stack.pop() {
                found
                    .entry((object.task, object.thread))
                    .or_default()
                    .push((begin, time));
            }
        }
    }
    let chosen: Vec<((i128, i128), (u64, u64))> = match spec.occurrence {
        None => found
            .iter()
            .flat_map(|(k, v)| v.iter().map(move |r| (*k, *r)))
            .collect(),
        Some(n) => {
            let most = found.values().map(Vec::len).max().unwrap_or(0);
            let chosen: Vec<_> = found
                .iter_mut()
                .filter_map(|(k, ranges)| {
                    ranges.sort();
                    ranges.get(n - 1).map(|r| (*k, *r))
                })
                .collect();
            if chosen.is_empty() {
                bail!(crate::UsageError(format!(
                    "--nvtx-range {spec}: no thread has {n} ranges of that name (at most {most} on one thread)"
                )));
            }
            chosen
        }
    };
    let Some(start) = chosen.iter().map(|(_, r)| r.0).min() else {
        bail!(crate::UsageError(format!(
            "--nvtx-range {spec}: no range of that name ends in the trace"
        )));
    };
    let end = chosen.iter().map(|(_, r)| r.1).max().unwrap_or(start);
    let tasks: BTreeSet<i128> = chosen.iter().map(|((task, _), _)| *task).collect();
    Ok((start, end.max(start + 1), chosen.len(), tasks.len()))
}

/// A trace's body, read record by record.
pub type Body = PrvReader<Box<dyn std::io::BufRead>>;

/// Opens the trace's body and reads its header line.
pub(super) fn open_trace(files: &TraceFiles) -> Result<Body> {
    let cannot_read = || format!("{}: cannot read the trace", files.prv.display());
    let mut body = PrvReader::new(
        open_body(&files.prv, files.gzip).with_context(cannot_read)?,
        &files.prv,
    );
    body.read_header().map_err(|e| match e.kind {
        PrvErrorKind::Io(io) => anyhow::Error::new(io).context(cannot_read()),
        PrvErrorKind::Record(_) => anyhow::Error::new(e),
    })?;
    Ok(body)
}

/// Reads the next record of the kinds whose first byte is in `kinds` into
/// `record`; `Ok(false)` at the end. Other lines (comments, communicator
/// lines, records of no interest) are passed over, as they were when the report
/// read lines: a line of those kinds that is not a record is an error.
pub(super) fn next_record(
    body: &mut Body,
    record: &mut RecordBuf,
    prv: &str,
    kinds: std::ops::RangeInclusive<u8>,
) -> Result<bool> {
    loop {
        match body.read_record(record) {
            Ok(true) if kinds.contains(&(b'0' + record.kind())) => return Ok(true),
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => match e.kind {
                PrvErrorKind::Io(io) => {
                    return Err(
                        anyhow::Error::new(io).context(format!("{prv}: cannot read the trace"))
                    )
                }
                PrvErrorKind::Record(_)
                    if !body
                        .trimmed_line()
                        .first()
                        .is_some_and(|b| kinds.contains(b)) => {}
                PrvErrorKind::Record(_) => bail!("{prv}:{}: malformed record", e.line),
            },
        }
    }
}
