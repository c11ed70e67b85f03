//! Real host paths of places inside the root. The download and the
//! extraction work with plain paths (std::fs, tempfile), so in test mode
//! each path they get is first resolved inside `HOLO_ROOT_DIR`, symlinks
//! as if the root were `/`, to the real path it names there.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};

/// The real path of the existing `path` (a host path below the root),
/// every symlink resolved inside the root; outside test mode `path` itself.
pub fn real_path(env: &Env, fs: &RootFs, path: &Path) -> Result<PathBuf> {
    if !env.test_mode {
        return Ok(path.to_path_buf());
    }
    let opened = fs.open(path).map_err(|err| Error::io("open", path, &err))?;
    // The kernel names what the descriptor refers to; no path is resolved
    // again on the way.
    let link = PathBuf::from(format!("/proc/self/fd/{}", opened.as_raw_fd()));
    let real = std::fs::read_link(&link).map_err(|err| Error::io("resolve", path, &err))?;
    let root =
        std::fs::canonicalize(&env.root).map_err(|err| Error::io("resolve", &env.root, &err))?;
    if !real.starts_with(&root) {
        return Err(Error::new(format!(
            "{} resolves to {}, outside HOLO_ROOT_DIR {}; remove the symlink that leads there",
            path.display(),
            real.display(),
            env.root.display()
        )));
    }
    Ok(real)
}

/// The real path of `path`'s directory joined with its final name, which
/// stays unresolved (a symlink there is replaced, never followed).
pub fn real_entry(env: &Env, fs: &RootFs, path: &Path) -> Result<PathBuf> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok(real_path(env, fs, parent)?.join(name)),
        _ => Ok(path.to_path_buf()),
    }
}
