//! Holo's run lock, `$ROOT/run/holo.pid`, for `holo apply` and for the
//! one-off `ensure` of every SDK plugin: created exclusively and holding
//! `PID\n` exactly as Holo 3 writes it, so that our runs and Holo 3's
//! exclude each other. A lock left behind by a process that is gone (a
//! crash, `kill -9`), that names a zombie, or that names a live process
//! started after the lock was written (a recycled pid), is taken over
//! instead of blocking every later run. The messages are the callers' to
//! print ([`Notice`]).
//!
//! The takeover is race-free between any number of new runs:
//! - Holding the lock means having created the file exclusively: Holo 3
//!   with `O_EXCL`, we by hard-linking a temp file that already holds our
//!   pid (so our lock file is never without one, even after a kill); nobody
//!   else ever replaces an existing lock file, and only the holder or a
//!   takeover removes it.
//! - A takeover opens the lock file and takes `flock` on that open file,
//!   then checks that the path still names the same inode. Under the flock
//!   no other takeover can be between its own check and its `unlink`, so
//!   the file it reads and the file it removes are the one that names the
//!   gone process, never a fresh lock of another run.
//! - After the removal the new lock is again an exclusive create, so when
//!   several runs get there, exactly one wins and the others find its lock
//!   (a lock without a complete `PID\n`, Holo 3's before it wrote its pid,
//!   counts as held until it is old and nobody holds it).
//!
//! The lock outlives a killed holo for as long as anything of its run does:
//! the holder keeps a shared `flock` on its lock file (and the driver
//! passes that open file to the plugins that declare `run-lock`,
//! [`RUN_LOCK_FD`](holo_protocol::RUN_LOCK_FD)). After `kill -9` of holo, a
//! plugin still dying keeps the lock, and a takeover waits for it instead
//! of starting the same work beside it.

mod holder;
mod takeover;

use holder::Gone;
use holo_protocol::duration::{format_duration, parse_duration};
use nix::fcntl::Flock;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;
use takeover::{Hooks, INCOMPLETE_LOCK_AGE, Takeover, take_over_if_stale};

/// How often a run retries the exclusive create after removing a stale
/// lock; each retry needs another run to have won in between.
const MAX_ATTEMPTS: usize = 8;

/// How long a takeover waits for the processes of a dead holder's run
/// that still hold its lock (`HOLO_STALE_LOCK_WAIT`).
const DEFAULT_STALE_WAIT: Duration = Duration::from_secs(60);

/// The prefix of a lock being made: its pid is written before it is linked
/// into place, so our lock file is never without one.
const MAKING_PREFIX: &str = ".holo.pid.";

/// A message of the lock for the user, in Holo 3's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `>>` line.
    Warning(String),
    /// A `!!` line.
    Error(String),
    /// A plain line after an error.
    Hint(String),
}

/// A held lock: its path and the open file with the shared `flock`.
pub struct RunLock {
    path: PathBuf,
    /// Open for as long as the lock is held: the `flock` is the lock.
    held: Flock<std::fs::File>,
}

impl RunLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open lock file (close-on-exec, above descriptor 4), to pass on.
    pub fn raw_fd(&self) -> RawFd {
        self.held.as_raw_fd()
    }

    /// Removes the lock file at the end of the run (the `flock` goes with
    /// the value); the message when it cannot be removed.
    pub fn release(self) -> Result<(), Notice> {
        std::fs::remove_file(&self.path).map_err(|err| {
            Notice::Error(format!(
                "remove {}: {}",
                self.path.display(),
                errno_text(&err)
            ))
        })
    }
}

/// Takes the lock at `path`, taking over a stale one; `None` once
/// `notify` has been given Holo 3's failure message.
pub fn acquire(path: &Path, notify: &mut dyn FnMut(Notice)) -> Option<RunLock> {
    let mut attempts = 0;
    loop {
        let error = match create_held(path) {
            Ok(held) => {
                return Some(RunLock {
                    path: path.to_path_buf(),
                    held,
                });
            }
            Err(error) => error,
        };
        if error.kind() != std::io::ErrorKind::AlreadyExists || attempts == MAX_ATTEMPTS {
            return failed(notify, path, &error);
        }
        attempts += 1;
        if !take_over(path, notify) {
            return failed(notify, path, &error);
        }
    }
}

/// Removes a stale lock at `path`, telling `notify`; false while it is held.
fn take_over(path: &Path, notify: &mut dyn FnMut(Notice)) -> bool {
    let shown = path.display();
    let wait = stale_wait();
    let taken = take_over_if_stale(
        path,
        &mut Hooks {
            wait,
            waiting: &mut |pid| {
                notify(Notice::Warning(format!(
                    "Lock file {shown} names process {pid}, which is no longer running, but processes of its run still hold the lock; waiting up to {} for them to end",
                    format_duration(wait)
                )));
            },
            before_remove: &mut || {},
        },
    );
    let notice = match taken {
        Ok(Takeover::Removed(pid, Gone::Ended)) => Notice::Warning(format!(
            "Lock file {shown} names process {pid}, which is no longer running; taking the lock over"
        )),
        Ok(Takeover::Removed(pid, Gone::Recycled)) => Notice::Warning(format!(
            "Lock file {shown} names process {pid}, which started after the lock was written and so is not the run that took it; taking the lock over"
        )),
        Ok(Takeover::RemovedIncomplete) => Notice::Warning(format!(
            "Lock file {shown} holds no process ID (a run was killed while creating it) and nobody holds it; taking the lock over"
        )),
        Ok(Takeover::Gone) => return true,
        Ok(Takeover::Held) => return false,
        Ok(Takeover::StillHeldByRun(pid)) => {
            notify(Notice::Error(format!(
                "processes of the run of process {pid} still hold lock file {shown} after {}; wait for them to end, or end them (`fuser -v {shown}` lists them)",
                format_duration(wait)
            )));
            return false;
        }
        Err(remove) => {
            notify(Notice::Error(format!(
                "cannot remove stale lock file {shown}: {}",
                errno_text(&remove)
            )));
            return false;
        }
    };
    notify(notice);
    true
}

/// Holo 3's message; the two hint lines only when the file exists.
fn failed(notify: &mut dyn FnMut(Notice), path: &Path, error: &std::io::Error) -> Option<RunLock> {
    let shown = path.display();
    notify(Notice::Error(format!(
        "Cannot create lock file {shown}: open {shown}: {}",
        errno_text(error)
    )));
    if error.kind() == std::io::ErrorKind::AlreadyExists {
        notify(Notice::Hint(
            "This usually means that another instance of Holo is currently running.".into(),
        ));
        notify(Notice::Hint(
            "If not, you can try to delete the lock file manually.".into(),
        ));
    }
    None
}

/// `HOLO_STALE_LOCK_WAIT` (a duration; 0 does not wait) or the default.
fn stale_wait() -> Duration {
    std::env::var("HOLO_STALE_LOCK_WAIT")
        .ok()
        .and_then(|text| parse_duration(&text))
        .map(|wait| wait.unwrap_or(Duration::ZERO))
        .unwrap_or(DEFAULT_STALE_WAIT)
}

/// Makes the lock: a temp file beside it with `PID\n` and the holder's
/// shared `flock`, hard-linked to `path` (which fails when a lock exists,
/// as Holo 3's exclusive create does). The descriptor is moved above the
/// plugins' standard descriptors, FD 3 and
/// [`RUN_LOCK_FD`](holo_protocol::RUN_LOCK_FD), so that it can be passed on
/// unchanged.
fn create_held(path: &Path) -> std::io::Result<Flock<std::fs::File>> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("/"));
    remove_abandoned_makings(dir);
    let making = tempfile::Builder::new()
        .prefix(MAKING_PREFIX)
        .tempfile_in(dir)?;
    let moved = nix::fcntl::fcntl(making.as_file(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(10))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    let moved = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(moved) };
    // The lock belongs to the open file, which the link shares.
    let held = Flock::lock(moved, nix::fcntl::FlockArg::LockShared)
        .map_err(|(_, errno)| std::io::Error::from(errno))?;
    making
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    write_pid(making.as_file())?;
    std::fs::hard_link(making.path(), path)?;
    // Dropping `making` removes the temp name; the lock file stays.
    Ok(held)
}

/// Temp files of lock makings that a killed run left: nobody holds them
/// and they are older than a making takes.
fn remove_abandoned_makings(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(MAKING_PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= INCOMPLETE_LOCK_AGE);
        let Ok(file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        if old && Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn write_pid(mut file: &std::fs::File) -> std::io::Result<()> {
    file.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    file.sync_all()
}

/// An OS error as Go words it: `file exists`, `no such file or directory`.
pub fn errno_text(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            let text = nix::errno::Errno::from_raw(code).desc();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text.to_string(),
            }
        }
        None => err.to_string(),
    }
}
