//! A resource file whose name is not UTF-8 is refused at scan with its
//! path and what to do, instead of failing later on an entity with
//! "cannot cache its scanned state" and no file named.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use test_support::plugin_run::PluginRun;

#[test]
fn a_resource_file_with_a_non_utf8_name_is_named_with_a_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let resources = root.join("usr/share/holo/file");
    fs::create_dir_all(&resources).expect("mkdir");
    fs::create_dir_all(root.join("tmp/cache")).expect("mkdir");
    fs::write(
        resources.join(OsStr::from_bytes(b"caf\xe9.toml")),
        "[[file]]\nname = \"/etc/motd\"\ncontent = \"x\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
    )
    .expect("write");
    let output = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", &root)
        .args(["scan"])
        .resource_dir(&resources)
        .output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(!stderr.contains("cannot cache"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}/caf\u{fffd}.toml: the file name is not valid UTF-8",
            resources.display()
        )) && stderr.contains("rename it to a UTF-8 name"),
        "{stderr}"
    );
}
