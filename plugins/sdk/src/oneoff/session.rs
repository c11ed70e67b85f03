//! A one-off in a session (`holo session new`): the session directory
//! keeps what each one-off `ensure` did, so that a later one-off's
//! `--require` skips it when what it names failed, and its `--subscribe`
//! refreshes it when what it names changed, by holo-protocol's rule, as
//! `holo apply` does within a run. The directory's lock, records and
//! atomic writes are holo-session's.
//!
//! The directory comes from `--session DIR`, else `HOLO_SESSION`, else
//! CCM's `CCM_SESSION_STORE`; in test mode it must be inside the root.

use crate::env::Env;
use crate::error::{Error, Result};
use holo_protocol::order::Earlier;
use holo_protocol::session::{ENV_VARS, Record};
use holo_session::Locked;
use std::path::{Path, PathBuf};

/// An open session, locked until dropped.
pub(super) struct OpenSession {
    locked: Locked,
    shown: String,
}

/// Where the session is, when there is one, and what named it: `--session
/// DIR`, else the first of the variables that is set and not empty.
pub(super) fn locate(flag: Option<&str>) -> Option<(PathBuf, String)> {
    if let Some(dir) = flag {
        return Some((PathBuf::from(dir), "--session".to_string()));
    }
    ENV_VARS.iter().find_map(|name| {
        let value = std::env::var_os(name).filter(|value| !value.is_empty())?;
        Some((PathBuf::from(value), (*name).to_string()))
    })
}

impl OpenSession {
    /// Opens and locks the session at `dir`, named by `source`.
    pub(super) fn open(env: &Env, command: &str, dir: &Path, source: &str) -> Result<OpenSession> {
        let shown = format!("{command}: session {} (from {source})", dir.display());
        let fail = |why: String| Error::new(format!("{shown}: {why}"));
        if env.test_mode {
            inside_root(env, dir).map_err(fail)?;
        }
        let locked = Locked::open(dir).map_err(fail)?;
        Ok(OpenSession { locked, shown })
    }

    /// How `id` ended the last time a one-off of the session applied it.
    pub(super) fn earlier(&self, id: &str) -> Option<Earlier> {
        self.locked.session().earlier(id)
    }

    /// Appends `record` to the session.
    pub(super) fn record(&mut self, record: Record) -> Result<()> {
        let shown = &self.shown;
        self.locked
            .append(record)
            .map_err(|why| Error::new(format!("{shown}: {why}")))
    }
}

/// In test mode a session is kept inside the root.
fn inside_root(env: &Env, dir: &Path) -> std::result::Result<(), String> {
    let real = dir.canonicalize().map_err(|err| err.to_string())?;
    let root = env.root.canonicalize().map_err(|err| err.to_string())?;
    if real.starts_with(&root) {
        return Ok(());
    }
    Err(format!(
        "is outside the root {} (HOLO_ROOT_DIR); in test mode a session is kept inside the root: use holo session new",
        root.display()
    ))
}
