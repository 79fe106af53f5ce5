//! A sharded conversion's plan and part (one input cut in two) through their
//! decoders, as the merge reads them (`nsys2prv_convert::fuzz_checks::check_parts`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir_in(scratch()).unwrap();
    nsys2prv_convert::fuzz_checks::check_parts(dir.path(), data);
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
