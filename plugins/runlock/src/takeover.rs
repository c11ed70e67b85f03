//! The race-free takeover of a stale lock (see the crate documentation).

use crate::holder::{Gone, gone, holder_pid};
use nix::fcntl::{Flock, FlockArg};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How old a lock file without a complete pid must be before a takeover
/// counts it as left by a killed run rather than one being created.
pub(crate) const INCOMPLETE_LOCK_AGE: Duration = Duration::from_secs(10);

/// How often a waiting takeover looks again.
const STALE_POLL: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) enum Takeover {
    /// The lock named this process, which is gone, and was removed.
    Removed(u32, Gone),
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

/// What a takeover is told and may be delayed by: `waiting` runs once when
/// it starts to wait for a dead holder's run; `before_remove` between the
/// check and the removal (tests widen the race window with it).
pub(crate) struct Hooks<'a> {
    pub wait: Duration,
    pub waiting: &'a mut dyn FnMut(u32),
    pub before_remove: &'a mut dyn FnMut(),
}

/// Removes the lock at `path` when its holder is gone.
pub(crate) fn take_over_if_stale(path: &Path, hooks: &mut Hooks) -> std::io::Result<Takeover> {
    let started = Instant::now();
    let mut announced = false;
    loop {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Takeover::Gone),
            Err(_) => return Ok(Takeover::Held),
        };
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(file) => file,
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
                // A live holder, or a dead one whose run lives on (or, for
                // a moment, another takeover).
                let Some(pid) = gone_holder(file) else {
                    return Ok(Takeover::Held);
                };
                let waited = started.elapsed();
                if waited >= hooks.wait {
                    return Ok(Takeover::StillHeldByRun(pid));
                }
                // A concurrent takeover holds it only for a moment.
                if !announced && waited >= Duration::from_secs(1) {
                    announced = true;
                    (hooks.waiting)(pid);
                }
                std::thread::sleep(STALE_POLL.min(hooks.wait - waited));
                continue;
            }
            Err(_) => return Ok(Takeover::Held),
        };
        return remove_if_stale(path, file, hooks);
    }
}

/// The pid of a lock whose holder is gone, read from the open lock.
fn gone_holder(mut file: std::fs::File) -> Option<u32> {
    let mut content = String::new();
    file.read_to_string(&mut content).ok()?;
    let written = file.metadata().and_then(|meta| meta.modified()).ok();
    holder_pid(&content).filter(|pid| gone(*pid, written).is_some())
}

/// Under the exclusive `flock` of the open lock: removes it when it is the
/// file at `path` and its holder is gone.
fn remove_if_stale(
    path: &Path,
    mut file: Flock<std::fs::File>,
    hooks: &mut Hooks,
) -> std::io::Result<Takeover> {
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
    let written = opened.modified().ok();
    let old = written
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age >= INCOMPLETE_LOCK_AGE);
    match holder_pid(&content) {
        Some(pid) => match gone(pid, written) {
            Some(why) => {
                (hooks.before_remove)();
                std::fs::remove_file(path)?;
                Ok(Takeover::Removed(pid, why))
            }
            None => Ok(Takeover::Held),
        },
        // A run killed between creating the lock and writing its pid:
        // nobody holds the file, and it is older than any run takes for
        // that one write. Holo 3's `0\n` is complete and stays held.
        None if !content.ends_with('\n') && old => {
            (hooks.before_remove)();
            std::fs::remove_file(path)?;
            Ok(Takeover::RemovedIncomplete)
        }
        None => Ok(Takeover::Held),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn take_over(path: &Path, wait: Duration, before_remove: &mut dyn FnMut()) -> Takeover {
        take_over_if_stale(
            path,
            &mut Hooks {
                wait,
                waiting: &mut |_| {},
                before_remove,
            },
        )
        .unwrap()
    }

    #[test]
    fn a_takeover_racing_another_never_removes_what_it_did_not_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holo.pid");
        let stale = dead_pid();
        std::fs::write(&path, format!("{stale}\n")).unwrap();
        let mut second = None;
        // While the first takeover is between its check and its removal, a
        // second one starts on the same stale file.
        let wait = Duration::from_secs(5);
        let first = take_over(&path, wait, &mut || {
            let path = path.clone();
            second = Some(std::thread::spawn(move || {
                take_over(&path, wait, &mut || {})
            }));
            std::thread::sleep(Duration::from_millis(300));
        });
        assert!(matches!(first, Takeover::Removed(pid, Gone::Ended) if pid == stale));
        // The first run's new lock, made before the second one looks again.
        std::fs::write(&path, "1\n").unwrap();
        let second = second.unwrap().join().unwrap();
        assert!(matches!(second, Takeover::Gone | Takeover::Held));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
    }

    fn age(path: &Path) {
        let old = std::time::SystemTime::now() - INCOMPLETE_LOCK_AGE * 2;
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn an_old_lock_without_a_pid_that_nobody_holds_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holo.pid");
        let wait = Duration::from_secs(1);
        std::fs::write(&path, "").unwrap();
        // Fresh: a run may be about to write its pid.
        assert!(matches!(take_over(&path, wait, &mut || {}), Takeover::Held));
        age(&path);
        let taken = take_over(&path, wait, &mut || {});
        assert!(matches!(taken, Takeover::RemovedIncomplete));
        assert!(!path.exists());
        // Holo 3's `0` is a complete line and stays held, however old.
        std::fs::write(&path, "0\n").unwrap();
        age(&path);
        assert!(matches!(take_over(&path, wait, &mut || {}), Takeover::Held));
    }
}
