//! The driver's usage and setup errors, each run through the real `holo`:
//! Holo 3's line where Holo 3 has one, then one line of advice.

use std::path::Path;
use std::process::Command;

/// A plugin with no entities.
const EMPTY_PLUGIN: &str =
    "#!/bin/sh\n[ \"$1\" = info ] && { echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; }\nexit 0\n";

/// A root with holorc declaring plugin `empty`; `resources` says whether
/// its resource directory exists.
fn root(resources: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    if resources {
        std::fs::create_dir_all(root.join("usr/share/holo/empty")).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), "plugin empty\n").unwrap();
    let plugin = root.join("usr/lib/holo/holo-empty");
    std::fs::write(&plugin, EMPTY_PLUGIN).unwrap();
    test_support::make_executable(&plugin);
    dir
}

/// `HOLO_ROOT_DIR=ROOT holo ARGS...`: stderr and the exit code.
fn holo(root: &Path, args: &[&str]) -> (String, i32) {
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", std::env::temp_dir())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_mistyped_option_keeps_holo3_line_then_suggests_the_option() {
    let dir = root(true);
    let (err, code) = holo(dir.path(), &["apply", "--frce"]);
    assert_eq!(
        err,
        "Unrecognized argument: --frce\nDid you mean --force? (see `holo help`)\n"
    );
    assert_eq!(code, 255);
    let (err, _) = holo(dir.path(), &["diff", "--frce"]);
    assert_eq!(
        err,
        "Unrecognized argument: --frce\n`holo diff` takes no options, only selectors (see `holo help`)\n"
    );
}

#[test]
fn an_unknown_selector_still_gets_holo3_line_alone() {
    let dir = root(true);
    let (err, code) = holo(dir.path(), &["scan", "bogus-selector"]);
    assert_eq!(err, "Unrecognized argument: bogus-selector\n");
    assert_eq!(code, 255);
}

#[test]
fn a_missing_resource_directory_says_what_to_create() {
    let dir = root(false);
    let (err, code) = holo(dir.path(), &["scan"]);
    let resources = dir.path().join("usr/share/holo/empty");
    let resources = resources.display();
    assert_eq!(
        err,
        format!(
            "!! cannot open {resources}: stat {resources}: no such file or directory\n\
             plugin empty needs its resource directory: create {resources} (it may stay empty), or remove the plugin's line from holorc\n"
        )
    );
    assert_eq!(code, 255);
}

#[test]
fn a_missing_root_says_to_create_it_or_unset_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let (err, code) = holo(&missing, &["scan"]);
    let missing = missing.display();
    assert_eq!(
        err,
        format!(
            "!! cannot read {missing}/etc/holorc: open {missing}/etc/holorc: no such file or directory\n\
             HOLO_ROOT_DIR={missing} does not exist: create it (with etc/holorc), or unset HOLO_ROOT_DIR to manage /\n"
        )
    );
    assert_eq!(code, 255);
}

#[test]
fn scan_refuses_short_and_porcelain_together() {
    let dir = root(true);
    let (err, code) = holo(dir.path(), &["scan", "-s", "-p"]);
    assert_eq!(
        err,
        "holo scan: -s/--short and -p/--porcelain cannot be combined; choose one\n"
    );
    assert_eq!(code, 2);
}

#[test]
fn version_refuses_an_extra_argument() {
    let dir = root(true);
    let (err, code) = holo(dir.path(), &["version", "extra"]);
    assert_eq!(
        err,
        "holo version: unexpected argument: extra (`holo version` takes no arguments)\n"
    );
    assert_eq!(code, 2);
}

#[test]
fn a_plugin_run_by_hand_says_how_it_is_meant_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = test_support::binary("holo-file");
    let run = |args: &[&str]| {
        Command::new(&plugin)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("TMPDIR", dir.path())
            .output()
            .unwrap()
    };
    let output = run(&["scan"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "!! holo-file is a holo plugin: run it through holo (holo scan, holo diff, holo apply), or set HOLO_RESOURCE_DIR (and HOLO_ROOT_DIR, HOLO_STATE_DIR, HOLO_CACHE_DIR) as holo-plugin-interface(7) says to call `scan` by hand\n\
         !! for a one-off without holo: holo-file ensure NAME --PROPERTY VALUE... or holo-file status NAME\n"
    );
    assert_eq!(output.status.code(), Some(1));
    let info = run(&["info"]);
    assert_eq!(info.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&info.stdout).starts_with("MIN_API_VERSION=3\n"));
    let status = run(&["status", "/nonexistent/holo-test-file"]);
    assert!(
        !String::from_utf8_lossy(&status.stderr).contains("is a holo plugin"),
        "the one-off status needs no environment"
    );
}
