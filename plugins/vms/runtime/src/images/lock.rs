//! `holos.images.lock`: the base images a project was tested with, pinned
//! by SHA-256, beside the compose file.
//!
//! ```toml
//! version = 1
//!
//! [images."ubuntu:noble"]
//! sha256 = "…"
//! url = "https://cloud-images.ubuntu.com/…"   # aliases only, for readers
//!
//! [images."./images/db.qcow2"]
//! sha256 = "…"
//! ```
//!
//! Keys are `alias:tag` (the default tag spelled out) or a local image path
//! relative to the project directory. `holos lock` writes the file; `up`
//! refuses an image that is not in it or does not match it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Error;
use serde::{Deserialize, Serialize};

/// The file name, beside the compose file.
pub const FILE_NAME: &str = "holos.images.lock";
const VERSION: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    #[serde(default)]
    pub images: BTreeMap<String, LockEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub sha256: String,
    /// Where an alias image comes from; informational.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

pub fn path(project_dir: &Path) -> PathBuf {
    project_dir.join(FILE_NAME)
}

/// The refusal of an image that the project's lock file does not pin.
pub fn not_pinned(service: &str, key: &str, project_dir: &Path) -> String {
    format!(
        "service {service}: image {key} is not pinned in {}; run `holos lock` to pin the project's images",
        path(project_dir).display()
    )
}

/// The project's lock file, if it has one. Errors name the file and line.
pub fn load(project_dir: &Path) -> Result<Option<LockFile>, Error> {
    let path = path(project_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Image(format!("cannot read {}: {e}", path.display()))),
    };
    parse(&text)
        .map(Some)
        .map_err(|(line, message)| Error::Image(format!("{}:{line}: {message}", path.display())))
}

/// Parses lock file text; errors carry a 1-based line.
pub fn parse(text: &str) -> Result<LockFile, (usize, String)> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let lock: LockFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(span.start));
        (
            line,
            format!(
                "{}; fix the file or write it again with `holos lock`",
                e.message()
            ),
        )
    })?;
    if lock.version != VERSION {
        return Err((
            1,
            format!(
                "version {} is not supported (this holos writes version {VERSION}); write the file again with `holos lock`",
                lock.version
            ),
        ));
    }
    for (key, entry) in &lock.images {
        if entry.sha256.len() != 64 || !entry.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            let needle = format!("\"{key}\"");
            let line = text.find(&needle).map_or(1, line_of);
            return Err((
                line,
                format!(
                    "images.\"{key}\".sha256 must be 64 hex digits; write the file again with `holos lock`"
                ),
            ));
        }
    }
    Ok(lock)
}

/// Writes the lock file atomically, with a header saying what it is.
pub fn write(project_dir: &Path, project: &str, lock: &LockFile) -> Result<PathBuf, Error> {
    let path = path(project_dir);
    let mut lock = lock.clone();
    lock.version = VERSION;
    for entry in lock.images.values_mut() {
        entry.sha256 = entry.sha256.to_ascii_lowercase();
    }
    let body = toml::to_string_pretty(&lock).map_err(|e| Error::Image(e.to_string()))?;
    let text = format!(
        "# Base images of project {project}, pinned by `holos lock`.\n# `holos up` refuses an image that is not listed here or does not match.\n# Review changes to this file like code; see holos(1), IMAGES.\n\n{body}"
    );
    holo_plugin::atomic::write(
        &holo_plugin::root_fs::RootFs::unconfined(),
        &path,
        text.as_bytes(),
        &holo_plugin::atomic::WriteOptions::mode(0o644),
    )
    .map_err(|e| Error::Image(e.to_string()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = LockFile::default();
        lock.images.insert(
            "ubuntu:noble".into(),
            LockEntry {
                sha256: "A".repeat(64),
                url: Some("https://h/x.img".into()),
            },
        );
        lock.images.insert(
            "./db.qcow2".into(),
            LockEntry {
                sha256: "b".repeat(64),
                url: None,
            },
        );
        let written = write(dir.path(), "demo", &lock).unwrap();
        let text = std::fs::read_to_string(&written).unwrap();
        assert!(text.starts_with("# Base images of project demo"), "{text}");
        let loaded = load(dir.path()).unwrap().unwrap();
        assert_eq!(loaded.images["ubuntu:noble"].sha256, "a".repeat(64));
        assert_eq!(loaded.images["./db.qcow2"].url, None);

        let err = parse("version = 1\n\n[images.\"x:y\"]\nsha256 = \"abc\"\n").unwrap_err();
        assert_eq!(err.0, 3, "{err:?}");
        assert!(err.1.contains("64 hex digits"), "{err:?}");
        let err = parse("version = 1\n[images.\"x:y\"]\nsha265 = \"abc\"\n").unwrap_err();
        assert_eq!(err.0, 3, "{err:?}");
        assert!(err.1.contains("sha265"), "{err:?}");
        assert!(parse("version = 2\n").unwrap_err().1.contains("version 2"));
        assert_eq!(load(&dir.path().join("none")), Ok(None));
    }
}
