//! UDP port forwards: `HOST:GUEST/udp` (and `protocol: udp`) reach QEMU as
//! `hostfwd=udp:`, beside the TCP ones, and `holos ps` shows them.

use crate::common::project;
use crate::runtime_support::{self, Project, Qemu};

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn udp_ports_resolve_with_their_protocol() {
    let m = project("services:\n  dns:\n    image: alpine\n    ports: [\"5353:53/udp\", \"8053:53\", {target: 69, published: \"6969\", protocol: udp}]\n").manifest();
    let ports: Vec<(&str, Option<u16>, u16)> = m.services[0]
        .ports
        .iter()
        .map(|p| (p.protocol.name(), p.host_port, p.guest_port))
        .collect();
    assert_eq!(
        ports,
        [
            ("udp", Some(5353), 53),
            ("tcp", Some(8053), 53),
            ("udp", Some(6969), 69)
        ]
    );
    // The same host port over TCP and UDP is no clash.
    project(
        "services:\n  dns:\n    image: alpine\n    ports: [\"5353:53/udp\", \"5353:53/tcp\"]\n",
    )
    .manifest();
}

#[test]
#[ignore = "needs qemu-img"]
fn udp_forwards_reach_the_qemu_argv() {
    runtime_support::require_qemu_img();
    let udp = free_udp_port();
    let p = Project::new(
        &format!(
            "name: udp\nservices:\n  dns:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    ports: [\"{udp}:53/udp\"]\n"
        ),
        Qemu::Fake,
    );
    p.ok(&["up", "--no-wait"]);
    let argv = p.recorded_argvs().pop().unwrap();
    let user_net = argv
        .iter()
        .find(|a| a.starts_with("user,id=user0,"))
        .unwrap();
    assert!(
        user_net.ends_with(&format!(",hostfwd=udp:127.0.0.1:{udp}-:53")),
        "{user_net}"
    );
    // QEMU holds the UDP port while the machine runs.
    assert!(std::net::UdpSocket::bind(("127.0.0.1", udp)).is_err());
    let ps = p.ps();
    assert_eq!(ps[0]["ports"][0]["protocol"], "udp", "{ps:?}");
    assert_eq!(ps[0]["ports"][0]["host_port"], udp, "{ps:?}");
    // The table marks the protocol as docker ps does.
    let table = String::from_utf8_lossy(&p.run(&["ps"]).stdout).into_owned();
    assert!(
        table.contains(&format!(" 127.0.0.1:{udp}->53/udp ")),
        "{table}"
    );
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
}
