//! The scan cache in `$HOLO_CACHE_DIR`: scan stores every entity's cached
//! form, and apply/diff/noop of one entity read it back without rescanning.
//!
//! Two files, whatever the number of entities (creating files is slow on
//! some filesystems): `entries` holds one line per entity,
//! `<percent-encoded id> TAB <json>`, and `index` is an open-addressing hash
//! table of 16-byte slots (offset + 1 and length of an entry, little endian)
//! with at least twice as many slots as entities. A lookup reads one or two
//! slots and one entry: O(1) whatever the size of the run. Ids are stored
//! encoded, so tabs and newlines in ids cannot break a line, and no id ever
//! becomes a file name. The completion marker holds the slot count. Files
//! are reached through [`RootFs`], inside the root in test mode.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::entity_file_name::encode_entity_id;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Action, EntityCtx, Scanned};
use crate::root_fs::RootFs;

const DIR_NAME: &str = "holo-plugin-scan";
const ENTRIES: &str = "entries";
const INDEX: &str = "index";
/// Written last: its presence means the cache is complete.
const COMPLETE_MARKER: &str = "complete";
/// Holds a marker per directory that a process of this run swept.
const SWEPT: &str = "swept";
const SLOT_BYTES: u64 = 16;
const MIN_SLOTS: u64 = 64;

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

/// At least twice as many slots as entities, so probes stay short.
fn slot_count(entities: usize) -> u64 {
    (entities as u64)
        .saturating_mul(2)
        .next_power_of_two()
        .max(MIN_SLOTS)
}

fn hash(encoded_id: &str) -> u64 {
    // FNV-1a: stable across runs and processes, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in encoded_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Stores the scan result. Duplicate ids are an error naming the entity.
pub(crate) fn store<S: Serialize>(env: &Env, entities: &[Scanned<S>]) -> Result<()> {
    let dir = cache_dir(env);
    let fs = env.root_fs()?;
    match fs.remove_dir_all(&dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io("clear scan cache", &dir, &err)),
    }
    fs.create_dir_all(&dir).map_err(|err| {
        Error::new(format!(
            "cannot create the scan cache {}: {err}; set HOLO_CACHE_DIR (or TMPDIR) to a writable directory",
            dir.display()
        ))
    })?;
    let slots = slot_count(entities.len());
    let mut index = vec![0u8; (slots * SLOT_BYTES) as usize];
    let mut data: Vec<u8> = Vec::with_capacity(entities.len() * 512);
    for entity in entities {
        let encoded = encode_entity_id(&entity.id);
        let offset = data.len() as u64;
        data.extend_from_slice(encoded.as_bytes());
        data.push(b'\t');
        // Straight into the entries: no string per entity.
        serde_json::to_writer(
            &mut data,
            &CachedRef {
                sources: &entity.sources,
                action: &entity.action,
                spec: &entity.spec,
            },
        )
        .map_err(|err| {
            let not_utf8: Vec<String> = entity
                .sources
                .iter()
                .filter(|source| source.to_str().is_none())
                .map(|source| source.display().to_string())
                .collect();
            let hint = if not_utf8.is_empty() {
                String::new()
            } else {
                format!(" ({}); rename it to a UTF-8 name", not_utf8.join(", "))
            };
            Error::new(format!(
                "entity {}: cannot cache its scanned state: {err}{hint}",
                entity.id
            ))
        })?;
        let length = data.len() as u64 - offset;
        data.push(b'\n');
        let mut slot = hash(&encoded) % slots;
        loop {
            let at = (slot * SLOT_BYTES) as usize;
            let stored = u64::from_le_bytes(index[at..at + 8].try_into().unwrap_or([0; 8]));
            if stored == 0 {
                index[at..at + 8].copy_from_slice(&(offset + 1).to_le_bytes());
                index[at + 8..at + 16].copy_from_slice(&length.to_le_bytes());
                break;
            }
            let start = (stored - 1) as usize;
            let key = data[start..].split(|byte| *byte == b'\t').next();
            if key == Some(encoded.as_bytes()) {
                return Err(Error::new(format!(
                    "entity {} was reported twice by scan; every entity id must be unique",
                    entity.id
                )));
            }
            slot = (slot + 1) % slots;
        }
    }
    for (name, bytes) in [(ENTRIES, data.as_slice()), (INDEX, index.as_slice())] {
        let path = dir.join(name);
        write_new(&fs, &path, bytes)?;
    }
    write_new(
        &fs,
        &dir.join(COMPLETE_MARKER),
        slots.to_string().as_bytes(),
    )
}

/// Writes a file of the scan cache (which lives for one run: no fsync),
/// owner-only: the entries hold what resources declare, secrets included.
fn write_new(fs: &RootFs, path: &Path, bytes: &[u8]) -> Result<()> {
    fs.create_file(path, 0o600)
        .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
        .map_err(|err| Error::io("write scan cache", path, &err))
}

/// The slot count that the completion marker records.
fn stored_slot_count(env: &Env) -> Result<u64> {
    let marker = cache_dir(env).join(COMPLETE_MARKER);
    let text = env
        .root_fs()?
        .read_to_string(&marker)
        .map_err(|err| Error::io("read scan cache", &marker, &err))?;
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|count| *count >= MIN_SLOTS && count.is_power_of_two())
        .ok_or_else(|| damaged(&marker))
}

fn damaged(path: &std::path::Path) -> Error {
    Error::new(format!(
        "the scan cache {} is damaged; run the scan again",
        path.display()
    ))
}

/// Lets the per-process operations of one run share their sweeps of
/// leftover temp files (see [`crate::atomic::share_sweeps_in`]), through
/// markers in the scan cache, which the next scan clears.
pub(crate) fn share_sweeps(env: &Env) {
    if let Ok(fs) = env.root_fs() {
        crate::atomic::share_sweeps_in(&fs, cache_dir(env).join(SWEPT));
    }
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

fn open(env: &Env, name: &str) -> Result<(std::fs::File, PathBuf)> {
    let path = cache_dir(env).join(name);
    let file = env
        .root_fs()?
        .open(&path)
        .map_err(|err| Error::io("read scan cache", &path, &err))?;
    Ok((file, path))
}

/// The entry of `encoded` (an encoded id) in `index` and `entries`, both
/// in memory: the JSON part of its line, `None` when it is not there.
fn find_in<'e>(
    index: &[u8],
    entries: &'e str,
    slots: u64,
    encoded: &str,
) -> std::result::Result<Option<&'e str>, ()> {
    let mut slot = hash(encoded) % slots;
    for _ in 0..slots {
        let at = usize::try_from(slot * SLOT_BYTES).map_err(drop)?;
        let raw = index.get(at..at + SLOT_BYTES as usize).ok_or(())?;
        let (offset, length) = raw.split_at(8);
        let offset = u64::from_le_bytes(offset.try_into().map_err(drop)?);
        let length = u64::from_le_bytes(length.try_into().map_err(drop)?);
        if offset == 0 {
            return Ok(None);
        }
        let start = usize::try_from(offset - 1).map_err(drop)?;
        let end = start
            .checked_add(usize::try_from(length).map_err(drop)?)
            .ok_or(())?;
        let line = entries.get(start..end).ok_or(())?;
        let (key, json) = line.split_once('\t').ok_or(())?;
        if key == encoded {
            return Ok(Some(json));
        }
        slot = (slot + 1) % slots;
    }
    Ok(None)
}

/// Looks up one entity in a complete cache: reads index slots until the
/// entity or an empty slot, then its entry.
pub(crate) fn lookup<S: DeserializeOwned>(
    env: &Env,
    id: &str,
    refresh: bool,
) -> Result<EntityCtx<S>> {
    let encoded = encode_entity_id(id);
    let slots = stored_slot_count(env)?;
    let (index, index_path) = open(env, INDEX)?;
    let (entries, entries_path) = open(env, ENTRIES)?;
    let mut slot = hash(&encoded) % slots;
    for _ in 0..slots {
        let mut raw = [0u8; SLOT_BYTES as usize];
        index
            .read_exact_at(&mut raw, slot * SLOT_BYTES)
            .map_err(|_| damaged(&index_path))?;
        let (offset, length) = raw.split_at(8);
        let offset = u64::from_le_bytes(offset.try_into().map_err(|_| damaged(&index_path))?);
        let length = u64::from_le_bytes(length.try_into().map_err(|_| damaged(&index_path))?);
        if offset == 0 {
            break;
        }
        let length = usize::try_from(length).map_err(|_| damaged(&index_path))?;
        let mut line = vec![0u8; length];
        entries
            .read_exact_at(&mut line, offset - 1)
            .map_err(|_| damaged(&entries_path))?;
        let line = String::from_utf8(line).map_err(|_| damaged(&entries_path))?;
        let (key, json) = line
            .split_once('\t')
            .ok_or_else(|| damaged(&entries_path))?;
        if key == encoded {
            return parse_entry(id, json, refresh);
        }
        slot = (slot + 1) % slots;
    }
    Err(unknown_entity(env, id))
}

/// The whole cache loaded once, for batches: the entries and the index
/// in memory, looked up as [`lookup`] does on disk.
pub(crate) struct Loaded {
    entries: String,
    index: Vec<u8>,
    slots: u64,
    index_path: PathBuf,
}

impl Loaded {
    /// Reads the entries and the index.
    pub(crate) fn read(env: &Env) -> Result<Loaded> {
        let slots = stored_slot_count(env)?;
        let fs = env.root_fs()?;
        let entries_path = cache_dir(env).join(ENTRIES);
        let entries = fs
            .read_to_string(&entries_path)
            .map_err(|err| Error::io("read scan cache", &entries_path, &err))?;
        let index_path = cache_dir(env).join(INDEX);
        let index = fs
            .read(&index_path)
            .map_err(|err| Error::io("read scan cache", &index_path, &err))?;
        Ok(Loaded {
            entries,
            index,
            slots,
            index_path,
        })
    }

    /// Looks up one entity.
    pub(crate) fn lookup<S: DeserializeOwned>(
        &self,
        env: &Env,
        id: &str,
        refresh: bool,
    ) -> Result<EntityCtx<S>> {
        let encoded = encode_entity_id(id);
        match find_in(&self.index, &self.entries, self.slots, &encoded) {
            Ok(Some(json)) => parse_entry(id, json, refresh),
            Ok(None) => Err(unknown_entity(env, id)),
            Err(()) => Err(damaged(&self.index_path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_in(dir: &std::path::Path) -> Env {
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
    fn any_number_of_entities_takes_two_files_and_every_one_is_found() {
        assert_eq!(slot_count(0), 64);
        assert_eq!(slot_count(10_000), 32_768);
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let entities: Vec<Scanned<u32>> = (0..5000)
            .map(|n| Scanned::new(format!("demo:e{n}"), n))
            .collect();
        store(&env, &entities).expect("store");
        let files = std::fs::read_dir(cache_dir(&env)).expect("dir").count();
        assert_eq!(files, 3, "entries, index and the marker");
        for n in (0..5000).step_by(7) {
            let found: EntityCtx<u32> = lookup(&env, &format!("demo:e{n}"), false).expect("found");
            assert_eq!(found.spec, Some(n));
        }
        assert!(lookup::<u32>(&env, "demo:e5000", false).is_err());
    }

    #[test]
    fn a_damaged_index_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        store(&env, &[Scanned::new("demo:a", 1)]).expect("store");
        std::fs::write(cache_dir(&env).join(INDEX), [0xffu8; 40]).expect("damage");
        let err = lookup::<i32>(&env, "demo:a", false).expect_err("damaged");
        assert!(err.message().contains("damaged"), "{err}");
        let loaded = Loaded::read(&env).expect("read");
        let err = loaded
            .lookup::<i32>(&env, "demo:a", false)
            .expect_err("damaged");
        assert!(err.message().contains("damaged"), "{err}");
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
