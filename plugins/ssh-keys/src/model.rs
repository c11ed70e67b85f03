//! Key lines as sshd(8) reads them (`[OPTIONS] TYPE BASE64 [COMMENT]`), key
//! files, and the entity id `ssh-keyset:USER/NAME`.

use serde::{Deserialize, Serialize};

/// The prefix of every entity id of this plugin.
pub const ENTITY_PREFIX: &str = "ssh-keyset:";

/// The comment that tags a key provisioned for `entity`.
pub fn tag(entity: &str) -> String {
    format!("holo={entity}")
}

/// The entity id of key file `NAME.pub` of `user`.
pub fn entity_id(user: &str, name: &str) -> String {
    format!("{ENTITY_PREFIX}{user}/{name}")
}

/// `(user, name)` of an entity id, `None` when it is not one of ours.
pub fn split_entity_id(id: &str) -> Option<(&str, &str)> {
    let rest = id.strip_prefix(ENTITY_PREFIX)?;
    let (user, name) = rest.split_once('/')?;
    (!user.is_empty() && !name.is_empty() && !name.contains('/')).then_some((user, name))
}

/// What makes two key lines the same key: options, type and key data (the
/// comment is not part of it, since provisioning replaces it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyIdentity {
    pub options: String,
    pub key_type: String,
    pub data: String,
}

/// One key line, split into its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLine {
    pub identity: KeyIdentity,
    /// Everything after the key data, trimmed; empty when there is none.
    pub comment: String,
}

impl KeyLine {
    /// Parses a line; `None` for blank lines, `#` comments and anything that
    /// is not a key line.
    pub fn parse(line: &str) -> Option<KeyLine> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let (first, rest) = split_field(line);
        let (options, rest) = if is_key_type(first) {
            ("", line)
        } else {
            (first, rest)
        };
        let (key_type, rest) = split_field(rest);
        let (data, comment) = split_field(rest);
        if !is_key_type(key_type) || data.is_empty() {
            return None;
        }
        Some(KeyLine {
            identity: KeyIdentity {
                options: options.to_string(),
                key_type: key_type.to_string(),
                data: data.to_string(),
            },
            comment: comment.trim().to_string(),
        })
    }

    /// The line with `comment` in place of its own.
    pub fn with_comment(&self, comment: &str) -> String {
        let KeyIdentity {
            options,
            key_type,
            data,
        } = &self.identity;
        let mut line = String::new();
        if !options.is_empty() {
            line.push_str(options);
            line.push(' ');
        }
        line.push_str(&format!("{key_type} {data}"));
        if !comment.is_empty() {
            line.push(' ');
            line.push_str(comment);
        }
        line
    }
}

/// Whether `word` names an SSH public key type (certificates included).
pub fn is_key_type(word: &str) -> bool {
    let word = word.strip_suffix("-cert-v01@openssh.com").unwrap_or(word);
    matches!(
        word,
        "ssh-rsa"
            | "ssh-dss"
            | "ssh-ed25519"
            | "ssh-ed448"
            | "sk-ssh-ed25519@openssh.com"
            | "sk-ecdsa-sha2-nistp256@openssh.com"
    ) || word.starts_with("ecdsa-sha2-")
        || word.starts_with("ssh-rsa-")
}

/// The first whitespace-separated field (double quotes keep spaces in
/// options) and the rest, with leading whitespace removed.
fn split_field(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    let mut quoted = false;
    let mut escaped = false;
    for (at, ch) in text.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return (&text[..at], text[at..].trim_start()),
            _ => {}
        }
    }
    (text, "")
}

/// One key of a key file: its line as written there and its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceKey {
    pub line: String,
    /// Its line number in the key file, for messages.
    pub line_number: usize,
    pub key: KeyLine,
}

/// What scan hands to apply for a key file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySet {
    pub user: String,
    pub name: String,
    pub keys: Vec<SourceKey>,
}

/// The keys of a key file, and `(line number, what is wrong)` for each
/// line that is not a key.
pub fn parse_key_file(text: &str) -> (Vec<SourceKey>, Vec<(usize, String)>) {
    let mut keys: Vec<SourceKey> = Vec::new();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match KeyLine::parse(trimmed) {
            Some(key) if keys.iter().any(|k| k.key.identity == key.identity) => {}
            Some(key) => keys.push(SourceKey {
                line: trimmed.to_string(),
                line_number: index + 1,
                key,
            }),
            None => errors.push((
                index + 1,
                "not an SSH public key (expected [OPTIONS] TYPE BASE64 [COMMENT], as in sshd(8)'s AUTHORIZED_KEYS FILE FORMAT)".to_string(),
            )),
        }
    }
    (keys, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_key_line_has_type_data_and_comment() {
        let key = KeyLine::parse("ssh-ed25519 AAAA user@host x").unwrap();
        assert_eq!(key.identity.options, "");
        assert_eq!(key.identity.key_type, "ssh-ed25519");
        assert_eq!(key.identity.data, "AAAA");
        assert_eq!(key.comment, "user@host x");
    }

    #[test]
    fn options_with_quoted_spaces_come_first() {
        let key = KeyLine::parse(r#"command="echo a b",no-pty ssh-rsa AAAA c"#).unwrap();
        assert_eq!(key.identity.options, r#"command="echo a b",no-pty"#);
        assert_eq!(
            key.with_comment("holo=x"),
            r#"command="echo a b",no-pty ssh-rsa AAAA holo=x"#
        );
    }

    #[test]
    fn comments_blank_lines_and_garbage_are_not_keys() {
        assert_eq!(KeyLine::parse("# ssh-rsa AAAA"), None);
        assert_eq!(KeyLine::parse("   "), None);
        assert_eq!(KeyLine::parse("hello world"), None);
        assert_eq!(KeyLine::parse("ssh-rsa"), None);
    }

    #[test]
    fn a_bad_line_of_a_key_file_is_named_with_its_number() {
        let (keys, errors) = parse_key_file("# c\nssh-rsa AAAA a\nnonsense\n");
        assert_eq!(keys.len(), 1);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, 3);
        assert!(
            errors[0].1.starts_with("not an SSH public key"),
            "{errors:?}"
        );
    }

    #[test]
    fn entity_ids_split_into_user_and_name() {
        assert_eq!(split_entity_id(&entity_id("u", "k")), Some(("u", "k")));
        assert_eq!(split_entity_id("ssh-keyset:u"), None);
        assert_eq!(split_entity_id("file:/etc/x"), None);
    }
}
