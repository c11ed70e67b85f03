//! A root switched between Holo 3 (its Go driver and plugin) and us, both
//! ways: the base and provisioned images the one wrote are read as they
//! are by the other, and nothing changes.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::support::{Root, ours, populate, printed};

/// Holo 3's driver and its files plugin (one binary under two names),
/// built once per test run.
fn holo3() -> (PathBuf, PathBuf) {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let source = PathBuf::from(test_support::require_env(
            "HOLO3_SOURCE",
            "a Holo 3 checkout to build the Go driver and plugins from",
        ));
        let go = test_support::require_go("to build Holo 3");
        let dir = tempfile::tempdir().unwrap().keep();
        let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("holo3-go-cache");
        test_support::holo3::build(&source, &go, &dir.join("holo"), &cache);
        std::os::unix::fs::symlink("holo", dir.join("holo-files")).unwrap();
        dir
    });
    (dir.join("holo"), dir.join("holo-files"))
}

/// Applies with `first`, then with `second`: the second apply changes
/// nothing and reports no entity, and a diff shows nothing either.
fn switch(first: (PathBuf, PathBuf), second: (PathBuf, PathBuf)) {
    let root = Root::new();
    populate(&root);
    let applied = root.run(&first.0, &first.1, &["apply"]);
    assert!(applied.status.success(), "{}", printed(&applied));
    assert!(printed(&applied).contains("Working on file:/etc/plain.conf"));
    let before = root.snapshot();
    let again = root.run(&second.0, &second.1, &["apply"]);
    assert!(again.status.success(), "{}", printed(&again));
    assert!(
        !printed(&again).contains("file:/"),
        "the second driver worked on entities the first had applied:\n{}",
        printed(&again)
    );
    assert_eq!(root.snapshot(), before, "the second apply changed the root");
    let diff = root.run(&second.0, &second.1, &["diff"]);
    assert_eq!(printed(&diff), "", "holo diff after the switch");
    assert_eq!(root.read("etc/private.conf"), "secret\nkept\n");
    assert_eq!(root.read("etc/linked.conf"), "one\ntwo\nthree\n");
    assert_eq!(root.read("etc/stacked.conf"), "b\nc\n");
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn a_root_applied_by_holo_3_is_taken_over_unchanged() {
    switch(holo3(), ours());
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn a_root_applied_by_us_is_taken_over_by_holo_3_unchanged() {
    switch(ours(), holo3());
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn a_repository_file_removed_after_the_switch_is_scrubbed_as_holo_3_would() {
    for (first, second) in [(holo3(), ours()), (ours(), holo3())] {
        let root = Root::new();
        populate(&root);
        assert!(root.run(&first.0, &first.1, &["apply"]).status.success());
        std::fs::remove_file(root.path("usr/share/holo/files/10-a/etc/plain.conf")).unwrap();
        let scrubbed = root.run(&second.0, &second.1, &["apply"]);
        assert!(
            printed(&scrubbed)
                .contains("Scrubbing file:/etc/plain.conf (all repository files were deleted)"),
            "{}",
            printed(&scrubbed)
        );
        assert_eq!(root.read("etc/plain.conf"), "stock\n");
        assert!(!root.path("var/lib/holo/files/base/etc/plain.conf").exists());
    }
}
