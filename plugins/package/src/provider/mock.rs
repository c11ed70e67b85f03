//! The test-mode package manager. It receives the exact command lines the
//! real provider would run, prints `MOCK: <command line>` for those that
//! change the system, and emulates all of them (output format and exit codes
//! included) against `$HOLO_ROOT_DIR/var/lib/holo-mock/packages.toml`:
//!
//! ```toml
//! [[installed]]
//! name = "vim"
//! version = "2:9.0.1378-2"     # dnf: "[EPOCH:]VERSION-RELEASE"
//! arch = "amd64"               # optional: amd64 (apt) or x86_64 (dnf)
//! status = "config-files"      # optional dpkg db:Status-Status, default installed
//! depends = ["vim-runtime"]    # optional: removing one of these removes vim too
//!
//! [[available]]
//! name = "vim"
//! versions = ["2:9.0.1378-2", "2:9.1.0016-1"]   # the highest is the candidate
//! arch = "amd64"               # optional
//! depends = ["vim-runtime"]    # optional, copied to [[installed]] on install
//! broken = true                # optional: installs end half-configured
//! ```
//!
//! A missing file is an empty database. `apt-get update` and `dnf makecache`
//! touch `$ROOT/var/lib/apt/lists` and `$ROOT/var/cache/dnf`, whose age the
//! providers read.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::command::{command_line, mock};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{Error, Result};
use serde::{Deserialize, Serialize};

use super::{Executor, Output};
use crate::model::ProviderKind;
use crate::version;

/// Where the database lives below the root.
pub const DATABASE: &str = "var/lib/holo-mock/packages.toml";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockDb {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<MockInstalled>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub available: Vec<MockAvailable>,
}

fn is_installed_status(status: &str) -> bool {
    status == "installed"
}

fn installed_status() -> String {
    "installed".to_owned()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockInstalled {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    #[serde(
        default = "installed_status",
        skip_serializing_if = "is_installed_status"
    )]
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockAvailable {
    pub name: String,
    pub versions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broken: bool,
}

pub struct MockExecutor {
    root: PathBuf,
    kind: ProviderKind,
}

/// How a failed command is reported, the same for the mock and the system.
fn failed(argv: &[String], code: i32) -> Error {
    Error::new(format!(
        "{} failed with exit status: {code}; see its output above",
        command_line(argv)
    ))
}

fn output(code: i32, stdout: String, stderr: String) -> Output {
    Output {
        code,
        stdout,
        stderr,
    }
}

impl MockExecutor {
    pub fn new(root: &Path, kind: ProviderKind) -> Self {
        MockExecutor {
            root: root.to_path_buf(),
            kind,
        }
    }

    fn db_path(&self) -> PathBuf {
        self.root.join(DATABASE)
    }

    /// The root, with every path resolved inside it (symlinks included).
    fn root_fs(&self) -> Result<RootFs> {
        RootFs::contained_in(&self.root)
            .map_err(|err| Error::io("open the root directory", &self.root, &err))
    }

    fn load(&self) -> Result<MockDb> {
        let path = self.db_path();
        let text = match self.root_fs()?.read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(MockDb::default()),
            Err(err) => return Err(Error::io("read the mock package database", &path, &err)),
        };
        toml::from_str(&text).map_err(|err| {
            let line = err
                .span()
                .map(|span| {
                    let before = text.get(..span.start).unwrap_or(&text);
                    before.lines().count().max(1)
                })
                .unwrap_or(1);
            Error::new(format!(
                "{}:{line}: invalid mock package database: {}; see the schema in holo-package's provider/mock.rs",
                path.display(),
                err.message()
            ))
        })
    }

    fn save(&self, db: &MockDb) -> Result<()> {
        let path = self.db_path();
        let text = toml::to_string(db).map_err(|err| {
            Error::new(format!("cannot serialise the mock package database: {err}"))
        })?;
        let fs = self.root_fs()?;
        if let Some(dir) = path.parent() {
            fs.create_dir_all(dir)
                .map_err(|err| Error::io("create", dir, &err))?;
        }
        atomic::write(&fs, &path, text.as_bytes(), &WriteOptions::mode(0o644))
    }

    fn compare(&self, a: &str, b: &str) -> Ordering {
        match self.kind {
            ProviderKind::Apt => version::deb::compare(a, b),
            ProviderKind::Dnf => version::rpm::compare(a, b),
        }
    }

    /// Whether an available version is what a command line asked for; dnf
    /// takes a version without release as any release.
    fn matches(&self, available: &str, wanted: &str) -> bool {
        match self.kind {
            ProviderKind::Apt => version::deb::compare(available, wanted).is_eq(),
            ProviderKind::Dnf => version::rpm::satisfies(available, wanted),
        }
    }

    fn default_arch(&self) -> &'static str {
        match self.kind {
            ProviderKind::Apt => "amd64",
            ProviderKind::Dnf => "x86_64",
        }
    }

    fn candidate<'d>(&self, db: &'d MockDb, name: &str) -> Option<&'d str> {
        let available = db.available.iter().find(|a| a.name == name)?;
        available
            .versions
            .iter()
            .max_by(|a, b| self.compare(a, b))
            .map(String::as_str)
    }

    fn touch(&self, relative: &str) -> Result<()> {
        let dir = self.root.join(relative);
        let fs = self.root_fs()?;
        fs.create_dir_all(&dir)
            .map_err(|err| Error::io("create", &dir, &err))?;
        fs.open(&dir)
            .and_then(|handle| handle.set_modified(SystemTime::now()))
            .map_err(|err| Error::io("touch", &dir, &err))
    }

    /// `name` and every installed package that depends on it, transitively.
    fn removal_set(db: &MockDb, name: &str) -> Vec<MockInstalled> {
        let mut doomed: Vec<MockInstalled> = db
            .installed
            .iter()
            .filter(|p| p.name == name)
            .cloned()
            .collect();
        let mut queue = vec![name.to_owned()];
        while let Some(next) = queue.pop() {
            for package in &db.installed {
                let hit = package.depends.contains(&next);
                if hit && !doomed.iter().any(|d| d.name == package.name) {
                    doomed.push(package.clone());
                    queue.push(package.name.clone());
                }
            }
        }
        doomed
    }

    fn remove(&self, db: &mut MockDb, name: &str) {
        let doomed: Vec<String> = Self::removal_set(db, name)
            .into_iter()
            .map(|package| package.name)
            .collect();
        db.installed
            .retain(|package| !doomed.contains(&package.name));
    }

    /// Installs `name` at `version` (the candidate when `None`).
    fn install(
        &self,
        argv: &[String],
        db: &mut MockDb,
        name: &str,
        version: Option<&str>,
        allow_downgrades: bool,
    ) -> Result<()> {
        let apt = self.kind == ProviderKind::Apt;
        let Some(available) = db.available.iter().find(|a| a.name == name).cloned() else {
            if apt {
                eprintln!("E: Unable to locate package {name}");
                return Err(failed(argv, 100));
            }
            println!("No match for argument: {name}");
            eprintln!("Error: Unable to find a match: {name}");
            return Err(failed(argv, 1));
        };
        let version = match version {
            Some(wanted) => match available
                .versions
                .iter()
                .filter(|v| self.matches(v, wanted))
                .max_by(|a, b| self.compare(a, b))
            {
                Some(found) => found.clone(),
                None => {
                    if apt {
                        eprintln!("E: Version '{wanted}' for '{name}' was not found");
                        return Err(failed(argv, 100));
                    }
                    eprintln!("Error: Unable to find a match: {name}-{wanted}");
                    return Err(failed(argv, 1));
                }
            },
            None => self
                .candidate(db, name)
                .map(str::to_owned)
                .unwrap_or_default(),
        };
        let previous = db.installed.iter().find(|p| p.name == name);
        if let Some(previous) = previous {
            let downgrade = self.compare(&version, &previous.version) == Ordering::Less;
            if downgrade && apt && !allow_downgrades {
                eprintln!(
                    "E: Packages were downgraded and -y was used without --allow-downgrades."
                );
                return Err(failed(argv, 100));
            }
        }
        db.installed.retain(|p| p.name != name);
        db.installed.push(MockInstalled {
            name: name.to_owned(),
            version,
            arch: Some(
                available
                    .arch
                    .clone()
                    .unwrap_or_else(|| self.default_arch().to_owned()),
            ),
            status: if available.broken {
                "half-configured".to_owned()
            } else {
                installed_status()
            },
            depends: available.depends.clone(),
        });
        db.installed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(())
    }

    /// Splits a dnf spec `NAME[-VERSION]` using the names the database knows.
    fn split_dnf_spec<'s>(db: &MockDb, spec: &'s str) -> (&'s str, Option<&'s str>) {
        let known = db
            .available
            .iter()
            .map(|a| a.name.as_str())
            .chain(db.installed.iter().map(|p| p.name.as_str()));
        let mut best: Option<(&'s str, Option<&'s str>)> = None;
        for name in known {
            let split = if spec == name {
                Some((&spec[..name.len()], None))
            } else {
                spec.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .map(|version| (&spec[..name.len()], Some(version)))
            };
            if let Some(candidate) = split
                && best.is_none_or(|(b, _)| candidate.0.len() > b.len())
            {
                best = Some(candidate);
            }
        }
        best.unwrap_or((spec, None))
    }

    fn query_dpkg(&self, argv: &[String], db: &MockDb) -> Output {
        let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
        let names: Vec<&String> = argv.iter().skip(3).collect();
        if names.is_empty() {
            // Without names dpkg-query lists every package it knows.
            for p in &db.installed {
                let arch = p.arch.as_deref().unwrap_or(self.default_arch());
                stdout += &format!("{} {} {arch} {}\n", p.name, p.version, p.status);
            }
            return output(0, stdout, stderr);
        }
        for name in names {
            match db.installed.iter().find(|p| &p.name == name) {
                Some(p) => {
                    let arch = p.arch.as_deref().unwrap_or(self.default_arch());
                    stdout += &format!("{} {} {arch} {}\n", p.name, p.version, p.status);
                }
                None => {
                    stderr += &format!("dpkg-query: no packages found matching {name}\n");
                    code = 1;
                }
            }
        }
        output(code, stdout, stderr)
    }

    fn query_policy(&self, db: &MockDb, name: &str) -> Output {
        let installed = db
            .installed
            .iter()
            .find(|p| p.name == name && p.status == "installed")
            .map_or("(none)", |p| p.version.as_str());
        let candidate = self.candidate(db, name).unwrap_or("(none)");
        if installed == "(none)" && candidate == "(none)" {
            return output(0, String::new(), String::new());
        }
        let stdout = format!("{name}:\n  Installed: {installed}\n  Candidate: {candidate}\n");
        output(0, stdout, String::new())
    }

    fn query_rpm(&self, argv: &[String], db: &MockDb) -> Output {
        let (mut stdout, mut missing) = (String::new(), 0);
        let names: Vec<&String> = if argv.get(1).is_some_and(|flag| flag == "-qa") {
            db.installed.iter().map(|p| &p.name).collect()
        } else {
            argv.iter().skip(4).collect()
        };
        for name in names {
            match db.installed.iter().find(|p| &p.name == name) {
                Some(p) => {
                    let evr = version::rpm::split(&p.version);
                    let arch = p.arch.as_deref().unwrap_or(self.default_arch());
                    stdout += &format!(
                        "{} {} {} {} {arch}\n",
                        p.name,
                        evr.epoch.unwrap_or("0"),
                        evr.version,
                        evr.release.unwrap_or("")
                    );
                }
                None => {
                    stdout += &format!("package {name} is not installed\n");
                    missing += 1;
                }
            }
        }
        output(missing, stdout, String::new())
    }

    fn simulate_removal(&self, db: &MockDb, name: &str) -> Output {
        let doomed = Self::removal_set(db, name);
        let mut stdout = String::new();
        match self.kind {
            ProviderKind::Apt => {
                for package in &doomed {
                    stdout += &format!("Remv {} [{}]\n", package.name, package.version);
                }
                output(0, stdout, String::new())
            }
            ProviderKind::Dnf => {
                for (index, package) in doomed.iter().enumerate() {
                    if index == 0 {
                        stdout += "Removing:\n";
                    } else if index == 1 {
                        stdout += "Removing dependent packages:\n";
                    }
                    stdout += &format!(
                        " {} {} {}\n",
                        package.name,
                        self.default_arch(),
                        package.version
                    );
                }
                output(1, stdout, "Operation aborted.\n".to_owned())
            }
        }
    }

    fn unsupported(argv: &[String]) -> Error {
        Error::new(format!(
            "the test-mode package manager cannot emulate {}",
            command_line(argv)
        ))
    }
}

impl Executor for MockExecutor {
    fn query(&mut self, argv: &[String]) -> Result<Output> {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let db = self.load()?;
        match words[..] {
            ["dpkg-query", "-W", ..] => Ok(self.query_dpkg(argv, &db)),
            ["apt-cache", "policy", name] => Ok(self.query_policy(&db, name)),
            ["apt-get", "-s", "remove", name] | ["dnf", "remove", "--assumeno", name] => {
                Ok(self.simulate_removal(&db, name))
            }
            ["rpm", "-q" | "-qa", "--queryformat", ..] => Ok(self.query_rpm(argv, &db)),
            // Unknown in test mode: the providers fall back to the root's paths.
            ["apt-config", ..] => Ok(output(100, String::new(), String::new())),
            _ => Err(Self::unsupported(argv)),
        }
    }

    fn change(&mut self, argv: &[String]) -> Result<()> {
        mock(argv);
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut db = self.load()?;
        match words[..] {
            ["apt-get", "install", .., spec] => {
                let allow_downgrades = words.contains(&"--allow-downgrades");
                let (name, version) = match spec.split_once('=') {
                    Some((name, version)) => (name, Some(version)),
                    None => (spec, None),
                };
                self.install(argv, &mut db, name, version, allow_downgrades)?;
            }
            ["apt-get", "-q", "-y", "remove", name] | ["dnf", "remove", "-y", name] => {
                self.remove(&mut db, name);
            }
            ["apt-get", "-q", "update"] => return self.touch("var/lib/apt/lists"),
            ["dnf", "makecache"] => return self.touch("var/cache/dnf"),
            ["dnf", "install", "-y", spec] => {
                let (name, version) = Self::split_dnf_spec(&db, spec);
                // Like dnf: installing an installed package without a version does nothing.
                let installed = db.installed.iter().any(|p| p.name == name);
                if version.is_some() || !installed {
                    self.install(argv, &mut db, name, version, true)?;
                }
            }
            ["dnf", "downgrade", "-y", spec] => {
                let (name, version) = Self::split_dnf_spec(&db, spec);
                self.install(argv, &mut db, name, version, true)?;
            }
            ["dnf", "upgrade", "-y", name] => {
                self.install(argv, &mut db, name, None, true)?;
            }
            _ => return Err(Self::unsupported(argv)),
        }
        self.save(&db)
    }

    fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::strings;

    fn executor_with(db: &str, kind: ProviderKind) -> (tempfile::TempDir, MockExecutor) {
        let root = tempfile::tempdir().expect("tempdir");
        let path = root.path().join(DATABASE);
        std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir");
        std::fs::write(&path, db).expect("write db");
        let executor = MockExecutor::new(root.path(), kind);
        (root, executor)
    }

    const DB: &str = r#"
[[installed]]
name = "vim"
version = "2:9.0.1378-2"
depends = ["vim-runtime"]

[[installed]]
name = "vim-runtime"
version = "2:9.0.1378-2"

[[available]]
name = "vim"
versions = ["2:9.0.1378-2", "2:9.1.0016-1"]
"#;

    #[test]
    fn dpkg_query_reports_known_and_fails_for_unknown() {
        let (_root, mut mock) = executor_with(DB, ProviderKind::Apt);
        let out = mock
            .query(&super::super::apt::query_argv(&[
                "vim".into(),
                "nope".into(),
            ]))
            .expect("emulated");
        assert_eq!(out.code, 1);
        assert_eq!(out.stdout, "vim 2:9.0.1378-2 amd64 installed\n");
        assert_eq!(out.stderr, "dpkg-query: no packages found matching nope\n");
    }

    #[test]
    fn install_without_version_takes_the_candidate_and_downgrade_needs_the_flag() {
        let (_root, mut mock) = executor_with(DB, ProviderKind::Apt);
        mock.change(&super::super::apt::install_argv("vim", None, false))
            .expect("installs");
        let db = mock.load().expect("db");
        let vim = db.installed.iter().find(|p| p.name == "vim").expect("vim");
        assert_eq!(vim.version, "2:9.1.0016-1");
        let err = mock
            .change(&super::super::apt::install_argv(
                "vim",
                Some("2:9.0.1378-2"),
                false,
            ))
            .expect_err("downgrade without flag");
        assert!(err.message().contains("exit status: 100"), "{err}");
        mock.change(&super::super::apt::install_argv(
            "vim",
            Some("2:9.0.1378-2"),
            true,
        ))
        .expect("downgrade with flag");
    }

    #[test]
    fn removing_a_dependency_removes_its_dependents() {
        let (_root, mut mock) = executor_with(DB, ProviderKind::Apt);
        let simulated = mock
            .query(&super::super::apt::simulate_remove_argv("vim-runtime"))
            .expect("simulated");
        assert_eq!(
            super::super::apt::parse_simulated_removals(&simulated.stdout),
            ["vim-runtime", "vim"]
        );
        mock.change(&super::super::apt::remove_argv("vim-runtime"))
            .expect("removes");
        assert!(mock.load().expect("db").installed.is_empty());
    }

    #[test]
    fn rpm_query_splits_epoch_and_dnf_specs_split_at_known_names() {
        let db = "[[installed]]\nname = \"zsh\"\nversion = \"1:5.8-9.el9\"\n\
                  [[available]]\nname = \"zsh-syntax\"\nversions = [\"1.0-1\"]\n";
        let (_root, mut mock) = executor_with(db, ProviderKind::Dnf);
        let out = mock
            .query(&super::super::dnf::query_argv(&[
                "zsh".into(),
                "bash".into(),
            ]))
            .expect("emulated");
        assert_eq!(
            out.stdout,
            "zsh 1 5.8 9.el9 x86_64\npackage bash is not installed\n"
        );
        assert_eq!(out.code, 1);
        let parsed = mock.load().expect("db");
        assert_eq!(
            MockExecutor::split_dnf_spec(&parsed, "zsh-syntax-1.0-1"),
            ("zsh-syntax", Some("1.0-1"))
        );
        assert_eq!(MockExecutor::split_dnf_spec(&parsed, "zsh"), ("zsh", None));
    }

    #[test]
    fn invalid_database_names_file_and_line() {
        let (_root, mock) = executor_with(
            "[[installed]]\nname = \"x\"\nbogus = 1\n",
            ProviderKind::Apt,
        );
        let err = mock.load().expect_err("invalid");
        assert!(err.message().contains("packages.toml:"), "{err}");
        assert!(err.message().contains("bogus"), "{err}");
    }

    #[test]
    fn unknown_commands_are_refused() {
        let (_root, mut mock) = executor_with("", ProviderKind::Apt);
        assert!(mock.query(&strings(&["rm", "-rf", "/"])).is_err());
    }
}
