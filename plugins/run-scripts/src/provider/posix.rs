//! Runs a script directly (no shell), its stdout and stderr going where
//! the plugin's go, so the driver shows them interleaved as they come.

use std::path::Path;

use holo_plugin::process::{Command, Status};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result};

/// Runs the script at `path`; in test mode a symlink resolves inside the
/// root.
pub fn run_script(fs: &RootFs, path: &Path) -> Result<Status> {
    let real = fs
        .real_path(path)
        .map_err(|err| Error::new(format!("cannot resolve {}: {err}", path.display())))?;
    Command::new(real).run_forwarded()
}
