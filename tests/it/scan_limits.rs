//! Over-long names are refused at scan, at their resource's line, naming
//! the limit and echoing only the start of the value: `holo scan` through
//! the real driver and plugins on a test root.

use std::path::Path;
use std::process::Command;

/// A root where `plugin` is declared and has `resource` as `10-long.toml`.
fn root_with(plugin: &str, resource: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let resources = root.join("usr/share/holo").join(plugin);
    std::fs::create_dir_all(&resources).unwrap();
    std::fs::write(resources.join("10-long.toml"), resource).unwrap();
    std::fs::write(root.join("etc/holorc"), format!("plugin {plugin}\n")).unwrap();
    let binary = test_support::binary(&format!("holo-{plugin}"));
    std::os::unix::fs::symlink(binary, root.join(format!("usr/lib/holo/holo-{plugin}"))).unwrap();
    dir
}

/// `HOLO_ROOT_DIR=ROOT holo scan`: stderr, and whether it failed.
fn scan(root: &Path) -> (String, bool) {
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .arg("scan")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stderr).into_owned(),
        !output.status.success(),
    )
}

fn expected(root: &Path, plugin: &str, message: &str) -> String {
    let file = root.join(format!("usr/share/holo/{plugin}/10-long.toml"));
    format!(
        "!! {}:3: {message}\n!! scan with plugin {plugin} failed: exit status 1\n",
        file.display()
    )
}

#[test]
fn a_path_component_over_255_bytes_is_refused_at_scan() {
    let long = "a".repeat(300);
    let dir = root_with(
        "file",
        &format!("\n[[file]]\nname = \"/etc/{long}\"\ncontent = \"x\"\n"),
    );
    let (err, failed) = scan(dir.path());
    let start = "a".repeat(32);
    let message = format!(
        "property `name`: a component of the path is 300 bytes long, over the limit of 255 bytes: \"{start}...\""
    );
    assert_eq!(err, expected(dir.path(), "file", &message));
    assert!(failed);
}

#[test]
fn a_service_name_over_255_bytes_is_refused_at_scan() {
    let long = "s".repeat(5000);
    let dir = root_with(
        "service",
        &format!("\n[[service]]\nname = \"{long}\"\nensure = \"running\"\n"),
    );
    let (err, failed) = scan(dir.path());
    let start = "s".repeat(32);
    let message = format!(
        "[[service]] service name is 5000 bytes long, over the limit of 255 bytes: \"{start}...\"; fix the property's value"
    );
    assert_eq!(err, expected(dir.path(), "service", &message));
    assert!(failed);
}

#[test]
fn a_package_name_over_255_bytes_is_refused_at_scan() {
    let long = "p".repeat(100_000);
    let dir = root_with(
        "package",
        &format!("\n[[package]]\nname = \"{long}\"\nensure = \"present\"\n"),
    );
    let (err, failed) = scan(dir.path());
    let start = "p".repeat(32);
    let message =
        format!("package name is 100000 bytes long, over the limit of 255 bytes: \"{start}...\"");
    assert_eq!(err, expected(dir.path(), "package", &message));
    assert!(failed);
}

#[test]
fn puppets_ensure_installed_gets_a_did_you_mean_present() {
    let dir = root_with(
        "package",
        "\n[[package]]\nname = \"vim\"\nprovider = \"apt\"\nensure = \"installed\"\n",
    );
    let (err, failed) = scan(dir.path());
    let message = "package \"vim\": ensure = \"installed\" is Puppet's word (did you mean \"present\"?); use \"present\", \"absent\", \"latest\" or a version";
    let file = dir.path().join("usr/share/holo/package/10-long.toml");
    assert_eq!(
        err,
        format!(
            "!! {}:5: {message}\n!! scan with plugin package failed: exit status 1\n",
            file.display()
        )
    );
    assert!(failed);
}
