//! Command lines of the shadow tools, in the order of Holo 3's.

use crate::apply::Change;
use crate::model::{Entity, Field, Kind};

/// `useradd` or `groupadd` for a new entity with the desired attributes.
pub fn create(desired: &Entity, system: bool) -> Vec<String> {
    let a = &desired.attributes;
    let mut argv = vec![match desired.kind {
        Kind::Group => "groupadd".to_string(),
        Kind::User => "useradd".to_string(),
    }];
    if system {
        argv.push("--system".into());
    }
    for field in Field::ALL {
        if let Some(value) = field.get(a) {
            argv.push(create_flag(desired.kind, field).into());
            argv.push(value.to_string());
        }
        if field == Field::Group && !a.groups.is_empty() {
            argv.push("--groups".into());
            argv.push(a.groups.join(","));
        }
    }
    argv.push(desired.name.clone());
    argv
}

fn create_flag(kind: Kind, field: Field) -> &'static str {
    match (kind, field) {
        (Kind::Group, _) => "--gid",
        (Kind::User, Field::Number) => "--uid",
        (Kind::User, Field::Comment) => "--comment",
        (Kind::User, Field::Home) => "--home-dir",
        (Kind::User, Field::Group) => "--gid",
        (Kind::User, Field::Shell) => "--shell",
    }
}

/// `usermod` or `groupmod` with the changes.
pub fn modify(entity: &Entity, changes: &[Change]) -> Vec<String> {
    let mut argv = vec![match entity.kind {
        Kind::Group => "groupmod".to_string(),
        Kind::User => "usermod".to_string(),
    }];
    for change in changes {
        match change {
            Change::Field(field, value) => {
                let flag = match (entity.kind, field) {
                    (Kind::User, Field::Home) => "--home",
                    (kind, field) => create_flag(kind, *field),
                };
                argv.push(flag.into());
                argv.push(value.to_string());
            }
            Change::Groups(groups) => {
                argv.push("--groups".into());
                argv.push(groups.join(","));
            }
        }
    }
    argv.push(entity.name.clone());
    argv
}

/// `userdel` or `groupdel`.
pub fn delete(entity: &Entity) -> Vec<String> {
    let program = match entity.kind {
        Kind::Group => "groupdel",
        Kind::User => "userdel",
    };
    vec![program.to_string(), entity.name.clone()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Attributes, Value};
    use holo_plugin::command::command_line;

    fn user(attributes: Attributes) -> Entity {
        Entity {
            kind: Kind::User,
            name: "new".into(),
            attributes,
        }
    }

    #[test]
    fn useradd_gets_holo3s_flags_in_holo3s_order() {
        let desired = user(Attributes {
            number: Some(1001),
            comment: Some("New User".into()),
            home: Some("/home/new".into()),
            group: Some("users".into()),
            groups: vec!["audio".into(), "video".into()],
            shell: Some("/bin/zsh".into()),
        });
        assert_eq!(
            command_line(&create(&desired, true)),
            "useradd --system --uid 1001 --comment 'New User' --home-dir /home/new --gid users --groups audio,video --shell /bin/zsh new"
        );
    }

    #[test]
    fn groupadd_and_groupdel() {
        let group = Entity {
            kind: Kind::Group,
            name: "g".into(),
            attributes: Attributes {
                number: Some(42),
                ..Attributes::default()
            },
        };
        assert_eq!(command_line(&create(&group, false)), "groupadd --gid 42 g");
        assert_eq!(command_line(&delete(&group)), "groupdel g");
    }

    #[test]
    fn usermod_names_home_with_home_and_empty_groups_with_quotes() {
        let changes = [
            Change::Field(Field::Home, Value::Text("/h".into())),
            Change::Groups(Vec::new()),
        ];
        assert_eq!(
            command_line(&modify(&user(Attributes::default()), &changes)),
            "usermod --home /h --groups '' new"
        );
    }
}
