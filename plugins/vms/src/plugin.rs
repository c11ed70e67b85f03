//! The holo plugin `vms`, on the SDK: `info` and `holo-vms holos ...`.
//!
//! Entities (`vm:PROJECT/SERVICE`) come with the holo-vms plugin issue; until
//! then scan reports none, so that a driver that enables the plugin sees an
//! empty, working plugin instead of a failure.

use std::process::ExitCode;

use holo_plugin::{EntityCtx, Env, Error, Extension, Mode, Outcome, Plugin, Result, Scanned};
use serde::{Deserialize, Serialize};

/// The plugin. `holo_plugin::run(VmsPlugin)` serves the protocol.
pub struct VmsPlugin;

/// A service's desired state as scan will cache it (none are scanned yet).
#[derive(Debug, Serialize, Deserialize)]
pub struct VmSpec {
    /// The hash of the service's resolved specification.
    pub spec_hash: String,
}

impl Plugin for VmsPlugin {
    const ID: &'static str = "vms";
    /// Nothing beyond the base protocol until the operations exist.
    const EXTENSIONS: &'static [Extension] = &[];
    type Spec = VmSpec;

    fn scan(&self, _env: &Env) -> Result<Vec<Scanned<VmSpec>>> {
        Ok(Vec::new())
    }

    fn apply(&self, _env: &Env, entity: &EntityCtx<VmSpec>, _mode: Mode) -> Result<Outcome> {
        // Unreachable through the driver (scan reports nothing); by hand the
        // SDK already refuses ids that scan did not report.
        Err(Error::new(format!(
            "cannot apply {}: holo-vms manages no entities yet",
            entity.id
        )))
    }

    fn subcommand(&self, _env: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
        (name == "holos").then(|| Ok(crate::cli::run_holos(args.iter().map(Into::into))))
    }
}
