//! What every crate's integration tests share.
//!
//! A test that needs something a developer machine may lack (QEMU, KVM, a
//! Go toolchain and the Holo 3 export, root, a real package manager, a tool
//! such as `fish`) is marked `#[ignore = "needs …"]`, so that a plain
//! `cargo test --workspace` leaves it out and its summary counts it as
//! ignored. The test's first statement is one of the `require*` calls
//! below: when it is run anyway (`--ignored`, `--include-ignored`) on a
//! machine without the prerequisite, it fails with a message naming what
//! is missing instead of passing without having run.
//!
//! One harness per kind of run: [`plugin_run`] starts a plugin with the
//! `HOLO_*` environment `holo` gives it, [`oneoff`] runs a plugin's
//! `ensure` and `status` against a fresh root, [`process`] waits with a
//! deadline instead of a fixed sleep, and [`http`] is the one HTTP server
//! of the download tests. [`escapes`] is a root whose symlinks try to lead
//! out of it, for the containment tests.
//!
//! [`holo3`] finds and builds Holo 3 for the tests that compare with it.
//!
//! [`binary`] finds a binary of the workspace in the target directory of
//! the running test. Tests never build anything themselves: `cargo test
//! --workspace` (or `cargo build --workspace`) builds every binary once.

pub mod escapes;
pub mod holo3;
pub mod http;
pub mod oneoff;
pub mod plugin_run;
pub mod process;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Directories searched besides `PATH`: tests often run with a cleaned
/// environment, and `/usr/sbin` is not on a normal user's `PATH`.
const SYSTEM_DIRS: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Fails the test with a message naming what it needs and why that is
/// missing here. The one way a test says it cannot run.
#[track_caller]
pub fn missing(needs: &str, why: &str) -> ! {
    panic!(
        "this test needs {needs}, and {why}.\n\
         It is marked #[ignore] for that reason: plain `cargo test` leaves it out. \
         Run it with --ignored or --include-ignored only where that is present \
         (.ci/run provides every prerequisite)."
    )
}

/// Fails the test unless `condition` holds; `needs` names the prerequisite
/// and `why` says what was found instead.
#[track_caller]
pub fn require(condition: bool, needs: &str, why: &str) {
    if !condition {
        missing(needs, why);
    }
}

/// Where `tool` is found on `PATH` or in the usual system directories.
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|candidate| is_executable(candidate))
}

/// The Go toolchain: `go` on `PATH` or in the system directories, else
/// Debian's `golang-1.19-go`, which installs outside `PATH`.
pub fn find_go() -> Option<PathBuf> {
    find_tool("go").or_else(|| {
        let debian = PathBuf::from("/usr/lib/go-1.19/bin/go");
        is_executable(&debian).then_some(debian)
    })
}

/// The Go toolchain (see [`find_go`]), or the test fails naming what to
/// install.
#[track_caller]
pub fn require_go(for_what: &str) -> PathBuf {
    find_go().unwrap_or_else(|| {
        missing(
            &format!("a Go toolchain (golang-go or golang-1.19-go) {for_what}"),
            "neither `go` on PATH nor /usr/lib/go-1.19/bin/go exists",
        )
    })
}

/// Whether `tool` is installed (see [`find_tool`]).
pub fn have_tool(tool: &str) -> bool {
    find_tool(tool).is_some()
}

/// Fails the test unless every tool is installed; `package` says which
/// package provides them.
#[track_caller]
pub fn require_tools(tools: &[&str], package: &str) {
    let absent: Vec<&str> = tools.iter().copied().filter(|t| !have_tool(t)).collect();
    if !absent.is_empty() {
        missing(
            &format!("{} ({package})", tools.join(", ")),
            &format!("{} is not installed", absent.join(", ")),
        );
    }
}

/// Fails the test unless it runs as root.
#[track_caller]
pub fn require_root(for_what: &str) {
    if !nix_is_root() {
        missing(
            &format!("root ({for_what})"),
            "the test does not run as root",
        );
    }
}

/// Fails the test unless `path` exists.
#[track_caller]
pub fn require_path(path: &Path, what: &str) {
    if !path.exists() {
        missing(what, &format!("{} does not exist", path.display()));
    }
}

/// Fails the test unless the environment variable `variable` is `1`: the
/// consent a test that changes this machine (installs packages, writes
/// below `/usr`) asks for besides `--ignored`.
#[track_caller]
pub fn require_consent(variable: &str, changes: &str) {
    if std::env::var_os(variable).is_none_or(|value| value != "1") {
        missing(
            &format!("{variable}=1"),
            &format!(
                "it is not set: this test {changes} on this machine, so it runs only when asked (as root)"
            ),
        );
    }
}

/// The environment variable `variable`, which the test needs, or a failure
/// naming it and what it should hold.
#[track_caller]
pub fn require_env(variable: &str, holds: &str) -> OsString {
    match std::env::var_os(variable).filter(|value| !value.is_empty()) {
        Some(value) => value,
        None => missing(
            &format!("{variable} ({holds})"),
            &format!("{variable} is not set"),
        ),
    }
}

/// The target profile directory of the running test (`target/debug` for
/// `target/debug/deps/it-HASH`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|err| {
        panic!("cannot tell where the running test is ({err}), so no binary can be found")
    });
    exe.parent()
        .filter(|deps| deps.file_name().is_some_and(|name| name == "deps"))
        .and_then(Path::parent)
        .unwrap_or_else(|| {
            panic!(
                "{} is not in a cargo target directory (TARGET/PROFILE/deps/)",
                exe.display()
            )
        })
        .to_path_buf()
}

/// The workspace binary `name`, from the target directory of the running
/// test. Never builds it: fails with what to run when it is missing.
#[track_caller]
pub fn binary(name: &str) -> PathBuf {
    let path = profile_dir().join(name);
    if !is_executable(&path) {
        panic!(
            "{} is missing: run `cargo build --workspace` first (tests run the workspace's \
             binaries and never build them; `cargo test --workspace` builds them all)",
            path.display()
        );
    }
    path
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Makes the file at `path` an executable (mode 0755) that no process of
/// this test binary has open for writing. A multi-threaded test writes a
/// script while another thread forks: the child holds a copy of the write
/// descriptor until it execs, and running the script then fails with "text
/// file busy". So a `cp` process writes a new inode, which replaces the one
/// this process wrote.
#[track_caller]
pub fn make_executable(path: &Path) {
    let status = std::process::Command::new("sh")
        .args([
            "-c",
            r#"cp -- "$1" "$1.exe-tmp" && chmod 755 -- "$1.exe-tmp" && mv -f -- "$1.exe-tmp" "$1""#,
            "sh",
        ])
        .arg(path)
        .status();
    match status {
        Ok(status) if status.success() => {}
        other => panic!("cannot make {} executable: {other:?}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_fails_naming_it_and_its_package() {
        let failure = std::panic::catch_unwind(|| {
            require_tools(&["sh", "no-such-tool-anywhere"], "the no-such package")
        })
        .expect_err("a missing tool fails the test");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(
            message.starts_with(
                "this test needs sh, no-such-tool-anywhere (the no-such package), and no-such-tool-anywhere is not installed."
            ),
            "{message}"
        );
        require_tools(&["sh"], "coreutils");
    }

    #[test]
    fn consent_is_the_variable_set_to_1() {
        let failure = std::panic::catch_unwind(|| {
            require_consent("TEST_SUPPORT_NEVER_SET", "installs packages")
        })
        .expect_err("no consent fails the test");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(
            message.starts_with("this test needs TEST_SUPPORT_NEVER_SET=1, and it is not set: this test installs packages on this machine"),
            "{message}"
        );
    }

    #[test]
    fn binary_names_the_missing_file_and_the_build_command() {
        let failure = std::panic::catch_unwind(|| binary("no-such-binary"))
            .expect_err("a missing binary fails");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(
            message.ends_with(
                "/no-such-binary is missing: run `cargo build --workspace` first (tests run the workspace's binaries and never build them; `cargo test --workspace` builds them all)"
            ),
            "{message}"
        );
        assert!(profile_dir().join("deps").is_dir());
    }
}
