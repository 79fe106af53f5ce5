//! A finished run saved into a file and restored from it: how the tasks of a
//! sharded conversion hand their runs to the one that merges. A saved run is one
//! section of records in the run's order (its spilled chunks and its records in
//! memory merged, as the merge would read them), with a CRC-32 that the merge
//! checks as it reads, and a small description (thread numbering, name tables,
//! time span, and the section's time index) to store beside it.
//!
//! The time index (every [`INDEX_STEP`]-th record's time and offset, and the
//! CRC-32 of each block of records between two entries) lets a merge read only
//! a span of time of the section, checked block by block: the segments of the
//! parallel merge, and the time slices of `merge --shard I/N`.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::kmerge::for_each_record;
use crate::names::NameTables;
use crate::record::{Comm, LocalThread};
use crate::run::Run;
use crate::spill::{encode_view, Checksummed, IndexEntry, SpilledChunk, INDEX_STEP};
use crate::view::View;

/// Where a saved run's records lie, and what else the merge needs of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SavedRun {
    /// The section of records: its offset in the file, its size, its record count
    /// and the CRC-32 of its bytes.
    pub offset: u64,
    pub bytes: u64,
    pub records: u64,
    pub checksum: u32,
    old_of_new: Vec<LocalThread>,
    new_of_old: Vec<LocalThread>,
    names: NameTables,
    min_time: i64,
    max_time: i64,
    /// The section's time index, the CRC-32 of each of its blocks, and the time
    /// of its last record.
    index: Vec<IndexEntry>,
    block_checksums: Vec<u32>,
    last_time: i64,
}

impl SavedRun {
    /// Makes every checksum right for `section` (the bytes the run names):
    /// what lets a fuzz target reach the decoders past the checksums.
    #[doc(hidden)]
    pub fn make_checksums_right(&mut self, section: &[u8]) {
        self.checksum = crc32fast::hash(section);
        for (b, crc) in self.block_checksums.iter_mut().enumerate() {
            let start = self.index.get(b).map_or(0, |e| e.offset);
            let end = self.index.get(b + 1).map_or(self.bytes, |e| e.offset);
            if let Some(block) = usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(s, e)| section.get(s..e))
            {
                *crc = crc32fast::hash(block);
            }
        }
    }
}

/// Writes every record of `run` into `out`, which is at `offset` of its file.
pub fn save_run(run: &Run, out: &mut impl Write, offset: u64) -> io::Result<SavedRun> {
    let mut out = Checksummed::new(out);
    let mut records = 0;
    let mut result = Ok(());
    let mut index = Vec::with_capacity(run.len().div_ceil(INDEX_STEP));
    let mut block_checksums = Vec::with_capacity(index.capacity());
    let mut block = crc32fast::Hasher::new();
    let mut last_time = i64::MAX;
    // Records keep the producer's thread numbers, as in spilled chunks.
    let producer = |thread: LocalThread| run.old_of_new[thread as usize];
    let mut encoded = Vec::new();
    for_each_record(run, &mut |time, thread, body| {
        if result.is_err() {
            return;
        }
        if records % INDEX_STEP as u64 == 0 {
            if records > 0 {
                block_checksums.push(std::mem::take(&mut block).finalize());
            }
            index.push(IndexEntry {
                time,
                offset: out.bytes,
            });
        }
        last_time = time;
        let before = out.bytes;
        let mut section = BlockChecksummed {
            inner: &mut out,
            crc: &mut block,
        };
        result = match body {
            View::Comm(comm) => {
                let comm = Comm {
                    receiver: producer(comm.receiver),
                    ..*comm
                };
                encode_view(
                    &mut section,
                    &mut encoded,
                    time,
                    producer(thread),
                    &View::Comm(comm),
                )
            }
            _ => encode_view(&mut section, &mut encoded, time, producer(thread), body),
        };
        debug_assert!(result.is_err() || out.bytes > before);
        records += 1;
    })?;
    result?;
    if records > 0 {
        block_checksums.push(block.finalize());
    }
    Ok(SavedRun {
        offset,
        bytes: out.bytes,
        records,
        checksum: out.crc.finalize(),
        old_of_new: run.old_of_new.clone(),
        new_of_old: run.new_of_old.clone(),
        names: run.names.clone(),
        min_time: run.min_time,
        max_time: run.max_time,
        index,
        block_checksums,
        last_time,
    })
}

/// A writer that adds what goes through it to a block's checksum.
struct BlockChecksummed<'a, W> {
    inner: W,
    crc: &'a mut crc32fast::Hasher,
}

impl<W: Write> Write for BlockChecksummed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The run `saved` describes, reading its records from `file` (named `origin` in
/// errors) when merged; an index that does not fit its section is an error
/// naming `origin`.
pub fn restore_run(saved: SavedRun, file: Arc<File>, origin: &Path) -> io::Result<Run> {
    // The merge renumbers each record's thread through `new_of_old` and indexes
    // by the result: a part another program wrote (or damaged under a right
    // checksum) must hold two inverse permutations, or a record would name a
    // thread the run does not have (found by the `parts` fuzz target).
    if !inverse_permutations(&saved.old_of_new, &saved.new_of_old) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: damaged part file (its order of {} threads is not a permutation)",
                origin.display(),
                saved.new_of_old.len()
            ),
        ));
    }
    let section = SpilledChunk::section(
        file,
        saved.offset,
        saved.bytes,
        saved.records,
        saved.checksum,
        origin.to_path_buf(),
        saved.new_of_old.len() as u32,
    );
    let section =
        SpilledChunk::indexed_section(section, saved.index, saved.block_checksums, saved.last_time)
            .map_err(|why| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: damaged part file ({why})", origin.display()),
                )
            })?;
    let chunks = if saved.records > 0 {
        vec![section]
    } else {
        Vec::new()
    };
    Ok(Run::of_chunks(
        saved.old_of_new,
        saved.new_of_old,
        chunks,
        saved.names,
        (saved.min_time, saved.max_time),
    ))
}

/// Whether `old_of_new` and `new_of_old` number the same threads, each the
/// other's inverse.
fn inverse_permutations(old_of_new: &[LocalThread], new_of_old: &[LocalThread]) -> bool {
    old_of_new.len() == new_of_old.len()
        && old_of_new
            .iter()
            .enumerate()
            .all(|(new, &old)| new_of_old.get(old as usize).copied() == Some(new as LocalThread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{GlobalThread, NodeInfo, TaskInfo, TraceLayout};
    use crate::merge::{write_trace, MergeInput};
    use crate::output::OutputPaths;
    use crate::pcf::{EventTypeInfo, PcfCatalog, StateInfo, Timing, ValueLabels};
    use crate::record::{EventPair, Value};
    use crate::run::RunBuilder;
    use crate::spill::{MemoryBudget, SpillPolicy};

    const RANGE: u32 = 100;
    const KERNEL: u32 = 200;

    fn layout() -> TraceLayout {
        TraceLayout {
            application: "app".into(),
            date: "01/01/2026 at 00:00".into(),
            nodes: vec![NodeInfo {
                name: "n".into(),
                cpus: 1,
            }],
            tasks: (0..2)
                .map(|t| TaskInfo {
                    name: format!("t{t}"),
                    node: 0,
                    threads: vec!["a".into(), "b".into()],
                })
                .collect(),
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
            types: vec![
                EventTypeInfo::new(RANGE, "range", ValueLabels::Numeric, Timing::Interval),
                EventTypeInfo::new(KERNEL, "kernel", ValueLabels::Names, Timing::Interval),
            ],
        }
    }

    /// Four threads of two processes whose records tie in time across threads;
    /// spilled in tiny chunks into `spill` when given (then the run is several
    /// streams).
    fn run(spill: Option<&Path>) -> Run {
        let mut b = match spill {
            Some(dir) => RunBuilder::with_spill(SpillPolicy {
                dir: dir.to_path_buf(),
                chunk_bytes: 200,
                budget: MemoryBudget::new(0),
            }),
            None => RunBuilder::new(),
        };
        // Met in another order than their order keys.
        for key in [3, 1, 2, 0] {
            b.add_thread(key);
        }
        for i in 0..40 {
            let t = i * 10;
            for thread in 0..4 {
                b.state(thread, t, t + 10, (i % 2) as u32);
                b.interval(thread, t, t + 5, &[EventPair::raw(RANGE, i + 1)]);
            }
            let name = b.names.intern(KERNEL, &format!("kernel {}", i % 3));
            let kernel = b.shared_pairs(&[EventPair::new(KERNEL, Value::Name(name))]);
            b.interval_shared(1, t + 2, t + 4, kernel, &[EventPair::raw(RANGE, i)]);
            let comm = Comm {
                send_physical: t + 1,
                // Renumbered (producer 3 is the run's thread 0).
                receiver: 3,
                recv_logical: t + 3,
                recv_physical: t + 4,
                size: 8,
                tag: 1,
            };
            b.comm(0, t, comm);
        }
        b.finish().unwrap()
    }

    /// The trace of `run` with its threads placed so that run order and trace
    /// order disagree (run threads 0, 1 are the second task's).
    fn trace(dir: &Path, name: &str, run: Run) -> Vec<u8> {
        let paths = OutputPaths::for_trace(&dir.join(format!("{name}.prv"))).unwrap();
        let place = |task, thread| GlobalThread { task, thread };
        let inputs = [MergeInput {
            run,
            time_offset: 0,
            threads: vec![place(1, 0), place(1, 1), place(0, 0), place(0, 1)],
        }];
        write_trace(&paths, &layout(), &inputs, &catalog(), &mut |_| {}).unwrap();
        std::fs::read(&paths.prv).unwrap()
    }

    fn saved_and_restored(dir: &Path, run: &Run) -> Run {
        let path = dir.join("run.part");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"header").unwrap();
        let saved = save_run(run, &mut file, 6).unwrap();
        assert_eq!(saved.records as usize, run.len());
        drop(file);
        let file = Arc::new(File::open(&path).unwrap());
        restore_run(saved, file, &path).unwrap()
    }

    #[test]
    fn a_run_spilled_or_not_saved_or_not_gives_the_same_trace() {
        let dir = tempfile::tempdir().unwrap();
        let in_memory = trace(dir.path(), "memory", run(None));
        let spilled_run = run(Some(dir.path()));
        assert!(
            spilled_run.chunks.len() > 2,
            "the test needs several streams"
        );
        assert_eq!(
            trace(dir.path(), "spilled", run(Some(dir.path()))),
            in_memory
        );
        let restored = saved_and_restored(dir.path(), &spilled_run);
        assert_eq!(trace(dir.path(), "restored", restored), in_memory);
        let restored = saved_and_restored(dir.path(), &run(None));
        assert_eq!(trace(dir.path(), "restored2", restored), in_memory);
    }

    /// A restored run has its time index: when its threads are in the
    /// trace's order, the segments read spans of its section (checked block by
    /// block), and write the same trace.
    #[test]
    fn a_restored_run_is_read_by_spans_of_time() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, run: Run| {
            let paths = OutputPaths::for_trace(&dir.path().join(format!("{name}.prv"))).unwrap();
            let inputs = [MergeInput {
                run,
                time_offset: 0,
                threads: in_order(),
            }];
            let cursors: Vec<_> = inputs
                .iter()
                .map(|i| {
                    crate::cursor::RunCursor::new(&i.run, 0, &i.threads, Default::default(), 0)
                })
                .collect();
            assert!(crate::segments::can_merge(&cursors), "merged by segments");
            drop(cursors);
            crate::merge::TraceWriter::new(&paths, &layout(), &catalog())
                .batch_records(10)
                .write(&inputs, &mut |_| {})
                .unwrap();
            std::fs::read(&paths.prv).unwrap()
        };
        let restored = saved_and_restored(dir.path(), &run(None));
        let chunk = &restored.chunks[0];
        assert!(chunk.is_indexed());
        assert_eq!(chunk.index().len(), restored.len().div_ceil(INDEX_STEP));
        assert_eq!(write("spans", restored), write("memory", run(None)));
    }

    /// The trace's threads in order.
    fn in_order() -> Vec<GlobalThread> {
        (0..4)
            .map(|t| GlobalThread {
                task: t / 2,
                thread: t % 2,
            })
            .collect()
    }

    /// A block of records damaged in the part: a span that reads it says so.
    #[test]
    fn a_damaged_block_is_an_error_when_its_span_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let restored = saved_and_restored(dir.path(), &run(None));
        let path = dir.path().join("run.part");
        let mut bytes = std::fs::read(&path).unwrap();
        // A byte of the last block (the section starts after 6 bytes).
        let last = restored.chunks[0].index().last().unwrap().offset as usize + 6;
        bytes[last + 3] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let paths = OutputPaths::for_trace(&dir.path().join("bad.prv")).unwrap();
        let inputs = [MergeInput {
            run: restored,
            time_offset: 0,
            threads: in_order(),
        }];
        let err = crate::merge::TraceWriter::new(&paths, &layout(), &catalog())
            .batch_records(10)
            .write(&inputs, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("run.part: damaged part file"), "{err}");
    }

    /// The `parts` fuzz target's crash of 2026-11-28: a part whose thread order
    /// (under a right checksum) renumbered a record to thread 122 of a run of 2
    /// made the merge index past its threads; now the part is refused on reading.
    #[test]
    fn a_thread_order_that_is_not_a_permutation_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let run = run(None);
        let path = dir.path().join("run.part");
        let mut file = std::fs::File::create(&path).unwrap();
        let saved = save_run(&run, &mut file, 0).unwrap();
        drop(file);
        let mangled = [
            |s: &mut SavedRun| s.new_of_old[0] = 122,
            |s: &mut SavedRun| s.new_of_old[1] = s.new_of_old[0],
            |s: &mut SavedRun| {
                s.old_of_new.pop();
            },
            |s: &mut SavedRun| s.old_of_new.swap(0, 1),
        ];
        for mangle in mangled {
            let mut bad = saved.clone();
            mangle(&mut bad);
            let file = Arc::new(File::open(&path).unwrap());
            let err = restore_run(bad, file, &path).err().expect("refused");
            assert!(
                err.to_string()
                    .contains("run.part: damaged part file (its order of"),
                "{err}"
            );
        }
        let file = Arc::new(File::open(&path).unwrap());
        restore_run(saved, file, &path).expect("the part as saved is read");
    }

    #[test]
    fn a_damaged_section_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let restored = saved_and_restored(dir.path(), &run(None));
        let path = dir.path().join("run.part");
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let paths = OutputPaths::for_trace(&dir.path().join("bad.prv")).unwrap();
        let inputs = [MergeInput {
            run: restored,
            time_offset: 0,
            threads: (0..4)
                .map(|t| GlobalThread {
                    task: t / 2,
                    thread: t % 2,
                })
                .collect(),
        }];
        let err = write_trace(&paths, &layout(), &inputs, &catalog(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run.part: damaged part file"),
            "error names the part: {err}"
        );
    }
}
