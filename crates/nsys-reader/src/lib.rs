//! Reader for Nsight Systems SQLite exports (nsys 2020.5 to 2026.x).
//!
//! Knows SQLite and the export's tables; knows nothing of Paraver. Features are
//! detected by table and column presence, never by version number alone, and every
//! table is optional.

// Unsafe code only where allowed: `statement` (SQLite's C API for table scans).
#![deny(unsafe_code)]

mod checks;
mod connection;
pub mod cpu_counters;
pub mod cuda;
pub mod cuda_events;
pub mod enums;
mod error;
mod export;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_checks;
pub mod gpu_metrics;
pub mod graphs;
pub mod host_functions;
pub mod ids;
pub mod memory;
pub mod meta;
pub mod mpi;
pub mod network;
pub mod nvtx;
pub mod openacc;
pub mod openmp;
pub mod osrt;
mod pages;
#[cfg(test)]
mod pages_tests;
mod query;
pub mod sampling;
mod scan;
pub mod sched;
mod schema;
#[allow(unsafe_code)]
mod statement;
mod threads;

pub use error::ReadError;
pub use export::Export;
pub use meta::Metadata;
pub use scan::TableScan;
pub use schema::Schema;
pub use statement::RowView;
