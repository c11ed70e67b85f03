//! The repository: entries below `$HOLO_RESOURCE_DIR/DISAMBIGUATOR/`, the
//! targets they work on, their stacking order, and what scan hands apply.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The suffix of an entry whose target passes through it as a filter.
pub const HOLOSCRIPT_SUFFIX: &str = ".holoscript";
/// The suffix of an entry that is a unified diff applied with `patch`.
pub const PATCH_SUFFIX: &str = ".patch";

/// What a repository entry does to the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    /// A plain file or symlink: replaces the buffer.
    Plain,
    /// An executable `.holoscript`: the buffer is piped through it.
    Holoscript,
    /// A `.patch`: applied to the buffer with `patch`.
    Patch,
}

impl EntryKind {
    /// The scan report's key for an entry of this kind.
    pub fn verb(self) -> &'static str {
        match self {
            EntryKind::Plain => "apply",
            EntryKind::Holoscript => "passthru",
            EntryKind::Patch => "patch",
        }
    }

    /// The kind of an entry named `name`, and the target's name without
    /// the suffix.
    pub fn of_name(name: &str) -> (EntryKind, &str) {
        if let Some(stem) = name.strip_suffix(HOLOSCRIPT_SUFFIX) {
            (EntryKind::Holoscript, stem)
        } else if let Some(stem) = name.strip_suffix(PATCH_SUFFIX) {
            (EntryKind::Patch, stem)
        } else {
            (EntryKind::Plain, name)
        }
    }
}

/// One repository entry (a file or symlink below a disambiguator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoEntry {
    /// The first directory below the resource directory.
    pub disambiguator: String,
    /// The entry's path (below `$HOLO_RESOURCE_DIR`).
    pub path: PathBuf,
    pub kind: EntryKind,
}

/// What scan found for one entity, cached for apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileSpec {
    /// A target with repository entries, in application order.
    Provision {
        target: String,
        entries: Vec<RepoEntry>,
    },
    /// A target base without repository entries: restore the target from
    /// it (the target exists) or forget it (the target was deleted).
    Scrub {
        target: String,
        target_deleted: bool,
    },
}

impl FileSpec {
    /// The target's absolute path, e.g. `/etc/foo.conf`.
    pub fn target(&self) -> &str {
        match self {
            FileSpec::Provision { target, .. } | FileSpec::Scrub { target, .. } => target,
        }
    }
}

/// The entity id of a target: `file:/etc/foo.conf`.
pub fn entity_id(target: &str) -> String {
    format!("file:{target}")
}

/// The target of an entity id, when it is one of ours.
pub fn target_of(id: &str) -> Option<&str> {
    id.strip_prefix("file:")
        .filter(|path| path.starts_with('/'))
}

/// The target of an entry at `relative` (below its disambiguator), e.g.
/// `etc/foo.conf.holoscript` → `/etc/foo.conf`. `None` for a name that
/// is only a suffix.
pub fn target_of_entry(relative: &Path) -> Option<(String, EntryKind)> {
    let text = relative.to_str()?;
    let (kind, stem) = EntryKind::of_name(text);
    if stem.is_empty() || stem.ends_with('/') {
        return None;
    }
    Some((format!("/{stem}"), kind))
}

/// Collects entries by target and puts each target's entries in
/// application order: by disambiguator (so `01-foo` comes before
/// `01-foo-bar`, whatever the path sort says), then the plain file before
/// the scripts of the same disambiguator.
pub fn stack(found: Vec<(String, RepoEntry)>) -> BTreeMap<String, Vec<RepoEntry>> {
    let mut targets: BTreeMap<String, Vec<RepoEntry>> = BTreeMap::new();
    for (target, entry) in found {
        targets.entry(target).or_default().push(entry);
    }
    for entries in targets.values_mut() {
        entries.sort_by(|a, b| {
            a.disambiguator
                .cmp(&b.disambiguator)
                .then_with(|| kind_rank(a.kind).cmp(&kind_rank(b.kind)))
                .then_with(|| a.path.cmp(&b.path))
        });
    }
    targets
}

fn kind_rank(kind: EntryKind) -> u8 {
    match kind {
        EntryKind::Plain => 0,
        EntryKind::Holoscript => 1,
        EntryKind::Patch => 2,
    }
}

/// The entries that matter: a plain entry discards what came before it, so
/// application starts at the last one (the earlier steps never run).
pub fn effective_entries(entries: &[RepoEntry]) -> &[RepoEntry] {
    let start = entries
        .iter()
        .rposition(|entry| entry.kind == EntryKind::Plain)
        .unwrap_or(0);
    &entries[start..]
}

/// A path as Holo 3 prints it (Go's `filepath.Clean`): no `.` components,
/// no doubled or trailing slashes, `..` folded where it can be.
pub fn shown(path: &Path) -> String {
    let absolute = path.has_root();
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir => match parts.last() {
                Some(last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push("..".to_string()),
            },
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(disambiguator: &str, name: &str) -> (String, RepoEntry) {
        let relative = Path::new(name);
        let (target, kind) = target_of_entry(relative).unwrap();
        (
            target,
            RepoEntry {
                disambiguator: disambiguator.to_string(),
                path: Path::new(disambiguator).join(relative),
                kind,
            },
        )
    }

    #[test]
    fn suffixes_name_the_kind_and_the_target() {
        assert_eq!(
            target_of_entry(Path::new("etc/a.conf.holoscript")),
            Some(("/etc/a.conf".to_string(), EntryKind::Holoscript))
        );
        assert_eq!(
            target_of_entry(Path::new("etc/a.conf.patch")),
            Some(("/etc/a.conf".to_string(), EntryKind::Patch))
        );
        assert_eq!(
            target_of_entry(Path::new("etc/a.conf")),
            Some(("/etc/a.conf".to_string(), EntryKind::Plain))
        );
        assert_eq!(target_of_entry(Path::new("etc/.holoscript")), None);
    }

    #[test]
    fn a_disambiguator_that_is_a_prefix_of_another_comes_first() {
        let stacked = stack(vec![
            entry("01-foo-bar", "etc/foo.conf.holoscript"),
            entry("01-foo", "etc/foo.conf.holoscript"),
        ]);
        let order: Vec<&str> = stacked["/etc/foo.conf"]
            .iter()
            .map(|entry| entry.disambiguator.as_str())
            .collect();
        assert_eq!(order, ["01-foo", "01-foo-bar"]);
    }

    #[test]
    fn the_plain_file_comes_before_the_script_of_the_same_disambiguator() {
        let stacked = stack(vec![
            entry("03-order", "etc/c.conf.holoscript"),
            entry("03-order", "etc/c.conf"),
        ]);
        let kinds: Vec<EntryKind> = stacked["/etc/c.conf"].iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EntryKind::Plain, EntryKind::Holoscript]);
    }

    #[test]
    fn application_starts_at_the_last_plain_entry() {
        let stacked = stack(vec![
            entry("01-first", "etc/foo.conf.holoscript"),
            entry("02-second", "etc/foo.conf"),
            entry("03-third", "etc/foo.conf.holoscript"),
        ]);
        let effective = effective_entries(&stacked["/etc/foo.conf"]);
        assert_eq!(effective.len(), 2);
        assert_eq!(effective[0].disambiguator, "02-second");
        let scripts_only = stack(vec![entry("01-first", "etc/bar.conf.holoscript")]);
        assert_eq!(effective_entries(&scripts_only["/etc/bar.conf"]).len(), 1);
    }

    #[test]
    fn paths_are_shown_as_go_cleans_them() {
        assert_eq!(
            shown(Path::new("./target/var/lib/holo")),
            "target/var/lib/holo"
        );
        assert_eq!(shown(Path::new("./var//lib/")), "var/lib");
        assert_eq!(shown(Path::new("/etc/../etc/foo")), "/etc/foo");
        assert_eq!(shown(Path::new("./")), ".");
    }

    #[test]
    fn entity_ids_are_holo_3s() {
        assert_eq!(entity_id("/etc/foo"), "file:/etc/foo");
        assert_eq!(target_of("file:/etc/foo"), Some("/etc/foo"));
        assert_eq!(target_of("file:etc"), None);
    }
}
