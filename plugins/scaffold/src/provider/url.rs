//! URL sources: the archive is downloaded through the SDK's download (its
//! SHA-256 verified while streaming, when the table gives one), extracted
//! with the SDK's safe extraction (the same as holo-archive's). With a
//! checksum the tree is kept in `/var/cache/holo/scaffold/SHA256/`, so that
//! it is fetched once per checksum; without one nothing says the archive
//! is the same as last time, so it is kept in the run's cache directory,
//! by the URL's SHA-256: fetched once per run, shared by the run's scan,
//! diff and apply. A directory appears there only complete: it is staged
//! beside it and renamed into place.

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
    let (real_cache, logical_cache, key) = match &source.sha256 {
        Some(sha256) => (
            checksum_cache(env)?,
            PathBuf::from(URL_CACHE),
            sha256.clone(),
        ),
        None => {
            let cache = env.cache_dir.join("url-sources");
            std::fs::create_dir_all(&cache)
                .map_err(|err| format!("cannot create {}: {err}", cache.display()))?;
            let key = holo_plugin::download::url_sha256(&source.url);
            (cache.clone(), cache, key)
        }
    };
    fetch_into(&real_cache, &logical_cache, &key, source)
}

/// The real path of [`URL_CACHE`], created.
fn checksum_cache(env: &Env) -> Result<PathBuf, String> {
    let fs = env.root_fs().map_err(|err| err.to_string())?;
    let cache = env.root_join(URL_CACHE);
    fs.create_dir_all(&cache)
        .map_err(|err| format!("cannot create {URL_CACHE}: {err}"))?;
    fs.real_path(&cache)
        .map_err(|err| format!("cannot resolve {URL_CACHE}: {err}"))
}

/// The tree `key` in `real_cache` (shown as `logical_cache`), fetched and
/// extracted unless it is there.
fn fetch_into(
    real_cache: &Path,
    logical_cache: &Path,
    key: &str,
    source: &UrlSource,
) -> Result<PathBuf, String> {
    let shown_cache = logical_cache.display();
    let tree = real_cache.join(key);
    if tree.is_dir() {
        return Ok(tree);
    }
    // One fetch at a time: `holo scan` and `holo diff` take no run lock, and
    // a staging directory is stale only when no process holds this lock.
    let lock = std::fs::File::open(real_cache)
        .and_then(|dir| dir.lock().map(|()| dir))
        .map_err(|err| format!("cannot lock {shown_cache}: {err}"))?;
    if tree.is_dir() {
        return Ok(tree);
    }
    let stale_prefix = format!(".{key}-");
    remove_stale(real_cache, &stale_prefix);
    let staging = tempfile::Builder::new()
        .prefix(&stale_prefix)
        .tempdir_in(real_cache)
        .map_err(|err| format!("cannot create a staging directory in {shown_cache}: {err}"))?;
    let archive = staging
        .path()
        .join(format!("archive{}", source.format.name()));
    let mut download = Download::new(&source.url, &archive)
        .map_err(|err| err.to_string())?
        .progress(false);
    if let Some(sha256) = &source.sha256 {
        download = download.sha256(sha256);
    }
    download.fetch().map_err(|err| err.to_string())?;
    let extracted = staging.path().join("tree");
    let logical = logical_cache.join(key);
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
