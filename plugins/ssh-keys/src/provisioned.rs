//! `$HOLO_STATE_DIR/provisioned-entities`: the entities provisioned so far,
//! one id a line, sorted, as Holo 3 keeps them. An entity listed there whose
//! key file is gone is scrubbed.

use std::io;
use std::path::PathBuf;

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::{Env, Error, Result};

fn path(env: &Env) -> PathBuf {
    env.state_dir.join("provisioned-entities")
}

/// The listed entity ids.
pub fn read(env: &Env) -> Result<Vec<String>> {
    let path = path(env);
    match env.root_fs()?.read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_string)
            .collect()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(Error::new(format!("cannot read {}: {err}", path.display()))),
    }
}

/// Lists `id` (`true`) or takes it off the list (`false`).
pub fn set(env: &Env, id: &str, listed: bool) -> Result<()> {
    let mut ids = read(env)?;
    if ids.iter().any(|known| known == id) == listed {
        return Ok(());
    }
    if listed {
        ids.push(id.to_string());
    } else {
        ids.retain(|known| known != id);
    }
    ids.sort();
    ids.dedup();
    let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let fs = env.root_fs()?;
    let path = path(env);
    fs.create_dir_all(&env.state_dir)
        .map_err(|err| Error::new(format!("cannot create {}: {err}", env.state_dir.display())))?;
    atomic::write(&fs, &path, text.as_bytes(), &WriteOptions::mode(0o644))
}
