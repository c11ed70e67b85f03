//! Temp files next to their target: created with a recognisable name,
//! removed again unless renamed over the target. Below both the atomic
//! writes and the record journal, which share these primitives.

use std::fs::{File, Permissions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;

use rustix::fs::{AtFlags, Mode, OFlags};

/// The name prefix of our temp files, so that they can be recognised.
pub const TEMP_PREFIX: &str = ".holo-tmp-";

/// Writes `contents` to `name` in `dir` through a temp file and a rename,
/// without syncing: the caller syncs the file system once for many.
pub(crate) fn write_unsynced(
    dir: &File,
    name: &std::ffi::OsStr,
    contents: &[u8],
) -> io::Result<()> {
    let temp = TempFile::create(dir)?;
    temp.file.set_permissions(Permissions::from_mode(0o644))?;
    (&temp.file).write_all(contents)?;
    temp.rename_to(name)
}

/// A temp file in an open directory, removed again unless renamed.
pub(crate) struct TempFile<'d> {
    dir: &'d File,
    pub(crate) name: String,
    pub(crate) file: File,
}

impl<'d> TempFile<'d> {
    /// Creates an owner-only temp file.
    pub(crate) fn create(dir: &'d File) -> io::Result<Self> {
        TempFile::create_with_mode(dir, 0o600)
    }

    /// Creates a temp file with `mode` (less the umask): for content that
    /// ends up with that mode anyway, which then needs no chmod.
    pub(crate) fn create_with_mode(dir: &'d File, mode: u32) -> io::Result<Self> {
        let random = RandomState::new();
        let mut attempt = 0u64;
        loop {
            let name = format!("{TEMP_PREFIX}{:016x}", random.hash_one(attempt));
            match rustix::fs::openat(
                dir,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode & 0o777),
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

    /// Leaves the temp file in place and gives its name.
    pub(crate) fn keep(mut self) -> String {
        std::mem::take(&mut self.name)
    }

    pub(crate) fn rename_to(mut self, target: &std::ffi::OsStr) -> io::Result<()> {
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
