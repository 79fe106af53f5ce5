//! What the fuzz targets (`fuzz/`) share with the corpus replay on stable: how
//! one fuzz input stands for several files, the validator's check on a trace's
//! three files, the one-line rule for errors, and the inputs a replay reads.

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

/// The rule for every error of a reader of files others hand the tool: one line.
pub fn assert_one_line(what: &str, message: &str) {
    assert!(
        !message.trim_end().contains('\n') && !message.trim().is_empty(),
        "{what}: an error of more or less than one line: {message:?}"
    );
}

/// The inputs kept from fuzzing `target` (`fuzz/corpus/TARGET/`, minimised) and
/// the crashes it found (`fuzz/regressions/TARGET/`), sorted: what the corpus
/// replay on stable runs through the target's check. At least three, so that a
/// moved corpus does not pass unseen.
pub fn replay_inputs(target: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = Vec::new();
    for dir in ["corpus", "regressions"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) {
            inputs.extend(entries.flatten().map(|e| e.path()));
        }
    }
    inputs.sort();
    assert!(inputs.len() >= 3, "{target}: {} inputs", inputs.len());
    inputs
}
