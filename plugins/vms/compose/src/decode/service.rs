//! One service: every field the compose file format lists, decoded into a manifest
//! `Service` (instances are filled in later, at project level).

use std::collections::BTreeMap;
use std::path::Path;

use super::build::decode_build;
use super::guest::{
    decode_cloud_init, decode_healthcheck, decode_hooks, duration, hook_to_shell, shell_words,
};
use super::guest_files::{Definitions, decode_references};
use super::ports::decode_ports;
use super::reader::{Reader, child, item};
use super::resources::{decode_replicas, decode_vm};
use super::storage::{decode_devices, decode_volumes};
use crate::dockerfile::shell_quote;
use crate::images;
use crate::keys;
use crate::load::Environment;
use crate::load::dotenv::read_env_file;
use crate::load::interpolate::Lookup;
use crate::manifest::{Dependency, GuestCommand, GuestFileKind, HostEntry, Image, Service};
use crate::yaml::{Kind, Node, ScalarType};

/// What a service decode needs to know about the rest of the project.
pub struct Context<'a> {
    /// The configs and secrets the services use, read.
    pub definitions: &'a Definitions,
    /// The project's merged tree, for the declared configs and secrets.
    pub root: &'a Node,
    pub volume_names: &'a [String],
    pub environment: &'a Environment,
    /// The top-level `x-holo.protect`, for services without their own.
    pub default_protect: bool,
}

/// A VM shuts down slower than a container (Compose waits 10 s), and a
/// systemd guest under TCG needs more still.
const DEFAULT_STOP_GRACE_MS: u64 = 30_000;
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
        cloud_init.command = Some(cmd);
    }
    cloud_init.runcmd.extend(explicit_runcmd);
    for hook in field("post_start")
        .map(|n| decode_hooks(r, n, &fpath("post_start")))
        .unwrap_or_default()
    {
        cloud_init
            .post_start
            .push(GuestCommand::Shell(hook_to_shell(&hook)));
    }
    let pre_stop = field("pre_stop")
        .map(|n| decode_hooks(r, n, &fpath("pre_stop")))
        .unwrap_or_default();

    let dns_search = field("dns_search")
        .map(|n| r.string_or_list(n, &fpath("dns_search")))
        .unwrap_or_default();
    let mut files = Vec::new();
    for (kind, key) in [
        (GuestFileKind::Config, "configs"),
        (GuestFileKind::Secret, "secrets"),
    ] {
        if let Some(n) = field(key) {
            let declared = |name: &str| cx.root.get(key).and_then(|d| d.get(name)).is_some();
            files.extend(decode_references(
                r,
                kind,
                n,
                &fpath(key),
                cx.definitions,
                &declared,
            ));
        }
    }
    let healthcheck =
        field("healthcheck").and_then(|n| decode_healthcheck(r, n, &fpath("healthcheck")));
    let stop_grace_period_ms = field("stop_grace_period")
        .and_then(|n| duration(r, n, &fpath("stop_grace_period")))
        .unwrap_or(DEFAULT_STOP_GRACE_MS);
    let protect = field("x-holo").and_then(|n| decode_x_holo(r, n, &fpath("x-holo")));
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
        dns_search,
        files,
        healthcheck,
        stop_grace_period_ms,
        pre_stop,
        profiles,
        instances: Vec::new(),
        metadata,
        protect: protect.unwrap_or(cx.default_protect),
    })
}

/// An `x-holo` mapping (on a service, or the top-level default): its
/// `protect`, when set. `protect` must be a YAML boolean: a quoted "yes" is
/// refused rather than guessed.
pub fn decode_x_holo(r: &mut Reader, node: &Node, path: &str) -> Option<bool> {
    let entries = r.mapping(node, path, keys::X_HOLO)?;
    let (_, value) = entries
        .iter()
        .find(|(k, v)| k.as_str() == Some("protect") && !v.is_null())?;
    match value.scalar_type() {
        ScalarType::Bool(protect) => Some(protect),
        _ => {
            let found = match value.as_str() {
                Some(text) => format!("{text:?}"),
                None => value.type_name().to_string(),
            };
            r.error(
                value,
                &child(path, "protect"),
                format!("must be true or false (unquoted), found {found}"),
            );
            None
        }
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
