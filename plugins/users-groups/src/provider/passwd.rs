//! The actual state: `/etc/passwd` and `/etc/group` of the root, read as
//! the shadow tools leave them.

use holo_plugin::{Env, Error, Result};

use crate::model::{Attributes, Entity, Kind};

/// The two account databases.
#[derive(Debug, Default)]
pub struct Accounts {
    users: Vec<Vec<String>>,
    groups: Vec<Vec<String>>,
}

/// Reads `etc/passwd` and `etc/group` below the root (a missing file is an
/// empty database, as in a test root that has no users).
pub fn read(env: &Env) -> Result<Accounts> {
    let fs = env.root_fs()?;
    let lines = |path: &str, fields: usize| -> Result<Vec<Vec<String>>> {
        let path = env.root_join(path);
        let text = match fs.read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(Error::io("read", &path, &err)),
        };
        Ok(parse(&text, fields))
    };
    Ok(Accounts {
        users: lines("/etc/passwd", 7)?,
        groups: lines("/etc/group", 4)?,
    })
}

/// The lines with exactly `fields` colon-separated fields (others, such as
/// NIS `+` lines, are not accounts of their own).
fn parse(text: &str, fields: usize) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| line.split(':').map(str::to_string).collect::<Vec<_>>())
        .filter(|parts| {
            parts.len() == fields && !parts[0].is_empty() && !parts[0].starts_with(['+', '-'])
        })
        .collect()
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_string())
}

impl Accounts {
    /// The entity as the databases show it; `None` when it does not exist.
    pub fn actual(&self, kind: Kind, name: &str) -> Option<Entity> {
        let attributes = match kind {
            Kind::Group => {
                let line = self.groups.iter().find(|line| line[0] == name)?;
                Attributes {
                    number: line[2].parse().ok(),
                    ..Attributes::default()
                }
            }
            Kind::User => self.user(name)?,
        };
        Some(Entity {
            kind,
            name: name.to_string(),
            attributes,
        })
    }

    fn user(&self, name: &str) -> Option<Attributes> {
        let line = self.users.iter().find(|line| line[0] == name)?;
        let gid = &line[3];
        let group = self
            .groups
            .iter()
            .find(|group| &group[2] == gid)
            .map_or_else(|| gid.clone(), |group| group[0].clone());
        let mut groups: Vec<String> = self
            .groups
            .iter()
            .filter(|group| group[3].split(',').any(|member| member == name))
            .map(|group| group[0].clone())
            .collect();
        groups.sort();
        groups.dedup();
        Some(Attributes {
            number: line[2].parse().ok(),
            comment: non_empty(&line[4]),
            home: non_empty(&line[5]),
            group: non_empty(&group),
            groups,
            shell: non_empty(&line[6]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> Accounts {
        Accounts {
            users: parse(
                "root:x:0:0:root:/root:/bin/bash\nfoo:x:1001:100::/home/foo:/bin/zsh\nbar:x:1002:555::/:\n+::::::\n",
                7,
            ),
            groups: parse(
                "root:x:0:root\nusers:x:100:\nadm:x:4:root,foo\nsys:x:3:foo\n",
                4,
            ),
        }
    }

    #[test]
    fn users_read_with_login_group_name_and_sorted_groups() {
        let foo = accounts().actual(Kind::User, "foo").unwrap();
        assert_eq!(foo.attributes.number, Some(1001));
        assert_eq!(foo.attributes.comment, None);
        assert_eq!(foo.attributes.group.as_deref(), Some("users"));
        assert_eq!(foo.attributes.groups, ["adm", "sys"]);
        let bar = accounts().actual(Kind::User, "bar").unwrap();
        assert_eq!(bar.attributes.group.as_deref(), Some("555"));
        assert_eq!(bar.attributes.shell, None);
    }

    #[test]
    fn groups_read_with_gid_and_missing_ones_are_none() {
        let adm = accounts().actual(Kind::Group, "adm").unwrap();
        assert_eq!(adm.attributes.number, Some(4));
        assert!(accounts().actual(Kind::Group, "nope").is_none());
        assert!(accounts().actual(Kind::User, "+").is_none());
    }
}
