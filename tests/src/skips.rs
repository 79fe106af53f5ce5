//! Checks a test could not make because a tool (or the corpus, or a facility such as a
//! tmpfs mount) is missing. `cargo test` shows `ok` for a test that returned early, so
//! each such check is recorded here, and when the test executable exits a summary lists
//! the tests that did not check everything and why, below libtest's `test result:` line.
//! Under CI (`CI` set) a missing tool fails the test instead: CI installs every tool.

use std::collections::BTreeMap;
use std::sync::{Mutex, Once};

/// (what is missing, how to get it) → the tests that did without it.
static SKIPPED: Mutex<BTreeMap<(String, String), Vec<String>>> = Mutex::new(BTreeMap::new());
static AT_EXIT: Once = Once::new();

/// A check that needs `tool`, missing for the reason (and remedy) `why`: a failure under
/// CI; elsewhere a note now and a line in the summary at exit.
pub fn missing_tool(tool: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{tool} is required in CI: {why}"
    );
    record(tool, why);
}

/// A check this machine cannot make (no tmpfs mount, no mkfifo, an optional tool CI does
/// not install either): noted now and in the summary at exit, under CI too.
pub fn not_checked(what: &str, why: &str) {
    record(what, why);
}

fn record(what: &str, why: &str) {
    // libtest names each test's thread after the test.
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!("note: {test}: {what} missing, not checked: {why}");
    let mut skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    let tests = skipped.entry((what.into(), why.into())).or_default();
    if !tests.contains(&test) {
        tests.push(test);
    }
    drop(skipped);
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function with no arguments, run once at exit.
        unsafe { libc::atexit(print_summary) };
    });
}

/// Runs when the test executable exits, after libtest's summary.
extern "C" fn print_summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    let mut tests: Vec<&String> = skipped.values().flatten().collect();
    tests.sort();
    tests.dedup();
    if tests.is_empty() {
        return;
    }
    let mut text = format!(
        "\nNOT CHECKED: {} test{} passed without checking what needs a missing tool:\n",
        tests.len(),
        if tests.len() == 1 { "" } else { "s" }
    );
    for ((what, why), tests) in skipped.iter() {
        text += &format!("  {what} ({why}): {}\n", tests.join(", "));
    }
    use std::io::Write;
    let _ = std::io::stderr().write_all(text.as_bytes());
}
