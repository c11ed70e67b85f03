//! `service:nginx` and `service:nginx.service` name one systemd unit:
//! declared both ways, every run would start one and stop the other. Scan
//! refuses them as a duplicate, naming both places.

use std::fs;
use test_support::plugin_run::PluginRun;

#[test]
fn a_unit_declared_with_and_without_its_suffix_is_a_duplicate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let resources = root.join("usr/share/holo/service");
    fs::create_dir_all(&resources).expect("mkdir");
    fs::create_dir_all(root.join("tmp/cache")).expect("mkdir");
    fs::write(
        resources.join("a.toml"),
        "[[service]]\nname = \"nginx\"\nensure = \"running\"\n",
    )
    .expect("write");
    fs::write(
        resources.join("b.toml"),
        "\n[[service]]\nname = \"nginx.service\"\nensure = \"stopped\"\n\n[[service]]\nname = \"cron\"\nensure = \"running\"\n",
    )
    .expect("write");
    let output = PluginRun::new(
        assert_cmd::cargo::cargo_bin!("holo-service"),
        "service",
        &root,
    )
    .args(["scan"])
    .resource_dir(&resources)
    .output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("b.toml:2: service:nginx.service is the same unit nginx.service as service:nginx, first declared at")
            && stderr.contains("a.toml:1; remove one of them"),
        "{stderr}"
    );
}
