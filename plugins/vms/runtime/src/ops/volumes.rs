//! `holos volumes ls|rm|export|import|snapshot|snapshots|snapshot-rm|
//! snapshot-restore|resize`: the project's named volumes
//! (`volumes/<p>/<name>.qcow2`), which `down` always keeps.
//!
//! A volume is in use while an instance in the project record attaches it,
//! running or stopped: `start` would attach it again. `rm` refuses such a
//! volume; `holos down` removes the instances (and keeps the volume).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use holo_plugin::process::Command;
use serde::Serialize;
use serde_json::json;

use crate::error::Error;
use crate::host;
use crate::instance::qemu_img_program;
use crate::ops::snapshots::{SnapshotInfo, check_name, image_snapshots, qemu_img, run_qemu_img};
use crate::qmp::Qmp;
use crate::spec::{InstanceSpec, VolumeAttachment};
use crate::ssh;
use crate::state::{LOCK_WAIT, Layout, ProjectLock, ProjectRecord};
use holo_plugin::command::shell_quote;

/// How long copying a whole volume may take.
const LONG_COPY: Duration = Duration::from_secs(3600);

/// One volume file and who uses it.
#[derive(Debug, Serialize)]
pub struct VolumeInfo {
    pub name: String,
    pub path: PathBuf,
    /// Bytes the qcow2 file takes on disk (allocated blocks, not its size
    /// as the guest sees it).
    pub disk_bytes: u64,
    pub used_by: Vec<User>,
}

/// An instance that attaches a volume.
#[derive(Debug, Serialize)]
pub struct User {
    pub instance: String,
    pub running: bool,
}

impl User {
    fn describe(&self) -> String {
        let state = if self.running { "running" } else { "stopped" };
        format!("{} ({state})", self.instance)
    }
}

/// The project's volumes, sorted by name.
pub fn list(layout: &Layout, project: &str) -> Result<Vec<VolumeInfo>, Error> {
    let record = ProjectRecord::load(layout, project)?;
    let dir = layout.project_volumes(project);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::Request(format!(
                "cannot read {}: {e}",
                dir.display()
            )));
        }
    };
    let mut volumes = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".qcow2")) else {
            continue;
        };
        let path = entry.path();
        let disk_bytes = entry.metadata().map(|m| m.blocks() * 512).unwrap_or(0);
        let mut used_by: Vec<User> = record
            .iter()
            .flat_map(|r| r.instances.values())
            .filter(|i| i.spec.volumes.iter().any(|v| v.path == path))
            .map(|i| User {
                instance: i.spec.name.clone(),
                running: host::running_pid(i.pid, &i.spec).is_some(),
            })
            .collect();
        used_by.sort_by(|a, b| a.instance.cmp(&b.instance));
        volumes.push(VolumeInfo {
            name: name.to_string(),
            path,
            disk_bytes,
            used_by,
        });
    }
    volumes.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(volumes)
}

/// `holos volumes ls`.
pub fn table(volumes: &[VolumeInfo]) -> String {
    let mut out = format!(
        "{:<24} {:>10}  {:<30} PATH\n",
        "VOLUME", "ON DISK", "USED BY"
    );
    for v in volumes {
        let users: Vec<String> = v.used_by.iter().map(User::describe).collect();
        out.push_str(&format!(
            "{:<24} {:>10}  {:<30} {}\n",
            v.name,
            human_bytes(v.disk_bytes),
            if users.is_empty() {
                "-".to_string()
            } else {
                users.join(",")
            },
            v.path.display()
        ));
    }
    out
}

/// `holos volumes rm NAME`, under the project lock so that no `up` attaches
/// the volume meanwhile.
pub fn remove(layout: &Layout, project: &str, name: &str) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volumes = list(layout, project)?;
    let Some(volume) = volumes.iter().find(|v| v.name == name) else {
        let known: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
        return Err(Error::Request(if known.is_empty() {
            format!("project {project} has no volume {name:?}; it has no volumes at all")
        } else {
            format!(
                "project {project} has no volume {name:?}; it has: {}",
                known.join(", ")
            )
        }));
    };
    if !volume.used_by.is_empty() {
        let users: Vec<String> = volume.used_by.iter().map(User::describe).collect();
        return Err(Error::Request(format!(
            "volume {name} of project {project} is in use by {}; remove the instances with holos down (it keeps volumes), then run holos volumes rm {name} again",
            users.join(", ")
        )));
    }
    std::fs::remove_file(&volume.path)
        .map_err(|e| Error::Request(format!("cannot remove {}: {e}", volume.path.display())))?;
    if let Some(dir) = volume.path.parent() {
        // The project's volume directory goes with its last volume.
        let _ = std::fs::remove_dir(dir);
    }
    eprintln!("holos: removed volume {name} ({})", volume.path.display());
    Ok(())
}

/// The volume `name` of the project, or an error that lists its volumes.
fn find(layout: &Layout, project: &str, name: &str) -> Result<VolumeInfo, Error> {
    let volumes = list(layout, project)?;
    let known: Vec<String> = volumes.iter().map(|v| v.name.clone()).collect();
    volumes.into_iter().find(|v| v.name == name).ok_or_else(|| {
        Error::Request(if known.is_empty() {
            format!("project {project} has no volume {name:?}; it has no volumes at all")
        } else {
            format!(
                "project {project} has no volume {name:?}; it has: {}",
                known.join(", ")
            )
        })
    })
}

/// Refuses while a running instance attaches the volume: its QEMU has the
/// file open.
fn refuse_running(volume: &VolumeInfo, project: &str, what: &str) -> Result<(), Error> {
    let running: Vec<&str> = volume
        .used_by
        .iter()
        .filter(|u| u.running)
        .map(|u| u.instance.as_str())
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    Err(Error::Request(format!(
        "cannot {what} volume {} of project {project}: {} running and attach{} it; stop {} with holos stop first",
        volume.name,
        running.join(", "),
        if running.len() == 1 { "es" } else { "" },
        if running.len() == 1 { "it" } else { "them" },
    )))
}

/// The QMP socket of the running QEMU that has the volume attached
/// read-write, and the drive id it gave it (`volN`), for online snapshots.
fn running_drive(
    layout: &Layout,
    project: &str,
    volume: &VolumeInfo,
) -> Result<Option<(PathBuf, String)>, Error> {
    Ok(running_user(layout, project, volume)?
        .map(|(spec, index)| (spec.qmp_socket(), format!("vol{index}"))))
}

/// The running instance that has the volume attached read-write, and the
/// index of the volume among its attachments.
fn running_user(
    layout: &Layout,
    project: &str,
    volume: &VolumeInfo,
) -> Result<Option<(InstanceSpec, usize)>, Error> {
    let Some(record) = ProjectRecord::load(layout, project)? else {
        return Ok(None);
    };
    for instance in record.instances.values() {
        if host::running_pid(instance.pid, &instance.spec).is_none() {
            continue;
        }
        if let Some(index) = instance
            .spec
            .volumes
            .iter()
            .position(|v| v.path == volume.path && !v.read_only)
        {
            return Ok(Some((instance.spec.clone(), index)));
        }
    }
    Ok(None)
}

/// `holos volumes export NAME [-o FILE] [--snapshot SNAP]`: a standalone
/// qcow2 of the volume, or of one of its snapshots (which a running
/// instance cannot change, so that one works while it runs).
pub fn export(
    layout: &Layout,
    project: &str,
    name: &str,
    snapshot: Option<&str>,
    output: &Path,
) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volume = find(layout, project, name)?;
    let mut args = vec!["convert", "-U", "-f", "qcow2", "-O", "qcow2"];
    let selector;
    match snapshot {
        Some(snapshot) => {
            find_snapshot(&volume, snapshot)?;
            selector = format!("snapshot.name={snapshot}");
            args.extend(["-l", &selector]);
        }
        None => refuse_running(&volume, project, "export")?,
    }
    if output.exists() {
        return Err(Error::Request(format!(
            "{} exists; remove it or pass another -o FILE",
            output.display()
        )));
    }
    // Written under a temporary name beside the target and renamed when
    // whole: an export killed midway leaves no truncated image that looks
    // finished, and the next one clears its leftover.
    let partial = partial_export(output);
    remove_leftover_export(&partial)?;
    let command = Command::new(qemu_img_program())
        .args(&args)
        .arg(&volume.path)
        .arg(&partial)
        .timeout(LONG_COPY);
    if let Err(e) = run_qemu_img(command) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    finish_export(&partial, output)
}

/// Where an export to `output` is written until it is complete:
/// `.NAME.holos-partial` in the same directory (so the rename stays on one
/// file system).
fn partial_export(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    output.with_file_name(format!(".{name}.holos-partial"))
}

/// Removes what an interrupted export to the same place left behind.
fn remove_leftover_export(partial: &Path) -> Result<(), Error> {
    match std::fs::remove_file(partial) {
        Ok(()) => {
            eprintln!(
                "holos: removed {}, left by an export that was interrupted",
                partial.display()
            );
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::State(format!(
            "cannot remove {}, left by an interrupted export: {e}; remove it by hand",
            partial.display()
        ))),
    }
}

/// Syncs the finished export to disk and gives it its final name.
fn finish_export(partial: &Path, output: &Path) -> Result<(), Error> {
    let synced = std::fs::File::open(partial).and_then(|file| file.sync_all());
    let moved = synced.and_then(|()| std::fs::rename(partial, output));
    moved.map_err(|e| {
        let _ = std::fs::remove_file(partial);
        Error::State(format!(
            "cannot move the export {} to {}: {e}",
            partial.display(),
            output.display()
        ))
    })
}

/// `holos volumes import NAME FILE [--force]`: the volume becomes a qcow2
/// copy of FILE (any format qemu-img reads). An existing volume is replaced
/// only with `--force`, and never while a running instance attaches it.
pub fn import(
    layout: &Layout,
    project: &str,
    name: &str,
    source: &Path,
    force: bool,
) -> Result<PathBuf, Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    if !source.is_file() {
        return Err(Error::Request(format!(
            "{} is not a file to import",
            source.display()
        )));
    }
    if let Ok((crate::disk_format::Sniffed::NotADisk, _)) = crate::disk_format::sniff(source) {
        return Err(Error::Request(format!(
            "{} is not a disk image (no format's signature, and its size is not a whole number of 512-byte sectors); give a qcow2 or raw disk image (qemu-img info says what a file is)",
            source.display()
        )));
    }
    let target = layout.volume(project, name);
    if let Ok(volume) = find(layout, project, name) {
        refuse_running(&volume, project, "replace")?;
        if !force {
            return Err(Error::Request(format!(
                "volume {name} of project {project} exists ({}); pass --force to replace its contents",
                volume.path.display()
            )));
        }
    }
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(Error::Request(format!(
            "{name:?} cannot be a volume name; use the name the compose file gives it"
        )));
    }
    if let Some(dir) = target.parent() {
        crate::state::make_private_dir(dir)?;
    }
    let partial = target.with_extension("qcow2.importing");
    let _ = std::fs::remove_file(&partial);
    let command = Command::new(qemu_img_program())
        .args(["convert", "-O", "qcow2"])
        .arg(source)
        .arg(&partial)
        .timeout(LONG_COPY);
    if let Err(e) = run_qemu_img(command) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, &target)
        .map_err(|e| Error::State(format!("cannot move {} into place: {e}", partial.display())))?;
    Ok(target)
}

fn find_snapshot(volume: &VolumeInfo, snapshot: &str) -> Result<(), Error> {
    let existing = image_snapshots(&volume.path)?;
    if existing.iter().any(|s| s.name == snapshot) {
        return Ok(());
    }
    let known: Vec<&str> = existing.iter().map(|s| s.name.as_str()).collect();
    Err(Error::Request(format!(
        "volume {} has no snapshot {snapshot:?}; it has: {}",
        volume.name,
        if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        }
    )))
}

/// `holos volumes snapshots NAME`.
pub fn snapshots(layout: &Layout, project: &str, name: &str) -> Result<Vec<SnapshotInfo>, Error> {
    image_snapshots(&find(layout, project, name)?.path)
}

/// `holos volumes snapshot NAME [SNAP]`: online through QMP on the running
/// instance that attaches it, else with qemu-img. Returns the name.
pub fn snapshot(
    layout: &Layout,
    project: &str,
    name: &str,
    snapshot: Option<&str>,
) -> Result<String, Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volume = find(layout, project, name)?;
    let snapshot = match snapshot {
        Some(snapshot) => snapshot.to_string(),
        None => format!(
            "{name}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        ),
    };
    check_name(&snapshot)?;
    if image_snapshots(&volume.path)?
        .iter()
        .any(|s| s.name == snapshot)
    {
        return Err(Error::Request(format!(
            "volume {name} already has a snapshot {snapshot}; pick another name or remove it with holos volumes snapshot-rm {name} {snapshot}"
        )));
    }
    match running_drive(layout, project, &volume)? {
        Some((socket, device)) => {
            Qmp::connect(&socket, Duration::from_secs(30))?.execute_with(
                "blockdev-snapshot-internal-sync",
                json!({ "device": device, "name": snapshot }),
            )?;
        }
        None => {
            run_qemu_img(qemu_img(&["snapshot", "-c", &snapshot], &volume.path))?;
        }
    }
    Ok(snapshot)
}

/// `holos volumes snapshot-rm NAME SNAP`.
pub fn snapshot_remove(
    layout: &Layout,
    project: &str,
    name: &str,
    snapshot: &str,
) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volume = find(layout, project, name)?;
    find_snapshot(&volume, snapshot)?;
    match running_drive(layout, project, &volume)? {
        Some((socket, device)) => {
            Qmp::connect(&socket, Duration::from_secs(30))?.execute_with(
                "blockdev-snapshot-delete-internal-sync",
                json!({ "device": device, "name": snapshot }),
            )?;
        }
        None => {
            run_qemu_img(qemu_img(&["snapshot", "-d", snapshot], &volume.path))?;
        }
    }
    Ok(())
}

/// `holos volumes snapshot-restore NAME SNAP`: refuses while a running
/// instance attaches the volume.
pub fn snapshot_restore(
    layout: &Layout,
    project: &str,
    name: &str,
    snapshot: &str,
) -> Result<(), Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volume = find(layout, project, name)?;
    find_snapshot(&volume, snapshot)?;
    refuse_running(&volume, project, "restore")?;
    run_qemu_img(qemu_img(&["snapshot", "-a", snapshot], &volume.path)).map(|_| ())
}

/// How `holos volumes resize` grew a volume.
#[derive(Debug, PartialEq, Eq)]
pub enum Growth {
    /// It already had the size.
    Unchanged,
    /// No running instance attaches it: qemu-img grew the qcow2, and the
    /// guest grows the file system at its next boot.
    Offline,
    /// The running `instance` grew the disk (QMP `block_resize`) and the
    /// mounted file system on it (`resize2fs` over SSH).
    Online { instance: String },
    /// The running `instance` grew the disk, but its file system could not
    /// be grown now (`reason`); the guest grows it at its next boot.
    DiskOnly { instance: String, reason: String },
}

/// What `resize` did: the size before, and how it grew.
#[derive(Debug)]
pub struct Resized {
    pub before: u64,
    pub growth: Growth,
}

/// How long growing the file system in the guest may take over SSH.
const GUEST_GROW_WAIT: Duration = Duration::from_secs(120);

/// `holos volumes resize NAME SIZE`: grows the qcow2 (never shrinks it).
/// While a running instance attaches it read-write, online: QMP
/// `block_resize` on its drive, then `resize2fs` in the guest over SSH;
/// else with qemu-img, and the guest grows the ext4 file system at its next
/// boot (see cloud_init). A running instance that attaches it read-only
/// must be stopped first.
pub fn resize(
    layout: &Layout,
    project: &str,
    name: &str,
    size_bytes: u64,
) -> Result<Resized, Error> {
    let _lock = ProjectLock::acquire(layout, project, LOCK_WAIT)?;
    let volume = find(layout, project, name)?;
    let online = running_user(layout, project, &volume)?;
    if online.is_none() {
        refuse_running(&volume, project, "resize")?;
    }
    let out = run_qemu_img(qemu_img(
        &["info", "-U", "--output=json", "-f", "qcow2"],
        &volume.path,
    ))?;
    let current = serde_json::from_slice::<serde_json::Value>(&out)
        .ok()
        .and_then(|info| info["virtual-size"].as_u64())
        .ok_or_else(|| {
            Error::Instance(format!(
                "qemu-img info of {} printed no virtual-size",
                volume.path.display()
            ))
        })?;
    if size_bytes < current {
        return Err(Error::Request(format!(
            "volume {name} is {} and holos only grows volumes; give a size of at least that",
            human_bytes(current)
        )));
    }
    let growth = if size_bytes == current {
        Growth::Unchanged
    } else if let Some((spec, index)) = online {
        Qmp::connect(&spec.qmp_socket(), Duration::from_secs(30))?.execute_with(
            "block_resize",
            json!({ "device": format!("vol{index}"), "size": size_bytes }),
        )?;
        let key = layout.ssh_key(project);
        match grow_in_guest(&key, &spec, &spec.volumes[index], size_bytes) {
            Ok(()) => Growth::Online {
                instance: spec.name.clone(),
            },
            Err(reason) => Growth::DiskOnly {
                instance: spec.name.clone(),
                reason,
            },
        }
    } else {
        let size = size_bytes.to_string();
        run_qemu_img(qemu_img(&["resize", "-f", "qcow2"], &volume.path).arg(size))?;
        Growth::Offline
    };
    Ok(Resized {
        before: current,
        growth,
    })
}

/// Grows the file system of `volume` in the running guest of `spec` over
/// SSH, as root (through sudo for another user), once the guest's kernel
/// sees the disk's new size; the error says why it could not.
fn grow_in_guest(
    key: &Path,
    spec: &InstanceSpec,
    volume: &VolumeAttachment,
    size_bytes: u64,
) -> Result<(), String> {
    let script = online_grow_script(volume, size_bytes);
    let quoted = shell_quote(&script);
    let line =
        format!("if [ \"$(id -u)\" = 0 ]; then sh -c {quoted}; else sudo -n sh -c {quoted}; fi");
    let finished = Command::new("ssh")
        .args(ssh::ssh_args(key, spec, &spec.user, false))
        .arg("--")
        .arg(line)
        .timeout(GUEST_GROW_WAIT)
        .run()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    if finished.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&finished.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&finished.stderr));
    let last = said.lines().rev().find(|l| !l.trim().is_empty());
    Err(match last {
        Some(line) => line.trim().to_string(),
        None => format!("ssh {:?}", finished.status),
    })
}

/// The guest's half of an online resize: wait until the kernel sees the
/// disk at `size_bytes` (virtio-blk reports a resize a moment later), then
/// `resize2fs` the mounted ext4 on it. Exits non-zero with a reason when the
/// disk is missing, the volume is not mounted yet or resize2fs fails.
fn online_grow_script(volume: &VolumeAttachment, size_bytes: u64) -> String {
    format!(
        "dev={dev}
target={target}
[ -b \"$dev\" ] || {{ echo \"$dev is not in the guest\"; exit 3; }}
mountpoint -q \"$target\" || {{ echo \"$target is not mounted\"; exit 3; }}
sectors=/sys/class/block/$(basename \"$(readlink -f \"$dev\")\")/size
tries=0
until [ $(( $(cat \"$sectors\") * 512 )) -ge {size_bytes} ]; do
  tries=$((tries + 1))
  [ $tries -le 30 ] || {{ echo \"the guest still sees the old size of $dev\"; exit 3; }}
  sleep 1
done
resize2fs \"$dev\" 2>&1
",
        dev = shell_quote(&volume.guest_device()),
        target = shell_quote(&volume.target),
    )
}

/// `1536` → `1.5 KiB`.
/// Two sizes as [`human_bytes`] says them, with the exact bytes when the
/// rounded ones would read the same.
pub fn human_pair(first: u64, second: u64) -> (String, String) {
    let (a, b) = (human_bytes(first), human_bytes(second));
    if a == b && first != second {
        (
            format!("{a} ({first} bytes)"),
            format!("{b} ({second} bytes)"),
        )
    } else {
        (a, b)
    }
}

pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_online_grow_script_waits_for_the_new_size_then_runs_resize2fs() {
        let volume = VolumeAttachment {
            name: "data".into(),
            path: PathBuf::from("/s/volumes/p/data.qcow2"),
            target: "/var/lib/my db".into(),
            read_only: false,
        };
        let script = online_grow_script(&volume, 32 << 20);
        assert!(
            script.starts_with("dev=/dev/disk/by-id/virtio-vol-data\ntarget='/var/lib/my db'\n"),
            "{script}"
        );
        assert!(script.contains("-ge 33554432 ]"), "{script}");
        assert!(script.ends_with("resize2fs \"$dev\" 2>&1\n"), "{script}");
        let syntax = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .status()
            .expect("sh");
        assert!(syntax.success(), "{script}");
    }

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(196_608), "192.0 KiB");
        assert_eq!(human_bytes(10 * 1024 * 1024 * 1024), "10.0 GiB");
    }
}
