//! BSC nsys2prv 0.6's `--config` TOML through our reader and the checks the
//! command line makes of it (`nsys2prv_convert::fuzz_checks::check_bsc_config`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir_in(scratch()).unwrap();
    nsys2prv_convert::fuzz_checks::check_bsc_config(&dir.path().join("config.toml"), data);
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
