//! Notes on "quiet semantics": Compose fields that holos accepts but that
//! act differently in a VM (`networks`, `command`, `entrypoint`, ports bound
//! to 127.0.0.1 by default). `holos validate` prints
//! them, and so will `holos up`, one `>>` line per field in use, naming the
//! first place it occurs, so that a Compose user is never surprised.

use std::fmt;

use super::Project;
use crate::yaml::{Kind, Node, Pos};

/// One note: the field, where it first occurs, and what it means in a VM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub field: &'static str,
    pub pos: Pos,
    pub message: &'static str,
}

impl fmt::Display for Note {
    /// `>> FILE:LINE: FIELD: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            ">> {}:{}: {}: {}",
            self.pos.file.display(),
            self.pos.line,
            self.field,
            self.message
        )
    }
}

/// The fields with a note, in the order the notes are printed.
const NOTES: [(&str, &str); 4] = [
    (
        "networks",
        "each network is a segment of its own between the VMs (a multicast group on the host's loopback, or a host bridge named in driver_opts); internet access and published ports go through a separate user-mode NIC",
    ),
    (
        "command",
        "runs at every boot, after the volume mounts, as a systemd unit (OpenRC: /etc/local.d); it is not the VM's main process and is not restarted when it exits",
    ),
    (
        "entrypoint",
        "runs at every boot together with command, after the volume mounts; it is not the VM's main process",
    ),
    (
        "ports",
        "a port without a host IP binds to 127.0.0.1, not to every address as in Docker Compose; write 0.0.0.0:HOST:GUEST to publish it on all addresses",
    ),
];

/// The notes for the active services and top-level keys of `project`.
pub fn quiet_semantics(project: &Project) -> Vec<Note> {
    let mut first: Vec<Option<Pos>> = vec![None; NOTES.len()];
    let mut seen = |field: &str, pos: &Pos| {
        let Some(i) = NOTES.iter().position(|(name, _)| *name == field) else {
            return;
        };
        let earlier = first[i]
            .as_ref()
            .is_some_and(|known| rank(project, known) <= rank(project, pos));
        if !earlier {
            first[i] = Some(pos.clone());
        }
    };
    for (key, value) in project.model.as_map().unwrap_or_default() {
        if key.as_str() == Some("networks") && in_use(value) {
            seen("networks", &key.pos);
        }
    }
    let services = project.model.get("services").and_then(Node::as_map);
    for (_, service) in services.unwrap_or_default() {
        for (key, value) in service.as_map().unwrap_or_default() {
            let Some(field) = key.as_str() else { continue };
            match field {
                "networks" | "command" | "entrypoint" if in_use(value) => seen(field, &key.pos),
                "ports" => {
                    for port in value.as_seq().unwrap_or_default() {
                        if !names_host_ip(port) {
                            seen("ports", &port.pos);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    NOTES
        .iter()
        .zip(first)
        .filter_map(|((field, message), pos)| {
            pos.map(|pos| Note {
                field,
                pos,
                message,
            })
        })
        .collect()
}

/// Earlier files first (in `-f` order, included files after), then by line.
fn rank(project: &Project, pos: &Pos) -> (usize, std::path::PathBuf, usize, usize) {
    let index = project
        .files
        .iter()
        .position(|f| f == pos.file.as_ref())
        .unwrap_or(project.files.len());
    (index, pos.file.as_ref().clone(), pos.line, pos.col)
}

/// A field that is set to something (not null, not an empty list or map).
fn in_use(node: &Node) -> bool {
    match &node.kind {
        Kind::Null => false,
        Kind::Seq(items) => !items.is_empty(),
        Kind::Map(entries) => !entries.is_empty(),
        _ => true,
    }
}

/// A port entry that says which host address to bind: `IP:HOST:GUEST`,
/// `IP:HOST:GUEST_IP:GUEST`, or the long form with `host_ip`.
fn names_host_ip(port: &Node) -> bool {
    match &port.kind {
        Kind::Scalar { text, .. } => {
            let spec = text.split('/').next().unwrap_or_default();
            spec.split(':').count() >= 3
        }
        Kind::Map(_) => port.get("host_ip").is_some_and(in_use),
        _ => true,
    }
}

/// A service that profiles switched off: it is checked, never started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisabledService {
    pub name: String,
    pub pos: Pos,
    pub profiles: Vec<String>,
}

impl fmt::Display for DisabledService {
    /// `>> FILE:LINE: services.NAME: ...`, like the field notes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self
            .profiles
            .first()
            .map(String::as_str)
            .unwrap_or_default();
        write!(
            f,
            ">> {}:{}: services.{}: not started: none of its profiles ({}) is enabled; enable one with --profile {first} or COMPOSE_PROFILES={first}",
            self.pos.file.display(),
            self.pos.line,
            self.name,
            self.profiles.join(", "),
        )
    }
}

/// One note per service that profiles disabled, in file order.
pub fn disabled_by_profiles(project: &Project) -> Vec<DisabledService> {
    let mut out: Vec<DisabledService> = project
        .inactive
        .iter()
        .map(|(name, service)| DisabledService {
            name: name.as_str().unwrap_or_default().to_string(),
            pos: name.pos.clone(),
            profiles: super::profiles::profiles_of(service)
                .into_iter()
                .map(str::to_string)
                .collect(),
        })
        .collect();
    out.sort_by_key(|d| rank(project, &d.pos));
    out
}
