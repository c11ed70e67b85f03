//! Compose networks: each named network is a segment of its own (subnet,
//! multicast group, a NIC per member), a service on two networks gets two
//! NICs, `/etc/hosts` per network, `aliases`, `ipv4_address`,
//! `mac_address` and `dns_search`; a host bridge in `driver_opts` attaches
//! through qemu-bridge-helper; and a project without networks keeps its one
//! flat network.

use crate::common::THREE_TIERS;
use crate::runtime_support::{self, Project, Qemu};

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
