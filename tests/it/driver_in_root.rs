//! Test mode stays inside the root for the driver's own writes: with
//! `var/lib/holo` and `run` linked to host directories, the state
//! directories, the run report and the lock land in the directories of the
//! same names inside the root (links resolve as if the root were `/`), and
//! nothing is created outside it.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A plugin that, while it applies (holo holds the lock then), notes where
/// the lock file is.
fn plugin(lock_in_root: &Path, lock_outside: &Path) -> String {
    format!(
        r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
  scan) echo "ENTITY: steady:one" ;;
  apply|force-apply)
    test -e '{}' && echo in-root >> "$HOLO_ROOT_DIR/lock-seen"
    test -e '{}' && echo outside >> "$HOLO_ROOT_DIR/lock-seen"
    echo "not changed" >&3 ;;
  *) exit 0 ;;
esac
"#,
        lock_in_root.display(),
        lock_outside.display()
    )
}

/// Every path below `dir`.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

fn in_root(root: &Path, host: &Path) -> PathBuf {
    root.join(host.strip_prefix("/").expect("absolute"))
}

#[test]
fn state_report_and_lock_never_follow_links_out_of_the_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let outside_state = dir.path().join("outside-state");
    let outside_run = dir.path().join("outside-run");
    for sub in [
        "etc",
        "tmp",
        "var/lib",
        "usr/share/holo/steady",
        "usr/lib/holo",
    ] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    for host in [&outside_state, &outside_run] {
        std::fs::create_dir_all(host).expect("mkdir");
        std::fs::create_dir_all(in_root(&root, host)).expect("mkdir");
    }
    symlink(&outside_state, root.join("var/lib/holo")).expect("link");
    symlink(&outside_run, root.join("run")).expect("link");
    std::fs::write(root.join("etc/holorc"), "plugin steady\n").expect("holorc");
    let binary = root.join("usr/lib/holo/holo-steady");
    std::fs::write(
        &binary,
        plugin(
            &in_root(&root, &outside_run).join("holo.pid"),
            &outside_run.join("holo.pid"),
        ),
    )
    .expect("plugin");
    test_support::make_executable(&binary);

    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .args(["apply"])
        .env("HOLO_ROOT_DIR", &root)
        .env("TMPDIR", root.join("tmp"))
        .env("HOLO_TEST_RUN_REPORT", "1")
        .output()
        .expect("run holo");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert_eq!(tree(&outside_state), Vec::<PathBuf>::new(), "{text}");
    assert_eq!(tree(&outside_run), Vec::<PathBuf>::new(), "{text}");
    let state = in_root(&root, &outside_state);
    assert!(state.join("steady").is_dir(), "the state directory, inside");
    assert!(
        state.join("last-run.json").is_file(),
        "the run report, inside"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("lock-seen")).expect("the plugin ran"),
        "in-root\n"
    );
}

#[test]
fn a_link_whose_target_is_missing_in_the_root_fails_without_writing_outside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let outside_state = dir.path().join("outside-state");
    for sub in [
        "etc",
        "tmp",
        "run",
        "var/lib",
        "usr/share/holo/steady",
        "usr/lib/holo",
    ] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    std::fs::create_dir_all(&outside_state).expect("mkdir");
    symlink(&outside_state, root.join("var/lib/holo")).expect("link");
    std::fs::write(root.join("etc/holorc"), "plugin steady\n").expect("holorc");
    let binary = root.join("usr/lib/holo/holo-steady");
    std::fs::write(
        &binary,
        plugin(Path::new("/nonexistent"), Path::new("/nonexistent")),
    )
    .expect("plugin");
    test_support::make_executable(&binary);
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .args(["apply"])
        .env("HOLO_ROOT_DIR", &root)
        .env("TMPDIR", root.join("tmp"))
        .env("HOLO_TEST_RUN_REPORT", "1")
        .output()
        .expect("run holo");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("var/lib/holo/steady"), "{stderr}");
    assert_eq!(tree(&outside_state), Vec::<PathBuf>::new(), "{stderr}");
}
