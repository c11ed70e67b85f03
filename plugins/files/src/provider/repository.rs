//! Walking the two trees scan reads: the repository (below each
//! disambiguator of `$HOLO_RESOURCE_DIR`) and the stored target bases.

use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result};

use crate::model::{RepoEntry, target_of_entry};

/// Every repository entry with its target. Files directly in the resource
/// directory belong to no disambiguator and are ignored, as are
/// directories themselves and special files.
pub fn entries(resource_dir: &Path) -> Result<Vec<(String, RepoEntry)>> {
    let mut found = Vec::new();
    for (name, path) in sorted_dir(resource_dir)? {
        let Some(disambiguator) = name.to_str() else {
            continue;
        };
        let meta =
            std::fs::symlink_metadata(&path).map_err(|err| Error::io("inspect", &path, &err))?;
        if !meta.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        walk(&path, Path::new(""), &mut files)?;
        for relative in files {
            let Some((target, kind)) = target_of_entry(&relative) else {
                continue;
            };
            let entry = RepoEntry {
                disambiguator: disambiguator.to_string(),
                path: path.join(&relative),
                kind,
            };
            found.push((target, entry));
        }
    }
    Ok(found)
}

fn sorted_dir(dir: &Path) -> Result<Vec<(std::ffi::OsString, PathBuf)>> {
    let reader = match std::fs::read_dir(dir) {
        Ok(reader) => reader,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("read directory", dir, &err)),
    };
    let mut names = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|err| Error::io("read directory", dir, &err))?;
        names.push((entry.file_name(), entry.path()));
    }
    names.sort();
    Ok(names)
}

/// Files and symlinks below `dir` (not following symlinks), as paths
/// relative to the disambiguator.
fn walk(dir: &Path, relative: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let reader = std::fs::read_dir(dir).map_err(|err| Error::io("read directory", dir, &err))?;
    for entry in reader {
        let entry = entry.map_err(|err| Error::io("read directory", dir, &err))?;
        let kind = entry
            .file_type()
            .map_err(|err| Error::io("inspect", &entry.path(), &err))?;
        let below = relative.join(entry.file_name());
        if kind.is_dir() {
            walk(&entry.path(), &below, found)?;
        } else if kind.is_file() || kind.is_symlink() {
            found.push(below);
        }
    }
    Ok(())
}

/// The targets of the stored bases below `base_dir` (inside the root):
/// `base_dir/etc/foo.conf` is the base of `/etc/foo.conf`.
pub fn stored_bases(fs: &RootFs, base_dir: &Path) -> Result<Vec<String>> {
    let mut targets = Vec::new();
    walk_bases(fs, base_dir, "", &mut targets)?;
    Ok(targets)
}

fn walk_bases(fs: &RootFs, dir: &Path, prefix: &str, targets: &mut Vec<String>) -> Result<()> {
    let names = match fs.read_dir_names(dir) {
        Ok(names) => names,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io("read directory", dir, &err)),
    };
    for name in names {
        let path = dir.join(&name);
        let Some(name) = name.to_str() else {
            continue;
        };
        // A write killed before its rename leaves its temp file here.
        if name.starts_with(holo_plugin::atomic::TEMP_PREFIX) {
            continue;
        }
        let target = format!("{prefix}/{name}");
        let meta = fs
            .symlink_metadata(&path)
            .map_err(|err| Error::io("inspect", &path, &err))?;
        if meta.is_dir() {
            walk_bases(fs, &path, &target, targets)?;
        } else if meta.is_file() || meta.file_type().is_symlink() {
            targets.push(target);
        }
    }
    Ok(())
}
