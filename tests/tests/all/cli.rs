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

/// Runs the binary with `args` and its stdout a pipe whose reader is gone (as after
/// `| head`): (exit status, stderr).
fn with_closed_stdout(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe() fills two new descriptors, owned below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let out = binary()
        .args(args)
        .stdout(std::process::Stdio::from(writer))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 27: `report --json - | head` ended with `error: Broken pipe` and exit 1
/// (and `report | head` would panic in `print!`). Every command that writes to
/// stdout ends quietly when its reader is gone, with 141 as `cat` (128 + SIGPIPE).
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let prv = tmp.path().join("t.prv");
    assert!(convert(&[&input], &prv, &[]).status.success());
    let (input, prv) = (input.as_os_str(), prv.as_os_str());
    let dry_out = tmp.path().join("d.prv");
    let commands: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["report".as_ref(), "--json".as_ref(), "-".as_ref(), prv],
        vec!["report".as_ref(), prv],
        vec!["--dry-run".as_ref(), input, dry_out.as_os_str()],
        vec!["completions".as_ref(), "bash".as_ref()],
        vec!["man".as_ref()],
    ];
    for args in commands {
        let (status, stderr) = with_closed_stdout(&args);
        assert_eq!(status, Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// Issue 27: `--version` names the commit and the target it was built for
/// (build.rs), so a binary copied to a cluster says what it is.
#[test]
fn version_names_the_commit_and_the_target() {
    let out = binary().arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success(), "{version}");
    let head = std::process::Command::new("git")
        .current_dir(workspace_root())
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = match (&head, std::env::var_os("NSYS2PRV_BIN")) {
        // The workspace's own build: the checkout's commit.
        (Some(hash), None) => format!("commit {hash}"),
        _ => "commit ".to_string(),
    };
    let arch = std::env::consts::ARCH;
    assert!(
        version.starts_with(&format!("nsys2prv-rs {} (", env!("CARGO_PKG_VERSION")))
            && version.contains(&commit)
            && version.contains(&format!(", {arch}-"))
            && (version.ends_with("-linux-gnu)") || version.ends_with("-linux-musl)")),
        "{version}"
    );
}

/// Issue 27's rough edges in what a conversion says: singulars (`1 report, 1 node`),
/// the progress and closing record counts agreeing (or saying which is which after a
/// cut), and `--plan-shards` saying how many shards have work.
#[test]
fn messages_say_what_they_count() {
    let tmp = tempfile::tempdir().unwrap();
    let input = workspace_root().join("samples/nvtx_osrt/nvtx_osrt.sqlite");
    let prv = tmp.path().join("t.prv");
    let said = |extra: &[&str], output: &std::path::Path| {
        let out = binary()
            .args(extra)
            .arg(&input)
            .arg(output)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let number_before = |text: &str, words: &str| -> u64 {
        let (before, _) = text
            .split_once(words)
            .unwrap_or_else(|| panic!("{words:?}: {text}"));
        before.rsplit(' ').next().unwrap().parse().unwrap()
    };

    let whole = said(&[], &prv);
    assert!(whole.contains(": 1 report, 1 node, 1 task, "), "{whole}");
    let written = number_before(&whole, " records (");
    let progress = whole.lines().find(|l| l.starts_with("writing: ")).unwrap();
    assert_eq!(number_before(progress, " records in "), written, "{whole}");

    let cut = said(&["--time-window", "0ms:50ms"], &prv);
    let progress = cut.lines().find(|l| l.starts_with("writing: ")).unwrap();
    assert!(progress.contains(" records read in "), "{cut}");
    assert!(cut.contains(" records in the cut ("), "{cut}");

    let plan = binary()
        .args(["--plan-shards", "64"])
        .arg(workspace_root().join("samples/mpi_3ranks"))
        .arg(tmp.path().join("p.prv"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert!(
        stderr.contains(
            "planned 3 reports in 64 shards (3 with work, 61 with nothing to translate: they write an empty part)"
        ),
        "{stderr}"
    );
}
