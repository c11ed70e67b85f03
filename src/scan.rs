//! The scan report: `ENTITY:` starts an entity; `SOURCE:`, `ACTION:` and
//! `key: value` lines belong to it; `REQUIRES:`/`SUBSCRIBES:` are the order
//! extension's lines.

/// An entity as a plugin reported it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entity {
    /// Index of the plugin in holorc order.
    pub plugin: usize,
    pub id: String,
    /// Borrowed for the default verb, which most entities have.
    pub action_verb: std::borrow::Cow<'static, str>,
    pub action_reason: String,
    pub sources: Vec<String>,
    pub info: Info,
    pub requires: Vec<String>,
    pub subscribes: Vec<String>,
    /// 1-based line of the `ENTITY:` line, for messages.
    pub line: usize,
}

pub const DEFAULT_VERB: &str = "Working on";

/// An entity's `key: value` info lines in report order, held in one string
/// (`key`, newline, `value`, newline, ...) rather than two strings a line:
/// a large report has tens of thousands of them. Neither part is empty nor
/// holds a newline, since each comes from one line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Info {
    text: String,
}

impl Info {
    pub fn push(&mut self, key: &str, value: &str) {
        if self.text.is_empty() {
            // Room for a few lines at once rather than growing line by line.
            self.text.reserve(4 * (key.len() + value.len() + 2));
        }
        self.text.push_str(key);
        self.text.push('\n');
        self.text.push_str(value);
        self.text.push('\n');
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut parts = self.text.split_terminator('\n');
        std::iter::from_fn(move || Some((parts.next()?, parts.next()?)))
    }

    /// The value of the first line with `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, value)| value)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// Splits `key: value` as Holo 3's `^\s*([^:]+): (.+)\s*$` does (`\s`
/// is ASCII white space there).
fn split_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start_matches([' ', '\t', '\x0c', '\r']);
    let colon = line.find(':')?;
    let key = &line[..colon];
    let value = line[colon + 1..].strip_prefix(' ')?;
    if key.is_empty() || value.is_empty() {
        return None;
    }
    Some((key, value))
}

/// Splits `verb (reason)` as Holo 3's `^([^()]+) \((.+)\)$` does.
pub fn split_action(value: &str) -> (String, String) {
    if let Some(open) = value.find(" (")
        && value.ends_with(')')
        && open > 0
    {
        let verb = &value[..open];
        let reason = &value[open + 2..value.len() - 1];
        if !verb.contains(['(', ')']) && !reason.is_empty() {
            return (verb.to_string(), reason.to_string());
        }
    }
    (value.to_string(), String::new())
}

/// An entity ID that looks like a filesystem path, which the interface forbids.
pub fn looks_like_path(id: &str) -> bool {
    id.starts_with('/') || id.starts_with("./") || id.starts_with("../") || id.starts_with("~/")
}

/// Parses a report. `translate` maps resource paths back to what users see.
/// Errors are the texts to print after `!! ` (all of them, as Holo 3 does).
pub fn parse_report(
    plugin_index: usize,
    plugin_id: &str,
    text: &str,
    with_order_lines: bool,
    translate: &dyn Fn(&str) -> std::borrow::Cow<'_, str>,
) -> Result<Vec<Entity>, Vec<String>> {
    let mut errors = Vec::new();
    // A report line is rarely shorter than 32 bytes, and an entity has a
    // few: sized once rather than grown (each growth copies every entity).
    // (Capped: a report near its size limit reserves no more than 64k.)
    let mut entities: Vec<Entity> = Vec::with_capacity((text.len() / 128).min(1 << 16));
    let mut current: Option<Entity> = None;
    for (index, line) in text.trim().split('\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        // Built only for an error: a report has a few lines per entity.
        let intro = || format!("error in scan report of {plugin_id}, line {}", index + 1);
        let Some((key, value)) = split_line(line) else {
            let intro = intro();
            errors.push(format!("{intro}: parse error (line was \"{line}\")"));
            continue;
        };
        if key == "ENTITY" {
            if looks_like_path(value) {
                let intro = intro();
                errors.push(format!(
                    "{intro}: entity ID \"{value}\" looks like a filesystem path; entity IDs must not (use the form TYPE:NAME)"
                ));
            }
            entities.extend(current.take());
            current = Some(Entity {
                plugin: plugin_index,
                id: value.to_string(),
                action_verb: DEFAULT_VERB.into(),
                line: index + 1,
                ..Entity::default()
            });
            continue;
        }
        let Some(entity) = current.as_mut() else {
            let intro = intro();
            errors.push(format!(
                "{intro}: expected entity ID, found attribute \"{line}\""
            ));
            continue;
        };
        match key {
            "SOURCE" => {
                if entity.sources.is_empty() {
                    entity.sources.reserve_exact(1);
                }
                entity.sources.push(translate(value).into_owned());
            }
            "ACTION" => {
                let (verb, reason) = split_action(value);
                entity.action_verb = verb.into();
                entity.action_reason = reason;
            }
            "REQUIRES" if with_order_lines => entity.requires.push(value.trim().to_string()),
            "SUBSCRIBES" if with_order_lines => entity.subscribes.push(value.trim().to_string()),
            _ => entity.info.push(key, &translate(value)),
        }
    }
    entities.extend(current);
    if errors.is_empty() {
        Ok(entities)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Entity>, Vec<String>> {
        parse_report(0, "foo", text, true, &|s| s.into())
    }

    #[test]
    fn parses_entities_with_sources_actions_and_info() {
        let text = "\nENTITY: foo:a\nSOURCE: /r/a.toml\nACTION: Scrubbing (resource was deleted)\nfound at: x\n  with spaces: y z \nENTITY: foo:b\nACTION: Executing\n";
        let entities = parse(text).unwrap();
        assert_eq!(entities.len(), 2);
        let a = &entities[0];
        assert_eq!(a.id, "foo:a");
        assert_eq!(a.sources, vec!["/r/a.toml"]);
        assert_eq!(a.action_verb, "Scrubbing");
        assert_eq!(a.action_reason, "resource was deleted");
        assert_eq!(
            a.info.iter().collect::<Vec<_>>(),
            vec![("found at", "x"), ("with spaces", "y z ")]
        );
        assert_eq!(a.info.get("with spaces"), Some("y z "));
        assert_eq!(a.info.get("missing"), None);
        assert_eq!(entities[1].action_verb, "Executing");
        assert_eq!(entities[1].action_reason, "");
    }

    #[test]
    fn default_verb_is_working_on() {
        let entities = parse("ENTITY: foo:a\n").unwrap();
        assert_eq!(entities[0].action_verb, "Working on");
    }

    #[test]
    fn order_lines_only_with_the_extension() {
        let text = "ENTITY: foo:a\nREQUIRES: foo:b\nSUBSCRIBES: foo:c\n";
        let with = parse(text).unwrap();
        assert_eq!(with[0].requires, vec!["foo:b"]);
        assert_eq!(with[0].subscribes, vec!["foo:c"]);
        assert!(with[0].info.is_empty());
        let without = parse_report(0, "foo", text, false, &|s| s.into()).unwrap();
        assert!(without[0].requires.is_empty());
        assert_eq!(without[0].info.iter().count(), 2);
    }

    #[test]
    fn errors_keep_holo3_text() {
        let errors = parse("found: x\nENTITY: foo:a\nbroken line\nkey:novalue\n").unwrap_err();
        assert_eq!(
            errors,
            vec![
                "error in scan report of foo, line 1: expected entity ID, found attribute \"found: x\"",
                "error in scan report of foo, line 3: parse error (line was \"broken line\")",
                "error in scan report of foo, line 4: parse error (line was \"key:novalue\")",
            ]
        );
    }

    #[test]
    fn path_like_entity_is_an_error() {
        let errors = parse("ENTITY: /etc/foo\n").unwrap_err();
        assert!(
            errors[0].contains("looks like a filesystem path"),
            "{errors:?}"
        );
        assert!(parse("ENTITY: file:/etc/foo\n").is_ok());
    }

    #[test]
    fn action_split() {
        assert_eq!(
            split_action("Scrubbing (x (y))"),
            ("Scrubbing".into(), "x (y)".into())
        );
        assert_eq!(split_action("a(b (c)"), ("a(b (c)".into(), String::new()));
        assert_eq!(split_action("Do it (now)"), ("Do it".into(), "now".into()));
        assert_eq!(split_action("Plain"), ("Plain".into(), String::new()));
    }
}
