//! Compose's merge rules: how a later file (or an extending service, or the
//! main file over its includes) combines with what came before.
//!
//! Mappings merge key by key; `!reset` removes an inherited value and
//! `!override` replaces it whole. Key/value lists (environment, labels, …)
//! merge as mappings; volumes, secrets and configs merge by target; commands
//! are replaced; other lists append without duplicates.

use std::collections::{HashMap, HashSet};

use crate::yaml::{Kind, MergeTag, Node};

/// How the value at a path combines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    Deep,
    KeyValues,
    Replace,
    ByTarget,
}

fn rule_for(path: &[&str]) -> Rule {
    match path {
        ["services", _, field] => match *field {
            "environment" | "labels" | "annotations" | "extra_hosts" | "sysctls" | "depends_on" => {
                Rule::KeyValues
            }
            "command" | "entrypoint" | "dns" | "dns_search" | "dns_opt" | "tmpfs" => Rule::Replace,
            "volumes" | "secrets" | "configs" => Rule::ByTarget,
            _ => Rule::Deep,
        },
        ["services", _, "healthcheck", "test"] | ["services", _, "vm", "extra_args"] => {
            Rule::Replace
        }
        ["services", _, "build", "args" | "labels"] => Rule::KeyValues,
        ["services", _, "deploy", "labels"] => Rule::KeyValues,
        _ => Rule::Deep,
    }
}

/// Merges `over` onto `base`. `path` is the key path of both.
pub fn merge(base: Node, over: Node, path: &[&str]) -> Node {
    if over.tag == Some(MergeTag::Override) {
        return normalize_tags(over);
    }
    let rule = rule_for(path);
    match rule {
        Rule::Replace => return normalize_tags(over),
        Rule::KeyValues => {
            let base = key_values_to_map(base, path);
            let over = key_values_to_map(over, path);
            return merge_maps(base, over, path);
        }
        Rule::ByTarget => {
            if let (Kind::Seq(base_items), Kind::Seq(over_items)) = (&base.kind, &over.kind) {
                let mut items = base_items.clone();
                // The first item of each target, as the linear search found it.
                let mut by_target: HashMap<String, usize> = HashMap::new();
                for (i, item) in items.iter().enumerate() {
                    if let Some(target) = volume_target(item) {
                        by_target.entry(target).or_insert(i);
                    }
                }
                for item in over_items {
                    let found =
                        volume_target(item).and_then(|target| match by_target.get(&target) {
                            Some(&i) => Some(i),
                            None => {
                                by_target.insert(target, items.len());
                                None
                            }
                        });
                    match found {
                        Some(i) => items[i] = normalize_tags(item.clone()),
                        None => items.push(normalize_tags(item.clone())),
                    }
                }
                return Node::seq(items, over.pos);
            }
        }
        Rule::Deep => {}
    }
    match (&base.kind, &over.kind) {
        (Kind::Map(_), Kind::Map(_)) => merge_maps(base, over, path),
        (Kind::Seq(base_items), Kind::Seq(over_items)) => {
            let mut items = base_items.clone();
            let mut seen: HashSet<String> = items.iter().map(|b| b.to_json().to_string()).collect();
            for item in over_items {
                let item = normalize_tags(item.clone());
                if seen.insert(item.to_json().to_string()) {
                    items.push(item);
                }
            }
            let mut merged = Node::seq(items, over.pos);
            merged.tag = None;
            merged
        }
        _ => normalize_tags(over),
    }
}

fn merge_maps(base: Node, over: Node, path: &[&str]) -> Node {
    let pos = over.pos.clone();
    let Kind::Map(entries) = base.kind else {
        return normalize_tags(over);
    };
    let Kind::Map(over_entries) = over.kind else {
        return Node::map(entries, pos);
    };
    // Slots keep the order; a reset empties its slot. The index finds a key
    // in constant time (a mapping may have hundreds of thousands of keys).
    let mut slots: Vec<Option<(Node, Node)>> = Vec::with_capacity(entries.len());
    let mut index: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        if let Some(name) = entry.0.as_str() {
            index.entry(name.to_string()).or_insert(slots.len());
        }
        slots.push(Some(entry));
    }
    for (key, value) in over_entries {
        let name = key.as_str().unwrap_or_default().to_string();
        let existing = index.get(&name).copied();
        if value.tag == Some(MergeTag::Reset) {
            if let Some(i) = existing {
                slots[i] = None;
                index.remove(&name);
            }
            continue;
        }
        match existing.and_then(|i| slots[i].as_mut()) {
            Some(slot) => {
                let mut child_path: Vec<&str> = path.to_vec();
                child_path.push(&name);
                let old = std::mem::replace(&mut slot.1, Node::new(Kind::Null, pos.clone()));
                slot.1 = merge(old, value, &child_path);
            }
            None => {
                if key.as_str().is_some() {
                    index.insert(name, slots.len());
                }
                slots.push(Some((key, normalize_tags(value))));
            }
        }
    }
    Node::map(slots.into_iter().flatten().collect(), pos)
}

/// Drops `!reset` entries and clears `!override` below a node that has no
/// inherited value to act on.
pub fn normalize_tags(mut node: Node) -> Node {
    node.tag = None;
    match node.kind {
        Kind::Map(entries) => {
            node.kind = Kind::Map(
                entries
                    .into_iter()
                    .filter(|(_, v)| v.tag != Some(MergeTag::Reset))
                    .map(|(k, v)| (k, normalize_tags(v)))
                    .collect(),
            );
        }
        Kind::Seq(items) => {
            node.kind = Kind::Seq(
                items
                    .into_iter()
                    .filter(|v| v.tag != Some(MergeTag::Reset))
                    .map(normalize_tags)
                    .collect(),
            );
        }
        _ => {}
    }
    node
}

/// Turns a `KEY=VALUE` list (or `host:ip`, or a depends_on name list) into a
/// mapping so that entries merge by key.
pub fn key_values_to_map(node: Node, path: &[&str]) -> Node {
    let Kind::Seq(items) = &node.kind else {
        return node;
    };
    let field = path.last().copied().unwrap_or_default();
    let mut entries = Vec::new();
    for item in items {
        let Some(text) = item.as_str() else {
            // Not a list of strings: leave it for the validator to report.
            return node;
        };
        let (key, value) = if field == "depends_on" {
            let condition = Node::map(
                vec![(
                    Node::string("condition", item.pos.clone()),
                    Node::string("service_started", item.pos.clone()),
                )],
                item.pos.clone(),
            );
            (text.to_string(), condition)
        } else {
            let split = if field == "extra_hosts" {
                text.find('=').or_else(|| text.find(':'))
            } else {
                text.find('=')
            };
            match split {
                Some(i) => (
                    text[..i].to_string(),
                    Node::string(&text[i + 1..], item.pos.clone()),
                ),
                None => (text.to_string(), Node::new(Kind::Null, item.pos.clone())),
            }
        };
        entries.push((Node::string(key, item.pos.clone()), value));
    }
    Node::map(entries, node.pos)
}

/// The target of a volume, secret or config entry, in short or long syntax
/// (a short secret or config names its own target).
fn volume_target(node: &Node) -> Option<String> {
    if let Some(text) = node.as_str() {
        let parts: Vec<&str> = text.split(':').collect();
        return match parts.len() {
            1 => Some(parts[0].to_string()),
            _ => Some(parts[1].to_string()),
        };
    }
    node.get("target")
        .and_then(Node::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;
    use std::path::Path;

    fn merged(base: &str, over: &str) -> serde_json::Value {
        let base = parse_str(base, Path::new("base.yaml")).unwrap();
        let over = parse_str(over, Path::new("over.yaml")).unwrap();
        normalize_tags(merge(base, over, &[])).to_json()
    }

    #[test]
    fn follows_composes_rules() {
        let got = merged(
            "services:\n  a:\n    environment: [A=1, B=1]\n    dns: [1.1.1.1]\n    secrets: [s1, {source: s2, target: t}]\n    healthcheck: {test: [CMD, a], interval: 1s}\n    expose: [\"80\"]\n",
            "services:\n  a:\n    environment: {B: \"2\", A: !reset null}\n    dns: [8.8.8.8]\n    secrets: [{source: s3, target: t}]\n    healthcheck: {test: [CMD, b]}\n    expose: [\"80\", \"81\"]\n",
        );
        let a = &got["services"]["a"];
        assert_eq!(a["environment"], serde_json::json!({"B": "2"}));
        assert_eq!(a["dns"], serde_json::json!(["8.8.8.8"]));
        assert_eq!(
            a["secrets"],
            serde_json::json!(["s1", {"source": "s3", "target": "t"}])
        );
        assert_eq!(
            a["healthcheck"],
            serde_json::json!({"test": ["CMD", "b"], "interval": "1s"})
        );
        assert_eq!(a["expose"], serde_json::json!(["80", "81"]));
    }

    #[test]
    fn override_and_reset_tags() {
        let got = merged(
            "a: {x: [1, 2], y: {k: v}, z: 1}\n",
            "a: {x: !override [3], y: !reset {}, w: !reset 5}\n",
        );
        assert_eq!(got, serde_json::json!({"a": {"x": [3], "z": 1}}));
    }
}
