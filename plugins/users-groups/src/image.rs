//! The base and provisioned images, `$HOLO_STATE_DIR/base/ID.toml` and
//! `$HOLO_STATE_DIR/provisioned/ID.toml`, byte for byte as Holo 3 writes
//! them (so that either program reads what the other wrote), and the
//! migration from the `state.toml` of holo-users-groups 1.2 and 1.3.

use std::path::{Path, PathBuf};

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};
use toml::de::{DeTable, DeValue};

use crate::model::{Entity, Field, Kind, Value};

/// Which of the two images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// The entity before Holo first applied it.
    Base,
    /// The entity as Holo last applied it.
    Provisioned,
}

impl Image {
    fn dir(self) -> &'static str {
        match self {
            Image::Base => "base",
            Image::Provisioned => "provisioned",
        }
    }

    pub fn path(self, env: &Env, id: &str) -> PathBuf {
        env.state_dir.join(self.dir()).join(format!("{id}.toml"))
    }

    /// Reads the image of `id`; `None` when there is none.
    pub fn read(self, env: &Env, id: &str) -> Result<Option<Entity>> {
        let path = self.path(env, id);
        let text = match env.root_fs()?.read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Error::io("read", &path, &err)),
        };
        parse(&text, &path).map(Some)
    }

    pub fn write(self, env: &Env, entity: &Entity) -> Result<()> {
        let fs = env.root_fs()?;
        let dir = env.state_dir.join(self.dir());
        fs.create_dir_all(&dir)
            .map_err(|err| Error::io("create directory", &dir, &err))?;
        let path = dir.join(format!("{}.toml", entity.id()));
        atomic::write(
            &fs,
            &path,
            serialize(entity).as_bytes(),
            &WriteOptions::mode(0o644),
        )
    }

    pub fn remove(self, env: &Env, id: &str) -> Result<()> {
        let path = self.path(env, id);
        match env.root_fs()?.remove_file(&path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", &path, &err))
            }
            _ => Ok(()),
        }
    }

    /// The ids that have an image of this kind.
    pub fn ids(self, env: &Env) -> Result<Vec<String>> {
        let dir = env.state_dir.join(self.dir());
        let names = match env.root_fs()?.read_dir_names(&dir) {
            Ok(names) => names,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(Error::io("read directory", &dir, &err)),
        };
        Ok(names
            .iter()
            .filter_map(|name| name.to_str()?.strip_suffix(".toml").map(str::to_string))
            .filter(|id| Kind::parse_id(id).is_some())
            .collect())
    }
}

/// An image as Holo 3 writes it: the table, then `name`, then the
/// attributes that are set, in a fixed order.
pub fn serialize(entity: &Entity) -> String {
    let a = &entity.attributes;
    let mut text = format!(
        "[[{}]]\nname = {}\n",
        entity.kind.table(),
        quoted(&entity.name)
    );
    if entity.kind == Kind::Group {
        if let Some(gid) = a.number {
            text.push_str(&format!("gid = {gid}\n"));
        }
        return text;
    }
    push_text(&mut text, "comment", &a.comment);
    if let Some(uid) = a.number {
        text.push_str(&format!("uid = {uid}\n"));
    }
    push_text(&mut text, "home", &a.home);
    push_text(&mut text, "group", &a.group);
    if !a.groups.is_empty() {
        let list: Vec<String> = a.groups.iter().map(|group| quoted(group)).collect();
        text.push_str(&format!("groups = [{}]\n", list.join(", ")));
    }
    push_text(&mut text, "shell", &a.shell);
    text
}

fn push_text(text: &mut String, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        text.push_str(&format!("{key} = {}\n", quoted(value)));
    }
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads an image; every problem names the file and line.
pub fn parse(text: &str, path: &Path) -> Result<Entity> {
    let line_of = |offset: usize| text.get(..offset).unwrap_or(text).matches('\n').count() + 1;
    let fail = |offset: usize, message: String| {
        Error::new(format!(
            "{}:{}: {message}; fix the image or remove it (Holo then records the entity's state anew)",
            path.display(),
            line_of(offset)
        ))
    };
    let document = DeTable::parse(text).map_err(|err| {
        fail(
            err.span().map_or(0, |span| span.start),
            err.message().trim().to_string(),
        )
    })?;
    let mut tables = Vec::new();
    for (key, value) in document.get_ref() {
        let kind = match key.get_ref().as_ref() {
            "group" => Kind::Group,
            "user" => Kind::User,
            other => return Err(fail(key.span().start, format!("unknown table {other:?}"))),
        };
        for item in value.get_ref().as_array().into_iter().flatten() {
            tables.push((kind, item));
        }
    }
    let [(kind, item)] = tables[..] else {
        return Err(fail(
            0,
            "an image holds one [[group]] or [[user]] table".into(),
        ));
    };
    let Some(table) = item.get_ref().as_table() else {
        return Err(fail(item.span().start, "not a table".into()));
    };
    let mut entity = Entity::named(kind, "");
    for (key, value) in table {
        set(&mut entity, key.get_ref(), value.get_ref())
            .map_err(|message| fail(key.span().start, message))?;
    }
    if entity.name.is_empty() {
        return Err(fail(item.span().start, "the table has no name".into()));
    }
    Ok(entity)
}

fn set(entity: &mut Entity, key: &str, value: &DeValue<'_>) -> std::result::Result<(), String> {
    let text = || {
        value
            .as_str()
            .map(|text| Value::Text(text.to_string()))
            .ok_or_else(|| format!("{key} must be a string"))
    };
    let field = match (entity.kind, key) {
        (_, "name") => {
            entity.name = value.as_str().ok_or("name must be a string")?.to_string();
            return Ok(());
        }
        (Kind::User, "groups") => {
            let items = value.as_array().ok_or("groups must be a list of strings")?;
            let groups: Option<Vec<String>> = items
                .iter()
                .map(|item| item.get_ref().as_str().map(str::to_string))
                .collect();
            entity.attributes.groups = groups.ok_or("groups must be a list of strings")?;
            return Ok(());
        }
        (Kind::Group, "gid") | (Kind::User, "uid") => {
            let number = value
                .as_integer()
                .and_then(|integer| u32::from_str_radix(integer.as_str(), integer.radix()).ok())
                .ok_or_else(|| format!("{key} must be a number"))?;
            entity.attributes.number = Some(number);
            return Ok(());
        }
        (Kind::User, "comment") => Field::Comment,
        (Kind::User, "home") => Field::Home,
        (Kind::User, "group") => Field::Group,
        (Kind::User, "shell") => Field::Shell,
        _ => return Err(format!("unknown attribute {key:?}")),
    };
    field.set(&mut entity.attributes, Some(text()?));
    Ok(())
}

/// The `state.toml` of holo-users-groups 1.2 and 1.3, which listed the
/// entities it had provisioned.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct OldState {
    #[serde(default)]
    provisioned_groups: Vec<String>,
    #[serde(default)]
    provisioned_users: Vec<String>,
}

/// Migrates `state.toml` as Holo 3 does, with its messages on stderr: an
/// empty base image for every entity it lists that has none, then the file
/// goes.
pub fn migrate_old_state(env: &Env) -> Result<()> {
    let path = env.state_dir.join("state.toml");
    let fs = env.root_fs()?;
    let text = match fs.read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io("read", &path, &err)),
    };
    let old: OldState = toml::from_str(&text).map_err(|err| {
        Error::new(format!(
            "{}: {}; it should list ProvisionedGroups and ProvisionedUsers (fix or remove it)",
            path.display(),
            err.message()
        ))
    })?;
    eprintln!(">> Migrating {}...", path.display());
    eprintln!("!! This might require manual intervention! Please find instructions at:");
    eprintln!("!!   <https://github.com/holocm/holo-users-groups/wiki/Migrating-to-v2.0>");
    let groups = old
        .provisioned_groups
        .iter()
        .map(|name| (Kind::Group, name));
    let users = old.provisioned_users.iter().map(|name| (Kind::User, name));
    for (kind, name) in groups.chain(users) {
        let entity = Entity::named(kind, name);
        let id = entity.id();
        if Image::Base.read(env, &id)?.is_some() {
            eprintln!(">> Skipping {id} (found existing base image)");
        } else {
            eprintln!(">> Writing empty base image for {id}");
            Image::Base.write(env, &entity)?;
        }
    }
    eprintln!(">> All entities migrated. Removing {}...", path.display());
    remove(&fs, &path)
}

fn remove(fs: &RootFs, path: &Path) -> Result<()> {
    fs.remove_file(path)
        .map_err(|err| Error::io("remove", path, &err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_read_back_and_write_as_holo3() {
        let text = "[[user]]\nname = \"new\"\ncomment = \"New \\\"User\\\"\"\nuid = 1001\nhome = \"/home/new\"\ngroup = \"users\"\ngroups = [\"audio\", \"video\"]\nshell = \"/bin/zsh\"\n";
        let entity = parse(text, Path::new("x.toml")).unwrap();
        assert_eq!(entity.attributes.number, Some(1001));
        assert_eq!(serialize(&entity), text);
        let group = "[[group]]\nname = \"g\"\ngid = 42\n";
        assert_eq!(
            serialize(&parse(group, Path::new("g.toml")).unwrap()),
            group
        );
    }

    #[test]
    fn images_written_by_hand_are_read_in_any_order() {
        let text = "[[user]]\nname  = \"modified\"\nuid   = 1001\ngroup = \"users\"\nshell = \"/bin/bash\"\n";
        let entity = parse(text, Path::new("m.toml")).unwrap();
        assert_eq!(entity.attributes.group.as_deref(), Some("users"));
    }

    #[test]
    fn bad_images_name_file_and_line() {
        let err = parse("[[user]]\nname = \"u\"\nuid = \"x\"\n", Path::new("b.toml")).unwrap_err();
        assert!(
            err.message().starts_with("b.toml:3: uid must be a number"),
            "{err}"
        );
        let err = parse(
            "[[user]]\nname = \"u\"\n[[user]]\nname = \"v\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err();
        assert!(err.message().contains("one [[group]] or [[user]] table"));
    }
}
