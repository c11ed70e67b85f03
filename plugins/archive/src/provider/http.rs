//! The HTTP provider: the archive's status on disk (CCM's `Status()`)
//! and the download through the SDK's [`Download`], which verifies the
//! checksum while streaming and renames atomically.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use holo_plugin::download::{self, Download, Downloaded};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};

use crate::apply::Status;
use crate::in_root;
use crate::model::{ArchiveSpec, Credentials};

/// Idle timeout of a download: no byte for this long fails it.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads the archive file (existence, checksum, owner, group) and the
/// `creates` marker. Paths are below the root in test mode.
pub fn status(env: &Env, spec: &ArchiveSpec) -> Result<Status> {
    let fs = env.root_fs()?;
    let archive = env.root_join(&spec.name);
    let creates_exists = match &spec.creates {
        Some(creates) => exists(&fs, &env.root_join(creates))?,
        None => false,
    };
    let meta = match fs.metadata(&archive) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Status {
                creates_exists,
                ..Status::default()
            });
        }
        Err(err) => return Err(Error::io("read", &archive, &err)),
    };
    if !meta.is_file() {
        return Err(Error::new(format!(
            "{} exists but is not a regular file; remove it or choose another name",
            spec.name
        )));
    }
    Ok(Status {
        archive_exists: true,
        checksum: Some(download::sha256_file(&in_root::real_path(
            env, &fs, &archive,
        )?)?),
        uid: Some(meta.uid()),
        gid: Some(meta.gid()),
        creates_exists,
        extraction_unfinished: false,
    })
}

fn exists(fs: &RootFs, path: &Path) -> Result<bool> {
    match fs.metadata(path) {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(Error::io("check", path, &err)),
    }
}

/// Downloads the archive to `target` (its real path), owned by
/// `uid`:`gid`. Messages never carry the credentials.
pub fn fetch(
    target: &Path,
    spec: &ArchiveSpec,
    credentials: &Credentials,
    uid: u32,
    gid: u32,
) -> Result<Downloaded> {
    let mut request = Download::new(&credentials.url, target)?
        .timeout(spec.timeout())
        .idle_timeout(IDLE_TIMEOUT.min(spec.timeout()))
        .owner(Some(uid), Some(gid));
    if let Some((user, password)) = &credentials.basic_auth {
        request = request.basic_auth(user, password);
    }
    for (name, value) in &credentials.headers {
        request = request.header(name, value);
    }
    if let Some(checksum) = &spec.checksum {
        request = request.sha256(checksum);
    }
    request.fetch()
}
