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
    /// The file of each definition, in order: Holo 3 says `found in` once
    /// per definition, so a file that defines the entity twice is named
    /// twice.
    pub found_in: Vec<PathBuf>,
}

/// Everything read from the resource directory.
#[derive(Debug, Default)]
pub struct Found {
    /// The valid entities, by id.
    pub entities: BTreeMap<String, Stacked>,
    /// Entities whose definitions are broken or conflict: neither applied
    /// nor scrubbed.
    pub broken: Vec<String>,
    /// Entities whose definitions conflict, left out by [`Found::finish`].
    conflicting: std::collections::BTreeSet<String>,
}

impl Found {
    /// Leaves out the entities with a broken or conflicting definition,
    /// once every file is read.
    pub fn finish(&mut self) {
        self.broken.extend(std::mem::take(&mut self.conflicting));
        for id in &self.broken {
            self.entities.remove(id);
        }
    }
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

    /// A problem Holo 3 reports with a text of its own: that text, then
    /// where and what to do.
    fn problem(&self, offset: usize, problem: &Problem) -> String {
        let ours = self.at(offset, &problem.detail);
        match &problem.holo3 {
            Some(holo3) => format!("{holo3} ({ours})"),
            None => ours,
        }
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
        let problem = Problem::wrong_type(
            value.get_ref(),
            "slice",
            format!("write {} as [[{0}]] tables", kind.table()),
        );
        problems.push(source.problem(value.span().start, &problem));
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
        Some(value) => {
            let at = table.get("name").map_or(offset, |value| value.span().start);
            let problem =
                Problem::wrong_type(value, "string", format!("{label}: name must be a string"));
            return Err(TableError::Ours(source.problem(at, &problem), None));
        }
    };
    let ours = |at: usize, problem: Problem| {
        let detail = format!("{}:{name}: {}", kind.table(), problem.detail);
        TableError::Ours(
            source.problem(at, &Problem { detail, ..problem }),
            Some(name.clone()),
        )
    };
    if let Some(problem) = bad_name(&name) {
        return Err(ours(offset, Problem::ours(problem)));
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
                Problem::ours(format!("unknown attribute {key_name:?}; {hint}")),
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

/// A problem with a value: Holo 3's text for it, if Holo 3 has one, and
/// ours.
struct Problem {
    holo3: Option<String>,
    detail: String,
}

impl Problem {
    fn ours(detail: String) -> Problem {
        Problem {
            holo3: None,
            detail,
        }
    }

    /// A value of the wrong type, in the words of Holo 3's TOML decoder
    /// (`go_type` is what it wanted: integer, string, boolean or slice).
    fn wrong_type(value: &DeValue<'_>, go_type: &str, detail: String) -> Problem {
        let found = match value {
            DeValue::String(_) => "string",
            DeValue::Integer(_) => "int64",
            DeValue::Float(_) => "float64",
            DeValue::Boolean(_) => "bool",
            DeValue::Datetime(_) => "time.Time",
            DeValue::Array(_) => "[]interface {}",
            DeValue::Table(_) => "map[string]interface {}",
        };
        Problem {
            holo3: Some(format!(
                "toml: cannot load TOML value of type {found} into a Go {go_type}"
            )),
            detail,
        }
    }
}

fn set_attribute(
    definition: &mut Definition,
    key: &str,
    value: &DeValue<'_>,
) -> Result<(), Problem> {
    let a = &mut definition.attributes;
    match key {
        // As in Holo 3, 0 and "" are as good as unset.
        "gid" | "uid" => a.number = Some(number(key, value)?).filter(|&number| number != 0),
        "system" => definition.system = boolean(key, value)?,
        "skipBaseGroups" => definition.skip_base_groups = boolean(key, value)?,
        "comment" => a.comment = Some(text(key, value)?).filter(|text| !text.is_empty()),
        "home" => a.home = Some(text(key, value)?).filter(|text| !text.is_empty()),
        "group" => a.group = Some(text(key, value)?).filter(|text| !text.is_empty()),
        "shell" => a.shell = Some(text(key, value)?).filter(|text| !text.is_empty()),
        "groups" => a.groups = texts(key, value)?,
        _ => {}
    }
    Ok(())
}

fn number(key: &str, value: &DeValue<'_>) -> Result<u32, Problem> {
    let Some(integer) = value.as_integer() else {
        let detail = format!("{key} must be a number such as 1001");
        return Err(Problem::wrong_type(value, "integer", detail));
    };
    u32::from_str_radix(integer.as_str(), integer.radix()).map_err(|_| {
        Problem::ours(format!(
            "{key} must be a number from 0 to 4294967295, not {}",
            integer.as_str()
        ))
    })
}

fn boolean(key: &str, value: &DeValue<'_>) -> Result<bool, Problem> {
    value.as_bool().ok_or_else(|| {
        Problem::wrong_type(value, "boolean", format!("{key} must be true or false"))
    })
}

fn text(key: &str, value: &DeValue<'_>) -> Result<String, Problem> {
    value.as_str().map(str::to_string).ok_or_else(|| {
        Problem::wrong_type(value, "string", format!("{key} must be a string in quotes"))
    })
}

fn texts(key: &str, value: &DeValue<'_>) -> Result<Vec<String>, Problem> {
    let detail = || format!("{key} must be a list of group names, such as [\"audio\", \"video\"]");
    let items = value
        .as_array()
        .ok_or_else(|| Problem::wrong_type(value, "slice", detail()))?;
    items
        .iter()
        .map(|item| {
            let item = item.get_ref();
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| Problem::wrong_type(item, "string", detail()))
        })
        .collect()
}

/// Adds a definition to its entity's stack, or starts one. A conflict
/// (Holo 3's message) leaves the entity out at the end; later definitions
/// are still compared, as Holo 3 does.
fn stack(
    source: &Source<'_>,
    definition: Definition,
    found: &mut Found,
    problems: &mut Vec<String>,
) {
    let id = definition.id();
    let Some(stacked) = found.entities.get_mut(&id) else {
        if !found.broken.contains(&id) {
            found.entities.insert(
                id,
                Stacked {
                    definition,
                    sources: vec![source.path.to_path_buf()],
                    found_in: vec![source.path.to_path_buf()],
                },
            );
        }
        return;
    };
    let conflicts = stacked.definition.stack(&definition);
    stacked.found_in.push(source.path.to_path_buf());
    if !stacked.sources.iter().any(|path| path == source.path) {
        stacked.sources.push(source.path.to_path_buf());
    }
    if !conflicts.is_empty() {
        problems.extend(conflicts);
        found.conflicting.insert(id);
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
                "toml: cannot load TOML value of type string into a Go integer (/usr/share/holo/users-groups/a.toml:7: group:g: gid must be a number such as 1001)",
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
        let problems = read("[[group]]\nname = \"s\"\ngid = 3\n", &mut found);
        assert_eq!(problems, ["conflicting GID for group:s (1 vs. 3)"]);
        found.finish();
        assert!(found.entities.is_empty());
        assert_eq!(found.broken, ["group:s"]);
    }
}
