//! Writing a trace: the `.prv` body merged from sorted runs, then the `.pcf` and
//! the `.row`. [`TraceWriter`] takes the options and chooses how the body is
//! merged; every way writes the same text:
//!
//! * runs in memory or spilled to chunks with their time index (or saved into
//!   part files of a sharded conversion, which carry one), each run's
//!   threads in the trace's order, plain or gzip: the trace is cut by time into
//!   segments that every thread merges and formats on its own (`segments.rs`;
//!   a `.prv.gz` gets the gathering merge's gzip members);
//! * otherwise (runs whose threads are not in the trace's order): one thread merges record by record (`kmerge.rs`)
//!   into batches that the others format (`gather.rs`);
//! * with a cut: what each run leaves open at the window's edges (runs read
//!   in parallel up to its end), then the records inside by segments as
//!   above, each clipped on its own, between the opening and closing blocks
//!   (`cut.rs`); record by record through the window's bookkeeping when the
//!   segments cannot merge the runs or two runs share a thread.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use crate::cursor::RunCursor;
use crate::layout::{GlobalThread, TraceLayout};
use crate::lines::{LineFormatter, LINE_BLOCK};
use crate::names::assign_values;
use crate::output::{OutputFile, OutputPaths, TraceSink};
use crate::pcf::{PcfCatalog, UsedLabels};
use crate::run::Run;
use crate::{cut, gather, kmerge, segments, WriteError};

pub use crate::cut::{Cut, TimeWindow};
pub use crate::kmerge::{for_each_event, EventVisitor};
pub use crate::summary::TraceSummary;

/// One sorted run and how it maps into the trace.
pub struct MergeInput {
    pub run: Run,
    /// Added to every time of the run to put it on the common clock (before rebasing).
    pub time_offset: i64,
    /// Local thread → global (task, thread); must keep the order of local indices
    /// (the run is sorted by local index, the merge by global thread).
    pub threads: Vec<GlobalThread>,
}

/// Paraver keeps times as doubles: beyond 2^53 ns (104 days) they lose precision.
pub const MAX_SPAN: i64 = 1 << 53;

/// Records per batch (or segment) of the parallel merges.
const BATCH_RECORDS: usize = 1 << 14;

/// Writes the `.prv` (merging runs, which must be in canonical order: ties
/// between runs go to the earlier one), the `.pcf` and the `.row` at `paths`
/// (written in place: a caller that wants them atomic writes them elsewhere and
/// renames them; a failure may leave some of them behind).
pub struct TraceWriter<'a> {
    paths: &'a OutputPaths,
    layout: &'a TraceLayout,
    catalog: &'a PcfCatalog,
    cut: Option<&'a Cut>,
    read_budget: usize,
    batch_records: usize,
    /// Always the gathering merge (tests compare the two).
    record_by_record: bool,
}

impl<'a> TraceWriter<'a> {
    /// A writer of the trace at `paths` with `layout`, labelled by `catalog`:
    /// all of it, its readers of spilled chunks sharing 256 MiB of buffers.
    pub fn new(paths: &'a OutputPaths, layout: &'a TraceLayout, catalog: &'a PcfCatalog) -> Self {
        TraceWriter {
            paths,
            layout,
            catalog,
            cut: None,
            read_budget: kmerge::DEFAULT_READ_BUDGET,
            batch_records: BATCH_RECORDS,
            record_by_record: false,
        }
    }

    /// Keeps only what lies inside `cut` (when given): see [`Cut`].
    pub fn cut(mut self, cut: Option<&'a Cut>) -> Self {
        self.cut = cut;
        self
    }

    /// The readers of spilled chunks share `bytes` of buffers (however many
    /// chunks there are; each has at least 4 KiB).
    pub fn read_budget(mut self, bytes: usize) -> Self {
        self.read_budget = bytes;
        self
    }

    /// Batches (or segments) of about `records` records: the output is the same
    /// for any size.
    #[cfg(test)]
    pub(crate) fn batch_records(mut self, records: usize) -> Self {
        self.batch_records = records;
        self
    }

    /// Merges with the gathering merge whatever the inputs.
    #[cfg(test)]
    pub(crate) fn record_by_record(mut self) -> Self {
        self.record_by_record = true;
        self
    }

    /// Merges `inputs` into the trace, telling `progress` how many records are
    /// written now and then.
    pub fn write(
        &self,
        inputs: &[MergeInput],
        progress: &mut dyn FnMut(u64),
    ) -> Result<TraceSummary, WriteError> {
        self.write_with(inputs, Body::Merged(progress))
    }

    /// Writes the trace of `inputs` with the body the merge tasks wrote, slice by
    /// slice ([`TraceWriter::write_slice`], every slice of one count, in order):
    /// the header, then each slice's bytes copied as they are (the kernel copies
    /// them, `copy_file_range`), then the `.pcf` (from the slices' tallies) and
    /// the `.row`. The same files as [`TraceWriter::write`].
    pub fn write_from_slices(
        &self,
        inputs: &[MergeInput],
        slices: Vec<SliceBody>,
    ) -> Result<TraceSummary, WriteError> {
        self.write_with(inputs, Body::Slices(slices))
    }

    /// Whether the body of `inputs` can be written by time slices: every run
    /// merged by segments (runs in memory or with a time index, each run's
    /// threads in the trace's order), and with a cut no thread in two runs
    /// (see [`cut::can_split`]).
    pub fn can_slice(&self, inputs: &[MergeInput]) -> Result<bool, WriteError> {
        if self.record_by_record {
            return Ok(false);
        }
        let mut prepared = self.prepare(inputs)?;
        let window = prepared.window;
        let cursors = prepared.cursors(inputs);
        Ok(sliceable(&cursors, window))
    }

    /// Writes slice `index` of `count` of the body into `out` (named `named` in
    /// errors): the records of one span of trace time, as the whole merge
    /// formats them (a `.prv.gz`: gzip members). The spans cut the records into
    /// `count` slices of about as many records each, found from the runs' time
    /// indexes alone, so every task that has the same inputs finds the same
    /// ones; their texts, in order, are the whole body. With a cut, the
    /// slices hold the records inside the window (cut as the whole merge
    /// cuts them), found from the records in it, and what crosses its edges
    /// is written by [`TraceWriter::write_from_slices`]. `None` when the
    /// body cannot be sliced ([`TraceWriter::can_slice`]).
    pub fn write_slice(
        &self,
        inputs: &[MergeInput],
        (index, count): (u32, u32),
        (out, named): (&File, &Path),
        progress: &mut dyn FnMut(u64),
    ) -> Result<Option<SliceTallies>, WriteError> {
        if self.record_by_record {
            return Ok(None);
        }
        let mut prepared = self.prepare(inputs)?;
        let window = prepared.window;
        let cursors = prepared.cursors(inputs);
        if !sliceable(&cursors, window) {
            return Ok(None);
        }
        // A cut's slices cut the records of its window, rank by rank at its
        // edges as the whole merge does (`cut::Keep`).
        let within = window.map(|length| (0, length.saturating_add(1)));
        let bounds = segments::slice_bounds(&cursors, count, within);
        let mut from = (index as usize).checked_sub(1).map(|i| bounds[i]);
        let mut to = bounds.get(index as usize).copied();
        if let Some((start, end)) = within {
            (from, to) = (from.or(Some(start)), to.or(Some(end)));
        }
        let keep = window.map(|end| cut::Keep::Inside { end });
        let keep = keep.as_ref().map(|k| k as &dyn segments::Admit);
        let mut sink = TraceSink::new(out, self.paths.gzip);
        let mut lines = LineFormatter::new(self.catalog, LINE_BLOCK + 4096);
        segments::write_span(
            &mut sink,
            &mut lines,
            self.catalog,
            &cursors,
            self.batch_records,
            (from, to),
            keep,
            progress,
        )
        .and_then(|()| sink.finish())
        .map_err(|e| WriteError::io(named, e))?;
        let (summary, used) = lines.finish();
        Ok(Some(SliceTallies {
            lines: summary.lines,
            states: summary.states,
            events: summary.events,
            comms: summary.comms,
            comm_tags: summary.comm_tags,
            used,
        }))
    }

    /// The header of the trace of `inputs` as the file holds it before the
    /// first slice of [`TraceWriter::write_slice`] (a `.prv.gz`: one gzip
    /// member): every task that has the same inputs computes the same bytes,
    /// so each knows where its slice goes in the `.prv` once it knows the sizes
    /// of the slices before it. Uncut traces only: with a cut, what is open at
    /// the window's start follows the header, and only the finishing merge
    /// finds it.
    pub fn slice_header(&self, inputs: &[MergeInput]) -> Result<Vec<u8>, WriteError> {
        let (origin, end) = time_span(inputs).ok_or(WriteError::EmptyTrace)?;
        self.header_bytes((end - origin) as u64)
    }

    /// The header of a trace ending at `end_time`, as a sink writes it (one
    /// gzip member for a `.prv.gz`).
    fn header_bytes(&self, end_time: u64) -> Result<Vec<u8>, WriteError> {
        let text = self.layout.header(end_time).into_bytes();
        match self.paths.gzip {
            true => {
                crate::output::gzip_member(&text).map_err(|e| WriteError::io(&self.paths.prv, e))
            }
            false => Ok(text),
        }
    }

    /// What every way of writing needs of `inputs`: the span, the cut's
    /// window, the values of names.
    fn prepare(&self, inputs: &[MergeInput]) -> Result<Prepared, WriteError> {
        let catalog = self.catalog;
        let (mut origin, mut end) = time_span(inputs).ok_or(WriteError::EmptyTrace)?;
        if end.saturating_sub(origin) >= MAX_SPAN {
            return Err(WriteError::SpanTooLong(end.saturating_sub(origin)));
        }
        let empty_window = |cut: &Cut| WriteError::EmptyWindow {
            start: cut.window.start - origin,
            end: cut.window.end - origin,
            trace_end: end - origin,
        };
        let empty = self.cut.map(empty_window);
        let mut window = None;
        if let Some(cut) = self.cut {
            let (start, stop) = (cut.window.start.max(origin), cut.window.end.min(end));
            if stop <= start {
                return Err(empty_window(cut));
            }
            window = Some(stop - start);
            (origin, end) = (start, stop);
        }
        let reserved = |ty: u32| catalog.fixed_values_of(ty);
        let (global_names, mut handle_values) =
            assign_values(inputs.iter().map(|i| &i.run.names), &reserved);
        for values in &mut handle_values {
            for (ty, table) in catalog.shared_value_tables() {
                values.share(ty, table);
            }
        }
        Ok(Prepared {
            origin,
            end,
            window,
            empty,
            global_names,
            handle_values,
        })
    }

    fn write_with(&self, inputs: &[MergeInput], body: Body) -> Result<TraceSummary, WriteError> {
        let (paths, layout, catalog) = (self.paths, self.layout, self.catalog);
        let mut prepared = self.prepare(inputs)?;
        let (origin, end, window) = (prepared.origin, prepared.end, prepared.window);
        let empty = prepared.empty.take();
        // The slices' bytes go into the file at their offsets (some may be there
        // already: the file merge tasks placed them in, renamed to `paths.prv`),
        // so their header goes through the page cache too; a merged body is
        // written past it where the file system suits (see `direct`).
        let prv_file = match body {
            Body::Slices(_) => OutputFile::open_or_create(&paths.prv)?,
            Body::Merged(_) => OutputFile::create(&paths.prv)?,
        };
        let end_time = (end - origin) as u64;
        let (mut summary, used) = match body {
            Body::Merged(progress) => {
                let mut out = TraceSink::for_output(&prv_file, paths.gzip);
                out.write_all(layout.header(end_time).as_bytes())
                    .map_err(|e| WriteError::io(&paths.prv, e))?;
                // Lines of the cut and of the batches' ends, and the tallies of all.
                let mut lines = LineFormatter::new(catalog, LINE_BLOCK + 4096);
                let cursors = prepared.cursors(inputs);
                // Segments merge runs in memory and spilled chunks with their time
                // index, when each run orders its threads as the trace does (they merge
                // by the trace's order only); a `.prv.gz` gets the gathering merge's
                // gzip members either way.
                let by_segments = !self.record_by_record && segments::can_merge(&cursors);
                let (budget, batch) = (self.read_budget, self.batch_records);
                let written = match window {
                    Some(length) if by_segments && cut::can_split(&cursors) => {
                        cut::write_body_by_segments(
                            &mut out, &mut lines, catalog, &cursors, length, batch, budget,
                            progress,
                        )
                    }
                    Some(length) => cut::write_body(
                        &mut out, &mut lines, catalog, &cursors, length, budget, progress,
                    ),
                    None if by_segments => segments::write_body(
                        &mut out, &mut lines, catalog, &cursors, batch, progress,
                    ),
                    None => gather::write_body(
                        &mut out, &mut lines, catalog, &cursors, batch, budget, progress,
                    ),
                };
                written.map_err(|e| WriteError::io(&paths.prv, e))?;
                out.finish().map_err(|e| WriteError::io(&paths.prv, e))?;
                lines.finish()
            }
            Body::Slices(slices) => {
                // The header (one gzip member, as a sink writes it); with a cut,
                // what is open at the window's start after it; each slice at its
                // offset (where a merge task may have placed it already: never
                // with a cut, whose opening block only this merge finds); with a
                // cut, what is still open at its end.
                // (With a cut the header ends at the window's length.)
                let header = self.header_bytes(end_time)?;
                let file = prv_file.file();
                let io = |e| WriteError::io(&paths.prv, e);
                std::os::unix::fs::FileExt::write_all_at(file, &header, 0).map_err(io)?;
                let mut offset = header.len() as u64;
                let mut lines = LineFormatter::new(catalog, LINE_BLOCK + 4096);
                let cursors = prepared.cursors(inputs);
                let mut edges = None;
                if let Some(length) = window {
                    let mut found =
                        cut::edges(catalog, &cursors, length, self.read_budget).map_err(io)?;
                    let mut at = file;
                    at.seek(SeekFrom::Start(offset)).map_err(io)?;
                    let mut out = TraceSink::new(file, paths.gzip);
                    let batch = self.batch_records;
                    cut::write_opening(&mut out, &mut lines, catalog, &cursors, &mut found, batch)
                        .and_then(|()| out.finish())
                        .map_err(io)?;
                    offset = at.stream_position().map_err(io)?;
                    edges = Some(found);
                }
                for slice in &slices {
                    let bytes = slice.file.metadata().map_err(io)?.len();
                    if slice.placed_at != Some(offset) {
                        place_slice(&slice.file, file, offset).map_err(io)?;
                    }
                    offset += bytes;
                }
                if let Some(found) = edges {
                    let mut at = file;
                    at.seek(SeekFrom::Start(offset)).map_err(io)?;
                    let mut tail = TraceSink::new(file, paths.gzip);
                    cut::write_closing(&mut tail, &mut lines, found)
                        .and_then(|()| tail.finish())
                        .map_err(io)?;
                    offset = at.stream_position().map_err(io)?;
                }
                let (mut summary, mut used) = lines.finish();
                for slice in slices {
                    let t = slice.tallies;
                    summary.lines += t.lines;
                    summary.states += t.states;
                    summary.events += t.events;
                    summary.comms += t.comms;
                    summary.comm_tags.extend(t.comm_tags);
                    used.extend(t.used);
                }
                // A file placed into holds nothing past the last slice, whatever
                // an earlier, longer set left there.
                file.set_len(offset).map_err(io)?;
                (summary, used)
            }
        };
        if let (Some(empty), 0) = (empty, summary.lines) {
            // Nothing happens in the window (Paraver rejects an empty body).
            return Err(empty);
        }
        summary.origin = origin;
        summary.end_time = end_time;
        summary.event_types = used.types.clone();

        let pcf_file = OutputFile::create(&paths.pcf)?;
        let mut pcf = std::io::BufWriter::new(pcf_file.file());
        catalog
            .write(&mut pcf, &used, &prepared.global_names)
            .and_then(|_| pcf.flush())
            .map_err(|e| WriteError::io(&paths.pcf, e))?;
        drop(pcf);
        let row_file = OutputFile::create(&paths.row)?;
        let mut row = std::io::BufWriter::new(row_file.file());
        layout
            .write_row(&mut row)
            .and_then(|_| row.flush())
            .map_err(|e| WriteError::io(&paths.row, e))?;
        drop(row);

        pcf_file.finish()?;
        row_file.finish()?;
        prv_file.finish()?;
        Ok(summary)
    }
}

/// Whether the body of `cursors` can be cut into time slices (with a cut of
/// `window` ns, when given).
fn sliceable(cursors: &[RunCursor], window: Option<i64>) -> bool {
    match window {
        Some(_) => cut::can_split(cursors),
        None => segments::can_merge(cursors),
    }
}

/// Where the body of a trace comes from.
enum Body<'p> {
    /// Merged from the runs here.
    Merged(&'p mut dyn FnMut(u64)),
    /// Copied from the slices merge tasks wrote.
    Slices(Vec<SliceBody>),
}

/// What the ways of writing share (see [`TraceWriter::prepare`]).
struct Prepared {
    origin: i64,
    end: i64,
    /// The cut's length, with a cut.
    window: Option<i64>,
    /// The error of a cut with nothing in it.
    empty: Option<WriteError>,
    global_names: crate::names::GlobalNames,
    handle_values: Vec<crate::names::HandleValues>,
}

impl Prepared {
    fn cursors<'a>(&mut self, inputs: &'a [MergeInput]) -> Vec<RunCursor<'a>> {
        inputs
            .iter()
            .zip(std::mem::take(&mut self.handle_values))
            .map(|(i, values)| {
                RunCursor::new(&i.run, i.time_offset, &i.threads, values, self.origin)
            })
            .collect()
    }
}

/// What a merge task counted of its slice of the body: what the step that
/// writes the trace from the slices needs for the `.pcf` and its summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SliceTallies {
    pub lines: u64,
    pub states: u64,
    pub events: u64,
    pub comms: u64,
    pub comm_tags: std::collections::BTreeSet<i64>,
    pub used: UsedLabels,
}

/// A slice of the body as a merge task wrote it, and its tallies.
pub struct SliceBody {
    pub file: File,
    pub tallies: SliceTallies,
    /// The offset at which its task placed it already in the `.prv` that
    /// [`TraceWriter::write_from_slices`] finds at its path ([`place_slice`]);
    /// copied again unless that is where it belongs.
    pub placed_at: Option<u64>,
}

/// Copies the whole of `slice` into `out` at `offset` (the kernel copies:
/// `copy_file_range`, no bytes through user space, none moved at all on file
/// systems that share extents or copy on the server). Other writers may write
/// elsewhere in `out` meanwhile.
pub fn place_slice(slice: &File, out: &File, offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let (mut from, mut to) = (slice, out);
    from.seek(SeekFrom::Start(0))?;
    to.seek(SeekFrom::Start(offset))?;
    let bytes = slice.metadata()?.len();
    // `io::copy` between files is `copy_file_range` (a read-write loop where
    // the kernel has none).
    let copied = std::io::copy(&mut from, &mut to)?;
    if copied != bytes {
        return Err(std::io::Error::other(format!(
            "{copied} bytes of the slice's {bytes} copied"
        )));
    }
    Ok(())
}

/// [`TraceWriter::write`] of the whole trace.
pub fn write_trace(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    TraceWriter::new(paths, layout, catalog).write(inputs, progress)
}

/// [`TraceWriter::write`] keeping only what lies inside `cut` (when given).
pub fn write_trace_cut(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    cut: Option<&Cut>,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    TraceWriter::new(paths, layout, catalog)
        .cut(cut)
        .write(inputs, progress)
}

/// [`write_trace_cut`] whose readers of spilled chunks share `read_budget` bytes
/// of buffers (see [`TraceWriter::read_budget`]).
pub fn write_trace_within(
    paths: &OutputPaths,
    layout: &TraceLayout,
    inputs: &[MergeInput],
    catalog: &PcfCatalog,
    cut: Option<&Cut>,
    read_budget: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<TraceSummary, WriteError> {
    TraceWriter::new(paths, layout, catalog)
        .cut(cut)
        .read_budget(read_budget)
        .write(inputs, progress)
}

/// (origin, end) on the common clock: the origin is the earliest session start or
/// record, so the trace starts at 0 and no time is negative. `None` when every run
/// is empty.
pub fn time_span(inputs: &[MergeInput]) -> Option<(i64, i64)> {
    let non_empty = inputs.iter().filter(|i| !i.run.is_empty());
    let origin = non_empty
        .clone()
        .map(|i| {
            i.time_offset
                .min(i.run.min_time.saturating_add(i.time_offset))
        })
        .min()?;
    let end = non_empty
        .map(|i| i.run.max_time.saturating_add(i.time_offset))
        .max()?;
    Some((origin, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{NodeInfo, TaskInfo};
    use crate::pcf::{EventTypeInfo, StateInfo, Timing, ValueLabels};
    use crate::record::{Comm, EventPair};
    use crate::run::RunBuilder;
    use crate::spill::{MemoryBudget, SpillPolicy};
    use paraver_reader::validate::validate_trace;

    const RANGE: u32 = 100;
    const MARK: u32 = 200;
    const SAMPLE: u32 = 300;

    fn layout() -> TraceLayout {
        TraceLayout {
            application: "app".into(),
            date: "01/01/2026 at 00:00".into(),
            nodes: vec![NodeInfo {
                name: "n".into(),
                cpus: 1,
            }],
            tasks: vec![TaskInfo {
                name: "t".into(),
                node: 0,
                threads: vec!["a".into(), "b".into()],
            }],
        }
    }

    fn catalog() -> PcfCatalog {
        PcfCatalog {
            states: (0..2)
                .map(|id| StateInfo {
                    id,
                    label: format!("S{id}"),
                    color: (1, 2, 3),
                })
                .collect(),
            types: [
                (RANGE, Timing::Interval),
                (MARK, Timing::Point),
                (SAMPLE, Timing::Level),
            ]
            .into_iter()
            .map(|(ty, timing)| {
                EventTypeInfo::new(ty, &format!("type {ty}"), ValueLabels::Numeric, timing)
            })
            .collect(),
        }
    }

    /// A run builder, spilling in tiny chunks into `spill` when given.
    fn builder(spill: Option<&std::path::Path>) -> RunBuilder {
        match spill {
            Some(dir) => RunBuilder::with_spill(SpillPolicy {
                dir: dir.to_path_buf(),
                chunk_bytes: 64,
                budget: MemoryBudget::new(0),
            }),
            None => RunBuilder::new(),
        }
    }

    /// Thread 0: ranges 5 over [0,100) and 6 over [20,60) nested in it, state 1
    /// over [0,100), a mark at 30, samples 7 at 10 and 9 at 50; thread 1: state 1
    /// over [40,45); messages 0→1 at 40→45 (inside) and 10→70 (straddling).
    fn run(spill: Option<&std::path::Path>) -> Run {
        let mut b = builder(spill);
        b.add_thread(0);
        b.add_thread(1);
        b.interval(0, 0, 100, &[EventPair::raw(RANGE, 5)]);
        b.interval(0, 20, 60, &[EventPair::raw(RANGE, 6)]);
        b.state(0, 0, 100, 1);
        b.state(1, 40, 45, 1);
        b.events(0, 30, &[EventPair::raw(MARK, 3)]);
        b.events(0, 10, &[EventPair::raw(SAMPLE, 7)]);
        b.events(0, 50, &[EventPair::raw(SAMPLE, 9)]);
        for (send, recv) in [(40, 45), (10, 70)] {
            let comm = Comm {
                send_physical: send,
                receiver: 1,
                recv_logical: recv,
                recv_physical: recv,
                size: 8,
                tag: 1,
            };
            b.comm(0, send, comm);
        }
        b.finish().unwrap()
    }

    fn write_cut(dir: &std::path::Path, name: &str, run: Run, window: TimeWindow) -> String {
        let paths = OutputPaths::for_trace(&dir.join(format!("{name}.prv"))).unwrap();
        let inputs = [MergeInput {
            run,
            time_offset: 1000,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let cut = Cut { window };
        let summary = write_trace_cut(
            &paths,
            &layout(),
            &inputs,
            &catalog(),
            Some(&cut),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(summary.origin, window.start.max(1000));
        let report = validate_trace(&paths.prv).unwrap();
        let errors: Vec<String> = report.errors().map(|f| f.to_string()).collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        std::fs::read_to_string(&paths.prv).unwrap()
    }

    fn body(text: &str) -> Vec<&str> {
        text.lines().skip(1).collect()
    }

    /// Thread 0: three event records at time 20 (one line) and two at 60, ends
    /// and begins; thread 1: a state and a range. Spilled in tiny chunks if asked.
    fn joined_lines_run(spill: Option<&std::path::Path>) -> Run {
        let mut b = builder(spill);
        b.add_thread(0);
        b.add_thread(1);
        b.events(0, 20, &[EventPair::raw(SAMPLE, 1)]);
        b.events(0, 20, &[EventPair::raw(MARK, 2)]);
        let range = b.shared_pairs(&[EventPair::raw(RANGE, 5)]);
        b.interval_shared(0, 20, 60, range, &[EventPair::raw(SAMPLE, 3)]);
        b.interval(0, 60, 90, &[EventPair::raw(RANGE, 6)]);
        b.state(1, 0, 90, 1);
        b.interval(1, 20, 30, &[EventPair::raw(RANGE, 4)]);
        b.finish().unwrap()
    }

    /// Writes `joined_lines_run` on a pool of `threads` with `batch` records per
    /// batch; returns the file's bytes (compressed for `.prv.gz`) and its text.
    fn write_batched(
        dir: &std::path::Path,
        threads: usize,
        batch: usize,
        gzip: bool,
        spill: bool,
    ) -> (Vec<u8>, String) {
        let inputs = [MergeInput {
            run: joined_lines_run(spill.then_some(dir)),
            time_offset: 0,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let how = Writing {
            threads,
            batch,
            gzip,
            gather: false,
        };
        write_with(dir, &format!("s{spill}"), &layout(), &inputs, how)
    }

    /// How a test writes a trace: on a pool of `threads`, in batches (or
    /// segments) of `batch` records, compressed or not, always with the
    /// gathering merge or not.
    #[derive(Clone, Copy, Debug)]
    struct Writing {
        threads: usize,
        batch: usize,
        gzip: bool,
        gather: bool,
    }

    /// Writes `inputs` as `how` says; returns the file's bytes (compressed for
    /// `.prv.gz`) and its text.
    fn write_with(
        dir: &std::path::Path,
        name: &str,
        layout: &TraceLayout,
        inputs: &[MergeInput],
        how: Writing,
    ) -> (Vec<u8>, String) {
        let Writing {
            threads,
            batch,
            gzip,
            gather,
        } = how;
        let name = format!(
            "{name}t{threads}b{batch}g{gather}.prv{}",
            if gzip { ".gz" } else { "" }
        );
        let paths = OutputPaths::for_trace(&dir.join(name)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let catalog = catalog();
        let summary = pool
            .install(|| {
                let writer = TraceWriter::new(&paths, layout, &catalog).batch_records(batch);
                let writer = if gather {
                    writer.record_by_record()
                } else {
                    writer
                };
                writer.write(inputs, &mut |_| {})
            })
            .unwrap();
        let bytes = std::fs::read(&paths.prv).unwrap();
        let mut text = String::new();
        if gzip {
            std::io::Read::read_to_string(
                &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
                &mut text,
            )
            .unwrap();
        } else {
            text = String::from_utf8(bytes.clone()).unwrap();
        }
        assert_eq!(summary.lines as usize, body(&text).len(), "{how:?}");
        (bytes, text)
    }

    /// Any batch size, thread count, spilling, and compression give the same
    /// text, event lines that straddle a batch boundary included; a `.prv.gz` has
    /// the same bytes whatever the thread count.
    #[test]
    fn batches_and_threads_do_not_change_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let (_, whole) = write_batched(dir.path(), 1, 1 << 14, false, false);
        assert!(whole.contains(":20:300:1:200:2:100:5:300:3\n"), "{whole}");
        for batch in [1, 2, 3, 4, 1 << 14] {
            let inputs = [MergeInput {
                run: joined_lines_run(None),
                time_offset: 0,
                threads: (0..2)
                    .map(|t| GlobalThread { task: 0, thread: t })
                    .collect(),
            }];
            let gathered = Writing {
                threads: 1,
                batch,
                gzip: true,
                gather: true,
            };
            let (gz_one_thread, _) = write_with(dir.path(), "g", &layout(), &inputs, gathered);
            for threads in [1, 3, 8] {
                for spill in [false, true] {
                    let (_, text) = write_batched(dir.path(), threads, batch, false, spill);
                    assert_eq!(
                        text, whole,
                        "{threads} threads, batch {batch}, spill {spill}"
                    );
                    let (gz, text) = write_batched(dir.path(), threads, batch, true, spill);
                    assert_eq!(text, whole, "gzip, {threads} threads, batch {batch}");
                    assert!(
                        gz == gz_one_thread,
                        "gzip bytes, {threads} threads, batch {batch}"
                    );
                }
            }
        }
    }

    /// Two runs whose records interleave and tie (same times, threads that come
    /// before and after the other run's), merged from memory in segments of any
    /// size on any number of threads and from spilled chunks record by record:
    /// the same text.
    #[test]
    fn segments_merge_interleaved_runs_as_the_record_by_record_merge_does() {
        let dir = tempfile::tempdir().unwrap();
        let two_runs = |spill: bool| -> Vec<MergeInput> {
            (0..2u32)
                .map(|r| {
                    let mut b = builder(spill.then_some(dir.path()));
                    b.add_thread(0);
                    b.add_thread(1);
                    for i in 0..40i64 {
                        let t = i * 10 + i64::from(r) * (i % 3);
                        // Shared lists (written from a cache once formatted) with
                        // and without pairs of their own.
                        let range = b.shared_pairs(&[EventPair::raw(RANGE, 1 + i % 4)]);
                        let own = [EventPair::raw(SAMPLE, i)];
                        b.interval_shared(0, t, t + 10, range, &own[..(i % 2) as usize]);
                        b.events(1, t, &[EventPair::raw(MARK, i)]);
                        b.state(1, t, t + 5, 1);
                    }
                    MergeInput {
                        run: b.finish().unwrap(),
                        time_offset: 1000,
                        // Run 0's threads are the 1st and 3rd of the task, run 1's the 2nd and 4th.
                        threads: (0..2)
                            .map(|t| GlobalThread {
                                task: 0,
                                thread: 2 * t + r,
                            })
                            .collect(),
                    }
                })
                .collect()
        };
        let layout = TraceLayout {
            tasks: vec![TaskInfo {
                name: "t".into(),
                node: 0,
                threads: (0..4).map(|t| format!("{t}")).collect(),
            }],
            ..layout()
        };
        let write = |name: &str, spill: bool, how: Writing| {
            let inputs = two_runs(spill);
            assert_eq!(inputs.iter().all(|i| i.run.chunks.is_empty()), !spill);
            write_with(dir.path(), name, &layout, &inputs, how)
        };
        let gathered = |batch, gzip| Writing {
            threads: 1,
            batch,
            gzip,
            gather: true,
        };
        let (_, record_by_record) = write("spilled", true, gathered(1 << 14, false));
        // Per run and step: a range begin (with the end of the one before when
        // they meet), a mark, a state; the last range's end.
        assert!(body(&record_by_record).len() > 2 * 40 * 3);
        for batch in [1, 2, 3, 7, 50, 1 << 14] {
            let (gathered_gz, _) = write("spilled", true, gathered(batch, true));
            for threads in [1, 2, 3] {
                for (spill, gzip) in [(false, false), (true, false), (false, true), (true, true)] {
                    let how = Writing {
                        threads,
                        batch,
                        gzip,
                        gather: false,
                    };
                    let (bytes, text) = write(&format!("s{spill}"), spill, how);
                    assert_eq!(text, record_by_record, "{how:?}, spilled {spill}");
                    if gzip {
                        assert!(bytes == gathered_gz, "gzip bytes, {how:?}, spilled {spill}");
                    }
                }
            }
        }
    }

    /// Two runs of three threads each whose records tie and interleave, spilled
    /// (when `chunk_bytes` is given) in chunks of hundreds of records, their
    /// last chunk kept in memory when `budget` allows.
    fn large_runs(spill: Option<(&std::path::Path, usize, usize)>) -> Vec<MergeInput> {
        (0..2u32)
            .map(|r| {
                let mut b = match spill {
                    Some((dir, chunk_bytes, budget)) => RunBuilder::with_spill(SpillPolicy {
                        dir: dir.to_path_buf(),
                        chunk_bytes,
                        budget: MemoryBudget::new(budget),
                    }),
                    None => RunBuilder::new(),
                };
                for t in 0..3 {
                    b.add_thread(t);
                }
                let mut seed = 99 + u64::from(r);
                let mut next = |n: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % n
                };
                let mut state_end = [0i64; 3];
                for i in 0..6000i64 {
                    let thread = next(3) as u32;
                    let time = i * 3 + next(4) as i64;
                    match next(4) {
                        0 => b.events(thread, time, &[EventPair::raw(MARK, i)]),
                        1 => {
                            let end = time + next(20) as i64;
                            b.interval(thread, time, end, &[EventPair::raw(RANGE, 1 + i % 5)])
                        }
                        2 => {
                            let begin = state_end[thread as usize].max(time);
                            let end = begin + 1 + next(5) as i64;
                            state_end[thread as usize] = end;
                            b.state(thread, begin, end, 1)
                        }
                        _ => {
                            let comm = Comm {
                                send_physical: time,
                                receiver: next(3) as u32,
                                recv_logical: time + 5,
                                recv_physical: time + 6,
                                size: i,
                                tag: 1,
                            };
                            b.comm(thread, time, comm)
                        }
                    }
                }
                MergeInput {
                    run: b.finish().unwrap(),
                    time_offset: 1000 + 7 * i64::from(r),
                    threads: (0..3)
                        .map(|t| GlobalThread { task: r, thread: t })
                        .collect(),
                }
            })
            .collect()
    }

    /// The layout of [`large_runs`]: two tasks of three threads.
    fn two_tasks_of_three_threads() -> TraceLayout {
        TraceLayout {
            tasks: (0..2)
                .map(|t| TaskInfo {
                    name: format!("t{t}"),
                    node: 0,
                    threads: (0..3).map(|t| format!("{t}")).collect(),
                })
                .collect(),
            ..layout()
        }
    }

    /// Segments read the spans of spilled chunks their times fall in (chunks of
    /// hundreds of records, segments of fewer): the gathering merge's text, and
    /// for a `.prv.gz` its bytes, for any segment size and thread count.
    #[test]
    fn segments_read_spans_of_spilled_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let layout = two_tasks_of_three_threads();
        let in_memory = large_runs(None);
        for batch in [100, 1000, 1 << 14] {
            let gathered = |gzip| Writing {
                threads: 1,
                batch,
                gzip,
                gather: true,
            };
            let (_, text) = write_with(dir.path(), "m", &layout, &in_memory, gathered(false));
            let (gz, _) = write_with(dir.path(), "m", &layout, &in_memory, gathered(true));
            assert!(body(&text).len() > 10_000, "{}", body(&text).len());
            for (chunk_bytes, budget) in [(16 << 10, 0), (64 << 10, 0), (16 << 10, 1 << 30)] {
                let spill = Some((dir.path(), chunk_bytes, budget));
                let inputs = large_runs(spill);
                assert!(inputs.iter().all(|i| i.run.chunks.len() > 5));
                assert_eq!(inputs.iter().all(|i| i.run.in_memory() > 0), budget > 0);
                for threads in [1, 3] {
                    for gzip in [false, true] {
                        let how = Writing {
                            threads,
                            batch,
                            gzip,
                            gather: false,
                        };
                        let name = format!("c{chunk_bytes}m{budget}");
                        let (bytes, spilled) = write_with(dir.path(), &name, &layout, &inputs, how);
                        assert!(spilled == text, "{how:?}, chunks of {chunk_bytes} bytes");
                        if gzip {
                            assert!(bytes == gz, "gzip bytes, {how:?}, chunks of {chunk_bytes}");
                        }
                    }
                }
            }
        }
    }

    /// Merging many spilled runs, segments grow so that the block of records
    /// each re-reads from every chunk before its start stays a small share of
    /// what it reads: 16 runs of one chunk, batches of 1,024 records (whose
    /// segments re-read 16 x 64 records each, the records read twice over).
    #[test]
    fn segments_of_many_chunks_read_them_about_once() {
        let dir = tempfile::tempdir().unwrap();
        let runs = 16u32;
        let inputs: Vec<MergeInput> = (0..runs)
            .map(|r| {
                let mut b = RunBuilder::with_spill(SpillPolicy {
                    dir: dir.path().to_path_buf(),
                    chunk_bytes: 1 << 30,
                    budget: MemoryBudget::new(0),
                });
                b.add_thread(0);
                for i in 0..4000i64 {
                    b.events(0, i * 16 + i64::from(r), &[EventPair::raw(MARK, i)]);
                }
                MergeInput {
                    run: b.finish().unwrap(),
                    time_offset: 0,
                    threads: vec![GlobalThread { task: r, thread: 0 }],
                }
            })
            .collect();
        assert!(inputs.iter().all(|i| i.run.chunks.len() == 1));
        let layout = TraceLayout {
            tasks: (0..runs)
                .map(|t| TaskInfo {
                    name: format!("t{t}"),
                    node: 0,
                    threads: vec!["0".into()],
                })
                .collect(),
            ..layout()
        };
        let paths = OutputPaths::for_trace(&dir.path().join("many.prv")).unwrap();
        let catalog = catalog();
        let writer = TraceWriter::new(&paths, &layout, &catalog).batch_records(1024);
        let mut prepared = writer.prepare(&inputs).unwrap();
        let cursors = prepared.cursors(&inputs);
        let places = crate::cursor::places_in_trace(&cursors);
        let segments = segments::Segmenter::within(&cursors, &places, 1024, None, None);
        assert_eq!(segments.records, 8 * 1024);
        let (mut count, mut read) = (0, 0);
        for segment in segments {
            count += 1;
            read += segment.chunk_records();
        }
        let records = u64::from(runs) * 4000;
        assert!(count >= 6, "{count} segments");
        assert!(read * 8 <= records * 9, "{read} records read for {records}");
    }

    /// The body written slice by slice (any count, slices of runs in memory
    /// and of spilled chunks; empty slices) and copied after the header gives
    /// the whole merge's files: `.prv` byte for byte, `.prv.gz` decompressed.
    #[test]
    fn slices_written_apart_make_the_whole_trace() {
        let dir = tempfile::tempdir().unwrap();
        let layout = two_tasks_of_three_threads();
        let catalog = catalog();
        let read = |paths: &OutputPaths| {
            let mut bytes = std::fs::read(&paths.prv).unwrap();
            if paths.gzip {
                let mut text = Vec::new();
                let mut gz = flate2::read::MultiGzDecoder::new(&bytes[..]);
                std::io::Read::read_to_end(&mut gz, &mut text).unwrap();
                bytes = text;
            }
            (bytes, std::fs::read(&paths.pcf).unwrap())
        };
        for gzip in [false, true] {
            let ext = if gzip { "prv.gz" } else { "prv" };
            let whole = OutputPaths::for_trace(&dir.path().join(format!("whole.{ext}"))).unwrap();
            let inputs = large_runs(None);
            let expected_summary = TraceWriter::new(&whole, &layout, &catalog)
                .write(&inputs, &mut |_| {})
                .unwrap();
            let expected = read(&whole);
            for spill in [None, Some((dir.path(), 16 << 10, 0))] {
                let inputs = large_runs(spill);
                for count in [1u32, 2, 3, 4, 7, 1000] {
                    let name = format!("s{count}{}.{ext}", spill.is_some());
                    let paths = OutputPaths::for_trace(&dir.path().join(name)).unwrap();
                    let writer = TraceWriter::new(&paths, &layout, &catalog).batch_records(500);
                    assert!(writer.can_slice(&inputs).unwrap());
                    let mut slices = Vec::new();
                    let mut empty = 0;
                    for index in 0..count {
                        let file = tempfile::tempfile_in(dir.path()).unwrap();
                        let tallies = writer
                            .write_slice(&inputs, (index, count), (&file, dir.path()), &mut |_| {})
                            .unwrap()
                            .expect("sliced");
                        empty += usize::from(tallies.lines == 0);
                        std::io::Seek::rewind(&mut &file).unwrap();
                        slices.push(SliceBody {
                            file,
                            tallies,
                            placed_at: None,
                        });
                    }
                    // More slices than records: most are empty.
                    assert_eq!(count < 10, empty == 0, "{count} slices, {empty} empty");
                    if count == 3 {
                        // Slice 1 placed where it belongs, slice 0 claimed placed
                        // at a wrong offset, garbage elsewhere and past the end:
                        // only what is where it belongs is kept.
                        let header = writer.slice_header(&inputs).unwrap().len() as u64;
                        let size = |s: &SliceBody| s.file.metadata().unwrap().len();
                        let at = header + size(&slices[0]);
                        let total = at + size(&slices[1]) + size(&slices[2]);
                        std::fs::write(&paths.prv, vec![b'x'; total as usize + 4096]).unwrap();
                        let out = std::fs::OpenOptions::new()
                            .write(true)
                            .open(&paths.prv)
                            .unwrap();
                        place_slice(&slices[1].file, &out, at).unwrap();
                        slices[1].placed_at = Some(at);
                        slices[0].placed_at = Some(header + 1);
                    }
                    let summary = writer.write_from_slices(&inputs, slices).unwrap();
                    assert_eq!(summary, expected_summary, "{count} slices");
                    assert!(read(&paths) == expected, "{count} slices, gzip {gzip}");
                }
            }
        }
    }

    /// Two runs of three threads each with what a cut clips: ranges nested up
    /// to four deep (and one producer that never closes), values that hold,
    /// marks, states back to back, messages within and across threads, many
    /// records at one time; spilled in tiny chunks when `spill` is given.
    fn nested_runs(spill: Option<&std::path::Path>) -> Vec<MergeInput> {
        (0..2u32)
            .map(|r| {
                let mut b = match spill {
                    Some(dir) => RunBuilder::with_spill(SpillPolicy {
                        dir: dir.to_path_buf(),
                        chunk_bytes: 4 << 10,
                        budget: MemoryBudget::new(0),
                    }),
                    None => RunBuilder::new(),
                };
                for t in 0..3 {
                    b.add_thread(t);
                }
                let mut seed = 7 + u64::from(r);
                let mut next = |n: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % n
                };
                for thread in 0..3u32 {
                    let mut time = 0i64;
                    for i in 0..120i64 {
                        // Nested ranges: [t, t+40) holds [t+5, t+30), [t+10, t+20) and so on.
                        let depth = 1 + next(4) as i64;
                        for level in 0..depth {
                            let value = 1 + 10 * level + i % 7;
                            b.interval(
                                thread,
                                time + 5 * level,
                                time + 40 - 10 * level,
                                &[EventPair::raw(RANGE, value)],
                            );
                        }
                        b.events(thread, time + next(40) as i64, &[EventPair::raw(SAMPLE, i)]);
                        b.events(thread, time + 10, &[EventPair::raw(MARK, i)]);
                        b.state(thread, time, time + 20, 1);
                        b.state(thread, time + 20, time + 40, 0);
                        let comm = Comm {
                            send_physical: time + 5,
                            receiver: next(3) as u32,
                            recv_logical: time + 5 + next(60) as i64,
                            recv_physical: time + 5 + next(60) as i64,
                            size: i,
                            tag: 1,
                        };
                        b.comm(thread, time + 5, comm);
                        time += 40;
                    }
                    // A range that never ends within the run.
                    b.events(thread, 100, &[EventPair::raw(RANGE, 99)]);
                }
                MergeInput {
                    run: b.finish().unwrap(),
                    time_offset: 1000 + 5 * i64::from(r),
                    threads: (0..3)
                        .map(|t| GlobalThread { task: r, thread: t })
                        .collect(),
                }
            })
            .collect()
    }

    /// Writes the cut of `inputs` to `window` as `how` says; returns the
    /// file's text (decompressed), its summary and the last count the
    /// progress was told, or the error.
    fn write_cut_with(
        dir: &std::path::Path,
        name: &str,
        inputs: &[MergeInput],
        how: Writing,
        window: TimeWindow,
    ) -> Result<(String, TraceSummary, u64), WriteError> {
        let Writing {
            threads,
            batch,
            gzip,
            gather,
        } = how;
        let ext = if gzip { "prv.gz" } else { "prv" };
        let name = format!("{name}t{threads}b{batch}g{gather}.{ext}");
        let paths = OutputPaths::for_trace(&dir.join(name)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let catalog = catalog();
        let layout = two_tasks_of_three_threads();
        let cut = Cut { window };
        let mut told = 0;
        let summary = pool.install(|| {
            let writer = TraceWriter::new(&paths, &layout, &catalog)
                .batch_records(batch)
                .cut(Some(&cut));
            let writer = if gather {
                writer.record_by_record()
            } else {
                writer
            };
            writer.write(inputs, &mut |n| told = n)
        })?;
        let bytes = std::fs::read(&paths.prv).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
            &mut text,
        )
        .unwrap_or_else(|_| {
            text = String::from_utf8(bytes.clone()).unwrap();
            0
        });
        assert_eq!(summary.lines as usize, body(&text).len(), "{how:?}");
        Ok((text, summary, told))
    }

    /// A cut merged by segments (what each run leaves open found apart, the
    /// records inside clipped one by one) writes the record-by-record cut's
    /// text and tallies: nested ranges open across both edges, values that
    /// hold, states and messages across the edges, records at exactly the
    /// start and the end, windows of one time and empty ones, spilled or not,
    /// any segment size and thread count, plain or gzip; and the progress
    /// told the same count of records read.
    #[test]
    fn a_cut_by_segments_writes_the_record_by_record_cut() {
        let dir = tempfile::tempdir().unwrap();
        let in_memory = nested_runs(None);
        let spilled = nested_runs(Some(dir.path()));
        assert!(spilled.iter().all(|i| i.run.chunks.len() > 5));
        let oracle = Writing {
            threads: 1,
            batch: 1 << 14,
            gzip: false,
            gather: true,
        };
        let mut tried = 0;
        // Record times are the runs' offsets (1000, 1005) plus multiples of 5.
        for (start, end) in [
            (0, 1 << 20),
            (1000, 1100),
            (1100, 1100),
            (1105, 1106),
            (1205, 1245),
            (1210, 2000),
            (1213, 2217),
            (3000, 3040),
            (5790, 6000),
            (6000, 7000),
        ] {
            let window = TimeWindow { start, end };
            let expected = write_cut_with(dir.path(), "o", &in_memory, oracle, window);
            let Ok((expected, expected_summary, expected_read)) = expected else {
                // Nothing in the window: an error, whichever the merge.
                for inputs in [&in_memory, &spilled] {
                    let how = Writing {
                        gather: false,
                        ..oracle
                    };
                    let err = write_cut_with(dir.path(), "e", inputs, how, window).unwrap_err();
                    assert!(matches!(err, WriteError::EmptyWindow { .. }), "{err}");
                }
                continue;
            };
            tried += 1;
            for batch in [1, 7, 100, 1 << 14] {
                for threads in [1, 3] {
                    for gzip in [false, true] {
                        for (spill, inputs) in [(false, &in_memory), (true, &spilled)] {
                            let how = Writing {
                                threads,
                                batch,
                                gzip,
                                gather: false,
                            };
                            let (text, summary, read) =
                                write_cut_with(dir.path(), "s", inputs, how, window).unwrap();
                            let what = format!("{how:?}, spilled {spill}, window {window:?}");
                            assert!(text == expected, "{what}\n{text}\n---\n{expected}");
                            assert_eq!(summary, expected_summary, "{what}");
                            // The progress counts the records read up to the end.
                            assert_eq!(read, expected_read, "{what}");
                        }
                    }
                }
            }
        }
        assert!(tried >= 8, "{tried} windows with records");
    }

    /// Two runs with records of the same threads (events of the same types,
    /// states): what the threads leave open at the window's edges is found
    /// from the runs merged as one, and the cut by segments (and by slices)
    /// is still the record-by-record cut.
    #[test]
    fn a_cut_of_runs_that_share_threads_is_the_record_by_record_cut() {
        let dir = tempfile::tempdir().unwrap();
        let shared = |spill: Option<&std::path::Path>| {
            let mut inputs = nested_runs(spill);
            inputs[1].threads = inputs[0].threads.clone();
            inputs
        };
        let oracle = Writing {
            threads: 1,
            batch: 1 << 14,
            gzip: false,
            gather: true,
        };
        for (start, end) in [(1205, 1245), (1213, 2217), (3000, 3040)] {
            let window = TimeWindow { start, end };
            let (expected, expected_summary, expected_read) =
                write_cut_with(dir.path(), "o", &shared(None), oracle, window).unwrap();
            for spill in [None, Some(dir.path())] {
                for batch in [7, 1 << 14] {
                    let how = Writing {
                        threads: 3,
                        batch,
                        gzip: false,
                        gather: false,
                    };
                    let inputs = shared(spill);
                    let (text, summary, read) =
                        write_cut_with(dir.path(), "s", &inputs, how, window).unwrap();
                    let what = format!("{how:?}, spilled {}, {window:?}", spill.is_some());
                    assert!(text == expected, "{what}\n{text}\n---\n{expected}");
                    assert_eq!(summary, expected_summary, "{what}");
                    assert_eq!(read, expected_read, "{what}");
                }
            }
        }
    }

    /// A cut written slice by slice (its window's records cut into slices,
    /// what crosses its edges written by the step that copies them) gives the
    /// record-by-record cut's files: `.prv` byte for byte, `.prv.gz`
    /// decompressed, the same `.pcf` and summary; any slice count, spilled or
    /// not, empty slices included.
    #[test]
    fn a_cut_written_by_slices_is_the_whole_cut() {
        let dir = tempfile::tempdir().unwrap();
        let layout = two_tasks_of_three_threads();
        let catalog = catalog();
        let read = |paths: &OutputPaths| {
            let mut bytes = std::fs::read(&paths.prv).unwrap();
            if paths.gzip {
                let mut text = Vec::new();
                let mut gz = flate2::read::MultiGzDecoder::new(&bytes[..]);
                std::io::Read::read_to_end(&mut gz, &mut text).unwrap();
                bytes = text;
            }
            (bytes, std::fs::read(&paths.pcf).unwrap())
        };
        let in_memory = nested_runs(None);
        let spilled = nested_runs(Some(dir.path()));
        for (start, end) in [(1205, 1245), (1213, 2217), (0, 1 << 20), (1105, 1106)] {
            let cut = Cut {
                window: TimeWindow { start, end },
            };
            for gzip in [false, true] {
                let ext = if gzip { "prv.gz" } else { "prv" };
                let whole = OutputPaths::for_trace(&dir.path().join(format!("w.{ext}"))).unwrap();
                let expected_summary = TraceWriter::new(&whole, &layout, &catalog)
                    .cut(Some(&cut))
                    .record_by_record()
                    .write(&in_memory, &mut |_| {})
                    .unwrap();
                let expected = read(&whole);
                for (spill, inputs) in [(false, &in_memory), (true, &spilled)] {
                    for count in [1u32, 2, 3, 7, 1000] {
                        let name = format!("s{count}{spill}.{ext}");
                        let paths = OutputPaths::for_trace(&dir.path().join(name)).unwrap();
                        let writer = TraceWriter::new(&paths, &layout, &catalog)
                            .batch_records(50)
                            .cut(Some(&cut));
                        assert!(writer.can_slice(inputs).unwrap());
                        let mut slices = Vec::new();
                        for index in 0..count {
                            let file = tempfile::tempfile_in(dir.path()).unwrap();
                            let tallies = writer
                                .write_slice(
                                    inputs,
                                    (index, count),
                                    (&file, dir.path()),
                                    &mut |_| {},
                                )
                                .unwrap()
                                .expect("sliced");
                            std::io::Seek::rewind(&mut &file).unwrap();
                            slices.push(SliceBody {
                                file,
                                tallies,
                                placed_at: None,
                            });
                        }
                        let what = format!("{count} slices, spilled {spill}, gzip {gzip}, {cut:?}");
                        let summary = writer.write_from_slices(inputs, slices).unwrap();
                        assert_eq!(summary, expected_summary, "{what}");
                        assert!(read(&paths) == expected, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_cut_clips_every_record_to_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let window = TimeWindow {
            start: 1030,
            end: 1080,
        };
        let text = write_cut(dir.path(), "cut", run(None), window);
        assert!(text.starts_with("#Paraver ("), "{text}");
        assert!(text.lines().next().unwrap().contains("):50_ns:"), "{text}");
        assert_eq!(
            body(&text),
            [
                // Re-opened at the start: outer range and last sample, then the inner range.
                "2:0:1:1:1:0:100:5:300:7",
                "2:0:1:1:1:0:100:6",
                "1:0:1:1:1:0:50:1",
                // The mark at the start is inside; the 10→70 message is not.
                "2:0:1:1:1:0:200:3",
                "3:0:1:1:1:10:10:0:1:1:2:15:15:8:1",
                "1:0:1:1:2:10:15:1",
                "2:0:1:1:1:20:300:9",
                "2:0:1:1:1:30:100:0",
                // The outer range ends at the window's end.
                "2:0:1:1:1:50:100:0",
            ]
        );
        // Spilled runs cut the same.
        let spilled = write_cut(dir.path(), "spilled", run(Some(dir.path())), window);
        assert_eq!(body(&spilled), body(&text));
    }

    #[test]
    fn ends_at_the_start_are_not_written_and_begins_at_the_end_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        // [60, 100): the inner range ended at 60; the outer one is still open.
        let text = write_cut(
            dir.path(),
            "late",
            run(None),
            TimeWindow {
                start: 1060,
                end: 1100,
            },
        );
        assert_eq!(
            body(&text),
            [
                "2:0:1:1:1:0:100:5:300:9",
                "1:0:1:1:1:0:40:1",
                "2:0:1:1:1:40:100:0",
            ]
        );
        // [0, 20): the inner range begins exactly at the end and is left out.
        let text = write_cut(
            dir.path(),
            "early",
            run(None),
            TimeWindow {
                start: 900,
                end: 1020,
            },
        );
        assert!(text.lines().next().unwrap().contains("):20_ns:"), "{text}");
        assert_eq!(
            body(&text),
            [
                "2:0:1:1:1:0:100:5",
                "1:0:1:1:1:0:20:1",
                "2:0:1:1:1:10:300:7",
                "2:0:1:1:1:20:100:0",
            ]
        );
    }

    #[test]
    fn a_window_outside_the_trace_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let paths = OutputPaths::for_trace(&dir.path().join("x.prv")).unwrap();
        let inputs = [MergeInput {
            run: run(None),
            time_offset: 0,
            threads: (0..2)
                .map(|t| GlobalThread { task: 0, thread: t })
                .collect(),
        }];
        let cut = Cut {
            window: TimeWindow {
                start: 500,
                end: 600,
            },
        };
        let err = write_trace_cut(
            &paths,
            &layout(),
            &inputs,
            &catalog(),
            Some(&cut),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::EmptyWindow { .. }), "{err}");
    }

    #[test]
    fn events_of_a_run_are_visited_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        for spill in [None, Some(dir.path())] {
            let run = run(spill);
            let mut seen = Vec::new();
            for_each_event(&run, &mut |time, thread, closing, pairs| {
                seen.push((time, thread, closing, pairs[0].ty));
            })
            .unwrap();
            assert_eq!(
                seen,
                [
                    (0, 0, false, RANGE),
                    (10, 0, false, SAMPLE),
                    (20, 0, false, RANGE),
                    (30, 0, false, MARK),
                    (50, 0, false, SAMPLE),
                    (60, 0, true, RANGE),
                    (100, 0, true, RANGE),
                ]
            );
        }
    }
}
