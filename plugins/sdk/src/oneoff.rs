//! One-off `ensure` and `status` from the shell: `holo-ID ensure NAME
//! --PROPERTY VALUE ...` converges one resource given as flags, and
//! `holo-ID status NAME` prints the current state as the table that would
//! declare it.
//!
//! `ensure` writes the flags as a one-table resource file into a private
//! directory and takes it through the path of a holo run: the SDK's scan
//! (templates, common properties, validation), then the plugin's own
//! `apply ENTITY` operation in a child process with the scan cache, FD 3
//! and the `HOLO_*` environment a driver would give it. The child's output
//! is printed as `holo apply` prints an entity, and the exit code is the one
//! `holo apply` would give.
//!
//! Root and state: the root is `HOLO_ROOT_DIR` (`/` when unset; the plugin
//! gets it without `./` and a trailing `/`, as from the driver), as for a
//! holo run. When holo already manages the entity (its state directory,
//! `HOLO_STATE_DIR` or `ROOT/var/lib/holo/ID`, has a record for it), that
//! state directory is used, so protection of manual edits is holo's own.
//! Otherwise the records go to `ROOT/var/lib/holo/ensure/ID`: repeated
//! one-offs still see each other's records, and the next holo run does not
//! take the entity for a deleted resource and scrub it. The scan cache and
//! the generated resource file live in a private directory below `TMPDIR`,
//! as a driver's run directory does, and are removed at the end. The one-off
//! holds holo's run lock, `ROOT/run/holo.pid`, while it runs. Each run that
//! is not a noop keeps, for a plugin that asks for it
//! ([`Plugin::ensured_table`]), the table the flags gave and how it went,
//! an [`Ensured`], in `ROOT/var/lib/holo/ensure/ID.ensured`, readable by
//! its owner only, which `status` of a kind whose state cannot be read
//! back from the system (a command, a rendered tree) reads.
//!
//! A plugin whose resources are not one table per entity (holo-vms: a
//! compose project) answers `ensure` itself and hands a resource tree to
//! [`run_ensure`], which applies every entity in it in `REQUIRES` order, as
//! the driver does, skipping one whose requirement failed.
//!
//! `status` prints a [`StatusTable`]: what the plugin read back, with notes
//! and the properties to fill in as comments; it exits 3 when there are
//! properties to fill in.

use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde::de::{self, DeserializeOwned, Visitor};

use crate::entity::{print_error, scan_and_cache};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Plugin, Scanned, StatusTable};
use crate::resources::{Resource, closest};

/// The table `status` gives and its values, for plugins.
pub use toml::{Table, Value};

// Defined beside `Plugin`, whose `property_types` returns it.
pub use crate::plugin::ValueType;

/// The value types of the properties of `[[R::KIND]]`, found by asking each
/// field of the struct to deserialize from a probe. Empty for a type that is
/// not a plain struct.
pub fn property_types<R: Resource>() -> Vec<(&'static str, ValueType)> {
    let Some(fields) = probe_fields::<R>() else {
        return Vec::new();
    };
    fields
        .iter()
        .map(|field| {
            let mut found = None;
            let _ = R::deserialize(StructProbe {
                only: field,
                found: &mut found,
            });
            (*field, found.unwrap_or(ValueType::Any))
        })
        .collect()
}

fn probe_fields<R: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut fields = None;
    let _ = R::deserialize(StructProbe {
        only: "",
        found: &mut None,
    })
    .map_err(|ProbeDone(found)| fields = found);
    fields
}

/// The common properties as flags.
fn common_types() -> Vec<(&'static str, ValueType)> {
    let strings = ValueType::Array(Box::new(ValueType::String));
    vec![
        ("require", strings.clone()),
        ("subscribe", strings),
        ("if", ValueType::String),
        ("unless", ValueType::String),
        ("protect", ValueType::Bool),
        ("template", ValueType::Bool),
        ("alias", ValueType::String),
    ]
}

#[derive(Debug)]
struct ProbeDone(Option<&'static [&'static str]>);

impl fmt::Display for ProbeDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("type probe")
    }
}

impl std::error::Error for ProbeDone {}

impl de::Error for ProbeDone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        ProbeDone(None)
    }
}

/// Deserializes as a struct that holds only the field `only`.
struct StructProbe<'a> {
    only: &'static str,
    found: &'a mut Option<ValueType>,
}

impl<'de> de::Deserializer<'de> for StructProbe<'_> {
    type Error = ProbeDone;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, ProbeDone> {
        Err(ProbeDone(None))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        if self.only.is_empty() {
            return Err(ProbeDone(Some(fields)));
        }
        visitor.visit_map(OneField {
            key: Some(self.only),
            found: self.found,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

struct OneField<'a> {
    key: Option<&'static str>,
    found: &'a mut Option<ValueType>,
}

impl<'de> de::MapAccess<'de> for OneField<'_> {
    type Error = ProbeDone;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, ProbeDone> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        seed.deserialize(ValueProbe(self.found))
    }
}

/// Records the type a value asks for, then stops the deserialization.
struct ValueProbe<'a>(&'a mut Option<ValueType>);

impl ValueProbe<'_> {
    fn found<T>(self, value_type: ValueType) -> std::result::Result<T, ProbeDone> {
        *self.0 = Some(value_type);
        Err(ProbeDone(None))
    }
}

macro_rules! probe_as {
    ($value_type:expr => $($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, ProbeDone> {
            self.found($value_type)
        })*
    };
}

impl<'de> de::Deserializer<'de> for ValueProbe<'_> {
    type Error = ProbeDone;

    probe_as!(ValueType::Table => deserialize_map);
    probe_as!(ValueType::Any => deserialize_any deserialize_ignored_any
        deserialize_f32 deserialize_f64 deserialize_bytes deserialize_byte_buf deserialize_unit);
    probe_as!(ValueType::String => deserialize_str deserialize_string deserialize_char
        deserialize_identifier);
    probe_as!(ValueType::Bool => deserialize_bool);
    probe_as!(ValueType::Integer => deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128);

    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        let mut element = None;
        let _ = visitor.visit_seq(OneElement(Some(&mut element)));
        self.found(ValueType::Array(Box::new(
            element.unwrap_or(ValueType::Any),
        )))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::OneOf(variants))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _: usize,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }
}

struct OneElement<'a>(Option<&'a mut Option<ValueType>>);

impl<'de> de::SeqAccess<'de> for OneElement<'_> {
    type Error = ProbeDone;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> std::result::Result<Option<T::Value>, ProbeDone> {
        match self.0.take() {
            Some(found) => seed.deserialize(ValueProbe(found)).map(Some),
            None => Ok(None),
        }
    }
}

/// What the command line asks of `ensure`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnsureRequest {
    /// The resource directory of the one-off: for flags, one file holding
    /// the one-table document, `[[KIND]]` and the properties.
    pub resources: Vec<ResourceEntry>,
    /// `--noop`: say what would change.
    pub noop: bool,
    /// `--force-apply`: as `holo apply --force`.
    pub force: bool,
    /// The flag that set each property, as written (`--version` sets
    /// `ensure`), so that messages name what the user typed.
    pub flags_given: Vec<(String, String)>,
}

/// The name of the resource file that `ensure` writes from flags.
const FLAGS_FILE: &str = "ensure.toml";

impl EnsureRequest {
    /// The table the flags gave (without `name`), for [`Ensured`]; `None`
    /// for resources that are not one table.
    fn flags_table(&self) -> Option<toml::Table> {
        let [ResourceEntry::File { path, content }] = self.resources.as_slice() else {
            return None;
        };
        if path != Path::new(FLAGS_FILE) {
            return None;
        }
        let document: toml::Table = content.parse().ok()?;
        let (_, tables) = document.into_iter().next()?;
        let mut table = tables.as_array()?.first()?.as_table()?.clone();
        table.remove("name");
        Some(table)
    }
}

/// One entry of a one-off's resource directory, at `path` below it.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceEntry {
    /// A file with this content.
    File { path: PathBuf, content: String },
    /// A symbolic link to `target`, an absolute path, which the output
    /// names as `shown` (the path as the user gave it).
    Link {
        path: PathBuf,
        target: PathBuf,
        shown: String,
    },
}

/// The flags of `ensure` for a plugin: its kind (the first section of
/// `properties`) and every property with its type. `--VALUE` for each value
/// of `ensure` stands for `--ensure VALUE`.
pub struct Flags {
    kind: String,
    types: Vec<(&'static str, ValueType)>,
    ensure_values: Vec<&'static str>,
    aliases: &'static [(&'static str, &'static str)],
}

impl Flags {
    /// The flags of `plugin`; `None` when it has no properties to give.
    pub fn of<P: Plugin>(plugin: &P) -> Option<Flags> {
        let properties = plugin.properties();
        let types = plugin.property_types();
        let (kind, _) = properties.first()?;
        if types.is_empty() {
            return None;
        }
        let mut ensure_values: Vec<&'static str> = properties
            .iter()
            .find(|(section, _)| *section == format!("{kind}.ensure"))
            .map(|(_, values)| values.clone())
            .unwrap_or_default();
        if let Some((_, ValueType::OneOf(values))) =
            types.iter().find(|(name, _)| *name == "ensure")
        {
            for value in values.iter() {
                if !ensure_values.contains(value) {
                    ensure_values.push(value);
                }
            }
        }
        let mut all = types;
        all.extend(common_types());
        Some(Flags {
            kind: kind.clone(),
            types: all,
            ensure_values,
            aliases: plugin.flag_aliases(),
        })
    }

    fn type_of(&self, property: &str) -> Option<&ValueType> {
        self.types
            .iter()
            .find(|(name, _)| *name == property)
            .map(|(_, value_type)| value_type)
    }

    /// Turns `NAME --PROPERTY VALUE ...` into the one-table document.
    pub fn parse(&self, command: &str, args: &[String]) -> Result<EnsureRequest> {
        let mut table = toml::Table::new();
        let mut name = None;
        let mut noop = false;
        let mut force = false;
        let mut given: Vec<(String, String)> = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--") else {
                if name.replace(arg.clone()).is_some() {
                    return Err(Error::new(format!(
                        "{command}: {arg:?} is a second name; give one NAME and the properties as --PROPERTY VALUE"
                    )));
                }
                continue;
            };
            let (flag, inline) = match flag.split_once('=') {
                Some((flag, value)) => (flag, Some(value.to_string())),
                None => (flag, None),
            };
            let property = match self.aliases.iter().find(|(alias, _)| *alias == flag) {
                Some((_, property)) => property.to_string(),
                None => flag.replace('-', "_"),
            };
            match property.as_str() {
                "noop" if inline.is_none() => {
                    noop = true;
                    continue;
                }
                "force_apply" if inline.is_none() => {
                    force = true;
                    continue;
                }
                _ => {}
            }
            if inline.is_none() && self.ensure_values.contains(&flag) {
                set_once(
                    &mut table,
                    &mut given,
                    command,
                    ("ensure", flag),
                    toml::Value::String(flag.into()),
                )?;
                continue;
            }
            let negated = property.strip_prefix("no_");
            if let (Some(base), None) = (negated, &inline)
                && self.type_of(base) == Some(&ValueType::Bool)
            {
                set_once(
                    &mut table,
                    &mut given,
                    command,
                    (base, flag),
                    toml::Value::Boolean(false),
                )?;
                continue;
            }
            let Some(value_type) = self.type_of(&property) else {
                return Err(self.unknown_flag(command, flag));
            };
            if property == "name" {
                return Err(Error::new(format!(
                    "{command}: give the name as the first argument, not as --name"
                )));
            }
            let text = match (inline, value_type) {
                (Some(text), _) => text,
                (None, ValueType::Bool) => "true".to_string(),
                (None, _) => args
                    .next()
                    .cloned()
                    .ok_or_else(|| Error::new(format!("{command}: --{flag} needs a value")))?,
            };
            let value = typed(value_type, &text).map_err(|wanted| {
                Error::new(format!(
                    "{command}: --{flag}: expected {wanted}, got {text:?}{}",
                    repeat_hint(value_type, flag)
                ))
            })?;
            match (value_type, table.get_mut(&property)) {
                (ValueType::Array(_), Some(toml::Value::Array(list))) => {
                    list.push(value);
                }
                (ValueType::Array(_), None) => {
                    given.push((property.clone(), format!("--{flag}")));
                    table.insert(property, toml::Value::Array(vec![value]));
                }
                _ => set_once(&mut table, &mut given, command, (&property, flag), value)?,
            }
        }
        let Some(name) = name else {
            return Err(Error::new(format!(
                "usage: {command} NAME [--PROPERTY VALUE]... [--noop] [--force-apply]"
            )));
        };
        let mut ordered = toml::Table::new();
        ordered.insert("name".to_string(), toml::Value::String(name));
        ordered.extend(table);
        let mut document = toml::Table::new();
        document.insert(
            self.kind.clone(),
            toml::Value::Array(vec![toml::Value::Table(ordered)]),
        );
        let document = toml::to_string(&document)
            .map_err(|err| Error::new(format!("{command}: cannot write the table: {err}")))?;
        Ok(EnsureRequest {
            resources: vec![ResourceEntry::File {
                path: PathBuf::from(FLAGS_FILE),
                content: document,
            }],
            noop,
            force,
            flags_given: given,
        })
    }

    fn unknown_flag(&self, command: &str, flag: &str) -> Error {
        let mut known: Vec<String> = self
            .types
            .iter()
            .filter(|(name, _)| *name != "name")
            .map(|(name, _)| name.replace('_', "-"))
            .collect();
        known.extend(self.ensure_values.iter().map(|value| value.to_string()));
        known.extend(self.aliases.iter().map(|(alias, _)| alias.to_string()));
        known.extend(["noop".to_string(), "force-apply".to_string()]);
        let names: Vec<&str> = known.iter().map(String::as_str).collect();
        let suggestion = closest(flag, &names)
            .map(|name| format!(" (did you mean --{name}?)"))
            .unwrap_or_default();
        Error::new(format!(
            "{command}: unknown flag --{flag}{suggestion}; the flags are the properties of a [[{}]] table: --{}",
            self.kind,
            names.join(", --")
        ))
    }
}

/// Sets `property` from `--flag`, refusing a second flag for it: the
/// message names both flags as written (`--version` and `--absent` both
/// set `ensure`).
fn set_once(
    table: &mut toml::Table,
    given: &mut Vec<(String, String)>,
    command: &str,
    (property, flag): (&str, &str),
    value: toml::Value,
) -> Result<()> {
    let flag = format!("--{flag}");
    if let Some((_, first)) = given.iter().find(|(name, _)| name == property) {
        return Err(Error::new(if *first == flag {
            format!("{command}: {flag} is given twice; give it once")
        } else {
            format!("{command}: {first} and {flag} both set {property}; give one of them")
        }));
    }
    table.insert(property.to_string(), value);
    given.push((property.to_string(), flag));
    Ok(())
}

/// The flag's text as a TOML value of the property's type, or what the
/// type wants when the text is not of it: loading the table would name
/// neither the flag nor what to give. Strings, choices and properties of
/// several types (a mode, an owner) are checked when the table is loaded.
fn typed(value_type: &ValueType, text: &str) -> std::result::Result<toml::Value, &'static str> {
    match value_type {
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
        ValueType::Array(element) => typed(element, text),
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

/// For a list: each flag gives one element.
fn repeat_hint(value_type: &ValueType, flag: &str) -> String {
    match value_type {
        ValueType::Array(_) => format!(" (a list: give --{flag} once per element)"),
        _ => String::new(),
    }
}

/// The lock of a holo run, `ROOT/run/holo.pid`, held for the one-off as
/// `holo apply` holds it, so that the two never converge side by side. A
/// lock left by a process that is gone is not taken over here (holo does
/// that); the message says so.
struct RunLock {
    /// The directory that holds the lock, opened in the root, and its name.
    dir: std::fs::File,
    name: OsString,
    _file: nix::fcntl::Flock<std::fs::File>,
}

impl RunLock {
    fn acquire(env: &Env) -> std::result::Result<RunLock, String> {
        use rustix::fs::{Mode, OFlags};
        let path = env.root_join("run/holo.pid");
        let shown = path.display();
        let failure = |err: &std::io::Error| {
            let mut message = format!(
                "Cannot create lock file {shown}: open {shown}: {}",
                errno_text(err)
            );
            if err.kind() == std::io::ErrorKind::AlreadyExists {
                message.push_str("\nThis usually means that another instance of Holo is currently running.\nIf not, run holo apply once (it takes over a lock of a process that is gone) or delete the lock file manually.");
            }
            message
        };
        // In test mode the lock is resolved inside the root, like every path.
        let fs = env.root_fs().map_err(|err| err.message().to_string())?;
        if env.test_mode
            && let Some(parent) = path.parent()
        {
            fs.create_dir_all(parent).map_err(|err| failure(&err))?;
        }
        let (dir, name) = fs.open_parent(&path).map_err(|err| failure(&err))?;
        let fd = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|errno| failure(&std::io::Error::from(errno)))?;
        let mut file = std::fs::File::from(fd);
        let _ = file.write_all(format!("{}\n", std::process::id()).as_bytes());
        let _ = file.sync_all();
        // Shared, as the driver holds it: a takeover sees the lock in use.
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockShared) {
            Ok(file) => Ok(RunLock {
                dir,
                name,
                _file: file,
            }),
            Err((_, errno)) => {
                let _ = rustix::fs::unlinkat(&dir, name.as_os_str(), rustix::fs::AtFlags::empty());
                Err(failure(&std::io::Error::from(errno)))
            }
        }
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = rustix::fs::unlinkat(
            &self.dir,
            self.name.as_os_str(),
            rustix::fs::AtFlags::empty(),
        );
    }
}

/// An OS error as Go words it: `file exists`.
fn errno_text(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            let text = nix::errno::Errno::from_raw(code).desc();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text.to_string(),
            }
        }
        None => err.to_string(),
    }
}

/// The `HOLO_*` variables a driver would give the plugin, for a private run
/// directory.
struct RunDir {
    _dir: tempfile::TempDir,
    resources: PathBuf,
    cache: PathBuf,
    /// An empty state directory: the first scan, which only finds the
    /// entity id, sees no records and so describes no orphans.
    no_state: PathBuf,
    /// `HOLO_ROOT_DIR` as the driver gives it to plugins, in test mode.
    root: Option<OsString>,
    /// The targets of the links and how the output names them.
    shown: Vec<(String, String)>,
    /// The document the flags became, whose lines errors name.
    flags_document: Option<String>,
    /// The flag that set each property, as written.
    flags_given: Vec<(String, String)>,
}

impl RunDir {
    fn create(env: &Env, request: &EnsureRequest) -> Result<RunDir> {
        let entries = &request.resources;
        let plugin_id = &env.plugin_id;
        let dir = tempfile::Builder::new()
            .prefix(&format!("holo-{plugin_id}-ensure."))
            .tempdir()
            .map_err(|err| Error::new(format!("cannot create a run directory: {err}")))?;
        // Resolved, so that no `..` from TMPDIR is taken lexically later.
        let base = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|_| dir.path().to_path_buf());
        let resources = base.join("resources");
        let cache = base.join("cache");
        let no_state = base.join("no-state");
        for path in [&resources, &cache, &no_state] {
            std::fs::create_dir(path)
                .map_err(|err| Error::new(format!("cannot create {}: {err}", path.display())))?;
        }
        for entry in entries {
            let (ResourceEntry::File { path, .. } | ResourceEntry::Link { path, .. }) = entry;
            let at = resources.join(path);
            let cannot =
                |err: std::io::Error| Error::new(format!("cannot write {}: {err}", at.display()));
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent).map_err(cannot)?;
            }
            match entry {
                ResourceEntry::File { content, .. } => std::fs::write(&at, content),
                ResourceEntry::Link { target, .. } => std::os::unix::fs::symlink(target, &at),
            }
            .map_err(cannot)?;
        }
        Ok(RunDir {
            _dir: dir,
            resources,
            cache,
            no_state,
            root: env.test_mode.then(|| driver_root(&env.root)),
            shown: entries
                .iter()
                .filter_map(|entry| match entry {
                    ResourceEntry::Link { target, shown, .. } => {
                        Some((target.display().to_string(), shown.clone()))
                    }
                    ResourceEntry::File { .. } => None,
                })
                .collect(),
            flags_document: entries.iter().find_map(|entry| match entry {
                ResourceEntry::File { path, content } if path == Path::new(FLAGS_FILE) => {
                    Some(content.clone())
                }
                _ => None,
            }),
            flags_given: request.flags_given.clone(),
        })
    }

    fn variables(&self, state_dir: &Path) -> Vec<(&'static str, OsString)> {
        let root = self.root.iter().map(|root| ("HOLO_ROOT_DIR", root.clone()));
        root.chain([
            (
                "HOLO_API_VERSION",
                OsString::from(crate::env::API_VERSION.to_string()),
            ),
            ("HOLO_CACHE_DIR", self.cache.clone().into_os_string()),
            ("HOLO_RESOURCE_DIR", self.resources.clone().into_os_string()),
            (
                "HOLO_RESOURCE_ORIGIN",
                self.resources.clone().into_os_string(),
            ),
            ("HOLO_STATE_DIR", state_dir.as_os_str().to_os_string()),
            ("HOLO_EXTENSIONS", OsString::new()),
            ("HOLO_REFRESH", OsString::new()),
        ])
        .collect()
    }

    fn env(&self, plugin_id: &str, state_dir: &Path) -> Result<Env> {
        let variables = self.variables(state_dir);
        Env::from_lookup(plugin_id, |key| {
            match variables.iter().find(|(name, _)| *name == key) {
                Some((_, value)) => Some(value.clone()),
                None => std::env::var_os(key),
            }
        })
    }

    /// Error messages name the generated file; on the command line, the
    /// flags are what the user wrote: a message about a property's line
    /// names its flag. A linked file is named as given.
    fn rewrite(&self, err: &Error, command: &str) -> Error {
        let file = format!("{}", self.resources.join(FLAGS_FILE).display());
        // A relative path is taken next to the generated file: show it as given.
        let directory = format!("{}/", self.resources.display());
        let mut text = String::new();
        for line in err.message().lines() {
            let placed = line.strip_prefix(&file).and_then(|rest| {
                let rest = rest.strip_prefix(':')?;
                let digits = rest.find(|c: char| !c.is_ascii_digit())?;
                let number: usize = rest[..digits].parse().ok()?;
                Some((number, rest[digits..].strip_prefix(": ")?))
            });
            let property = placed.and_then(|(number, _)| {
                property_on_line(self.flags_document.as_deref()?, number)
                    .filter(|property| property != "name")
            });
            let (prefix, rest) = match (placed, &property) {
                (Some((_, rest)), Some(property)) => {
                    let flag = self
                        .flags_given
                        .iter()
                        .find(|(name, _)| name == property)
                        .map_or_else(
                            || format!("--{}", property.replace('_', "-")),
                            |(_, flag)| flag.clone(),
                        );
                    // The table's words for a resource file become the flag's.
                    let rest = match rest.strip_prefix("[[") {
                        Some(after) => after.split_once("]] ").map_or(rest, |(_, rest)| rest),
                        None => rest,
                    };
                    let rest = rest
                        .strip_prefix(&format!("property `{property}`: "))
                        .unwrap_or(rest);
                    let rest = rest.replace("fix the property's value", "fix the flag's value");
                    (format!("{command}: {flag}: "), rest)
                }
                (Some((_, rest)), None) => match self.flag_of_table_message(rest) {
                    Some((flag, message)) => (format!("{command}: {flag}: "), message),
                    None => (format!("{command}: "), rest.to_string()),
                },
                (None, _) => (String::new(), line.to_string()),
            };
            let mut rest = rest;
            for (target, shown) in &self.shown {
                rest = rest.replace(target, shown);
            }
            let rewritten = prefix
                + &rest
                    .replace(&format!("{file}:1"), command)
                    .replace(&file, command)
                    .replace(&directory, "");
            text.push_str(&rewritten);
            text.push('\n');
        }
        Error::new(text.trim_end().to_string())
    }

    /// A plugin's message about the whole table that starts with one of
    /// the flags' properties (`exec "x": timeout "soon" is not a
    /// duration`): the flag as typed, and the message without the entity.
    fn flag_of_table_message(&self, rest: &str) -> Option<(String, String)> {
        let (_, message) = rest.split_once("\": ")?;
        let word = message
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()?;
        let (_, flag) = self
            .flags_given
            .iter()
            .find(|(property, _)| property == word)?;
        Some((flag.clone(), message.to_string()))
    }
}

/// The property that line `number` (from 1) of the flags' document sets,
/// as `toml::to_string` writes it: `key = value` (a multi-line string
/// included), or a table value's `[KIND.key]` or `[[KIND.key]]` and the
/// lines below it; `None` for the `[[KIND]]` line.
fn property_on_line(document: &str, number: usize) -> Option<String> {
    let mut current: Option<String> = None;
    let mut in_table = false;
    let mut open_string: Option<&str> = None;
    for line in document.lines().take(number) {
        if let Some(quotes) = open_string {
            if line.matches(quotes).count() % 2 == 1 {
                open_string = None;
            }
            continue;
        }
        let trimmed = line.trim();
        if let Some(header) = trimmed.strip_prefix('[') {
            let header = header.trim_start_matches('[').trim_end_matches(']');
            current = header.split_once('.').map(|(_, key)| {
                key.split('.')
                    .next()
                    .unwrap_or(key)
                    .trim_matches('"')
                    .to_string()
            });
            in_table = current.is_some();
            continue;
        }
        if !in_table {
            current = trimmed
                .split_once('=')
                .map(|(key, _)| key.trim().trim_matches('"').to_string());
        }
        open_string = ["\"\"\"", "'''"]
            .into_iter()
            .find(|quotes| line.matches(quotes).count() % 2 == 1);
    }
    current
}

/// The root as the driver passes it to plugins (Holo 3's `normalizePath`):
/// without a leading `./` and a trailing `/`, so that the paths a plugin
/// shows are those of `holo apply`.
fn driver_root(root: &Path) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    let bytes = root.as_os_str().as_bytes();
    let bytes = bytes.strip_prefix(b"./").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"/").unwrap_or(bytes);
    if bytes.is_empty() {
        OsString::from(".")
    } else {
        std::ffi::OsStr::from_bytes(bytes).to_os_string()
    }
}

/// The state directory `ensure` uses for entities `ids`: holo's own when
/// it has a record for one of them, else the one-off directory (see the
/// module documentation).
fn state_dir_for(holo_env: &Env, ids: &[&str]) -> PathBuf {
    if ids
        .iter()
        .any(|id| crate::state::record_path(holo_env, id).exists())
    {
        holo_env.state_dir.clone()
    } else {
        one_off_state_dir(holo_env)
    }
}

fn one_off_state_dir(env: &Env) -> PathBuf {
    env.root_join(format!("var/lib/holo/ensure/{}", env.plugin_id))
}

/// Where `ensure` keeps [`Ensured`]: beside the one-off records, whichever
/// state directory the records went to.
fn ensured_dir(env: &Env) -> PathBuf {
    env.root_join(format!("var/lib/holo/ensure/{}.ensured", env.plugin_id))
}

/// `env` with another state directory.
fn env_with_state_dir(env: &Env, state_dir: &Path) -> Result<Env> {
    let cache = env.cache_dir.clone().into_os_string();
    let root = env.root.clone().into_os_string();
    let origin = env.resource_origin.clone().into_os_string();
    let resources = env.resource_dir.clone().into_os_string();
    Env::from_lookup(&env.plugin_id, |key| match key {
        "HOLO_STATE_DIR" => Some(state_dir.as_os_str().to_os_string()),
        "HOLO_CACHE_DIR" => Some(cache.clone()),
        "HOLO_ROOT_DIR" => Some(root.clone()),
        "HOLO_RESOURCE_ORIGIN" => Some(origin.clone()),
        "HOLO_RESOURCE_DIR" => Some(resources.clone()),
        _ => std::env::var_os(key),
    })
}

/// For `status`: `env` with the state directory that holds the record of
/// entity `id`, holo's own when it has one, else the one-off directory
/// (which may have none either).
pub fn record_env(env: &Env, id: &str) -> Result<Env> {
    env_with_state_dir(env, &state_dir_for(env, &[id]))
}

/// How the last `ensure` of an entity went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnsureResult {
    /// The plugin changed something (for holo-exec: the command ran).
    Changed,
    /// Nothing needed changing.
    NotChanged,
    /// The apply failed.
    Failed,
    /// A manual change was left alone: it needs `--force-apply`.
    NeedsForce,
}

/// What the last `ensure` of an entity converged and how it went, kept in
/// `ROOT/var/lib/holo/ensure/ID.ensured/` for `status`: the properties the
/// flags gave (as [`Plugin::ensured_table`] leaves them), not a `--noop`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ensured {
    /// The properties but `name`.
    pub table: toml::Table,
    /// When it ran, in seconds since the epoch: the file's modification
    /// time, so that the file holds nothing that changes from run to run
    /// of the same one-off.
    #[serde(skip)]
    pub at: u64,
    pub result: EnsureResult,
    /// The first line of the error of a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Ensured {
    /// `at` as `YYYY-MM-DD HH:MM:SS UTC`.
    pub fn at_text(&self) -> String {
        utc_text(self.at)
    }
}

fn ensured_path(env: &Env, id: &str) -> PathBuf {
    ensured_dir(env).join(crate::state::entity_file_name(id, ".toml"))
}

/// What the last `ensure` of entity `id` kept, `None` when none ran or the
/// plugin keeps nothing ([`Plugin::ensured_table`]).
pub fn ensured(env: &Env, id: &str) -> Result<Option<Ensured>> {
    let fs = env.root_fs()?;
    let path = ensured_path(env, id);
    let text = match fs.read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io("read", &path, &err)),
    };
    let mut ensured: Ensured = toml::from_str(&text).map_err(|err| {
        Error::new(format!(
            "{}: not what holo-{} ensure writes ({}); remove it, and ensure writes it again",
            path.display(),
            env.plugin_id,
            err.message()
        ))
    })?;
    ensured.at = fs
        .metadata(&path)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_secs());
    Ok(Some(ensured))
}

/// Writes what `ensure` keeps, readable by its owner only: commands and
/// template data may hold what others must not read.
fn keep_ensured(env: &Env, id: &str, ensured: &Ensured) -> Result<()> {
    let fs = env.root_fs()?;
    let dir = ensured_dir(env);
    fs.create_dir_all(&dir)
        .map_err(|err| Error::io("create", &dir, &err))?;
    let text = toml::to_string(ensured)
        .map_err(|err| Error::new(format!("cannot write what ensure converged: {err}")))?;
    crate::atomic::write(
        &fs,
        &ensured_path(env, id),
        text.as_bytes(),
        &crate::atomic::WriteOptions::mode(0o600),
    )
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_text(seconds: u64) -> String {
    format!("{} UTC", crate::common::utc_date(seconds))
}

/// `holo-ID ensure NAME --PROPERTY VALUE ...`.
pub(crate) fn ensure<P: Plugin>(plugin: &P, env: &Env, args: &[String]) -> Result<ExitCode> {
    let command = format!("holo-{} ensure", P::ID);
    let Some(flags) = Flags::of(plugin) else {
        return Err(Error::new(format!(
            "{command}: holo-{} has no one-off ensure; declare the resource in a resource file and run holo apply",
            P::ID
        )));
    };
    let request = flags.parse(&command, args)?;
    converge(plugin, env, &command, &request)
}

/// Converges what `request` declares as `holo apply` would, printing what
/// it prints and giving its exit code: every entity of the resources, in
/// `REQUIRES` order, each skipped when one it requires failed. For a
/// plugin's own `ensure` (see [`Plugin::subcommand`]); `command` names the
/// one-off in messages.
pub fn run_ensure<P: Plugin>(
    plugin: &P,
    env: &Env,
    command: &str,
    request: &EnsureRequest,
) -> Result<ExitCode> {
    converge(plugin, env, command, request)
}

fn converge<P: Plugin>(
    plugin: &P,
    env: &Env,
    command: &str,
    request: &EnsureRequest,
) -> Result<ExitCode> {
    let _lock = match RunLock::acquire(env) {
        Ok(lock) => lock,
        Err(message) => {
            print_error(&Error::new(message));
            return Ok(ExitCode::from(255));
        }
    };
    let run_dir = RunDir::create(env, request)?;
    let scan = |state_dir: &Path| -> Result<Vec<Scanned<P::Spec>>> {
        let run_env = run_dir.env(P::ID, state_dir)?;
        let mut entities: Vec<Scanned<P::Spec>> = scan_and_cache(plugin, &run_env)
            .map_err(|err| run_dir.rewrite(&err, command))?
            .into_iter()
            .filter(|entity| !entity.sources.is_empty())
            .collect();
        if entities.is_empty() {
            return Err(Error::new(format!(
                "{command}: the resources declare no entity"
            )));
        }
        entities.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(entities)
    };
    let found = scan(&run_dir.no_state)?;
    let ids: Vec<&str> = found.iter().map(|entity| entity.id.as_str()).collect();
    let state_dir = state_dir_for(env, &ids);
    let entities = scan(&state_dir)?;
    let order = apply_order(&entities).map_err(|cycle| {
        Error::new(format!(
            "{command}: the entities require each other in a cycle: {}",
            cycle.join(" -> ")
        ))
    })?;
    let operation = match (request.noop, request.force) {
        (true, _) => "noop",
        (false, true) => "force-apply",
        (false, false) => "apply",
    };
    let ensured_table = request
        .flags_table()
        .and_then(|table| plugin.ensured_table(table));
    let rewrite = |text: String| {
        run_dir
            .rewrite(&Error::new(text), command)
            .message()
            .to_string()
    };
    let mut printer = Printer::default();
    let mut results: Vec<Option<EnsureResult>> = vec![None; entities.len()];
    for index in order {
        let entity = &entities[index];
        let failed_requirement = entities.iter().enumerate().find(|(other, required)| {
            entity.requires.contains(&required.id)
                && matches!(results[*other], Some(EnsureResult::Failed))
        });
        let ran = match failed_requirement {
            Some((_, required)) => Ran::skipped(&required.id),
            None => run_child(&run_dir.variables(&state_dir), operation, &entity.id)?,
        };
        let result = report(&mut printer, entity, &ran, &rewrite);
        results[index] = Some(result);
        if let (Some(table), false, false) = (&ensured_table, request.noop, ran.skipped) {
            let message = (result == EnsureResult::Failed).then(|| ran.first_error(&rewrite));
            let ensured = Ensured {
                table: table.clone(),
                at: 0,
                result,
                message: message.flatten(),
            };
            keep_ensured(env, &entity.id, &ensured)?;
        }
    }
    let failed = results.iter().any(|result| {
        matches!(
            result,
            Some(EnsureResult::Failed | EnsureResult::NeedsForce)
        )
    });
    let changed = results.contains(&Some(EnsureResult::Changed));
    Ok(if failed {
        ExitCode::from(1)
    } else if request.noop && changed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The order `holo apply` takes: by id, then each entity after those it
/// requires or subscribes to (among these), the lowest ready index first.
/// A cycle is returned as the ids around it.
fn apply_order<S>(entities: &[Scanned<S>]) -> std::result::Result<Vec<usize>, Vec<String>> {
    let after: Vec<Vec<usize>> = entities
        .iter()
        .map(|entity| {
            entities
                .iter()
                .enumerate()
                .filter(|(_, other)| {
                    entity.requires.contains(&other.id) || entity.subscribes.contains(&other.id)
                })
                .map(|(index, _)| index)
                .collect()
        })
        .collect();
    let mut done = vec![false; entities.len()];
    let mut order = Vec::with_capacity(entities.len());
    while order.len() < entities.len() {
        let ready = (0..entities.len())
            .find(|index| !done[*index] && after[*index].iter().all(|other| done[*other]));
        let Some(next) = ready else {
            let stuck: Vec<String> = (0..entities.len())
                .filter(|index| !done[*index])
                .map(|index| entities[index].id.clone())
                .collect();
            return Err(stuck);
        };
        done[next] = true;
        order.push(next);
    }
    Ok(order)
}

/// The signals a terminal sends to its foreground process group.
const TERMINAL_SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGHUP];

/// What the child process gave.
struct Ran {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    fd3: Vec<u8>,
    exit: Option<i32>,
    /// Not run: an entity it requires failed.
    skipped: bool,
}

impl Ran {
    /// An entity not run because `required` failed, with the driver's words.
    fn skipped(required: &str) -> Ran {
        Ran {
            stdout: Vec::new(),
            stderr: format!("!! {}\n", holo_protocol::skipped_message(required)).into_bytes(),
            fd3: Vec::new(),
            exit: Some(1),
            skipped: true,
        }
    }

    /// The first line of the error output, without `!! `.
    fn first_error(&self, rewrite: &dyn Fn(String) -> String) -> Option<String> {
        let stderr = rewrite(String::from_utf8_lossy(&self.stderr).into_owned());
        stderr
            .lines()
            .map(|line| line.trim_start_matches("!! ").trim())
            .find(|line| !line.is_empty())
            .map(str::to_string)
    }
}

fn run_child(variables: &[(&'static str, OsString)], operation: &str, id: &str) -> Result<Ran> {
    let exe = std::env::current_exe()
        .map_err(|err| Error::new(format!("cannot find this program's path: {err}")))?;
    let (fd3_read, fd3_write) =
        nix::unistd::pipe().map_err(|err| Error::new(format!("cannot create a pipe: {err}")))?;
    let mut command = Command::new(&exe);
    command
        .args([operation, id])
        .envs(variables.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let raw_write = fd3_write.as_raw_fd();
    // SAFETY: dup2 is async-signal-safe; it puts the pipe on FD 3 of the child.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            if libc::dup2(raw_write, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for signal in TERMINAL_SIGNALS {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    // Ctrl-C reaches the whole foreground group: the child ends its apply
    // as under holo (it stops its command and starts no other), and this
    // process stays to report it and release the lock.
    // SAFETY: setting dispositions to SIG_IGN; no handler runs.
    unsafe {
        for signal in TERMINAL_SIGNALS {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
    let mut child = command
        .spawn()
        .map_err(|err| Error::new(format!("cannot run {}: {err}", exe.display())))?;
    drop(fd3_write);
    let read_all = |mut reader: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = reader.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = child.stdout.take().map(|out| read_all(Box::new(out)));
    let stderr = child.stderr.take().map(|err| read_all(Box::new(err)));
    let fd3 = read_all(Box::new(std::fs::File::from(fd3_read)));
    let status = child
        .wait()
        .map_err(|err| Error::new(format!("cannot wait for {}: {err}", exe.display())))?;
    let join = |handle: Option<std::thread::JoinHandle<Vec<u8>>>| {
        handle.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Ran {
        stdout: join(stdout),
        stderr: join(stderr),
        fd3: join(Some(fd3)),
        exit: status.code(),
        skipped: false,
    })
}

/// Prints the entity as `holo apply` does and says how it went: nothing
/// for an entity that did not change; otherwise `Working on ID` with the
/// scan's info lines, the plugin's output, and the messages for a failure
/// or an entity that needs `--force-apply`.
fn report<S>(
    printer: &mut Printer,
    entity: &Scanned<S>,
    ran: &Ran,
    rewrite: &dyn Fn(String) -> String,
) -> EnsureResult {
    let fd3 = String::from_utf8_lossy(&ran.fd3);
    let fd3_lines: Vec<&str> = fd3.lines().collect();
    let failed = ran.exit != Some(0);
    let unchanged = !failed
        && fd3_lines.contains(&holo_protocol::fd3::NOT_CHANGED)
        && ran.stdout.is_empty()
        && ran.stderr.is_empty();
    if unchanged {
        return EnsureResult::NotChanged;
    }
    let mut out = String::new();
    let verb = entity
        .action
        .as_ref()
        .map_or("Working on", |action| action.verb.as_str());
    out.push_str(&format!("{verb} {}", entity.id));
    if let Some(reason) = entity.action.as_ref().and_then(|a| a.reason.as_ref()) {
        out.push_str(&format!(" ({reason})"));
    }
    out.push('\n');
    let width = verb.len();
    for (key, value) in &entity.info {
        out.push_str(&format!("{key:>width$} {}\n", rewrite(value.clone())));
    }
    // Paragraphs as the driver prints them: a blank line after the
    // header, and the entity's output ends with one.
    out.push('\n');
    printer.write(false, out.as_bytes());
    printer.write(false, &ran.stdout);
    let mut stderr = rewrite(String::from_utf8_lossy(&ran.stderr).into_owned());
    if !stderr.is_empty() && !stderr.ends_with('\n') {
        stderr.push('\n');
    }
    printer.write(true, stderr.as_bytes());
    let mut needs_force = false;
    for line in &fd3_lines {
        let message = match *line {
            holo_protocol::fd3::REQUIRES_FORCE_OVERWRITE => {
                "!! Entity has been modified by user (use --force to overwrite)\n"
            }
            holo_protocol::fd3::REQUIRES_FORCE_RESTORE => {
                "!! Entity has been deleted by user (use --force to restore)\n"
            }
            _ => continue,
        };
        needs_force = true;
        printer.write(true, message.as_bytes());
    }
    if failed && !ran.skipped {
        let status = ran.exit.map_or("killed by a signal".to_string(), |code| {
            format!("exit status {code}")
        });
        printer.write(true, format!("!! {status}\n").as_bytes());
    }
    printer.end_paragraph();
    if failed {
        EnsureResult::Failed
    } else if needs_force {
        EnsureResult::NeedsForce
    } else {
        EnsureResult::Changed
    }
}

/// Writes to stdout or stderr as the driver's output does: a blank line
/// before the first output, and the newlines at the end of what was
/// written last on either stream counted for paragraphs.
#[derive(Default)]
struct Printer {
    had_output: bool,
    trailing_newlines: usize,
}

impl Printer {
    /// Ends the entity's paragraph with a blank line.
    fn end_paragraph(&mut self) {
        while self.trailing_newlines < 2 {
            self.write(false, b"\n");
        }
    }

    fn write(&mut self, to_stderr: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if !self.had_output {
            self.had_output = true;
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
        }
        let written = if to_stderr {
            let _ = std::io::stdout().flush();
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(bytes).and_then(|()| stderr.flush())
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(bytes).and_then(|()| stdout.flush())
        };
        let _ = written;
        let newlines = bytes
            .iter()
            .rev()
            .take_while(|byte| **byte == b'\n')
            .count();
        self.trailing_newlines = if newlines == bytes.len() {
            self.trailing_newlines + newlines
        } else {
            newlines
        };
    }
}

/// `holo-ID status NAME`: the plugin's [`Plugin::status`] as a `[[KIND]]`
/// table.
pub(crate) fn status<P: Plugin>(plugin: &P, env: &Env, args: &[String]) -> Result<ExitCode> {
    let [name] = args else {
        return Err(Error::new(format!(
            "usage: holo-{} status NAME (exactly one name)",
            P::ID
        )));
    };
    let Some(kind) = plugin.properties().first().map(|(kind, _)| kind.clone()) else {
        return Err(Error::new(format!("holo-{} has no status", P::ID)));
    };
    let Some(found) = plugin.status(env, name) else {
        return Err(Error::new(format!(
            "holo-{} has no status: what it leaves on the system cannot be read back into a [[{kind}]] table",
            P::ID
        )));
    };
    let found = found?;
    print!("{}", render_status(&kind, name, &found)?);
    let _ = std::io::stdout().flush();
    Ok(if found.unknown.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// The `[[KIND]]` table of `status`: `name`, then the notes and the
/// properties to fill in as comments, then the properties.
pub fn render_status(kind: &str, name: &str, found: &StatusTable) -> Result<String> {
    let table = status_table(kind, name, &found.properties)?;
    let Some((head, rest)) = table.split_once('\n').and_then(|(header, rest)| {
        let (name_line, rest) = rest.split_once('\n')?;
        Some((format!("{header}\n{name_line}\n"), rest.to_string()))
    }) else {
        return Ok(table);
    };
    let mut comments = String::new();
    let lines = found
        .notes
        .iter()
        .flat_map(|note| note.lines().map(str::to_string))
        .chain(
            found
                .unknown
                .iter()
                .map(|(property, what)| format!("{property}: {what}")),
        );
    for line in lines {
        comments.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    Ok(format!("{head}{comments}{rest}"))
}

/// A `[[KIND]]` table with `name` first, then `properties` (plain values
/// and lists of them) in sorted order.
pub fn status_table(kind: &str, name: &str, properties: &toml::Table) -> Result<String> {
    let mut rest = String::new();
    for (key, value) in properties {
        // A table inside the table is inline, or it would start a table of
        // its own after `[[KIND]]`.
        let holds_table = match value {
            toml::Value::Table(_) => true,
            toml::Value::Array(items) => items.iter().any(toml::Value::is_table),
            _ => false,
        };
        if holds_table {
            let key = toml::Table::from_iter([(key.clone(), toml::Value::Boolean(true))]);
            let key = toml::to_string(&key)
                .map_err(|err| Error::new(format!("cannot write the table: {err}")))?;
            let key = key.trim_end().trim_end_matches("true").trim_end();
            rest.push_str(&format!("{key} {value}\n"));
            continue;
        }
        let one = toml::Table::from_iter([(key.clone(), value.clone())]);
        rest.push_str(
            &toml::to_string(&one)
                .map_err(|err| Error::new(format!("cannot write the table: {err}")))?,
        );
    }
    Ok(format!(
        "[[{kind}]]\nname = {}\n{rest}",
        toml::Value::String(name.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Demo {
        name: String,
        ensure: Option<String>,
        mode: Option<ModeValue>,
        force: Option<bool>,
        #[serde(default)]
        returns: Vec<i64>,
        #[serde(default)]
        data: toml::Table,
        timeout: Option<u32>,
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum ModeValue {
        Text(String),
        Integer(i64),
    }

    impl Resource for Demo {
        const KIND: &'static str = "demo";
        fn entity_id(&self) -> String {
            format!("demo:{}", self.name)
        }
    }

    fn flags() -> Flags {
        let mut types = property_types::<Demo>();
        types.extend(common_types());
        Flags {
            kind: "demo".to_string(),
            types,
            ensure_values: vec!["present", "absent"],
            aliases: &[("version", "ensure")],
        }
    }

    fn document(request: &EnsureRequest) -> &str {
        match request.resources.as_slice() {
            [ResourceEntry::File { content, .. }] => content,
            other => panic!("one file, not {other:?}"),
        }
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| arg.to_string()).collect()
    }

    #[test]
    fn property_types_are_probed_from_the_struct() {
        assert_eq!(
            property_types::<Demo>(),
            vec![
                ("name", ValueType::String),
                ("ensure", ValueType::String),
                ("mode", ValueType::Any),
                ("force", ValueType::Bool),
                ("returns", ValueType::Array(Box::new(ValueType::Integer))),
                ("data", ValueType::Table),
                ("timeout", ValueType::Integer),
            ]
        );
    }

    #[test]
    fn flags_become_a_typed_table() {
        let request = flags()
            .parse(
                "holo-demo ensure",
                &args(&[
                    "x",
                    "--mode",
                    "0644",
                    "--force",
                    "--returns",
                    "0",
                    "--returns=3",
                    "--data",
                    "{ port = 80 }",
                    "--timeout",
                    "5",
                    "--absent",
                    "--require",
                    "file:/a",
                    "--noop",
                ]),
            )
            .expect("parses");
        assert!(request.noop && !request.force);
        let table: toml::Table = document(&request).parse().expect("toml");
        let demo = &table["demo"][0];
        assert_eq!(demo["name"].as_str(), Some("x"));
        assert_eq!(demo["mode"].as_str(), Some("0644"));
        assert_eq!(demo["force"].as_bool(), Some(true));
        assert_eq!(demo["returns"].as_array().map(Vec::len), Some(2));
        assert_eq!(demo["returns"][1].as_integer(), Some(3));
        assert_eq!(demo["data"]["port"].as_integer(), Some(80));
        assert_eq!(demo["timeout"].as_integer(), Some(5));
        assert_eq!(demo["ensure"].as_str(), Some("absent"));
        assert_eq!(demo["require"][0].as_str(), Some("file:/a"));
    }

    #[test]
    fn negations_aliases_and_mistakes() {
        let flags = flags();
        let parse = |list: &[&str]| flags.parse("holo-demo ensure", &args(list));
        let request = parse(&["x", "--no-force", "--version", "1.2"]).expect("parses");
        let table: toml::Table = document(&request).parse().expect("toml");
        assert_eq!(table["demo"][0]["force"].as_bool(), Some(false));
        assert_eq!(table["demo"][0]["ensure"].as_str(), Some("1.2"));
        let message = |list: &[&str]| parse(list).expect_err("fails").message().to_string();
        assert!(
            message(&["x", "--forse"]).contains("unknown flag --forse (did you mean --force?)")
        );
        assert_eq!(
            message(&["x", "--timeout"]),
            "holo-demo ensure: --timeout needs a value"
        );
        assert_eq!(
            message(&["x", "--absent", "--ensure", "present"]),
            "holo-demo ensure: --absent and --ensure both set ensure; give one of them"
        );
        assert!(message(&["x", "y"]).contains("\"y\" is a second name"));
        assert!(message(&["--force"]).starts_with("usage: holo-demo ensure NAME"));
        assert!(message(&["x", "--name", "y"]).contains("first argument"));
        assert_eq!(
            message(&["x", "--force=maybe"]),
            "holo-demo ensure: --force: expected true or false, got \"maybe\""
        );
        assert_eq!(
            message(&["x", "--protect=yes"]),
            "holo-demo ensure: --protect: expected true or false, got \"yes\""
        );
        assert_eq!(
            message(&["x", "--timeout", "soon"]),
            "holo-demo ensure: --timeout: expected an integer, got \"soon\""
        );
        assert_eq!(
            message(&["x", "--returns", "0", "--returns", "x"]),
            "holo-demo ensure: --returns: expected an integer, got \"x\" (a list: give --returns once per element)"
        );
        assert_eq!(
            message(&["x", "--data", "port = 80"]),
            "holo-demo ensure: --data: expected an inline TOML table such as '{ key = \"value\" }', got \"port = 80\""
        );
    }

    #[test]
    fn status_tables_put_the_name_first() {
        let mut properties = toml::Table::new();
        properties.insert("mode".to_string(), "0644".into());
        properties.insert("ensure".to_string(), "present".into());
        assert_eq!(
            status_table("file", "/etc/motd", &properties).expect("table"),
            "[[file]]\nname = \"/etc/motd\"\nensure = \"present\"\nmode = \"0644\"\n"
        );
    }

    #[test]
    fn tables_inside_status_tables_are_inline() {
        let properties: toml::Table =
            "data = { port = 8080, \"a b\" = [1] }\npost = [{ glob = \"*\" }]\nsource = \"/srv\"\n"
                .parse()
                .expect("toml");
        let text = status_table("scaffold", "/etc/app", &properties).expect("table");
        let parsed: toml::Table = text.parse().expect("parses back");
        assert_eq!(parsed.len(), 1, "{text}");
        let scaffold = &parsed["scaffold"][0];
        assert_eq!(scaffold["data"]["port"].as_integer(), Some(8080));
        assert_eq!(scaffold["data"]["a b"][0].as_integer(), Some(1));
        assert_eq!(scaffold["post"][0]["glob"].as_str(), Some("*"));
        assert_eq!(scaffold["source"].as_str(), Some("/srv"));
    }

    #[test]
    fn status_comments_follow_the_name() {
        let mut properties = toml::Table::new();
        properties.insert("checksum".to_string(), "abc".into());
        let found = StatusTable {
            properties,
            notes: vec!["last run: ok".to_string()],
            unknown: vec![("url".to_string(), "fill in the URL".to_string())],
        };
        assert_eq!(
            render_status("archive", "/a.tgz", &found).expect("table"),
            "[[archive]]\nname = \"/a.tgz\"\n# last run: ok\n# url: fill in the URL\nchecksum = \"abc\"\n"
        );
    }

    #[test]
    fn lines_of_the_flags_document_name_their_property() {
        let request = flags()
            .parse(
                "holo-demo ensure",
                &args(&[
                    "x",
                    "--mode",
                    "a\nb\n[c]\n",
                    "--data",
                    "{ port = 80, inner = { deep = 1 } }",
                    "--timeout",
                    "5",
                ]),
            )
            .expect("parses");
        let text = document(&request);
        let property_of = |needle: &str| {
            let number = text
                .lines()
                .position(|line| line.contains(needle))
                .unwrap_or_else(|| panic!("{needle:?} in {text}"));
            property_on_line(text, number + 1)
        };
        assert_eq!(property_of("[[demo]]"), None, "{text}");
        assert_eq!(property_of("name ="), Some("name".to_string()), "{text}");
        assert_eq!(
            property_of("timeout"),
            Some("timeout".to_string()),
            "{text}"
        );
        assert_eq!(property_of("port"), Some("data".to_string()), "{text}");
        assert_eq!(property_of("deep"), Some("data".to_string()), "{text}");
        assert_eq!(property_of("[c]"), Some("mode".to_string()), "{text}");
    }

    #[test]
    fn the_root_is_given_as_the_driver_gives_it() {
        assert_eq!(driver_root(Path::new("./target/")), "target");
        assert_eq!(driver_root(Path::new("/tmp/root")), "/tmp/root");
        assert_eq!(driver_root(Path::new("./")), ".");
    }

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_text(1_795_657_255), "2026-11-26 01:40:55 UTC");
    }

    #[test]
    fn apply_order_puts_requirements_first() {
        let entity = |id: &str, requires: &[&str]| {
            let mut scanned = Scanned::new(id, ());
            scanned.requires = requires.iter().map(|r| r.to_string()).collect();
            scanned
        };
        let entities = [entity("vm:a/app", &["vm:a/db"]), entity("vm:a/db", &[])];
        assert_eq!(apply_order(&entities), Ok(vec![1, 0]));
        let cycle = [entity("x:a", &["x:b"]), entity("x:b", &["x:a"])];
        assert_eq!(
            apply_order(&cycle),
            Err(vec!["x:a".to_string(), "x:b".to_string()])
        );
    }
}
