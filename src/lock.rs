//! The lock of `holo apply`, `$ROOT/run/holo.pid`: holo-runlock's (shared
//! with the one-off runs of SDK plugins), found inside the root in test
//! mode, its messages printed in Holo 3's paragraphs, and its open file
//! passed to the plugins that declare `run-lock`.

use crate::loading::EXIT_FATAL;
use crate::output::{Output, Stream};
use crate::paths;
use holo_runlock::Notice;

/// The lock of a run.
pub struct RunLock {
    held: Option<holo_runlock::RunLock>,
}

/// Plugins that start after the lock is gone get no descriptor of it.
impl Drop for RunLock {
    fn drop(&mut self) {
        crate::plugin::share_run_lock(None);
    }
}

/// Prints a message of the lock.
fn print(out: &mut Output, notice: Notice) {
    match notice {
        Notice::Warning(text) => out.warn(Stream::Err, &text),
        Notice::Error(text) => out.error(Stream::Err, &text),
        Notice::Hint(text) => out.write(Stream::Err, format!("{text}\n").as_bytes()),
    }
}

/// Takes the lock, or prints Holo 3's message and returns the exit code.
pub fn acquire(root: &str, out: &mut Output) -> Result<RunLock, i32> {
    let path = paths::join(root, "run/holo.pid");
    let path = match crate::in_root::real_entry(root, std::path::Path::new(&path)) {
        Ok(real) => real,
        Err(error) => {
            print(
                out,
                Notice::Error(format!(
                    "Cannot create lock file {path}: open {path}: {}",
                    paths::errno_text(&error)
                )),
            );
            return Err(EXIT_FATAL);
        }
    };
    let held = holo_runlock::acquire(&path, &mut |notice| print(out, notice)).ok_or(EXIT_FATAL)?;
    // An interrupted run removes it too, but only once nothing it started
    // is alive (the caller releases it last).
    crate::plugin::share_run_lock(Some(held.raw_fd()));
    Ok(RunLock { held: Some(held) })
}

/// Removes the lock at the end of the run.
pub fn release(mut lock: RunLock, out: &mut Output) {
    if let Some(held) = lock.held.take()
        && let Err(notice) = held.release()
    {
        print(out, notice);
    }
}
