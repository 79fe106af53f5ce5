//! SIGINT, SIGTERM and SIGHUP: remove this run's temporaries (staging
//! directories, partial exports), stop its `nsys` children and exit 130, 143 or
//! 129. The output set is renamed into place in a critical section the handler
//! waits for, so an interrupt leaves the old set or the new one, never a mix.
//!
//! The handler runs on its own thread while the others go on, so nothing may
//! re-create a temporary after the handler removed it: staging directories are
//! created only through [`create_tracked`] (which refuses once interrupted), and
//! everything inside them is created non-recursively (a removed directory stays
//! removed). That recreation was the cause of the old flaky interrupt test: the
//! views were written with `create_dir_all`, which brought their temporary
//! directory back after the handler had deleted it.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};

/// What an interrupt must undo.
struct Registry {
    temporaries: Vec<PathBuf>,
    children: Vec<u32>,
    interrupted: bool,
    /// The new output set is in place: an interrupt now only cleans up.
    committed: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    temporaries: Vec::new(),
    children: Vec::new(),
    interrupted: false,
    committed: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The last signal received, set in the signal handler itself (the handler
/// thread may not have run yet when the converting thread looks).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Starts the thread that handles SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // SAFETY: the action only stores to an atomic, which is async-signal-safe.
        let registered =
            unsafe { signal_hook::low_level::register(signal, move || record(signal)) };
        if let Err(e) = registered {
            tracing::debug!("no signal handler: {e}");
        }
    }
    match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(mut signals) => {
            let spawned = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    if let Some(signal) = signals.forever().next() {
                        clean_up_and_exit(signal);
                    }
                });
            if let Err(e) = spawned {
                tracing::debug!("no signal thread: {e}");
            }
        }
        Err(e) => tracing::debug!("no signal handler: {e}"),
    }
}

fn record(signal: i32) {
    PENDING.store(signal, Ordering::SeqCst);
}

/// Exits as the handler thread would if a signal arrived and that thread has not
/// acted yet: a run interrupted during its commit ends with 128 + signal, not 0,
/// whichever thread gets there first.
pub fn exit_if_interrupted() {
    let signal = PENDING.load(Ordering::SeqCst);
    if signal != 0 {
        clean_up_and_exit(signal);
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Waits for any commit in progress, then removes every temporary, kills the
/// `nsys` children and exits with 128 + `signal` (without running destructors or
/// `atexit` handlers while other threads still work).
fn clean_up_and_exit(signal: i32) -> ! {
    let mut registry = registry();
    registry.interrupted = true;
    for &pid in &registry.children {
        kill_and_reap(pid);
    }
    for path in registry.temporaries.drain(..) {
        remove_all(&path);
    }
    let state = if registry.committed {
        "the new trace had been written and is in place"
    } else {
        "nothing was changed (earlier output, if any, is as it was)"
    };
    eprintln!("error: interrupted by {}: {state}", signal_name(signal));
    signal_hook::low_level::exit(128 + signal)
}

fn kill_and_reap(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: plain system calls on a child of this process.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// Removes a file or a directory tree, again if another thread added an entry
/// meanwhile (it cannot re-create the directory itself: see the module doc).
pub fn remove_all(path: &Path) {
    for _ in 0..100 {
        let result = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
            Err(_) => return,
        };
        if result.is_ok() {
            return;
        }
    }
}

/// Registered while it lives: removed by an interrupt.
pub struct Tracked(PathBuf);

impl Tracked {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut registry = registry();
        if let Some(i) = registry.temporaries.iter().position(|p| *p == self.0) {
            registry.temporaries.swap_remove(i);
        }
    }
}

fn interrupted_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted")
}

/// Creates a temporary (`create` returns its path) and registers it in one step,
/// so an interrupt cannot fall between the two; refused once interrupted.
pub fn create_tracked(
    create: impl FnOnce() -> std::io::Result<PathBuf>,
) -> std::io::Result<Tracked> {
    let mut registry = registry();
    if registry.interrupted {
        return Err(interrupted_error());
    }
    let path = create()?;
    registry.temporaries.push(path.clone());
    Ok(Tracked(path))
}

/// Registers a temporary that another process (`nsys`) will create.
pub fn track(path: &Path) -> Tracked {
    registry().temporaries.push(path.to_path_buf());
    Tracked(path.to_path_buf())
}

/// A child process an interrupt kills (unregistered when dropped).
pub struct TrackedChild(u32);

impl Drop for TrackedChild {
    fn drop(&mut self) {
        registry().children.retain(|&c| c != self.0);
    }
}

/// Starts `command` and registers the child in one step.
pub fn spawn_tracked(
    command: &mut std::process::Command,
) -> std::io::Result<(std::process::Child, TrackedChild)> {
    let mut registry = registry();
    if registry.interrupted {
        return Err(interrupted_error());
    }
    let child = command.spawn()?;
    let pid = child.id();
    registry.children.push(pid);
    Ok((child, TrackedChild(pid)))
}

thread_local! {
    static IN_CRITICAL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `commit` (the renames that install the output set) with interrupts held
/// off: a signal meanwhile is handled once it is done. `commit` must not create
/// or drop tracked things (the registry is held).
pub fn critical<T>(commit: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut held = registry();
    if held.interrupted {
        return Err(interrupted_error());
    }
    IN_CRITICAL.with(|c| c.set(true));
    let result = commit();
    IN_CRITICAL.with(|c| c.set(false));
    held.committed = result.is_ok();
    drop(held);
    exit_if_interrupted();
    result
}

/// Test hook: `NSYS2PRV_TEST_INTERRUPT=list` prints every checkpoint the run
/// passes (`checkpoint N NAME` on stderr); `NSYS2PRV_TEST_INTERRUPT=N:SIGNAL`
/// (`INT`, `TERM`, `HUP`, `KILL`) sends that signal to the process at the N-th
/// checkpoint and, outside the commit, stops the converting thread there, so the
/// handler acts on a known moment. Checkpoints are passed by the converting
/// thread only, so their numbering is the same in every run.
pub fn checkpoint(name: &str) {
    static PLAN: OnceLock<Option<(Option<u64>, i32)>> = OnceLock::new();
    static PASSED: AtomicU64 = AtomicU64::new(0);
    let Some((at, signal)) = *PLAN.get_or_init(test_plan) else {
        return;
    };
    let n = PASSED.fetch_add(1, Ordering::SeqCst) + 1;
    match at {
        None => eprintln!("checkpoint {n} {name}"),
        Some(at) if at == n => {
            let _ = signal_hook::low_level::raise(signal);
            if !IN_CRITICAL.with(Cell::get) {
                loop {
                    std::thread::park();
                }
            }
        }
        Some(_) => {}
    }
}

fn test_plan() -> Option<(Option<u64>, i32)> {
    let text = std::env::var("NSYS2PRV_TEST_INTERRUPT").ok()?;
    if text == "list" {
        return Some((None, 0));
    }
    let (n, signal) = text.split_once(':')?;
    let signal = match signal {
        "INT" => SIGINT,
        "TERM" => SIGTERM,
        "HUP" => SIGHUP,
        "KILL" => SIGKILL,
        _ => return None,
    };
    Some((Some(n.parse().ok()?), signal))
}
