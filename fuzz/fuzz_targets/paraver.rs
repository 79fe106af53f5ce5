//! A `.prv`, `.pcf` and `.row` (one input cut in three) through the validator
//! and the report (`nsys2prv_report::fuzz_checks::check_trace`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir_in(scratch()).unwrap();
    nsys2prv_report::fuzz_checks::check_trace(dir.path(), data);
});

/// In memory when /dev/shm is there.
fn scratch() -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}
