//! A file's `source` never reads outside the resource directory or the
//! root: `..` is refused (in test mode and out of it, as `template()`
//! refuses it), and a relative source that is a symlink out of the resource
//! directory is refused. The second case is what a generator makes
//! dangerous: the driver then hands the plugin a copy of the resources
//! below its cache directory, outside the root, where a copied symlink or
//! `..` would reach the host.

use std::fs;
use std::path::Path;
use test_support::plugin_run::PluginRun;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn scan(root: &Path, resource_dir: &Path) -> std::process::Output {
    PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", root)
        .args(["scan"])
        .resource_dir(resource_dir)
        .resource_origin(root.join("usr/share/holo/file"))
        .output()
}

const HOST_SECRET: &str = "host-only-content-5c1e";

fn resource(source: &str) -> String {
    format!(
        "[[file]]\nname = \"/etc/leak\"\nsource = \"{source}\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n"
    )
}

#[test]
fn a_source_with_dot_dot_is_refused_relative_or_absolute() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    write(&dir.path().join("host-file"), HOST_SECRET);
    write(&root.join("etc/hostname"), "in the root\n");
    let resources = root.join("usr/share/holo/file");
    for source in [
        "../../../../../../host-file",
        "files/../../../../../../host-file",
        "/etc/../etc/hostname",
    ] {
        write(&resources.join("leak.toml"), &resource(source));
        let output = scan(&root, &resources);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{source}: {stdout}");
        assert!(
            stderr.contains("leak.toml:") && stderr.contains("has a .. component"),
            "{source}: {stderr}"
        );
        assert!(!stdout.contains("source:"), "{stdout}");
    }
}

#[test]
fn a_copied_symlink_out_of_the_resource_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("etc")).expect("mkdir");
    let host_file = dir.path().join("host-file");
    write(&host_file, HOST_SECRET);
    // The copy a generator run leaves below the driver's cache directory,
    // outside the root, with a symlink as the driver copies it.
    let copy = dir.path().join("cache/generated-resources/file");
    write(&copy.join("leak.toml"), &resource("files/leak"));
    fs::create_dir_all(copy.join("files")).expect("mkdir");
    std::os::unix::fs::symlink(&host_file, copy.join("files/leak")).expect("symlink");
    let output = scan(&root, &copy);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("leak.toml:") && stderr.contains("symlink out of the resource directory"),
        "{stderr}"
    );
    // A plain file in the copy is still a valid source.
    fs::remove_file(copy.join("files/leak")).expect("rm");
    write(&copy.join("files/leak"), "generated\n");
    let output = scan(&root, &copy);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
