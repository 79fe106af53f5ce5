//! OS runtime calls (`OSRT_API`, `--trace=osrt`) on CPU threads: every call as an
//! interval of 66400000 (named by the function), `pthread_*` calls also as
//! 61000000 with Extrae's pthread values, and the thread state the call implies.
//!
//! Only `eventClass = 27` rows are calls; the start/finish markers (31, 32) are
//! counted as ignored. Nested calls (`nestingLevel` > 0) lie inside their parent,
//! so their intervals nest and views show them with "Stacked Val".

use nsys_reader::osrt::{OsrtCall, OSRT_API};
use nsys_reader::ReadError;
use paraver_writer::{EventPair, EventTypeInfo, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::types::{interval, state};
use crate::view::bundled_view;

pub use nsys2prv_events::OSRT_CALL;
/// pthread call, with Extrae's values (BSC nsys2prv 0.6 uses the same number).
pub const PTHREAD_CALL: u32 = 61_000_000;

use state::{BLOCKED, IO};

/// Extrae's 61000000 values (paraver-format.md §8.4).
const PTHREAD_VALUES: [(i64, &str); 14] = [
    (0, "Outside pthread call"),
    (1, "pthread_exit"),
    (2, "pthread_create"),
    (3, "pthread_join"),
    (4, "pthread_detach"),
    (5, "pthread_rwlock_*wrlock"),
    (6, "pthread_rwlock_*rdlock"),
    (7, "pthread_rwlock_unlock"),
    (8, "pthread_mutex_*lock"),
    (9, "pthread_mutex_unlock"),
    (10, "pthread_cond_signal"),
    (11, "pthread_cond_broadcast"),
    (12, "pthread_cond_*wait"),
    (13, "pthread_barrier_wait"),
];

pub const OSRT: Category = Category::named("osrt");

/// OS runtime calls and pthreads.
pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: OSRT,
    aliases: &["pthreads"],
    bsc_names: &["pthread", "osrt"],
    groups: &[],
    tables: &["OSRT_API"],
    table_prefixes: &[],
    bytes_per_row: 126,
    background_bytes_per_row: 0,
    launched: false,
    event_types,
    states: &[state::SYNCHRONIZATION, BLOCKED, IO, state::OTHERS],
    views: &[
        bundled_view!(
            "views/os_runtime.cfg",
            "Which OS runtime calls (I/O, sleeps, locks, ...) does each thread make, and when?",
        ),
        bundled_view!(
            "views/pthreads.cfg",
            "Which pthread calls does each thread make, and when?",
        ),
    ],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

fn event_types() -> Vec<EventTypeInfo> {
    vec![
        interval(OSRT_CALL, "OS runtime call", ValueLabels::Names),
        interval(
            PTHREAD_CALL,
            "pthread call",
            ValueLabels::fixed(&PTHREAD_VALUES),
        ),
    ]
}

/// What a function name becomes, resolved once per name id.
#[derive(Clone, Copy)]
struct OsrtName {
    handle: u32,
    pthread: Option<i64>,
    state: u32,
}

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let mut names: FxHashMap<i64, OsrtName> = FxHashMap::default();
    let (mut markers, mut calls, mut pthread_calls) = (0u64, 0u64, 0u64);
    let scan = export.osrt_calls(|call| {
        if !call.is_call() {
            markers += 1;
            return Ok(());
        }
        if !ctx.within_limits(call.start, call.end) {
            return Ok(());
        }
        let name = osrt_name(ctx, &mut names, call.name_id)?;
        calls += 1;
        pthread_calls += u64::from(name.pthread.is_some());
        emit_call(ctx, call, name);
        Ok(())
    })?;
    if calls > 0 {
        ctx.count(OSRT_API, calls);
        ctx.count("pthread calls", pthread_calls);
    }
    if markers > 0 {
        ctx.count("OSRT_API markers ignored", markers);
    }
    ctx.note_skipped(OSRT_API, scan.skipped);
    Ok(())
}

fn emit_call(ctx: &mut ReportContext, call: &OsrtCall, name: OsrtName) {
    let thread = ctx.cpu_thread(call.global_tid);
    // A call is an interval and a state, its name resolved above: a cut can
    // leave it out where it is read.
    if ctx.left_out_by_cut(OSRT_API, thread, call.start, call.end) {
        return;
    }
    let pairs = [
        EventPair::name(OSRT_CALL, name.handle),
        EventPair::raw(PTHREAD_CALL, name.pthread.unwrap_or(0)),
    ];
    let n = if name.pthread.is_some() { 2 } else { 1 };
    ctx.run.interval(thread, call.start, call.end, &pairs[..n]);
    ctx.states.add(thread, call.start, call.end, name.state);
}

fn osrt_name(
    ctx: &mut ReportContext,
    cache: &mut FxHashMap<i64, OsrtName>,
    name_id: i64,
) -> Result<OsrtName, ReadError> {
    if let Some(&n) = cache.get(&name_id) {
        return Ok(n);
    }
    let name = ctx
        .export
        .string(name_id)?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("[unknown OS runtime call {name_id}]"));
    let resolved = OsrtName {
        handle: ctx.run.names.intern(OSRT_CALL, &name),
        pthread: pthread_value(&name),
        state: state_of_osrt_call(&name),
    };
    cache.insert(name_id, resolved);
    Ok(resolved)
}

/// The name without what libc adds to it: leading underscores (`__open`), the
/// large-file suffix (`open64`) and the GNU suffix (`pthread_timedjoin_np`).
fn base_name(name: &str) -> &str {
    let name = name.trim_start_matches('_');
    let name = name.strip_suffix("_np").unwrap_or(name);
    name.strip_suffix("64").unwrap_or(name)
}

/// Extrae's 61000000 value of a pthread function, `None` for the functions Extrae
/// does not number (those only get 66400000).
pub fn pthread_value(name: &str) -> Option<i64> {
    let f = base_name(name).strip_prefix("pthread_")?;
    let family = |prefix: &str, suffix: &str| f.starts_with(prefix) && f.ends_with(suffix);
    let value = match f {
        "exit" => 1,
        "create" => 2,
        "join" | "tryjoin" | "timedjoin" | "clockjoin" => 3,
        "detach" => 4,
        "rwlock_unlock" => 7,
        "mutex_unlock" => 9,
        "cond_signal" => 10,
        "cond_broadcast" => 11,
        "barrier_wait" => 13,
        _ if family("rwlock_", "wrlock") => 5,
        _ if family("rwlock_", "rdlock") => 6,
        _ if family("mutex_", "lock") => 8,
        _ if family("cond_", "wait") => 12,
        _ => return None,
    };
    Some(value)
}

/// Calls that wait for another thread or process, besides the numbered pthread ones.
const SYNCHRONIZATION_CALLS: &[&str] = &[
    "pthread_spin_lock",
    "pthread_spin_trylock",
    "sem_wait",
    "sem_trywait",
    "sem_timedwait",
    "sem_clockwait",
    "wait",
    "waitpid",
    "waitid",
    "wait3",
    "wait4",
    "flock",
    "lockf",
    "futex",
    "mtx_lock",
    "mtx_timedlock",
    "cnd_wait",
    "cnd_timedwait",
    "thrd_join",
];

const SLEEP_CALLS: &[&str] = &["sleep", "usleep", "nanosleep", "clock_nanosleep", "pause"];

const IO_CALLS: &[&str] = &[
    // file descriptors
    "read",
    "write",
    "pread",
    "pwrite",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "open",
    "openat",
    "creat",
    "close",
    "fsync",
    "fdatasync",
    "sync",
    "syncfs",
    "sync_file_range",
    "msync",
    "ftruncate",
    "truncate",
    "fallocate",
    "posix_fallocate",
    "sendfile",
    "splice",
    "copy_file_range",
    "stat",
    "fstat",
    "lstat",
    "fstatat",
    "statx",
    "ioctl",
    // waiting for descriptors
    "poll",
    "ppoll",
    "select",
    "pselect",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    // sockets
    "accept",
    "accept4",
    "connect",
    "recv",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "send",
    "sendto",
    "sendmsg",
    "sendmmsg",
    // stdio
    "fopen",
    "fdopen",
    "freopen",
    "fclose",
    "fread",
    "fwrite",
    "fflush",
    "fgets",
    "fputs",
    "fgetc",
    "fputc",
    "getc",
    "putc",
    "getline",
    "getdelim",
    "fscanf",
    "fprintf",
    "vfprintf",
];

/// Extrae state of a CPU thread inside an OS runtime call:
///
/// | state | calls |
/// |---|---|
/// | 5 Synchronization | pthread mutex, rwlock, condition and barrier calls, `pthread_join` (and `_tryjoin`/`_timedjoin`), `pthread_spin_*lock`, `sem_*wait`, `wait*`, `flock`, `lockf`, `futex`, C11 `mtx_*lock`/`cnd_*wait`/`thrd_join` |
/// | 9 Blocked | `sleep`, `usleep`, `nanosleep`, `clock_nanosleep`, `pause` |
/// | 12 I/O | file descriptor I/O (`read`, `write`, `pread`, `open`, `close`, `fsync`, `ftruncate`, `stat`, `ioctl`, ...), waiting for descriptors (`poll`, `select`, `epoll_wait`, ...), sockets (`accept`, `connect`, `recv*`, `send*`), stdio (`fopen`, `fread`, `fwrite`, `fgets`, `fflush`, ...) |
/// | 15 Others | everything else: `mmap`, `pthread_create`, `fork`, `pipe`, `socket`, `shmat`, ... |
///
/// Names are compared without leading underscores and the `64` and `_np` suffixes.
pub fn state_of_osrt_call(name: &str) -> u32 {
    let base = base_name(name);
    let waits = pthread_value(name).is_some_and(|v| !matches!(v, 1 | 2 | 4));
    if waits || SYNCHRONIZATION_CALLS.contains(&base) {
        state::SYNCHRONIZATION
    } else if SLEEP_CALLS.contains(&base) {
        BLOCKED
    } else if IO_CALLS.contains(&base) {
        IO
    } else {
        state::OTHERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pthread_calls_get_extrae_values() {
        assert_eq!(pthread_value("pthread_exit"), Some(1));
        assert_eq!(pthread_value("pthread_create"), Some(2));
        assert_eq!(pthread_value("pthread_join"), Some(3));
        assert_eq!(pthread_value("pthread_timedjoin_np"), Some(3));
        assert_eq!(pthread_value("pthread_detach"), Some(4));
        assert_eq!(pthread_value("pthread_rwlock_timedwrlock"), Some(5));
        assert_eq!(pthread_value("pthread_rwlock_rdlock"), Some(6));
        assert_eq!(pthread_value("pthread_rwlock_unlock"), Some(7));
        assert_eq!(pthread_value("pthread_mutex_lock"), Some(8));
        assert_eq!(pthread_value("pthread_mutex_trylock"), Some(8));
        assert_eq!(pthread_value("pthread_mutex_unlock"), Some(9));
        assert_eq!(pthread_value("pthread_cond_signal"), Some(10));
        assert_eq!(pthread_value("pthread_cond_broadcast"), Some(11));
        assert_eq!(pthread_value("pthread_cond_timedwait"), Some(12));
        assert_eq!(pthread_value("pthread_barrier_wait"), Some(13));
        assert_eq!(pthread_value("pthread_spin_lock"), None);
        assert_eq!(pthread_value("pthread_mutex_init"), None);
        assert_eq!(pthread_value("read"), None);
    }

    #[test]
    fn calls_get_extrae_states() {
        let cases = [
            ("pthread_mutex_lock", state::SYNCHRONIZATION),
            ("pthread_cond_wait", state::SYNCHRONIZATION),
            ("pthread_cond_broadcast", state::SYNCHRONIZATION),
            ("pthread_barrier_wait", state::SYNCHRONIZATION),
            ("pthread_join", state::SYNCHRONIZATION),
            ("sem_timedwait", state::SYNCHRONIZATION),
            ("waitpid", state::SYNCHRONIZATION),
            ("usleep", BLOCKED),
            ("nanosleep", BLOCKED),
            ("clock_nanosleep", BLOCKED),
            ("read", IO),
            ("__read", IO),
            ("open64", IO),
            ("openat64", IO),
            ("fsync", IO),
            ("poll", IO),
            ("epoll_wait", IO),
            ("ioctl", IO),
            ("recvfrom", IO),
            ("fread", IO),
            ("fopen64", IO),
            ("mmap64", state::OTHERS),
            ("pthread_create", state::OTHERS),
            ("fork", state::OTHERS),
            ("socket", state::OTHERS),
        ];
        for (name, expected) in cases {
            assert_eq!(state_of_osrt_call(name), expected, "{name}");
        }
    }
}
