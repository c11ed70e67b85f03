//! The README's Quickstart commands work on a clean checkout:
//! `share/examples/demo` builds the workspace, applies the example web
//! server root in test mode (package, templated config file, the service
//! subscribed to it, a refresh_only command) and changes nothing in the
//! repository; a second apply changes nothing; and `--with-vms apply --noop`
//! shows the two VMs of the compose example without starting anything.

use std::path::Path;
use std::process::Command;

/// Runs `share/examples/demo ARGS`: its exit code and its output.
fn demo(args: &[&str]) -> (Option<i32>, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(repo.join("share/examples/demo"))
        .args(args)
        .env_remove("HOLO_ROOT_DIR")
        .output()
        .expect("the demo script runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

#[test]
fn the_demo_applies_the_example_root_cleanly() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let before = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain", "share"])
        .output();
    let (code, text) = demo(&[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("!!"), "{text}");
    for entity in [
        "package:nginx",
        "package:vim",
        "file:/etc/motd",
        "file:/etc/nginx/conf.d/site.conf",
        "file:/srv/www/index.html",
        "service:nginx",
        "exec:stamp-deploy",
    ] {
        assert!(text.contains(entity), "{entity} missing:\n{text}");
    }
    for line in [
        "MOCK: apt-get install -y -q -o DPkg::Options::=--force-confold nginx",
        "MOCK: systemctl start --system nginx",
        "MOCK: systemctl enable --system nginx",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    // The order the resources declare: package, then its config file, then
    // the service subscribed to it, then the refresh_only command.
    let at = |needle: &str| text.find(needle).unwrap();
    assert!(at("package:nginx") < at("file:/etc/nginx/conf.d/site.conf"));
    assert!(at("file:/etc/nginx/conf.d/site.conf") < at("Working on service:nginx"));
    assert!(at("Working on service:nginx") < at("Executing exec:stamp-deploy"));
    // the repository is untouched (when git can tell)
    if let (Ok(before), Ok(after)) = (
        before,
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["status", "--porcelain", "share"])
            .output(),
    ) {
        assert_eq!(before.stdout, after.stdout, "the demo changed share/");
    }
    let root = text
        .lines()
        .find_map(|l| l.strip_prefix("example root: "))
        .expect("the demo names its root");
    let motd = std::fs::read_to_string(Path::new(root).join("etc/motd")).expect("motd written");
    assert!(
        motd.starts_with("Welcome to web01 (Debian GNU/Linux 12 (bookworm), 2 CPUs)."),
        "{motd}"
    );
    let root = Path::new(root);
    let site = std::fs::read_to_string(root.join("etc/nginx/conf.d/site.conf")).unwrap();
    assert!(
        site.contains("listen 8080;") && site.contains("server_name web01;"),
        "the template has the host's data and facts:\n{site}"
    );
    let stamp = std::fs::read_to_string(root.join("srv/www/.deployed-at")).unwrap();
    assert!(
        stamp.trim_end().ends_with('Z'),
        "the refresh_only command ran: {stamp:?}"
    );
    let report = std::fs::read_to_string(root.join("var/lib/holo/last-run.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["counts"]["failed"], 0, "{report:#}");
    assert!(report["counts"]["changed"].as_u64() > Some(5), "{report:#}");

    // Applied again, nothing changes and the command does not run again.
    std::fs::remove_file(root.join("srv/www/.deployed-at")).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_holo"))
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("HOLO_TEST_RUN_REPORT", "1")
        .output()
        .unwrap();
    let again_text = String::from_utf8_lossy(&again.stdout).into_owned()
        + &String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{again_text}");
    assert!(!again_text.contains("MOCK:"), "{again_text}");
    assert!(!root.join("srv/www/.deployed-at").exists(), "{again_text}");
    let report = std::fs::read_to_string(root.join("var/lib/holo/last-run.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["counts"]["changed"], 0, "{report:#}");
    assert_eq!(report["counts"]["unchanged"], report["counts"]["total"]);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_demo_with_vms_shows_the_two_vm_project_as_a_dry_run() {
    let (code, text) = demo(&["--with-vms", "apply", "--noop", "vms"]);
    assert_eq!(code, Some(2), "--noop with changes exits 2:\n{text}");
    assert!(!text.contains("!!"), "{text}");
    for line in [
        "Working on vm:shop/db",
        "Would have started 1 instance of db",
        "Working on vm:shop/web",
        "Would have started 1 instance of web",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(
        text.find("vm:shop/db") < text.find("vm:shop/web"),
        "web depends on db:\n{text}"
    );
    let root = text
        .lines()
        .find_map(|l| l.strip_prefix("example root: "))
        .expect("the demo names its root");
    // Nothing was started: no holos state below the root.
    assert!(!Path::new(root).join("var/lib/holos/projects").exists());
    let _ = std::fs::remove_dir_all(root);
}
