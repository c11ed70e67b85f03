//! The `Plugin` implementation: scan reads the definitions and finds the
//! entities whose definitions are gone; apply provisions or scrubs one
//! entity with the decisions of `apply.rs`; diff writes the desired and
//! the actual state as TOML into the cache.

use std::path::{Path, PathBuf};

use holo_plugin::command::command_line;
use holo_plugin::resources::lexically_normal;
use holo_plugin::{EntityCtx, Env, Error, Extension, Mode, Outcome, Plugin, Result, Scanned};

use crate::apply::{self, Facts, ScrubStep, Step};
use crate::definitions::{self, Found, Source};
use crate::image::{self, Image};
use crate::model::{Definition, Entity, Kind};
use crate::provider::{Tools, passwd, shadow};

/// holo-users-groups.
pub struct UsersGroupsPlugin;

/// Holo 3's reason for scrubbing.
const SCRUB_REASON: &str = "all definition files have been deleted";

impl Plugin for UsersGroupsPlugin {
    const ID: &'static str = "users-groups";
    /// Not `inplace`: Holo 3's messages name the resource directory.
    const EXTENSIONS: &'static [Extension] = &[Extension::Noop, Extension::Order, Extension::Batch];
    type Spec = Definition;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        vec![
            ("group".to_string(), definitions::GROUP_KEYS.to_vec()),
            ("user".to_string(), definitions::USER_KEYS.to_vec()),
        ]
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Definition>>> {
        image::migrate_old_state(env)?;
        let found = read_definitions(env)?;
        let mut scanned: Vec<Scanned<Definition>> = found
            .entities
            .into_iter()
            .map(|(id, stacked)| {
                let description = stacked.definition.description();
                let mut entity = Scanned::new(id, stacked.definition);
                for source in stacked.sources {
                    entity = entity.source(source);
                }
                for source in stacked.found_in {
                    // Clean, as Holo 3 prints it (its driver passes ./ROOT/).
                    let origin = lexically_normal(&env.origin_of(&source));
                    entity = entity.info("found in", origin.display().to_string());
                }
                entity.info("with", description)
            })
            .collect();
        // As in Holo 3, an entity is Holo's when it has a base image.
        let known: std::collections::BTreeSet<&str> = scanned
            .iter()
            .map(|entity| entity.id.as_str())
            .chain(found.broken.iter().map(String::as_str))
            .collect();
        let orphans: Vec<String> = Image::Base
            .ids(env)?
            .into_iter()
            .filter(|id| !known.contains(id.as_str()))
            .collect();
        drop(known);
        for id in orphans {
            scanned.push(Scanned::orphan(id).action("Scrubbing", Some(SCRUB_REASON.to_string())));
        }
        scanned.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(scanned)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<Definition>, mode: Mode) -> Result<Outcome> {
        let (kind, name) = parse_id(&entity.id)?;
        let accounts = passwd::read(env)?;
        let actual = accounts.actual(kind, name);
        let run = Run {
            env,
            mode,
            tools: Tools::for_env(env)?,
        };
        match &entity.spec {
            Some(definition) => run.provision(definition, actual.as_ref()),
            None => run.scrub(kind, name, actual.as_ref()),
        }
    }

    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<Definition>,
    ) -> Result<Option<(PathBuf, PathBuf)>> {
        let (kind, name) = parse_id(&entity.id)?;
        let actual = passwd::read(env)?.actual(kind, name);
        let provisioned = Image::Provisioned.read(env, &entity.id)?;
        let desired = match (&entity.spec, provisioned) {
            // A scrubbed entity: what Holo last left against what is there.
            (None, None) => return Ok(None),
            (None, Some(provisioned)) => provisioned,
            (Some(definition), provisioned) => {
                apply::diff_desired(definition, provisioned.as_ref().or(actual.as_ref()))
            }
        };
        let dir = env.cache_dir.join(&entity.id);
        std::fs::create_dir_all(&dir).map_err(|err| Error::io("create directory", &dir, &err))?;
        let desired_path = dir.join("desired.toml");
        let actual_path = dir.join("actual.toml");
        write_file(&desired_path, Some(&desired))?;
        write_file(&actual_path, actual.as_ref())?;
        Ok(Some((desired_path, actual_path)))
    }
}

/// Reads every `*.toml` of the resource directory in order, printing
/// Holo 3's block for each file with problems.
fn read_definitions(env: &Env) -> Result<Found> {
    let mut found = Found::default();
    let dir = &env.resource_dir;
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml") && path.is_file())
            .collect(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => return Err(Error::io("read directory", dir, &err)),
    };
    paths.sort();
    for path in paths {
        let origin = env.origin_of(&path);
        let problems = match std::fs::read(&path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => {
                    let source = Source {
                        path: &path,
                        origin: &origin,
                        text: &text,
                    };
                    definitions::read_file(&source, &mut found)
                }
                Err(_) => vec![format!(
                    "{}: not UTF-8 text; save it as UTF-8",
                    origin.display()
                )],
            },
            Err(err) => vec![format!("{}: cannot read: {err}", origin.display())],
        };
        if !problems.is_empty() {
            let mut text = format!("!! File {} is invalid:\n", path.display());
            for problem in problems {
                text.push_str(&format!(">> {problem}\n"));
            }
            eprint!("{text}");
        }
    }
    found.finish();
    Ok(found)
}

fn parse_id(id: &str) -> Result<(Kind, &str)> {
    Kind::parse_id(id).ok_or_else(|| {
        Error::new(format!(
            "{id} is not an entity of holo-users-groups; its entities are user:NAME and group:NAME"
        ))
    })
}

/// The base image, or what it would be now (the actual state, or just the
/// name); and whether it is on disk.
fn base_of(
    env: &Env,
    id: &str,
    kind: Kind,
    name: &str,
    actual: Option<&Entity>,
) -> Result<(Entity, bool)> {
    Ok(match Image::Base.read(env, id)? {
        Some(base) => (base, true),
        None => (
            actual.cloned().unwrap_or_else(|| Entity::named(kind, name)),
            false,
        ),
    })
}

fn write_file(path: &Path, entity: Option<&Entity>) -> Result<()> {
    match entity {
        Some(entity) => std::fs::write(path, image::serialize(entity))
            .map_err(|err| Error::io("write", path, &err)),
        None => match std::fs::remove_file(path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", path, &err))
            }
            _ => Ok(()),
        },
    }
}

/// One entity's apply.
struct Run<'a> {
    env: &'a Env,
    mode: Mode,
    tools: Tools,
}

impl Run<'_> {
    fn provision(&self, definition: &Definition, actual: Option<&Entity>) -> Result<Outcome> {
        let id = definition.id();
        let (kind, name) = (definition.kind, definition.name.as_str());
        let (base, base_on_disk) = base_of(self.env, &id, kind, name, actual)?;
        let provisioned = Image::Provisioned.read(self.env, &id)?;
        let force = self.mode == Mode::Force;
        let desired = apply::desired(definition, &base, actual, provisioned.as_ref(), force);
        let changes = actual.map(|actual| apply::changes(actual, &desired.entity));
        let facts = Facts {
            exists: actual.is_some(),
            as_desired: changes.as_ref().is_some_and(Vec::is_empty),
            provisioned: provisioned.is_some(),
            overrides: match (actual, &provisioned) {
                (Some(actual), Some(_)) => apply::overrides(actual, &desired.entity),
                _ => desired.contradicts_base,
            },
            force,
        };
        if !base_on_disk && self.mode != Mode::Noop {
            Image::Base.write(self.env, &base)?;
        }
        let argv = match (apply::step(facts), actual, changes) {
            (Step::NotChanged, Some(actual), _) => {
                self.record(actual)?;
                return Ok(Outcome::NotChanged);
            }
            (Step::RequiresRestore, ..) => return Ok(Outcome::RequiresForceRestore),
            (Step::RequiresOverwrite, ..) => return Ok(Outcome::RequiresForceOverwrite),
            (Step::Modify, Some(actual), Some(changes)) => shadow::modify(actual, &changes),
            _ => shadow::create(&desired.entity, definition.system),
        };
        if !self.carry_out(&argv)? {
            return Ok(Outcome::Changed);
        }
        let after = self.state_after(actual, &desired.entity)?;
        self.record(&after)?;
        Ok(Outcome::Changed)
    }

    fn scrub(&self, kind: Kind, name: &str, actual: Option<&Entity>) -> Result<Outcome> {
        let id = Entity::named(kind, name).id();
        let argv = match Image::Base.read(self.env, &id)? {
            Some(base) => match (apply::scrub_step(base.is_empty(), actual.is_some()), actual) {
                (ScrubStep::Delete, Some(actual)) => Some(shadow::delete(actual)),
                (ScrubStep::Restore, Some(actual)) => {
                    Some(shadow::modify(actual, &apply::changes(actual, &base)))
                }
                (ScrubStep::Recreate, _) => Some(shadow::create(&base, false)),
                _ => None,
            },
            None => None,
        };
        if let Some(argv) = &argv
            && !self.carry_out(argv)?
        {
            return Ok(Outcome::Changed);
        }
        if self.mode != Mode::Noop {
            Image::Base.remove(self.env, &id)?;
            Image::Provisioned.remove(self.env, &id)?;
        }
        Ok(if argv.is_some() {
            Outcome::Changed
        } else {
            Outcome::NotChanged
        })
    }

    /// Runs (or mocks) the command; in noop mode says what it would run
    /// and returns false.
    fn carry_out(&self, argv: &[String]) -> Result<bool> {
        if self.mode == Mode::Noop {
            println!("Would run: {}", command_line(argv));
            return Ok(false);
        }
        // Holo 3 prints `usermod NAME` for a restore that changes nothing;
        // the real usermod refuses to run without an option.
        let changes_nothing = argv.len() == 2 && argv[0].ends_with("mod");
        if !(changes_nothing && self.tools != Tools::Mock) {
            self.tools.run(argv)?;
        }
        Ok(true)
    }

    /// The entity after the command: read back, or simulated in test mode.
    fn state_after(&self, before: Option<&Entity>, desired: &Entity) -> Result<Entity> {
        if self.tools == Tools::Mock {
            return Ok(apply::simulated(before, desired));
        }
        passwd::read(self.env)?
            .actual(desired.kind, &desired.name)
            .ok_or_else(|| {
                Error::new(format!(
                    "{} succeeded, but {} is not in /etc/passwd or /etc/group; check the shadow tools' configuration",
                    command_line(&shadow::create(desired, false)[..1]),
                    desired.id()
                ))
            })
    }

    fn record(&self, entity: &Entity) -> Result<()> {
        if self.mode == Mode::Noop {
            return Ok(());
        }
        Image::Provisioned.write(self.env, entity)
    }
}
