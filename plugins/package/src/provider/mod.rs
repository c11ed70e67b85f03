//! Package managers behind one interface: apt and dnf build CCM's exact
//! command lines and hand them to an [`Executor`], which either runs them
//! (the system) or emulates them against a TOML package database (test
//! mode, [`mock`]). Also here: waiting for the dpkg/rpm lock, and refreshing
//! the package lists at most once per run.

pub mod apt;
pub mod dnf;
pub mod mock;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use holo_plugin::command::command_line;
use holo_plugin::process::{Command, Status};
use holo_plugin::{Error, Result};

use crate::apply::{Current, Step};
use crate::model::ProviderKind;
use crate::version;

/// The environment every package manager command runs with (CCM's APT
/// provider), so that nothing prompts.
pub const COMMAND_ENV: &[(&str, &str)] = &[
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("APT_LISTBUGS_FRONTEND", "none"),
    ("APT_LISTCHANGES_FRONTEND", "none"),
];

/// One installed package as the package manager reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    /// As the package manager prints it: Debian's full version, or RPM's
    /// `VERSION-RELEASE`.
    pub version: String,
    /// RPM's epoch when it is not 0 (Debian keeps the epoch in `version`).
    pub epoch: Option<String>,
    pub arch: String,
}

impl Installed {
    /// The version to order and compare: RPM's epoch joins it as `E:V-R`.
    pub fn full_version(&self) -> String {
        match &self.epoch {
            Some(epoch) => format!("{epoch}:{}", self.version),
            None => self.version.clone(),
        }
    }

    pub fn as_current(installed: Option<&Installed>) -> Current {
        match installed {
            None => Current::Absent,
            Some(package) => Current::Installed {
                version: package.full_version(),
            },
        }
    }
}

/// What a finished command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs (or emulates) package manager command lines.
pub trait Executor {
    /// A command that only reads: its output is captured.
    fn query(&mut self, argv: &[String]) -> Result<Output>;
    /// A command that changes the system: its output goes to the user, and
    /// a non-zero exit is an error naming the command line.
    fn change(&mut self, argv: &[String]) -> Result<()>;
    /// Where lock files and package lists live: `/`, or the test root.
    fn root(&self) -> &Path;
}

/// An argument vector from string literals.
fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

/// Runs a query and keeps its output when `accepted` takes its exit code
/// for success; otherwise the error names the command line, the exit code
/// and what the command printed on stderr.
fn checked_query(
    executor: &mut dyn Executor,
    argv: &[String],
    accepted: impl FnOnce(&Output) -> bool,
) -> Result<Output> {
    let output = executor.query(argv)?;
    if accepted(&output) {
        Ok(output)
    } else {
        Err(query_failure(argv, &output))
    }
}

/// `CMD failed with exit code N: STDERR`, for a query that failed.
fn query_failure(argv: &[String], output: &Output) -> Error {
    Error::new(format!(
        "{} failed with exit code {}: {}",
        command_line(argv),
        output.code,
        output.stderr.trim()
    ))
}

/// What a simulated removal of `name` takes besides `name` itself: sorted,
/// each package once.
fn other_casualties(removed: Vec<String>, name: &str) -> Vec<String> {
    let mut others: Vec<String> = removed
        .into_iter()
        .filter(|removed| removed != name)
        .collect();
    others.sort();
    others.dedup();
    others
}

/// The executor for the real system, on the SDK's process runner.
pub struct SystemExecutor;

impl Executor for SystemExecutor {
    fn query(&mut self, argv: &[String]) -> Result<Output> {
        let finished = command(argv)?.run().map_err(not_started)?;
        Ok(Output {
            code: match finished.status {
                Status::Exited(code) => code,
                _ => -1,
            },
            stdout: String::from_utf8_lossy(finished.whole_stdout(&argv.join(" "))?).into_owned(),
            stderr: String::from_utf8_lossy(&finished.stderr).into_owned(),
        })
    }

    fn change(&mut self, argv: &[String]) -> Result<()> {
        let status = command(argv)?.run_forwarded().map_err(not_started)?;
        let how = match status {
            Status::Exited(0) => return Ok(()),
            // The same words as the test-mode mock.
            Status::Exited(code) => format!("exit status: {code}"),
            other => other.to_string(),
        };
        Err(Error::new(format!(
            "{} failed with {how}; see its output above",
            command_line(argv)
        )))
    }

    fn root(&self) -> &Path {
        Path::new("/")
    }
}

/// `argv` with the non-interactive environment.
fn command(argv: &[String]) -> Result<Command> {
    let mut command = Command::from_argv(argv)?;
    for (key, value) in COMMAND_ENV {
        command = command.env(key, value);
    }
    Ok(command)
}

/// A package manager that cannot be started may be the wrong one.
fn not_started(err: Error) -> Error {
    Error::new(format!("{err}, or set provider in the resource"))
}

/// What apt and dnf have in common, each method one or two commands.
pub trait PackageManager {
    fn kind(&self) -> ProviderKind;
    /// The installed packages among `names`, in one query however many.
    fn status(&mut self, names: &[String]) -> Result<BTreeMap<String, Installed>>;
    /// Every installed package, in one query.
    fn status_all(&mut self) -> Result<BTreeMap<String, Installed>>;
    /// The version an install without a version would pick, if known.
    fn candidate(&mut self, name: &str) -> Result<Option<String>>;
    /// Runs the commands for one step of the decision table.
    fn converge(&mut self, name: &str, step: &Step) -> Result<()>;
    /// Simulates removing `name`: every other package the removal would take.
    fn removal_casualties(&mut self, name: &str) -> Result<Vec<String>>;
    /// `apt-get update` / `dnf makecache`.
    fn refresh_lists(&mut self) -> Result<()>;
    /// How old the package lists are; `None` when unknown (then refresh).
    fn lists_age(&mut self) -> Option<Duration>;
    /// Lock files (below the root) that another package manager may hold.
    fn lock_files(&self) -> Vec<PathBuf>;
}

/// The provider for a kind: the system's package manager, or in test mode
/// the same command lines emulated against the mock database.
pub fn open(kind: ProviderKind, root: &Path, test_mode: bool) -> Box<dyn PackageManager> {
    let executor: Box<dyn Executor> = if test_mode {
        Box::new(mock::MockExecutor::new(root, kind))
    } else {
        Box::new(SystemExecutor)
    };
    match kind {
        ProviderKind::Apt => Box::new(apt::Apt::new(executor)),
        ProviderKind::Dnf => Box::new(dnf::Dnf::new(executor)),
    }
}

/// The version ordering of a provider kind.
pub struct Order(pub ProviderKind);

impl crate::apply::VersionOrder for Order {
    fn compare(&self, a: &str, b: &str) -> std::cmp::Ordering {
        match self.0 {
            ProviderKind::Apt => version::deb::compare(a, b),
            ProviderKind::Dnf => version::rpm::compare(a, b),
        }
    }

    fn satisfies(&self, installed: &str, wanted: &str) -> bool {
        match self.0 {
            ProviderKind::Apt => version::deb::compare(installed, wanted).is_eq(),
            ProviderKind::Dnf => version::rpm::satisfies(installed, wanted),
        }
    }
}

/// What is installed, as far as this process knows: filled by one query for
/// all packages, dropped whenever this process changes something. A batch
/// of N entities then costs one query instead of N; a process per entity
/// still queries afresh.
static INSTALLED: Mutex<BTreeMap<ProviderKind, BTreeMap<String, Installed>>> =
    Mutex::new(BTreeMap::new());

/// The installed package `name`, if any (see [`INSTALLED`]).
pub fn installed(manager: &mut dyn PackageManager, name: &str) -> Result<Option<Installed>> {
    let mut known = INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let kind = manager.kind();
    let all = match known.entry(kind) {
        Entry::Occupied(entry) => entry.into_mut(),
        Entry::Vacant(entry) => entry.insert(manager.status_all()?),
    };
    Ok(all.get(name).cloned())
}

/// Forgets what [`installed`] knew, after this process changed packages.
pub fn forget_installed(kind: ProviderKind) {
    INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .remove(&kind);
}

/// Whether a step installs or upgrades (and so wants fresh package lists).
pub fn needs_lists(step: &Step) -> bool {
    !matches!(step, Step::Nothing | Step::Uninstall)
}

/// Refreshes the package lists at most once per driver run (a marker in
/// `$HOLO_CACHE_DIR`), and only when they are older than `max_age`.
pub fn refresh_lists_once(
    manager: &mut dyn PackageManager,
    marker: &Path,
    max_age: Duration,
    lock_timeout: Duration,
) -> Result<()> {
    if marker.exists() {
        return Ok(());
    }
    let stale = manager.lists_age().is_none_or(|age| age > max_age);
    if stale {
        wait_for_locks(&manager.lock_files(), lock_timeout)?;
        manager.refresh_lists()?;
    }
    if let Some(dir) = marker.parent() {
        std::fs::create_dir_all(dir).map_err(|err| Error::io("create", dir, &err))?;
    }
    std::fs::write(marker, b"").map_err(|err| Error::io("write", marker, &err))
}

/// The age of a file or directory from its modification time.
pub fn age_of(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(
        SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default(),
    )
}

/// Reads a duration in seconds from the environment variable `name`.
pub fn seconds_from_env(name: &str, default: u64) -> Result<Duration> {
    match std::env::var(name) {
        Err(_) => Ok(Duration::from_secs(default)),
        Ok(raw) if raw.trim().is_empty() => Ok(Duration::from_secs(default)),
        Ok(raw) => raw.trim().parse().map(Duration::from_secs).map_err(|_| {
            Error::new(format!(
                "{name}={raw} is not a number of seconds; set it to e.g. {default} or unset it"
            ))
        }),
    }
}

/// Who holds a lock file, if anyone: the pid from `F_GETLK`.
fn lock_holder(path: &Path) -> Option<i32> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        // A missing or unreadable lock file: the package manager will say.
        Err(err) if err.kind() == ErrorKind::NotFound => return None,
        Err(_) => return None,
    };
    let mut probe = nix::libc::flock {
        l_type: nix::libc::F_WRLCK as i16,
        l_whence: nix::libc::SEEK_SET as i16,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETLK(&mut probe)).ok()?;
    (probe.l_type != nix::libc::F_UNLCK as i16).then_some(probe.l_pid)
}

/// Waits until no other process holds any of the lock files, printing once
/// that it waits; fails after `timeout`.
pub fn wait_for_locks(paths: &[PathBuf], timeout: Duration) -> Result<()> {
    let started = Instant::now();
    let mut announced = false;
    for path in paths {
        while let Some(pid) = lock_holder(path) {
            if started.elapsed() >= timeout {
                return Err(Error::new(format!(
                    "{} is still locked by process {pid} after {} s; wait for that package manager to finish, or raise HOLO_PACKAGE_LOCK_TIMEOUT",
                    path.display(),
                    timeout.as_secs()
                )));
            }
            if !announced {
                eprintln!(
                    ">> waiting for {} (locked by process {pid}), up to {} s",
                    path.display(),
                    timeout.as_secs()
                );
                announced = true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_version_carries_a_nonzero_epoch() {
        let mut package = Installed {
            name: "zsh".into(),
            version: "5.8-9.el9".into(),
            epoch: None,
            arch: "x86_64".into(),
        };
        assert_eq!(package.full_version(), "5.8-9.el9");
        package.epoch = Some("1".into());
        assert_eq!(package.full_version(), "1:5.8-9.el9");
    }

    #[test]
    fn unlocked_or_missing_lock_files_do_not_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir.path().join("lock");
        std::fs::write(&lock, b"").expect("create lock file");
        let missing = dir.path().join("missing");
        wait_for_locks(&[lock, missing], Duration::ZERO).expect("nothing holds them");
    }

    /// Answers every query with the same output.
    struct Canned(Output);

    impl Executor for Canned {
        fn query(&mut self, _argv: &[String]) -> Result<Output> {
            Ok(self.0.clone())
        }
        fn change(&mut self, _argv: &[String]) -> Result<()> {
            Ok(())
        }
        fn root(&self) -> &Path {
            Path::new("/")
        }
    }

    fn canned(code: i32, stdout: &str, stderr: &str) -> Box<dyn Executor> {
        Box::new(Canned(Output {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }))
    }

    fn message<T: std::fmt::Debug>(result: Result<T>) -> String {
        result.expect_err("the query fails").message().to_owned()
    }

    #[test]
    fn failed_queries_name_the_command_line_exit_code_and_stderr() {
        let names = ["vim".to_owned()];
        let mut apt = apt::Apt::new(canned(2, "", "E: broken\n"));
        assert_eq!(
            message(apt.status(&names)),
            "dpkg-query -W '-f=${Package} ${Version} ${Architecture} ${db:Status-Status}\n' vim \
             failed with exit code 2: E: broken"
        );
        assert_eq!(
            message(apt.candidate("vim")),
            "apt-cache policy vim failed with exit code 2: E: broken"
        );
        assert_eq!(
            message(apt.removal_casualties("vim")),
            "simulating the removal with apt-get -s remove vim failed with exit code 2: E: broken"
        );
        let mut dnf = dnf::Dnf::new(canned(1, "", " rpm: broken \n"));
        assert_eq!(
            message(dnf.status_all()),
            "rpm -qa --queryformat '%{NAME} %|EPOCH?{%{EPOCH}}:{0}| %{VERSION} %{RELEASE} %{ARCH}\n' \
             failed with exit code 1: rpm: broken"
        );
    }

    #[test]
    fn exit_codes_that_only_report_unknown_names_are_no_failure() {
        let names = ["vim".to_owned(), "nope".to_owned()];
        let mut apt = apt::Apt::new(canned(1, "vim 2:9.0 amd64 installed\n", "no nope\n"));
        let found = apt.status(&names).expect("exit 1 names an unknown package");
        assert_eq!(found.keys().collect::<Vec<_>>(), ["vim"]);
        assert!(
            apt.status_all().is_err(),
            "listing everything has no excuse"
        );

        let stdout = "vim 0 9.0 1.el9 x86_64\npackage nope is not installed\n";
        let mut dnf = dnf::Dnf::new(canned(1, stdout, ""));
        let found = dnf.status(&names).expect("rpm counts the missing names");
        assert_eq!(found.keys().collect::<Vec<_>>(), ["vim"]);
        let mut dnf = dnf::Dnf::new(canned(1, "vim 0 9.0 1.el9 x86_64\n", "rpm: broken"));
        assert!(
            dnf.status(&names).is_err(),
            "a failure with no missing name"
        );
    }

    #[test]
    fn casualties_leave_out_the_package_itself_sorted_and_once() {
        let removed = ["vim", "vim-addon", "libfoo", "vim-addon", "vim"].map(String::from);
        assert_eq!(
            other_casualties(removed.to_vec(), "vim"),
            ["libfoo", "vim-addon"]
        );
        let mut dnf = dnf::Dnf::new(canned(
            1,
            "Removing:\n zsh x86_64 5.8 @baseos 1 M\nRemoving dependent packages:\n zsh-syntax noarch 1.0 @epel 1 k\n",
            "Operation aborted.\n",
        ));
        assert_eq!(
            dnf.removal_casualties("zsh").expect("--assumeno exits 1"),
            ["zsh-syntax"]
        );
    }

    #[test]
    fn only_install_and_upgrade_need_lists() {
        assert!(needs_lists(&Step::Install));
        assert!(needs_lists(&Step::UpgradeLatest));
        assert!(!needs_lists(&Step::Uninstall));
        assert!(!needs_lists(&Step::Nothing));
    }
}
