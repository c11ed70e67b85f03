//! From the merged YAML tree to the typed `Manifest`: strict keys, every
//! service field, then the project-wide parts (dependency order, IPs, MACs,
//! port overlaps, `/etc/hosts`).

pub mod build;
pub mod guest;
pub mod guest_files;
pub mod networks;
pub mod ports;
pub mod reader;
pub mod resources;
pub mod service;
pub mod storage;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use crate::diag::{Diag, Diags, Pos, did_you_mean};
use crate::keys;
use crate::load::Project;
use crate::manifest::{
    Forward, HostEntry, Instance, Manifest, Metadata, NetworkPlan, Protocol, Service, Volume,
};
use crate::network;
use crate::yaml::Node;
use reader::{Reader, child, parse_bytes};
use service::{Context, decode_service};

const SERVICES_REQUIRED: &str = "is required: a mapping of service names to services, such as services: {web: {image: debian:bookworm}}";

/// Resolves a loaded project. `existing_ips` are the allocations the
/// runtime already holds (empty for `holos config`).
pub fn resolve(
    project: &Project,
    existing_ips: &network::Allocations,
) -> Result<Manifest, Vec<Diag>> {
    let mut r = Reader {
        diags: Diags::default(),
    };
    let root = &project.model;
    let top = decode_top_level(&mut r, project);
    let volume_names: Vec<String> = top.volumes.iter().map(|v| v.name.clone()).collect();
    let network_defs = networks::decode_top(&mut r, root);
    let network_requests = networks::decode_requests(&mut r, root);
    let cx = Context {
        definitions: &top.definitions,
        root,
        volume_names: &volume_names,
        environment: &project.environment,
        default_protect: top.default_protect,
    };
    let (mut services, service_pos) = decode_services(&mut r, root, &cx);
    let inactive = check_inactive_services(&mut r, project, &cx);
    if service_pos.is_empty() {
        check_some_service(&mut r, root, project);
    }
    check_depends_on(&mut r, &mut services, &service_pos, &inactive);
    if !r.diags.is_empty() {
        return Err(r.diags.list);
    }
    let mut ordered = dependency_order(project, services, &service_pos)?;
    let ips = allocate_ips(project, &ordered, &existing_ips.flat)?;
    let mut hosts = place_instances(project, &mut ordered, &ips)?;
    let mut segments = Vec::new();
    if network_requests.any() {
        segments = place_networks(
            &mut r,
            project,
            &mut ordered,
            (&network_requests, &network_defs),
            existing_ips,
        )?;
        hosts.clear();
    }
    let (multicast_group, multicast_port) = network::multicast_for(&project.name);
    Ok(Manifest {
        project: project.name.clone(),
        directory: project.directory.display().to_string(),
        network: NetworkPlan {
            subnet: network::SUBNET.into(),
            multicast_group,
            multicast_port,
        },
        hosts,
        networks: segments,
        services: ordered,
        volumes: top.volumes,
        metadata: top.metadata,
    })
}

/// What the top level of the file declares besides services and networks.
struct TopLevel {
    volumes: Vec<Volume>,
    metadata: BTreeMap<String, serde_json::Value>,
    default_protect: bool,
    definitions: guest_files::Definitions,
}

/// Checks the top-level keys and decodes volumes, metadata, `x-holo` and
/// the configs and secrets services may use.
fn decode_top_level(r: &mut Reader, project: &Project) -> TopLevel {
    let root = &project.model;
    r.mapping(root, "", keys::TOP_LEVEL);
    if let Some(v) = root.get("version") {
        r.string(v, "version");
    }
    let volumes = top_level_volumes(r, root);
    let metadata = top_level_metadata(r, root);
    let default_protect = root
        .get("x-holo")
        .filter(|n| !n.is_null())
        .and_then(|n| service::decode_x_holo(r, n, "x-holo", keys::X_HOLO_TOP))
        .unwrap_or(false);
    let allow_host_files = guest_files::allows_host_files(r, root, "");
    let definitions = guest_files::decode_definitions(
        r,
        root,
        &project.environment,
        (&project.directory, allow_host_files),
    );
    TopLevel {
        volumes,
        metadata,
        default_protect,
        definitions,
    }
}

/// The named networks' segments, each service's NICs placed on them.
fn place_networks(
    r: &mut Reader,
    project: &Project,
    ordered: &mut [Service],
    (requests, definitions): (&networks::Requests, &BTreeMap<String, networks::NetworkDef>),
    existing_ips: &network::Allocations,
) -> Result<Vec<crate::manifest::Segment>, Vec<Diag>> {
    let segments = networks::place(project, ordered, requests, definitions, existing_ips, r);
    if !r.diags.is_empty() {
        return Err(std::mem::take(&mut r.diags.list));
    }
    Ok(segments)
}

/// The top-level `volumes:`: every key is a volume name; only x-* is special.
fn top_level_volumes(r: &mut Reader, root: &Node) -> Vec<Volume> {
    let mut volumes = Vec::new();
    let Some(node) = root.get("volumes").filter(|n| !n.is_null()) else {
        return volumes;
    };
    match node.as_map() {
        Some(entries) => {
            for (k, v) in entries {
                let name = k.as_str().unwrap_or_default().to_string();
                if !name.starts_with("x-") {
                    volumes.push(decode_volume(r, name, v));
                }
            }
        }
        None => r.error(
            node,
            "volumes",
            format!(
                "must be a mapping of volume names, found {}",
                node.type_name()
            ),
        ),
    }
    volumes
}

/// The top-level keys holos keeps as they are (`networks`, `configs`,
/// `secrets`, `models`, `version`).
fn top_level_metadata(r: &mut Reader, root: &Node) -> Metadata {
    let mut metadata = BTreeMap::new();
    for key in ["networks", "configs", "secrets", "models"] {
        if let Some(n) = root.get(key).filter(|n| !n.is_null()) {
            if n.as_map().is_none() {
                r.error(
                    n,
                    key,
                    format!("must be a mapping, found {}", n.type_name()),
                );
            }
            let mut json = n.to_json();
            if key == "secrets" {
                redact_secret_definitions(&mut json);
            }
            metadata.insert(key.to_string(), json);
        }
    }
    if let Some(v) = root.get("version") {
        metadata.insert("version".into(), v.to_json());
    }
    metadata
}

/// A secret given inline (`content:`) shows as redacted.
pub fn redact_secret_definitions(secrets: &mut serde_json::Value) {
    if let Some(defs) = secrets.as_object_mut() {
        for def in defs.values_mut() {
            if let Some(content) = def.get_mut("content") {
                *content = serde_json::Value::String(crate::manifest::REDACTED.into());
            }
        }
    }
}

/// The active services, and the position of each service's key.
fn decode_services(
    r: &mut Reader,
    root: &Node,
    cx: &Context,
) -> (Vec<Service>, BTreeMap<String, Node>) {
    let mut services: Vec<Service> = Vec::new();
    let mut service_pos: BTreeMap<String, Node> = BTreeMap::new();
    // Required, as Compose has it.
    match root.get("services") {
        None => r.error(root, "services", SERVICES_REQUIRED),
        Some(node) if node.is_null() => r.error(node, "services", SERVICES_REQUIRED),
        Some(node) => match node.as_map() {
            None => r.error(
                node,
                "services",
                "must be a mapping of service names to definitions",
            ),
            Some(entries) => {
                for (k, v) in entries {
                    let name = k.as_str().unwrap_or_default().to_string();
                    if name.starts_with("x-") {
                        continue;
                    }
                    if !valid_service_name(&name) {
                        r.error(k, &child("services", &name), "service names may use only a-z, 0-9, _ and -, and must start with a letter or digit");
                    }
                    service_pos.insert(name.clone(), k.clone());
                    if let Some(s) = decode_service(r, &name, v, cx) {
                        services.push(s);
                    }
                }
            }
        },
    }
    (services, service_pos)
}

/// A project must start something: `services: {}`, or services that are
/// all disabled by profiles, are refused here, where `validate` sees it.
fn check_some_service(r: &mut Reader, root: &Node, project: &Project) {
    let Some(node) = root.get("services").filter(|n| n.as_map().is_some()) else {
        return;
    };
    if project.inactive.is_empty() {
        r.error(
            node,
            "services",
            "defines no service; add one, such as services: {web: {image: debian:12}}",
        );
        return;
    }
    let disabled: Vec<String> = project
        .inactive
        .iter()
        .map(|(name, service)| {
            let profiles = crate::load::profiles::profiles_of(service).join(", ");
            format!("{} ({profiles})", name.as_str().unwrap_or_default())
        })
        .collect();
    r.error(
        node,
        "services",
        format!(
            "every service is disabled by its profiles: {}; enable a profile with --profile NAME or COMPOSE_PROFILES=NAME, or remove profiles: from a service that should always start",
            disabled.join(", ")
        ),
    );
}

/// Inactive services are still checked, as Compose does; their names.
fn check_inactive_services(r: &mut Reader, project: &Project, cx: &Context) -> Vec<String> {
    project
        .inactive
        .iter()
        .filter_map(|(k, v)| {
            let name = k.as_str()?.to_string();
            decode_service(r, &name, v, cx);
            Some(name)
        })
        .collect()
}

/// Every required `depends_on` target is an active service; optional ones
/// that are not are dropped.
fn check_depends_on(
    r: &mut Reader,
    services: &mut [Service],
    service_pos: &BTreeMap<String, Node>,
    inactive: &[String],
) {
    let known: Vec<String> = service_pos.keys().cloned().collect();
    for s in services {
        let pos = service_pos.get(&s.name).map(|n| n.pos.clone());
        let mut kept = Vec::new();
        for dep in std::mem::take(&mut s.depends_on) {
            if known.contains(&dep.service) {
                kept.push(dep);
                continue;
            }
            if !dep.required {
                continue;
            }
            let message = if inactive.contains(&dep.service) {
                format!(
                    "depends on {:?}, which its profiles disable; enable the profile or set required: false",
                    dep.service
                )
            } else {
                let hint = did_you_mean(&dep.service, known.iter().map(String::as_str))
                    .map(|h| format!("did you mean {h:?}? "))
                    .unwrap_or_default();
                format!(
                    "depends on undefined service {:?}; {hint}define it or remove the dependency",
                    dep.service
                )
            };
            if let Some(pos) = &pos {
                r.diags
                    .push(pos, format!("services.{}.depends_on", s.name), message);
            }
        }
        s.depends_on = kept;
    }
}

/// The services in dependency order; a cycle is an error at its first
/// service.
fn dependency_order(
    project: &Project,
    services: Vec<Service>,
    service_pos: &BTreeMap<String, Node>,
) -> Result<Vec<Service>, Vec<Diag>> {
    let deps: BTreeMap<String, Vec<String>> = services
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.depends_on.iter().map(|d| d.service.clone()).collect(),
            )
        })
        .collect();
    let order = network::topological_order(&deps).map_err(|cycle| {
        let first = cycle.first().cloned().unwrap_or_default();
        let pos = service_pos
            .get(&first)
            .map(|n| n.pos.clone())
            .unwrap_or_else(|| project.model.pos.clone());
        vec![Diag::at(
            &pos,
            format!("services.{first}.depends_on"),
            format!(
                "depends_on cycle: {}; remove one of these dependencies",
                cycle.join(" -> ")
            ),
        )]
    })?;
    let mut by_name: BTreeMap<String, Service> =
        services.into_iter().map(|s| (s.name.clone(), s)).collect();
    Ok(order.iter().filter_map(|n| by_name.remove(n)).collect())
}

/// One address per instance (`SERVICE-N`), keeping `existing_ips`.
fn allocate_ips(
    project: &Project,
    ordered: &[Service],
    existing_ips: &BTreeMap<String, Ipv4Addr>,
) -> Result<BTreeMap<String, Ipv4Addr>, Vec<Diag>> {
    let instance_names: Vec<String> = ordered
        .iter()
        .flat_map(|s| (0..s.replicas).map(move |i| format!("{}-{i}", s.name)))
        .collect();
    network::allocate_ips(&instance_names, existing_ips)
        .map_err(|e| vec![Diag::at(&project.model.pos, "services", e)])
}

/// The host ports already published, with who publishes each.
type Published = Vec<(Protocol, Ipv4Addr, u16, String)>;

/// Fills in every service's instances (address, MACs, forwarded ports) and
/// returns the `/etc/hosts` entries; port clashes are errors.
fn place_instances(
    project: &Project,
    ordered: &mut [Service],
    ips: &BTreeMap<String, Ipv4Addr>,
) -> Result<Vec<HostEntry>, Vec<Diag>> {
    let mut diags = Diags::default();
    let mut published: Published = Vec::new();
    let mut hosts = Vec::new();
    for s in ordered {
        for index in 0..s.replicas {
            let name = format!("{}-{index}", s.name);
            let Some(ip) = ips.get(&name).copied() else {
                continue;
            };
            let forwards = place_ports(project, s, index, &mut published, &mut diags);
            let mut names = vec![name.clone()];
            if index == 0 {
                names.push(s.name.clone());
            }
            hosts.push(HostEntry {
                ip: ip.to_string(),
                names,
            });
            s.instances.push(Instance {
                hostname: s
                    .cloud_init
                    .hostname
                    .clone()
                    .unwrap_or_else(|| name.clone()),
                name,
                index,
                ip,
                mac_internal: network::internal_mac(ip),
                mac_user: network::user_mac(ip),
                ports: forwards,
                networks: Vec::new(),
            });
        }
    }
    if !diags.is_empty() {
        return Err(diags.list);
    }
    Ok(hosts)
}

/// The forwards of replica `index` of `s`: replica N publishes on the
/// declared host port + N, and no two instances publish the same address.
fn place_ports(
    project: &Project,
    s: &Service,
    index: u32,
    published: &mut Published,
    diags: &mut Diags,
) -> Vec<Forward> {
    let ports_path = format!("services.{}.ports", s.name);
    let ports_pos = ports_position(project, &s.name);
    let mut forwards = Vec::new();
    for port in &s.ports {
        let host_port = port.host_port.and_then(|h| {
            u16::try_from(u32::from(h) + index).map_err(|_| {
                diags.push(
                    &ports_pos,
                    &ports_path,
                    format!(
                        "host port {h} + replica {index} exceeds 65535; lower the port or the replicas"
                    ),
                );
            }).ok()
        });
        if let Some(h) = host_port {
            let who = format!(
                "service {} replica {index} (guest port {})",
                s.name, port.guest_port
            );
            let clash = published.iter().find(|(protocol, ip0, h0, _)| {
                *protocol == port.protocol
                    && *h0 == h
                    && (*ip0 == port.host_ip
                        || ip0.is_unspecified()
                        || port.host_ip.is_unspecified())
            });
            match clash {
                Some((_, _, _, other)) => diags.push(
                    &ports_pos,
                    &ports_path,
                    format!(
                        "{who} and {other} both publish {}:{h}; change one host port",
                        port.host_ip
                    ),
                ),
                None => published.push((port.protocol, port.host_ip, h, who)),
            }
        }
        forwards.push(Forward {
            protocol: port.protocol,
            host_ip: port.host_ip,
            host_port,
            guest_ip: port.guest_ip,
            guest_port: port.guest_port,
        });
    }
    forwards
}

/// Where a service's `ports:` starts (the project's start if it has none).
fn ports_position(project: &Project, service: &str) -> Pos {
    project
        .model
        .get("services")
        .and_then(|all| all.get(service))
        .and_then(|svc| svc.get("ports"))
        .map(|n| n.pos.clone())
        .unwrap_or_else(|| project.model.pos.clone())
}

fn valid_service_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn decode_volume(r: &mut Reader, name: String, node: &Node) -> Volume {
    let path = child("volumes", &name);
    let mut out = Volume {
        name,
        size_bytes: None,
        metadata: BTreeMap::new(),
    };
    if node.is_null() {
        return out;
    }
    let Some(entries) = r.mapping(node, &path, keys::TOP_VOLUME) else {
        return out;
    };
    for (k, v) in entries {
        let key = k.as_str().unwrap_or_default();
        if key == "size" {
            if let Some(text) = r.string(v, &child(&path, "size")) {
                match parse_bytes(&text) {
                    Some(bytes) => out.size_bytes = Some(bytes),
                    None => r.error(
                        v,
                        &child(&path, "size"),
                        format!("{text:?} is not a size; write e.g. 20G"),
                    ),
                }
            }
        } else if !key.starts_with("x-") {
            out.metadata.insert(key.to_string(), v.to_json());
        }
    }
    out
}

/// What `up` would refuse about files on this host, so that `validate`
/// refuses it first: a local image file that does not exist.
pub fn missing_files(project: &Project, manifest: &Manifest) -> Vec<Diag> {
    let mut diags = Vec::new();
    for service in &manifest.services {
        let Some(path) = &service.image.path else {
            continue;
        };
        let full = Path::new(&manifest.directory).join(path);
        if full.is_file() {
            continue;
        }
        let node = project
            .model
            .get("services")
            .and_then(|s| s.get(&service.name));
        // The image comes from image:, else from the Dockerfile's FROM.
        let (pos, key) = ["image", "build", "dockerfile"]
            .into_iter()
            .find_map(|key| Some((node?.get(key)?.pos.clone(), key)))
            .unwrap_or_else(|| (project.model.pos.clone(), "image"));
        diags.push(Diag::at(
            &pos,
            format!("services.{}.{key}", service.name),
            format!(
                "the image file {} does not exist; build or copy the image there, or correct image:",
                full.display()
            ),
        ));
    }
    diags
}
