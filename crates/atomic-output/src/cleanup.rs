//! What an interrupt must undo: this run's temporaries (staging directories,
//! temporary files, partial exports) and its child processes. The binary's
//! signal handler calls [`interrupt`] and exits; everything else registers here.
//!
//! The handler runs on its own thread while the others go on, so nothing may
//! re-create a temporary after the handler removed it: temporaries are created
//! only through [`create_tracked`] (which refuses once interrupted), and
//! everything inside a staging directory is created non-recursively (a removed
//! directory stays removed). That recreation was the cause of an old flaky
//! interrupt test: the views were written with `create_dir_all`, which brought
//! their temporary directory back after the handler had deleted it.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};

struct Registry {
    temporaries: Vec<PathBuf>,
    children: Vec<u32>,
    interrupted: bool,
    /// The new output is in place: an interrupt now only cleans up.
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

/// The last signal received, stored by the signal handler itself (the handler
/// thread may not have run yet when a converting thread looks).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// What the binary does with a pending signal once a critical section ends
/// (clean up and exit); set once by [`set_pending_handler`].
static ON_PENDING: OnceLock<fn(i32)> = OnceLock::new();

/// Records `signal` as pending. Async-signal-safe: only stores to an atomic.
pub fn note_signal(signal: i32) {
    PENDING.store(signal, Ordering::SeqCst);
}

/// The signal noted and not acted on yet (0 for none).
pub fn pending_signal() -> i32 {
    PENDING.load(Ordering::SeqCst)
}

/// Sets what [`critical`] calls when a signal arrived during its section.
pub fn set_pending_handler(handler: fn(i32)) {
    let _ = ON_PENDING.set(handler);
}

/// Marks the run interrupted (no temporary, child or commit can start after
/// this), waits for a commit in progress, kills and reaps the child processes,
/// then removes every temporary. Returns whether the new output had been
/// installed (a commit had ended).
pub fn interrupt() -> bool {
    let mut registry = registry();
    registry.interrupted = true;
    for &pid in &registry.children {
        crate::owner::kill_and_reap(pid);
    }
    for path in registry.temporaries.drain(..) {
        remove_all(&path);
    }
    registry.committed
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

/// A temporary registered while this lives: removed by an interrupt.
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

/// Runs `commit` (renames that install the run's output) with interrupts held
/// off: a signal meanwhile is handled once it is done (by the handler of
/// [`set_pending_handler`]), and reports the output installed when `commit`
/// succeeded. `commit` must not create or drop tracked things (the registry is
/// held).
pub fn critical<T>(commit: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    held(true, commit)
}

/// As [`critical`], for renames of intermediate files (parts of a sharded
/// conversion): the run's output is not installed by them.
pub fn critical_intermediate<T>(rename: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    held(false, rename)
}

fn held<T>(
    installs_output: bool,
    commit: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let mut held = registry();
    if held.interrupted {
        return Err(interrupted_error());
    }
    IN_CRITICAL.with(|c| c.set(true));
    let result = commit();
    IN_CRITICAL.with(|c| c.set(false));
    if installs_output {
        held.committed = result.is_ok();
    }
    drop(held);
    let signal = pending_signal();
    if signal != 0 {
        if let Some(handler) = ON_PENDING.get() {
            handler(signal);
        }
    }
    result
}

/// Test hook: `NSYS2PRV_TEST_INTERRUPT=list` prints every checkpoint the run
/// passes (`checkpoint N NAME` on stderr); `NSYS2PRV_TEST_INTERRUPT=N:SIGNAL`
/// (`INT`, `TERM`, `HUP`, `KILL`) sends that signal to the process at the N-th
/// checkpoint and, outside a critical section, stops the calling thread there,
/// so the handler acts on a known moment. Checkpoints are passed by the
/// converting thread only, so their numbering is the same in every run, but
/// for the waits of sharded runs on other processes' files, which pass one
/// checkpoint per look: `NSYS2PRV_TEST_INTERRUPT=NAME:SIGNAL` (a name, not a
/// number) signals at the first checkpoint of that name.
pub fn checkpoint(name: &str) {
    static PLAN: OnceLock<Option<(At, i32)>> = OnceLock::new();
    static PASSED: AtomicU64 = AtomicU64::new(0);
    let Some((at, signal)) = PLAN.get_or_init(test_plan) else {
        return;
    };
    let n = PASSED.fetch_add(1, Ordering::SeqCst) + 1;
    let now = match at {
        At::List => {
            eprintln!("checkpoint {n} {name}");
            false
        }
        At::Nth(at) => *at == n,
        At::Named(at) => at == name,
    };
    if now {
        let _ = signal_hook::low_level::raise(*signal);
        if !IN_CRITICAL.with(Cell::get) {
            loop {
                std::thread::park();
            }
        }
    }
}

/// Where [`checkpoint`] signals.
enum At {
    /// Nowhere: it lists the checkpoints.
    List,
    Nth(u64),
    Named(String),
}

fn test_plan() -> Option<(At, i32)> {
    let text = std::env::var("NSYS2PRV_TEST_INTERRUPT").ok()?;
    if text == "list" {
        return Some((At::List, 0));
    }
    let (at, signal) = text.rsplit_once(':')?;
    let signal = match signal {
        "INT" => SIGINT,
        "TERM" => SIGTERM,
        "HUP" => SIGHUP,
        "KILL" => SIGKILL,
        _ => return None,
    };
    let at = match at.parse() {
        Ok(n) => At::Nth(n),
        Err(_) => At::Named(at.to_string()),
    };
    Some((at, signal))
}
