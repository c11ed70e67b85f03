//! The one-off `holo-ID ensure` against `holo apply` where the two share
//! rules: the run lock (a stale lock, a recycled pid, a zombie), signals
//! (exit 128+n, the command's process group ended, the lock and the
//! private run directory removed), the private run directory (owner-only,
//! never in `TMPDIR`, swept after `kill -9`), a dependency cycle (the same
//! message), and secrets read from a file or standard input.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use test_support::oneoff::{OneOffRoot, text};

const SECRET: &str = "s3cret-value";

/// `holo-exec ensure` in its own process group, as a shell starts a job.
fn start_ensure(root: &OneOffRoot, name: &str, command: &str) -> Child {
    Command::new(test_support::binary("holo-exec"))
        .args(["ensure", name, "--provider", "shell", "--command", command])
        .args(["--environment", &format!("TOKEN={SECRET}")])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root.root())
        .env("TMPDIR", root.tmp())
        .env("HOLO_KILL_GRACE", "5")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start holo-exec ensure")
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited a minute for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

/// Every file below `dir` whose content holds the secret.
fn files_with_secret(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            found.extend(files_with_secret(&path));
        } else if meta.is_file()
            && std::fs::read(&path).is_ok_and(|bytes| {
                bytes
                    .windows(SECRET.len())
                    .any(|window| window == SECRET.as_bytes())
            })
        {
            found.push(path);
        }
    }
    found
}

/// The secret outside what `ensure` keeps on purpose for `status` (a file
/// only its owner reads).
fn stray_secrets(root: &OneOffRoot) -> Vec<PathBuf> {
    let kept = root.path("var/lib/holo/ensure/exec.ensured");
    let mut found = files_with_secret(root.root());
    found.extend(files_with_secret(&root.tmp()));
    found.retain(|path| !path.starts_with(&kept));
    found
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .map(|meta| meta.permissions().mode() & 0o777)
        .unwrap_or(0)
}

/// Every file with the secret is 0600 and has a 0700 directory between it
/// and the root.
fn assert_owner_only(root: &OneOffRoot, files: &[PathBuf]) {
    for file in files {
        assert_eq!(
            mode(file),
            0o600,
            "{} is readable by others",
            file.display()
        );
        let private = file
            .ancestors()
            .skip(1)
            .take_while(|dir| *dir != root.root())
            .any(|dir| mode(dir) == 0o700);
        assert!(private, "{} is in no owner-only directory", file.display());
    }
}

#[test]
fn the_private_run_directory_is_owner_only_and_never_in_tmpdir() {
    let root = OneOffRoot::new("holo-exec");
    let child = start_ensure(&root, "slow", "touch started; sleep 30");
    wait_for("the command to start", || root.path("started").exists());
    // The SDK's scan cache of a plugin run by hand is an empty 0700
    // directory there; the one-off's run directory is not.
    for entry in std::fs::read_dir(root.tmp()).expect("tmp").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.contains("ensure"), "ensure wrote to TMPDIR: {name}");
        assert_eq!(mode(&entry.path()), 0o700, "{name}");
    }
    let during = stray_secrets(&root);
    assert!(!during.is_empty(), "the flags are in the run directory");
    assert_owner_only(&root, &during);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("kill");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(143), "{}", text(&output.stderr));
    assert_eq!(stray_secrets(&root), Vec::<PathBuf>::new());
}

#[test]
fn a_run_killed_outright_is_swept_and_its_lock_taken_over_by_the_next() {
    let root = OneOffRoot::new("holo-exec");
    let mut child = start_ensure(&root, "slow", "touch started; sleep 30");
    wait_for("the command to start", || root.path("started").exists());
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(root.path("run/holo.pid").exists(), "kill -9 left the lock");
    let next = root.run(&["ensure", "quick", "--command", "true"]);
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    assert!(
        text(&next.stderr).contains("which is no longer running; taking the lock over"),
        "{}",
        text(&next.stderr)
    );
    assert_eq!(stray_secrets(&root), Vec::<PathBuf>::new());
    assert!(!root.path("run/holo.pid").exists());
}

/// A pid no process has now.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("true");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

#[test]
fn a_stale_lock_is_taken_over_as_holo_apply_does() {
    let root = OneOffRoot::new("holo-exec");
    let stale = dead_pid();
    root.write("run/holo.pid", &format!("{stale}\n"));
    let output = root.run(&["ensure", "quick", "--command", "true"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lock = root.path("run/holo.pid");
    assert_eq!(
        text(&output.stderr),
        format!(
            ">> Lock file {} names process {stale}, which is no longer running; taking the lock over\n",
            lock.display()
        )
    );
}

/// Sends `signal` to the one-off alone once its command runs: it exits
/// 128+n, with the command ended, the lock and the run directory removed.
fn interrupt_with(signal: Signal) {
    let root = OneOffRoot::new("holo-exec");
    let mut child = start_ensure(&root, "slow", "echo $$ > pid; sleep 30");
    wait_for("the command to start", || {
        std::fs::read_to_string(root.path("pid")).is_ok_and(|text| text.ends_with('\n'))
    });
    let command: i32 = std::fs::read_to_string(root.path("pid"))
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    kill(Pid::from_raw(child.id() as i32), signal).expect("kill");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{signal} did not end the one-off"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr);
    assert_eq!(
        status.code(),
        Some(128 + signal as i32),
        "{signal}: {stderr}"
    );
    assert!(
        stderr.contains(&format!("!! interrupted by {}", signal.as_str())),
        "{stderr}"
    );
    assert!(!alive(command), "{signal} left the command running");
    assert!(
        !root.path("run/holo.pid").exists(),
        "{signal} left the lock"
    );
    assert_eq!(stray_secrets(&root), Vec::<PathBuf>::new(), "{signal}");
}

#[test]
fn sigterm_ends_a_oneoff_as_it_ends_holo_apply() {
    interrupt_with(Signal::SIGTERM);
}

#[test]
fn sigint_ends_a_oneoff_as_it_ends_holo_apply() {
    interrupt_with(Signal::SIGINT);
}

#[test]
fn sighup_ends_a_oneoff_as_it_ends_holo_apply() {
    interrupt_with(Signal::SIGHUP);
}

/// A live process that is not holo (a recycled pid): `sleep`, started
/// after a lock whose modification time is an hour ago.
fn recycled_lock(root: &Path) -> Child {
    let sleeper = Command::new("sleep").arg("60").spawn().expect("sleep");
    let lock = root.join("run/holo.pid");
    std::fs::create_dir_all(lock.parent().expect("run")).expect("run");
    std::fs::write(&lock, format!("{}\n", sleeper.id())).expect("lock");
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .and_then(|file| file.set_modified(hour_ago))
        .expect("mtime");
    sleeper
}

#[test]
fn a_lock_naming_a_recycled_pid_is_taken_over_by_ensure_and_apply() {
    let root = OneOffRoot::new("holo-exec");
    let mut sleeper = recycled_lock(root.root());
    let output = root.run(&["ensure", "quick", "--command", "true"]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("taking the lock over"),
        "{}",
        text(&output.stderr)
    );
    let apply_root = crate::root::make(&["exec"]);
    let mut sleeper = recycled_lock(apply_root.path());
    let applied = holo_apply(apply_root.path());
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    assert!(
        text(&applied.stderr).contains("taking the lock over"),
        "{}",
        text(&applied.stderr)
    );
}

#[test]
fn a_lock_naming_a_zombie_is_taken_over() {
    let root = OneOffRoot::new("holo-exec");
    // Not waited for until the end: a zombie of this test.
    let mut zombie = Command::new("true").spawn().expect("true");
    wait_for("the zombie", || {
        std::fs::read_to_string(format!("/proc/{}/stat", zombie.id())).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, s)| s.starts_with('Z'))
        })
    });
    root.write("run/holo.pid", &format!("{}\n", zombie.id()));
    let output = root.run(&["ensure", "quick", "--command", "true"]);
    let _ = zombie.wait();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("taking the lock over"),
        "{}",
        text(&output.stderr)
    );
}

fn holo_apply(root: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_holo"))
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .output()
        .expect("holo apply")
}

#[test]
fn a_dependency_cycle_gives_the_same_message_to_apply_and_ensure() {
    let root = crate::root::make(&["exec"]);
    std::fs::write(
        root.path().join("usr/share/holo/exec/loop.toml"),
        "[[exec]]\nname = \"loop\"\ncommand = \"true\"\nrequire = [\"exec:loop\"]\n",
    )
    .expect("resource");
    let applied = holo_apply(root.path());
    let oneoff = OneOffRoot::new("holo-exec");
    // `--require` needs a session, kept inside the root.
    let session = oneoff.path("session");
    std::fs::create_dir(&session).expect("session");
    std::fs::set_permissions(
        &session,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let session = session.display().to_string();
    let ensured = oneoff.run(&[
        "ensure",
        "loop",
        "--command",
        "true",
        "--require",
        "exec:loop",
        "--session",
        &session,
    ]);
    let message = "!! dependency cycle between entities: exec:loop -> exec:loop; remove one of these REQUIRES/SUBSCRIBES references\n";
    assert!(
        text(&applied.stderr).contains(message),
        "{}",
        text(&applied.stderr)
    );
    assert!(
        text(&ensured.stderr).contains(message),
        "{}",
        text(&ensured.stderr)
    );
}

/// `holo-archive ensure` with the password from standard input: it is
/// read (the archive's own check sees it), and never on the command line.
#[test]
fn the_password_of_an_archive_comes_from_a_file_or_standard_input() {
    let root = OneOffRoot::new("holo-archive");
    let mut child = Command::new(test_support::binary("holo-archive"))
        .args([
            "ensure",
            "/srv/a.tar.gz",
            "--url",
            "http://127.0.0.1:9/a.tar.gz",
        ])
        .args(["--password-file", "-"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root.root())
        .env("TMPDIR", root.tmp())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("holo-archive");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{SECRET}\n").as_bytes())
        .expect("write the password");
    let output = child.wait_with_output().expect("wait");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("password is set without username"),
        "{stderr}"
    );
    assert!(!stderr.contains(SECRET), "{stderr}");
    root.write("etc/archive-password", SECRET);
    let from_file = root.run(&[
        "ensure",
        "/srv/a.tar.gz",
        "--url",
        "http://127.0.0.1:9/a.tar.gz",
        "--password-file",
        &root.path("etc/archive-password").display().to_string(),
    ]);
    assert!(
        text(&from_file.stderr).contains("password is set without username"),
        "{}",
        text(&from_file.stderr)
    );
    let missing = root.run(&[
        "ensure",
        "/srv/a.tar.gz",
        "--password-file",
        "/nonexistent/file",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("--password-file: cannot read /nonexistent/file"),
        "{}",
        text(&missing.stderr)
    );
}
