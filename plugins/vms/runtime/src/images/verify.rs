//! `holos verify`: hashes cached images again and compares them with the
//! SHA-256 recorded when they were pulled and, for a project, with the pins
//! of its `holos.images.lock`. Unlike a cache hit of `up`, it removes
//! nothing: it reports, and the exit status says whether all matched.

use std::path::{Path, PathBuf};

use holo_plugin::download;
use serde::Serialize;

use super::cache::{self, CacheRecord, CachedImage};
use super::lock as image_lock;
use crate::error::Error;
use crate::state::Layout;
use holos_compose::images;
use holos_compose::manifest::Manifest;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The content matches what it is compared with.
    Ok,
    /// It does not; `up` would refuse or drop the file.
    Mismatch,
    /// Nothing cached to check; `up` or `holos pull` fetches it.
    Missing,
}

/// One image file checked, or one image found absent.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// `alias:tag`, or a local image path as `holos.images.lock` keys it.
    pub image: String,
    pub path: Option<PathBuf>,
    pub status: Status,
    /// What the content was compared with: `record`, or the lock file.
    pub against: String,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub message: String,
}

impl Verdict {
    pub fn failed(&self) -> bool {
        self.status == Status::Mismatch
    }
}

/// Every image in the cache, against its record.
pub fn all(layout: &Layout) -> Vec<Verdict> {
    let mut images: Vec<CachedImage> = records(layout);
    images.sort_by(|a, b| a.path.cmp(&b.path));
    images.iter().map(against_record).collect()
}

/// The cached builds of each `ALIAS[:TAG]` in `references`, against their
/// records; a reference with none cached is reported missing.
pub fn named(layout: &Layout, references: &[String]) -> Result<Vec<Verdict>, Error> {
    let mut verdicts = Vec::new();
    for reference in references {
        if images::is_image_path(reference) {
            return Err(Error::Image(format!(
                "{reference} is a local image file, which has no record in the cache; verify it against holos.images.lock with `holos verify` in its project"
            )));
        }
        let (image, _) = images::resolve_alias(reference).map_err(Error::Image)?;
        let alias = image.alias.unwrap_or_default();
        let tag = image.tag.unwrap_or_default();
        let builds = cache::cached(layout, &alias, &tag);
        if builds.is_empty() {
            verdicts.push(missing(&format!("{alias}:{tag}"), "record"));
        }
        verdicts.extend(builds.iter().map(against_record));
    }
    Ok(verdicts)
}

/// The project's images: each cached alias build against its record, and,
/// when the project has `holos.images.lock`, each service's image against
/// its pin (a local image file is hashed; an alias must have an intact
/// cached build with the pinned hash).
pub fn project(layout: &Layout, manifest: &Manifest) -> Result<Vec<Verdict>, Error> {
    let project_dir = Path::new(&manifest.directory);
    let lock = image_lock::load(project_dir)?;
    let lock_path = image_lock::path(project_dir);
    let lock_name = lock_path.display().to_string();
    let mut keys: Vec<(String, &holos_compose::manifest::Service)> = manifest
        .services
        .iter()
        .map(|s| (cache::lock_key(&s.image, project_dir), s))
        .collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    keys.dedup_by(|a, b| a.0 == b.0);
    let mut verdicts = Vec::new();
    for (key, service) in keys {
        let pin = lock.as_ref().map(|l| l.images.get(&key).map(|e| &e.sha256));
        if let Some(None) = pin {
            verdicts.push(Verdict {
                image: key.clone(),
                path: None,
                status: Status::Mismatch,
                against: lock_name.clone(),
                expected: None,
                actual: None,
                message: format!(
                    "{key} (service {}) is not pinned in {lock_name}, so holos up refuses it; run `holos lock`",
                    service.name
                ),
            });
            continue;
        }
        let pin = pin.flatten();
        match &service.image.path {
            Some(path) => {
                let Some(pin) = pin else {
                    continue; // Local files are checked only against a lock.
                };
                let path = project_dir.join(path);
                if !path.is_file() {
                    verdicts.push(Verdict {
                        path: Some(path.clone()),
                        ..missing(&key, &lock_name)
                    });
                    continue;
                }
                verdicts.push(compare(&key, &path, pin, &lock_name, "pinned in"));
            }
            None => {
                let alias = service.image.alias.as_deref().unwrap_or_default();
                let tag = service.image.tag.as_deref().unwrap_or_default();
                let builds = cache::cached(layout, alias, tag);
                if builds.is_empty() {
                    verdicts.push(missing(&key, "record"));
                    continue;
                }
                let checked: Vec<Verdict> = builds.iter().map(against_record).collect();
                if let Some(pin) = pin {
                    // A pinned build that is damaged has its own line already.
                    let pinned_cached = builds.iter().any(|b| &b.record.sha256 == pin);
                    if !pinned_cached {
                        let cached: Vec<String> =
                            builds.iter().map(|b| b.record.sha256.clone()).collect();
                        verdicts.push(Verdict {
                            image: key.clone(),
                            path: None,
                            status: Status::Mismatch,
                            against: lock_name.clone(),
                            expected: Some(pin.clone()),
                            actual: cached.first().cloned(),
                            message: format!(
                                "no cached build of {key} has the sha256 {pin} pinned in {lock_name} (cached: {}); holos up would pull the current build and refuse it if it differs: pin what is cached with `holos lock`, or restore the pinned image",
                                cached.join(", ")
                            ),
                        });
                    }
                }
                verdicts.extend(checked);
            }
        }
    }
    Ok(verdicts)
}

/// The records in the cache whose image file is present.
fn records(layout: &Layout) -> Vec<CachedImage> {
    std::fs::read_dir(layout.images())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let image_name = name.strip_suffix(".json")?;
            let text = std::fs::read_to_string(entry.path()).ok()?;
            let record: CacheRecord = serde_json::from_str(&text).ok()?;
            let path = layout.images().join(image_name);
            path.is_file().then_some(CachedImage { path, record })
        })
        .collect()
}

fn against_record(image: &CachedImage) -> Verdict {
    let key = format!("{}:{}", image.record.alias, image.record.tag);
    let mut verdict = compare(
        &key,
        &image.path,
        &image.record.sha256,
        "record",
        "recorded when it was pulled",
    );
    if verdict.failed() {
        verdict.message.push_str(&format!(
            "; the file is damaged or was changed: remove {} and its .json record, then run `holos pull {key}`",
            image.path.display()
        ));
    }
    verdict
}

fn compare(key: &str, path: &Path, expected: &str, against: &str, how: &str) -> Verdict {
    let (status, actual, message) = match download::sha256_file(path) {
        Ok(actual) if actual.eq_ignore_ascii_case(expected) => {
            (Status::Ok, Some(actual), format!("sha256 {expected}"))
        }
        Ok(actual) => {
            let message = format!(
                "{key}: {} has sha256 {actual}, but {expected} was {how}{}",
                path.display(),
                if against == "record" {
                    String::new()
                } else {
                    format!(" {against}")
                }
            );
            (Status::Mismatch, Some(actual), message)
        }
        Err(e) => (
            Status::Mismatch,
            None,
            format!("{key}: cannot read {}: {}", path.display(), e.message()),
        ),
    };
    Verdict {
        image: key.to_string(),
        path: Some(path.to_path_buf()),
        status,
        against: against.to_string(),
        expected: Some(expected.to_string()),
        actual,
        message,
    }
}

fn missing(key: &str, against: &str) -> Verdict {
    Verdict {
        image: key.to_string(),
        path: None,
        status: Status::Missing,
        against: against.to_string(),
        expected: None,
        actual: None,
        message: format!("{key} is not cached; `holos pull` or `holos up` fetches it"),
    }
}

/// One line per verdict: `ok`, `MISMATCH` or `missing`, the image, then the
/// file or what went wrong.
pub fn report(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let (label, detail) = match v.status {
            Status::Ok => (
                "ok",
                format!(
                    "{} ({})",
                    v.path.as_deref().unwrap_or(Path::new("")).display(),
                    if v.against == "record" {
                        "matches its record".to_string()
                    } else {
                        format!("matches {}", v.against)
                    }
                ),
            ),
            Status::Mismatch => ("MISMATCH", v.message.clone()),
            Status::Missing => ("missing", v.message.clone()),
        };
        out.push_str(&format!("{label:<8}  {:<24} {detail}\n", v.image));
    }
    out
}
