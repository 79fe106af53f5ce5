//! Errors the caller tells apart: a usage error (exit status 2: a bad option,
//! an output the tool would not replace) from a failure (1).
//!
//! The public calls ([`crate::run`], [`crate::merge`], [`crate::views_dir`])
//! return [`Error`], typed by what the caller does with it; inside, the modules
//! still add context with `anyhow`, whose chain of causes [`Error`] keeps
//! (`source()`), so that [`one_line`] prints the same line.

/// A problem of the request rather than of the inputs; one line.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A conversion's failure: its kind, which decides the exit status, and its
/// message with the chain of its causes (`Display` is the message, `source()`
/// the causes).
#[derive(Debug)]
pub enum Error {
    /// A problem of the request rather than of the inputs (a bad option, an
    /// output name or file the tool will not write): exit status 2.
    Usage(Cause),
    /// Anything else (bad input, a file system error, a failed `nsys export`,
    /// a refused merge): exit status 1.
    Failed(Cause),
}

/// The error behind an [`Error`], with its causes.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

impl Error {
    /// Whether the request was at fault (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }

    fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            Error::Usage(c) | Error::Failed(c) => c.as_ref(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.cause(), f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause().source()
    }
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        if is_usage_error(&e) {
            Error::Usage(e.into())
        } else {
            Error::Failed(e.into())
        }
    }
}

/// Whether `e` is a usage error (ours, or an output name the writer refuses).
pub fn is_usage_error(e: &anyhow::Error) -> bool {
    e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<Error>().is_some_and(Error::is_usage)
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

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    /// The typed error keeps the chain of causes: the binary's line is the same
    /// with it as with the `anyhow` error it was made from, and its kind says
    /// whether the request was at fault.
    #[test]
    fn the_typed_error_keeps_the_line_and_the_kind() {
        let inner = || -> anyhow::Result<()> {
            Err(std::io::Error::other("No space left on device"))
                .context("t.prv: cannot write")
                .context("merge")
        };
        let plain = inner().unwrap_err();
        let line = one_line(&plain);
        assert_eq!(line, "merge: t.prv: cannot write: No space left on device");
        let typed = Error::from(inner().unwrap_err());
        assert!(!typed.is_usage());
        assert_eq!(one_line(&anyhow::Error::from(typed)), line);

        let usage = || -> anyhow::Result<()> {
            Err(UsageError("out.txt: not a trace name".into())).context("output")
        };
        let typed = Error::from(usage().unwrap_err());
        assert!(typed.is_usage());
        let wrapped = anyhow::Error::from(typed).context("convert");
        assert!(is_usage_error(&wrapped));
        assert_eq!(
            one_line(&wrapped),
            "convert: output: out.txt: not a trace name"
        );
    }
}
