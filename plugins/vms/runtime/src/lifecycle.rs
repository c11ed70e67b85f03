//! Whole-project operations, each under the project lock: `up` (create,
//! recreate on a changed spec, start what is stopped), `stop`, `start` and
//! `down`. The project record is saved after every instance that changes,
//! so a crash never loses track of a running QEMU.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cloud_init::{self, SeedInputs};
use crate::console_times;
use crate::error::Error;
use crate::health;
use crate::host;
use crate::instance::{self, LaunchError, Stopped};
use crate::plan::{self, FirmwareFiles, PlanInputs, PlannedInstance};
use crate::settings::HostSettings;
use crate::spec::InstanceSpec;
use crate::ssh;
use crate::state::{InstanceRecord, LOCK_WAIT, Layout, ProjectLock, ProjectRecord, RECORD_VERSION};
use holos_compose::manifest::Manifest;

/// The default size of a named volume.
pub const DEFAULT_VOLUME_BYTES: u64 = 10 * 1024 * 1024 * 1024;
/// How often a launch is retried with a new SSH port.
const SSH_PORT_ATTEMPTS: usize = 5;
/// How long `up` waits for each guest's sshd unless `--no-wait` (longer for
/// a service whose healthcheck allows more, see [`health::sshd_wait`]).
pub const SSHD_WAIT: Duration = Duration::from_secs(300);

/// `holos up`: what to start and how long to wait.
pub struct UpRequest<'a> {
    pub manifest: &'a Manifest,
    pub files: Vec<String>,
    pub services: Vec<String>,
    pub no_wait: bool,
    /// Start only `services`, not what they depend on (the holo plugin
    /// applies each service as its own entity, dependencies first).
    pub without_dependencies: bool,
}

/// The services to start: those asked for and, transitively, what they
/// depend on; every service when none is asked for.
fn with_dependencies(manifest: &Manifest, wanted: &[String]) -> Vec<String> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut chosen: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = wanted.to_vec();
    while let Some(name) = todo.pop() {
        if !chosen.insert(name.clone()) {
            continue;
        }
        if let Some(service) = manifest.services.iter().find(|s| s.name == name) {
            todo.extend(service.depends_on.iter().map(|d| d.service.clone()));
        }
    }
    chosen.into_iter().collect()
}

pub fn up(settings: &HostSettings, request: &UpRequest) -> Result<(), Error> {
    let manifest = request.manifest;
    // What `holos validate` refuses too, before anything starts.
    if let Some(problem) = crate::preflight::check(settings, manifest, &request.services)
        .into_iter()
        .next()
    {
        return Err(Error::Request(problem));
    }
    let project = &manifest.project;
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let previous = ProjectRecord::load(&settings.layout, project)?;
    let spec_hash = plan::manifest_hash(manifest);
    if request.services.is_empty()
        && let Some(record) = previous
            .as_ref()
            .filter(|record| is_up_to_date(record, &spec_hash))
    {
        for instance in record.instances.values() {
            if let Some(pid) = host::running_pid(instance.pid, &instance.spec) {
                console_times::ensure_stamper(&instance.spec, pid);
            }
        }
        eprintln!("holos: project {project} is up to date");
        if !request.no_wait {
            wait_until_running_ready(settings, manifest, record)?;
        }
        return Ok(());
    }
    let launch = prepare_launch(settings, request, previous.as_ref())?;
    ensure_volumes(settings, manifest, &launch.planned)?;
    let mut record = updated_record(request, previous);
    let mut healthy = health::HealthyInstances::new();
    let mut guard = RollbackGuard {
        layout: &settings.layout,
        record: &mut record,
        started: Vec::new(),
    };
    if let Err(err) = launch_all(settings, request, &launch, &mut guard, &mut healthy) {
        guard.roll_back()?;
        return Err(err);
    }
    guard.keep();
    if launch.services.is_empty() {
        record.spec_hash = spec_hash;
    }
    record.save(&settings.layout)?;
    if !request.no_wait {
        wait_until_ready(settings, manifest, &launch, &record, &mut healthy)?;
    }
    Ok(())
}

/// Nothing to do: the same spec, and every recorded instance runs.
fn is_up_to_date(record: &ProjectRecord, spec_hash: &str) -> bool {
    record.spec_hash == spec_hash
        && !record.instances.is_empty()
        && record
            .instances
            .values()
            .all(|i| host::running_pid(i.pid, &i.spec).is_some())
}

/// What `up` launches, and what it launches with.
struct Launch {
    /// The services asked for, with what they depend on (empty: all).
    services: Vec<String>,
    planned: Vec<PlannedInstance>,
    firmware: Option<FirmwareFiles>,
    key: PathBuf,
    public_key: String,
}

/// The accelerator, firmware, SSH key, images and plan of an `up`.
fn prepare_launch(
    settings: &HostSettings,
    request: &UpRequest,
    previous: Option<&ProjectRecord>,
) -> Result<Launch, Error> {
    let manifest = request.manifest;
    let project = &manifest.project;
    let accel = host::detect_accel(settings.forced_accel.as_deref())?;
    let firmware = plan::find_firmware(&settings.system_root);
    let (key, public_key) = ssh::ensure_key(&settings.layout.ssh_key(project), project)?;
    let services = if request.without_dependencies {
        request.services.clone()
    } else {
        with_dependencies(manifest, &request.services)
    };
    let images =
        crate::images::cache::ensure_project_images(&settings.layout, manifest, &services)?;
    let inputs = PlanInputs {
        layout: &settings.layout,
        accel,
        firmware: firmware.as_ref(),
        previous,
        images: &images,
    };
    let planned = plan::plan(manifest, &inputs, &services, &mut host::free_port)?;
    Ok(Launch {
        services,
        planned,
        firmware,
        key,
        public_key,
    })
}

/// The project record this `up` starts from; instances the compose file
/// no longer has are reported, not removed.
fn updated_record(request: &UpRequest, previous: Option<ProjectRecord>) -> ProjectRecord {
    let manifest = request.manifest;
    let mut record = previous.unwrap_or_default();
    record.version = RECORD_VERSION;
    record.project = manifest.project.clone();
    record.files = request.files.clone();
    for name in record.instances.keys() {
        if !manifest
            .services
            .iter()
            .any(|s| s.instances.iter().any(|i| &i.name == name))
        {
            eprintln!(
                "holos: instance {name} is no longer in the compose file; `holos down` removes it"
            );
        }
    }
    record
}

/// Brings every planned instance up in order, each after its dependencies
/// are healthy (unless `--no-wait`), saving the record after each.
fn launch_all(
    settings: &HostSettings,
    request: &UpRequest,
    launch: &Launch,
    guard: &mut RollbackGuard,
    healthy: &mut health::HealthyInstances,
) -> Result<(), Error> {
    let manifest = request.manifest;
    for (order, planned_instance) in launch.planned.iter().enumerate() {
        let service = &manifest.services[planned_instance.service_index];
        if !request.no_wait {
            health::wait_for_dependencies(
                settings,
                manifest,
                service,
                guard.record,
                &launch.key,
                healthy,
            )?;
        }
        if let Some(pid) = up_instance(
            &settings.layout,
            manifest,
            planned_instance,
            order,
            guard.record,
            launch,
        )? {
            let name = &planned_instance.spec.name;
            guard.started.push(name.clone());
            eprintln!(
                "holos: {} started (pid {pid}, ssh 127.0.0.1:{})",
                planned_instance.spec.label(),
                guard.record.instances[name].spec.ssh_port
            );
        }
        guard.record.save(&settings.layout)?;
    }
    Ok(())
}

/// The instances an `up` started so far. A failed `up` leaves no QEMU of
/// its own behind: [`RollbackGuard::roll_back`] kills them and saves the
/// record, and dropping the guard unkept (a panic) kills them too.
struct RollbackGuard<'a> {
    layout: &'a Layout,
    record: &'a mut ProjectRecord,
    started: Vec<String>,
}

impl RollbackGuard<'_> {
    /// The launch succeeded: what it started stays.
    fn keep(mut self) {
        self.started.clear();
    }

    /// The launch failed: stop what it started and record that.
    fn roll_back(mut self) -> Result<(), Error> {
        self.kill_started();
        self.record.save(self.layout)
    }

    fn kill_started(&mut self) {
        for name in std::mem::take(&mut self.started) {
            if let Some(instance) = self.record.instances.get_mut(&name) {
                if let Some(pid) = host::running_pid(instance.pid, &instance.spec) {
                    host::signal(pid, Signal::SIGKILL);
                    host::wait_gone(pid, &instance.spec, Duration::from_secs(10));
                }
                instance.pid = None;
            }
        }
    }
}

impl Drop for RollbackGuard<'_> {
    fn drop(&mut self) {
        self.kill_started();
    }
}

/// Waits for every guest's sshd, then for each service's healthcheck.
fn wait_until_ready(
    settings: &HostSettings,
    manifest: &Manifest,
    launch: &Launch,
    record: &ProjectRecord,
    healthy: &mut health::HealthyInstances,
) -> Result<(), Error> {
    for planned_instance in &launch.planned {
        // The recorded spec: the launch may have moved the SSH port.
        let name = &planned_instance.spec.name;
        let port = record
            .instances
            .get(name)
            .map_or(planned_instance.spec.ssh_port, |i| i.spec.ssh_port);
        let service = &manifest.services[planned_instance.service_index];
        ssh::wait_for_sshd(
            port,
            health::sshd_wait(service.healthcheck.as_ref(), SSHD_WAIT),
        )
        .map_err(|e| Error::Guest(format!("{name}: {e}")))?;
    }
    let mut waited = BTreeSet::new();
    for planned_instance in &launch.planned {
        let service = &manifest.services[planned_instance.service_index];
        if waited.insert(service.name.as_str()) {
            health::wait_service_healthy(settings, &launch.key, service, record, healthy)?;
        }
    }
    Ok(())
}

/// `up` on a project that is up to date still waits, as `docker compose
/// up --wait` does on a running project: for every guest's sshd, then for
/// the health of each instance with a check that was not found healthy
/// (after `up --no-wait`, or an unhealthy one, which is probed again).
fn wait_until_running_ready(
    settings: &HostSettings,
    manifest: &Manifest,
    record: &ProjectRecord,
) -> Result<(), Error> {
    let key = settings.layout.ssh_key(&manifest.project);
    let mut instances: Vec<&InstanceRecord> = record.instances.values().collect();
    instances.sort_by_key(|i| i.start_order);
    let check_of = |instance: &InstanceRecord| {
        manifest
            .services
            .iter()
            .find(|s| s.name == instance.spec.service)
            .and_then(|s| s.healthcheck.as_ref())
    };
    for instance in &instances {
        ssh::wait_for_sshd(
            instance.spec.ssh_port,
            health::sshd_wait(check_of(instance), SSHD_WAIT),
        )
        .map_err(|e| Error::Guest(format!("{}: {e}", instance.spec.name)))?;
    }
    for instance in &instances {
        let Some(check) = check_of(instance) else {
            continue;
        };
        match health::read_state(&instance.spec) {
            Some(health::HealthState::Healthy) => continue,
            Some(health::HealthState::Bypassed) if settings.health_bypass => continue,
            _ => {}
        }
        if !settings.health_bypass {
            eprintln!("holos: waiting for {} to be healthy", instance.spec.name);
        }
        health::wait_healthy(settings, &key, &instance.spec, check)?;
    }
    Ok(())
}

fn ensure_volumes(
    settings: &HostSettings,
    manifest: &Manifest,
    planned: &[PlannedInstance],
) -> Result<(), Error> {
    let mut done = BTreeSet::new();
    for volume in planned.iter().flat_map(|p| &p.spec.volumes) {
        if !done.insert(volume.name.clone()) {
            continue;
        }
        let size = manifest
            .volumes
            .iter()
            .find(|v| v.name == volume.name)
            .and_then(|v| v.size_bytes)
            .unwrap_or(DEFAULT_VOLUME_BYTES);
        instance::ensure_volume(
            &settings.layout.volume(&manifest.project, &volume.name),
            size,
        )?;
    }
    Ok(())
}

/// Brings one instance to the planned state; returns the pid if it started.
fn up_instance(
    layout: &Layout,
    manifest: &Manifest,
    planned: &PlannedInstance,
    order: usize,
    record: &mut ProjectRecord,
    launch: &Launch,
) -> Result<Option<u32>, Error> {
    let Some(mut spec) = reuse_or_clear(planned, record, &launch.key)? else {
        return Ok(None);
    };
    let service = &manifest.services[planned.service_index];
    let manifest_instance = &service.instances[planned.instance_index];
    let hosts = manifest.hosts_for(manifest_instance);
    let documents = cloud_init::render(&SeedInputs {
        spec: &spec,
        service,
        hostname: &manifest_instance.hostname,
        hosts: &hosts,
        public_key: &launch.public_key,
    });
    instance::prepare(&spec, &documents, launch.firmware.as_ref())?;
    // On record before QEMU starts: an `up` killed during the launch leaves
    // an instance that `ps` shows and `down` stops (its pid file says which
    // QEMU is its).
    let name = &planned.spec.name;
    let was_recorded = record.instances.contains_key(name);
    record.instances.insert(
        name.clone(),
        InstanceRecord {
            spec_hash: planned.spec_hash.clone(),
            pid: None,
            start_order: order,
            spec: spec.clone(),
        },
    );
    record.save(layout)?;
    let launched = launch_with_ssh_retry(
        &mut spec,
        service.healthcheck.is_some(),
        &mut record_moved_port(record, layout, name),
    );
    let Some(entry) = record.instances.get_mut(name) else {
        return Err(Error::State(format!(
            "{name} vanished from the project record"
        )));
    };
    entry.spec = spec;
    match launched {
        Ok(pid) => {
            entry.pid = Some(pid);
            Ok(Some(pid))
        }
        Err(err) => {
            // A new instance that never ran is not kept on record.
            if !was_recorded {
                record.instances.remove(name);
            }
            Err(err)
        }
    }
}

/// The spec to start `planned` with, after stopping a running instance
/// whose spec changed; `None` when it runs and is up to date.
fn reuse_or_clear(
    planned: &PlannedInstance,
    record: &mut ProjectRecord,
    key: &Path,
) -> Result<Option<InstanceSpec>, Error> {
    let name = &planned.spec.name;
    let mut spec = planned.spec.clone();
    if let Some(existing) = record.instances.get(name) {
        let running = host::running_pid(existing.pid, &existing.spec);
        let unchanged = existing.spec_hash == planned.spec_hash;
        match running {
            Some(pid) if unchanged => {
                console_times::ensure_stamper(&existing.spec, pid);
                eprintln!("holos: {} is up to date", planned.spec.label());
                return Ok(None);
            }
            Some(pid) => {
                eprintln!("holos: {} changed, recreating it", planned.spec.label());
                stop_reporting(&existing.spec, pid, key)?;
                remove_instance_dir(&existing.spec.dir)?;
            }
            None if unchanged && existing.spec.root_disk().exists() => {
                // Stopped but current: start it again on its own disk.
                spec = existing.spec.clone();
            }
            None => remove_instance_dir(&existing.spec.dir)?,
        }
        if let Some(existing) = record.instances.get_mut(name) {
            existing.pid = None;
        }
    }
    Ok(Some(spec))
}

/// Launches; when the auto-allocated SSH port turns out taken, picks a new
/// one, has `record_port` put it on record, and tries again: an `up` killed
/// after the move leaves the port its QEMU uses on record.
pub(crate) fn launch_with_ssh_retry(
    spec: &mut InstanceSpec,
    has_check: bool,
    record_port: &mut dyn FnMut(&InstanceSpec) -> Result<(), Error>,
) -> Result<u32, Error> {
    health::reset_for_start(spec, has_check);
    for _ in 0..SSH_PORT_ATTEMPTS {
        let start = console_times::start_mark(spec);
        match instance::launch(spec) {
            Ok(pid) => {
                console_times::start_stamper(spec, pid, Some(start));
                return Ok(pid);
            }
            Err(LaunchError::SshPortTaken) => {
                let port = host::free_port()?;
                let taken = std::mem::replace(&mut spec.ssh_port, port);
                record_port(spec)?;
                eprintln!(
                    "holos: {}: SSH port {taken} is taken, using {port}",
                    spec.label()
                );
            }
            Err(LaunchError::Failed(message)) => return Err(Error::Instance(message)),
        }
    }
    Err(Error::Host(format!(
        "{}: no free SSH port after {SSH_PORT_ATTEMPTS} attempts",
        spec.name
    )))
}

/// What [`launch_with_ssh_retry`] calls when it moves instance `name` to a
/// new SSH port: the record takes the moved spec and is saved, before the
/// QEMU on the new port starts.
pub(crate) fn record_moved_port<'r>(
    record: &'r mut ProjectRecord,
    layout: &'r Layout,
    name: &'r str,
) -> impl FnMut(&InstanceSpec) -> Result<(), Error> + 'r {
    move |moved| {
        if let Some(entry) = record.instances.get_mut(name) {
            entry.spec.ssh_port = moved.ssh_port;
        }
        record.save(layout)
    }
}

fn remove_instance_dir(dir: &Path) -> Result<(), Error> {
    // The stamper of a QEMU just gone writes nothing into a removed directory.
    console_times::wait_stamper_gone(dir, 10 * console_times::TICK);
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::State(format!(
            "cannot remove {}: {e}",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

pub(crate) fn stop_reporting(spec: &InstanceSpec, pid: u32, key: &Path) -> Result<(), Error> {
    let how = instance::stop(spec, pid, key)?;
    console_times::wait_stamper_gone(&spec.dir, 10 * console_times::TICK);
    let text = match how {
        Stopped::Powerdown => "powered off",
        Stopped::Terminated => "terminated (SIGTERM)",
        Stopped::Killed => "killed (SIGKILL)",
    };
    eprintln!("holos: {} {text}", spec.label());
    Ok(())
}

/// The names of the record's instances of `service` (all when `None`), in
/// start order, or last started first when `reverse`.
pub(crate) fn selected(
    record: &ProjectRecord,
    service: Option<&str>,
    reverse: bool,
) -> Result<Vec<String>, Error> {
    let mut chosen: Vec<&InstanceRecord> = record
        .instances
        .values()
        .filter(|i| service.is_none_or(|s| i.spec.service == s))
        .collect();
    if let Some(service) = service
        && chosen.is_empty()
    {
        let known: BTreeSet<&str> = record
            .instances
            .values()
            .map(|i| i.spec.service.as_str())
            .collect();
        return Err(Error::Request(format!(
            "project {} has no instances of service {service:?}; it has: {}",
            record.project,
            known.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    chosen.sort_by_key(|i| i.start_order);
    if reverse {
        chosen.reverse();
    }
    Ok(chosen.iter().map(|i| i.spec.name.clone()).collect())
}

pub(crate) fn load_existing(layout: &Layout, project: &str) -> Result<ProjectRecord, Error> {
    ProjectRecord::load(layout, project)?.ok_or_else(|| {
        Error::Request(format!(
            "project {project} has no instances; create them with holos up"
        ))
    })
}

/// `holos stop [SERVICE]`, last started first.
pub fn stop(settings: &HostSettings, project: &str, service: Option<&str>) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let mut record = load_existing(&settings.layout, project)?;
    let key = settings.layout.ssh_key(project);
    for name in selected(&record, service, true)? {
        let Some(instance) = record.instances.get_mut(&name) else {
            continue;
        };
        match host::running_pid(instance.pid, &instance.spec) {
            Some(pid) => stop_reporting(&instance.spec, pid, &key)?,
            None => eprintln!("holos: {project}/{name} is not running"),
        }
        instance.pid = None;
        record.save(&settings.layout)?;
    }
    Ok(())
}

/// `holos start [SERVICE]`: launches stopped instances on their own disks.
pub fn start(settings: &HostSettings, project: &str, service: Option<&str>) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let mut record = load_existing(&settings.layout, project)?;
    for name in selected(&record, service, false)? {
        let Some(instance) = record.instances.get_mut(&name) else {
            continue;
        };
        if let Some(pid) = host::running_pid(instance.pid, &instance.spec) {
            console_times::ensure_stamper(&instance.spec, pid);
            eprintln!("holos: {project}/{name} is already running (pid {pid})");
            continue;
        }
        if !instance.spec.root_disk().exists() {
            return Err(Error::Request(format!(
                "{name} has no disk at {}; recreate it with holos up",
                instance.spec.root_disk().display()
            )));
        }
        let mut spec = instance.spec.clone();
        let pid = launch_with_ssh_retry(
            &mut spec,
            false,
            &mut record_moved_port(&mut record, &settings.layout, &name),
        )?;
        if let Some(instance) = record.instances.get_mut(&name) {
            instance.spec = spec;
            instance.pid = Some(pid);
            eprintln!(
                "holos: {project}/{name} started (pid {pid}, ssh 127.0.0.1:{})",
                instance.spec.ssh_port
            );
        }
        record.save(&settings.layout)?;
    }
    Ok(())
}

/// `holos down`: stops every instance, removes the instance directories and
/// the record. Named volumes and the project key stay.
pub fn down(settings: &HostSettings, project: &str) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let Some(mut record) = ProjectRecord::load(&settings.layout, project)? else {
        eprintln!("holos: project {project} has no instances");
        return Ok(());
    };
    let key = settings.layout.ssh_key(project);
    for name in selected(&record, None, true)? {
        let Some(instance) = record.instances.get_mut(&name) else {
            continue;
        };
        if let Some(pid) = host::running_pid(instance.pid, &instance.spec) {
            stop_reporting(&instance.spec, pid, &key)?;
        }
        instance.pid = None;
        let dir = instance.spec.dir.clone();
        record.save(&settings.layout)?;
        remove_instance_dir(&dir)?;
        eprintln!("holos: removed {project}/{name}");
    }
    let _ = std::fs::remove_dir(settings.layout.project_instances(project));
    ProjectRecord::remove(&settings.layout, project)
}

/// Instances by name, for the commands that address one.
pub fn find_instance<'a>(
    record: &'a ProjectRecord,
    name: &str,
) -> Result<&'a InstanceRecord, Error> {
    if let Some(instance) = record.instances.get(name) {
        return Ok(instance);
    }
    // A service name addresses its first instance.
    let by_service: BTreeMap<usize, &InstanceRecord> = record
        .instances
        .values()
        .filter(|i| i.spec.service == name)
        .map(|i| (i.start_order, i))
        .collect();
    by_service.into_values().next().ok_or_else(|| {
        Error::Request(format!(
            "project {} has no instance {name:?}; it has: {}",
            record.project,
            record
                .instances
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}
