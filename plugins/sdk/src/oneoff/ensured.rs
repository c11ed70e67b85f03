//! Where a one-off's records go, and what `ensure` keeps for `status`.

use crate::env::Env;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The state directory `ensure` uses for entities `ids`: holo's own when
/// it has a record for one of them, else the one-off directory (see the
/// module documentation).
pub(super) fn state_dir_for(holo_env: &Env, ids: &[&str]) -> PathBuf {
    if ids
        .iter()
        .any(|id| crate::state::record_path(holo_env, id).exists())
    {
        holo_env.state_dir.clone()
    } else {
        one_off_state_dir(holo_env)
    }
}

fn one_off_state_dir(env: &Env) -> PathBuf {
    env.root_join(format!("var/lib/holo/ensure/{}", env.plugin_id))
}

/// Where `ensure` keeps [`Ensured`]: beside the one-off records, whichever
/// state directory the records went to.
fn ensured_dir(env: &Env) -> PathBuf {
    env.root_join(format!("var/lib/holo/ensure/{}.ensured", env.plugin_id))
}

/// `env` with another state directory.
fn env_with_state_dir(env: &Env, state_dir: &Path) -> Result<Env> {
    let cache = env.cache_dir.clone().into_os_string();
    let root = env.root.clone().into_os_string();
    let origin = env.resource_origin.clone().into_os_string();
    let resources = env.resource_dir.clone().into_os_string();
    Env::from_lookup(&env.plugin_id, |key| match key {
        "HOLO_STATE_DIR" => Some(state_dir.as_os_str().to_os_string()),
        "HOLO_CACHE_DIR" => Some(cache.clone()),
        "HOLO_ROOT_DIR" => Some(root.clone()),
        "HOLO_RESOURCE_ORIGIN" => Some(origin.clone()),
        "HOLO_RESOURCE_DIR" => Some(resources.clone()),
        _ => std::env::var_os(key),
    })
}

/// For `status`: `env` with the state directory that holds the record of
/// entity `id`, holo's own when it has one, else the one-off directory
/// (which may have none either).
pub fn record_env(env: &Env, id: &str) -> Result<Env> {
    env_with_state_dir(env, &state_dir_for(env, &[id]))
}

/// How the last `ensure` of an entity went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnsureResult {
    /// The plugin changed something (for holo-exec: the command ran).
    Changed,
    /// Nothing needed changing.
    NotChanged,
    /// The apply failed.
    Failed,
    /// A manual change was left alone: it needs `--force-apply`.
    NeedsForce,
}

/// What the last `ensure` of an entity converged and how it went, kept in
/// `ROOT/var/lib/holo/ensure/ID.ensured/` for `status`: the properties the
/// flags gave (as [`Plugin::ensured_table`](crate::plugin::Plugin::ensured_table) leaves them), not a `--noop`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ensured {
    /// The properties but `name`.
    pub table: toml::Table,
    /// When it ran, in seconds since the epoch: the file's modification
    /// time, so that the file holds nothing that changes from run to run
    /// of the same one-off.
    #[serde(skip)]
    pub at: u64,
    pub result: EnsureResult,
    /// The first line of the error of a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Ensured {
    /// `at` as `YYYY-MM-DD HH:MM:SS UTC`.
    pub fn at_text(&self) -> String {
        utc_text(self.at)
    }
}

fn ensured_path(env: &Env, id: &str) -> PathBuf {
    ensured_dir(env).join(crate::state::entity_file_name(id, ".toml"))
}

/// What the last `ensure` of entity `id` kept, `None` when none ran or the
/// plugin keeps nothing ([`Plugin::ensured_table`](crate::plugin::Plugin::ensured_table)).
pub fn ensured(env: &Env, id: &str) -> Result<Option<Ensured>> {
    let fs = env.root_fs()?;
    let path = ensured_path(env, id);
    let text = match fs.read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io("read", &path, &err)),
    };
    let mut ensured: Ensured = toml::from_str(&text).map_err(|err| {
        Error::new(format!(
            "{}: not what holo-{} ensure writes ({}); remove it, and ensure writes it again",
            path.display(),
            env.plugin_id,
            err.message()
        ))
    })?;
    ensured.at = fs
        .metadata(&path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_secs());
    Ok(Some(ensured))
}

/// Writes what `ensure` keeps, readable by its owner only: commands and
/// template data may hold what others must not read.
pub(super) fn keep_ensured(env: &Env, id: &str, ensured: &Ensured) -> Result<()> {
    let fs = env.root_fs()?;
    let dir = ensured_dir(env);
    fs.create_dir_all(&dir)
        .map_err(|err| Error::io("create", &dir, &err))?;
    let text = toml::to_string(ensured)
        .map_err(|err| Error::new(format!("cannot write what ensure converged: {err}")))?;
    crate::atomic::write(
        &fs,
        &ensured_path(env, id),
        text.as_bytes(),
        &crate::atomic::WriteOptions::mode(0o600),
    )
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_text(seconds: u64) -> String {
    format!("{} UTC", crate::common::utc_date(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_text(1_795_657_255), "2026-11-26 01:40:55 UTC");
    }
}
