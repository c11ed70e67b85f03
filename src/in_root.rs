//! What the driver itself writes below the root (state directories, the
//! lock, the run report) in test mode: paths below `HOLO_ROOT_DIR` resolve
//! as if the root were `/`, so that a symlink in the root (`var/lib/holo`
//! or `run` linked elsewhere) never leads a write outside it. These are the
//! semantics of the SDK's `RootFs` for plugins (the driver does not depend
//! on the SDK; both use `pathrs`). Outside test mode, and for paths that
//! are not below the root (the cache directory, a `--report` elsewhere),
//! paths resolve as usual.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::paths;

/// The part of `path` below `root` in test mode; `None` when `root` is `/`
/// or `path` is not below it.
fn below(root: &str, path: &Path) -> Option<PathBuf> {
    if root == "/" {
        return None;
    }
    let root = paths::clean(root);
    let path = paths::clean(&paths::display(path));
    let below = Path::new(&path).strip_prefix(&root).ok()?;
    Some(if below.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        below.to_path_buf()
    })
}

fn open_root(root: &str) -> io::Result<pathrs::Root> {
    pathrs::Root::open(root).map_err(|err| io_error(&err))
}

/// Creates `dir` and its missing parents (mode 0755), inside the root.
pub fn create_dir_all(root: &str, dir: &str) -> io::Result<()> {
    match below(root, Path::new(dir)) {
        Some(below) => open_root(root)?
            .mkdir_all(&below, &std::fs::Permissions::from_mode(0o755))
            .map(drop)
            .map_err(|err| io_error(&err)),
        None => std::fs::create_dir_all(dir),
    }
}

/// The real path of `path`'s directory, resolved inside the root, joined
/// with its final name (which stays unresolved: what is created there is
/// created with `O_EXCL` or renamed over it, never followed). Outside test
/// mode or the root, `path` itself.
pub fn real_entry(root: &str, path: &Path) -> io::Result<PathBuf> {
    let (Some(below), Some(name)) = (below(root, path), path.file_name()) else {
        return Ok(path.to_path_buf());
    };
    let parent = below.parent().filter(|p| !p.as_os_str().is_empty());
    let handle = open_root(root)?
        .resolve(parent.unwrap_or(Path::new(".")))
        .map_err(|err| io_error(&err))?;
    let fd = OwnedFd::from(handle);
    // The kernel names what the descriptor refers to; nothing is resolved
    // again on the way.
    let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    // The same place, unchanged: keep the path as given, so that messages
    // read as Holo 3's.
    let lexical = std::fs::canonicalize(root)
        .map(|root| root.join(parent.unwrap_or(Path::new(""))))
        .ok();
    if lexical.as_deref() == Some(real.as_path()) {
        return Ok(path.to_path_buf());
    }
    Ok(real.join(name))
}

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
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_in_the_root_resolve_inside_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("var/lib")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        symlink(&outside, root.join("var/lib/holo")).expect("link");
        symlink("../..", root.join("run")).expect("link");
        let root_text = paths::display(&root);

        // The link's target does not exist inside the root: an error, and
        // nothing outside.
        let state = format!("{root_text}/var/lib/holo/file");
        assert!(create_dir_all(&root_text, &state).is_err());
        assert!(!outside.join("file").exists());
        let counterpart = root.join(outside.strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(&counterpart).expect("mkdir");
        create_dir_all(&root_text, &state).expect("mkdir");
        assert!(!outside.join("file").exists());
        assert!(counterpart.join("file").is_dir());

        let lock = real_entry(&root_text, &root.join("run/holo.pid")).expect("resolve");
        let real_root = std::fs::canonicalize(&root).expect("canonical");
        assert_eq!(lock, real_root.join("holo.pid"));

        // No link on the way: the path as given.
        std::fs::create_dir_all(root.join("etc")).expect("mkdir");
        let plain = root.join("etc/x");
        assert_eq!(real_entry(&root_text, &plain).expect("resolve"), plain);
        // Outside test mode, or outside the root: as given.
        assert_eq!(
            real_entry("/", Path::new("/run/holo.pid")).expect("as is"),
            Path::new("/run/holo.pid")
        );
        assert_eq!(below(&root_text, &outside), None);
    }
}
