//! `holos up/stop/start/down/ps/logs` against a real `qemu-system-x86_64`
//! under TCG with a blank disk (no guest boots, so nothing answers the ACPI
//! power button): launch, records, pid ownership, recreate on a changed
//! spec, the port conflict, the project lock, and volumes surviving `down`.
//! Each test is ignored by default and fails when QEMU is not installed.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::runtime_support;
use runtime_support::{Project, Qemu, alive, cmdline};

fn real_project(compose: &str) -> Project {
    Project::new(compose, Qemu::Real)
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

const ONE_SERVICE: &str = "name: life\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    volumes: [data:/data]\nvolumes:\n  data: {size: 64M}\n";

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn up_starts_qemu_with_our_argv_and_down_keeps_the_volume() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    let said = p.ok(&["up", "--no-wait"]);
    assert!(said.contains("holos: life/web-0 started (pid "), "{said}");
    let pid = p.pid_of("web-0").expect("web-0 runs");
    let argv = cmdline(pid);
    assert!(argv[0].ends_with("qemu-system-x86_64"), "{argv:?}");
    let instance = p.state().join("instances/life/web-0");
    let serial = format!(
        "socket,id=serial0,path={}/serial.sock,server=on,wait=off,logfile={}/console.log,logappend=on",
        instance.display(),
        instance.display()
    );
    assert!(argv.contains(&serial), "{argv:?}");
    assert!(argv.contains(&"q35,accel=tcg".to_string()));
    assert!(argv.contains(&"virtio-blk-pci,drive=vol0,serial=vol-data".to_string()));
    // The layout and its permissions.
    for dir in [
        "projects",
        "instances/life/web-0",
        "volumes/life",
        "ssh/life",
        "locks",
    ] {
        assert_eq!(mode(&p.state().join(dir)), 0o700, "{dir}");
    }
    assert_eq!(mode(&p.state().join("ssh/life/id_ed25519")), 0o600);
    assert_eq!(mode(&p.state().join("projects/life.json")), 0o600);
    assert!(instance.join("seed.iso").is_file());
    let overlay = Command::new("qemu-img")
        .args(["info", "-U", "--output=json"])
        .arg(instance.join("root.qcow2"))
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&overlay.stdout).unwrap();
    assert_eq!(info["backing-filename-format"], "qcow2");
    assert_eq!(
        info["backing-filename"],
        p.path().join("base.qcow2").display().to_string()
    );

    let volume = p.state().join("volumes/life/data.qcow2");
    assert!(volume.is_file());
    let said = p.ok(&["down"]);
    assert!(said.contains("holos: removed life/web-0"), "{said}");
    assert!(!alive(pid), "QEMU still runs after down");
    assert!(!instance.exists() && !p.state().join("projects/life.json").exists());
    assert!(volume.is_file(), "down removed the named volume");
    assert!(p.ps().is_empty());
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn stop_falls_back_to_sigterm_when_the_guest_ignores_the_power_button() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    p.ok(&["up", "--no-wait"]);
    let pid = p.pid_of("web-0").unwrap();
    let started = std::time::Instant::now();
    let said = p.ok(&["stop"]);
    // No guest OS acts on ACPI here, so the 1s grace period runs out.
    assert!(
        said.contains("did not power off within 1s, sending SIGTERM"),
        "{said}"
    );
    assert!(
        said.contains("holos: life/web-0 terminated (SIGTERM)"),
        "{said}"
    );
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert!(!alive(pid));
    assert_eq!(p.ps()[0]["state"], "stopped");
    // start brings it back on the same disk and SSH port.
    let ssh_port = p.ps()[0]["ssh_port"].clone();
    p.ok(&["start", "web"]);
    let again = p.pid_of("web-0").unwrap();
    assert_ne!(again, pid);
    assert_eq!(p.ps()[0]["ssh_port"], ssh_port);
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn unchanged_up_does_nothing_and_a_changed_service_is_recreated() {
    runtime_support::require_qemu();
    let two = |memory: u32| {
        format!(
            "name: re\nservices:\n  db:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n    vm: {{memory_mb: {memory}}}\n    depends_on: [db]\n"
        )
    };
    let p = real_project(&two(256));
    p.ok(&["up", "--no-wait"]);
    let (db, web) = (p.pid_of("db-0").unwrap(), p.pid_of("web-0").unwrap());
    let said = p.ok(&["up", "--no-wait"]);
    assert_eq!(said, "holos: project re is up to date\n");
    assert_eq!((p.pid_of("db-0"), p.pid_of("web-0")), (Some(db), Some(web)));

    p.write(&two(320));
    let said = p.ok(&["up", "--no-wait"]);
    assert!(said.contains("holos: re/db-0 is up to date"), "{said}");
    assert!(
        said.contains("holos: re/web-0 changed, recreating it"),
        "{said}"
    );
    assert_eq!(p.pid_of("db-0"), Some(db));
    let new_web = p.pid_of("web-0").unwrap();
    assert_ne!(new_web, web);
    assert!(!alive(web));
    let argv = cmdline(new_web);
    assert!(
        argv.windows(2).any(|w| w[0] == "-m" && w[1] == "320"),
        "{argv:?}"
    );
    // Addresses are kept across the recreate.
    let ips: Vec<Value> = p.ps().iter().map(|i| i["ip"].clone()).collect();
    assert_eq!(ips, ["10.10.0.2", "10.10.0.3"]);
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn a_taken_port_names_port_and_service_and_leaves_no_qemu() {
    runtime_support::require_qemu();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let p = real_project(&format!(
        "name: clash\nservices:\n  db:\n    image: ./base.qcow2\n  web:\n    image: ./base.qcow2\n    depends_on: [db]\n    ports: [\"{port}:80\"]\n"
    ));
    let out = p.run(&["up", "--no-wait"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "holos: port 127.0.0.1:{port} is already in use on this host, so service web (web-0) cannot forward it to guest port 80"
        )),
        "{said}"
    );
    // db-0 had started first; the failed up took it down again.
    let db = said
        .split("holos: clash/db-0 started (pid ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .expect("db-0 started first");
    assert!(!alive(db), "a failed up left QEMU {db} running");
    assert!(p.ps().iter().all(|i| i["state"] == "stopped"));
}

#[test]
#[ignore = "needs qemu-img"]
fn a_reused_pid_is_never_signalled() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE_SERVICE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let qemu = p.pid_of("web-0").unwrap();
    // QEMU dies and its pid now belongs to another program: the pid file
    // names that pid with QEMU's start time, which the other has not.
    let pid_file = p.state().join("instances/life/web-0/qemu.pid");
    let recorded = std::fs::read_to_string(&pid_file).unwrap();
    let (_, ticks) = recorded.trim().split_once(' ').unwrap();
    let _ = Command::new("kill")
        .args(["-9", &qemu.to_string()])
        .status();
    let mut other = Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(&pid_file, format!("{} {ticks}\n", other.id())).unwrap();
    p.edit_record("life", |record| {
        record["instances"]["web-0"]["pid"] = other.id().into()
    });
    assert_eq!(p.ps()[0]["state"], "stopped");
    let said = p.ok(&["stop"]);
    assert!(said.contains("holos: life/web-0 is not running"), "{said}");
    assert!(
        other.try_wait().unwrap().is_none(),
        "holos signalled a pid that is not its QEMU"
    );
    other.kill().unwrap();
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn a_second_command_waits_for_the_project_lock() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    p.ok(&["up", "--no-wait"]);
    let lock_path = p.state().join("locks/life.lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&lock_path)
        .unwrap();
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let mut stop = p
        .holos(&["stop"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once it says it waits, it must still be waiting.
    let mut stderr = std::io::BufReader::new(stop.stderr.take().unwrap());
    let mut said = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut said).unwrap();
    assert!(
        stop.try_wait().unwrap().is_none(),
        "stop ran while the lock was held"
    );
    assert!(
        p.pid_of("web-0").is_some(),
        "the VM was touched under someone else's lock"
    );
    drop(held);
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    let out = stop.wait_with_output().unwrap();
    assert!(out.status.success(), "{said}");
    assert!(
        said.starts_with("holos: waiting for another holos command on project life"),
        "{said}"
    );
    assert!(
        said.contains("holos: life/web-0 terminated (SIGTERM)"),
        "{said}"
    );
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn logs_print_the_console_log_with_instance_prefixes() {
    runtime_support::require_qemu();
    let p = real_project(
        "name: lg\nservices:\n  web:\n    image: ./base.qcow2\n    replicas: 2\n    stop_grace_period: 0s\n",
    );
    p.ok(&["up", "--no-wait"]);
    for (instance, text) in [("web-0", "boot zero\n"), ("web-1", "boot one\nlogin:\n")] {
        let log = p
            .state()
            .join(format!("instances/lg/{instance}/console.log"));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
            .unwrap();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    }
    let one = p.run(&["logs", "web-1"]);
    assert_eq!(String::from_utf8_lossy(&one.stdout), "boot one\nlogin:\n");
    let all = p.run(&["logs", "web"]);
    assert_eq!(
        String::from_utf8_lossy(&all.stdout),
        "web-0 | boot zero\nweb-1 | boot one\nweb-1 | login:\n"
    );
    let missing = p.run(&["logs", "db"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "holos: project lg has no service or instance \"db\"\n"
    );
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn exec_waits_for_an_ssh_banner_quotes_the_argv_and_returns_the_remote_status() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    p.ok(&["up", "--no-wait"]);
    // Nothing in this guest answers SSH: exec gives up after -w, as ssh does (255).
    let out = p.run(&["exec", "web-0", "-w", "1", "--", "true"]);
    assert_eq!(out.status.code(), Some(255));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no SSH server answered on 127.0.0.1:"),
        "{said}"
    );

    // Point the instance's SSH port at a stand-in sshd that only greets, and
    // put a stand-in ssh on PATH that records its argv and exits 7.
    let sshd = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = sshd.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in sshd.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(&mut stream, b"SSH-2.0-standin\r\n");
        }
    });
    p.edit_record("life", |record| {
        record["instances"]["web-0"]["spec"]["ssh_port"] = port.into()
    });
    let bin = p.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let argv_file = p.path().join("ssh-argv");
    std::fs::write(
        bin.join("ssh"),
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}\nexit 7\n",
            argv_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("ssh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = p
        .holos(&[
            "exec",
            "web-0",
            "-u",
            "root",
            "--",
            "sh",
            "-c",
            "echo a > /x",
        ])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let argv = std::fs::read_to_string(&argv_file).unwrap();
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(
        &lines[lines.len() - 3..],
        ["root@127.0.0.1", "--", "sh -c 'echo a > /x'"]
    );
    let key = p.state().join("ssh/life/id_ed25519");
    assert!(
        lines
            .windows(2)
            .any(|w| w[0] == "-i" && w[1] == key.display().to_string()),
        "{argv}"
    );
    assert!(
        lines
            .windows(2)
            .any(|w| w[0] == "-p" && w[1] == port.to_string()),
        "{argv}"
    );
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn console_attaches_to_the_serial_socket_and_ctrl_bracket_detaches() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    p.ok(&["up", "--no-wait"]);
    let mut console = p
        .holos(&["console", "web-0"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = console.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"typed\n\x1d").unwrap();
    let out = console.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.starts_with("holos: connected to web-0's console; Ctrl-] detaches\n"),
        "{said}"
    );
    assert!(said.ends_with("holos: detached from web-0\n"), "{said}");
    // Still running: detaching does not stop the VM.
    assert_eq!(p.ps()[0]["state"], "running");
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn a_bad_holos_accel_is_refused() {
    runtime_support::require_qemu();
    let p = real_project(ONE_SERVICE);
    let out = p
        .holos(&["up", "--no-wait"])
        .env("HOLOS_ACCEL", "xen")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "holos: HOLOS_ACCEL=\"xen\" is not an accelerator; use kvm or tcg, or unset it\n"
    );
}
