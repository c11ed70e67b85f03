//! Output shows while it happens: an entity whose apply prints a line and
//! then waits must have that line on holo's stdout before it finishes, with
//! and without batching, and the complete output is the same either way.
//!
//! The plugin is holo-demo (the SDK's example plugin): its `announce` runs
//! `echo TEXT` through PATH, and the test puts an `echo` there that prints
//! and then waits on a fifo that the test opens.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `echo spawn late writer` leaves a background writer behind that prints
/// once the test opens `late-gate`, then records that it was not killed;
/// any other `echo TEXT` prints TEXT and waits until the test opens `gate`.
const FAKE_ECHO: &str = r#"#!/bin/sh
case "$*" in
"spawn late writer")
  ( read -r _ < "$ROOT/late-gate"; printf 'late output\n'; echo ok > "$ROOT/late-status" ) & ;;
*)
  printf '%s\n' "$*"
  read -r _ < "$ROOT/gate" ;;
esac
"#;

/// The directory of the binaries under test, holo-demo among them.
fn binaries() -> PathBuf {
    test_support::binary("holo-demo");
    test_support::profile_dir()
}

struct Root {
    dir: tempfile::TempDir,
    holo: Option<Child>,
}

impl Root {
    fn new(bin: &Path) -> Root {
        Root::with_resources(
            bin,
            "[[demo]]\nname = \"a\"\nvalue = \"1\"\nannounce = \"hello from a\"\n\n\
             [[demo]]\nname = \"b\"\nvalue = \"2\"\n",
        )
    }

    fn with_resources(bin: &Path, resources: &str) -> Root {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in [
            "etc",
            "run",
            "tmp",
            "usr/share/holo/demo",
            "usr/lib/holo",
            "fake-bin",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/holorc"), "plugin demo\n").unwrap();
        std::os::unix::fs::symlink(bin.join("holo-demo"), root.join("usr/lib/holo/holo-demo"))
            .unwrap();
        std::fs::write(root.join("usr/share/holo/demo/demo.toml"), resources).unwrap();
        let echo = root.join("fake-bin/echo");
        std::fs::write(&echo, FAKE_ECHO).unwrap();
        test_support::make_executable(&echo);
        for fifo in ["gate", "late-gate"] {
            nix::unistd::mkfifo(
                &root.join(fifo),
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            )
            .unwrap();
        }
        Root { dir, holo: None }
    }

    /// Starts `holo apply` with stdout on a pipe that a thread forwards.
    fn start(&mut self, bin: &Path, env: &[(&str, &str)]) -> mpsc::Receiver<Vec<u8>> {
        let root = self.dir.path();
        let path = format!(
            "{}:{}",
            root.join("fake-bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(bin.join("holo"));
        command
            .arg("apply")
            .env("HOLO_ROOT_DIR", root)
            .env("TMPDIR", root.join("tmp"))
            .env("PATH", path)
            .env("ROOT", root)
            .env_remove("HOLO_NO_BATCH")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut holo = command.spawn().unwrap();
        let mut stdout = holo.stdout.take().unwrap();
        self.holo = Some(holo);
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 || send.send(buffer[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        receive
    }

    /// Lets the fake echo finish.
    fn open_gate(&self) {
        std::fs::write(self.dir.path().join("gate"), "go\n").unwrap();
    }

    /// Reads stdout until `wanted` shows (or 20 s pass); returns all read.
    fn read_until(receive: &mpsc::Receiver<Vec<u8>>, wanted: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains(wanted) {
            let left = deadline.saturating_duration_since(Instant::now());
            match receive.recv_timeout(left) {
                Ok(bytes) => seen.extend(bytes),
                Err(_) => break,
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    /// Runs one apply: checks that `hello from ID` shows while entity ID
    /// still waits, calls `meanwhile`, lets the entity finish, and returns
    /// the complete stdout with the root replaced.
    fn apply_watching(
        &mut self,
        bin: &Path,
        env: &[(&str, &str)],
        id: &str,
        meanwhile: impl FnOnce(&Root),
    ) -> String {
        let receive = self.start(bin, env);
        let early = Self::read_until(&receive, &format!("hello from {id}\n"));
        assert!(
            early.contains(&format!("Working on demo:{id}"))
                && early.contains(&format!("hello from {id}\n")),
            "the entity's output did not show while it ran; got so far: {early:?}"
        );
        meanwhile(self);
        let holo = self.holo.as_mut().unwrap();
        assert!(
            holo.try_wait().unwrap().is_none(),
            "holo finished although the entity still waits"
        );
        self.open_gate();
        let status = self.holo.take().unwrap().wait().unwrap();
        let mut all = early.into_bytes();
        while let Ok(bytes) = receive.recv_timeout(Duration::from_secs(20)) {
            all.extend(bytes);
        }
        assert_eq!(status.code(), Some(0));
        String::from_utf8_lossy(&all).replace(&self.dir.path().display().to_string(), "ROOT")
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        // On a failed assertion: release the fake echo and the background
        // writer (if they wait) and holo.
        use std::os::unix::fs::OpenOptionsExt;
        for fifo in ["gate", "late-gate"] {
            if let Ok(mut gate) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(self.dir.path().join(fifo))
            {
                let _ = std::io::Write::write_all(&mut gate, b"go\n");
            }
        }
        if let Some(mut holo) = self.holo.take() {
            let _ = holo.kill();
            let _ = holo.wait();
        }
    }
}

#[test]
fn output_of_a_slow_entity_shows_before_it_finished_and_batching_changes_no_byte() {
    let bin = binaries();
    let batched = Root::new(&bin).apply_watching(&bin, &[], "a", |_| {});
    let single = Root::new(&bin).apply_watching(&bin, &[("HOLO_NO_BATCH", "1")], "a", |_| {});
    assert_eq!(batched, single);
    assert!(batched.contains("Working on demo:b"), "{batched}");
}

/// demo:a leaves a writer behind; it writes while demo:b runs.
const LEFTOVER: &str = "[[demo]]\nname = \"a\"\nvalue = \"1\"\nannounce = \"spawn late writer\"\n\n\
                        [[demo]]\nname = \"b\"\nvalue = \"2\"\nannounce = \"hello from b\"\n";

#[test]
fn a_child_left_behind_by_an_entity_neither_breaks_nor_writes_into_a_later_entity() {
    let bin = binaries();
    let mut batched_root = Root::with_resources(&bin, LEFTOVER);
    let batched = batched_root.apply_watching(&bin, &[], "b", |root| {
        // the writer that demo:a left behind prints while demo:b runs
        root.release_late_writer();
        let status = root.dir.path().join("late-status");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !status.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            std::fs::read_to_string(&status).unwrap_or_default(),
            "ok\n",
            "the background writer did not survive its write inside the batch"
        );
    });
    let single = Root::with_resources(&bin, LEFTOVER).apply_watching(
        &bin,
        &[("HOLO_NO_BATCH", "1")],
        "b",
        Root::release_late_writer,
    );
    assert!(!batched.contains("late output"), "{batched}");
    assert_eq!(batched, single);
}

impl Root {
    fn release_late_writer(&self) {
        std::fs::write(self.dir.path().join("late-gate"), "go\n").unwrap();
    }
}
