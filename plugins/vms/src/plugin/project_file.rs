//! The plugin's side of a compose project: finding the `<project>/holos.yaml`
//! resources, resolving them as the plugin must (variables only from the
//! `.env` beside the file, never from the process environment, so that a
//! shell run and a timer run resolve the same spec), the runtime settings in
//! plugin mode, and removing one service's instances for the scrub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use holo_plugin::{Env, Error, Result};
use serde::{Deserialize, Serialize};

use holos_compose::Manifest;
use holos_compose::load::Options;
use holos_compose::manifest::Service;
use holos_runtime::console_times;
use holos_runtime::host;
use holos_runtime::instance;
use holos_runtime::settings::HostSettings;
use holos_runtime::state::{LOCK_WAIT, Layout, ProjectLock, ProjectRecord};

/// The one compose file name a project directory holds.
pub const COMPOSE_FILE: &str = "holos.yaml";

/// One `<project>/holos.yaml` resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectFile {
    /// The directory name: the project name unless the file sets `name:`.
    pub directory: String,
    /// The file below `HOLO_RESOURCE_DIR` (the scan's `SOURCE:`).
    pub resource: PathBuf,
    /// The same file in the static resource directory, which is what the
    /// runtime reads: local images, bind mounts and `.env` live beside it.
    pub compose: PathBuf,
}

/// A resolved project, as the plugin reports it.
pub struct Resolved {
    pub project: String,
    pub manifest: Manifest,
    pub services: Vec<ResolvedService>,
}

/// What scan shows and apply compares for one service.
pub struct ResolvedService {
    pub name: String,
    pub image: String,
    pub replicas: u32,
    /// `HOST_IP:HOST_PORT->GUEST_PORT/tcp`, `auto` for a port holos picks.
    pub ports: Vec<String>,
    pub depends_on: Vec<String>,
    pub instances: Vec<String>,
    pub spec_hash: String,
    /// The resolved service as YAML.
    pub manifest: String,
    pub protect: bool,
}

/// The compose file as the project record keeps it: in test mode its path
/// below the root (`/usr/share/holo/vms/shop/holos.yaml`), as every
/// plugin's records hold system paths; else the path itself.
pub fn recorded_path(env: &Env, compose: &Path) -> String {
    if env.test_mode {
        let real = std::fs::canonicalize(compose).unwrap_or_else(|_| compose.to_path_buf());
        if let Some(below) = below_root(env, &real) {
            return below.display().to_string();
        }
    }
    compose.display().to_string()
}

/// A recorded compose file as `status` shows it (a system path) and the
/// host path it reads. In test mode the recorded path is below the root;
/// a host path below the root, which records held before, is taken as the
/// same file.
pub fn recorded_file(env: &Env, recorded: &str) -> (PathBuf, PathBuf) {
    let path = Path::new(recorded);
    if !env.test_mode {
        return (path.to_path_buf(), path.to_path_buf());
    }
    let below = below_root(env, path).unwrap_or_else(|| path.to_path_buf());
    let host = env.root_join(&below);
    (below, host)
}

/// `path`, a host path, as a path below the root (`/` + the rest), when it
/// is below it.
fn below_root(env: &Env, path: &Path) -> Option<PathBuf> {
    let root = std::fs::canonicalize(&env.root).ok()?;
    let rest = path.strip_prefix(&root).ok()?;
    Some(Path::new("/").join(rest))
}

/// The runtime settings in plugin mode. In test mode the state root is
/// always `$HOLO_ROOT_DIR/var/lib/holos`, even when `HOLOS_STATE_DIR` is set.
pub fn runtime(env: &Env) -> Result<HostSettings> {
    let mut runtime = HostSettings::from_env().map_err(Error::new)?;
    if env.test_mode {
        // Absolute, as QEMU and qemu-img resolve paths from elsewhere.
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        runtime.layout = Layout::new(cwd.join(env.root_join("var/lib/holos")));
    }
    runtime.system_root = env.root.clone();
    Ok(runtime)
}

/// Every `<project>/holos.yaml` below the resource directory, sorted.
pub fn discover(env: &Env) -> Result<Vec<ProjectFile>> {
    let dir = &env.resource_dir;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", dir, &e)),
    };
    let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    let mut found = Vec::new();
    for path in names {
        let origin = env.origin_of(&path);
        let Some(directory) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            return Err(Error::new(format!(
                "{}: a project directory name must be UTF-8; rename it",
                origin.display()
            )));
        };
        if !path.is_dir() {
            return Err(Error::new(format!(
                "{}: holo-vms reads projects as DIRECTORY/{COMPOSE_FILE}; move this file into a project directory",
                origin.display()
            )));
        }
        let resource = path.join(COMPOSE_FILE);
        if !resource.is_file() {
            return Err(Error::new(format!(
                "{}: the project directory has no {COMPOSE_FILE}; add one or remove the directory",
                origin.display()
            )));
        }
        // A project that a generator wrote exists only in the copy.
        let origin = env.origin_of(&resource);
        let compose = if origin.is_file() {
            origin
        } else {
            resource.clone()
        };
        // A linked holos.yaml (holo-vms ensure links the file it is given)
        // is read where it points, where the files beside it are.
        let compose = match std::fs::symlink_metadata(&compose) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::canonicalize(&compose).unwrap_or(compose)
            }
            _ => compose,
        };
        found.push(ProjectFile {
            directory,
            compose,
            resource,
        });
    }
    Ok(found)
}

/// The loader's options. The file is made absolute (the runtime keeps the
/// project directory for local images and bind mounts, whose paths must not
/// depend on the working directory of a later command).
fn options(file: &ProjectFile) -> Options {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    Options {
        files: vec![cwd.join(&file.compose)],
        project_name: None,
        // The directory names the project unless the file's `name:` does.
        default_name: Some(file.directory.clone()),
        profiles: Vec::new(),
        working_dir: cwd,
        // Only the `.env` beside the file: the spec must not depend on who
        // runs holo (a shell, a timer).
        environment: BTreeMap::new(),
    }
}

/// The compose errors, one a line, naming the file as the driver gave it
/// (relative when `HOLO_ROOT_DIR` is).
fn diagnostics(file: &ProjectFile, diags: Vec<holos_compose::Diag>) -> Error {
    let mut lines: Vec<String> = diags.iter().map(ToString::to_string).collect();
    if diags
        .iter()
        .any(|d| d.message.starts_with("variable ") && d.message.contains(" is not set"))
    {
        let dotenv = Path::new(&file.compose).with_file_name(".env");
        lines.push(format!(
            "holo-vms reads variables only from {}, the .env beside the file, never from the environment (a timer's differs from a shell's); set them there",
            dotenv.display()
        ));
    }
    Error::new(as_given(file, &lines.join("\n")))
}

/// `text` with the absolute path of the compose file written as the driver
/// gave it.
fn as_given(file: &ProjectFile, text: &str) -> String {
    let absolute = options(file).files.remove(0);
    text.replace(
        &absolute.display().to_string(),
        &file.compose.display().to_string(),
    )
}

/// Resolves the project with the IPs its running instances already have.
pub fn resolve(settings: &HostSettings, file: &ProjectFile) -> Result<Resolved> {
    let options = options(file);
    let (project, first) = holos_compose::resolve(&options).map_err(|d| diagnostics(file, d))?;
    for warning in &project.warnings {
        eprintln!(">> {warning}");
    }
    let record = ProjectRecord::load(&settings.layout, &first.project).map_err(Error::new)?;
    let manifest = match record {
        Some(record) if !record.instances.is_empty() => {
            holos_compose::resolve_with_allocations(&options, &record.allocated_ips())
                .map_err(|d| diagnostics(file, d))?
                .1
        }
        _ => first,
    };
    let mut services = Vec::new();
    for service in &manifest.services {
        services.push(ResolvedService {
            name: service.name.clone(),
            image: service.image.reference.clone(),
            replicas: service.replicas,
            ports: service.ports.iter().map(port_text).collect(),
            depends_on: service
                .depends_on
                .iter()
                .map(|d| d.service.clone())
                .collect(),
            instances: service.instances.iter().map(|i| i.name.clone()).collect(),
            spec_hash: spec_hash(&manifest, service),
            manifest: service_yaml(service),
            protect: service.protect,
        });
    }
    Ok(Resolved {
        project: manifest.project.clone(),
        manifest,
        services,
    })
}

fn port_text(port: &holos_compose::manifest::Port) -> String {
    let host = port
        .host_port
        .map_or_else(|| "auto".to_string(), |p| p.to_string());
    format!(
        "{}:{host}->{}/{}",
        port.host_ip,
        port.guest_port,
        port.protocol.name()
    )
}

/// The hash of what the service's VMs are built from: the resolved service
/// and the named volumes it mounts.
pub fn spec_hash(manifest: &Manifest, service: &Service) -> String {
    let volumes = holos_runtime::plan::mounted_volumes(manifest, service);
    let secrets = service.secret_contents();
    if secrets.is_empty() {
        holos_runtime::plan::hash_json(&(service, volumes))
    } else {
        holos_runtime::plan::hash_json(&(service, volumes, secrets))
    }
}

/// The resolved service as YAML, the text that diff compares.
pub fn service_yaml(service: &Service) -> String {
    let value = serde_json::to_value(service).unwrap_or_default();
    holos_runtime::yaml_out::to_yaml(&value)
}

/// Stops and removes every instance of `service` in `project` (as `down`
/// does for the whole project); named volumes stay. The project record goes
/// when its last instance does.
pub fn down_service(
    settings: &HostSettings,
    project: &str,
    service: &str,
) -> std::result::Result<(), String> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let Some(mut record) = ProjectRecord::load(&settings.layout, project)? else {
        return Ok(());
    };
    let key = settings.layout.ssh_key(project);
    let mut names: Vec<(usize, String)> = record
        .instances
        .values()
        .filter(|i| i.spec.service == service)
        .map(|i| (i.start_order, i.spec.name.clone()))
        .collect();
    names.sort();
    for (_, name) in names.into_iter().rev() {
        let Some(instance) = record.instances.get(&name) else {
            continue;
        };
        if let Some(pid) = host::running_pid(instance.pid, &instance.spec) {
            instance::stop(&instance.spec, pid, &key)?;
        }
        let dir = instance.spec.dir.clone();
        console_times::wait_stamper_gone(&dir, 10 * console_times::TICK);
        record.instances.remove(&name);
        record.save(&settings.layout)?;
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove {}: {e}", dir.display()));
            }
            _ => {}
        }
        println!("Removed {name}");
    }
    if record.instances.is_empty() {
        let _ = std::fs::remove_dir(settings.layout.project_instances(project));
        ProjectRecord::remove(&settings.layout, project)?;
    }
    Ok(())
}
