//! SIGTERM and SIGINT to holo while a plugin runs a command of its own
//! through the SDK (a scaffold's post command, a health check): holo exits
//! 128+signal, the command and its process group are gone, the lock goes,
//! and a scaffold file cut during its post command is redone next apply.

use crate::root;
use test_support::process::alive;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// While `hang` exists the post command waits for a `sleep 30` in the
/// background (which a non-interactive shell starts with SIGINT ignored,
/// so only an end of the whole process group stops it); otherwise it
/// records a run in `posts`. The pids of the shell and the sleep go to
/// `pids`.
const SCAFFOLD: &str = r#"
[[scaffold]]
name = "/srv/app"
source = "app"
post = [{ "*.conf" = '''sh -c 'echo $$ >> "$HOLO_ROOT_DIR/pids"; if [ -e "$HOLO_ROOT_DIR/hang" ]; then sleep 30 & echo $! >> "$HOLO_ROOT_DIR/pids"; wait; exit 1; fi; echo "$1" >> "$HOLO_ROOT_DIR/posts"' post''' }]
"#;

/// A health check without `timeout` that waits for a `sleep 30` in the
/// background; the pids of both go to `pids`.
const CHECKED_EXEC: &str = r#"
[[exec]]
name = "checked"
provider = "shell"
command = "true"
health_checks = [{ command = '''sh -c 'echo $$ >> "$HOLO_ROOT_DIR/pids"; sleep 30 & echo $! >> "$HOLO_ROOT_DIR/pids"; wait' ''' }]
"#;

fn run_holo(root: &Path, name: &str) -> Command {
    let out = std::fs::File::create(root.join(name)).unwrap();
    let mut command = Command::new(test_support::binary("holo"));
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("HOLO_TEST_RUN_REPORT", "1")
        .env_remove("HOLO_NO_BATCH")
        .env_remove("HOLO_HEALTH_CHECK_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0);
    command
}

/// `holo apply` in its own process group, output to `name` below the root.
fn start_apply(root: &Path, name: &str) -> Child {
    run_holo(root, name).spawn().unwrap()
}

/// `holo apply` to its end: exit code and output.
fn apply(root: &Path, name: &str) -> (i32, String) {
    let status = run_holo(root, name).status().unwrap();
    let text = std::fs::read_to_string(root.join(name)).unwrap();
    (status.code().unwrap_or(-1), text)
}

fn pids(root: &Path) -> Vec<i32> {
    std::fs::read_to_string(root.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Sends `signal` to holo alone once the shell and its sleep have written
/// their pids; returns holo's exit code and output and those pids.
fn interrupt(root: &Path, holo: &mut Child, signal: Signal) -> (i32, String, Vec<i32>) {
    let started = Instant::now();
    while pids(root).len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the command did not start within 60 s"
        );
        if let Some(status) = holo.try_wait().unwrap() {
            let text = std::fs::read_to_string(root.join("out1")).unwrap();
            panic!("holo ended ({status}) before the command started:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let command = pids(root);
    for pid in &command {
        assert!(alive(*pid), "pid {pid} already ended");
    }
    kill(Pid::from_raw(holo.id() as i32), signal).unwrap();
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = holo.try_wait().unwrap() {
            break status;
        }
        // Generous, but well below the command's 30 s.
        assert!(
            sent.elapsed() < Duration::from_secs(20),
            "holo did not end within 20 s of {signal}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = std::fs::read_to_string(root.join("out1")).unwrap();
    (status.code().unwrap_or(-1), text, command)
}

fn assert_interrupted(
    root: &Path,
    code: i32,
    text: &str,
    command: &[i32],
    signal: Signal,
    id: &str,
) {
    assert_eq!(code, 128 + signal as i32, "{text}");
    let line = format!("!! interrupted by {}", signal.as_str());
    assert_eq!(
        text.lines().filter(|l| *l == line).count(),
        1,
        "one {line:?} line:\n{text}"
    );
    assert!(!root.join("run/holo.pid").exists(), "the lock is left");
    // holo waits for what the run started; allow the kernel a moment to
    // reap a grandchild.
    let started = Instant::now();
    while command.iter().any(|pid| alive(*pid)) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in command {
        assert!(
            !alive(*pid),
            "pid {pid} of the command outlived holo:\n{text}"
        );
    }
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("var/lib/holo/last-run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["exit_code"], 128 + signal as i32, "{report}");
    assert_eq!(report["entities"][0]["id"], id, "{report}");
    assert_eq!(report["entities"][0]["result"], "interrupted", "{report}");
}

#[test]
fn sigterm_during_a_scaffold_post_command_ends_it_and_the_next_apply_runs_it_again() {
    let root = root::make(&["scaffold"]);
    let path = root.path();
    let share = path.join("usr/share/holo/scaffold");
    std::fs::create_dir_all(share.join("app")).unwrap();
    std::fs::write(share.join("app/app.conf"), "port = 8080\n").unwrap();
    std::fs::write(share.join("app.toml"), SCAFFOLD).unwrap();
    std::fs::write(path.join("hang"), "").unwrap();

    let mut holo = start_apply(path, "out1");
    let (code, text, command) = interrupt(path, &mut holo, Signal::SIGTERM);
    assert_interrupted(
        path,
        code,
        &text,
        &command,
        Signal::SIGTERM,
        "scaffold:/srv/app",
    );
    assert!(!path.join("posts").exists(), "the post command finished");

    // The file was written but its post command cut: the next apply,
    // without --force, renders it again and runs the command to its end.
    std::fs::remove_file(path.join("hang")).unwrap();
    let (code, text) = apply(path, "out2");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Rendered /srv/app/app.conf"), "{text}");
    let posts = std::fs::read_to_string(path.join("posts")).unwrap();
    assert_eq!(posts.lines().count(), 1, "{posts}");
    assert!(posts.ends_with("/srv/app/app.conf\n"), "{posts}");
    assert_eq!(
        std::fs::read_to_string(path.join("srv/app/app.conf")).unwrap(),
        "port = 8080\n"
    );

    // Converged: nothing rendered, the post command not run again.
    let (code, text) = apply(path, "out3");
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("Rendered"), "{text}");
    let posts = std::fs::read_to_string(path.join("posts")).unwrap();
    assert_eq!(posts.lines().count(), 1, "{posts}");
    for pid in pids(path) {
        assert!(!alive(pid), "pid {pid} still runs");
    }
}

#[test]
fn sigint_during_a_health_check_without_timeout_ends_it() {
    let root = root::make(&["exec"]);
    let path = root.path();
    std::fs::write(path.join("usr/share/holo/exec/checked.toml"), CHECKED_EXEC).unwrap();

    let mut holo = start_apply(path, "out1");
    let (code, text, command) = interrupt(path, &mut holo, Signal::SIGINT);
    assert_interrupted(path, code, &text, &command, Signal::SIGINT, "exec:checked");
    assert_eq!(pids(path).len(), 2, "the check ran once");
}
