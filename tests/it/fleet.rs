//! The fleet recipes in share/examples/fleet/: the Ansible playbook runs for
//! real against localhost (`ansible-playbook -c local`) on a test-mode root,
//! and the example configuration package builds with dpkg-buildpackage.

use crate::root;

use std::path::Path;
use std::process::Command;

fn fleet() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("share/examples/fleet")
}

fn has_command(name: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One run of site.yml: its exit code and what the default callback printed
/// (ansible-core has no json callback without extra collections).
fn run_playbook(root: &Path, scratch: &Path) -> (Option<i32>, String) {
    let output = Command::new("ansible-playbook")
        .args(["-c", "local", "-i", "localhost,"])
        .arg(fleet().join("ansible/site.yml"))
        .arg("-e")
        .arg(format!("holo_root_dir={}", root.display()))
        .arg("-e")
        .arg(format!("holo_command={}", env!("CARGO_BIN_EXE_holo")))
        .env("ANSIBLE_STDOUT_CALLBACK", "default")
        .env("ANSIBLE_HOME", scratch)
        .env("ANSIBLE_LOCAL_TEMP", scratch.join("local"))
        .env("ANSIBLE_REMOTE_TEMP", scratch.join("remote"))
        .env("ANSIBLE_PYTHON_INTERPRETER", "auto_silent")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_NOCOLOR", "1")
        .env_remove("HOLO_ROOT_DIR")
        .output()
        .expect("ansible-playbook runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// What the task called `name` printed for localhost: its status line
/// (`ok:`, `changed:`, `fatal:`, `skipping:`) and the result shown.
fn task<'a>(run: &'a str, name: &str) -> &'a str {
    let start = run
        .find(&format!("TASK [{name}]"))
        .unwrap_or_else(|| panic!("no task {name:?} in:\n{run}"));
    let rest = &run[start..];
    let body = &rest[rest.find('\n').unwrap_or(rest.len())..];
    let end = ["\nTASK [", "\nPLAY RECAP"]
        .iter()
        .filter_map(|marker| body.find(marker))
        .min()
        .unwrap_or(body.len());
    body[..end].trim()
}

#[test]
fn the_playbook_reports_changed_once_and_fails_on_a_manual_edit() {
    if !has_command("ansible-playbook") {
        println!("skipped: ansible-playbook is not installed (.ci/run installs ansible-core)");
        return;
    }
    let root = root::make(&["file"]);
    let scratch = tempfile::tempdir().unwrap();
    let motd = root.path().join("etc/motd");
    let copy_task = "Copy the resources to /usr/share/holo";
    let report_task = "Report the changed entities";

    let (code, first) = run_playbook(root.path(), scratch.path());
    assert_eq!(code, Some(0), "{first}");
    // ansible-core 2.14 reports a directory copy as ok even when it copied
    // files, so the recap's changed comes from holo alone.
    assert!(!task(&first, copy_task).starts_with("fatal"), "{first}");
    assert!(first.contains("changed=1 "), "{first}");
    let changed = task(&first, report_task);
    assert!(
        changed.starts_with("changed: [localhost]"),
        "first run must report changed:\n{first}"
    );
    assert!(
        changed.contains("\"msg\": \"holo changed 1 entities: file:/etc/motd\""),
        "{changed}"
    );
    assert_eq!(
        std::fs::read_to_string(&motd).unwrap(),
        "This host is configured by holo; local edits are reported.\n"
    );

    let (code, second) = run_playbook(root.path(), scratch.path());
    assert_eq!(code, Some(0), "{second}");
    assert!(
        task(&second, copy_task).starts_with("ok: [localhost]"),
        "{second}"
    );
    let changed = task(&second, report_task);
    assert!(
        changed.starts_with("ok: [localhost]"),
        "second run must not report changed:\n{second}"
    );
    assert!(
        changed.contains("\"msg\": \"holo changed 0 entities: \""),
        "{changed}"
    );
    assert!(second.contains("changed=0"), "{second}");

    // A manual edit needs --force: holo exits 1 and the host fails.
    std::fs::write(&motd, "edited by hand\n").unwrap();
    let (code, third) = run_playbook(root.path(), scratch.path());
    assert_eq!(
        code,
        Some(2),
        "ansible-playbook exits 2 on a failed host:\n{third}"
    );
    let failed = task(&third, "Fail on failed entities");
    assert!(failed.starts_with("fatal: [localhost]"), "{third}");
    assert!(
        failed.contains("1 entities failed, were skipped or need --force: file:/etc/motd"),
        "{failed}"
    );
    assert!(failed.contains("use --force to overwrite"), "{failed}");
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "edited by hand\n");
}

#[test]
fn the_example_configuration_package_ships_its_resources() {
    if !(has_command("dpkg-buildpackage") && has_command("dh")) {
        println!(
            "skipped: dpkg-buildpackage and debhelper are not installed (.ci/run installs them)"
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("site-config");
    let copy = Command::new("cp")
        .arg("-R")
        .arg(fleet().join("apt/site-config"))
        .arg(&source)
        .status()
        .unwrap();
    assert!(copy.success());
    let build = Command::new("dpkg-buildpackage")
        .args(["-us", "-uc", "-b"])
        .current_dir(&source)
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "dpkg-buildpackage of the example failed:\n{}{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let deb = work.path().join("site-config_1_all.deb");
    let contents = Command::new("dpkg-deb")
        .arg("-c")
        .arg(&deb)
        .output()
        .unwrap();
    let contents = String::from_utf8_lossy(&contents.stdout);
    assert!(
        contents.contains("./usr/share/holo/file/motd.toml"),
        "{contents}"
    );
    let depends = Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .arg("Depends")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&depends.stdout).contains("holo-file"));
    let postinst = Command::new("dpkg-deb")
        .arg("-I")
        .arg(&deb)
        .arg("postinst")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&postinst.stdout).contains("enable holo-apply.timer"));
}
