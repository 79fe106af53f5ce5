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
    fn map_run<S>(self, f: impl FnOnce(R) -> S) -> ReportTranslation<S> {
        ReportTranslation {
            path: self.path,
            meta: self.meta,
            run: f(self.run),
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
            sync_points: self.sync_points,
            cpus_seen: self.cpus_seen,
            recorded_tables: self.recorded_tables,
        }
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
    /// `origin` in errors) when merged.
    pub fn restore(saved: SavedReport, file: Arc<File>, origin: &Path) -> ReportTranslation {
        saved.map_run(|run| restore_run(run, file, origin))
    }
}

/// `(type, category)` pairs saved as `(type, category name)`; restored with the
/// standard registry's category of that name (parts come from the same binary,
/// which the plan fingerprints, so every name is one).
pub mod categories_by_name {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::options::Category;
    use crate::registry::Registry;

    pub fn serialize<S: Serializer>(pairs: &[(u32, Category)], s: S) -> Result<S::Ok, S::Error> {
        let named: Vec<(u32, &str)> = pairs.iter().map(|(ty, c)| (*ty, c.name())).collect();
        named.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u32, Category)>, D::Error> {
        let named: Vec<(u32, String)> = Vec::deserialize(d)?;
        let registry = Registry::standard();
        Ok(named
            .iter()
            .filter_map(|(ty, name)| {
                let info = registry.iter().find(|info| info.category.name() == name)?;
                Some((*ty, info.category))
            })
            .collect())
    }
}

/// A path as its bytes: any file name, UTF-8 or not.
pub mod path_bytes {
    use std::ffi::OsString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Path, PathBuf};

    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(path.as_os_str().as_bytes())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a path's bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        let bytes = d.deserialize_byte_buf(Bytes)?;
        Ok(PathBuf::from(OsString::from_vec(bytes)))
    }
}
