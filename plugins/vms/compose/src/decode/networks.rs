//! Compose networks: when a service names networks (or sets `mac_address`),
//! each network becomes a segment of its own, with its own subnet and
//! multicast group (or an existing host bridge), and every instance gets
//! one NIC per network it is on. `default` is the flat network of a
//! project without networks: 10.10.0.0/24, the project's multicast group,
//! the same addresses and MACs; a service that names no network is on it.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use super::reader::{Reader, child, item};
use crate::diag::Pos;
use crate::keys;
use crate::load::Project;
use crate::manifest::{Attachment, HostEntry, Segment, SegmentBackend, Service};
use crate::network;
use crate::yaml::{Kind, Node};

pub use crate::network::DEFAULT;

/// A top-level network, as far as holos reads it.
#[derive(Clone, Debug, Default)]
pub struct NetworkDef {
    /// `ipam.config[0].subnet`.
    pub subnet: Option<(Ipv4Addr, u8)>,
    /// `driver: bridge` with a host bridge named in `driver_opts`.
    pub bridge: Option<String>,
}

/// One service's entry under `networks:`.
#[derive(Clone, Debug)]
pub struct Membership {
    pub network: String,
    pub aliases: Vec<String>,
    pub ipv4_address: Option<Ipv4Addr>,
    pub mac_address: Option<String>,
    pub pos: Pos,
    pub path: String,
}

/// What one service asks for.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// `None`: the service has no `networks:` key.
    pub networks: Option<Vec<Membership>>,
    /// The service's own `mac_address`.
    pub mac: Option<String>,
}

/// What the services ask for, by service.
pub struct Requests {
    pub by_service: BTreeMap<String, Request>,
}

impl Requests {
    /// Whether the project uses named networks at all.
    pub fn any(&self) -> bool {
        self.by_service.values().any(|request| {
            request.mac.is_some()
                || request
                    .networks
                    .as_ref()
                    .is_some_and(|n| n.iter().any(|m| m.network != DEFAULT || m.has_options()))
        })
    }
}

impl Membership {
    fn has_options(&self) -> bool {
        !self.aliases.is_empty() || self.ipv4_address.is_some() || self.mac_address.is_some()
    }
}

/// `A.B.C.D/N` with N from 16 to 29, its host bits cleared.
pub fn parse_subnet(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let bad = || format!("{text:?} is not an IPv4 subnet such as 10.20.0.0/24");
    let (ip, prefix) = text.split_once('/').ok_or_else(bad)?;
    let ip: Ipv4Addr = ip.trim().parse().map_err(|_| bad())?;
    let prefix: u8 = prefix.trim().parse().map_err(|_| bad())?;
    if !(16..=29).contains(&prefix) {
        return Err(format!(
            "{text:?}: holos takes subnets from /16 to /29; write one such as 10.20.0.0/24"
        ));
    }
    let mask = u32::MAX << (32 - prefix);
    Ok((Ipv4Addr::from(u32::from(ip) & mask), prefix))
}

/// A valid locally administered unicast MAC, normalised to lower case.
fn parse_mac(text: &str) -> Result<String, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let ok = parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    let first = parts
        .first()
        .and_then(|p| u8::from_str_radix(p, 16).ok())
        .unwrap_or(1);
    if !ok || first & 1 == 1 {
        return Err(format!(
            "{text:?} is not a unicast MAC address such as 52:54:00:12:34:56"
        ));
    }
    Ok(text.to_ascii_lowercase())
}

pub fn decode_top(r: &mut Reader, root: &Node) -> BTreeMap<String, NetworkDef> {
    let mut out = BTreeMap::new();
    let Some(defs) = root.get("networks").and_then(Node::as_map) else {
        return out;
    };
    for (name, def) in defs {
        let Some(name) = name.as_str() else { continue };
        if name.starts_with("x-") {
            continue;
        }
        let path = child("networks", name);
        let mut network = NetworkDef::default();
        if def.is_null() {
            out.insert(name.to_string(), network);
            continue;
        }
        if r.mapping(def, &path, keys::TOP_NETWORK).is_none() {
            continue;
        }
        if let Some(config) = def
            .get("ipam")
            .and_then(|i| i.get("config"))
            .and_then(Node::as_seq)
            .and_then(|c| c.first())
            && let Some(subnet) = config.get("subnet")
        {
            let spath = format!("{path}.ipam.config[0].subnet");
            if let Some(text) = r.string(subnet, &spath) {
                match parse_subnet(&text) {
                    Ok(parsed) => network.subnet = Some(parsed),
                    Err(e) => r.error(subnet, &spath, e),
                }
            }
        }
        let driver = def.get("driver").and_then(Node::as_str).unwrap_or("bridge");
        if driver == "bridge"
            && let Some(opts) = def.get("driver_opts")
        {
            for key in ["com.docker.network.bridge.name", "bridge"] {
                if let Some(n) = opts.get(key)
                    && let Some(bridge) = r.string(n, &format!("{path}.driver_opts.{key}"))
                {
                    network.bridge = Some(bridge);
                    break;
                }
            }
        }
        out.insert(name.to_string(), network);
    }
    out
}

pub fn decode_requests(r: &mut Reader, root: &Node) -> Requests {
    let mut by_service = BTreeMap::new();
    for (name, service) in root
        .get("services")
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let Some(name) = name.as_str() else { continue };
        let spath = format!("services.{name}");
        let mac = service
            .get("mac_address")
            .filter(|n| !n.is_null())
            .and_then(|n| {
                let mpath = child(&spath, "mac_address");
                let text = r.string(n, &mpath)?;
                match parse_mac(&text) {
                    Ok(mac) => Some(mac),
                    Err(e) => {
                        r.error(n, &mpath, e);
                        None
                    }
                }
            });
        let networks = service
            .get("networks")
            .filter(|n| !n.is_null())
            .map(|n| decode_memberships(r, n, &child(&spath, "networks")));
        by_service.insert(name.to_string(), Request { networks, mac });
    }
    Requests { by_service }
}

fn decode_memberships(r: &mut Reader, node: &Node, path: &str) -> Vec<Membership> {
    let mut out = Vec::new();
    match &node.kind {
        Kind::Seq(items) => {
            for (i, entry) in items.iter().enumerate() {
                if let Some(network) = r.string(entry, &item(path, i)) {
                    out.push(Membership {
                        network,
                        aliases: Vec::new(),
                        ipv4_address: None,
                        mac_address: None,
                        pos: entry.pos.clone(),
                        path: item(path, i),
                    });
                }
            }
        }
        Kind::Map(entries) => {
            for (key, value) in entries {
                let Some(network) = key.as_str() else {
                    continue;
                };
                let npath = child(path, network);
                let mut membership = Membership {
                    network: network.to_string(),
                    aliases: Vec::new(),
                    ipv4_address: None,
                    mac_address: None,
                    pos: key.pos.clone(),
                    path: npath.clone(),
                };
                if !value.is_null() && r.mapping(value, &npath, keys::SERVICE_NETWORK).is_some() {
                    if let Some(n) = value.get("aliases").filter(|n| !n.is_null()) {
                        membership.aliases = r.strings(n, &child(&npath, "aliases"));
                    }
                    if let Some(n) = value.get("ipv4_address").filter(|n| !n.is_null()) {
                        let apath = child(&npath, "ipv4_address");
                        if let Some(text) = r.string(n, &apath) {
                            match text.parse::<Ipv4Addr>() {
                                Ok(ip) => membership.ipv4_address = Some(ip),
                                Err(_) => {
                                    r.error(n, &apath, format!("{text:?} is not an IPv4 address"))
                                }
                            }
                        }
                    }
                    if let Some(n) = value.get("mac_address").filter(|n| !n.is_null()) {
                        let mpath = child(&npath, "mac_address");
                        if let Some(text) = r.string(n, &mpath) {
                            match parse_mac(&text) {
                                Ok(mac) => membership.mac_address = Some(mac),
                                Err(e) => r.error(n, &mpath, e),
                            }
                        }
                    }
                }
                out.push(membership);
            }
        }
        _ => r.error(
            node,
            path,
            "must be a list of network names or a mapping of network names",
        ),
    }
    out
}

/// The addresses of one subnet that instances may take: from the network's
/// second address (the first is the gateway's, as in Docker) up to the
/// last before broadcast.
fn host_range(base: Ipv4Addr, prefix: u8) -> std::ops::RangeInclusive<u32> {
    let start = u32::from(base);
    let size = 1u32 << (32 - prefix);
    (start + 2)..=(start + size - 2)
}

/// One instance on one network: its name, replica number, service, the
/// service's membership and the MAC it asks for.
type Member = (String, u32, String, Membership, Option<String>);

/// What `place` works with while it goes through the networks.
struct Placement<'a> {
    project: &'a Project,
    requests: &'a Requests,
    defs: &'a BTreeMap<String, NetworkDef>,
    existing: &'a network::Allocations,
    /// Which networks each service is on, in the order written.
    memberships: BTreeMap<String, Vec<Membership>>,
    /// Per instance, its NICs, filled in network order.
    attachments: BTreeMap<String, Vec<Attachment>>,
    /// The MACs services set or were given, which a generated one must
    /// not repeat.
    given_macs: BTreeSet<String>,
}

/// Gives every instance of `services` its NICs and returns the segments.
/// `existing` are the addresses and subnets of an earlier run, kept.
pub fn place(
    project: &Project,
    services: &mut [Service],
    requests: &Requests,
    defs: &BTreeMap<String, NetworkDef>,
    existing: &network::Allocations,
    r: &mut Reader,
) -> Vec<Segment> {
    let memberships = memberships_of(project, services, requests, defs, r);
    let names = segment_names(&memberships, defs);
    let mut auto_subnets = auto_subnets(&names, defs, existing);
    let given_macs = memberships
        .values()
        .flatten()
        .filter_map(|m| m.mac_address.clone())
        .chain(requests.by_service.values().filter_map(|r| r.mac.clone()))
        .collect();
    let mut placement = Placement {
        project,
        requests,
        defs,
        existing,
        memberships,
        attachments: BTreeMap::new(),
        given_macs,
    };
    let mut segments = Vec::new();
    for name in &names {
        let subnet = placement.subnet(name, &mut auto_subnets, r);
        segments.push(placement.segment(name, subnet, services, r));
    }
    placement.attach(services);
    check_unique_macs(project, services, r);
    segments
}

/// Which networks each service is on, in the order written (the default
/// network for a service that names none), with an error for an unknown
/// network and for a fixed address on replicas.
fn memberships_of(
    project: &Project,
    services: &[Service],
    requests: &Requests,
    defs: &BTreeMap<String, NetworkDef>,
    r: &mut Reader,
) -> BTreeMap<String, Vec<Membership>> {
    let mut memberships = BTreeMap::new();
    for service in services {
        let request = requests
            .by_service
            .get(&service.name)
            .cloned()
            .unwrap_or_default();
        let list = request.networks.unwrap_or_else(|| {
            vec![Membership {
                network: DEFAULT.into(),
                aliases: Vec::new(),
                ipv4_address: None,
                mac_address: None,
                pos: project.model.pos.clone(),
                path: format!("services.{}", service.name),
            }]
        });
        for m in &list {
            if m.network != DEFAULT && !defs.contains_key(&m.network) {
                r.diags.push(
                    &m.pos,
                    &m.path,
                    format!(
                        "unknown network {:?}; declare it under the top-level networks:",
                        m.network
                    ),
                );
            }
            if service.replicas > 1 && (m.ipv4_address.is_some() || m.mac_address.is_some()) {
                r.diags.push(
                    &m.pos,
                    &m.path,
                    "ipv4_address and mac_address need replicas: 1; every replica would get the same",
                );
            }
        }
        memberships.insert(service.name.clone(), list);
    }
    memberships
}

/// Segment order: default first, then by name.
fn segment_names(
    memberships: &BTreeMap<String, Vec<Membership>>,
    defs: &BTreeMap<String, NetworkDef>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if memberships
        .values()
        .any(|l| l.iter().any(|m| m.network == DEFAULT))
    {
        names.push(DEFAULT.into());
    }
    let used: BTreeSet<&String> = memberships.values().flatten().map(|m| &m.network).collect();
    names.extend(
        used.iter()
            .filter(|n| n.as_str() != DEFAULT && defs.contains_key(n.as_str()))
            .map(|n| n.to_string()),
    );
    names
}

impl Placement<'_> {
    /// The network's subnet: its ipam one, 10.10.0.0/24 for the default,
    /// none for a host bridge, else an automatic 10.10.N.0/24 (those ipam
    /// takes skipped).
    fn subnet(
        &self,
        name: &str,
        auto_subnets: &mut BTreeMap<String, (Ipv4Addr, u8)>,
        r: &mut Reader,
    ) -> Option<(Ipv4Addr, u8)> {
        let def = self.defs.get(name).cloned().unwrap_or_default();
        match (name, def.subnet, &def.bridge) {
            (_, Some(subnet), _) => Some(subnet),
            (DEFAULT, None, _) => Some((Ipv4Addr::new(10, 10, 0, 0), 24)),
            (_, None, Some(_)) => None,
            (_, None, None) => {
                let subnet = auto_subnets.remove(name);
                if subnet.is_none() {
                    r.diags.push(
                        &self.project.model.pos,
                        format!("networks.{name}"),
                        "no free subnet left in 10.10.0.0/16; give the network one under ipam.config",
                    );
                }
                subnet
            }
        }
    }

    /// The host bridge the network names, else its multicast group.
    fn backend(&self, name: &str) -> SegmentBackend {
        let project = self.project;
        match self.defs.get(name).and_then(|def| def.bridge.clone()) {
            Some(bridge) => SegmentBackend::Bridge { bridge },
            None => {
                let (group, port) = if name == DEFAULT {
                    network::multicast_for(&project.name)
                } else {
                    network::multicast_for(&format!("{}/{name}", project.name))
                };
                SegmentBackend::Multicast { group, port }
            }
        }
    }

    /// The network's members in start order, each instance with its own
    /// entry.
    fn members(&self, name: &str, services: &[Service]) -> Vec<Member> {
        let mut members = Vec::new();
        for service in services {
            let list = &self.memberships[&service.name];
            let Some(m) = list.iter().find(|m| m.network == name) else {
                continue;
            };
            let first = list.first().map(|f| f.network.as_str()) == Some(name);
            let service_mac = self
                .requests
                .by_service
                .get(&service.name)
                .and_then(|request| request.mac.clone())
                .filter(|_| first);
            for i in 0..service.replicas {
                members.push((
                    format!("{}-{i}", service.name),
                    i,
                    service.name.clone(),
                    m.clone(),
                    m.mac_address.clone().or(service_mac.clone()),
                ));
            }
        }
        members
    }

    /// The addresses of the network's members: kept, fixed or new.
    fn addresses(
        &self,
        name: &str,
        subnet: Option<(Ipv4Addr, u8)>,
        members: &[Member],
        r: &mut Reader,
    ) -> BTreeMap<String, Ipv4Addr> {
        let ipam_subnet = self.defs.get(name).and_then(|def| def.subnet);
        match subnet {
            None => BTreeMap::new(),
            Some(_) if name == DEFAULT && ipam_subnet.is_none() => {
                self.default_addresses(members, r)
            }
            Some((base, prefix)) => {
                allocate_in(base, prefix, name, members, &self.existing.on(name), r)
            }
        }
    }

    /// The default network's addresses: those of an earlier run and the
    /// fixed ones kept, the others allocated.
    fn default_addresses(&self, members: &[Member], r: &mut Reader) -> BTreeMap<String, Ipv4Addr> {
        let wanted: Vec<String> = members.iter().map(|m| m.0.clone()).collect();
        let pinned: BTreeMap<String, Ipv4Addr> = members
            .iter()
            .filter_map(|m| m.3.ipv4_address.map(|ip| (m.0.clone(), ip)))
            .collect();
        let mut keep = self.existing.default.clone();
        keep.extend(pinned.clone());
        match network::allocate_ips(&wanted, &keep) {
            Ok(ips) => {
                for (instance, ip) in &pinned {
                    if ips.get(instance) != Some(ip) {
                        r.diags.push(
                            &self.project.model.pos,
                            format!("services.{instance}.networks.{DEFAULT}.ipv4_address"),
                            format!("{ip} is not free in {}; pick another", network::SUBNET),
                        );
                    }
                }
                ips
            }
            Err(e) => {
                r.diags.push(&self.project.model.pos, "networks", e);
                BTreeMap::new()
            }
        }
    }

    /// The segment of network `name`: each member's NIC (recorded in
    /// `attachments`) and `/etc/hosts` entry.
    fn segment(
        &mut self,
        name: &str,
        subnet: Option<(Ipv4Addr, u8)>,
        services: &[Service],
        r: &mut Reader,
    ) -> Segment {
        let backend = self.backend(name);
        let members = self.members(name, services);
        let ips = self.addresses(name, subnet, &members, r);
        let mut hosts = Vec::new();
        for (instance, replica, service, m, mac) in &members {
            let ip = ips.get(instance).copied();
            let mac = match mac {
                Some(mac) => mac.clone(),
                None => self.generated_mac(name, instance, ip),
            };
            if let Some(ip) = ip {
                let mut names = vec![instance.clone()];
                if *replica == 0 {
                    names.push(service.clone());
                    names.extend(m.aliases.iter().cloned());
                }
                hosts.push(HostEntry {
                    ip: ip.to_string(),
                    names,
                });
            }
            self.attachments
                .entry(instance.clone())
                .or_default()
                .push(Attachment {
                    network: name.to_string(),
                    ip,
                    prefix: subnet.map_or(0, |(_, p)| p),
                    mac,
                    aliases: m.aliases.clone(),
                });
        }
        Segment {
            name: name.to_string(),
            subnet: subnet.map_or_else(String::new, |(base, p)| format!("{base}/{p}")),
            backend,
            hosts,
        }
    }

    /// The MAC of an instance that sets none on network `name`.
    fn generated_mac(&mut self, name: &str, instance: &str, ip: Option<Ipv4Addr>) -> String {
        let hashed = || network::hashed_mac(&format!("{}/{name}/{instance}", self.project.name));
        match (ip, name == DEFAULT) {
            (Some(ip), true) => network::internal_mac(ip),
            // From the address alone, so that it stays while the address
            // does; the rare clash (10.20.0.5 and 172.20.0.5) is hashed.
            (Some(ip), false) => {
                let o = ip.octets();
                let mac = format!("52:54:02:{:02x}:{:02x}:{:02x}", o[1], o[2], o[3]);
                if self.given_macs.insert(mac.clone()) {
                    mac
                } else {
                    hashed()
                }
            }
            (None, _) => hashed(),
        }
    }

    /// Each instance's NICs in the order its service lists its networks.
    fn attach(mut self, services: &mut [Service]) {
        for service in services.iter_mut() {
            let order: Vec<String> = self.memberships[&service.name]
                .iter()
                .map(|m| m.network.clone())
                .collect();
            for instance in &mut service.instances {
                let mut nics = self.attachments.remove(&instance.name).unwrap_or_default();
                nics.sort_by_key(|a| order.iter().position(|n| *n == a.network));
                if let Some(first) = nics.first() {
                    instance.ip = first.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                    instance.mac_internal = first.mac.clone();
                }
                instance.networks = nics;
            }
        }
    }
}

/// An error for each MAC address two NICs share.
fn check_unique_macs(project: &Project, services: &[Service], r: &mut Reader) {
    let mut macs: BTreeMap<String, String> = BTreeMap::new();
    for service in services {
        for instance in &service.instances {
            for nic in &instance.networks {
                if let Some(other) = macs.insert(nic.mac.clone(), instance.name.clone()) {
                    r.diags.push(
                        &project.model.pos,
                        format!("services.{}.networks", service.name),
                        format!(
                            "{} and {other} both have the MAC address {}; change one mac_address",
                            instance.name, nic.mac
                        ),
                    );
                }
            }
        }
    }
}

/// The subnets of the named networks that give none (no `ipam`, no host
/// bridge): the one an earlier run recorded when it is still free, else
/// 10.10.N.0/24 from N = 1 up, in name order, skipping those `ipam` and
/// earlier runs take (a network that went away may still have members
/// running).
fn auto_subnets(
    names: &[String],
    defs: &BTreeMap<String, NetworkDef>,
    existing: &network::Allocations,
) -> BTreeMap<String, (Ipv4Addr, u8)> {
    let wanting: Vec<&String> = names
        .iter()
        .filter(|n| n.as_str() != DEFAULT)
        .filter(|n| {
            defs.get(n.as_str())
                .is_some_and(|d| d.subnet.is_none() && d.bridge.is_none())
        })
        .collect();
    let mut used: BTreeSet<(Ipv4Addr, u8)> = defs.values().filter_map(|d| d.subnet).collect();
    used.insert((Ipv4Addr::new(10, 10, 0, 0), 24));
    let mut out = BTreeMap::new();
    for name in &wanting {
        if let Some(subnet) = existing.named.get(name.as_str()).and_then(|n| n.subnet)
            && used.insert(subnet)
        {
            out.insert(name.to_string(), subnet);
        }
    }
    used.extend(existing.named.values().filter_map(|n| n.subnet));
    let mut free = (1..=u8::MAX)
        .map(|n| (Ipv4Addr::new(10, 10, n, 0), 24))
        .filter(|candidate| !used.contains(candidate));
    for name in wanting {
        if !out.contains_key(name.as_str())
            && let Some(subnet) = free.next()
        {
            out.insert(name.clone(), subnet);
        }
    }
    out
}

/// Addresses in a named network: `ipv4_address` first, then the addresses
/// members held in an earlier run (`existing`), then the lowest free ones
/// in start order; a new member never takes an address an earlier run gave
/// an instance that is no longer a member (it may still run).
fn allocate_in(
    base: Ipv4Addr,
    prefix: u8,
    name: &str,
    members: &[Member],
    existing: &BTreeMap<String, Ipv4Addr>,
    r: &mut Reader,
) -> BTreeMap<String, Ipv4Addr> {
    let range = host_range(base, prefix);
    let mut out = BTreeMap::new();
    let mut used = BTreeSet::new();
    for (instance, _, _, m, _) in members {
        if let Some(ip) = m.ipv4_address {
            if !range.contains(&u32::from(ip)) || !used.insert(u32::from(ip)) {
                r.diags.push(
                    &m.pos,
                    child(&m.path, "ipv4_address"),
                    format!("{ip} is not a free address of network {name} ({base}/{prefix}); pick another"),
                );
                continue;
            }
            out.insert(instance.clone(), ip);
        }
    }
    for (instance, _, _, m, _) in members {
        if m.ipv4_address.is_some() {
            continue;
        }
        if let Some(ip) = existing.get(instance)
            && range.contains(&u32::from(*ip))
            && used.insert(u32::from(*ip))
        {
            out.insert(instance.clone(), *ip);
        }
    }
    let held: BTreeSet<u32> = existing.values().map(|ip| u32::from(*ip)).collect();
    let mut free = range.filter(|a| !used.contains(a) && !held.contains(a));
    for (instance, _, _, m, _) in members {
        if out.contains_key(instance) || m.ipv4_address.is_some() {
            continue;
        }
        match free.next() {
            Some(a) => {
                out.insert(instance.clone(), Ipv4Addr::from(a));
            }
            None => r.diags.push(
                &m.pos,
                &m.path,
                format!("network {name} ({base}/{prefix}) has no free address left for {instance}; give it a larger subnet"),
            ),
        }
    }
    out
}
