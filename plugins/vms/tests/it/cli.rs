//! The `holos` and `holo-vms` binaries, as a user runs them.

use crate::common;
use assert_cmd::Command;
use common::Fixture;

fn holos(f: &Fixture) -> Command {
    let mut cmd = Command::cargo_bin("holos").expect("holos binary");
    cmd.current_dir(f.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run holos");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn validate_exits_zero_on_a_valid_project() {
    let f = Fixture::new(&[("holos.yaml", "services:\n  web: {image: alpine}\n")]);
    holos(&f)
        .arg("validate")
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

#[test]
fn validate_lists_every_error_and_exits_one() {
    let f = Fixture::new(&[(
        "bad.yaml",
        "services:\n  web:\n    image: alpine\n    prots: []\n  db:\n    image: nosuch\n",
    )]);
    let out = holos(&f)
        .args(["validate", "-f", "bad.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&f.path().display().to_string(), "DIR");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(
        lines[0],
        "DIR/bad.yaml:4:5: services.web.prots: unknown key; did you mean \"ports\"?"
    );
    assert!(
        lines[1]
            .starts_with("DIR/bad.yaml:6:12: services.db.image: unknown image alias \"nosuch\"")
    );
    assert_eq!(lines[2], "holos: 2 errors found");
}

#[test]
fn config_prints_a_normalised_file_that_reads_back() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  web:\n    image: ${IMG:-alpine}\n    environment: {LIT: $$HOME}\n",
        ),
        (
            "holos.override.yaml",
            "services:\n  web:\n    replicas: 2\n",
        ),
    ]);
    let text = stdout(holos(&f).arg("config"));
    let name = f
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace('.', "");
    let name = name.trim_start_matches(['_', '-']);
    assert_eq!(
        text,
        format!(
            "name: {name}\nservices:\n  web:\n    image: alpine\n    environment:\n      LIT: $$HOME\n    replicas: 2\n"
        )
    );
    std::fs::write(f.path().join("out.yaml"), &text).expect("write");
    let again = stdout(holos(&f).args(["config", "-f", "out.yaml"]));
    assert_eq!(again, text);
    let json: serde_json::Value =
        serde_json::from_str(&stdout(holos(&f).args(["config", "--format", "json"])))
            .expect("json");
    assert_eq!(json["services"]["web"]["replicas"], 2);
}

#[test]
fn config_resolved_prints_the_manifest() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "name: demo\nservices:\n  web: {image: alpine, replicas: 2, ports: [\"8080:80\"]}\n",
    )]);
    let json: serde_json::Value = serde_json::from_str(&stdout(holos(&f).args([
        "config",
        "--resolved",
        "--format",
        "json",
    ])))
    .expect("json");
    assert_eq!(json["project"], "demo");
    let instance = &json["services"][0]["instances"][1];
    assert_eq!(instance["name"], "web-1");
    assert_eq!(instance["ip"], "10.10.0.3");
    assert_eq!(instance["mac_internal"], "52:54:00:0a:0a:03");
    assert_eq!(instance["ports"][0]["host_port"], 8081);
    let yaml = stdout(holos(&f).args(["config", "--resolved"]));
    assert!(yaml.contains("mac_user: \"52:54:01:0a:0a:02\""), "{yaml}");
}

#[test]
fn profiles_and_project_name_from_the_command_line() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "services:\n  web: {image: alpine}\n  dbg: {image: alpine, profiles: [debug]}\n",
    )]);
    let json: serde_json::Value = serde_json::from_str(&stdout(holos(&f).args([
        "--profile",
        "debug",
        "-p",
        "MyApp",
        "config",
        "--resolved",
        "--format",
        "json",
    ])))
    .expect("json");
    assert_eq!(json["project"], "myapp");
    assert_eq!(json["services"].as_array().map(Vec::len), Some(2));
    let json: serde_json::Value = serde_json::from_str(&stdout(
        holos(&f)
            .env("COMPOSE_PROFILES", "debug")
            .args(["config", "--format", "json"]),
    ))
    .expect("json");
    assert!(json["services"]["dbg"].is_object());
}

#[test]
fn compose_file_variable_replaces_discovery() {
    let f = Fixture::new(&[("other.yaml", "services:\n  a: {image: alpine}\n")]);
    holos(&f).arg("validate").assert().code(1);
    holos(&f)
        .env("COMPOSE_FILE", "other.yaml")
        .arg("validate")
        .assert()
        .success();
}

fn holo_vms() -> Command {
    let mut cmd = Command::cargo_bin("holo-vms").expect("holo-vms binary");
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd
}

#[test]
fn holo_vms_answers_info_through_the_sdk_and_scans_no_resources_as_nothing() {
    holo_vms().arg("info").assert().success().stdout(
        "MIN_API_VERSION=3\nMAX_API_VERSION=3\nEXTENSIONS=noop,order,batch,inplace,batch-order,run-lock,monitor\n",
    );
    let root = tempfile::tempdir().expect("root");
    holo_vms()
        .env("HOLO_ROOT_DIR", root.path())
        .arg("scan")
        .assert()
        .success()
        .stdout("")
        .stderr("");
    holo_vms()
        .env("HOLO_ROOT_DIR", root.path())
        .args(["apply", "vm:demo/web"])
        .assert()
        .code(1)
        .stderr(
            "!! unknown entity vm:demo/web: holo-vms scan did not report it; check the id with `holo scan`\n",
        );
    holo_vms()
        .arg("bogus")
        .assert()
        .code(1)
        .stderr("!! unknown operation: bogus\n");
}

#[test]
fn holo_vms_holos_and_a_binary_named_holos_are_the_same_command_line() {
    let f = Fixture::new(&[("holos.yaml", "services:\n  web: {image: nosuch}\n")]);
    let via_plugin = holo_vms()
        .current_dir(f.path())
        .args(["holos", "validate"])
        .output()
        .expect("run holo-vms holos");
    let direct = holos(&f).arg("validate").output().expect("run holos");
    assert_eq!(via_plugin.status.code(), Some(1));
    assert_eq!(via_plugin.stderr, direct.stderr);
    assert!(
        String::from_utf8_lossy(&direct.stderr).contains("unknown image alias \"nosuch\""),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );
    // argv[0] chooses: holo-vms started under the name holos is holos.
    let link = f.path().join("holos");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("holo-vms"), &link).expect("symlink");
    let out = std::process::Command::new(&link)
        .arg("images")
        .output()
        .expect("run the symlink");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ALIAS"));
}

#[test]
fn non_utf8_environment_and_arguments_do_not_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::new(&[(
        "holos.yaml",
        "services:\n  web:\n    image: alpine\n    environment: {RAW: \"${RAW}\"}\n",
    )]);
    let raw = OsStr::from_bytes(b"a\xffb");
    // A non-UTF-8 value is used with U+FFFD; a non-UTF-8 name is left out.
    let text = stdout(
        holos(&f)
            .env("RAW", raw)
            .env(OsStr::from_bytes(b"N\xff"), "x")
            .args(["config", "--format", "json"]),
    );
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["services"]["web"]["environment"]["RAW"], "a\u{fffd}b");
    // A compose file whose name is not UTF-8 is a path like any other.
    let name = OsStr::from_bytes(b"\xff.yaml");
    std::fs::copy(f.path().join("holos.yaml"), f.path().join(name)).expect("copy");
    holos(&f)
        .env("RAW", "x")
        .arg("-f")
        .arg(name)
        .arg("validate")
        .assert()
        .success();
    // A non-UTF-8 word where a command belongs is a usage error.
    holos(&f).arg(raw).assert().code(2);
    // The plugin takes operations and entity ids as UTF-8 text only.
    let out = holo_vms()
        .args([OsStr::new("holos"), raw])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("!! argument a\u{fffd}b is not valid UTF-8"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unset_variables_warn_but_do_not_fail() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "services:\n  web:\n    image: alpine\n    environment: {A: \"${MISSING}\", B: \"${MISSING:-ok}\"}\n",
    )]);
    let out = holos(&f).arg("validate").output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&f.path().display().to_string(), "DIR");
    assert_eq!(
        stderr,
        "warning: DIR/holos.yaml:4:22: services.web.environment.A: variable MISSING is not set, using an empty string; set it or give a default with ${MISSING:-…}\n"
    );
}

#[test]
fn images_lists_the_aliases_without_a_project() {
    let f = Fixture::new(&[]);
    let state = f.path().join("state");
    let text = stdout(holos(&f).env("HOLOS_STATE_DIR", &state).arg("images"));
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("ALIAS"), "{text}");
    let words = |alias: &str, tag: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.split_whitespace().take(2).eq([alias, tag]))
            .unwrap_or_else(|| panic!("no {alias} {tag} in\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // ALIAS TAG ALSO DEFAULT OS USER MIN_MB CACHED; nothing is cached yet.
    assert_eq!(
        words("ubuntu", "noble"),
        [
            "ubuntu", "noble", "24.04", "*", "systemd", "ubuntu", "512", "no"
        ]
    );
    assert_eq!(words("debian", "bookworm")[2], "12");
    assert_eq!(words("alpine", "3.23")[2], "-", "a tag with no other name");
    assert_eq!(
        words("ubuntu", "jammy"),
        ["ubuntu", "jammy", "22.04", "systemd", "ubuntu", "512", "no"]
    );
    assert_eq!(words("alpine", "3.23")[4], "openrc");
    let tags: usize = holos_compose::images::table()
        .image
        .iter()
        .map(|i| i.tags.len())
        .sum();
    assert_eq!(text.lines().count(), 1 + tags);

    // --json: one object per tag, the other names as a list.
    let json = stdout(
        holos(&f)
            .env("HOLOS_STATE_DIR", &state)
            .args(["images", "--json"]),
    );
    let rows: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), tags);
    let trixie = rows
        .iter()
        .find(|r| r["alias"] == "debian" && r["tag"] == "trixie")
        .expect("debian trixie");
    assert_eq!(
        trixie,
        &serde_json::json!({
            "alias": "debian",
            "tag": "trixie",
            "also": ["13"],
            "default": false,
            "os": "systemd",
            "user": "debian",
            "min_memory_mb": 512,
            "cached": false,
        })
    );
    assert!(
        rows.iter()
            .any(|r| r["tag"] == "noble" && r["default"] == true)
    );
    assert!(!state.exists(), "listing creates no state");
}

#[test]
fn runtime_commands_parse_their_options_and_need_instances() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "name: demo\nservices:\n  web: {image: alpine}\n",
    )]);
    for args in [
        &["stop", "web"][..],
        &["start"],
        &["logs", "web-0", "-f"],
        &["console", "web-0"],
    ] {
        let out = holos(&f)
            .env("HOLO_ROOT_DIR", f.path())
            .args(args)
            .output()
            .expect("run holos");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "holos: project demo has no instances; create them with holos up\n",
            "{args:?}"
        );
    }
    // exec keeps ssh's convention: 255 when it cannot reach the guest.
    let out = holos(&f)
        .env("HOLO_ROOT_DIR", f.path())
        .args([
            "exec",
            "web-0",
            "-u",
            "root",
            "-w",
            "30s",
            "--",
            "sh",
            "-c",
            "echo a > /x",
        ])
        .output()
        .expect("run holos");
    assert_eq!(out.status.code(), Some(255));
    // down of a project without instances has nothing to do.
    let out = holos(&f)
        .env("HOLO_ROOT_DIR", f.path())
        .args(["down", "demo"])
        .output()
        .expect("run holos");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "holos: project demo has no instances\n"
    );
    // ps lists nothing but the header.
    let out = holos(&f)
        .env("HOLO_ROOT_DIR", f.path())
        .args(["ps", "--json"])
        .output()
        .expect("run holos");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[]\n");
}

#[test]
fn version_prints_the_version_without_a_project() {
    let f = Fixture::new(&[]);
    holos(&f)
        .arg("version")
        .assert()
        .success()
        .stdout(format!("holos {}\n", env!("CARGO_PKG_VERSION")));
}
