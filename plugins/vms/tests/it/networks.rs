//! Compose networks: each named network is a segment of its own (subnet,
//! multicast group, a NIC per member), a service on two networks gets two
//! NICs, `/etc/hosts` per network, `aliases`, `ipv4_address`,
//! `mac_address` and `dns_search`; a host bridge in `driver_opts` attaches
//! through qemu-bridge-helper; and a project without networks keeps its one
//! flat network.

use std::net::Ipv4Addr;

use crate::common::project;
use crate::runtime_support::{self, Project, Qemu};
use holos_compose::manifest::{Manifest, SegmentBackend};

const THREE_TIERS: &str = "services:\n  web:\n    image: debian\n    networks: [front]\n    dns_search: [example.org]\n  app:\n    image: debian\n    networks:\n      front:\n        aliases: [api]\n      back:\n        ipv4_address: 10.30.0.9\n        mac_address: 52:54:00:aa:bb:cc\n  db:\n    image: debian\n    networks: [back]\nnetworks:\n  front: {}\n  back:\n    ipam:\n      config:\n        - subnet: 10.30.0.0/24\n";

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
                "52:54:02:01:01:02".into()
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

#[test]
#[ignore = "needs qemu-img"]
fn qemu_gets_a_nic_per_network_and_a_host_bridge_through_the_helper() {
    runtime_support::require_qemu_img();
    let compose = THREE_TIERS
        .replace("image: debian", "image: ./base.qcow2\n    stop_grace_period: 1s")
        .replace(
            "networks:\n  front: {}\n",
            "name: tiers\nnetworks:\n  front: {}\n  lan:\n    driver: bridge\n    driver_opts: {com.docker.network.bridge.name: br-holos}\n",
        )
        .replace("networks: [back]", "networks: [back, lan]");
    let p = Project::new(&compose, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let argvs = p.recorded_argvs();
    let netdevs = |argv: &Vec<String>| -> Vec<String> {
        argv.windows(2)
            .filter(|w| w[0] == "-netdev" && !w[1].starts_with("user,"))
            .map(|w| w[1].clone())
            .collect()
    };
    let of = |service: &str| {
        argvs
            .iter()
            .find(|a| a.iter().any(|x| x.contains(&format!("guest={service}-0,"))))
            .unwrap()
    };
    let app = netdevs(of("app"));
    let web = netdevs(of("web"));
    let db = netdevs(of("db"));
    assert_eq!(app.len(), 2, "{app:?}");
    assert!(
        app[0].starts_with("socket,id=internal0,mcast=239.")
            && app[1].starts_with("socket,id=internal1,mcast=239.")
    );
    let group = |netdev: &str| netdev.split("mcast=").nth(1).unwrap().to_string();
    assert_ne!(group(&app[0]), group(&app[1]));
    assert_eq!(group(&web[0]), group(&app[0]), "web and app share front");
    assert_eq!(group(&db[0]), group(&app[1]), "db and app share back");
    assert_ne!(group(&web[0]), group(&db[0]), "web and db share nothing");
    assert_eq!(db[1], "bridge,id=internal1,br=br-holos");
    let devices: Vec<&String> = of("app")
        .windows(2)
        .filter(|w| w[0] == "-device" && w[1].contains("netdev=internal"))
        .map(|w| &w[1])
        .collect();
    assert_eq!(
        devices,
        [
            "virtio-net-pci,netdev=internal0,mac=52:54:02:01:01:02",
            "virtio-net-pci,netdev=internal1,mac=52:54:00:aa:bb:cc"
        ]
    );
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
}
