//! `holo-ssh-keys scan` and `apply` on a root of their own: a key file of
//! the repository becomes a tagged line of the user's `authorized_keys`.
//! (Holo 3's own cases run through `tests/it/holo3_suite.rs`.)

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use test_support::plugin_run::PluginRun;

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

fn root_with_alices_key() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let path = |p: &str| root.path().join(p);
    for dir in [
        "usr/share/holo/ssh-keys/alice",
        "var/lib/holo/ssh-keys",
        "tmp/cache",
        "etc",
        "home/alice",
    ] {
        fs::create_dir_all(path(dir)).unwrap();
    }
    fs::write(
        path("etc/passwd"),
        "alice:x:1000:1000::/home/alice:/bin/sh\n",
    )
    .unwrap();
    fs::write(path("etc/group"), "alice:x:1000:\n").unwrap();
    fs::write(
        path("usr/share/holo/ssh-keys/alice/laptop.pub"),
        format!("{KEY} alice@laptop\n"),
    )
    .unwrap();
    root
}

fn run(root: &Path, args: &[&str]) -> std::process::Output {
    PluginRun::new(env!("CARGO_BIN_EXE_holo-ssh-keys"), "ssh-keys", root)
        .args(args)
        .output()
}

#[test]
fn scan_reports_the_key_set_with_its_fingerprint() {
    let root = root_with_alices_key();
    let scan = run(root.path(), &["scan"]);
    assert!(scan.status.success(), "{scan:?}");
    let report = String::from_utf8_lossy(&scan.stdout);
    assert!(
        report.contains("ENTITY: ssh-keyset:alice/laptop\n"),
        "{report}"
    );
    // What `ssh-keygen -l` prints for this key.
    assert!(
        report.contains(
            "key is: 256 SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU alice@laptop (ED25519)\n"
        ),
        "{report}"
    );
}

#[test]
fn apply_writes_the_tagged_line_owner_only() {
    let root = root_with_alices_key();
    let apply = run(root.path(), &["apply", "ssh-keyset:alice/laptop"]);
    assert!(apply.status.success(), "{apply:?}");
    let keys = root.path().join("home/alice/.ssh/authorized_keys");
    assert_eq!(
        fs::read_to_string(&keys).unwrap(),
        format!("{KEY} holo=ssh-keyset:alice/laptop\n")
    );
    assert_eq!(
        fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        fs::metadata(keys.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
}
