//! A test root whose symlinks try to lead outside it, shared by the
//! containment tests of the SDK (in holo-demo) and of every plugin that
//! writes files.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::plugin_run::PluginRun;

/// `TMP/a/b/c/root` and `TMP/elsewhere`: a relative escape that climbs
/// three levels from the root lands in the temp directory, where
/// [`Escapes::outside_the_root`] sees it.
pub struct Escapes {
    pub dir: tempfile::TempDir,
}

impl Default for Escapes {
    fn default() -> Escapes {
        Escapes::new()
    }
}

impl Escapes {
    /// A fresh temp directory with an empty root and `elsewhere`.
    pub fn new() -> Escapes {
        let escapes = Escapes {
            dir: must(tempfile::tempdir(), "create a temporary directory"),
        };
        must(fs::create_dir_all(escapes.root()), "create the root");
        must(fs::create_dir_all(escapes.elsewhere()), "create elsewhere");
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
        self.root().join(
            self.elsewhere()
                .strip_prefix("/")
                .unwrap_or(&self.elsewhere()),
        )
    }

    /// `ROOT/link -> elsewhere` (absolute).
    pub fn link_elsewhere(&self, link: &str) {
        self.link(link, &self.elsewhere());
    }

    /// `ROOT/link -> target`, creating the link's parent.
    pub fn link(&self, link: &str, target: &Path) {
        let link = self.path(link);
        create_parent(&link);
        must(symlink(target, link), "create a symlink");
    }

    /// Plugin binary `bin` in test mode on this root, with the
    /// directories holo gives plugin `plugin` below it.
    pub fn plugin(&self, bin: &Path, plugin: &str) -> PluginRun {
        PluginRun::new(bin, plugin, &self.root()).cache_dir(self.path("tmp/holo.1"))
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
    for entry in must(fs::read_dir(dir), "list a directory") {
        let path = must(entry, "read a directory entry").path();
        if path == skip {
            continue;
        }
        if must(fs::symlink_metadata(&path), "look at an entry").is_dir() {
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
    create_parent(path);
    must(fs::write(path, text), "write a file");
}

fn create_parent(path: &Path) {
    if let Some(parent) = path.parent() {
        must(fs::create_dir_all(parent), "create a directory");
    }
}

/// The value, or the test fails saying what could not be done.
fn must<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|err| panic!("cannot {what}: {err}"))
}
