//! The decisions of holo-users-groups(8) as plain functions: the desired
//! state (definition merged into the base image, completed by the
//! provisioned image), what differs from the actual state, and what apply
//! and scrub do about it.

use crate::model::{Definition, Entity, Field, Value, sorted_union};

/// The desired state, and whether the definition contradicts the base
/// image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub entity: Entity,
    /// An attribute other than the comment that the definition sets
    /// differently from the base image.
    pub contradicts_base: bool,
}

/// Apply's desired state: the definition merged into the base image (the
/// definition wins; auxiliary groups are joined unless `skipBaseGroups`).
/// What neither says is taken from the provisioned image, so that any
/// change since shows as one and an entity deleted by someone else comes
/// back with the same numbers, then from the entity as it is. With
/// `--force` the entity as it is comes first: it is overwritten only where
/// the definition or the base image say so. A comment that no definition
/// asks for is left as it is.
pub fn desired(
    definition: &Definition,
    base: &Entity,
    actual: Option<&Entity>,
    provisioned: Option<&Entity>,
    force: bool,
) -> Desired {
    let mut entity = base.clone();
    let mut contradicts_base = false;
    let attributes = &mut entity.attributes;
    for field in Field::ALL {
        if let Some(wanted) = field.get(&definition.attributes) {
            let old = field.get(attributes);
            contradicts_base |=
                field.conflict_label(base.kind).is_some() && old.is_some_and(|old| old != wanted);
            field.set(attributes, Some(wanted));
        }
    }
    attributes.groups = if definition.skip_base_groups {
        sorted_union(&definition.attributes.groups, &[])
    } else {
        sorted_union(&attributes.groups, &definition.attributes.groups)
    };
    if attributes.comment.is_none() {
        attributes.comment = actual.and_then(|actual| actual.attributes.comment.clone());
    }
    let order = if force {
        [actual, provisioned]
    } else {
        [provisioned, actual]
    };
    for known in order.into_iter().flatten() {
        for field in Field::ALL {
            if field.get(attributes).is_none() {
                field.set(attributes, field.get(&known.attributes));
            }
        }
        if attributes.groups.is_empty() {
            attributes.groups = sorted_union(&known.attributes.groups, &[]);
        }
    }
    Desired {
        entity,
        contradicts_base,
    }
}

/// Whether getting from `actual` to `desired` overrides something that
/// both say differently: an attribute other than the comment, or the
/// auxiliary groups when both list some.
pub fn overrides(actual: &Entity, desired: &Entity) -> bool {
    let (now, wanted) = (&actual.attributes, &desired.attributes);
    let field_differs = Field::ALL.into_iter().any(|field| {
        field.conflict_label(actual.kind).is_some()
            && matches!((field.get(now), field.get(wanted)), (Some(now), Some(wanted)) if now != wanted)
    });
    let groups_differ = !now.groups.is_empty()
        && !wanted.groups.is_empty()
        && sorted_union(&now.groups, &[]) != sorted_union(&wanted.groups, &[]);
    field_differs || groups_differ
}

/// The left side of `holo diff`, as Holo 3 has it: the definition merged
/// into the provisioned image, or for an entity that was never provisioned
/// into the actual state (the definition wins; the groups of both are
/// joined, even with `skipBaseGroups`). The base image plays no part.
pub fn diff_desired(definition: &Definition, recorded_or_actual: Option<&Entity>) -> Entity {
    let mut entity = recorded_or_actual
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
    /// Getting there overrides someone: for a provisioned entity, the
    /// actual and the desired state say something differently (see
    /// [`overrides`]); for one never provisioned, the definition
    /// contradicts the base image.
    pub overrides: bool,
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
            overrides: false, ..
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
    /// It existed before and someone deleted it since: created again as
    /// the base image has it (useradd, groupadd).
    Recreate,
}

/// `base_is_empty`: the base image holds only the name (the entity did
/// not exist before Holo). An entity that existed before is changed back
/// even when it is as its base image already: Holo 3 then prints
/// `usermod NAME` (which the real tools are spared, see `plugin.rs`).
pub fn scrub_step(base_is_empty: bool, exists: bool) -> ScrubStep {
    match (exists, base_is_empty) {
        (false, true) => ScrubStep::Nothing,
        (false, false) => ScrubStep::Recreate,
        (true, true) => ScrubStep::Delete,
        (true, false) => ScrubStep::Restore,
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
        overrides: false,
        force: false,
    };

    #[test]
    fn step_as_desired_is_not_changed() {
        let facts = Facts {
            as_desired: true,
            overrides: true,
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
    fn step_overriding_is_modified_with_force() {
        let facts = Facts {
            overrides: true,
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
    fn step_overriding_needs_force() {
        let facts = Facts {
            overrides: true,
            provisioned: true,
            ..FACTS
        };
        assert_eq!(step(facts), Step::RequiresOverwrite);
    }

    #[test]
    fn scrub_of_created_entity_that_is_gone_does_nothing() {
        assert_eq!(scrub_step(true, false), ScrubStep::Nothing);
    }

    #[test]
    fn scrub_of_entity_that_existed_and_is_gone_recreates_it() {
        assert_eq!(scrub_step(false, false), ScrubStep::Recreate);
    }

    #[test]
    fn scrub_of_created_entity_deletes_it() {
        assert_eq!(scrub_step(true, true), ScrubStep::Delete);
    }

    #[test]
    fn scrub_of_entity_that_existed_restores_base() {
        assert_eq!(scrub_step(false, true), ScrubStep::Restore);
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
            shell: Some("/bin/zsh".into()),
            ..Attributes::default()
        });
        let result = desired(&wanted, &base, None, Some(&provisioned), false);
        assert!(!result.contradicts_base);
        let a = &result.entity.attributes;
        assert_eq!(a.number, Some(1001));
        assert_eq!(a.shell.as_deref(), Some("/bin/bash"));
        assert_eq!(a.groups, groups(&["network", "video"]));
    }

    #[test]
    fn desired_contradicts_base_except_in_the_comment() {
        let base = user(Attributes {
            number: Some(2003),
            comment: Some("X".into()),
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
        let result = desired(&wanted, &base, None, None, false);
        assert!(result.contradicts_base);
        assert_eq!(result.entity.attributes.groups, groups(&["network"]));
        let comment_only = definition(
            Attributes {
                comment: Some("Z".into()),
                ..Attributes::default()
            },
            false,
        );
        assert!(!desired(&comment_only, &base, None, None, false).contradicts_base);
    }

    #[test]
    fn desired_keeps_the_comment_there_over_the_provisioned_one() {
        let actual = user(Attributes {
            comment: Some("Y".into()),
            ..Attributes::default()
        });
        let provisioned = user(Attributes {
            comment: Some("X".into()),
            groups: groups(&["video"]),
            ..Attributes::default()
        });
        let nothing = definition(Attributes::default(), false);
        let base = user(Attributes::default());
        let result = desired(&nothing, &base, Some(&actual), Some(&provisioned), false);
        let a = &result.entity.attributes;
        assert_eq!(a.comment.as_deref(), Some("Y"));
        assert_eq!(a.groups, groups(&["video"]));
    }

    #[test]
    fn desired_with_force_takes_the_entity_as_it_is_before_the_image() {
        let actual = user(Attributes {
            shell: Some("/bin/sh".into()),
            ..Attributes::default()
        });
        let provisioned = user(Attributes {
            shell: Some("/bin/zsh".into()),
            number: Some(7),
            ..Attributes::default()
        });
        let nothing = definition(Attributes::default(), false);
        let base = user(Attributes::default());
        let shell = |force| {
            let result = desired(&nothing, &base, Some(&actual), Some(&provisioned), force);
            (
                result.entity.attributes.shell,
                result.entity.attributes.number,
            )
        };
        assert_eq!(shell(false), (Some("/bin/zsh".to_string()), Some(7)));
        assert_eq!(shell(true), (Some("/bin/sh".to_string()), Some(7)));
    }

    #[test]
    fn overrides_when_both_say_an_attribute_differently() {
        let now = user(Attributes {
            shell: Some("/bin/sh".into()),
            comment: Some("Y".into()),
            ..Attributes::default()
        });
        let wanted = user(Attributes {
            shell: Some("/bin/zsh".into()),
            comment: Some("X".into()),
            number: Some(1),
            ..Attributes::default()
        });
        assert!(overrides(&now, &wanted));
        let same_shell = user(Attributes {
            shell: Some("/bin/sh".into()),
            ..wanted.attributes.clone()
        });
        assert!(!overrides(&now, &same_shell));
    }

    #[test]
    fn overrides_groups_only_when_both_list_some() {
        let video = user(Attributes {
            groups: groups(&["video"]),
            ..Attributes::default()
        });
        let audio = user(Attributes {
            groups: groups(&["audio"]),
            ..Attributes::default()
        });
        let none = user(Attributes::default());
        assert!(overrides(&video, &audio));
        assert!(!overrides(&none, &audio));
        assert!(!overrides(&video, &none));
    }

    #[test]
    fn diff_joins_groups_even_when_skipping() {
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
        let left = diff_desired(&wanted, Some(&actual));
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
