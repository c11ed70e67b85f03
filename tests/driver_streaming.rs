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

const FAKE_ECHO: &str = "#!/bin/sh\nprintf '%s\\n' \"$*\"\nread -r _ < \"$STREAM_GATE\"\n";

/// The directory of the binaries under test, with holo-demo built into it.
fn binaries() -> PathBuf {
    let holo = assert_cmd::cargo::cargo_bin("holo");
    let dir = holo.parent().expect("a directory").to_path_buf();
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut build = Command::new(cargo);
    build
        .args([
            "build",
            "--quiet",
            "-p",
            "holo-plugin",
            "--bin",
            "holo-demo",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if dir.file_name().is_some_and(|name| name == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("run cargo build").success());
    dir
}

struct Root {
    dir: tempfile::TempDir,
    holo: Option<Child>,
}

impl Root {
    fn new(bin: &Path) -> Root {
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
        std::fs::write(
            root.join("usr/share/holo/demo/demo.toml"),
            "[[demo]]\nname = \"a\"\nvalue = \"1\"\nannounce = \"hello from a\"\n\n\
             [[demo]]\nname = \"b\"\nvalue = \"2\"\n",
        )
        .unwrap();
        let echo = root.join("fake-bin/echo");
        std::fs::write(&echo, FAKE_ECHO).unwrap();
        std::fs::set_permissions(&echo, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        nix::unistd::mkfifo(
            &root.join("gate"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
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
            .env("STREAM_GATE", root.join("gate"))
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

    /// Runs one apply: checks that `hello from a` shows while the entity
    /// still waits, then returns the complete stdout with the root replaced.
    fn apply_watching(&mut self, bin: &Path, env: &[(&str, &str)]) -> String {
        let receive = self.start(bin, env);
        let early = Self::read_until(&receive, "hello from a\n");
        assert!(
            early.contains("Working on demo:a") && early.contains("hello from a\n"),
            "the entity's output did not show while it ran; got so far: {early:?}"
        );
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
        // On a failed assertion: release the fake echo (if it waits) and holo.
        use std::os::unix::fs::OpenOptionsExt;
        if let Ok(mut gate) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.path().join("gate"))
        {
            let _ = std::io::Write::write_all(&mut gate, b"go\n");
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
    let batched = Root::new(&bin).apply_watching(&bin, &[]);
    let single = Root::new(&bin).apply_watching(&bin, &[("HOLO_NO_BATCH", "1")]);
    assert_eq!(batched, single);
    assert!(batched.contains("Working on demo:b"), "{batched}");
}
