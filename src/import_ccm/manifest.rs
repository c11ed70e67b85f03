//! A CCM manifest read into what holo writes: the data file's sections and
//! the resources in manifest order, with every part that has no holo form
//! listed by its line.

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
    fn problem(&mut self, node: &Node, what: impl Into<String>) {
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

    fn table(&mut self, entries: &[(Node, Node)]) -> Option<Vec<(String, Value)>> {
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

    fn key(&mut self, key: &Node) -> Option<String> {
        match &key.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => {
                self.problem(key, "a key must be a string; quote it");
                None
            }
        }
    }
}

/// Reads the manifest's top level.
pub fn read(root: &Node) -> Import {
    let mut import = Import::default();
    let Some(entries) = root.as_map() else {
        import.problem(
            root,
            "a manifest is a mapping with data, hierarchy, overrides and ccm",
        );
        return import;
    };
    for (key, value) in entries {
        match key.as_str().unwrap_or_default() {
            "data" => import.data = section(&mut import, value),
            "overrides" => import.overrides = section(&mut import, value),
            "hierarchy" => import.hierarchy = hierarchy(&mut import, value),
            "ccm" => ccm(&mut import, value),
            other => import.problem(key, format!("unknown top-level section {other}; a manifest has data, hierarchy, overrides and ccm")),
        }
    }
    import
}

fn section(import: &mut Import, node: &Node) -> Vec<(String, Value)> {
    match import.value(node) {
        Some(Value::Table(entries)) => entries,
        Some(_) => {
            import.problem(node, "this section must be a mapping");
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// `hierarchy`: `order` as it is, and CCM's `deep` merge, which
/// concatenates lists, as holo's `deep_concat`.
fn hierarchy(import: &mut Import, node: &Node) -> Vec<(String, Value)> {
    let mut entries = section(import, node);
    for (name, value) in &mut entries {
        if name == "merge" {
            match value {
                Value::Str(merge) if merge == "deep" => *merge = "deep_concat".to_string(),
                Value::Str(merge) if merge == "first" => {}
                _ => import.problem(node, "hierarchy merge must be first or deep"),
            }
        }
    }
    entries
}

/// `ccm`: the resources, and what else it holds.
fn ccm(import: &mut Import, node: &Node) {
    let Some(entries) = node.as_map() else {
        import.problem(node, "ccm must be a mapping with resources");
        return;
    };
    for (key, value) in entries {
        let line = key.pos.line;
        match key.as_str().unwrap_or_default() {
            "resources" => super::resources::read(import, value),
            "pre_message" | "post_message" => import
                .notes
                .push((line, format!("{} is not printed by holo apply; left out", key.as_str().unwrap_or_default()))),
            "fail_on_error" => import.notes.push((
                line,
                "fail_on_error: every imported resource requires the one before it, so a failure skips the rest either way".to_string(),
            )),
            "resources_jet_file" => import.problem(
                key,
                "resources_jet_file generates resources from a Jet template at apply time; holo resources are static files, so write them out (a holo generator could)",
            ),
            other => import.problem(
                key,
                format!(
                    "unknown ccm key {other}; ccm has resources, fail_on_error, pre_message, post_message and resources_jet_file"
                ),
            ),
        }
    }
}
