//! The end-to-end tests, as one test executable with one module per area: one link
//! instead of one per area, one build of the binary under test, one `NOT CHECKED:`
//! summary at the end (`end_to_end::skips`), and outputs shared between areas.
//!
//! `cargo test -p end-to-end` runs them all; `cargo test -p end-to-end AREA::` one area
//! (e.g. `samples::`), `cargo test -p end-to-end AREA::NAME` one test.
//!
//! Conversions run in this process where the process is not the point
//! (`end_to_end::convert`), and by the binary where it is (signals, exit statuses
//! as a shell sees them, terminals, Slurm, the static build, installation, bad input
//! as printed): see ARCHITECTURE.md, "Tests".
//!
//! A new area is a file `tests/tests/all/AREA.rs` plus its `mod AREA;` line below
//! (alphabetical); helpers several areas share go in `tests/src/`.

mod bad_input;
mod bsc_cli;
mod bsc_views;
mod bubble;
mod category_snapshots;
mod cli;
mod corpus;
mod correlation;
mod cpu_counters;
mod cuts;
mod cuts_where_read;
mod device_side;
mod diff;
mod doc_links;
mod gui_views;
mod idle;
mod install;
mod interrupt;
mod mpi_merge;
mod mutations;
mod nsys_rep;
mod nvtx_nccl;
mod openmp_openacc;
mod osrt_sched;
mod paramedir;
mod paraver_limits;
mod pipeline;
mod pmf;
mod queues;
mod ranks;
mod report;
mod report_page;
mod samples;
mod sampling;
mod scaling;
mod sharded;
mod skips;
mod slurm;
mod static_binary;
mod synthetic;
mod terminal_safety;
mod view_figures;
mod views;

/// The `.pmf`'s translation time of in-process conversions, fixed
/// (`SOURCE_DATE_EPOCH`, as [`end_to_end::binary`] sets it for the binary) so that
/// their output compares byte for byte. It is read from this process's environment,
/// which may only be changed while no other thread reads it: so before `main`
/// (an ELF initialiser), while the process has one thread.
#[used]
#[link_section = ".init_array"]
static FIX_TRANSLATION_TIME: extern "C" fn() = {
    extern "C" fn fix_translation_time() {
        std::env::set_var("SOURCE_DATE_EPOCH", end_to_end::FIXED_EPOCH);
    }
    fix_translation_time
};
