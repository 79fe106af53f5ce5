//! The report reads traces only: nothing in its dependency tree reads Nsight's
//! SQLite exports (no rusqlite, no libsqlite3-sys, no nsys-reader), so it builds
//! and runs where the converter's C dependencies do not.

use std::process::Command;

#[test]
fn the_report_has_no_sqlite_in_its_dependency_tree() {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--package",
            "nsys2prv-report",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8(output.stdout).unwrap();
    // The tree was read: the report's own crates are in it.
    for needed in ["nsys2prv-report", "paraver-reader", "nsys2prv-events"] {
        assert!(tree.contains(needed), "{needed} not in:\n{tree}");
    }
    let heavy: Vec<&str> = tree
        .lines()
        .filter(|line| {
            let line = line.to_lowercase();
            line.contains("sqlite")
                || line.starts_with("nsys-reader")
                || line.starts_with("nsys-semantics")
        })
        .collect();
    assert!(heavy.is_empty(), "the report depends on {heavy:?}");
}
