//! Temporaries carry the host and process that made them, so a later run removes
//! only what a dead process of its own host left (another node of a shared file
//! system may be writing its own).

/// This machine's name, with `/` and `.` made `_` (it is part of file names
/// parsed back by [`parse_owner`]).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer outlives the call and its length is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match ok {
        true => String::from_utf8_lossy(&buf[..end]).replace(['/', '.'], "_"),
        false => "localhost".into(),
    }
}

/// Whether process `pid` of this host still runs.
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Kills a child process of this one and waits for it (an interrupted run's
/// `nsys`, whose output is about to be removed).
pub(crate) fn kill_and_reap(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: plain system calls on a child of this process.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// `HOST.PID.XXXXXX` (what follows a temporary's prefix) → (HOST, PID).
pub fn parse_owner(owner: &str) -> Option<(&str, u32)> {
    let owner = owner.strip_suffix(".tmp").unwrap_or(owner);
    let mut parts = owner.rsplitn(3, '.');
    let _random = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_parse_with_dotted_hosts() {
        assert_eq!(parse_owner("node01.4242.aB3dE9"), Some(("node01", 4242)));
        assert_eq!(
            parse_owner("node01.4242.aB3dE9.tmp"),
            Some(("node01", 4242))
        );
        assert_eq!(parse_owner("a_b.7.xxxxxx"), Some(("a_b", 7)));
        assert_eq!(parse_owner("node.x.abcdef"), None);
    }

    #[test]
    fn this_process_is_alive() {
        assert!(process_alive(std::process::id()));
        assert!(!host_name().contains('.'));
    }
}
