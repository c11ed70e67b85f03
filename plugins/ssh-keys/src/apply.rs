//! The decision table over the lines of `authorized_keys` when an entity
//! is provisioned or scrubbed. Only lines tagged `holo=ENTITY` belong to the
//! entity; every other line (comments, the user's own keys, other entities'
//! keys, even an untagged copy of a provisioned key) is left as it is.

use crate::model::{KeyIdentity, KeyLine, SourceKey, tag};

/// What becomes of one existing line of `authorized_keys`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineDecision {
    Keep,
    Drop,
}

/// A line's fields when it is a key tagged for `entity`.
fn tagged_for(line: &str, entity: &str) -> Option<KeyLine> {
    KeyLine::parse(line).filter(|key| key.comment == tag(entity))
}

/// One row per kind of existing line.
pub fn decide_line(line: &str, entity: &str, wanted: &[KeyIdentity]) -> LineDecision {
    match tagged_for(line, entity) {
        // Not a key, or not one of this entity's: never touched.
        None => LineDecision::Keep,
        // This entity's key that the key file still has.
        Some(key) if wanted.contains(&key.identity) => LineDecision::Keep,
        // This entity's key that the key file no longer has.
        Some(_) => LineDecision::Drop,
    }
}

/// The lines of `authorized_keys` once `entity` is provisioned with `keys`:
/// its keys that left the key file are removed, the missing ones appended
/// (in the key file's order) with the comment `holo=ENTITY`.
pub fn provision(lines: &[String], entity: &str, keys: &[SourceKey]) -> Vec<String> {
    let wanted: Vec<KeyIdentity> = keys.iter().map(|k| k.key.identity.clone()).collect();
    let mut result: Vec<String> = lines
        .iter()
        .filter(|line| decide_line(line, entity, &wanted) == LineDecision::Keep)
        .cloned()
        .collect();
    let present: Vec<KeyIdentity> = result
        .iter()
        .filter_map(|line| tagged_for(line, entity))
        .map(|key| key.identity)
        .collect();
    for key in keys {
        if !present.contains(&key.key.identity) {
            result.push(key.key.with_comment(&tag(entity)));
        }
    }
    result
}

/// The lines once `entity` is scrubbed: every key tagged for it is gone.
pub fn scrub(lines: &[String], entity: &str) -> Vec<String> {
    provision(lines, entity, &[])
}

/// The entity as `authorized_keys` has it, for `holo diff`: its tagged
/// keys in file order, each written as the key file writes it when the key
/// file has it (so that an entity in place diffs empty against its key file).
pub fn current_image(lines: &[String], entity: &str, keys: &[SourceKey]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|line| {
            let key = tagged_for(line, entity)?;
            let source = keys.iter().find(|k| k.key.identity == key.identity);
            Some(source.map_or_else(|| line.clone(), |k| k.line.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: &str = "ssh-keyset:u/k";

    fn key(data: &str, comment: &str) -> String {
        format!("ssh-ed25519 {data} {comment}")
    }

    fn source(data: &str) -> SourceKey {
        let line = key(data, "me@host");
        SourceKey {
            key: KeyLine::parse(&line).unwrap(),
            line,
            line_number: 1,
        }
    }

    fn identity(data: &str) -> KeyIdentity {
        source(data).key.identity
    }

    fn lines(items: &[String]) -> Vec<String> {
        items.to_vec()
    }

    #[test]
    fn a_comment_line_is_kept() {
        assert_eq!(decide_line("# mine", E, &[]), LineDecision::Keep);
    }

    #[test]
    fn a_key_of_the_user_is_kept() {
        assert_eq!(
            decide_line(&key("A", "me@host"), E, &[]),
            LineDecision::Keep
        );
    }

    #[test]
    fn a_key_of_another_entity_is_kept() {
        let line = key("A", "holo=ssh-keyset:u/other");
        assert_eq!(decide_line(&line, E, &[]), LineDecision::Keep);
    }

    #[test]
    fn a_tagged_key_the_key_file_still_has_is_kept() {
        let line = key("A", &tag(E));
        assert_eq!(decide_line(&line, E, &[identity("A")]), LineDecision::Keep);
    }

    #[test]
    fn a_tagged_key_the_key_file_no_longer_has_is_dropped() {
        let line = key("A", &tag(E));
        assert_eq!(decide_line(&line, E, &[identity("B")]), LineDecision::Drop);
    }

    #[test]
    fn missing_keys_are_appended_tagged_even_beside_an_untagged_copy() {
        let before = lines(&["# c".into(), key("A", "me@host")]);
        let after = provision(&before, E, &[source("A"), source("B")]);
        assert_eq!(
            after,
            [
                "# c".to_string(),
                key("A", "me@host"),
                key("A", &tag(E)),
                key("B", &tag(E))
            ]
        );
    }

    #[test]
    fn an_entity_in_place_gives_the_same_lines() {
        let before = lines(&[key("A", &tag(E)), key("X", "me")]);
        assert_eq!(provision(&before, E, &[source("A")]), before);
    }

    #[test]
    fn scrubbing_removes_only_the_entitys_keys() {
        let other = key("B", "holo=ssh-keyset:u/other");
        let before = lines(&[key("A", &tag(E)), other.clone()]);
        assert_eq!(scrub(&before, E), [other]);
    }

    #[test]
    fn the_current_image_shows_kept_keys_as_the_key_file_writes_them() {
        let stale = key("B", &tag(E));
        let before = lines(&[key("A", &tag(E)), key("X", "me"), stale.clone()]);
        assert_eq!(
            current_image(&before, E, &[source("A")]),
            [key("A", "me@host"), stale]
        );
    }
}
