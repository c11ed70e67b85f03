//! URL sources: the archive is downloaded through the SDK's download (its
//! SHA-256 verified while streaming), extracted with the SDK's safe
//! extraction (the same as holo-archive's), and kept extracted in
//! `/var/cache/holo/scaffold/SHA256/`, so that it is fetched once per
//! checksum. A directory appears there only complete: it is staged beside
//! it and renamed into place.

use std::path::{Path, PathBuf};

use holo_plugin::Env;
use holo_plugin::download::Download;
use holo_plugin::extract::{self, Limits, Options};

use crate::model::{URL_CACHE, UrlSource};

/// Far above any template tree, far below what fills a disk by surprise.
pub const MAX_TREE_BYTES: u64 = 1 << 30;
pub const MAX_TREE_ENTRIES: u64 = 100_000;

/// The extracted template tree of `source` (its real path), fetched and
/// extracted first unless the cache holds it.
pub fn template_tree(env: &Env, source: &UrlSource) -> Result<PathBuf, String> {
    let fs = env.root_fs().map_err(|err| err.to_string())?;
    let cache = env.root_join(URL_CACHE);
    fs.create_dir_all(&cache)
        .map_err(|err| format!("cannot create {URL_CACHE}: {err}"))?;
    let real_cache = fs
        .real_path(&cache)
        .map_err(|err| format!("cannot resolve {URL_CACHE}: {err}"))?;
    let tree = real_cache.join(&source.sha256);
    if tree.is_dir() {
        return Ok(tree);
    }
    // One fetch at a time: `holo scan` and `holo diff` take no run lock, and
    // a staging directory is stale only when no process holds this lock.
    let lock = std::fs::File::open(&real_cache)
        .and_then(|dir| dir.lock().map(|()| dir))
        .map_err(|err| format!("cannot lock {URL_CACHE}: {err}"))?;
    if tree.is_dir() {
        return Ok(tree);
    }
    let stale_prefix = format!(".{}-", source.sha256);
    remove_stale(&real_cache, &stale_prefix);
    let staging = tempfile::Builder::new()
        .prefix(&stale_prefix)
        .tempdir_in(&real_cache)
        .map_err(|err| format!("cannot create a staging directory in {URL_CACHE}: {err}"))?;
    let archive = staging
        .path()
        .join(format!("archive{}", source.format.name()));
    let download = Download::new(&source.url, &archive)
        .map_err(|err| err.to_string())?
        .sha256(&source.sha256)
        .progress(false);
    download.fetch().map_err(|err| err.to_string())?;
    let extracted = staging.path().join("tree");
    let logical = Path::new(URL_CACHE).join(&source.sha256);
    let options = Options {
        keep_setuid: false,
        limits: Limits {
            max_bytes: MAX_TREE_BYTES,
            max_entries: MAX_TREE_ENTRIES,
        },
        // The tree is extracted into the cache; its limits are fixed.
        wording: extract::Wording {
            parent: "the template tree",
            raise_limits: None,
        },
    };
    extract::extract(&archive, source.format, &extracted, &logical, options)
        .map_err(|message| format!("cannot extract {}: {message}", download.shown_url()))?;
    if let Err(err) = std::fs::rename(&extracted, &tree)
        && !tree.is_dir()
    {
        return Err(format!(
            "cannot move the template tree into {}: {err}",
            logical.display()
        ));
    }
    drop(lock);
    Ok(tree)
}

/// Staging directories a killed process left behind (the caller holds the
/// cache's lock, so no live fetch owns one).
fn remove_stale(cache: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(prefix));
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
