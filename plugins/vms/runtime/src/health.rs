//! Health checks and `depends_on`: probing an instance over SSH with the
//! project key, waiting with Compose's semantics, and the health state that
//! `holos ps` shows.
//!
//! - The probe is the check's argv (a string `test` was already turned into
//!   `sh -c TEST` by the model), each argument quoted for the remote shell.
//! - Probes run right away and then every `start_interval` while inside
//!   `start_period`, every `interval` after it, as Compose does; each one is
//!   cut off after `timeout`. `retries` consecutive failures make the
//!   instance unhealthy, but failures inside `start_period` do not count.
//! - `HOLOS_HEALTH_BYPASS=1` skips the probe and records `bypassed`.
//! - The state is written to `instances/<p>/<inst>/health`, so it goes with
//!   the instance directory when the instance is recreated or removed.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use holo_plugin::process::{Command, Status};

use crate::error::Error;
use crate::host;
use crate::settings::HostSettings;
use crate::spec::InstanceSpec;
use crate::ssh;
use crate::state::ProjectRecord;
use holos_compose::manifest::{Healthcheck, Manifest, Service};

/// The file in the instance directory that holds the health state.
pub const HEALTH_FILE: &str = "health";
/// The shortest pause between probes, whatever `interval` says.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// How long a dependent waits for a dependency without a check to answer SSH
/// when the dependent asked for `condition: service_healthy`.
const SSHD_AS_HEALTH_WAIT: Duration = Duration::from_secs(300);

/// What the last probe of an instance said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthState {
    Starting,
    Healthy,
    Unhealthy,
    /// `HOLOS_HEALTH_BYPASS=1`: no probe ran.
    Bypassed,
}

impl HealthState {
    pub fn name(self) -> &'static str {
        match self {
            HealthState::Starting => "starting",
            HealthState::Healthy => "healthy",
            HealthState::Unhealthy => "unhealthy",
            HealthState::Bypassed => "bypassed",
        }
    }

    fn parse(text: &str) -> Option<HealthState> {
        [
            HealthState::Starting,
            HealthState::Healthy,
            HealthState::Unhealthy,
            HealthState::Bypassed,
        ]
        .into_iter()
        .find(|s| s.name() == text.trim())
    }
}

/// The recorded health of an instance; `None` when no check ever ran.
pub fn read_state(spec: &InstanceSpec) -> Option<HealthState> {
    let text = std::fs::read_to_string(spec.dir.join(HEALTH_FILE)).ok()?;
    HealthState::parse(&text)
}

fn write_state(spec: &InstanceSpec, state: HealthState) {
    // Best effort: the state is for `ps`; the wait's result is what counts.
    let _ = holo_plugin::atomic::write(
        &holo_plugin::root_fs::RootFs::unconfined(),
        &spec.dir.join(HEALTH_FILE),
        format!("{}\n", state.name()).as_bytes(),
        &holo_plugin::atomic::WriteOptions::mode(0o600),
    );
}

/// Called before an instance's QEMU starts: a health state left from an
/// earlier run (say `healthy`, before a crash) must not show in `holos ps`
/// for the new boot, so it becomes `starting`; so does a fresh instance
/// whose service has a check.
pub fn reset_for_start(spec: &InstanceSpec, has_check: bool) {
    if has_check || spec.dir.join(HEALTH_FILE).exists() {
        write_state(spec, HealthState::Starting);
    }
}

/// The outcome of one probe: whether it passed, and what it printed.
struct Probe {
    passed: bool,
    output: String,
}

fn probe(key: &Path, spec: &InstanceSpec, check: &Healthcheck) -> Probe {
    let timeout = Duration::from_millis(check.timeout_ms.max(1));
    let command = Command::new("ssh")
        .args(ssh::ssh_args(key, spec, &spec.user, false))
        .arg("--")
        .arg(ssh::remote_command_line(&check.test))
        .timeout(timeout);
    match command.run() {
        Ok(finished) => {
            let mut output = String::from_utf8_lossy(&finished.stdout).into_owned();
            output.push_str(&String::from_utf8_lossy(&finished.stderr));
            let output = output.trim().to_string();
            let output = match finished.status {
                Status::TimedOut => format!("the probe timed out after {}ms", timeout.as_millis()),
                status if output.is_empty() => format!("no output, {status}"),
                _ => output,
            };
            Probe {
                passed: finished.success(),
                output,
            }
        }
        Err(err) => Probe {
            passed: false,
            output: format!("cannot run ssh: {err}; health checks need openssh-client"),
        },
    }
}

/// Probes `spec` until it is healthy, or fails with the service, the number
/// of failed probes and the last probe's output.
pub fn wait_healthy(
    settings: &HostSettings,
    key: &Path,
    spec: &InstanceSpec,
    check: &Healthcheck,
) -> Result<(), Error> {
    if settings.health_bypass {
        write_state(spec, HealthState::Bypassed);
        return Ok(());
    }
    write_state(spec, HealthState::Starting);
    let started = Instant::now();
    let start_period = Duration::from_millis(check.start_period_ms);
    let mut failures: u32 = 0;
    let mut probes: u32 = 0;
    loop {
        let result = probe(key, spec, check);
        probes += 1;
        if result.passed {
            write_state(spec, HealthState::Healthy);
            return Ok(());
        }
        if started.elapsed() >= start_period {
            failures += 1;
        }
        if failures >= check.retries.max(1) {
            write_state(spec, HealthState::Unhealthy);
            return Err(Error::Guest(format!(
                "service {}: {} did not become healthy: {failures} consecutive failed probe{} after the start period ({probes} in all) of {}; last probe output: {}",
                spec.service,
                spec.name,
                if failures == 1 { "" } else { "s" },
                ssh::remote_command_line(&check.test),
                if result.output.is_empty() {
                    "(none)"
                } else {
                    &result.output
                }
            )));
        }
        std::thread::sleep(probe_interval(check, started.elapsed()));
    }
}

/// The pause before the next probe, `elapsed` after probing began:
/// `start_interval` inside the start period, `interval` after it.
pub fn probe_interval(check: &Healthcheck, elapsed: Duration) -> Duration {
    let interval = if elapsed < Duration::from_millis(check.start_period_ms) {
        check.start_interval_ms
    } else {
        check.interval_ms
    };
    Duration::from_millis(interval).max(MIN_INTERVAL)
}

/// How long to wait for the sshd of an instance before its health is
/// probed: at least `base`, and as long as the service's `check` would keep
/// probing (the start period, then `retries` probes), so that a slow boot
/// that the check allows for is not cut short by the sshd wait.
pub fn sshd_wait(check: Option<&Healthcheck>, base: Duration) -> Duration {
    check.map_or(base, |check| {
        let probes = u64::from(check.retries.max(1));
        let budget = check.start_period_ms.saturating_add(
            probes.saturating_mul(check.interval_ms.saturating_add(check.timeout_ms)),
        );
        base.max(Duration::from_millis(budget))
    })
}

/// The instances found healthy during one command, so that each is waited
/// for once (not again for every dependent replica).
pub type HealthyInstances = BTreeSet<String>;

/// Waits for every instance of `service` that `record` has to be healthy;
/// nothing when the service has no check.
pub fn wait_service_healthy(
    settings: &HostSettings,
    key: &Path,
    service: &Service,
    record: &ProjectRecord,
    healthy: &mut HealthyInstances,
) -> Result<(), Error> {
    let Some(check) = &service.healthcheck else {
        return Ok(());
    };
    for instance in &service.instances {
        if healthy.contains(&instance.name) {
            continue;
        }
        if let Some(running) = record.instances.get(&instance.name) {
            if !settings.health_bypass {
                eprintln!("holos: waiting for {} to be healthy", instance.name);
            }
            wait_healthy(settings, key, &running.spec, check)?;
            healthy.insert(instance.name.clone());
        }
    }
    Ok(())
}

/// Before `service` starts: each dependency must be healthy when it has a
/// healthcheck (or the dependent asks for `condition: service_healthy`, in
/// which case a dependency without a check counts as healthy once its sshd
/// answers), and otherwise started. A dependency with `required: false`
/// that is not in the project is skipped.
pub fn wait_for_dependencies(
    settings: &HostSettings,
    manifest: &Manifest,
    service: &Service,
    record: &ProjectRecord,
    key: &Path,
    healthy: &mut HealthyInstances,
) -> Result<(), Error> {
    for dependency in &service.depends_on {
        let Some(target) = manifest
            .services
            .iter()
            .find(|s| s.name == dependency.service)
        else {
            if dependency.required {
                return Err(Error::Guest(format!(
                    "service {} depends on {}, which is not in project {}",
                    service.name, dependency.service, manifest.project
                )));
            }
            continue;
        };
        for instance in &target.instances {
            let Some(running) = record.instances.get(&instance.name) else {
                if dependency.required {
                    return Err(Error::Guest(format!(
                        "service {} depends on {}, but {} was not created; start it with holos up {}",
                        service.name, target.name, instance.name, target.name
                    )));
                }
                continue;
            };
            if host::running_pid(running.pid, &running.spec).is_none() {
                if dependency.required {
                    return Err(Error::Guest(format!(
                        "service {} depends on {}, but {} is not running; start it with holos start {}",
                        service.name, target.name, instance.name, target.name
                    )));
                }
                continue;
            }
            if healthy.contains(&instance.name) {
                continue;
            }
            match &target.healthcheck {
                Some(check) => {
                    if !settings.health_bypass {
                        eprintln!(
                            "holos: {} waits for {} to be healthy",
                            service.name, instance.name
                        );
                    }
                    wait_healthy(settings, key, &running.spec, check).map_err(|e| {
                        Error::Guest(format!("{e}; {} was not started", service.name))
                    })?;
                    healthy.insert(instance.name.clone());
                }
                None if dependency.condition == "service_healthy" && !settings.health_bypass => {
                    eprintln!(
                        "holos: {} waits for {} to answer SSH ({} has no healthcheck)",
                        service.name, instance.name, target.name
                    );
                    ssh::wait_for_sshd(running.spec.ssh_port, SSHD_AS_HEALTH_WAIT).map_err(
                        |e| {
                            Error::Guest(format!(
                                "service {}: {}: {e}; {} was not started",
                                target.name, instance.name, service.name
                            ))
                        },
                    )?;
                    healthy.insert(instance.name.clone());
                }
                None => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_use_start_interval_inside_the_start_period_then_interval() {
        let check = Healthcheck {
            test: vec!["true".into()],
            interval_ms: 30_000,
            timeout_ms: 1_000,
            retries: 3,
            start_period_ms: 60_000,
            start_interval_ms: 2_000,
        };
        let at = |s| probe_interval(&check, Duration::from_secs(s));
        assert_eq!(at(0), Duration::from_secs(2));
        assert_eq!(at(59), Duration::from_secs(2));
        assert_eq!(at(60), Duration::from_secs(30));
        let no_start_period = Healthcheck {
            start_period_ms: 0,
            ..check.clone()
        };
        assert_eq!(
            probe_interval(&no_start_period, Duration::ZERO),
            Duration::from_secs(30)
        );
        let tiny = Healthcheck {
            start_interval_ms: 0,
            ..check
        };
        assert_eq!(probe_interval(&tiny, Duration::ZERO), MIN_INTERVAL);
    }

    #[test]
    fn the_sshd_wait_covers_what_the_healthcheck_allows() {
        let base = Duration::from_secs(300);
        assert_eq!(sshd_wait(None, base), base);
        let mut check = Healthcheck {
            test: vec!["true".into()],
            interval_ms: 5_000,
            timeout_ms: 20_000,
            retries: 5,
            start_period_ms: 600_000,
            start_interval_ms: 0,
        };
        // 600 s of start period, then 5 probes of up to 25 s.
        assert_eq!(sshd_wait(Some(&check), base), Duration::from_secs(725));
        check.start_period_ms = 0;
        assert_eq!(sshd_wait(Some(&check), base), base);
    }
}
