//! The Paraver views (`.cfg`) bundled in the binary and installed next to each trace.

use std::path::Path;

use anyhow::{Context, Result};

/// (relative path, contents) of every bundled view.
pub const VIEWS: &[(&str, &str)] = &[
    (
        "views/cuda_activities.cfg",
        include_str!("../../../cfgs/views/cuda_activities.cfg"),
    ),
    (
        "views/cuda_api_calls.cfg",
        include_str!("../../../cfgs/views/cuda_api_calls.cfg"),
    ),
    (
        "views/kernels.cfg",
        include_str!("../../../cfgs/views/kernels.cfg"),
    ),
    (
        "views/states.cfg",
        include_str!("../../../cfgs/views/states.cfg"),
    ),
    (
        "analysis/kernels_profile.cfg",
        include_str!("../../../cfgs/analysis/kernels_profile.cfg"),
    ),
    (
        "analysis/states_profile.cfg",
        include_str!("../../../cfgs/analysis/states_profile.cfg"),
    ),
];

/// Writes every view under `dir` (replacing older copies).
pub fn install(dir: &Path) -> Result<()> {
    for (rel, text) in VIEWS {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{}: cannot create directory", parent.display()))?;
        }
        std::fs::write(&path, text)
            .with_context(|| format!("{}: cannot write view", path.display()))?;
    }
    Ok(())
}
