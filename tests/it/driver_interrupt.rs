//! SIGTERM, SIGINT and SIGHUP during `holo apply` with the real holo-exec:
//! the command is ended with its process group, the run report says
//! `interrupted`, the lock goes last (once nothing the run started is
//! alive), holo exits 128+signal, and a run started right after never
//! overlaps the cut command.

use crate::root;
use test_support::process::{alive, wait_until};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Appends 1..8 to `progress`, one a second, and its pid to `pids`.
const COUNTER: &str = r#"
[[exec]]
name = "counter"
provider = "shell"
command = "echo $$ >> pids; for i in 1 2 3 4 5 6 7 8; do echo $i >> progress; sleep 1; done"
"#;

fn exec_root() -> tempfile::TempDir {
    let root = root::make(&["exec"]);
    std::fs::write(
        root.path().join("usr/share/holo/exec/counter.toml"),
        COUNTER,
    )
    .unwrap();
    root
}

/// `holo apply` in its own process group (as a shell starts a foreground
/// job), output to `name` below the root.
fn start_apply(root: &Path, name: &str, env: &[(&str, &str)]) -> Child {
    let out = std::fs::File::create(root.join(name)).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_holo"));
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("HOLO_TEST_RUN_REPORT", "1")
        .env_remove("HOLO_NO_BATCH")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

fn pids(root: &Path) -> Vec<i32> {
    std::fs::read_to_string(root.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The numbers in `progress`: every run counts up from 1 by one, so two
/// runs at once show as a number that does not follow the one before.
fn assert_never_interleaved(root: &Path) {
    let text = std::fs::read_to_string(root.join("progress")).unwrap_or_default();
    let numbers: Vec<u32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    for pair in numbers.windows(2) {
        assert!(
            pair[1] == 1 || pair[1] == pair[0] + 1,
            "two runs of the command overlapped: {numbers:?}"
        );
    }
}

/// Sends `signal` once the command runs, watching that the lock never goes
/// while the command lives; returns holo's exit code and output.
fn interrupt(root: &Path, holo: &mut Child, signal: Signal, to_group: bool) -> (i32, String) {
    let lock = root.join("run/holo.pid");
    wait_until("the command to start", Duration::from_secs(60), || {
        root.join("progress").exists()
    });
    let command = pids(root)[0];
    let target = if to_group {
        Pid::from_raw(-(holo.id() as i32))
    } else {
        Pid::from_raw(holo.id() as i32)
    };
    kill(target, signal).unwrap();
    let started = Instant::now();
    // A scan runs before the lock is taken.
    let locked = lock.exists();
    let status = loop {
        if locked && !lock.exists() {
            assert!(
                !alive(command),
                "the lock was released while the command (pid {command}) still runs"
            );
        }
        if let Some(status) = holo.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "holo did not end within 30 s of {signal}"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    let text = std::fs::read_to_string(root.join("out1")).unwrap();
    (status.code().unwrap_or(-1), text)
}

fn assert_interrupted(root: &Path, code: i32, text: &str, signal: Signal) {
    assert_eq!(code, 128 + signal as i32, "{text}");
    let line = format!("!! interrupted by {}", signal.as_str());
    assert_eq!(
        text.lines().filter(|l| *l == line).count(),
        1,
        "one {line:?} line:\n{text}"
    );
    assert!(!text.contains("no such file"), "{text}");
    assert!(!root.join("run/holo.pid").exists(), "the lock is left");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("var/lib/holo/last-run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["exit_code"], 128 + signal as i32, "{report}");
    assert_eq!(report["entities"][0]["id"], "exec:counter", "{report}");
    assert_eq!(report["entities"][0]["result"], "interrupted", "{report}");
    assert_eq!(report["counts"]["interrupted"], 1, "{report}");
    for pid in pids(root) {
        assert!(!alive(pid), "the command (pid {pid}) still runs");
    }
    // Cut after one or two of eight numbers.
    let progress = std::fs::read_to_string(root.join("progress")).unwrap();
    assert!(progress.lines().count() < 8, "{progress}");
}

#[test]
fn sigterm_ends_the_command_and_a_second_run_never_overlaps_it() {
    let root = exec_root();
    let path = root.path();
    let mut first = start_apply(path, "out1", &[]);
    let lock = path.join("run/holo.pid");
    wait_until("the command to start", Duration::from_secs(60), || {
        path.join("progress").exists()
    });
    kill(Pid::from_raw(first.id() as i32), Signal::SIGTERM).unwrap();
    // At once, as a timer or an admin would.
    let mut second = start_apply(path, "out2", &[]);
    let started = Instant::now();
    let command = pids(path)[0];
    let code = loop {
        if !lock.exists() {
            assert!(!alive(command), "the lock went while the command ran");
        }
        if let Some(status) = first.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(2));
    };
    let text = std::fs::read_to_string(path.join("out1")).unwrap();
    assert_eq!(code, 143, "{text}");
    assert!(
        text.lines().any(|l| l == "!! interrupted by SIGTERM"),
        "{text}"
    );
    // The second run either found the lock or ran after the first ended.
    let second_status = second.wait().unwrap();
    let second_text = std::fs::read_to_string(path.join("out2")).unwrap();
    assert!(
        second_status.code() == Some(0) || second_text.contains("Cannot create lock file"),
        "{second_text}"
    );
    assert_never_interleaved(path);
    for pid in pids(path) {
        assert!(!alive(pid), "pid {pid} still runs");
    }
}

#[test]
fn sigterm_writes_the_report_and_releases_the_lock_last() {
    let root = exec_root();
    let mut holo = start_apply(root.path(), "out1", &[]);
    let (code, text) = interrupt(root.path(), &mut holo, Signal::SIGTERM, false);
    assert_interrupted(root.path(), code, &text, Signal::SIGTERM);
}

#[test]
fn ctrl_c_reaches_the_command() {
    // A terminal sends SIGINT to the whole foreground process group.
    let root = exec_root();
    let mut holo = start_apply(root.path(), "out1", &[]);
    let (code, text) = interrupt(root.path(), &mut holo, Signal::SIGINT, true);
    assert_interrupted(root.path(), code, &text, Signal::SIGINT);
}

#[test]
fn sighup_is_an_interrupt_too() {
    let root = exec_root();
    let mut holo = start_apply(root.path(), "out1", &[]);
    let (code, text) = interrupt(root.path(), &mut holo, Signal::SIGHUP, false);
    assert_interrupted(root.path(), code, &text, Signal::SIGHUP);
}

#[test]
fn per_entity_calls_are_interrupted_the_same_way() {
    let root = exec_root();
    let mut holo = start_apply(root.path(), "out1", &[("HOLO_NO_BATCH", "1")]);
    let (code, text) = interrupt(root.path(), &mut holo, Signal::SIGTERM, false);
    assert_interrupted(root.path(), code, &text, Signal::SIGTERM);
}

/// A plugin that ignores SIGTERM and leaves a background child: after the
/// grace time holo kills both.
const STUBBORN: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
scan) echo "ENTITY: stubborn:a"; echo "ENTITY: stubborn:b" ;;
apply)
  trap '' TERM INT HUP
  sleep 600 &
  echo $! >> "$HOLO_ROOT_DIR/pids"
  echo $$ >> "$HOLO_ROOT_DIR/pids"
  echo started >> "$HOLO_ROOT_DIR/progress"
  wait; wait; wait ;;
*) exit 1 ;;
esac
"#;

fn stubborn_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let path = root.path();
    for dir in [
        "etc",
        "run",
        "tmp",
        "usr/lib/holo",
        "usr/share/holo/stubborn",
    ] {
        std::fs::create_dir_all(path.join(dir)).unwrap();
    }
    std::fs::write(path.join("etc/holorc"), "plugin stubborn\n").unwrap();
    let plugin = path.join("usr/lib/holo/holo-stubborn");
    std::fs::write(&plugin, STUBBORN).unwrap();
    test_support::make_executable(&plugin);
    root
}

#[test]
fn a_plugin_that_ignores_the_signal_is_killed_after_the_grace_time() {
    let root = stubborn_root();
    let path = root.path();
    let mut holo = start_apply(path, "out1", &[("HOLO_KILL_GRACE", "1")]);
    let (code, text) = interrupt(path, &mut holo, Signal::SIGTERM, false);
    assert_eq!(code, 143, "{text}");
    let pids = pids(path);
    assert_eq!(pids.len(), 2, "{pids:?}");
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived holo:\n{text}");
    }
    let report = std::fs::read_to_string(path.join("var/lib/holo/last-run.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    // The second entity was never started, so it is not listed.
    assert_eq!(report["entities"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["entities"][0]["result"], "interrupted", "{report}");
}

/// A scan that never ends.
const SLOW_SCAN: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
scan) echo $$ >> "$HOLO_ROOT_DIR/pids"; echo started >> "$HOLO_ROOT_DIR/progress"; sleep 600 ;;
*) exit 1 ;;
esac
"#;

#[test]
fn an_interrupted_scan_leaves_the_last_report_alone() {
    let root = stubborn_root();
    let path = root.path();
    std::fs::write(path.join("usr/lib/holo/holo-stubborn"), SLOW_SCAN).unwrap();
    std::fs::create_dir_all(path.join("var/lib/holo")).unwrap();
    std::fs::write(path.join("var/lib/holo/last-run.json"), "old\n").unwrap();
    let mut holo = start_apply(path, "out1", &[]);
    let (code, text) = interrupt(path, &mut holo, Signal::SIGTERM, false);
    assert_eq!(code, 143, "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| *l == "!! interrupted by SIGTERM")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("var/lib/holo/last-run.json")).unwrap(),
        "old\n"
    );
    for pid in pids(path) {
        assert!(!alive(pid), "the scan (pid {pid}) still runs");
    }
}

/// The counter, then a second command that the interrupt must keep from
/// starting.
const COUNTER_THEN_LATER: &str = r#"
[[exec]]
name = "counter"
provider = "shell"
command = "echo $$ >> pids; for i in 1 2 3 4 5 6 7 8; do echo $i >> progress; sleep 1; done"

[[exec]]
name = "later"
provider = "shell"
command = "echo started >> later"
require = ["exec:counter"]
"#;

/// The batch path and the per-entity path agree: the entity that was cut
/// is `interrupted`, the one that never started is neither printed nor
/// listed in the run report.
#[test]
fn an_entity_the_interrupt_kept_from_starting_is_not_reported_in_either_path() {
    for per_entity in [false, true] {
        let root = exec_root();
        let path = root.path();
        std::fs::write(
            path.join("usr/share/holo/exec/counter.toml"),
            COUNTER_THEN_LATER,
        )
        .unwrap();
        let env: &[(&str, &str)] = if per_entity {
            &[("HOLO_NO_BATCH", "1")]
        } else {
            &[]
        };
        let mut holo = start_apply(path, "out1", env);
        let (code, text) = interrupt(path, &mut holo, Signal::SIGTERM, false);
        let how = if per_entity { "per entity" } else { "batch" };
        assert_eq!(code, 143, "{how}: {text}");
        assert!(
            !path.join("later").exists(),
            "{how}: the second command ran"
        );
        assert!(!text.contains("exec:later"), "{how}: printed:\n{text}");
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(path.join("var/lib/holo/last-run.json")).unwrap(),
        )
        .unwrap();
        let ids: Vec<&str> = report["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["exec:counter"], "{how}: {report}");
        assert_eq!(report["entities"][0]["result"], "interrupted", "{how}");
        assert_eq!(report["counts"]["interrupted"], 1, "{how}: {report}");
    }
}
