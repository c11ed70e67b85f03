//! The host settings every runtime operation needs: where state lives,
//! where firmware is looked up, and the environment's overrides.

use std::path::PathBuf;

use crate::error::Error;
use crate::state::Layout;
use crate::state_dir::state_root;

/// The host facts every operation needs.
pub struct HostSettings {
    pub layout: Layout,
    /// `/`, or `HOLO_ROOT_DIR` in test mode: where firmware is looked up.
    pub system_root: PathBuf,
    /// `HOLOS_ACCEL`.
    pub forced_accel: Option<String>,
    /// `HOLOS_HEALTH_BYPASS=1`: healthchecks count as passed.
    pub health_bypass: bool,
}

impl HostSettings {
    /// The settings from the environment (read with the `_os` variants).
    pub fn from_env() -> Result<HostSettings, Error> {
        let root = state_root().map_err(|e| Error::State(e.to_string()))?;
        let system_root = std::env::var_os("HOLO_ROOT_DIR")
            .filter(|r| !r.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let forced_accel = std::env::var_os("HOLOS_ACCEL")
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned());
        let health_bypass = std::env::var_os("HOLOS_HEALTH_BYPASS").is_some_and(|v| v == "1");
        Ok(HostSettings {
            layout: Layout::new(root),
            system_root,
            forced_accel,
            health_bypass,
        })
    }
}
