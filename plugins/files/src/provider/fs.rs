//! Files and symlinks as buffers: read from, compared with and written to
//! the filesystem below the root, every write atomic (a temp file beside
//! the target, renamed over it).
//!
//! In a batch, file writes are staged and committed together
//! ([`holo_plugin::atomic`]). What must not overtake them (a symlink, a
//! removal, a rename, reading through a link another target may be) first
//! puts the staged writes in place ([`settle`]).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result};

use crate::apply::Presence;

/// The content of a target, a base or a repository entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Buffer {
    /// A regular file, with the permissions and owner it passes on.
    File {
        content: Vec<u8>,
        mode: u32,
        uid: u32,
        gid: u32,
    },
    /// A symlink and what it points to.
    Symlink { link: PathBuf, uid: u32, gid: u32 },
}

impl Buffer {
    /// Same type and same content (or link); permissions do not count.
    pub fn same_content(&self, other: &Buffer) -> bool {
        match (self, other) {
            (Buffer::File { content: a, .. }, Buffer::File { content: b, .. }) => a == b,
            (Buffer::Symlink { link: a, .. }, Buffer::Symlink { link: b, .. }) => a == b,
            _ => false,
        }
    }

    /// The permission bits a file made from this buffer gets (a symlink's
    /// are 0777), and its owner.
    pub fn mode_and_owner(&self) -> (u32, u32, u32) {
        match self {
            Buffer::File { mode, uid, gid, .. } => (*mode, *uid, *gid),
            Buffer::Symlink { uid, gid, .. } => (0o777, *uid, *gid),
        }
    }
}

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Missing,
    Buffer(Buffer),
    /// A directory or a special file.
    NotManageable,
}

impl Found {
    pub fn presence(&self) -> Presence {
        match self {
            Found::Missing => Presence::Missing,
            Found::Buffer(_) => Presence::Manageable,
            Found::NotManageable => Presence::NotManageable,
        }
    }

    pub fn buffer(&self) -> Option<&Buffer> {
        match self {
            Found::Buffer(buffer) => Some(buffer),
            _ => None,
        }
    }
}

/// An I/O error in Go's words, as Holo 3 prints it: `stat PATH: no such
/// file or directory`.
pub fn go_error(operation: &str, path: &Path, err: &std::io::Error) -> Error {
    let text = match err.raw_os_error() {
        Some(code) => {
            let text = std::io::Error::from_raw_os_error(code).to_string();
            let text = text
                .split(" (os error")
                .next()
                .unwrap_or_default()
                .to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
        None => err.to_string(),
    };
    Error::new(format!("{operation} {}: {text}", crate::model::shown(path)))
}

/// Reads what is at `path` without following a final symlink.
pub fn read(fs: &RootFs, path: &Path) -> Result<Found> {
    let meta = match fs.symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => return Ok(Found::Missing),
        Err(err) => return Err(Error::io("inspect", path, &err)),
    };
    let (uid, gid) = (meta.uid(), meta.gid());
    if meta.file_type().is_symlink() {
        let link = fs
            .read_link(path)
            .map_err(|err| Error::io("read the link", path, &err))?;
        return Ok(Found::Buffer(Buffer::Symlink { link, uid, gid }));
    }
    if !meta.is_file() {
        return Ok(Found::NotManageable);
    }
    let content = fs.read(path).map_err(|err| Error::io("read", path, &err))?;
    Ok(Found::Buffer(Buffer::File {
        content,
        mode: meta.permissions().mode() & 0o7777,
        uid,
        gid,
    }))
}

/// The content a holoscript or patch gets for `buffer`: a symlink is
/// followed (a relative one from `target_dir`, the target's directory
/// below the root), and the file it points to passes on its permissions.
pub fn contents(fs: &RootFs, buffer: &Buffer, root: &Path, target_dir: &Path) -> Result<Buffer> {
    let Buffer::Symlink { link, .. } = buffer else {
        return Ok(buffer.clone());
    };
    // The link may point to a target written earlier in this batch.
    atomic::commit_staged();
    let pointed = if link.is_absolute() {
        below_root(root, link)
    } else {
        below_root(root, &target_dir.join(link))
    };
    let meta = fs
        .metadata(&pointed)
        .map_err(|err| go_error("stat", &pointed, &err))?;
    let content = fs
        .read(&pointed)
        .map_err(|err| go_error("read", &pointed, &err))?;
    Ok(Buffer::File {
        content,
        mode: meta.permissions().mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

/// `path` (absolute in the system) below `root`.
pub fn below_root(root: &Path, path: &Path) -> PathBuf {
    let relative = path.strip_prefix("/").unwrap_or(path);
    root.join(relative)
}

/// Writes `buffer` at `path`, replacing a file or symlink there, with the
/// buffer's permissions less the umask (as Holo 3 writes them) and, as
/// root, its owner. Missing parent directories are created.
pub fn write(fs: &RootFs, path: &Path, buffer: &Buffer) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs.create_dir_all(parent)
            .map_err(|err| Error::io("create directory", parent, &err))?;
    }
    let (mode, uid, gid) = buffer.mode_and_owner();
    let mode = mode & !umask();
    let as_root = nix::unistd::geteuid().is_root();
    let options = WriteOptions {
        mode: Some(mode),
        uid: as_root.then_some(uid),
        gid: as_root.then_some(gid),
    };
    match buffer {
        Buffer::File { content, .. } => atomic::write(fs, path, content, &options),
        Buffer::Symlink { link, .. } => {
            // Links are not staged: what was staged before goes first.
            settle(path)?;
            atomic::symlink(fs, path, link, &options)
        }
    }
}

/// Puts the staged writes in place before a step that must come after
/// them; fails when one of this target's writes did not make it (its
/// error is reported with the entity).
pub fn settle(path: &Path) -> Result<()> {
    atomic::commit_staged();
    if atomic::staging_failed() {
        return Err(Error::new(format!(
            "left {} as it was: an earlier write for this target failed",
            crate::model::shown(path)
        )));
    }
    Ok(())
}

/// Removes the file or symlink at `path`, after the staged writes; one
/// that is gone already is fine.
pub fn remove(fs: &RootFs, path: &Path) -> Result<()> {
    settle(path)?;
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io("remove", path, &err)),
    }
}

/// Renames `from` to `to` in the same directory, in one step, after the
/// staged writes: `from` is gone exactly when `to` has its content.
pub fn rename_beside(fs: &RootFs, from: &Path, to: &Path) -> Result<()> {
    settle(to)?;
    let (dir, from_name) = fs
        .open_parent(from)
        .map_err(|err| Error::io("open the directory of", from, &err))?;
    let to_name = to
        .file_name()
        .ok_or_else(|| Error::new(format!("cannot rename to {}: no file name", to.display())))?;
    rustix::fs::renameat(&dir, from_name.as_os_str(), &dir, to_name)
        .map_err(|err| Error::io(&format!("rename {} to", from.display()), to, &err.into()))?;
    dir.sync_all()
        .map_err(|err| Error::io("sync the directory of", to, &err))
}

/// The process's umask (files made from a symlink's 0777 get 0755 under
/// the usual 022, as under Holo 3).
fn umask() -> u32 {
    static UMASK: OnceLock<u32> = OnceLock::new();
    *UMASK.get_or_init(|| {
        use nix::sys::stat::{Mode, umask};
        let old = umask(Mode::from_bits_truncate(0o022));
        umask(old);
        old.bits()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: &str, mode: u32) -> Buffer {
        Buffer::File {
            content: content.as_bytes().to_vec(),
            mode,
            uid: 0,
            gid: 0,
        }
    }

    #[test]
    fn content_compares_but_permissions_do_not() {
        assert!(file("a", 0o644).same_content(&file("a", 0o600)));
        assert!(!file("a", 0o644).same_content(&file("b", 0o644)));
        let link = Buffer::Symlink {
            link: PathBuf::from("a"),
            uid: 0,
            gid: 0,
        };
        assert!(!file("a", 0o644).same_content(&link));
    }

    #[test]
    fn files_and_links_are_written_read_and_followed() {
        let root = tempfile::tempdir().unwrap();
        let fs = RootFs::contained_in(root.path()).unwrap();
        let target = root.path().join("etc/a.conf");
        write(&fs, &target, &file("aaa\n", 0o640)).unwrap();
        let Found::Buffer(read_back) = read(&fs, &target).unwrap() else {
            panic!("not written")
        };
        assert!(read_back.same_content(&file("aaa\n", 0)));
        assert_eq!(read_back.mode_and_owner().0, 0o640);
        let link = root.path().join("etc/b.conf");
        let symlink = Buffer::Symlink {
            link: PathBuf::from("a.conf"),
            uid: 0,
            gid: 0,
        };
        write(&fs, &link, &symlink).unwrap();
        let followed = contents(&fs, &symlink, root.path(), Path::new("/etc")).unwrap();
        assert!(followed.same_content(&file("aaa\n", 0)));
        assert_eq!(
            read(&fs, &root.path().join("nope")).unwrap(),
            Found::Missing
        );
        assert_eq!(
            read(&fs, &root.path().join("etc")).unwrap(),
            Found::NotManageable
        );
    }
}
