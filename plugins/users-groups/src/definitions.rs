//! Reading the definition files, `$HOLO_RESOURCE_DIR/*.toml`, as Holo 3
//! does: every `[[group]]` and `[[user]]` table, stacked by name, with
//! Holo 3's messages (`!! File F is invalid:`, then `>> ...` for each
//! problem). A broken table or a conflicting stack leaves its entity out;
//! the other entities stay. Our own messages (unknown attributes, wrong
//! types, TOML syntax) name the origin file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::model::{Attributes, Definition, Kind};

/// The attributes a `[[group]]` table accepts.
pub const GROUP_KEYS: &[&str] = &["name", "gid", "system"];
/// The attributes a `[[user]]` table accepts.
pub const USER_KEYS: &[&str] = &[
    "name",
    "comment",
    "uid",
    "system",
    "home",
    "group",
    "groups",
    "skipBaseGroups",
    "shell",
];

/// One definition and the files that gave it.
#[derive(Debug, Clone)]
pub struct Stacked {
    pub definition: Definition,
    /// The files as read (below `HOLO_RESOURCE_DIR`), each once, in order.
    pub sources: Vec<PathBuf>,
}

/// Everything read from the resource directory.
#[derive(Debug, Default)]
pub struct Found {
    /// The valid entities, by id.
    pub entities: BTreeMap<String, Stacked>,
    /// Entities whose definitions are broken or conflict: neither applied
    /// nor scrubbed.
    pub broken: Vec<String>,
}

/// A file's text with the origin path for our own messages.
pub struct Source<'a> {
    /// The file as read, for `SOURCE:` and Holo 3's messages.
    pub path: &'a Path,
    /// The static file it copies, for our messages.
    pub origin: &'a Path,
    pub text: &'a str,
}

impl Source<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let before = self.text.get(..offset).unwrap_or(self.text);
        before.matches('\n').count() + 1
    }

    fn at(&self, offset: usize, message: impl std::fmt::Display) -> String {
        format!(
            "{}:{}: {message}",
            self.origin.display(),
            self.line_of(offset)
        )
    }
}

/// Reads one file into `found`; returns the problems to print for it.
pub fn read_file(source: &Source<'_>, found: &mut Found) -> Vec<String> {
    let document = match DeTable::parse(source.text) {
        Ok(document) => document,
        Err(err) => {
            let offset = err.span().map_or(0, |span| span.start);
            let message = err.message().trim().to_string();
            return vec![source.at(
                offset,
                format!("{message}; fix the TOML syntax (nothing in this file was read)"),
            )];
        }
    };
    let mut problems = Vec::new();
    let mut lists = [(Kind::Group, None), (Kind::User, None)];
    let mut keys: Vec<_> = document.get_ref().iter().collect();
    keys.sort_by_key(|(key, _)| key.span().start);
    for (key, value) in keys {
        match lists
            .iter_mut()
            .find(|(kind, _)| kind.table() == key.get_ref())
        {
            Some((_, slot)) => *slot = Some(value),
            None => problems.push(source.at(
                key.span().start,
                format!(
                    "unknown table or key {:?}; this file holds only [[group]] and [[user]] tables",
                    key.get_ref()
                ),
            )),
        }
    }
    for (kind, value) in lists {
        if let Some(value) = value {
            read_list(source, kind, value, found, &mut problems);
        }
    }
    problems
}

fn read_list(
    source: &Source<'_>,
    kind: Kind,
    value: &Spanned<DeValue<'_>>,
    found: &mut Found,
    problems: &mut Vec<String>,
) {
    let Some(items) = value.get_ref().as_array() else {
        problems.push(source.at(
            value.span().start,
            format!(
                "{} must be written as [[{}]] tables",
                kind.table(),
                kind.table()
            ),
        ));
        return;
    };
    for (index, item) in items.iter().enumerate() {
        let label = format!("{}[{index}]", kind.plural());
        let Some(table) = item.get_ref().as_table() else {
            problems.push(source.at(
                item.span().start,
                format!("{label} is not a table; write [[{}]] tables", kind.table()),
            ));
            continue;
        };
        match read_table(source, kind, &label, table, item.span().start) {
            Ok(definition) => stack(source, definition, found, problems),
            Err(TableError::Holo3(message)) => problems.push(message),
            Err(TableError::Ours(message, name)) => {
                problems.push(message);
                if let Some(name) = name {
                    found.broken.push(format!("{}:{name}", kind.table()));
                }
            }
        }
    }
}

/// Why a table was not read: Holo 3's message, or ours (with the name of
/// the entity, when it has one, so that it is not scrubbed).
enum TableError {
    Holo3(String),
    Ours(String, Option<String>),
}

fn read_table(
    source: &Source<'_>,
    kind: Kind,
    label: &str,
    table: &DeTable<'_>,
    offset: usize,
) -> Result<Definition, TableError> {
    let name = match table.get("name").map(|value| value.get_ref()) {
        Some(DeValue::String(name)) if !name.is_empty() => name.to_string(),
        None | Some(DeValue::String(_)) => {
            return Err(TableError::Holo3(format!(
                "{label} is missing required 'name' attribute"
            )));
        }
        Some(_) => {
            let at = table.get("name").map_or(offset, |value| value.span().start);
            let message = source.at(at, format!("{label}: name must be a string"));
            return Err(TableError::Ours(message, None));
        }
    };
    let ours = |at: usize, message: String| {
        TableError::Ours(
            source.at(at, format!("{}:{name}: {message}", kind.table())),
            Some(name.clone()),
        )
    };
    if let Some(problem) = bad_name(&name) {
        return Err(ours(offset, problem));
    }
    let mut definition = Definition {
        kind,
        name: name.clone(),
        attributes: Attributes::default(),
        system: false,
        skip_base_groups: false,
    };
    let accepted = match kind {
        Kind::Group => GROUP_KEYS,
        Kind::User => USER_KEYS,
    };
    for (key, value) in table {
        let key_name = key.get_ref().as_ref();
        if !accepted.contains(&key_name) {
            let hint = match holo_plugin::resources::closest(key_name, accepted) {
                Some(close) => format!("did you mean {close:?}?"),
                None => format!("[[{}]] accepts {}", kind.table(), accepted.join(", ")),
            };
            return Err(ours(
                key.span().start,
                format!("unknown attribute {key_name:?}; {hint}"),
            ));
        }
        set_attribute(&mut definition, key_name, value.get_ref())
            .map_err(|message| ours(value.span().start, message))?;
    }
    Ok(definition)
}

/// A name the shadow tools would take for an option or that would break
/// `/etc/passwd`.
fn bad_name(name: &str) -> Option<String> {
    let bad = name.starts_with('-')
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == ':' || c == ',' || c.is_whitespace() || c.is_control());
    bad.then(|| {
        format!(
            "the name {name:?} cannot be used; a user or group name must not start with '-' or contain '/', ':', ',' or spaces"
        )
    })
}

fn set_attribute(
    definition: &mut Definition,
    key: &str,
    value: &DeValue<'_>,
) -> Result<(), String> {
    let a = &mut definition.attributes;
    match key {
        "name" => {}
        "gid" | "uid" => a.number = Some(number(key, value)?),
        "system" => definition.system = boolean(key, value)?,
        "skipBaseGroups" => definition.skip_base_groups = boolean(key, value)?,
        "comment" => a.comment = Some(text(key, value)?),
        "home" => a.home = Some(text(key, value)?),
        "group" => a.group = Some(text(key, value)?),
        "shell" => a.shell = Some(text(key, value)?),
        "groups" => a.groups = texts(key, value)?,
        _ => return Err(format!("unknown attribute {key:?}")),
    }
    Ok(())
}

fn number(key: &str, value: &DeValue<'_>) -> Result<u32, String> {
    value
        .as_integer()
        .and_then(|integer| u32::from_str_radix(integer.as_str(), integer.radix()).ok())
        .ok_or_else(|| {
            format!(
                "{key} must be a number from 0 to 4294967295, not {}",
                shown(value)
            )
        })
}

fn boolean(key: &str, value: &DeValue<'_>) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("{key} must be true or false, not {}", shown(value)))
}

fn text(key: &str, value: &DeValue<'_>) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key} must be a string, not {}", shown(value)))
}

fn texts(key: &str, value: &DeValue<'_>) -> Result<Vec<String>, String> {
    let wrong = || format!("{key} must be a list of group names, such as [\"audio\", \"video\"]");
    let items = value.as_array().ok_or_else(wrong)?;
    items
        .iter()
        .map(|item| {
            item.get_ref()
                .as_str()
                .map(str::to_string)
                .ok_or_else(wrong)
        })
        .collect()
}

fn shown(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(text) => format!("the string {text:?}"),
        DeValue::Integer(integer) => format!("the number {}", integer.as_str()),
        other => format!("a {}", other.type_str()),
    }
}

/// Adds a definition to its entity's stack, or starts one; a conflict
/// (Holo 3's message) leaves the entity out.
fn stack(
    source: &Source<'_>,
    definition: Definition,
    found: &mut Found,
    problems: &mut Vec<String>,
) {
    let id = definition.id();
    if found.broken.contains(&id) {
        return;
    }
    let Some(stacked) = found.entities.get_mut(&id) else {
        found.entities.insert(
            id,
            Stacked {
                definition,
                sources: vec![source.path.to_path_buf()],
            },
        );
        return;
    };
    let conflicts = stacked.definition.stack(&definition);
    if !stacked.sources.iter().any(|path| path == source.path) {
        stacked.sources.push(source.path.to_path_buf());
    }
    if !conflicts.is_empty() {
        problems.extend(conflicts);
        found.entities.remove(&id);
        found.broken.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, found: &mut Found) -> Vec<String> {
        let source = Source {
            path: Path::new("res/a.toml"),
            origin: Path::new("/usr/share/holo/users-groups/a.toml"),
            text,
        };
        read_file(&source, found)
    }

    #[test]
    fn missing_names_get_holo3_messages_and_valid_tables_stay() {
        let mut found = Found::default();
        let problems = read(
            "[[group]]\nname = \"a\"\n[[group]]\nnam = \"x\"\n[[user]]\ngid = 1\n",
            &mut found,
        );
        assert_eq!(
            problems,
            [
                "groups[1] is missing required 'name' attribute",
                "users[0] is missing required 'name' attribute"
            ]
        );
        assert!(found.entities.contains_key("group:a"));
    }

    #[test]
    fn unknown_attributes_and_types_name_file_and_line() {
        let mut found = Found::default();
        let problems = read(
            "[[user]]\nname = \"u\"\nshel = \"/bin/sh\"\n\n[[group]]\nname = \"g\"\ngid = \"12\"\n",
            &mut found,
        );
        assert_eq!(
            problems,
            [
                "/usr/share/holo/users-groups/a.toml:7: group:g: gid must be a number from 0 to 4294967295, not the string \"12\"",
                "/usr/share/holo/users-groups/a.toml:3: user:u: unknown attribute \"shel\"; did you mean \"shell\"?",
            ]
        );
        assert!(found.entities.is_empty());
        assert_eq!(found.broken, ["group:g", "user:u"]);
    }

    #[test]
    fn syntax_errors_and_bad_names_are_reported() {
        let mut found = Found::default();
        let problems = read("[[user]]\nname = \n", &mut found);
        assert!(problems[0].starts_with("/usr/share/holo/users-groups/a.toml:2: "));
        let problems = read("[[user]]\nname = \"-r\"\n", &mut found);
        assert!(
            problems[0].contains("must not start with '-'"),
            "{problems:?}"
        );
    }

    #[test]
    fn stacks_across_files_and_drops_conflicts() {
        let mut found = Found::default();
        read("[[group]]\nname = \"s\"\ngid = 1\n", &mut found);
        let problems = read("[[group]]\nname = \"s\"\ngid = 2\n", &mut found);
        assert_eq!(problems, ["conflicting GID for group:s (1 vs. 2)"]);
        assert!(found.entities.is_empty());
    }
}
