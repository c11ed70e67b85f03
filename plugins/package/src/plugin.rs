//! The plugin on the SDK: scan (one package manager query for all
//! packages), apply with self-healing or opt-in protection, scrubbing of
//! packages that are no longer declared, noop, diff, and state records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use holo_plugin::facts::Facts;
use holo_plugin::resources::{self, Resource};
use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, state};
use serde::{Deserialize, Serialize};

use crate::apply::{self, Current, Protection, Step};
use crate::model::{self, Ensure, PackageSpec, PackageTable, ProviderHints, ProviderKind};
use crate::provider::{self, Installed, Order};

/// Seconds to wait for another package manager's lock (default 300).
pub const LOCK_TIMEOUT_VARIABLE: &str = "HOLO_PACKAGE_LOCK_TIMEOUT";
/// Seconds after which the package lists count as stale (default 24 h).
pub const LISTS_MAX_AGE_VARIABLE: &str = "HOLO_PACKAGE_LISTS_MAX_AGE";
/// The marker in `$HOLO_CACHE_DIR` that the lists were checked in this run.
const LISTS_MARKER: &str = "package-lists-checked";

/// The package as scan saw it; `None` when it was not installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    pub arch: String,
}

impl From<&Installed> for Observed {
    fn from(package: &Installed) -> Self {
        Observed {
            version: package.version.clone(),
            epoch: package.epoch.clone(),
            arch: package.arch.clone(),
        }
    }
}

impl From<&Observed> for Installed {
    fn from(observed: &Observed) -> Self {
        Installed {
            name: String::new(),
            version: observed.version.clone(),
            epoch: observed.epoch.clone(),
            arch: observed.arch.clone(),
        }
    }
}

/// What scan hands to apply, noop and diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    pub spec: PackageSpec,
    /// The state at scan time, so that noop and diff need no query of their own.
    pub observed: Option<Observed>,
}

/// `$HOLO_STATE_DIR/package:NAME.toml`: what apply left behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    pub provider: ProviderKind,
    /// Whether the package was installed before holo first managed it; such
    /// a package stays installed when its resource is deleted.
    pub present_before: bool,
    /// The version apply left installed (RPM: `VERSION-RELEASE`); none when
    /// it left the package absent. (`version` is the record format's own key.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

impl Record {
    fn current(&self) -> Current {
        match &self.installed_version {
            None => Current::Absent,
            Some(version) => Current::Installed {
                version: match &self.epoch {
                    Some(epoch) => format!("{epoch}:{version}"),
                    None => version.clone(),
                },
            },
        }
    }
}

pub struct PackagePlugin;

fn current_of(installed: Option<&Installed>) -> Current {
    Installed::as_current(installed)
}

/// The provider hints from the facts and PATH, only gathered when a
/// resource leaves its provider open.
fn provider_hints(env: &Env) -> Result<ProviderHints> {
    let facts = Facts::gather(&env.root, env.test_mode).map_err(|err| {
        Error::new(format!(
            "cannot gather facts to choose a provider: {}",
            err.message()
        ))
    })?;
    let text = |key: &str| {
        facts
            .get(key)
            .and_then(|value| value.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let mut os_ids = vec![text("os.id")];
    os_ids.extend(text("os.id_like").split_whitespace().map(str::to_owned));
    os_ids.retain(|id| !id.is_empty());
    // In test mode the mock stands in for both, so PATH must not decide.
    let on_path = |program: &str| !env.test_mode && program_on_path(program);
    Ok(ProviderHints {
        os_ids,
        apt_on_path: on_path("apt-get"),
        dnf_on_path: on_path("dnf"),
        mock_database: env.test_mode.then(|| {
            env.root_join(provider::mock::DATABASE)
                .display()
                .to_string()
        }),
    })
}

fn program_on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn lock_timeout() -> Result<Duration> {
    provider::seconds_from_env(LOCK_TIMEOUT_VARIABLE, 300)
}

fn describe(spec: &PackageSpec) -> String {
    let mut with = format!(
        "ensure: {}, provider: {}",
        spec.ensure,
        spec.provider.name()
    );
    if spec.protect {
        with.push_str(", protected");
    }
    with
}

fn describe_observed(observed: Option<&Observed>) -> String {
    match observed {
        None => "not installed".to_owned(),
        Some(package) => format!(
            "{} ({})",
            Installed::from(package).full_version(),
            package.arch
        ),
    }
}

impl Plugin for PackagePlugin {
    const ID: &'static str = "package";
    type Spec = Entity;

    /// The keywords of `ensure` (a version is any other value): they give
    /// the one-off's `--present`, `--absent` and `--latest`.
    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        let mut properties = resources::properties::<PackageTable>();
        properties.push((
            "package.ensure".to_string(),
            vec!["present", "absent", "latest"],
        ));
        properties
    }

    /// CCM: `ccm ensure package NAME [ENSURE]`, ENSURE also a version.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &["ensure"],
            provider: None,
            entry_flags: &[],
        }
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        holo_plugin::oneoff::property_types::<PackageTable>()
    }

    fn flag_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("version", "ensure")]
    }

    /// The installed version as `ensure` (so the table pins it), or
    /// `absent`; the provider is chosen as for a table that names none.
    fn status(&self, env: &Env, name: &str) -> Option<Result<holo_plugin::StatusTable>> {
        let installed = || -> Result<Option<provider::Installed>> {
            // Refused as `ensure` refuses it: no package manager sees it.
            model::validate_name(name).map_err(|message| {
                Error::new(format!(
                    "holo-package status: {}{message}",
                    named_package(name)
                ))
            })?;
            let kind = model::choose_provider(None, &provider_hints(env)?)
                .map_err(|message| Error::new(format!("holo-package status {name}: {message}")))?;
            let mut manager = provider::open(kind, &env.root, env.test_mode);
            Ok(manager.status(&[name.to_string()])?.remove(name))
        };
        Some(installed().map(|installed| {
            let mut table = holo_plugin::oneoff::Table::new();
            let ensure = installed.map_or("absent".to_string(), |package| package.full_version());
            table.insert("ensure".to_string(), ensure.into());
            table.into()
        }))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Entity>>> {
        let declared = resources::load::<PackageTable>(env)?;
        let mut hints: Option<ProviderHints> = None;
        let specs = resources::scan_each(declared, |item| {
            if item.resource.provider.is_none() && hints.is_none() {
                hints = Some(provider_hints(env)?);
            }
            let mut table = item.resource.clone();
            table.protect = item.common.protect;
            Ok(
                match model::validate(&table, hints.as_ref().unwrap_or(&ProviderHints::default())) {
                    Ok(spec) => Ok((item, spec)),
                    Err((property, message)) => Err(Error::new(format!(
                        "{}: {}{message}",
                        item.location_of(property),
                        named_package(&item.resource.name)
                    ))),
                },
            )
        })?;

        let declared_ids: Vec<String> = specs
            .iter()
            .map(|(item, _)| item.resource.entity_id())
            .collect();
        let mut orphans = Vec::new();
        for id in state::list(env)? {
            if declared_ids.contains(&id) {
                continue;
            }
            if let Some(record) = state::read::<Record>(env, &id)? {
                orphans.push((id, record));
            }
        }

        // One query per package manager, however many packages.
        let mut names: BTreeMap<ProviderKind, Vec<String>> = BTreeMap::new();
        for (_, spec) in &specs {
            names
                .entry(spec.provider)
                .or_default()
                .push(spec.name.clone());
        }
        let mut observed: BTreeMap<ProviderKind, BTreeMap<String, Installed>> = BTreeMap::new();
        for (kind, names) in &names {
            let mut manager = provider::open(*kind, &env.root, env.test_mode);
            observed.insert(*kind, manager.status(names)?);
        }

        let mut found = Vec::new();
        for (item, spec) in specs {
            let seen = observed
                .get(&spec.provider)
                .and_then(|packages| packages.get(&spec.name))
                .map(Observed::from);
            let origin = item.location.to_string();
            let with = describe(&spec);
            let installed = describe_observed(seen.as_ref());
            let mut scanned = Scanned::new(
                item.resource.entity_id(),
                Entity {
                    spec,
                    observed: seen,
                },
            )
            .source(&item.location.path)
            .info("found in", origin)
            .info("with", with)
            .info("current", installed);
            for required in &item.common.require {
                scanned = scanned.requires(required.clone());
            }
            for subscribed in &item.common.subscribe {
                scanned = scanned.subscribes(subscribed.clone());
            }
            found.push(scanned);
        }
        for (id, record) in orphans {
            let mut orphan = Scanned::orphan(id);
            let stays = if record.present_before {
                Some("the package was installed before holo managed it, so it stays installed")
            } else if record.installed_version.is_none() {
                Some("holo left the package absent, so nothing is removed")
            } else {
                None
            };
            if let Some(stays) = stays {
                orphan = orphan.action("Scrubbing", Some(format!("resource was deleted; {stays}")));
            }
            found.push(orphan);
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<Entity>, mode: Mode) -> Result<Outcome> {
        let result = match &entity.spec {
            Some(declared) => converge(env, &entity.id, declared, mode),
            None => scrub(env, &entity.id, mode),
        };
        result.map_err(|err| err.context(&entity.id))
    }

    fn diff(&self, env: &Env, entity: &EntityCtx<Entity>) -> Result<Option<(PathBuf, PathBuf)>> {
        render_diff(env, entity).map_err(|err| err.context(&entity.id))
    }

    fn subcommand(&self, _env: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
        if name != "version-compare" {
            return None;
        }
        let outcome = crate::version::version_compare_command(args);
        print!("{}", outcome.stdout);
        eprint!("{}", outcome.stderr);
        Some(Ok(ExitCode::from(
            u8::try_from(outcome.exit_code).unwrap_or(1),
        )))
    }
}

/// `package "NAME": `, the start of a message about a package; empty for an
/// over-long name, whose message already shows its start.
fn named_package(name: &str) -> String {
    if name.len() > model::NAME_MAX {
        return String::new();
    }
    format!("package {name:?}: ")
}

/// Brings a declared package to its desired state.
/// `ensure = "absent"` on a package others depend on: the package manager
/// would remove them too. Refused without `--force`, which removes them
/// and names them.
fn check_casualties(
    manager: &mut dyn provider::PackageManager,
    name: &str,
    step: &Step,
    mode: Mode,
) -> Result<()> {
    if *step != Step::Uninstall {
        return Ok(());
    }
    let casualties = manager.removal_casualties(name)?;
    if casualties.is_empty() {
        return Ok(());
    }
    let list = casualties.join(", ");
    if mode == Mode::Force {
        println!("Removing {name} also removes {list}, which depend on it");
        return Ok(());
    }
    Err(Error::new(format!(
        "refusing to remove {name}: the removal would also remove {list}, which depend on it; remove those first, or run holo apply --force to remove them all"
    )))
}

fn converge(env: &Env, id: &str, entity: &Entity, mode: Mode) -> Result<Outcome> {
    let spec = &entity.spec;
    let order = Order(spec.provider);
    let mut manager = provider::open(spec.provider, &env.root, env.test_mode);

    if mode == Mode::Noop {
        let current = current_of(entity.observed.as_ref().map(Installed::from).as_ref());
        let recorded: Option<Record> = state::read(env, id)?;
        if let Some(outcome) = protected(spec, recorded.as_ref(), &current) {
            return Ok(outcome);
        }
        let step = apply::decide(&spec.ensure, &current, &order);
        if step == Step::Uninstall {
            let casualties = manager.removal_casualties(&spec.name)?;
            println!("{}", apply::noop_removal_message(&casualties));
            return Ok(Outcome::Changed);
        }
        let candidate = match step {
            Step::Install => manager.candidate(&spec.name)?,
            _ => None,
        };
        return Ok(match apply::noop_message(&step, candidate.as_deref()) {
            Some(message) => {
                println!("{message}");
                Outcome::Changed
            }
            None => Outcome::NotChanged,
        });
    }

    // Query again: an earlier install in this run may have changed it.
    let before = provider::installed(manager.as_mut(), &spec.name)?;
    let before = before.as_ref();
    let current = current_of(before);
    let recorded: Option<Record> = state::read(env, id)?;
    if mode == Mode::Apply
        && let Some(outcome) = protected(spec, recorded.as_ref(), &current)
    {
        return Ok(outcome);
    }

    let present_before = recorded
        .as_ref()
        .map_or(before.is_some(), |record| record.present_before);
    let step = apply::decide(&spec.ensure, &current, &order);
    if step == Step::Nothing {
        write_record(env, id, spec, before, present_before, recorded.as_ref())?;
        return Ok(Outcome::NotChanged);
    }

    check_casualties(manager.as_mut(), &spec.name, &step, mode)?;
    let timeout = lock_timeout()?;
    if provider::needs_lists(&step) {
        let max_age = provider::seconds_from_env(LISTS_MAX_AGE_VARIABLE, 24 * 60 * 60)?;
        provider::refresh_lists_once(
            manager.as_mut(),
            &env.cache_dir.join(LISTS_MARKER),
            max_age,
            timeout,
        )?;
    }
    provider::wait_for_locks(&manager.lock_files(), timeout)?;
    provider::forget_installed(spec.provider);
    manager.converge(&spec.name, &step)?;

    let after = provider::installed(manager.as_mut(), &spec.name)?;
    let after = after.as_ref();
    let reached = current_of(after);
    if !apply::is_desired_state(&spec.ensure, &reached, &order) {
        return Err(Error::new(format!(
            "desired state not achieved: {}; see the package manager's output above",
            apply::describe_mismatch(&spec.ensure, &reached)
        )));
    }
    write_record(env, id, spec, after, present_before, recorded.as_ref())?;
    // `latest` always runs the package manager, which may change nothing.
    Ok(if reached == current {
        Outcome::NotChanged
    } else {
        Outcome::Changed
    })
}

/// With `protect = true`: the outcome that leaves a package changed by hand
/// alone (`None` when apply may go ahead).
fn protected(spec: &PackageSpec, recorded: Option<&Record>, current: &Current) -> Option<Outcome> {
    if !spec.protect {
        return None;
    }
    let recorded = recorded.map(Record::current);
    match apply::protection(
        &spec.ensure,
        recorded.as_ref(),
        current,
        &Order(spec.provider),
    ) {
        Protection::Proceed => None,
        Protection::RequiresForceRestore => Some(Outcome::RequiresForceRestore),
        Protection::RequiresForceOverwrite => Some(Outcome::RequiresForceOverwrite),
    }
}

/// Writes the state record when it differs from the one on disk.
fn write_record(
    env: &Env,
    id: &str,
    spec: &PackageSpec,
    installed: Option<&Installed>,
    present_before: bool,
    previous: Option<&Record>,
) -> Result<()> {
    let record = Record {
        name: spec.name.clone(),
        provider: spec.provider,
        present_before,
        installed_version: installed.map(|p| p.version.clone()),
        epoch: installed.and_then(|p| p.epoch.clone()),
        arch: installed.map(|p| p.arch.clone()),
    };
    if previous == Some(&record) {
        return Ok(());
    }
    state::write(env, id, &record)
}

/// Undoes what the plugin did for a package that is no longer declared.
fn scrub(env: &Env, id: &str, mode: Mode) -> Result<Outcome> {
    let Some(record) = state::read::<Record>(env, id)? else {
        return Ok(Outcome::NotChanged);
    };
    let forget = |env: &Env| -> Result<Outcome> {
        if mode != Mode::Noop {
            state::remove(env, id)?;
        }
        Ok(Outcome::Changed)
    };
    // Only a package that holo installed, and left installed, is removed.
    if record.present_before || record.installed_version.is_none() {
        return forget(env);
    }
    let mut manager = provider::open(record.provider, &env.root, env.test_mode);
    if provider::installed(manager.as_mut(), &record.name)?.is_none() {
        return forget(env);
    }
    let casualties = manager.removal_casualties(&record.name)?;
    if !casualties.is_empty() {
        return Err(Error::new(format!(
            "refusing to remove {}: the removal would also remove {}; remove those first, or declare {} again",
            record.name,
            casualties.join(", "),
            record.name
        )));
    }
    if mode == Mode::Noop {
        println!("Would have uninstalled");
        return Ok(Outcome::Changed);
    }
    provider::wait_for_locks(&manager.lock_files(), lock_timeout()?)?;
    provider::forget_installed(record.provider);
    manager.converge(&record.name, &Step::Uninstall)?;
    if let Some(left) = provider::installed(manager.as_mut(), &record.name)? {
        return Err(Error::new(format!(
            "desired state not achieved: scrubbing should have removed it, but version {} is still installed",
            left.full_version()
        )));
    }
    state::remove(env, id)?;
    Ok(Outcome::Changed)
}

fn order_satisfies(kind: ProviderKind, installed: &Installed, wanted: &str) -> bool {
    use crate::apply::VersionOrder;
    Order(kind).satisfies(&installed.full_version(), wanted)
}

/// The TOML text for one side of the diff.
fn render_side(name: &str, version: Option<&str>, arch: Option<&str>) -> String {
    let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let mut text = format!("[[package]]\nname = {}\n", quote(name));
    if let Some(version) = version {
        text += &format!("version = {}\n", quote(version));
    }
    if let Some(arch) = arch {
        text += &format!("arch = {}\n", quote(arch));
    }
    text
}

fn render_diff(env: &Env, entity: &EntityCtx<Entity>) -> Result<Option<(PathBuf, PathBuf)>> {
    let dev_null = PathBuf::from("/dev/null");
    let (name, observed, desired) = match &entity.spec {
        Some(declared) => {
            let spec = &declared.spec;
            let observed = declared.observed.as_ref().map(Installed::from);
            let desired_version = match &spec.ensure {
                Ensure::Absent => None,
                Ensure::Present => match &observed {
                    Some(installed) => Some(installed.full_version()),
                    None => provider::open(spec.provider, &env.root, env.test_mode)
                        .candidate(&spec.name)?,
                },
                Ensure::Latest => provider::open(spec.provider, &env.root, env.test_mode)
                    .candidate(&spec.name)?
                    .or_else(|| observed.as_ref().map(Installed::full_version)),
                // A version that the installed one satisfies (dnf: no release
                // given) shows as what is installed, so that it gives no diff.
                Ensure::Version(version) => Some(match &observed {
                    Some(installed) if order_satisfies(spec.provider, installed, version) => {
                        installed.full_version()
                    }
                    _ => version.clone(),
                }),
            };
            let desired = (spec.ensure != Ensure::Absent).then(|| {
                render_side(
                    &spec.name,
                    desired_version.as_deref(),
                    observed.as_ref().map(|p| p.arch.as_str()),
                )
            });
            (spec.name.clone(), observed, desired)
        }
        None => {
            let Some(record) = state::read::<Record>(env, &entity.id)? else {
                return Ok(None);
            };
            let mut manager = provider::open(record.provider, &env.root, env.test_mode);
            let status = manager.status(std::slice::from_ref(&record.name))?;
            let observed = status.get(&record.name).cloned();
            // A package that was there before holo stays: its desired state is what is there.
            let desired = if record.present_before || record.installed_version.is_none() {
                observed
                    .as_ref()
                    .map(|p| render_side(&record.name, Some(&p.full_version()), Some(&p.arch)))
            } else {
                None
            };
            (record.name.clone(), observed, desired)
        }
    };
    let actual = observed
        .as_ref()
        .map(|p| render_side(&name, Some(&p.full_version()), Some(&p.arch)));
    if desired == actual {
        return Ok(None);
    }
    let dir = env.cache_dir.join(&entity.id);
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, &err))?;
    let write_side = |file: &str, text: Option<String>| -> Result<PathBuf> {
        match text {
            None => Ok(dev_null.clone()),
            Some(text) => {
                let path = dir.join(file);
                std::fs::write(&path, text).map_err(|err| Error::io("write", &path, &err))?;
                Ok(path)
            }
        }
    };
    Ok(Some((
        write_side("desired.toml", desired)?,
        write_side("actual.toml", actual)?,
    )))
}
