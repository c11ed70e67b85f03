//! A one-off's messages in the user's words: a message about a line of
//! the generated resource file names the flag that set it.

use super::request::FLAGS_FILE;
use crate::error::Error;
use std::path::PathBuf;

/// What the messages of one run are rewritten with.
pub(super) struct Messages {
    /// The resource directory of the run.
    pub(super) resources: PathBuf,
    /// The targets of the links and how the output names them.
    pub(super) shown: Vec<(String, String)>,
    /// The document the flags became, whose lines errors name.
    pub(super) flags_document: Option<String>,
    /// The flag that set each property, as written.
    pub(super) flags_given: Vec<(String, String)>,
}

impl Messages {
    /// Error messages name the generated file; on the command line, the
    /// flags are what the user wrote: a message about a property's line
    /// names its flag. A linked file is named as given.
    pub(super) fn rewrite(&self, err: &Error, command: &str) -> Error {
        let file = format!("{}", self.resources.join(FLAGS_FILE).display());
        // A relative path is taken next to the generated file: show it as given.
        let directory = format!("{}/", self.resources.display());
        let mut text = String::new();
        for line in err.message().lines() {
            text.push_str(&self.rewrite_line(line, command, &file, &directory));
            text.push('\n');
        }
        Error::new(text.trim_end().to_string())
    }

    /// One line of [`Messages::rewrite`].
    fn rewrite_line(&self, line: &str, command: &str, file: &str, directory: &str) -> String {
        let placed = line.strip_prefix(file).and_then(|rest| {
            let rest = rest.strip_prefix(':')?;
            let digits = rest.find(|c: char| !c.is_ascii_digit())?;
            let number: usize = rest[..digits].parse().ok()?;
            Some((number, rest[digits..].strip_prefix(": ")?))
        });
        let property = placed.and_then(|(number, _)| {
            property_on_line(self.flags_document.as_deref()?, number)
                .filter(|property| property != "name")
        });
        let (prefix, rest) = match (placed, &property) {
            (Some((_, rest)), Some(property)) => {
                let flag = self
                    .flags_given
                    .iter()
                    .find(|(name, _)| name == property)
                    .map_or_else(
                        || format!("--{}", property.replace('_', "-")),
                        |(_, flag)| flag.clone(),
                    );
                // The table's words for a resource file become the flag's.
                let rest = match rest.strip_prefix("[[") {
                    Some(after) => after.split_once("]] ").map_or(rest, |(_, rest)| rest),
                    None => rest,
                };
                let rest = rest
                    .strip_prefix(&format!("property `{property}`: "))
                    .unwrap_or(rest);
                let rest = rest.replace("fix the property's value", "fix the flag's value");
                (format!("{command}: {flag}: "), rest)
            }
            (Some((_, rest)), None) => match self.flag_of_table_message(rest) {
                Some((flag, message)) => (format!("{command}: {flag}: "), message),
                None => (format!("{command}: "), rest.to_string()),
            },
            (None, _) => (String::new(), line.to_string()),
        };
        let mut rest = rest;
        for (target, shown) in &self.shown {
            rest = rest.replace(target, shown);
        }
        let rest = rest
            .replace(&format!("{file}:1"), command)
            .replace(file, command);
        if let Some(rest) = beside_file_hint(&rest) {
            return prefix + &rest;
        }
        let hint = relative_hint(&rest, directory);
        prefix + &rest.replace(directory, "") + &hint
    }

    /// A plugin's message about the whole table that starts with one of
    /// the flags' properties (`exec "x": timeout "soon" is not a
    /// duration`): the flag as typed, and the message without the entity.
    fn flag_of_table_message(&self, rest: &str) -> Option<(String, String)> {
        let (_, message) = rest.split_once("\": ")?;
        let word = message
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()?;
        let (_, flag) = self
            .flags_given
            .iter()
            .find(|(property, _)| property == word)?;
        Some((flag.clone(), message.to_string()))
    }
}

/// For a message naming a relative path, which was taken next to the
/// generated resource file (one the user never wrote): what to give.
fn relative_hint(message: &str, directory: &str) -> String {
    let Some(at) = message.find(directory) else {
        return String::new();
    };
    let path: String = message[at + directory.len()..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | ')' | ';' | ','))
        .collect();
    format!("; {}", relative_path_hint(&path))
}

/// A message that asks for a path "beside this file", meaning the
/// generated resource file: its clause about the quoted path becomes
/// [`relative_path_hint`].
fn beside_file_hint(message: &str) -> Option<String> {
    let at = message.find("beside this file")?;
    let clause = message[..at].rfind(": ")?;
    let head = &message[..clause];
    let path = head.split('"').nth(1)?;
    Some(format!("{head}: {}", relative_path_hint(path)))
}

/// What a one-off says about relative `path`.
fn relative_path_hint(path: &str) -> String {
    format!(
        "{path} is relative: a one-off does not take it from the current directory; give an absolute path (as $PWD/{path})"
    )
}

/// The property that line `number` (from 1) of the flags' document sets,
/// as `toml::to_string` writes it: `key = value` (a multi-line string
/// included), or a table value's `[KIND.key]` or `[[KIND.key]]` and the
/// lines below it; `None` for the `[[KIND]]` line.
fn property_on_line(document: &str, number: usize) -> Option<String> {
    let mut current: Option<String> = None;
    let mut in_table = false;
    let mut open_string: Option<&str> = None;
    for line in document.lines().take(number) {
        if let Some(quotes) = open_string {
            if line.matches(quotes).count() % 2 == 1 {
                open_string = None;
            }
            continue;
        }
        let trimmed = line.trim();
        if let Some(header) = trimmed.strip_prefix('[') {
            let header = header.trim_start_matches('[').trim_end_matches(']');
            current = header.split_once('.').map(|(_, key)| {
                key.split('.')
                    .next()
                    .unwrap_or(key)
                    .trim_matches('"')
                    .to_string()
            });
            in_table = current.is_some();
            continue;
        }
        if !in_table {
            current = trimmed
                .split_once('=')
                .map(|(key, _)| key.trim().trim_matches('"').to_string());
        }
        open_string = ["\"\"\"", "'''"]
            .into_iter()
            .find(|quotes| line.matches(quotes).count() % 2 == 1);
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oneoff::flags::Flags;
    use crate::oneoff::probe::property_types;
    use crate::oneoff::request::{EnsureRequest, ResourceEntry};
    use crate::oneoff::test_demo::Demo;

    fn document(request: &EnsureRequest) -> &str {
        match request.resources.as_slice() {
            [ResourceEntry::File { content, .. }] => content,
            other => panic!("one file, not {other:?}"),
        }
    }

    #[test]
    fn lines_of_the_flags_document_name_their_property() {
        let flags = Flags::for_tests("demo", property_types::<Demo>());
        let args: Vec<String> = [
            "x",
            "--mode",
            "a\nb\n[c]\n",
            "--data",
            "{ port = 80, inner = { deep = 1 } }",
            "--timeout",
            "5",
        ]
        .iter()
        .map(|arg| arg.to_string())
        .collect();
        let request = flags.parse("holo-demo ensure", &args).expect("parses");
        let text = document(&request);
        let property_of = |needle: &str| {
            let number = text
                .lines()
                .position(|line| line.contains(needle))
                .unwrap_or_else(|| panic!("{needle:?} in {text}"));
            property_on_line(text, number + 1)
        };
        assert_eq!(property_of("[[demo]]"), None, "{text}");
        assert_eq!(property_of("name ="), Some("name".to_string()), "{text}");
        assert_eq!(
            property_of("timeout"),
            Some("timeout".to_string()),
            "{text}"
        );
        assert_eq!(property_of("port"), Some("data".to_string()), "{text}");
        assert_eq!(property_of("deep"), Some("data".to_string()), "{text}");
        assert_eq!(property_of("[c]"), Some("mode".to_string()), "{text}");
    }
}
