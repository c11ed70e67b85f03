//! Per-entity state records: `$HOLO_STATE_DIR/<percent-encoded id>.toml`
//! holding `version = 1` and what the plugin last applied.
//!
//! Records are written atomically and only after an apply succeeded, so a
//! crash leaves the old record or the new one, never a torn one.

use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic;
use crate::env::Env;
use crate::error::{Error, Result};

/// The record format version this SDK writes and reads.
pub const RECORD_VERSION: i64 = 1;

/// Encodes an entity id into a single file name: bytes outside
/// `[A-Za-z0-9:_@+,=-]` and `.` (except a leading one) become `%XX`.
pub fn encode_entity_id(id: &str) -> String {
    let mut encoded = String::with_capacity(id.len() + 8);
    for (index, byte) in id.bytes().enumerate() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b':' | b'_' | b'@' | b'+' | b',' | b'=' | b'-')
            || (byte == b'.' && index > 0);
        if keep {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Reverses [`encode_entity_id`]; `None` for a name it did not produce.
pub fn decode_entity_id(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = encoded.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// The path of the record for entity `id`.
pub fn record_path(env: &Env, id: &str) -> PathBuf {
    env.state_dir.join(format!("{}.toml", encode_entity_id(id)))
}

/// Writes the record for `id` atomically: `version = 1` followed by the
/// fields of `record` (which must serialise to a TOML table).
pub fn write<T: Serialize>(env: &Env, id: &str, record: &T) -> Result<()> {
    let path = record_path(env, id);
    let body = toml::to_string(record).map_err(|err| {
        Error::new(format!(
            "entity {id}: cannot serialise the state record for {}: {err}",
            path.display()
        ))
    })?;
    std::fs::create_dir_all(&env.state_dir)
        .map_err(|err| Error::io("create state directory", &env.state_dir, &err))?;
    let contents = format!("version = {RECORD_VERSION}\n{body}");
    atomic::write(&path, contents.as_bytes(), &atomic::WriteOptions::default())
}

/// Reads the record for `id`, `None` when there is none.
pub fn read<T: DeserializeOwned>(env: &Env, id: &str) -> Result<Option<T>> {
    let path = record_path(env, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io("read state record", &path, &err)),
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(|err| {
        Error::new(format!(
            "{}: invalid state record: {}; remove the file to forget what was applied",
            path.display(),
            err.message()
        ))
    })?;
    match table.remove("version") {
        Some(toml::Value::Integer(RECORD_VERSION)) => {}
        other => {
            return Err(Error::new(format!(
                "{}: state record has version {}, this plugin reads version {RECORD_VERSION}; remove the file to forget what was applied",
                path.display(),
                other.map_or_else(|| "(none)".to_string(), |v| v.to_string())
            )));
        }
    }
    T::deserialize(toml::Value::Table(table))
        .map(Some)
        .map_err(|err| {
            Error::new(format!(
                "{}: invalid state record: {}; remove the file to forget what was applied",
                path.display(),
                err.message()
            ))
        })
}

/// Removes the record for `id`; a missing record is fine.
pub fn remove(env: &Env, id: &str) -> Result<()> {
    let path = record_path(env, id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io("remove state record", &path, &err)),
    }
}

/// Every entity id that has a record, sorted (for orphan detection in scan).
pub fn list(env: &Env) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(&env.state_dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("list state directory", &env.state_dir, &err)),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| Error::io("list state directory", &env.state_dir, &err))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".toml")) else {
            continue;
        };
        // Only names this module wrote count; other files are not records.
        if let Some(id) = decode_entity_id(stem).filter(|id| encode_entity_id(id) == stem) {
            ids.push(id);
        }
    }
    ids.sort();
    Ok(ids)
}

/// Adds a [`crate::Scanned::orphan`] for every recorded entity that `declared`
/// does not contain, keeping `declared` in its order and orphans sorted after.
pub fn add_orphans<S>(env: &Env, declared: &mut Vec<crate::Scanned<S>>) -> Result<()> {
    let known: std::collections::HashSet<String> =
        declared.iter().map(|entity| entity.id.clone()).collect();
    for id in list(env)? {
        if !known.contains(&id) {
            declared.push(crate::Scanned::orphan(id));
        }
    }
    Ok(())
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
        let record = Record {
            checksum: "abc".into(),
            mode: 1,
        };
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
