//! The entities of a run, which the driver passes to every plugin's diff
//! and apply after the scan: the file named by [`VARIABLE`], one entity a
//! line, `ID` and where it was declared, separated by a tab, with `\`, tab
//! and newline escaped. A plugin that removes what it did not write (such
//! as holo-scaffold's `purge`) checks it so that it never removes what
//! another entity of the run manages.

/// The environment variable that names the file.
pub const VARIABLE: &str = "HOLO_RUN_ENTITIES";

/// One entity of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEntity {
    pub id: String,
    /// Where it was declared, as the scan report said (`found in`, else
    /// its sources), for messages.
    pub declared_at: String,
}

impl RunEntity {
    /// The path an entity id such as `file:/etc/app/b.conf` names: the
    /// part after the kind, when it is an absolute path.
    pub fn path(&self) -> Option<&str> {
        let (_, rest) = self.id.split_once(':')?;
        rest.starts_with('/').then_some(rest)
    }
}

fn escape_into(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest
        .bytes()
        .position(|byte| matches!(byte, b'\\' | b'\t' | b'\n'))
    {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'\\' => "\\\\",
            b'\t' => "\\t",
            _ => "\\n",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// The file's text for `entities`, given as id and where it was declared.
pub fn encode<'a>(entities: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut text = String::new();
    for (id, declared_at) in entities {
        escape_into(&mut text, id);
        text.push('\t');
        escape_into(&mut text, declared_at);
        text.push('\n');
    }
    text
}

/// The entities in the file's `text`; a line without a tab is an entity
/// declared nowhere in particular.
pub fn decode(text: &str) -> Vec<RunEntity> {
    text.lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (id, declared_at) = line.split_once('\t').unwrap_or((line, ""));
            RunEntity {
                id: unescape(id),
                declared_at: unescape(declared_at),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_round_trip_with_tabs_and_newlines() {
        let entities = vec![
            RunEntity {
                id: "file:/etc/app/b.conf".into(),
                declared_at: "/usr/share/holo/file/b.toml:1".into(),
            },
            RunEntity {
                id: "odd:a\tb\\c\nd".into(),
                declared_at: String::new(),
            },
        ];
        let pairs = entities
            .iter()
            .map(|entity| (entity.id.as_str(), entity.declared_at.as_str()));
        assert_eq!(decode(&encode(pairs)), entities);
    }

    #[test]
    fn an_id_names_a_path_only_when_it_is_absolute() {
        let named = |id: &str| {
            RunEntity {
                id: id.into(),
                declared_at: String::new(),
            }
            .path()
            .map(str::to_string)
        };
        assert_eq!(named("file:/etc/a"), Some("/etc/a".into()));
        assert_eq!(named("scaffold:/srv/app"), Some("/srv/app".into()));
        assert_eq!(named("package:nginx"), None);
        assert_eq!(named("vm:web/db"), None);
    }
}
