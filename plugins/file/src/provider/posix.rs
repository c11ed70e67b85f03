//! The Posix provider: Status, Store, CreateDirectory and Remove on the real
//! filesystem (below `HOLO_ROOT_DIR` in test mode), plus keeping a copy of
//! the original file that the plugin first replaced. Every access goes
//! through [`RootFs`], so in test mode nothing resolves outside the root.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use holo_plugin::atomic::{self, Staged, WriteOptions};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::apply::{Kind, Observed};

/// Status: what is at `path`, without following a final symlink. The
/// entry is looked at relative to its directory, which a batch resolves
/// once for all the files in it (see [`RootFs::at_parent`]).
pub fn status(fs: &RootFs, path: &Path) -> Result<Observed> {
    if path.file_name().is_none() {
        return status_by_path(fs, path);
    }
    let looked = fs.at_parent(path, |dir, name| {
        let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(Ok(Observed::absent())),
            Err(err) => return Err(err.into()),
        };
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        };
        let target = match kind {
            Kind::Link => match rustix::fs::readlinkat(dir, name, Vec::new()) {
                Ok(target) => Some(PathBuf::from(OsString::from_vec(target.into_bytes()))),
                Err(err) => return Ok(Err(Error::io("read the link", path, &err.into()))),
            },
            _ => None,
        };
        let checksum = match kind {
            Kind::File => {
                let opened = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                    Mode::empty(),
                );
                match opened
                    .and_then(|fd| checksum_of_open_file(&fd, stat.st_size))
                    .map_err(std::io::Error::from)
                {
                    Ok(checksum) => Some(checksum),
                    Err(err) => return Ok(Err(Error::io("read", path, &err))),
                }
            }
            _ => None,
        };
        Ok(Ok(Observed {
            kind,
            checksum,
            uid: stat.st_uid,
            gid: stat.st_gid,
            mode: stat.st_mode & 0o7777,
            target,
        }))
    });
    match looked {
        Ok(observed) => observed,
        // No parent directory: nothing is there.
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(Observed::absent()),
        Err(err) => Err(Error::io("inspect", path, &err)),
    }
}

/// The checksum of an open regular file that `stat` found `size` bytes
/// long. A read that comes back short of the buffer with exactly that many
/// bytes in all is at the end, so most files take one read, not a second
/// one to see 0. A file that grew keeps being read until a read gives 0.
fn checksum_of_open_file(fd: &std::os::fd::OwnedFd, size: i64) -> rustix::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = [0u8; 16 * 1024];
    let mut total: u64 = 0;
    loop {
        let read = match rustix::io::read(fd, &mut buffer) {
            Ok(read) => read,
            Err(Errno::INTR) => continue,
            Err(err) => return Err(err),
        };
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        total += read as u64;
        if read < buffer.len() && i64::try_from(total) == Ok(size) {
            break;
        }
    }
    Ok(format_digest(hasher.finalize().as_slice()))
}

/// [`status`] of a path without a final name (`/`), by the path itself.
fn status_by_path(fs: &RootFs, path: &Path) -> Result<Observed> {
    let meta = match fs.symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Observed::absent()),
        Err(err) => return Err(Error::io("inspect", path, &err)),
    };
    let kind = if meta.is_file() {
        Kind::File
    } else if meta.is_dir() {
        Kind::Directory
    } else if meta.is_symlink() {
        Kind::Link
    } else {
        Kind::Other
    };
    let target = match kind {
        Kind::Link => Some(
            fs.read_link(path)
                .map_err(|err| Error::io("read the link", path, &err))?,
        ),
        _ => None,
    };
    let checksum = match kind {
        Kind::File => Some(checksum_file(fs, path)?),
        _ => None,
    };
    Ok(Observed {
        kind,
        checksum,
        uid: meta.uid(),
        gid: meta.gid(),
        mode: meta.mode() & 0o7777,
        target,
    })
}

/// `sha256:HEX` of some bytes.
pub fn checksum_bytes(bytes: &[u8]) -> String {
    format_digest(Sha256::digest(bytes).as_slice())
}

/// `sha256:HEX` of a file's content, read in chunks.
pub fn checksum_file(fs: &RootFs, path: &Path) -> Result<String> {
    let mut file = fs.open(path).map_err(|err| Error::io("read", path, &err))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|err| Error::io("read", path, &err))?;
    Ok(format_digest(hasher.finalize().as_slice()))
}

fn format_digest(digest: &[u8]) -> String {
    let mut text = String::with_capacity(7 + digest.len() * 2);
    text.push_str("sha256:");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in digest {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    text
}

/// Store: writes `contents` atomically with mode, owner and group. After the
/// rename the owner is read back; where it did not stick (FUSE and bind
/// mounts, as CCM found) the path itself is chowned and checked again.
///
/// In a batch that stages writes the file is only staged: the result is
/// its owner and mode, read back from the temp file. Where the owner did
/// not stick there, the batch is committed and the path chowned as above.
pub fn store(
    fs: &RootFs,
    path: &Path,
    contents: &[u8],
    uid: u32,
    gid: u32,
    mode: u32,
) -> Result<Option<Staged>> {
    let options = WriteOptions {
        mode: Some(mode),
        uid: Some(uid),
        gid: Some(gid),
    };
    match atomic::stage(fs, path, contents, &options)? {
        Some(staged) if (staged.uid, staged.gid) == (uid, gid) => Ok(Some(staged)),
        Some(_) => {
            atomic::commit_staged();
            ensure_owner(fs, path, uid, gid).map(|()| None)
        }
        None => ensure_owner(fs, path, uid, gid).map(|()| None),
    }
}

/// Re-chowns `path` if its owner is not `uid:gid`, then checks again.
pub fn ensure_owner(fs: &RootFs, path: &Path, uid: u32, gid: u32) -> Result<()> {
    let owned_by = |path: &Path| {
        fs.symlink_metadata(path)
            .map(|meta| (meta.uid(), meta.gid()))
            .map_err(|err| Error::io("inspect", path, &err))
    };
    if owned_by(path)? == (uid, gid) {
        return Ok(());
    }
    fs.lchown(path, uid, gid)
        .map_err(|err| Error::io("change the owner of", path, &err))?;
    let now = owned_by(path)?;
    if now != (uid, gid) {
        return Err(Error::new(format!(
            "{} is owned by {}:{} after chown to {uid}:{gid}; the filesystem does not keep owners, so manage the file elsewhere or drop owner/group",
            path.display(),
            now.0,
            now.1
        )));
    }
    Ok(())
}

/// Link: makes `path` a symbolic link to `target` atomically (a temp link,
/// then a rename over what is there), owned by `uid`/`gid` when given.
pub fn link(
    fs: &RootFs,
    path: &Path,
    target: &Path,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<()> {
    let options = WriteOptions {
        mode: None,
        uid,
        gid,
    };
    atomic::symlink(fs, path, target, &options)
}

/// CreateDirectory: creates the directory and its parents, then sets the
/// mode explicitly (the umask applies to mkdir) and the owner.
pub fn create_directory(fs: &RootFs, path: &Path, uid: u32, gid: u32, mode: u32) -> Result<()> {
    fs.create_dir_all(path)
        .map_err(|err| Error::io("create directory", path, &err))?;
    fs.set_mode(path, mode)
        .map_err(|err| Error::io("change the mode of", path, &err))?;
    fs.lchown(path, uid, gid)
        .map_err(|err| Error::io("change the owner of", path, &err))?;
    // chown may clear mode bits on some systems; set them again.
    fs.set_mode(path, mode)
        .map_err(|err| Error::io("change the mode of", path, &err))
}

/// Remove: a file, symlink or empty directory; a non-empty directory only
/// with `force`.
pub fn remove(fs: &RootFs, path: &Path, force: bool) -> Result<()> {
    let meta = match fs.symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io("inspect", path, &err)),
    };
    if !meta.is_dir() {
        return fs
            .remove_file(path)
            .map_err(|err| Error::io("remove", path, &err));
    }
    // Staged files may sit in the directory.
    atomic::commit_staged();
    match fs.remove_dir(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::DirectoryNotEmpty && force => fs
            .remove_dir_all(path)
            .map_err(|err| Error::io("remove", path, &err)),
        Err(err) if err.kind() == ErrorKind::DirectoryNotEmpty => Err(Error::new(format!(
            "{} is a directory that is not empty; set force = true to remove it with its contents",
            path.display()
        ))),
        Err(err) => Err(Error::io("remove directory", path, &err)),
    }
}

/// Copies the file at `path` to `base` with its mode, owner and group.
pub fn save_original(fs: &RootFs, path: &Path, base: &Path, current: &Observed) -> Result<()> {
    if let Some(parent) = base.parent() {
        fs.create_dir_all(parent)
            .map_err(|err| Error::io("create directory", parent, &err))?;
    }
    let contents = fs.read(path).map_err(|err| Error::io("read", path, &err))?;
    store(
        fs,
        base,
        &contents,
        current.uid,
        current.gid,
        current.mode & 0o777,
    )
    .map(drop)
}

/// Puts the saved original back at `path` with the recorded attributes,
/// then deletes the copy and any directories below `base_root` it leaves empty.
pub fn restore_original(
    fs: &RootFs,
    base: &Path,
    base_root: &Path,
    path: &Path,
    uid: u32,
    gid: u32,
    mode: u32,
) -> Result<()> {
    let contents = fs.read(base).map_err(|err| {
        Error::new(format!(
            "cannot read the saved original {}: {err}; restore the file by hand, then apply with --force",
            base.display()
        ))
    })?;
    if fs.symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
        return Err(Error::new(format!(
            "{} is now a directory; remove it before the original file can be restored",
            path.display()
        )));
    }
    store(fs, path, &contents, uid, gid, mode)?;
    // The copy goes only once the original is back in place.
    atomic::commit_staged();
    if atomic::staging_failed() {
        return Err(Error::new(format!(
            "cannot restore the original {}; the saved copy stays at {}",
            path.display(),
            base.display()
        )));
    }
    fs.remove_file(base)
        .map_err(|err| Error::io("remove", base, &err))?;
    let mut dir = base.parent();
    while let Some(current) = dir {
        if current == base_root
            || !current.starts_with(base_root)
            || fs.remove_dir(current).is_err()
        {
            break;
        }
        dir = current.parent();
    }
    Ok(())
}

/// Sets mode, owner and group of an existing directory (restoring an
/// original directory's attributes).
pub fn set_directory_attributes(
    fs: &RootFs,
    path: &Path,
    uid: u32,
    gid: u32,
    mode: u32,
) -> Result<()> {
    create_directory(fs, path, uid, gid, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn host() -> RootFs {
        RootFs::unconfined()
    }

    #[test]
    fn status_hashes_files_of_every_size_around_its_read_buffer_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        for size in [0, 1, 10, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 40_000] {
            let content: Vec<u8> = (0..size).map(|at| (at % 251) as u8).collect();
            let path = dir.path().join(format!("f{size}"));
            fs::write(&path, &content).expect("write");
            let observed = status(&host(), &path).expect("status");
            assert_eq!(
                observed.checksum,
                Some(checksum_bytes(&content)),
                "{size} bytes"
            );
        }
    }

    /// The owner new files get, so that these tests also run unprivileged.
    fn me() -> (u32, u32) {
        let probe = tempfile::NamedTempFile::new().expect("probe");
        let created = fs::metadata(probe.path()).expect("probe meta");
        (created.uid(), created.gid())
    }

    #[test]
    fn status_reports_kind_checksum_and_attributes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        fs::write(&file, "abc").expect("write");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).expect("chmod");
        let observed = status(&host(), &file).expect("status");
        assert_eq!(observed.kind, Kind::File);
        assert_eq!(observed.mode, 0o640);
        assert_eq!(
            observed.checksum.as_deref(),
            Some("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(observed.checksum, Some(checksum_bytes(b"abc")));
        assert_eq!(
            status(&host(), dir.path()).expect("dir").kind,
            Kind::Directory
        );
        assert_eq!(
            status(&host(), &dir.path().join("missing"))
                .expect("absent")
                .kind,
            Kind::Absent
        );
        std::os::unix::fs::symlink("../f", dir.path().join("link")).expect("symlink");
        let link = status(&host(), &dir.path().join("link")).expect("link");
        assert_eq!(link.kind, Kind::Link);
        assert_eq!(link.target.as_deref(), Some(Path::new("../f")));
    }

    #[test]
    fn store_writes_content_mode_and_owner_and_needs_the_parent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (uid, gid) = me();
        let target = dir.path().join("motd");
        store(&host(), &target, b"hello\n", uid, gid, 0o600).expect("store");
        let observed = status(&host(), &target).expect("status");
        assert_eq!(
            (observed.uid, observed.gid, observed.mode),
            (uid, gid, 0o600)
        );
        assert_eq!(fs::read(&target).expect("read"), b"hello\n");
        let err = store(
            &host(),
            &dir.path().join("no/such/file"),
            b"x",
            uid,
            gid,
            0o644,
        )
        .expect_err("parent");
        assert!(err.message().contains("does not exist"), "{err}");
        let leftovers: Vec<_> = fs::read_dir(dir.path()).expect("ls").collect();
        assert_eq!(leftovers.len(), 1, "no temp files are left behind");
    }

    #[test]
    fn remove_refuses_a_non_empty_directory_without_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let full = dir.path().join("full");
        fs::create_dir_all(full.join("sub")).expect("mkdir");
        let err = remove(&host(), &full, false).expect_err("not empty");
        assert!(err.message().contains("force = true"), "{err}");
        assert!(full.exists());
        remove(&host(), &full, true).expect("forced");
        assert!(!full.exists());
        remove(&host(), &full, false).expect("already gone is fine");
    }

    #[test]
    fn create_directory_sets_the_mode_despite_the_umask() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (uid, gid) = me();
        let target = dir.path().join("a/b");
        create_directory(&host(), &target, uid, gid, 0o777).expect("mkdir");
        assert_eq!(status(&host(), &target).expect("status").mode, 0o777);
    }

    #[test]
    fn originals_are_saved_and_restored_with_their_attributes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (uid, gid) = me();
        let target = dir.path().join("etc/app.conf");
        fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        fs::write(&target, "original\n").expect("write");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).expect("chmod");
        let base_root = dir.path().join("state/base");
        let base = base_root.join("etc/app.conf");
        let before = status(&host(), &target).expect("status");
        save_original(&host(), &target, &base, &before).expect("save");
        assert_eq!(
            status(&host(), &base).expect("base").checksum,
            before.checksum
        );
        store(&host(), &target, b"managed\n", uid, gid, 0o644).expect("store");
        restore_original(&host(), &base, &base_root, &target, uid, gid, 0o640).expect("restore");
        let after = status(&host(), &target).expect("status");
        assert_eq!((after.checksum, after.mode), (before.checksum, 0o640));
        assert!(!base.exists() && !base_root.join("etc").exists() && base_root.exists());
    }
}
