//! What a CCM manifest becomes: the data file's sections, the resources
//! and the parts that have no holo form, and how a YAML value becomes a
//! holo value.

use super::expr;
use super::toml_out::Value;
use holos_compose::yaml::{Kind, Node, ScalarType};

/// The resource kinds that holo has a CCM-style plugin for.
pub const KINDS: &[&str] = &["archive", "exec", "file", "package", "scaffold", "service"];

/// One `[[KIND]]` table.
pub struct Resource {
    pub kind: String,
    pub name: String,
    pub properties: Vec<(String, Value)>,
    /// The manifest line of its name.
    pub line: usize,
}

impl Resource {
    /// The entity id, `KIND:NAME`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.kind, self.name)
    }
}

/// What a manifest becomes; `problems` are `(line, what)`.
#[derive(Default)]
pub struct Import {
    pub data: Vec<(String, Value)>,
    pub hierarchy: Vec<(String, Value)>,
    pub overrides: Vec<(String, Value)>,
    pub resources: Vec<Resource>,
    pub problems: Vec<(usize, String)>,
    /// Parts left out that change no resource, such as `pre_message`.
    pub notes: Vec<(usize, String)>,
}

impl Import {
    pub(super) fn problem(&mut self, node: &Node, what: impl Into<String>) {
        self.problems.push((node.pos.line, what.into()));
    }

    /// A YAML value as a holo value, its strings translated.
    pub fn value(&mut self, node: &Node) -> Option<Value> {
        match &node.kind {
            Kind::Null => {
                self.problem(
                    node,
                    "an empty value has no TOML form; give it a value or remove the key",
                );
                None
            }
            Kind::Scalar { text, .. } => match node.scalar_type() {
                ScalarType::Bool(flag) => Some(Value::Bool(flag)),
                ScalarType::Int(number) => Some(Value::Int(number)),
                ScalarType::Float(number) => Some(Value::Float(number)),
                ScalarType::Null | ScalarType::Str => match expr::translate_string(text) {
                    Ok(text) => Some(Value::Str(text)),
                    Err(why) => {
                        self.problem(node, why);
                        None
                    }
                },
            },
            Kind::Seq(items) => {
                let items: Vec<Option<Value>> = items.iter().map(|item| self.value(item)).collect();
                items
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(Value::List)
            }
            Kind::Map(entries) => self.table(entries).map(Value::Table),
        }
    }

    pub(super) fn table(&mut self, entries: &[(Node, Node)]) -> Option<Vec<(String, Value)>> {
        let mut table = Vec::new();
        let mut complete = true;
        for (key, value) in entries {
            let Some(name) = self.key(key) else {
                complete = false;
                continue;
            };
            match self.value(value) {
                Some(value) => table.push((name, value)),
                None => complete = false,
            }
        }
        complete.then_some(table)
    }

    pub(super) fn key(&mut self, key: &Node) -> Option<String> {
        match &key.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => {
                self.problem(key, "a key must be a string; quote it");
                None
            }
        }
    }
}
