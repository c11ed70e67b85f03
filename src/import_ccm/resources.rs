//! `ccm.resources`: blocks of one type, each a list of `NAME: {properties}`
//! and `defaults`, as holo tables in manifest order, each requiring the one
//! before it.

use super::expr;
use super::model::{Import, KINDS, Resource};
use super::toml_out::Value;
use holos_compose::yaml::Node;

/// Reads the resource blocks and chains them.
pub fn read(import: &mut Import, node: &Node) {
    let Some(blocks) = node.as_seq() else {
        import.problems.push((
            node.pos.line,
            "resources must be a list of `- TYPE: [...]` blocks".into(),
        ));
        return;
    };
    for block in blocks {
        match block.as_map() {
            Some([(kind, entries)]) => read_block(import, kind, entries),
            _ => import.problems.push((
                block.pos.line,
                "a resource block has one type, as in `- file: [...]`".into(),
            )),
        }
    }
    chain(&mut import.resources);
}

fn read_block(import: &mut Import, kind: &Node, entries: &Node) {
    let kind_name = kind.as_str().unwrap_or_default().to_string();
    if !KINDS.contains(&kind_name.as_str()) {
        import.problems.push((
            kind.pos.line,
            format!(
                "resource type {kind_name} has no holo plugin; holo has {}",
                KINDS.join(", ")
            ),
        ));
        return;
    }
    let mut defaults: Vec<(String, Value)> = Vec::new();
    for (name, properties) in named_entries(import, &kind_name, entries) {
        let Some(converted) = properties_of(import, &kind_name, properties) else {
            continue;
        };
        if name.as_str() == Some("defaults") {
            defaults = converted;
            continue;
        }
        let Some(Value::Str(id_name)) = import.value(name) else {
            continue;
        };
        let mut merged = defaults.clone();
        for (key, value) in converted {
            merged.retain(|(known, _)| *known != key);
            merged.push((key, value));
        }
        let mut properties = vec![("name".to_string(), Value::Str(id_name.clone()))];
        properties.extend(merged);
        let id = format!("{kind_name}:{id_name}");
        if let Some(first) = import.resources.iter().find(|known| known.id() == id) {
            let what = format!(
                "a second {id} (the first is on line {}); holo's entity ids are unique, so merge them or rename one",
                first.line
            );
            import.problems.push((name.pos.line, what));
            continue;
        }
        import.resources.push(Resource {
            kind: kind_name.clone(),
            name: id_name,
            properties,
            line: name.pos.line,
        });
    }
}

/// The `NAME: {properties}` pairs of a block: a list of one-key mappings,
/// or one mapping of them.
fn named_entries<'n>(
    import: &mut Import,
    kind: &str,
    entries: &'n Node,
) -> Vec<(&'n Node, &'n Node)> {
    if let Some(map) = entries.as_map() {
        return map
            .iter()
            .map(|(name, properties)| (name, properties))
            .collect();
    }
    let Some(items) = entries.as_seq() else {
        import.problems.push((
            entries.pos.line,
            format!("{kind} must be a list of `- NAME: {{...}}`"),
        ));
        return Vec::new();
    };
    let mut named = Vec::new();
    for entry in items {
        match entry.as_map() {
            Some([(name, properties)]) => named.push((name, properties)),
            _ => import.problems.push((
                entry.pos.line,
                "a resource is one `NAME: {properties}` mapping".into(),
            )),
        }
    }
    named
}

/// A resource's properties in holo's names; `None` when one has no form.
fn properties_of(import: &mut Import, kind: &str, node: &Node) -> Option<Vec<(String, Value)>> {
    if node.is_null() {
        return Some(Vec::new());
    }
    let Some(entries) = node.as_map() else {
        import.problems.push((
            node.pos.line,
            "resource properties must be a mapping".into(),
        ));
        return None;
    };
    let mut properties = Vec::new();
    let mut complete = true;
    for (key, value) in entries {
        let name = key.as_str().unwrap_or_default();
        let converted = match name {
            "control" => control(import, value),
            // CCM's exec guard command; holo's `unless` is the condition.
            "unless" if kind == "exec" => import
                .value(value)
                .map(|value| vec![("unless_command".to_string(), value)]),
            "require" | "subscribe" => {
                references(import, value).map(|list| vec![(name.to_string(), list)])
            }
            "health_checks" => {
                health_checks(import, value).map(|list| vec![(name.to_string(), list)])
            }
            "register_when_stable" => {
                import.problems.push((key.pos.line, "register_when_stable publishes to Choria's registration stream, which holo has not".into()));
                None
            }
            _ => import
                .value(value)
                .map(|value| vec![(name.to_string(), value)]),
        };
        match converted {
            Some(converted) => properties.extend(converted),
            None => complete = false,
        }
    }
    complete.then_some(properties)
}

/// `control: {if, unless}` as holo's `if` and `unless`.
fn control(import: &mut Import, node: &Node) -> Option<Vec<(String, Value)>> {
    let mut conditions = Vec::new();
    let Some(entries) = node.as_map() else {
        let what = "control must be a mapping with if and unless expressions";
        import.problems.push((node.pos.line, what.to_string()));
        return None;
    };
    for (key, value) in entries {
        let name = key.as_str().unwrap_or_default();
        let text = value.as_str().unwrap_or_default();
        if !matches!(name, "if" | "unless") {
            import.problems.push((
                key.pos.line,
                format!("unknown control key {name}; use if or unless"),
            ));
            return None;
        }
        match expr::translate_expr(text) {
            Ok(expression) => conditions.push((name.to_string(), Value::Str(expression))),
            Err(why) => {
                import.problems.push((value.pos.line, why));
                return None;
            }
        }
    }
    Some(conditions)
}

/// `type#name` references as holo's `type:name`.
fn references(import: &mut Import, node: &Node) -> Option<Value> {
    let items = match import.value(node)? {
        Value::List(items) => items,
        single => vec![single],
    };
    let mut ids = Vec::new();
    for item in items {
        match item {
            Value::Str(text) if text.contains('#') => {
                ids.push(Value::Str(text.replacen('#', ":", 1)))
            }
            _ => {
                import.problems.push((
                    node.pos.line,
                    "a reference is `type#name`, as in package#httpd".into(),
                ));
                return None;
            }
        }
    }
    Some(Value::List(ids))
}

/// Nagios health checks as they are; Goss rules have no holo form.
fn health_checks(import: &mut Import, node: &Node) -> Option<Value> {
    let checks = match import.value(node)? {
        Value::List(items) => items,
        single => vec![single],
    };
    let mut kept = Vec::new();
    for check in checks {
        let Value::Table(mut entries) = check else {
            import.problems.push((
                node.pos.line,
                "a health check is a mapping with command".into(),
            ));
            return None;
        };
        if entries.iter().any(|(key, _)| key == "goss_rules") {
            import.problems.push((
                node.pos.line,
                "goss_rules health checks need Goss; write a Nagios-style command check instead"
                    .into(),
            ));
            return None;
        }
        entries.retain(|(key, value)| !(key == "format" && *value == Value::Str("nagios".into())));
        if let Some((_, Value::Str(command))) = entries.iter_mut().find(|(key, _)| key == "command")
        {
            *command = command.trim().to_string();
        }
        kept.push(Value::Table(entries));
    }
    Some(Value::List(kept))
}

/// Each resource requires the one before it, so holo applies them in
/// manifest order.
fn chain(resources: &mut [Resource]) {
    for index in 1..resources.len() {
        let before = format!(
            "{}:{}",
            resources[index - 1].kind,
            resources[index - 1].name
        );
        let properties = &mut resources[index].properties;
        match properties.iter_mut().find(|(key, _)| key == "require") {
            Some((_, Value::List(ids))) => {
                if !ids.contains(&Value::Str(before.clone())) {
                    ids.push(Value::Str(before));
                }
            }
            _ => properties.push(("require".to_string(), Value::List(vec![Value::Str(before)]))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::manifest;
    use super::*;
    use std::path::Path;

    fn import(yaml: &str) -> Import {
        let root = holos_compose::yaml::parse_str(yaml, Path::new("m.yaml")).unwrap();
        manifest::read(&root)
    }

    fn property<'r>(resource: &'r Resource, key: &str) -> Option<&'r Value> {
        resource
            .properties
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    }

    #[test]
    fn defaults_merge_and_each_resource_requires_the_one_before() {
        let converted = import(
            "ccm:\n  resources:\n    - file:\n        - defaults:\n            owner: app\n            mode: \"0644\"\n        - /a:\n            mode: \"0600\"\n    - exec:\n        - run:\n            unless: test -e /a\n            require: [file#/a]\n            control:\n              if: lookup('data.on') == 'yes'\n",
        );
        assert!(converted.problems.is_empty(), "{:?}", converted.problems);
        let [file, exec] = converted.resources.as_slice() else {
            panic!("two resources");
        };
        assert_eq!(property(file, "owner"), Some(&Value::Str("app".into())));
        assert_eq!(property(file, "mode"), Some(&Value::Str("0600".into())));
        assert_eq!(
            property(exec, "require"),
            Some(&Value::List(vec![Value::Str("file:/a".into())]))
        );
        assert_eq!(
            property(exec, "unless_command"),
            Some(&Value::Str("test -e /a".into()))
        );
        assert_eq!(
            property(exec, "if"),
            Some(&Value::Str("lookup('data.on') == 'yes'".into()))
        );
    }

    #[test]
    fn what_holo_cannot_express_is_listed_by_line() {
        let converted = import(
            "ccm:\n  resources:\n    - exec:\n        - a: {}\n        - a: {}\n    - apply:\n        - child.yaml: {}\n    - file:\n        - /x:\n            content: \"${ kvGet('x') }\"\n            register_when_stable: []\n",
        );
        let lines: Vec<usize> = converted.problems.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [5, 6, 10, 11], "{:?}", converted.problems);
    }
}
