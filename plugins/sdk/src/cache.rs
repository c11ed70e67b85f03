//! The scan cache in `$HOLO_CACHE_DIR`: scan stores every entity's cached
//! form, and apply/diff/noop of one entity read it back without rescanning.
//!
//! Entities are spread over bucket files by a hash of their id. The number of
//! buckets grows with the number of entities (about 32 per bucket, at least
//! 64 files), so that scan writes few files and a single lookup reads one
//! small file whatever the size of the run. The completion marker holds the
//! bucket count. Each bucket line is `<percent-encoded id> TAB <json>`; the
//! encoded id is never a file name here, so ids of any length work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Action, EntityCtx, Scanned};
use crate::state::encode_entity_id;

const MIN_BUCKETS: u64 = 64;
const MAX_BUCKETS: u64 = 1 << 16;
const ENTITIES_PER_BUCKET: u64 = 32;
const DIR_NAME: &str = "holo-plugin-scan";
/// Written last: its presence means the cache is complete.
const COMPLETE_MARKER: &str = "complete";

#[derive(Serialize)]
struct CachedRef<'a, S> {
    sources: &'a [PathBuf],
    action: &'a Option<Action>,
    spec: &'a Option<S>,
}

#[derive(Deserialize)]
struct Cached<S> {
    sources: Vec<PathBuf>,
    action: Option<Action>,
    spec: Option<S>,
}

fn cache_dir(env: &Env) -> PathBuf {
    env.cache_dir.join(DIR_NAME)
}

/// How many bucket files `entities` entities are spread over.
fn bucket_count(entities: usize) -> u64 {
    (entities as u64 / ENTITIES_PER_BUCKET)
        .next_power_of_two()
        .clamp(MIN_BUCKETS, MAX_BUCKETS)
}

fn bucket_of(encoded_id: &str, buckets: u64) -> u64 {
    // FNV-1a: stable across runs and processes, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in encoded_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % buckets
}

fn bucket_path(dir: &Path, bucket: u64) -> PathBuf {
    dir.join(format!("bucket-{bucket:02}"))
}

/// Stores the scan result. Duplicate ids are an error naming the entity.
pub(crate) fn store<S: Serialize>(env: &Env, entities: &[Scanned<S>]) -> Result<()> {
    let dir = cache_dir(env);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io("clear scan cache", &dir, &err)),
    }
    std::fs::create_dir_all(&dir).map_err(|err| {
        Error::new(format!(
            "cannot create the scan cache {}: {err}; set HOLO_CACHE_DIR (or TMPDIR) to a writable directory",
            dir.display()
        ))
    })?;
    let count = bucket_count(entities.len());
    let mut buckets: Vec<String> = vec![String::new(); count as usize];
    let mut seen = std::collections::HashSet::with_capacity(entities.len());
    for entity in entities {
        if !seen.insert(entity.id.as_str()) {
            return Err(Error::new(format!(
                "entity {} was reported twice by scan; every entity id must be unique",
                entity.id
            )));
        }
        let encoded = encode_entity_id(&entity.id);
        let json = serde_json::to_string(&CachedRef {
            sources: &entity.sources,
            action: &entity.action,
            spec: &entity.spec,
        })
        .map_err(|err| {
            Error::new(format!(
                "entity {}: cannot cache its scanned state: {err}",
                entity.id
            ))
        })?;
        let bucket = &mut buckets[bucket_of(&encoded, count) as usize];
        bucket.push_str(&encoded);
        bucket.push('\t');
        bucket.push_str(&json);
        bucket.push('\n');
    }
    for (index, bucket) in buckets.iter().enumerate() {
        if !bucket.is_empty() {
            let path = bucket_path(&dir, index as u64);
            std::fs::write(&path, bucket)
                .map_err(|err| Error::io("write scan cache", &path, &err))?;
        }
    }
    let marker = dir.join(COMPLETE_MARKER);
    std::fs::write(&marker, count.to_string())
        .map_err(|err| Error::io("write scan cache", &marker, &err))
}

/// The bucket count that the completion marker records.
fn stored_bucket_count(env: &Env) -> Result<u64> {
    let marker = cache_dir(env).join(COMPLETE_MARKER);
    let text = std::fs::read_to_string(&marker)
        .map_err(|err| Error::io("read scan cache", &marker, &err))?;
    text.trim()
        .parse()
        .ok()
        .filter(|count| (MIN_BUCKETS..=MAX_BUCKETS).contains(count))
        .ok_or_else(|| {
            Error::new(format!(
                "the scan cache {} is damaged; run the scan again",
                marker.display()
            ))
        })
}

/// Whether a complete scan cache exists.
pub(crate) fn exists(env: &Env) -> bool {
    cache_dir(env).join(COMPLETE_MARKER).exists()
}

fn parse_entry<S: DeserializeOwned>(id: &str, json: &str, refresh: bool) -> Result<EntityCtx<S>> {
    let cached: Cached<S> = serde_json::from_str(json).map_err(|err| {
        Error::new(format!(
            "entity {id}: the scan cache is unreadable ({err}); run the scan again"
        ))
    })?;
    Ok(EntityCtx {
        id: id.to_string(),
        sources: cached.sources,
        action: cached.action,
        spec: cached.spec,
        refresh,
    })
}

fn unknown_entity(env: &Env, id: &str) -> Error {
    Error::new(format!(
        "unknown entity {id}: holo-{} scan did not report it; check the id with `holo scan`",
        env.plugin_id
    ))
}

fn read_bucket(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(Error::io("read scan cache", path, &err)),
    }
}

fn find_in_bucket<'t>(text: &'t str, encoded: &str) -> Option<&'t str> {
    text.lines().find_map(|line| {
        let (key, json) = line.split_once('\t')?;
        (key == encoded).then_some(json)
    })
}

/// Looks up one entity in a complete cache.
pub(crate) fn lookup<S: DeserializeOwned>(
    env: &Env,
    id: &str,
    refresh: bool,
) -> Result<EntityCtx<S>> {
    let encoded = encode_entity_id(id);
    let count = stored_bucket_count(env)?;
    let text = read_bucket(&bucket_path(&cache_dir(env), bucket_of(&encoded, count)))?;
    let json = find_in_bucket(&text, &encoded).ok_or_else(|| unknown_entity(env, id))?;
    parse_entry(id, json, refresh)
}

/// The whole cache loaded once and indexed by id, for batches.
pub(crate) struct Loaded {
    entries: HashMap<String, String>,
}

impl Loaded {
    /// Reads every bucket file.
    pub(crate) fn read(env: &Env) -> Result<Loaded> {
        let dir = cache_dir(env);
        let mut entries = HashMap::new();
        for bucket in 0..stored_bucket_count(env)? {
            let text = read_bucket(&bucket_path(&dir, bucket))?;
            for line in text.lines() {
                if let Some((key, json)) = line.split_once('\t') {
                    entries.insert(key.to_string(), json.to_string());
                }
            }
        }
        Ok(Loaded { entries })
    }

    /// Looks up one entity.
    pub(crate) fn lookup<S: DeserializeOwned>(
        &self,
        env: &Env,
        id: &str,
        refresh: bool,
    ) -> Result<EntityCtx<S>> {
        let json = self
            .entries
            .get(&encode_entity_id(id))
            .ok_or_else(|| unknown_entity(env, id))?;
        parse_entry(id, json, refresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_in(dir: &Path) -> Env {
        let cache = dir.to_path_buf();
        Env::from_lookup("demo", |key| {
            (key == "HOLO_CACHE_DIR").then(|| cache.clone().into())
        })
        .expect("env")
    }

    #[test]
    fn stored_entities_are_found_one_by_one_and_in_bulk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        assert!(!exists(&env));
        let entities: Vec<Scanned<String>> = (0..200)
            .map(|n| Scanned::new(format!("demo:e{n}"), format!("value {n}")).source("/r/a.toml"))
            .chain([Scanned::orphan("demo:gone")])
            .collect();
        store(&env, &entities).expect("store");
        assert!(exists(&env));
        let one: EntityCtx<String> = lookup(&env, "demo:e17", true).expect("found");
        assert_eq!(one.spec.as_deref(), Some("value 17"));
        assert_eq!(one.sources, [PathBuf::from("/r/a.toml")]);
        assert!(one.refresh);
        let orphan: EntityCtx<String> = lookup(&env, "demo:gone", false).expect("orphan");
        assert!(orphan.spec.is_none());
        assert_eq!(orphan.action.map(|a| a.verb).as_deref(), Some("Scrubbing"));
        let loaded = Loaded::read(&env).expect("loaded");
        for n in [0, 99, 199] {
            let entity: EntityCtx<String> = loaded
                .lookup(&env, &format!("demo:e{n}"), false)
                .expect("found");
            assert_eq!(entity.spec, Some(format!("value {n}")));
        }
        let err = lookup::<String>(&env, "demo:nope", false).expect_err("unknown");
        assert!(err.message().contains("unknown entity demo:nope"));
    }

    #[test]
    fn ids_too_long_for_a_file_name_are_cached_and_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let long_id = format!("file:/{}{}", "d/".repeat(40), "f".repeat(300));
        let odd_id = format!("demo:tab\there\nnewline {}", "x".repeat(300));
        let entities = [
            Scanned::new(long_id.clone(), 1),
            Scanned::new(odd_id.clone(), 2),
        ];
        store(&env, &entities).expect("store");
        assert_eq!(
            lookup::<i32>(&env, &long_id, false).expect("long").spec,
            Some(1)
        );
        assert_eq!(
            lookup::<i32>(&env, &odd_id, false).expect("odd").spec,
            Some(2)
        );
        let loaded = Loaded::read(&env).expect("loaded");
        let found: EntityCtx<i32> = loaded.lookup(&env, &long_id, false).expect("long");
        assert_eq!((found.id.as_str(), found.spec), (long_id.as_str(), Some(1)));
    }

    #[test]
    fn buckets_grow_with_the_number_of_entities() {
        assert_eq!(bucket_count(0), 64);
        assert_eq!(bucket_count(2_000), 64);
        assert_eq!(bucket_count(10_000), 512);
        assert_eq!(bucket_count(100_000), 4096);
        assert_eq!(bucket_count(usize::MAX), MAX_BUCKETS);
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let entities: Vec<Scanned<u32>> = (0..5000)
            .map(|n| Scanned::new(format!("demo:e{n}"), n))
            .collect();
        store(&env, &entities).expect("store");
        let files = std::fs::read_dir(cache_dir(&env)).expect("dir").count();
        assert_eq!(
            files,
            256 + 1,
            "5000 entities in 256 buckets plus the marker"
        );
        assert_eq!(
            lookup::<u32>(&env, "demo:e4321", false)
                .expect("found")
                .spec,
            Some(4321)
        );
    }

    #[test]
    fn duplicate_ids_are_rejected_and_a_rescan_replaces_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let twice = [Scanned::new("demo:a", 1), Scanned::new("demo:a", 2)];
        assert!(
            store(&env, &twice)
                .expect_err("dup")
                .message()
                .contains("demo:a")
        );
        store(&env, &[Scanned::new("demo:old", 1)]).expect("store");
        store(&env, &[Scanned::new("demo:new", 2)]).expect("store");
        assert!(lookup::<i32>(&env, "demo:old", false).is_err());
        assert_eq!(
            lookup::<i32>(&env, "demo:new", false).expect("new").spec,
            Some(2)
        );
    }
}
