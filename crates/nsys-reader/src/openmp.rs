//! Placeholder being written.
