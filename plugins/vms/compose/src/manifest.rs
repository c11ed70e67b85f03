//! The typed, resolved manifest: what a compose project means for the VMs.
//!
//! `holos config --resolved` prints it; the runtime starts VMs
//! from it. Everything here is derived deterministically from the compose
//! files, the environment and the already-allocated IPs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

/// Compose fields that holos accepts but does not act on, by key.
pub type Metadata = BTreeMap<String, serde_json::Value>;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub project: String,
    pub directory: String,
    pub network: NetworkPlan,
    /// `/etc/hosts` lines every guest gets (without named networks; with
    /// them, each segment has its own).
    pub hosts: Vec<HostEntry>,
    /// The Compose networks, each a segment of its own; empty when no
    /// service names a network, and every instance is on the one flat
    /// network of `network`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Segment>,
    /// Services in start order (dependencies first, ties by name).
    pub services: Vec<Service>,
    pub volumes: Vec<Volume>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NetworkPlan {
    pub subnet: String,
    pub multicast_group: Ipv4Addr,
    pub multicast_port: u16,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostEntry {
    pub ip: String,
    pub names: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Service {
    pub name: String,
    pub image: Image,
    pub replicas: u32,
    pub vm: Vm,
    pub ports: Vec<Port>,
    pub mounts: Vec<Mount>,
    pub devices: Vec<PciDevice>,
    pub depends_on: Vec<Dependency>,
    pub labels: BTreeMap<String, String>,
    /// Written to `/etc/environment`.
    pub environment: BTreeMap<String, String>,
    pub extra_hosts: Vec<HostEntry>,
    pub cloud_init: CloudInit,
    /// `dns_search`: the guest's DNS search domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_search: Vec<String>,
    /// `configs` and `secrets`, in that order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GuestFile>,
    pub healthcheck: Option<Healthcheck>,
    pub stop_grace_period_ms: u64,
    /// Run over SSH before the VM is powered down.
    pub pre_stop: Vec<Hook>,
    pub profiles: Vec<String>,
    pub instances: Vec<Instance>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
    /// `x-holo: {protect: true}` (the service's, else the top-level
    /// default): holo-vms leaves a VM changed or stopped by hand alone. Not
    /// what the VM is built from, so neither serialized nor hashed.
    #[serde(skip)]
    pub protect: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Image {
    /// As written (or taken from the Dockerfile's FROM).
    pub reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub format: String,
    pub os: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Vm {
    pub vcpu: u32,
    pub memory_mb: u64,
    pub machine: String,
    /// Unset means: `host` under KVM, `max` under TCG (the runtime decides).
    pub cpu_model: Option<String>,
    pub uefi: bool,
    pub extra_args: Vec<String>,
    /// `disk_size`: the root overlay's virtual size; unset keeps the image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_size_bytes: Option<u64>,
}

/// The transport of a published port.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
}

impl Protocol {
    /// TCP is the default, left out of the manifest and the state.
    pub fn is_tcp(&self) -> bool {
        *self == Protocol::Tcp
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// One published port as declared; host ports shift per replica.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Port {
    #[serde(default, skip_serializing_if = "Protocol::is_tcp")]
    pub protocol: Protocol,
    pub host_ip: Ipv4Addr,
    /// `None`: the runtime picks a free host port.
    pub host_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_ip: Option<Ipv4Addr>,
    pub guest_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MountKind {
    Bind,
    Volume,
    /// A bare path (`- /app/node_modules`): it lives on the instance's root
    /// overlay, survives stop/start and goes with `down`. `source` is empty.
    Anonymous,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Mount {
    pub kind: MountKind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    pub target: String,
    pub read_only: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PciDevice {
    pub pci: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rom_file: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Dependency {
    pub service: String,
    pub condition: String,
    pub restart: bool,
    pub required: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CloudInit {
    pub user: String,
    /// Public keys the user gets beside the project's own key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_authorized_keys: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    pub packages: Vec<String>,
    pub write_files: Vec<WriteFile>,
    pub bootcmd: Vec<GuestCommand>,
    /// First boot only: Dockerfile provisioning, then the explicit runcmd.
    pub runcmd: Vec<GuestCommand>,
    /// `entrypoint` then `command` (in `working_dir`), as shell text: the
    /// service's process, started at every boot after the mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `post_start` hooks: first boot, after the command was started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_start: Vec<GuestCommand>,
}

/// A cloud-init command: a shell string or an argv list.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum GuestCommand {
    Shell(String),
    Exec(Vec<String>),
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct WriteFile {
    pub path: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub append: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub defer: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Healthcheck {
    /// Exec form; a string test becomes `["sh", "-c", test]`.
    pub test: Vec<String>,
    pub interval_ms: u64,
    pub timeout_ms: u64,
    pub retries: u32,
    pub start_period_ms: u64,
    pub start_interval_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Hook {
    pub command: GuestCommand,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub environment: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Instance {
    /// `SERVICE-INDEX`.
    pub name: String,
    pub index: u32,
    pub hostname: String,
    pub ip: Ipv4Addr,
    pub mac_internal: String,
    pub mac_user: String,
    pub ports: Vec<Forward>,
    /// One NIC per network the instance is on (with named networks only;
    /// `ip` and `mac_internal` are then its first NIC's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Attachment>,
}

/// One Compose network: its own subnet and multicast group (or a host
/// bridge), and the `/etc/hosts` lines of its members.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    /// `A.B.C.D/PREFIX`; empty for a host bridge that gives addresses by DHCP.
    pub subnet: String,
    pub backend: SegmentBackend,
    pub hosts: Vec<HostEntry>,
}

/// How a segment's NICs are connected.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SegmentBackend {
    /// QEMU's socket netdev on a multicast group of the host's loopback.
    Multicast { group: Ipv4Addr, port: u16 },
    /// An existing host bridge, through qemu-bridge-helper.
    Bridge { bridge: String },
}

/// One instance's NIC on one segment.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Attachment {
    pub network: String,
    /// Unset: DHCP (a host bridge without `ipam`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<Ipv4Addr>,
    pub prefix: u8,
    pub mac: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

impl Manifest {
    /// The `/etc/hosts` entries of `instance`: the project's, or with named
    /// networks those of every segment the instance is on.
    pub fn hosts_for(&self, instance: &Instance) -> Vec<HostEntry> {
        if instance.networks.is_empty() {
            return self.hosts.clone();
        }
        let mut out: Vec<HostEntry> = Vec::new();
        for attachment in &instance.networks {
            if let Some(segment) = self.networks.iter().find(|s| s.name == attachment.network) {
                for entry in &segment.hosts {
                    if !out.contains(entry) {
                        out.push(entry.clone());
                    }
                }
            }
        }
        out
    }
}

/// One host→guest forward of one instance.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Forward {
    #[serde(default, skip_serializing_if = "Protocol::is_tcp")]
    pub protocol: Protocol,
    pub host_ip: Ipv4Addr,
    pub host_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_ip: Option<Ipv4Addr>,
    pub guest_port: u16,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Volume {
    pub name: String,
    pub size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
}

/// Whether a guest file comes from `configs` or `secrets`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum GuestFileKind {
    Config,
    Secret,
}

/// A config or secret of a service, written into the guest at every boot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GuestFile {
    pub kind: GuestFileKind,
    /// The name of its top-level definition.
    pub source: String,
    /// The absolute path in the guest.
    pub target: String,
    pub uid: u32,
    pub gid: u32,
    /// Octal, as chmod takes it (`0400`).
    pub mode: String,
    pub content: FileContent,
}

/// What a guest file holds. A secret's content is written as
/// [`REDACTED`] wherever the manifest is serialized (`holos config
/// --resolved`, diffs, hashes), so that it never reaches output or logs;
/// [`Service::secret_contents`] feeds it into the hashes instead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileContent {
    pub bytes: Vec<u8>,
    pub secret: bool,
}

/// What a secret's content reads as in any output.
pub const REDACTED: &str = "<redacted>";

/// Replaces each secret given inline (`secrets.NAME.content`) in a compose
/// model by [`REDACTED`], so that no output shows it; returns their names.
pub fn redact_inline_secrets(model: &mut crate::yaml::Node) -> Vec<String> {
    let Some(defs) = model
        .get_mut("secrets")
        .and_then(crate::yaml::Node::as_map_mut)
    else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for (name, def) in defs.iter_mut() {
        if let Some(content) = def.get_mut("content") {
            *content = crate::yaml::Node::string(REDACTED, content.pos.clone());
            names.push(name.as_str().unwrap_or_default().to_string());
        }
    }
    names
}
const BASE64_PREFIX: &str = "base64:";

impl Serialize for FileContent {
    /// The text, `base64:…` when it is not UTF-8, or [`REDACTED`].
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        if self.secret {
            return serializer.serialize_str(REDACTED);
        }
        match std::str::from_utf8(&self.bytes) {
            Ok(text) if !text.starts_with(BASE64_PREFIX) => serializer.serialize_str(text),
            _ => serializer.serialize_str(&format!(
                "{BASE64_PREFIX}{}",
                base64::engine::general_purpose::STANDARD.encode(&self.bytes)
            )),
        }
    }
}

impl<'de> Deserialize<'de> for FileContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use base64::Engine;
        let text = String::deserialize(deserializer)?;
        if text == REDACTED {
            return Ok(FileContent {
                bytes: Vec::new(),
                secret: true,
            });
        }
        let bytes = match text.strip_prefix(BASE64_PREFIX) {
            Some(encoded) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(serde::de::Error::custom)?,
            None => text.into_bytes(),
        };
        Ok(FileContent {
            bytes,
            secret: false,
        })
    }
}

impl Service {
    /// The contents of the service's secrets, which its serialized form
    /// redacts: what the hashes of what a VM is built from add.
    pub fn secret_contents(&self) -> Vec<&[u8]> {
        self.files
            .iter()
            .filter(|f| f.content.secret)
            .map(|f| f.content.bytes.as_slice())
            .collect()
    }
}
