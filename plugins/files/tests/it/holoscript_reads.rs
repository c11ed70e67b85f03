//! A holoscript runs after every target before it in the run is in place,
//! as in Holo 3, which applies targets one by one: one that reads another
//! target sees that target's new content, also in a batch.

use crate::support::{Root, ours, printed};

#[test]
fn a_holoscript_reads_the_new_content_of_a_target_applied_before_it() {
    let root = Root::new();
    root.write("etc/a.conf", "old a\n", 0o644);
    root.write("etc/b.conf", "b\n", 0o644);
    root.write("usr/share/holo/files/10-a/etc/a.conf", "new a\n", 0o644);
    let script = "#!/bin/sh\ncat\ncat \"$HOLO_ROOT_DIR/etc/a.conf\"\n";
    root.write(
        "usr/share/holo/files/10-a/etc/b.conf.holoscript",
        script,
        0o755,
    );
    let (holo, plugin) = ours();
    let applied = root.run(&holo, &plugin, &["apply"]);
    assert!(applied.status.success(), "{}", printed(&applied));
    assert_eq!(root.read("etc/a.conf"), "new a\n");
    assert_eq!(
        root.read("etc/b.conf"),
        "b\nnew a\n",
        "the holoscript of b.conf read a.conf before it was in place"
    );
    let again = root.run(&holo, &plugin, &["apply"]);
    assert_eq!(printed(&again), "", "a second apply changes nothing");
}
