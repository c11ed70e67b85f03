//! `holos up` starting a stopped instance whose SSH port another process
//! took meanwhile: the launch moves to a new port, and up waits for sshd on
//! that one, not on the port the plan started from (which would hang until
//! the five-minute limit). The move is on record before the QEMU on the new
//! port starts, so an `up` killed after it leaves `ps` and `exec` on the
//! port in use, and the next `up` converges.

use crate::runtime_support;

use std::io::BufRead;
use std::process::Stdio;
use std::time::Duration;

use runtime_support::{Project, Qemu};

/// A project whose one instance ran and was stopped, and a squatter on its
/// SSH port that accepts connections but never greets as sshd does.
fn stopped_with_port_squatted() -> (Project, u16, std::net::TcpListener) {
    let p = Project::new(
        "name: moved\nservices:\n  web:\n    image: ./base.qcow2\n",
        Qemu::Fake,
    );
    p.ok_with(&mut p.holos(&["up"]));
    let port = p.ps()[0]["ssh_port"].as_u64().unwrap() as u16;
    p.ok_with(p.holos(&["stop"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
    let squatter = (0..50)
        .find_map(|_| {
            std::net::TcpListener::bind(("127.0.0.1", port))
                .map_err(|_| std::thread::sleep(Duration::from_millis(100)))
                .ok()
        })
        .unwrap_or_else(|| panic!("port {port} stayed taken after stop"));
    (p, port, squatter)
}

#[test]
fn up_waits_on_the_ssh_port_the_launch_moved_to() {
    let (p, port, squatter) = stopped_with_port_squatted();
    let mut up = p.holos(&["up"]);
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(up.output());
    });
    let out = receive
        .recv_timeout(Duration::from_secs(60))
        .expect("up waited on the squatted port instead of the new SSH port")
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let new_port = p.ps()[0]["ssh_port"].as_u64().unwrap() as u16;
    assert_ne!(new_port, port);
    assert!(
        said.contains(&format!("SSH port {port} is taken, using {new_port}")),
        "{said}"
    );
    drop(squatter);
}

/// The SSH port `ps` shows for the one instance.
fn recorded_port(p: &Project) -> u16 {
    p.ps()[0]["ssh_port"].as_u64().unwrap() as u16
}

#[test]
fn an_up_killed_after_the_move_leaves_the_new_port_on_record() {
    let (p, port, squatter) = stopped_with_port_squatted();
    let mut up = p.holos(&["up"]).stderr(Stdio::piped()).spawn().unwrap();
    let moved = format!("SSH port {port} is taken, using ");
    let mut said = String::new();
    let mut lines = std::io::BufReader::new(up.stderr.take().unwrap()).lines();
    let new_port: u16 = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("up ended without moving the port: {said}"))
            .unwrap();
        said.push_str(&line);
        said.push('\n');
        if let Some((_, rest)) = line.split_once(&moved) {
            break rest.trim().parse().unwrap();
        }
    };
    // Killed right after the move, before it records the new QEMU's pid.
    up.kill().unwrap();
    up.wait().unwrap();
    assert_eq!(recorded_port(&p), new_port, "{said}");

    // The next up converges on the port in use, whatever the killed one
    // had started; ps and exec use that port.
    p.ok(&["up"]);
    assert_eq!(recorded_port(&p), new_port);
    assert!(p.pid_of("web-0").is_some(), "{:?}", p.ps());
    let ssh_argv = p.path().join("ssh-argv");
    std::fs::write(
        p.path().join("bin/ssh"),
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}\n",
            ssh_argv.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        p.path().join("bin/ssh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    p.ok(&["exec", "web-0", "--", "true"]);
    let argv = std::fs::read_to_string(&ssh_argv).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    let at = argv.iter().position(|a| *a == "-p").expect("-p");
    assert_eq!(argv[at + 1], new_port.to_string(), "{argv:?}");
    drop(squatter);
}
