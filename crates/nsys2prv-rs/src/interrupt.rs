//! SIGINT, SIGTERM and SIGHUP: remove this run's temporaries (staging
//! directories, partial exports), stop its `nsys` children and exit 130, 143 or
//! 129. What to remove and kill is registered in `atomic_output::cleanup` by
//! whoever creates it; output is renamed into place in a critical section the
//! handler waits for, so an interrupt leaves the old set or the new one, never a
//! mix.

use atomic_output::cleanup;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Starts the thread that handles SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // SAFETY: the action only stores to an atomic, which is async-signal-safe.
        let registered = unsafe {
            signal_hook::low_level::register(signal, move || cleanup::note_signal(signal))
        };
        if let Err(e) = registered {
            tracing::debug!("no signal handler: {e}");
        }
    }
    cleanup::set_pending_handler(clean_up_and_exit);
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

/// Exits as the handler thread would if a signal arrived and that thread has not
/// acted yet: a run interrupted during its commit ends with 128 + signal, not 0,
/// whichever thread gets there first.
pub fn exit_if_interrupted() {
    let signal = cleanup::pending_signal();
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
fn clean_up_and_exit(signal: i32) {
    let committed = cleanup::interrupt();
    let state = if committed {
        "the new trace had been written and is in place"
    } else {
        "nothing was changed (earlier output, if any, is as it was)"
    };
    eprintln!("error: interrupted by {}: {state}", signal_name(signal));
    signal_hook::low_level::exit(128 + signal)
}
