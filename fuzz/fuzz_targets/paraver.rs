//! A `.prv`, `.pcf` and `.row` (one input cut in three) through the validator
//! and the report (`nsys2prv_report::fuzz_checks::check_trace`).
#![no_main]

use libfuzzer_sys::fuzz_target;

mod scratch;

fuzz_target!(|data: &[u8]| {
    nsys2prv_report::fuzz_checks::check_trace(scratch::dir("paraver"), data);
});
