//! An instance whose QEMU was killed (`kill -9`, a host crash) comes back
//! clean, with the fake QEMU and a fake `ssh`:
//!
//! - its health is `starting` again as soon as it starts, not the `healthy`
//!   of the boot before the kill (`holos up` and `holos start`);
//! - its seed's `bootcmd` repairs empty or unreadable SSH host keys before
//!   the service's own boot commands; the repair script, run for real over a
//!   test `/etc/ssh` and `/var/lib/cloud` (root, unshare and ssh-keygen
//!   needed), makes the broken keys again, leaves the good ones alone, makes
//!   all of them when none is left after first boot, and restarts a failed
//!   sshd.
//!
//! The real guest shows the whole recovery in `e2e_debian.rs`.

use crate::plugin_support;
use crate::runtime_support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use holos_runtime::cloud_init::SSH_HOST_KEY_REPAIR;
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

/// A guest's `/etc/ssh` and cloud-init state, for the repair script.
struct Guest {
    dir: tempfile::TempDir,
}

impl Guest {
    fn new() -> Guest {
        let guest = Guest {
            dir: tempfile::tempdir().unwrap(),
        };
        for sub in ["ssh", "bin", "cloud/instance/sem"] {
            std::fs::create_dir_all(guest.dir.path().join(sub)).unwrap();
        }
        let systemctl = guest.dir.path().join("bin/systemctl");
        std::fs::write(&systemctl, FAKE_SYSTEMCTL).unwrap();
        std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
        guest
    }

    fn key(&self, kind: &str) -> std::path::PathBuf {
        self.dir.path().join(format!("ssh/ssh_host_{kind}_key"))
    }

    fn keys(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path().join("ssh"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Whether ssh-keygen reads the private key, and its `.pub` has content.
    fn sound(&self, kind: &str) -> bool {
        let key = self.key(kind);
        let read = Command::new("ssh-keygen")
            .args(["-y", "-P", "", "-f"])
            .arg(&key)
            .output()
            .unwrap();
        let public = std::fs::read_to_string(format!("{}.pub", key.display())).unwrap_or_default();
        read.status.success() && !public.trim().is_empty()
    }

    fn systemctl_calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("bin/systemctl.log")).unwrap_or_default()
    }

    /// Runs the repair script in a private mount namespace, with the test's
    /// `ssh` over `/etc/ssh`, its `cloud` over `/var/lib/cloud` and the fake
    /// systemctl first on PATH; returns its stderr.
    fn repair(&self) -> String {
        let dir = self.dir.path();
        let out = Command::new("unshare")
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    dir.join("bin").display()
                ),
            )
            .env("SYSTEMCTL_LOG", dir.join("bin/systemctl.log"))
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount --bind \"$0/ssh\" /etc/ssh && mount -t tmpfs tmpfs /var/lib && \
                 mkdir /var/lib/cloud && mount --bind \"$0/cloud\" /var/lib/cloud && {{\n{SSH_HOST_KEY_REPAIR}\n}}"
            ))
            .arg(dir)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "the repair failed: {said}");
        said
    }
}

#[test]
#[ignore = "needs root, unshare, mount, ssh-keygen and /etc/ssh"]
fn the_repair_regenerates_broken_host_keys_and_keeps_good_ones() {
    test_support::require_root("private mounts over /etc/ssh and /var/lib");
    test_support::require_tools(
        &["unshare", "mount", "ssh-keygen"],
        "util-linux, openssh-client",
    );
    test_support::require_path(
        std::path::Path::new("/etc/ssh"),
        "/etc/ssh (openssh-client)",
    );
    let guest = Guest::new();
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(guest.key("ed25519"))
        .status()
        .unwrap();
    assert!(made.success());
    let good_before = std::fs::read(guest.key("ed25519")).unwrap();
    // What a crash right after key generation leaves: zero-size files.
    std::fs::write(guest.key("rsa"), "").unwrap();
    std::fs::write(format!("{}.pub", guest.key("rsa").display()), "").unwrap();
    // And garbage where a key should be.
    std::fs::write(guest.key("ecdsa"), "not a key\n").unwrap();
    std::fs::write(
        format!("{}.pub", guest.key("ecdsa").display()),
        "ecdsa-sha2-nistp256 AAAA\n",
    )
    .unwrap();

    let said = guest.repair();
    for kind in ["rsa", "ecdsa"] {
        assert!(
            said.contains(&format!(
                "regenerating the broken SSH host key /etc/ssh/ssh_host_{kind}_key"
            )),
            "{said}"
        );
    }
    assert!(!said.contains("ssh_host_ed25519_key"), "{said}");
    assert_eq!(
        std::fs::read(guest.key("ed25519")).unwrap(),
        good_before,
        "a good key stays"
    );
    for kind in ["rsa", "ecdsa", "ed25519"] {
        assert!(guest.sound(kind), "{kind}");
    }
    // Only the broken types were made: no type the guest did not have.
    assert_eq!(
        guest.keys(),
        [
            "ssh_host_ecdsa_key",
            "ssh_host_ecdsa_key.pub",
            "ssh_host_ed25519_key",
            "ssh_host_ed25519_key.pub",
            "ssh_host_rsa_key",
            "ssh_host_rsa_key.pub"
        ]
    );
    // sshd, failed on the broken keys, is started again (without waiting:
    // it is ordered after cloud-init's unit).
    assert_eq!(
        guest.systemctl_calls(),
        "is-failed --quiet ssh.service\nreset-failed ssh.service\n--no-block restart ssh.service\nis-failed --quiet sshd.service\n"
    );

    // The next boot, with sound keys, changes nothing and restarts nothing.
    let before: Vec<Vec<u8>> = ["rsa", "ecdsa", "ed25519"]
        .iter()
        .map(|k| std::fs::read(guest.key(k)).unwrap())
        .collect();
    let calls = guest.systemctl_calls();
    let said = guest.repair();
    assert!(!said.contains("holos:"), "{said}");
    let after: Vec<Vec<u8>> = ["rsa", "ecdsa", "ed25519"]
        .iter()
        .map(|k| std::fs::read(guest.key(k)).unwrap())
        .collect();
    assert_eq!(before, after);
    assert_eq!(guest.systemctl_calls(), calls);
}

#[test]
#[ignore = "needs root, unshare, mount, ssh-keygen and /etc/ssh"]
fn without_any_host_key_the_repair_makes_them_only_after_cloud_inits_ssh_module() {
    test_support::require_root("private mounts over /etc/ssh and /var/lib");
    test_support::require_tools(
        &["unshare", "mount", "ssh-keygen"],
        "util-linux, openssh-client",
    );
    test_support::require_path(
        std::path::Path::new("/etc/ssh"),
        "/etc/ssh (openssh-client)",
    );
    let guest = Guest::new();
    // First boot: cloud-init's ssh module has not run and makes the keys
    // after bootcmd; the repair leaves that to it.
    let said = guest.repair();
    assert!(!said.contains("holos:"), "{said}");
    assert!(guest.keys().is_empty(), "{:?}", guest.keys());
    // A later boot without any key (lost in a crash): ssh-keygen -A.
    std::fs::write(guest.dir.path().join("cloud/instance/sem/config_ssh"), "").unwrap();
    let said = guest.repair();
    assert!(
        said.contains("holos: no SSH host key, making them"),
        "{said}"
    );
    for kind in ["rsa", "ecdsa", "ed25519"] {
        assert!(guest.sound(kind), "{kind}");
    }
    assert!(
        guest
            .systemctl_calls()
            .contains("--no-block restart ssh.service\n"),
        "{}",
        guest.systemctl_calls()
    );
}
