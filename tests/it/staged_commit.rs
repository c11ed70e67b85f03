//! holo-file stages the writes of a batch and commits them together: every
//! temp file is written, made durable, renamed into place, each directory
//! is synced, and then the state records are appended to the record
//! journal. Here the plugin kills itself (test mode's `HOLO_TEST_KILL_AT`)
//! at each step of that commit. Before the renames every target holds its
//! old content; after them every target holds its new content; no record
//! exists before the directories are synced. The next apply converges,
//! keeps every original, records every entity once and leaves no temp file.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HOLO: &str = env!("CARGO_BIN_EXE_holo");
const FILES: usize = 12;

/// holo-file from the workspace's build, beside the driver under test.
fn holo_file() -> PathBuf {
    test_support::binary("holo-file")
}

fn old_content(index: usize) -> String {
    format!("old {index}\n")
}

fn new_content(index: usize) -> String {
    format!("new {index}\n")
}

/// Files in two directories; even ones exist before with old content.
fn target(root: &Path, index: usize) -> PathBuf {
    root.join(format!("etc/d{}/f{index}.conf", index % 2))
}

fn make_root(dir: &Path, plugin: &Path) -> PathBuf {
    let root = dir.join("root");
    for sub in ["run", "usr/share/holo/file", "etc/d0", "etc/d1"] {
        fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    fs::create_dir_all(dir.join("tmp")).expect("mkdir");
    fs::write(
        root.join("etc/holorc"),
        format!("plugin file={}\n", plugin.display()),
    )
    .expect("holorc");
    let me = fs::metadata(dir).expect("stat");
    let mut resources = String::new();
    for index in 0..FILES {
        resources.push_str(&format!(
            "[[file]]\nname = \"/{}\"\ncontent = {:?}\nowner = \"{}\"\ngroup = \"{}\"\nmode = \"0640\"\n\n",
            target(Path::new(""), index).display(),
            new_content(index),
            me.uid(),
            me.gid()
        ));
        if index % 2 == 0 {
            fs::write(target(&root, index), old_content(index)).expect("old file");
        }
    }
    fs::write(root.join("usr/share/holo/file/files.toml"), resources).expect("resources");
    root
}

fn apply(dir: &Path, root: &Path, kill_at: Option<&str>, journal_from: &str) -> Output {
    let mut command = Command::new(HOLO);
    command
        .arg("apply")
        .env("HOLO_TEST_JOURNAL_FROM", journal_from)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", dir.join("tmp"))
        .env_remove("HOLO_NO_BATCH")
        .env_remove("HOLO_TEST_STAGED_FILES");
    match kill_at {
        Some(step) => command.env("HOLO_TEST_KILL_AT", step),
        None => command.env_remove("HOLO_TEST_KILL_AT"),
    };
    let output = command.output().expect("run holo apply");
    // The killed plugin's lock is no concern of this test.
    let _ = fs::remove_file(root.join("run/holo.pid"));
    output
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// How many targets hold their new content; panics on any other content.
fn count_new(root: &Path) -> usize {
    (0..FILES)
        .filter(|index| match fs::read_to_string(target(root, *index)) {
            Ok(text) if text == new_content(*index) => true,
            Ok(text) if index % 2 == 0 && text == old_content(*index) => false,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && index % 2 == 1 => false,
            other => panic!("{}: unexpected {other:?}", target(root, *index).display()),
        })
        .count()
}

fn temp_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.expect("entry");
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(".holo-tmp-")
        {
            found.push(entry.path());
        }
        if entry.file_type().expect("type").is_dir() {
            temp_files(&entry.path(), found);
        }
    }
}

/// Record files, and entities with a record in the journal.
pub fn records(root: &Path) -> usize {
    let state = root.join("var/lib/holo/file");
    let files = fs::read_dir(&state)
        .map(|entries| {
            entries
                .filter(|entry| {
                    entry
                        .as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".toml"))
                })
                .count()
        })
        .unwrap_or(0);
    let journal = fs::read_to_string(state.join("records.journal")).unwrap_or_default();
    let journaled: std::collections::BTreeSet<&str> = journal
        .lines()
        .filter_map(|line| line.strip_prefix("put "))
        .filter_map(|rest| rest.split(' ').next())
        .collect();
    files + journaled.len()
}

#[test]
fn a_commit_killed_at_each_step_leaves_old_or_new_content_and_converges() {
    let plugin = holo_file();
    // Records in the journal, and (a batch smaller than that) in files.
    for (journal_from, step, renamed) in ["1", "1000"].into_iter().flat_map(|from| {
        [
            (from, "staged", false),
            (from, "durable", false),
            (from, "renamed", true),
            (from, "synced", true),
        ]
    }) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = make_root(dir.path(), &plugin);
        let killed = apply(dir.path(), &root, Some(step), journal_from);
        assert_ne!(
            killed.status.code(),
            Some(0),
            "{journal_from} {step}: {}",
            text(&killed)
        );
        let mut strays = Vec::new();
        temp_files(&root, &mut strays);
        assert_eq!(
            records(&root),
            0,
            "{journal_from} {step}: no record before the commit ends"
        );
        if renamed {
            assert_eq!(
                count_new(&root),
                FILES,
                "{journal_from} {step}: every file is in place"
            );
            assert!(strays.is_empty(), "{journal_from} {step}: {strays:?}");
        } else {
            assert_eq!(
                count_new(&root),
                0,
                "{journal_from} {step}: no file is replaced yet"
            );
            assert!(
                !strays.is_empty(),
                "{journal_from} {step}: the staged temp files are there"
            );
        }

        let converged = apply(dir.path(), &root, None, journal_from);
        assert_eq!(converged.status.code(), Some(0), "{}", text(&converged));
        assert!(!text(&converged).contains("!!"), "{}", text(&converged));
        assert_eq!(count_new(&root), FILES, "{journal_from} {step}: converged");
        assert_eq!(
            records(&root),
            FILES,
            "{journal_from} {step}: every entity has a record"
        );
        for index in (0..FILES).step_by(2) {
            let saved = root
                .join("var/lib/holo/file/base")
                .join(target(Path::new(""), index));
            assert_eq!(
                fs::read_to_string(&saved).ok(),
                Some(old_content(index)),
                "{journal_from} {step}: {} holds the original",
                saved.display()
            );
        }
        for index in 0..FILES {
            let meta = fs::metadata(target(&root, index)).expect("stat");
            assert_eq!(
                meta.mode() & 0o7777,
                0o640,
                "{journal_from} {step}: mode of {index}"
            );
        }
        let mut strays = Vec::new();
        temp_files(&root, &mut strays);
        assert!(
            strays.is_empty(),
            "{journal_from} {step}: temp files left: {strays:?}"
        );
    }
}

#[test]
fn a_run_without_batching_folds_the_journal_back_into_record_files() {
    let plugin = holo_file();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = make_root(dir.path(), &plugin);
    let state = root.join("var/lib/holo/file");
    let batched = apply(dir.path(), &root, None, "1");
    assert_eq!(batched.status.code(), Some(0), "{}", text(&batched));
    assert!(state.join("records.journal").exists(), "the batch journals");
    assert_eq!(records(&root), FILES);
    // One change, so that the per-process run writes a record.
    fs::write(target(&root, 3), "edited by hand\n").expect("edit");
    let output = Command::new(HOLO)
        .arg("apply")
        .arg("--force")
        .env("HOLO_ROOT_DIR", &root)
        .env("TMPDIR", dir.path().join("tmp"))
        .env("HOLO_NO_BATCH", "1")
        .output()
        .expect("run holo apply");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!state.join("records.journal").exists(), "folded back");
    assert_eq!(records(&root), FILES, "a record file per entity");
    assert_eq!(count_new(&root), FILES);
    let record = fs::read_to_string(state.join("file:%2Fetc%2Fd1%2Ff3.conf.toml")).expect("record");
    assert!(record.starts_with("version = 1\n"), "{record}");
}
