//! The plugin trait and the types a plugin exchanges with the SDK: what scan
//! found, the entity handed to apply, the apply mode and its outcome.

use std::path::PathBuf;
use std::process::ExitCode;

use holo_protocol::{extension, fd3};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::Result;

/// One of the protocol extensions (holo-plugin-interface(7), EXTENSIONS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    /// `noop ENTITY`: say what apply would do, change nothing.
    Noop,
    /// `REQUIRES:`/`SUBSCRIBES:` scan lines.
    Order,
    /// `apply-batch` and friends.
    Batch,
    /// Resources are only read, so the driver may point `HOLO_RESOURCE_DIR`
    /// at the static directory instead of copying it.
    Inplace,
}

impl Extension {
    /// The name used in `EXTENSIONS=` and `HOLO_EXTENSIONS`.
    pub fn name(self) -> &'static str {
        match self {
            Extension::Noop => extension::NOOP,
            Extension::Order => extension::ORDER,
            Extension::Batch => extension::BATCH,
            Extension::Inplace => extension::INPLACE,
        }
    }
}

/// What a property's value is in TOML, as the resource type asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    String,
    Integer,
    Bool,
    /// An enum: one of these names.
    OneOf(&'static [&'static str]),
    /// A list of values of one type; a repeated flag adds an element.
    Array(Box<ValueType>),
    /// A table, given in TOML's inline syntax: `--data '{ port = 8080 }'`.
    Table,
    /// Several types (untagged enums, custom parsers): given as a string,
    /// which such properties accept (`mode = "0644"`, `owner = "0"`).
    Any,
}

impl ValueType {
    /// A flag's or file's text as a TOML value of this type, or what the
    /// type wants when the text is not of it: loading the table would name
    /// neither the flag nor what to give. Strings, choices and properties of
    /// several types (a mode, an owner) are checked when the table is loaded.
    pub(crate) fn parse_text(&self, text: &str) -> std::result::Result<toml::Value, &'static str> {
        match self {
            ValueType::Integer => text
                .trim()
                .parse()
                .map(toml::Value::Integer)
                .map_err(|_| "an integer"),
            ValueType::Bool => text
                .trim()
                .parse()
                .map(toml::Value::Boolean)
                .map_err(|_| "true or false"),
            ValueType::Array(element) => element.parse_text(text),
            ValueType::Table => format!("value = {text}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut parsed| parsed.remove("value"))
                .filter(toml::Value::is_table)
                .ok_or("an inline TOML table such as '{ key = \"value\" }'"),
            ValueType::String | ValueType::OneOf(_) | ValueType::Any => {
                Ok(toml::Value::String(text.to_string()))
            }
        }
    }
}

/// A holo plugin: one typed resource kind.
///
/// Implement this and hand the plugin to [`crate::run`] from `main`.
pub trait Plugin {
    /// The plugin id, e.g. `file` for `holo-file`.
    const ID: &'static str;
    /// The extensions declared in `info`.
    const EXTENSIONS: &'static [Extension] = &[
        Extension::Noop,
        Extension::Order,
        Extension::Batch,
        Extension::Inplace,
    ];
    /// In a batch, [`crate::atomic::write`] stages the plugin's writes and
    /// the SDK commits them together: one sync for many files (see
    /// [`crate::atomic`]). A plugin that opts in reads back nothing it
    /// wrote in the same entity (it uses what [`crate::atomic::stage`]
    /// returns) and calls [`crate::atomic::commit_staged`] before it
    /// removes a directory.
    const STAGES_WRITES: bool = false;
    /// The per-entity desired state that scan found; cached between scan and apply.
    /// A scan builds its report beside the scan cache: hence `Sync`.
    type Spec: Serialize + DeserializeOwned + Sync;

    /// Finds every entity: those in the resources, and orphans that the state
    /// records show were applied earlier but are no longer declared.
    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Self::Spec>>>;

    /// Brings one entity to its desired state (or, with [`Mode::Noop`], says
    /// what it would do). Print messages with `println!`/`eprintln!`.
    fn apply(&self, env: &Env, entity: &EntityCtx<Self::Spec>, mode: Mode) -> Result<Outcome>;

    /// The two files to diff: desired state first, current state second.
    /// `None` when the entity has no meaningful diff.
    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<Self::Spec>,
    ) -> Result<Option<(PathBuf, PathBuf)>> {
        let _ = (env, entity);
        Ok(None)
    }

    /// The properties the plugin's resources accept, by section, for the
    /// hidden operation `holo-ID properties` (one `SECTION PROPERTY` line
    /// each), which the test of the man pages reads. A plugin on
    /// [`crate::resources`] returns [`crate::resources::properties`] for its
    /// resource type.
    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        Vec::new()
    }

    /// Like [`Plugin::diff`], with extended header lines for what the two
    /// files cannot show, such as `old mode 100644`/`new mode 100600` for the
    /// full permission bits or `old owner root`/`new owner nobody`
    /// (desired first). They replace the driver's own mode lines when it
    /// announced `diff-header`; give them only when both sides exist and are
    /// of the same type. By default, [`Plugin::diff`] without header lines.
    fn diff_with_header(&self, env: &Env, entity: &EntityCtx<Self::Spec>) -> Result<Option<Diff>> {
        Ok(self.diff(env, entity)?.map(|(desired, current)| Diff {
            desired,
            current,
            header: Vec::new(),
        }))
    }

    /// Like [`Plugin::diff_with_header`], for an entity that is several
    /// files: one [`Diff`] per file, each naming the file's real path, when
    /// the driver announced `diff-files`. By default, the one diff of
    /// [`Plugin::diff_with_header`].
    fn diff_files(&self, env: &Env, entity: &EntityCtx<Self::Spec>) -> Result<Vec<Diff>> {
        Ok(self.diff_with_header(env, entity)?.into_iter().collect())
    }

    /// The value type of each property of the plugin's `[[KIND]]` table,
    /// for the flags of `holo-ID ensure`; a plugin on [`crate::resources`]
    /// returns [`crate::oneoff::property_types`] for its resource type.
    /// Empty (the default) means the plugin has no `ensure`.
    fn property_types(&self) -> Vec<(&'static str, ValueType)> {
        Vec::new()
    }

    /// Flags of `holo-ID ensure` that stand for a property under another
    /// name: `(flag, property)`, e.g. `("version", "ensure")` for
    /// `holo-package ensure nginx --version 1.24`.
    fn flag_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// How `holo-ID ensure` takes CCM's command line for this kind: the
    /// properties its bare words after NAME give, and its one provider
    /// when its table has no `provider` (see
    /// [`OneOffSyntax`](crate::oneoff::OneOffSyntax)). By default none.
    fn oneoff_syntax(&self) -> crate::oneoff::OneOffSyntax {
        crate::oneoff::OneOffSyntax::default()
    }

    /// For `holo-ID status NAME`: the table that would declare the current
    /// state of `NAME` (see [`StatusTable`]). `None` (the default) means the
    /// plugin has no `status`.
    fn status(&self, env: &Env, name: &str) -> Option<Result<StatusTable>> {
        let _ = (env, name);
        None
    }

    /// What `holo-ID ensure` keeps of the table it converged, for `status`
    /// (see [`crate::oneoff::ensured`]), in a file only its owner reads.
    /// `None` (the default) keeps nothing: for a plugin whose `status` reads
    /// everything back from the system. A plugin that keeps the table
    /// removes or redacts what must not be written down, such as
    /// credentials.
    fn ensured_table(&self, table: toml::Table) -> Option<toml::Table> {
        let _ = table;
        None
    }

    /// Plugin-specific subcommands (`facts`, `version-compare`, ...): return
    /// `None` when `name` is not one of them. A plugin whose resources are
    /// not TOML tables may answer `ensure` and `status` here itself (with
    /// [`crate::oneoff::run_ensure`] for the run).
    fn subcommand(&self, env: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
        let _ = (env, name, args);
        None
    }
}

/// What `holo-ID status NAME` prints: a `[[KIND]]` table with `name`
/// first, the notes and the properties to fill in as comments, then
/// `properties`. `status` exits 3 when `unknown` is not empty, so that a
/// script can tell a table that declares the whole state from one that
/// needs filling in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusTable {
    /// The properties (other than `name`), plain values and lists of them.
    pub properties: toml::Table,
    /// What is known that no property holds (such as how the last run
    /// went), one comment line each.
    pub notes: Vec<String>,
    /// The properties that cannot be read back: `(property, what to fill
    /// in)`.
    pub unknown: Vec<(String, String)>,
}

impl From<toml::Table> for StatusTable {
    fn from(properties: toml::Table) -> Self {
        StatusTable {
            properties,
            ..StatusTable::default()
        }
    }
}

/// What `diff` hands the driver: see [`Plugin::diff_with_header`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// The desired state.
    pub desired: PathBuf,
    /// The current state.
    pub current: PathBuf,
    /// Extended header lines, without newlines.
    pub header: Vec<String>,
}

/// How apply was invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `apply`: leave entities alone that a user edited.
    Apply,
    /// `force-apply`: converge whatever the current state is.
    Force,
    /// `noop`: print what would change, change nothing.
    Noop,
}

/// What apply did. The SDK turns it into the FD 3 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The entity was changed (or, in noop mode, would be).
    Changed,
    /// Nothing had to change: `not changed`.
    NotChanged,
    /// A user edited the entity: `requires --force to overwrite`.
    RequiresForceOverwrite,
    /// A user deleted the entity: `requires --force to restore`.
    RequiresForceRestore,
}

impl Outcome {
    /// The FD 3 line for this outcome, if any.
    pub fn fd3_message(self) -> Option<&'static str> {
        match self {
            Outcome::Changed => None,
            Outcome::NotChanged => Some(fd3::NOT_CHANGED),
            Outcome::RequiresForceOverwrite => Some(fd3::REQUIRES_FORCE_OVERWRITE),
            Outcome::RequiresForceRestore => Some(fd3::REQUIRES_FORCE_RESTORE),
        }
    }
}

/// An `ACTION: verb (reason)` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// E.g. `Scrubbing`.
    pub verb: String,
    /// E.g. `resource was deleted`.
    pub reason: Option<String>,
}

/// One entity as scan found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scanned<S> {
    /// The entity id, `type:identifier`.
    pub id: String,
    /// Resource files (below `HOLO_RESOURCE_DIR`) it was read from.
    pub sources: Vec<PathBuf>,
    /// A non-default action.
    pub action: Option<Action>,
    /// Informational `key: value` lines, in order. Keys are mostly
    /// constants, which are not copied per entity.
    pub info: Vec<(std::borrow::Cow<'static, str>, String)>,
    /// `REQUIRES:` entity ids (order extension).
    pub requires: Vec<String>,
    /// `SUBSCRIBES:` entity ids (order extension).
    pub subscribes: Vec<String>,
    /// The desired state; `None` for an orphan that apply scrubs.
    pub spec: Option<S>,
}

impl<S> Scanned<S> {
    /// A declared entity with its desired state.
    pub fn new(id: impl Into<String>, spec: S) -> Self {
        Scanned {
            id: id.into(),
            sources: Vec::new(),
            action: None,
            info: Vec::new(),
            requires: Vec::new(),
            subscribes: Vec::new(),
            spec: Some(spec),
        }
    }

    /// An entity that state records show was applied but is no longer
    /// declared: `ACTION: Scrubbing (resource was deleted)`.
    pub fn orphan(id: impl Into<String>) -> Self {
        Scanned {
            id: id.into(),
            sources: Vec::new(),
            action: Some(Action {
                verb: "Scrubbing".to_string(),
                reason: Some("resource was deleted".to_string()),
            }),
            info: Vec::new(),
            requires: Vec::new(),
            subscribes: Vec::new(),
            spec: None,
        }
    }

    /// Adds a `SOURCE:` path.
    pub fn source(mut self, path: impl Into<PathBuf>) -> Self {
        self.sources.push(path.into());
        self
    }

    /// Adds an informational line.
    pub fn info(
        mut self,
        key: impl Into<std::borrow::Cow<'static, str>>,
        value: impl Into<String>,
    ) -> Self {
        self.info.push((key.into(), value.into()));
        self
    }

    /// Sets the action verb and reason.
    pub fn action(mut self, verb: impl Into<String>, reason: Option<String>) -> Self {
        self.action = Some(Action {
            verb: verb.into(),
            reason,
        });
        self
    }

    /// Adds a `REQUIRES:` entity id.
    pub fn requires(mut self, id: impl Into<String>) -> Self {
        self.requires.push(id.into());
        self
    }

    /// Adds a `SUBSCRIBES:` entity id.
    pub fn subscribes(mut self, id: impl Into<String>) -> Self {
        self.subscribes.push(id.into());
        self
    }
}

/// The entity that apply, noop and diff work on, as the scan cached it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityCtx<S> {
    /// The entity id.
    pub id: String,
    /// Resource files it was read from (below `HOLO_RESOURCE_DIR`).
    pub sources: Vec<PathBuf>,
    /// The scan's action, if not the default.
    pub action: Option<Action>,
    /// The desired state; `None` for an orphan.
    pub spec: Option<S>,
    /// A subscribed entity changed in this run (`HOLO_REFRESH=1` or a batch
    /// line `ID<TAB>refresh`).
    pub refresh: bool,
}
