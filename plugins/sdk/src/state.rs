//! Per-entity state records in `$HOLO_STATE_DIR`, holding `version = 1` and
//! what the plugin last applied.
//!
//! A record is named `<percent-encoded id>.toml` when that name fits in a
//! file name (255 bytes), so records stay readable. A longer id gets
//! `<first 120 bytes of the encoding>~<sha256 hex of the id>.toml`, and that
//! record also holds `entity = "<id>"` so that [`list`] can give the id back.
//!
//! Records are written atomically and only after an apply succeeded, so a
//! crash leaves the old record or the new one, never a torn one. A staging
//! batch appends its records to the record journal instead
//! ([`crate::journal`]), whose entries take precedence over record files.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::atomic;
// The encoding lives below the journal, which names entities the same way.
pub use crate::entity_file_name::{decode_entity_id, encode_entity_id};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::journal::{self, Entry};
use crate::root_fs::RootFs;

/// The record format version this SDK writes and reads.
pub const RECORD_VERSION: i64 = 1;

/// The key holding the format version.
const VERSION_KEY: &str = "version";
/// The first line of every record this SDK writes.
const VERSION_LINE: &str = "version = 1\n";
/// Lines that start with a key the SDK keeps for itself.
const RESERVED_LINES: [&str; 2] = ["\nversion", "\nentity"];
/// The key holding the entity id in records with a hashed name.
const ENTITY_KEY: &str = "entity";
const RECORD_SUFFIX: &str = ".toml";
/// The longest file name Linux file systems take (NAME_MAX).
const MAX_FILE_NAME_BYTES: usize = 255;
/// How much of the encoded id a hashed name keeps, so it stays recognisable.
const HASHED_PREFIX_BYTES: usize = 120;
/// Separates the prefix from the hash; never produced by the encoding.
const HASH_SEPARATOR: char = '~';
const SHA256_HEX_LEN: usize = 64;

/// A file name for entity `id` ending in `suffix`: `<encoded id><suffix>`
/// when that fits in a file name, else
/// `<first 120 bytes of the encoding>~<sha256 hex of id><suffix>`.
/// The two forms never collide: the encoding turns `~` into `%7E`.
pub fn entity_file_name(id: &str, suffix: &str) -> String {
    let encoded = encode_entity_id(id);
    if fits_file_name(&encoded, suffix) {
        format!("{encoded}{suffix}")
    } else {
        format!("{}{suffix}", hashed_stem(id, &encoded))
    }
}

fn fits_file_name(encoded: &str, suffix: &str) -> bool {
    encoded.len() + suffix.len() <= MAX_FILE_NAME_BYTES
}

fn hashed_stem(id: &str, encoded: &str) -> String {
    let mut cut = HASHED_PREFIX_BYTES.min(encoded.len());
    // Back off rather than split a `%XX` escape, so the prefix still decodes.
    if let Some(percent) = encoded[..cut].rfind('%')
        && percent + 3 > cut
    {
        cut = percent;
    }
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    // `encoded` is ASCII, so every byte index is a char boundary.
    format!("{}{HASH_SEPARATOR}{hex}", &encoded[..cut])
}

/// Whether `stem` has the shape of a name from [`hashed_stem`].
fn is_hashed_stem(stem: &str) -> bool {
    stem.split_once(HASH_SEPARATOR)
        .is_some_and(|(prefix, hex)| {
            prefix.len() <= HASHED_PREFIX_BYTES
                && hex.len() == SHA256_HEX_LEN
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// The path of the record for entity `id` (see [`entity_file_name`]).
pub fn record_path(env: &Env, id: &str) -> PathBuf {
    env.state_dir.join(entity_file_name(id, RECORD_SUFFIX))
}

/// Writes the record for `id` atomically: `version = 1`, for a hashed name
/// `entity = "<id>"`, then the fields of `record` (which must serialise to a
/// TOML table without a top-level `version` or `entity` key).
pub fn write<T: Serialize>(env: &Env, id: &str, record: &T) -> Result<()> {
    let path = record_path(env, id);
    let cannot_serialise = |err: &dyn std::fmt::Display| {
        Error::new(format!(
            "entity {id}: cannot serialise the state record for {}: {err}",
            path.display()
        ))
    };
    let body = toml::to_string(record).map_err(|err| cannot_serialise(&err))?;
    // A key the SDK keeps starts a line wherever it is: only then is the
    // body parsed back to see whether it is a top-level one.
    let may_clash = body.lines().any(|line| {
        let line = line.trim_start_matches(['"', '\'']);
        line.starts_with(VERSION_KEY) || line.starts_with(ENTITY_KEY)
    });
    let fields: toml::Table = match may_clash {
        true => toml::from_str(&body).map_err(|err| cannot_serialise(&err))?,
        false => toml::Table::new(),
    };
    for key in [VERSION_KEY, ENTITY_KEY] {
        if fields.contains_key(key) {
            return Err(Error::new(format!(
                "entity {id}: the state record has a top-level `{key}` field, which the SDK keeps for itself; rename that field"
            )));
        }
    }
    let mut contents = VERSION_LINE.to_string();
    if !fits_file_name(&encode_entity_id(id), RECORD_SUFFIX) {
        // The name no longer spells the id, so the record must.
        let entity =
            toml::Table::from_iter([(ENTITY_KEY.to_string(), toml::Value::String(id.to_string()))]);
        contents.push_str(&toml::to_string(&entity).map_err(|err| cannot_serialise(&err))?);
    }
    contents.push_str(&body);
    let fs = env.root_fs()?;
    create_state_dir(&fs, &env.state_dir)?;
    let staging = atomic::staging();
    if staging != Some(true) {
        // Records are files here: the journal is folded back first, or its
        // older entry would hide this record.
        journal::fold(&fs, &env.state_dir, |id| record_path(env, id))?;
    }
    if staging.is_some() {
        let file_name = entity_file_name(id, RECORD_SUFFIX);
        return atomic::stage_record(&fs, &env.state_dir, id, &file_name, contents);
    }
    atomic::write_state_record(&fs, &path, contents.as_bytes())
}

/// Creates the state directory unless this process did: a batch writes
/// many records there.
fn create_state_dir(fs: &RootFs, state_dir: &Path) -> Result<()> {
    static CREATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut created = CREATED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !created.iter().any(|dir| dir == state_dir) {
        fs.create_dir_all(state_dir)
            .map_err(|err| Error::io("create state directory", state_dir, &err))?;
        created.push(state_dir.to_path_buf());
    }
    Ok(())
}

fn invalid_record(path: &Path, problem: impl std::fmt::Display) -> Error {
    Error::new(format!(
        "{}: invalid state record: {problem}; remove the file to forget what was applied",
        path.display()
    ))
}

/// Parses the record for `id` with `parse`, given its text and where it
/// was found: the journal's entry, else the record file.
fn with_record_text<R>(
    env: &Env,
    fs: &RootFs,
    id: &str,
    parse: impl Fn(&str, &dyn Fn() -> PathBuf) -> Result<R>,
) -> Result<Option<R>> {
    let journal_origin = || {
        env.state_dir
            .join(format!("{} (entry {id})", journal::JOURNAL_NAME))
    };
    if let Some(parsed) =
        journal::with_record(fs, &env.state_dir, id, |text| parse(text, &journal_origin))?
    {
        return parsed.map(Some);
    }
    let path = record_path(env, id);
    match read_file(fs, &path)? {
        Some(text) => parse(&text, &|| path.clone()).map(Some),
        None => Ok(None),
    }
}

fn read_file(fs: &RootFs, path: &Path) -> Result<Option<String>> {
    use rustix::fs::{Mode, OFlags};
    // Through the state directory, which a batch keeps open: a first apply
    // looks for thousands of records that are not there yet.
    let looked = fs.at_parent(path, |dir, name| {
        match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => std::io::read_to_string(std::fs::File::from(fd)).map(Some),
            // A symlink is read as before, resolved inside the root.
            Err(rustix::io::Errno::LOOP) => Ok(None),
            Err(err) => Err(err.into()),
        }
    });
    let text = match looked {
        Ok(Some(text)) => Ok(text),
        Ok(None) => fs.read_to_string(path),
        Err(err) => Err(err),
    };
    match text {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io("read state record", path, &err)),
    }
}

/// Parses record text into a table without its `version` key.
fn parse_table(path: &Path, text: &str) -> Result<toml::Table> {
    let mut table: toml::Table =
        toml::from_str(text).map_err(|err| invalid_record(path, err.message()))?;
    match table.remove(VERSION_KEY) {
        Some(toml::Value::Integer(RECORD_VERSION)) => Ok(table),
        other => Err(Error::new(format!(
            "{}: state record has version {}, this plugin reads version {RECORD_VERSION}; remove the file to forget what was applied",
            path.display(),
            other.map_or_else(|| "(none)".to_string(), |v| v.to_string())
        ))),
    }
}

/// Reads a record file into a table without its `version` key.
fn read_table(fs: &RootFs, path: &Path) -> Result<Option<toml::Table>> {
    match read_file(fs, path)? {
        Some(text) => parse_table(path, &text).map(Some),
        None => Ok(None),
    }
}

/// Reads the record for `id`, `None` when there is none.
pub fn read<T: DeserializeOwned>(env: &Env, id: &str) -> Result<Option<T>> {
    read_with(env, id, |_| None)
}

/// Reads the record for `id` as [`read`] does, trying the plugin's own
/// `plain` first: it gets the record's lines after `version = 1` when the
/// record is as this SDK writes it for an id with a readable name, so that
/// a plugin can read its own fields without the TOML parser. When `plain`
/// gives `None` the record is read as [`read`] reads it, which also says
/// what is wrong with it.
pub fn read_with<T: DeserializeOwned>(
    env: &Env,
    id: &str,
    plain: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>> {
    with_record_text(env, &env.root_fs()?, id, |text, origin| {
        // Most records start as this SDK writes them, with no `entity`
        // key: parsed straight into `T`. Anything else, or an error, takes
        // the checked way below, which says what is wrong.
        if let Some(rest) = text.strip_prefix(VERSION_LINE)
            && !RESERVED_LINES
                .iter()
                .any(|key| rest.starts_with(&key[1..]) || rest.contains(key))
        {
            if let Some(record) = plain(rest) {
                return Ok(record);
            }
            // The lines the SDK writes are read without the TOML parser,
            // which costs as much as the rest of a no-op check.
            if let Some(table) = plain_table(rest)
                && let Ok(record) = T::deserialize(toml::Value::Table(table))
            {
                return Ok(record);
            }
            if let Ok(record) = toml::from_str::<T>(rest) {
                return Ok(record);
            }
        }
        let mut table = parse_table(&origin(), text)?;
        match table.remove(ENTITY_KEY) {
            // Records with a readable name have no `entity` key.
            None => {}
            Some(toml::Value::String(recorded)) if recorded == id => {}
            Some(other) => {
                return Err(invalid_record(
                    &origin(),
                    format_args!("it is for entity {other}, not {id}"),
                ));
            }
        }
        T::deserialize(toml::Value::Table(table))
            .map_err(|err| invalid_record(&origin(), err.message()))
    })
}

/// The table of record text written as `toml::to_string` writes plain
/// records: `key = value` lines, where a value is a string without escapes,
/// a decimal integer or a boolean, and `[name]` headers of one level. `None`
/// for anything else (comments, escapes, arrays, a key given twice...),
/// which the TOML parser then reads, so both give the same table.
fn plain_table(text: &str) -> Option<toml::Table> {
    fn bare(key: &str) -> bool {
        !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }
    fn value(text: &str) -> Option<toml::Value> {
        if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            let plain = !inner
                .chars()
                .any(|c| c == '"' || c == '\\' || c.is_control());
            return plain.then(|| toml::Value::String(inner.to_string()));
        }
        match text {
            "true" => return Some(toml::Value::Boolean(true)),
            "false" => return Some(toml::Value::Boolean(false)),
            _ => {}
        }
        let digits = text.strip_prefix('-').unwrap_or(text);
        let decimal = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        decimal
            .then(|| text.parse::<i64>().ok())
            .flatten()
            .map(toml::Value::Integer)
    }
    let mut root = toml::Table::new();
    let mut section: Option<(String, toml::Table)> = None;
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if !bare(name) {
                return None;
            }
            if let Some((done, table)) = section.take() {
                root.insert(done, toml::Value::Table(table));
            }
            if root.contains_key(name) {
                return None;
            }
            section = Some((name.to_string(), toml::Table::new()));
            continue;
        }
        let (key, raw) = line.split_once(" = ")?;
        if !bare(key) {
            return None;
        }
        let table = match &mut section {
            Some((_, table)) => table,
            None => &mut root,
        };
        if table.insert(key.to_string(), value(raw)?).is_some() {
            return None;
        }
    }
    if let Some((done, table)) = section {
        if root.contains_key(&done) {
            return None;
        }
        root.insert(done, toml::Value::Table(table));
    }
    Some(root)
}

/// Removes the record for `id`; a missing record is fine. The file goes
/// first and then the journal's entry, so a crash in between leaves the
/// newest record.
pub fn remove(env: &Env, id: &str) -> Result<()> {
    let path = record_path(env, id);
    let fs = env.root_fs()?;
    match fs.remove_file(&path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io("remove state record", &path, &err)),
    }
    if let Some(Entry::Put(_)) = journal::lookup(&fs, &env.state_dir, id)? {
        atomic::drop_record(&fs, &env.state_dir, id)?;
    }
    Ok(())
}

/// The entity id held by the record at `path`, whose name is hashed.
fn recorded_entity(fs: &RootFs, path: &Path, file_name: &str) -> Result<Option<String>> {
    let Some(mut table) = read_table(fs, path)? else {
        // Removed since the directory was listed.
        return Ok(None);
    };
    let Some(toml::Value::String(id)) = table.remove(ENTITY_KEY) else {
        return Err(invalid_record(
            path,
            format_args!("it has no `{ENTITY_KEY}` string, so its entity is unknown"),
        ));
    };
    if entity_file_name(&id, RECORD_SUFFIX) != file_name {
        return Err(invalid_record(
            path,
            format_args!("it is for entity {id}, whose record has another name"),
        ));
    }
    Ok(Some(id))
}

/// Every entity id that has a record, sorted (for orphan detection in scan).
pub fn list(env: &Env) -> Result<Vec<String>> {
    let mut ids = recorded_ids(env)?;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Every entity id that has a record, in no order, maybe twice (a record
/// file and a journal entry).
fn recorded_ids(env: &Env) -> Result<Vec<String>> {
    let fs = env.root_fs()?;
    // Scan lists the records each run: the place to remove what a killed
    // record write left, even when no record is written again.
    atomic::sweep_leftovers(&fs, &env.state_dir)?;
    let names = match fs.read_dir_names(&env.state_dir) {
        Ok(names) => names,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("list state directory", &env.state_dir, &err)),
    };
    let mut ids = Vec::new();
    for name in names {
        let Some(file_name) = name.to_str() else {
            continue;
        };
        let Some(stem) = file_name.strip_suffix(RECORD_SUFFIX) else {
            continue;
        };
        // Only names this module wrote count; other files are not records.
        if is_hashed_stem(stem) {
            ids.extend(recorded_entity(
                &fs,
                &env.state_dir.join(file_name),
                file_name,
            )?);
        } else if let Some(id) = decode_entity_id(stem).filter(|id| encode_entity_id(id) == stem) {
            ids.push(id);
        }
    }
    ids.extend(journal::ids(&fs, &env.state_dir)?);
    Ok(ids)
}

/// Reads the record journal of `env` ahead of the first record read.
pub(crate) fn preload_journal(env: &Env) {
    if let Ok(fs) = env.root_fs() {
        journal::preload(&fs, &env.state_dir);
    }
}

/// Adds a [`crate::Scanned::orphan`] for every recorded entity that `declared`
/// does not contain, keeping `declared` in its order and orphans sorted after.
pub fn add_orphans<S>(env: &Env, declared: &mut Vec<crate::Scanned<S>>) -> Result<()> {
    add_recorded_orphans(recorded_ids(env)?, declared);
    Ok(())
}

/// Runs `scan` while a thread of its own lists the recorded entities, then
/// adds the orphans as [`add_orphans`] does. Listing reads the record
/// journal, which costs a tenth of the scan of a large resource file and
/// does not depend on it.
pub fn scan_with_orphans<S>(
    env: &Env,
    scan: impl FnOnce() -> Result<Vec<crate::Scanned<S>>>,
) -> Result<Vec<crate::Scanned<S>>> {
    let (declared, recorded) = std::thread::scope(|scope| {
        let lister = std::thread::Builder::new()
            .name("holo-records".to_string())
            .spawn_scoped(scope, || recorded_ids(env));
        let declared = scan();
        let recorded = match lister {
            Ok(lister) => lister
                .join()
                .unwrap_or_else(|_| Err(Error::new("listing the state records failed"))),
            // No thread to be had: list them here.
            Err(_) => recorded_ids(env),
        };
        (declared, recorded)
    });
    let mut declared = declared?;
    add_recorded_orphans(recorded?, &mut declared);
    Ok(declared)
}

fn add_recorded_orphans<S>(recorded: Vec<String>, declared: &mut Vec<crate::Scanned<S>>) {
    let known: std::collections::HashSet<&str> =
        declared.iter().map(|entity| entity.id.as_str()).collect();
    let mut orphans: Vec<String> = recorded
        .into_iter()
        .filter(|id| !known.contains(id.as_str()))
        .collect();
    orphans.sort();
    orphans.dedup();
    declared.extend(orphans.into_iter().map(crate::Scanned::orphan));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Record {
        checksum: String,
        mode: u32,
    }

    fn env_in(dir: &std::path::Path) -> Env {
        let state = dir.join("state");
        let cache = dir.join("cache");
        Env::from_lookup("demo", |key| match key {
            "HOLO_STATE_DIR" => Some(state.clone().into()),
            "HOLO_CACHE_DIR" => Some(cache.clone().into()),
            _ => None,
        })
        .expect("env")
    }

    #[test]
    fn ids_round_trip_through_file_names() {
        for id in [
            "file:/etc/motd",
            "vm:proj/web",
            "x:..",
            ".hidden",
            "a%b\tc",
            "ünï:ç",
        ] {
            let encoded = encode_entity_id(id);
            assert!(
                !encoded.contains('/') && !encoded.starts_with('.'),
                "{encoded}"
            );
            assert_eq!(decode_entity_id(&encoded).as_deref(), Some(id));
        }
        assert_eq!(encode_entity_id("file:/etc/motd"), "file:%2Fetc%2Fmotd");
    }

    #[test]
    fn records_are_written_listed_read_and_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let record = Record {
            checksum: "abc".into(),
            mode: 0o644,
        };
        write(&env, "file:/etc/motd", &record).expect("write");
        let text = std::fs::read_to_string(record_path(&env, "file:/etc/motd")).expect("file");
        assert!(text.starts_with("version = 1\n"), "{text}");
        assert_eq!(
            read::<Record>(&env, "file:/etc/motd").expect("read"),
            Some(record)
        );
        assert_eq!(
            list(&env).expect("list"),
            vec!["file:/etc/motd".to_string()]
        );
        remove(&env, "file:/etc/motd").expect("remove");
        assert_eq!(read::<Record>(&env, "file:/etc/motd").expect("read"), None);
        assert!(list(&env).expect("list").is_empty());
    }

    #[test]
    fn names_that_fit_stay_readable_and_longer_ones_are_hashed() {
        // `x:` plus 248 bytes gives a 250-byte encoding: `.toml` just fits.
        let longest_readable = format!("x:{}", "a".repeat(248));
        assert_eq!(
            entity_file_name(&longest_readable, ".toml"),
            format!("{longest_readable}.toml")
        );
        let one_more = format!("x:{}", "a".repeat(249));
        let hashed = entity_file_name(&one_more, ".toml");
        let digest = Sha256::digest(one_more.as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(hashed, format!("{}~{hex}.toml", &one_more[..120]));
        assert!(is_hashed_stem(hashed.trim_end_matches(".toml")));
        assert!(!is_hashed_stem("file:%2Fetc%2Fmotd"));
    }

    #[test]
    fn hashed_names_do_not_split_an_escape_and_tell_ids_apart() {
        // 118 bytes, then `%2F` would straddle the 120-byte cut.
        let id = format!("x:{}/{}", "a".repeat(116), "b".repeat(300));
        let name = entity_file_name(&id, ".toml");
        let (prefix, _) = name.split_once('~').expect("hashed");
        assert_eq!(prefix, format!("x:{}", "a".repeat(116)));
        let sibling = format!("x:{}/{}c", "a".repeat(116), "b".repeat(299));
        assert_ne!(entity_file_name(&sibling, ".toml"), name);
        assert!(name.len() <= 255, "{}", name.len());
    }

    #[test]
    fn reserved_keys_in_a_record_type_are_an_error_naming_the_entity() {
        #[derive(Serialize)]
        struct Clashing {
            entity: String,
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let err = write(&env, "demo:a", &Clashing { entity: "x".into() })
            .expect_err("entity is reserved");
        assert!(err.message().contains("demo:a"), "{}", err.message());
        assert!(err.message().contains("`entity`"), "{}", err.message());
        assert!(!record_path(&env, "demo:a").exists());
        #[derive(Serialize)]
        struct Nested {
            checksum: String,
            original: Clashing,
        }
        // Only a top-level key clashes.
        let nested = Nested {
            checksum: "x".into(),
            original: Clashing { entity: "y".into() },
        };
        write(&env, "demo:b", &nested).expect("a nested entity key is fine");
        #[derive(Serialize)]
        struct Versioned {
            version: u32,
        }
        let err =
            write(&env, "demo:c", &Versioned { version: 2 }).expect_err("version is reserved");
        assert!(err.message().contains("`version`"), "{}", err.message());
    }

    #[test]
    fn a_record_for_another_entity_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        std::fs::create_dir_all(&env.state_dir).expect("mkdir");
        let path = record_path(&env, "demo:a");
        std::fs::write(
            &path,
            "version = 1\nentity = 'demo:b'\nchecksum = 'x'\nmode = 1\n",
        )
        .expect("write");
        let err = read::<Record>(&env, "demo:a").expect_err("other entity");
        assert!(err.message().contains(&path.display().to_string()));
        assert!(err.message().contains("demo:b"), "{}", err.message());
    }

    fn abc_record() -> Record {
        Record {
            checksum: "abc".into(),
            mode: 1,
        }
    }

    #[test]
    fn a_record_that_is_a_symlink_in_the_state_directory_is_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let record = abc_record();
        write(&env, "demo:a", &record).expect("write");
        let path = record_path(&env, "demo:a");
        let kept = env.state_dir.join("kept-elsewhere");
        std::fs::rename(&path, &kept).expect("move");
        std::os::unix::fs::symlink("kept-elsewhere", &path).expect("link");
        assert_eq!(read::<Record>(&env, "demo:a").expect("read"), Some(record));
        assert_eq!(read::<Record>(&env, "demo:missing").expect("read"), None);
    }

    #[test]
    fn a_hashed_record_without_its_id_is_an_error_when_listing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let id = format!("demo:{}", "z".repeat(300));
        let record = Record {
            checksum: "abc".into(),
            mode: 1,
        };
        write(&env, &id, &record).expect("write");
        let path = record_path(&env, &id);
        std::fs::write(&path, "version = 1\nchecksum = 'abc'\nmode = 1\n").expect("strip id");
        // The caller knows the id, so reading still works.
        assert_eq!(read::<Record>(&env, &id).expect("read"), Some(record));
        let err = list(&env).expect_err("id unknown");
        assert!(err.message().contains(&path.display().to_string()));
        assert!(
            err.message().contains("remove the file"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn plain_record_lines_give_the_table_the_toml_parser_gives() {
        let record = "ensure = \"present\"\nchecksum = \"sha256:ab\"\nowner = 0\ngroup = -12\nmode = \"0644\"\nforce = true\n\n[original]\nkind = \"none\"\nname = \"a = b\"\n";
        let expected: toml::Table = toml::from_str(record).expect("toml");
        assert_eq!(plain_table(record), Some(expected));
        assert_eq!(plain_table(""), Some(toml::Table::new()));
    }

    #[test]
    fn anything_but_plain_record_lines_is_left_to_the_toml_parser() {
        for text in [
            "a = \"x\\ty\"\n",
            "a = \"tab\there\"\n",
            "a = 'x'\n",
            "# note\na = 1\n",
            "a = 1 # note\n",
            "a = [1, 2]\n",
            "a = 1.5\n",
            "a = 0644\n",
            "a = +1\n",
            "a = 99999999999999999999\n",
            "a = 1\na = 2\n",
            "[t]\nb = 1\n[t]\nc = 2\n",
            "t = 1\n[t]\nb = 1\n",
            "a.b = 1\n",
            " a = 1\n",
            "a = 1 \n",
            "a=1\n",
            "[[t]]\nb = 1\n",
            "[t.u]\nb = 1\n",
            "a = { b = 1 }\n",
        ] {
            assert_eq!(plain_table(text), None, "{text:?}");
        }
    }

    #[test]
    fn records_with_escapes_or_comments_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        std::fs::create_dir_all(&env.state_dir).expect("mkdir");
        std::fs::write(
            record_path(&env, "demo:a"),
            "version = 1\n# by hand\nchecksum = \"a\\\"b\"\nmode = 7\n",
        )
        .expect("write");
        assert_eq!(
            read::<Record>(&env, "demo:a").expect("read"),
            Some(Record {
                checksum: "a\"b".into(),
                mode: 7
            })
        );
    }

    #[test]
    fn the_version_line_spells_the_record_version() {
        assert_eq!(VERSION_LINE, format!("{VERSION_KEY} = {RECORD_VERSION}\n"));
    }

    #[test]
    fn a_record_with_a_duplicate_version_is_still_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        std::fs::create_dir_all(&env.state_dir).expect("mkdir");
        let path = record_path(&env, "demo:a");
        std::fs::write(
            &path,
            "version = 1\nchecksum = 'x'\nmode = 1\nversion = 2\n",
        )
        .expect("write");
        let err = read::<Record>(&env, "demo:a").expect_err("duplicate key");
        assert!(err.message().contains(&path.display().to_string()));
    }

    #[test]
    fn wrong_version_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        std::fs::create_dir_all(&env.state_dir).expect("mkdir");
        let path = record_path(&env, "demo:a");
        std::fs::write(&path, "version = 2\nchecksum = 'x'\nmode = 1\n").expect("write");
        let err = read::<Record>(&env, "demo:a").expect_err("version 2");
        assert!(err.message().contains(&path.display().to_string()));
    }

    #[test]
    fn orphans_are_recorded_but_undeclared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let record = abc_record();
        write(&env, "demo:kept", &record).expect("write");
        write(&env, "demo:gone", &record).expect("write");
        std::fs::write(env.state_dir.join("notes by hand.toml"), "x").expect("stray file");
        std::fs::create_dir_all(env.state_dir.join("base")).expect("base dir");
        let mut scanned = vec![crate::Scanned::new("demo:kept", ())];
        add_orphans(&env, &mut scanned).expect("orphans");
        let ids: Vec<&str> = scanned.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["demo:kept", "demo:gone"]);
        assert!(scanned[1].spec.is_none());
    }
}
