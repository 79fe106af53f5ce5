//! Enum labels: the built-in copies below (their ids never changed between 2.9.1 and
//! 3.24), completed by the export's `ENUM_*` tables (3.0.0+) for ids we do not know.
//! Built-in labels win so that a name, and so its trace value, is the same whatever
//! nsys version wrote the export.

use std::collections::BTreeMap;

use crate::{Export, ReadError};

pub const MEMCPY_OPER: &[(i64, &str)] = &[
    (0, "Unknown"),
    (1, "Host-to-Device"),
    (2, "Device-to-Host"),
    (3, "Host-to-Array"),
    (4, "Array-to-Host"),
    (5, "Array-to-Array"),
    (6, "Array-to-Device"),
    (7, "Device-to-Array"),
    (8, "Device-to-Device"),
    (9, "Host-to-Host"),
    (10, "Peer-to-Peer"),
    (11, "Unified Host-to-Device"),
    (12, "Unified Device-to-Host"),
    (13, "Unified Device-to-Device"),
];

pub const MEM_KIND: &[(i64, &str)] = &[
    (0, "Pageable"),
    (1, "Pinned"),
    (2, "Device"),
    (3, "Array"),
    (4, "Managed"),
    (5, "Device Static"),
    (6, "Managed Static"),
    (7, "Unknown"),
];

/// Labels of one enum: the built-in copy plus the export's ids it lacks.
pub fn labels(
    export: &Export,
    table: &str,
    builtin: &[(i64, &str)],
) -> Result<BTreeMap<i64, String>, ReadError> {
    let mut map: BTreeMap<i64, String> = builtin.iter().map(|(k, v)| (*k, v.to_string())).collect();
    export.scan(table, &["id", "label", "name"], |row| {
        if let (Some(id), Some(label)) = (row.int(0), row.text(1).or_else(|| row.text(2))) {
            map.entry(id).or_insert(label);
        }
        Ok(())
    })?;
    Ok(map)
}
