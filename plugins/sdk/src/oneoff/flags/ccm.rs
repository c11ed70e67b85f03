//! CCM's `ccm ensure` syntax on top of ours: its flag names as aliases of
//! our properties, `--owner USER:GROUP`, the `--check*` health check,
//! `--provider` on a kind with one provider, tables written `KEY:VALUE` or
//! `KEY=VALUE`, its short flags, and a clear refusal of what holo does not
//! do (Hiera files, `.env` files, NATS registration).

use super::{Flags, Parsed, set_once, value_of};
use crate::error::{Error, Result};
use crate::plugin::ValueType;

/// How a kind's one-off takes CCM's command line (its flag names are the
/// plugin's [`flag_aliases`](crate::Plugin::flag_aliases)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OneOffSyntax {
    /// The properties that the bare words after NAME give, in order
    /// (`ccm ensure package zsh 5.8`: `ensure`).
    pub positionals: &'static [&'static str],
    /// The one provider of a kind whose table has no `provider` (holo-file:
    /// `posix`): `--provider` with it is accepted, any other refused.
    pub provider: Option<&'static str>,
    /// Table properties that a flag gives one entry of, as `KEY:VALUE` or
    /// `KEY=VALUE` (CCM's `--header`, `--post`), besides an inline table.
    pub entry_flags: &'static [&'static str],
}

/// CCM's short flags.
pub(super) const SHORT: &[(&str, &str)] = &[
    ("-H", "header"),
    ("-e", "environment"),
    ("-S", "subscribe"),
    ("-R", "registration"),
];

/// The `--check`, `--check-tries` and `--check-sleep` flags so far.
#[derive(Default)]
pub(super) struct CheckFlags {
    command: Option<String>,
    tries: Option<i64>,
    sleep: Option<String>,
}

impl Flags {
    /// Takes `--flag` when it is CCM's syntax, returning whether it did.
    pub(super) fn take_ccm_flag(
        &self,
        command: &str,
        (flag, property): (&str, &str),
        inline: Option<String>,
        args: &mut std::slice::Iter<String>,
        parsed: &mut Parsed,
    ) -> Result<bool> {
        if let Some(reason) = refused(flag) {
            return Err(Error::new(format!("{command}: --{flag}: {reason}")));
        }
        let needs_value = matches!(flag, "session" | "check" | "check-tries" | "check-sleep")
            || (flag == "owner" && self.type_of("group").is_some())
            || (flag == "provider" && self.type_of("provider").is_none())
            || (flag == "disable" && self.type_of("enable") == Some(&ValueType::Bool));
        if !needs_value {
            return self.take_table_entry(command, (flag, property), inline, args, parsed);
        }
        if flag == "disable" {
            set_once(
                parsed,
                command,
                ("enable", flag),
                toml::Value::Boolean(false),
            )?;
            return Ok(true);
        }
        let value = value_of(command, flag, inline, args)?;
        match flag {
            "session" if value.is_empty() => {
                return Err(Error::new(format!(
                    "{command}: --session needs the session's directory, as holo session new prints it"
                )));
            }
            "session" => parsed.session = Some(value),
            "check" => parsed.check.command = Some(value),
            "check-tries" => parsed.check.tries = Some(tries(command, &value)?),
            "check-sleep" => parsed.check.sleep = Some(value),
            "owner" => self.owner(command, &value, parsed)?,
            _ => self.provider(command, &value)?,
        }
        Ok(true)
    }

    /// `--owner USER:GROUP` sets both; `--owner USER` the owner only.
    fn owner(&self, command: &str, value: &str, parsed: &mut Parsed) -> Result<()> {
        let (owner, group) = match value.split_once(':') {
            Some((owner, group)) => (owner, Some(group)),
            None => (value, None),
        };
        set_once(parsed, command, ("owner", "owner"), owner.into())?;
        if let Some(group) = group {
            set_once(parsed, command, ("group", "owner"), group.into())?;
        }
        Ok(())
    }

    /// `--provider` of a kind without the property: its one provider.
    fn provider(&self, command: &str, value: &str) -> Result<()> {
        match self.syntax.provider {
            Some(provider) if provider == value => Ok(()),
            Some(provider) => Err(Error::new(format!(
                "{command}: --provider {value:?}: holo's {} has one provider, {provider}; give --provider {provider} or leave the flag out",
                self.kind
            ))),
            None => Err(Error::new(format!(
                "{command}: --provider {value:?}: holo's {} has no providers to choose from; leave the flag out",
                self.kind
            ))),
        }
    }

    /// `--PROPERTY KEY:VALUE` or `KEY=VALUE` (CCM's `--header`, `--post`)
    /// for a table property, or an element of a list of tables.
    fn take_table_entry(
        &self,
        command: &str,
        (flag, property): (&str, &str),
        inline: Option<String>,
        args: &mut std::slice::Iter<String>,
        parsed: &mut Parsed,
    ) -> Result<bool> {
        if !self.syntax.entry_flags.contains(&property) {
            return Ok(false);
        }
        let Some(value_type) = self.type_of(property) else {
            return Ok(false);
        };
        let in_list =
            matches!(value_type, ValueType::Array(element) if **element == ValueType::Table);
        if *value_type != ValueType::Table && !in_list {
            return Ok(false);
        }
        let mut rest = args.clone();
        let text = match &inline {
            Some(text) => text.clone(),
            None => match rest.next() {
                Some(text) => text.clone(),
                None => return Ok(false),
            },
        };
        let Some((key, value)) = key_value(&text) else {
            return Ok(false);
        };
        *args = rest;
        let entry = toml::Table::from_iter([(key.to_string(), toml::Value::from(value))]);
        let given = parsed.given.iter().any(|(name, _)| name == property);
        match parsed.table.get_mut(property) {
            Some(toml::Value::Table(table)) if !in_list => table.extend(entry),
            Some(toml::Value::Array(list)) => list.push(entry.into()),
            _ if given => {
                return Err(Error::new(format!(
                    "{command}: --{flag} is given twice; give it once"
                )));
            }
            _ => {
                let value = if in_list {
                    vec![toml::Value::from(entry)].into()
                } else {
                    entry.into()
                };
                set_once(parsed, command, (property, flag), value)?;
            }
        }
        Ok(true)
    }
}

/// `KEY:VALUE` or `KEY=VALUE`, split at the first of them; not an inline
/// TOML table.
fn key_value(text: &str) -> Option<(&str, &str)> {
    if text.trim_start().starts_with('{') {
        return None;
    }
    let at = text.find([':', '='])?;
    let key = text[..at].trim();
    (!key.is_empty()).then(|| (key, text[at + 1..].trim()))
}

fn tries(command: &str, text: &str) -> Result<i64> {
    match ValueType::Integer.parse_text(text) {
        Ok(toml::Value::Integer(tries)) if tries >= 1 => Ok(tries),
        _ => Err(Error::new(format!(
            "{command}: --check-tries: expected a number of tries of 1 or more, got {text:?}"
        ))),
    }
}

/// CCM's flags that holo refuses, and why.
fn refused(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "hiera" => {
            "holo reads data from /etc/holo/data.toml below the root (holo-data(5)), not from a Hiera file; put the data there"
        }
        "read-env" => {
            "holo reads no .env file, so that what a one-off does does not depend on the directory it runs in; export the variables or put the data in /etc/holo/data.toml (holo-data(5))"
        }
        "context" | "registration" => {
            "holo has no NATS registration store; give the content with --content or --content-file"
        }
        _ => return None,
    })
}

/// The `health_checks` the `--check*` flags give.
pub(super) fn health_checks(command: &str, check: CheckFlags) -> Result<Option<toml::Value>> {
    let Some(check_command) = check.command else {
        return match (check.tries, check.sleep) {
            (None, None) => Ok(None),
            _ => Err(Error::new(format!(
                "{command}: --check-tries and --check-sleep set how --check runs; give --check COMMAND too"
            ))),
        };
    };
    let mut table = toml::Table::new();
    table.insert("command".into(), check_command.into());
    if let Some(tries) = check.tries {
        table.insert("tries".into(), tries.into());
    }
    if let Some(sleep) = check.sleep {
        table.insert("try_sleep".into(), sleep.into());
    }
    Ok(Some(toml::Value::Array(vec![table.into()])))
}
