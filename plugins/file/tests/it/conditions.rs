//! A false condition guards the entity's templates: an entity whose `if`
//! is false is not rendered, so a value it uses need not be defined where
//! it does not apply, and the plugin's scan goes on.

use std::fs;

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
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("holo-file"))
        .arg("scan")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_API_VERSION", "3")
        .env("HOLO_ROOT_DIR", &root)
        .env("HOLO_RESOURCE_DIR", &resources)
        .env("HOLO_STATE_DIR", root.join("var/lib/holo/file"))
        .env("HOLO_CACHE_DIR", root.join("tmp/cache"))
        .output()
        .expect("run holo-file");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("ENTITY: file:/etc/motd"), "{stdout}");
    assert!(stdout.contains("file:/etc/proxy.conf"), "{stdout}");
}
