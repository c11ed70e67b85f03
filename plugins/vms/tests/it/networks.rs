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
            "virtio-net-pci,netdev=internal0,mac=52:54:02:0a:01:02",
            "virtio-net-pci,netdev=internal1,mac=52:54:00:aa:bb:cc"
        ]
    );
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
}

/// Addresses on named networks are kept across runs as on the flat one:
/// a service added to a network (first in start order) takes a free
/// address instead of renumbering the running members, and a network added
/// before another by name does not move that one's subnet, so nothing that
/// runs is recreated.
#[test]
#[ignore = "needs qemu-img"]
fn named_networks_keep_their_addresses_and_subnets_across_runs() {
    runtime_support::require_qemu_img();
    let service = |name: &str, networks: &str| {
        format!(
            "  {name}:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n    networks: [{networks}]\n"
        )
    };
    let before = format!(
        "name: keep\nservices:\n{}{}networks:\n  front: {{}}\n  back: {{}}\n",
        service("web", "front"),
        service("db", "back, front")
    );
    let p = Project::new(&before, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let nics = |p: &Project, instance: &str| -> Vec<(String, String)> {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.state().join("projects/keep.json")).unwrap())
                .unwrap();
        record["instances"][instance]["spec"]["networks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["network"].as_str().unwrap().to_string(),
                    format!("{}/{}", n["ip"].as_str().unwrap(), n["prefix"]),
                )
            })
            .collect()
    };
    let web = nics(&p, "web-0");
    let db = nics(&p, "db-0");
    assert_eq!(web, [("front".to_string(), "10.10.2.3/24".to_string())]);
    let pids = (p.pid_of("web-0").unwrap(), p.pid_of("db-0").unwrap());

    // `api` starts first (by name) and is on front; `admin` sorts before
    // both networks.
    let after = format!(
        "name: keep\nservices:\n{}{}{}networks:\n  admin: {{}}\n  front: {{}}\n  back: {{}}\n",
        service("api", "front, admin"),
        service("web", "front"),
        service("db", "back, front")
    );
    p.write(&after);
    let said = p.ok(&["up", "--no-wait"]);
    assert_eq!(nics(&p, "web-0"), web, "{said}");
    assert_eq!(nics(&p, "db-0"), db, "{said}");
    assert_eq!(
        (p.pid_of("web-0").unwrap(), p.pid_of("db-0").unwrap()),
        pids,
        "nothing running was recreated: {said}"
    );
    assert_eq!(
        nics(&p, "api-0"),
        [
            ("front".to_string(), "10.10.2.4/24".to_string()),
            ("admin".to_string(), "10.10.3.2/24".to_string()),
        ],
        "new members take free addresses, a new network a free subnet"
    );
    // Without the record, config shows the plan of a first run.
    let out = p.run(&["config", "--resolved", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let subnets: Vec<&str> = plan["networks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subnet"].as_str().unwrap())
        .collect();
    assert_eq!(subnets, ["10.10.1.0/24", "10.10.2.0/24", "10.10.3.0/24"]);
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
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
