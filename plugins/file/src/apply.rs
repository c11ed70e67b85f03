//! The decisions of apply, as plain functions over observed and wanted
//! state: CCM's decision table, Holo's protection of manual edits, and
//! what scrubbing a deleted resource does. Nothing here touches the system.

use std::path::PathBuf;

use crate::model::Ensure;

/// What kind of thing is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Absent,
    File,
    Directory,
    /// A symbolic link.
    Link,
    /// A socket, device or fifo: never managed, never replaced.
    Other,
}

impl Kind {
    /// What a resource writes to get this kind: `ensure = "..."`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Absent => "absent",
            Kind::File => "present",
            Kind::Directory => "directory",
            Kind::Link => "link",
            Kind::Other => "special file",
        }
    }

    /// The kind an `ensure` value asks for.
    pub fn of(ensure: Ensure) -> Kind {
        match ensure {
            Ensure::Present => Kind::File,
            Ensure::Absent => Kind::Absent,
            Ensure::Directory => Kind::Directory,
            Ensure::Link => Kind::Link,
        }
    }
}

/// The state of a path as Status reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub kind: Kind,
    /// `sha256:HEX` of a regular file's content.
    pub checksum: Option<String>,
    pub uid: u32,
    pub gid: u32,
    /// Permission bits including setuid/setgid/sticky (`st_mode & 0o7777`).
    pub mode: u32,
    /// A symbolic link's target, verbatim.
    pub target: Option<PathBuf>,
}

impl Observed {
    /// Nothing at the path.
    pub fn absent() -> Observed {
        Observed {
            kind: Kind::Absent,
            checksum: None,
            uid: 0,
            gid: 0,
            mode: 0,
            target: None,
        }
    }
}

/// The desired state with owner and group resolved to ids. An attribute
/// that is `None` is not managed (a link's mode, or its owner when the
/// resource gives none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub ensure: Ensure,
    /// `None` when the content is not managed (neither content nor source).
    pub checksum: Option<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mode: Option<u32>,
    /// A link's target.
    pub target: Option<PathBuf>,
}

/// What apply must do to reach the desired state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    None,
    Remove,
    CreateDirectory,
    Store,
    /// Create or replace the symbolic link.
    Link,
}

/// CCM's decision table, row by row.
pub fn decide(wanted: &Wanted, current: &Observed) -> Action {
    match (wanted.ensure, current.kind) {
        (Ensure::Absent, Kind::Absent) => Action::None,
        (Ensure::Absent, _) => Action::Remove,
        (Ensure::Directory, Kind::Directory) if attributes_match(wanted, current) => Action::None,
        (Ensure::Directory, _) => Action::CreateDirectory,
        (Ensure::Present, Kind::File) if differences(wanted, current).is_empty() => Action::None,
        (Ensure::Present, _) => Action::Store,
        (Ensure::Link, Kind::Link) if differences(wanted, current).is_empty() => Action::None,
        (Ensure::Link, _) => Action::Link,
    }
}

fn attributes_match(wanted: &Wanted, current: &Observed) -> bool {
    let matches = |wanted: Option<u32>, current: u32| wanted.is_none_or(|id| id == current);
    matches(wanted.uid, current.uid)
        && matches(wanted.gid, current.gid)
        && matches(wanted.mode, current.mode)
}

/// The properties in which `current` differs from `wanted`, in CCM's
/// order of checks; used for verification messages and noop details.
pub fn differences(wanted: &Wanted, current: &Observed) -> Vec<&'static str> {
    if current.kind != Kind::of(wanted.ensure) {
        return vec!["ensure"];
    }
    if wanted.ensure == Ensure::Absent {
        return Vec::new();
    }
    let mut differing = Vec::new();
    if wanted.ensure == Ensure::Present
        && wanted.checksum.is_some()
        && wanted.checksum != current.checksum
    {
        differing.push("content");
    }
    if wanted.ensure == Ensure::Link && wanted.target != current.target {
        differing.push("target");
    }
    let differs = |wanted: Option<u32>, current: u32| wanted.is_some_and(|id| id != current);
    if differs(wanted.uid, current.uid) {
        differing.push("owner");
    }
    if differs(wanted.gid, current.gid) {
        differing.push("group");
    }
    if differs(wanted.mode, current.mode) {
        differing.push("mode");
    }
    differing
}

/// What the plugin left at the path the last time it applied, from the
/// state record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub kind: Kind,
    /// `None` when the content was not the plugin's to manage.
    pub checksum: Option<String>,
    /// The target of a link the plugin made.
    pub target: Option<PathBuf>,
}

/// Whether apply may change the path (Holo's protection of manual edits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    Proceed,
    /// Someone changed what the plugin wrote: `requires --force to overwrite`.
    RequiresForceOverwrite,
    /// Someone deleted what the plugin wrote: `requires --force to restore`.
    RequiresForceRestore,
}

/// Called when the path is not in its desired state. If the plugin applied
/// it before and it no longer is what the plugin left, someone edited it.
pub fn guard(left: Option<&Left>, current: &Observed) -> Guard {
    let Some(left) = left else {
        return Guard::Proceed;
    };
    let unchanged = left.kind == current.kind
        && (left.kind != Kind::File
            || left.checksum.is_none()
            || left.checksum == current.checksum)
        && (left.kind != Kind::Link || left.target == current.target);
    if unchanged {
        Guard::Proceed
    } else if current.kind == Kind::Absent {
        Guard::RequiresForceRestore
    } else {
        Guard::RequiresForceOverwrite
    }
}

/// What was at the path before the plugin first touched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Original {
    /// Nothing.
    None,
    /// A regular file, saved below `$HOLO_STATE_DIR/base`.
    File,
    /// A directory, whose attributes are recorded.
    Directory,
    /// A symbolic link, whose target is recorded.
    Link,
}

/// What scrubbing (the resource was deleted) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scrub {
    /// Put the saved original file back, or the directory's attributes.
    RestoreOriginal,
    /// Remove what the plugin created.
    Remove,
    /// Nothing is left to undo; only the record goes.
    Forget,
    /// The path was edited since the plugin wrote it.
    RequiresForceOverwrite,
}

/// Decides the scrub of an entity the plugin applied earlier. Edits are
/// honoured unless `force`; a path someone already deleted needs no
/// protection, since restoring the original or leaving it absent loses nothing.
pub fn scrub(original: Original, left: &Left, current: &Observed, force: bool) -> Scrub {
    let edited = current.kind != Kind::Absent && guard(Some(left), current) != Guard::Proceed;
    if edited && !force {
        return Scrub::RequiresForceOverwrite;
    }
    match (original, current.kind) {
        (Original::File | Original::Link, _) => Scrub::RestoreOriginal,
        (Original::Directory, Kind::Directory) => Scrub::RestoreOriginal,
        (Original::Directory, _) => Scrub::Forget,
        (Original::None, Kind::Absent) => Scrub::Forget,
        (Original::None, _) if left.kind == Kind::Absent => Scrub::Forget,
        (Original::None, _) => Scrub::Remove,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUM_A: &str = "sha256:aaaa";
    const SUM_B: &str = "sha256:bbbb";

    fn wanted(ensure: Ensure) -> Wanted {
        Wanted {
            ensure,
            checksum: Some(SUM_A.to_string()),
            uid: Some(0),
            gid: Some(0),
            mode: Some(0o644),
            target: None,
        }
    }

    fn observed(kind: Kind) -> Observed {
        Observed {
            kind,
            checksum: (kind == Kind::File).then(|| SUM_A.to_string()),
            uid: 0,
            gid: 0,
            mode: if kind == Kind::Directory {
                0o755
            } else {
                0o644
            },
            target: None,
        }
    }

    /// What an earlier apply left: `kind`, with `checksum` when it managed
    /// the content.
    fn left_behind(kind: Kind, checksum: Option<&str>) -> Left {
        Left {
            kind,
            checksum: checksum.map(str::to_string),
            target: None,
        }
    }

    /// A regular file (0644, root) with content `checksum`.
    fn file_with(checksum: &str) -> Observed {
        Observed {
            checksum: Some(checksum.to_string()),
            ..observed(Kind::File)
        }
    }

    fn directory_wanted() -> Wanted {
        Wanted {
            mode: Some(0o755),
            checksum: None,
            ..wanted(Ensure::Directory)
        }
    }

    // CCM's decision table, one test per row.

    #[test]
    fn row_absent_and_absent_does_nothing() {
        assert_eq!(
            decide(&wanted(Ensure::Absent), &Observed::absent()),
            Action::None
        );
    }

    #[test]
    fn row_absent_over_present_or_directory_removes() {
        assert_eq!(
            decide(&wanted(Ensure::Absent), &observed(Kind::File)),
            Action::Remove
        );
        assert_eq!(
            decide(&wanted(Ensure::Absent), &observed(Kind::Directory)),
            Action::Remove
        );
        assert_eq!(
            decide(&wanted(Ensure::Absent), &observed(Kind::Other)),
            Action::Remove
        );
    }

    #[test]
    fn row_directory_with_matching_attributes_does_nothing() {
        assert_eq!(
            decide(&directory_wanted(), &observed(Kind::Directory)),
            Action::None
        );
    }

    #[test]
    fn row_directory_over_absent_or_present_creates_the_directory() {
        assert_eq!(
            decide(&directory_wanted(), &Observed::absent()),
            Action::CreateDirectory
        );
        assert_eq!(
            decide(&directory_wanted(), &observed(Kind::File)),
            Action::CreateDirectory
        );
    }

    #[test]
    fn row_directory_with_wrong_attributes_creates_the_directory_to_fix_them() {
        for current in [
            Observed {
                mode: 0o700,
                ..observed(Kind::Directory)
            },
            Observed {
                uid: 1000,
                ..observed(Kind::Directory)
            },
            Observed {
                gid: 1000,
                ..observed(Kind::Directory)
            },
        ] {
            assert_eq!(
                decide(&directory_wanted(), &current),
                Action::CreateDirectory,
                "{current:?}"
            );
        }
    }

    #[test]
    fn row_present_matching_everything_does_nothing() {
        assert_eq!(
            decide(&wanted(Ensure::Present), &observed(Kind::File)),
            Action::None
        );
    }

    #[test]
    fn row_present_over_absent_stores() {
        assert_eq!(
            decide(&wanted(Ensure::Present), &Observed::absent()),
            Action::Store
        );
    }

    #[test]
    fn row_present_with_wrong_content_stores() {
        let current = file_with(SUM_B);
        assert_eq!(decide(&wanted(Ensure::Present), &current), Action::Store);
        assert_eq!(differences(&wanted(Ensure::Present), &current), ["content"]);
    }

    #[test]
    fn row_present_with_wrong_attributes_stores() {
        for (current, property) in [
            (
                Observed {
                    uid: 7,
                    ..observed(Kind::File)
                },
                "owner",
            ),
            (
                Observed {
                    gid: 7,
                    ..observed(Kind::File)
                },
                "group",
            ),
            (
                Observed {
                    mode: 0o600,
                    ..observed(Kind::File)
                },
                "mode",
            ),
            (
                Observed {
                    mode: 0o4644,
                    ..observed(Kind::File)
                },
                "mode",
            ),
        ] {
            assert_eq!(decide(&wanted(Ensure::Present), &current), Action::Store);
            assert_eq!(differences(&wanted(Ensure::Present), &current), [property]);
        }
    }

    #[test]
    fn unmanaged_content_compares_attributes_only() {
        let unmanaged = Wanted {
            checksum: None,
            ..wanted(Ensure::Present)
        };
        let current = file_with(SUM_B);
        assert_eq!(decide(&unmanaged, &current), Action::None);
    }

    #[test]
    fn present_over_a_directory_is_a_store_the_provider_refuses() {
        assert_eq!(
            decide(&wanted(Ensure::Present), &observed(Kind::Directory)),
            Action::Store
        );
        assert_eq!(
            differences(&wanted(Ensure::Present), &observed(Kind::Directory)),
            ["ensure"]
        );
    }

    fn link_wanted(target: &str) -> Wanted {
        Wanted {
            checksum: None,
            mode: None,
            uid: None,
            gid: None,
            target: Some(PathBuf::from(target)),
            ..wanted(Ensure::Link)
        }
    }

    fn link_to(target: &str) -> Observed {
        Observed {
            mode: 0o777,
            target: Some(PathBuf::from(target)),
            ..observed(Kind::Link)
        }
    }

    #[test]
    fn row_link_to_the_target_does_nothing_whatever_its_mode() {
        assert_eq!(decide(&link_wanted("../a"), &link_to("../a")), Action::None);
    }

    #[test]
    fn row_link_over_absent_another_link_or_a_file_makes_the_link() {
        let wanted = link_wanted("/etc/a");
        assert_eq!(decide(&wanted, &Observed::absent()), Action::Link);
        assert_eq!(decide(&wanted, &link_to("/etc/b")), Action::Link);
        assert_eq!(differences(&wanted, &link_to("/etc/b")), ["target"]);
        assert_eq!(decide(&wanted, &observed(Kind::File)), Action::Link);
        assert_eq!(differences(&wanted, &observed(Kind::File)), ["ensure"]);
    }

    #[test]
    fn link_owner_is_compared_only_when_managed() {
        let owned = Wanted {
            uid: Some(7),
            ..link_wanted("/etc/a")
        };
        assert_eq!(differences(&owned, &link_to("/etc/a")), ["owner"]);
        assert!(differences(&link_wanted("/etc/a"), &link_to("/etc/a")).is_empty());
    }

    #[test]
    fn guard_protects_a_retargeted_or_deleted_link() {
        let left = Left {
            kind: Kind::Link,
            checksum: None,
            target: Some(PathBuf::from("/etc/a")),
        };
        assert_eq!(guard(Some(&left), &link_to("/etc/a")), Guard::Proceed);
        assert_eq!(
            guard(Some(&left), &link_to("/etc/b")),
            Guard::RequiresForceOverwrite
        );
        assert_eq!(
            guard(Some(&left), &Observed::absent()),
            Guard::RequiresForceRestore
        );
        assert_eq!(
            scrub(Original::Link, &left, &link_to("/etc/a"), false),
            Scrub::RestoreOriginal
        );
        assert_eq!(
            scrub(Original::None, &left, &link_to("/etc/a"), false),
            Scrub::Remove
        );
    }

    #[test]
    fn guard_lets_first_applies_and_unedited_paths_through() {
        let current = file_with(SUM_B);
        assert_eq!(guard(None, &current), Guard::Proceed);
        let left = left_behind(Kind::File, Some(SUM_B));
        assert_eq!(guard(Some(&left), &current), Guard::Proceed);
        // Unmanaged content: content edits are the user's business.
        let left = left_behind(Kind::File, None);
        assert_eq!(guard(Some(&left), &current), Guard::Proceed);
    }

    #[test]
    fn guard_detects_edits_and_deletions() {
        let left = left_behind(Kind::File, Some(SUM_A));
        let edited = file_with(SUM_B);
        assert_eq!(guard(Some(&left), &edited), Guard::RequiresForceOverwrite);
        assert_eq!(
            guard(Some(&left), &Observed::absent()),
            Guard::RequiresForceRestore
        );
        assert_eq!(
            guard(Some(&left), &observed(Kind::Directory)),
            Guard::RequiresForceOverwrite
        );
        let removed = left_behind(Kind::Absent, None);
        assert_eq!(
            guard(Some(&removed), &observed(Kind::File)),
            Guard::RequiresForceOverwrite
        );
    }

    #[test]
    fn scrub_restores_the_original_or_removes_what_was_created() {
        let left = left_behind(Kind::File, Some(SUM_A));
        let current = observed(Kind::File);
        assert_eq!(
            scrub(Original::File, &left, &current, false),
            Scrub::RestoreOriginal
        );
        assert_eq!(scrub(Original::None, &left, &current, false), Scrub::Remove);
        assert_eq!(
            scrub(Original::None, &left, &Observed::absent(), false),
            Scrub::Forget
        );
        assert_eq!(
            scrub(Original::File, &left, &Observed::absent(), false),
            Scrub::RestoreOriginal
        );
        let dir_left = left_behind(Kind::Directory, None);
        assert_eq!(
            scrub(
                Original::Directory,
                &dir_left,
                &observed(Kind::Directory),
                false
            ),
            Scrub::RestoreOriginal
        );
        let removed = left_behind(Kind::Absent, None);
        assert_eq!(
            scrub(Original::None, &removed, &Observed::absent(), false),
            Scrub::Forget
        );
    }

    #[test]
    fn scrub_refuses_an_edited_path_unless_forced() {
        let left = left_behind(Kind::File, Some(SUM_A));
        let edited = file_with(SUM_B);
        assert_eq!(
            scrub(Original::None, &left, &edited, false),
            Scrub::RequiresForceOverwrite
        );
        assert_eq!(scrub(Original::None, &left, &edited, true), Scrub::Remove);
        assert_eq!(
            scrub(Original::File, &left, &edited, true),
            Scrub::RestoreOriginal
        );
    }
}
