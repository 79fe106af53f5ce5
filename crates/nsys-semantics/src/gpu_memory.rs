//! Placeholder being written: see the module's final documentation.

use nsys_reader::ReadError;
use paraver_writer::EventTypeInfo;

use crate::context::ReportContext;

pub(crate) fn translate(_ctx: &mut ReportContext) -> Result<(), ReadError> {
    Ok(())
}

pub(crate) fn event_types() -> Vec<EventTypeInfo> {
    Vec::new()
}
