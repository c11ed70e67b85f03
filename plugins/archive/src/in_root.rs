//! Real host paths of places inside the root. The download and the
//! extraction work with plain paths (std::fs, tempfile), so in test mode
//! each path they get is first resolved inside `HOLO_ROOT_DIR`, symlinks
//! as if the root were `/`, to the real path it names there.

use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};

/// The real path of the existing `path` (a host path below the root),
/// every symlink resolved inside the root; outside test mode `path` itself.
pub fn real_path(env: &Env, fs: &RootFs, path: &Path) -> Result<PathBuf> {
    if !env.test_mode {
        return Ok(path.to_path_buf());
    }
    fs.real_path(path)
        .map_err(|err| Error::io("resolve", path, &err))
}

/// The real path of `path`'s directory joined with its final name, which
/// stays unresolved (a symlink there is replaced, never followed).
pub fn real_entry(env: &Env, fs: &RootFs, path: &Path) -> Result<PathBuf> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok(real_path(env, fs, parent)?.join(name)),
        _ => Ok(path.to_path_buf()),
    }
}
