//! Atomic file writes: a temp file in the target's own directory gets the
//! mode, the content and the owner, is synced and renamed over the target,
//! and the directory is synced. The target never holds a partial file.

use std::fs::{File, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::{Error, Result};

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

/// Writes `contents` to `path` atomically. The parent directory must exist.
pub fn write(path: &Path, contents: &[u8], options: &WriteOptions) -> Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::new(format!(
            "cannot write {}: directory {} does not exist; create it first (for example with a directory resource)",
            path.display(),
            parent.display()
        )));
    }
    let fail = |err: std::io::Error| Error::io("write", path, &err);
    let mut temp = tempfile::Builder::new()
        .prefix(".holo-tmp-")
        .tempfile_in(parent)
        .map_err(fail)?;
    let mode = options.mode.unwrap_or_else(|| {
        std::fs::metadata(path).map_or(0o644, |meta| meta.permissions().mode() & 0o7777)
    });
    temp.as_file()
        .set_permissions(Permissions::from_mode(mode))
        .map_err(fail)?;
    temp.write_all(contents).map_err(fail)?;
    if options.uid.is_some() || options.gid.is_some() {
        std::os::unix::fs::fchown(temp.as_file(), options.uid, options.gid).map_err(fail)?;
        // chown clears setuid/setgid bits; set the mode again.
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))
            .map_err(fail)?;
    }
    temp.as_file().sync_all().map_err(fail)?;
    temp.persist(path).map_err(|err| fail(err.error))?;
    // The rename is durable only once the directory entry is synced.
    File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|err| Error::io("sync directory", parent, &err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_content_and_mode_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("motd");
        write(&target, b"hello\n", &WriteOptions::mode(0o640)).expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"hello\n");
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
        write(&target, b"again\n", &WriteOptions::default()).expect("rewrite");
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
    fn missing_parent_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("missing/motd");
        let err = write(&target, b"x", &WriteOptions::default()).expect_err("no parent");
        assert!(err.message().contains("does not exist"), "{err}");
        assert!(err.message().contains(&target.display().to_string()));
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
        write(&target, b"x", &options).expect("write");
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&target).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
    }
}
