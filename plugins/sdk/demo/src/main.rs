//! holo-demo: a trivial plugin on the SDK, used by the driver's and the
//! SDK's tests and the benchmarks; a crate of its own
//! (`publish = false`), never packaged. `[[demo]]` tables with `name` and
//! `value` (and optionally `announce`, printed through a child `echo` when
//! the entity changes) make apply write `$ROOT/var/lib/holo-demo/NAME`
//! containing `value`. A refresh (a subscribed entity changed) is announced
//! on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use holo_plugin::resources::{self, Resource};
use holo_plugin::{
    EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, atomic, process, state,
};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Demo {
    name: String,
    value: String,
    announce: Option<String>,
}

impl Resource for Demo {
    const KIND: &'static str = "demo";
    fn entity_id(&self) -> String {
        format!("demo:{}", self.name)
    }
}

#[derive(Serialize, Deserialize)]
struct Spec {
    value: String,
    announce: Option<String>,
}

/// The state record: what was last written.
#[derive(Serialize, Deserialize)]
struct Record {
    value: String,
}

struct DemoPlugin;

fn target(env: &Env, id: &str) -> PathBuf {
    env.root_join("/var/lib/holo-demo")
        .join(id.trim_start_matches("demo:"))
}

impl Plugin for DemoPlugin {
    const ID: &'static str = "demo";
    type Spec = Spec;

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Spec>>> {
        let mut found: Vec<Scanned<Spec>> = resources::load::<Demo>(env)?
            .into_iter()
            .map(|declared| {
                let spec = Spec {
                    value: declared.resource.value.clone(),
                    announce: declared.resource.announce.clone(),
                };
                declared
                    .scanned(spec)
                    .info("found in", declared.location.path.display().to_string())
            })
            .collect();
        state::add_orphans(env, &mut found)?;
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<Spec>, mode: Mode) -> Result<Outcome> {
        if entity.refresh {
            println!("refresh requested for {}", entity.id);
        }
        let path = target(env, &entity.id);
        let current = std::fs::read_to_string(&path).ok();
        let Some(spec) = &entity.spec else {
            if mode != Mode::Noop {
                if current.is_some() {
                    std::fs::remove_file(&path).map_err(|err| Error::io("remove", &path, &err))?;
                }
                state::remove(env, &entity.id)?;
            }
            return Ok(Outcome::Changed);
        };
        if current.as_deref() == Some(spec.value.as_str()) {
            return Ok(Outcome::NotChanged);
        }
        if mode == Mode::Apply {
            // Protection: a file we wrote earlier that a user edited or deleted.
            if let Some(record) = state::read::<Record>(env, &entity.id)? {
                match &current {
                    None => return Ok(Outcome::RequiresForceRestore),
                    Some(text) if *text != record.value => {
                        return Ok(Outcome::RequiresForceOverwrite);
                    }
                    Some(_) => {}
                }
            }
        }
        if mode == Mode::Noop {
            println!("Would have written {}", path.display());
            return Ok(Outcome::Changed);
        }
        let fs = env.root_fs()?;
        if let Some(parent) = path.parent() {
            fs.create_dir_all(parent)
                .map_err(|err| Error::io("create directory", parent, &err))?;
        }
        atomic::write(
            &fs,
            &path,
            spec.value.as_bytes(),
            &atomic::WriteOptions::mode(0o644),
        )?;
        state::write(
            env,
            &entity.id,
            &Record {
                value: spec.value.clone(),
            },
        )?;
        if let Some(text) = &spec.announce {
            process::Command::new("echo")
                .arg(text)
                .run_forwarded_checked()?;
        }
        Ok(Outcome::Changed)
    }

    fn diff(&self, env: &Env, entity: &EntityCtx<Spec>) -> Result<Option<(PathBuf, PathBuf)>> {
        let Some(spec) = &entity.spec else {
            return Ok(Some((PathBuf::from("/dev/null"), target(env, &entity.id))));
        };
        let desired = env
            .cache_dir
            .join("demo-desired")
            .join(entity.id.trim_start_matches("demo:"));
        if let Some(parent) = desired.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| Error::io("create directory", parent, &err))?;
        }
        std::fs::write(&desired, &spec.value).map_err(|err| Error::io("write", &desired, &err))?;
        Ok(Some((desired, target(env, &entity.id))))
    }
}

fn main() -> ExitCode {
    holo_plugin::run(DemoPlugin)
}
