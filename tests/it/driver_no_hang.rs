//! A plugin may leave a process behind that keeps the driver's pipes open
//! (a daemon it started). `holo apply` must return as soon as the plugin
//! itself exited, with and without the batch extension.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `sleep 600` in the background with stdout, stderr and FD 3
/// inherited, once per entity, and records the sleepers' pids.
const PLUGIN: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo "EXTENSIONS=batch" ;;
scan) echo "ENTITY: daemon:a"; echo "ENTITY: daemon:b" ;;
apply)
  sleep 600 &
  echo $! >> "$SLEEPERS"
  echo "started $2" ;;
apply-batch)
  while read -r id; do
    sleep 600 &
    echo $! >> "$SLEEPERS"
    out=$(printf 'started %s\n' "$id" | base64 -w0)
    printf '{"entity":"%s","output":[["out","%s"]],"fd3":[],"exit":0}\n' "$id" "$out" >&3
  done ;;
*) exit 1 ;;
esac
"#;

/// A root with the `daemon` plugin; kills the sleepers when dropped.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["etc", "run", "tmp", "usr/share/holo/daemon", "usr/lib/holo"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/holorc"), "plugin daemon\n").unwrap();
        let plugin = root.join("usr/lib/holo/holo-daemon");
        std::fs::write(&plugin, PLUGIN).unwrap();
        test_support::make_executable(&plugin);
        Root { dir }
    }

    fn sleepers(&self) -> PathBuf {
        self.dir.path().join("sleepers")
    }

    /// Runs `holo apply`; returns its output and how long it took, or fails
    /// the test (after killing holo) when it does not return within 20 s.
    fn apply(&self, env: &[(&str, &str)]) -> (String, Duration) {
        let out_path = self.dir.path().join("out");
        let out = std::fs::File::create(&out_path).unwrap();
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("holo"));
        command
            .arg("apply")
            .env("HOLO_ROOT_DIR", self.dir.path())
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("SLEEPERS", self.sleepers())
            .env_remove("HOLO_NO_BATCH")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        for (key, value) in env {
            command.env(key, value);
        }
        let start = Instant::now();
        let mut holo = command.spawn().unwrap();
        loop {
            if let Some(status) = holo.try_wait().unwrap() {
                let text = std::fs::read_to_string(&out_path).unwrap();
                assert_eq!(status.code(), Some(0), "{text}");
                return (text, start.elapsed());
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = holo.kill();
                let _ = holo.wait();
                panic!("holo apply still runs after 20 s: it waits for the plugin's child");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        kill_sleepers(&self.sleepers());
    }
}

fn kill_sleepers(list: &Path) {
    let pids = std::fs::read_to_string(list).unwrap_or_default();
    for pid in pids
        .lines()
        .filter_map(|line| line.trim().parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn assert_both_started_and_sleepers_live(root: &Root, text: &str) {
    assert!(text.contains("started daemon:a\n"), "{text}");
    assert!(text.contains("started daemon:b\n"), "{text}");
    let pids = std::fs::read_to_string(root.sleepers()).unwrap();
    assert_eq!(pids.lines().count(), 2, "{pids}");
    // The sleepers still run: holo returned without waiting for them.
    let first: i32 = pids.lines().next().unwrap().trim().parse().unwrap();
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(first), None).is_ok(),
        "the background child is gone; the test proves nothing"
    );
}

#[test]
fn apply_returns_while_a_child_of_the_plugin_holds_its_pipes() {
    let root = Root::new();
    let (text, _) = root.apply(&[("HOLO_NO_BATCH", "1")]);
    assert_both_started_and_sleepers_live(&root, &text);
}

#[test]
fn a_batch_returns_while_a_child_of_the_plugin_holds_its_pipes() {
    let root = Root::new();
    let (text, _) = root.apply(&[]);
    assert_both_started_and_sleepers_live(&root, &text);
}
