//! A root for holo-files: the directories Holo 3's driver expects, a
//! repository, and runs of a driver with a plugin against it.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary root with `etc/holorc` naming the files plugin.
pub struct Root {
    pub dir: tempfile::TempDir,
}

impl Root {
    pub fn new() -> Root {
        let dir = tempfile::tempdir().unwrap();
        for sub in [
            "etc",
            "run",
            "tmp",
            "usr/share/holo/files",
            "usr/share/holo/generators",
        ] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("etc/os-release"), "ID=unittest\n").unwrap();
        Root { dir }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Writes `content` at `relative` (parents created), with `mode`.
    pub fn write(&self, relative: &str, content: &str, mode: u32) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    pub fn symlink(&self, relative: &str, points_to: &str) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(points_to, path).unwrap();
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// Runs `driver ARGS` with `plugin` as the files plugin.
    pub fn run(&self, driver: &Path, plugin: &Path, args: &[&str]) -> Output {
        std::fs::write(
            self.path("etc/holorc"),
            format!("plugin files={}\n", plugin.display()),
        )
        .unwrap();
        Command::new(driver)
            .args(args)
            .env("HOLO_ROOT_DIR", self.dir.path())
            .env("TMPDIR", self.path("tmp"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    /// Every entry below the root but `tmp/`, `run/` and `etc/holorc`: its
    /// type, permissions and content (or link).
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        let mut found = BTreeMap::new();
        walk(self.dir.path(), self.dir.path(), &mut found);
        found
    }
}

fn walk(root: &Path, dir: &Path, found: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ["tmp", "run", "etc/holorc"].contains(&relative.as_str()) {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let what = if meta.file_type().is_symlink() {
            format!("link {}", std::fs::read_link(&path).unwrap().display())
        } else if meta.is_dir() {
            walk(root, &path, found);
            format!("dir {mode:o}")
        } else {
            let content = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            format!("file {mode:o} {content}")
        };
        found.insert(relative, what);
    }
}

/// Our driver and plugin.
pub fn ours() -> (PathBuf, PathBuf) {
    (
        test_support::binary("holo"),
        test_support::binary("holo-files"),
    )
}

/// What a run printed, both streams, without colours (Holo 3 always
/// writes them).
pub fn printed(output: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut plain = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find("\x1b[") {
        plain.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        rest = after.find('m').map_or("", |end| &after[end + 1..]);
    }
    plain.push_str(rest);
    plain
}

/// A repository of every kind of entry over every kind of target, with
/// the targets as their packages installed them.
pub fn populate(root: &Root) {
    let files = "usr/share/holo/files";
    root.write("etc/plain.conf", "stock\n", 0o644);
    root.write(&format!("{files}/10-a/etc/plain.conf"), "ours\n", 0o644);
    root.write("etc/private.conf", "secret\nkeep\n", 0o600);
    let script = "#!/bin/sh\nsed s/keep/kept/\n";
    root.write(
        &format!("{files}/10-a/etc/private.conf.holoscript"),
        script,
        0o755,
    );
    root.write("etc/contents", "one\ntwo\n", 0o644);
    root.symlink("etc/linked.conf", "contents");
    root.write(
        &format!("{files}/10-a/etc/linked.conf.holoscript"),
        "#!/bin/sh\ncat\necho three\n",
        0o755,
    );
    root.write("etc/to-link.conf", "plain\n", 0o644);
    root.symlink(&format!("{files}/10-a/etc/to-link.conf"), "/etc/contents");
    root.write("etc/stacked.conf", "a\n", 0o644);
    root.write(&format!("{files}/10-a/etc/stacked.conf"), "b\n", 0o644);
    root.write(
        &format!("{files}/20-b/etc/stacked.conf.holoscript"),
        "#!/bin/sh\ncat\necho c\n",
        0o755,
    );
}
