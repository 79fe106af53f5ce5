//! What the fuzz targets (`fuzz/`) share with the corpus replay on stable: how
//! one fuzz input stands for several files, and the validator's check on a
//! trace's three files.

use std::path::Path;

use crate::validate::validate_trace;

/// Splits a fuzz input into the files it stands for: the pieces between
/// lines `SEPARATOR` (the last piece takes the rest; missing ones are empty).
pub const SEPARATOR: &[u8] = b"\n%%nsys2prv-fuzz%%\n";

/// `data` cut at [`SEPARATOR`] into `n` pieces.
pub fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut pieces = Vec::with_capacity(n);
    let mut rest = data;
    while pieces.len() + 1 < n {
        match rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(at) => {
                pieces.push(&rest[..at]);
                rest = &rest[at + SEPARATOR.len()..];
            }
            None => break,
        }
    }
    pieces.push(rest);
    pieces.resize(n, &[][..]);
    pieces
}

/// `prv`, `pcf` and `row` written as `dir/t.prv`, `t.pcf`, `t.row`; the
/// validator run on them (it reads every line of the three). Returns the path
/// of the `.prv`.
pub fn check_validator(dir: &Path, prv: &[u8], pcf: &[u8], row: &[u8]) -> std::path::PathBuf {
    let path = dir.join("t.prv");
    std::fs::write(&path, prv).expect("the .prv is written");
    std::fs::write(dir.join("t.pcf"), pcf).expect("the .pcf is written");
    std::fs::write(dir.join("t.row"), row).expect("the .row is written");
    let report = validate_trace(&path).expect("the .prv opens");
    for finding in report.errors().chain(report.warnings()) {
        let text = format!("{finding:?}");
        assert!(!text.is_empty());
    }
    path
}
