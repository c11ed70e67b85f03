//! The SDK's error type: one human-readable message that already names the
//! file and line (or the entity) and says what to do.
//!
//! Dispatch prints every line of the message prefixed with `!! `.

use std::fmt;
use std::path::Path;

/// An error a plugin reports to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with a complete message (file/line or entity, and what to do).
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// An I/O error on `path`: "cannot ACTION PATH: ERROR".
    pub fn io(action: &str, path: &Path, err: &std::io::Error) -> Self {
        Error::new(format!("cannot {action} {}: {err}", path.display()))
    }

    /// Several errors reported together, one per line.
    pub fn many(errors: Vec<Error>) -> Self {
        let lines: Vec<String> = errors.into_iter().map(|e| e.message).collect();
        Error::new(lines.join("\n"))
    }

    /// The message, possibly several lines.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the message with context, e.g. the entity id.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error::new(format!("{context}: {}", self.message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::new(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::new(message)
    }
}
