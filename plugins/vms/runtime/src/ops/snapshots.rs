//! `holos snapshots create|list|restore|rm|export INSTANCE [NAME]`:
//! internal qcow2 snapshots of an instance's root disk.
//!
//! A running instance is snapshotted online with QMP
//! `blockdev-snapshot-internal-sync` on the `root` drive: atomic and
//! instant, disk only (crash-consistent, as after a power cut), and it works
//! with passed-through devices, which block the RAM dump of `snapshot-save`.
//! A stopped instance uses `qemu-img snapshot`. Named volumes are not in
//! the snapshot; each snapshot records their size and modification time in
//! `snapshots.json` beside the root disk, so that `restore` can refuse while
//! a volume has changed since (`--force` restores anyway).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use holo_plugin::process::Command;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Error;
use crate::host;
use crate::instance::qemu_img_program;
use crate::lifecycle::{find_instance, launch_with_ssh_retry, record_moved_port, stop_reporting};
use crate::qmp::Qmp;
use crate::settings::HostSettings;
use crate::spec::InstanceSpec;
use crate::state::{LOCK_WAIT, Layout, ProjectLock, ProjectRecord};

/// How long `qemu-img convert` of a whole disk may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3600);

/// One snapshot of a root disk.
#[derive(Debug, Serialize)]
pub struct SnapshotInfo {
    pub name: String,
    /// qcow2's snapshot id.
    pub id: String,
    /// Seconds since the epoch, UTC.
    pub date: u64,
    /// Bytes of saved VM state; 0 for the disk-only snapshots holos takes.
    pub vm_state_size: u64,
    /// Volumes of the instance that changed since the snapshot (or all of
    /// them when the snapshot has no record, as one taken by hand).
    pub volumes_changed: Vec<String>,
}

/// What `snapshots.json` keeps per snapshot.
#[derive(Debug, Default, Serialize, Deserialize)]
struct SnapshotRecord {
    volumes: BTreeMap<String, VolumeStamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct VolumeStamp {
    size: u64,
    mtime_ns: i128,
}

fn stamp(path: &Path) -> Option<VolumeStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(VolumeStamp {
        size: meta.size(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    })
}

fn records_path(spec: &InstanceSpec) -> PathBuf {
    spec.dir.join("snapshots.json")
}

fn load_records(spec: &InstanceSpec) -> BTreeMap<String, SnapshotRecord> {
    std::fs::read(records_path(spec))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save_records(
    spec: &InstanceSpec,
    records: &BTreeMap<String, SnapshotRecord>,
) -> Result<(), Error> {
    let path = records_path(spec);
    let text = serde_json::to_vec_pretty(records)
        .map_err(|e| Error::State(format!("cannot encode {}: {e}", path.display())))?;
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, &path))
        .map_err(|e| Error::State(format!("cannot write {}: {e}", path.display())))
}

/// The volumes of `spec` whose file differs from `record` (every volume
/// when there is no record).
fn changed_volumes(spec: &InstanceSpec, record: Option<&SnapshotRecord>) -> Vec<String> {
    spec.volumes
        .iter()
        .filter(|v| !v.read_only)
        .filter(|v| {
            record
                .and_then(|r| r.volumes.get(&v.name))
                .is_none_or(|then| stamp(&v.path).as_ref() != Some(then))
        })
        .map(|v| v.name.clone())
        .collect()
}

/// A snapshot name qemu-img and QMP take as a name: not all digits (that
/// would be read as an id), and plain characters.
pub fn check_name(name: &str) -> Result<(), Error> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if name.is_empty() || !plain || name.len() > 64 || name.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::Request(format!(
            "snapshot name {name:?} is not usable; use up to 64 letters, digits, '.', '_' or '-', not only digits"
        )));
    }
    Ok(())
}

pub(crate) fn run_qemu_img(command: Command) -> Result<Vec<u8>, Error> {
    let finished = command.run().map_err(|e| {
        Error::Host(format!(
            "{e}; holos needs qemu-img (Debian package qemu-utils)"
        ))
    })?;
    if !finished.success() {
        return Err(Error::Instance(format!(
            "{} failed: {}",
            command.command_line(),
            finished.stderr_tail(5).trim()
        )));
    }
    Ok(finished.stdout)
}

pub(crate) fn qemu_img(args: &[&str], disk: &Path) -> Command {
    Command::new(qemu_img_program())
        .args(args)
        .arg(disk)
        .timeout(Duration::from_secs(120))
}

/// The internal snapshots of a qcow2 file, oldest first, without
/// `volumes_changed`. `-U` reads the image while a running QEMU holds its
/// lock.
pub(crate) fn image_snapshots(disk: &Path) -> Result<Vec<SnapshotInfo>, Error> {
    let out = run_qemu_img(qemu_img(
        &["info", "-U", "--output=json", "-f", "qcow2"],
        disk,
    ))?;
    let info: serde_json::Value = serde_json::from_slice(&out)
        .map_err(|e| Error::Instance(format!("qemu-img info printed no JSON: {e}")))?;
    let mut list: Vec<SnapshotInfo> = info["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| SnapshotInfo {
            name: s["name"].as_str().unwrap_or_default().to_string(),
            id: s["id"].as_str().unwrap_or_default().to_string(),
            date: s["date-sec"].as_u64().unwrap_or(0),
            vm_state_size: s["vm-state-size"].as_u64().unwrap_or(0),
            volumes_changed: Vec::new(),
        })
        .collect();
    list.sort_by_key(|s| (s.date, s.id.parse::<u64>().unwrap_or(0)));
    Ok(list)
}

/// The snapshots in the root disk, oldest first.
fn read_snapshots(spec: &InstanceSpec) -> Result<Vec<SnapshotInfo>, Error> {
    let disk = spec.root_disk();
    if !disk.exists() {
        return Err(Error::Request(format!(
            "{} has no disk at {}; recreate it with holos up",
            spec.name,
            disk.display()
        )));
    }
    let records = load_records(spec);
    let mut list = image_snapshots(&disk)?;
    for snapshot in &mut list {
        snapshot.volumes_changed = changed_volumes(spec, records.get(&snapshot.name));
    }
    Ok(list)
}

fn instance_spec(layout: &Layout, project: &str, instance: &str) -> Result<InstanceSpec, Error> {
    let record = ProjectRecord::load(layout, project)?.ok_or_else(|| {
        Error::Request(format!(
            "project {project} has no instances; create them with holos up"
        ))
    })?;
    Ok(find_instance(&record, instance)?.spec.clone())
}

fn unknown(spec: &InstanceSpec, name: &str, list: &[SnapshotInfo]) -> Error {
    let known: Vec<&str> = list.iter().map(|s| s.name.as_str()).collect();
    Error::Request(if known.is_empty() {
        format!("{} has no snapshot {name:?}; it has none", spec.name)
    } else {
        format!(
            "{} has no snapshot {name:?}; it has: {}",
            spec.name,
            known.join(", ")
        )
    })
}

/// `holos snapshots list INSTANCE`.
pub fn list(layout: &Layout, project: &str, instance: &str) -> Result<Vec<SnapshotInfo>, Error> {
    read_snapshots(&instance_spec(layout, project, instance)?)
}

/// `holos snapshots create INSTANCE [NAME]`; returns the name.
pub fn create(
    layout: &Layout,
    project: &str,
    instance: &str,
    name: Option<&str>,
) -> Result<String, Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let record = ProjectRecord::load(layout, project)?.ok_or_else(|| {
        Error::Request(format!(
            "project {project} has no instances; create them with holos up"
        ))
    })?;
    let found = find_instance(&record, instance)?;
    let spec = &found.spec;
    let name = match name {
        Some(name) => name.to_string(),
        None => format!("{}-{}", spec.name, now_seconds()),
    };
    check_name(&name)?;
    let existing = read_snapshots(spec)?;
    if existing.iter().any(|s| s.name == name) {
        return Err(Error::Request(format!(
            "{} already has a snapshot {name}; pick another name or remove it with holos snapshots rm {} {name}",
            spec.name, spec.name
        )));
    }
    let volumes = spec
        .volumes
        .iter()
        .filter_map(|v| stamp(&v.path).map(|s| (v.name.clone(), s)))
        .collect();
    match host::running_pid(found.pid, spec) {
        Some(_) => {
            let mut qmp = Qmp::connect(&spec.qmp_socket(), Duration::from_secs(30))?;
            qmp.execute_with(
                "blockdev-snapshot-internal-sync",
                json!({ "device": "root", "name": name }),
            )?;
        }
        None => {
            run_qemu_img(qemu_img(&["snapshot", "-c", &name], &spec.root_disk()))?;
        }
    }
    let mut records = load_records(spec);
    records.insert(name.clone(), SnapshotRecord { volumes });
    save_records(spec, &records)?;
    Ok(name)
}

/// `holos snapshots rm INSTANCE NAME`.
pub fn remove(layout: &Layout, project: &str, instance: &str, name: &str) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let record = ProjectRecord::load(layout, project)?.unwrap_or_default();
    let found = find_instance(&record, instance)?;
    let spec = &found.spec;
    let existing = read_snapshots(spec)?;
    if !existing.iter().any(|s| s.name == name) {
        return Err(unknown(spec, name, &existing));
    }
    match host::running_pid(found.pid, spec) {
        Some(_) => {
            let mut qmp = Qmp::connect(&spec.qmp_socket(), Duration::from_secs(30))?;
            qmp.execute_with(
                "blockdev-snapshot-delete-internal-sync",
                json!({ "device": "root", "name": name }),
            )?;
        }
        None => {
            run_qemu_img(qemu_img(&["snapshot", "-d", name], &spec.root_disk()))?;
        }
    }
    let mut records = load_records(spec);
    if records.remove(name).is_some() {
        save_records(spec, &records)?;
    }
    Ok(())
}

/// `holos snapshots restore INSTANCE NAME [--force]`: stops a running
/// instance, reverts its root disk, and starts it again.
pub fn restore(
    settings: &HostSettings,
    project: &str,
    instance: &str,
    name: &str,
    force: bool,
) -> Result<(), Error> {
    let layout = &settings.layout;
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let mut record = ProjectRecord::load(layout, project)?.ok_or_else(|| {
        Error::Request(format!(
            "project {project} has no instances; create them with holos up"
        ))
    })?;
    let key = find_instance(&record, instance)?.spec.name.clone();
    let existing = read_snapshots(&record.instances[&key].spec)?;
    let Some(snapshot) = existing.iter().find(|s| s.name == name) else {
        return Err(unknown(&record.instances[&key].spec, name, &existing));
    };
    if !snapshot.volumes_changed.is_empty() && !force {
        return Err(Error::Request(format!(
            "volume{} {} of {key} changed since snapshot {name}, and restoring the root disk would not bring {} back; pass --force to restore the root disk anyway",
            if snapshot.volumes_changed.len() == 1 {
                ""
            } else {
                "s"
            },
            snapshot.volumes_changed.join(", "),
            if snapshot.volumes_changed.len() == 1 {
                "it"
            } else {
                "them"
            },
        )));
    }
    let gone = || Error::State(format!("{key} left the record of project {project}"));
    let entry = record.instances.get_mut(&key).ok_or_else(gone)?;
    let was_running = match host::running_pid(entry.pid, &entry.spec) {
        Some(pid) => {
            stop_reporting(&entry.spec, pid, &layout.ssh_key(project))?;
            entry.pid = None;
            true
        }
        None => false,
    };
    record.save(layout)?;
    let entry = record.instances.get_mut(&key).ok_or_else(gone)?;
    run_qemu_img(qemu_img(&["snapshot", "-a", name], &entry.spec.root_disk()))?;
    eprintln!("holos: {key}: root disk restored to snapshot {name}");
    if was_running {
        let mut spec = entry.spec.clone();
        let pid = launch_with_ssh_retry(
            &mut spec,
            false,
            &mut record_moved_port(&mut record, layout, &key),
        )?;
        let entry = record.instances.get_mut(&key).ok_or_else(gone)?;
        entry.spec = spec;
        entry.pid = Some(pid);
        eprintln!(
            "holos: {} started (pid {pid}, ssh 127.0.0.1:{})",
            entry.spec.label(),
            entry.spec.ssh_port
        );
        record.save(layout)?;
    }
    Ok(())
}

/// `holos snapshots export INSTANCE NAME [-o FILE]`: the disk as it was at
/// the snapshot, base image included, as one qcow2 without backing file.
pub fn export(
    layout: &Layout,
    project: &str,
    instance: &str,
    name: &str,
    output: &Path,
) -> Result<(), Error> {
    let spec = instance_spec(layout, project, instance)?;
    let existing = read_snapshots(&spec)?;
    if !existing.iter().any(|s| s.name == name) {
        return Err(unknown(&spec, name, &existing));
    }
    if output.exists() {
        return Err(Error::Request(format!(
            "{} exists; remove it or pass another -o FILE",
            output.display()
        )));
    }
    let selector = format!("snapshot.name={name}");
    let command = Command::new(qemu_img_program())
        .args([
            "convert", "-U", "-f", "qcow2", "-O", "qcow2", "-l", &selector,
        ])
        .arg(spec.root_disk())
        .arg(output)
        .timeout(EXPORT_TIMEOUT);
    run_qemu_img(command).map(|_| ())
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub use holo_plugin::common::utc_date;

/// `holos snapshots list`.
pub fn table(list: &[SnapshotInfo]) -> String {
    let mut out = format!(
        "{:<32} {:<4} {:<20} VOLUMES CHANGED SINCE\n",
        "NAME", "ID", "DATE (UTC)"
    );
    for s in list {
        out.push_str(&format!(
            "{:<32} {:<4} {:<20} {}\n",
            s.name,
            s.id,
            utc_date(s.date),
            if s.volumes_changed.is_empty() {
                "-".to_string()
            } else {
                s.volumes_changed.join(",")
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00");
        assert_eq!(utc_date(1_795_647_434), "2026-11-25 22:57:14");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00:00");
    }

    #[test]
    fn names_that_qemu_would_read_as_ids_or_options_are_refused() {
        assert!(check_name("before-upgrade_1.2").is_ok());
        for bad in ["", "12", "a b", "a,b", "x/y", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
