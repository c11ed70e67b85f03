//! A test root whose symlinks try to lead outside it, shared by the
//! containment tests of the SDK (in holo-demo) and of every plugin that
//! writes files (included with `#[path]`, since they live in different
//! crates).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// `TMP/a/b/c/root` and `TMP/elsewhere`: a relative escape that climbs
/// three levels from the root lands in the temp directory, where
/// [`Escapes::outside_the_root`] sees it.
pub struct Escapes {
    pub dir: tempfile::TempDir,
}

impl Escapes {
    /// A fresh temp directory with an empty root and `elsewhere`.
    pub fn new() -> Escapes {
        let escapes = Escapes {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        fs::create_dir_all(escapes.root()).expect("mkdir root");
        fs::create_dir_all(escapes.elsewhere()).expect("mkdir elsewhere");
        escapes
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("a/b/c/root")
    }

    /// `relative` below the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// The host directory that absolute links point at.
    pub fn elsewhere(&self) -> PathBuf {
        self.dir.path().join("elsewhere")
    }

    /// Where [`Escapes::elsewhere`] is when resolved inside the root.
    pub fn elsewhere_in_root(&self) -> PathBuf {
        self.root()
            .join(self.elsewhere().strip_prefix("/").expect("absolute"))
    }

    /// `ROOT/link -> elsewhere` (absolute).
    pub fn link_elsewhere(&self, link: &str) {
        self.link(link, &self.elsewhere());
    }

    /// `ROOT/link -> target`, creating the link's parent.
    pub fn link(&self, link: &str, target: &Path) {
        let link = self.path(link);
        fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        symlink(target, link).expect("symlink");
    }

    /// Plugin binary `bin` in test mode on this root, with the
    /// directories holo gives plugin `plugin` below it.
    #[allow(dead_code)] // not every test that includes this runs a plugin
    pub fn plugin(&self, bin: &Path, plugin: &str) -> std::process::Command {
        let mut command = std::process::Command::new(bin);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOLO_API_VERSION", "3")
            .env("HOLO_ROOT_DIR", self.root())
            .env(
                "HOLO_RESOURCE_DIR",
                self.path(&format!("usr/share/holo/{plugin}")),
            )
            .env(
                "HOLO_STATE_DIR",
                self.path(&format!("var/lib/holo/{plugin}")),
            )
            .env("HOLO_CACHE_DIR", self.path("tmp/holo.1"));
        command
    }

    /// Every entry outside the root, with the content of files.
    pub fn outside_the_root(&self) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        walk(self.dir.path(), &self.root(), &mut found);
        found.sort();
        found
    }
}

fn walk(dir: &Path, skip: &Path, found: &mut Vec<(PathBuf, String)>) {
    for entry in fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path == skip {
            continue;
        }
        if fs::symlink_metadata(&path).expect("lstat").is_dir() {
            found.push((path.clone(), String::new()));
            walk(&path, skip, found);
        } else {
            let content = fs::read(&path).unwrap_or_default();
            found.push((path, String::from_utf8_lossy(&content).into_owned()));
        }
    }
}

/// Writes `text` to `path`, creating its parents.
pub fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}
