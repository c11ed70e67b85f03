//! holo-vms as a holo plugin, run through the real `holo` driver on a test
//! root with the fake QEMU and a fake `ssh`: scan, apply (not changed,
//! recreate, self-healing, protect), noop, diff, the scrub, `.env`-only
//! interpolation, dependency order, and that `holo apply` returns while the
//! VMs keep running.

use crate::plugin_support;
use test_support::plugin_run::PluginRun;

use std::process::Command;
use std::time::Duration;

use plugin_support::{Root, kill};

fn two_services(root: &Root) -> String {
    format!(
        "services:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    replicas: 2\n    ports: [\"${{GUEST_PORT:-80}}\"]\n    depends_on: [zdb]\n  zdb:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    volumes: [\"data:/var/lib/data\"]\n    healthcheck:\n      test: [\"test\", \"-e\", \"{ready}\"]\n      interval: 100ms\n      retries: 3\nvolumes:\n  data: {{size: 16M}}\n",
        image = root.image(),
        ready = root.path().join("ready").display(),
    )
}

/// A root with the two-service project applied, its health check passing.
fn applied_shop() -> Root {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    std::fs::write(root.path().join("ready"), "").unwrap();
    ok(&root, &["apply"]);
    root
}

fn ok(root: &Root, args: &[&str]) -> String {
    let (code, text) = root.holo_text(args);
    assert_eq!(code, 0, "holo {args:?} failed:\n{text}");
    text
}

#[test]
fn scan_reports_services_with_image_replicas_ports_and_requires() {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    let text = ok(&root, &["scan"]);
    let compose = root.path().join("usr/share/holo/vms/shop/holos.yaml");
    assert!(
        text.contains(&format!(
            "vm:shop/app\n    found in {}\n        with image: {}, replicas: 2, ports: 127.0.0.1:auto->80/tcp\n",
            compose.display(),
            root.image()
        )),
        "{text}"
    );
    assert!(text.contains("vm:shop/zdb\n"), "{text}");
    // The plugin itself writes REQUIRES: when the driver speaks `order`.
    let out = PluginRun::new(env!("CARGO_BIN_EXE_holo-vms"), "vms", root.path())
        .args(["scan"])
        .inherit_env()
        .extensions("noop,order,batch")
        .output();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("ENTITY: vm:shop/app\n") && report.contains("REQUIRES: vm:shop/zdb\n"),
        "{report}"
    );
    let info = Command::new(env!("CARGO_BIN_EXE_holo-vms"))
        .arg("info")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&info.stdout)
            .contains("EXTENSIONS=noop,order,batch,inplace,batch-order,run-lock,monitor\n"),
        "{}",
        String::from_utf8_lossy(&info.stdout)
    );
}

#[test]
fn apply_starts_dependencies_first_returns_promptly_and_then_is_not_changed() {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    std::fs::write(root.path().join("ready"), "").unwrap();
    // A QEMU that held one of holo's pipes would keep this from returning.
    let out = root.run_within(root.holo(&["apply"]), Duration::from_secs(60));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let zdb = text.find("Working on vm:shop/zdb").expect("zdb applied");
    let app = text.find("Working on vm:shop/app").expect("app applied");
    assert!(zdb < app, "the dependency comes first:\n{text}");
    let pids = root.pids("shop");
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(pids.iter().all(|(_, pid)| pid.is_some()), "{pids:?}");
    // The health check ran over SSH with the project key.
    let calls = root.ssh_calls();
    assert!(
        calls.iter().any(|c| c.contains("ssh/shop/id_ed25519")
            && c.ends_with(&format!(
                "-- test -e {}",
                root.path().join("ready").display()
            ))),
        "{calls:?}"
    );
    assert!(root.state().join("volumes/shop/data.qcow2").is_file());

    let (code, again) = root.holo_text(&["apply"]);
    assert_eq!(code, 0, "{again}");
    assert!(!again.contains("Working on"), "nothing to do:\n{again}");
    assert_eq!(root.pids("shop"), pids);
}

#[test]
fn a_killed_vm_is_started_again_and_noop_only_says_so() {
    let root = applied_shop();
    let old = root.pid("shop", "app-1").expect("app-1 runs");
    kill(old);
    assert_eq!(root.pid("shop", "app-1"), None);

    let (code, text) = root.holo_text(&["apply", "--noop"]);
    assert_eq!(code, 2, "changes pending:\n{text}");
    assert!(
        text.contains("Would have started 1 instance of app\n"),
        "{text}"
    );
    assert_eq!(root.pid("shop", "app-1"), None, "noop changes nothing");

    let text = ok(&root, &["apply"]);
    assert!(text.contains("Working on vm:shop/app"), "{text}");
    let new = root.pid("shop", "app-1").expect("app-1 runs again");
    assert_ne!(new, old);
}

#[test]
fn protect_leaves_a_vm_stopped_by_hand_until_force() {
    let root = Root::new();
    let protected =
        two_services(&root).replace("  zdb:\n", "  zdb:\n    x-holo: {protect: true}\n");
    root.compose("shop", &protected);
    std::fs::write(root.path().join("ready"), "").unwrap();
    ok(&root, &["apply"]);
    let out = root.holos(&["-p", "shop", "stop", "zdb"]).output().unwrap();
    assert!(out.status.success());

    let (code, text) = root.holo_text(&["apply"]);
    assert!(
        text.contains("!! Entity has been deleted by user (use --force to restore)"),
        "{text}"
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(root.pid("shop", "zdb-0"), None);

    let text = ok(&root, &["apply", "--force"]);
    assert!(text.contains("Working on vm:shop/zdb"), "{text}");
    assert!(root.pid("shop", "zdb-0").is_some());

    // Without protect, a VM stopped by hand is simply started again.
    let unprotected = applied_shop();
    let out = unprotected
        .holos(&["-p", "shop", "stop", "zdb"])
        .output()
        .unwrap();
    assert!(out.status.success());
    ok(&unprotected, &["apply"]);
    assert!(unprotected.pid("shop", "zdb-0").is_some());
}

#[test]
fn variables_come_from_the_env_file_only_and_a_change_recreates() {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    std::fs::write(root.path().join("ready"), "").unwrap();
    // A variable of the calling shell does not reach the spec.
    let mut shell = root.holo(&["apply"]);
    shell.env("GUEST_PORT", "9999");
    let out = root.run_within(shell, Duration::from_secs(60));
    assert!(out.status.success());
    let first = root.pids("shop");
    let ports = root.ps("shop")[0]["ports"].clone();
    assert_eq!(ports[0]["guest_port"], 80, "{ports}");
    // A timer's bare environment sees the same spec: not changed.
    let (code, text) = root.holo_text(&["apply"]);
    assert_eq!(code, 0);
    assert!(!text.contains("Working on"), "{text}");
    assert_eq!(root.pids("shop"), first);

    // The .env beside the file does count; diff shows it, apply recreates.
    root.resource("shop", ".env", "GUEST_PORT=8080\n");
    let (_, diff) = root.holo_text(&["diff"]);
    // Desired first, the recorded running service second.
    let lines: Vec<&str> = diff.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with('-') && l.ends_with("guest_port: 8080")),
        "{diff}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with('+') && l.ends_with("guest_port: 80")),
        "{diff}"
    );
    let text = ok(&root, &["apply"]);
    assert!(text.contains("app-0 changed, recreating it"), "{text}");
    let app = root.ps("shop");
    let app0 = app.iter().find(|i| i["instance"] == "app-0").unwrap();
    assert_eq!(app0["ports"][0]["guest_port"], 8080);
    assert_ne!(
        root.pid("shop", "app-0"),
        first.iter().find(|p| p.0 == "app-0").unwrap().1
    );
    // The unchanged dependency kept its VM.
    assert_eq!(
        root.pid("shop", "zdb-0"),
        first.iter().find(|p| p.0 == "zdb-0").unwrap().1
    );
    let (_, diff) = root.holo_text(&["diff"]);
    assert!(!diff.contains("guest_port"), "{diff}");
}

#[test]
fn a_removed_service_is_stopped_and_removed_and_its_volume_kept() {
    let root = applied_shop();
    let zdb_pid = root.pid("shop", "zdb-0").unwrap();
    // Only app is left.
    root.compose(
        "shop",
        &format!(
            "services:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    replicas: 2\n    ports: [\"80\"]\n",
            image = root.image()
        ),
    );
    let text = ok(&root, &["scan"]);
    assert!(
        text.contains("vm:shop/zdb (resource was deleted)"),
        "{text}"
    );
    let out = PluginRun::new(env!("CARGO_BIN_EXE_holo-vms"), "vms", root.path())
        .args(["scan"])
        .inherit_env()
        .output();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("ENTITY: vm:shop/zdb\nACTION: Stopping (resource was deleted)\n"),
        "{report}"
    );

    let (code, noop) = root.holo_text(&["apply", "--noop"]);
    assert_eq!(code, 2);
    assert!(
        noop.contains("Would have stopped and removed 1 instance of zdb (volumes are kept)"),
        "{noop}"
    );
    let text = ok(&root, &["apply"]);
    assert!(text.contains("Stopping vm:shop/zdb"), "{text}");
    assert!(text.contains("Removed zdb-0"), "{text}");
    assert!(
        !std::path::Path::new(&format!("/proc/{zdb_pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{zdb_pid}/cmdline"))
                .unwrap()
                .is_empty()
    );
    let names: Vec<String> = root.pids("shop").into_iter().map(|p| p.0).collect();
    assert_eq!(names, ["app-0", "app-1"]);
    assert!(!root.state().join("instances/shop/zdb-0").exists());
    assert!(root.state().join("volumes/shop/data.qcow2").is_file());
    // Scrubbed: no longer reported.
    let text = ok(&root, &["scan"]);
    assert!(!text.contains("zdb"), "{text}");
}

#[test]
fn bad_resources_name_the_file() {
    let root = Root::new();
    root.compose(
        "shop",
        "services:\n  app:\n    image: alpine\n    replicas: lots\n",
    );
    let (code, text) = root.holo_text(&["scan"]);
    assert_ne!(code, 0);
    let compose = root.path().join("usr/share/holo/vms/shop/holos.yaml");
    assert!(
        text.contains(&format!("{}:4:", compose.display())),
        "{text}"
    );

    let root = Root::new();
    let compose = root.path().join("usr/share/holo/vms/shop/holos.yaml");
    root.compose(
        "shop",
        "services:\n  app:\n    image: alpine\n    x-holo: {protect: maybe}\n",
    );
    let (code, text) = root.holo_text(&["scan"]);
    assert_ne!(code, 0);
    assert!(
        text.contains(&format!("{}:4:", compose.display()))
            && text.contains("x-holo.protect: must be true or false"),
        "{text}"
    );

    let root = Root::new();
    root.resource("stray", "compose.yaml", "services: {}\n");
    let (code, text) = root.holo_text(&["scan"]);
    assert_ne!(code, 0);
    assert!(
        text.contains("the project directory has no holos.yaml"),
        "{text}"
    );
}

#[test]
fn apply_fails_when_the_health_check_does_not_pass_and_names_the_last_output() {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    // No `ready` file: zdb's check keeps failing.
    let (code, text) = root.holo_text(&["apply"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("service zdb: zdb-0 did not become healthy: 3 consecutive failed probes"),
        "{text}"
    );
    assert!(
        text.contains("last probe output: no output, exit code 1"),
        "{text}"
    );
    // The dependent is skipped; the unhealthy VM stays up for inspection.
    assert!(
        text.contains("!! skipped: required entity vm:shop/zdb failed in this run"),
        "{text}"
    );
    assert!(root.pid("shop", "app-0").is_none());
    let zdb = root.ps("shop");
    let zdb = zdb.iter().find(|i| i["instance"] == "zdb-0").unwrap();
    assert_eq!(zdb["health"], "unhealthy");

    // Once the check passes, the next apply brings both up.
    std::fs::write(root.path().join("ready"), "").unwrap();
    ok(&root, &["apply"]);
    assert_eq!(root.pids("shop").len(), 3);
}

#[test]
fn a_relative_root_still_gives_qemu_absolute_paths() {
    let root = Root::new();
    root.compose("shop", &two_services(&root));
    std::fs::write(root.path().join("ready"), "").unwrap();
    let mut apply = root.holo(&["apply"]);
    apply.env("HOLO_ROOT_DIR", ".");
    let out = root.run_within(apply, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.state().join("projects/shop.json")).unwrap(),
    )
    .unwrap();
    let dir = record["instances"]["app-0"]["spec"]["dir"]
        .as_str()
        .unwrap();
    assert_eq!(
        std::path::Path::new(dir),
        root.state().join("instances/shop/app-0")
    );
    assert!(root.pid("shop", "app-0").is_some());
}

#[test]
fn apply_refuses_an_image_that_does_not_match_the_lock_beside_the_file() {
    let root = Root::new();
    root.compose(
        "shop",
        &format!(
            "services:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n",
            image = root.image()
        ),
    );
    let zeros = "0".repeat(64);
    root.resource(
        "shop",
        "holos.images.lock",
        &format!(
            "version = 1\n[images.\"{}\"]\nsha256 = \"{zeros}\"\n",
            root.image()
        ),
    );
    let lock = root
        .path()
        .join("usr/share/holo/vms/shop/holos.images.lock");
    let (code, text) = root.holo_text(&["apply"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "service app: image {} does not match {}: expected sha256 {zeros}, got ",
            root.image(),
            lock.display()
        )),
        "{text}"
    );
    assert!(
        !root.state().join("instances/shop").exists(),
        "nothing started"
    );
    // `holos lock` on the same file pins the image; apply then starts it.
    root.holos_ok(&["-f", "usr/share/holo/vms/shop/holos.yaml", "lock"]);
    assert!(!std::fs::read_to_string(&lock).unwrap().contains(&zeros));
    ok(&root, &["apply"]);
    assert_eq!(root.pids("shop").len(), 1);
}
