//! A translated report saved into a file and restored from it (the part files of
//! a sharded conversion): its run as one section of records (see
//! [`paraver_writer::saved`]) and everything else the plan, the clock
//! alignment, the message pairing, the catalog and the cuts read, in
//! [`SavedReport`]. Restored, it is the same [`ReportTranslation`] whose records
//! the merge reads from the file.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nsys_reader::Metadata;
use paraver_writer::saved::{restore_run, save_run, SavedRun};
use paraver_writer::EventTypeInfo;
use serde::{Deserialize, Serialize};

use crate::context::ThreadKey;
use crate::handoff::{P2pEndpoint, SyncPoints};
use crate::options::Category;
use crate::registry::Registry;
use crate::report::ReportTranslation;

/// A report without its records, which lie in the section `run` describes.
#[derive(Serialize, Deserialize)]
pub struct SavedReport {
    #[serde(with = "path_bytes")]
    path: PathBuf,
    meta: Metadata,
    run: SavedRun,
    threads: Vec<ThreadKey>,
    thread_names: HashMap<(u32, u32), String>,
    process_names: HashMap<u32, String>,
    row_labels: HashMap<ThreadKey, String>,
    counts: BTreeMap<String, u64>,
    warnings: Vec<String>,
    extra_types: Vec<EventTypeInfo>,
    /// The category that numbered each extra type, by its `-t` name.
    extra_type_categories: Vec<(u32, String)>,
    ranks: HashMap<u32, u32>,
    p2p: Vec<P2pEndpoint>,
    sync_points: SyncPoints,
    cpus_seen: u32,
    recorded_tables: Vec<String>,
}

impl ReportTranslation {
    /// Writes the report's records into `out`, which is at `offset` of its file;
    /// returns the rest of the report, to be stored too.
    pub fn save(&self, out: &mut impl Write, offset: u64) -> std::io::Result<SavedReport> {
        Ok(SavedReport {
            path: self.path.clone(),
            meta: self.meta.clone(),
            run: save_run(&self.run, out, offset)?,
            threads: self.threads.clone(),
            thread_names: self.thread_names.clone(),
            process_names: self.process_names.clone(),
            row_labels: self.row_labels.clone(),
            counts: self.counts.clone(),
            warnings: self.warnings.clone(),
            extra_types: self.extra_types.clone(),
            extra_type_categories: self
                .extra_type_categories
                .iter()
                .map(|&(ty, category)| (ty, category.name().to_string()))
                .collect(),
            ranks: self.ranks.clone(),
            p2p: self.p2p.clone(),
            sync_points: self.sync_points,
            cpus_seen: self.cpus_seen,
            recorded_tables: self.recorded_tables.clone(),
        })
    }

    /// The report `saved` describes, its records read from `file` (named
    /// `origin` in errors) when merged.
    pub fn restore(saved: SavedReport, file: Arc<File>, origin: &Path) -> ReportTranslation {
        ReportTranslation {
            path: saved.path,
            meta: saved.meta,
            run: restore_run(saved.run, file, origin),
            threads: saved.threads,
            thread_names: saved.thread_names,
            process_names: saved.process_names,
            row_labels: saved.row_labels,
            counts: saved.counts,
            warnings: saved.warnings,
            extra_types: saved.extra_types,
            // Parts come from the same binary (the plan fingerprints it), so every
            // name is a category of the standard registry.
            extra_type_categories: categories_by_name(&saved.extra_type_categories),
            ranks: saved.ranks,
            p2p: saved.p2p,
            sync_points: saved.sync_points,
            cpus_seen: saved.cpus_seen,
            recorded_tables: saved.recorded_tables,
        }
    }
}

/// Each `(type, category name)` with the standard registry's category of that name.
fn categories_by_name(named: &[(u32, String)]) -> Vec<(u32, Category)> {
    let registry = Registry::standard();
    named
        .iter()
        .filter_map(|(ty, name)| {
            let info = registry.iter().find(|info| info.category.name() == name)?;
            Some((*ty, info.category))
        })
        .collect()
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
