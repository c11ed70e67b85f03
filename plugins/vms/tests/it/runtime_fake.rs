//! `holos` with the fake `qemu-system-x86_64` (the crate's test helper,
//! linked first on PATH): the argv that reaches QEMU for the example projects
//! (against `runtime/tests/golden/NAME.argv`), the stop escalation (QMP
//! powerdown, then SIGTERM, then SIGKILL), `up` waiting for the SSH banner,
//! and the SSH port chosen again when it is taken.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runtime_support;
use runtime_support::{ImageMirror, Project, Qemu, qcow2_bytes};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../share/examples/compose")
}

/// The goldens use `/var/lib/holos` and count the ports holos picks from
/// 40001; the live run has a temporary state root and ephemeral ports from
/// the kernel. Both become `PICKED` (the examples publish ports below 32768).
fn normalise(text: &str, state: &Path) -> String {
    text.replace(&state.display().to_string(), "/var/lib/holos")
        .split(',')
        .map(|part| {
            let Some(rest) = part.strip_prefix("hostfwd=tcp:127.0.0.1:") else {
                return part.to_string();
            };
            match rest.split_once('-') {
                Some((port, guest)) if port.parse::<u16>().is_ok_and(|p| p >= 32768) => {
                    format!("hostfwd=tcp:127.0.0.1:PICKED-{guest}")
                }
                _ => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
#[ignore = "needs qemu-img"]
fn qemu_starts_with_the_golden_argv_of_each_seed_example() {
    runtime_support::require_qemu_img();
    for (name, accel) in [
        ("seed-hello", "tcg"),
        ("seed-volumes", "tcg"),
        ("seed-extra-args", "tcg"),
        ("seed-gpu", "kvm"),
        ("full-stack", "tcg"),
    ] {
        let example = examples_dir().join(name);
        let compose = std::fs::read_to_string(example.join("holos.yaml")).unwrap();
        let mut p = Project::new(&compose, Qemu::Fake);
        // `-p` would win over the file's `name:`: only for those without.
        if !compose.lines().any(|l| l.starts_with("name:")) {
            p.name = Some(name.to_string());
        }
        let copied = Command::new("cp")
            .arg("-R")
            .arg(example.join("."))
            .arg(p.path())
            .status()
            .unwrap();
        assert!(copied.success());
        // Image aliases are pulled from a mirror on 127.0.0.1; UEFI comes
        // from an OVMF below the test root.
        let mirror = ImageMirror::start();
        let image = qcow2_bytes("64M");
        for (alias, tag) in [
            ("ubuntu", "noble"),
            ("alpine", "3.23"),
            ("debian", "bookworm"),
        ] {
            mirror.serve(alias, tag, &image);
        }
        let ovmf = p.path().join("root/usr/share/OVMF");
        std::fs::create_dir_all(&ovmf).unwrap();
        std::fs::write(ovmf.join("OVMF_CODE_4M.fd"), b"code").unwrap();
        std::fs::write(ovmf.join("OVMF_VARS_4M.fd"), b"vars").unwrap();
        let out = p
            .holos(&["up", "--no-wait"])
            .env("HOLOS_ACCEL", accel)
            .env("FAKE_QEMU_KVM", "1")
            .env("HOLO_ROOT_DIR", p.path().join("root"))
            .env("HOLOS_IMAGE_MIRROR", mirror.url())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        if said.contains("404 Not Found") {
            panic!("{name}: an image alias the test does not provide: {said}");
        }
        assert!(out.status.success(), "{name}: {said}");
        let mut live = String::new();
        let argvs = p.recorded_argvs();
        // The recorded order is the start order, which the golden follows.
        let names: Vec<String> = p
            .ps()
            .iter()
            .map(|i| i["instance"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(argvs.len(), names.len(), "{name}: one QEMU per instance");
        for (instance, argv) in names.iter().zip(&argvs) {
            live.push_str(&format!("# {instance}\n"));
            for arg in argv {
                // The firmware is looked up below the test root.
                let arg = arg.replace(&format!("{}/root", p.path().display()), "");
                live.push_str(&normalise(&arg, &p.state()));
                live.push('\n');
            }
        }
        let golden = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("runtime/tests/golden/{name}.argv")),
        )
        .unwrap();
        let golden = golden
            .lines()
            .map(|l| normalise(l, Path::new("/var/lib/holos")))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        assert_eq!(live, golden, "{name}: QEMU's argv differs from the golden");
        // The UEFI vars are the instance's own copy.
        if name == "seed-gpu" {
            let vars = p.state().join("instances/seed-gpu/ml-0/OVMF_VARS.fd");
            assert_eq!(std::fs::read(vars).unwrap(), b"vars");
        }
    }
}

const ONE: &str =
    "name: esc\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n";

fn stop_with(p: &Project, powerdown_delay: &str, ignore_term: bool) -> String {
    let mut up = p.holos(&["up", "--no-wait"]);
    up.env("FAKE_QEMU_POWERDOWN_DELAY_MS", powerdown_delay);
    if ignore_term {
        up.env("FAKE_QEMU_IGNORE_SIGTERM", "1");
    }
    p.ok_with(&mut up);
    let pid = p.ps()[0]["pid"].as_u64().unwrap();
    let said = p.ok_with(&mut p.holos(&["stop"]));
    assert!(
        !Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{pid}/cmdline"))
                .unwrap()
                .is_empty()
    );
    assert_eq!(p.ps()[0]["state"], "stopped");
    said
}

#[test]
#[ignore = "needs qemu-img"]
fn stop_escalates_from_qmp_powerdown_to_sigterm_to_sigkill() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    let said = stop_with(&p, "100", false);
    assert_eq!(said, "holos: esc/web-0 powered off\n");

    let said = stop_with(&p, "never", false);
    assert_eq!(
        said,
        "holos: esc/web-0: the guest did not power off within 1s, sending SIGTERM\nholos: esc/web-0 terminated (SIGTERM)\n"
    );

    let said = stop_with(&p, "never", true);
    assert_eq!(
        said,
        "holos: esc/web-0: the guest did not power off within 1s, sending SIGTERM\nholos: esc/web-0: QEMU ignored SIGTERM for 5s, sending SIGKILL\nholos: esc/web-0 killed (SIGKILL)\n"
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn up_waits_for_sshd_and_start_picks_a_new_ssh_port_when_the_old_one_is_taken() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    // Without --no-wait, up returns once the guest's sshd greets (the fake
    // answers forwards to port 22 with a banner).
    p.ok_with(&mut p.holos(&["up"]));
    let port = p.ps()[0]["ssh_port"].as_u64().unwrap() as u16;
    p.ok_with(p.holos(&["stop"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
    // The port can take a moment to be free again after QEMU exits.
    let squatter = (0..50)
        .find_map(|_| {
            std::net::TcpListener::bind(("127.0.0.1", port))
                .map_err(|_| std::thread::sleep(std::time::Duration::from_millis(100)))
                .ok()
        })
        .unwrap_or_else(|| panic!("port {port} stayed taken after stop"));
    let said = p.ok_with(&mut p.holos(&["start"]));
    let new_port = p.ps()[0]["ssh_port"].as_u64().unwrap() as u16;
    assert_ne!(new_port, port);
    assert!(
        said.starts_with(&format!(
            "holos: esc/web-0: SSH port {port} is taken, using {new_port}\n"
        )),
        "{said}"
    );
    drop(squatter);
    // The argv of the restart carries the new port.
    let argvs = p.recorded_argvs();
    let last = argvs.last().unwrap();
    assert!(
        last.iter()
            .any(|a| a.contains(&format!("hostfwd=tcp:127.0.0.1:{new_port}-:22")))
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn up_notes_quiet_semantics_unless_q_and_anonymous_volumes_stay_on_the_overlay() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: notes\nservices:\n  web:\n    image: ./base.qcow2\n    ports: [\"18181:80\"]\n    volumes: [/app/node_modules]\n",
        Qemu::Fake,
    );
    let said = p.ok(&["up", "--no-wait"]);
    let note = format!(
        ">> {}:5: ports: a port without a host IP binds to 127.0.0.1",
        p.path().join("holos.yaml").display()
    );
    assert!(said.contains(&note), "{said}");
    // An anonymous volume is a directory on the root overlay: no extra disk.
    let argv = p.recorded_argvs().pop().unwrap();
    let drives = argv.iter().filter(|a| a.starts_with("if=none,")).count();
    assert_eq!(drives, 2, "root and seed only: {argv:?}");
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
    let said = p.ok(&["up", "--no-wait", "-q"]);
    assert!(!said.contains(">>"), "{said}");
}

/// A stand-in `ssh` in the project's PATH directory that appends its argv
/// (one argument a line, then `--end--`) to `ssh-argv` and exits 0.
fn standin_ssh(p: &Project) -> PathBuf {
    let log = p.path().join("ssh-argv");
    let script = p.path().join("bin/ssh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {log}\necho --end-- >> {log}\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    log
}

#[test]
#[ignore = "needs qemu-img"]
fn pre_stop_hooks_run_over_ssh_before_the_powerdown() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: hooks\nservices:\n  db:\n    image: ./base.qcow2\n    user: postgres\n    pre_stop:\n      - command: [\"pg_ctl\", \"stop\", \"-m\", \"fast mode\"]\n        working_dir: /var/lib/pg\n",
        Qemu::Fake,
    );
    let log = standin_ssh(&p);
    p.ok(&["up", "--no-wait"]);
    let said = p.ok(&["stop"]);
    assert_eq!(said, "holos: hooks/db-0 powered off\n");
    let calls = std::fs::read_to_string(&log).unwrap();
    let argv: Vec<&str> = calls.lines().take_while(|l| *l != "--end--").collect();
    assert_eq!(
        argv[argv.len() - 1],
        "cd /var/lib/pg && pg_ctl stop -m 'fast mode'",
        "{calls}"
    );
    assert!(argv.contains(&"-T"), "no terminal for hooks: {calls}");
    let port = p.ps()[0]["ssh_port"].as_u64().unwrap().to_string();
    assert!(
        argv.windows(2).any(|w| w[0] == "-p" && w[1] == port),
        "{calls}"
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn logs_follow_prints_what_the_console_writes_later() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let mut follow = p
        .holos(&["logs", "-f", "web-0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let console = p.state().join("instances/esc/web-0/console.log");
    let mut stdout = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut seen = String::new();
    // What the fake's console said at boot is printed first; only then is
    // a new line something logs -f must follow.
    while !seen.contains("fake guest booted") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&console)
        .unwrap();
    std::io::Write::write_all(&mut file, b"later line\n").unwrap();
    let started = std::time::Instant::now();
    while !seen.contains("later line\n") {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "not followed: {seen}"
        );
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
    }
    follow.kill().unwrap();
    let _ = follow.wait();
    assert!(seen.contains("later line\n"), "{seen}");
    // What the console wrote before is there too, once.
    assert_eq!(seen.matches("later line").count(), 1);
}

#[test]
#[ignore = "needs qemu-img"]
fn dependents_wait_for_a_healthy_dependency_and_a_failed_check_leaves_no_qemu() {
    runtime_support::require_qemu_img();
    let compose = "name: health\nservices:\n  db:\n    image: ./base.qcow2\n    healthcheck:\n      test: [\"pg_isready\", \"-U\", \"postgres\"]\n      interval: 100ms\n      retries: 2\n  api:\n    image: ./base.qcow2\n    depends_on: [db]\n";
    let p = Project::new(compose, Qemu::Fake);
    let log = standin_ssh(&p);
    let said = p.ok(&["up"]);
    assert!(
        said.contains("holos: api waits for db-0 to be healthy"),
        "{said}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.lines().any(|l| l == "pg_isready -U postgres"),
        "{calls}"
    );
    let order: Vec<&str> = said
        .lines()
        .filter(|l| l.contains(" started (pid "))
        .collect();
    assert!(
        order[0].starts_with("holos: health/db-0") && order[1].starts_with("holos: health/api-0"),
        "{said}"
    );
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));

    // A probe that keeps failing stops the up before api, and takes db down.
    std::fs::write(p.path().join("bin/ssh"), "#!/bin/sh\nexit 1\n").unwrap();
    let out = p.run(&["up"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("db-0 did not become healthy: 2 consecutive failed probes")
            && said.contains("of pg_isready -U postgres; last probe output: no output, exit code 1; api was not started"),
        "{said}"
    );
    assert!(!said.contains("api-0 started"), "{said}");
    assert!(p.ps().iter().all(|i| i["state"] == "stopped"), "{said}");
}
