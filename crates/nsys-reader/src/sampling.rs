//! CPU IP samples (`COMPOSITE_EVENTS`, one row per sample) with their call stacks
//! (`SAMPLING_CALLCHAINS`, one row per frame: `stackDepth` 0 is the sampled
//! frame, 1 its caller, ...). The same columns from schema 2.9.1 to 3.25; the
//! flags are NULL for "false" before 3.17.
//!
//! Samples are read with their frames in one pass in time order: SQLite sorts
//! `COMPOSITE_EVENTS` by time (its own sorter, which spills to temporary files;
//! about as cheap as the scan), and each sample's frames come from the
//! `(id, stackDepth)` primary-key index of `SAMPLING_CALLCHAINS`, so nothing is
//! held in memory here. Sample ids are not in time order: a thread's samples can
//! come in a block a second late, so whatever follows a thread's samples in time
//! (the callers each one ends) needs this order.

use crate::query::Query;
use crate::{Export, ReadError, RowView};

pub const COMPOSITE_EVENTS: &str = "COMPOSITE_EVENTS";
pub const SAMPLING_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";

/// One frame of a sample's call stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// 0: the sampled function; k: its caller k levels up.
    pub depth: u32,
    /// `StringIds` id of the function (a `0x…` address when unresolved).
    pub symbol: Option<i64>,
    /// `StringIds` id of the module (file path, `[kernel.kallsyms]`, `[Unknown]`).
    pub module: Option<i64>,
}

/// One CPU IP sample with the frames of its call stack up to the depth asked for
/// (none when nsys recorded no frame for it), ordered by depth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    pub id: i64,
    pub start: i64,
    pub global_tid: i64,
    /// Logical CPU the thread ran on.
    pub cpu: Option<i64>,
    pub frames: Vec<Frame>,
}

/// What a sample scan read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SampleScan {
    /// Samples handed over.
    pub samples: u64,
    /// Their frames.
    pub frames: u64,
    /// Samples without a time or thread (NULL), skipped.
    pub skipped: u64,
}

/// One row of the join: a sample's columns and one of its frames (if any).
struct JoinedRow {
    id: i64,
    start: Option<i64>,
    global_tid: Option<i64>,
    cpu: Option<i64>,
    frame: Option<Frame>,
}

impl Export {
    /// Streams every sample of `COMPOSITE_EVENTS` in time order (then id), each
    /// once, with its frames of depth `0..=max_depth`. The first error of `f`
    /// ends the scan and is returned.
    pub fn samples(
        &self,
        max_depth: u32,
        mut f: impl FnMut(&Sample) -> Result<(), ReadError>,
    ) -> Result<SampleScan, ReadError> {
        let mut scan = SampleScan::default();
        if !self.has_table(COMPOSITE_EVENTS) {
            return Ok(scan);
        }
        let mut pending: Option<(Sample, bool)> = None;
        let mut spare: Vec<Frame> = Vec::new();
        let mut flush = |sample: Sample, valid: bool, scan: &mut SampleScan| {
            if valid {
                scan.samples += 1;
                scan.frames += sample.frames.len() as u64;
                f(&sample)?;
            } else {
                scan.skipped += 1;
            }
            Ok::<_, ReadError>(sample.frames)
        };
        self.scan_query(
            COMPOSITE_EVENTS,
            &Query {
                sql: self.samples_query(max_depth),
                checked_times: 0,
                direct: None,
            },
            decode_joined,
            |row: &JoinedRow| {
                let same = pending.as_ref().is_some_and(|(s, _)| s.id == row.id);
                if !same {
                    if let Some((sample, valid)) = pending.take() {
                        spare = flush(sample, valid, &mut scan)?;
                        spare.clear();
                    }
                    let sample = Sample {
                        id: row.id,
                        start: row.start.unwrap_or(0),
                        global_tid: row.global_tid.unwrap_or(0),
                        cpu: row.cpu,
                        frames: std::mem::take(&mut spare),
                    };
                    pending = Some((sample, row.start.is_some() && row.global_tid.is_some()));
                }
                if let Some((sample, _)) = pending.as_mut() {
                    sample.frames.extend(row.frame);
                }
                Ok(())
            },
        )?;
        if let Some((sample, valid)) = pending.take() {
            flush(sample, valid, &mut scan)?;
        }
        Ok(scan)
    }

    /// Samples in time order joined to their frames up to `max_depth` (a LEFT
    /// JOIN: a sample without frames comes once, with NULL frame columns). The
    /// sorted samples are the join's outer loop, so rows come in their order and
    /// a sample's frames together, by depth (see the test of the plan). `LIMIT
    /// -1` (no limit) keeps SQLite from flattening the sorted subquery into the
    /// join, which would drop its order; sorting the joined rows instead costs
    /// twice as much.
    fn samples_query(&self, max_depth: u32) -> String {
        let schema = self.schema();
        let sample = |c: &str| schema.column(COMPOSITE_EVENTS, None, c);
        let samples = format!(
            "SELECT {} AS id, {} AS start, {} AS globalTid, {} AS cpu FROM \"{COMPOSITE_EVENTS}\" \
             ORDER BY start, id LIMIT -1",
            sample("id"),
            sample("start"),
            sample("globalTid"),
            sample("cpu")
        );
        let has_frames = ["id", "stackDepth"]
            .iter()
            .all(|c| schema.has_column(SAMPLING_CALLCHAINS, c));
        if !has_frames {
            return format!("SELECT id, start, globalTid, cpu, NULL, NULL, NULL FROM ({samples})");
        }
        let frame = |c: &str| schema.column(SAMPLING_CALLCHAINS, Some("s"), c);
        format!(
            "SELECT c.id, c.start, c.globalTid, c.cpu, {}, {}, {} FROM ({samples}) c \
             LEFT JOIN \"{SAMPLING_CALLCHAINS}\" s ON s.id = c.id AND s.stackDepth <= {max_depth}",
            frame("stackDepth"),
            frame("symbol"),
            frame("module"),
        )
    }
}

fn decode_joined(row: &RowView) -> Option<JoinedRow> {
    let depth = row.int(4).and_then(|d| u32::try_from(d).ok());
    Some(JoinedRow {
        id: row.int(0)?,
        start: row.int(1),
        global_tid: row.int(2),
        cpu: row.int(3),
        frame: depth.map(|depth| Frame {
            depth,
            symbol: row.int(5),
            module: row.int(6),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An export with samples: 1 with three frames (given out of depth order),
    /// 2 with none, 3 with one frame deeper than asked for only, 4 without a time.
    fn export_with_samples(dir: &std::path::Path, with_chains: bool) -> Export {
        let path = dir.join("s.sqlite");
        let spec = nsys_synth::SynthSpec::small(nsys_synth::SchemaVersion::V3_0);
        nsys_synth::write_export(&spec, &path).unwrap();
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL,
                 cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
             INSERT INTO COMPOSITE_EVENTS VALUES (1, 500, 3, 1, 77, 1), (2, 400, 1, 1, 77, 1),
                 (3, 600, 0, 1, 78, 1), (4, 'x', 0, 1, 78, 1);",
        )
        .unwrap();
        if with_chains {
            db.execute_batch(
                "CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL,
                     module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER,
                     unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER,
                     unwindMethod INTEGER, stackDepth INTEGER NOT NULL,
                     PRIMARY KEY (id, stackDepth));
                 INSERT INTO SAMPLING_CALLCHAINS VALUES (1, 12, 20, 0, 0, 0, 0, 0, 1, 2),
                     (1, 10, 20, 0, 0, 0, 0, 0, 1, 0), (1, 11, 21, 0, 0, 1, 0, 0, 1, 1),
                     (3, 13, 20, 0, 0, 0, 0, 0, 1, 9), (4, 14, 20, 0, 0, 0, 0, 0, 1, 0);",
            )
            .unwrap();
        }
        drop(db);
        Export::open(&path).unwrap()
    }

    fn read(export: &Export, depth: u32) -> (Vec<Sample>, SampleScan) {
        let mut seen = Vec::new();
        let scan = export
            .samples(depth, |s| {
                seen.push(s.clone());
                Ok(())
            })
            .unwrap();
        (seen, scan)
    }

    fn frame(depth: u32, symbol: i64, module: i64) -> Frame {
        Frame {
            depth,
            symbol: Some(symbol),
            module: Some(module),
        }
    }

    #[test]
    fn each_sample_comes_once_with_its_frames_in_depth_order() {
        let dir = tempfile::tempdir().unwrap();
        let export = export_with_samples(dir.path(), true);
        let (samples, scan) = read(&export, 5);
        // In time order.
        let ids: Vec<i64> = samples.iter().map(|s| s.id).collect();
        assert_eq!(ids, [2, 1, 3]);
        assert_eq!(
            samples[1].frames,
            [frame(0, 10, 20), frame(1, 11, 21), frame(2, 12, 20)]
        );
        assert_eq!((samples[1].start, samples[1].cpu), (500, Some(3)));
        assert!(samples[0].frames.is_empty() && samples[2].frames.is_empty());
        assert_eq!(
            scan,
            SampleScan {
                samples: 3,
                frames: 3,
                skipped: 1
            }
        );
        let (shallow, _) = read(&export, 1);
        assert_eq!(shallow[1].frames, [frame(0, 10, 20), frame(1, 11, 21)]);
    }

    #[test]
    fn samples_without_a_call_chain_table_have_no_frames() {
        let dir = tempfile::tempdir().unwrap();
        let export = export_with_samples(dir.path(), false);
        let (samples, scan) = read(&export, 5);
        assert_eq!(samples.len(), 3);
        assert!(samples.iter().all(|s| s.frames.is_empty()));
        assert_eq!(scan.skipped, 1);
    }

    /// SQLite sorts the samples alone (not the joined rows), makes them the outer
    /// loop, and looks frames up in the primary key's index.
    #[test]
    fn the_join_sorts_only_the_samples() {
        let dir = tempfile::tempdir().unwrap();
        let export = export_with_samples(dir.path(), true);
        let plan: Vec<(i64, i64, String)> = export
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", export.samples_query(5)))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let text: Vec<&str> = plan.iter().map(|(_, _, t)| t.as_str()).collect();
        let sorts: Vec<&&str> = text.iter().filter(|t| t.contains("TEMP B-TREE")).collect();
        assert_eq!(sorts.len(), 1, "{text:?}");
        // The sort is inside the samples' co-routine, which the join scans first.
        let coroutine = plan
            .iter()
            .find(|(_, _, t)| t.starts_with("CO-ROUTINE"))
            .unwrap();
        let sort = plan
            .iter()
            .find(|(_, _, t)| t.contains("TEMP B-TREE"))
            .unwrap();
        assert_eq!(sort.1, coroutine.0, "{text:?}");
        let scan = text.iter().position(|t| t.starts_with("SCAN c")).unwrap();
        let search = text
            .iter()
            .position(|t| t.contains("sqlite_autoindex_SAMPLING_CALLCHAINS_1"))
            .unwrap();
        assert!(scan < search, "{text:?}");
    }
}
