//! The DNF provider: CCM's `rpm -q` and `dnf` command lines and the
//! parsing of their output. Versions come out as `VERSION-RELEASE`, with a
//! non-zero epoch kept beside them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use holo_plugin::Result;

use super::{
    Executor, Installed, PackageManager, age_of, checked_query, other_casualties, strings,
};
use crate::apply::Step;
use crate::model::ProviderKind;

/// `--queryformat` for `rpm -q`: CCM's NEVRA, one package per line.
pub const QUERY_FORMAT: &str = "%{NAME} %|EPOCH?{%{EPOCH}}:{0}| %{VERSION} %{RELEASE} %{ARCH}\n";

/// `rpm -q --queryformat FORMAT NAME...`
pub fn query_argv(names: &[String]) -> Vec<String> {
    let mut argv = strings(&["rpm", "-q", "--queryformat", QUERY_FORMAT]);
    argv.extend(names.iter().cloned());
    argv
}

/// `rpm -qa --queryformat FORMAT`: every installed package.
pub fn query_all_argv() -> Vec<String> {
    strings(&["rpm", "-qa", "--queryformat", QUERY_FORMAT])
}

/// `NAME` or `NAME-[EPOCH:]VERSION[-RELEASE]`, as dnf takes package specs.
fn spec(name: &str, version: Option<&str>) -> String {
    match version {
        Some(version) => format!("{name}-{version}"),
        None => name.to_owned(),
    }
}

pub fn install_argv(name: &str, version: Option<&str>) -> Vec<String> {
    let mut argv = strings(&["dnf", "install", "-y"]);
    argv.push(spec(name, version));
    argv
}

pub fn upgrade_argv(name: &str) -> Vec<String> {
    strings(&["dnf", "upgrade", "-y", name])
}

pub fn downgrade_argv(name: &str, version: &str) -> Vec<String> {
    let mut argv = strings(&["dnf", "downgrade", "-y"]);
    argv.push(spec(name, Some(version)));
    argv
}

pub fn remove_argv(name: &str) -> Vec<String> {
    strings(&["dnf", "remove", "-y", name])
}

pub fn simulate_remove_argv(name: &str) -> Vec<String> {
    strings(&["dnf", "remove", "--assumeno", name])
}

pub fn makecache_argv() -> Vec<String> {
    strings(&["dnf", "makecache"])
}

/// Parses `rpm -q` output; `package X is not installed` lines are skipped.
pub fn parse_query(stdout: &str) -> BTreeMap<String, Installed> {
    let mut found = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, epoch, version, release, arch] = fields[..] else {
            continue;
        };
        if !epoch.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        found.entry(name.to_owned()).or_insert_with(|| Installed {
            name: name.to_owned(),
            version: format!("{version}-{release}"),
            epoch: (!epoch.trim_start_matches('0').is_empty()).then(|| epoch.to_owned()),
            arch: arch.to_owned(),
        });
    }
    found
}

/// The package names in the `Removing…:` sections of dnf's transaction
/// table (the dependents and unused dependencies too).
pub fn parse_simulated_removals(stdout: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_section = false;
    for line in stdout.lines() {
        if line.starts_with("Removing") && line.trim_end().ends_with(':') {
            in_section = true;
        } else if in_section && line.starts_with(' ') {
            if let Some(name) = line.split_whitespace().next() {
                names.push(name.to_owned());
            }
        } else {
            in_section = false;
        }
    }
    names
}

pub struct Dnf {
    executor: Box<dyn Executor>,
}

impl Dnf {
    pub fn new(executor: Box<dyn Executor>) -> Self {
        Dnf { executor }
    }
}

impl PackageManager for Dnf {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Dnf
    }

    fn status(&mut self, names: &[String]) -> Result<BTreeMap<String, Installed>> {
        if names.is_empty() {
            return Ok(BTreeMap::new());
        }
        // rpm exits with the number of names that are not installed.
        let output = checked_query(&mut *self.executor, &query_argv(names), |output| {
            output.code == 0 || stdout_not_installed(&output.stdout) != 0
        })?;
        Ok(parse_query(&output.stdout))
    }

    fn status_all(&mut self) -> Result<BTreeMap<String, Installed>> {
        let output = checked_query(&mut *self.executor, &query_all_argv(), |output| {
            output.code == 0
        })?;
        Ok(parse_query(&output.stdout))
    }

    fn candidate(&mut self, _name: &str) -> Result<Option<String>> {
        // dnf picks the version itself; CCM runs no query for it.
        Ok(None)
    }

    fn converge(&mut self, name: &str, step: &Step) -> Result<()> {
        let argv = match step {
            Step::Nothing => return Ok(()),
            Step::Install | Step::InstallLatest => install_argv(name, None),
            // `dnf install` leaves an installed package alone, so `latest`
            // upgrades explicitly (CCM's `install` would never upgrade).
            Step::UpgradeLatest => upgrade_argv(name),
            Step::InstallVersion(version) | Step::Upgrade(version) => {
                install_argv(name, Some(version))
            }
            Step::Downgrade(version) => downgrade_argv(name, version),
            Step::Uninstall => remove_argv(name),
        };
        self.executor.change(&argv)
    }

    fn removal_casualties(&mut self, name: &str) -> Result<Vec<String>> {
        // `--assumeno` always ends with exit 1 ("Operation aborted").
        let output = self.executor.query(&simulate_remove_argv(name))?;
        Ok(other_casualties(
            parse_simulated_removals(&output.stdout),
            name,
        ))
    }

    fn refresh_lists(&mut self) -> Result<()> {
        self.executor.change(&makecache_argv())
    }

    fn lists_age(&mut self) -> Option<Duration> {
        age_of(&self.executor.root().join("var/cache/dnf"))
    }

    fn lock_files(&self) -> Vec<PathBuf> {
        vec![self.executor.root().join("var/lib/rpm/.rpm.lock")]
    }
}

fn stdout_not_installed(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|line| line.ends_with(" is not installed"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_the_seeds() {
        assert_eq!(install_argv("zsh", None).join(" "), "dnf install -y zsh");
        assert_eq!(
            install_argv("nginx", Some("1.24.0-1.el9")).join(" "),
            "dnf install -y nginx-1.24.0-1.el9"
        );
        assert_eq!(
            downgrade_argv("zsh", "5.8-9.el9").join(" "),
            "dnf downgrade -y zsh-5.8-9.el9"
        );
        assert_eq!(remove_argv("zsh").join(" "), "dnf remove -y zsh");
        assert_eq!(upgrade_argv("tmux").join(" "), "dnf upgrade -y tmux");
        assert!(query_argv(&["zsh".into()])[3].ends_with("%{ARCH}\n"));
    }

    #[test]
    fn query_output_keeps_epoch_apart() {
        let stdout = "zsh 0 5.8 9.el9 x86_64\nvim-enhanced 2 9.0.2081 1.el9 x86_64\npackage nope is not installed\n";
        let found = parse_query(stdout);
        assert_eq!(found.len(), 2);
        assert_eq!(found["zsh"].version, "5.8-9.el9");
        assert_eq!(found["zsh"].epoch, None);
        assert_eq!(found["vim-enhanced"].version, "9.0.2081-1.el9");
        assert_eq!(found["vim-enhanced"].full_version(), "2:9.0.2081-1.el9");
    }

    #[test]
    fn simulated_removal_lists_dependents_and_unused_dependencies() {
        let stdout = "Dependencies resolved.\n\
            ================\n \
            Package   Arch    Version   Repository  Size\n\
            ================\n\
            Removing:\n \
            zsh       x86_64  5.8-9.el9 @baseos     7.6 M\n\
            Removing dependent packages:\n \
            zsh-syntax noarch 1.0-1     @epel       10 k\n\
            Removing unused dependencies:\n \
            libfoo    x86_64  1.0-1     @baseos     1 M\n\
            \n\
            Transaction Summary\n";
        assert_eq!(
            parse_simulated_removals(stdout),
            ["zsh", "zsh-syntax", "libfoo"]
        );
    }
}
