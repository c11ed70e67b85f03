//! The two ways to run a command string: [`posix`] splits it into words and
//! runs them without a shell (the default), [`shell`] hands it to `/bin/sh -c`.

pub mod posix;
pub mod shell;

use holo_plugin::process::Command;
use serde::{Deserialize, Serialize};

/// How the command string is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Split with shell-words, run without a shell (the default).
    Posix,
    /// `/bin/sh -c COMMAND`.
    Shell,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Posix => "posix",
            Provider::Shell => "shell",
        }
    }
}

/// The command to run for `text` with `provider`; the error is plain text
/// (the caller names the resource).
pub fn command(provider: Provider, text: &str) -> Result<Command, String> {
    match provider {
        Provider::Posix => posix::command(text),
        Provider::Shell => shell::command(text),
    }
}
