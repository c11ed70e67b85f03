//! The decisions of holo-users-groups(8) as plain functions: the desired
//! state (definition merged into the base image, completed by the
//! provisioned image), what differs from the actual state, and what apply
//! and scrub do about it.

use crate::model::{Definition, Entity, Field, Value, sorted_union};

/// The desired state and whether getting there overrides someone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub entity: Entity,
    /// The definition contradicts the base image, or the result contradicts
    /// the provisioned image: apply then needs `--force`.
    pub conflict: bool,
}

/// Apply's desired state: the definition merged into the base image (the
/// definition wins; auxiliary groups are joined unless `skipBaseGroups`),
/// and what neither says taken from the provisioned image, so that an
/// entity is restored with the same numbers.
pub fn desired(definition: &Definition, base: &Entity, provisioned: Option<&Entity>) -> Desired {
    let mut entity = base.clone();
    let mut conflict = false;
    let attributes = &mut entity.attributes;
    for field in Field::ALL {
        if let Some(wanted) = field.get(&definition.attributes) {
            conflict |= field.get(attributes).is_some_and(|old| old != wanted);
            field.set(attributes, Some(wanted));
        }
    }
    attributes.groups = if definition.skip_base_groups {
        sorted_union(&definition.attributes.groups, &[])
    } else {
        sorted_union(&attributes.groups, &definition.attributes.groups)
    };
    for field in Field::ALL {
        let recorded = provisioned.and_then(|image| field.get(&image.attributes));
        match (field.get(attributes), recorded) {
            (None, Some(recorded)) => field.set(attributes, Some(recorded)),
            (Some(wanted), Some(recorded)) => conflict |= wanted != recorded,
            _ => {}
        }
    }
    Desired { entity, conflict }
}

/// The left side of `holo diff` for an entity that was never provisioned:
/// the definition merged into the actual state (Holo 3 joins the groups
/// here even with `skipBaseGroups`).
pub fn desired_before_first_apply(definition: &Definition, actual: Option<&Entity>) -> Entity {
    let mut entity = actual
        .cloned()
        .unwrap_or_else(|| Entity::named(definition.kind, &definition.name));
    let attributes = &mut entity.attributes;
    for field in Field::ALL {
        if let Some(wanted) = field.get(&definition.attributes) {
            field.set(attributes, Some(wanted));
        }
    }
    attributes.groups = sorted_union(&attributes.groups, &definition.attributes.groups);
    entity
}

/// One attribute to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Field(Field, Value),
    Groups(Vec<String>),
}

/// What must change to bring `actual` to `target`: every field `target`
/// sets to something else, and the auxiliary groups when they differ (in
/// the order of Holo 3's command lines: the groups before the shell).
pub fn changes(actual: &Entity, target: &Entity) -> Vec<Change> {
    let mut changes = Vec::new();
    for field in Field::ALL {
        if field == Field::Shell {
            let wanted = sorted_union(&target.attributes.groups, &[]);
            if sorted_union(&actual.attributes.groups, &[]) != wanted {
                changes.push(Change::Groups(wanted));
            }
        }
        if let Some(wanted) = field.get(&target.attributes)
            && field.get(&actual.attributes).as_ref() != Some(&wanted)
        {
            changes.push(Change::Field(field, wanted));
        }
    }
    changes
}

/// True when two records of an entity say the same.
pub fn same(first: &Entity, second: &Entity) -> bool {
    changes(first, second).is_empty() && changes(second, first).is_empty()
}

/// What apply does with a defined entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// It is as desired: record it as provisioned.
    NotChanged,
    /// Create it (useradd, groupadd).
    Create,
    /// Change what differs (usermod, groupmod).
    Modify,
    /// It was provisioned and someone deleted it: only with `--force`.
    RequiresRestore,
    /// Getting there overrides someone: only with `--force`.
    RequiresOverwrite,
}

/// The facts apply decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub exists: bool,
    /// The actual state has every attribute of the desired state.
    pub as_desired: bool,
    pub provisioned: bool,
    /// The actual state differs from the provisioned image.
    pub modified_since: bool,
    /// The desired state contradicts the base or provisioned image.
    pub conflict: bool,
    pub force: bool,
}

pub fn step(facts: Facts) -> Step {
    match facts {
        Facts {
            exists: true,
            as_desired: true,
            ..
        } => Step::NotChanged,
        Facts {
            exists: false,
            provisioned: true,
            force: false,
            ..
        } => Step::RequiresRestore,
        Facts { exists: false, .. } => Step::Create,
        Facts { force: true, .. } => Step::Modify,
        Facts {
            conflict: false,
            modified_since: false,
            ..
        } => Step::Modify,
        _ => Step::RequiresOverwrite,
    }
}

/// What scrubbing does with an entity whose definitions are all gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrubStep {
    /// Nothing to do on the system; the images go.
    Nothing,
    /// Holo created it: userdel, groupdel.
    Delete,
    /// It existed before: back to the base image (usermod, groupmod).
    Restore,
}

/// `base_is_empty`: the base image holds only the name (the entity did
/// not exist before Holo). An entity that someone deleted since is left
/// deleted.
pub fn scrub_step(base_is_empty: bool, exists: bool, as_base: bool) -> ScrubStep {
    match (exists, base_is_empty, as_base) {
        (false, _, _) => ScrubStep::Nothing,
        (true, true, _) => ScrubStep::Delete,
        (true, false, true) => ScrubStep::Nothing,
        (true, false, false) => ScrubStep::Restore,
    }
}

/// The UID or GID the test-mode mock pretends useradd or groupadd chose.
pub const MOCK_NUMBER: u32 = 999;

/// In test mode, what the entity is after the mocked command: the actual
/// state with the desired attributes, or for a new entity the desired
/// state with the number the mock chose.
pub fn simulated(actual: Option<&Entity>, desired: &Entity) -> Entity {
    let Some(actual) = actual else {
        let mut created = desired.clone();
        created.attributes.number.get_or_insert(MOCK_NUMBER);
        return created;
    };
    let mut after = actual.clone();
    for change in changes(actual, desired) {
        match change {
            Change::Field(field, value) => field.set(&mut after.attributes, Some(value)),
            Change::Groups(groups) => after.attributes.groups = groups,
        }
    }
    after
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Attributes, Kind};

    fn user(attributes: Attributes) -> Entity {
        Entity {
            kind: Kind::User,
            name: "u".into(),
            attributes,
        }
    }

    fn definition(attributes: Attributes, skip_base_groups: bool) -> Definition {
        Definition {
            kind: Kind::User,
            name: "u".into(),
            attributes,
            system: false,
            skip_base_groups,
        }
    }

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    const FACTS: Facts = Facts {
        exists: true,
        as_desired: false,
        provisioned: false,
        modified_since: false,
        conflict: false,
        force: false,
    };

    #[test]
    fn step_as_desired_is_not_changed() {
        let facts = Facts {
            as_desired: true,
            conflict: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::NotChanged);
    }

    #[test]
    fn step_deleted_after_provisioning_needs_force() {
        let facts = Facts {
            exists: false,
            provisioned: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::RequiresRestore);
    }

    #[test]
    fn step_missing_is_created() {
        let facts = Facts {
            exists: false,
            ..FACTS
        };
        assert_eq!(step(facts), Step::Create);
    }

    #[test]
    fn step_deleted_after_provisioning_is_created_with_force() {
        let facts = Facts {
            exists: false,
            provisioned: true,
            force: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::Create);
    }

    #[test]
    fn step_conflict_or_edit_is_modified_with_force() {
        let facts = Facts {
            conflict: true,
            modified_since: true,
            force: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::Modify);
    }

    #[test]
    fn step_plain_difference_is_modified() {
        assert_eq!(step(FACTS), Step::Modify);
    }

    #[test]
    fn step_conflict_needs_force() {
        let facts = Facts {
            conflict: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::RequiresOverwrite);
    }

    #[test]
    fn step_edit_since_provisioning_needs_force() {
        let facts = Facts {
            provisioned: true,
            modified_since: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::RequiresOverwrite);
    }

    #[test]
    fn scrub_of_missing_entity_does_nothing() {
        assert_eq!(scrub_step(true, false, false), ScrubStep::Nothing);
    }

    #[test]
    fn scrub_of_created_entity_deletes_it() {
        assert_eq!(scrub_step(true, true, false), ScrubStep::Delete);
    }

    #[test]
    fn scrub_of_entity_as_base_does_nothing() {
        assert_eq!(scrub_step(false, true, true), ScrubStep::Nothing);
    }

    #[test]
    fn scrub_of_changed_entity_restores_base() {
        assert_eq!(scrub_step(false, true, false), ScrubStep::Restore);
    }

    #[test]
    fn desired_merges_into_base_and_completes_from_provisioned() {
        let base = user(Attributes {
            shell: Some("/bin/bash".into()),
            groups: groups(&["video"]),
            ..Attributes::default()
        });
        let wanted = definition(
            Attributes {
                comment: Some("C".into()),
                groups: groups(&["network"]),
                ..Attributes::default()
            },
            false,
        );
        let provisioned = user(Attributes {
            number: Some(1001),
            shell: Some("/bin/bash".into()),
            ..Attributes::default()
        });
        let result = desired(&wanted, &base, Some(&provisioned));
        assert!(!result.conflict);
        let a = &result.entity.attributes;
        assert_eq!(a.number, Some(1001));
        assert_eq!(a.groups, groups(&["network", "video"]));
    }

    #[test]
    fn desired_conflicts_with_base_or_provisioned() {
        let base = user(Attributes {
            number: Some(2003),
            ..Attributes::default()
        });
        let wanted = definition(
            Attributes {
                number: Some(1003),
                groups: groups(&["network"]),
                ..Attributes::default()
            },
            true,
        );
        let result = desired(&wanted, &base, None);
        assert!(result.conflict);
        assert_eq!(result.entity.attributes.groups, groups(&["network"]));
        let provisioned = user(Attributes {
            number: Some(7),
            ..Attributes::default()
        });
        let empty = user(Attributes::default());
        assert!(desired(&wanted, &empty, Some(&provisioned)).conflict);
    }

    #[test]
    fn diff_before_first_apply_joins_groups_even_when_skipping() {
        let actual = user(Attributes {
            groups: groups(&["video"]),
            ..Attributes::default()
        });
        let wanted = definition(
            Attributes {
                groups: groups(&["network"]),
                ..Attributes::default()
            },
            true,
        );
        let left = desired_before_first_apply(&wanted, Some(&actual));
        assert_eq!(left.attributes.groups, groups(&["network", "video"]));
    }

    #[test]
    fn changes_list_set_fields_and_groups() {
        let actual = user(Attributes {
            number: Some(1),
            shell: Some("/bin/sh".into()),
            groups: groups(&["a", "b"]),
            ..Attributes::default()
        });
        let target = user(Attributes {
            number: Some(1),
            comment: Some("C".into()),
            groups: groups(&["a"]),
            ..Attributes::default()
        });
        assert_eq!(
            changes(&actual, &target),
            [
                Change::Field(Field::Comment, Value::Text("C".into())),
                Change::Groups(groups(&["a"]))
            ]
        );
        assert!(!same(&actual, &target));
        assert!(same(&actual, &actual.clone()));
    }

    #[test]
    fn simulation_gives_new_entities_the_mock_number() {
        let wanted = user(Attributes::default());
        assert_eq!(
            simulated(None, &wanted).attributes.number,
            Some(MOCK_NUMBER)
        );
        let actual = user(Attributes {
            number: Some(5),
            ..Attributes::default()
        });
        let target = user(Attributes {
            shell: Some("/bin/zsh".into()),
            ..Attributes::default()
        });
        let after = simulated(Some(&actual), &target);
        assert_eq!(after.attributes.number, Some(5));
        assert_eq!(after.attributes.shell.as_deref(), Some("/bin/zsh"));
    }
}
