//! Independent validator for Paraver traces (`NAME.prv[.gz]` + `NAME.pcf` + `NAME.row`),
//! on the crate's parsers. Paraver itself accepts many broken traces
//! silently (wrong order, times past the end, wrapped numbers, missing labels), so this
//! module is deliberately stricter than the Paraver loader.
//!
//! The `.prv` body is streamed: memory grows with the number of threads, event types,
//! states and pcf values, never with the number of records.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pcf::{read_pcf, Pcf, PcfType};
use crate::prv::{
    open_body, parse_header, Comm, Header, Object, Record, RecordError, MAX_EXACT_TIME,
};
use crate::records::{PrvError, PrvErrorKind, PrvReader, RecordBuf};
use crate::row::{read_row, RowLevel};
use crate::{shorten, Issue, TraceFiles};

pub use crate::Severity;

/// One problem found in one of the trace files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub file: PathBuf,
    /// 1-based line number, when the problem belongs to one line.
    pub line: Option<u64>,
    /// Short stable rule name, e.g. `state-overlap`.
    pub rule: &'static str,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}] {}",
            self.severity,
            self.rule,
            self.file.display()
        )?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Counts gathered while validating, for comparing a trace against its source data.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceStats {
    /// Number of state records.
    pub states: u64,
    /// Number of event type:value pairs (a line with k pairs counts k).
    pub events: u64,
    /// Number of communication records.
    pub comms: u64,
    /// Per event type: pairs with a non-zero value (interval begins / occurrences).
    pub event_begins: BTreeMap<u32, u64>,
    /// Per event type: pairs with value 0 (interval ends).
    pub event_ends: BTreeMap<u32, u64>,
    /// Per state value: total time in trace units (ns for `_ns` traces).
    pub state_time: BTreeMap<u32, u64>,
    /// Per communication tag: number of records.
    pub comm_tags: BTreeMap<i64, u64>,
    /// End time declared in the header.
    pub end_time: u64,
    /// Object counts declared in the header (nodes is 0 without a resource model).
    pub threads: u64,
    pub tasks: u64,
    pub nodes: u64,
}

/// Everything the validator found, plus statistics of the records it read.
#[derive(Debug, Clone, Default)]
pub struct ValidationReport {
    pub findings: Vec<Finding>,
    pub stats: TraceStats,
}

impl ValidationReport {
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    /// True when there is no error (warnings are allowed).
    pub fn is_ok(&self) -> bool {
        self.errors().next().is_none()
    }
}

/// Validates `NAME.prv` or `NAME.prv.gz` together with `NAME.pcf` and `NAME.row`.
///
/// Returns `Err` only when the trace file itself cannot be opened; every other problem
/// (including a corrupt gzip stream or a missing `.pcf`/`.row`) is a finding.
pub fn validate_trace(prv: &Path) -> io::Result<ValidationReport> {
    let paths = TraceFiles::of(prv);
    let mut sink = Sink::default();
    if !paths.name_ok {
        sink.push(Severity::Error, prv, None, "file-name", || {
            "trace name must end in .prv or .prv.gz (Paraver rejects other suffixes)".into()
        });
    }
    let reader = open_body(&paths.prv, paths.gzip)?;
    let pcf = load_pcf(&paths.pcf, &mut sink)?;
    let (header, stats) = check_prv(reader, &paths.prv, pcf.as_ref(), &mut sink);
    check_row(&paths.row, header.as_ref(), &mut sink)?;
    Ok(ValidationReport {
        findings: sink.finish(),
        stats,
    })
}

// ---------------------------------------------------------------------------------------
// Findings sink: caps the findings per rule so a broken 10^8-line trace stays bounded.

const MAX_FINDINGS_PER_RULE: u64 = 20;

#[derive(Default)]
struct Sink {
    findings: Vec<Finding>,
    /// Per rule: severity, file and number of findings (shown or not).
    counts: BTreeMap<&'static str, (Severity, PathBuf, u64)>,
}

impl Sink {
    /// Records a finding; `message` is only formatted when the finding is kept.
    fn push(
        &mut self,
        severity: Severity,
        file: &Path,
        line: Option<u64>,
        rule: &'static str,
        message: impl FnOnce() -> String,
    ) {
        let entry = self
            .counts
            .entry(rule)
            .or_insert_with(|| (severity, file.to_path_buf(), 0));
        entry.2 += 1;
        entry.0 = entry.0.max(severity);
        if entry.2 <= MAX_FINDINGS_PER_RULE {
            self.findings.push(Finding {
                severity,
                file: file.to_path_buf(),
                line,
                rule,
                message: message(),
            });
        }
    }

    /// Records a parser's issue in `file`.
    fn issue(&mut self, file: &Path, issue: Issue) {
        let Issue {
            severity,
            line,
            rule,
            message,
        } = issue;
        self.push(severity, file, line, rule, || message);
    }

    fn error(&mut self, file: &Path, line: u64, rule: &'static str, msg: impl FnOnce() -> String) {
        self.push(Severity::Error, file, Some(line), rule, msg);
    }

    fn warn(&mut self, file: &Path, line: u64, rule: &'static str, msg: impl FnOnce() -> String) {
        self.push(Severity::Warning, file, Some(line), rule, msg);
    }

    /// Returns the findings, plus one summary finding per rule that hit the cap.
    fn finish(mut self) -> Vec<Finding> {
        for (rule, (severity, file, count)) in std::mem::take(&mut self.counts) {
            if count > MAX_FINDINGS_PER_RULE {
                self.findings.push(Finding {
                    severity,
                    file,
                    line: None,
                    rule,
                    message: format!(
                        "{} more [{rule}] findings not shown",
                        count - MAX_FINDINGS_PER_RULE
                    ),
                });
            }
        }
        self.findings
    }
}
// ---------------------------------------------------------------------------------------
// Companion files: NAME.pcf and NAME.row.

/// Opens an optional companion file; `None` (plus an error finding) when it is missing.
fn open_companion(path: &Path, rule: &'static str, sink: &mut Sink) -> io::Result<Option<File>> {
    match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            sink.push(Severity::Error, path, None, rule, || {
                "file is missing (Paraver would show generic names and raw numbers)".into()
            });
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn load_pcf(path: &Path, sink: &mut Sink) -> io::Result<Option<Pcf>> {
    let Some(file) = open_companion(path, "pcf-missing", sink)? else {
        return Ok(None);
    };
    let pcf = read_pcf(BufReader::new(file), &mut |issue| sink.issue(path, issue))?;
    Ok(Some(pcf))
}

// ---------------------------------------------------------------------------------------
// .prv body (§2.1, §2.3-§2.6)

/// Event types above this cannot be labelled in the pcf (signed 32-bit parse).
const MAX_EVENT_TYPE: i128 = i32::MAX as i128;

/// Per-thread ordering state (§2.6 rule 1).
#[derive(Clone, Copy, Default)]
struct ThreadStates {
    seen: bool,
    last_begin: u64,
    last_end: u64,
}

/// Bounded set of already-reported keys, so repeated problems are reported once.
struct Reported<K> {
    keys: HashSet<K>,
}

impl<K: std::hash::Hash + Eq> Reported<K> {
    const CAP: usize = 10_000;

    fn new() -> Self {
        Reported {
            keys: HashSet::new(),
        }
    }

    /// True the first time `key` is seen (always true once the cap is reached).
    fn first(&mut self, key: K) -> bool {
        if self.keys.len() >= Self::CAP {
            return !self.keys.contains(&key);
        }
        self.keys.insert(key)
    }
}

struct BodyChecker<'a> {
    path: &'a Path,
    sink: &'a mut Sink,
    header: Option<Header>,
    pcf: Option<&'a Pcf>,
    stats: TraceStats,
    threads: Vec<ThreadStates>,
    /// Primary time (and line) of the previous record, for the global order check.
    previous: Option<(u64, u64)>,
    records: u64,
    undeclared_types: Reported<u32>,
    undeclared_values: Reported<(u32, i64)>,
    undeclared_states: Reported<u32>,
}

/// Reads the whole `.prv`; returns the parsed header (if valid) and the statistics.
fn check_prv(
    reader: Box<dyn BufRead>,
    path: &Path,
    pcf: Option<&Pcf>,
    sink: &mut Sink,
) -> (Option<Header>, TraceStats) {
    let mut reader = PrvReader::new(reader, path).collect_issues();
    let header = reader.read_header();
    for issue in reader.drain_issues() {
        sink.issue(path, issue);
    }
    match header {
        Ok(true) => {}
        Ok(false) => {
            sink.push(Severity::Error, path, None, "header", || {
                "trace file is empty".into()
            });
            return (None, TraceStats::default());
        }
        Err(e) => {
            sink.error(path, 1, "io", || io_message(&e));
            return (None, TraceStats::default());
        }
    }
    let mut body = BodyChecker::from_header_line(path, reader.line(), pcf, sink);
    reader.expect_communicator_lines(body.header.as_ref().map_or(0, |h| h.ncomm));
    let mut record = RecordBuf::new();
    loop {
        let read = reader.read_record(&mut record);
        for issue in reader.drain_issues() {
            body.sink.issue(path, issue);
        }
        match read {
            Ok(true) => body.record(&record),
            Ok(false) => break,
            Err(PrvError {
                line,
                kind: PrvErrorKind::Record(e),
                ..
            }) => body.bad_record(line, reader.trimmed_line(), e),
            Err(e) => {
                body.sink.error(path, e.line, "io", || io_message(&e));
                break;
            }
        }
    }
    body.finish()
}

/// `cannot read the trace: WHY`.
fn io_message(e: &PrvError) -> String {
    match &e.kind {
        PrvErrorKind::Io(io) => format!("cannot read the trace: {io}"),
        PrvErrorKind::Record(r) => r.to_string(),
    }
}

impl<'a> BodyChecker<'a> {
    fn from_header_line(
        path: &'a Path,
        line: &[u8],
        pcf: Option<&'a Pcf>,
        sink: &'a mut Sink,
    ) -> Self {
        let mut issues = Vec::new();
        let header = parse_header(&String::from_utf8_lossy(line), &mut issues);
        let header = match header {
            Ok(header) => Some(header),
            Err(issue) => {
                issues.push(issue);
                None
            }
        };
        for issue in issues {
            sink.push(issue.severity, path, Some(1), issue.rule, || issue.message);
        }
        let mut stats = TraceStats::default();
        if let Some(h) = &header {
            stats.end_time = h.end;
            stats.threads = h.threads as u64;
            stats.tasks = h.tasks as u64;
            stats.nodes = h.cpus_per_node.len() as u64;
        }
        BodyChecker {
            path,
            sink,
            threads: vec![ThreadStates::default(); header.as_ref().map_or(0, |h| h.threads)],
            header,
            pcf,
            stats,
            previous: None,
            records: 0,
            undeclared_types: Reported::new(),
            undeclared_values: Reported::new(),
            undeclared_states: Reported::new(),
        }
    }

    fn finish(self) -> (Option<Header>, TraceStats) {
        if self.records == 0 {
            self.sink
                .push(Severity::Error, self.path, None, "empty-body", || {
                    "trace has no records (Paraver refuses to load it)".into()
                });
        }
        (self.header, self.stats)
    }

    fn record(&mut self, record: &RecordBuf) {
        self.records += 1;
        let lineno = record.line();
        match record.record() {
            Record::State {
                object,
                begin,
                end,
                state,
            } => self.state(lineno, object, begin, end, state),
            Record::Event {
                object,
                time,
                pairs,
            } => self.event(lineno, object, time, pairs),
            Record::Comm(comm) => self.comm(lineno, &comm),
        }
    }

    /// A line that is not a record (`line` without its trailing blanks).
    fn bad_record(&mut self, lineno: u64, line: &[u8], error: RecordError) {
        let path = self.path;
        match error {
            RecordError::Field(bad) if bad.index == 0 => self.unknown_kind(lineno, line),
            RecordError::Field(bad) => self.sink.error(path, lineno, "syntax", || {
                format!(
                    "field {} is not a decimal integer in '{}'",
                    bad.index + 1,
                    shorten(&String::from_utf8_lossy(line))
                )
            }),
            RecordError::Kind(other) => self.sink.error(path, lineno, "kind", || {
                let why = if other == 4 {
                    " (Paraver drops kind 4 silently)"
                } else {
                    ""
                };
                format!("unknown record kind '{other}'{why}")
            }),
            RecordError::FieldCount { kind, need, has } => {
                self.sink.error(path, lineno, "fields", || {
                    format!("{kind} record needs {need} fields, has {has}")
                })
            }
        }
    }

    fn unknown_kind(&mut self, lineno: u64, line: &[u8]) {
        let kind = line.split(|&b| b == b':').next().unwrap_or_default();
        let kind = String::from_utf8_lossy(kind).into_owned();
        self.sink.error(self.path, lineno, "kind", || {
            format!(
                "unknown record kind '{}' (only 1, 2, 3 and '#' comments)",
                shorten(&kind)
            )
        });
    }

    /// `1:CPU:APPL:TASK:THREAD:BEGIN:END:STATE`
    fn state(&mut self, lineno: u64, object: Object, begin: i128, end: i128, state: i128) {
        let thread = self.locate(lineno, "state", &object);
        let begin = self.time(lineno, "begin time", begin);
        let end = self.time(lineno, "end time", end);
        let (Some(begin), Some(end)) = (begin, end) else {
            return;
        };
        self.check_order(lineno, begin);
        if end < begin {
            self.sink.error(self.path, lineno, "state-order", || {
                format!("state end {end} < begin {begin}")
            });
        }
        if let Some(index) = thread {
            self.check_thread_states(lineno, index, &object, begin, end);
        }
        let Some(state) = self.state_value(lineno, state) else {
            return;
        };
        self.stats.states += 1;
        *self.stats.state_time.entry(state).or_default() += end.saturating_sub(begin);
    }

    /// `2:CPU:APPL:TASK:THREAD:TIME:TYPE:VALUE[:TYPE:VALUE...]`
    fn event(&mut self, lineno: u64, object: Object, time: i128, pairs: &[i128]) {
        self.locate(lineno, "event", &object);
        if let Some(time) = self.time(lineno, "time", time) {
            self.check_order(lineno, time);
        }
        if pairs.is_empty() {
            self.sink.warn(self.path, lineno, "event-empty", || {
                "event record without type:value pairs (ignored by Paraver)".into()
            });
            return;
        }
        for (i, pair) in pairs.chunks_exact(2).enumerate() {
            if pairs[..2 * i].chunks_exact(2).any(|p| p[0] == pair[0]) {
                self.sink.warn(self.path, lineno, "event-dup", || {
                    format!("type {} twice in one record (the last one wins)", pair[0])
                });
            }
            self.event_pair(lineno, pair[0], pair[1]);
        }
    }

    fn event_pair(&mut self, lineno: u64, ty: i128, value: i128) {
        let path = self.path;
        if !(1..=MAX_EVENT_TYPE).contains(&ty) {
            let why = if ty > i128::from(u32::MAX) {
                " (Paraver wraps it modulo 2^32)"
            } else {
                ""
            };
            self.sink.error(path, lineno, "event-type", || {
                format!("event type {ty} outside 1..2^31-1{why}")
            });
        }
        let value = match i64::try_from(value) {
            Ok(v) => v,
            Err(_) => {
                self.sink.error(path, lineno, "event-value", || {
                    format!("event value {value} outside int64 (Paraver wraps it)")
                });
                return;
            }
        };
        let Ok(ty) = u32::try_from(ty) else { return };
        self.stats.events += 1;
        let counts = if value == 0 {
            &mut self.stats.event_ends
        } else {
            &mut self.stats.event_begins
        };
        *counts.entry(ty).or_default() += 1;
        self.check_pcf_event(lineno, ty, value);
    }

    /// Every type used must be in the pcf; if it has a VALUES table, so must the value.
    fn check_pcf_event(&mut self, lineno: u64, ty: u32, value: i64) {
        let Some(pcf) = self.pcf else { return };
        match pcf.types.get(&ty) {
            None => {
                if self.undeclared_types.first(ty) {
                    self.sink
                        .error(self.path, lineno, "pcf-undeclared-type", || {
                            format!("event type {ty} is not declared in the pcf")
                        });
                }
            }
            Some(PcfType {
                values: Some(values),
                ..
            }) if !values.contains_key(&value) => {
                if self.undeclared_values.first((ty, value)) {
                    self.sink
                        .error(self.path, lineno, "pcf-undeclared-value", || {
                            format!(
                                "value {value} of event type {ty} is not in that type's pcf VALUES"
                            )
                        });
                }
            }
            Some(_) => {}
        }
    }

    /// `3:sender(4):LSEND:PSEND:receiver(4):LRECV:PRECV:SIZE:TAG`
    fn comm(&mut self, lineno: u64, c: &Comm) {
        let path = self.path;
        self.locate(lineno, "comm sender", &c.sender);
        self.locate(lineno, "comm receiver", &c.receiver);
        let names = [
            "logical send",
            "physical send",
            "logical receive",
            "physical receive",
        ];
        let times: Vec<Option<u64>> = [
            c.logical_send,
            c.physical_send,
            c.logical_receive,
            c.physical_receive,
        ]
        .iter()
        .zip(names)
        .map(|(&t, name)| self.time(lineno, name, t))
        .collect();
        if let Some(lsend) = times[0] {
            self.check_order(lineno, lsend);
        }
        for (recv, send) in [(3, 1), (2, 0)] {
            if let (Some(r), Some(s)) = (times[recv], times[send]) {
                if r < s {
                    self.sink.warn(path, lineno, "comm-backwards", || {
                        format!("{} {r} before {} {s}", names[recv], names[send])
                    });
                }
            }
        }
        if i64::try_from(c.size).is_err() {
            self.sink.error(path, lineno, "comm-size", || {
                format!("size {} outside int64", c.size)
            });
        }
        let Ok(tag) = i64::try_from(c.tag) else {
            self.sink.error(path, lineno, "comm-tag", || {
                format!("tag {} outside int64", c.tag)
            });
            return;
        };
        self.stats.comms += 1;
        *self.stats.comm_tags.entry(tag).or_default() += 1;
    }

    /// Checks `CPU:APPL:TASK:THREAD` against the header; returns the global thread index.
    fn locate(&mut self, lineno: u64, what: &str, object: &Object) -> Option<usize> {
        let path = self.path;
        let header = self.header.as_ref()?;
        let Object {
            cpu,
            appl,
            task,
            thread,
        } = *object;
        if object.has_negative() {
            self.sink.error(path, lineno, "syntax", || {
                format!("{what} location {cpu}:{appl}:{task}:{thread} has a negative field")
            });
            return None;
        }
        let Some(index) = header.thread_index(appl, task, thread) else {
            self.sink.error(path, lineno, "object", || {
                format!("{what} object {appl}:{task}:{thread} not declared in header (record dropped by Paraver)")
            });
            return None;
        };
        if let Err((rule, why)) = header.check_cpu(cpu, appl, task) {
            self.sink.error(path, lineno, rule, || {
                format!("{what} {why} (record dropped by Paraver)")
            });
            return None;
        }
        Some(index)
    }

    /// Range checks shared by all times; `None` if the value is unusable.
    fn time(&mut self, lineno: u64, what: &str, value: i128) -> Option<u64> {
        let path = self.path;
        if value < 0 {
            self.sink.error(path, lineno, "time-negative", || {
                format!("negative {what} {value}")
            });
            return None;
        }
        if value >= i128::from(MAX_EXACT_TIME) {
            self.sink.error(path, lineno, "time-precision", || {
                format!(
                    "{what} {value} >= 2^53: Paraver stores times as doubles and loses precision"
                )
            });
        }
        let value = u64::try_from(value).ok()?;
        if let Some(h) = &self.header {
            if value > h.end {
                let end = h.end;
                self.sink.error(path, lineno, "time-end", || {
                    format!("{what} {value} beyond header end time {end} (Paraver silently extends the trace)")
                });
            }
        }
        Some(value)
    }

    /// The body must be sorted by primary time (state begin, event time, logical send).
    fn check_order(&mut self, lineno: u64, time: u64) {
        if let Some((previous, prev_line)) = self.previous {
            if time < previous {
                self.sink.error(self.path, lineno, "unsorted", || {
                    format!("time {time} < time {previous} of the previous record (line {prev_line}); the body must be sorted")
                });
            }
        }
        self.previous = Some((time, lineno));
    }

    /// Per thread: states in increasing begin order and without overlap (§2.6 rule 1).
    fn check_thread_states(
        &mut self,
        lineno: u64,
        index: usize,
        obj: &Object,
        begin: u64,
        end: u64,
    ) {
        let last = self.threads[index];
        let who = || format!("{}:{}:{}", obj.appl, obj.task, obj.thread);
        if last.seen && begin < last.last_begin {
            self.sink.error(self.path, lineno, "state-unsorted", || {
                format!(
                    "state on {} begins at {begin}, before the previous state on that thread ({})",
                    who(),
                    last.last_begin
                )
            });
        } else if last.seen && begin < last.last_end {
            self.sink.error(self.path, lineno, "state-overlap", || {
                format!("state on {} begins at {begin}, before the previous state on that thread ends ({})", who(), last.last_end)
            });
        }
        self.threads[index] = ThreadStates {
            seen: true,
            last_begin: begin,
            last_end: end.max(begin),
        };
    }

    fn state_value(&mut self, lineno: u64, value: i128) -> Option<u32> {
        let Ok(state) = u32::try_from(value) else {
            self.sink.error(self.path, lineno, "state-value", || {
                format!("state {value} outside 0..2^32-1 (Paraver wraps it)")
            });
            return None;
        };
        let declared = self.pcf.map(|pcf| pcf.states.contains_key(&state));
        if declared == Some(false) && self.undeclared_states.first(state) {
            self.sink
                .error(self.path, lineno, "pcf-undeclared-state", || {
                    format!("state {state} is not declared in the pcf STATES")
                });
        }
        Some(state)
    }
}

// ---------------------------------------------------------------------------------------
// .row (§4): one block per level, as many labels as objects.

fn check_row(path: &Path, header: Option<&Header>, sink: &mut Sink) -> io::Result<()> {
    let Some(file) = open_companion(path, "row-missing", sink)? else {
        return Ok(());
    };
    let row = read_row(BufReader::new(file), &mut |issue| sink.issue(path, issue))?;
    if let Some(header) = header {
        check_row_sizes(path, header, &row.levels, sink);
    }
    Ok(())
}

fn check_row_sizes(path: &Path, header: &Header, blocks: &[RowLevel], sink: &mut Sink) {
    let nodes = header.cpus_per_node.len() as u64;
    // (level, objects in the header, missing block severity)
    let expected = [
        ("CPU", header.total_cpus, None),
        ("NODE", nodes, (nodes > 0).then_some(Severity::Error)),
        ("APPL", header.appls.len() as u64, None),
        ("TASK", header.tasks as u64, Some(Severity::Warning)),
        ("THREAD", header.threads as u64, Some(Severity::Error)),
    ];
    for (level, count, if_missing) in expected {
        match blocks.iter().find(|b| b.name == level) {
            Some(b) if b.size != count => sink.error(path, b.line, "row-size", || {
                format!(
                    "LEVEL {level} SIZE {} but the header defines {count} objects",
                    b.size
                )
            }),
            Some(_) => {}
            None => {
                if let Some(severity) = if_missing {
                    sink.push(severity, path, None, "row-missing-level", || {
                        format!("no LEVEL {level} block (the trace has {count} such objects)")
                    });
                }
            }
        }
    }
}
// ---------------------------------------------------------------------------------------
// BSC's `ptd comprovar` (pip package `pertalde`) as a second opinion.

/// Result of [`ptd_comprovar`] when no problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtdOutcome {
    Passed,
    /// `ptd` is not on PATH (or is not pertalde's `ptd`): callers should skip.
    NotInstalled,
}

/// Runs `ptd comprovar --exhaustive` on a trace.
///
/// `ptd` prints nothing for a good trace and one line per bad record on stdout, but it
/// exits 0 in non-exhaustive mode and passes truncated or corrupt `.gz` files silently,
/// so any output counts as a failure and gzip files are checked here first.
pub fn ptd_comprovar(prv: &Path) -> Result<PtdOutcome, String> {
    if !ptd_installed() {
        return Ok(PtdOutcome::NotInstalled);
    }
    let paths = TraceFiles::of(prv);
    if !paths.pcf.exists() {
        return Err(format!(
            "ptd comprovar needs {} next to the trace (it fails without it)",
            paths.pcf.display()
        ));
    }
    if paths.gzip {
        check_gzip_stream(prv)?;
    }
    let output = Command::new("ptd")
        .args(["comprovar", "--exhaustive"])
        .arg(prv)
        .output()
        .map_err(|e| format!("cannot run ptd: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() && text.trim().is_empty() {
        Ok(PtdOutcome::Passed)
    } else {
        Err(format!(
            "ptd comprovar failed on {} ({}): {}",
            prv.display(),
            output.status,
            text.trim()
        ))
    }
}

/// `ptd --version` prints `pertalde X.Y.Z`; a pyenv shim without it prints an error.
fn ptd_installed() -> bool {
    Command::new("ptd")
        .arg("--version")
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("pertalde"))
        .unwrap_or(false)
}

fn check_gzip_stream(prv: &Path) -> Result<(), String> {
    let file = File::open(prv).map_err(|e| format!("cannot open {}: {e}", prv.display()))?;
    io::copy(
        &mut flate2::read::MultiGzDecoder::new(BufReader::new(file)),
        &mut io::sink(),
    )
    .map(drop)
    .map_err(|e| format!("{} is not a valid gzip stream: {e}", prv.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // Copies of paraver-demo/demo.{prv,pcf,row} (the spec's verified example).
    const DEMO_PRV: &str = "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1)
1:1:1:1:1:0:100:1
1:2:1:1:2:0:150:0
1:3:1:2:1:0:200:1
2:3:1:2:1:0:63000000:3
1:1:1:1:1:100:300:3
2:1:1:1:1:100:63000000:1:63000004:4096
1:2:1:1:2:150:450:1
2:2:1:1:2:150:63000006:7
1:3:1:2:1:200:600:3
2:3:1:2:1:200:63000000:0
3:1:1:1:1:250:260:3:1:2:1:500:510:4096:7
1:1:1:1:1:300:1000:1
2:1:1:1:1:300:63000000:0
1:2:1:1:2:450:1000:0
2:2:1:1:2:450:63000006:0
1:3:1:2:1:600:1000:1
";

    const DEMO_PCF: &str = "DEFAULT_OPTIONS

LEVEL               THREAD
UNITS               NANOSEC
LOOK_BACK           100
SPEED               1
FLAG_ICONS          ENABLED
NUM_OF_STATE_COLORS 1000
YMAX_SCALE          37


DEFAULT_SEMANTIC

THREAD_FUNC          State As Is


STATES
0    Idle
1    Running
3    Waiting a message


STATES_COLOR
0    {117,195,255}
1    {0,0,255}
3    {255,0,0}


EVENT_TYPE
0    63000000    CUDA library call
VALUES
0      End
1      cudaLaunch
3      cudaMemcpy


EVENT_TYPE
0    63000004    CUDA Dynamic memory size


EVENT_TYPE
0    63000006    CUDA kernel execution
VALUES
0      End
7      my_kernel
";

    const DEMO_ROW: &str = "LEVEL CPU SIZE 4
node1.cpu1
node1.cpu2
node1.cpu3
node1.cpu4

LEVEL NODE SIZE 1
node1

LEVEL THREAD SIZE 3
THREAD 1.1.1 (host)
THREAD 1.1.2 (stream 7)
THREAD 1.2.1 (host2)
";

    const DEMO_HEADER: &str = "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1)";

    /// A trace directory under the system temp dir, removed on drop.
    struct Case {
        dir: PathBuf,
    }

    impl Case {
        fn new() -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("pv-validate-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Case { dir }
        }

        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        }

        fn write_gz(&self, name: &str, text: &str) -> PathBuf {
            let path = self.dir.join(name);
            let file = File::create(&path).unwrap();
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            gz.write_all(text.as_bytes()).unwrap();
            gz.finish().unwrap();
            path
        }
    }

    impl Drop for Case {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn validate(prv: &str, pcf: Option<&str>, row: Option<&str>) -> ValidationReport {
        let case = Case::new();
        let path = case.write("trace.prv", prv);
        if let Some(pcf) = pcf {
            case.write("trace.pcf", pcf);
        }
        if let Some(row) = row {
            case.write("trace.row", row);
        }
        validate_trace(&path).unwrap()
    }

    fn validate_prv(prv: &str) -> ValidationReport {
        validate(prv, Some(DEMO_PCF), Some(DEMO_ROW))
    }

    fn with_header(header: &str) -> String {
        DEMO_PRV.replacen(DEMO_HEADER, header, 1)
    }

    fn appended(lines: &[&str]) -> String {
        let mut text = DEMO_PRV.to_string();
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    fn body_lines() -> Vec<&'static str> {
        DEMO_PRV.lines().skip(1).collect()
    }

    fn dump(report: &ValidationReport) -> String {
        report.findings.iter().map(|f| format!("\n  {f}")).collect()
    }

    #[track_caller]
    fn assert_error(report: &ValidationReport, rule: &str) {
        assert!(
            report.errors().any(|f| f.rule == rule),
            "expected an error [{rule}], got:{}",
            dump(report)
        );
    }

    /// No errors at all, and a warning of `rule` if one is given.
    #[track_caller]
    fn assert_passes(report: &ValidationReport, warning: Option<&str>) {
        assert!(report.is_ok(), "expected no errors, got:{}", dump(report));
        if let Some(rule) = warning {
            assert!(
                report.warnings().any(|f| f.rule == rule),
                "expected a warning [{rule}], got:{}",
                dump(report)
            );
        }
    }

    fn demo_stats() -> TraceStats {
        TraceStats {
            states: 9,
            events: 7,
            comms: 1,
            event_begins: BTreeMap::from([(63000000, 2), (63000004, 1), (63000006, 1)]),
            event_ends: BTreeMap::from([(63000000, 2), (63000006, 1)]),
            state_time: BTreeMap::from([(0, 700), (1, 1700), (3, 600)]),
            comm_tags: BTreeMap::from([(7, 1)]),
            end_time: 1000,
            threads: 3,
            tasks: 2,
            nodes: 1,
        }
    }

    #[test]
    fn demo_passes_with_expected_stats() {
        let report = validate_prv(DEMO_PRV);
        assert_passes(&report, None);
        // The demo .row has no TASK block: a warning only.
        let rules: Vec<_> = report.findings.iter().map(|f| f.rule).collect();
        assert_eq!(rules, ["row-missing-level"], "{}", dump(&report));
        // Matches paramedir's states profile of the demo (80/20, 70/30, 60/40 %).
        assert_eq!(report.stats, demo_stats());
    }

    #[test]
    fn reference_traces_pass() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/paraver-demo");
        if !dir.is_dir() {
            // CI has ../shared beside the checkout: there the reference must be checked.
            assert!(
                std::env::var_os("CI").is_none(),
                "{} is required in CI",
                dir.display()
            );
            println!("note: {} is missing, skipping", dir.display());
            return;
        }
        for name in ["demo.prv", "nested.prv"] {
            let report = validate_trace(&dir.join(name)).unwrap();
            assert_passes(&report, None);
        }
        let demo = validate_trace(&dir.join("demo.prv")).unwrap();
        assert_eq!(demo.stats, demo_stats());
    }

    #[test]
    fn gzip_trace_reads_like_plain() {
        let case = Case::new();
        let path = case.write_gz("trace.prv.gz", DEMO_PRV);
        case.write("trace.pcf", DEMO_PCF);
        case.write("trace.row", DEMO_ROW);
        let report = validate_trace(&path).unwrap();
        assert_passes(&report, None);
        assert_eq!(report.stats, demo_stats());
    }

    #[test]
    fn corrupt_gzip_is_an_error() {
        let case = Case::new();
        let path = case.write_gz("trace.prv.gz", DEMO_PRV);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        case.write("trace.pcf", DEMO_PCF);
        case.write("trace.row", DEMO_ROW);
        assert_error(&validate_trace(&path).unwrap(), "io");
    }

    #[test]
    fn missing_trace_is_an_io_error() {
        let case = Case::new();
        assert!(validate_trace(&case.dir.join("absent.prv")).is_err());
    }

    #[test]
    fn bad_file_name_is_an_error() {
        let case = Case::new();
        let path = case.write("trace.txt", DEMO_PRV);
        case.write("trace.pcf", DEMO_PCF);
        case.write("trace.row", DEMO_ROW);
        assert_error(&validate_trace(&path).unwrap(), "file-name");
    }

    #[test]
    fn finding_display_names_file_line_and_rule() {
        let report = validate_prv(&appended(&["2:1:1:1:1:1000:63000000:abc"]));
        let text = report.errors().next().unwrap().to_string();
        assert!(text.starts_with("ERROR [syntax] "), "{text}");
        assert!(text.contains("trace.prv:18: "), "{text}");
        assert!(!text.contains('\n'));
    }

    // Header variants (h01-h18 of strictness-results.md).

    #[test]
    fn header_variants() {
        let no_header: String = body_lines().iter().map(|l| format!("{l}\n")).collect();
        assert_error(&validate_prv(&no_header), "header");
        let cases = [
            ("hello world", "header"),
            ("(21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1)", "header"),
            (
                "#Paraver (21/11/2025 at 10:00):abc_ns:1(4):1:2(2:1,1:1)",
                "header",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):0:2(2:1,1:1)",
                "header-appl",
            ),
            ("#Paraver 21/11/2025:1000_ns:1(4):1:2(2:1,1:1)", "header"),
            (
                "#Paraver (21/11/2025 at 10:00):1000_s:1(4):1:2(2:1,1:1)",
                "header-unit",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(1:1,1:1)",
                "object",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1),2",
                "comm-lines",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:0:1:2(2:0,1:0)",
                "cpu",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:2(2,2):1:2(2:2,1:2)",
                "node",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):10_ns:1(4):1:2(2:1,1:1)",
                "time-end",
            ),
            ("new format", "header"),
            (
                "#Paraver  (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1)",
                "header",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000.5_ns:1(4):1:2(2:1,1:1)",
                "header",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:2(4):1:2(2:1,1:1)",
                "header-resources",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):2:2(2:1,1:1)",
                "header-appl",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:3(2:1,1:1)",
                "header-appl",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:3)",
                "header-appl",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:2(2:1,1:1)x",
                "header",
            ),
            (
                "#Paraver (21/11/2025 at 10:00):1000_ns:1(4):1:1(70000:1)",
                "header-limit",
            ),
        ];
        for (header, rule) in cases {
            assert_error(&validate_prv(&with_header(header)), rule);
        }
    }

    #[test]
    fn benign_header_variants() {
        let no_unit = with_header("#Paraver (21/11/2025 at 10:00):1000:1(4):1:2(2:1,1:1)");
        assert_passes(&validate_prv(&no_unit), Some("header-unit"));
        let weird_date = with_header("#Paraver (not a date):1000_ns:1(4):1:2(2:1,1:1)");
        assert_passes(&validate_prv(&weird_date), None);
        let comm_lines =
            DEMO_PRV.replacen(DEMO_HEADER, &format!("{DEMO_HEADER},1\nc:1:1:2:1:2"), 1);
        assert_passes(&validate_prv(&comm_lines), None);
        let explicit_zero = with_header(&format!("{DEMO_HEADER},0"));
        assert_passes(&validate_prv(&explicit_zero), None);
    }

    #[test]
    fn no_resource_model_with_cpu_zero_passes() {
        let mut prv = String::from("#Paraver (21/11/2025 at 10:00):1000_ns:0:1:2(2:0,1:0)\n");
        for line in body_lines() {
            let mut f: Vec<&str> = line.split(':').collect();
            f[1] = "0";
            if f[0] == "3" {
                f[7] = "0";
            }
            prv.push_str(&f.join(":"));
            prv.push('\n');
        }
        let row = "LEVEL TASK SIZE 2\nT1\nT2\n\nLEVEL THREAD SIZE 3\na\nb\nc\n";
        let report = validate(&prv, Some(DEMO_PCF), Some(row));
        assert_passes(&report, None);
        assert_eq!(report.stats.nodes, 0);
    }

    #[test]
    fn two_nodes_consistent_passes() {
        let prv = with_header("#Paraver (21/11/2025 at 10:00):1000_ns:2(2,2):1:2(2:1,1:2)");
        let row = "LEVEL CPU SIZE 4\na\nb\nc\nd\n\nLEVEL NODE SIZE 2\nn1\nn2\n\n\
                   LEVEL APPL SIZE 1\napp\n\nLEVEL TASK SIZE 2\nt1\nt2\n\nLEVEL THREAD SIZE 3\nx\ny\nz\n";
        let report = validate(&prv, Some(DEMO_PCF), Some(row));
        assert!(report.findings.is_empty(), "{}", dump(&report));
    }

    // Ordering and time variants (o01-o09).

    #[test]
    fn shuffled_and_reversed_bodies_fail() {
        let mut body = body_lines();
        body.reverse();
        let reversed = format!("{DEMO_HEADER}\n{}\n", body.join("\n"));
        let report = validate_prv(&reversed);
        assert_error(&report, "unsorted");
        assert_error(&report, "state-unsorted");
        // A deterministic shuffle: rotate the body by 5 lines.
        let mut body = body_lines();
        body.rotate_left(5);
        let rotated = format!("{DEMO_HEADER}\n{}\n", body.join("\n"));
        assert_error(&validate_prv(&rotated), "unsorted");
    }

    #[test]
    fn time_variants() {
        let cases = [
            (appended(&["2:1:1:1:1:5000:63000000:1"]), "time-end"),
            (
                DEMO_PRV.replace("1:3:1:2:1:600:1000:1", "1:3:1:2:1:600:5000:1"),
                "time-end",
            ),
            (
                DEMO_PRV.replace("1:3:1:2:1:600:1000:1", "1:3:1:2:1:600:550:1"),
                "state-order",
            ),
            (appended(&["2:1:1:1:1:-5:63000000:1"]), "time-negative"),
            (appended(&["1:1:1:1:1:600:700:1"]), "state-overlap"),
            (appended(&["2:1:1:1:1:400:63000000:1"]), "unsorted"),
        ];
        for (prv, rule) in cases {
            assert_error(&validate_prv(&prv), rule);
        }
    }

    #[test]
    fn epoch_timestamps_fail_precision() {
        let epoch = 1_700_000_000_000_000_000u64;
        let mut prv = format!("#Paraver (x):{}_ns:1(4):1:2(2:1,1:1)\n", epoch + 1000);
        prv.push_str(&format!("1:1:1:1:1:{epoch}:{}:1\n", epoch + 100));
        assert_error(&validate_prv(&prv), "time-precision");
    }

    #[test]
    fn swapped_records_at_same_time_pass() {
        let mut body = body_lines();
        body.swap(0, 1);
        let prv = format!("{DEMO_HEADER}\n{}\n", body.join("\n"));
        assert_passes(&validate_prv(&prv), None);
    }

    // Record variants (r01-r29).

    #[test]
    fn record_variants() {
        let cases = [
            ("2:1:1:1:1:1000:99999:1", "pcf-undeclared-type"),
            ("2:1:1:1:1:1000:63000000:2", "pcf-undeclared-value"),
            ("1:1:1:1:1:1000:1000:4", "pcf-undeclared-state"),
            ("2:1:1:1:3:1000:63000000:1", "object"),
            ("2:1:1:3:1:1000:63000000:1", "object"),
            ("2:1:2:1:1:1000:63000000:1", "object"),
            ("2:1:1:1:0:1000:63000000:1", "object"),
            ("2:9:1:1:1:1000:63000000:1", "cpu"),
            ("2:1:1:1:1:abc:63000000:1", "syntax"),
            ("2:1:1:1:1:1000.5:63000000:1", "syntax"),
            ("2:1:1:1:1:+1000:63000000:1", "syntax"),
            ("2:1:1:1:1::63000000:1", "syntax"),
            ("2:1:1:1:1:1000:63000000:1:", "syntax"),
            ("2:1:-1:1:1:1000:63000000:1", "syntax"),
            ("1:1:1:1:1:1000:1000", "fields"),
            ("1:1:1:1:1:1000:1000:1:1", "fields"),
            ("2:1:1:1:1:1000:63000000", "fields"),
            ("5:1:1:1:1:1000:1:1", "kind"),
            ("4:1:1:1:1:1000:1:1", "kind"),
            ("c:1:1:2:1:2", "kind"),
            ("2:1:1:1:1:1000:4357967296:1", "event-type"),
            ("2:1:1:1:1:1000:0:1", "event-type"),
            ("2:1:1:1:1:1000:2147483648:1", "event-type"),
            (
                "2:1:1:1:1:1000:63000004:18446744073709551615",
                "event-value",
            ),
            (
                "2:1:1:1:1:1000:63000004:-9223372036854775809",
                "event-value",
            ),
            ("1:1:1:1:1:1000:1000:4294967301", "state-value"),
        ];
        for (line, rule) in cases {
            assert_error(&validate_prv(&appended(&[line])), rule);
        }
    }

    #[test]
    fn benign_record_variants() {
        let cases = [
            ("2:0:1:1:1:1000:63000000:1", None),
            ("2:1:1:1:1:1000:63000004:-9223372036854775808", None),
            ("2:1:1:1:1:1000:63000004:9223372036854775807", None),
            ("2:1:1:1:1:1000", Some("event-empty")),
            ("2:1:1:1:1:1000:63000000:1:63000000:3", Some("event-dup")),
            ("# a comment line", None),
            ("", Some("empty-line")),
        ];
        for (line, warning) in cases {
            assert_passes(&validate_prv(&appended(&[line])), warning);
        }
        let only_events: String = DEMO_PRV
            .lines()
            .filter(|l| !l.starts_with("1:"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_passes(&validate_prv(&only_events), None);
    }

    #[test]
    fn line_ending_variants() {
        let crlf = DEMO_PRV.replace('\n', "\r\n");
        assert_passes(&validate_prv(&crlf), Some("crlf"));
        assert_passes(&validate_prv(DEMO_PRV.trim_end()), None);
        let trailing = DEMO_PRV.replace("1:1:1:1:1:0:100:1\n", "1:1:1:1:1:0:100:1 \n");
        assert_passes(&validate_prv(&trailing), Some("trailing-space"));
        let spaced = DEMO_PRV.replacen('\n', "\n ", 1).replace(':', ": ");
        let report = validate_prv(&spaced);
        assert_error(&report, "syntax");
        assert_error(&report, "empty-body");
    }

    #[test]
    fn comm_variants() {
        let comm = "3:1:1:1:1:250:260:3:1:2:1:500:510:4096:7";
        let cases = [
            ("3:1:1:1:1:250:260:3:1:2:1:500:510:4096", "fields"),
            ("3:1:1:1:1:250:260:3:1:2:5:500:510:4096:7", "object"),
            ("3:1:1:1:1:250:260:9:1:2:1:500:510:4096:7", "cpu"),
            (
                "3:1:1:1:1:250:260:3:1:2:1:500:510:4096:9223372036854775808",
                "comm-tag",
            ),
            (
                "3:1:1:1:1:250:260:3:1:2:1:500:510:9223372036854775808:7",
                "comm-size",
            ),
        ];
        for (line, rule) in cases {
            assert_error(&validate_prv(&DEMO_PRV.replace(comm, line)), rule);
        }
        let backwards = DEMO_PRV.replace(comm, "3:1:1:1:1:250:260:3:1:2:1:100:110:4096:7");
        assert_passes(&validate_prv(&backwards), Some("comm-backwards"));
    }

    #[test]
    fn header_only_is_an_empty_body() {
        assert_error(&validate_prv(&format!("{DEMO_HEADER}\n")), "empty-body");
        assert_error(&validate_prv(""), "header");
    }

    #[test]
    fn findings_are_capped_per_rule() {
        let lines: Vec<String> = (0..100)
            .map(|_| "2:1:1:1:1:1000:63000000:x".to_string())
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let report = validate_prv(&appended(&refs));
        let syntax: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == "syntax")
            .collect();
        assert_eq!(syntax.len() as u64, MAX_FINDINGS_PER_RULE + 1);
        assert!(syntax.last().unwrap().message.starts_with("80 more"));
    }

    // Companion files (f01-f07).

    #[test]
    fn companion_file_variants() {
        assert_error(&validate(DEMO_PRV, Some(DEMO_PCF), None), "row-missing");
        assert_error(&validate(DEMO_PRV, None, Some(DEMO_ROW)), "pcf-missing");
        let cases = [
            ("this is\nnot a\npcf\nbroken\n", "pcf-syntax"),
            (&*format!("{DEMO_PCF}3000000000 too big\n"), "pcf-value"),
            (
                &*format!("{DEMO_PCF}\nEVENT_TYPE\n0    3000000000    Too big\n"),
                "pcf-type",
            ),
            (
                &*format!("{DEMO_PCF}\nEVENT_TYPE\n0 63000010\n"),
                "pcf-type",
            ),
            (
                &*format!("{DEMO_PCF}\nEVENT_TYPE\nVALUES\n1 x\n"),
                "pcf-syntax",
            ),
            (
                &*format!("{DEMO_PCF}\nEVENT_TYPE\n\nSTATES\n9 x\n"),
                "pcf-type",
            ),
            (&*DEMO_PCF.replace("{255,0,0}", "{255,0,256}"), "pcf-color"),
            (
                &*DEMO_PCF.replace("3    Waiting a message", "-3    Waiting"),
                "pcf-state",
            ),
            (
                &*DEMO_PCF.replace("3    Waiting a message", "3"),
                "pcf-state",
            ),
        ];
        for (pcf, rule) in cases {
            assert_error(&validate(DEMO_PRV, Some(pcf), Some(DEMO_ROW)), rule);
        }
        let row_cases = [
            (
                DEMO_ROW.replace("THREAD SIZE 3", "THREAD SIZE 5"),
                "row-labels",
            ),
            (DEMO_ROW.replace("NODE SIZE 1", "NODE SIZE 2"), "row-labels"),
            (
                DEMO_ROW.replace("THREAD SIZE 3", "THREAD SIZE 2"),
                "row-syntax",
            ),
            (
                DEMO_ROW.replace("CPU SIZE 4\nnode1.cpu1\n", "CPU SIZE 3\n"),
                "row-size",
            ),
            (
                DEMO_ROW.replace("LEVEL THREAD SIZE 3", "LEVEL THREADS SIZE 3"),
                "row-missing-level",
            ),
            (DEMO_ROW.replace("LEVEL CPU", "LEVEL NODE"), "row-dup"),
        ];
        for (row, rule) in row_cases {
            assert_error(&validate(DEMO_PRV, Some(DEMO_PCF), Some(&row)), rule);
        }
    }

    #[test]
    fn pcf_features_of_the_spec_are_accepted() {
        // Tabs, comments, PRECISION, several types sharing one VALUES table, merged types.
        let pcf = "# comment\nSTATES\n0\tIdle\n1\tRunning\n3\tWaiting\n\nSTATES_COLOR\n0 {1,2,3}\n1 {1,2,3}\n3 {1,2,3}\n\n\
                   EVENT_TYPE\n0\t63000000\tA\n0 63000006 B\nPRECISION 0\nVALUES\n0 End\n1 x\n3 y\n7 z\n\n\
                   EVENT_TYPE\n0 63000004 C\n\nGRADIENT_COLOR\n0 {0,255,2}\n\nGRADIENT_NAMES\n0 Gradient 0\n";
        assert_passes(&validate(DEMO_PRV, Some(pcf), Some(DEMO_ROW)), None);
    }

    // ptd comprovar (skipped when pertalde is not installed).

    #[test]
    fn ptd_comprovar_agrees_on_demo_and_bad_trace() {
        let case = Case::new();
        let good = case.write("good.prv", DEMO_PRV);
        case.write("good.pcf", DEMO_PCF);
        match ptd_comprovar(&good) {
            Ok(PtdOutcome::NotInstalled) => {
                println!("note: ptd (pip install pertalde) is not installed, skipping");
                return;
            }
            Ok(PtdOutcome::Passed) => {}
            Err(e) => panic!("demo should pass ptd comprovar: {e}"),
        }
        let bad = case.write("bad.prv", &appended(&["2:1:1:1:1:-5:63000000:1"]));
        case.write("bad.pcf", DEMO_PCF);
        assert!(ptd_comprovar(&bad).is_err());
        let gz = case.write_gz("cut.prv.gz", DEMO_PRV);
        case.write("cut.pcf", DEMO_PCF);
        let bytes = std::fs::read(&gz).unwrap();
        std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
        assert!(ptd_comprovar(&gz).is_err(), "truncated gzip must fail");
        let no_pcf = case.write("nopcf.prv", DEMO_PRV);
        assert!(ptd_comprovar(&no_pcf).is_err());
    }
}
