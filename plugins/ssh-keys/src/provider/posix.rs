//! Home directories from the passwd database, and `~/.ssh/authorized_keys`
//! read and written through the SDK's root-confined access.

use std::io;
use std::path::{Path, PathBuf};

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};

/// A user's home directory (a system path) and, outside test mode, the
/// owner that `.ssh` and `authorized_keys` get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub dir: PathBuf,
    pub owner: Option<(u32, u32)>,
}

impl Home {
    /// `~/.ssh`, below the root.
    pub fn ssh_dir(&self, env: &Env) -> PathBuf {
        env.root_join(self.dir.join(".ssh"))
    }

    /// `~/.ssh/authorized_keys`, below the root.
    pub fn authorized_keys(&self, env: &Env) -> PathBuf {
        self.ssh_dir(env).join("authorized_keys")
    }
}

/// The home of `user`: outside test mode from the passwd database (NSS
/// included); in test mode from the root's `etc/passwd`, else `/home/USER`.
/// `None` when the user does not exist.
pub fn home_of(env: &Env, fs: &RootFs, user: &str) -> Result<Option<Home>> {
    if env.test_mode {
        let passwd = env.root_join("/etc/passwd");
        let text = match fs.read_to_string(&passwd) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(io_error("read", &passwd, &err)),
        };
        let dir = home_in_passwd(&text, user).unwrap_or_else(|| Path::new("/home").join(user));
        return Ok(Some(Home { dir, owner: None }));
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(found)) => Ok(Some(Home {
            dir: found.dir,
            owner: Some((found.uid.as_raw(), found.gid.as_raw())),
        })),
        Ok(None) => Ok(None),
        Err(err) => Err(Error::new(format!(
            "cannot look up user {user} in the passwd database: {err}"
        ))),
    }
}

/// The home field of `user`'s line in passwd(5) text.
fn home_in_passwd(text: &str, user: &str) -> Option<PathBuf> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[0] == user).then(|| PathBuf::from(fields[5]))
    })
}

/// The lines of `path`; none when it does not exist.
pub fn read_lines(fs: &RootFs, path: &Path) -> Result<Vec<String>> {
    refuse_symlink(fs, path)?;
    match fs.read_to_string(path) {
        Ok(text) => Ok(text.lines().map(str::to_string).collect()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(io_error("read", path, &err)),
    }
}

/// Writes `lines` to `authorized_keys` when they differ from `before`, and
/// gives `.ssh` mode 0700 and the file mode 0600 (and the user as owner
/// outside test mode) in any case, as sshd wants them.
pub fn write_authorized_keys(
    env: &Env,
    fs: &RootFs,
    home: &Home,
    before: &[String],
    lines: &[String],
) -> Result<()> {
    let home_dir = env.root_join(&home.dir);
    if !fs.is_dir(&home_dir) {
        return Err(Error::new(format!(
            "the home directory {} does not exist; create it (with the user's owner) first",
            home_dir.display()
        )));
    }
    let ssh_dir = home.ssh_dir(env);
    refuse_symlink(fs, &ssh_dir)?;
    fs.create_dir_all(&ssh_dir)
        .and_then(|()| fs.set_mode(&ssh_dir, 0o700))
        .map_err(|err| io_error("create", &ssh_dir, &err))?;
    if let Some((uid, gid)) = home.owner {
        fs.lchown(&ssh_dir, uid, gid)
            .map_err(|err| io_error("change the owner of", &ssh_dir, &err))?;
    }
    let path = home.authorized_keys(env);
    let exists = fs.symlink_metadata(&path).is_ok();
    if exists && before == lines {
        fs.set_mode(&path, 0o600)
            .map_err(|err| io_error("change the mode of", &path, &err))?;
        if let Some((uid, gid)) = home.owner {
            fs.lchown(&path, uid, gid)
                .map_err(|err| io_error("change the owner of", &path, &err))?;
        }
        return Ok(());
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    let options = WriteOptions {
        mode: Some(0o600),
        uid: home.owner.map(|(uid, _)| uid),
        gid: home.owner.map(|(_, gid)| gid),
    };
    atomic::write(fs, &path, text.as_bytes(), &options)
}

/// `.ssh` and `authorized_keys` are written as root in a user's home: a
/// symlink there could point anywhere, so it is refused.
fn refuse_symlink(fs: &RootFs, path: &Path) -> Result<()> {
    match fs.symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::new(format!(
            "{} is a symlink; holo-ssh-keys writes only real files and directories there, replace it with one",
            path.display()
        ))),
        _ => Ok(()),
    }
}

fn io_error(what: &str, path: &Path, err: &io::Error) -> Error {
    Error::new(format!("cannot {what} {}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_comes_from_the_users_passwd_line() {
        let text = "root:x:0:0:root:/root:/bin/sh\nann:x:1000:1000::/srv/ann:/bin/sh\n";
        assert_eq!(home_in_passwd(text, "ann"), Some(PathBuf::from("/srv/ann")));
        assert_eq!(home_in_passwd(text, "bob"), None);
    }
}
