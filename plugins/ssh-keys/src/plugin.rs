//! The glue to the SDK: scan reads the key files and the list of provisioned
//! entities; apply provisions or scrubs one key set with the decisions of
//! `apply.rs`; diff shows the key file against the entity's keys in
//! `authorized_keys`.

use std::io;
use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned};

use crate::apply;
use crate::fingerprint;
use crate::model::{self, KeySet};
use crate::provider::posix;
use crate::provisioned;

/// Holo 3's `holo-ssh-keys`.
pub struct SshKeysPlugin;

impl Plugin for SshKeysPlugin {
    const ID: &'static str = "ssh-keys";
    type Spec = KeySet;

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<KeySet>>> {
        let fs = env.root_fs()?;
        let mut found = Vec::new();
        let mut errors = Vec::new();
        for user in sorted_names(&fs, &env.resource_dir)? {
            let user_dir = env.resource_dir.join(&user);
            if !fs.is_dir(&user_dir) {
                continue;
            }
            for file in sorted_names(&fs, &user_dir)? {
                let Some(name) = file.strip_suffix(".pub") else {
                    continue;
                };
                let path = user_dir.join(&file);
                if fs.is_file(&path) {
                    match scan_key_file(env, &fs, &user, name, &path) {
                        Ok(entity) => found.push(entity),
                        Err(messages) => errors.extend(messages),
                    }
                }
            }
        }
        if !errors.is_empty() {
            return Err(Error::new(errors.join("\n")));
        }
        for id in provisioned::read(env)? {
            if !found.iter().any(|entity| entity.id == id) {
                found.push(
                    Scanned::orphan(id)
                        .action("Scrubbing", Some("source file has been deleted".into())),
                );
            }
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<KeySet>, mode: Mode) -> Result<Outcome> {
        let user = user_of(&entity.id)?;
        let fs = env.root_fs()?;
        let home = posix::home_of(env, &fs, user)?;
        let Some(keys) = &entity.spec else {
            if let Some(home) = &home {
                let path = home.authorized_keys(env);
                let before = posix::read_lines(&fs, &path)?;
                let after = apply::scrub(&before, &entity.id);
                if after != before && mode != Mode::Noop {
                    posix::write_authorized_keys(env, &fs, home, &before, &after)?;
                }
            }
            if mode != Mode::Noop {
                provisioned::set(env, &entity.id, false)?;
            }
            return Ok(Outcome::Changed);
        };
        let Some(home) = home else {
            return Err(Error::new(format!(
                "{}: user {user} does not exist; create the user first, or remove {}",
                entity.id,
                env.origin_of(key_file(env, keys)).display()
            )));
        };
        let before = posix::read_lines(&fs, &home.authorized_keys(env))?;
        let after = apply::provision(&before, &entity.id, &keys.keys);
        if mode != Mode::Noop {
            posix::write_authorized_keys(env, &fs, &home, &before, &after)?;
            provisioned::set(env, &entity.id, true)?;
        }
        Ok(if after == before {
            Outcome::NotChanged
        } else {
            Outcome::Changed
        })
    }

    fn diff(&self, env: &Env, entity: &EntityCtx<KeySet>) -> Result<Option<(PathBuf, PathBuf)>> {
        let user = user_of(&entity.id)?;
        let (_, name) = model::split_entity_id(&entity.id).unwrap_or((user, ""));
        let fs = env.root_fs()?;
        let before = match posix::home_of(env, &fs, user)? {
            Some(home) => posix::read_lines(&fs, &home.authorized_keys(env))?,
            None => Vec::new(),
        };
        let keys = entity.spec.as_ref().map_or(&[][..], |set| &set.keys[..]);
        let image: String = apply::current_image(&before, &entity.id, keys)
            .iter()
            .map(|line| format!("{line}\n"))
            .collect();
        let current = env.cache_dir.join(format!("{name}@{user}"));
        std::fs::write(&current, image)
            .map_err(|err| Error::new(format!("cannot write {}: {err}", current.display())))?;
        let desired = env.resource_dir.join(user).join(format!("{name}.pub"));
        Ok(Some((desired, current)))
    }
}

/// One key file as an entity, with a `key is` line per key; or one
/// message per line that is not a readable key.
fn scan_key_file(
    env: &Env,
    fs: &RootFs,
    user: &str,
    name: &str,
    path: &Path,
) -> std::result::Result<Scanned<KeySet>, Vec<String>> {
    let shown = env.origin_of(path).display().to_string();
    let text = fs
        .read_to_string(path)
        .map_err(|err| vec![format!("cannot read {shown}: {err}")])?;
    let (keys, mut errors) = model::parse_key_file(&text);
    let mut described = Vec::new();
    for key in &keys {
        match fingerprint::describe(&key.key) {
            Ok(line) => described.push(line),
            Err(err) => errors.push((key.line_number, err)),
        }
    }
    if !errors.is_empty() {
        errors.sort();
        return Err(errors
            .into_iter()
            .map(|(line, err)| format!("{shown}:{line}: {err}; fix or remove the line"))
            .collect());
    }
    let set = KeySet {
        user: user.to_string(),
        name: name.to_string(),
        keys,
    };
    let mut entity = Scanned::new(model::entity_id(user, name), set)
        .source(path)
        .info("found in", shown);
    for line in described {
        entity = entity.info("key is", line);
    }
    Ok(entity)
}

fn user_of(id: &str) -> Result<&str> {
    model::split_entity_id(id)
        .map(|(user, _)| user)
        .ok_or_else(|| {
            Error::new(format!(
                "{id} is not an entity of holo-ssh-keys; its entities are ssh-keyset:USER/NAME"
            ))
        })
}

fn key_file(env: &Env, keys: &KeySet) -> PathBuf {
    env.resource_dir
        .join(&keys.user)
        .join(format!("{}.pub", keys.name))
}

/// The entries of `dir` in byte order; none when it does not exist.
fn sorted_names(fs: &RootFs, dir: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = match fs.read_dir_names(dir) {
        Ok(names) => names
            .into_iter()
            .filter_map(|name| name.into_string().ok())
            .filter(|name| !name.starts_with('.'))
            .collect(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(err) => {
            return Err(Error::new(format!("cannot list {}: {err}", dir.display())));
        }
    };
    names.sort();
    Ok(names)
}
