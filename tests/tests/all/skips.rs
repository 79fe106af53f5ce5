//! Tests that pass without checking something because a tool is missing say so where the user
//! looks: after libtest's `test result:` line, a summary lists them with what was missing and
//! how to get it; under CI (`CI` set) they fail instead (issue 27).

use std::process::Command;

use end_to_end::missing_tool;

/// Not a test of its own: run by the test below, in a child process of this executable.
#[test]
#[ignore = "a probe that the missing-tool summary test runs in a child process"]
fn probe_without_its_tool() {
    missing_tool("probe-tool", "apt-get install probe-tool");
}

fn run_probe(ci: bool) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["skips::probe_without_its_tool", "--exact", "--ignored"]);
    if ci {
        cmd.env("CI", "1");
    } else {
        cmd.env_remove("CI");
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_test_that_did_not_check_is_listed_after_the_summary_and_fails_under_ci() {
    let (code, stdout, stderr) = run_probe(false);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
    let summary = stderr
        .split_once("NOT CHECKED: 1 test passed without checking")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no summary: {stderr}"));
    assert!(
        summary.contains("probe-tool (apt-get install probe-tool): skips::probe_without_its_tool"),
        "{stderr}"
    );

    let (code, stdout, stderr) = run_probe(true);
    assert_eq!(code, Some(101), "{stdout}{stderr}");
    // libtest shows the failing test's panic in its stdout.
    assert!(
        stdout.contains("probe-tool is required in CI: apt-get install probe-tool"),
        "{stdout}{stderr}"
    );
    assert!(!stderr.contains("NOT CHECKED"), "{stderr}");
}

/// A corpus test cannot pass under CI without the corpus: with `NSYS2PRV_CORPUS`
/// naming a directory without one, the corpus test fails under CI, and passes
/// elsewhere with its line in the summary.
#[test]
fn a_corpus_test_fails_under_ci_without_the_corpus() {
    let missing = tempfile::tempdir().unwrap();
    for ci in [true, false] {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "corpus::every_corpus_export_translates_or_fails_cleanly",
            "--exact",
        ])
        .env("NSYS2PRV_CORPUS", missing.path());
        if ci {
            cmd.env("CI", "1");
        } else {
            cmd.env_remove("CI");
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        if ci {
            assert_eq!(out.status.code(), Some(101), "{stdout}{stderr}");
            assert!(
                stdout.contains("the corpus is required in CI"),
                "{stdout}{stderr}"
            );
        } else {
            assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
            assert!(
                stderr.contains("NOT CHECKED: 1 test passed")
                    && stderr.contains("corpus::every_corpus_export_translates_or_fails_cleanly"),
                "{stderr}"
            );
        }
    }
}
