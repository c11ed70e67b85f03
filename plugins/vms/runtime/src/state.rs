//! The runtime's state directory and the per-project record.
//!
//! Layout below the state root:
//! - `projects/<p>.json`: the [`ProjectRecord`];
//! - `instances/<p>/<inst>/`: sockets, logs, the root overlay, the seed;
//! - `volumes/<p>/<name>.qcow2`: named volumes (never removed by `down`);
//! - `ssh/<p>/id_ed25519`: the project key;
//! - `locks/<p>.lock`: held while a command changes the project;
//! - `images/`: downloaded base images, `<alias>-<tag>-<hash>.qcow2` with a
//!   `.json` record beside each (`images::cache`);
//! - `locks/image-<alias>-<tag>.lock`: held while that image is pulled.
//!
//! Directories are created 0700, keys and records 0600.

use std::collections::BTreeMap;
use std::fs::{DirBuilder, File};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::spec::InstanceSpec;

/// Paths below one state root.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }
    pub fn project_record(&self, project: &str) -> PathBuf {
        self.root.join("projects").join(format!("{project}.json"))
    }
    pub fn instance_dir(&self, project: &str, instance: &str) -> PathBuf {
        self.root.join("instances").join(project).join(instance)
    }
    pub fn project_instances(&self, project: &str) -> PathBuf {
        self.root.join("instances").join(project)
    }
    pub fn volume(&self, project: &str, name: &str) -> PathBuf {
        self.project_volumes(project).join(format!("{name}.qcow2"))
    }
    pub fn project_volumes(&self, project: &str) -> PathBuf {
        self.root.join("volumes").join(project)
    }
    pub fn ssh_key(&self, project: &str) -> PathBuf {
        self.root.join("ssh").join(project).join("id_ed25519")
    }
    pub fn lock(&self, project: &str) -> PathBuf {
        self.root.join("locks").join(format!("{project}.lock"))
    }
    pub fn images(&self) -> PathBuf {
        self.root.join("images")
    }
    /// Held while one image (`alias-tag`) is pulled or checked.
    pub fn image_lock(&self, name: &str) -> PathBuf {
        self.root.join("locks").join(format!("image-{name}.lock"))
    }

    /// Every project that has a record, sorted.
    pub fn projects(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join("projects"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        names.sort();
        names
    }
}

/// Creates `dir` and its missing parents with mode 0700.
pub fn make_private_dir(dir: &Path) -> Result<(), Error> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::State(format!("cannot create {}: {e}", dir.display())))
}

/// What holos knows about one project between commands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub version: u32,
    pub project: String,
    /// The compose files `up` read, for messages.
    #[serde(default)]
    pub files: Vec<String>,
    /// sha256 of the resolved manifest: an unchanged hash means `up` has nothing to do.
    pub spec_hash: String,
    /// By instance name.
    pub instances: BTreeMap<String, InstanceRecord>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// sha256 of what the instance is built from; a change recreates it.
    pub spec_hash: String,
    /// The QEMU process, while it runs.
    pub pid: Option<u32>,
    /// Position in the project's start order; stops go in reverse.
    pub start_order: usize,
    pub spec: InstanceSpec,
}

pub const RECORD_VERSION: u32 = 1;

impl ProjectRecord {
    /// The addresses each recorded instance has, on the flat network or on
    /// each named network (with its subnet), so that resolving the project
    /// again keeps them.
    pub fn allocated_ips(&self) -> holos_compose::network::Allocations {
        let mut out = holos_compose::network::Allocations::default();
        for (name, instance) in &self.instances {
            let flat = holos_compose::network::user_mac_address(&instance.spec.mac_user);
            out.flat
                .insert(name.clone(), flat.unwrap_or(instance.spec.ip));
            if instance.spec.networks.is_empty() {
                out.default.insert(name.clone(), instance.spec.ip);
            }
            for nic in &instance.spec.networks {
                if let Some(ip) = nic.ip {
                    out.add(&nic.network, name, ip, nic.prefix);
                }
            }
        }
        out
    }

    pub fn load(layout: &Layout, project: &str) -> Result<Option<ProjectRecord>, Error> {
        let path = layout.project_record(project);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::State(format!("cannot read {}: {e}", path.display()))),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            Error::State(format!(
                "{}: line {}: the project record is damaged ({e}); stop its QEMU processes by hand and remove the file",
                path.display(),
                e.line()
            ))
        })
    }

    /// Writes the record atomically (0600).
    pub fn save(&self, layout: &Layout) -> Result<(), Error> {
        let path = layout.project_record(&self.project);
        if let Some(parent) = path.parent() {
            make_private_dir(parent)?;
        }
        let mut text =
            serde_json::to_string_pretty(self).map_err(|e| Error::State(e.to_string()))?;
        text.push('\n');
        holo_plugin::atomic::write(
            &holo_plugin::root_fs::RootFs::unconfined(),
            &path,
            text.as_bytes(),
            &holo_plugin::atomic::WriteOptions::mode(0o600),
        )
        .map_err(|e| Error::State(e.to_string()))
    }

    pub fn remove(layout: &Layout, project: &str) -> Result<(), Error> {
        let path = layout.project_record(project);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::State(format!(
                "cannot remove {}: {e}",
                path.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// An exclusive flock on `locks/<p>.lock`, released on drop.
pub struct ProjectLock {
    _lock: nix::fcntl::Flock<File>,
}

/// How long a command waits for another one on the same project.
pub const LOCK_WAIT: Duration = Duration::from_secs(120);

/// `holos --lock-timeout`, set once by the command line; it replaces every
/// wait for a lock in this process.
static LOCK_TIMEOUT_OPTION: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Makes every lock wait of this process `limit` (`holos --lock-timeout`).
pub fn use_lock_timeout(limit: Duration) {
    let _ = LOCK_TIMEOUT_OPTION.set(limit);
}

impl ProjectLock {
    /// Takes the lock, waiting (with one message on stderr) while another
    /// holos command holds it.
    pub fn acquire(layout: &Layout, project: &str, wait: Duration) -> Result<ProjectLock, Error> {
        Self::acquire_at(&layout.lock(project), &format!("project {project}"), wait)
    }

    /// Takes the lock at `path`; `what` names what it protects in messages.
    pub fn acquire_at(path: &Path, what: &str, wait: Duration) -> Result<ProjectLock, Error> {
        use nix::fcntl::{Flock, FlockArg};
        if let Some(parent) = path.parent() {
            make_private_dir(parent)?;
        }
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| Error::State(format!("cannot open {}: {e}", path.display())))
        };
        let wait = LOCK_TIMEOUT_OPTION.get().copied().unwrap_or(wait);
        let started = Instant::now();
        let mut told = false;
        let mut file = open()?;
        loop {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(mut lock) => {
                    // The holder's pid, for the next waiter's message.
                    let _ = lock.set_len(0);
                    let _ = writeln!(lock, "{}", std::process::id());
                    return Ok(ProjectLock { _lock: lock });
                }
                Err((returned, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
                    file = returned;
                    if !told {
                        let holder = std::fs::read_to_string(path).unwrap_or_default();
                        eprintln!(
                            "holos: waiting for another holos command on {what} (pid {}, lock {})",
                            holder.trim(),
                            path.display()
                        );
                        told = true;
                    }
                    if started.elapsed() >= wait {
                        return Err(Error::State(format!(
                            "{what} is still locked by another holos command after {}s ({}); try again when it has finished, or wait longer with --lock-timeout",
                            wait.as_secs_f64(),
                            path.display()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err((_, errno)) => {
                    return Err(Error::State(format!(
                        "cannot lock {}: {errno}",
                        path.display()
                    )));
                }
            }
        }
    }
}
