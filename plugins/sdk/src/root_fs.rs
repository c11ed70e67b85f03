//! File access that stays inside `HOLO_ROOT_DIR` in test mode.
//!
//! In test mode every path below the root resolves as if the root were `/`:
//! symlinks, absolute or relative, and `..` never leave it. These are the
//! semantics of `openat2(RESOLVE_IN_ROOT)`, provided by `pathrs`, which falls
//! back to a careful userspace resolver where `openat2` is missing. Outside
//! test mode, and for paths that are not below the root (a cache directory
//! elsewhere), paths resolve as usual.
//!
//! Every operation takes the host path a plugin already has
//! (`env.root_join("/etc/motd")`), so messages keep naming it. Changes to a
//! directory entry go through a descriptor of the resolved parent directory
//! (see [`RootFs::open_parent`]), so nothing resolves a path twice.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, Permissions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pathrs::flags::OpenFlags;
use rustix::fs::{AtFlags, Gid, Mode, OFlags, Uid};

/// Bumped whenever this process changes a directory entry or runs a
/// command: a parent directory kept by [`RootFs::at_parent`] is reused only
/// while the count is what it was when the directory was opened.
static ENTRIES_CHANGED: AtomicU64 = AtomicU64::new(0);

/// Whether [`RootFs::at_parent`] keeps the parent directories it opened
/// (set by a batch, which looks at many entries of one directory).
static REUSE_PARENTS: AtomicBool = AtomicBool::new(false);

/// A parent directory that [`RootFs::at_parent`] opened, or found missing.
struct KeptParent {
    changes: u64,
    root: PathBuf,
    contained: bool,
    parent: PathBuf,
    /// `None`: the directory is not there (a first apply looks for the
    /// saved originals of many files in one missing directory).
    dir: Option<Arc<File>>,
}

/// The parent directories [`RootFs::at_parent`] opened last, the newest
/// last: a plugin may look at a target and then at its saved original.
static KEPT_PARENTS: Mutex<Vec<KeptParent>> = Mutex::new(Vec::new());

/// How many parent directories are kept open.
const KEPT_PARENTS_MAX: usize = 4;

/// Records that a directory entry may have changed, so that no parent
/// directory opened before is reused.
pub(crate) fn entries_changed() {
    ENTRIES_CHANGED.fetch_add(1, Ordering::Relaxed);
}

/// Lets [`RootFs::at_parent`] reuse the parent directories it opened last
/// until this process changes a directory entry.
pub(crate) fn reuse_parents() {
    REUSE_PARENTS.store(true, Ordering::Relaxed);
}

/// Resolves and changes paths, contained in the root in test mode.
#[derive(Clone)]
pub struct RootFs {
    /// The root as the plugin was given it (`HOLO_ROOT_DIR`).
    root: PathBuf,
    /// The opened root in test mode; `None` resolves normally.
    contained: Option<Arc<pathrs::Root>>,
}

impl RootFs {
    /// Access where every path below `root` resolves inside it.
    pub fn contained_in(root: &Path) -> io::Result<RootFs> {
        match pathrs::Root::open(root).map_err(|err| io_error(&err)) {
            Ok(opened) => Ok(RootFs {
                root: root.to_path_buf(),
                contained: Some(Arc::new(opened)),
            }),
            // A root that does not exist holds no symlink to follow out of
            // it; whatever is created below it starts as plain directories.
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(RootFs::unconfined()),
            Err(err) => Err(err),
        }
    }

    /// Access with the usual path resolution (outside test mode).
    pub fn unconfined() -> RootFs {
        RootFs {
            root: PathBuf::from("/"),
            contained: None,
        }
    }

    /// The opened root and the part of `path` below it, when `path` is to
    /// be resolved inside the root.
    fn inside<'p>(&self, path: &'p Path) -> Option<(&pathrs::Root, &'p Path)> {
        let root = self.contained.as_ref()?;
        let below = path.strip_prefix(&self.root).ok()?;
        if below.as_os_str().is_empty() {
            Some((root, Path::new(".")))
        } else {
            Some((root, below))
        }
    }

    /// What is at `path`, not following a final symlink.
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        match self.inside(path) {
            Some((root, below)) => match open_in_root(root, below, OFlags::PATH | OFlags::NOFOLLOW)
            {
                Some(opened) => opened?.metadata(),
                None => {
                    let handle = root.resolve_nofollow(below).map_err(|err| io_error(&err))?;
                    File::from(OwnedFd::from(handle)).metadata()
                }
            },
            None => std::fs::symlink_metadata(path),
        }
    }

    /// What is at `path`, following symlinks (inside the root).
    pub fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        match self.inside(path) {
            Some((root, below)) => match open_in_root(root, below, OFlags::PATH) {
                Some(opened) => opened?.metadata(),
                None => {
                    let handle = root.resolve(below).map_err(|err| io_error(&err))?;
                    File::from(OwnedFd::from(handle)).metadata()
                }
            },
            None => std::fs::metadata(path),
        }
    }

    /// True when `path` is a directory (following symlinks inside the root).
    pub fn is_dir(&self, path: &Path) -> bool {
        self.metadata(path).is_ok_and(|meta| meta.is_dir())
    }

    /// True when `path` is a regular file (following symlinks inside the root).
    pub fn is_file(&self, path: &Path) -> bool {
        self.metadata(path).is_ok_and(|meta| meta.is_file())
    }

    /// Opens `path` for reading.
    pub fn open(&self, path: &Path) -> io::Result<File> {
        self.open_with(path, OFlags::RDONLY)
    }

    pub(crate) fn open_with(&self, path: &Path, flags: OFlags) -> io::Result<File> {
        match self.inside(path) {
            Some((root, below)) => open_in_root(root, below, flags).unwrap_or_else(|| {
                root.open_subpath(below, OpenFlags::from_bits_retain(u64::from(flags.bits())))
                    .map_err(|err| io_error(&err))
            }),
            None => {
                let fd = rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::empty())?;
                Ok(File::from(fd))
            }
        }
    }

    /// The whole content of `path`.
    pub fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut contents = Vec::new();
        io::Read::read_to_end(&mut self.open(path)?, &mut contents)?;
        Ok(contents)
    }

    /// The whole content of `path` as UTF-8.
    pub fn read_to_string(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read(path)?)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
    }

    /// The names in directory `path`, sorted, without `.` and `..`.
    pub fn read_dir_names(&self, path: &Path) -> io::Result<Vec<OsString>> {
        let dir = self.open_with(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        entry_names(&dir)
    }

    /// Creates directory `path` and its missing parents (mode 0755 before
    /// the umask).
    pub fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        match self.inside(path) {
            // Most calls find the directory there; mkdir_all would still
            // check every component through /proc.
            Some(_) if self.is_dir(path) => Ok(()),
            Some((root, below)) => {
                entries_changed();
                root.mkdir_all(below, &Permissions::from_mode(0o755))
                    .map(drop)
                    .map_err(|err| io_error(&err))
            }
            None => {
                entries_changed();
                std::fs::create_dir_all(path)
            }
        }
    }

    /// Calls `look` with the directory that holds `path`'s final component
    /// (opened for lookups only) and that component, for a look at the
    /// entry with `*at` calls relative to the directory, without following
    /// the component. In a batch the last few directories opened are reused
    /// for the next paths in them until this process changes a directory
    /// entry, so looking at many files of one directory resolves it once.
    pub fn at_parent<T>(
        &self,
        path: &Path,
        look: impl FnOnce(&File, &OsStr) -> io::Result<T>,
    ) -> io::Result<T> {
        let (parent, name) = split_parent(path)?;
        if !REUSE_PARENTS.load(Ordering::Relaxed) {
            let dir = self.open_with(parent, OFlags::PATH | OFlags::DIRECTORY)?;
            return look(&dir, name);
        }
        let changes = ENTRIES_CHANGED.load(Ordering::Relaxed);
        let mut kept = KEPT_PARENTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.retain(|kept| kept.changes == changes);
        let reused = kept
            .iter()
            .find(|kept| {
                kept.parent == parent
                    && kept.root == self.root
                    && kept.contained == self.contained.is_some()
            })
            .map(|kept| kept.dir.clone());
        let dir = match reused {
            Some(dir) => dir,
            None => {
                let dir = match self.open_with(parent, OFlags::PATH | OFlags::DIRECTORY) {
                    Ok(dir) => Some(Arc::new(dir)),
                    Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                    Err(err) => return Err(err),
                };
                if kept.len() == KEPT_PARENTS_MAX {
                    kept.remove(0);
                }
                kept.push(KeptParent {
                    changes,
                    root: self.root.clone(),
                    contained: self.contained.is_some(),
                    parent: parent.to_path_buf(),
                    dir: dir.clone(),
                });
                dir
            }
        };
        let Some(dir) = dir else {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        };
        drop(kept);
        look(&dir, name)
    }

    /// Opens the directory that holds `path`'s final component, and gives
    /// that component. Changes to the entry are made relative to the
    /// directory, so a symlink in the parents is resolved once, in the root.
    pub fn open_parent(&self, path: &Path) -> io::Result<(File, OsString)> {
        let (parent, name) = split_parent(path)?;
        let dir = self.open_with(parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
        // Whoever opens a parent is about to change (or read) an entry.
        entries_changed();
        Ok((dir, name.to_os_string()))
    }

    /// The target of the symbolic link at `path`, verbatim.
    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        use std::os::unix::ffi::OsStringExt;
        let (dir, name) = self.open_parent(path)?;
        let target = rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new())?;
        Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
    }

    /// Removes the file or symlink at `path` (never what a symlink points to).
    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.open_parent(path)?;
        rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty()).map_err(io::Error::from)
    }

    /// Removes the empty directory at `path`.
    pub fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = self.open_parent(path)?;
        rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR).map_err(io::Error::from)
    }

    /// Removes `path` with everything below it.
    pub fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        match self.inside(path) {
            Some((root, below)) => {
                entries_changed();
                root.remove_all(below).map_err(|err| io_error(&err))
            }
            None => {
                entries_changed();
                std::fs::remove_dir_all(path)
            }
        }
    }

    /// Sets the permission bits of what `path` resolves to.
    pub fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        if self.inside(path).is_none() {
            return std::fs::set_permissions(path, Permissions::from_mode(mode));
        }
        // Through a descriptor of the object resolved in the root; a chmod
        // by name would follow a final symlink out of it.
        match self.open_with(path, OFlags::RDONLY | OFlags::NONBLOCK) {
            Ok(file) => file.set_permissions(Permissions::from_mode(mode)),
            // Unreadable to us (a directory of mode 0300, without root):
            // chmod the entry by name once it is known not to be a symlink.
            Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
                let (dir, name) = self.open_parent(path)?;
                let stat = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                if rustix::fs::FileType::from_raw_mode(stat.st_mode).is_symlink() {
                    return Err(err);
                }
                rustix::fs::chmodat(
                    &dir,
                    name.as_os_str(),
                    Mode::from_raw_mode(mode),
                    AtFlags::empty(),
                )
                .map_err(io::Error::from)
            }
            Err(err) => Err(err),
        }
    }

    /// Sets the owner of `path` itself, not following a final symlink.
    pub fn lchown(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        let (dir, name) = self.open_parent(path)?;
        rustix::fs::chownat(
            &dir,
            name.as_os_str(),
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(io::Error::from)
    }

    /// The host path of what `path` names once every symlink is resolved
    /// (inside the root in test mode), for handing to a command or library
    /// that resolves paths itself. In test mode it is below the root.
    pub fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        if self.inside(path).is_none() {
            return std::fs::canonicalize(path);
        }
        let opened = self.open_with(path, OFlags::PATH)?;
        // The kernel names what the descriptor refers to; no path is
        // resolved again on the way.
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&opened));
        let real = std::fs::read_link(link)?;
        let root = std::fs::canonicalize(&self.root)?;
        if !real.starts_with(&root) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to {}, outside the root {}",
                    path.display(),
                    real.display(),
                    self.root.display()
                ),
            ));
        }
        Ok(real)
    }

    /// Creates or truncates the regular file `path` with `mode` and gives it
    /// open for writing; a symlink at `path` is an error, not followed.
    pub fn create_file(&self, path: &Path, mode: u32) -> io::Result<File> {
        let (dir, name) = self.open_parent(path)?;
        let fd = rustix::fs::openat(
            &dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        let file = File::from(fd);
        file.set_permissions(Permissions::from_mode(mode))?;
        Ok(file)
    }
}

/// The names in an open directory, sorted, without `.` and `..`.
pub(crate) fn entry_names(dir: &File) -> io::Result<Vec<OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    names.sort();
    Ok(names)
}

/// `path` split into its parent directory and final component; a path
/// without a final name (`/`, `..`) cannot be changed as an entry.
fn split_parent(path: &Path) -> io::Result<(&Path, &OsStr)> {
    let name = match path.components().next_back() {
        Some(Component::Normal(name)) => name,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no directory entry", path.display()),
            ));
        }
    };
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Ok((parent, name))
}

/// Opens `below` inside `root` with `openat2(RESOLVE_IN_ROOT |
/// RESOLVE_NO_MAGICLINKS)`, the call pathrs makes first, without the work
/// pathrs adds to a failure (it reads /proc to describe it): a missing
/// file is the common answer here. `None` where the kernel has no
/// `openat2` or asks for a retry, so that pathrs decides.
fn open_in_root(root: &pathrs::Root, below: &Path, flags: OFlags) -> Option<io::Result<File>> {
    use rustix::fs::ResolveFlags;
    use rustix::io::Errno;
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    let opened = rustix::fs::openat2(
        root,
        below,
        // openat2 refuses O_PATH with other flags than these.
        if flags.contains(OFlags::PATH) {
            flags | OFlags::CLOEXEC
        } else {
            flags | OFlags::CLOEXEC | OFlags::NOCTTY
        },
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    );
    match opened {
        Ok(fd) => Some(Ok(File::from(fd))),
        Err(Errno::NOSYS) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            None
        }
        Err(Errno::INVAL | Errno::TOOBIG | Errno::AGAIN | Errno::XDEV) => None,
        Err(err) => Some(Err(err.into())),
    }
}

/// A pathrs error as an io::Error, keeping the errno where there is one so
/// that `NotFound` and friends still match.
fn io_error(err: &pathrs::error::Error) -> io::Error {
    match err.kind() {
        pathrs::error::ErrorKind::OsError(Some(errno)) => io::Error::from_raw_os_error(errno),
        pathrs::error::ErrorKind::SafetyViolation => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refused, it would leave the root: {err}"),
        ),
        _ => io::Error::other(err.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A root with `etc/outdir -> /tmp/elsewhere`-like escapes pointing at
    /// `outside`, absolute and relative.
    pub(crate) struct Escape {
        _dir: tempfile::TempDir,
        pub(crate) root: PathBuf,
        pub(crate) outside: PathBuf,
    }

    pub(crate) fn escape() -> Escape {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        let outside = dir.path().join("elsewhere");
        std::fs::create_dir_all(root.join("etc")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::os::unix::fs::symlink(&outside, root.join("etc/outdir")).expect("symlink");
        std::os::unix::fs::symlink("../../..", root.join("etc/up")).expect("symlink");
        std::fs::write(outside.join("secret"), "outside\n").expect("write");
        Escape {
            _dir: dir,
            root,
            outside,
        }
    }

    #[test]
    fn absolute_and_relative_symlinks_resolve_inside_the_root() {
        let escape = escape();
        let fs = RootFs::contained_in(&escape.root).expect("open root");
        // etc/outdir points at an absolute path; inside the root it does not exist.
        let through = escape.root.join("etc/outdir/secret");
        assert_eq!(
            fs.read(&through).expect_err("contained").kind(),
            io::ErrorKind::NotFound
        );
        assert!(
            fs.create_file(&escape.root.join("etc/outdir/new"), 0o600)
                .is_err(),
            "the link's target does not exist inside the root"
        );
        // Once it exists inside the root, writes through the link land there.
        let counterpart = escape
            .root
            .join(escape.outside.strip_prefix("/").expect("absolute"));
        fs.create_dir_all(&counterpart).expect("mkdir");
        let mut file = fs
            .create_file(&escape.root.join("etc/outdir/new"), 0o600)
            .expect("create below the link");
        io::Write::write_all(&mut file, b"inside\n").expect("write");
        assert_eq!(
            std::fs::read(counterpart.join("new")).expect("inside the root"),
            b"inside\n"
        );
        // `../../..` from etc/ climbs to the root and stops there.
        fs.create_file(&escape.root.join("etc/up/top"), 0o644)
            .expect("create through ..");
        assert!(escape.root.join("top").is_file());
        assert_eq!(
            std::fs::read_dir(&escape.outside).expect("ls").count(),
            1,
            "nothing was written outside the root"
        );
    }

    #[test]
    fn real_paths_resolve_symlinks_inside_the_root() {
        let escape = escape();
        let fs = RootFs::contained_in(&escape.root).expect("open root");
        let counterpart = escape
            .root
            .join(escape.outside.strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(&counterpart).expect("mkdir");
        let real = fs
            .real_path(&escape.root.join("etc/outdir"))
            .expect("resolves");
        assert_eq!(real, counterpart.canonicalize().expect("canonical"));
        let top = fs.real_path(&escape.root.join("etc/up")).expect("resolves");
        assert_eq!(top, escape.root.canonicalize().expect("canonical"));
    }

    #[test]
    fn unconfined_access_follows_symlinks_as_usual() {
        let escape = escape();
        let fs = RootFs::unconfined();
        assert_eq!(
            fs.read(&escape.root.join("etc/outdir/secret"))
                .expect("read"),
            b"outside\n"
        );
    }

    #[test]
    fn a_kept_parent_is_reused_until_an_entry_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("a")).expect("mkdir");
        std::fs::write(root.join("a/f"), "old").expect("write");
        let fs = RootFs::contained_in(&root).expect("open root");
        let read = |fs: &RootFs| {
            fs.at_parent(&root.join("a/f"), |dir, name| {
                let fd = rustix::fs::openat(dir, name, OFlags::RDONLY, Mode::empty())?;
                io::read_to_string(File::from(fd))
            })
        };
        reuse_parents();
        // Other tests in this process change entries too, which drops the
        // kept directory: the check holds when none did meanwhile.
        let changes = ENTRIES_CHANGED.load(Ordering::Relaxed);
        assert_eq!(read(&fs).expect("read"), "old");
        // Moved by someone else: the kept directory is still the one read.
        std::fs::rename(root.join("a"), root.join("moved")).expect("move");
        std::fs::create_dir_all(root.join("a")).expect("mkdir");
        std::fs::write(root.join("a/f"), "new").expect("write");
        let kept = read(&fs).expect("kept");
        if ENTRIES_CHANGED.load(Ordering::Relaxed) == changes {
            assert_eq!(kept, "old");
        }
        // A change made through RootFs drops it.
        fs.create_dir_all(&root.join("b")).expect("mkdir");
        assert_eq!(read(&fs).expect("reopened"), "new");
        // So does a command.
        std::fs::rename(root.join("a"), root.join("moved again")).expect("move");
        std::fs::create_dir_all(root.join("a")).expect("mkdir");
        std::fs::write(root.join("a/f"), "newer").expect("write");
        crate::process::Command::new("true").run().expect("true");
        assert_eq!(read(&fs).expect("reopened"), "newer");
        // A missing parent is NotFound, also when it is looked at again,
        // until this process makes it.
        for _ in 0..2 {
            let missing = fs.at_parent(&root.join("nowhere/f"), |_, _| Ok(()));
            assert_eq!(
                missing.expect_err("missing").kind(),
                io::ErrorKind::NotFound
            );
        }
        fs.create_dir_all(&root.join("nowhere")).expect("mkdir");
        assert!(fs.at_parent(&root.join("nowhere/f"), |_, _| Ok(())).is_ok());
    }

    #[test]
    fn entries_are_changed_without_following_a_final_symlink() {
        let escape = escape();
        let fs = RootFs::contained_in(&escape.root).expect("open root");
        let link = escape.root.join("etc/outdir");
        assert!(fs.symlink_metadata(&link).expect("lstat").is_symlink());
        assert!(fs.create_file(&link, 0o644).is_err());
        fs.remove_file(&link).expect("remove the link itself");
        assert!(escape.outside.join("secret").is_file());
        assert_eq!(
            fs.read_dir_names(&escape.root.join("etc")).expect("ls"),
            ["up"]
        );
    }
}
