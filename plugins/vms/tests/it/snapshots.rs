//! `holos snapshots`: online through QMP with the fake QEMU (which puts the
//! snapshot in the qcow2 file with the real qemu-img), offline with the real
//! qemu-img, restore with its volume check, and export to a standalone qcow2.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::runtime_support;
use runtime_support::qemu_img::{same_contents, snapshot_names, write_pattern};
use runtime_support::{Project, Qemu, fails, stdout};

const COMPOSE: &str = "name: snap\nservices:\n  db:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    volumes: [data:/var/lib/db]\nvolumes:\n  data: {size: 16M}\n";

fn list(p: &Project) -> Vec<Value> {
    let text = stdout(p, &["snapshots", "list", "db-0", "--json"]);
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn backing_file(image: &Path) -> Value {
    let out = Command::new("qemu-img")
        .args(["info", "--output=json"])
        .arg(image)
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    info["backing-filename"].clone()
}

#[test]
#[ignore = "needs qemu-img"]
fn a_running_instance_is_snapshotted_through_qmp_and_restore_stops_reverts_and_restarts_it() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let pid = p.pid_of("db-0").unwrap();
    let disk = p.state().join("instances/snap/db-0/root.qcow2");

    assert_eq!(
        stdout(&p, &["snapshots", "create", "db-0", "before"]),
        "before\n"
    );
    assert_eq!(snapshot_names(&disk), ["before"]);
    assert_eq!(p.pid_of("db-0"), Some(pid), "the instance kept running");
    let said = fails(&p, &["snapshots", "create", "db", "before"]);
    assert!(
        said.contains("db-0 already has a snapshot before; pick another name or remove it with holos snapshots rm db-0 before"),
        "{said}"
    );
    let said = fails(&p, &["snapshots", "create", "db-0", "12"]);
    assert!(
        said.contains("snapshot name \"12\" is not usable"),
        "{said}"
    );
    let rows = list(&p);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["name"], "before");
    assert_eq!(rows[0]["volumes_changed"], serde_json::json!([]));
    let table = stdout(&p, &["snapshots", "list", "db-0"]);
    assert!(
        table.lines().nth(1).unwrap().starts_with("before "),
        "{table}"
    );

    // Online removal goes through QMP as well; the file loses it.
    p.ok(&["snapshots", "create", "db-0", "scratch"]);
    assert_eq!(snapshot_names(&disk), ["before", "scratch"]);
    p.ok(&["snapshots", "rm", "db-0", "scratch"]);
    assert_eq!(snapshot_names(&disk), ["before"]);
    let said = fails(&p, &["snapshots", "rm", "db-0", "scratch"]);
    assert!(
        said.contains("db-0 has no snapshot \"scratch\"; it has: before"),
        "{said}"
    );

    // Export while running: the disk at the snapshot, without backing file.
    let exported = p.path().join("before.qcow2");
    p.ok(&[
        "snapshots",
        "export",
        "db-0",
        "before",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(backing_file(&exported), Value::Null);
    assert!(same_contents(&exported, &disk));
    let said = fails(
        &p,
        &[
            "snapshots",
            "export",
            "db-0",
            "before",
            "-o",
            exported.to_str().unwrap(),
        ],
    );
    assert!(
        said.contains("exists; remove it or pass another -o FILE"),
        "{said}"
    );

    // The "guest" writes to its root disk and to its volume.
    write_pattern(&disk, "qcow2", "0xab");
    assert!(!same_contents(&exported, &disk));
    let volume = p.state().join("volumes/snap/data.qcow2");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&volume)
        .unwrap()
        .set_modified(later)
        .unwrap();
    assert_eq!(list(&p)[0]["volumes_changed"], serde_json::json!(["data"]));
    let said = fails(&p, &["snapshots", "restore", "db-0", "before"]);
    assert!(
        said.contains("volume data of db-0 changed since snapshot before, and restoring the root disk would not bring it back; pass --force"),
        "{said}"
    );
    assert_eq!(
        p.pid_of("db-0"),
        Some(pid),
        "a refused restore leaves it running"
    );

    let said = p.ok(&["snapshots", "restore", "db-0", "before", "--force"]);
    assert!(said.contains("db-0 powered off"), "{said}");
    assert!(
        said.contains("db-0: root disk restored to snapshot before"),
        "{said}"
    );
    assert!(same_contents(&exported, &disk), "the root disk is back");
    let new_pid = p.pid_of("db-0").expect("running again");
    assert_ne!(new_pid, pid);
    assert!(runtime_support::alive(new_pid));
}

#[test]
#[ignore = "needs qemu-img"]
fn a_stopped_instance_is_snapshotted_with_qemu_img_and_stays_stopped_on_restore() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    p.ok(&["stop"]);
    let disk = p.state().join("instances/snap/db-0/root.qcow2");
    let name = stdout(&p, &["snapshots", "create", "db-0"]);
    let name = name.trim();
    assert!(name.starts_with("db-0-"), "{name}");
    p.ok(&["snapshots", "create", "db-0", "clean"]);
    assert_eq!(snapshot_names(&disk), [name, "clean"]);
    p.ok(&["snapshots", "rm", "db-0", name]);
    assert_eq!(snapshot_names(&disk), ["clean"]);

    let exported = p.path().join("db-0-clean.qcow2");
    p.ok(&["snapshots", "export", "db-0", "clean"]);
    assert_eq!(backing_file(&exported), Value::Null);
    write_pattern(&disk, "qcow2", "0xab");
    assert!(!same_contents(&exported, &disk));
    let said = p.ok(&["snapshots", "restore", "db-0", "clean"]);
    assert!(
        said.contains("root disk restored to snapshot clean"),
        "{said}"
    );
    assert!(same_contents(&exported, &disk));
    assert_eq!(p.pid_of("db-0"), None, "a stopped instance stays stopped");

    let said = fails(&p, &["snapshots", "restore", "db-0", "gone"]);
    assert!(
        said.contains("db-0 has no snapshot \"gone\"; it has: clean"),
        "{said}"
    );
    let said = fails(&p, &["snapshots", "list", "web-0"]);
    assert!(
        said.contains("project snap has no instance \"web-0\""),
        "{said}"
    );
}

#[test]
#[ignore = "needs QEMU"]
fn the_real_qemu_takes_and_drops_snapshots_online_as_the_fake_does() {
    runtime_support::require_qemu();
    let p = Project::new(COMPOSE, Qemu::Real);
    p.ok(&["up", "--no-wait"]);
    let pid = p.pid_of("db-0").expect("running");
    let disk = p.state().join("instances/snap/db-0/root.qcow2");
    let volume = p.state().join("volumes/snap/data.qcow2");
    p.ok(&["snapshots", "create", "db-0", "live"]);
    p.ok(&["volumes", "snapshot", "data", "vlive"]);
    assert_eq!(snapshot_names(&disk), ["live"]);
    assert_eq!(snapshot_names(&volume), ["vlive"]);
    assert_eq!(list(&p)[0]["name"], "live");
    let said = fails(&p, &["snapshots", "create", "db-0", "live"]);
    assert!(said.contains("already has a snapshot live"), "{said}");
    // Export reads past QEMU's lock (-U); the snapshot cannot change.
    let exported = p.path().join("live.qcow2");
    p.ok(&[
        "snapshots",
        "export",
        "db-0",
        "live",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(backing_file(&exported), Value::Null);
    p.ok(&["snapshots", "rm", "db-0", "live"]);
    p.ok(&["volumes", "snapshot-rm", "data", "vlive"]);
    assert!(snapshot_names(&disk).is_empty());
    assert!(snapshot_names(&volume).is_empty());
    assert_eq!(p.pid_of("db-0"), Some(pid), "QEMU kept running throughout");
}
