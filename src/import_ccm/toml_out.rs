//! The values of an import and their TOML text, in the manifest's order.

/// A manifest value, typed as YAML 1.2's core schema types plain scalars.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Value>),
    Table(Vec<(String, Value)>),
}

/// A key, bare when TOML allows it.
pub fn key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_string() } else { string(name) }
}

/// A basic string with TOML's escapes.
pub fn string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// A value inline: strings, numbers, `[...]` and `{ ... }`.
pub fn inline(value: &Value) -> String {
    match value {
        Value::Str(text) => string(text),
        Value::Int(number) => number.to_string(),
        Value::Float(number) => toml::Value::Float(*number).to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Table(entries) if entries.is_empty() => "{}".to_string(),
        Value::Table(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(name, value)| format!("{} = {}", key(name), inline(value)))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        }
    }
}

/// `key = value` lines of a table's entries.
pub fn entries(entries: &[(String, Value)]) -> String {
    entries
        .iter()
        .map(|(name, value)| format!("{} = {}\n", key(name), inline(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_inline_in_order() {
        let table = Value::Table(vec![
            ("z".into(), Value::Int(1)),
            (
                "a b".into(),
                Value::List(vec![Value::Str("x\"y".into()), Value::Bool(true)]),
            ),
        ]);
        assert_eq!(inline(&table), "{ z = 1, \"a b\" = ['x\"y', true] }");
        assert_eq!(
            entries(&[("mode".into(), Value::Str("0644".into()))]),
            "mode = \"0644\"\n"
        );
    }
}
