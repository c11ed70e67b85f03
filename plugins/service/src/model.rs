//! The `[[service]]` resource: its properties (`name`, `ensure`, `enable`)
//! and their validation. Validation runs while the table is deserialized,
//! so the SDK's loader puts the resource file and the property's line in
//! front of every message here.

use std::fmt;

use holo_plugin::resources::Resource;
use serde::{Deserialize, Deserializer, Serialize, de};

/// The `ensure` property: the running state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ensure {
    #[default]
    Running,
    Stopped,
}

impl Ensure {
    pub const VALUES: [&'static str; 2] = ["running", "stopped"];

    pub fn as_str(self) -> &'static str {
        match self {
            Ensure::Running => "running",
            Ensure::Stopped => "stopped",
        }
    }

    /// Parses a value, or says what was meant.
    pub fn parse(raw: &str) -> Result<Ensure, String> {
        match holo_plugin::resources::one_of("ensure", raw, &Ensure::VALUES)? {
            "stopped" => Ok(Ensure::Stopped),
            _ => Ok(Ensure::Running),
        }
    }
}

impl fmt::Display for Ensure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Ensure {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Ensure::parse(&raw).map_err(de::Error::custom)
    }
}

/// A `[[service]]` table as written in a resource file. `subscribe`,
/// `require` and `protect` are the SDK's common properties.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServiceTable {
    #[serde(deserialize_with = "service_name")]
    pub name: String,
    #[serde(default)]
    pub ensure: Ensure,
    /// Unset leaves the boot configuration alone.
    #[serde(default)]
    pub enable: Option<bool>,
}

impl Resource for ServiceTable {
    const KIND: &'static str = "service";
    fn entity_id(&self) -> String {
        format!("service:{}", self.name)
    }
}

/// The validated desired state of one service: what scan hands to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    pub name: String,
    pub ensure: Ensure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Holo's protection of manual changes; services converge by default.
    pub protect: bool,
}

impl ServiceSpec {
    pub fn new(table: &ServiceTable, protect: Option<bool>) -> ServiceSpec {
        ServiceSpec {
            name: table.name.clone(),
            ensure: table.ensure,
            enable: table.enable,
            protect: protect.unwrap_or(false),
        }
    }
}

/// The characters a service name may have: CCM's set plus `@`, which
/// systemd instance units (`getty@tty1`) need. No shell ever sees the name.
fn allowed_in_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._+:~@-".contains(c)
}

/// systemd's longest unit name, in bytes.
pub const UNIT_NAME_MAX: usize = 255;

/// Names match `^[a-zA-Z0-9._+:~@-]+$`, of at most [`UNIT_NAME_MAX`]
/// bytes, and do not start with `-`, which systemctl would read as an
/// option.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("service name is empty: set name = \"UNIT\"".to_owned());
    }
    // systemd's own limit on a unit name, suffix included.
    if let Some(message) = holo_plugin::limits::over_limit("service name", name, UNIT_NAME_MAX) {
        return Err(message);
    }
    if let Some(bad) = name.chars().find(|&c| !allowed_in_name(c)) {
        return Err(format!(
            "service name contains dangerous characters: {name:?} has {bad:?}; use only letters, digits and . _ + : ~ @ -"
        ));
    }
    if name.starts_with('-') {
        return Err(format!(
            "service name {name:?} starts with '-', which systemctl would read as an option; use the unit's name"
        ));
    }
    Ok(())
}

fn service_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let name = String::deserialize(deserializer)?;
    validate_name(&name).map_err(de::Error::custom)?;
    Ok(name)
}

/// The unit types systemd knows; a name without one of these suffixes is a
/// `.service`.
const UNIT_SUFFIXES: &[&str] = &[
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
    "slice",
    "scope",
];

/// The full unit name: `web` is `web.service`, `web.socket` stays.
pub fn unit_name(name: &str) -> String {
    let has_suffix = name
        .rsplit_once('.')
        .is_some_and(|(stem, suffix)| !stem.is_empty() && UNIT_SUFFIXES.contains(&suffix));
    if has_suffix {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_allow_ccm_characters_and_the_at_sign() {
        for good in [
            "httpd",
            "nginx.service",
            "my-app_v2",
            "a+b:c~d",
            "getty@tty1",
        ] {
            assert_eq!(validate_name(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn names_reject_shell_metacharacters_whitespace_and_slashes() {
        for bad in ["app; rm -rf /", "a b", "a/b", "a|b", "$x", "a\nb"] {
            let err = validate_name(bad).expect_err(bad);
            assert!(
                err.starts_with("service name contains dangerous characters"),
                "{err}"
            );
        }
        assert!(validate_name("").unwrap_err().contains("empty"));
        assert!(validate_name("-h").unwrap_err().contains("option"));
    }

    #[test]
    fn ensure_suggests_the_closest_value() {
        assert_eq!(Ensure::parse("stopped"), Ok(Ensure::Stopped));
        let err = Ensure::parse("runing").unwrap_err();
        assert!(err.contains("did you mean \"running\"?"), "{err}");
        let err = Ensure::parse("absent").unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
        assert!(err.contains("use \"running\" or \"stopped\""), "{err}");
    }

    #[test]
    fn unit_names_get_service_unless_they_have_a_unit_suffix() {
        assert_eq!(unit_name("web"), "web.service");
        assert_eq!(unit_name("web.service"), "web.service");
        assert_eq!(unit_name("web.socket"), "web.socket");
        assert_eq!(unit_name("getty@tty1"), "getty@tty1.service");
        assert_eq!(unit_name("app.v2"), "app.v2.service");
        assert_eq!(unit_name(".timer"), ".timer.service");
    }
}
