//! Compose networks: each named network is a segment of its own (subnet,
//! multicast group, a NIC per member), a service on two networks gets two
//! NICs, `/etc/hosts` per network, `aliases`, `ipv4_address`,
//! `mac_address` and `dns_search`; a host bridge in `driver_opts` attaches
//! through qemu-bridge-helper; and a project without networks keeps its one
//! flat network.

use std::net::Ipv4Addr;

use crate::common::{THREE_TIERS, project};
use holos_compose::manifest::{Manifest, SegmentBackend};

fn instance<'m>(m: &'m Manifest, name: &str) -> &'m holos_compose::manifest::Instance {
    m.services
        .iter()
        .flat_map(|s| &s.instances)
        .find(|i| i.name == name)
        .unwrap()
}

fn host_names(m: &Manifest, name: &str) -> Vec<String> {
    m.hosts_for(instance(m, name))
        .iter()
        .map(|h| format!("{} {}", h.ip, h.names.join(" ")))
        .collect()
}

#[test]
fn each_network_is_a_segment_and_hosts_are_per_network() {
    let m = project(THREE_TIERS).manifest();
    let segments: Vec<(&str, &str)> = m
        .networks
        .iter()
        .map(|s| (s.name.as_str(), s.subnet.as_str()))
        .collect();
    assert_eq!(
        segments,
        [("back", "10.30.0.0/24"), ("front", "10.10.1.0/24")]
    );
    let groups: Vec<&SegmentBackend> = m.networks.iter().map(|s| &s.backend).collect();
    assert_ne!(groups[0], groups[1], "own multicast group each");
    let nics = |name: &str| -> Vec<(String, Option<Ipv4Addr>, String)> {
        instance(&m, name)
            .networks
            .iter()
            .map(|a| (a.network.clone(), a.ip, a.mac.clone()))
            .collect()
    };
    assert_eq!(
        nics("app-0"),
        [
            (
                "front".into(),
                Some(Ipv4Addr::new(10, 10, 1, 2)),
                "52:54:02:0a:01:02".into()
            ),
            (
                "back".into(),
                Some(Ipv4Addr::new(10, 30, 0, 9)),
                "52:54:00:aa:bb:cc".into()
            ),
        ],
        "two NICs, in the order the service lists its networks"
    );
    assert_eq!(nics("web-0").len(), 1);
    assert_eq!(nics("db-0")[0].1, Some(Ipv4Addr::new(10, 30, 0, 2)));
    assert_eq!(
        host_names(&m, "web-0"),
        ["10.10.1.2 app-0 app api", "10.10.1.3 web-0 web"],
        "web sees front only"
    );
    assert_eq!(
        host_names(&m, "db-0"),
        ["10.30.0.9 app-0 app", "10.30.0.2 db-0 db"],
        "db sees back only"
    );
    assert_eq!(host_names(&m, "app-0").len(), 4, "app sees both");
    assert_eq!(
        m.services
            .iter()
            .find(|s| s.name == "web")
            .unwrap()
            .dns_search,
        ["example.org"]
    );
}

#[test]
fn a_project_without_networks_keeps_its_flat_network() {
    let m = project("services:\n  a: {image: debian}\n  b: {image: debian, networks: [default]}\n")
        .manifest();
    assert!(m.networks.is_empty());
    assert_eq!(m.services[0].instances[0].ip, Ipv4Addr::new(10, 10, 0, 2));
    assert_eq!(m.services[0].instances[0].mac_internal, "52:54:00:0a:0a:02");
    assert!(
        m.services
            .iter()
            .all(|s| s.instances[0].networks.is_empty())
    );
    assert_eq!(m.hosts.len(), 2);
}

#[test]
fn bad_networks_name_their_place() {
    let errors = project("services:\n  a:\n    image: debian\n    mac_address: nope\n").errors();
    assert!(
        errors.contains("holos.yaml:4:18: services.a.mac_address: \"nope\" is not a unicast MAC address such as 52:54:00:12:34:56"),
        "{errors}"
    );
    let errors = project("services:\n  a:\n    image: debian\n    replicas: 2\n    networks:\n      nosuch: {}\n      back: {ipv4_address: 10.9.9.9}\nnetworks:\n  back: {ipam: {config: [{subnet: 10.30.0.0/24}]}}\n").errors();
    for expected in [
        "services.a.networks.nosuch: unknown network \"nosuch\"; declare it under the top-level networks:",
        "services.a.networks.back: ipv4_address and mac_address need replicas: 1",
    ] {
        assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
    }
}

/// The rules of keeping: a fixed `ipv4_address` wins over a kept address,
/// an address kept for an instance that left the network is not handed to
/// a newcomer, and a recorded subnet that `ipam` now takes is given up.
#[test]
fn kept_addresses_yield_to_fixed_ones_and_are_not_reused() {
    use holos_compose::network::Allocations;
    let mut kept = Allocations::default();
    kept.add("front", "web-0", Ipv4Addr::new(10, 10, 1, 2), 24);
    kept.add("front", "gone-0", Ipv4Addr::new(10, 10, 1, 3), 24);
    kept.add("back", "db-0", Ipv4Addr::new(10, 20, 0, 5), 24);
    let f = project(
        "services:\n  web:\n    image: debian\n    networks: [front]\n  api:\n    image: debian\n    networks: [front]\n  db:\n    image: debian\n    networks:\n      back: {ipv4_address: 10.20.0.2}\n  cache:\n    image: debian\n    networks: [back]\nnetworks:\n  front: {}\n  back:\n    ipam: {config: [{subnet: 10.20.0.0/24}]}\n",
    );
    let (_, m) = holos_compose::resolve_with_allocations(&f.options(), &kept).expect("resolves");
    let ip = |name: &str| instance(&m, name).networks[0].ip.unwrap();
    assert_eq!(ip("web-0"), Ipv4Addr::new(10, 10, 1, 2), "kept");
    assert_eq!(ip("api-0"), Ipv4Addr::new(10, 10, 1, 4), "not gone-0's");
    assert_eq!(
        ip("db-0"),
        Ipv4Addr::new(10, 20, 0, 2),
        "the fixed address wins"
    );
    assert_eq!(ip("cache-0"), Ipv4Addr::new(10, 20, 0, 3));

    // front's recorded subnet, now another network's ipam, is given up.
    let g = project(
        "services:\n  web:\n    image: debian\n    networks: [front, lan]\nnetworks:\n  front: {}\n  lan:\n    ipam: {config: [{subnet: 10.10.1.0/24}]}\n",
    );
    let (_, m) = holos_compose::resolve_with_allocations(&g.options(), &kept).expect("resolves");
    let subnets: Vec<(&str, &str)> = m
        .networks
        .iter()
        .map(|s| (s.name.as_str(), s.subnet.as_str()))
        .collect();
    assert_eq!(
        subnets,
        [("front", "10.10.2.0/24"), ("lan", "10.10.1.0/24")]
    );
}
