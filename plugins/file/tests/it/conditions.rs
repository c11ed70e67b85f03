//! A false condition guards the entity's templates: an entity whose `if`
//! is false is not rendered, so a value it uses need not be defined where
//! it does not apply, and the plugin's scan goes on.

use std::fs;
use test_support::plugin_run::PluginRun;

#[test]
fn an_undefined_value_in_a_skipped_entity_does_not_fail_the_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let resources = root.join("usr/share/holo/file");
    fs::create_dir_all(&resources).expect("mkdir");
    fs::create_dir_all(root.join("tmp/cache")).expect("mkdir");
    fs::create_dir_all(root.join("etc/holo")).expect("mkdir");
    fs::write(
        root.join("etc/holo/data.toml"),
        "[data]\nproxy = false\nmode = \"0600\"\n",
    )
    .expect("data");
    fs::write(
        resources.join("app.toml"),
        r#"[[file]]
name = "/etc/proxy.conf"
if = "data.proxy"
content = "upstream {{ data.proxy_settings.host }}\n"
owner = "root"
group = "root"
mode = "{{ data.mode }}"

[[file]]
name = "/etc/motd"
content = "hello\n"
owner = "root"
group = "root"
mode = "0644"
"#,
    )
    .expect("write");
    let output = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", &root)
        .args(["scan"])
        .resource_dir(&resources)
        .output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("ENTITY: file:/etc/motd"), "{stdout}");
    assert!(stdout.contains("file:/etc/proxy.conf"), "{stdout}");
}
