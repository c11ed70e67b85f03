//! The `Plugin` implementation: scan reads the repository and the stored
//! bases itself (the resources are files to provision, not TOML tables);
//! apply and diff work from what scan cached.

use std::collections::BTreeSet;
use std::path::PathBuf;

use holo_plugin::{EntityCtx, Env, Error, Extension, Mode, Outcome, Plugin, Result, Scanned};

use crate::converge::{self, Places};
use crate::model::{self, FileSpec, RepoEntry, entity_id, shown};
use crate::provider::fs as files;
use crate::provider::repository;

/// Holo 3's holo-files.
pub struct FilesPlugin;

impl Plugin for FilesPlugin {
    const ID: &'static str = "files";
    /// `inplace`: the repository is only read, so holo need not copy it.
    /// No `order`: files have no dependencies.
    const EXTENSIONS: &'static [Extension] =
        &[Extension::Noop, Extension::Batch, Extension::Inplace];
    /// A batch stages the base, target and provisioned copy of every
    /// target and commits them together (one sync for many files); they
    /// are renamed in the order they were written, so a kill never leaves
    /// a target ahead of its base.
    const STAGES_WRITES: bool = true;
    type Spec = FileSpec;

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<FileSpec>>> {
        let stacked = model::stack(repository::entries(&env.resource_dir)?);
        let fs = env.root_fs()?;
        let bases = repository::stored_bases(&fs, &env.state_dir.join("base"))?;
        let mut found = Vec::with_capacity(stacked.len());
        let declared: BTreeSet<&String> = stacked.keys().collect();
        for target in bases.iter().filter(|target| !declared.contains(target)) {
            let places = Places::of(env, target);
            // Like Holo 3, a directory where the target was counts as deleted.
            let target_deleted = files::read(&fs, &places.target)?.buffer().is_none();
            found.push(orphan(&places, target_deleted));
        }
        for (target, entries) in stacked {
            found.push(provisioned(env, target, entries));
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(found)
    }

    /// As under Holo 3, an entity that cannot be applied gets its `!!`
    /// message and the plugin still exits 0, so that the driver adds no
    /// `!! exit status 1` of its own.
    fn apply(&self, env: &Env, entity: &EntityCtx<FileSpec>, mode: Mode) -> Result<Outcome> {
        apply_entity(env, entity, mode).or_else(|err| {
            use std::io::Write;
            let _ = std::io::stdout().flush();
            for line in err.message().lines() {
                eprintln!("!! {line}");
            }
            Ok(Outcome::Changed)
        })
    }

    /// The last provisioned version against the target as it is now.
    fn diff(&self, env: &Env, entity: &EntityCtx<FileSpec>) -> Result<Option<(PathBuf, PathBuf)>> {
        let Some(spec) = &entity.spec else {
            return Ok(None);
        };
        let places = Places::of(env, spec.target());
        Ok(Some((
            PathBuf::from(shown(&places.provisioned)),
            PathBuf::from(shown(&places.target)),
        )))
    }
}

fn apply_entity(env: &Env, entity: &EntityCtx<FileSpec>, mode: Mode) -> Result<Outcome> {
    match &entity.spec {
        Some(FileSpec::Provision { target, entries }) => {
            converge::provision(env, target, entries, mode)
        }
        Some(FileSpec::Scrub {
            target,
            target_deleted,
        }) => converge::scrub(env, target, *target_deleted, mode),
        None => Err(Error::new(format!(
            "{}: nothing is known of this entity; run holo scan to see the entities of holo-files",
            entity.id
        ))),
    }
}

fn provisioned(env: &Env, target: String, entries: Vec<RepoEntry>) -> Scanned<FileSpec> {
    let places = Places::of(env, &target);
    let mut scanned = Scanned::new(
        entity_id(&target),
        FileSpec::Provision {
            target: target.clone(),
            entries: Vec::new(),
        },
    )
    .info("store at", shown(&places.base));
    for entry in &entries {
        scanned = scanned
            .source(&entry.path)
            .info(entry.kind.verb(), shown(&entry.path));
    }
    scanned.spec = Some(FileSpec::Provision { target, entries });
    scanned
}

fn orphan(places: &Places, target_deleted: bool) -> Scanned<FileSpec> {
    let (reason, verb) = match target_deleted {
        true => ("target was deleted", "delete"),
        false => ("all repository files were deleted", "restore"),
    };
    Scanned::new(
        entity_id(&places.name),
        FileSpec::Scrub {
            target: places.name.clone(),
            target_deleted,
        },
    )
    .action("Scrubbing", Some(reason.to_string()))
    .info(verb, shown(&places.base))
}
