//! What an admin's cron job or timer meets, against real files: a plugin
//! whose binary is missing, a bad holorc line, and the lock file
//! `run/holo.pid` (held by a live process, left behind by a dead one, and
//! two runs racing to take a stale one over).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// A plugin with one entity that is always applied without change.
const STEADY_PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo EXTENSIONS=noop ;;
  scan) echo "ENTITY: steady:one" ;;
  apply|force-apply|noop) echo "not changed" >&3 ;;
  *) exit 0 ;;
esac
"#;

/// A root holding the steady plugin and `holorc`.
fn root(holorc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/share/holo/steady", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), holorc).unwrap();
    let plugin = root.join("usr/lib/holo/holo-steady");
    std::fs::write(&plugin, STEADY_PLUGIN).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn holo_command(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("holo"));
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("NO_COLOR");
    command
}

/// Combined stdout and stderr, and the exit code.
fn holo(root: &Path, args: &[&str]) -> (String, i32) {
    let output = holo_command(root, args).output().unwrap();
    (text(&output), output.status.code().unwrap_or(-1))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_missing_plugin_binary_makes_apply_fail_with_holo3_text() {
    let dir = root("plugin ghost\nplugin steady\n");
    let root = dir.path();
    let holo3_text = format!(
        "!! {}/usr/lib/holo/holo-ghost: file not found\n>> Skipping plugin: ghost\n",
        root.display()
    );
    for (args, expected_code) in [
        (&["apply"][..], 1),
        (&["apply", "--force"][..], 1),
        (&["apply", "--noop"][..], 1),
        (&["scan"][..], 0),
        (&["diff"][..], 0),
    ] {
        let (out, code) = holo(root, args);
        assert_eq!(code, expected_code, "holo {args:?}:\n{out}");
        assert!(out.contains(&holo3_text), "{out}");
    }
    // The plugins that did load still ran.
    let (out, _) = holo(root, &["scan", "--short"]);
    assert!(out.contains("\nsteady:one\n"), "{out}");

    // Without the missing plugin all is well again.
    std::fs::write(root.join("etc/holorc"), "plugin steady\n").unwrap();
    assert_eq!(holo(root, &["apply"]).1, 0);
}

#[test]
fn a_bad_holorc_line_keeps_holo3_text_then_names_file_and_line() {
    let dir = root("plugin steady\n");
    let root = dir.path();
    std::fs::create_dir_all(root.join("etc/holorc.d")).unwrap();
    std::fs::write(
        root.join("etc/holorc.d/10-typo"),
        "# a comment\n\nplugn steady\n",
    )
    .unwrap();
    let (out, code) = holo(root, &["apply"]);
    assert_eq!(code, 255, "{out}");
    assert_eq!(
        out,
        format!(
            "\n!! cannot parse configuration: unknown command: plugn steady\n\
             {}/etc/holorc.d/10-typo:3: a holorc line is `plugin ID`, `plugin ID=BINARY`, a comment (#) or empty; fix or remove this line (see holorc(5))\n",
            root.display()
        )
    );
}
