//! The image cache: `holos pull`, the base images of `up`, and the marks of
//! `holos images`.
//!
//! An alias image lives in `<state>/images/<alias>-<tag>-<hash>.<format>`,
//! where `<hash>` is the first 12 hex digits of the checksum the
//! distribution publishes for it. A newer upstream build of the same tag is
//! therefore a new file: a pull never rewrites a file that existing
//! instance overlays use as their backing file. Beside each image,
//! `<file>.json` ([`CacheRecord`]) records where it came from and its
//! SHA-256, which every cache hit checks again before the image is used.
//! Of several cached builds of one tag, the most recently pulled one is
//! used, unless `holos.images.lock` pins another.
//!
//! A pull fetches the checksum file, then the image through `<file>.part`
//! (the SDK's [`Download`]: digest checked while streaming, idle timeout,
//! progress bar on a terminal), then renames it into place and writes the
//! record. One pull per image runs at a time (`locks/image-<alias>-<tag>.lock`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use holo_plugin::download::{self, Algorithm, Download};
use serde::{Deserialize, Serialize};

use super::lock::{self as image_lock, LockFile};
use crate::error::Error;
use crate::state::{Layout, ProjectLock, make_private_dir};
use holos_compose::images::{self, ImageAlias, ImageTag};
use holos_compose::manifest::{Image, Manifest};

/// The default idle timeout of a pull (`HOLOS_PULL_IDLE_TIMEOUT`).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a pull waits for another pull of the same image.
const PULL_LOCK_WAIT: Duration = Duration::from_secs(3600);
/// The largest checksum file holos reads.
const CHECKSUM_FILE_LIMIT: u64 = 1024 * 1024;
const RECORD_VERSION: u32 = 1;

/// How pulls reach the network, from the environment.
#[derive(Clone, Debug)]
pub struct PullOptions {
    /// `HOLOS_IMAGE_MIRROR`: fetch `https://HOST/PATH` as `MIRROR/HOST/PATH`.
    pub mirror: Option<String>,
    /// `HOLOS_PULL_IDLE_TIMEOUT` (seconds): no byte for this long fails a pull.
    pub idle_timeout: Duration,
}

impl PullOptions {
    pub fn from_env() -> Result<PullOptions, Error> {
        let mirror = std::env::var("HOLOS_IMAGE_MIRROR")
            .ok()
            .filter(|m| !m.is_empty());
        if let Some(mirror) = &mirror
            && !(mirror.starts_with("http://") || mirror.starts_with("https://"))
        {
            return Err(Error::Image(format!(
                "HOLOS_IMAGE_MIRROR={mirror} is not an http:// or https:// URL"
            )));
        }
        let idle_timeout = match std::env::var("HOLOS_PULL_IDLE_TIMEOUT") {
            Ok(text) if !text.is_empty() => text
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| {
                    Error::Image(format!(
                        "HOLOS_PULL_IDLE_TIMEOUT={text} is not a number of seconds above 0"
                    ))
                })?,
            _ => DEFAULT_IDLE_TIMEOUT,
        };
        Ok(PullOptions {
            mirror,
            idle_timeout,
        })
    }

    /// `url` as fetched: through the mirror when one is set.
    pub fn locate(&self, url: &str) -> String {
        match &self.mirror {
            Some(mirror) => {
                let rest = url
                    .split_once("://")
                    .map_or(url, |(_, rest)| rest)
                    .trim_start_matches('/');
                format!("{}/{rest}", mirror.trim_end_matches('/'))
            }
            None => url.to_string(),
        }
    }
}

/// What the cache knows about one downloaded image (`<file>.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheRecord {
    pub version: u32,
    pub alias: String,
    pub tag: String,
    /// The table's URL (not the mirror's).
    pub url: String,
    pub checksum_url: String,
    pub checksum_type: String,
    /// The published checksum the download matched.
    pub checksum: String,
    /// SHA-256 of the file, checked on every use.
    pub sha256: String,
    pub bytes: u64,
    /// Nanoseconds since the epoch of the last pull that chose this file:
    /// the newest is the current build of the tag.
    pub pulled_at_ns: u64,
}

/// A cached image file and its record.
#[derive(Clone, Debug)]
pub struct CachedImage {
    pub path: PathBuf,
    pub record: CacheRecord,
}

/// The cache file name of a build of `alias:tag` whose published checksum is `checksum`.
pub fn file_name(alias: &str, tag: &str, format: &str, checksum: &str) -> String {
    let short: String = checksum.chars().take(12).collect();
    format!("{alias}-{tag}-{short}.{format}")
}

fn record_path(image: &Path) -> PathBuf {
    let mut name = image.as_os_str().to_os_string();
    name.push(".json");
    PathBuf::from(name)
}

/// The cached builds of `alias:tag` whose file is present, newest pull
/// first. Nothing is hashed here.
pub fn cached(layout: &Layout, alias: &str, tag: &str) -> Vec<CachedImage> {
    let prefix = format!("{alias}-{tag}-");
    let mut found: Vec<CachedImage> = std::fs::read_dir(layout.images())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let image_name = name.strip_suffix(".json")?;
            // `alias-tag-` is a prefix of other tags' names too (`9` and
            // `9-x`): the record says which tag it is.
            if !image_name.starts_with(&prefix) {
                return None;
            }
            let text = std::fs::read_to_string(entry.path()).ok()?;
            let record: CacheRecord = serde_json::from_str(&text).ok()?;
            let path = layout.images().join(image_name);
            let present = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
            (record.alias == alias && record.tag == tag && present)
                .then_some(CachedImage { path, record })
        })
        .collect();
    found.sort_by(|a, b| {
        b.record
            .pulled_at_ns
            .cmp(&a.record.pulled_at_ns)
            .then_with(|| a.path.cmp(&b.path))
    });
    found
}

/// Whether `alias:tag` has a cached build of the recorded size (for
/// `holos images`; the content is checked when the image is used).
pub fn is_cached(layout: &Layout, alias: &str, tag: &str) -> bool {
    cached(layout, alias, tag)
        .iter()
        .any(|image| std::fs::metadata(&image.path).is_ok_and(|m| m.len() == image.record.bytes))
}

/// Checks a cached image against its record; a damaged one is removed
/// (with its record) and the error says so.
fn verify(image: &CachedImage) -> Result<(), Error> {
    let actual =
        download::sha256_file(&image.path).map_err(|e| Error::Image(e.message().to_string()))?;
    if actual == image.record.sha256 {
        return Ok(());
    }
    let _ = std::fs::remove_file(&image.path);
    let _ = std::fs::remove_file(record_path(&image.path));
    Err(Error::Image(format!(
        "the cached image {} is damaged (sha256 {actual}, but it was {} when pulled); it was removed",
        image.path.display(),
        image.record.sha256
    )))
}

fn lock_image(layout: &Layout, alias: &str, tag: &str) -> Result<ProjectLock, Error> {
    ProjectLock::acquire_at(
        &layout.image_lock(&format!("{alias}-{tag}")),
        &format!("image {alias}:{tag}"),
        PULL_LOCK_WAIT,
    )
}

fn table_entry(alias: &str, tag: &str) -> Result<(&'static ImageAlias, &'static ImageTag), Error> {
    let (image, entry) = images::resolve_alias(&format!("{alias}:{tag}")).map_err(Error::Image)?;
    // The table's own name of the tag, when `tag` is another name of it.
    let tag = image.tag.as_deref().unwrap_or(tag);
    let tag_entry = entry
        .tags
        .get(tag)
        .ok_or_else(|| Error::Image(format!("image {alias} has no tag {tag}")))?;
    Ok((entry, tag_entry))
}

/// `holos pull ALIAS[:TAG]`: fetches the published checksum and, unless
/// that build is cached and intact, the image. Returns the cached image.
pub fn pull(layout: &Layout, reference: &str, options: &PullOptions) -> Result<CachedImage, Error> {
    let (image, _) = images::resolve_alias(reference).map_err(Error::Image)?;
    let alias = image.alias.unwrap_or_default();
    let tag = image.tag.unwrap_or_default();
    let _lock = lock_image(layout, &alias, &tag)?;
    pull_locked(layout, &alias, &tag, options)
}

fn pull_locked(
    layout: &Layout,
    alias: &str,
    tag: &str,
    options: &PullOptions,
) -> Result<CachedImage, Error> {
    let (_, entry) = table_entry(alias, tag)?;
    let algorithm = entry.algorithm();
    let checksum_url = options.locate(&entry.checksum_url);
    let sums = Download::new(&checksum_url, "")
        .and_then(|d| {
            d.idle_timeout(options.idle_timeout)
                .fetch_bytes(CHECKSUM_FILE_LIMIT)
        })
        .map_err(|e| Error::Image(format!("image {alias}:{tag}: {e}")))?;
    let image_name = entry.url.rsplit('/').next().unwrap_or_default();
    let per_image = entry.checksum_url.starts_with(&format!("{}.", entry.url));
    let checksum = find_checksum(
        &String::from_utf8_lossy(&sums),
        image_name,
        algorithm,
        per_image,
    )
    .map_err(|e| Error::Image(format!("image {alias}:{tag}: {checksum_url}: {e}")))?;
    let dir = layout.images();
    make_private_dir(&dir)?;
    let target = dir.join(file_name(alias, tag, &entry.format, &checksum));
    let mut record = CacheRecord {
        version: RECORD_VERSION,
        alias: alias.to_string(),
        tag: tag.to_string(),
        url: entry.url.clone(),
        checksum_url: entry.checksum_url.clone(),
        checksum_type: algorithm.name().to_string(),
        checksum: checksum.clone(),
        sha256: String::new(),
        bytes: 0,
        pulled_at_ns: now(),
    };
    // The same build is already here: check it and make it the current one.
    if let Some(existing) = cached(layout, alias, tag)
        .into_iter()
        .find(|c| c.path == target && c.record.checksum == checksum)
    {
        match verify(&existing) {
            Ok(()) => {
                record.sha256 = existing.record.sha256;
                record.bytes = existing.record.bytes;
                write_record(&target, &record)?;
                eprintln!("holos: {alias}:{tag} is up to date ({})", target.display());
                return Ok(CachedImage {
                    path: target,
                    record,
                });
            }
            Err(damaged) => eprintln!("holos: {damaged}; pulling it again"),
        }
    }
    remove_stale_parts(&dir, alias, tag);
    let url = options.locate(&entry.url);
    eprintln!("holos: pulling {alias}:{tag} from {url}");
    let done = Download::new(&url, &target)
        .map_err(|e| Error::Image(e.message().to_string()))?
        .digest(algorithm, &checksum)
        .part_file(true)
        .mode(0o644)
        .idle_timeout(options.idle_timeout)
        .no_overall_timeout()
        .fetch()
        .map_err(|e| Error::Image(format!("image {alias}:{tag}: {e}")))?;
    record.sha256 = done.sha256;
    record.bytes = done.bytes;
    if let Err(err) = write_record(&target, &record) {
        let _ = std::fs::remove_file(&target);
        return Err(err);
    }
    eprintln!(
        "holos: pulled {alias}:{tag} ({} bytes, sha256 {}) to {}",
        record.bytes,
        record.sha256,
        target.display()
    );
    Ok(CachedImage {
        path: target,
        record,
    })
}

/// Removes the `.part` files a killed pull of `alias:tag` left (of any
/// build); the caller holds the image's lock, so none is being written.
fn remove_stale_parts(dir: &Path, alias: &str, tag: &str) {
    let prefix = format!("{alias}-{tag}-");
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // `alias-tag-HASH.FORMAT.part`: exactly one `-` after the prefix
        // rules out another tag that starts like this one.
        let ours = name
            .strip_prefix(&prefix)
            .is_some_and(|rest| rest.ends_with(".part") && !rest.contains('-') && rest.len() > 12);
        if ours {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn write_record(image: &Path, record: &CacheRecord) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(record).map_err(|e| Error::Image(e.to_string()))?;
    text.push('\n');
    holo_plugin::atomic::write(
        &holo_plugin::root_fs::RootFs::unconfined(),
        &record_path(image),
        text.as_bytes(),
        &holo_plugin::atomic::WriteOptions::mode(0o644),
    )
    .map_err(|e| Error::Image(e.to_string()))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A verified cached build of `alias:tag` (the one whose SHA-256 is `pin`
/// when given, else the newest), pulled when none is cached. A damaged
/// cached file is removed and the next candidate (or a pull) is used.
pub fn ensure(
    layout: &Layout,
    alias: &str,
    tag: &str,
    pin: Option<&str>,
    options: &PullOptions,
) -> Result<CachedImage, Error> {
    let _lock = lock_image(layout, alias, tag)?;
    for candidate in cached(layout, alias, tag) {
        if pin.is_some_and(|pin| pin != candidate.record.sha256) {
            continue;
        }
        match verify(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(damaged) => eprintln!("holos: {damaged}"),
        }
    }
    pull_locked(layout, alias, tag, options)
}

/// The key of an image in `holos.images.lock`: `alias:tag`, or a local
/// path relative to the project directory (`./images/db.qcow2`) when it is
/// inside it, else absolute.
pub fn lock_key(image: &Image, project_dir: &Path) -> String {
    match &image.path {
        Some(path) => {
            let path = project_dir.join(path);
            match path.strip_prefix(project_dir) {
                Ok(relative) => format!("./{}", relative.display()),
                Err(_) => path.display().to_string(),
            }
        }
        None => format!(
            "{}:{}",
            image.alias.as_deref().unwrap_or(&image.reference),
            image.tag.as_deref().unwrap_or_default()
        ),
    }
}

/// One image as `up` and `lock` use it.
#[derive(Clone, Debug)]
pub struct ResolvedImage {
    pub key: String,
    pub path: PathBuf,
    pub sha256: String,
    /// The table's URL, for aliases.
    pub url: Option<String>,
}

/// Resolves one service's image: a verified cached (or pulled) alias
/// build, or an existing local file, with its SHA-256 (hashed once per key
/// and run, through `seen`).
fn resolve_service_image(
    layout: &Layout,
    manifest: &Manifest,
    service: &holos_compose::manifest::Service,
    pin: Option<&str>,
    hash_local: bool,
    options: &PullOptions,
    seen: &mut BTreeMap<String, ResolvedImage>,
) -> Result<ResolvedImage, Error> {
    let project_dir = Path::new(&manifest.directory);
    let key = lock_key(&service.image, project_dir);
    if let Some(done) = seen.get(&key) {
        return Ok(done.clone());
    }
    let resolved = match &service.image.path {
        Some(path) => {
            let path = project_dir.join(path);
            if !path.is_file() {
                return Err(Error::Image(format!(
                    "service {}: the image file {} does not exist (image: {}); build or copy the image there, or correct image:",
                    service.name,
                    path.display(),
                    key
                )));
            }
            // Local images are operator artifacts: their format and OS are
            // taken as given, only a lock checks their content.
            let sha256 = if hash_local {
                download::sha256_file(&path).map_err(|e| Error::Image(e.message().to_string()))?
            } else {
                String::new()
            };
            ResolvedImage {
                key: key.clone(),
                path,
                sha256,
                url: None,
            }
        }
        None => {
            let alias = service.image.alias.as_deref().unwrap_or_default();
            let tag = service.image.tag.as_deref().unwrap_or_default();
            let image = ensure(layout, alias, tag, pin, options)
                .map_err(|e| Error::Image(format!("service {}: {e}", service.name)))?;
            ResolvedImage {
                key: key.clone(),
                path: image.path,
                sha256: image.record.sha256,
                url: Some(image.record.url),
            }
        }
    };
    seen.insert(key, resolved.clone());
    Ok(resolved)
}

/// The base image of every service in `services` (all when empty) for
/// `up`, by service name: aliases pulled when not cached and checked on
/// every use; local files required to exist. With `holos.images.lock`
/// beside the compose file, every image must be pinned there and match.
pub fn ensure_project_images(
    layout: &Layout,
    manifest: &Manifest,
    services: &[String],
) -> Result<BTreeMap<String, PathBuf>, Error> {
    let options = PullOptions::from_env()?;
    let project_dir = Path::new(&manifest.directory);
    let lock = image_lock::load(project_dir)?;
    let lock_path = image_lock::path(project_dir);
    let mut seen = BTreeMap::new();
    let mut paths = BTreeMap::new();
    for service in &manifest.services {
        if !services.is_empty() && !services.contains(&service.name) {
            continue;
        }
        let key = lock_key(&service.image, project_dir);
        let pin = match &lock {
            None => None,
            Some(lock) => match lock.images.get(&key) {
                Some(entry) => Some(entry.sha256.as_str()),
                None => {
                    return Err(Error::Image(image_lock::not_pinned(
                        &service.name,
                        &key,
                        project_dir,
                    )));
                }
            },
        };
        let resolved = resolve_service_image(
            layout,
            manifest,
            service,
            pin,
            pin.is_some(),
            &options,
            &mut seen,
        )?;
        if let Some(pin) = pin
            && pin != resolved.sha256
        {
            return Err(Error::Image(format!(
                "service {}: image {key} does not match {}: expected sha256 {pin}, got {} ({}); if this image is the one you want, run `holos lock` to pin it",
                service.name,
                lock_path.display(),
                resolved.sha256,
                resolved.path.display()
            )));
        }
        paths.insert(service.name.clone(), resolved.path);
    }
    Ok(paths)
}

/// `holos lock`: pins the current image of every service (pulling aliases
/// that are not cached) and writes `holos.images.lock`.
pub fn write_lock(layout: &Layout, manifest: &Manifest) -> Result<PathBuf, Error> {
    let options = PullOptions::from_env()?;
    let project_dir = Path::new(&manifest.directory);
    let mut seen = BTreeMap::new();
    let mut lock = LockFile::default();
    for service in &manifest.services {
        let resolved =
            resolve_service_image(layout, manifest, service, None, true, &options, &mut seen)?;
        lock.images.insert(
            resolved.key.clone(),
            image_lock::LockEntry {
                sha256: resolved.sha256,
                url: resolved.url,
            },
        );
    }
    image_lock::write(project_dir, &manifest.project, &lock)
}

/// The published checksum of `name` in a checksum file: GNU lines
/// (`HEX  NAME`, `HEX *NAME`), BSD lines (`SHA256 (NAME) = HEX`) or a bare
/// hash, inside a PGP clear-signed wrapper or not; `#` lines are comments.
/// A per-image file (`IMAGE.sha512`, `IMAGE.CHECKSUM`) with a single
/// distinct hash of the right kind counts whatever name it gives.
pub fn find_checksum(
    text: &str,
    name: &str,
    algorithm: Algorithm,
    per_image: bool,
) -> Result<String, Error> {
    let is_hex =
        |s: &str| s.len() == algorithm.hex_len() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mut entries: Vec<(Option<&str>, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("-----BEGIN PGP SIGNATURE") {
            break;
        }
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with("-----")
            || line.starts_with("Hash:")
        {
            continue;
        }
        // BSD: `SHA256 (NAME) = HEX`.
        if let Some((kind, rest)) = line.split_once(" (")
            && let Some((file, hex)) = rest.rsplit_once(") = ")
        {
            if Algorithm::parse(kind) == Some(algorithm) && is_hex(hex.trim()) {
                entries.push((Some(file), hex.trim().to_ascii_lowercase()));
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let hex = words.next().unwrap_or_default();
        if is_hex(hex) {
            let file = words.next().map(|f| f.trim_start_matches('*'));
            entries.push((file, hex.to_ascii_lowercase()));
        }
    }
    if let Some((_, hex)) = entries.iter().find(|(file, _)| *file == Some(name)) {
        return Ok(hex.clone());
    }
    // A per-image file may name the dated build rather than the `latest`
    // link, or list it twice: one distinct hash is the image's.
    let mut distinct: Vec<&String> = entries.iter().map(|(_, hex)| hex).collect();
    distinct.sort();
    distinct.dedup();
    if per_image && distinct.len() == 1 {
        return Ok(distinct[0].clone());
    }
    Err(Error::Image(format!(
        "no {} checksum for {name} in it ({} usable lines); the distribution may have renamed the image, so check images.toml",
        algorithm.name(),
        entries.len()
    )))
}

/// `holos images`: one line per alias and tag; ALSO has the tag's other
/// names, `*` marks the default tag, CACHED says whether a build is in the
/// cache.
pub fn images_table(layout: &Layout) -> String {
    let row = |cells: [&str; 8]| {
        format!(
            "{:<14} {:<9} {:<7} {:<7} {:<7} {:<10} {:>6}  {}\n",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]
        )
    };
    let mut out = row([
        "ALIAS", "TAG", "ALSO", "DEFAULT", "OS", "USER", "MIN_MB", "CACHED",
    ]);
    for image in image_rows(layout) {
        out.push_str(&row([
            image.alias,
            image.tag,
            &if image.also.is_empty() {
                "-".to_string()
            } else {
                image.also.join(",")
            },
            if image.default { "*" } else { "" },
            image.os,
            image.user,
            &image.min_memory_mb.to_string(),
            if image.cached { "yes" } else { "no" },
        ]));
    }
    out
}

/// One tag of a built-in alias, as `holos images` lists it.
#[derive(Debug, serde::Serialize)]
pub struct ImageRow<'a> {
    pub alias: &'a str,
    pub tag: &'a str,
    /// The tag's other names (a release's version number).
    pub also: &'a [String],
    pub default: bool,
    pub os: &'a str,
    pub user: &'a str,
    pub min_memory_mb: u64,
    pub cached: bool,
}

/// Every tag of every built-in alias, in the table's order.
pub fn image_rows(layout: &Layout) -> Vec<ImageRow<'static>> {
    let mut rows = Vec::new();
    for image in &images::table().image {
        for (tag, entry) in &image.tags {
            rows.push(ImageRow {
                alias: &image.alias,
                tag,
                also: &entry.also,
                default: *tag == image.default_tag,
                os: &image.os,
                user: &image.user,
                min_memory_mb: image.min_memory_mb,
                cached: is_cached(layout, &image.alias, tag),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn reads_gnu_bsd_signed_and_bare_checksum_files() {
        let gnu = format!("{B} *other.img\n{A} *disk.img\n");
        assert_eq!(
            find_checksum(&gnu, "disk.img", Algorithm::Sha256, false),
            Ok(A.into())
        );
        let bsd = format!(
            "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n# disk.qcow2: 123 bytes\nSHA256 (other.qcow2) = {B}\nSHA256 (disk.qcow2) = {A}\n-----BEGIN PGP SIGNATURE-----\n{B}  disk.qcow2\n"
        );
        assert_eq!(
            find_checksum(&bsd, "disk.qcow2", Algorithm::Sha256, false),
            Ok(A.into())
        );
        let sha512 = A.repeat(2);
        assert_eq!(
            find_checksum(&format!("{sha512}\n"), "x.qcow2", Algorithm::Sha512, true),
            Ok(sha512.clone())
        );
        // A per-image file naming the dated build, twice.
        let dated =
            format!("SHA256 (disk-20260101.qcow2) = {A}\nSHA256 (disk-20260101.qcow2) = {A}\n");
        assert_eq!(
            find_checksum(&dated, "disk-latest.qcow2", Algorithm::Sha256, true),
            Ok(A.into())
        );
        assert!(find_checksum(&dated, "disk-latest.qcow2", Algorithm::Sha256, false).is_err());
        // A bare hash is only taken from a per-image file.
        assert!(
            find_checksum(&format!("{sha512}\n"), "x.qcow2", Algorithm::Sha512, false).is_err()
        );
        // The wrong digest length or kind is not a match.
        let err = find_checksum(&gnu, "disk.img", Algorithm::Sha512, false).unwrap_err();
        assert!(
            err.message().contains("no sha512 checksum for disk.img"),
            "{err}"
        );
        assert!(
            find_checksum(
                &format!("MD5 (disk.img) = {A}\n"),
                "disk.img",
                Algorithm::Sha256,
                true
            )
            .is_err()
        );
    }

    #[test]
    fn mirror_maps_host_and_path() {
        let options = PullOptions {
            mirror: Some("http://127.0.0.1:9/m/".into()),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        };
        assert_eq!(
            options.locate("https://cloud.debian.org/images/x.qcow2"),
            "http://127.0.0.1:9/m/cloud.debian.org/images/x.qcow2"
        );
        let direct = PullOptions {
            mirror: None,
            ..options
        };
        assert_eq!(direct.locate("https://h/x"), "https://h/x");
    }

    #[test]
    fn file_names_carry_the_published_checksum() {
        assert_eq!(
            file_name("ubuntu", "noble", "qcow2", A),
            "ubuntu-noble-aaaaaaaaaaaa.qcow2"
        );
    }
}
