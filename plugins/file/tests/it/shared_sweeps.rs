//! A driver that starts a process per entity (Holo 3's) has each write
//! sweep the temp files that killed writers left in its directory. The
//! processes of one run share their sweeps through the scan cache, so that
//! a directory is listed once per run, not once per file: a temp file that
//! appears after the first write of a run stays until the next run's first
//! write there, which removes it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::support::run;

const LEFTOVER: &str = "etc/app/.holo-tmp-left-by-a-killed-writer";

fn plant(root: &Path) {
    fs::write(root.join(LEFTOVER), "half a fi").expect("plant");
}

#[test]
fn each_run_sweeps_a_directory_once_across_its_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let me = fs::metadata(root).expect("stat");
    let (uid, gid) = (me.uid(), me.gid());
    fs::create_dir_all(root.join("usr/share/holo/file")).expect("mkdir");
    fs::create_dir_all(root.join("etc/app")).expect("mkdir");
    fs::create_dir_all(root.join("tmp")).expect("mkdir");
    let mut resources = String::new();
    for name in ["a", "b", "c"] {
        resources.push_str(&format!(
            "[[file]]\nname = \"/etc/app/{name}.conf\"\ncontent = \"{name}\\n\"\nowner = \"{uid}\"\ngroup = \"{gid}\"\nmode = \"0644\"\n\n"
        ));
    }
    fs::write(root.join("usr/share/holo/file/app.toml"), resources).expect("write");

    // The first write of a run sweeps.
    plant(root);
    run(root, &["scan"]);
    run(root, &["apply", "file:/etc/app/a.conf"]);
    assert!(!root.join(LEFTOVER).exists(), "the first write sweeps");
    // A later process of the same run does not list the directory again.
    plant(root);
    run(root, &["apply", "file:/etc/app/b.conf"]);
    assert_eq!(
        fs::read_to_string(root.join("etc/app/b.conf")).unwrap(),
        "b\n"
    );
    assert!(root.join(LEFTOVER).exists(), "swept once per run");

    // The next run (its scan clears the cache) sweeps again.
    run(root, &["scan"]);
    run(root, &["apply", "file:/etc/app/c.conf"]);
    assert!(!root.join(LEFTOVER).exists(), "the next run sweeps");
}
