//! Test mode stays in the root: links in targets and bases resolve inside
//! it, and a target that is a link is replaced, never written through.

use crate::support::{Root, ours, printed};

#[test]
fn a_link_out_of_the_root_is_followed_inside_it_and_replaced_not_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let host_file = outside.path().join("host.conf");
    std::fs::write(&host_file, "host\n").unwrap();
    let root = Root::new();
    // Absolute and climbing links both name the host file.
    root.symlink("etc/absolute.conf", host_file.to_str().unwrap());
    let climbing = format!("../../../../../../../../..{}", host_file.display());
    root.symlink("etc/climbing.conf", &climbing);
    let script = "#!/bin/sh\ncat\necho added\n";
    root.write(
        "usr/share/holo/files/10-a/etc/absolute.conf.holoscript",
        script,
        0o755,
    );
    root.write(
        "usr/share/holo/files/10-a/etc/climbing.conf",
        "plain\n",
        0o644,
    );
    let (holo, plugin) = ours();
    let applied = root.run(&holo, &plugin, &["apply"]);
    // The absolute link resolves to a path inside the root, which is not there.
    assert!(
        printed(&applied).contains("!! stat "),
        "{}",
        printed(&applied)
    );
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "host\n");
    assert_eq!(root.read("etc/climbing.conf"), "plain\n");
    assert!(
        !std::fs::symlink_metadata(root.path("etc/climbing.conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let base = std::fs::read_link(root.path("var/lib/holo/files/base/etc/climbing.conf")).unwrap();
    assert_eq!(base.to_str().unwrap(), climbing);
}
