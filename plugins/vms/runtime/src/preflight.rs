//! What `holos up` refuses before it starts anything, as one check that
//! `up` runs first and `holos validate` runs too: validate passes exactly
//! what up does not refuse until a VM runs.

use std::path::Path;

use holos_compose::manifest::{Manifest, MountKind, Service};

use crate::disk_format;
use crate::images::{cache as image_cache, lock as image_lock};
use crate::plan::{self, firmware_missing, needs_firmware, socket_too_long, volume_clash};
use crate::settings::HostSettings;

/// Every refusal, one sentence each; `services` are those `up` was asked
/// for (empty: all).
pub fn check(settings: &HostSettings, manifest: &Manifest, services: &[String]) -> Vec<String> {
    let mut errors = unknown_services(manifest, services);
    let has_firmware = plan::find_firmware(&settings.system_root).is_some();
    for service in &manifest.services {
        for instance in &service.instances {
            errors.extend(socket_too_long(
                &settings.layout,
                &manifest.project,
                &instance.name,
            ));
        }
        errors.extend(volume_clash(service));
        if !has_firmware && needs_firmware(service) {
            errors.push(firmware_missing(service));
        }
        errors.extend(missing_bind_sources(service));
        errors.extend(image_not_in_its_format(manifest, service));
    }
    errors.extend(lock_problems(manifest));
    errors
}

fn unknown_services(manifest: &Manifest, services: &[String]) -> Vec<String> {
    let known: Vec<&str> = manifest.services.iter().map(|s| s.name.as_str()).collect();
    services
        .iter()
        .filter(|wanted| !known.contains(&wanted.as_str()))
        .map(|wanted| {
            format!(
                "no service {wanted:?} in project {}; services: {}",
                manifest.project,
                known.join(", ")
            )
        })
        .collect()
}

fn missing_bind_sources(service: &Service) -> Vec<String> {
    service
        .mounts
        .iter()
        .filter(|m| m.kind == MountKind::Bind && !Path::new(&m.source).exists())
        .map(|m| {
            format!(
                "service {}: {}, the source of bind mount {}, does not exist; create it or correct the mount",
                service.name, m.source, m.target
            )
        })
        .collect()
}

/// A local base image must be a disk image of the format it is declared
/// in (a missing one is reported as missing, elsewhere).
fn image_not_in_its_format(manifest: &Manifest, service: &Service) -> Option<String> {
    let path = Path::new(&manifest.directory).join(service.image.path.as_ref()?);
    if !path.is_file() {
        return None;
    }
    let problem = disk_format::mismatch(&path, &service.image.format)?;
    Some(format!(
        "service {}: {problem}; point image: at a disk image",
        service.name
    ))
}

/// `holos.images.lock`, when the project has one: readable, and pinning
/// every service's image.
fn lock_problems(manifest: &Manifest) -> Vec<String> {
    let project_dir = Path::new(&manifest.directory);
    let lock = match image_lock::load(project_dir) {
        Ok(Some(lock)) => lock,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![e.to_string()],
    };
    manifest
        .services
        .iter()
        .filter_map(|service| {
            let key = image_cache::lock_key(&service.image, project_dir);
            (!lock.images.contains_key(&key))
                .then(|| image_lock::not_pinned(&service.name, &key, project_dir))
        })
        .collect()
}
