//! Global options that name something which is not there are refused,
//! naming it: an unknown `--profile`, a `--state-dir` that does not exist.

use std::path::Path;
use std::process::Output;

fn holos(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_holos"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOLOS_STATE_DIR", dir.join("state"))
        .output()
        .unwrap()
}

fn failure(dir: &Path, args: &[&str]) -> String {
    let out = holos(dir, args);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "holos {args:?}: {said}");
    said
}

#[test]
fn an_unknown_profile_is_refused_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("holos.yaml"),
        "name: pr\nservices:\n  web:\n    image: alpine\n  debug:\n    image: alpine\n    profiles: [dev, test]\n",
    )
    .unwrap();
    for command in [&["validate", "-q"][..], &["config"], &["ps"]] {
        let args: Vec<&str> = ["--profile", "nope"]
            .iter()
            .chain(command)
            .copied()
            .collect();
        let said = failure(dir.path(), &args);
        assert!(
            said.contains(
                "--profile nope: no service of project pr has this profile; its profiles: dev, test"
            ),
            "{command:?}: {said}"
        );
    }
    let out = holos(dir.path(), &["--profile", "dev", "validate", "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_state_dir_that_does_not_exist_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let said = failure(
        dir.path(),
        &["--state-dir", missing.to_str().unwrap(), "ps"],
    );
    assert!(
        said.contains(&format!(
            "the state directory {} (--state-dir) does not exist",
            missing.display()
        )),
        "{said}"
    );
}

#[test]
fn validate_json_gives_the_verdict_and_every_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("holos.yaml"),
        "name: js\nservices:\n  web:\n    image: alpine\n    vm: {vcpu: 0}\n",
    )
    .unwrap();
    let out = holos(dir.path(), &["validate", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["valid"], false);
    let error = &verdict["errors"][0];
    assert_eq!(error["line"], 5);
    assert_eq!(error["path"], "services.web.vm.vcpu");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("must be at least 1"),
        "{verdict}"
    );
    std::fs::write(
        dir.path().join("holos.yaml"),
        "name: js\nservices:\n  web:\n    image: alpine\n",
    )
    .unwrap();
    let out = holos(dir.path(), &["validate", "--json", "-q"]);
    assert!(out.status.success());
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["valid"], true, "{verdict}");
}
