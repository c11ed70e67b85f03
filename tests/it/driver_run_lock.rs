//! The run lock outlives a `kill -9` of holo for as long as a plugin of that
//! run does (the `run-lock` extension): the next run waits for the plugin
//! instead of running beside it, gives up with a clear message after
//! `HOLO_STALE_LOCK_WAIT`, and never waits for a daemon that a command of
//! an SDK plugin left running.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::process::wait_until;

const HOLO: &str = env!("CARGO_BIN_EXE_holo");

/// A root whose shell plugin (it declares `run-lock`, and being a shell
/// script it gets no PDEATHSIG, so it outlives holo's `kill -9`) runs
/// command `work`: `start`, `seconds` of sleep, `end`, into `progress`.
fn shell_root(seconds: u32) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/holo-shell");
    for dir in ["etc", "run", "tmp", "usr/share/holo/shell/commands"] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    std::fs::write(
        root.path().join("etc/holorc"),
        format!("plugin shell={}\n", plugin.display()),
    )
    .unwrap();
    std::fs::write(
        root.path().join("usr/share/holo/shell/commands/work.sh"),
        format!(
            "echo $$ >> \"$HOLO_ROOT_DIR/pids\"\necho start >> \"$HOLO_ROOT_DIR/progress\"\nsleep {seconds}\necho end >> \"$HOLO_ROOT_DIR/progress\"\n"
        ),
    )
    .unwrap();
    root
}

fn holo(root: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(HOLO);
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("HOLO_SHELL_EXTENSIONS", "order,noop,run-lock")
        .env_remove("HOLO_STALE_LOCK_WAIT")
        .env_remove("HOLO_TEST_RUN_REPORT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

fn progress(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("progress"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Starts a run, waits until its command runs, and kills holo outright.
fn kill_holo_during_work(root: &Path, env: &[(&str, &str)]) {
    let mut first: Child = holo(root, env).spawn().unwrap();
    wait_until("the command to start", Duration::from_secs(60), || {
        root.join("progress").exists()
    });
    kill(Pid::from_raw(first.id() as i32), Signal::SIGKILL).unwrap();
    first.wait().unwrap();
    assert!(
        root.join("run/holo.pid").exists(),
        "the killed run's lock stays"
    );
}

/// Ends the session of the plugin that outlived holo (its shell is the
/// session leader; the command's pid is in `pids`).
fn end_leftovers(root: &Path) {
    for line in std::fs::read_to_string(root.join("pids"))
        .unwrap_or_default()
        .lines()
    {
        if let Ok(pid) = line.trim().parse::<i32>()
            && let Ok(session) = nix::unistd::getsid(Some(Pid::from_raw(pid)))
        {
            let _ = killpg(session, Signal::SIGKILL);
        }
    }
}

#[test]
fn a_run_after_kill_9_waits_for_the_plugin_still_running() {
    let root = shell_root(3);
    kill_holo_during_work(root.path(), &[]);
    let second = holo(root.path(), &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    end_leftovers(root.path());
    assert_eq!(second.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        progress(root.path()),
        ["start", "end", "start", "end"],
        "the second run started its command while the first one's ran; stderr: {stderr}"
    );
    assert!(
        stderr.contains("which is no longer running, but processes of its run still hold the lock; waiting up to 1m for them to end"),
        "stderr: {stderr}"
    );
    assert!(!root.path().join("run/holo.pid").exists());
}

#[test]
fn the_wait_ends_with_a_message_and_holo_3_s_lines() {
    let root = shell_root(30);
    kill_holo_during_work(root.path(), &[]);
    let started = Instant::now();
    let second = holo(root.path(), &[("HOLO_STALE_LOCK_WAIT", "2")])
        .output()
        .unwrap();
    let waited = started.elapsed();
    end_leftovers(root.path());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(255), "stderr: {stderr}");
    assert!(waited >= Duration::from_secs(2), "gave up after {waited:?}");
    let lock = root.path().join("run/holo.pid");
    assert!(
        stderr.contains(&format!(
            "still hold lock file {} after 2s; wait for them to end, or end them (`fuser -v {}` lists them)",
            lock.display(),
            lock.display()
        )),
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("This usually means that another instance of Holo is currently running."),
        "stderr: {stderr}"
    );
    assert_eq!(
        progress(root.path()),
        ["start"],
        "the second run ran nothing"
    );
}

#[test]
fn a_daemon_left_by_a_command_does_not_hold_the_lock() {
    let root = crate::root::make(&["exec"]);
    std::fs::write(
        root.path().join("usr/share/holo/exec/daemon.toml"),
        r#"
[[exec]]
name = "daemon"
provider = "shell"
command = "sleep 60 & echo $! > daemon; echo start >> progress; sleep 60"
"#,
    )
    .unwrap();
    let mut first = holo(root.path(), &[]).spawn().unwrap();
    wait_until("the command to start", Duration::from_secs(60), || {
        root.path().join("progress").exists()
    });
    kill(Pid::from_raw(first.id() as i32), Signal::SIGKILL).unwrap();
    first.wait().unwrap();
    let daemon: i32 = std::fs::read_to_string(root.path().join("daemon"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        Path::new(&format!("/proc/{daemon}")).exists(),
        "the daemon lives on"
    );
    let lock = root.path().join("run/holo.pid");
    let held: Vec<_> = std::fs::read_dir(format!("/proc/{daemon}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.unwrap().path()).ok())
        .filter(|target| target == &lock)
        .collect();
    assert!(held.is_empty(), "the daemon holds the lock file open");
    let started = Instant::now();
    let second = holo(
        root.path(),
        &[
            ("HOLO_STALE_LOCK_WAIT", "30"),
            ("HOLO_APPLY_TIMEOUT", "3"),
            ("HOLO_KILL_GRACE", "1"),
        ],
    )
    .output()
    .unwrap();
    let waited = started.elapsed();
    let _ = kill(Pid::from_raw(daemon), Signal::SIGKILL);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        !stderr.contains("still hold the lock"),
        "the second run waited for the daemon: {stderr}"
    );
    assert!(
        waited < Duration::from_secs(15),
        "waited {waited:?}: {stderr}"
    );
    assert_eq!(
        progress(root.path()).len(),
        2,
        "the second run ran the command; stderr: {stderr}"
    );
}

#[test]
fn a_wait_that_is_no_duration_is_refused_before_anything_runs() {
    let root = shell_root(0);
    let out = holo(root.path(), &[("HOLO_STALE_LOCK_WAIT", "a while")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(
        stderr.contains("HOLO_STALE_LOCK_WAIT=a while is not a duration"),
        "{stderr}"
    );
    assert!(!root.path().join("progress").exists(), "nothing ran");
}
