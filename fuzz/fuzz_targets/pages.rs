//! A whole database file through the page reader, SQLite as the oracle
//! (`nsys_reader::fuzz_checks::check_database`).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod scratch;

fuzz_target!(|data: &[u8]| {
    // One file of the process's scratch, rewritten for every input.
    let path = scratch::dir("pages").join("input.sqlite");
    std::fs::write(&path, data).unwrap();
    nsys_reader::fuzz_checks::check_database(&path);
});
