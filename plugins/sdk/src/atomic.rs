//! Atomic file writes: a temp file in the target's own directory gets the
//! mode, the content and the owner, is synced and renamed over the target,
//! and the directory is synced. The target never holds a partial file.
//!
//! The directory is resolved once through [`RootFs`] (inside the root in
//! test mode), and the temp file, the rename and the sync all go through
//! that directory's descriptor.
//!
//! A writer killed between creating its temp file and the rename leaves the
//! temp file behind. `O_TMPFILE` with `linkat` would not avoid that: `linkat`
//! cannot replace an existing target, so the content still needs a name of
//! its own before the rename. So temp files carry our prefix, and the first
//! write into a directory in each process sweeps the leftovers there
//! ([`sweep_leftovers`]): a writer holds a shared `flock` on the directory
//! while its temp file exists, so when the sweep gets the lock exclusively,
//! every temp file there belongs to a writer that is gone. A retried write
//! lands in the same directory as the one that was killed, so the next
//! apply cleans up.

use std::fs::{File, Permissions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

use crate::error::{Error, Result};
use crate::root_fs::{RootFs, entry_names};

/// Attributes of the written file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Permission bits; `None` keeps the mode of an existing target, else 0644.
    pub mode: Option<u32>,
    /// Owner uid; `None` leaves it as the process creates it.
    pub uid: Option<u32>,
    /// Group gid; `None` leaves it as the process creates it.
    pub gid: Option<u32>,
}

impl WriteOptions {
    /// Options with just a mode.
    pub fn mode(mode: u32) -> Self {
        WriteOptions {
            mode: Some(mode),
            ..WriteOptions::default()
        }
    }
}

/// The name prefix of our temp files, so that they can be recognised.
pub const TEMP_PREFIX: &str = ".holo-tmp-";

/// Writes `contents` to `path` atomically. The parent directory must exist.
pub fn write(fs: &RootFs, path: &Path, contents: &[u8], options: &WriteOptions) -> Result<()> {
    let fail = |err: io::Error| Error::io("write", path, &err);
    let (dir, name) = open_parent(fs, path)?;
    let mode = options.mode.unwrap_or_else(|| {
        rustix::fs::statat(&dir, name.as_os_str(), AtFlags::empty())
            .map_or(0o644, |stat| stat.st_mode & 0o7777)
    });
    sweep_once(&dir, path.parent().unwrap_or(Path::new("."))).map_err(fail)?;
    rustix::fs::flock(&dir, FlockOperation::LockShared).map_err(|err| fail(err.into()))?;
    let temp = TempFile::create(&dir).map_err(fail)?;
    let file = &temp.file;
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(fail)?;
    (&temp.file).write_all(contents).map_err(fail)?;
    if options.uid.is_some() || options.gid.is_some() {
        std::os::unix::fs::fchown(file, options.uid, options.gid).map_err(fail)?;
        // chown clears setuid/setgid bits; set the mode again.
        file.set_permissions(Permissions::from_mode(mode))
            .map_err(fail)?;
    }
    file.sync_all().map_err(fail)?;
    temp.rename_to(name.as_os_str()).map_err(fail)?;
    // The rename is durable only once the directory entry is synced.
    dir.sync_all().map_err(|err| {
        Error::io(
            "sync directory",
            path.parent().unwrap_or(Path::new(".")),
            &err,
        )
    })
}

/// The directory that will hold `path`, opened, and `path`'s name in it.
fn open_parent(fs: &RootFs, path: &Path) -> Result<(File, std::ffi::OsString)> {
    match fs.open_parent(path) {
        Ok(opened) => Ok(opened),
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            let parent = path.parent().unwrap_or(Path::new("."));
            Err(Error::new(format!(
                "cannot write {}: directory {} does not exist; create it first (for example with a directory resource)",
                path.display(),
                parent.display()
            )))
        }
        Err(err) => Err(Error::io("write", path, &err)),
    }
}

/// Makes `path` a symbolic link to `target` atomically: a temp link in the
/// same directory gets the owner (when given) and is renamed over `path`,
/// replacing a file or link there (never a directory). `target` is written
/// verbatim and need not exist.
pub fn symlink(fs: &RootFs, path: &Path, target: &Path, options: &WriteOptions) -> Result<()> {
    let fail = |err: io::Error| Error::io("create the link", path, &err);
    let (dir, name) = open_parent(fs, path)?;
    sweep_once(&dir, path.parent().unwrap_or(Path::new("."))).map_err(fail)?;
    rustix::fs::flock(&dir, FlockOperation::LockShared).map_err(|err| fail(err.into()))?;
    let random = RandomState::new();
    let mut attempt = 0u64;
    let temp = loop {
        let temp = format!("{TEMP_PREFIX}{:016x}", random.hash_one(attempt));
        match rustix::fs::symlinkat(target, &dir, temp.as_str()) {
            Ok(()) => break temp,
            Err(rustix::io::Errno::EXIST) if attempt < 100 => attempt += 1,
            Err(err) => return Err(fail(err.into())),
        }
    };
    let finish = || -> io::Result<()> {
        if options.uid.is_some() || options.gid.is_some() {
            rustix::fs::chownat(
                &dir,
                temp.as_str(),
                options.uid.map(rustix::fs::Uid::from_raw),
                options.gid.map(rustix::fs::Gid::from_raw),
                AtFlags::SYMLINK_NOFOLLOW,
            )?;
        }
        rustix::fs::renameat(&dir, temp.as_str(), &dir, name.as_os_str())?;
        Ok(())
    };
    if let Err(err) = finish() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        return Err(fail(err));
    }
    dir.sync_all().map_err(|err| {
        Error::io(
            "sync directory",
            path.parent().unwrap_or(Path::new(".")),
            &err,
        )
    })
}

/// Sweeps `dir` unless this process already did: writes into one directory
/// follow each other, and a listing per write would make a large directory
/// quadratic.
fn sweep_once(dir: &File, path: &Path) -> io::Result<()> {
    // Keyed by path, not inode: an inode number is reused once a directory
    // is removed, and a skipped sweep would go unnoticed.
    static SWEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let mut swept = SWEPT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !swept.contains(path) && sweep(dir)? {
        swept.insert(path.to_path_buf());
    }
    Ok(())
}

/// Removes the temp files that killed writers left in directory `path`
/// (see the module documentation). A directory that does not exist has none.
pub fn sweep_leftovers(fs: &RootFs, path: &Path) -> Result<()> {
    let dir = match fs.open(path) {
        Ok(dir) => dir,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io("open directory", path, &err)),
    };
    sweep(&dir)
        .map(drop)
        .map_err(|err| Error::io("remove leftover temp files in", path, &err))
}

/// Removes every temp file in `dir` when no writer is busy there; false
/// when one is (it, or a later run, sweeps instead).
fn sweep(dir: &File) -> io::Result<bool> {
    match rustix::fs::flock(dir, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(false),
        Err(err) => return Err(err.into()),
    }
    let names = entry_names(dir);
    let removed = names.and_then(|names| {
        for name in names {
            if !name.as_bytes().starts_with(TEMP_PREFIX.as_bytes()) {
                continue;
            }
            match rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty()) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(true)
    });
    rustix::fs::flock(dir, FlockOperation::Unlock)?;
    removed
}

/// A temp file in an open directory, removed again unless renamed.
struct TempFile<'d> {
    dir: &'d File,
    name: String,
    file: File,
}

impl<'d> TempFile<'d> {
    fn create(dir: &'d File) -> io::Result<Self> {
        let random = RandomState::new();
        let mut attempt = 0u64;
        loop {
            let name = format!("{TEMP_PREFIX}{:016x}", random.hash_one(attempt));
            match rustix::fs::openat(
                dir,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => {
                    return Ok(TempFile {
                        dir,
                        name,
                        file: File::from(fd),
                    });
                }
                Err(rustix::io::Errno::EXIST) if attempt < 100 => attempt += 1,
                Err(err) => return Err(err.into()),
            }
        }
    }

    fn rename_to(mut self, target: &std::ffi::OsStr) -> io::Result<()> {
        let renamed = rustix::fs::renameat(self.dir, self.name.as_str(), self.dir, target);
        if renamed.is_ok() {
            // The name is the target's now: drop closes the file, unlinks nothing.
            self.name.clear();
        }
        renamed.map_err(io::Error::from)
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_content_and_mode_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("motd");
        write(
            &RootFs::unconfined(),
            &target,
            b"hello\n",
            &WriteOptions::mode(0o640),
        )
        .expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"hello\n");
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
        write(
            &RootFs::unconfined(),
            &target,
            b"again\n",
            &WriteOptions::default(),
        )
        .expect("rewrite");
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640, "an existing file keeps its mode");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["motd"]);
    }

    #[test]
    fn symlinked_directories_in_test_mode_stay_inside_the_root() {
        let escape = crate::root_fs::tests::escape();
        let (root, outside) = (&escape.root, &escape.outside);
        let fs = RootFs::contained_in(root).expect("root");
        let err = write(
            &fs,
            &root.join("etc/outdir/motd"),
            b"x",
            &WriteOptions::default(),
        )
        .expect_err("no such directory inside the root");
        assert!(err.message().contains("does not exist"), "{err}");
        write(
            &fs,
            &root.join("etc/up/motd"),
            b"x",
            &WriteOptions::default(),
        )
        .expect("`..` stops at the root");
        assert_eq!(std::fs::read(root.join("motd")).expect("read"), b"x");
        let untouched: Vec<_> = std::fs::read_dir(outside)
            .expect("ls")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(untouched, ["secret"]);
    }

    #[test]
    fn leftover_temp_files_are_swept_unless_a_writer_is_busy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let busy = tempfile::tempdir().expect("tempdir");
        for place in [dir.path(), busy.path()] {
            std::fs::write(place.join(".holo-tmp-killed"), "half a fi").expect("leftover");
            std::fs::write(place.join("unrelated"), "x").expect("other file");
        }
        // A writer in another process holds its shared lock on `busy`.
        let writer = File::open(busy.path()).expect("open");
        rustix::fs::flock(&writer, FlockOperation::LockShared).expect("lock");
        let fs = RootFs::unconfined();
        for place in [dir.path(), busy.path()] {
            write(&fs, &place.join("motd"), b"new\n", &WriteOptions::default()).expect("write");
        }
        let names = |place: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(place)
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(dir.path()), ["motd", "unrelated"]);
        assert_eq!(
            names(busy.path()),
            [".holo-tmp-killed", "motd", "unrelated"],
            "a busy writer's temp file stays"
        );
        drop(writer);
        sweep_leftovers(&fs, busy.path()).expect("sweep");
        assert_eq!(names(busy.path()), ["motd", "unrelated"]);
    }

    #[test]
    fn missing_parent_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("missing/motd");
        let err = write(
            &RootFs::unconfined(),
            &target,
            b"x",
            &WriteOptions::default(),
        )
        .expect_err("no parent");
        assert!(err.message().contains("does not exist"), "{err}");
        assert!(err.message().contains(&target.display().to_string()));
    }

    #[test]
    fn writes_leave_no_descriptor_open() {
        let open = || std::fs::read_dir("/proc/self/fd").expect("fds").count();
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = RootFs::unconfined();
        let options = WriteOptions::mode(0o644);
        write(&fs, &dir.path().join("warm-up"), b"x", &options).expect("write");
        let before = open();
        for i in 0..50 {
            write(&fs, &dir.path().join(format!("f{i}")), b"x", &options).expect("write");
        }
        // Other tests run in parallel threads and open files too; a
        // descriptor per write would show as 50.
        assert!(open() < before + 25, "{before} before, {} after", open());
    }

    #[test]
    fn symlinks_replace_files_and_links_atomically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("site");
        std::fs::write(&link, "a file\n").expect("write");
        let fs = RootFs::unconfined();
        symlink(
            &fs,
            &link,
            Path::new("../available/site"),
            &WriteOptions::default(),
        )
        .expect("over a file");
        assert_eq!(
            std::fs::read_link(&link).expect("link"),
            Path::new("../available/site")
        );
        symlink(
            &fs,
            &link,
            Path::new("/etc/other"),
            &WriteOptions::default(),
        )
        .expect("over a link");
        assert_eq!(
            std::fs::read_link(&link).expect("link"),
            Path::new("/etc/other")
        );
        std::fs::create_dir(dir.path().join("dir")).expect("mkdir");
        symlink(
            &fs,
            &dir.path().join("dir"),
            Path::new("x"),
            &WriteOptions::default(),
        )
        .expect_err("a directory is not replaced");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp link is left: {names:?}");
    }

    #[test]
    fn owner_is_set_when_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("owned");
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let options = WriteOptions {
            mode: Some(0o600),
            uid: Some(uid),
            gid: Some(gid),
        };
        write(&RootFs::unconfined(), &target, b"x", &options).expect("write");
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&target).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
    }
}
