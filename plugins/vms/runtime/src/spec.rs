//! What one instance is made of, fully resolved: the disks, the shares, the
//! NICs and the virtual hardware. The plan builds it from the manifest and
//! the project state; the project record keeps it, so `start`, `stop` and
//! `exec` work from the record alone, without the compose file.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use holos_compose::manifest::{Hook, PciDevice, Protocol, SegmentBackend};

/// How QEMU executes guest code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// The CPU model when the service sets none: the host's own under KVM,
    /// QEMU's most capable emulated one under TCG.
    pub fn default_cpu(self) -> &'static str {
        match self {
            Accel::Kvm => "host",
            Accel::Tcg => "max",
        }
    }
}

/// One instance, ready to be turned into a QEMU command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceSpec {
    pub project: String,
    pub service: String,
    /// `SERVICE-INDEX`.
    pub name: String,
    /// `instances/<project>/<name>/`: sockets, logs, the root overlay, the seed.
    pub dir: PathBuf,
    pub vcpu: u32,
    pub memory_mb: u64,
    pub machine: String,
    pub cpu_model: Option<String>,
    pub accel: Accel,
    /// Format of `root.qcow2`'s backing image.
    pub image: PathBuf,
    pub image_format: String,
    /// The root overlay's virtual size (`vm.disk_size`); unset keeps the
    /// base image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_size_bytes: Option<u64>,
    pub volumes: Vec<VolumeAttachment>,
    pub binds: Vec<BindShare>,
    pub devices: Vec<PciDevice>,
    pub forwards: Vec<HostForward>,
    /// Host port (on 127.0.0.1) forwarded to the guest's sshd.
    pub ssh_port: u16,
    pub ip: Ipv4Addr,
    pub mac_user: String,
    pub mac_internal: String,
    pub multicast_group: Ipv4Addr,
    pub multicast_port: u16,
    /// With named networks: one NIC per network, replacing the one NIC of
    /// `mac_internal` on `multicast_group`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Nic>,
    /// `dns_search`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_search: Vec<String>,
    pub firmware: Option<Firmware>,
    pub extra_args: Vec<String>,
    /// The login user: `exec` and the `pre_stop` hooks connect as this user.
    pub user: String,
    pub stop_grace_period_ms: u64,
    pub pre_stop: Vec<Hook>,
}

/// One NIC on one Compose network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    pub network: String,
    /// Unset: the guest asks DHCP.
    pub ip: Option<Ipv4Addr>,
    pub prefix: u8,
    pub mac: String,
    pub backend: SegmentBackend,
}

/// A named volume on a virtio-blk disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeAttachment {
    pub name: String,
    pub path: PathBuf,
    pub target: String,
    pub read_only: bool,
}

impl VolumeAttachment {
    /// The disk serial; the guest sees `/dev/disk/by-id/virtio-<serial>`.
    pub fn serial(&self) -> String {
        format!("vol-{}", self.name)
    }

    /// The guest's by-id path. virtio-blk serials hold at most 20 bytes, and
    /// udev names the link after what the guest reads.
    pub fn guest_device(&self) -> String {
        let serial = self.serial();
        let cut = serial
            .char_indices()
            .map(|(i, c)| i + c.len_utf8())
            .take_while(|end| *end <= VIRTIO_SERIAL_MAX)
            .last()
            .unwrap_or(0);
        format!("/dev/disk/by-id/virtio-{}", &serial[..cut])
    }
}

/// The longest serial a virtio-blk disk reports.
pub const VIRTIO_SERIAL_MAX: usize = 20;

/// A host directory shared with `-virtfs` (9p).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindShare {
    pub source: PathBuf,
    pub target: String,
    pub read_only: bool,
    /// The 9p mount tag the guest mounts by.
    pub tag: String,
}

/// One user-mode NIC forward: `hostfwd=PROTOCOL:HOST_IP:HOST_PORT-GUEST_IP:GUEST_PORT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostForward {
    #[serde(default, skip_serializing_if = "Protocol::is_tcp")]
    pub protocol: Protocol,
    pub host_ip: Ipv4Addr,
    pub host_port: u16,
    pub guest_ip: Option<Ipv4Addr>,
    pub guest_port: u16,
}

/// UEFI firmware: the shared read-only code and this instance's own vars.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Firmware {
    pub code: PathBuf,
    pub vars: PathBuf,
}

impl InstanceSpec {
    /// `PROJECT/NAME`: how every message about one instance names it, so
    /// that no line leaves the project it acted on to be guessed.
    pub fn label(&self) -> String {
        format!("{}/{}", self.project, self.name)
    }

    pub fn qmp_socket(&self) -> PathBuf {
        self.dir.join("qmp.sock")
    }
    pub fn serial_socket(&self) -> PathBuf {
        self.dir.join("serial.sock")
    }
    pub fn console_log(&self) -> PathBuf {
        self.dir.join("console.log")
    }
    /// What holos started: the QEMU's pid and start time, written by the
    /// child before it execs (`holo_plugin::pid_record`).
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("qemu.pid")
    }
    pub fn qemu_log(&self) -> PathBuf {
        self.dir.join("qemu.log")
    }
    pub fn root_disk(&self) -> PathBuf {
        self.dir.join("root.qcow2")
    }
    pub fn seed_iso(&self) -> PathBuf {
        self.dir.join("seed.iso")
    }
    /// Where the instance's copy of the UEFI vars lives.
    pub fn firmware_vars(dir: &Path) -> PathBuf {
        dir.join("OVMF_VARS.fd")
    }
}
