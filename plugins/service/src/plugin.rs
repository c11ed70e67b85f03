//! The plugin on the SDK: scan, apply in two phases with the subscribe
//! refresh, self-healing or opt-in protection, verification after a change,
//! noop, diff, and the state records of what apply left behind.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use holo_plugin::resources::{self, Resource};
use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, state};
use serde::{Deserialize, Serialize};

use crate::apply::{self, Observed, Protection, Recorded};
use crate::model::{ServiceSpec, ServiceTable, unit_name};
use crate::provider::{self, Status};

/// `$HOLO_STATE_DIR/service:NAME.toml`: the state apply left the service in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    pub running: bool,
    pub enabled: bool,
}

impl Record {
    fn recorded(&self) -> Recorded {
        Recorded {
            running: self.running,
            enabled: self.enabled,
        }
    }
}

pub struct ServicePlugin;

fn observed(status: &Status) -> Observed {
    Observed {
        active: status.active,
        enabled: status.enabled,
    }
}

fn describe(spec: &ServiceSpec) -> String {
    let mut with = format!("ensure: {}", spec.ensure);
    if let Some(enable) = spec.enable {
        with.push_str(&format!(", enable: {enable}"));
    }
    if spec.protect {
        with.push_str(", protected");
    }
    with
}

impl Plugin for ServicePlugin {
    const ID: &'static str = "service";
    type Spec = ServiceSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        resources::properties::<ServiceTable>()
    }

    /// CCM: `ccm ensure service NAME [ENSURE]`; its one provider is systemd.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &["ensure"],
            provider: Some("systemd"),
            entry_flags: &[],
        }
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        use holo_plugin::oneoff::ValueType;
        // `ensure` has its own parser, so the probe cannot see its values.
        let mut types = holo_plugin::oneoff::property_types::<ServiceTable>();
        for (name, value_type) in &mut types {
            if *name == "ensure" {
                *value_type = ValueType::OneOf(&["running", "stopped"]);
            }
        }
        types
    }

    /// Whether the service runs and starts at boot, as `ensure` and `enable`.
    fn status(&self, env: &Env, name: &str) -> Option<Result<holo_plugin::StatusTable>> {
        let status = provider::open(env).status(name);
        Some(status.map(|status| {
            let mut table = holo_plugin::oneoff::Table::new();
            let ensure = if status.running() {
                "running"
            } else {
                "stopped"
            };
            table.insert("ensure".to_string(), ensure.into());
            table.insert("enable".to_string(), status.enabled.into());
            table.into()
        }))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<ServiceSpec>>> {
        let declared = resources::load::<ServiceTable>(env)?;
        refuse_duplicate_units(&declared)?;
        let mut found = Vec::new();
        for item in &declared {
            let spec = ServiceSpec::new(&item.resource, item.common.protect);
            let with = describe(&spec);
            found.push(
                item.scanned(spec)
                    .info("found in", item.location.to_string())
                    .info("with", with),
            );
        }
        let declared_ids: HashSet<String> = found.iter().map(|entity| entity.id.clone()).collect();
        for id in state::list(env)? {
            if declared_ids.contains(&id) {
                continue;
            }
            found.push(Scanned::orphan(id).action(
                "Scrubbing",
                Some("resource was deleted; the service is left as it is".to_owned()),
            ));
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<ServiceSpec>, mode: Mode) -> Result<Outcome> {
        let result = match &entity.spec {
            Some(spec) => converge(env, &entity.id, spec, mode, entity.refresh),
            None => forget(env, &entity.id, mode),
        };
        result.map_err(|err| err.context(&entity.id))
    }

    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<ServiceSpec>,
    ) -> Result<Option<(PathBuf, PathBuf)>> {
        render_diff(env, entity).map_err(|err| err.context(&entity.id))
    }
}

/// `nginx` and `nginx.service` are one unit: declared both ways, each run
/// would start one and stop the other. Refused like a duplicate entity,
/// naming both places.
fn refuse_duplicate_units(declared: &[resources::Declared<ServiceTable>]) -> Result<()> {
    let mut first: HashMap<String, &resources::Declared<ServiceTable>> = HashMap::new();
    let mut errors = Vec::new();
    for item in declared {
        let unit = unit_name(&item.resource.name);
        match first.get(&unit) {
            Some(earlier) if earlier.resource.name != item.resource.name => {
                errors.push(Error::new(format!(
                    "{}: {} is the same unit {unit} as {}, first declared at {}; remove one of them",
                    item.location,
                    item.resource.entity_id(),
                    earlier.resource.entity_id(),
                    earlier.location
                )));
            }
            Some(_) => {}
            None => {
                first.insert(unit, item);
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::many(errors))
    }
}

/// Brings a declared service to its desired state: running state first,
/// boot configuration second.
fn converge(env: &Env, id: &str, spec: &ServiceSpec, mode: Mode, refresh: bool) -> Result<Outcome> {
    let mut provider = provider::open(env);
    let before = provider.status(&spec.name)?;
    let recorded: Option<Record> = state::read(env, id)?;
    if mode != Mode::Force {
        let protection = apply::protection(
            spec.protect,
            spec.ensure,
            spec.enable,
            recorded.as_ref().map(Record::recorded),
            &observed(&before),
        );
        match protection {
            Protection::Proceed => {}
            Protection::RequiresForceRestore => return Ok(Outcome::RequiresForceRestore),
            Protection::RequiresForceOverwrite => return Ok(Outcome::RequiresForceOverwrite),
        }
    }

    let steps: Vec<_> = [
        apply::running_step(spec.ensure, before.running(), refresh),
        apply::enabled_step(spec.enable, before.enabled),
    ]
    .into_iter()
    .flatten()
    .collect();
    let outcome = if steps.is_empty() {
        Outcome::NotChanged
    } else {
        Outcome::Changed
    };

    if mode == Mode::Noop {
        for verb in &steps {
            println!("{}", apply::noop_message(*verb));
        }
        return Ok(outcome);
    }

    let after = if steps.is_empty() {
        before
    } else {
        for verb in &steps {
            provider.change(*verb, &spec.name)?;
        }
        let after = provider.status(&spec.name)?;
        if let Some(problem) = apply::mismatch(spec.ensure, spec.enable, &observed(&after)) {
            return Err(Error::new(format!(
                "desired state not achieved: {problem}; see systemctl status {}",
                spec.name
            )));
        }
        after
    };
    write_record(env, id, spec, &after, recorded.as_ref())?;
    Ok(outcome)
}

fn write_record(
    env: &Env,
    id: &str,
    spec: &ServiceSpec,
    status: &Status,
    previous: Option<&Record>,
) -> Result<()> {
    let record = Record {
        name: spec.name.clone(),
        running: status.running(),
        enabled: status.enabled,
    };
    if previous == Some(&record) {
        return Ok(());
    }
    state::write(env, id, &record)
}

/// A service that is no longer declared is left as it is; only the record goes.
fn forget(env: &Env, id: &str, mode: Mode) -> Result<Outcome> {
    if state::read::<Record>(env, id)?.is_none() {
        return Ok(Outcome::NotChanged);
    }
    if mode != Mode::Noop {
        state::remove(env, id)?;
    }
    Ok(Outcome::Changed)
}

/// One side of the diff: a `[[service]]` table.
fn render_side(name: &str, running: bool, enabled: Option<bool>) -> String {
    let name = toml::Value::String(name.to_owned());
    let ensure = if running { "running" } else { "stopped" };
    let mut text = format!("[[service]]\nname = {name}\nensure = \"{ensure}\"\n");
    if let Some(enabled) = enabled {
        text.push_str(&format!("enable = {enabled}\n"));
    }
    text
}

/// Desired and current state as short TOML; the boot configuration shows
/// only when the resource sets `enable`.
fn render_diff(env: &Env, entity: &EntityCtx<ServiceSpec>) -> Result<Option<(PathBuf, PathBuf)>> {
    let Some(spec) = &entity.spec else {
        return Ok(None);
    };
    let current = provider::open(env).status(&spec.name)?;
    let desired = render_side(
        &spec.name,
        spec.ensure == crate::model::Ensure::Running,
        spec.enable,
    );
    let actual = render_side(
        &spec.name,
        current.running(),
        spec.enable.map(|_| current.enabled),
    );
    if desired == actual {
        return Ok(None);
    }
    holo_plugin::report::diff_texts(env, &entity.id, Some(&desired), Some(&actual)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_render_as_short_toml() {
        assert_eq!(
            render_side("web", true, Some(false)),
            "[[service]]\nname = \"web\"\nensure = \"running\"\nenable = false\n"
        );
        assert_eq!(
            render_side("getty@tty1", false, None),
            "[[service]]\nname = \"getty@tty1\"\nensure = \"stopped\"\n"
        );
    }
}
