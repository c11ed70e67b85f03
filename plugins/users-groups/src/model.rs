//! The `[[user]]` and `[[group]]` tables: one entity's attributes, the
//! definitions as the resources give them, and how definitions of one
//! entity stack.

use serde::{Deserialize, Serialize};

/// What an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Group,
    User,
}

impl Kind {
    /// The table name and the entity id's type: `group`, `user`.
    pub fn table(self) -> &'static str {
        match self {
            Kind::Group => "group",
            Kind::User => "user",
        }
    }

    /// The name of a list of definitions in Holo 3's messages: `groups[1]`.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Group => "groups",
            Kind::User => "users",
        }
    }

    /// `user:NAME` or `group:NAME` back into kind and name.
    pub fn parse_id(id: &str) -> Option<(Kind, &str)> {
        let (table, name) = id.split_once(':')?;
        let kind = match table {
            "group" => Kind::Group,
            "user" => Kind::User,
            _ => return None,
        };
        (!name.is_empty()).then_some((kind, name))
    }
}

/// The attributes of a user or a group (a group has only `number`, its
/// GID). `None` means "not said"; an empty `groups` means none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attributes {
    /// The UID of a user, the GID of a group.
    pub number: Option<u32>,
    pub comment: Option<String>,
    pub home: Option<String>,
    /// The login group (a name, or a number when it has none).
    pub group: Option<String>,
    /// The auxiliary groups.
    pub groups: Vec<String>,
    pub shell: Option<String>,
}

/// One attribute other than `groups`, so that merging and comparing are
/// written once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Number,
    Comment,
    Home,
    Group,
    Shell,
}

/// A field's value, printable as in a message or on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Number(u32),
    Text(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Number(number) => write!(f, "{number}"),
            Value::Text(text) => f.write_str(text),
        }
    }
}

impl Field {
    /// Every field, in the order of Holo 3's command lines.
    pub const ALL: [Field; 5] = [
        Field::Number,
        Field::Comment,
        Field::Home,
        Field::Group,
        Field::Shell,
    ];

    pub fn get(self, attributes: &Attributes) -> Option<Value> {
        let text = |value: &Option<String>| value.clone().map(Value::Text);
        match self {
            Field::Number => attributes.number.map(Value::Number),
            Field::Comment => text(&attributes.comment),
            Field::Home => text(&attributes.home),
            Field::Group => text(&attributes.group),
            Field::Shell => text(&attributes.shell),
        }
    }

    pub fn set(self, attributes: &mut Attributes, value: Option<Value>) {
        let text = |value: Option<Value>| value.map(|value| value.to_string());
        match self {
            Field::Number => {
                attributes.number = match value {
                    Some(Value::Number(number)) => Some(number),
                    Some(Value::Text(text)) => text.parse().ok(),
                    None => None,
                }
            }
            Field::Comment => attributes.comment = text(value),
            Field::Home => attributes.home = text(value),
            Field::Group => attributes.group = text(value),
            Field::Shell => attributes.shell = text(value),
        }
    }

    /// How Holo 3 names the field in a stacking conflict; `None` for the
    /// comment, which never conflicts (the later definition's wins).
    pub fn conflict_label(self, kind: Kind) -> Option<&'static str> {
        match (self, kind) {
            (Field::Number, Kind::Group) => Some("GID"),
            (Field::Number, Kind::User) => Some("UID"),
            (Field::Home, _) => Some("home directory"),
            (Field::Group, _) => Some("login group"),
            (Field::Shell, _) => Some("login shell"),
            (Field::Comment, _) => None,
        }
    }
}

/// An entity as it is, or as an image records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    pub kind: Kind,
    pub name: String,
    pub attributes: Attributes,
}

impl Entity {
    /// An entity with nothing known but its name: the base image of an
    /// entity that did not exist before Holo created it.
    pub fn named(kind: Kind, name: &str) -> Entity {
        Entity {
            kind,
            name: name.to_string(),
            attributes: Attributes::default(),
        }
    }

    pub fn id(&self) -> String {
        format!("{}:{}", self.kind.table(), self.name)
    }

    /// True when the image says nothing but the name.
    pub fn is_empty(&self) -> bool {
        self.attributes == Attributes::default()
    }
}

/// The definitions of one entity, stacked: what scan caches for apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub kind: Kind,
    pub name: String,
    pub attributes: Attributes,
    /// `system = true`: `--system` for useradd and groupadd.
    pub system: bool,
    /// `skipBaseGroups = true`: `groups` replaces the base image's list.
    pub skip_base_groups: bool,
}

impl Definition {
    pub fn id(&self) -> String {
        format!("{}:{}", self.kind.table(), self.name)
    }

    /// Stacks a later definition of the same entity onto this one. Returns
    /// Holo 3's messages for the attributes the two set differently (which
    /// keep this one's value); the entity is then left alone.
    pub fn stack(&mut self, later: &Definition) -> Vec<String> {
        let mut conflicts = Vec::new();
        for field in Field::ALL {
            let (mine, theirs) = (field.get(&self.attributes), field.get(&later.attributes));
            match (mine, theirs, field.conflict_label(self.kind)) {
                (Some(mine), Some(theirs), Some(label)) if mine != theirs => {
                    conflicts.push(format!(
                        "conflicting {label} for {} ({mine} vs. {theirs})",
                        self.id()
                    ));
                }
                (_, Some(theirs), _) => field.set(&mut self.attributes, Some(theirs)),
                _ => {}
            }
        }
        // As Holo 3 stacks them: the groups of all, sorted; `system` from
        // any; `skipBaseGroups` from the first.
        self.attributes.groups = sorted_union(&self.attributes.groups, &later.attributes.groups);
        self.system |= later.system;
        conflicts
    }

    /// The `with ...` line of holo scan, as Holo 3 words it.
    pub fn description(&self) -> String {
        let mut parts = Vec::new();
        if self.system {
            parts.push("type: system".to_string());
        }
        let a = &self.attributes;
        if let Some(number) = a.number {
            let label = if self.kind == Kind::User {
                "UID"
            } else {
                "GID"
            };
            parts.push(format!("{label}: {number}"));
        }
        if let Some(home) = &a.home {
            parts.push(format!("home: {home}"));
        }
        if let Some(group) = &a.group {
            parts.push(format!("login group: {group}"));
        }
        if !a.groups.is_empty() {
            let label = if self.skip_base_groups {
                "exact groups"
            } else {
                "groups"
            };
            parts.push(format!("{label}: {}", a.groups.join(",")));
        }
        if let Some(shell) = &a.shell {
            parts.push(format!("login shell: {shell}"));
        }
        if let Some(comment) = &a.comment {
            parts.push(format!("comment: {comment}"));
        }
        parts.join(", ")
    }
}

/// The groups of both lists, each once, sorted.
pub fn sorted_union(first: &[String], second: &[String]) -> Vec<String> {
    let mut all: Vec<String> = first.iter().chain(second).cloned().collect();
    all.sort();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(attributes: Attributes) -> Definition {
        Definition {
            kind: Kind::User,
            name: "u".to_string(),
            attributes,
            system: false,
            skip_base_groups: false,
        }
    }

    #[test]
    fn ids_parse_back() {
        assert_eq!(Kind::parse_id("user:http"), Some((Kind::User, "http")));
        assert_eq!(Kind::parse_id("group:a:b"), Some((Kind::Group, "a:b")));
        assert_eq!(Kind::parse_id("file:/x"), None);
        assert_eq!(Kind::parse_id("user:"), None);
    }

    #[test]
    fn stacking_merges_groups_and_reports_conflicts_in_holo3_words() {
        let mut first = user(Attributes {
            number: Some(1000),
            comment: Some("one".into()),
            groups: vec!["foo".into(), "bar".into()],
            ..Attributes::default()
        });
        let second = user(Attributes {
            number: Some(1001),
            comment: Some("two".into()),
            shell: Some("/bin/sh".into()),
            groups: vec!["foo".into(), "baz".into()],
            ..Attributes::default()
        });
        assert_eq!(
            first.stack(&second),
            ["conflicting UID for user:u (1000 vs. 1001)"]
        );
        assert_eq!(first.attributes.groups, ["bar", "baz", "foo"]);
        assert_eq!(first.attributes.comment.as_deref(), Some("two"));
        assert_eq!(first.attributes.shell.as_deref(), Some("/bin/sh"));
    }

    #[test]
    fn description_follows_holo3_order() {
        let mut definition = user(Attributes {
            number: Some(1),
            comment: Some("C".into()),
            home: Some("/h".into()),
            group: Some("g".into()),
            groups: vec!["b".into(), "a".into()],
            shell: Some("/s".into()),
        });
        definition.system = true;
        assert_eq!(
            definition.description(),
            "type: system, UID: 1, home: /h, login group: g, groups: b,a, login shell: /s, comment: C"
        );
        definition.skip_base_groups = true;
        assert!(definition.description().contains("exact groups: b,a"));
    }
}
