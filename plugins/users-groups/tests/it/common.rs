//! A test root as Holo 3's `holo-test` lays it out (`WORK/target/`, run
//! with `HOLO_ROOT_DIR=./target/` from `WORK`, so that every path printed
//! is the same in two copies), and running a driver on it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The account files of a small system.
pub const PASSWD: &str =
    "root:x:0:0:root:/root:/bin/bash\nbob:x:1002:100:Bob:/home/bob:/bin/bash\n";
pub const GROUP: &str = "root:x:0:root\nusers:x:100:\naudio:x:92:bob\nvideo:x:91:\n";

/// A work directory holding `target/`, the root.
pub struct Root {
    work: tempfile::TempDir,
}

impl Root {
    /// A root with `etc/holorc` enabling `plugin` (a path) and the
    /// directories `holo-test` creates.
    pub fn new(plugin: &Path) -> Root {
        let root = Root {
            work: tempfile::tempdir().unwrap(),
        };
        for dir in [
            "run",
            "tmp",
            "usr/share/holo/users-groups",
            "usr/share/holo/generators",
            "var/lib/holo/users-groups",
        ] {
            fs::create_dir_all(root.path(dir)).unwrap();
        }
        root.set_plugin(plugin);
        root
    }

    /// Points holorc at another plugin binary.
    pub fn set_plugin(&self, plugin: &Path) {
        self.write(
            "etc/holorc",
            &format!("plugin users-groups={}\n", plugin.display()),
        );
    }

    /// A path below the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.work.path().join("target").join(relative)
    }

    pub fn work(&self) -> &Path {
        self.work.path()
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    pub fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.path(relative))
            .unwrap_or_else(|err| panic!("cannot read {relative}: {err}"))
    }

    /// Runs `driver` with `args` in the root; stdout and stderr together,
    /// with the run's cache directory as `holo-test` shows it.
    pub fn holo(&self, driver: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
        let output = Command::new(driver)
            .args(args)
            .current_dir(self.work())
            .env("HOLO_ROOT_DIR", "./target/")
            .env("TMPDIR", "./target/tmp")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        without_run_number(&without_colors(&text))
    }

    /// Every file below the state directory, with its contents.
    pub fn images(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for dir in ["base", "provisioned"] {
            let Ok(entries) = fs::read_dir(self.path(&format!("var/lib/holo/users-groups/{dir}")))
            else {
                continue;
            };
            for entry in entries {
                let entry = entry.unwrap();
                let name = format!("{dir}/{}", entry.file_name().to_string_lossy());
                found.push((name, fs::read_to_string(entry.path()).unwrap()));
            }
        }
        found.sort();
        found
    }
}

/// The text without ANSI colours (Holo 3 prints them even into a pipe), as
/// `holo-test` strips them.
fn without_colors(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// `target/tmp/holo.12345` as `target/tmp/holo`, as `holo-test` does.
fn without_run_number(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("tmp/holo.") {
        let (before, after) = rest.split_at(at + "tmp/holo".len());
        out.push_str(before);
        let digits = after[1..].bytes().take_while(u8::is_ascii_digit).count();
        rest = if digits > 0 {
            &after[1 + digits..]
        } else {
            after
        };
    }
    out.push_str(rest);
    out
}
