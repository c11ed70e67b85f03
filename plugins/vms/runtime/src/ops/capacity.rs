//! `holos validate --capacity` and `--network`: whether the project fits the
//! host (vCPUs, memory, disk) and whether its published ports are free.

use std::net::Ipv4Addr;
use std::path::Path;

use holos_compose::Manifest;
use holos_compose::manifest::Service;

use crate::host;
use crate::state::{Layout, ProjectRecord};

/// What the host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCapacity {
    pub cpus: u64,
    pub memory_mb: u64,
    /// Free bytes where the state directory is (instances and volumes).
    pub disk_free_bytes: u64,
}

/// What the project asks for, all instances together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProjectNeeds {
    pub vcpus: u64,
    pub memory_mb: u64,
    /// Named volumes not created yet at their size, and root disks at the
    /// base image's size or `vm.disk_size` (the most they take; overlays
    /// start small).
    pub disk_bytes: u64,
}

/// Errors and warnings, one sentence each.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Findings {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub summary: String,
}

/// The host's CPUs, memory (`MemTotal`) and free disk below `layout`.
pub fn host_capacity(layout: &Layout) -> HostCapacity {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let memory_mb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024);
    // The state directory may not exist yet: its nearest existing parent.
    let mut dir: &Path = &layout.root;
    while !dir.exists() {
        match dir.parent() {
            Some(parent) => dir = parent,
            None => break,
        }
    }
    let disk_free_bytes = nix::sys::statvfs::statvfs(dir).map_or(0, |s| {
        s.blocks_available().saturating_mul(s.fragment_size())
    });
    HostCapacity {
        cpus,
        memory_mb,
        disk_free_bytes,
    }
}

/// What `manifest` needs; volumes already on disk need nothing more.
pub fn project_needs(manifest: &Manifest, layout: &Layout) -> ProjectNeeds {
    let mut needs = ProjectNeeds::default();
    for service in &manifest.services {
        let count = service.instances.len() as u64;
        needs.vcpus += u64::from(service.vm.vcpu) * count;
        needs.memory_mb += service.vm.memory_mb * count;
        needs.disk_bytes += root_disk_bytes(manifest, service, layout) * count;
    }
    for volume in &manifest.volumes {
        if !layout.volume(&manifest.project, &volume.name).exists() {
            needs.disk_bytes += volume.size_bytes.unwrap_or(0);
        }
    }
    needs
}

/// The most a root overlay takes: the base image's virtual size, or
/// `vm.disk_size` when that is larger (the disk is grown to it). The base
/// of an alias counts once it is cached.
fn root_disk_bytes(manifest: &Manifest, service: &Service, layout: &Layout) -> u64 {
    let base = match (&service.image.path, &service.image.alias) {
        (Some(path), _) => Some(Path::new(&manifest.directory).join(path)),
        (None, Some(alias)) => {
            let tag = service.image.tag.as_deref().unwrap_or_default();
            crate::images::cache::cached(layout, alias, tag)
                .into_iter()
                .next()
                .map(|image| image.path)
        }
        (None, None) => None,
    };
    let base_bytes = base
        .and_then(|path| crate::disk_format::sniff(&path).ok())
        .and_then(|(_, size)| size)
        .unwrap_or(0);
    base_bytes.max(service.vm.disk_size_bytes.unwrap_or(0))
}

/// The decision table of `--capacity`.
pub fn check_capacity(manifest: &Manifest, needs: ProjectNeeds, host: HostCapacity) -> Findings {
    let mut findings = Findings {
        summary: format!(
            "capacity: project {} needs {} vCPUs, {} MiB of memory and up to {} of new disk; the host has {} CPUs, {} MiB of memory and {} free",
            manifest.project,
            needs.vcpus,
            needs.memory_mb,
            super::volumes::human_bytes(needs.disk_bytes),
            host.cpus,
            host.memory_mb,
            super::volumes::human_bytes(host.disk_free_bytes)
        ),
        ..Findings::default()
    };
    for service in &manifest.services {
        if u64::from(service.vm.vcpu) > host.cpus {
            findings.errors.push(format!(
                "service {} asks for {} vCPUs per instance and the host has {} CPUs; lower vm.vcpu",
                service.name, service.vm.vcpu, host.cpus
            ));
        }
    }
    if needs.vcpus > host.cpus {
        findings.warnings.push(format!(
            "the project's {} vCPUs overcommit the host's {} CPUs; the VMs will share them",
            needs.vcpus, host.cpus
        ));
    }
    if needs.memory_mb > host.memory_mb {
        findings.errors.push(format!(
            "the project needs {} MiB of memory and the host has {} MiB; lower vm.memory_mb or the replicas",
            needs.memory_mb, host.memory_mb
        ));
    }
    if needs.disk_bytes > host.disk_free_bytes {
        findings.errors.push(format!(
            "the project's new volumes and grown root disks take up to {} and the state directory's file system has {} free",
            super::volumes::human_bytes(needs.disk_bytes),
            super::volumes::human_bytes(host.disk_free_bytes)
        ));
    }
    findings
}

/// `--network`: each published host port another program listens on. Ports
/// the project's own running instances hold are not counted.
pub fn check_network(manifest: &Manifest, layout: &Layout) -> Vec<String> {
    let own: Vec<(Ipv4Addr, u16)> = ProjectRecord::load(layout, &manifest.project)
        .ok()
        .flatten()
        .iter()
        .flat_map(|r| r.instances.values())
        .filter(|i| host::running_pid(i.pid, &i.spec).is_some())
        .flat_map(|i| i.spec.forwards.iter().map(|f| (f.host_ip, f.host_port)))
        .collect();
    let mut taken = Vec::new();
    for service in &manifest.services {
        for instance in &service.instances {
            for forward in &instance.ports {
                let Some(port) = forward.host_port.filter(|p| *p != 0) else {
                    continue;
                };
                if own.contains(&(forward.host_ip, port)) {
                    continue;
                }
                if !host::port_is_free(forward.host_ip, port) {
                    taken.push(format!(
                        "{} publishes {}:{port} (to guest port {}), which another program on the host already listens on; free it or publish another port",
                        instance.name, forward.host_ip, forward.guest_port
                    ));
                }
            }
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(vcpu: u32, memory_mb: u64, replicas: usize) -> Manifest {
        let yaml = format!(
            "name: cap\nservices:\n  web:\n    image: debian\n    deploy: {{replicas: {replicas}}}\n    vm: {{vcpu: {vcpu}, memory_mb: {memory_mb}}}\n"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("holos.yaml"), yaml).unwrap();
        let options = holos_compose::load::Options {
            files: vec![dir.path().join("holos.yaml")],
            project_name: None,
            default_name: None,
            profiles: Vec::new(),
            working_dir: dir.path().to_path_buf(),
            environment: Default::default(),
        };
        holos_compose::resolve(&options).unwrap().1
    }

    const HOST: HostCapacity = HostCapacity {
        cpus: 4,
        memory_mb: 8192,
        disk_free_bytes: 1 << 30,
    };

    fn needs(vcpus: u64, memory_mb: u64, disk_bytes: u64) -> ProjectNeeds {
        ProjectNeeds {
            vcpus,
            memory_mb,
            disk_bytes,
        }
    }

    #[test]
    fn a_project_within_the_host_has_no_findings() {
        let f = check_capacity(&manifest(2, 1024, 2), needs(4, 2048, 1 << 20), HOST);
        assert!(f.errors.is_empty() && f.warnings.is_empty(), "{f:?}");
        assert!(
            f.summary.contains("needs 4 vCPUs, 2048 MiB"),
            "{}",
            f.summary
        );
    }

    #[test]
    fn more_vcpus_in_one_instance_than_host_cpus_is_an_error() {
        let f = check_capacity(&manifest(8, 1024, 1), needs(8, 1024, 0), HOST);
        assert_eq!(f.errors.len(), 1, "{f:?}");
        assert!(f.errors[0].contains("service web asks for 8 vCPUs per instance"));
    }

    #[test]
    fn more_vcpus_in_all_than_host_cpus_is_a_warning() {
        let f = check_capacity(&manifest(2, 1024, 3), needs(6, 3072, 0), HOST);
        assert!(f.errors.is_empty(), "{f:?}");
        assert!(f.warnings[0].contains("6 vCPUs overcommit the host's 4 CPUs"));
    }

    #[test]
    fn more_memory_than_the_host_has_is_an_error() {
        let f = check_capacity(&manifest(1, 8192, 2), needs(2, 16384, 0), HOST);
        assert!(f.errors[0].contains("needs 16384 MiB of memory and the host has 8192 MiB"));
    }

    #[test]
    fn more_disk_than_is_free_is_an_error() {
        let f = check_capacity(&manifest(1, 512, 1), needs(1, 512, 2 << 30), HOST);
        assert!(f.errors[0].contains("take up to 2.0 GiB"), "{f:?}");
    }
}
