//! What a script needs about an instance: `holos ps --json` prints it for
//! every instance of the project, `holos inspect INSTANCE [--json]` for one.
//!
//! Both come from the project record and the live process table, never from
//! the compose file, so they describe what runs, not what is declared.

use std::path::PathBuf;

use serde::Serialize;

use crate::health;
use crate::host;
use crate::spec::HostForward;
use crate::state::{InstanceRecord, Layout};

/// One instance as `ps --json` and `inspect --json` print it.
#[derive(Debug, Serialize)]
pub struct InstanceView {
    pub project: String,
    pub service: String,
    pub instance: String,
    /// `running` or `stopped`.
    pub state: &'static str,
    /// `starting`, `healthy`, `unhealthy`, `bypassed`; `null` without a
    /// check or while stopped.
    pub health: Option<&'static str>,
    /// The QEMU process, while it runs.
    pub pid: Option<u32>,
    pub accel: &'static str,
    pub ports: Vec<PortView>,
    /// The host port on 127.0.0.1 forwarded to the guest's sshd.
    pub ssh_port: u16,
    /// The address on the project's internal network.
    pub ip: String,
    pub macs: MacsView,
    /// The hash `up` compares to decide whether to recreate the instance.
    pub spec_hash: String,
    pub vcpu: u32,
    pub memory_mb: u64,
    pub user: String,
    pub image: PathBuf,
    pub image_format: String,
    pub volumes: Vec<VolumeView>,
    pub paths: PathsView,
}

#[derive(Debug, Serialize)]
pub struct PortView {
    /// `tcp` or `udp`.
    pub protocol: &'static str,
    pub host_ip: String,
    pub host_port: u16,
    pub guest_port: u16,
}

#[derive(Debug, Serialize)]
pub struct MacsView {
    /// The NIC on QEMU's user network (internet access, forwarded ports).
    pub user: String,
    /// The NIC on the project's internal network.
    pub internal: String,
}

#[derive(Debug, Serialize)]
pub struct VolumeView {
    pub name: String,
    pub path: PathBuf,
    pub target: String,
    pub read_only: bool,
}

#[derive(Debug, Serialize)]
pub struct PathsView {
    pub dir: PathBuf,
    pub root_disk: PathBuf,
    pub seed: PathBuf,
    pub console_log: PathBuf,
    pub qemu_log: PathBuf,
    pub qmp_socket: PathBuf,
    pub serial_socket: PathBuf,
    /// This instance's UEFI vars; `null` without UEFI.
    pub firmware_vars: Option<PathBuf>,
    pub ssh_key: PathBuf,
}

fn port(f: &HostForward) -> PortView {
    PortView {
        protocol: f.protocol.name(),
        host_ip: f.host_ip.to_string(),
        host_port: f.host_port,
        guest_port: f.guest_port,
    }
}

/// The view of `record`'s instance, with its live state.
pub fn view(layout: &Layout, instance: &InstanceRecord) -> InstanceView {
    let spec = &instance.spec;
    let pid = host::running_pid(instance.pid, spec);
    InstanceView {
        project: spec.project.clone(),
        service: spec.service.clone(),
        instance: spec.name.clone(),
        state: if pid.is_some() { "running" } else { "stopped" },
        health: pid.and_then(|_| health::read_state(spec)).map(|h| h.name()),
        pid,
        accel: spec.accel.name(),
        ports: spec.forwards.iter().map(port).collect(),
        ssh_port: spec.ssh_port,
        ip: spec.ip.to_string(),
        macs: MacsView {
            user: spec.mac_user.clone(),
            internal: spec.mac_internal.clone(),
        },
        spec_hash: instance.spec_hash.clone(),
        vcpu: spec.vcpu,
        memory_mb: spec.memory_mb,
        user: spec.user.clone(),
        image: spec.image.clone(),
        image_format: spec.image_format.clone(),
        volumes: spec
            .volumes
            .iter()
            .map(|v| VolumeView {
                name: v.name.clone(),
                path: v.path.clone(),
                target: v.target.clone(),
                read_only: v.read_only,
            })
            .collect(),
        paths: PathsView {
            dir: spec.dir.clone(),
            root_disk: spec.root_disk(),
            seed: spec.seed_iso(),
            console_log: spec.console_log(),
            qemu_log: spec.qemu_log(),
            qmp_socket: spec.qmp_socket(),
            serial_socket: spec.serial_socket(),
            firmware_vars: spec.firmware.as_ref().map(|f| f.vars.clone()),
            ssh_key: layout.ssh_key(&spec.project),
        },
    }
}

/// Pretty JSON with a final newline.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// `holos inspect` without `--json`: one `key: value` line each.
pub fn readable(v: &InstanceView) -> String {
    let or_dash = |items: Vec<String>| {
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(", ")
        }
    };
    let state = match v.pid {
        Some(pid) => format!("{} (pid {pid})", v.state),
        None => v.state.to_string(),
    };
    let ports = v
        .ports
        .iter()
        .map(|p| {
            format!(
                "{}:{}->{}/{}",
                p.host_ip, p.host_port, p.guest_port, p.protocol
            )
        })
        .collect();
    let volumes = v
        .volumes
        .iter()
        .map(|m| {
            let mode = if m.read_only { "ro" } else { "rw" };
            format!("{} at {} ({mode}, {})", m.name, m.target, m.path.display())
        })
        .collect();
    let show = |p: &PathBuf| p.display().to_string();
    let rows: Vec<(&str, String)> = vec![
        ("instance", v.instance.clone()),
        ("project", v.project.clone()),
        ("service", v.service.clone()),
        ("state", state),
        ("health", v.health.unwrap_or("-").to_string()),
        ("accel", v.accel.to_string()),
        ("ip", v.ip.clone()),
        ("mac (user)", v.macs.user.clone()),
        ("mac (internal)", v.macs.internal.clone()),
        ("ssh", format!("127.0.0.1:{} (user {})", v.ssh_port, v.user)),
        ("ports", or_dash(ports)),
        ("cpus", v.vcpu.to_string()),
        ("memory", format!("{} MiB", v.memory_mb)),
        (
            "image",
            format!("{} ({})", v.image.display(), v.image_format),
        ),
        ("volumes", or_dash(volumes)),
        ("spec hash", v.spec_hash.clone()),
        ("directory", show(&v.paths.dir)),
        ("root disk", show(&v.paths.root_disk)),
        ("seed", show(&v.paths.seed)),
        ("console log", show(&v.paths.console_log)),
        ("qemu log", show(&v.paths.qemu_log)),
        ("qmp socket", show(&v.paths.qmp_socket)),
        ("serial socket", show(&v.paths.serial_socket)),
        (
            "uefi vars",
            v.paths
                .firmware_vars
                .as_ref()
                .map_or_else(|| "-".to_string(), show),
        ),
        ("ssh key", show(&v.paths.ssh_key)),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    rows.iter()
        .map(|(key, value)| format!("{:<width$} {value}\n", format!("{key}:")))
        .collect()
}
