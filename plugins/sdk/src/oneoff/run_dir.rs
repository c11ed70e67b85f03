//! The private run directory of a one-off, as a driver's run directory:
//! the generated resources, the scan cache and an empty state directory,
//! with the `HOLO_*` variables that name them. It may hold secrets (the
//! flags), so it is owner-only (0700, files 0600) and lives below holo's
//! cache directory in the root, `ROOT/var/cache/holo/ensure/`, never in a
//! shared temporary directory; it is removed when the run ends, and a run
//! removes what a killed one left there (it holds the run lock, so no
//! other one-off is using it).

use super::messages::Messages;
use super::request::{EnsureRequest, FLAGS_FILE, ResourceEntry};
use crate::env::Env;
use crate::error::{Error, Result};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where the run directories are, below the root.
const RUN_DIRS: &str = "var/cache/holo/ensure";

/// The `HOLO_*` variables a driver would give the plugin, for a private run
/// directory.
pub(super) struct RunDir {
    /// The directory, removed on drop.
    base: PathBuf,
    /// The directories above it that this run made, innermost first,
    /// removed on drop when empty: a run leaves no trace.
    made: Vec<PathBuf>,
    resources: PathBuf,
    cache: PathBuf,
    /// An empty state directory: the first scan, which only finds the
    /// entity id, sees no records and so describes no orphans.
    pub(super) no_state: PathBuf,
    /// `HOLO_ROOT_DIR` as the driver gives it to plugins, in test mode.
    root: Option<OsString>,
    /// How messages name what the user gave.
    pub(super) messages: Messages,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
        for dir in &self.made {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// A directory only its owner can enter.
fn private_dir(path: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|err| Error::io("create", path, &err))
}

/// `ROOT/var/cache/holo/ensure` on the host, owner-only, emptied of the
/// run directories of killed one-offs. Called under the run lock.
/// Also gives the directories it made, innermost first.
fn run_dirs(env: &Env) -> Result<(PathBuf, Vec<PathBuf>)> {
    let dirs = env.root_join(RUN_DIRS);
    let fs = env.root_fs()?;
    let missing = dirs
        .ancestors()
        .take_while(|dir| *dir != env.root && !fs.is_dir(dir))
        .count();
    if let Some(parent) = dirs.parent() {
        fs.create_dir_all(parent)
            .map_err(|err| Error::io("create", parent, &err))?;
    }
    let real = fs
        .real_path(dirs.parent().unwrap_or(Path::new("/")))
        .map_err(|err| Error::io("resolve", &dirs, &err))?
        .join("ensure");
    match std::fs::symlink_metadata(&real) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(Error::new(format!(
                "{} is not a directory; remove it, holo's one-off runs keep their private run directories there",
                real.display()
            )));
        }
        Err(_) => private_dir(&real)?,
    }
    std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .map_err(|err| Error::io("protect", &real, &err))?;
    if let Ok(entries) = std::fs::read_dir(&real) {
        for entry in entries.flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let made = real
        .ancestors()
        .take(missing)
        .map(Path::to_path_buf)
        .collect();
    Ok((real, made))
}

/// Writes one entry of the resources, owner-only.
fn write_entry(resources: &Path, entry: &ResourceEntry) -> Result<()> {
    let (ResourceEntry::File { path, .. } | ResourceEntry::Link { path, .. }) = entry;
    let at = resources.join(path);
    let cannot = |err: std::io::Error| Error::new(format!("cannot write {}: {err}", at.display()));
    if let Some(parent) = at.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(cannot)?;
    }
    match entry {
        ResourceEntry::File { content, .. } => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&at)
            .and_then(|mut file| file.write_all(content.as_bytes())),
        ResourceEntry::Link { target, .. } => std::os::unix::fs::symlink(target, &at),
    }
    .map_err(cannot)
}

impl RunDir {
    /// Makes the run directory of this process with `request`'s resources.
    pub(super) fn create(env: &Env, request: &EnsureRequest) -> Result<RunDir> {
        let entries = &request.resources;
        let (dirs, made) = run_dirs(env)?;
        let base = dirs.join(format!("{}.{}", env.plugin_id, std::process::id()));
        private_dir(&base)?;
        let run_dir = RunDir {
            made,
            resources: base.join("resources"),
            cache: base.join("cache"),
            no_state: base.join("no-state"),
            base,
            root: env.test_mode.then(|| driver_root(&env.root)),
            messages: Messages {
                resources: PathBuf::new(),
                shown: entries
                    .iter()
                    .filter_map(|entry| match entry {
                        ResourceEntry::Link { target, shown, .. } => {
                            Some((target.display().to_string(), shown.clone()))
                        }
                        ResourceEntry::File { .. } => None,
                    })
                    .collect(),
                flags_document: entries.iter().find_map(|entry| match entry {
                    ResourceEntry::File { path, content } if path == Path::new(FLAGS_FILE) => {
                        Some(content.clone())
                    }
                    _ => None,
                }),
                flags_given: request.flags_given.clone(),
            },
        };
        for path in [&run_dir.resources, &run_dir.cache, &run_dir.no_state] {
            private_dir(path)?;
        }
        for entry in entries {
            write_entry(&run_dir.resources, entry)?;
        }
        let mut run_dir = run_dir;
        run_dir.messages.resources = run_dir.resources.clone();
        Ok(run_dir)
    }

    pub(super) fn variables(&self, state_dir: &Path) -> Vec<(&'static str, OsString)> {
        let root = self.root.iter().map(|root| ("HOLO_ROOT_DIR", root.clone()));
        root.chain([
            (
                "HOLO_API_VERSION",
                OsString::from(crate::env::API_VERSION.to_string()),
            ),
            ("HOLO_CACHE_DIR", self.cache.clone().into_os_string()),
            ("HOLO_RESOURCE_DIR", self.resources.clone().into_os_string()),
            (
                "HOLO_RESOURCE_ORIGIN",
                self.resources.clone().into_os_string(),
            ),
            ("HOLO_STATE_DIR", state_dir.as_os_str().to_os_string()),
            ("HOLO_EXTENSIONS", OsString::new()),
            ("HOLO_REFRESH", OsString::new()),
        ])
        .collect()
    }

    pub(super) fn env(&self, plugin_id: &str, state_dir: &Path) -> Result<Env> {
        let variables = self.variables(state_dir);
        Env::from_lookup(plugin_id, |key| {
            match variables.iter().find(|(name, _)| *name == key) {
                Some((_, value)) => Some(value.clone()),
                None => std::env::var_os(key),
            }
        })
    }
}

/// The root as the driver passes it to plugins (Holo 3's `normalizePath`):
/// without a leading `./` and a trailing `/`, so that the paths a plugin
/// shows are those of `holo apply`.
fn driver_root(root: &Path) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    let bytes = root.as_os_str().as_bytes();
    let bytes = bytes.strip_prefix(b"./").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"/").unwrap_or(bytes);
    if bytes.is_empty() {
        OsString::from(".")
    } else {
        std::ffi::OsStr::from_bytes(bytes).to_os_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_given_as_the_driver_gives_it() {
        assert_eq!(driver_root(Path::new("./target/")), "target");
        assert_eq!(driver_root(Path::new("/tmp/root")), "/tmp/root");
        assert_eq!(driver_root(Path::new("./")), ".");
    }
}
