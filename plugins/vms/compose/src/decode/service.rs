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
use crate::dockerfile::{Provisioning, shell_quote};
use crate::images;
use crate::keys;
use crate::load::Environment;
use crate::load::dotenv::read_env_file;
use crate::load::interpolate::Lookup;
use crate::manifest::{
    CloudInit, Dependency, GuestCommand, GuestFile, GuestFileKind, HostEntry, Image, Metadata,
    Service,
};
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

/// A service's mapping and its key path, for the steps that each decode a
/// few of its fields.
struct Fields<'n> {
    node: &'n Node,
    path: &'n str,
}

impl<'n> Fields<'n> {
    /// The field `key`, unless absent or null.
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.node.get(key).filter(|n| !n.is_null())
    }

    /// The key path of the field `key`.
    fn path(&self, key: &str) -> String {
        child(self.path, key)
    }
}

/// The service's image and what its alias implies.
struct ImageChoice {
    image: Option<Image>,
    /// The alias's login user, for services that set none.
    default_user: Option<String>,
    /// The alias's smallest workable memory, in MiB.
    min_memory: u64,
}

pub fn decode_service(r: &mut Reader, name: &str, node: &Node, cx: &Context) -> Option<Service> {
    let path = format!("services.{name}");
    let entries = r.mapping_of(node, &path, &[keys::SERVICE_MAPPED, keys::SERVICE_METADATA])?;
    let f = Fields { node, path: &path };

    let mut metadata = service_metadata(entries);
    if let Some(extends) = node.get("extends")
        && extends.as_map().is_some()
    {
        r.mapping(extends, &f.path("extends"), keys::EXTENDS);
    }

    let provisioning = decode_build(r, node, &path);
    let choice = decode_image(r, &f, provisioning.as_ref());

    let replicas = decode_replicas(r, node, &path);
    let vm = decode_vm(r, node, &path, choice.min_memory);
    let ports = f
        .get("ports")
        .map(|n| decode_ports(r, n, &f.path("ports")))
        .unwrap_or_default();
    let mounts = f
        .get("volumes")
        .map(|n| decode_volumes(r, n, &f.path("volumes"), cx.volume_names, &mut metadata))
        .unwrap_or_default();
    let devices = f
        .get("devices")
        .map(|n| decode_devices(r, n, &f.path("devices"), &mut metadata))
        .unwrap_or_default();
    let depends_on = f
        .get("depends_on")
        .map(|n| decode_depends_on(r, n, &f.path("depends_on")))
        .unwrap_or_default();

    let labels = decode_labels(r, &f, cx.environment);
    let environment = decode_environment(r, &f, provisioning.as_ref(), cx.environment);
    let extra_hosts = f
        .get("extra_hosts")
        .map(|n| decode_extra_hosts(r, n, &f.path("extra_hosts")))
        .unwrap_or_default();
    let cloud_init = decode_guest_setup(r, &f, provisioning.as_ref(), choice.default_user);
    let pre_stop = f
        .get("pre_stop")
        .map(|n| decode_hooks(r, n, &f.path("pre_stop")))
        .unwrap_or_default();

    let dns_search = f
        .get("dns_search")
        .map(|n| r.string_or_list(n, &f.path("dns_search")))
        .unwrap_or_default();
    let files = decode_guest_files(r, &f, cx);
    let healthcheck = f
        .get("healthcheck")
        .and_then(|n| decode_healthcheck(r, n, &f.path("healthcheck")));
    let stop_grace_period_ms = f
        .get("stop_grace_period")
        .and_then(|n| duration(r, n, &f.path("stop_grace_period")))
        .unwrap_or(DEFAULT_STOP_GRACE_MS);
    let protect = f
        .get("x-holo")
        .and_then(|n| decode_x_holo(r, n, &f.path("x-holo"), keys::X_HOLO));
    let profiles = f
        .get("profiles")
        .map(|n| r.strings(n, &f.path("profiles")))
        .unwrap_or_default();

    let mut vm = vm?;
    if !devices.is_empty() {
        vm.uefi = true;
    }
    Some(Service {
        name: name.to_string(),
        image: choice.image?,
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

/// The fields holos keeps as metadata, as JSON.
fn service_metadata(entries: &[(Node, Node)]) -> Metadata {
    let mut metadata = BTreeMap::new();
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        // deploy and build carry Swarm and BuildKit fields holos keeps as
        // metadata beside the parts it maps.
        if keys::SERVICE_METADATA.contains(&key) || key == "deploy" || key == "build" {
            metadata.insert(key.to_string(), value.to_json());
        }
    }
    metadata
}

/// `image_os` or `image_format`: one of `allowed`, else `complaint`.
fn decode_choice(
    r: &mut Reader,
    f: &Fields,
    key: &str,
    allowed: &[&str],
    complaint: impl FnOnce(&str) -> String,
) -> Option<String> {
    let n = f.get(key)?;
    let value = r.string(n, &f.path(key))?;
    if allowed.contains(&value.as_str()) {
        Some(value)
    } else {
        r.error(n, &f.path(key), complaint(&value));
        None
    }
}

/// The image: explicit, else the Dockerfile's FROM; a local disk image or
/// an alias.
fn decode_image(r: &mut Reader, f: &Fields, provisioning: Option<&Provisioning>) -> ImageChoice {
    let image_node = f.get("image");
    let image_text = match image_node {
        Some(n) => r.string(n, &f.path("image")),
        None => provisioning.and_then(|p| p.base_image.clone()),
    };
    let image_os = decode_choice(r, f, "image_os", &images::OS_FAMILIES, |os| {
        format!("must be systemd or openrc, found {os:?}")
    });
    let image_format = decode_choice(r, f, "image_format", &images::FORMATS, |_| {
        format!("must be one of {}", images::FORMATS.join(", "))
    });
    let mut choice = ImageChoice {
        image: None,
        default_user: None,
        min_memory: 0,
    };
    match image_text {
        None => {
            // A build that failed has already been reported.
            if f.node.get("build").is_none() && f.node.get("dockerfile").is_none() {
                r.error(
                    f.node,
                    f.path,
                    "needs image: (an alias such as ubuntu:noble, or a local disk image) or build:",
                );
            }
        }
        Some(text) if images::is_image_path(&text) => {
            let format =
                image_format.or_else(|| images::format_from_extension(&text).map(str::to_string));
            if format.is_none()
                && let Some(n) = image_node
            {
                r.error(
                    n,
                    &f.path("image"),
                    "cannot infer the image format from the extension; set image_format",
                );
            }
            choice.image = Some(Image {
                reference: text.clone(),
                alias: None,
                tag: None,
                path: Some(text),
                format: format.unwrap_or_default(),
                os: image_os.unwrap_or_else(|| "systemd".into()),
            });
        }
        Some(text) => match images::resolve_alias(&text) {
            Ok((mut image, alias)) => {
                choice.default_user = Some(alias.user.clone());
                choice.min_memory = alias.min_memory_mb;
                if let Some(os) = image_os {
                    image.os = os;
                }
                if let Some(format) = image_format {
                    image.format = format;
                }
                choice.image = Some(image);
            }
            Err(e) => match image_node {
                Some(n) => r.error(n, &f.path("image"), e),
                None => r.error(f.node, &f.path("build"), format!("Dockerfile FROM: {e}")),
            },
        },
    }
    choice
}

/// `label_file` then `labels`, the later winning.
fn decode_labels(r: &mut Reader, f: &Fields, env: &Environment) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if let Some(n) = f.get("label_file") {
        for file in r.string_or_list(n, &f.path("label_file")) {
            match read_env_file(Path::new(&file), false, env) {
                Ok(entries) => labels.extend(
                    entries
                        .into_iter()
                        .map(|e| (e.key, e.value.unwrap_or_default())),
                ),
                Err(e) => r.error(
                    n,
                    &f.path("label_file"),
                    format!("{e}; fix the path or the file"),
                ),
            }
        }
    }
    if let Some(n) = f.get("labels") {
        for (k, v) in r.key_values(n, &f.path("labels"), &['=']) {
            labels.insert(k, v.unwrap_or_default());
        }
    }
    labels
}

/// The Dockerfile's ENV, then `env_file`, then `environment`.
fn decode_environment(
    r: &mut Reader,
    f: &Fields,
    provisioning: Option<&Provisioning>,
    env: &Environment,
) -> BTreeMap<String, String> {
    let mut environment = BTreeMap::new();
    if let Some(p) = provisioning {
        environment.extend(p.environment.iter().cloned());
    }
    if let Some(n) = f.get("env_file") {
        decode_env_files(r, n, &f.path("env_file"), env, &mut environment);
    }
    if let Some(n) = f.get("environment") {
        for (k, v) in r.key_values(n, &f.path("environment"), &['=']) {
            // A bare KEY takes its value from the environment; unset ones are omitted.
            match v.or_else(|| env.lookup(&k)) {
                Some(v) => {
                    environment.insert(k, v);
                }
                None => {
                    environment.remove(&k);
                }
            }
        }
    }
    environment
}

/// The guest's cloud-init: `cloud_init`, the user and host names, the
/// Dockerfile's files and commands, the command (entrypoint and command,
/// in `working_dir`) and `post_start`.
fn decode_guest_setup(
    r: &mut Reader,
    f: &Fields,
    provisioning: Option<&Provisioning>,
    default_user: Option<String>,
) -> CloudInit {
    let mut cloud_init = decode_cloud_init(r, f.get("cloud_init"), &f.path("cloud_init"));
    let explicit_runcmd = std::mem::take(&mut cloud_init.runcmd);
    if cloud_init.user.is_empty() {
        cloud_init.user = f
            .get("user")
            .and_then(|n| r.string(n, &f.path("user")))
            .or(default_user)
            .unwrap_or_else(|| DEFAULT_USER.into());
    }
    if cloud_init.hostname.is_none() {
        cloud_init.hostname = f
            .get("hostname")
            .and_then(|n| r.string(n, &f.path("hostname")));
    }
    if let Some(domain) = f
        .get("domainname")
        .and_then(|n| r.string(n, &f.path("domainname")))
        && let Some(host) = &cloud_init.hostname
    {
        cloud_init.fqdn = Some(format!("{host}.{domain}"));
    }
    let working_dir = f
        .get("working_dir")
        .and_then(|n| r.string(n, &f.path("working_dir")));
    if let Some(p) = provisioning {
        cloud_init
            .write_files
            .splice(0..0, p.write_files.iter().cloned());
        cloud_init.runcmd.extend(p.runcmd.iter().cloned());
    }
    if let Some(cmd) = decode_command(r, f) {
        let cmd = match &working_dir {
            Some(dir) => format!("cd {} && {cmd}", shell_quote(dir)),
            None => cmd,
        };
        cloud_init.command = Some(cmd);
    }
    cloud_init.runcmd.extend(explicit_runcmd);
    for hook in f
        .get("post_start")
        .map(|n| decode_hooks(r, n, &f.path("post_start")))
        .unwrap_or_default()
    {
        cloud_init
            .post_start
            .push(GuestCommand::Shell(hook_to_shell(&hook)));
    }
    cloud_init
}

/// `entrypoint` and `command` joined into one shell line.
fn decode_command(r: &mut Reader, f: &Fields) -> Option<String> {
    let entrypoint = f
        .get("entrypoint")
        .and_then(|n| shell_words(r, n, &f.path("entrypoint")));
    let command = f
        .get("command")
        .and_then(|n| shell_words(r, n, &f.path("command")));
    match (entrypoint, command) {
        (Some(e), Some(c)) => Some(format!("{e} {c}")),
        (Some(e), None) => Some(e),
        (None, Some(c)) => Some(c),
        (None, None) => None,
    }
}

/// The service's `configs` and `secrets` references.
fn decode_guest_files(r: &mut Reader, f: &Fields, cx: &Context) -> Vec<GuestFile> {
    let mut files = Vec::new();
    for (kind, key) in [
        (GuestFileKind::Config, "configs"),
        (GuestFileKind::Secret, "secrets"),
    ] {
        if let Some(n) = f.get(key) {
            let declared = |name: &str| cx.root.get(key).and_then(|d| d.get(name)).is_some();
            files.extend(decode_references(
                r,
                kind,
                n,
                &f.path(key),
                cx.definitions,
                &declared,
            ));
        }
    }
    files
}

/// An `x-holo` mapping (on a service, or the top-level default): its
/// `protect`, when set. `protect` must be a YAML boolean: a quoted "yes" is
/// refused rather than guessed.
pub fn decode_x_holo(r: &mut Reader, node: &Node, path: &str, known: &[&str]) -> Option<bool> {
    let entries = r.mapping(node, path, known)?;
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

/// The host's address as a guest on QEMU's user network sees it.
pub const HOST_GATEWAY: &str = "10.0.2.2";

/// The addresses of one `extra_hosts` value: several separated by commas,
/// an IPv6 one in brackets or not, `host-gateway` for the host.
fn host_addresses(text: &str) -> Result<Vec<String>, String> {
    text.split(',')
        .map(|part| {
            let part = part.trim();
            let bare = part
                .strip_prefix('[')
                .and_then(|p| p.strip_suffix(']'))
                .unwrap_or(part);
            if bare == "host-gateway" {
                Ok(HOST_GATEWAY.to_string())
            } else if bare.parse::<std::net::IpAddr>().is_ok() {
                Ok(bare.to_string())
            } else {
                Err(format!(
                    "{part:?} is not an IP address or host-gateway; write host=1.2.3.4 (several separated by commas)"
                ))
            }
        })
        .collect()
}

fn decode_extra_hosts(r: &mut Reader, node: &Node, path: &str) -> Vec<HostEntry> {
    let mut out: Vec<HostEntry> = Vec::new();
    let mut add =
        |r: &mut Reader, at: &Node, at_path: &str, host: String, text: &str| match host_addresses(
            text,
        ) {
            Ok(addresses) => out.extend(addresses.into_iter().map(|ip| HostEntry {
                ip,
                names: vec![host.clone()],
            })),
            Err(message) => r.error(at, at_path, message),
        };
    match &node.kind {
        Kind::Map(entries) => {
            for (k, v) in entries {
                let host = k.as_str().unwrap_or_default().to_string();
                let hpath = child(path, &host);
                match &v.kind {
                    Kind::Seq(items) => {
                        let texts = r.strings(v, &hpath);
                        for (i, (text, item_node)) in texts.iter().zip(items).enumerate() {
                            add(r, item_node, &item(&hpath, i), host.clone(), text);
                        }
                    }
                    _ => {
                        if let Some(ip) = r.string(v, &hpath) {
                            add(r, v, &hpath, host, &ip);
                        }
                    }
                }
            }
        }
        _ => {
            for (i, text) in r.strings(node, path).into_iter().enumerate() {
                let at = node.as_seq().and_then(|s| s.get(i)).unwrap_or(node);
                match text.find('=').or_else(|| text.find(':')) {
                    Some(sep) => add(
                        r,
                        at,
                        &item(path, i),
                        text[..sep].to_string(),
                        &text[sep + 1..],
                    ),
                    None => r.error(at, &item(path, i), "must be host=ip or host:ip"),
                }
            }
        }
    }
    out
}
