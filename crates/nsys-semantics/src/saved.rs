//! A translated report saved into a file and restored from it (the part files of
//! a sharded conversion): its run as one section of records (see
//! [`paraver_writer::saved`]) and everything else the plan, the clock
//! alignment, the message pairing, the catalog and the cuts read, in
//! [`SavedReport`]. Restored, it is the same [`ReportTranslation`] whose records
//! the merge reads from the file: one type, generic over where its records are.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use paraver_writer::saved::{restore_run, save_run, SavedRun};

use crate::report::ReportTranslation;

/// A report without its records, which lie in the section `run` describes.
pub type SavedReport = ReportTranslation<SavedRun>;

impl<R> ReportTranslation<R> {
    /// The same report with its records held by `f(run)`.
    pub fn map_run<S>(self, f: impl FnOnce(R) -> S) -> ReportTranslation<S> {
        self.try_map_run(|run| Ok::<S, std::convert::Infallible>(f(run)))
            .unwrap_or_else(|never| match never {})
    }

    /// The same report with its records held by `f(run)`, unless `f` fails.
    fn try_map_run<S, E>(
        self,
        f: impl FnOnce(R) -> Result<S, E>,
    ) -> Result<ReportTranslation<S>, E> {
        Ok(ReportTranslation {
            path: self.path,
            meta: self.meta,
            run: f(self.run)?,
            threads: self.threads,
            thread_names: self.thread_names,
            process_names: self.process_names,
            row_labels: self.row_labels,
            counts: self.counts,
            warnings: self.warnings,
            extra_types: self.extra_types,
            extra_type_categories: self.extra_type_categories,
            ranks: self.ranks,
            p2p: self.p2p,
            nccl_ops: self.nccl_ops,
            sync_points: self.sync_points,
            cpus_seen: self.cpus_seen,
            recorded_tables: self.recorded_tables,
        })
    }
}

impl ReportTranslation {
    /// Writes the report's records into `out`, which is at `offset` of its file;
    /// returns the rest of the report, to be stored too.
    pub fn save(self, out: &mut impl Write, offset: u64) -> std::io::Result<SavedReport> {
        let run = save_run(&self.run, out, offset)?;
        Ok(self.map_run(|_| run))
    }

    /// The report `saved` describes, its records read from `file` (named
    /// `origin` in errors) when merged; a time index that does not fit its
    /// records is an error.
    pub fn restore(
        saved: SavedReport,
        file: Arc<File>,
        origin: &Path,
    ) -> std::io::Result<ReportTranslation> {
        saved.try_map_run(|run| restore_run(run, file, origin))
    }
}
