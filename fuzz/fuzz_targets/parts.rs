//! A sharded conversion's plan and part (one input cut in two) through their
//! decoders, as the merge reads them (`nsys2prv_convert::fuzz_checks::check_parts`).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod scratch;

fuzz_target!(|data: &[u8]| {
    nsys2prv_convert::fuzz_checks::check_parts(scratch::dir("parts"), data);
});
