//! Errors the caller tells apart: a usage error (exit status 2: a bad option,
//! an output the tool would not replace) from a failure (1).

/// A problem of the request rather than of the inputs; one line.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Whether `e` is a usage error (ours, or an output name the writer refuses).
pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || matches!(
            e.downcast_ref::<paraver_writer::WriteError>(),
            Some(paraver_writer::WriteError::BadOutputName(_))
        )
}

/// The cause chain on one line, never a backtrace; a cause already quoted by the
/// message before it is not repeated.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if !line.contains(&cause) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&cause);
        }
    }
    line.replace('\n', " ")
}
