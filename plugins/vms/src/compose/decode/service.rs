//! One service: every field the seed lists, decoded into a manifest
//! `Service` (instances are filled in later, at project level).

use std::collections::BTreeMap;
use std::path::Path;

use super::keys;
use super::ports::decode_ports;
use super::reader::{Reader, child, item, parse_bytes, parse_duration_ms};
use crate::compose::Environment;
use crate::compose::dotenv::read_env_file;
use crate::compose::interpolate::Lookup;
use crate::dockerfile::{self, Provisioning, shell_quote};
use crate::images;
use crate::manifest::{
    CloudInit, Command, Dependency, Healthcheck, Hook, HostEntry, Image, Mount, MountKind,
    PciDevice, Service, Vm, WriteFile,
};
use crate::yaml::{Kind, Node};

/// What a service decode needs to know about the rest of the project.
pub struct Context<'a> {
    pub volume_names: &'a [String],
    pub environment: &'a Environment,
}

const DEFAULT_MEMORY_MB: u64 = 512;
const DEFAULT_STOP_GRACE_MS: u64 = 10_000;
const DEFAULT_USER: &str = "ubuntu";

pub fn decode_service(r: &mut Reader, name: &str, node: &Node, cx: &Context) -> Option<Service> {
    let path = format!("services.{name}");
    let entries = r.mapping_of(node, &path, &[keys::SERVICE_MAPPED, keys::SERVICE_METADATA])?;
    let field = |key: &str| node.get(key).filter(|n| !n.is_null());
    let fpath = |key: &str| child(&path, key);

    let mut metadata = BTreeMap::new();
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        // deploy and build carry Swarm and BuildKit fields holos keeps as
        // metadata beside the parts it maps.
        if keys::SERVICE_METADATA.contains(&key) || key == "deploy" || key == "build" {
            metadata.insert(key.to_string(), value.to_json());
        }
    }
    if let Some(extends) = node.get("extends")
        && extends.as_map().is_some()
    {
        r.mapping(extends, &fpath("extends"), keys::EXTENDS);
    }

    let provisioning = decode_build(r, node, &path);

    // Image: explicit, else the Dockerfile's FROM.
    let image_node = field("image");
    let image_text = match image_node {
        Some(n) => r.string(n, &fpath("image")),
        None => provisioning.as_ref().and_then(|p| p.base_image.clone()),
    };
    let image_os = match field("image_os") {
        Some(n) => r.string(n, &fpath("image_os")).and_then(|os| {
            if images::OS_FAMILIES.contains(&os.as_str()) {
                Some(os)
            } else {
                r.error(
                    n,
                    &fpath("image_os"),
                    format!("must be systemd or openrc, found {os:?}"),
                );
                None
            }
        }),
        None => None,
    };
    let image_format = match field("image_format") {
        Some(n) => r.string(n, &fpath("image_format")).and_then(|f| {
            if images::FORMATS.contains(&f.as_str()) {
                Some(f)
            } else {
                r.error(
                    n,
                    &fpath("image_format"),
                    format!("must be one of {}", images::FORMATS.join(", ")),
                );
                None
            }
        }),
        None => None,
    };
    let mut default_user: Option<String> = None;
    let mut min_memory: u64 = 0;
    let image = match image_text {
        None => {
            // A build that failed has already been reported.
            if node.get("build").is_none() && node.get("dockerfile").is_none() {
                r.error(
                    node,
                    &path,
                    "needs image: (an alias such as ubuntu:noble, or a local disk image) or build:",
                );
            }
            None
        }
        Some(text) if images::is_image_path(&text) => {
            let format = image_format
                .clone()
                .or_else(|| images::format_from_extension(&text).map(str::to_string));
            if format.is_none()
                && let Some(n) = image_node
            {
                r.error(
                    n,
                    &fpath("image"),
                    "cannot infer the image format from the extension; set image_format",
                );
            }
            Some(Image {
                reference: text.clone(),
                alias: None,
                tag: None,
                path: Some(text),
                format: format.unwrap_or_default(),
                os: image_os.clone().unwrap_or_else(|| "systemd".into()),
            })
        }
        Some(text) => match images::resolve_alias(&text) {
            Ok((mut image, alias)) => {
                default_user = Some(alias.user.clone());
                min_memory = alias.min_memory_mb;
                if let Some(os) = &image_os {
                    image.os = os.clone();
                }
                if let Some(f) = &image_format {
                    image.format = f.clone();
                }
                Some(image)
            }
            Err(e) => {
                match image_node {
                    Some(n) => r.error(n, &fpath("image"), e),
                    None => r.error(node, &fpath("build"), format!("Dockerfile FROM: {e}")),
                }
                None
            }
        },
    };

    let replicas = decode_replicas(r, node, &path);
    let vm = decode_vm(r, node, &path, min_memory);
    let ports = field("ports")
        .map(|n| decode_ports(r, n, &fpath("ports")))
        .unwrap_or_default();
    let mounts = field("volumes")
        .map(|n| decode_volumes(r, n, &fpath("volumes"), cx.volume_names, &mut metadata))
        .unwrap_or_default();
    let devices = field("devices")
        .map(|n| decode_devices(r, n, &fpath("devices"), &mut metadata))
        .unwrap_or_default();
    let depends_on = field("depends_on")
        .map(|n| decode_depends_on(r, n, &fpath("depends_on")))
        .unwrap_or_default();

    let mut labels = BTreeMap::new();
    if let Some(n) = field("label_file") {
        for file in r.string_or_list(n, &fpath("label_file")) {
            match read_env_file(Path::new(&file), false, cx.environment) {
                Ok(entries) => labels.extend(
                    entries
                        .into_iter()
                        .map(|e| (e.key, e.value.unwrap_or_default())),
                ),
                Err(e) => r.error(
                    n,
                    &fpath("label_file"),
                    format!("{e}; fix the path or the file"),
                ),
            }
        }
    }
    if let Some(n) = field("labels") {
        for (k, v) in r.key_values(n, &fpath("labels"), &['=']) {
            labels.insert(k, v.unwrap_or_default());
        }
    }

    let mut environment = BTreeMap::new();
    if let Some(p) = &provisioning {
        environment.extend(p.environment.iter().cloned());
    }
    if let Some(n) = field("env_file") {
        decode_env_files(r, n, &fpath("env_file"), cx.environment, &mut environment);
    }
    if let Some(n) = field("environment") {
        for (k, v) in r.key_values(n, &fpath("environment"), &['=']) {
            // A bare KEY takes its value from the environment; unset ones are omitted.
            match v.or_else(|| cx.environment.lookup(&k)) {
                Some(v) => {
                    environment.insert(k, v);
                }
                None => {
                    environment.remove(&k);
                }
            }
        }
    }

    let extra_hosts = field("extra_hosts")
        .map(|n| decode_extra_hosts(r, n, &fpath("extra_hosts")))
        .unwrap_or_default();

    let mut cloud_init = decode_cloud_init(r, field("cloud_init"), &fpath("cloud_init"));
    let explicit_runcmd = std::mem::take(&mut cloud_init.runcmd);
    if cloud_init.user.is_empty() {
        cloud_init.user = field("user")
            .and_then(|n| r.string(n, &fpath("user")))
            .or(default_user)
            .unwrap_or_else(|| DEFAULT_USER.into());
    }
    if cloud_init.hostname.is_none() {
        cloud_init.hostname = field("hostname").and_then(|n| r.string(n, &fpath("hostname")));
    }
    if let Some(domain) = field("domainname").and_then(|n| r.string(n, &fpath("domainname")))
        && let Some(host) = &cloud_init.hostname
    {
        cloud_init.fqdn = Some(format!("{host}.{domain}"));
    }
    let working_dir = field("working_dir").and_then(|n| r.string(n, &fpath("working_dir")));
    if let Some(p) = &provisioning {
        cloud_init
            .write_files
            .splice(0..0, p.write_files.iter().cloned());
        cloud_init.runcmd.extend(p.runcmd.iter().cloned());
    }
    let entrypoint = field("entrypoint").and_then(|n| shell_words(r, n, &fpath("entrypoint")));
    let command = field("command").and_then(|n| shell_words(r, n, &fpath("command")));
    let joined = match (entrypoint, command) {
        (Some(e), Some(c)) => Some(format!("{e} {c}")),
        (Some(e), None) => Some(e),
        (None, Some(c)) => Some(c),
        (None, None) => None,
    };
    if let Some(cmd) = joined {
        let cmd = match &working_dir {
            Some(dir) => format!("cd {} && {cmd}", shell_quote(dir)),
            None => cmd,
        };
        cloud_init.runcmd.push(Command::Shell(cmd));
    }
    cloud_init.runcmd.extend(explicit_runcmd);
    for hook in field("post_start")
        .map(|n| decode_hooks(r, n, &fpath("post_start")))
        .unwrap_or_default()
    {
        cloud_init.runcmd.push(Command::Shell(hook_to_shell(&hook)));
    }
    let pre_stop = field("pre_stop")
        .map(|n| decode_hooks(r, n, &fpath("pre_stop")))
        .unwrap_or_default();

    let healthcheck =
        field("healthcheck").and_then(|n| decode_healthcheck(r, n, &fpath("healthcheck")));
    let stop_grace_period_ms = field("stop_grace_period")
        .and_then(|n| duration(r, n, &fpath("stop_grace_period")))
        .unwrap_or(DEFAULT_STOP_GRACE_MS);
    let profiles = field("profiles")
        .map(|n| r.strings(n, &fpath("profiles")))
        .unwrap_or_default();

    let mut vm = vm?;
    if !devices.is_empty() {
        vm.uefi = true;
    }
    Some(Service {
        name: name.to_string(),
        image: image?,
        replicas,
        vm,
        ports,
        mounts,
        devices,
        depends_on,
        labels,
        environment,
        extra_hosts,
        cloud_init,
        healthcheck,
        stop_grace_period_ms,
        pre_stop,
        profiles,
        instances: Vec::new(),
        metadata,
    })
}

fn duration(r: &mut Reader, node: &Node, path: &str) -> Option<u64> {
    let text = r.string(node, path)?;
    let ms = parse_duration_ms(&text);
    if ms.is_none() {
        r.error(
            node,
            path,
            format!("{text:?} is not a duration; write e.g. 30s, 1m30s or 500ms"),
        );
    }
    ms
}

/// `build:` / `dockerfile:` into provisioning steps.
fn decode_build(r: &mut Reader, node: &Node, path: &str) -> Option<Provisioning> {
    let (text, context, origin) = if let Some(build) = node.get("build").filter(|n| !n.is_null()) {
        let bpath = child(path, "build");
        let (context, dockerfile, inline) = match &build.kind {
            Kind::Scalar { text, .. } => (text.clone(), None, None),
            Kind::Map(_) => {
                r.mapping(build, &bpath, keys::BUILD)?;
                let context = r
                    .opt_string(build.get("context"), &child(&bpath, "context"))
                    .unwrap_or_else(|| ".".into());
                let dockerfile =
                    r.opt_string(build.get("dockerfile"), &child(&bpath, "dockerfile"));
                let inline = r.opt_string(
                    build.get("dockerfile_inline"),
                    &child(&bpath, "dockerfile_inline"),
                );
                if let Some(additional) = build.get("additional_contexts") {
                    r.key_values(additional, &child(&bpath, "additional_contexts"), &['=']);
                }
                (context, dockerfile, inline)
            }
            _ => {
                r.error(
                    build,
                    &bpath,
                    "must be a context path or a mapping with context:",
                );
                return None;
            }
        };
        let context = std::path::PathBuf::from(context);
        match inline {
            Some(text) => (text, context, "dockerfile_inline".to_string()),
            None => {
                let file = context.join(dockerfile.unwrap_or_else(|| "Dockerfile".into()));
                match std::fs::read_to_string(&file) {
                    Ok(text) => (text, context, file.display().to_string()),
                    Err(e) => {
                        r.error(
                            build,
                            &bpath,
                            format!(
                                "cannot read {}: {e}; fix context/dockerfile",
                                file.display()
                            ),
                        );
                        return None;
                    }
                }
            }
        }
    } else if let Some(dockerfile) = node.get("dockerfile").filter(|n| !n.is_null()) {
        let dpath = child(path, "dockerfile");
        let file = std::path::PathBuf::from(r.string(dockerfile, &dpath)?);
        let context = file.parent().map(Path::to_path_buf).unwrap_or_default();
        match std::fs::read_to_string(&file) {
            Ok(text) => (text, context, file.display().to_string()),
            Err(e) => {
                r.error(
                    dockerfile,
                    &dpath,
                    format!("cannot read {}: {e}; fix the path", file.display()),
                );
                return None;
            }
        }
    } else {
        return None;
    };
    match dockerfile::translate(&text, &context) {
        Ok(p) => Some(p),
        Err(errors) => {
            let at = node
                .get("build")
                .or_else(|| node.get("dockerfile"))
                .unwrap_or(node);
            for e in errors {
                r.error(
                    at,
                    &child(path, "build"),
                    format!("{origin}:{}: {}", e.line, e.message),
                );
            }
            None
        }
    }
}

fn decode_replicas(r: &mut Reader, node: &Node, path: &str) -> u32 {
    let mut found: Vec<(String, u32, &Node)> = Vec::new();
    for key in ["replicas", "scale"] {
        if let Some(n) = node.get(key).filter(|n| !n.is_null())
            && let Some(v) = r.unsigned(n, &child(path, key), 253)
        {
            found.push((child(path, key), v as u32, n));
        }
    }
    if let Some(deploy) = node.get("deploy").filter(|n| !n.is_null()) {
        let dpath = child(path, "deploy");
        if r.mapping(deploy, &dpath, keys::DEPLOY).is_some() {
            if let Some(n) = deploy.get("replicas").filter(|n| !n.is_null())
                && let Some(v) = r.unsigned(n, &child(&dpath, "replicas"), 253)
            {
                found.push((child(&dpath, "replicas"), v as u32, n));
            }
            if let Some(res) = deploy.get("resources").filter(|n| !n.is_null()) {
                let rpath = child(&dpath, "resources");
                if r.mapping(res, &rpath, keys::RESOURCES).is_some() {
                    for key in keys::RESOURCES {
                        if let Some(l) = res.get(key).filter(|n| !n.is_null()) {
                            r.mapping(l, &child(&rpath, key), keys::LIMITS);
                        }
                    }
                }
            }
        }
    }
    if let Some((first_path, first, _)) = found.first() {
        for (other_path, other, n) in &found[1..] {
            if other != first {
                r.error(
                    n,
                    other_path,
                    format!("{other} conflicts with {first_path}: {first}; keep one of them"),
                );
            }
        }
        return *first;
    }
    1
}

fn decode_vm(r: &mut Reader, node: &Node, path: &str, min_memory: u64) -> Option<Vm> {
    let vpath = child(path, "vm");
    let vm_node = node.get("vm").filter(|n| !n.is_null());
    if let Some(v) = vm_node {
        r.mapping(v, &vpath, keys::VM)?;
    }
    let get = |k: &str| vm_node.and_then(|v| v.get(k)).filter(|n| !n.is_null());
    let limits = node
        .get("deploy")
        .and_then(|d| d.get("resources"))
        .and_then(|d| d.get("limits"));
    let vcpu = match get("vcpu") {
        Some(n) => r
            .unsigned(n, &child(&vpath, "vcpu"), 1024)
            .map(|v| v.max(1) as u32),
        None => {
            let cpus = node
                .get("cpus")
                .filter(|n| !n.is_null())
                .map(|n| (n, child(path, "cpus")))
                .or_else(|| {
                    limits
                        .and_then(|l| l.get("cpus"))
                        .map(|n| (n, format!("{path}.deploy.resources.limits.cpus")))
                });
            match cpus {
                Some((n, p)) => r.number(n, &p).map(|c| (c.ceil().max(1.0)) as u32),
                None => Some(1),
            }
        }
    };
    let memory_mb = match get("memory_mb") {
        Some(n) => r.unsigned(n, &child(&vpath, "memory_mb"), 1 << 24),
        None => {
            let limit = node
                .get("mem_limit")
                .filter(|n| !n.is_null())
                .map(|n| (n, child(path, "mem_limit")))
                .or_else(|| {
                    limits
                        .and_then(|l| l.get("memory"))
                        .map(|n| (n, format!("{path}.deploy.resources.limits.memory")))
                });
            match limit {
                Some((n, p)) => {
                    let text = r.string(n, &p)?;
                    match parse_bytes(&text) {
                        Some(bytes) => Some(bytes.div_ceil(1 << 20).max(1)),
                        None => {
                            r.error(
                                n,
                                &p,
                                format!("{text:?} is not a size; write e.g. 512m, 2g or 1.5G"),
                            );
                            None
                        }
                    }
                }
                None => Some(DEFAULT_MEMORY_MB.max(min_memory)),
            }
        }
    };
    if let (Some(mem), Some(n)) = (memory_mb, get("memory_mb"))
        && mem < min_memory
    {
        r.error(
            n,
            &child(&vpath, "memory_mb"),
            format!("{mem} MB is below the {min_memory} MB this image needs; raise it"),
        );
    }
    let machine = get("machine")
        .and_then(|n| r.string(n, &child(&vpath, "machine")))
        .unwrap_or_else(|| "q35".into());
    let cpu_model = get("cpu_model").and_then(|n| r.string(n, &child(&vpath, "cpu_model")));
    let uefi = get("uefi")
        .and_then(|n| r.boolean(n, &child(&vpath, "uefi")))
        .unwrap_or(false);
    let extra_args = get("extra_args")
        .map(|n| r.strings(n, &child(&vpath, "extra_args")))
        .unwrap_or_default();
    Some(Vm {
        vcpu: vcpu?,
        memory_mb: memory_mb?,
        machine,
        cpu_model,
        uefi,
        extra_args,
    })
}

fn decode_volumes(
    r: &mut Reader,
    node: &Node,
    path: &str,
    volume_names: &[String],
    metadata: &mut BTreeMap<String, serde_json::Value>,
) -> Vec<Mount> {
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let epath = item(path, i);
        let mount = match &entry.kind {
            Kind::Scalar { text, .. } => {
                let parts: Vec<&str> = text.split(':').collect();
                let (source, target, mode) = match parts.as_slice() {
                    [source, target] => (*source, *target, None),
                    [source, target, mode] => (*source, *target, Some(*mode)),
                    [_] => {
                        r.error(entry, &epath, "anonymous volumes are not supported; write NAME:/path and declare NAME under top-level volumes");
                        continue;
                    }
                    _ => {
                        r.error(entry, &epath, "must be SOURCE:TARGET[:ro|rw]");
                        continue;
                    }
                };
                let read_only = match mode {
                    None | Some("rw") => false,
                    Some("ro") => true,
                    Some(other) => {
                        r.error(
                            entry,
                            &epath,
                            format!("mode {other:?} is not supported; use ro or rw"),
                        );
                        continue;
                    }
                };
                let kind = if source.starts_with('/') {
                    MountKind::Bind
                } else {
                    MountKind::Volume
                };
                Mount {
                    kind,
                    source: source.to_string(),
                    target: target.to_string(),
                    read_only,
                }
            }
            Kind::Map(_) => {
                if r.mapping(entry, &epath, keys::VOLUME_LONG).is_none() {
                    continue;
                }
                let kind = r
                    .opt_string(entry.get("type"), &child(&epath, "type"))
                    .unwrap_or_else(|| "volume".into());
                if !keys::VOLUME_TYPES.contains(&kind.as_str()) {
                    r.error(
                        entry,
                        &child(&epath, "type"),
                        format!(
                            "unknown volume type {kind:?}; use one of {}",
                            keys::VOLUME_TYPES.join(", ")
                        ),
                    );
                    continue;
                }
                if !matches!(kind.as_str(), "bind" | "volume") {
                    ignored.push(entry.to_json());
                    continue;
                }
                let source = r.opt_string(entry.get("source"), &child(&epath, "source"));
                let target = r.opt_string(entry.get("target"), &child(&epath, "target"));
                let read_only = entry
                    .get("read_only")
                    .and_then(|n| r.boolean(n, &child(&epath, "read_only")))
                    .unwrap_or(false);
                let (Some(source), Some(target)) = (source, target) else {
                    r.error(
                        entry,
                        &epath,
                        format!("a {kind} mount needs source: and target:"),
                    );
                    continue;
                };
                let kind = if kind == "bind" {
                    MountKind::Bind
                } else {
                    MountKind::Volume
                };
                Mount {
                    kind,
                    source,
                    target,
                    read_only,
                }
            }
            _ => {
                r.error(entry, &epath, "must be SOURCE:TARGET[:ro|rw] or a mapping");
                continue;
            }
        };
        if !mount.target.starts_with('/') {
            r.error(
                entry,
                &epath,
                format!(
                    "target {:?} must be an absolute path in the guest",
                    mount.target
                ),
            );
            continue;
        }
        if mount.kind == MountKind::Volume && !volume_names.contains(&mount.source) {
            let hint =
                crate::diag::did_you_mean(&mount.source, volume_names.iter().map(String::as_str))
                    .map(|s| format!("did you mean {s:?}? "))
                    .unwrap_or_default();
            r.error(
                entry,
                &epath,
                format!(
                    "volume {:?} is not declared; {hint}declare it under top-level volumes",
                    mount.source
                ),
            );
            continue;
        }
        out.push(mount);
    }
    if !ignored.is_empty() {
        metadata.insert("volumes_ignored".into(), serde_json::Value::Array(ignored));
    }
    out
}

fn decode_devices(
    r: &mut Reader,
    node: &Node,
    path: &str,
    metadata: &mut BTreeMap<String, serde_json::Value>,
) -> Vec<PciDevice> {
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let epath = item(path, i);
        match &entry.kind {
            Kind::Map(_) if entry.get("pci").is_some() => {
                if r.mapping(entry, &epath, &["pci", "rom_file"]).is_none() {
                    continue;
                }
                let pci = entry
                    .get("pci")
                    .and_then(|n| r.string(n, &child(&epath, "pci")));
                let rom_file = r.opt_string(entry.get("rom_file"), &child(&epath, "rom_file"));
                if let Some(pci) = pci {
                    if !is_pci_address(&pci) {
                        r.error(
                            entry,
                            &child(&epath, "pci"),
                            format!("{pci:?} is not a PCI address such as 01:00.0"),
                        );
                        continue;
                    }
                    out.push(PciDevice { pci, rom_file });
                }
            }
            Kind::Map(_) => {
                r.mapping(entry, &epath, &["source", "target", "permissions"]);
                kept.push(entry.to_json());
            }
            Kind::Scalar { .. } => kept.push(entry.to_json()),
            _ => r.error(
                entry,
                &epath,
                "must be {pci: ADDRESS} or a Compose device string",
            ),
        }
    }
    if !kept.is_empty() {
        metadata.insert("devices".into(), serde_json::Value::Array(kept));
    }
    out
}

/// `BB:DD.F`, optionally with a `DDDD:` domain.
fn is_pci_address(text: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = text.split(':').collect();
    let (bus, rest) = match parts.as_slice() {
        [bus, rest] => (*bus, *rest),
        [domain, bus, rest] if hex(domain, 4) => (*bus, *rest),
        _ => return false,
    };
    match rest.split_once('.') {
        Some((dev, func)) => {
            hex(bus, 2)
                && hex(dev, 2)
                && func.len() == 1
                && func.chars().all(|c| ('0'..='7').contains(&c))
        }
        None => false,
    }
}

fn decode_depends_on(r: &mut Reader, node: &Node, path: &str) -> Vec<Dependency> {
    match &node.kind {
        Kind::Seq(_) => r
            .strings(node, path)
            .into_iter()
            .map(|service| Dependency {
                service,
                condition: "service_started".into(),
                restart: false,
                required: true,
            })
            .collect(),
        Kind::Map(entries) => {
            let mut out = Vec::new();
            for (k, v) in entries {
                let service = k.as_str().unwrap_or_default().to_string();
                let dpath = child(path, &service);
                let mut dep = Dependency {
                    service,
                    condition: "service_started".into(),
                    restart: false,
                    required: true,
                };
                if !v.is_null() && r.mapping(v, &dpath, keys::DEPENDS_ON_LONG).is_some() {
                    if let Some(c) = r.opt_string(v.get("condition"), &child(&dpath, "condition")) {
                        if keys::DEPENDS_ON_CONDITIONS.contains(&c.as_str()) {
                            dep.condition = c;
                        } else {
                            r.error(
                                v,
                                &child(&dpath, "condition"),
                                format!(
                                    "unknown condition {c:?}; use one of {}",
                                    keys::DEPENDS_ON_CONDITIONS.join(", ")
                                ),
                            );
                        }
                    }
                    if let Some(n) = v.get("restart") {
                        dep.restart = r.boolean(n, &child(&dpath, "restart")).unwrap_or(false);
                    }
                    if let Some(n) = v.get("required") {
                        dep.required = r.boolean(n, &child(&dpath, "required")).unwrap_or(true);
                    }
                }
                out.push(dep);
            }
            out
        }
        _ => {
            r.error(node, path, "must be a list of service names or a mapping");
            Vec::new()
        }
    }
}

fn decode_env_files(
    r: &mut Reader,
    node: &Node,
    path: &str,
    env: &Environment,
    out: &mut BTreeMap<String, String>,
) {
    let entries: Vec<(&Node, String)> = match &node.kind {
        Kind::Seq(items) => items
            .iter()
            .enumerate()
            .map(|(i, n)| (n, item(path, i)))
            .collect(),
        _ => vec![(node, path.to_string())],
    };
    for (entry, epath) in entries {
        let (file, required, raw) = match &entry.kind {
            Kind::Scalar { text, .. } => (text.clone(), true, false),
            Kind::Map(_) => {
                if r.mapping(entry, &epath, keys::ENV_FILE_LONG).is_none() {
                    continue;
                }
                let Some(file) = r.opt_string(entry.get("path"), &child(&epath, "path")) else {
                    r.error(entry, &epath, "needs path:");
                    continue;
                };
                let required = entry
                    .get("required")
                    .and_then(|n| r.boolean(n, &child(&epath, "required")))
                    .unwrap_or(true);
                let raw = match r
                    .opt_string(entry.get("format"), &child(&epath, "format"))
                    .as_deref()
                {
                    None => false,
                    Some("raw") => true,
                    Some(other) => {
                        r.error(
                            entry,
                            &child(&epath, "format"),
                            format!(
                                "format {other:?} is not supported; use raw or leave format out"
                            ),
                        );
                        continue;
                    }
                };
                (file, required, raw)
            }
            _ => {
                r.error(entry, &epath, "must be a path or a mapping with path:");
                continue;
            }
        };
        if !Path::new(&file).exists() && !required {
            continue;
        }
        match read_env_file(Path::new(&file), raw, env) {
            Ok(entries) => {
                for e in entries {
                    match e.value {
                        Some(v) => {
                            out.insert(e.key, v);
                        }
                        None => {
                            out.remove(&e.key);
                        }
                    }
                }
            }
            Err(e) => r.error(
                entry,
                &epath,
                format!("{e}; fix the path or set required: false"),
            ),
        }
    }
}

fn decode_extra_hosts(r: &mut Reader, node: &Node, path: &str) -> Vec<HostEntry> {
    let mut out: Vec<HostEntry> = Vec::new();
    let mut add = |host: String, ip: String| {
        out.push(HostEntry {
            ip,
            names: vec![host],
        })
    };
    match &node.kind {
        Kind::Map(entries) => {
            for (k, v) in entries {
                let host = k.as_str().unwrap_or_default().to_string();
                let hpath = child(path, &host);
                match &v.kind {
                    Kind::Seq(_) => r
                        .strings(v, &hpath)
                        .into_iter()
                        .for_each(|ip| add(host.clone(), ip)),
                    _ => {
                        if let Some(ip) = r.string(v, &hpath) {
                            add(host, ip);
                        }
                    }
                }
            }
        }
        _ => {
            for (i, text) in r.strings(node, path).into_iter().enumerate() {
                match text.find('=').or_else(|| text.find(':')) {
                    Some(at) => add(text[..at].to_string(), text[at + 1..].to_string()),
                    None => {
                        if let Some(n) = node.as_seq().and_then(|s| s.get(i)) {
                            r.error(n, &item(path, i), "must be host=ip or host:ip");
                        }
                    }
                }
            }
        }
    }
    out
}

fn decode_commands(r: &mut Reader, node: &Node, path: &str) -> Vec<Command> {
    let mut out = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        match &entry.kind {
            Kind::Scalar { text, .. } => out.push(Command::Shell(text.clone())),
            Kind::Seq(_) => out.push(Command::Exec(r.strings(entry, &item(path, i)))),
            _ => r.error(
                entry,
                &item(path, i),
                "must be a command string or an argv list",
            ),
        }
    }
    out
}

fn decode_cloud_init(r: &mut Reader, node: Option<&Node>, path: &str) -> CloudInit {
    let mut out = CloudInit::default();
    let Some(node) = node else { return out };
    if r.mapping(node, path, keys::CLOUD_INIT).is_none() {
        return out;
    }
    let get = |k: &str| node.get(k).filter(|n| !n.is_null());
    out.user = get("user")
        .and_then(|n| r.string(n, &child(path, "user")))
        .unwrap_or_default();
    out.hostname = get("hostname").and_then(|n| r.string(n, &child(path, "hostname")));
    out.packages = get("packages")
        .map(|n| r.strings(n, &child(path, "packages")))
        .unwrap_or_default();
    out.bootcmd = get("bootcmd")
        .map(|n| decode_commands(r, n, &child(path, "bootcmd")))
        .unwrap_or_default();
    out.runcmd = get("runcmd")
        .map(|n| decode_commands(r, n, &child(path, "runcmd")))
        .unwrap_or_default();
    if let Some(files) = get("write_files") {
        let fpath = child(path, "write_files");
        for (i, f) in r.list(files, &fpath).iter().enumerate() {
            let ipath = item(&fpath, i);
            if r.mapping(f, &ipath, keys::WRITE_FILE).is_none() {
                continue;
            }
            let Some(file_path) = r.opt_string(f.get("path"), &child(&ipath, "path")) else {
                r.error(f, &ipath, "needs path:");
                continue;
            };
            out.write_files.push(WriteFile {
                path: file_path,
                content: r
                    .opt_string(f.get("content"), &child(&ipath, "content"))
                    .unwrap_or_default(),
                encoding: r.opt_string(f.get("encoding"), &child(&ipath, "encoding")),
                owner: r.opt_string(f.get("owner"), &child(&ipath, "owner")),
                permissions: r.opt_string(f.get("permissions"), &child(&ipath, "permissions")),
                append: f
                    .get("append")
                    .and_then(|n| r.boolean(n, &child(&ipath, "append")))
                    .unwrap_or(false),
                defer: f
                    .get("defer")
                    .and_then(|n| r.boolean(n, &child(&ipath, "defer")))
                    .unwrap_or(false),
            });
        }
    }
    out
}

/// A command/entrypoint as one shell string: lists are quoted word by word,
/// strings are taken as shell text (Docker's shell form).
fn shell_words(r: &mut Reader, node: &Node, path: &str) -> Option<String> {
    match &node.kind {
        Kind::Scalar { text, .. } => Some(text.clone()),
        Kind::Seq(_) => {
            let words = r.strings(node, path);
            (!words.is_empty()).then(|| {
                words
                    .iter()
                    .map(|w| shell_quote(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }
        _ => {
            r.error(node, path, "must be a string or a list of strings");
            None
        }
    }
}

fn decode_hooks(r: &mut Reader, node: &Node, path: &str) -> Vec<Hook> {
    let mut out = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let hpath = item(path, i);
        if r.mapping(entry, &hpath, keys::HOOK).is_none() {
            continue;
        }
        let command = match entry.get("command") {
            Some(n) => match &n.kind {
                Kind::Scalar { text, .. } => Command::Shell(text.clone()),
                Kind::Seq(_) => Command::Exec(r.strings(n, &child(&hpath, "command"))),
                _ => {
                    r.error(n, &child(&hpath, "command"), "must be a string or a list");
                    continue;
                }
            },
            None => {
                r.error(entry, &hpath, "needs command:");
                continue;
            }
        };
        let environment = entry
            .get("environment")
            .map(|n| r.key_values(n, &child(&hpath, "environment"), &['=']))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        if let Some(n) = entry.get("privileged") {
            r.boolean(n, &child(&hpath, "privileged"));
        }
        out.push(Hook {
            command,
            user: r.opt_string(entry.get("user"), &child(&hpath, "user")),
            working_dir: r.opt_string(entry.get("working_dir"), &child(&hpath, "working_dir")),
            environment,
        });
    }
    out
}

/// A hook as one shell line: `cd`, exported variables, then the command,
/// run as the hook's user when one is set.
pub fn hook_to_shell(hook: &Hook) -> String {
    let mut line = String::new();
    if let Some(dir) = &hook.working_dir {
        line.push_str(&format!("cd {} && ", shell_quote(dir)));
    }
    for (k, v) in &hook.environment {
        line.push_str(&format!("{k}={} ", shell_quote(v)));
    }
    let command = match &hook.command {
        Command::Shell(s) => s.clone(),
        Command::Exec(argv) => argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" "),
    };
    match &hook.user {
        Some(user) => format!(
            "{line}runuser -u {} -- sh -c {}",
            shell_quote(user),
            shell_quote(&command)
        ),
        None => format!("{line}{command}"),
    }
}

fn decode_healthcheck(r: &mut Reader, node: &Node, path: &str) -> Option<Healthcheck> {
    r.mapping(node, path, keys::HEALTHCHECK)?;
    let get = |k: &str| node.get(k).filter(|n| !n.is_null());
    if get("disable").and_then(|n| r.boolean(n, &child(path, "disable"))) == Some(true) {
        return None;
    }
    let tpath = child(path, "test");
    let test = match get("test") {
        None => {
            r.error(
                node,
                path,
                "needs test: (a command list or string), or disable: true",
            );
            return None;
        }
        Some(n) => match &n.kind {
            Kind::Scalar { text, .. } => vec!["sh".into(), "-c".into(), text.clone()],
            _ => {
                let words = r.strings(n, &tpath);
                match words.first().map(String::as_str) {
                    Some("NONE") => return None,
                    Some("CMD") => words[1..].to_vec(),
                    Some("CMD-SHELL") => vec!["sh".into(), "-c".into(), words[1..].join(" ")],
                    Some(_) => words,
                    None => {
                        r.error(n, &tpath, "must not be empty");
                        return None;
                    }
                }
            }
        },
    };
    if test.is_empty() {
        r.error(node, &tpath, "names no command after CMD");
        return None;
    }
    let ms = |r: &mut Reader, k: &str, default: u64| {
        get(k)
            .and_then(|n| duration(r, n, &child(path, k)))
            .unwrap_or(default)
    };
    Some(Healthcheck {
        test,
        interval_ms: ms(r, "interval", 30_000),
        timeout_ms: ms(r, "timeout", 30_000),
        retries: get("retries")
            .and_then(|n| r.unsigned(n, &child(path, "retries"), u32::MAX as u64))
            .unwrap_or(3) as u32,
        start_period_ms: ms(r, "start_period", 0),
        start_interval_ms: ms(r, "start_interval", 5_000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("01:00.0") && is_pci_address("0000:0a:1f.7"));
        assert!(
            !is_pci_address("1:00.0") && !is_pci_address("01:00.8") && !is_pci_address("01:00")
        );
    }

    #[test]
    fn hooks_render_as_shell() {
        let hook = Hook {
            command: Command::Exec(vec!["echo".into(), "a b".into()]),
            user: Some("app".into()),
            working_dir: Some("/srv".into()),
            environment: BTreeMap::from([("X".into(), "1".into())]),
        };
        assert_eq!(
            hook_to_shell(&hook),
            "cd /srv && X=1 runuser -u app -- sh -c 'echo '\\''a b'\\'''"
        );
    }
}
