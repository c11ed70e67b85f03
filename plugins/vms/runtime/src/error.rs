//! The runtime's error: which part failed, with the message the user sees.
//! Display prints the message alone, so `holos: MESSAGE` reads as it did
//! when the runtime returned strings.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The host: QEMU and its tools, KVM, ports, firmware.
    Host(String),
    /// The state directory: project records, locks, volumes on disk.
    State(String),
    /// An image: the cache, a pull, a checksum, `holos.images.lock`.
    Image(String),
    /// One QEMU instance: its disks, seed, launch, QMP, stop.
    Instance(String),
    /// A guest: SSH, healthchecks, waiting on `depends_on`.
    Guest(String),
    /// What was asked cannot be done: an unknown instance or volume, a
    /// project without instances, a plan that does not fit.
    Request(String),
}

impl Error {
    /// The message, as Display prints it.
    pub fn message(&self) -> &str {
        match self {
            Error::Host(message)
            | Error::State(message)
            | Error::Image(message)
            | Error::Instance(message)
            | Error::Guest(message)
            | Error::Request(message) => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// For callers that report messages as strings (the `holos` commands).
impl From<Error> for String {
    fn from(error: Error) -> String {
        error.message().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::Error;
    use crate::state::ProjectRecord;

    #[test]
    fn an_unknown_instance_is_a_request_error_that_displays_only_its_message() {
        let record = ProjectRecord {
            project: "demo".into(),
            ..ProjectRecord::default()
        };
        let err = crate::lifecycle::find_instance(&record, "web-0").unwrap_err();
        let message = "project demo has no instance \"web-0\"; it has: ";
        assert_eq!(err, Error::Request(message.into()));
        assert_eq!(err.to_string(), message);
        assert_eq!(String::from(err), message);
    }
}
