//! From the resolved manifest to one [`InstanceSpec`] per instance: disk and
//! socket paths in the state directory, volumes, 9p shares, the SSH port and
//! the host ports that the compose file leaves to holos, firmware.
//!
//! Ports already given to an instance (in the project record) are kept, so a
//! re-applied project keeps its addresses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::spec::{
    Accel, BindShare, Firmware, HostForward, InstanceSpec, Nic, VIRTIO_SERIAL_MAX, VolumeAttachment,
};
use crate::state::{Layout, ProjectRecord};
use holos_compose::manifest::{Image, Instance, Manifest, MountKind, Service, Volume};

/// The longest path a unix socket address holds (`sun_path` less the NUL).
pub const UNIX_SOCKET_PATH_MAX: usize = 107;

/// Where the shared UEFI firmware is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirmwareFiles {
    pub code: PathBuf,
    /// The template each instance copies its vars from.
    pub vars_template: PathBuf,
}

/// Debian's `ovmf` package, newest layout first.
pub const OVMF_CANDIDATES: [(&str, &str); 2] = [
    (
        "/usr/share/OVMF/OVMF_CODE_4M.fd",
        "/usr/share/OVMF/OVMF_VARS_4M.fd",
    ),
    (
        "/usr/share/OVMF/OVMF_CODE.fd",
        "/usr/share/OVMF/OVMF_VARS.fd",
    ),
];

/// The installed OVMF firmware, looked up below `system_root`;
/// `HOLOS_OVMF_CODE` and `HOLOS_OVMF_VARS` (paths as they are) replace
/// their half of it.
pub fn find_firmware(system_root: &Path) -> Option<FirmwareFiles> {
    let from_env = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let (code, vars) = (from_env("HOLOS_OVMF_CODE"), from_env("HOLOS_OVMF_VARS"));
    if code.is_some() || vars.is_some() {
        let installed = installed_firmware(system_root);
        let code = code.or_else(|| installed.as_ref().map(|f| f.code.clone()))?;
        let vars = vars.or_else(|| installed.map(|f| f.vars_template))?;
        return (code.is_file() && vars.is_file()).then_some(FirmwareFiles {
            code,
            vars_template: vars,
        });
    }
    installed_firmware(system_root)
}

fn installed_firmware(system_root: &Path) -> Option<FirmwareFiles> {
    OVMF_CANDIDATES.iter().find_map(|(code, vars)| {
        let code = system_root.join(code.trim_start_matches('/'));
        let vars = system_root.join(vars.trim_start_matches('/'));
        (code.is_file() && vars.is_file()).then_some(FirmwareFiles {
            code,
            vars_template: vars,
        })
    })
}

/// What the plan needs besides the manifest.
pub struct PlanInputs<'a> {
    pub layout: &'a Layout,
    pub accel: Accel,
    pub firmware: Option<&'a FirmwareFiles>,
    pub previous: Option<&'a ProjectRecord>,
    /// The base image of each service, by name, as `up` checked it
    /// (`image_cache::ensure_project_images`); a service not in it gets
    /// [`image_file`].
    pub images: &'a BTreeMap<String, PathBuf>,
}

/// One instance to run, with the hash that decides whether a running one
/// must be recreated.
#[derive(Clone, Debug)]
pub struct PlannedInstance {
    pub spec: InstanceSpec,
    pub spec_hash: String,
    /// Index into `manifest.services`.
    pub service_index: usize,
    pub instance_index: usize,
}

/// sha256 hex of a serialisable value.
pub fn hash_json<T: serde::Serialize>(value: &T) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash of the whole manifest, with the secrets its serialized form
/// redacts (a project without secrets hashes as its JSON alone).
pub fn manifest_hash(manifest: &Manifest) -> String {
    let secrets: Vec<Vec<&[u8]>> = manifest
        .services
        .iter()
        .map(Service::secret_contents)
        .collect();
    if secrets.iter().all(Vec::is_empty) {
        hash_json(manifest)
    } else {
        hash_json(&(manifest, secrets))
    }
}

/// The hash of what one instance is built from: its service (without the
/// other replicas), its own addresses, the volumes it mounts and the accel.
fn instance_hash(
    manifest: &Manifest,
    service: &Service,
    instance: &Instance,
    accel: Accel,
) -> String {
    let mut alone = service.clone();
    alone.instances = vec![instance.clone()];
    let volumes = mounted_volumes(manifest, service);
    let secrets = service.secret_contents();
    if secrets.is_empty() {
        hash_json(&(&alone, &volumes, accel))
    } else {
        hash_json(&(&alone, &volumes, accel, secrets))
    }
}

/// The project's named volumes that `service` mounts.
pub fn mounted_volumes<'m>(manifest: &'m Manifest, service: &Service) -> Vec<&'m Volume> {
    manifest
        .volumes
        .iter()
        .filter(|v| {
            service
                .mounts
                .iter()
                .any(|m| m.kind == MountKind::Volume && m.source == v.name)
        })
        .collect()
}

/// Plans every instance of `services` (all when empty), in start order.
/// `free_port` picks an unused 127.0.0.1 port.
pub fn plan(
    manifest: &Manifest,
    inputs: &PlanInputs,
    services: &[String],
    free_port: &mut dyn FnMut() -> Result<u16, Error>,
) -> Result<Vec<PlannedInstance>, Error> {
    for wanted in services {
        if !manifest.services.iter().any(|s| &s.name == wanted) {
            let known: Vec<&str> = manifest.services.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::Request(format!(
                "no service {wanted:?} in project {}; services: {}",
                manifest.project,
                known.join(", ")
            )));
        }
    }
    let mut planned = Vec::new();
    for (service_index, service) in manifest.services.iter().enumerate() {
        if !services.is_empty() && !services.contains(&service.name) {
            continue;
        }
        for (instance_index, instance) in service.instances.iter().enumerate() {
            let spec = instance_spec(manifest, service, instance, inputs, free_port)?;
            planned.push(PlannedInstance {
                spec_hash: instance_hash(manifest, service, instance, inputs.accel),
                spec,
                service_index,
                instance_index,
            });
        }
    }
    Ok(planned)
}

fn instance_spec(
    manifest: &Manifest,
    service: &Service,
    instance: &Instance,
    inputs: &PlanInputs,
    free_port: &mut dyn FnMut() -> Result<u16, Error>,
) -> Result<InstanceSpec, Error> {
    let project = &manifest.project;
    if let Some(problem) = socket_too_long(inputs.layout, project, &instance.name) {
        return Err(Error::Request(problem));
    }
    if let Some(problem) = volume_clash(service) {
        return Err(Error::Request(problem));
    }
    let dir = inputs.layout.instance_dir(project, &instance.name);
    let previous = inputs
        .previous
        .and_then(|r| r.instances.get(&instance.name))
        .map(|r| &r.spec);
    let forwards = host_forwards(instance, previous, free_port)?;
    let ssh_port = match previous {
        Some(p) => p.ssh_port,
        None => free_port()?,
    };
    let (volumes, binds) = attachments(inputs.layout, project, service);
    let firmware = firmware(service, inputs, &dir)?;
    let (mut image, image_format) = image_file(inputs.layout, &service.image, &manifest.directory);
    if let Some(checked) = inputs.images.get(&service.name) {
        image = checked.clone();
    }
    Ok(InstanceSpec {
        project: project.clone(),
        service: service.name.clone(),
        name: instance.name.clone(),
        dir,
        vcpu: service.vm.vcpu,
        memory_mb: service.vm.memory_mb,
        machine: service.vm.machine.clone(),
        cpu_model: service.vm.cpu_model.clone(),
        accel: inputs.accel,
        image,
        image_format,
        disk_size_bytes: service.vm.disk_size_bytes,
        volumes,
        binds,
        devices: service.devices.clone(),
        forwards,
        ssh_port,
        ip: instance.ip,
        mac_user: instance.mac_user.clone(),
        mac_internal: instance.mac_internal.clone(),
        multicast_group: manifest.network.multicast_group,
        multicast_port: manifest.network.multicast_port,
        networks: nics(manifest, instance),
        dns_search: service.dns_search.clone(),
        firmware,
        extra_args: service.vm.extra_args.clone(),
        user: service.cloud_init.user.clone(),
        stop_grace_period_ms: service.stop_grace_period_ms,
        pre_stop: service.pre_stop.clone(),
    })
}

/// The host ports of an instance: as the compose file gives them, else
/// those the instance had, else new ones.
fn host_forwards(
    instance: &Instance,
    previous: Option<&InstanceSpec>,
    free_port: &mut dyn FnMut() -> Result<u16, Error>,
) -> Result<Vec<HostForward>, Error> {
    let mut forwards = Vec::new();
    for forward in &instance.ports {
        let kept = previous.and_then(|p| {
            p.forwards.iter().find(|f| {
                f.protocol == forward.protocol
                    && f.guest_port == forward.guest_port
                    && f.host_ip == forward.host_ip
            })
        });
        let host_port = match (forward.host_port, kept) {
            (Some(port), _) => port,
            (None, Some(kept)) => kept.host_port,
            (None, None) => free_port()?,
        };
        forwards.push(HostForward {
            protocol: forward.protocol,
            host_ip: forward.host_ip,
            host_port,
            guest_ip: forward.guest_ip,
            guest_port: forward.guest_port,
        });
    }
    Ok(forwards)
}

/// The named volumes (virtio-blk disks) and bind mounts (9p shares) of a
/// service; anonymous volumes live on the root overlay.
fn attachments(
    layout: &Layout,
    project: &str,
    service: &Service,
) -> (Vec<VolumeAttachment>, Vec<BindShare>) {
    let mut volumes = Vec::new();
    let mut binds = Vec::new();
    for mount in &service.mounts {
        match mount.kind {
            MountKind::Volume => volumes.push(VolumeAttachment {
                name: mount.source.clone(),
                path: layout.volume(project, &mount.source),
                target: mount.target.clone(),
                read_only: mount.read_only,
            }),
            MountKind::Anonymous => {}
            MountKind::Bind => binds.push(BindShare {
                source: PathBuf::from(&mount.source),
                target: mount.target.clone(),
                read_only: mount.read_only,
                tag: format!("holos{}", binds.len()),
            }),
        }
    }
    (volumes, binds)
}

/// The UEFI firmware of an instance that needs it, with its own vars file.
fn firmware(service: &Service, inputs: &PlanInputs, dir: &Path) -> Result<Option<Firmware>, Error> {
    if !needs_firmware(service) {
        return Ok(None);
    }
    let Some(files) = inputs.firmware else {
        return Err(Error::Request(firmware_missing(service)));
    };
    Ok(Some(Firmware {
        code: files.code.clone(),
        vars: InstanceSpec::firmware_vars(dir),
    }))
}

/// The NICs of an instance on the project's networks.
fn nics(manifest: &Manifest, instance: &Instance) -> Vec<Nic> {
    instance
        .networks
        .iter()
        .filter_map(|a| {
            let segment = manifest.networks.iter().find(|s| s.name == a.network)?;
            Some(Nic {
                network: a.network.clone(),
                ip: a.ip,
                prefix: a.prefix,
                mac: a.mac.clone(),
                backend: segment.backend.clone(),
            })
        })
        .collect()
}

/// QEMU's sockets of an instance must fit a unix socket address.
pub fn socket_too_long(layout: &Layout, project: &str, instance: &str) -> Option<String> {
    let socket = layout.instance_dir(project, instance).join("serial.sock");
    let socket_len = socket.as_os_str().len();
    (socket_len > UNIX_SOCKET_PATH_MAX).then(|| format!(
        "the state directory is too deep for QEMU's sockets: {} is {socket_len} bytes, the limit is {UNIX_SOCKET_PATH_MAX}; set HOLOS_STATE_DIR to a shorter directory",
        socket.display()
    ))
}

/// Two volumes of a service whose disk serials the guest cannot tell apart.
pub fn volume_clash(service: &Service) -> Option<String> {
    let mut seen = BTreeMap::new();
    for mount in service
        .mounts
        .iter()
        .filter(|m| m.kind == MountKind::Volume)
    {
        let device = VolumeAttachment {
            name: mount.source.clone(),
            path: Default::default(),
            target: String::new(),
            read_only: false,
        }
        .guest_device();
        if let Some(other) = seen.insert(device.clone(), &mount.source)
            && other != &mount.source
        {
            return Some(format!(
                "service {}: volumes {other} and {} both appear in the guest as {device} (a disk serial holds {VIRTIO_SERIAL_MAX} bytes); shorten one volume name",
                service.name, mount.source
            ));
        }
    }
    None
}

pub fn needs_firmware(service: &Service) -> bool {
    service.vm.uefi || !service.devices.is_empty()
}

pub fn firmware_missing(service: &Service) -> String {
    format!(
        "service {} needs UEFI firmware ({}), which is not installed; install Debian's ovmf package (or point HOLOS_OVMF_CODE and HOLOS_OVMF_VARS at the files)",
        service.name,
        if service.vm.uefi {
            "vm.uefi is set"
        } else {
            "PCI devices are passed through"
        }
    )
}

/// The base image file without looking at the cache: a local path as given
/// (relative to the project directory), or for an alias a name in the
/// image cache directory that `up` replaces with the pulled build.
pub fn image_file(layout: &Layout, image: &Image, project_dir: &str) -> (PathBuf, String) {
    match &image.path {
        Some(path) => (Path::new(project_dir).join(path), image.format.clone()),
        None => {
            let alias = image.alias.as_deref().unwrap_or(&image.reference);
            let tag = image.tag.as_deref().unwrap_or("latest");
            (
                layout
                    .images()
                    .join(format!("{alias}-{tag}.{}", image.format)),
                image.format.clone(),
            )
        }
    }
}
