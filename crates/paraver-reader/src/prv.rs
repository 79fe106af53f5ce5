//! The `.prv` (§2): the header line, then records, one per line, read as a stream.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::{parse_decimal, shorten, strip_eol, Issue};

/// Paraver keeps times as doubles: integers from 2^53 on lose precision.
pub const MAX_EXACT_TIME: u64 = 1 << 53;
/// Object ids are 16-bit in the default Paraver build; larger ids are dropped silently.
pub const MAX_OBJECTS: u64 = 65_535;
/// Magnitudes are saturated here while parsing; far outside every valid range.
const SATURATED: i128 = 1 << 100;

const READ_BUFFER: usize = 1 << 20;

/// Opens a trace's body for reading (`NAME.prv`, or `NAME.prv.gz` when `gzip`: one
/// gzip stream or several members), buffered, from its first line (the header).
pub fn open_body(prv: &Path, gzip: bool) -> io::Result<Box<dyn BufRead>> {
    let file = File::open(prv)?;
    Ok(if gzip {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            MultiGzDecoder::new(BufReader::new(file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(READ_BUFFER, file))
    })
}

/// Lines of a file as bytes, numbered from 1, without their terminator (a bad byte
/// must not stop a reader).
pub struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    number: u64,
    crlf: bool,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Lines {
            reader,
            buf: Vec::with_capacity(256),
            number: 0,
            crlf: false,
        }
    }

    /// Advances to the next line; `Ok(false)` at the end of the file.
    pub fn advance(&mut self) -> io::Result<bool> {
        self.buf.clear();
        if self.reader.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(false);
        }
        self.number += 1;
        self.crlf = strip_eol(&mut self.buf);
        Ok(true)
    }

    /// The current line, without its terminator.
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    /// 1-based number of the current line (0 before the first).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Whether the current line ended in CRLF.
    pub fn crlf(&self) -> bool {
        self.crlf
    }
}

// ---------------------------------------------------------------------------------------
// Header (§2.2): #Paraver (DATE):END[UNIT]:RESOURCES:NAPPL:APPL_1[:APPL_2...][,NCOMM]

/// A task of the header: its thread count and node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskDecl {
    pub threads: u64,
    /// 1-based node, or 0 without a resource model.
    pub node: u64,
}

/// The end time's unit (`_ns`, `_us`, `_ms`, or none: microseconds for Paraver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Unspecified,
}

/// The header line, parsed.
#[derive(Debug, Clone)]
pub struct Header {
    pub end: u64,
    pub unit: TimeUnit,
    /// CPUs per node; empty without a resource model (`RESOURCES = 0`).
    pub cpus_per_node: Vec<u64>,
    /// Global number of the first CPU of each node.
    first_cpu: Vec<u64>,
    pub total_cpus: u64,
    /// Tasks of each application.
    pub appls: Vec<Vec<TaskDecl>>,
    /// Global index of thread 1 of each task, per application.
    first_thread: Vec<Vec<usize>>,
    pub threads: usize,
    pub tasks: usize,
    /// Communicator lines that follow the header.
    pub ncomm: u64,
}

fn header_error(rule: &'static str, message: String) -> Issue {
    Issue::error(Some(1), rule, message)
}

fn header_warning(rule: &'static str, message: String) -> Issue {
    Issue::warning(Some(1), rule, message)
}

/// Parses the header line. Warnings are pushed to `issues`; the first fatal problem is
/// returned as `Err`.
pub fn parse_header(line: &str, issues: &mut Vec<Issue>) -> Result<Header, Issue> {
    let syntax = || {
        header_error(
            "header",
            format!(
                "first line does not match '#Paraver (DATE):END_ns:RESOURCES:NAPPL:APPL...': '{}'",
                shorten(line)
            ),
        )
    };
    let rest = line.strip_prefix("#Paraver (").ok_or_else(syntax)?;
    let close = rest.find(')').ok_or_else(syntax)?;
    let rest = rest[close + 1..].strip_prefix(':').ok_or_else(syntax)?;
    let (body, ncomm) = split_ncomm(rest)?;
    let parts = split_top_level(body, ':').ok_or_else(syntax)?;
    if parts.len() < 4 {
        return Err(syntax());
    }
    let (end, unit) = parse_end_time(parts[0], issues)?;
    let cpus_per_node = parse_resources(parts[1], issues)?;
    let appls = parse_applications(parts[2], &parts[3..], cpus_per_node.len() as u64)?;
    build_header(end, unit, cpus_per_node, appls, ncomm)
}

/// Splits off the optional `,NCOMM` that follows the last application.
fn split_ncomm(rest: &str) -> Result<(&str, u64), Issue> {
    let last = rest.rfind(')').ok_or_else(|| {
        header_error(
            "header-appl",
            format!(
                "no application list 'T(threads:node,...)' in '{}'",
                shorten(rest)
            ),
        )
    })?;
    let tail = &rest[last + 1..];
    if tail.is_empty() {
        return Ok((rest, 0));
    }
    let ncomm = tail
        .strip_prefix(',')
        .and_then(parse_decimal)
        .ok_or_else(|| {
            header_error(
                "header",
                format!(
                    "unexpected text '{}' after the last application (expected ',NCOMM')",
                    shorten(tail)
                ),
            )
        })?;
    Ok((&rest[..=last], ncomm))
}

/// Splits at `sep` outside parentheses; `None` if the parentheses are unbalanced.
fn split_top_level(text: &str, sep: char) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    (depth == 0).then(|| {
        parts.push(&text[start..]);
        parts
    })
}

fn parse_end_time(field: &str, issues: &mut Vec<Issue>) -> Result<(u64, TimeUnit), Issue> {
    let digits = field.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = field.split_at(digits);
    let end = parse_decimal(number).filter(|_| unit.is_empty() || unit.starts_with('_'));
    let end = end.ok_or_else(|| {
        header_error(
            "header",
            format!(
                "end time '{}' is not an unsigned integer followed by _ns",
                shorten(field)
            ),
        )
    })?;
    let time_unit = match unit {
        "_ns" => TimeUnit::Nanoseconds,
        "" => {
            issues.push(header_warning(
                "header-unit",
                "no time unit suffix: Paraver reads the trace as microseconds (write _ns)".into(),
            ));
            TimeUnit::Unspecified
        }
        "_us" | "_ms" => {
            issues.push(header_warning(
                "header-unit",
                format!("time unit '{unit}' is valid for Paraver, but our traces use _ns"),
            ));
            if unit == "_us" {
                TimeUnit::Microseconds
            } else {
                TimeUnit::Milliseconds
            }
        }
        _ => {
            return Err(header_error(
                "header-unit",
                format!(
                    "unit '{}' is not recognised (Paraver silently uses microseconds)",
                    shorten(unit)
                ),
            ))
        }
    };
    if end >= MAX_EXACT_TIME {
        issues.push(header_error(
            "time-precision",
            format!("header end time {end} >= 2^53: Paraver stores times as doubles and loses precision"),
        ));
    }
    Ok((end, time_unit))
}

/// `0` (no resource model), `N(c1,...,cN)` or a bare `N` (N nodes with 1 CPU each).
fn parse_resources(field: &str, issues: &mut Vec<Issue>) -> Result<Vec<u64>, Issue> {
    let bad = || {
        header_error(
            "header-resources",
            format!(
                "resources '{}' are not '0' or 'N(c1,...,cN)'",
                shorten(field)
            ),
        )
    };
    if let Some(nodes) = parse_decimal(field) {
        if nodes > 0 {
            issues.push(header_warning(
                "header-resources",
                format!("bare resource count '{field}' means {nodes} nodes with 1 CPU each; write N(c1,...)"),
            ));
        }
        // Refused before a CPU count per node is made (found by fuzzing: a
        // count of 2^28 made the reader allocate 2 GB, a larger one abort).
        if nodes > MAX_OBJECTS {
            return Err(header_error(
                "header-limit",
                format!("{nodes} nodes exceed Paraver's 16-bit object ids (max {MAX_OBJECTS})"),
            ));
        }
        return Ok(vec![1; nodes as usize]);
    }
    let (count, list) = split_call(field).ok_or_else(bad)?;
    let cpus = list
        .split(',')
        .map(parse_decimal)
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(bad)?;
    if cpus.len() as u64 != count || count == 0 {
        return Err(header_error(
            "header-resources",
            format!(
                "'{}' declares {count} nodes but lists {} CPU counts",
                shorten(field),
                cpus.len()
            ),
        ));
    }
    if cpus.contains(&0) {
        issues.push(header_warning(
            "header-resources",
            format!("a node in '{}' has 0 CPUs", shorten(field)),
        ));
    }
    Ok(cpus)
}

/// Splits `N(inner)` into `N` and `inner`.
fn split_call(field: &str) -> Option<(u64, &str)> {
    let open = field.find('(')?;
    let inner = field[open + 1..].strip_suffix(')')?;
    Some((parse_decimal(&field[..open])?, inner))
}

fn parse_applications(napps: &str, apps: &[&str], nodes: u64) -> Result<Vec<Vec<TaskDecl>>, Issue> {
    let count = parse_decimal(napps).filter(|&n| n >= 1).ok_or_else(|| {
        header_error(
            "header-appl",
            format!(
                "bad application count '{}' (must be an integer >= 1)",
                shorten(napps)
            ),
        )
    })?;
    if apps.len() as u64 != count {
        return Err(header_error(
            "header-appl",
            format!(
                "header announces {count} applications but lists {}",
                apps.len()
            ),
        ));
    }
    apps.iter()
        .enumerate()
        .map(|(i, app)| parse_application(i + 1, app, nodes))
        .collect()
}

/// `T(t1:n1,...,tT:nT)`: T tasks, task j has tj threads and runs on node nj.
fn parse_application(index: usize, app: &str, nodes: u64) -> Result<Vec<TaskDecl>, Issue> {
    let bad = |why: &str| {
        header_error(
            "header-appl",
            format!("application {index} '{}': {why}", shorten(app)),
        )
    };
    let (count, list) = split_call(app).ok_or_else(|| bad("expected 'T(threads:node,...)'"))?;
    let mut tasks = Vec::new();
    for task in list.split(',') {
        let (threads, node) = task
            .split_once(':')
            .and_then(|(t, n)| Some((parse_decimal(t)?, parse_decimal(n)?)))
            .ok_or_else(|| bad("each task must be 'threads:node'"))?;
        if threads == 0 {
            return Err(bad("a task has 0 threads"));
        }
        check_task_node(node, nodes).map_err(|why| bad(&why))?;
        tasks.push(TaskDecl { threads, node });
    }
    if tasks.len() as u64 != count || count == 0 {
        return Err(bad(&format!(
            "declares {count} tasks but lists {}",
            tasks.len()
        )));
    }
    Ok(tasks)
}

fn check_task_node(node: u64, nodes: u64) -> Result<(), String> {
    match (nodes, node) {
        (0, 0) => Ok(()),
        (0, n) => Err(format!(
            "task on node {n} but the header has no resource model"
        )),
        (_, 0) => Err("node 0 is only allowed without a resource model".into()),
        (max, n) if n > max => Err(format!("task on node {n} but there are {max} nodes")),
        _ => Ok(()),
    }
}

fn build_header(
    end: u64,
    unit: TimeUnit,
    cpus_per_node: Vec<u64>,
    appls: Vec<Vec<TaskDecl>>,
    ncomm: u64,
) -> Result<Header, Issue> {
    let mut first_cpu = Vec::with_capacity(cpus_per_node.len());
    let mut total_cpus = 0u64;
    for &cpus in &cpus_per_node {
        first_cpu.push(total_cpus + 1);
        total_cpus = total_cpus.saturating_add(cpus);
    }
    let mut first_thread = Vec::with_capacity(appls.len());
    let mut threads = 0u64;
    for tasks in &appls {
        let mut firsts = Vec::with_capacity(tasks.len());
        for task in tasks {
            firsts.push(threads as usize);
            threads = threads.saturating_add(task.threads);
        }
        first_thread.push(firsts);
    }
    let tasks: u64 = appls.iter().map(|a| a.len() as u64).sum();
    let counts = [
        ("nodes", cpus_per_node.len() as u64),
        ("CPUs", total_cpus),
        ("applications", appls.len() as u64),
        ("tasks", tasks),
        ("threads", threads),
    ];
    if let Some((what, n)) = counts.iter().find(|(_, n)| *n > MAX_OBJECTS) {
        return Err(header_error(
            "header-limit",
            format!("{n} {what} exceed Paraver's 16-bit object ids (max {MAX_OBJECTS})"),
        ));
    }
    Ok(Header {
        end,
        unit,
        cpus_per_node,
        first_cpu,
        total_cpus,
        appls,
        first_thread,
        threads: threads as usize,
        tasks: tasks as usize,
        ncomm,
    })
}

impl Header {
    /// Global thread index of a record's (appl, task, thread), all 1-based.
    pub fn thread_index(&self, appl: i128, task: i128, thread: i128) -> Option<usize> {
        let a = usize::try_from(appl).ok()?.checked_sub(1)?;
        let t = usize::try_from(task).ok()?.checked_sub(1)?;
        let decl = self.appls.get(a)?.get(t)?;
        let th = u64::try_from(thread).ok()?;
        (1..=decl.threads)
            .contains(&th)
            .then(|| self.first_thread[a][t] + th as usize - 1)
    }

    /// Checks a CPU field against the resource model and the task's node.
    pub fn check_cpu(
        &self,
        cpu: i128,
        appl: i128,
        task: i128,
    ) -> Result<(), (&'static str, String)> {
        if cpu == 0 {
            return Ok(());
        }
        if self.cpus_per_node.is_empty() {
            return Err((
                "cpu",
                format!("cpu {cpu} but the header has no resource model (only cpu 0 is valid)"),
            ));
        }
        if cpu < 0 || cpu > i128::from(self.total_cpus) {
            return Err((
                "cpu",
                format!("cpu {cpu} outside 1..={} CPUs", self.total_cpus),
            ));
        }
        // The caller has validated appl and task already.
        let decl = self.appls[appl as usize - 1][task as usize - 1];
        let node = self.node_of_cpu(cpu as u64);
        if node != decl.node {
            return Err((
                "node",
                format!(
                    "cpu {cpu} is on node {node} but task {appl}:{task} runs on node {}",
                    decl.node
                ),
            ));
        }
        Ok(())
    }

    pub fn node_of_cpu(&self, cpu: u64) -> u64 {
        self.first_cpu.partition_point(|&first| first <= cpu) as u64
    }
}

// ---------------------------------------------------------------------------------------
// Records (§2.1, §2.3-§2.5)

/// Why a line's fields could not be read as integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadField {
    /// 0-based field index.
    pub index: usize,
}

/// Splits `a:b:c` into integers. Each field is an optional `-` followed by ASCII digits;
/// no spaces, `+`, decimal points or empty fields (Paraver would silently misread them).
/// Magnitudes beyond any valid range are saturated, not wrapped.
pub fn parse_fields(line: &[u8], out: &mut Vec<i128>) -> Result<(), BadField> {
    out.clear();
    for (index, field) in line.split(|&b| b == b':').enumerate() {
        let (negative, digits) = match field.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, field),
        };
        if digits.is_empty() {
            return Err(BadField { index });
        }
        let mut value: i128 = 0;
        for &b in digits {
            if !b.is_ascii_digit() {
                return Err(BadField { index });
            }
            value = (value * 10 + i128::from(b - b'0')).min(SATURATED);
        }
        out.push(if negative { -value } else { value });
    }
    Ok(())
}

/// `CPU:APPL:TASK:THREAD` of a record, as written (not checked against the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Object {
    pub cpu: i128,
    pub appl: i128,
    pub task: i128,
    pub thread: i128,
}

impl Object {
    fn of(f: &[i128]) -> Self {
        Object {
            cpu: f[0],
            appl: f[1],
            task: f[2],
            thread: f[3],
        }
    }

    /// Whether a field is negative.
    pub fn has_negative(&self) -> bool {
        [self.cpu, self.appl, self.task, self.thread]
            .iter()
            .any(|&v| v < 0)
    }
}

/// A body record with its fields read; nothing is checked beyond their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// `1:CPU:APPL:TASK:THREAD:BEGIN:END:STATE`
    State {
        object: Object,
        begin: i128,
        end: i128,
        state: i128,
    },
    /// `2:CPU:APPL:TASK:THREAD:TIME:TYPE:VALUE[:TYPE:VALUE...]`; `pairs` holds the
    /// types and values one after the other.
    Event {
        object: Object,
        time: i128,
        pairs: &'a [i128],
    },
    /// `3:sender(4):LSEND:PSEND:receiver(4):LRECV:PRECV:SIZE:TAG`
    Comm(Comm),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm {
    pub sender: Object,
    pub logical_send: i128,
    pub physical_send: i128,
    pub receiver: Object,
    pub logical_receive: i128,
    pub physical_receive: i128,
    pub size: i128,
    pub tag: i128,
}

/// Why a line is not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// A field is not a decimal integer (index 0: the kind).
    Field(BadField),
    /// A kind other than 1, 2 or 3.
    Kind(i128),
    /// The wrong number of fields for the kind.
    FieldCount {
        kind: &'static str,
        need: &'static str,
        has: usize,
    },
}

/// Reads a record line (without its terminator and trailing blanks) into `fields`
/// and returns its typed view.
pub fn parse_record<'a>(line: &[u8], fields: &'a mut Vec<i128>) -> Result<Record<'a>, RecordError> {
    parse_fields(line, fields).map_err(RecordError::Field)?;
    Record::check(fields)?;
    Ok(Record::of_checked(fields))
}

impl<'a> Record<'a> {
    /// Whether `fields` are a record: a known kind and its number of fields.
    #[inline]
    pub(crate) fn check(f: &[i128]) -> Result<(), RecordError> {
        let (kind, need, ok) = match f[0] {
            1 => ("state", "8", f.len() == 8),
            2 => (
                "event",
                "6+2k",
                f.len() >= 6 && f[6..].chunks_exact(2).remainder().is_empty(),
            ),
            3 => ("communication", "15", f.len() == 15),
            other => return Err(RecordError::Kind(other)),
        };
        if !ok {
            return Err(RecordError::FieldCount {
                kind,
                need,
                has: f.len(),
            });
        }
        Ok(())
    }

    /// The typed view of fields that passed [`Record::check`].
    #[inline]
    pub(crate) fn of_checked(f: &'a [i128]) -> Record<'a> {
        match f[0] {
            1 => Record::State {
                object: Object::of(&f[1..5]),
                begin: f[5],
                end: f[6],
                state: f[7],
            },
            2 => Record::Event {
                object: Object::of(&f[1..5]),
                time: f[5],
                pairs: &f[6..],
            },
            _ => Record::Comm(Comm {
                sender: Object::of(&f[1..5]),
                logical_send: f[5],
                physical_send: f[6],
                receiver: Object::of(&f[7..11]),
                logical_receive: f[11],
                physical_receive: f[12],
                size: f[13],
                tag: f[14],
            }),
        }
    }
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Field(bad) => {
                write!(f, "field {} is not a decimal integer", bad.index + 1)
            }
            RecordError::Kind(kind) => write!(f, "unknown record kind '{kind}'"),
            RecordError::FieldCount { kind, need, has } => {
                write!(f, "{kind} record needs {need} fields, has {has}")
            }
        }
    }
}

/// A line without its trailing blanks (spaces and tabs).
pub fn trim_trailing_blanks(line: &[u8]) -> &[u8] {
    let keep = line
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(0, |i| i + 1);
    &line[..keep]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing `paraver`: a bare resource count far past Paraver's
    /// object ids is refused before a CPU count per node is made (2^28 nodes
    /// took 2 GB and 18 s; 10^13 aborted the process, out of memory).
    #[test]
    fn huge_bare_resource_counts_are_refused_without_allocating() {
        for count in ["65536", "216387179", "10000000000000"] {
            let mut issues = Vec::new();
            let line = format!("#Paraver (01/03/2025 at 09:00):100_ns:{count}:1:1(5:1)");
            let e = parse_header(&line, &mut issues).unwrap_err();
            assert_eq!(e.rule, "header-limit", "{count}: {e:?}");
            assert!(
                e.message.starts_with(&format!("{count} nodes exceed")),
                "{e:?}"
            );
        }
        let mut issues = Vec::new();
        let h = parse_header(
            "#Paraver (01/03/2025 at 09:00):100_ns:65535:1:1(5:1)",
            &mut issues,
        );
        assert_eq!(h.unwrap().cpus_per_node.len(), 65_535);
    }

    #[test]
    fn headers_give_end_unit_and_threads_per_task() {
        let mut issues = Vec::new();
        let h = parse_header(
            "#Paraver (21/11/2025 at 10:00):1000_ns:2(8,8):1:3(2:1,3:2,1:1),5",
            &mut issues,
        )
        .unwrap();
        assert_eq!(
            (h.end, h.unit, h.ncomm, h.threads),
            (1000, TimeUnit::Nanoseconds, 5, 6)
        );
        let threads: Vec<u64> = h.appls[0].iter().map(|t| t.threads).collect();
        assert_eq!(threads, [2, 3, 1]);
        assert_eq!(h.thread_index(1, 2, 3), Some(4));
        assert_eq!(h.thread_index(1, 3, 2), None);
        let h = parse_header(
            "#Paraver (21/11/2025 at 10:00):77_ns:0:1:1(4:0)",
            &mut issues,
        );
        assert_eq!(
            h.unwrap().appls,
            [vec![TaskDecl {
                threads: 4,
                node: 0
            }]]
        );
        assert!(issues.is_empty(), "{issues:?}");
        let h = parse_header("#Paraver (x):10_us:0:1:1(1:0)", &mut issues).unwrap();
        assert_eq!(h.unit, TimeUnit::Microseconds);
        assert_eq!(issues.len(), 1);
        assert!(parse_header("#Paraver (x):10_xs:0:1:1(1:0)", &mut issues).is_err());
    }

    #[test]
    fn records_are_typed_and_counted() {
        let mut fields = Vec::new();
        let state = parse_record(b"1:0:1:2:3:10:20:1", &mut fields).unwrap();
        assert!(matches!(
            state,
            Record::State {
                begin: 10,
                end: 20,
                state: 1,
                ..
            }
        ));
        let event = parse_record(b"2:0:1:2:3:15:63000006:7:9101:-4", &mut fields).unwrap();
        let Record::Event {
            object,
            time,
            pairs,
        } = event
        else {
            panic!("{event:?}");
        };
        assert_eq!((object.task, object.thread, time), (2, 3, 15));
        assert_eq!(pairs, [63_000_006, 7, 9101, -4]);
        let comm = parse_record(b"3:0:1:1:1:5:5:0:1:2:1:9:9:64:7", &mut fields).unwrap();
        assert!(matches!(
            comm,
            Record::Comm(Comm {
                size: 64,
                tag: 7,
                ..
            })
        ));
        assert_eq!(
            parse_record(b"2:0:1:1:1:5:9", &mut fields),
            Err(RecordError::FieldCount {
                kind: "event",
                need: "6+2k",
                has: 7
            })
        );
        assert_eq!(
            parse_record(b"4:0:1:1:1:5", &mut fields),
            Err(RecordError::Kind(4))
        );
        assert_eq!(
            parse_record(b"2:0:1:x:1:5", &mut fields),
            Err(RecordError::Field(BadField { index: 3 }))
        );
        assert_eq!(trim_trailing_blanks(b"2:0 \t"), b"2:0");
    }
}
