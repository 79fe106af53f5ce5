//! The scratch directory of one fuzzing process, in memory when /dev/shm is
//! there: made once and used for every input (a directory made and removed per
//! input cost the `parts` target half its time in system calls). Each check
//! writes every file it reads, so what an earlier input left is never read.
//!
//! A process of a campaign ends without running destructors (a fork-mode job
//! by `exit`, a crash by `abort`), so a process removes, when it starts, the
//! scratch of processes that are gone.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `nsys2prv-fuzz-TARGET-PID` under /dev/shm (or the temporary directory).
pub fn dir(target: &str) -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let prefix = format!("nsys2prv-fuzz-{target}-");
        remove_left_behind(&base, &prefix);
        let dir = base.join(format!("{prefix}{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("the scratch directory is made");
        dir
    })
}

/// Removes what processes no longer running left under `base` (names
/// `PREFIX` then their process id).
fn remove_left_behind(base: &Path, prefix: &str) {
    // Without /proc, whether a process runs is not known: nothing is removed.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.is_empty() || Path::new("/proc").join(&pid).exists() {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
}
