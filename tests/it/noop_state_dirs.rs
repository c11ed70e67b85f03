//! `holo apply --noop` on a fresh root leaves the root as it was: a plugin
//! that declares the `noop` extension gets no state directory
//! `var/lib/holo/ID/` created (a real apply, and scan as in Holo 3, still
//! create it). A plugin without the extension still gets it, since holo
//! cannot tell what its scan needs. Runs the real driver with the shell
//! plugin of tests/plugins.

use std::fs;
use std::path::Path;
use std::process::Command;

const HOLO: &str = env!("CARGO_BIN_EXE_holo");

/// A fresh root with the shell plugin and one file to install.
fn fresh_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tempdir");
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/holo-shell");
    for dir in ["etc", "run"] {
        fs::create_dir_all(root.path().join(dir)).expect("mkdir");
    }
    fs::write(
        root.path().join("etc/holorc"),
        format!("plugin shell={}\n", plugin.display()),
    )
    .expect("holorc");
    let resource = root.path().join("usr/share/holo/shell/files/etc/motd");
    fs::create_dir_all(resource.parent().expect("parent")).expect("resources");
    fs::write(&resource, "hello\n").expect("resource");
    root
}

fn holo(root: &Path, args: &[&str], extensions: Option<&str>) -> (Option<i32>, String) {
    let mut command = Command::new(HOLO);
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env_remove("HOLO_TEST_RUN_REPORT")
        .env_remove("HOLO_SHELL_EXTENSIONS");
    if let Some(extensions) = extensions {
        command.env("HOLO_SHELL_EXTENSIONS", extensions);
    }
    let output = command.output().expect("holo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

#[test]
fn apply_noop_creates_no_state_directory_for_a_noop_plugin() {
    let root = fresh_root();
    let (code, text) = holo(root.path(), &["apply", "--noop"], None);
    assert_eq!(code, Some(2), "something would change:\n{text}");
    assert!(!root.path().join("var").exists(), "{text}");
    assert!(!root.path().join("etc/motd").exists());

    let (code, text) = holo(root.path(), &["apply"], None);
    assert_eq!(code, Some(0), "{text}");
    assert!(root.path().join("var/lib/holo/shell").is_dir());
}

#[test]
fn apply_noop_still_creates_it_for_a_plugin_without_noop() {
    let root = fresh_root();
    let (code, text) = holo(root.path(), &["apply", "--noop"], Some("order"));
    assert_eq!(code, Some(0), "its entities are skipped:\n{text}");
    assert!(text.contains("does not support --noop"), "{text}");
    assert!(root.path().join("var/lib/holo/shell").is_dir());
}
