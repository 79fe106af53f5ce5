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
}

#[test]
fn usage_errors_exit_2() {
    let out = binary().arg("only-one-path.sqlite").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = binary().args(["a.sqlite", "b.txt"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
