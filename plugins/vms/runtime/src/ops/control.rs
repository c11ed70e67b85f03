//! The Compose verbs that act on a project's instances beyond up and down:
//! `restart`, `pause` and `unpause` (QMP `stop` and `cont`), `kill`, `rm`
//! of stopped instances, `wait`, `port` and `ssh-config`.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::console_times;
use crate::error::Error;
use crate::host;
use crate::lifecycle::{self, find_instance, load_existing, selected};
use crate::qmp::Qmp;
use crate::settings::HostSettings;
use crate::state::{InstanceRecord, LOCK_WAIT, Layout, ProjectLock, ProjectRecord};

/// `holos restart [SERVICE]`: stop, then start again on the same disks.
pub fn restart(settings: &HostSettings, project: &str, service: Option<&str>) -> Result<(), Error> {
    lifecycle::stop(settings, project, service)?;
    lifecycle::start(settings, project, service)
}

/// The running instances of `service` (all when `None`), in start order;
/// those that do not run are named on stderr and left out.
fn running<'r>(
    record: &'r ProjectRecord,
    service: Option<&str>,
) -> Result<Vec<(&'r InstanceRecord, u32)>, Error> {
    let mut found = Vec::new();
    for name in selected(record, service, false)? {
        let Some(instance) = record.instances.get(&name) else {
            continue;
        };
        match host::running_pid(instance.pid, &instance.spec) {
            Some(pid) => found.push((instance, pid)),
            None => eprintln!("holos: {} is not running", instance.spec.label()),
        }
    }
    Ok(found)
}

/// `holos pause` (QMP `stop`) and `holos unpause` (QMP `cont`): the guest's
/// CPUs halt and resume; QEMU and its memory stay.
pub fn pause(
    settings: &HostSettings,
    project: &str,
    service: Option<&str>,
    paused: bool,
) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let record = load_existing(&settings.layout, project)?;
    let (command, done) = if paused {
        ("stop", "paused")
    } else {
        ("cont", "unpaused")
    };
    for (instance, _) in running(&record, service)? {
        Qmp::connect(&instance.spec.qmp_socket(), Duration::from_secs(5))?.execute(command)?;
        eprintln!("holos: {} {done}", instance.spec.label());
    }
    Ok(())
}

/// `holos kill [-s SIGNAL] [SERVICE]`: the signal to each running QEMU.
pub fn kill(
    settings: &HostSettings,
    project: &str,
    service: Option<&str>,
    signal: Signal,
) -> Result<(), Error> {
    let record = load_existing(&settings.layout, project)?;
    for (instance, pid) in running(&record, service)? {
        host::signal(pid, signal);
        eprintln!(
            "holos: {} (QEMU pid {pid}) sent {signal}",
            instance.spec.label()
        );
    }
    Ok(())
}

/// `holos rm [SERVICE]`: removes stopped instances (their disks and their
/// place in the record); running ones are named and kept.
pub fn remove_stopped(
    settings: &HostSettings,
    project: &str,
    service: Option<&str>,
) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(&settings.layout, project, LOCK_WAIT)?;
    let mut record = load_existing(&settings.layout, project)?;
    for name in selected(&record, service, true)? {
        let Some(instance) = record.instances.get(&name) else {
            continue;
        };
        let label = instance.spec.label();
        if host::running_pid(instance.pid, &instance.spec).is_some() {
            eprintln!("holos: {label} is running, so it stays; stop it first (holos stop)");
            continue;
        }
        let dir = instance.spec.dir.clone();
        console_times::wait_stamper_gone(&dir, 10 * console_times::TICK);
        record.instances.remove(&name);
        record.save(&settings.layout)?;
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::State(format!(
                    "cannot remove {}: {e}",
                    dir.display()
                )));
            }
            _ => eprintln!("holos: removed {label}"),
        }
    }
    if record.instances.is_empty() {
        ProjectRecord::remove(&settings.layout, project)?;
    }
    Ok(())
}

/// `holos wait [SERVICE]`: returns once no selected instance runs.
pub fn wait(layout: &Layout, project: &str, service: Option<&str>) -> Result<(), Error> {
    let record = load_existing(layout, project)?;
    let names = selected(&record, service, false)?;
    loop {
        let record = ProjectRecord::load(layout, project)?.unwrap_or_default();
        let still = names.iter().any(|name| {
            record
                .instances
                .get(name)
                .is_some_and(|i| host::running_pid(i.pid, &i.spec).is_some())
        });
        if !still {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `holos port INSTANCE PORT [--protocol]`: the host address that a guest
/// port is published on, as `docker compose port` prints it.
pub fn port(
    record: &ProjectRecord,
    target: &str,
    guest_port: u16,
    protocol: &str,
) -> Result<String, Error> {
    let instance = find_instance(record, target)?;
    instance
        .spec
        .forwards
        .iter()
        .find(|f| f.guest_port == guest_port && f.protocol.name() == protocol)
        .map(|f| format!("{}:{}", f.host_ip, f.host_port))
        .ok_or_else(|| {
            Error::Request(format!(
                "{} publishes no {protocol} port {guest_port}; see its ports with holos ps",
                instance.spec.label()
            ))
        })
}

/// `holos ssh-config [INSTANCE]`: a `Host` block per instance for
/// `~/.ssh/config`, as `vagrant ssh-config` prints it.
pub fn ssh_config(
    layout: &Layout,
    record: &ProjectRecord,
    target: Option<&str>,
) -> Result<String, Error> {
    let mut instances: Vec<&InstanceRecord> = match target {
        Some(name) => vec![find_instance(record, name)?],
        None => record.instances.values().collect(),
    };
    instances.sort_by_key(|i| i.start_order);
    let key = layout.ssh_key(&record.project);
    Ok(instances
        .iter()
        .map(|i| {
            format!(
                "Host {}\n  HostName 127.0.0.1\n  User {}\n  Port {}\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  PasswordAuthentication no\n  IdentityFile {}\n  IdentitiesOnly yes\n  LogLevel FATAL\n\n",
                i.spec.name,
                i.spec.user,
                i.spec.ssh_port,
                key.display()
            )
        })
        .collect())
}

/// One row of `holos stats`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InstanceStats {
    pub project: String,
    pub instance: String,
    /// QMP's `query-status` (`running`, `paused`…).
    pub status: String,
    pub pid: u32,
    /// QEMU's CPU time over the sample, in percent of one host CPU.
    pub cpu_percent: f64,
    /// QEMU's resident memory (the guest's RAM it has touched, and QEMU's own).
    pub memory_rss_bytes: u64,
    /// The guest's memory as configured.
    pub memory_mb: u64,
}

/// QEMU's CPU time so far, in clock ticks (`utime` + `stime` of
/// `/proc/PID/stat`).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// `holos stats [SERVICE]`: each running instance's QMP status, and its
/// QEMU's CPU use over `sample` and resident memory.
pub fn stats(
    record: &ProjectRecord,
    service: Option<&str>,
    sample: Duration,
) -> Result<Vec<InstanceStats>, Error> {
    let running = running(record, service)?;
    let before: Vec<Option<u64>> = running.iter().map(|(_, pid)| cpu_ticks(*pid)).collect();
    std::thread::sleep(sample);
    let ticks_per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let mut rows = Vec::new();
    for ((instance, pid), before) in running.into_iter().zip(before) {
        let used = match (before, cpu_ticks(pid)) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / ticks_per_second,
            _ => 0.0,
        };
        let status = Qmp::connect(&instance.spec.qmp_socket(), Duration::from_secs(5))
            .and_then(|mut qmp| qmp.execute("query-status"))
            .ok()
            .and_then(|reply| {
                reply
                    .get("status")
                    .and_then(|s| s.as_str())
                    .map(String::from)
            })
            .unwrap_or_else(|| "unknown".into());
        rows.push(InstanceStats {
            project: record.project.clone(),
            instance: instance.spec.name.clone(),
            status,
            pid,
            cpu_percent: (used / sample.as_secs_f64() * 1000.0).round() / 10.0,
            memory_rss_bytes: rss_bytes(pid),
            memory_mb: instance.spec.memory_mb,
        });
    }
    Ok(rows)
}

/// The table of `holos stats`.
pub fn stats_table(rows: &[InstanceStats]) -> String {
    let mut text = format!(
        "{:<20} {:<10} {:<8} {:>7} {:>12} {:>10}\n",
        "INSTANCE", "STATUS", "PID", "CPU %", "MEM USAGE", "MEM LIMIT"
    );
    for row in rows {
        text.push_str(&format!(
            "{:<20} {:<10} {:<8} {:>7.1} {:>12} {:>10}\n",
            row.instance,
            row.status,
            row.pid,
            row.cpu_percent,
            super::volumes::human_bytes(row.memory_rss_bytes),
            format!("{} MiB", row.memory_mb)
        ));
    }
    text
}
