//! The plugin on the SDK: scan (validation and the reason a command would
//! run) and apply (the decision table, the checks, then the run).

use holo_plugin::resources;
use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, StatusTable};

use crate::apply::{self, Decision, Run};
use crate::model::{ExecResource, ExecSpec};
use crate::provider::Provider;

/// The plugin.
pub struct ExecPlugin;

impl Plugin for ExecPlugin {
    const ID: &'static str = "exec";
    type Spec = ExecSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        resources::properties::<ExecResource>()
    }

    /// CCM: `ccm ensure exec COMMAND`; `provider` is a property.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &[],
            provider: None,
            entry_flags: &[],
        }
    }

    /// CCM's flag names for properties of ours.
    fn flag_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("exec-if", "onlyif"), ("exec-unless", "unless_command")]
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        holo_plugin::oneoff::property_types::<ExecResource>()
    }

    /// What the last `holo-exec ensure NAME` ran, with how it went as
    /// comments; without one, a comment that a command cannot be observed.
    /// Kept as given: `status` has nothing else to read back.
    fn ensured_table(
        &self,
        table: holo_plugin::oneoff::Table,
    ) -> Option<holo_plugin::oneoff::Table> {
        Some(table)
    }

    fn status(&self, env: &Env, name: &str) -> Option<Result<StatusTable>> {
        Some(status_table(env, name))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<ExecSpec>>> {
        resources::scan_each(resources::load::<ExecResource>(env)?, |declared| {
            let location = &declared.location;
            let spec = match declared
                .resource
                .validate(!declared.common.subscribe.is_empty())
            {
                Ok(spec) => ExecSpec {
                    subscribe: declared.common.subscribe.clone(),
                    ..spec
                },
                Err((property, problem)) => {
                    return Ok(Err(Error::new(format!(
                        "{}: exec {:?}: {problem}",
                        declared.location_of(property),
                        declared.resource.name
                    ))));
                }
            };
            // Entity id, SOURCE and REQUIRES/SUBSCRIBES come from the SDK.
            let mut entity = declared
                .scanned(spec.clone())
                .action("Executing", None)
                .info("found in", location.to_string())
                .info("command", spec.command.clone());
            if spec.provider != Provider::Posix {
                entity = entity.info("provider", spec.provider.as_str());
            }
            entity = entity.info("reason", apply::scan_reason(env, &spec));
            Ok(Ok(entity))
        })
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<ExecSpec>, mode: Mode) -> Result<Outcome> {
        // Commands keep no state, so there is never an orphan to scrub.
        let Some(spec) = &entity.spec else {
            return Ok(Outcome::NotChanged);
        };
        let creates_exists = apply::creates_exists(env, spec);
        let run = match apply::decide(entity.refresh, creates_exists, spec.refresh_only) {
            Decision::Skip(_) => return Ok(Outcome::NotChanged),
            Decision::Run(run) => run,
        };
        let check = |property: &str, text: &Option<String>| -> Result<Option<bool>> {
            text.as_deref()
                .map(|text| apply::check_succeeds(env, spec, property, text))
                .transpose()
        };
        let skip = apply::check_commands(
            || check("onlyif", &spec.onlyif),
            || check("unless_command", &spec.unless_command),
        )?;
        if skip.is_some() {
            return Ok(Outcome::NotChanged);
        }
        if mode == Mode::Noop {
            match run {
                Run::Refresh => println!("Would have executed via subscribe"),
                Run::Apply => println!("Would have executed"),
            }
            return Ok(Outcome::Changed);
        }
        if run == Run::Refresh {
            println!("{}", apply::refresh_reason(spec));
        }
        let result = apply::execute(env, spec, run == Run::Refresh);
        if let Err(err) = result {
            if !apply::run_succeeded(
                false,
                spec.creates.is_some(),
                apply::creates_exists(env, spec),
            ) {
                return Err(err);
            }
            // CCM's rule: the creates file is the desired state.
            println!(
                "{}; creates {} exists, so the run counts as successful",
                err.message().lines().next().unwrap_or_default(),
                spec.creates.as_deref().unwrap_or_default()
            );
        }
        Ok(Outcome::Changed)
    }
}

/// The table of `holo-exec status NAME` (see [`ExecPlugin::status`]).
fn status_table(env: &Env, name: &str) -> Result<StatusTable> {
    let id = format!("exec:{name}");
    let Some(ensured) = holo_plugin::oneoff::ensured(env, &id)? else {
        return Ok(StatusTable {
            unknown: vec![(
                "command".to_string(),
                format!(
                    "holo-exec has no record of exec {name:?} (only holo-exec ensure keeps one), and a command leaves nothing to read back; fill in the command (without it the name runs as the command) and creates, onlyif or unless_command, so that it does not run on every apply"
                ),
            )],
            ..StatusTable::default()
        });
    };
    let creates = ensured
        .table
        .get("creates")
        .and_then(|value| value.as_str())
        .map(|path| {
            let exists = env
                .root_fs()
                .is_ok_and(|fs| fs.metadata(&env.root_join(path)).is_ok());
            (path, exists)
        });
    Ok(StatusTable {
        notes: apply::status_notes(
            ensured.result,
            &ensured.at_text(),
            ensured.message.as_deref(),
            creates,
        ),
        properties: ensured.table.clone(),
        unknown: Vec::new(),
    })
}
