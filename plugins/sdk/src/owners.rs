//! Owner and group lookup at apply time (a package earlier in the same run
//! may have created the user). Names or numeric ids are accepted. In test
//! mode the names come from `$HOLO_ROOT_DIR/etc/passwd` and `etc/group`
//! (resolved inside the root), otherwise from the system.

use std::path::Path;

use crate::env::Env;
use crate::error::{Error, Result};

/// Resolves a user name or numeric uid.
pub fn uid(env: &Env, user: &str) -> Result<u32> {
    if let Ok(id) = user.parse() {
        return Ok(id);
    }
    if env.test_mode {
        return lookup_file(env, &env.root_join("/etc/passwd"), user, "user");
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(found)) => Ok(found.uid.as_raw()),
        Ok(None) => Err(not_found("user", user, "the system user database")),
        Err(err) => Err(Error::new(format!("cannot look up user {user}: {err}"))),
    }
}

/// Resolves a group name or numeric gid.
pub fn gid(env: &Env, group: &str) -> Result<u32> {
    if let Ok(id) = group.parse() {
        return Ok(id);
    }
    if env.test_mode {
        return lookup_file(env, &env.root_join("/etc/group"), group, "group");
    }
    match nix::unistd::Group::from_name(group) {
        Ok(Some(found)) => Ok(found.gid.as_raw()),
        Ok(None) => Err(not_found("group", group, "the system group database")),
        Err(err) => Err(Error::new(format!("cannot look up group {group}: {err}"))),
    }
}

fn not_found(kind: &str, name: &str, place: &str) -> Error {
    Error::new(format!(
        "{kind} {name} not found in {place}; the {kind} must exist when this entity is applied: \
         a package (its maintainer scripts) or another plugin must create it earlier in the run \
         (make this entity require that one), or use a numeric id"
    ))
}

/// The name of user `uid`, for messages; `None` when it has none.
pub fn user_name(env: &Env, uid: u32) -> Option<String> {
    if env.test_mode {
        return name_in_file(env, &env.root_join("/etc/passwd"), uid);
    }
    let found = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid));
    found.ok().flatten().map(|user| user.name)
}

/// The name of group `gid`, for messages; `None` when it has none.
pub fn group_name(env: &Env, gid: u32) -> Option<String> {
    if env.test_mode {
        return name_in_file(env, &env.root_join("/etc/group"), gid);
    }
    let found = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid));
    found.ok().flatten().map(|group| group.name)
}

/// The first name with id `id` in a passwd/group style file.
fn name_in_file(env: &Env, path: &Path, id: u32) -> Option<String> {
    let text = env.root_fs().ok()?.read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let found: u32 = fields.nth(1)?.trim().parse().ok()?;
        (found == id && !name.is_empty()).then(|| name.to_string())
    })
}

/// Finds `name` in a passwd/group style file (`name:x:id:...`).
fn lookup_file(env: &Env, path: &Path, name: &str, kind: &str) -> Result<u32> {
    let text = match env.root_fs()?.read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(Error::io("read", path, &err)),
    };
    for (index, line) in text.lines().enumerate() {
        let mut fields = line.split(':');
        if fields.next() != Some(name) {
            continue;
        }
        return fields
            .nth(1)
            .and_then(|id| id.trim().parse().ok())
            .ok_or_else(|| {
                Error::new(format!(
                    "{}:{}: the {kind} entry for {name} has no numeric id in its third field; fix the entry",
                    path.display(),
                    index + 1
                ))
            });
    }
    Err(not_found(kind, name, &path.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_env(root: &Path) -> Env {
        let root = root.to_path_buf();
        Env::from_lookup("demo", |key| match key {
            "HOLO_ROOT_DIR" => Some(root.clone().into()),
            "HOLO_CACHE_DIR" => Some("/nonexistent-cache".into()),
            _ => None,
        })
        .expect("env")
    }

    #[test]
    fn test_mode_reads_the_root_databases() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("etc")).expect("mkdir");
        std::fs::write(
            dir.path().join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\nwww-data:x:33:33::/var/www:/bin/false\nbroken:x:nope:1\n",
        )
        .expect("passwd");
        std::fs::write(dir.path().join("etc/group"), "root:x:0:\nadm:x:4:alice\n").expect("group");
        let env = test_env(dir.path());
        assert_eq!(uid(&env, "www-data").expect("user"), 33);
        assert_eq!(uid(&env, "1234").expect("numeric"), 1234);
        assert_eq!(gid(&env, "adm").expect("group"), 4);
        let err = uid(&env, "nobody-here").expect_err("missing");
        assert!(err.message().contains("etc/passwd"), "{err}");
        assert!(err.message().contains("earlier in the run"), "{err}");
        assert_eq!(user_name(&env, 33).as_deref(), Some("www-data"));
        assert_eq!(group_name(&env, 4).as_deref(), Some("adm"));
        assert_eq!(user_name(&env, 4242), None);
        let err = uid(&env, "broken").expect_err("malformed");
        assert!(err.message().contains("passwd:3:"), "{err}");
    }

    #[test]
    fn system_lookup_finds_root() {
        let env = Env::from_lookup("demo", |key| {
            (key == "HOLO_CACHE_DIR").then(|| "/nonexistent-cache".into())
        })
        .expect("env");
        assert_eq!(uid(&env, "root").expect("root"), 0);
        assert_eq!(gid(&env, "root").expect("root"), 0);
        assert_eq!(user_name(&env, 0).as_deref(), Some("root"));
        assert_eq!(group_name(&env, 0).as_deref(), Some("root"));
    }
}
