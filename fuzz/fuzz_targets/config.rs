//! BSC nsys2prv 0.6's `--config` TOML through our reader and the checks the
//! command line makes of it (`nsys2prv_convert::fuzz_checks::check_bsc_config`),
//! in memory: no file is written per input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nsys2prv_convert::fuzz_checks::check_bsc_config(std::path::Path::new("config.toml"), data);
});
