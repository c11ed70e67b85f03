//! Scope across projects with the fake QEMU: `holos ps` where there is no
//! compose file lists every project of the state directory, and
//! `holos inspect PROJECT` shows one project from its record.

use serde_json::Value;

use crate::runtime_support;
use runtime_support::{Project, Qemu};

const FIRST: &str = "name: alpha\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    ports: [\"80\"]\n";
const SECOND: &str = "name: beta\nservices:\n  db:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    volumes: [data:/srv]\nvolumes:\n  data: {size: 8M}\n";

#[test]
#[ignore = "needs qemu-img"]
fn ps_without_a_compose_file_lists_every_project_and_inspect_shows_a_project() {
    runtime_support::require_qemu_img();
    let alpha = Project::new(FIRST, Qemu::Fake);
    let beta = Project::new(SECOND, Qemu::Fake);
    let state = alpha.state();
    alpha.ok(&["up", "--no-wait"]);
    beta.ok_with(
        beta.holos(&["up", "--no-wait"])
            .env("HOLOS_STATE_DIR", &state),
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = alpha
            .holos(args)
            .current_dir(elsewhere.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "holos {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };

    let rows: Value = serde_json::from_str(&run(&["ps", "--json"])).unwrap();
    let names: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["project"].as_str().unwrap(),
                r["instance"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("alpha", "web-0"), ("beta", "db-0")]);
    let table = run(&["ps"]);
    assert!(table.starts_with("PROJECT "), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("beta ") && l.contains("db-0")),
        "{table}"
    );
    // In a project's directory, ps keeps to that project.
    assert_eq!(alpha.ps().len(), 1);

    let view: Value = serde_json::from_str(&run(&["inspect", "beta", "--json"])).unwrap();
    assert_eq!(view["project"], "beta");
    assert_eq!(view["manifest"]["project"], "beta");
    assert_eq!(
        view["files"][0].as_str().unwrap(),
        beta.path().join("holos.yaml").to_str().unwrap()
    );
    let db = &view["instances"][0];
    assert_eq!(db["instance"], "db-0");
    assert_eq!(db["state"], "running");
    // The argv is the one the running QEMU got.
    let argv: Vec<String> = serde_json::from_value(db["qemu_argv"].clone()).unwrap();
    assert_eq!(argv[0], "qemu-system-x86_64");
    let live = runtime_support::cmdline(db["pid"].as_u64().unwrap() as u32);
    assert_eq!(argv[1..], live[1..]);
    assert!(
        db["ssh_command"]
            .as_str()
            .unwrap()
            .contains(&format!("-p {} ", db["ssh_port"])),
        "{db}"
    );
    assert_eq!(view["volumes"][0]["name"], "data");
    let text = run(&["inspect", "alpha"]);
    assert!(text.starts_with("project:   alpha\n"), "{text}");
    assert!(text.contains("\ninstance web-0 (web)\n"), "{text}");
    assert!(
        text.contains("  qemu:    qemu-system-x86_64 -name "),
        "{text}"
    );
    assert!(text.contains("->80/tcp"), "{text}");

    beta.ok_with(beta.holos(&["down"]).env("HOLOS_STATE_DIR", &state));
}
