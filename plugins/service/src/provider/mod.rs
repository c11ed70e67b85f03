//! What every service provider shares: the systemctl argv, CCM's
//! tables for `is-active` and `is-enabled` output, and the provider trait.
//! [`systemd`] runs systemctl; [`mock`] stands in for it in test mode.

pub mod mock;
pub mod systemd;

use holo_plugin::{Env, Error, Result};

/// What `systemctl is-active` printed, as far as CCM's table knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Active {
    Active,
    Inactive,
    Failed,
    Activating,
}

impl Active {
    /// CCM's is-active table; any other output is `None`.
    pub fn parse(output: &str) -> Option<Active> {
        Some(match output {
            "active" => Active::Active,
            "inactive" => Active::Inactive,
            "failed" => Active::Failed,
            "activating" => Active::Activating,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Active::Active => "active",
            Active::Inactive => "inactive",
            Active::Failed => "failed",
            Active::Activating => "activating",
        }
    }

    /// Only `active` counts as running.
    pub fn running(self) -> bool {
        self == Active::Active
    }
}

/// What `systemctl is-enabled` printed, read with CCM's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitFileState {
    /// Starts at boot (or is pulled in): enabled, static, alias, ...
    Enabled(String),
    /// Does not: disabled, masked, linked, ...
    Disabled(String),
    /// `not-found`: there is no such unit.
    NotFound,
}

impl UnitFileState {
    /// CCM's is-enabled table; any other output is `None`.
    pub fn parse(output: &str) -> Option<UnitFileState> {
        let word = output.to_owned();
        Some(match output {
            "enabled" | "enabled-runtime" | "alias" | "static" | "indirect" | "generated"
            | "transient" => UnitFileState::Enabled(word),
            "linked" | "linked-runtime" | "masked" | "masked-runtime" | "disabled" => {
                UnitFileState::Disabled(word)
            }
            "not-found" => UnitFileState::NotFound,
            _ => return None,
        })
    }
}

/// The state of one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub active: Active,
    /// Whether the service starts at boot.
    pub enabled: bool,
    /// The `is-enabled` word, for messages (`static`, `masked`, ...).
    pub unit_file_state: String,
}

impl Status {
    pub fn running(&self) -> bool {
        self.active.running()
    }
}

/// A change systemctl makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Start,
    Stop,
    Restart,
    Enable,
    Disable,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Start => "start",
            Verb::Stop => "stop",
            Verb::Restart => "restart",
            Verb::Enable => "enable",
            Verb::Disable => "disable",
        }
    }
}

/// `systemctl VERB --system NAME`, as CCM gives every command.
pub fn systemctl_argv<'a>(verb: &'a str, name: &'a str) -> [&'a str; 4] {
    ["systemctl", verb, "--system", name]
}

/// CCM's daemon-reload command.
pub const DAEMON_RELOAD: [&str; 2] = ["systemctl", "daemon-reload"];

/// The message for a unit that does not exist.
pub fn not_found(name: &str, printed: &str) -> Error {
    Error::new(format!(
        "service not found: {name} (systemctl is-enabled printed {printed:?}); check the name, or install the unit file first (require it)"
    ))
}

/// The message for output that CCM's tables do not know.
pub fn unknown_output(query: &str, name: &str, stdout: &str, stderr: &str) -> Error {
    let mut message = format!("invalid systemctl {query} output for {name}: {stdout:?}");
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        message.push_str(&format!(" (stderr: {stderr:?})"));
    }
    message.push_str("; check the unit with systemctl status");
    Error::new(message)
}

/// A service manager.
pub trait Provider {
    /// The running and enabled state (`is-active`, `is-enabled`).
    fn status(&mut self, name: &str) -> Result<Status>;
    /// Runs one change; the first change of a process reloads systemd first.
    fn change(&mut self, verb: Verb, name: &str) -> Result<()>;
}

/// The mock in test mode, systemctl otherwise.
pub fn open(env: &Env) -> Box<dyn Provider> {
    if env.test_mode {
        Box::new(mock::Mock::new(&env.root))
    } else {
        Box::new(systemd::Systemd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_active_table() {
        let rows = [
            ("active", Some(Active::Active), true),
            ("inactive", Some(Active::Inactive), false),
            ("failed", Some(Active::Failed), false),
            ("activating", Some(Active::Activating), false),
        ];
        for (output, parsed, running) in rows {
            assert_eq!(Active::parse(output), parsed, "{output}");
            assert_eq!(parsed.map(Active::running), Some(running), "{output}");
        }
        for other in ["reloading", "deactivating", "unknown", "", "Active"] {
            assert_eq!(Active::parse(other), None, "{other}");
        }
    }

    #[test]
    fn is_enabled_table() {
        for enabled in [
            "enabled",
            "enabled-runtime",
            "alias",
            "static",
            "indirect",
            "generated",
            "transient",
        ] {
            assert_eq!(
                UnitFileState::parse(enabled),
                Some(UnitFileState::Enabled(enabled.to_owned()))
            );
        }
        for disabled in [
            "linked",
            "linked-runtime",
            "masked",
            "masked-runtime",
            "disabled",
        ] {
            assert_eq!(
                UnitFileState::parse(disabled),
                Some(UnitFileState::Disabled(disabled.to_owned()))
            );
        }
        assert_eq!(
            UnitFileState::parse("not-found"),
            Some(UnitFileState::NotFound)
        );
        for other in ["bad", "", "Enabled", "enabled "] {
            assert_eq!(UnitFileState::parse(other), None, "{other:?}");
        }
    }

    #[test]
    fn unknown_output_quotes_both_streams() {
        let err = unknown_output("is-active", "web", "reloading", "oops\n");
        assert_eq!(
            err.message(),
            "invalid systemctl is-active output for web: \"reloading\" (stderr: \"oops\"); check the unit with systemctl status"
        );
    }
}
