//! `holo-package` as the driver runs it, for what fixtures cannot show: the
//! number of package manager calls at scan (against a fake `dpkg-query` that
//! behaves like the real one), and waiting for a held dpkg lock.

use std::fs;
use std::io::{BufRead, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_support::plugin_run::PluginRun;

use assert_cmd::Command;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("path has a parent")).expect("create parent");
    fs::write(path, text).expect("write file");
}

fn plugin() -> Command {
    Command::cargo_bin("holo-package").expect("holo-package is built")
}

/// A `dpkg-query` that logs each call and answers like the real one: the
/// `-f` format per known package, "no packages found" and exit 1 otherwise.
const FAKE_DPKG_QUERY: &str = r#"#!/bin/sh
printf '%s\n' "$*" | tr '\n' ' ' >> "$FAKE_LOG"; echo >> "$FAKE_LOG"
[ "$1" = -W ] || { echo "dpkg-query: unexpected $1" >&2; exit 2; }
case "$2" in -f=*) ;; *) echo "dpkg-query: expected -f=" >&2; exit 2 ;; esac
shift 2
status=0
# Without names: every package dpkg knows.
[ $# -gt 0 ] || set -- $(seq -f 'pkg%g' 0 2 "$((FAKE_COUNT - 1))")
for name in "$@"; do
    case "$name" in
        pkg*[02468]) echo "$name 1.0-1 amd64 installed" ;;
        *) echo "dpkg-query: no packages found matching $name" >&2; status=1 ;;
    esac
done
exit $status
"#;

struct SystemModeSetup {
    _dir: tempfile::TempDir,
    env: Vec<(&'static str, PathBuf)>,
    log: PathBuf,
    path: String,
}

fn system_mode_with_packages(count: usize) -> SystemModeSetup {
    let dir = tempfile::tempdir().expect("tempdir");
    let resources = dir.path().join("resources");
    let mut toml = String::new();
    for index in 0..count {
        toml += &format!("[[package]]\nname = \"pkg{index}\"\nprovider = \"apt\"\n\n");
    }
    write(&resources.join("many.toml"), &toml);
    let bin = dir.path().join("bin");
    write(&bin.join("dpkg-query"), FAKE_DPKG_QUERY);
    fs::set_permissions(bin.join("dpkg-query"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let log = dir.path().join("calls.log");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = vec![
        ("HOLO_RESOURCE_DIR", resources.clone()),
        ("HOLO_RESOURCE_ORIGIN", resources),
        ("HOLO_STATE_DIR", dir.path().join("state")),
        ("HOLO_CACHE_DIR", dir.path().join("cache")),
        ("FAKE_LOG", log.clone()),
        ("FAKE_COUNT", PathBuf::from(count.to_string())),
    ];
    SystemModeSetup {
        _dir: dir,
        env,
        log,
        path,
    }
}

impl SystemModeSetup {
    fn run(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        let mut command = plugin();
        command.env_remove("HOLO_ROOT_DIR").env("PATH", &self.path);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command.args(args).assert()
    }

    fn run_with_stdin(&self, args: &[&str], stdin: String) -> assert_cmd::assert::Assert {
        let mut command = plugin();
        command.env_remove("HOLO_ROOT_DIR").env("PATH", &self.path);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command.args(args).write_stdin(stdin).assert()
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[test]
fn scan_queries_dpkg_once_for_all_packages_and_noop_not_at_all() {
    let setup = system_mode_with_packages(40);
    let scan = setup.run(&["scan"]).success();
    let report = String::from_utf8_lossy(&scan.get_output().stdout).into_owned();
    assert_eq!(report.matches("ENTITY: package:").count(), 40, "{report}");
    assert!(report.contains("current: 1.0-1 (amd64)"), "{report}");
    assert!(report.contains("current: not installed"), "{report}");

    let calls = setup.calls();
    assert_eq!(calls.len(), 1, "one dpkg-query for 40 packages: {calls:?}");
    assert!(
        calls[0].contains("pkg0") && calls[0].contains("pkg39"),
        "{calls:?}"
    );

    // An installed package with ensure = present: noop answers from the scan.
    setup.run(&["noop", "package:pkg2"]).success().stdout("");
    assert_eq!(setup.calls().len(), 1, "noop must not query again");
}

#[test]
fn a_batch_apply_queries_once_for_all_its_entities() {
    let setup = system_mode_with_packages(40);
    setup.run(&["scan"]).success();
    // The installed (even-numbered) packages: ensure = present holds for each.
    let ids: String = (0..40)
        .step_by(2)
        .map(|index| format!("package:pkg{index}\n"))
        .collect();
    setup.run_with_stdin(&["apply-batch"], ids).success();
    let calls = setup.calls();
    assert_eq!(
        calls.len(),
        2,
        "scan, then one query for the batch: {calls:?}"
    );
    assert!(
        !calls[1].contains("pkg"),
        "the batch lists every package: {calls:?}"
    );
    // Each process applying one entity queries afresh.
    setup.run(&["apply", "package:pkg2"]).success();
    setup.run(&["apply", "package:pkg4"]).success();
    assert_eq!(setup.calls().len(), 4);
}

/// Takes a write lock on `path` the way dpkg does (fcntl), in this process.
fn hold_fcntl_lock(path: &Path) -> fs::File {
    write(path, "");
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open lock file");
    let lock = nix::libc::flock {
        l_type: nix::libc::F_WRLCK as i16,
        l_whence: nix::libc::SEEK_SET as i16,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETLK(&lock)).expect("take the lock");
    file
}

fn test_root_with_one_install() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tempdir");
    write(
        &root.path().join("usr/share/holo/package/one.toml"),
        "[[package]]\nname = \"tool\"\nprovider = \"apt\"\n",
    );
    write(
        &root.path().join("var/lib/holo-mock/packages.toml"),
        "[[available]]\nname = \"tool\"\nversions = [\"1.0-1\"]\n",
    );
    fs::create_dir_all(root.path().join("var/lib/apt/lists")).expect("lists dir");
    root
}

fn apply_in(root: &Path, timeout: &str) -> Command {
    Command::from_std(apply_command(root, timeout))
}

fn apply_command(root: &Path, timeout: &str) -> std::process::Command {
    PluginRun::new(
        assert_cmd::cargo::cargo_bin!("holo-package"),
        "package",
        root,
    )
    .args(["apply", "package:tool"])
    .inherit_env()
    .cache_dir(root.join("cache"))
    .env("HOLO_PACKAGE_LOCK_TIMEOUT", timeout)
    .command()
}

#[test]
fn a_held_dpkg_lock_fails_after_the_timeout_naming_the_holder() {
    let root = test_root_with_one_install();
    let _lock = hold_fcntl_lock(&root.path().join("var/lib/dpkg/lock-frontend"));
    let started = Instant::now();
    let assert = apply_in(root.path(), "1").assert().code(1);
    assert!(started.elapsed() >= Duration::from_secs(1));
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let holder = format!("locked by process {}", std::process::id());
    assert!(stderr.contains(">> waiting for"), "{stderr}");
    assert!(stderr.contains(&holder), "{stderr}");
    assert!(
        stderr.contains("raise HOLO_PACKAGE_LOCK_TIMEOUT"),
        "{stderr}"
    );
    let db =
        fs::read_to_string(root.path().join("var/lib/holo-mock/packages.toml")).expect("database");
    assert!(
        !db.contains("[[installed]]"),
        "nothing installed while locked: {db}"
    );
}

#[test]
fn apply_waits_for_the_lock_and_then_installs() {
    let root = test_root_with_one_install();
    let lock = hold_fcntl_lock(&root.path().join("var/lib/dpkg/lock"));
    let mut child = apply_command(root.path(), "30")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run holo-package");
    // The lock goes once the plugin says it waits (or has ended).
    let mut said = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut stderr = String::new();
    while !stderr.contains(">> waiting for") && said.read_line(&mut stderr).expect("read") > 0 {}
    drop(lock);
    said.read_to_string(&mut stderr).expect("read");
    let output = child.wait_with_output().expect("wait for holo-package");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains(">> waiting for"), "{stderr}");
    assert!(
        stdout.contains("MOCK: apt-get install -y -q -o DPkg::Options::=--force-confold tool"),
        "{stdout}"
    );
}

#[test]
fn invalid_lock_timeout_names_the_variable() {
    let root = test_root_with_one_install();
    let assert = apply_in(root.path(), "soon").assert().code(1);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("HOLO_PACKAGE_LOCK_TIMEOUT=soon"),
        "{stderr}"
    );
}
