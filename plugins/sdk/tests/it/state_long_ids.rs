//! State records work for every entity id: ids whose encoded name would not
//! fit in a file name get a hashed name, and still round-trip through write,
//! read, list, remove and orphan detection.

use holo_plugin::{Env, Scanned, state};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Record {
    checksum: String,
    mode: u32,
}

fn record() -> Record {
    Record {
        checksum: "sha256:abc".into(),
        mode: 0o644,
    }
}

fn env_in(dir: &std::path::Path) -> Env {
    let state = dir.join("state");
    let cache = dir.join("cache");
    Env::from_lookup("file", |key| match key {
        "HOLO_STATE_DIR" => Some(state.clone().into()),
        "HOLO_CACHE_DIR" => Some(cache.clone().into()),
        _ => None,
    })
    .expect("env")
}

/// `file:` and a 185-byte path of 40 `d/` segments: encoded, every `/`
/// takes three bytes and the name would be 277 bytes long.
fn long_file_id() -> String {
    let path = format!("/{}{}", "d/".repeat(40), "f".repeat(104));
    assert_eq!(path.len(), 185);
    format!("file:{path}")
}

fn state_file_names(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(&env.state_dir)
        .expect("state dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .into_string()
                .expect("utf-8")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_long_id_round_trips_through_write_read_list_and_remove() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env_in(dir.path());
    let id = long_file_id();
    state::write(&env, &id, &record()).expect("write");
    assert_eq!(
        state::read::<Record>(&env, &id).expect("read"),
        Some(record())
    );
    assert_eq!(state::list(&env).expect("list"), vec![id.clone()]);

    let names = state_file_names(&env);
    assert_eq!(names.len(), 1);
    let name = &names[0];
    assert!(name.len() <= 200, "{} bytes: {name}", name.len());
    assert!(name.starts_with("file:%2Fd%2Fd%2F"), "{name}");
    assert!(name.ends_with(".toml"), "{name}");
    let text = std::fs::read_to_string(state::record_path(&env, &id)).expect("record");
    assert!(
        text.starts_with(&format!("version = 1\nentity = \"{id}\"\n")),
        "{text}"
    );

    state::remove(&env, &id).expect("remove");
    assert_eq!(state::read::<Record>(&env, &id).expect("read"), None);
    assert!(state::list(&env).expect("list").is_empty());
    assert!(state_file_names(&env).is_empty());
}

#[test]
fn a_normal_id_keeps_its_readable_name_and_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env_in(dir.path());
    state::write(&env, "file:/etc/motd", &record()).expect("write");
    assert_eq!(state_file_names(&env), ["file:%2Fetc%2Fmotd.toml"]);
    let text =
        std::fs::read_to_string(env.state_dir.join("file:%2Fetc%2Fmotd.toml")).expect("record");
    assert_eq!(text, "version = 1\nchecksum = \"sha256:abc\"\nmode = 420\n");
}

#[test]
fn records_written_before_ids_were_stored_still_read_and_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env_in(dir.path());
    std::fs::create_dir_all(&env.state_dir).expect("mkdir");
    // The longest id that had a working record before: a 255-byte name.
    let id = format!("file:/{}", "e".repeat(242));
    let name = format!("file:%2F{}.toml", "e".repeat(242));
    assert_eq!(name.len(), 255);
    std::fs::write(
        env.state_dir.join(&name),
        "version = 1\nchecksum = \"sha256:abc\"\nmode = 420\n",
    )
    .expect("old record");
    assert_eq!(state::record_path(&env, &id), env.state_dir.join(&name));
    assert_eq!(
        state::read::<Record>(&env, &id).expect("read"),
        Some(record())
    );
    assert_eq!(state::list(&env).expect("list"), vec![id]);
}

#[test]
fn ids_with_quotes_and_control_characters_come_back_from_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env_in(dir.path());
    let id = format!("demo:\"quoted\"\t\\ ünï\n{}", "x".repeat(300));
    state::write(&env, &id, &record()).expect("write");
    assert_eq!(state::list(&env).expect("list"), vec![id.clone()]);
    assert_eq!(
        state::read::<Record>(&env, &id).expect("read"),
        Some(record())
    );
}

#[test]
fn add_orphans_finds_an_orphan_with_a_long_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env_in(dir.path());
    let long_id = long_file_id();
    let long_kept = format!("{long_id}-kept");
    for id in [long_id.as_str(), long_kept.as_str(), "file:/etc/motd"] {
        state::write(&env, id, &record()).expect("write");
    }
    let mut scanned = vec![
        Scanned::new("file:/etc/motd", ()),
        Scanned::new(long_kept.clone(), ()),
    ];
    state::add_orphans(&env, &mut scanned).expect("orphans");
    let ids: Vec<&str> = scanned.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["file:/etc/motd", long_kept.as_str(), long_id.as_str()]
    );
    assert!(scanned[2].spec.is_none());
}
