//! The flags upstream holos users reach for: `version --short`,
//! `--state-dir` before or after any command, and `logs -n/--tail N`
//! against instances of the fake QEMU.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::runtime_support::{self, Project, Qemu};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_short_prints_only_the_number() {
    let out = Command::new(env!("CARGO_BIN_EXE_holos"))
        .args(["version", "--short"])
        .env_clear()
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("{}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn state_dir_wins_over_the_environment_before_or_after_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_holos"))
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOLOS_STATE_DIR", dir.path().join("from-env"))
            .output()
            .unwrap()
    };
    for args in [
        &["--state-dir", "opt", "doctor", "--json"][..],
        &["doctor", "--json", "--state-dir", "opt"],
    ] {
        let out = run(args);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let state = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"] == "state directory")
            .unwrap();
        assert_eq!(
            state["text"],
            format!("{} is writable", dir.path().join("opt").display()),
            "{args:?}: relative to the working directory, not HOLOS_STATE_DIR"
        );
    }
}

/// Takes the project down in `state` when the test ends, however it ends.
struct DownOnDrop<'p> {
    project: &'p Project,
    state: PathBuf,
}

impl Drop for DownOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self
            .project
            .holos(&["--state-dir", self.state.to_str().unwrap(), "down", "tl"])
            .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0")
            .output();
    }
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
}

#[test]
#[ignore = "needs qemu-img"]
fn up_under_state_dir_and_logs_tail() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: tl\nservices:\n  web:\n    image: ./base.qcow2\n    replicas: 2\n    stop_grace_period: 0s\n",
        Qemu::Fake,
    );
    let state = p.path().join("elsewhere");
    let guard = DownOnDrop {
        project: &p,
        state: state.clone(),
    };
    let state_arg = state.to_str().unwrap();
    p.ok(&["--state-dir", state_arg, "up", "--no-wait"]);
    assert!(state.join("projects/tl.json").is_file());
    assert!(
        !p.state().join("projects/tl.json").exists(),
        "--state-dir wins over HOLOS_STATE_DIR"
    );
    for (instance, lines) in [("web-0", "a0\nb0\nc0\n"), ("web-1", "a1\nb1\nc1\n")] {
        append(
            &state.join(format!("instances/tl/{instance}/console.log")),
            lines,
        );
    }
    let logs = |args: &[&str]| {
        let out = p.run(&[&["--state-dir", state_arg, "logs"][..], args].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(logs(&["web-0"]).ends_with("a0\nb0\nc0\n"));
    assert_eq!(logs(&["web-0", "-n", "2"]), "b0\nc0\n");
    assert_eq!(
        logs(&["web", "--tail", "1"]),
        "web-0 | c0\nweb-1 | c1\n",
        "the last lines of each instance"
    );
    assert_eq!(logs(&["web-1", "-n", "0"]), "");
    drop(guard);
}
