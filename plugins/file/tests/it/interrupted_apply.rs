//! An apply killed after it saved the original and wrote the target, but
//! before it wrote the state record: the next apply finds the target as
//! the resource wants it and no record. It must keep the saved original
//! (not save the managed content over it), so that removing the resource
//! still restores what the machine had.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::run;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

#[test]
fn the_original_saved_by_a_killed_apply_is_kept_and_restored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let me = fs::metadata(root).expect("stat");
    let resource: PathBuf = root.join("usr/share/holo/file/app.toml");
    write(
        &resource,
        &format!(
            "[[file]]\nname = \"/etc/app.conf\"\ncontent = \"managed\\n\"\nowner = \"{}\"\ngroup = \"{}\"\nmode = \"0644\"\n",
            std::os::unix::fs::MetadataExt::uid(&me),
            std::os::unix::fs::MetadataExt::gid(&me)
        ),
    );
    // What the killed apply left: the original saved, the target written.
    write(
        &root.join("var/lib/holo/file/base/etc/app.conf"),
        "original\n",
    );
    write(&root.join("etc/app.conf"), "managed\n");

    run(root, &["scan"]);
    run(root, &["apply", "file:/etc/app.conf"]);
    assert_eq!(
        fs::read_to_string(root.join("var/lib/holo/file/base/etc/app.conf")).expect("base"),
        "original\n"
    );

    fs::remove_file(&resource).expect("rm");
    run(root, &["scan"]);
    run(root, &["apply", "file:/etc/app.conf"]);
    assert_eq!(
        fs::read_to_string(root.join("etc/app.conf")).expect("restored"),
        "original\n"
    );
}
