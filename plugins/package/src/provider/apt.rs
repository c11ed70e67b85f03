//! The APT provider: CCM's exact `dpkg-query`, `apt-get` and
//! `apt-cache` command lines, and the parsing of their output.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use holo_plugin::{Error, Result};

use super::{
    Executor, Installed, PackageManager, age_of, checked_query, other_casualties, query_failure,
    strings,
};
use crate::apply::Step;
use crate::model::ProviderKind;

/// `-f` for `dpkg-query -W`: CCM's fields, one package per line.
pub const QUERY_FORMAT: &str = "${Package} ${Version} ${Architecture} ${db:Status-Status}\n";

/// `dpkg-query -W -f=FORMAT NAME...`
pub fn query_argv(names: &[String]) -> Vec<String> {
    let mut argv = strings(&["dpkg-query", "-W"]);
    argv.push(format!("-f={QUERY_FORMAT}"));
    argv.extend(names.iter().cloned());
    argv
}

/// `apt-get install -y -q -o DPkg::Options::=--force-confold [--allow-downgrades] NAME[=VERSION]`
pub fn install_argv(name: &str, version: Option<&str>, allow_downgrades: bool) -> Vec<String> {
    let mut argv = strings(&[
        "apt-get",
        "install",
        "-y",
        "-q",
        "-o",
        "DPkg::Options::=--force-confold",
    ]);
    if allow_downgrades {
        argv.push("--allow-downgrades".to_owned());
    }
    argv.push(match version {
        Some(version) => format!("{name}={version}"),
        None => name.to_owned(),
    });
    argv
}

pub fn remove_argv(name: &str) -> Vec<String> {
    strings(&["apt-get", "-q", "-y", "remove", name])
}

pub fn simulate_remove_argv(name: &str) -> Vec<String> {
    strings(&["apt-get", "-s", "remove", name])
}

pub fn policy_argv(name: &str) -> Vec<String> {
    strings(&["apt-cache", "policy", name])
}

pub fn update_argv() -> Vec<String> {
    strings(&["apt-get", "-q", "update"])
}

/// Parses `dpkg-query` output. Only `installed` counts as present; a
/// multi-arch package may print several lines, and the first installed one
/// wins.
pub fn parse_query(stdout: &str) -> BTreeMap<String, Installed> {
    let mut found = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, version, arch, status] = fields[..] else {
            continue;
        };
        if status != "installed" {
            continue;
        }
        found.entry(name.to_owned()).or_insert_with(|| Installed {
            name: name.to_owned(),
            version: version.to_owned(),
            epoch: None,
            arch: arch.to_owned(),
        });
    }
    found
}

/// The `Candidate:` of `apt-cache policy` output; `(none)` means none.
pub fn parse_candidate(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("Candidate:"))
        .map(str::trim)
        .filter(|candidate| !candidate.is_empty() && *candidate != "(none)")
        .map(str::to_owned)
}

/// The packages `apt-get -s remove` would remove (its `Remv NAME [...]`
/// lines), without any `:arch` suffix.
pub fn parse_simulated_removals(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("Remv "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.split(':').next().unwrap_or(name).to_owned())
        .collect()
}

pub struct Apt {
    executor: Box<dyn Executor>,
}

impl Apt {
    pub fn new(executor: Box<dyn Executor>) -> Self {
        Apt { executor }
    }

    fn install(&mut self, name: &str, version: Option<&str>, allow_downgrades: bool) -> Result<()> {
        self.executor
            .change(&install_argv(name, version, allow_downgrades))
    }
}

impl PackageManager for Apt {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Apt
    }

    fn status(&mut self, names: &[String]) -> Result<BTreeMap<String, Installed>> {
        if names.is_empty() {
            return Ok(BTreeMap::new());
        }
        // Exit 1 only says that some name is unknown to dpkg: it is absent.
        let output = checked_query(&mut *self.executor, &query_argv(names), |output| {
            output.code == 0 || output.code == 1
        })?;
        Ok(parse_query(&output.stdout))
    }

    fn status_all(&mut self) -> Result<BTreeMap<String, Installed>> {
        let output = checked_query(&mut *self.executor, &query_argv(&[]), |output| {
            output.code == 0
        })?;
        Ok(parse_query(&output.stdout))
    }

    fn candidate(&mut self, name: &str) -> Result<Option<String>> {
        let output = checked_query(&mut *self.executor, &policy_argv(name), |output| {
            output.code == 0
        })?;
        Ok(parse_candidate(&output.stdout))
    }

    fn converge(&mut self, name: &str, step: &Step) -> Result<()> {
        match step {
            Step::Nothing => Ok(()),
            Step::Install => self.install(name, None, false),
            Step::InstallLatest | Step::UpgradeLatest => {
                let Some(candidate) = self.candidate(name)? else {
                    return Err(Error::new(format!(
                        "apt has no candidate version of {name}: check the name and the apt sources"
                    )));
                };
                self.install(name, Some(&candidate), false)
            }
            Step::InstallVersion(version) | Step::Upgrade(version) | Step::Downgrade(version) => {
                self.install(name, Some(version), true)
            }
            Step::Uninstall => self.executor.change(&remove_argv(name)),
        }
    }

    fn removal_casualties(&mut self, name: &str) -> Result<Vec<String>> {
        let argv = simulate_remove_argv(name);
        let output = self.executor.query(&argv)?;
        if output.code != 0 {
            let failure = query_failure(&argv, &output);
            return Err(Error::new(format!("simulating the removal with {failure}")));
        }
        Ok(other_casualties(
            parse_simulated_removals(&output.stdout),
            name,
        ))
    }

    fn refresh_lists(&mut self) -> Result<()> {
        self.executor.change(&update_argv())
    }

    fn lists_age(&mut self) -> Option<Duration> {
        // Honour APT_CONFIG's Dir::State::lists, as the real test uses it.
        let argv = strings(&["apt-config", "shell", "LISTS", "Dir::State::lists/d"]);
        let configured = self
            .executor
            .query(&argv)
            .ok()
            .filter(|output| output.code == 0)
            .and_then(|output| {
                let value = output.stdout.trim().strip_prefix("LISTS=")?.to_owned();
                Some(value.trim_matches('\'').to_owned())
            })
            .filter(|dir| !dir.is_empty());
        let dir = match configured {
            Some(dir) => PathBuf::from(dir),
            None => self.executor.root().join("var/lib/apt/lists"),
        };
        age_of(&dir)
    }

    fn lock_files(&self) -> Vec<PathBuf> {
        let root = self.executor.root();
        vec![
            root.join("var/lib/dpkg/lock-frontend"),
            root.join("var/lib/dpkg/lock"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_command_lines_are_the_seeds() {
        assert_eq!(
            install_argv("nginx", None, false).join(" "),
            "apt-get install -y -q -o DPkg::Options::=--force-confold nginx"
        );
        assert_eq!(
            install_argv("nginx", Some("1.24.0-1"), true).join(" "),
            "apt-get install -y -q -o DPkg::Options::=--force-confold --allow-downgrades nginx=1.24.0-1"
        );
        assert_eq!(
            remove_argv("telnet").join(" "),
            "apt-get -q -y remove telnet"
        );
    }

    #[test]
    fn query_has_a_newline_in_the_format_and_all_names() {
        let argv = query_argv(&["a".into(), "b".into()]);
        assert_eq!(argv[0], "dpkg-query");
        assert!(argv[2].ends_with("${db:Status-Status}\n"));
        assert_eq!(&argv[3..], ["a", "b"]);
    }

    #[test]
    fn only_installed_counts_and_multiarch_keeps_the_first() {
        let stdout = "vim 2:9.0.1378-2 amd64 installed\n\
                      libc6 2.36-9 amd64 installed\n\
                      libc6 2.36-9 i386 installed\n\
                      nano 7.2-1 amd64 config-files\n\
                      joe 4.6-1 amd64 half-configured\n";
        let found = parse_query(stdout);
        assert_eq!(found.keys().collect::<Vec<_>>(), ["libc6", "vim"]);
        assert_eq!(found["libc6"].arch, "amd64");
        assert_eq!(found["vim"].version, "2:9.0.1378-2");
    }

    #[test]
    fn candidate_comes_from_policy() {
        let policy = "zsh:\n  Installed: 5.9-8+b18\n  Candidate: 5.9-8+b18\n  Version table:\n *** 5.9-8+b18 500\n";
        assert_eq!(parse_candidate(policy).as_deref(), Some("5.9-8+b18"));
        assert_eq!(
            parse_candidate("x:\n  Installed: (none)\n  Candidate: (none)\n"),
            None
        );
        assert_eq!(parse_candidate(""), None);
    }

    #[test]
    fn simulated_removals_are_read_from_remv_lines() {
        let stdout = "NOTE: This is only a simulation!\n\
                      Remv vim [2:9.0.1378-2]\n\
                      Remv vim-addon:amd64 [1.0]\n";
        assert_eq!(parse_simulated_removals(stdout), ["vim", "vim-addon"]);
    }
}
