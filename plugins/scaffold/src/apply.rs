//! The scaffold type's decisions as plain functions: CCM's decision
//! table (is the current state the desired one?) and the noop count and
//! message. Nothing here touches the system.

use holo_plugin::run_entities::RunEntity;

use crate::model::Ensure;

/// What rendering against the target showed (for `absent`, Changed and
/// Stable hold only files that exist).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    pub target_exists: bool,
    pub changed: usize,
    pub stable: usize,
    pub purged: usize,
}

/// The decision table: `absent` is stable when the target is missing or no
/// managed file remains; `present` when the target exists, nothing is
/// changed, and (with `purge`) nothing is left to purge.
pub fn is_stable(ensure: Ensure, purge: bool, observed: &Observed) -> bool {
    match ensure {
        Ensure::Absent => !observed.target_exists || observed.changed + observed.stable == 0,
        Ensure::Present => {
            observed.target_exists && observed.changed == 0 && (!purge || observed.purged == 0)
        }
    }
}

/// The noop count: Changed (+ Stable for `absent`) + Purged with `purge`.
pub fn affected(ensure: Ensure, purge: bool, observed: &Observed) -> usize {
    let purged = if purge { observed.purged } else { 0 };
    match ensure {
        Ensure::Present => observed.changed + purged,
        Ensure::Absent => observed.changed + observed.stable + purged,
    }
}

/// Holo's protection for one file apply would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    Proceed,
    /// The file apply wrote is gone: `requires --force to restore`.
    RequiresForceRestore,
    /// The file differs from what apply wrote: `requires --force to overwrite`.
    RequiresForceOverwrite,
}

/// What apply would do to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Render it (present, Changed).
    Write,
    /// Remove it (absent).
    Remove,
    /// Purge it: the source does not produce it.
    Purge,
}

/// What the state record says about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written<'a> {
    /// The scaffold never wrote it.
    Never,
    /// A write or its post commands did not finish.
    Unfinished,
    /// Apply left this checksum.
    Checksum(&'a str),
}

/// `current` is the file's checksum now (`None`: missing); `rendered_now`
/// says whether it holds what the source renders (Stable).
pub fn protection(
    change: Change,
    written: Written<'_>,
    current: Option<&str>,
    rendered_now: bool,
) -> Protection {
    match (change, written, current) {
        (_, Written::Unfinished, _) => Protection::Proceed,
        (Change::Write, Written::Never, _) => Protection::Proceed,
        (Change::Write, Written::Checksum(_), None) => Protection::RequiresForceRestore,
        (Change::Remove | Change::Purge, _, None) => Protection::Proceed,
        // As CCM's purge: a file the scaffold never wrote goes too (a stale
        // file of a hand install); the caller keeps what another entity of
        // the run manages.
        (Change::Purge, Written::Never, Some(_)) => Protection::Proceed,
        (_, Written::Checksum(written), Some(current)) if written == current => Protection::Proceed,
        (Change::Remove, _, Some(_)) if rendered_now => Protection::Proceed,
        // Edited since apply, or never written by the scaffold and unlike
        // its rendering: someone else's content.
        (_, _, Some(_)) => Protection::RequiresForceOverwrite,
    }
}

/// The other entity of the run that manages `path` (a file in the target
/// `target`), which purge must leave alone: one whose id names `path`
/// itself, or a directory below the target that holds it (a nested
/// scaffold, say). An entity of the target itself or above it does not
/// count: the target is the scaffold's.
pub fn managed_elsewhere<'a>(
    path: &str,
    target: &str,
    own_id: &str,
    entities: &'a [RunEntity],
) -> Option<&'a RunEntity> {
    let below = |inner: &str, outer: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    entities.iter().find(|entity| {
        entity.id != own_id
            && entity.path().is_some_and(|managed| {
                managed == path || (below(path, managed) && below(managed, target))
            })
    })
}

/// `Would have changed N scaffold files` / `Would have removed N scaffold files`.
pub fn noop_message(ensure: Ensure, affected: usize) -> String {
    let verb = match ensure {
        Ensure::Present => "changed",
        Ensure::Absent => "removed",
    };
    format!("Would have {verb} {affected} scaffold files")
}

/// What `holo-scaffold status` reads back as `ensure`, one row each: a
/// target directory that exists is present, one that does not is absent.
/// A note says when the record lists files of a target that is gone.
pub fn read_back(target_exists: bool, recorded_files: usize) -> (Ensure, Option<&'static str>) {
    match (target_exists, recorded_files) {
        (true, _) => (Ensure::Present, None),
        (false, 0) => (Ensure::Absent, None),
        (false, _) => (
            Ensure::Absent,
            Some("the record lists files, but the target directory is gone"),
        ),
    }
}

/// How a file the record lists stands now, by the checksum it was written
/// with and the one it has (`None`: missing).
pub fn managed_file_state(written: &str, current: Option<&str>) -> &'static str {
    match current {
        None => "missing",
        Some(current) if current == written => "as written",
        Some(_) => "changed since it was written",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_an_existing_target_is_present() {
        assert_eq!(read_back(true, 0), (Ensure::Present, None));
        assert_eq!(read_back(true, 3), (Ensure::Present, None));
    }

    #[test]
    fn read_back_a_missing_target_is_absent() {
        assert_eq!(read_back(false, 0), (Ensure::Absent, None));
    }

    #[test]
    fn read_back_a_missing_target_with_recorded_files_says_so() {
        let (ensure, note) = read_back(false, 2);
        assert_eq!(ensure, Ensure::Absent);
        assert!(note.is_some_and(|note| note.contains("gone")));
    }

    #[test]
    fn managed_files_are_as_written_changed_or_missing() {
        assert_eq!(managed_file_state("a", Some("a")), "as written");
        assert_eq!(
            managed_file_state("a", Some("b")),
            "changed since it was written"
        );
        assert_eq!(managed_file_state("a", None), "missing");
    }

    fn seen(target_exists: bool, changed: usize, stable: usize, purged: usize) -> Observed {
        Observed {
            target_exists,
            changed,
            stable,
            purged,
        }
    }

    // CCM's decision table, one test per row.

    #[test]
    fn absent_without_target_is_stable() {
        assert!(is_stable(Ensure::Absent, false, &seen(false, 0, 0, 0)));
        assert!(is_stable(Ensure::Absent, true, &seen(false, 0, 0, 0)));
    }

    #[test]
    fn absent_with_no_managed_files_left_is_stable() {
        assert!(is_stable(Ensure::Absent, false, &seen(true, 0, 0, 3)));
        assert!(is_stable(Ensure::Absent, true, &seen(true, 0, 0, 3)));
    }

    #[test]
    fn absent_with_managed_files_left_is_not_stable() {
        assert!(!is_stable(Ensure::Absent, false, &seen(true, 1, 0, 0)));
        assert!(!is_stable(Ensure::Absent, false, &seen(true, 0, 2, 5)));
    }

    #[test]
    fn present_all_stable_is_stable() {
        assert!(is_stable(Ensure::Present, false, &seen(true, 0, 4, 0)));
        assert!(is_stable(Ensure::Present, true, &seen(true, 0, 4, 0)));
    }

    #[test]
    fn present_purged_files_without_purge_are_ignored() {
        assert!(is_stable(Ensure::Present, false, &seen(true, 0, 4, 2)));
    }

    #[test]
    fn present_purged_files_with_purge_need_purging() {
        assert!(!is_stable(Ensure::Present, true, &seen(true, 0, 4, 2)));
    }

    #[test]
    fn present_changed_files_need_rendering() {
        assert!(!is_stable(Ensure::Present, false, &seen(true, 1, 3, 0)));
        assert!(!is_stable(Ensure::Present, true, &seen(true, 1, 3, 2)));
    }

    #[test]
    fn present_without_target_is_not_stable() {
        assert!(!is_stable(Ensure::Present, false, &seen(false, 0, 0, 0)));
        assert!(!is_stable(Ensure::Present, true, &seen(false, 3, 0, 0)));
    }

    // Protection, one test per row.

    #[test]
    fn protection_unfinished_writes_proceed() {
        for change in [Change::Write, Change::Remove] {
            assert_eq!(
                protection(change, Written::Unfinished, Some("a"), false),
                Protection::Proceed
            );
        }
    }

    #[test]
    fn protection_writing_a_file_never_written_proceeds() {
        assert_eq!(
            protection(Change::Write, Written::Never, Some("a"), false),
            Protection::Proceed
        );
        assert_eq!(
            protection(Change::Write, Written::Never, None, false),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_writing_a_deleted_file_requires_force_to_restore() {
        assert_eq!(
            protection(Change::Write, Written::Checksum("a"), None, false),
            Protection::RequiresForceRestore
        );
    }

    #[test]
    fn protection_removing_a_missing_file_proceeds() {
        assert_eq!(
            protection(Change::Remove, Written::Checksum("a"), None, false),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_a_file_as_apply_left_it_proceeds() {
        for change in [Change::Write, Change::Remove] {
            assert_eq!(
                protection(change, Written::Checksum("a"), Some("a"), false),
                Protection::Proceed
            );
        }
    }

    #[test]
    fn protection_removing_a_file_that_holds_the_rendering_proceeds() {
        assert_eq!(
            protection(Change::Remove, Written::Never, Some("a"), true),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_an_edited_file_requires_force_to_overwrite() {
        assert_eq!(
            protection(Change::Write, Written::Checksum("a"), Some("b"), false),
            Protection::RequiresForceOverwrite
        );
        assert_eq!(
            protection(Change::Remove, Written::Checksum("a"), Some("b"), false),
            Protection::RequiresForceOverwrite
        );
    }

    #[test]
    fn protection_removing_someone_elses_file_requires_force() {
        assert_eq!(
            protection(Change::Remove, Written::Never, Some("b"), false),
            Protection::RequiresForceOverwrite
        );
    }

    #[test]
    fn protection_purging_a_file_never_written_proceeds_as_ccm() {
        assert_eq!(
            protection(Change::Purge, Written::Never, Some("b"), false),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_purging_a_file_edited_since_apply_requires_force() {
        assert_eq!(
            protection(Change::Purge, Written::Checksum("a"), Some("b"), false),
            Protection::RequiresForceOverwrite
        );
    }

    #[test]
    fn protection_purging_a_missing_or_unchanged_file_proceeds() {
        assert_eq!(
            protection(Change::Purge, Written::Checksum("a"), None, false),
            Protection::Proceed
        );
        assert_eq!(
            protection(Change::Purge, Written::Checksum("a"), Some("a"), false),
            Protection::Proceed
        );
    }

    fn entity(id: &str) -> RunEntity {
        RunEntity {
            id: id.into(),
            declared_at: format!("{id}.toml:1"),
        }
    }

    #[test]
    fn managed_elsewhere_a_file_another_entity_names() {
        let entities = [entity("scaffold:/etc/app"), entity("file:/etc/app/b.conf")];
        let found = managed_elsewhere(
            "/etc/app/b.conf",
            "/etc/app",
            "scaffold:/etc/app",
            &entities,
        );
        assert_eq!(found.map(|e| e.id.as_str()), Some("file:/etc/app/b.conf"));
        assert_eq!(
            managed_elsewhere(
                "/etc/app/c.conf",
                "/etc/app",
                "scaffold:/etc/app",
                &entities
            ),
            None
        );
    }

    #[test]
    fn managed_elsewhere_a_file_in_a_directory_below_the_target() {
        let entities = [
            entity("scaffold:/etc/app/sub"),
            entity("archive:/etc/app/data"),
        ];
        for path in ["/etc/app/sub/x.conf", "/etc/app/data/deep/y"] {
            assert!(
                managed_elsewhere(path, "/etc/app", "scaffold:/etc/app", &entities).is_some(),
                "{path}"
            );
        }
        assert!(
            managed_elsewhere(
                "/etc/app/subway",
                "/etc/app",
                "scaffold:/etc/app",
                &entities
            )
            .is_none()
        );
    }

    #[test]
    fn managed_elsewhere_not_by_the_target_itself_or_above_it() {
        let entities = [
            entity("scaffold:/etc/app"),
            entity("file:/etc/app"),
            entity("archive:/etc"),
            entity("package:nginx"),
        ];
        assert_eq!(
            managed_elsewhere(
                "/etc/app/b.conf",
                "/etc/app",
                "scaffold:/etc/app",
                &entities
            ),
            None
        );
    }

    #[test]
    fn noop_counts_follow_the_seed() {
        assert_eq!(affected(Ensure::Present, false, &seen(true, 2, 5, 3)), 2);
        assert_eq!(affected(Ensure::Present, true, &seen(true, 2, 5, 3)), 5);
        assert_eq!(affected(Ensure::Absent, false, &seen(true, 2, 5, 3)), 7);
        assert_eq!(affected(Ensure::Absent, true, &seen(true, 2, 5, 3)), 10);
        assert_eq!(
            noop_message(Ensure::Present, 2),
            "Would have changed 2 scaffold files"
        );
        assert_eq!(
            noop_message(Ensure::Absent, 7),
            "Would have removed 7 scaffold files"
        );
    }
}
