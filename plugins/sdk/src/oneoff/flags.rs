//! The flags of `ensure`: `NAME --PROPERTY VALUE ...` as the one-table
//! document of a resource file, typed by the resource struct.

mod ccm;

pub use ccm::OneOffSyntax;

use super::request::{EnsureRequest, FLAGS_FILE, ResourceEntry};
use super::secrets::FileValues;
use crate::error::{Error, Result};
use crate::plugin::{Plugin, ValueType};
use crate::resources::closest;
use std::path::PathBuf;

/// The flags of `ensure` for a plugin: its kind (the first section of
/// `properties`) and every property with its type. `--VALUE` for each value
/// of `ensure` stands for `--ensure VALUE`; `--PROPERTY-file FILE` reads a
/// value from a file (`-`: standard input), so that a secret is never on
/// the command line.
pub struct Flags {
    kind: String,
    types: Vec<(&'static str, ValueType)>,
    ensure_values: Vec<&'static str>,
    aliases: &'static [(&'static str, &'static str)],
    syntax: OneOffSyntax,
}

/// What the flags gave so far.
#[derive(Default)]
struct Parsed {
    table: toml::Table,
    name: Option<String>,
    noop: bool,
    force: bool,
    /// The flag that set each property, as written.
    given: Vec<(String, String)>,
    files: FileValues,
    /// How many of the kind's positional properties the bare words gave.
    positionals: usize,
    /// `--session DIR`.
    session: Option<String>,
    check: ccm::CheckFlags,
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
        let mut flags = Flags::new(kind, types, ensure_values, plugin.flag_aliases());
        flags.syntax = plugin.oneoff_syntax();
        Some(flags)
    }

    /// The flags of a `[[kind]]` table with these properties, and the
    /// common properties every kind accepts.
    fn new(
        kind: &str,
        mut types: Vec<(&'static str, ValueType)>,
        ensure_values: Vec<&'static str>,
        aliases: &'static [(&'static str, &'static str)],
    ) -> Flags {
        types.extend(crate::resources::common_property_types());
        Flags {
            kind: kind.to_string(),
            types,
            ensure_values,
            aliases,
            syntax: OneOffSyntax::default(),
        }
    }

    /// Flags of a kind without `ensure` values or aliases.
    #[cfg(test)]
    pub(crate) fn for_tests(kind: &str, types: Vec<(&'static str, ValueType)>) -> Flags {
        Flags::new(kind, types, Vec::new(), &[])
    }

    fn type_of(&self, property: &str) -> Option<&ValueType> {
        self.types
            .iter()
            .find(|(name, _)| *name == property)
            .map(|(_, value_type)| value_type)
    }

    /// Turns `NAME --PROPERTY VALUE ...` into the one-table document.
    pub fn parse(&self, command: &str, args: &[String]) -> Result<EnsureRequest> {
        Ok(self.parse_with_session(command, args)?.0)
    }

    /// [`Flags::parse`], and the directory `--session` gave.
    pub(crate) fn parse_with_session(
        &self,
        command: &str,
        args: &[String],
    ) -> Result<(EnsureRequest, Option<String>)> {
        let mut parsed = Parsed::default();
        let mut args = args.iter();
        let mut previous: Option<&String> = None;
        while let Some(arg) = args.next() {
            let short = ccm::SHORT.iter().find(|(short, _)| short == arg);
            let Some(flag) = arg.strip_prefix("--").or(short.map(|(_, long)| *long)) else {
                self.take_word(command, arg, previous, &mut parsed)?;
                previous = Some(arg);
                continue;
            };
            previous = Some(arg);
            self.take_flag(command, flag, &mut args, &mut parsed)?;
        }
        let session = parsed.session.take();
        Ok((self.request(command, parsed)?, session))
    }

    /// A bare word: the name, then the kind's positional properties.
    fn take_word(
        &self,
        command: &str,
        arg: &str,
        previous: Option<&String>,
        parsed: &mut Parsed,
    ) -> Result<()> {
        if parsed.name.is_none() {
            parsed.name = Some(arg.to_string());
            return Ok(());
        }
        let Some(property) = self.syntax.positionals.get(parsed.positionals) else {
            return Err(self.second_name(command, arg, previous));
        };
        // After a switch, a word that is none of the property's values was
        // meant as the switch's (`--enable maybe`).
        let fits = match self.type_of(property) {
            Some(ValueType::OneOf(values)) => values.contains(&arg),
            _ => true,
        };
        if !fits && self.switch_before(previous).is_some() {
            return Err(self.second_name(command, arg, previous));
        }
        parsed.positionals += 1;
        let value = self
            .type_of(property)
            .map_or(Ok(arg.into()), |value_type| {
                value_type.parse_text(arg).map_err(|wanted| {
                    Error::new(format!(
                        "{command}: {}: expected {wanted}, got {arg:?}",
                        property.to_uppercase()
                    ))
                })
            })?;
        set_shown(parsed, command, property, property.to_uppercase(), value)
    }

    /// The switch (a flag of a boolean property, without `=`) that `previous` is.
    fn switch_before<'a>(&self, previous: Option<&'a String>) -> Option<&'a str> {
        previous
            .and_then(|previous| previous.strip_prefix("--"))
            .filter(|flag| !flag.contains('='))
            .filter(|flag| self.type_of(&flag.replace('-', "_")) == Some(&ValueType::Bool))
    }

    /// A second bare word: after a switch (`--enable maybe`) it was meant as
    /// the switch's value, which a switch takes only after `=`.
    fn second_name(&self, command: &str, arg: &str, previous: Option<&String>) -> Error {
        match self.switch_before(previous) {
            Some(flag) => Error::new(format!(
                "{command}: --{flag} is a switch and takes no separate value ({arg:?} follows it); write --{flag}, --{flag}=true or --{flag}=false"
            )),
            None if self.syntax.positionals.is_empty() => Error::new(format!(
                "{command}: {arg:?} is a second name; give one NAME and the properties as --PROPERTY VALUE"
            )),
            None => Error::new(format!(
                "{command}: {arg:?} is one word too many; give {} and the properties as --PROPERTY VALUE",
                self.words()
            )),
        }
    }

    /// One `--flag[=VALUE]`, taking its value from `args` when it needs one.
    fn take_flag(
        &self,
        command: &str,
        flag: &str,
        args: &mut std::slice::Iter<String>,
        parsed: &mut Parsed,
    ) -> Result<()> {
        let (flag, inline) = match flag.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_string())),
            None => (flag, None),
        };
        let property = match self.aliases.iter().find(|(alias, _)| *alias == flag) {
            Some((_, property)) => property.to_string(),
            None => flag.replace('-', "_"),
        };
        if self.take_ccm_flag(command, (flag, &property), inline.clone(), args, parsed)? {
            return Ok(());
        }
        match property.as_str() {
            "noop" if inline.is_none() => {
                parsed.noop = true;
                return Ok(());
            }
            "force_apply" if inline.is_none() => {
                parsed.force = true;
                return Ok(());
            }
            _ => {}
        }
        if inline.is_none() && self.ensure_values.contains(&flag) {
            let value = toml::Value::String(flag.into());
            return set_once(parsed, command, ("ensure", flag), value);
        }
        let negated = property.strip_prefix("no_");
        if let (Some(base), None) = (negated, &inline)
            && self.type_of(base) == Some(&ValueType::Bool)
        {
            return set_once(parsed, command, (base, flag), toml::Value::Boolean(false));
        }
        if self.type_of(&property).is_none()
            && let Some(base) = property.strip_suffix("_file")
            && let Some(value_type) = self.type_of(base).filter(|t| FileValues::reads(t))
        {
            let path = value_of(command, flag, inline, args)?;
            let value = parsed.files.read(command, flag, &path, value_type)?;
            return set_once(parsed, command, (base, flag), value);
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
            (None, _) => value_of(command, flag, None, args)?,
        };
        let value = value_type.parse_text(&text).map_err(|wanted| {
            let wanted = match self.syntax.entry_flags.contains(&property.as_str()) {
                true => format!("KEY:VALUE, KEY=VALUE or {wanted}"),
                false => wanted.to_string(),
            };
            Error::new(format!(
                "{command}: --{flag}: expected {wanted}, got {text:?}{}",
                repeat_hint(value_type, flag)
            ))
        })?;
        match (value_type, parsed.table.get_mut(&property)) {
            (ValueType::Array(_), Some(toml::Value::Array(list))) => list.push(value),
            (ValueType::Array(_), None) => {
                parsed.given.push((property.clone(), format!("--{flag}")));
                parsed
                    .table
                    .insert(property, toml::Value::Array(vec![value]));
            }
            _ => set_once(parsed, command, (&property, flag), value)?,
        }
        Ok(())
    }

    /// The request of the parsed flags: `name` first, then the properties.
    fn request(&self, command: &str, mut parsed: Parsed) -> Result<EnsureRequest> {
        let Some(name) = parsed.name.take() else {
            return Err(Error::new(format!(
                "usage: {command} {} [--PROPERTY VALUE]... [--noop] [--force-apply]",
                self.words()
            )));
        };
        let check = std::mem::take(&mut parsed.check);
        if let Some(checks) = ccm::health_checks(command, check)? {
            set_shown(
                &mut parsed,
                command,
                "health_checks",
                "--check".into(),
                checks,
            )?;
        }
        let mut ordered = toml::Table::new();
        ordered.insert("name".to_string(), toml::Value::String(name));
        ordered.extend(parsed.table);
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
            noop: parsed.noop,
            force: parsed.force,
            flags_given: parsed.given,
        })
    }

    /// The bare words the one-off takes: `NAME [ENSURE]`.
    fn words(&self) -> String {
        let mut words = String::from("NAME");
        for property in self.syntax.positionals {
            words.push_str(&format!(" [{}]", property.to_uppercase()));
        }
        words
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

/// The value of `--flag`: written inline, or the next argument.
fn value_of(
    command: &str,
    flag: &str,
    inline: Option<String>,
    args: &mut std::slice::Iter<String>,
) -> Result<String> {
    match inline {
        Some(text) => Ok(text),
        None => args
            .next()
            .cloned()
            .ok_or_else(|| Error::new(format!("{command}: --{flag} needs a value"))),
    }
}

/// Sets `property` from `--flag`, refusing a second flag for it: the
/// message names both flags as written (`--version` and `--absent` both
/// set `ensure`).
fn set_once(
    parsed: &mut Parsed,
    command: &str,
    (property, flag): (&str, &str),
    value: toml::Value,
) -> Result<()> {
    set_shown(parsed, command, property, format!("--{flag}"), value)
}

/// Sets `property` from what the user wrote as `flag` (`--version`, or
/// `ENSURE` for a bare word), refusing a second one for it.
fn set_shown(
    parsed: &mut Parsed,
    command: &str,
    property: &str,
    flag: String,
    value: toml::Value,
) -> Result<()> {
    if let Some((_, first)) = parsed.given.iter().find(|(name, _)| name == property) {
        return Err(Error::new(if *first == flag {
            format!("{command}: {flag} is given twice; give it once")
        } else {
            format!("{command}: {first} and {flag} both set {property}; give one of them")
        }));
    }
    parsed.table.insert(property.to_string(), value);
    parsed.given.push((property.to_string(), flag));
    Ok(())
}

/// For a list: each flag gives one element.
fn repeat_hint(value_type: &ValueType, flag: &str) -> String {
    match value_type {
        ValueType::Array(_) => format!(" (a list: give --{flag} once per element)"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
