//! `holo-ID ensure` and `holo-ID status` as the shell runs them: a fresh
//! root below a temporary directory, with `TMPDIR` beside it (where
//! `ensure` makes its private run directory), and the plugin binary run in
//! a clean environment with `HOLO_ROOT_DIR` set.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A test root for one plugin's one-off commands.
pub struct OneOffRoot {
    dir: tempfile::TempDir,
    root: PathBuf,
    binary: String,
}

impl OneOffRoot {
    /// An empty root for `binary` (such as `holo-exec`).
    pub fn new(binary: &str) -> OneOffRoot {
        let dir = must(tempfile::tempdir(), "create a temporary directory");
        let root = dir.path().join("root");
        must(fs::create_dir_all(&root), "create the root");
        must(fs::create_dir_all(dir.path().join("tmp")), "create TMPDIR");
        OneOffRoot {
            dir,
            root,
            binary: binary.to_string(),
        }
    }

    /// The root directory (`HOLO_ROOT_DIR`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `TMPDIR` of the runs.
    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// `path` (absolute or not) below the root.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Writes `text` to `path` below the root, creating its directories.
    pub fn write(&self, path: &str, text: &str) -> &OneOffRoot {
        let path = self.path(path);
        if let Some(parent) = path.parent() {
            must(fs::create_dir_all(parent), "create a directory");
        }
        must(fs::write(&path, text), "write a file");
        self
    }

    /// Runs the plugin binary with `args` (`ensure ...`, `status NAME`).
    pub fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(crate::binary(&self.binary))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOLO_ROOT_DIR", &self.root)
            .env("TMPDIR", self.tmp())
            .output()
            .unwrap_or_else(|err| panic!("cannot run {}: {err}", self.binary))
    }
}

/// The value, or the test fails saying what could not be done.
fn must<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|err| panic!("cannot {what}: {err}"))
}

pub use crate::process::text;
