//! `holos up` starting a stopped instance whose SSH port another process
//! took meanwhile: the launch moves to a new port, and up waits for sshd on
//! that one, not on the port the plan started from (which would hang until
//! the five-minute limit).

use crate::runtime_support;

use std::time::Duration;

use runtime_support::{Project, Qemu};

#[test]
fn up_waits_on_the_ssh_port_the_launch_moved_to() {
    let p = Project::new(
        "name: moved\nservices:\n  web:\n    image: ./base.qcow2\n",
        Qemu::Fake,
    );
    p.ok_with(&mut p.holos(&["up"]));
    let port = p.ps()[0]["ssh_port"].as_u64().unwrap() as u16;
    p.ok_with(p.holos(&["stop"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
    // A squatter that accepts connections but never greets as sshd does.
    let squatter = (0..50)
        .find_map(|_| {
            std::net::TcpListener::bind(("127.0.0.1", port))
                .map_err(|_| std::thread::sleep(Duration::from_millis(100)))
                .ok()
        })
        .unwrap_or_else(|| panic!("port {port} stayed taken after stop"));
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
