//! `holos volumes ls` and `holos volumes rm NAME`: the project's named
//! volumes (`volumes/<p>/<name>.qcow2`), which `down` always keeps.
//!
//! A volume is in use while an instance in the project record attaches it,
//! running or stopped: `start` would attach it again. `rm` refuses such a
//! volume; `holos down` removes the instances (and keeps the volume).

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::Error;
use crate::host;
use crate::state::{LOCK_WAIT, Layout, ProjectLock, ProjectRecord};

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

/// `1536` → `1.5 KiB`.
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
    use super::human_bytes;

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(196_608), "192.0 KiB");
        assert_eq!(human_bytes(10 * 1024 * 1024 * 1024), "10.0 GiB");
    }
}
