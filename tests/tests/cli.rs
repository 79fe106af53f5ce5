//! The binary's own helpers: completions, man page, usage errors.

use end_to_end::*;

#[test]
fn completions_and_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        let out = binary().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("nsys2prv-rs"),
            "{shell}"
        );
    }
    let man = binary().arg("man").output().unwrap();
    assert!(man.status.success());
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(
        text.contains(".TH nsys2prv-rs 1") && text.contains("memory\\-limit"),
        "{text}"
    );
    // No reference to pages that do not exist (nsys2prv-rs-report(1), ...).
    let references = text.matches("(1)").count();
    assert_eq!(references, 0, "{text}");
    for topic in [
        "NSYS_HOME",
        "NAME.cache",
        "EXIT STATUS",
        "SIGTERM",
        "143",
        ".nsys\\-rep",
    ] {
        assert!(text.contains(topic), "man page: {topic}");
    }
}

/// `--help` tells the truth about inputs, the cache, exit codes and signals,
/// and its usage line is the command's.
#[test]
fn help_describes_inputs_cache_exit_codes_and_signals() {
    let out = binary().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Usage: nsys2prv-rs [OPTIONS] <INPUT>... <OUTPUT>\n"),
        "{text}"
    );
    assert!(!text.contains("<INPUT... OUTPUT>"), "{text}");
    for topic in [
        ".nsys-rep",
        "NSYS_HOME",
        "NAME.cache",
        "rm -r",
        "EXIT STATUS",
        "130",
        "143",
        "129",
        "SIGHUP",
        "--keep-nsys-threads",
    ] {
        assert!(text.contains(topic), "--help: {topic}");
    }
    assert!(
        text.lines().all(|l| l.chars().count() <= 120),
        "lines fit a terminal"
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = binary().arg("only-one-path.sqlite").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // An input given last by mistake is not taken as a trace name.
    let out = binary().args(["a.sqlite", "b.sqlite"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("b.sqlite") && stderr.contains("NAME.prv"),
        "{stderr}"
    );
}
