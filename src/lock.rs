//! The lock of `holo apply`: `$ROOT/run/holo.pid`, created exclusively and
//! holding `PID\n` exactly as Holo 3 writes it, so that our runs and Holo
//! 3's exclude each other. A lock left behind by a process that is gone
//! (a crash, `kill -9`) is taken over instead of blocking every later run.
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
//!   dead process, never a fresh lock of another run.
//! - After the removal the new lock is again an exclusive create, so when
//!   several runs get there, exactly one wins and the others find its lock
//!   (a lock without a complete `PID\n`, Holo 3's before it wrote its pid,
//!   counts as held until it is old and nobody holds it).
//!
//! The lock outlives a killed holo for as long as anything of its run does:
//! the holder keeps a shared `flock` on its lock file and passes that open
//! file to the plugins that declare the `run-lock` extension
//! ([`RUN_LOCK_FD`](holo_protocol::RUN_LOCK_FD)). After `kill -9` of holo, a
//! plugin still dying (a SIGKILL waits for an uninterruptible `syncfs`)
//! keeps the lock, and a takeover waits for it instead of starting the
//! same work beside it.

use crate::loading::EXIT_FATAL;
use crate::output::{Output, Stream};
use crate::paths;
use nix::fcntl::Flock;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// How often a run retries the exclusive create after removing a stale
/// lock; each retry needs another run to have won in between.
const MAX_ATTEMPTS: usize = 8;

/// How long a takeover waits for the processes of a dead holder's run
/// that still hold its lock (`HOLO_STALE_LOCK_WAIT`).
const DEFAULT_STALE_WAIT: Duration = Duration::from_secs(60);

/// How old a lock file without a complete pid must be before a takeover
/// counts it as left by a killed run rather than one being created.
const INCOMPLETE_LOCK_AGE: Duration = Duration::from_secs(10);

/// How often a waiting takeover looks again.
const STALE_POLL: Duration = Duration::from_millis(100);

/// The lock of a run: its path and the open file with the shared `flock`.
pub struct RunLock {
    pub path: String,
    /// Open for as long as the lock is held: the `flock` is the lock.
    _held: Flock<std::fs::File>,
}

/// Plugins that start after the lock is gone get no descriptor of it.
impl Drop for RunLock {
    fn drop(&mut self) {
        crate::plugin::share_run_lock(None);
    }
}

/// Takes the lock, or prints Holo 3's message and returns the exit code.
pub fn acquire(root: &str, out: &mut Output) -> Result<RunLock, i32> {
    let path = paths::join(root, "run/holo.pid");
    let path = match crate::in_root::real_entry(root, std::path::Path::new(&path)) {
        Ok(real) => paths::display(&real),
        Err(error) => return Err(report_failure(out, &path, &error)),
    };
    let mut attempts = 0;
    loop {
        let error = match create_held(&path) {
            Ok(file) => {
                // An interrupted run removes it too, but only once nothing it
                // started is alive (the caller releases it last).
                crate::plugin::share_run_lock(Some(file.as_raw_fd()));
                return Ok(RunLock { path, _held: file });
            }
            Err(error) => error,
        };
        if error.kind() != std::io::ErrorKind::AlreadyExists || attempts == MAX_ATTEMPTS {
            return Err(report_failure(out, &path, &error));
        }
        attempts += 1;
        let wait = stale_wait();
        let mut waiting = |pid: u32| {
            out.warn(
                Stream::Err,
                &format!(
                    "Lock file {path} names process {pid}, which is no longer running, but processes of its run still hold the lock; waiting up to {} for them to end",
                    crate::interrupt::format_duration(wait)
                ),
            )
        };
        match take_over_if_stale(&path, wait, &mut waiting, &mut || {}) {
            Ok(Takeover::Removed(pid)) => out.warn(
                Stream::Err,
                &format!(
                    "Lock file {path} names process {pid}, which is no longer running; taking the lock over"
                ),
            ),
            Ok(Takeover::RemovedIncomplete) => out.warn(
                Stream::Err,
                &format!(
                    "Lock file {path} holds no process ID (a run was killed while creating it) and nobody holds it; taking the lock over"
                ),
            ),
            Ok(Takeover::Gone) => {}
            Ok(Takeover::Held) => return Err(report_failure(out, &path, &error)),
            Ok(Takeover::StillHeldByRun(pid)) => {
                out.error(
                    Stream::Err,
                    &format!(
                        "processes of the run of process {pid} still hold lock file {path} after {}; wait for them to end, or end them (`fuser -v {path}` lists them)",
                        crate::interrupt::format_duration(wait)
                    ),
                );
                return Err(report_failure(out, &path, &error));
            }
            Err(remove) => {
                out.error(
                    Stream::Err,
                    &format!(
                        "cannot remove stale lock file {path}: {}",
                        paths::errno_text(&remove)
                    ),
                );
                return Err(report_failure(out, &path, &error));
            }
        }
    }
}

/// Removes the lock at the end of the run.
pub fn release(lock: RunLock, out: &mut Output) {
    let path = &lock.path;
    if let Err(e) = std::fs::remove_file(path) {
        out.error(
            Stream::Err,
            &format!("remove {path}: {}", paths::errno_text(&e)),
        );
    }
    drop(lock);
}

/// `HOLO_STALE_LOCK_WAIT` (a duration; 0 does not wait) or the default.
fn stale_wait() -> Duration {
    std::env::var("HOLO_STALE_LOCK_WAIT")
        .ok()
        .and_then(|text| crate::interrupt::parse_duration(&text))
        .map(|wait| wait.unwrap_or(Duration::ZERO))
        .unwrap_or(DEFAULT_STALE_WAIT)
}

/// The prefix of a lock being made: its pid is written before it is linked
/// into place, so our lock file is never without one.
const MAKING_PREFIX: &str = ".holo.pid.";

/// Makes the lock: a temp file beside it with `PID\n` and the holder's
/// shared `flock`, hard-linked to `path` (which fails when a lock exists,
/// as Holo 3's exclusive create does). The descriptor is moved above the
/// plugins' standard descriptors, FD 3 and
/// [`RUN_LOCK_FD`](holo_protocol::RUN_LOCK_FD), so that it can be passed on
/// unchanged.
fn create_held(path: &str) -> std::io::Result<Flock<std::fs::File>> {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::path::Path::new(path)
        .parent()
        .unwrap_or(std::path::Path::new("/"));
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
fn remove_abandoned_makings(dir: &std::path::Path) {
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

/// Holo 3's message; the two hint lines only when the file exists.
fn report_failure(out: &mut Output, path: &str, error: &std::io::Error) -> i32 {
    out.error(
        Stream::Err,
        &format!(
            "Cannot create lock file {path}: open {path}: {}",
            paths::errno_text(error)
        ),
    );
    if error.kind() == std::io::ErrorKind::AlreadyExists {
        out.write(
            Stream::Err,
            b"This usually means that another instance of Holo is currently running.\n",
        );
        out.write(
            Stream::Err,
            b"If not, you can try to delete the lock file manually.\n",
        );
    }
    EXIT_FATAL
}

enum Takeover {
    /// The lock named this dead process and was removed.
    Removed(u32),
    /// The lock vanished meanwhile (its holder finished).
    Gone,
    /// A live process holds it, or it names no process.
    Held,
    /// It names this dead process, but processes of that run still hold
    /// its `flock` after the wait.
    StillHeldByRun(u32),
    /// It held no complete pid, nobody held it, and it was old: removed.
    RemovedIncomplete,
}

/// `waiting` runs once when the takeover starts to wait for a dead
/// holder's run; `before_remove` between the check and the removal (tests
/// widen the race window with it).
fn take_over_if_stale(
    path: &str,
    wait: Duration,
    waiting: &mut dyn FnMut(u32),
    before_remove: &mut dyn FnMut(),
) -> std::io::Result<Takeover> {
    let started = Instant::now();
    let mut announced = false;
    loop {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Takeover::Gone),
            Err(_) => return Ok(Takeover::Held),
        };
        let mut file =
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(file) => file,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    // A live holder, or a dead one whose run lives on (or,
                    // for a moment, another takeover).
                    let mut content = String::new();
                    let dead = file.read_to_string(&mut content).is_ok()
                        && holder_pid(&content).is_some_and(|pid| !is_running(pid));
                    let Some(pid) = holder_pid(&content).filter(|_| dead) else {
                        return Ok(Takeover::Held);
                    };
                    let waited = started.elapsed();
                    if waited >= wait {
                        return Ok(Takeover::StillHeldByRun(pid));
                    }
                    // A concurrent takeover holds it only for a moment.
                    if !announced && waited >= Duration::from_secs(1) {
                        announced = true;
                        waiting(pid);
                    }
                    std::thread::sleep(STALE_POLL.min(wait - waited));
                    continue;
                }
                Err(_) => return Ok(Takeover::Held),
            };
        let opened = file.metadata()?;
        match std::fs::metadata(path) {
            Ok(now) if now.dev() == opened.dev() && now.ino() == opened.ino() => {}
            // Another takeover removed this file first: start over.
            _ => return Ok(Takeover::Gone),
        }
        let mut content = String::new();
        if file.read_to_string(&mut content).is_err() {
            return Ok(Takeover::Held);
        }
        return match holder_pid(&content) {
            Some(pid) if !is_running(pid) => {
                before_remove();
                std::fs::remove_file(path)?;
                Ok(Takeover::Removed(pid))
            }
            // A run killed between creating the lock and writing its pid:
            // nobody holds the file, and it is older than any run takes
            // for that one write. Holo 3's `0\n` is complete and stays held.
            None if !content.ends_with('\n')
                && opened
                    .modified()
                    .ok()
                    .and_then(|at| at.elapsed().ok())
                    .is_some_and(|age| age >= INCOMPLETE_LOCK_AGE) =>
            {
                before_remove();
                std::fs::remove_file(path)?;
                Ok(Takeover::RemovedIncomplete)
            }
            _ => Ok(Takeover::Held),
        };
    }
}

/// The pid in a complete `PID\n`; Holo 3's test suite writes `0`, which
/// names no process and stays a held lock.
fn holder_pid(content: &str) -> Option<u32> {
    let digits = content.strip_suffix('\n')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|pid| *pid > 0)
}

/// Whether a process with this pid exists (for any user). Our own pid in
/// the file is a leftover: this run has not written it.
fn is_running(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_complete_positive_pid_names_a_holder() {
        assert_eq!(holder_pid("123\n"), Some(123));
        assert_eq!(holder_pid("0\n"), None);
        assert_eq!(holder_pid("0"), None);
        assert_eq!(holder_pid("12"), None, "a write still under way");
        assert_eq!(holder_pid(""), None);
        assert_eq!(holder_pid(" 1\n"), None);
        assert_eq!(holder_pid("99999999999999\n"), None);
    }

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_takeover_racing_another_never_removes_what_it_did_not_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holo.pid").to_str().unwrap().to_string();
        let stale = dead_pid();
        std::fs::write(&path, format!("{stale}\n")).unwrap();
        let mut second = None;
        // While the first takeover is between its check and its removal, a
        // second one starts on the same stale file.
        let wait = Duration::from_secs(5);
        let first = take_over_if_stale(&path, wait, &mut |_| {}, &mut || {
            let path = path.clone();
            second = Some(std::thread::spawn(move || {
                take_over_if_stale(&path, wait, &mut |_| {}, &mut || {}).unwrap()
            }));
            std::thread::sleep(std::time::Duration::from_millis(300));
        })
        .unwrap();
        assert!(matches!(first, Takeover::Removed(pid) if pid == stale));
        // The first run's new lock, made before the second one looks again.
        std::fs::write(&path, "1\n").unwrap();
        let second = second.unwrap().join().unwrap();
        assert!(matches!(second, Takeover::Gone | Takeover::Held));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
    }

    #[test]
    fn an_old_lock_without_a_pid_that_nobody_holds_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holo.pid").to_str().unwrap().to_string();
        let wait = Duration::from_secs(1);
        std::fs::write(&path, "").unwrap();
        // Fresh: a run may be about to write its pid.
        let fresh = take_over_if_stale(&path, wait, &mut |_| {}, &mut || {}).unwrap();
        assert!(matches!(fresh, Takeover::Held));
        let old = std::time::SystemTime::now() - INCOMPLETE_LOCK_AGE * 2;
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let taken = take_over_if_stale(&path, wait, &mut |_| {}, &mut || {}).unwrap();
        assert!(matches!(taken, Takeover::RemovedIncomplete));
        assert!(!std::path::Path::new(&path).exists());
        // Holo 3's `0` is a complete line and stays held, however old.
        std::fs::write(&path, "0\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let zero = take_over_if_stale(&path, wait, &mut |_| {}, &mut || {}).unwrap();
        assert!(matches!(zero, Takeover::Held));
    }

    #[test]
    fn liveness() {
        assert!(!is_running(std::process::id()));
        assert!(!is_running(dead_pid()));
        assert!(is_running(1));
    }
}
