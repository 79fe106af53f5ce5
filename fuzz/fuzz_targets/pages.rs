//! A whole database file through the page reader, SQLite as the oracle
//! (`nsys_reader::fuzz_checks::check_database`).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// One file per fuzzing process, rewritten for every input (in memory when
/// /dev/shm is there).
fn input_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("nsys2prv-fuzz-pages-{}.sqlite", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = input_path();
    std::fs::write(path, data).unwrap();
    nsys_reader::fuzz_checks::check_database(path);
});
