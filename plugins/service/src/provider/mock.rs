//! The test-mode stand-in for systemctl. Its contract, which fixtures rely on:
//!
//! - A unit exists when its unit file (or, for an instance `a@b.service`,
//!   its template `a@.service`) is in `$HOLO_ROOT_DIR/{etc,run,usr/lib,lib}/systemd/system/`.
//!   `NAME` means `NAME.service` when it has no unit suffix. Any other unit
//!   is `not-found`.
//! - Unit state is `$HOLO_ROOT_DIR/var/lib/holo-mock/systemd/UNIT.toml`, with
//!   `active` and `enabled` holding what `is-active` and `is-enabled` would
//!   print; a missing file (or key) means `inactive` and `disabled`.
//! - Every action prints `MOCK: systemctl VERB --system NAME` and updates
//!   the file, failing as systemctl does on a masked unit. `daemon-reload`
//!   has nothing to reload here and prints nothing, so that batched and
//!   unbatched runs print the same.

use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result, atomic, command};
use serde::{Deserialize, Serialize};

use super::{
    Active, Provider, Status, UnitFileState, Verb, not_found, systemctl_argv, unknown_output,
};
use crate::model::unit_name;

/// Where unit files are looked up, below the root.
pub const UNIT_DIRS: [&str; 4] = [
    "etc/systemd/system",
    "run/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
];

/// Where unit state is kept, below the root.
pub const STATE_DIR: &str = "var/lib/holo-mock/systemd";

/// One `UNIT.toml` state file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    active: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    enabled: Option<String>,
}

impl UnitState {
    fn active(&self) -> &str {
        self.active.as_deref().unwrap_or("inactive")
    }

    fn enabled(&self) -> &str {
        self.enabled.as_deref().unwrap_or("disabled")
    }
}

/// The mock below one root.
pub struct Mock {
    root: PathBuf,
}

impl Mock {
    pub fn new(root: &Path) -> Mock {
        Mock {
            root: root.to_path_buf(),
        }
    }

    fn unit_exists(&self, unit: &str) -> bool {
        let template = unit.split_once('@').and_then(|(prefix, rest)| {
            rest.rsplit_once('.')
                .map(|(_, suffix)| format!("{prefix}@.{suffix}"))
        });
        let Ok(fs) = self.root_fs() else {
            return false;
        };
        UNIT_DIRS.iter().any(|dir| {
            let dir = self.root.join(dir);
            fs.is_file(&dir.join(unit))
                || template.as_ref().is_some_and(|t| fs.is_file(&dir.join(t)))
        })
    }

    /// The root, with every path resolved inside it (symlinks included).
    fn root_fs(&self) -> Result<RootFs> {
        RootFs::contained_in(&self.root)
            .map_err(|err| Error::io("open the root directory", &self.root, &err))
    }

    fn state_path(&self, unit: &str) -> PathBuf {
        self.root.join(STATE_DIR).join(format!("{unit}.toml"))
    }

    fn read_state(&self, unit: &str) -> Result<UnitState> {
        let path = self.state_path(unit);
        let text = match self.root_fs()?.read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(UnitState::default());
            }
            Err(err) => return Err(Error::io("read mock unit state", &path, &err)),
        };
        toml::from_str(&text).map_err(|err| {
            Error::new(format!(
                "{}: invalid mock unit state: {}; write active = \"...\" and enabled = \"...\"",
                path.display(),
                err.message()
            ))
        })
    }

    fn write_state(&self, unit: &str, state: &UnitState) -> Result<()> {
        // Both keys, so the file reads as what systemctl would print.
        let state = UnitState {
            active: Some(state.active().to_owned()),
            enabled: Some(state.enabled().to_owned()),
        };
        let path = self.state_path(unit);
        let dir = self.root.join(STATE_DIR);
        let fs = self.root_fs()?;
        fs.create_dir_all(&dir)
            .map_err(|err| Error::io("create", &dir, &err))?;
        let text = toml::to_string(&state)
            .map_err(|err| Error::new(format!("cannot serialise {}: {err}", path.display())))?;
        atomic::write(
            &fs,
            &path,
            text.as_bytes(),
            &atomic::WriteOptions::default(),
        )
    }
}

/// What systemctl says and how it exits when a change cannot be made.
fn refuse(argv: &[&str], message: String) -> Result<()> {
    eprintln!("{message}");
    Err(Error::new(format!(
        "{} failed with exit code 1",
        command::command_line(argv)
    )))
}

impl Provider for Mock {
    fn status(&mut self, name: &str) -> Result<Status> {
        let unit = unit_name(name);
        if !self.unit_exists(&unit) {
            return Err(not_found(name, "not-found"));
        }
        let state = self.read_state(&unit)?;
        let active = Active::parse(state.active())
            .ok_or_else(|| unknown_output("is-active", name, state.active(), ""))?;
        let enabled = match UnitFileState::parse(state.enabled()) {
            Some(UnitFileState::Enabled(_)) => true,
            Some(UnitFileState::Disabled(_)) => false,
            Some(UnitFileState::NotFound) => return Err(not_found(name, "not-found")),
            None => return Err(unknown_output("is-enabled", name, state.enabled(), "")),
        };
        Ok(Status {
            active,
            enabled,
            unit_file_state: state.enabled().to_owned(),
        })
    }

    fn change(&mut self, verb: Verb, name: &str) -> Result<()> {
        let argv = systemctl_argv(verb.as_str(), name);
        command::mock(&argv);
        let unit = unit_name(name);
        let mut state = self.read_state(&unit)?;
        let masked = state.enabled().starts_with("masked");
        let no_install_section = matches!(
            state.enabled(),
            "static" | "indirect" | "generated" | "transient" | "alias"
        );
        match verb {
            Verb::Start | Verb::Restart if masked => {
                let verb = verb.as_str();
                return refuse(
                    &argv,
                    format!("Failed to {verb} {unit}: Unit {unit} is masked."),
                );
            }
            Verb::Enable if masked => {
                return refuse(
                    &argv,
                    format!("Failed to enable unit: Unit file {unit} is masked."),
                );
            }
            Verb::Start | Verb::Restart => state.active = Some("active".to_owned()),
            Verb::Stop => state.active = Some("inactive".to_owned()),
            Verb::Enable | Verb::Disable if no_install_section => {
                eprintln!(
                    "The unit files have no installation config (WantedBy=, RequiredBy=, Also=, Alias= settings in the [Install] section, and DefaultInstance= for template units). This means they are not meant to be enabled or disabled using systemctl."
                );
                return Ok(());
            }
            Verb::Enable => state.enabled = Some("enabled".to_owned()),
            Verb::Disable => state.enabled = Some("disabled".to_owned()),
        }
        self.write_state(&unit, &state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with_unit(file: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("usr/lib/systemd/system");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(file), "[Service]\n").expect("unit file");
        root
    }

    fn write_state(root: &Path, text: &str) {
        let dir = root.join(STATE_DIR);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("web.service.toml"), text).expect("state");
    }

    #[test]
    fn missing_state_is_inactive_and_disabled() {
        let root = root_with_unit("web.service");
        let status = Mock::new(root.path()).status("web").expect("status");
        assert_eq!(status.active, Active::Inactive);
        assert!(!status.enabled);
        assert_eq!(status.unit_file_state, "disabled");
    }

    #[test]
    fn actions_update_the_state_file() {
        let root = root_with_unit("web.service");
        let mut mock = Mock::new(root.path());
        mock.change(Verb::Start, "web").expect("start");
        mock.change(Verb::Enable, "web").expect("enable");
        let text = std::fs::read_to_string(root.path().join(STATE_DIR).join("web.service.toml"))
            .expect("state file");
        assert_eq!(text, "active = \"active\"\nenabled = \"enabled\"\n");
        mock.change(Verb::Stop, "web.service").expect("stop");
        let status = mock.status("web").expect("status");
        assert_eq!(status.active, Active::Inactive);
        assert!(status.enabled);
    }

    #[test]
    fn unknown_units_are_not_found_and_templates_make_instances_exist() {
        let root = root_with_unit("getty@.service");
        let mut mock = Mock::new(root.path());
        assert!(mock.status("getty@tty1").is_ok());
        let err = mock.status("nginx").expect_err("no unit file");
        assert!(
            err.message().starts_with("service not found: nginx"),
            "{err}"
        );
    }

    #[test]
    fn masked_units_refuse_to_start_and_static_ones_keep_their_state() {
        let root = root_with_unit("web.service");
        write_state(root.path(), "enabled = \"masked\"\n");
        let mut mock = Mock::new(root.path());
        assert!(mock.change(Verb::Start, "web").is_err());
        assert!(mock.change(Verb::Enable, "web").is_err());
        write_state(root.path(), "enabled = \"static\"\n");
        mock.change(Verb::Disable, "web")
            .expect("disable is a no-op");
        assert_eq!(
            mock.status("web").expect("status").unit_file_state,
            "static"
        );
    }

    #[test]
    fn unknown_state_values_are_quoted() {
        let root = root_with_unit("web.service");
        write_state(root.path(), "active = \"reloading\"\n");
        let err = Mock::new(root.path()).status("web").expect_err("unknown");
        assert!(err.message().contains("\"reloading\""), "{err}");
    }
}
