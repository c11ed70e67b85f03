//! The decisions of an apply, as plain functions of what is found on disk:
//! where the target base comes from, whether the target may be written,
//! and what scrubbing an orphaned target base does.

/// What is at the target path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Missing,
    /// A regular file or a symlink.
    Manageable,
    /// A directory or a special file.
    NotManageable,
}

/// A package manager's leftover next to the target (see the provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// `.pacnew`, `.dpkg-dist`, `.rpmnew`, `.apk-new`: the new default
    /// configuration, next to the target the manager left alone.
    Beside,
    /// `.rpmsave`, `.dpkg-old`: the manager wrote the new default over
    /// the target and saved the old target here.
    SavedOld,
}

/// Where the target base comes from in this apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseStep {
    /// The stored base stays.
    Keep,
    /// First apply: the target as it is becomes the base.
    StoreTarget,
    /// The leftover beside the target becomes the base (and goes away).
    TakeBeside,
    /// The target becomes the base; the saved old target goes back in place.
    TakeTargetRestoreSaved,
    /// No base and nothing to take one from, or not a file:
    /// `skipping target: not a manageable file`.
    NotManageable,
}

pub fn base_step(target: Presence, base_exists: bool, update: Option<Update>) -> BaseStep {
    match (target, update, base_exists) {
        (Presence::NotManageable, _, _) | (Presence::Missing, _, false) => BaseStep::NotManageable,
        (_, Some(Update::Beside), _) => BaseStep::TakeBeside,
        (Presence::Manageable, Some(Update::SavedOld), _) => BaseStep::TakeTargetRestoreSaved,
        (_, _, true) => BaseStep::Keep,
        (Presence::Manageable, _, false) => BaseStep::StoreTarget,
    }
}

/// What happens to the target once the desired content is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetStep {
    /// The target already is what it should be (only the provisioned copy
    /// may need to catch up).
    Unchanged,
    Write,
    /// Someone changed the target since it was provisioned.
    RequiresForceOverwrite,
    /// Someone deleted the target.
    RequiresForceRestore,
}

/// `equals_desired`: the target is the desired content. `equals_last`: the
/// target is what was provisioned last (or, before the first provisioning,
/// the base: the package's own file).
pub fn target_step(
    target: Presence,
    equals_desired: bool,
    equals_last: bool,
    force: bool,
) -> TargetStep {
    match (target, equals_desired, equals_last, force) {
        (Presence::Missing, _, _, true) => TargetStep::Write,
        (Presence::Missing, _, _, false) => TargetStep::RequiresForceRestore,
        (_, true, _, _) => TargetStep::Unchanged,
        (_, false, true, _) | (_, false, false, true) => TargetStep::Write,
        (_, false, false, false) => TargetStep::RequiresForceOverwrite,
    }
}

/// What scrubbing an orphaned target base does to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrubStep {
    /// Put the base back at the target.
    RestoreBase,
    /// The leftover beside the target is the package's current file: it
    /// becomes the target.
    TakeBeside,
    /// The target already is the package's current file; the saved old
    /// target goes away.
    KeepTargetDropSaved,
    /// The target was deleted: forget the base (and remove the package
    /// manager's saved copies that are what was provisioned).
    Forget,
}

pub fn scrub_step(target_deleted: bool, update: Option<Update>) -> ScrubStep {
    match (target_deleted, update) {
        (true, _) => ScrubStep::Forget,
        (false, Some(Update::Beside)) => ScrubStep::TakeBeside,
        (false, Some(Update::SavedOld)) => ScrubStep::KeepTargetDropSaved,
        (false, None) => ScrubStep::RestoreBase,
    }
}

/// A saved copy after a package's removal (`.pacsave`, `.pacsave.N`, ...)
/// is removed with the base only when it is what was provisioned: a copy
/// the user changed stays.
pub fn remove_saved_copy(provisioned_exists: bool, equals_provisioned: bool) -> bool {
    provisioned_exists && equals_provisioned
}

#[cfg(test)]
mod tests {
    use super::*;
    use Presence::*;

    #[test]
    fn base_a_directory_target_is_not_manageable() {
        assert_eq!(
            base_step(NotManageable, true, None),
            BaseStep::NotManageable
        );
    }
    #[test]
    fn base_a_leftover_beside_the_target_becomes_the_base() {
        assert_eq!(
            base_step(Manageable, true, Some(Update::Beside)),
            BaseStep::TakeBeside
        );
    }
    #[test]
    fn base_a_leftover_beside_is_taken_on_the_first_apply_too() {
        assert_eq!(
            base_step(Manageable, false, Some(Update::Beside)),
            BaseStep::TakeBeside
        );
    }
    #[test]
    fn base_a_saved_old_target_swaps_with_the_target() {
        assert_eq!(
            base_step(Manageable, true, Some(Update::SavedOld)),
            BaseStep::TakeTargetRestoreSaved
        );
    }
    #[test]
    fn base_a_saved_old_target_without_a_target_is_ignored() {
        assert_eq!(
            base_step(Missing, true, Some(Update::SavedOld)),
            BaseStep::Keep
        );
    }
    #[test]
    fn base_a_stored_base_stays() {
        assert_eq!(base_step(Manageable, true, None), BaseStep::Keep);
        assert_eq!(base_step(Missing, true, None), BaseStep::Keep);
    }
    #[test]
    fn base_the_first_apply_stores_the_target() {
        assert_eq!(base_step(Manageable, false, None), BaseStep::StoreTarget);
    }
    #[test]
    fn base_no_target_and_no_base_is_not_manageable() {
        assert_eq!(base_step(Missing, false, None), BaseStep::NotManageable);
    }
    #[test]
    fn base_no_target_and_no_base_leaves_a_leftover_alone() {
        assert_eq!(
            base_step(Missing, false, Some(Update::Beside)),
            BaseStep::NotManageable
        );
    }

    #[test]
    fn target_deleted_needs_force_to_restore() {
        assert_eq!(
            target_step(Missing, false, false, false),
            TargetStep::RequiresForceRestore
        );
    }
    #[test]
    fn target_deleted_is_restored_with_force() {
        assert_eq!(target_step(Missing, false, false, true), TargetStep::Write);
    }
    #[test]
    fn target_already_desired_is_unchanged() {
        assert_eq!(
            target_step(Manageable, true, false, false),
            TargetStep::Unchanged
        );
        assert_eq!(
            target_step(Manageable, true, true, true),
            TargetStep::Unchanged
        );
    }
    #[test]
    fn target_as_last_provisioned_is_written() {
        assert_eq!(
            target_step(Manageable, false, true, false),
            TargetStep::Write
        );
    }
    #[test]
    fn target_changed_by_user_needs_force_to_overwrite() {
        assert_eq!(
            target_step(Manageable, false, false, false),
            TargetStep::RequiresForceOverwrite
        );
    }
    #[test]
    fn target_changed_by_user_is_overwritten_with_force() {
        assert_eq!(
            target_step(Manageable, false, false, true),
            TargetStep::Write
        );
    }

    #[test]
    fn scrub_deleted_target_forgets_the_base() {
        assert_eq!(scrub_step(true, None), ScrubStep::Forget);
        assert_eq!(scrub_step(true, Some(Update::Beside)), ScrubStep::Forget);
    }
    #[test]
    fn scrub_restores_the_base() {
        assert_eq!(scrub_step(false, None), ScrubStep::RestoreBase);
    }
    #[test]
    fn scrub_takes_the_leftover_beside_as_the_target() {
        assert_eq!(
            scrub_step(false, Some(Update::Beside)),
            ScrubStep::TakeBeside
        );
    }
    #[test]
    fn scrub_keeps_the_target_the_manager_wrote() {
        assert_eq!(
            scrub_step(false, Some(Update::SavedOld)),
            ScrubStep::KeepTargetDropSaved
        );
    }

    #[test]
    fn saved_copy_as_provisioned_is_removed() {
        assert!(remove_saved_copy(true, true));
    }
    #[test]
    fn saved_copy_changed_by_user_stays() {
        assert!(!remove_saved_copy(true, false));
    }
    #[test]
    fn saved_copy_without_provisioned_copy_stays() {
        assert!(!remove_saved_copy(false, false));
    }
}
