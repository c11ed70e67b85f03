//! A holo root for the holo-vms plugin tests: `etc/holorc` enabling the
//! plugin, projects in `usr/share/holo/vms/<project>/holos.yaml`, and a
//! `bin/` on PATH with the fake QEMU and a fake `ssh`. The runtime state is
//! below the root (test mode). Dropping it takes every recorded project down,
//! so no QEMU outlives a test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A stand-in for `ssh` that behaves like it where holos can tell: the same
/// options, 255 with ssh's message when nothing listens on the port, and
/// otherwise the remote command line run by a shell, here on the host (the
/// "guest"), with its output and exit status. Each call's arguments are
/// appended to `$FAKE_SSH_LOG`, one line each.
pub const FAKE_SSH: &str = r#"#!/bin/sh
[ -n "$FAKE_SSH_LOG" ] && printf '%s\n' "$*" >> "$FAKE_SSH_LOG"
port=22
while [ $# -gt 0 ]; do
    case "$1" in
        -p) port=$2; shift 2 ;;
        -i|-o|-l|-F|-E) shift 2 ;;
        -T|-t|-q|-n) shift ;;
        -*) echo "ssh: unknown option -- $1" >&2; exit 255 ;;
        *) break ;;
    esac
done
host=${1#*@}
shift
[ "$1" = "--" ] && shift
if ! bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
    echo "ssh: connect to host $host port $port: Connection refused" >&2
    exit 255
fi
exec sh -c "$*"
"#;

pub struct Root {
    pub dir: tempfile::TempDir,
}

/// The `holo` driver from the workspace's build.
pub fn holo_binary() -> PathBuf {
    test_support::binary("holo")
}

impl Root {
    pub fn new() -> Root {
        // Short paths: QEMU's unix sockets hold 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("hp")
            .tempdir_in("/tmp")
            .unwrap();
        let root = dir.path();
        for sub in [
            "etc",
            "run",
            "tmp",
            "bin",
            "usr/lib/holo",
            "usr/share/holo/vms",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/holorc"), "plugin vms\n").unwrap();
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_holo-vms"),
            root.join("usr/lib/holo/holo-vms"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            test_support::binary("fake-qemu-system-x86_64"),
            root.join("bin/qemu-system-x86_64"),
        )
        .unwrap();
        let ssh = root.join("bin/ssh");
        std::fs::write(&ssh, FAKE_SSH).unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let status = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(root.join("base.qcow2"))
            .arg("64M")
            .status()
            .unwrap();
        assert!(status.success());
        Root { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The base image, for `image:` in compose files.
    pub fn image(&self) -> String {
        self.path().join("base.qcow2").display().to_string()
    }

    /// Writes `usr/share/holo/vms/PROJECT/NAME`.
    pub fn resource(&self, project: &str, name: &str, text: &str) {
        let dir = self.path().join("usr/share/holo/vms").join(project);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    pub fn compose(&self, project: &str, text: &str) {
        self.resource(project, "holos.yaml", text);
    }

    pub fn state(&self) -> PathBuf {
        self.path().join("var/lib/holos")
    }

    pub fn ssh_log(&self) -> PathBuf {
        self.path().join("ssh.log")
    }

    /// The ssh calls so far, one argument line each.
    pub fn ssh_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.ssh_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn environment(&self, command: &mut Command) {
        command
            .current_dir(self.path())
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.path().join("bin").display()
                ),
            )
            .env("HOME", self.path())
            .env("HOLO_ROOT_DIR", self.path())
            .env("TMPDIR", self.path().join("tmp"))
            .env("HOLOS_ACCEL", "tcg")
            .env("FAKE_SSH_LOG", self.ssh_log())
            .env("FAKE_QEMU_ARGV_FILE", self.path().join("argv.jsonl"));
    }

    /// `holo ARGS` on this root.
    pub fn holo(&self, args: &[&str]) -> Command {
        let mut command = Command::new(holo_binary());
        command.args(args);
        self.environment(&mut command);
        command
    }

    /// `holo-vms ARGS` (such as `ensure`, `status`) on this root, run by hand.
    pub fn plugin(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holo-vms"));
        command.args(args);
        self.environment(&mut command);
        command
    }

    /// `holos ARGS` on this root's state (test mode puts it below the root).
    pub fn holos(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holos"));
        command.args(args);
        self.environment(&mut command);
        command
    }

    /// Runs `command`, failing the test if it takes longer than `limit`
    /// (a QEMU that held holo's pipes would keep it from returning).
    pub fn run_within(&self, mut command: Command, limit: Duration) -> Output {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(command.output());
        });
        receive
            .recv_timeout(limit)
            .unwrap_or_else(|_| panic!("the command did not return within {limit:?}"))
            .unwrap()
    }

    /// `holo ARGS`, with stdout and stderr together as the user sees them.
    pub fn holo_text(&self, args: &[&str]) -> (i32, String) {
        let out = self.run_within(self.holo(args), Duration::from_secs(120));
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }

    /// `holos ARGS`, which must succeed; its output.
    pub fn holos_ok(&self, args: &[&str]) -> Output {
        let out = self.holos(args).output().unwrap();
        assert!(
            out.status.success(),
            "holos {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `holos -p PROJECT ps --json`.
    pub fn ps(&self, project: &str) -> Vec<Value> {
        let out = self.holos_ok(&["-p", project, "ps", "--json"]);
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// The running pid of each instance of `project`, by name.
    pub fn pids(&self, project: &str) -> Vec<(String, Option<u64>)> {
        self.ps(project)
            .iter()
            .map(|i| {
                (
                    i["instance"].as_str().unwrap_or_default().to_string(),
                    i["pid"].as_u64(),
                )
            })
            .collect()
    }

    pub fn pid(&self, project: &str, instance: &str) -> Option<u64> {
        self.pids(project)
            .into_iter()
            .find(|(name, _)| name == instance)
            .and_then(|(_, pid)| pid)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let projects = std::fs::read_dir(self.state().join("projects"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_string)
            })
            .collect::<Vec<_>>();
        for project in projects {
            let _ = self.holos(&["down", &project]).output();
        }
    }
}

/// Kills a process with SIGKILL, as a crash would end it, and waits until it is gone.
pub fn kill(pid: u64) {
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let started = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && started.elapsed() < Duration::from_secs(10)
    {
        // A zombie still has /proc/PID until its parent reaps it; QEMU's
        // parent is init (it was started detached), which reaps quickly.
        std::thread::sleep(Duration::from_millis(20));
    }
}
