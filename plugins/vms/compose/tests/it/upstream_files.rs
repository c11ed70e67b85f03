//! Files that upstream holos accepts, as the library resolves them: its
//! image tags, and fields it must refuse. The tests that run `holos` on
//! such files live with holo-vms.

use crate::common;
use common::project;

#[test]
fn version_tags_as_upstream_names_them() {
    for (reference, alias, tag) in [
        ("ubuntu:24.04", "ubuntu", "noble"),
        ("ubuntu:22.04", "ubuntu", "jammy"),
        ("ubuntu:26.04", "ubuntu", "resolute"),
        ("debian:12", "debian", "bookworm"),
        ("debian:13", "debian", "trixie"),
        ("alpine:3.21", "alpine", "3.21"),
        ("fedora:43", "fedora", "43"),
        ("arch:latest", "arch", "latest"),
    ] {
        let f = project(&format!("services:\n  web:\n    image: {reference}\n"));
        let image = f.manifest().services[0].image.clone();
        assert_eq!(image.reference, reference);
        assert_eq!(
            (image.alias.as_deref(), image.tag.as_deref()),
            (Some(alias), Some(tag)),
            "{reference}"
        );
    }
    let errors = project("services:\n  web:\n    image: debian:11\n").errors();
    assert!(
        errors.contains("image debian has no tag \"11\"; use one of bookworm, 12, trixie, 13"),
        "{errors}"
    );
}

#[test]
fn ssh_authorized_keys_must_be_key_lines() {
    let f = project(
        "services:\n  web:\n    image: debian\n    cloud_init:\n      ssh_authorized_keys: [\"ssh-ed25519 AAAA me@laptop\", just-a-word, [nested]]\n",
    );
    assert_eq!(
        f.errors(),
        "DIR/holos.yaml:5:59: services.web.cloud_init.ssh_authorized_keys[1]: must be one SSH public key line, such as \"ssh-ed25519 AAAAC3Nza... me@laptop\" (the content of ~/.ssh/id_ed25519.pub)\n\
         DIR/holos.yaml:5:72: services.web.cloud_init.ssh_authorized_keys[2]: must be a string, found a list"
    );
    let f = project(
        "services:\n  web:\n    image: debian\n    cloud_init:\n      ssh_authorized_keys: [\"ssh-ed25519 AAAA me@laptop\"]\n",
    );
    assert_eq!(
        f.manifest().services[0].cloud_init.ssh_authorized_keys,
        ["ssh-ed25519 AAAA me@laptop"]
    );
}

#[test]
fn host_port_zero_asks_for_an_ephemeral_port() {
    let f = project(
        "services:\n  web:\n    image: debian\n    ports: [\"0:80\", \"127.0.0.1:0:81\", {target: 82, published: \"0\"}, {target: 83, published: 0}]\n",
    );
    let ports = &f.manifest().services[0].instances[0].ports;
    let got: Vec<(Option<u16>, u16)> = ports.iter().map(|p| (p.host_port, p.guest_port)).collect();
    assert_eq!(got, [(None, 80), (None, 81), (None, 82), (None, 83)]);
}

#[test]
fn disk_size_is_a_size_of_at_least_64m() {
    let f = project("services:\n  web:\n    image: debian\n    vm: {disk_size: 20g}\n");
    assert_eq!(f.manifest().services[0].vm.disk_size_bytes, Some(20 << 30));
    let f = project(
        "services:\n  a:\n    image: debian\n    vm: {disk_size: lots}\n  b:\n    image: debian\n    vm: {disk_size: 1m}\n",
    );
    assert_eq!(
        f.errors(),
        "DIR/holos.yaml:4:21: services.a.vm.disk_size: \"lots\" is not a size; write e.g. 20g or 512m\n\
         DIR/holos.yaml:7:21: services.b.vm.disk_size: \"1m\" is too small for a root disk; write at least 64m, e.g. 20g"
    );
}
