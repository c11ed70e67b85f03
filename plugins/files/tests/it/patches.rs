//! `.patch` entries: a unified diff applied with `patch` to the result so
//! far, stacked with the other entries; one that does not apply fails the
//! entity and leaves the target alone.

use crate::support::{Root, ours, printed};

const PATCH: &str = "\
--- a/sshd_config
+++ b/sshd_config
@@ -1,3 +1,3 @@
 Port 22
-PermitRootLogin yes
+PermitRootLogin no
 UsePAM yes
";

#[test]
#[ignore = "needs the patch program (package patch)"]
fn a_patch_applies_to_the_base_and_stacks_with_a_holoscript() {
    test_support::require_tools(&["patch"], "patch");
    let root = Root::new();
    root.write(
        "etc/ssh/sshd_config",
        "Port 22\nPermitRootLogin yes\nUsePAM yes\n",
        0o600,
    );
    root.write(
        "usr/share/holo/files/10-a/etc/ssh/sshd_config.patch",
        PATCH,
        0o644,
    );
    let script = "#!/bin/sh\ncat\necho 'X11Forwarding no'\n";
    root.write(
        "usr/share/holo/files/20-b/etc/ssh/sshd_config.holoscript",
        script,
        0o755,
    );
    let (holo, plugin) = ours();
    let scanned = root.run(&holo, &plugin, &["scan"]);
    assert!(
        printed(&scanned).contains("patch ") && printed(&scanned).contains("sshd_config.patch"),
        "{}",
        printed(&scanned)
    );
    let applied = root.run(&holo, &plugin, &["apply"]);
    assert!(applied.status.success(), "{}", printed(&applied));
    assert_eq!(
        root.read("etc/ssh/sshd_config"),
        "Port 22\nPermitRootLogin no\nUsePAM yes\nX11Forwarding no\n"
    );
    let again = root.run(&holo, &plugin, &["apply"]);
    assert_eq!(printed(&again), "", "a second apply changes nothing");
}

#[test]
#[ignore = "needs the patch program (package patch)"]
fn a_patch_that_does_not_apply_fails_the_entity_and_leaves_the_target() {
    test_support::require_tools(&["patch"], "patch");
    let root = Root::new();
    root.write(
        "etc/ssh/sshd_config",
        "Port 2222\nPermitRootLogin maybe\n",
        0o600,
    );
    root.write(
        "usr/share/holo/files/10-a/etc/ssh/sshd_config.patch",
        PATCH,
        0o644,
    );
    let (holo, plugin) = ours();
    let applied = root.run(&holo, &plugin, &["apply"]);
    let text = printed(&applied);
    assert!(text.contains("!! cannot apply "), "{text}");
    assert!(
        text.contains("make the patch fit the file it applies to"),
        "{text}"
    );
    assert_eq!(
        root.read("etc/ssh/sshd_config"),
        "Port 2222\nPermitRootLogin maybe\n"
    );
}
