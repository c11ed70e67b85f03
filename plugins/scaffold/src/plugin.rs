//! The plugin on the SDK: scan renders every scaffold and shows the counts;
//! apply, noop, diff and scrub are carried out by [`crate::converge`]:
//! apply writes Changed files atomically (running `post` right after each),
//! purges, or removes the managed files for `absent`, then verifies; noop
//! prints CCM's message; diff shows every changed file in one pair of
//! files; the state record lists the managed files, and a scaffold that is
//! no longer declared gets its unchanged managed files removed.

use std::path::{Path, PathBuf};

use holo_plugin::resources::{self, Resource};
use holo_plugin::{
    Diff, EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, StatusTable, state,
};

use crate::converge::{
    converge, read_record, render, render_diff, render_file_diffs, resolve_source, scrub,
    template_context,
};
use crate::model::{ScaffoldSpec, ScaffoldTable};

/// The plugin, handed to [`holo_plugin::run`] by `main`.
pub struct ScaffoldPlugin;

/// Template trees named by a relative `source` are read on purpose, so the
/// strict loader does not warn about the files in them.
fn is_template_tree(path: &Path, declared: &[resources::Declared<ScaffoldTable>]) -> bool {
    declared.iter().any(|declared| {
        let (Some(source), Some(dir)) =
            (&declared.resource.source, declared.location.path.parent())
        else {
            return false;
        };
        !Path::new(source).is_absolute()
            && path.starts_with(resources::lexically_normal(&dir.join(source)))
    })
}

/// The source as scan shows it: the URL (without credentials, which a
/// URL source never has), or the directory where the admin put it.
fn shown_source(env: &Env, spec: &ScaffoldSpec) -> String {
    match &spec.url {
        Some(url) => holo_plugin::download::redact_url(&url.url),
        None => env.origin_of(&spec.source).display().to_string(),
    }
}

impl Plugin for ScaffoldPlugin {
    const ID: &'static str = "scaffold";
    type Spec = ScaffoldSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        resources::properties_with_ensure::<ScaffoldTable, resources::Ensure>()
    }

    /// CCM: `ccm ensure scaffold TARGET [SOURCE] [ENSURE]`; its one provider is choria.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &["source", "ensure"],
            provider: Some("choria"),
            entry_flags: &["post"],
        }
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        holo_plugin::oneoff::property_types::<ScaffoldTable>()
    }

    /// The target directory, the files holo-scaffold's record lists (or
    /// those present) and the last ensure's table.
    /// Kept as given: `status` has nothing else to read back.
    fn ensured_table(
        &self,
        table: holo_plugin::oneoff::Table,
    ) -> Option<holo_plugin::oneoff::Table> {
        Some(table)
    }

    fn status(&self, env: &Env, name: &str) -> Option<Result<StatusTable>> {
        Some(crate::converge::status_table(env, name))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<ScaffoldSpec>>> {
        let mut context = None;
        let declared = resources::load_reading::<ScaffoldTable>(env, is_template_tree)?;
        let mut found = resources::scan_each(declared, |declared| {
            let location = &declared.location;
            let test_root = env.test_mode.then_some(env.root.as_path());
            let validated = declared.resource.validate(&location.path, test_root);
            // A URL that cannot be fetched now (the network, the server) is
            // the entity's failure at apply, not the end of every plugin's
            // run; a directory source that is missing is a mistake in the
            // resource and fails the scan.
            let validated = validated.and_then(|spec| match resolve_source(env, &spec) {
                Ok(_) => Ok((spec, None)),
                Err(message) if spec.url.is_some() => Ok((spec, Some(message))),
                Err(message) => Err(message),
            });
            let (spec, unavailable) = match validated {
                Ok((spec, unavailable)) => (spec, unavailable),
                Err(message) => {
                    return Ok(Err(Error::new(format!(
                        "{location}: scaffold {:?}: {message}",
                        declared.resource.name
                    ))));
                }
            };
            let spec = ScaffoldSpec {
                protect: declared.common.protect.unwrap_or(true),
                max_render_size: declared.common.render_budget(),
                ..spec
            };
            if let Some(message) = unavailable {
                let entity = declared
                    .scanned(spec.clone())
                    .info("found in", location.to_string())
                    .info("source", shown_source(env, &spec))
                    .info("ensure", spec.ensure.as_str())
                    .info("files", format!("unknown: {message}"));
                return Ok(Ok(entity));
            }
            let context = match &context {
                Some(context) => context,
                None => context.insert(template_context(env)?),
            };
            let id = declared.resource.entity_id();
            let record = read_record(env, &id, &spec)?;
            let rendering = match render(env, context, &spec, &record) {
                Ok(rendering) => rendering,
                Err(err) => {
                    return Ok(Err(
                        err.context(format!("{location}: scaffold {:?}", spec.name))
                    ));
                }
            };
            let lists = &rendering.lists;
            let mut entity = declared
                .scanned(spec.clone())
                .info("found in", location.to_string())
                .info("source", shown_source(env, &spec))
                .info("ensure", spec.ensure.as_str())
                .info(
                    "files",
                    format!(
                        "{} changed, {} stable, {} purged",
                        lists.changed.len(),
                        lists.stable.len(),
                        lists.purged.len()
                    ),
                );
            if spec.purge {
                entity = entity.info("purge", "true");
            }
            Ok(Ok(entity))
        })?;
        state::add_orphans(env, &mut found)?;
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<ScaffoldSpec>, mode: Mode) -> Result<Outcome> {
        let result = match &entity.spec {
            Some(spec) => converge(env, &entity.id, spec, mode),
            None => scrub(env, &entity.id, mode),
        };
        result.map_err(|err| err.context(&entity.id))
    }

    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<ScaffoldSpec>,
    ) -> Result<Option<(PathBuf, PathBuf)>> {
        match &entity.spec {
            Some(spec) => render_diff(env, &entity.id, spec).map_err(|err| err.context(&entity.id)),
            None => Ok(None),
        }
    }

    fn diff_files(&self, env: &Env, entity: &EntityCtx<ScaffoldSpec>) -> Result<Vec<Diff>> {
        match &entity.spec {
            Some(spec) => {
                render_file_diffs(env, &entity.id, spec).map_err(|err| err.context(&entity.id))
            }
            None => Ok(Vec::new()),
        }
    }
}
