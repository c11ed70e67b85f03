//! Compares `holo::diff::render_file_diff` with the real
//! `git diff --no-index`, post-processed the way Holo 3 does it, over
//! generated file pairs: edits of config-like text, missing trailing
//! newlines, empty and missing files, mode changes, symlinks and binary data.
//! Skips (with a note on stderr) when git is not installed.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;

use holo::diff::render_file_diff;
use proptest::prelude::*;

const FROM_DISPLAY: &str = "target/var/lib/holo/files/provisioned/etc/app.conf";
const TO_DISPLAY: &str = "target/etc/app.conf";

fn git_available() -> bool {
    let found = Command::new("git").arg("--version").output().is_ok();
    if !found {
        eprintln!("git not found: skipping the comparison with git diff --no-index");
    }
    found
}

/// Runs `git diff --no-index -- FROM TO` as Holo 3 does and applies Holo 3's
/// regex rewrites, with every git configuration file switched off.
fn holo3_git_diff(dir: &Path, from: &Path, to: &Path) -> Vec<u8> {
    let output = Command::new("git")
        .args(["diff", "--no-index", "--"])
        .arg(from)
        .arg(to)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "git failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut result = Vec::new();
    for line in output.stdout.split_inclusive(|&b| b == b'\n') {
        let ends_with_newline = line.ends_with(b"\n");
        let replacement: Option<Vec<u8>> = if line.starts_with(b"index ") && ends_with_newline {
            Some(Vec::new())
        } else if line.starts_with(b"diff --git ") {
            Some(format!("diff --holo {FROM_DISPLAY} {TO_DISPLAY}").into_bytes())
        } else if line.starts_with(b"--- a/") {
            Some(format!("--- {FROM_DISPLAY}").into_bytes())
        } else if line.starts_with(b"+++ b/") {
            Some(format!("+++ {TO_DISPLAY}").into_bytes())
        } else {
            None
        };
        match replacement {
            None => result.extend_from_slice(line),
            Some(text) if text.is_empty() => {}
            Some(text) => {
                result.extend_from_slice(&text);
                if ends_with_newline {
                    result.push(b'\n');
                }
            }
        }
    }
    result
}

/// How one side of a pair exists on disk.
#[derive(Debug, Clone)]
enum Side {
    Missing,
    File { content: Vec<u8>, executable: bool },
    Symlink { target: String },
}

fn create(path: &Path, side: &Side) {
    match side {
        Side::Missing => {}
        Side::File {
            content,
            executable,
        } => {
            fs::write(path, content).expect("write side");
            let mode = if *executable { 0o755 } else { 0o644 };
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod side");
        }
        Side::Symlink { target } => symlink(target, path).expect("create symlink"),
    }
}

/// Renders a pair both ways and returns (ours, git's).
fn both_ways(old: &Side, new: &Side, dir_name: &str) -> (Vec<u8>, Vec<u8>) {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join(dir_name);
    fs::create_dir_all(&dir).expect("mkdir");
    let from = dir.join("from.conf");
    let to = dir.join("to.conf");
    create(&from, old);
    create(&to, new);
    let ours = render_file_diff(&from, &to, FROM_DISPLAY, TO_DISPLAY).expect("diff renders");
    // Holo 3 hands a missing path to git as /dev/null.
    let git_from = if matches!(old, Side::Missing) {
        Path::new("/dev/null")
    } else {
        &from
    };
    let git_to = if matches!(new, Side::Missing) {
        Path::new("/dev/null")
    } else {
        &to
    };
    let theirs = holo3_git_diff(temp.path(), git_from, git_to);
    (ours, theirs)
}

fn assert_same(old: &Side, new: &Side, dir_name: &str) -> Result<(), TestCaseError> {
    let (ours, theirs) = both_ways(old, new, dir_name);
    prop_assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
        "old: {:?}\nnew: {:?}",
        old,
        new
    );
    Ok(())
}

/// Lines typical of config and source files: repeats, blanks, indentation
/// and braces, so that change groups can slide and git's heuristics matter.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(String::new()),
        2 => Just("}".to_string()),
        2 => Just("    }".to_string()),
        1 => Just("\t\treturn;".to_string()),
        1 => Just("  # comment".to_string()),
        1 => Just("-- a/not-a-header".to_string()),
        1 => Just("++ b/not-a-header".to_string()),
        4 => "[a-z_$][a-z =\"0-9]{0,12}".prop_map(|s| s),
        3 => "(  |\t){1,3}[a-z]{1,6}( = [0-9]{1,3})?".prop_map(|s| s),
        1 => "[a-z]{90,100}   ".prop_map(|s| s),
        1 => "section \\{".prop_map(|s| s),
    ]
}

/// An edit applied to a list of lines.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, Vec<String>),
    Delete(usize, usize),
    Replace(usize, usize, Vec<String>),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), prop::collection::vec(line(), 1..6))
            .prop_map(|(at, l)| Edit::Insert(at, l)),
        (any::<usize>(), 1..5usize).prop_map(|(at, n)| Edit::Delete(at, n)),
        (
            any::<usize>(),
            1..4usize,
            prop::collection::vec(line(), 1..4)
        )
            .prop_map(|(at, n, l)| Edit::Replace(at, n, l)),
    ]
}

fn apply_edits(base: &[String], edits: &[Edit]) -> Vec<String> {
    let mut lines = base.to_vec();
    for edit in edits {
        let len = lines.len();
        match edit {
            Edit::Insert(at, new) => {
                let at = at % (len + 1);
                lines.splice(at..at, new.iter().cloned());
            }
            Edit::Delete(at, n) if len > 0 => {
                let at = at % len;
                let end = (at + n).min(len);
                lines.drain(at..end);
            }
            Edit::Replace(at, n, new) if len > 0 => {
                let at = at % len;
                let end = (at + n).min(len);
                lines.splice(at..end, new.iter().cloned());
            }
            _ => {}
        }
    }
    lines
}

fn join(lines: &[String], trailing_newline: bool) -> Vec<u8> {
    let mut text = lines.join("\n");
    if trailing_newline && !lines.is_empty() {
        text.push('\n');
    }
    text.into_bytes()
}

/// A text pair: a base file and an edited copy.
fn text_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        prop::collection::vec(line(), 0..40),
        prop::collection::vec(edit(), 0..5),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(base, edits, old_newline, new_newline)| {
            let edited = apply_edits(&base, &edits);
            (join(&base, old_newline), join(&edited, new_newline))
        })
}

fn side_from(content: Vec<u8>, kind: u8) -> Side {
    match kind {
        0 => Side::Missing,
        1 => Side::Symlink {
            target: String::from_utf8_lossy(content.split(|&b| b == b'\n').next().unwrap_or(b""))
                .replace('\0', "")
                .chars()
                .take(40)
                .collect::<String>()
                + "target",
        },
        2 => Side::File {
            content,
            executable: true,
        },
        _ => Side::File {
            content,
            executable: false,
        },
    }
}

/// Unrelated files over a tiny alphabet: many equally short edit scripts,
/// so only an exact port of git's tie-breaking agrees with git.
fn tiny_alphabet_file() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(
            prop_oneof![Just("a"), Just("b"), Just("c"), Just(""), Just("  a")],
            0..30,
        ),
        any::<bool>(),
    )
        .prop_map(|(lines, newline)| {
            join(
                &lines.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
                newline,
            )
        })
}

/// Large files with scattered edits, so that xdiff's cost heuristics
/// (more than 256 edits) come into play.
fn large_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        prop::collection::vec(prop_oneof![line(), "[a-z]{1,3}".prop_map(|s| s)], 600..1500),
        prop::collection::vec(edit(), 100..300),
    )
        .prop_map(|(base, edits)| {
            let edited = apply_edits(&base, &edits);
            (join(&base, true), join(&edited, true))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn tiny_alphabet_matches_git(old in tiny_alphabet_file(), new in tiny_alphabet_file()) {
        if git_available() {
            assert_same(
                &Side::File { content: old, executable: false },
                &Side::File { content: new, executable: false },
                "tiny",
            )?;
        }
    }

    #[test]
    fn edited_text_matches_git((old, new) in text_pair()) {
        if git_available() {
            assert_same(
                &Side::File { content: old, executable: false },
                &Side::File { content: new, executable: false },
                "plain",
            )?;
        }
    }

    #[test]
    fn kinds_and_modes_match_git(
        (old, new) in text_pair(),
        old_kind in 0u8..6,
        new_kind in 0u8..6,
    ) {
        if git_available() {
            assert_same(&side_from(old, old_kind), &side_from(new, new_kind), "kinds")?;
        }
    }

    #[test]
    fn binary_content_matches_git(
        old in prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 0..64),
        new in prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 0..64),
        old_kind in 0u8..6,
        new_kind in 2u8..6,
    ) {
        if git_available() {
            assert_same(&side_from(old, old_kind), &side_from(new, new_kind), "binary")?;
        }
    }

    #[test]
    fn paths_that_git_quotes_match_git(
        (old, new) in text_pair(),
        dir_name in prop_oneof![Just("spa ce"), Just("t\u{e4}st"), Just("quo\"te"), Just("back\\slash")],
        old_kind in 0u8..6,
        new_kind in 0u8..6,
    ) {
        if git_available() {
            assert_same(&side_from(old, old_kind), &side_from(new, new_kind), dir_name)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20, ..ProptestConfig::default() })]

    #[test]
    fn large_rewrites_match_git((old, new) in large_pair()) {
        if git_available() {
            assert_same(
                &Side::File { content: old, executable: false },
                &Side::File { content: new, executable: false },
                "large",
            )?;
        }
    }
}
