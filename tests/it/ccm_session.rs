//! Sessions of one-offs (`holo session new`, `holo session report`), with
//! the real binaries in a test root: `--subscribe` refreshes what changed
//! earlier in the session and `--require` skips what failed, as `holo
//! apply` does; outside a session both are refused with the reason; the
//! session stays inside the root, is locked against a concurrent one-off,
//! and its records are replaced whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A root with a unit and a package for the one-offs.
struct SessionRoot {
    dir: tempfile::TempDir,
}

impl SessionRoot {
    fn new() -> SessionRoot {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in [
            ("root/etc/passwd", "root:x:0:0::/root:/bin/sh\n"),
            ("root/etc/group", "root:x:0:\n"),
            ("root/etc/os-release", "ID=debian\n"),
            ("root/etc/systemd/system/httpd.service", ""),
            ("root/etc/httpd/.keep", ""),
            (
                "root/var/lib/holo-mock/packages.toml",
                "[[available]]\nname = \"httpd\"\nversions = [\"2.4\"]\n",
            ),
            ("tmp/.keep", ""),
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        SessionRoot { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn command(&self, program: &str, args: &[&str], session: Option<&Path>) -> Command {
        let mut command = Command::new(test_support::binary(program));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOLO_ROOT_DIR", self.root())
            .env("TMPDIR", self.dir.path().join("tmp"));
        if let Some(session) = session {
            command.env("HOLO_SESSION", session);
        }
        command
    }

    fn run(&self, program: &str, args: &[&str], session: Option<&Path>) -> Output {
        self.command(program, args, session).output().expect("run")
    }

    /// `holo session new`: the directory its `export` line names.
    fn new_session(&self) -> PathBuf {
        let output = self.run("holo", &["session", "new"], None);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let line = text(&output.stdout);
        let dir = line
            .trim()
            .strip_prefix("export HOLO_SESSION=")
            .unwrap_or_else(|| panic!("an export line, not {line:?}"));
        PathBuf::from(dir)
    }

    fn write_conf(&self, session: &Path, content: &str) -> Output {
        self.run(
            "holo-file",
            &[
                "ensure",
                "/etc/httpd/httpd.conf",
                "--content",
                content,
                "--owner",
                "root:root",
                "--mode",
                "0644",
            ],
            Some(session),
        )
    }

    fn ensure_httpd(&self, session: Option<&Path>) -> Output {
        self.run(
            "holo-service",
            &[
                "ensure",
                "httpd",
                "running",
                "--subscribe",
                "file#/etc/httpd/httpd.conf",
            ],
            session,
        )
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The session's report, as JSON.
fn report(root: &SessionRoot, session: &Path) -> serde_json::Value {
    let output = root.run("holo", &["session", "report"], Some(session));
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

#[test]
fn subscribe_refreshes_what_changed_earlier_in_the_session_and_only_that() {
    let root = SessionRoot::new();
    let session = root.new_session();
    assert!(session.starts_with(root.root().canonicalize().expect("root")));
    let started = root.ensure_httpd(Some(&session));
    assert!(started.status.success(), "{}", text(&started.stderr));
    let written = root.write_conf(&session, "Listen 80\n");
    assert!(written.status.success(), "{}", text(&written.stderr));
    let refreshed = root.ensure_httpd(Some(&session));
    assert!(
        text(&refreshed.stdout).contains("MOCK: systemctl restart --system httpd"),
        "{}",
        text(&refreshed.stdout)
    );
    // The file is as it was: nothing to refresh from.
    let same = root.write_conf(&session, "Listen 80\n");
    assert!(same.status.success(), "{}", text(&same.stderr));
    let quiet = root.ensure_httpd(Some(&session));
    assert!(quiet.status.success(), "{}", text(&quiet.stderr));
    assert!(
        !text(&quiet.stdout).contains("restart"),
        "{}",
        text(&quiet.stdout)
    );
    let report = report(&root, &session);
    assert_eq!(report["mode"], "session");
    assert_eq!(report["counts"]["total"], 5);
    assert_eq!(report["counts"]["changed"], 3);
    assert_eq!(report["counts"]["unchanged"], 2);
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["entities"][1]["id"], "file:/etc/httpd/httpd.conf");
    assert_eq!(report["entities"][1]["plugin"], "file");
}

#[test]
fn require_skips_what_failed_earlier_in_the_session() {
    let root = SessionRoot::new();
    let session = root.new_session();
    // Its directory does not exist: the file fails.
    let failed = root.run(
        "holo-file",
        &[
            "ensure",
            "/etc/none/app.conf",
            "--content",
            "x",
            "--owner",
            "root:root",
            "--mode",
            "0644",
        ],
        Some(&session),
    );
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let skipped = root.run(
        "holo-service",
        &["ensure", "httpd", "--require", "file#/etc/none/app.conf"],
        Some(&session),
    );
    assert_eq!(skipped.status.code(), Some(1));
    assert!(
        text(&skipped.stderr)
            .contains("!! skipped: required entity file:/etc/none/app.conf failed in this run"),
        "{}",
        text(&skipped.stderr)
    );
    assert!(
        !text(&skipped.stdout).contains("MOCK:"),
        "{}",
        text(&skipped.stdout)
    );
    let report = report(&root, &session);
    assert_eq!(report["entities"][1]["result"], "skipped");
    assert_eq!(report["counts"]["failed"], 1);
    assert_eq!(report["exit_code"], 1);
}

#[test]
fn outside_a_session_require_and_subscribe_are_refused_with_the_reason() {
    let root = SessionRoot::new();
    for flag in ["--require", "--subscribe"] {
        let output = root.run(
            "holo-service",
            &["ensure", "httpd", flag, "file#/etc/httpd/httpd.conf"],
            None,
        );
        assert_eq!(output.status.code(), Some(1));
        let stderr = text(&output.stderr);
        assert!(
            stderr.starts_with(&format!("!! holo-service ensure: {flag} needs a session")),
            "{stderr}"
        );
        assert!(stderr.contains("holo session new"), "{stderr}");
        assert!(!text(&output.stdout).contains("MOCK:"));
    }
}

#[test]
fn in_test_mode_a_session_outside_the_root_is_refused() {
    let root = SessionRoot::new();
    let outside = root.dir.path().join("elsewhere");
    std::fs::create_dir(&outside).expect("mkdir");
    std::fs::set_permissions(
        &outside,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let output = root.ensure_httpd(Some(&outside));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("is outside the root"),
        "{}",
        text(&output.stderr)
    );
    let created = root.run(
        "holo",
        &[
            "session",
            "new",
            "--directory",
            &outside.display().to_string(),
        ],
        None,
    );
    assert_eq!(created.status.code(), Some(1));
    assert!(text(&created.stderr).contains("is outside the root"));
}

#[test]
fn a_one_off_waits_for_the_session_lock_and_records_are_replaced_whole() {
    let root = SessionRoot::new();
    let session = root.new_session();
    // What a killed writer leaves: a temporary file beside the records.
    std::fs::write(session.join(".session-killed.tmp"), "{\"vers").expect("write");
    let lock = std::fs::File::create(session.join("session.lock")).expect("lock file");
    let held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, err)| err)
        .expect("flock");
    let mut child = root
        .command("holo-package", &["ensure", "httpd"], Some(&session))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    // The one-off has not got past the lock while it is held.
    let watch_until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < watch_until {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "ran while locked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!session.join("session.json").exists());
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the one-off did not finish");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let records: serde_json::Value =
        serde_json::from_slice(&std::fs::read(session.join("session.json")).expect("records"))
            .expect("whole JSON");
    assert_eq!(records["records"][0]["id"], "package:httpd");
    assert_eq!(records["records"][0]["result"], "changed");
    // --remove removes the session, the killed writer's leftover with it.
    let removed = root.run("holo", &["session", "report", "--remove"], Some(&session));
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(!session.exists());
}

#[test]
fn damaged_records_are_refused_naming_the_file() {
    let root = SessionRoot::new();
    let session = root.new_session();
    std::fs::write(session.join("session.json"), "{\"version\": 1, \"rec").expect("write");
    let output = root.ensure_httpd(Some(&session));
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("session.json"), "{stderr}");
    assert!(stderr.contains("start a new session"), "{stderr}");
}
