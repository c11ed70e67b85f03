//! The holo plugin `vms`, on the SDK: one entity per compose service,
//! `vm:PROJECT/SERVICE`, from `$HOLO_RESOURCE_DIR/<project>/holos.yaml`,
//! plus `holo-vms holos ARGS` for the command line.
//!
//! - scan resolves each project (`plugin::project_file`) and reports its services
//!   with their image, replicas and ports; `depends_on` becomes `REQUIRES:`.
//!   A service that this plugin started and that is no longer declared gets
//!   `ACTION: Stopping (resource was deleted)`.
//! - apply brings every replica up with the current spec through the
//!   runtime's `up` (which recreates changed replicas and waits for health),
//!   and writes `not changed` when no QEMU process had to start. A VM that
//!   crashed or was killed is started again; with `x-holo: {protect: true}`
//!   one that was stopped (or removed) by hand is left alone with
//!   `requires --force to restore`.
//! - The scrub stops and removes a deleted service's instances; named
//!   volumes are always kept.
//! - diff shows the resolved service (YAML) against the one recorded when it
//!   was last brought up.
//!
//! The SDK state record (`$HOLO_STATE_DIR/<entity>.toml`) keeps the spec hash
//! and the resolved service of the last apply.

mod oneoff;
mod project_file;

use std::collections::BTreeMap;
use std::process::ExitCode;

use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned};
use serde::{Deserialize, Serialize};

use holos_runtime::host;
use holos_runtime::lifecycle::UpRequest;
use holos_runtime::settings::HostSettings;
use holos_runtime::state::{InstanceRecord, ProjectRecord};
use project_file::{ProjectFile, ResolvedService};

/// The plugin. `holo_plugin::run(VmsPlugin)` serves the protocol.
pub struct VmsPlugin;

/// A service's desired state, as scan hands it to apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VmSpec {
    /// The compose project (the `name:` in the file, else the directory).
    pub project: String,
    pub service: String,
    /// The project's directory below the static resource directory.
    pub file: ProjectFile,
    /// The hash of the resolved service and the volumes it mounts.
    pub spec_hash: String,
    /// The resolved service as YAML (for diff and the record).
    pub manifest: String,
}

/// What the last successful apply brought up.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct VmRecord {
    project: String,
    service: String,
    spec_hash: String,
    manifest: String,
}

/// How one instance of a service stands in the runtime's project record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InstanceState {
    Running(u32),
    /// The record has a pid, but that process is gone: it crashed or was killed.
    Crashed,
    /// The record says it was stopped (`holos stop`).
    Stopped,
    /// No record at all (never created, or `holos down`).
    Missing,
}

fn instance_state(record: Option<&ProjectRecord>, name: &str) -> InstanceState {
    match record.and_then(|r| r.instances.get(name)) {
        None => InstanceState::Missing,
        Some(InstanceRecord { pid: None, .. }) => InstanceState::Stopped,
        Some(instance) => match host::running_pid(instance.pid, &instance.spec) {
            Some(pid) => InstanceState::Running(pid),
            None => InstanceState::Crashed,
        },
    }
}

impl Plugin for VmsPlugin {
    const ID: &'static str = "vms";
    type Spec = VmSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        holos_compose::keys::SECTIONS
            .iter()
            .map(|(section, keys)| (section.to_string(), keys.to_vec()))
            .collect()
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<VmSpec>>> {
        let runtime = project_file::runtime(env)?;
        let mut found: Vec<Scanned<VmSpec>> = Vec::new();
        let mut declared_in: BTreeMap<String, String> = BTreeMap::new();
        for file in project_file::discover(env)? {
            let resolved = project_file::resolve(&runtime, &file)?;
            for service in &resolved.services {
                let id = entity_id(&resolved.project, &service.name);
                let here = file.compose.display().to_string();
                if let Some(other) = declared_in.insert(id.clone(), here.clone()) {
                    return Err(Error::new(format!(
                        "{here}: project {:?} is also declared in {other}; give one of them another `name:`",
                        resolved.project
                    )));
                }
                found.push(scanned(&resolved.project, &file, service));
            }
        }
        for id in holo_plugin::state::list(env)? {
            if !declared_in.contains_key(&id) {
                found.push(
                    Scanned::orphan(id).action("Stopping", Some("resource was deleted".into())),
                );
            }
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<VmSpec>, mode: Mode) -> Result<Outcome> {
        let runtime = project_file::runtime(env)?;
        match &entity.spec {
            Some(spec) => apply_service(env, &runtime, &entity.id, spec, mode),
            None => scrub(env, &runtime, &entity.id, mode),
        }
    }

    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<VmSpec>,
    ) -> Result<Option<(std::path::PathBuf, std::path::PathBuf)>> {
        let runtime = project_file::runtime(env)?;
        let recorded: Option<VmRecord> = holo_plugin::state::read(env, &entity.id)?;
        // The recorded service counts only while some instance of it runs.
        let current = recorded.filter(|r| {
            let record = ProjectRecord::load(&runtime.layout, &r.project)
                .ok()
                .flatten();
            record.is_some_and(|record| {
                record.instances.values().any(|i| {
                    i.spec.service == r.service && host::running_pid(i.pid, &i.spec).is_some()
                })
            })
        });
        let desired = entity.spec.as_ref().map(|s| s.manifest.as_str());
        let current = current.as_ref().map(|r| r.manifest.as_str());
        if desired == current {
            return Ok(None);
        }
        holo_plugin::report::diff_texts(env, &entity.id, desired, current).map(Some)
    }

    fn subcommand(&self, env: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
        match name {
            "holos" => Some(Ok(crate::holos::run_holos(args.iter().map(Into::into)))),
            "ensure" => Some(oneoff::ensure(self, env, args)),
            "status" => Some(oneoff::status(env, args)),
            _ => None,
        }
    }
}

/// `vm:PROJECT/SERVICE`.
pub fn entity_id(project: &str, service: &str) -> String {
    format!("vm:{project}/{service}")
}

fn scanned(project: &str, file: &ProjectFile, service: &ResolvedService) -> Scanned<VmSpec> {
    let mut with = vec![
        format!("image: {}", service.image),
        format!("replicas: {}", service.replicas),
    ];
    if !service.ports.is_empty() {
        with.push(format!("ports: {}", service.ports.join(" ")));
    }
    let mut entity = Scanned::new(
        entity_id(project, &service.name),
        VmSpec {
            project: project.to_string(),
            service: service.name.clone(),
            file: file.clone(),
            spec_hash: service.spec_hash.clone(),
            manifest: service.manifest.clone(),
        },
    )
    .source(&file.resource)
    .info("found in", file.compose.display().to_string())
    .info("with", with.join(", "));
    for dependency in &service.depends_on {
        entity = entity.requires(entity_id(project, dependency));
    }
    entity
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "instance" } else { "instances" }
}

fn apply_service(
    env: &Env,
    settings: &HostSettings,
    id: &str,
    spec: &VmSpec,
    mode: Mode,
) -> Result<Outcome> {
    // Resolve again: the runtime needs the whole manifest, with the IPs the
    // running instances already have.
    let resolved = project_file::resolve(settings, &spec.file)?;
    let Some(service) = resolved.services.iter().find(|s| s.name == spec.service) else {
        return Err(Error::new(format!(
            "{}: service {} is no longer declared; run holo apply again",
            spec.file.compose.display(),
            spec.service
        )));
    };
    let record = ProjectRecord::load(&settings.layout, &resolved.project).map_err(Error::new)?;
    let recorded: Option<VmRecord> = holo_plugin::state::read(env, id)?;
    let states: Vec<(String, InstanceState)> = service
        .instances
        .iter()
        .map(|name| (name.clone(), instance_state(record.as_ref(), name)))
        .collect();
    let running = states
        .iter()
        .filter(|(_, s)| matches!(s, InstanceState::Running(_)))
        .count();
    let same_spec = recorded
        .as_ref()
        .is_some_and(|r| r.spec_hash == service.spec_hash);
    if same_spec && running == states.len() {
        return Ok(Outcome::NotChanged);
    }
    // Someone stopped or removed a VM that this plugin had brought up.
    let by_hand: Vec<&str> = states
        .iter()
        .filter(|(_, s)| matches!(s, InstanceState::Stopped | InstanceState::Missing))
        .map(|(n, _)| n.as_str())
        .collect();
    if service.protect && mode != Mode::Force && recorded.is_some() && !by_hand.is_empty() {
        return Ok(Outcome::RequiresForceRestore);
    }
    if mode == Mode::Noop {
        let to_start = states.len() - running;
        if to_start > 0 {
            println!(
                "Would have started {to_start} {} of {}",
                plural(to_start),
                spec.service
            );
        }
        if running > 0 && !same_spec {
            println!(
                "Would have recreated {running} {} of {}",
                plural(running),
                spec.service
            );
        }
        return Ok(Outcome::Changed);
    }
    let before = pids(record.as_ref(), &service.instances);
    let request = UpRequest {
        manifest: &resolved.manifest,
        files: vec![project_file::recorded_path(env, &spec.file.compose)],
        services: vec![spec.service.clone()],
        no_wait: false,
        without_dependencies: true,
    };
    holos_runtime::lifecycle::up(settings, &request).map_err(Error::new)?;
    // Verify: every replica runs now.
    let after_record =
        ProjectRecord::load(&settings.layout, &resolved.project).map_err(Error::new)?;
    for name in &service.instances {
        if !matches!(
            instance_state(after_record.as_ref(), name),
            InstanceState::Running(_)
        ) {
            return Err(Error::new(format!(
                "{name} is not running after holos up; see holos logs {name}"
            )));
        }
    }
    holo_plugin::state::write(
        env,
        id,
        &VmRecord {
            project: resolved.project.clone(),
            service: spec.service.clone(),
            spec_hash: service.spec_hash.clone(),
            manifest: service.manifest.clone(),
        },
    )?;
    if pids(after_record.as_ref(), &service.instances) == before {
        Ok(Outcome::NotChanged)
    } else {
        Ok(Outcome::Changed)
    }
}

/// The running QEMU pid of each named instance, to tell whether `up` started any.
fn pids(record: Option<&ProjectRecord>, names: &[String]) -> Vec<Option<u32>> {
    names
        .iter()
        .map(|name| match instance_state(record, name) {
            InstanceState::Running(pid) => Some(pid),
            _ => None,
        })
        .collect()
}

/// A service that is no longer declared: stop and remove its instances,
/// keep the volumes, forget the record.
fn scrub(env: &Env, settings: &HostSettings, id: &str, mode: Mode) -> Result<Outcome> {
    let Some(recorded) = holo_plugin::state::read::<VmRecord>(env, id)? else {
        return Ok(Outcome::NotChanged);
    };
    let record = ProjectRecord::load(&settings.layout, &recorded.project).map_err(Error::new)?;
    let instances: Vec<&InstanceRecord> = record
        .iter()
        .flat_map(|r| r.instances.values())
        .filter(|i| i.spec.service == recorded.service)
        .collect();
    if mode == Mode::Noop {
        if !instances.is_empty() {
            println!(
                "Would have stopped and removed {} {} of {} (volumes are kept)",
                instances.len(),
                plural(instances.len()),
                recorded.service
            );
        }
        return Ok(Outcome::Changed);
    }
    project_file::down_service(settings, &recorded.project, &recorded.service)
        .map_err(Error::new)?;
    holo_plugin::state::remove(env, id)?;
    Ok(Outcome::Changed)
}
