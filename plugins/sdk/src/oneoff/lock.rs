//! Holo's run lock for a one-off: holo-runlock's, which `holo apply` takes
//! too, with a stale lock taken over the same way, and its messages
//! printed as holo prints them.

use super::report::Printer;
use crate::env::Env;
use holo_runlock::Notice;
use std::path::{Path, PathBuf};

/// The held lock, released (and the release's trouble printed) on drop.
pub(super) struct Locked {
    held: Option<holo_runlock::RunLock>,
}

impl Drop for Locked {
    fn drop(&mut self) {
        if let Some(held) = self.held.take()
            && let Err(notice) = held.release()
        {
            Printer::default().notice(&notice);
        }
    }
}

/// Takes `ROOT/run/holo.pid`; `None` once the failure is printed.
pub(super) fn acquire(env: &Env, printer: &mut Printer) -> Option<Locked> {
    let path = env.root_join("run/holo.pid");
    let real = match lock_path(env, &path) {
        Ok(real) => real,
        Err(err) => {
            let shown = path.display();
            printer.notice(&Notice::Error(format!(
                "Cannot create lock file {shown}: open {shown}: {}",
                holo_runlock::errno_text(&err)
            )));
            return None;
        }
    };
    let held = holo_runlock::acquire(&real, &mut |notice| printer.notice(&notice))?;
    Some(Locked { held: Some(held) })
}

/// The lock's path on the host: in test mode resolved inside the root (its
/// directory made), shown as given when that is the same place.
fn lock_path(env: &Env, path: &Path) -> std::io::Result<PathBuf> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(path.to_path_buf());
    };
    if !env.test_mode {
        return Ok(path.to_path_buf());
    }
    let fs = env
        .root_fs()
        .map_err(|err| std::io::Error::other(err.message().to_string()))?;
    fs.create_dir_all(parent)?;
    let real = fs.real_path(parent)?;
    if std::fs::canonicalize(parent).ok().as_deref() == Some(real.as_path()) {
        return Ok(path.to_path_buf());
    }
    Ok(real.join(name))
}
