//! `holos run` with the fake QEMU: a detached one-off VM is a project of
//! its own, and `--rm` takes it down (volumes included) when its command
//! ends, even when the command failed.

use crate::runtime_support;
use runtime_support::{Project, Qemu};

#[test]
#[ignore = "needs qemu-img and ssh"]
fn run_detached_starts_a_project_and_rm_removes_it_after_the_command() {
    runtime_support::require_qemu_img();
    test_support::require_tools(&["ssh"], "apt-get install openssh-client");
    let p = Project::new("services: {}\n", Qemu::Fake);
    let out = p.run(&[
        "run",
        "--detach",
        "--name",
        "box",
        "-p",
        "0:80",
        "-v",
        "data:/srv",
        "--vcpu",
        "2",
        "--memory",
        "512M",
        "./base.qcow2",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "box\n");
    let out = p.run(&["-p", "box", "ps", "--json"]);
    assert!(out.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["instance"], "box-0");
    assert_eq!(rows[0]["state"], "running");
    assert_eq!(rows[0]["vcpu"], 2);
    assert_eq!(rows[0]["memory_mb"], 512);
    assert_eq!(rows[0]["ports"][0]["guest_port"], 80);
    assert!(p.state().join("volumes/box/data.qcow2").is_file());
    let again = p.run(&["run", "--detach", "--name", "box", "./base.qcow2"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("a project named box exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    p.ok(&["down", "box"]);

    // The fake QEMU's sshd only says hello, so the command fails (as ssh
    // does, 255); --rm still removes the VM, its volume, its file, its key and its lock.
    let out = p.run(&[
        "run",
        "--rm",
        "--name",
        "gone",
        "-v",
        "scratch:/tmp/s",
        "./base.qcow2",
        "--",
        "true",
    ]);
    assert_eq!(
        out.status.code(),
        Some(255),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!p.state().join("projects/gone.json").exists());
    assert!(!p.state().join("volumes/gone").exists());
    assert!(!p.state().join("runs/gone").exists());
    assert!(!p.state().join("instances/gone").exists());
    assert!(!p.state().join("ssh/gone").exists(), "the run's key");
    assert!(!p.state().join("locks/gone.lock").exists());
}

/// A run whose image is missing fails with one message naming the image,
/// and `--rm` leaves nothing behind without a word about an empty project.
#[test]
#[ignore = "needs qemu-img"]
fn run_rm_with_a_missing_image_says_only_what_is_missing() {
    runtime_support::require_qemu_img();
    let p = Project::new("services: {}\n", Qemu::Fake);
    let out = p.run(&[
        "run",
        "--rm",
        "--name",
        "nada",
        "./missing.qcow2",
        "--",
        "true",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("missing.qcow2"), "{said}");
    assert!(!said.contains("has no instances"), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    for left in [
        "projects/nada.json",
        "runs/nada",
        "ssh/nada",
        "locks/nada.lock",
    ] {
        assert!(!p.state().join(left).exists(), "{left} is left");
    }
}

/// The global options before `run` apply to the run as to any command:
/// `-p` names its project, `--profile`, `--state-dir` and `--lock-timeout`
/// are taken, and after `run` `-p` still publishes a port. A compose file
/// (`-f`) is refused, since a run writes its own.
#[test]
#[ignore = "needs qemu-img"]
fn global_options_before_run_apply_to_the_run() {
    runtime_support::require_qemu_img();
    let p = Project::new("services: {}\n", Qemu::Fake);
    let state = p.state().display().to_string();
    let out = p.run(&[
        "--state-dir",
        &state,
        "--lock-timeout",
        "5s",
        "-p",
        "tools",
        "--profile",
        "dev",
        "run",
        "--detach",
        "--name",
        "box",
        "-p",
        "0:80",
        "./base.qcow2",
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tools\n");
    let out = p.run(&["-p", "tools", "ps", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["project"], "tools", "{rows}");
    assert_eq!(rows[0]["instance"], "box-0");
    assert_eq!(
        rows[0]["ports"][0]["guest_port"], 80,
        "-p after run publishes"
    );

    // After `run`, the long forms do the same.
    let out = p.run(&[
        "run",
        "--project-name",
        "other",
        "--profile",
        "dev",
        "--detach",
        "./base.qcow2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "other\n");
    assert!(p.state().join("projects/other.json").is_file());

    let out = p.run(&["-f", "holos.yaml", "run", "--detach", "./base.qcow2"]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("run reads no compose file") && said.contains("-f holos.yaml"),
        "{said}"
    );
}

/// Two runs started in the same second get projects of their own.
#[test]
#[ignore = "needs qemu-img"]
fn two_runs_in_the_same_second_get_different_names() {
    runtime_support::require_qemu_img();
    let p = Project::new("services: {}\n", Qemu::Fake);
    // Start both early in a second, so that they share it.
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_millis()
        > 300
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let spawn = || {
        p.holos(&["run", "-d", "./base.qcow2"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(), spawn());
    let names: Vec<String> = [first, second]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{said}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .collect();
    assert_ne!(names[0], names[1]);
    for name in &names {
        assert!(name.starts_with("run-"), "{name}");
        let out = p.run(&["-p", name, "ps", "--json"]);
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rows[0]["state"], "running", "{name}");
    }
}

/// A bad flag of `holos run` is named with its value, not as a place in
/// the compose file that run writes.
#[test]
#[ignore = "needs qemu-img"]
fn run_names_the_flag_and_value_it_refuses() {
    runtime_support::require_qemu_img();
    let p = Project::new("services: {}\n", Qemu::Fake);
    for (flag, value, says) in [
        ("--vcpu", "0", "--vcpu 0: must be at least 1, found 0"),
        ("--memory", "1K", "--memory \"1K\": 0 MB is below the 64 MB"),
        (
            "-p",
            "abc",
            "-p \"abc\": \"abc\" is not a port number (1-65535)",
        ),
        (
            "-v",
            "data:rel",
            "-v \"data:rel\": target \"rel\" must be an absolute path",
        ),
        (
            "-v",
            "./x:/y:zz",
            "-v \"./x:/y:zz\": mode \"zz\" is not supported",
        ),
        (
            "--device",
            "nonsense",
            "--device \"nonsense\": \"nonsense\" is not a PCI address",
        ),
        (
            "--image-os",
            "plan9",
            "--image-os \"plan9\": must be systemd or openrc",
        ),
    ] {
        let said = runtime_support::fails(&p, &["run", "-d", flag, value, "./base.qcow2"]);
        assert!(said.contains(says), "{flag} {value}: {said}");
        assert!(!said.contains("holos.yaml"), "{flag} {value}: {said}");
    }
}

/// A stand-in `ssh` on the project's PATH that logs its argv and exits
/// with `code`.
fn standin_ssh(p: &Project, code: u8) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let log = p.path().join("ssh-argv");
    let script = p.path().join("bin/ssh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {}\nexit {code}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

/// After `holos run`, where no compose file is, `exec` and `logs` take the
/// run's project name; a login the guest refuses is said, not just 255.
#[test]
#[ignore = "needs qemu-img"]
fn exec_and_logs_take_a_project_of_the_state_directory() {
    runtime_support::require_qemu_img();
    let p = Project::new("services: {}\n", Qemu::Fake);
    p.ok(&["run", "-d", "--name", "box", "./base.qcow2"]);
    std::fs::remove_file(p.path().join("holos.yaml")).unwrap();
    let log = standin_ssh(&p, 0);
    let out = p.run(&["exec", "box", "box-0", "--", "echo", "hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let argv = std::fs::read_to_string(&log).unwrap();
    assert!(argv.lines().any(|l| l == "echo hi"), "{argv}");
    // The project alone: a login shell on its first instance.
    p.ok(&["exec", "box"]);
    let logs = runtime_support::stdout(&p, &["logs", "box"]);
    assert!(!logs.is_empty(), "no console output");
    let json = runtime_support::stdout(&p, &["logs", "--json", "box"]);
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), logs.lines().count(), "{json}");
    assert_eq!(lines[0]["instance"], "box-0");
    assert_eq!(lines[0]["line"], logs.lines().next().unwrap());

    standin_ssh(&p, 255);
    let out = p.run(&["exec", "box", "box-0", "--", "true"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{said}");
    assert!(
        said.contains("ssh to box/box-0 as ") && said.contains("ended with 255: ssh failed"),
        "{said}"
    );
}
