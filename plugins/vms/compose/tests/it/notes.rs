//! The `>>` notes on fields that act differently in a VM: one per field in
//! use, naming the first place it occurs; `--quiet` silences them.

use crate::common;
use common::{Fixture, project};

fn notes(f: &Fixture) -> Vec<String> {
    let (project, _) = holos_compose::resolve(&f.options()).expect("valid project");
    holos_compose::load::notes::quiet_semantics(&project)
        .iter()
        .map(|n| {
            n.to_string()
                .replace(&f.path().display().to_string(), "DIR")
        })
        .collect()
}

#[test]
fn one_note_per_field_at_its_first_place() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  a:\n    image: alpine\n    ports: [\"127.0.0.1:8080:80\", \"8081:81\"]\n    command: [\"serve\"]\n  b:\n    image: alpine\n    ports: [{target: 90}]\n    command: run\n    networks: [front]\n    secrets: [token]\nnetworks:\n  front: {}\nsecrets:\n  token: {file: ./token}\n",
        ),
        (
            "holos.override.yaml",
            "services:\n  a:\n    entrypoint: [/bin/app]\n    configs: [conf]\nconfigs:\n  conf: {file: ./conf}\n",
        ),
        ("conf", "x=1\n"),
        ("token", "t0ken\n"),
    ]);
    assert_eq!(
        notes(&f),
        [
            "DIR/holos.yaml:10: networks: each network is a segment of its own between the VMs (a multicast group on the host's loopback, or a host bridge named in driver_opts); internet access and published ports go through a separate user-mode NIC",
            "DIR/holos.yaml:5: command: runs at every boot, after the volume mounts, as a systemd unit (OpenRC: /etc/local.d); it is not the VM's main process and is not restarted when it exits",
            "DIR/holos.override.yaml:3: entrypoint: runs at every boot together with command, after the volume mounts; it is not the VM's main process",
            "DIR/holos.yaml:4: ports: a port without a host IP binds to 127.0.0.1, not to every address as in Docker Compose; write 0.0.0.0:HOST:GUEST to publish it on all addresses",
        ]
        .map(|line| format!(">> {line}"))
    );
}

#[test]
fn fields_with_their_meaning_spelled_out_give_no_note() {
    let f = project(
        "services:\n  a:\n    image: alpine\n    ports: [\"0.0.0.0:8080:80\", {target: 81, published: \"8081\", host_ip: 127.0.0.1}]\n    networks: []\n    command: ~\n  off:\n    image: alpine\n    profiles: [debug]\n    command: run\n",
    );
    assert_eq!(notes(&f), Vec::<String>::new());
}
