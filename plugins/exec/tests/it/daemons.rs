//! Runs the real holo-exec binary on commands that leave processes behind:
//! a daemon must not hang apply, and a timeout must take the backgrounded
//! children with it.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_support::plugin_run::PluginRun;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// `holo-exec apply ENTITY` in test mode below `root`, reading its stdout
/// and stderr to the end, as the driver does; gives up after 60 s.
fn apply(root: &Path, resources: &str, entity: &str) -> Run {
    let resource_dir = root.join("usr/share/holo/exec");
    std::fs::create_dir_all(&resource_dir).expect("mkdir");
    std::fs::write(resource_dir.join("test.toml"), resources).expect("resources");
    let started = Instant::now();
    let mut child = PluginRun::new(env!("CARGO_BIN_EXE_holo-exec"), "exec", root)
        .args(["apply", entity])
        .inherit_env()
        .cache_dir(root.join("cache"))
        .state_dir(root.join("state"))
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("holo-exec starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let mut err = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = stderr.read_to_string(&mut err);
        let _ = sender.send((out, err));
    });
    let (stdout, stderr) = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("holo-exec's output pipes close within 60 s");
    let status = child.wait().expect("wait");
    Run {
        code: status.code(),
        stdout,
        stderr,
        took: started.elapsed(),
    }
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .expect("the command wrote its child's pid")
        .trim()
        .parse()
        .expect("a pid")
}

/// Gone, or a zombie that init reaps.
#[test]
fn a_command_that_starts_a_daemon_does_not_hang_apply() {
    let root = tempfile::tempdir().expect("tempdir");
    let run = apply(
        root.path(),
        "[[exec]]\nname = \"daemon\"\ncommand = \"sh -c 'sleep 600 & echo $! > daemon.pid'\"\n",
        "exec:daemon",
    );
    let pid = read_pid(&root.path().join("daemon.pid"));
    let still_running = test_support::process::alive(pid as u32);
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.took < Duration::from_secs(30), "took {:?}", run.took);
    assert!(still_running, "the daemon keeps running after apply");
}

#[test]
fn a_timeout_kills_the_command_and_its_background_children() {
    let root = tempfile::tempdir().expect("tempdir");
    let run = apply(
        root.path(),
        "[[exec]]\nname = \"slow\"\ncommand = \"sh -c 'sleep 600 & echo $! > child.pid; wait'\"\ntimeout = \"1s\"\n",
        "exec:slow",
    );
    let pid = read_pid(&root.path().join("child.pid"));
    let gone = test_support::process::gone_within(pid as u32, Duration::from_secs(10));
    if !gone {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("timed out after 1s; its process group was killed"),
        "{}",
        run.stderr
    );
    assert!(gone, "the backgrounded sleep was killed with the group");
    assert!(run.took < Duration::from_secs(30), "took {:?}", run.took);
}

#[test]
fn logoutput_streams_stdout_lines_as_they_come() {
    let root = tempfile::tempdir().expect("tempdir");
    let run = apply(
        root.path(),
        "[[exec]]\nname = \"talk\"\ncommand = \"sh -c 'echo one; echo hidden >&2; echo two'\"\nlogoutput = true\n\n[[exec]]\nname = \"quiet\"\ncommand = \"echo not shown\"\n",
        "exec:talk",
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "one\ntwo\n");
    assert!(!run.stderr.contains("hidden"), "{}", run.stderr);
    let run = apply(
        root.path(),
        "[[exec]]\nname = \"quiet\"\ncommand = \"echo not shown\"\n",
        "exec:quiet",
    );
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
}
