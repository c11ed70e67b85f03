//! An instance whose QEMU was killed (`kill -9`, a host crash) comes back
//! clean, with the fake QEMU and a fake `ssh`:
//!
//! - its health is `starting` again as soon as it starts, not the `healthy`
//!   of the boot before the kill (`holos up` and `holos start`);
//! - its seed's `bootcmd` repairs empty or unreadable SSH host keys before
//!   the service's own boot commands, and the repair script, run for real
//!   against a copy of `/etc/ssh` (root and ssh-keygen needed), regenerates
//!   the broken keys and leaves the good ones alone.
//!
//! The real guest shows the whole recovery in `e2e_debian.rs`.

use crate::plugin_support;
use crate::runtime_support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use holo_vms::runtime::cloud_init::SSH_HOST_KEY_REPAIR;
use runtime_support::{Project, Qemu};
use saphyr::{LoadableYamlNode, Yaml};

const COMPOSE: &str = "name: crash\nservices:\n  db:\n    image: ./base.qcow2\n    healthcheck:\n      test: [\"true\"]\n      interval: 100ms\n    cloud_init:\n      bootcmd: [\"echo own-bootcmd\"]\n";

/// A project with the fake QEMU and the fake ssh (which runs the probe on the
/// host once the instance's SSH port answers).
fn project() -> Project {
    let p = Project::new(COMPOSE, Qemu::Fake);
    let ssh = p.path().join("bin/ssh");
    std::fs::write(&ssh, plugin_support::FAKE_SSH).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn health(p: &Project) -> serde_json::Value {
    p.ps()
        .into_iter()
        .find(|r| r["instance"] == "db-0")
        .expect("db-0 in ps")["health"]
        .clone()
}

fn kill_9(p: &Project) {
    let pid = p.pid_of("db-0").expect("db-0 runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    for _ in 0..500 {
        if !runtime_support::alive(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("QEMU {pid} survived SIGKILL");
}

#[test]
fn a_restarted_instance_is_starting_not_healthy_from_before_the_kill() {
    let p = project();
    p.ok(&["up"]);
    assert_eq!(health(&p), "healthy");

    // The next up finds QEMU dead and starts it on its disk; until a probe
    // passes, the instance is starting.
    kill_9(&p);
    let said = p.ok(&["up", "--no-wait"]);
    assert!(said.contains("db-0 started"), "{said}");
    assert_eq!(health(&p), "starting");
    // An up that waits probes it healthy again.
    kill_9(&p);
    p.ok(&["up"]);
    assert_eq!(health(&p), "healthy");

    // So does `holos start`.
    kill_9(&p);
    let said = p.ok(&["start"]);
    assert!(said.contains("db-0 started"), "{said}");
    assert_eq!(health(&p), "starting");
}

#[test]
fn the_seed_repairs_ssh_host_keys_before_the_services_bootcmd() {
    use hadris_iso::read::IsoImage;
    let p = project();
    p.ok(&["up", "--no-wait"]);
    let seed = p.state().join("instances/crash/db-0/seed.iso");
    let iso = IsoImage::open(std::fs::File::open(&seed).unwrap()).unwrap();
    let entry = iso.find_path("user-data").unwrap().expect("user-data");
    let user_data = String::from_utf8(iso.read_file(&entry).unwrap()).unwrap();
    let docs = Yaml::load_from_str(&user_data).unwrap();
    let bootcmd = docs[0]["bootcmd"].as_vec().expect("bootcmd").clone();
    let first: Vec<&str> = bootcmd[0]
        .as_vec()
        .expect("an argv")
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(first, ["sh", "-c", SSH_HOST_KEY_REPAIR], "{user_data}");
    assert_eq!(bootcmd[1].as_str(), Some("echo own-bootcmd"), "{user_data}");
    assert_eq!(bootcmd.len(), 2, "{user_data}");
}

/// A `systemctl` that says ssh.service failed (as it does when sshd started
/// before the repair, on keys it could not read) and logs what it is asked,
/// so the test never touches the host's units.
const FAKE_SYSTEMCTL: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$SYSTEMCTL_LOG"
[ "$1 $2 $3" = "is-failed --quiet ssh.service" ] && exit 0
case "$1" in is-failed) exit 1 ;; esac
exit 0
"#;

/// Runs the repair script with `dir` mounted over `/etc/ssh`, in a private
/// mount namespace, with the fake systemctl from `bin`; returns its stderr.
fn run_repair_on(dir: &std::path::Path, bin: &std::path::Path) -> String {
    let out = Command::new("unshare")
        .env(
            "PATH",
            format!(
                "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                bin.display()
            ),
        )
        .env("SYSTEMCTL_LOG", bin.join("systemctl.log"))
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount --bind \"$0\" /etc/ssh && {{\n{SSH_HOST_KEY_REPAIR}\n}}"
        ))
        .arg(dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the repair failed: {said}");
    said
}

#[test]
fn the_repair_regenerates_empty_and_missing_host_keys_and_keeps_good_ones() {
    let tools = [
        "/usr/bin/unshare",
        "/usr/bin/ssh-keygen",
        "/usr/bin/mount",
        "/etc/ssh",
    ];
    if !nix::unistd::geteuid().is_root() || !tools.iter().all(|t| std::path::Path::new(t).exists())
    {
        eprintln!(
            "skipped: running the host-key repair needs root (for a private mount over /etc/ssh), /etc/ssh, unshare, mount and ssh-keygen (apt-get install openssh-client util-linux)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ssh = &dir.path().join("ssh");
    let bin = &dir.path().join("bin");
    std::fs::create_dir(ssh).unwrap();
    std::fs::create_dir(bin).unwrap();
    std::fs::write(bin.join("systemctl"), FAKE_SYSTEMCTL).unwrap();
    std::fs::set_permissions(
        bin.join("systemctl"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let good = ssh.join("ssh_host_ed25519_key");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&good)
        .status()
        .unwrap();
    assert!(made.success());
    let good_before = std::fs::read(&good).unwrap();
    // What a crash right after key generation leaves: zero-size files.
    std::fs::write(ssh.join("ssh_host_rsa_key"), "").unwrap();
    std::fs::write(ssh.join("ssh_host_rsa_key.pub"), "").unwrap();
    // And garbage where a key should be.
    std::fs::write(ssh.join("ssh_host_ecdsa_key"), "not a key\n").unwrap();
    std::fs::write(
        ssh.join("ssh_host_ecdsa_key.pub"),
        "ecdsa-sha2-nistp256 AAAA\n",
    )
    .unwrap();

    let said = run_repair_on(ssh, bin);
    assert!(
        said.contains("regenerating the broken SSH host key /etc/ssh/ssh_host_rsa_key"),
        "{said}"
    );
    assert!(
        said.contains("regenerating the broken SSH host key /etc/ssh/ssh_host_ecdsa_key"),
        "{said}"
    );
    assert!(!said.contains("ssh_host_ed25519_key"), "{said}");
    assert_eq!(
        std::fs::read(&good).unwrap(),
        good_before,
        "a good key stays"
    );
    for kind in ["rsa", "ecdsa", "ed25519"] {
        let key = ssh.join(format!("ssh_host_{kind}_key"));
        let readable = Command::new("ssh-keygen")
            .args(["-y", "-P", "", "-f"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(readable.status.success(), "{kind}: {readable:?}");
        let public = std::fs::read_to_string(ssh.join(format!("ssh_host_{kind}_key.pub"))).unwrap();
        assert!(!public.trim().is_empty(), "{kind}.pub is empty");
    }

    // A second boot with sound keys changes nothing.
    let before: Vec<Vec<u8>> = ["rsa", "ecdsa", "ed25519"]
        .iter()
        .map(|k| std::fs::read(ssh.join(format!("ssh_host_{k}_key"))).unwrap())
        .collect();
    let said = run_repair_on(ssh, bin);
    assert!(!said.contains("regenerating"), "{said}");
    let after: Vec<Vec<u8>> = ["rsa", "ecdsa", "ed25519"]
        .iter()
        .map(|k| std::fs::read(ssh.join(format!("ssh_host_{k}_key"))).unwrap())
        .collect();
    assert_eq!(before, after);
}
