//! Switching a root between Holo 3 (its Go driver and Go plugin) and us
//! (our driver and our plugin): what one applied, the other finds in place,
//! so the first apply after a switch changes nothing, either way.
//!
//! Needs a Holo 3 checkout in `HOLO3_SOURCE` and a Go toolchain (Holo 3 is
//! built offline, as `holo3_suite` builds it), so it is ignored by default.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HOLO: &str = env!("CARGO_BIN_EXE_holo");

/// A driver and the ssh-keys plugin it runs.
struct Side {
    driver: PathBuf,
    plugin: PathBuf,
}

/// Holo 3's one binary, as the driver and, under the name `holo-ssh-keys`,
/// as the plugin.
fn holo3(dir: &Path) -> Side {
    let source = test_support::holo3::require_source();
    let go = test_support::require_go("to build Holo 3");
    fs::create_dir_all(dir).unwrap();
    let driver = dir.join("holo");
    test_support::holo3::build(&source, &go, &driver, &crate::holo3_suite::go_cache());
    let plugin = dir.join("holo-ssh-keys");
    std::os::unix::fs::symlink(&driver, &plugin).unwrap();
    Side { driver, plugin }
}

fn ours() -> Side {
    Side {
        driver: PathBuf::from(HOLO),
        plugin: test_support::binary("holo-ssh-keys"),
    }
}

/// Holo 3's test keys (`test/ssh-keys/data/keyN.pub`).
fn key(n: usize) -> String {
    let source = test_support::holo3::require_source();
    fs::read_to_string(source.join(format!("test/ssh-keys/data/key{n}.pub"))).unwrap()
}

/// A root with two users' key files, a user with keys of their own, and
/// the directories Holo 3's runner makes.
fn make_root(root: &Path) {
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "usr/share/holo/ssh-keys/alice/laptop.pub",
        &(key(0) + &key(1)),
    );
    write("usr/share/holo/ssh-keys/alice/desk.pub", &key(2));
    write("usr/share/holo/ssh-keys/bob/laptop.pub", &key(3));
    write(
        "home/bob/.ssh/authorized_keys",
        &format!("# bob's own\n{}", key(4)),
    );
    for dir in [
        "etc",
        "home/alice",
        "run",
        "tmp",
        "var/lib/holo/ssh-keys",
        "var/lib/holo/files/base",
        "var/lib/holo/files/provisioned",
        "usr/share/holo/generators",
    ] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
}

fn run(side: &Side, root: &Path, args: &[&str]) -> Output {
    let holorc = format!("plugin ssh-keys={}\n", side.plugin.display());
    fs::write(root.join("etc/holorc"), holorc).unwrap();
    let output = Command::new(&side.driver)
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("HOLO_NO_BATCH")
        .env("NO_COLOR", "1")
        .output()
        .expect("the driver runs");
    assert!(
        output.status.success(),
        "{} {args:?} failed:\n{}{}",
        side.driver.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every file and directory below `home/` and `var/lib/holo/ssh-keys/`,
/// with its mode and content.
fn snapshot(root: &Path) -> BTreeMap<String, (u32, String)> {
    let mut found = BTreeMap::new();
    for top in ["home", "var/lib/holo/ssh-keys"] {
        walk(root, &root.join(top), &mut found);
    }
    found
}

fn walk(root: &Path, path: &Path, found: &mut BTreeMap<String, (u32, String)>) {
    let meta = fs::symlink_metadata(path).unwrap();
    let name = path.strip_prefix(root).unwrap().display().to_string();
    let mode = meta.permissions().mode() & 0o7777;
    if meta.is_dir() {
        found.insert(name + "/", (mode, String::new()));
        for entry in fs::read_dir(path).unwrap() {
            walk(root, &entry.unwrap().path(), found);
        }
    } else {
        found.insert(name, (mode, fs::read_to_string(path).unwrap()));
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `first` applies; then `second` applies and must find everything in
/// place: no output, no change.
fn switch(first: &Side, second: &Side, root: &Path) -> BTreeMap<String, (u32, String)> {
    make_root(root);
    run(first, root, &["apply"]);
    let applied = snapshot(root);
    let alice = &applied["home/alice/.ssh/authorized_keys"].1;
    assert_eq!(
        alice.matches("holo=ssh-keyset:alice/laptop").count(),
        2,
        "{alice}"
    );
    let again = run(second, root, &["apply"]);
    assert_eq!(text(&again), "", "the apply after the switch did something");
    assert_eq!(
        snapshot(root),
        applied,
        "the apply after the switch changed the root"
    );
    applied
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn ssh_keys_switch_from_holo3_to_ours_and_back_changes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let holo3 = holo3(&work.path().join("holo3"));
    let ours = ours();

    // Holo 3 first, then ours: and the same result either way.
    let by_holo3 = switch(&holo3, &ours, &work.path().join("from-holo3"));
    let from_ours = work.path().join("from-ours");
    let by_ours = switch(&ours, &holo3, &from_ours);
    assert_eq!(by_holo3, by_ours, "Holo 3 and we provision differently");

    // After the switch, ours shows no diff, and a key set removed since
    // Holo 3 applied it is scrubbed by ours.
    let root = work.path().join("from-holo3");
    assert_eq!(text(&run(&ours, &root, &["diff"])), "");
    fs::remove_file(root.join("usr/share/holo/ssh-keys/alice/desk.pub")).unwrap();
    let scrub = text(&run(&ours, &root, &["apply"]));
    assert!(
        scrub.contains("Scrubbing ssh-keyset:alice/desk (source file has been deleted)"),
        "{scrub}"
    );
    let alice = fs::read_to_string(root.join("home/alice/.ssh/authorized_keys")).unwrap();
    assert!(!alice.contains("alice/desk"), "{alice}");
    let listed = fs::read_to_string(root.join("var/lib/holo/ssh-keys/provisioned-entities"));
    assert_eq!(
        listed.unwrap(),
        "ssh-keyset:alice/laptop\nssh-keyset:bob/laptop\n"
    );
    // And Holo 3, back again, agrees.
    let back = run(&holo3, &root, &["apply"]);
    assert_eq!(text(&back), "", "Holo 3 after our scrub did something");
}
