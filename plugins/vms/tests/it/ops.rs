//! Operating a project with the fake `qemu-system-x86_64`: `ps --json` and
//! `inspect` give what a script needs (checked against the live QEMU, its
//! argv and the files on disk), and `volumes ls|rm` (rm refuses a volume an
//! instance attaches).

use std::os::unix::fs::MetadataExt;

use serde_json::Value;

use crate::runtime_support;
use runtime_support::{Project, Qemu, cmdline, fails, stdout};

const COMPOSE: &str = "name: ops\nservices:\n  db:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    ports: [\"80\"]\n    volumes: [data:/var/lib/db]\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    volumes: [cache:/cache]\nvolumes:\n  data: {size: 16M}\n  cache: {size: 8M}\n";

fn json(p: &Project, args: &[&str]) -> Value {
    let out = p.run(args);
    assert!(
        out.status.success(),
        "holos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "holos {args:?} printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
#[ignore = "needs qemu-img"]
fn ps_json_and_inspect_describe_the_running_qemu_and_its_files() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let rows = json(&p, &["ps", "--json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let record: Value =
        serde_json::from_slice(&std::fs::read(p.state().join("projects/ops.json")).unwrap())
            .unwrap();
    for row in rows {
        let name = row["instance"].as_str().unwrap();
        assert_eq!(row["project"], "ops");
        assert_eq!(row["state"], "running");
        // The pid is the live QEMU serving this instance's QMP socket.
        let pid = row["pid"].as_u64().unwrap() as u32;
        let argv = cmdline(pid);
        let qmp = row["paths"]["qmp_socket"].as_str().unwrap();
        assert!(
            argv.iter().any(|a| a.contains(&format!("path={qmp},"))),
            "{argv:?}"
        );
        assert_qemu_got_the_macs_and_ports(&argv, row);
        assert!(row["ip"].as_str().unwrap().starts_with("10.10.0."), "{row}");
        assert_eq!(
            row["spec_hash"], record["instances"][name]["spec_hash"],
            "{name}"
        );
        assert_eq!(row["spec_hash"].as_str().unwrap().len(), 64);
        for file in [
            "root_disk",
            "seed",
            "qmp_socket",
            "serial_socket",
            "ssh_key",
        ] {
            let path = row["paths"][file].as_str().unwrap();
            assert!(std::path::Path::new(path).exists(), "{name} {file}: {path}");
        }
        assert_eq!(
            row["paths"]["dir"].as_str().unwrap(),
            p.state().join("instances/ops").join(name).to_str().unwrap()
        );
    }
    let db = rows.iter().find(|r| r["instance"] == "db-0").unwrap();
    assert_eq!(db["ports"].as_array().unwrap().len(), 1);
    assert_eq!(db["ports"][0]["guest_port"], 80);
    assert_eq!(db["volumes"][0]["name"], "data");
    assert_eq!(db["volumes"][0]["target"], "/var/lib/db");
    assert_eq!(
        db["volumes"][0]["path"].as_str().unwrap(),
        p.state().join("volumes/ops/data.qcow2").to_str().unwrap()
    );

    // inspect --json is the same object; a service name means its first instance.
    assert_eq!(&json(&p, &["inspect", "db-0", "--json"]), db);
    assert_eq!(&json(&p, &["inspect", "db", "--json"]), db);
    let text = stdout(&p, &["inspect", "db-0"]);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("no {key}: line in\n{text}"))
            .split_once(':')
            .unwrap()
            .1
            .trim()
            .to_string()
    };
    assert_eq!(line("instance"), "db-0");
    assert_eq!(line("state"), format!("running (pid {})", db["pid"]));
    assert_eq!(line("spec hash"), db["spec_hash"].as_str().unwrap());
    assert_eq!(line("ip"), db["ip"].as_str().unwrap());
    assert_eq!(
        line("root disk"),
        db["paths"]["root_disk"].as_str().unwrap()
    );
    assert!(line("ports").ends_with("->80/tcp"), "{text}");

    let said = fails(&p, &["inspect", "nope"]);
    assert!(
        said.contains("project ops has no instance \"nope\"; it has: db-0, web-0"),
        "{said}"
    );

    p.ok(&["stop", "db"]);
    let db = json(&p, &["inspect", "db-0", "--json"]);
    assert_eq!(db["state"], "stopped");
    assert_eq!(db["pid"], Value::Null);
    assert!(stdout(&p, &["inspect", "db-0"]).contains("\nstate:          stopped\n"));
}

/// The MACs and ports a `ps --json` row shows are the ones QEMU was given.
fn assert_qemu_got_the_macs_and_ports(argv: &[String], row: &Value) {
    for (nic, mac) in [
        ("user0", &row["macs"]["user"]),
        ("internal0", &row["macs"]["internal"]),
    ] {
        let device = format!("virtio-net-pci,netdev={nic},mac={}", mac.as_str().unwrap());
        assert!(argv.contains(&device), "{device} not in {argv:?}");
    }
    let ssh = format!("hostfwd=tcp:127.0.0.1:{}-:22", row["ssh_port"]);
    assert!(argv.iter().any(|a| a.contains(&ssh)), "{ssh}: {argv:?}");
    for port in row["ports"].as_array().unwrap() {
        let forward = format!(
            "hostfwd=tcp:{}:{}-:{}",
            port["host_ip"].as_str().unwrap(),
            port["host_port"],
            port["guest_port"]
        );
        assert!(argv.iter().any(|a| a.contains(&forward)), "{forward}");
    }
}

#[test]
fn inspect_without_instances_says_to_run_up() {
    let p = Project::new(COMPOSE, Qemu::Fake);
    let said = fails(&p, &["inspect", "db-0"]);
    assert!(
        said.contains("project ops has no instances; create them with holos up"),
        "{said}"
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn volumes_ls_shows_users_and_rm_refuses_while_an_instance_attaches_the_volume() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    assert_eq!(
        stdout(&p, &["volumes", "ls"]).lines().count(),
        1,
        "only the header before up"
    );
    p.ok(&["up", "--no-wait"]);
    let data = p.state().join("volumes/ops/data.qcow2");
    let list = json(&p, &["volumes", "ls", "--json"]);
    assert_eq!(list[0]["name"], "cache");
    assert_eq!(list[1]["name"], "data");
    assert_eq!(list[1]["path"].as_str().unwrap(), data.to_str().unwrap());
    assert_eq!(
        list[1]["disk_bytes"].as_u64().unwrap(),
        std::fs::metadata(&data).unwrap().blocks() * 512
    );
    assert_eq!(
        list[1]["used_by"],
        serde_json::json!([{"instance": "db-0", "running": true}])
    );
    let table = stdout(&p, &["volumes", "ls"]);
    let row = table.lines().find(|l| l.starts_with("data ")).unwrap();
    assert!(row.contains(" db-0 (running) "), "{table}");
    assert!(row.ends_with(data.to_str().unwrap()), "{table}");

    let said = fails(&p, &["volumes", "rm", "data"]);
    assert!(
        said.contains("volume data of project ops is in use by db-0 (running); remove the instances with holos down"),
        "{said}"
    );
    assert!(data.exists());
    // A stopped instance still attaches it: start would open it again.
    p.ok(&["stop"]);
    let said = fails(&p, &["volumes", "rm", "data"]);
    assert!(said.contains("in use by db-0 (stopped)"), "{said}");
    assert!(data.exists());

    p.ok(&["down"]);
    let table = stdout(&p, &["volumes", "ls"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("data ") && l.contains(" - ")),
        "{table}"
    );
    let said = p.ok(&["volumes", "rm", "data"]);
    assert!(said.contains("holos: removed volume data ("), "{said}");
    assert!(!data.exists());
    let said = fails(&p, &["volumes", "rm", "data"]);
    assert!(
        said.contains("project ops has no volume \"data\"; it has: cache"),
        "{said}"
    );
    p.ok(&["volumes", "rm", "cache"]);
    assert!(!p.state().join("volumes/ops").exists());
    let said = fails(&p, &["volumes", "rm", "../projects/ops"]);
    assert!(said.contains("it has no volumes at all"), "{said}");
}

#[test]
#[ignore = "needs qemu-img and KVM (/dev/kvm)"]
fn up_without_holos_accel_uses_kvm_only_where_the_probe_launch_works() {
    runtime_support::require_qemu_img();
    test_support::require_path(std::path::Path::new("/dev/kvm"), "KVM (/dev/kvm)");
    for (kvm, accel) in [("1", "kvm"), ("0", "tcg")] {
        let p = Project::new(COMPOSE, Qemu::Fake);
        let mut up = p.holos(&["up", "--no-wait"]);
        up.env_remove("HOLOS_ACCEL").env("FAKE_QEMU_KVM", kvm);
        p.ok_with(&mut up);
        let db = json(&p, &["inspect", "db-0", "--json"]);
        assert_eq!(db["accel"], accel, "FAKE_QEMU_KVM={kvm}");
        let argv = cmdline(db["pid"].as_u64().unwrap() as u32);
        assert!(argv.contains(&format!("q35,accel={accel}")), "{argv:?}");
    }
}
