//! The internal VM network plan: static IPs, MACs, the multicast group and
//! the `/etc/hosts` entries.
//!
//! IPs come from 10.10.0.0/24, `.2` upward, in topological service order
//! with ties broken by name. Allocations that already exist are kept, so
//! adding a service never renumbers running instances. MACs derive from the
//! IP, so they are unique whenever the IPs are.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use sha2::{Digest, Sha256};

/// The network every service joins unless it names others.
pub const DEFAULT: &str = "default";

pub const SUBNET: &str = "10.10.0.0/24";
const FIRST_HOST: u8 = 2;
const LAST_HOST: u8 = 254;
/// `.2` to `.254`.
pub const MAX_INSTANCES: usize = (LAST_HOST - FIRST_HOST + 1) as usize;

/// Orders services so that every service comes after what it depends on;
/// among ready services the smallest name goes first. A cycle is an error
/// that names it.
pub fn topological_order(deps: &BTreeMap<String, Vec<String>>) -> Result<Vec<String>, Vec<String>> {
    let mut remaining: BTreeMap<&str, BTreeSet<&str>> = deps
        .iter()
        .map(|(name, ds)| {
            (
                name.as_str(),
                ds.iter()
                    .map(String::as_str)
                    .filter(|d| deps.contains_key(*d))
                    .collect(),
            )
        })
        .collect();
    let mut order = Vec::with_capacity(deps.len());
    while !remaining.is_empty() {
        let ready = remaining
            .iter()
            .find(|(_, ds)| ds.is_empty())
            .map(|(name, _)| *name);
        let Some(next) = ready else {
            return Err(find_cycle(&remaining));
        };
        remaining.remove(next);
        for ds in remaining.values_mut() {
            ds.remove(next);
        }
        order.push(next.to_string());
    }
    Ok(order)
}

/// Walks dependencies from the smallest stuck service until one repeats.
fn find_cycle(remaining: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    let mut path: Vec<&str> = Vec::new();
    let mut current = remaining.keys().next().copied().unwrap_or_default();
    loop {
        if let Some(start) = path.iter().position(|p| *p == current) {
            let mut cycle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
            cycle.push(current.to_string());
            return cycle;
        }
        path.push(current);
        match remaining.get(current).and_then(|ds| ds.iter().next()) {
            Some(next) => current = next,
            None => return path.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The addresses instances already hold, so that resolving a project again
/// keeps them: by instance, their place in the flat plan (which names the
/// user-mode NIC's MAC), their address on the `default` network, and on
/// each named network, with the subnet the network had. A project without
/// named networks has the same `flat` and `default`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocations {
    pub flat: BTreeMap<String, Ipv4Addr>,
    pub default: BTreeMap<String, Ipv4Addr>,
    pub named: BTreeMap<String, NetworkAllocation>,
}

/// One named network's addresses from an earlier run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkAllocation {
    /// The network's subnet (base address and prefix).
    pub subnet: Option<(Ipv4Addr, u8)>,
    pub ips: BTreeMap<String, Ipv4Addr>,
}

impl Allocations {
    /// Records that `instance` holds `ip`/`prefix` on `network`.
    pub fn add(&mut self, network: &str, instance: &str, ip: Ipv4Addr, prefix: u8) {
        if network == DEFAULT {
            self.default.insert(instance.to_string(), ip);
            return;
        }
        let entry = self.named.entry(network.to_string()).or_default();
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        entry
            .subnet
            .get_or_insert((Ipv4Addr::from(u32::from(ip) & mask), prefix));
        entry.ips.insert(instance.to_string(), ip);
    }

    /// The addresses held on `network` (the default one included).
    pub fn on(&self, network: &str) -> BTreeMap<String, Ipv4Addr> {
        if network == DEFAULT {
            return self.default.clone();
        }
        self.named
            .get(network)
            .map(|n| n.ips.clone())
            .unwrap_or_default()
    }
}

/// Addresses on the flat default network, by instance.
impl FromIterator<(String, Ipv4Addr)> for Allocations {
    fn from_iter<I: IntoIterator<Item = (String, Ipv4Addr)>>(iter: I) -> Self {
        let default: BTreeMap<String, Ipv4Addr> = iter.into_iter().collect();
        Allocations {
            flat: default.clone(),
            default,
            named: BTreeMap::new(),
        }
    }
}

/// Assigns an IP to every instance name in `wanted` (in order), keeping the
/// addresses in `existing` and filling the lowest free ones.
pub fn allocate_ips(
    wanted: &[String],
    existing: &BTreeMap<String, Ipv4Addr>,
) -> Result<BTreeMap<String, Ipv4Addr>, String> {
    if wanted.len() > MAX_INSTANCES {
        return Err(format!(
            "the project has {} instances but {SUBNET} holds only {MAX_INSTANCES}; lower replicas or split the project",
            wanted.len()
        ));
    }
    let mut used: BTreeSet<u8> = BTreeSet::new();
    let mut out = BTreeMap::new();
    for name in wanted {
        if let Some(ip) = existing.get(name) {
            let octet = ip.octets()[3];
            if ip.octets()[..3] == [10, 10, 0]
                && (FIRST_HOST..=LAST_HOST).contains(&octet)
                && used.insert(octet)
            {
                out.insert(name.clone(), *ip);
            }
        }
    }
    // Instances that are no longer wanted may still run (until `down`, or
    // until holo-vms scrubs their service): new names do not take their
    // addresses.
    let held: BTreeSet<u8> = existing.values().map(|ip| ip.octets()[3]).collect();
    let mut free = (FIRST_HOST..=LAST_HOST).filter(|o| !used.contains(o) && !held.contains(o));
    for name in wanted {
        if out.contains_key(name) {
            continue;
        }
        let Some(octet) = free.next() else {
            return Err(format!(
                "no free address left in {SUBNET} for {name}; remove stopped instances' allocations"
            ));
        };
        out.insert(name.clone(), Ipv4Addr::new(10, 10, 0, octet));
    }
    Ok(out)
}

/// The MAC of the internal (multicast) NIC.
pub fn internal_mac(ip: Ipv4Addr) -> String {
    format!("52:54:00:0a:0a:{:02x}", ip.octets()[3])
}

/// The MAC of the user-mode NIC (host port forwards).
pub fn user_mac(ip: Ipv4Addr) -> String {
    format!("52:54:01:0a:0a:{:02x}", ip.octets()[3])
}

/// The flat plan's address that [`user_mac`] was made from.
pub fn user_mac_address(mac: &str) -> Option<Ipv4Addr> {
    let last = mac.strip_prefix("52:54:01:0a:0a:")?;
    u8::from_str_radix(last, 16)
        .ok()
        .map(|octet| Ipv4Addr::new(10, 10, 0, octet))
}

/// A MAC for a NIC without an address of its own (DHCP on a host bridge):
/// from sha256(`key`), locally administered.
pub fn hashed_mac(key: &str) -> String {
    let hash = Sha256::digest(key.as_bytes());
    format!("52:54:03:{:02x}:{:02x}:{:02x}", hash[0], hash[1], hash[2])
}

/// A per-project multicast group in 239.192.0.0/14 (organisation-local) and
/// a port in 20000..=59999, both from sha256(project).
pub fn multicast_for(project: &str) -> (Ipv4Addr, u16) {
    let hash = Sha256::digest(project.as_bytes());
    let group = Ipv4Addr::new(239, 192 + (hash[0] & 0x03), hash[1], hash[2].max(1));
    let port = 20000 + (u16::from_be_bytes([hash[3], hash[4]]) % 40000);
    (group, port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(n, ds)| (n.to_string(), ds.iter().map(|d| d.to_string()).collect()))
            .collect()
    }

    #[test]
    fn orders_dependencies_first_then_by_name() {
        let order = topological_order(&deps(&[
            ("web", &["db"]),
            ("api", &["db"]),
            ("db", &[]),
            ("a", &["web"]),
        ]))
        .unwrap();
        assert_eq!(order, ["db", "api", "web", "a"]);
    }

    #[test]
    fn names_the_cycle() {
        let err = topological_order(&deps(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a"]),
            ("d", &[]),
        ]))
        .unwrap_err();
        assert_eq!(err, ["a", "b", "c", "a"]);
    }

    #[test]
    fn keeps_existing_allocations() {
        let names: Vec<String> = ["db-0", "new-0", "web-0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let existing = BTreeMap::from([
            ("db-0".to_string(), Ipv4Addr::new(10, 10, 0, 2)),
            ("web-0".to_string(), Ipv4Addr::new(10, 10, 0, 3)),
        ]);
        let got = allocate_ips(&names, &existing).unwrap();
        assert_eq!(got["new-0"], Ipv4Addr::new(10, 10, 0, 4));
        assert_eq!(got["web-0"], Ipv4Addr::new(10, 10, 0, 3));
    }

    #[test]
    fn new_names_avoid_addresses_of_instances_no_longer_wanted() {
        let names: Vec<String> = ["db-0", "new-0"].iter().map(|s| s.to_string()).collect();
        let existing = BTreeMap::from([
            ("db-0".to_string(), Ipv4Addr::new(10, 10, 0, 2)),
            ("gone-0".to_string(), Ipv4Addr::new(10, 10, 0, 3)),
        ]);
        let got = allocate_ips(&names, &existing).unwrap();
        assert_eq!(got["new-0"], Ipv4Addr::new(10, 10, 0, 4));
    }

    #[test]
    fn refuses_more_than_253_instances() {
        let names: Vec<String> = (0..254).map(|i| format!("s-{i}")).collect();
        assert!(
            allocate_ips(&names, &BTreeMap::new())
                .unwrap_err()
                .contains("253")
        );
        assert_eq!(
            allocate_ips(&names[..253], &BTreeMap::new()).unwrap()["s-252"],
            Ipv4Addr::new(10, 10, 0, 254)
        );
    }

    #[test]
    fn macs_follow_the_last_octet() {
        let ip = Ipv4Addr::new(10, 10, 0, 17);
        assert_eq!(internal_mac(ip), "52:54:00:0a:0a:11");
        assert_eq!(user_mac(ip), "52:54:01:0a:0a:11");
        assert_eq!(user_mac_address(&user_mac(ip)), Some(ip));
        assert_eq!(user_mac_address("52:54:00:0a:0a:11"), None);
    }

    #[test]
    fn allocations_file_named_networks_with_their_subnet() {
        let mut a = Allocations::default();
        a.add("default", "web-0", Ipv4Addr::new(10, 10, 0, 4), 24);
        a.add("back", "db-0", Ipv4Addr::new(10, 30, 1, 7), 23);
        a.add("back", "app-0", Ipv4Addr::new(10, 30, 0, 9), 23);
        assert_eq!(a.on("default")["web-0"], Ipv4Addr::new(10, 10, 0, 4));
        assert_eq!(
            a.named["back"].subnet,
            Some((Ipv4Addr::new(10, 30, 0, 0), 23))
        );
        assert_eq!(a.on("back").len(), 2);
        assert!(a.on("front").is_empty());
    }

    #[test]
    fn multicast_is_stable_and_per_project() {
        assert_eq!(multicast_for("demo"), multicast_for("demo"));
        assert_ne!(multicast_for("demo"), multicast_for("other"));
        let (group, port) = multicast_for("demo");
        assert!(group.is_multicast() && port >= 20000);
    }
}
