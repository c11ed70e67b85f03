//! The `holos` and `holo-vms` binaries, as a user runs them.

mod common;
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

#[test]
fn holo_vms_answers_info_and_rejects_the_rest() {
    let mut cmd = Command::cargo_bin("holo-vms").expect("holo-vms binary");
    cmd.arg("info")
        .assert()
        .success()
        .stdout("MIN_API_VERSION=3\nMAX_API_VERSION=3\n");
    let mut cmd = Command::cargo_bin("holo-vms").expect("holo-vms binary");
    cmd.arg("scan")
        .assert()
        .code(1)
        .stderr("!! unknown operation: scan\n");
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
    let text = stdout(holos(&f).arg("images"));
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("ALIAS"), "{text}");
    let ubuntu = text
        .lines()
        .find(|l| l.starts_with("ubuntu "))
        .unwrap_or_default();
    assert!(
        ubuntu.contains("noble") && ubuntu.contains("systemd") && ubuntu.contains("jammy"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 9);
}
