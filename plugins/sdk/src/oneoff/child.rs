//! The plugin's own `apply ENTITY` in a child process, as a driver runs
//! it: in a process group of its own, with FD 3 and the run's `HOLO_*`
//! variables. SIGTERM, SIGINT and SIGHUP to the one-off are passed on to
//! it, as holo passes them on to a plugin (it ends its command's process
//! group and starts no other); after the grace time, `HOLO_KILL_GRACE`,
//! its process group is killed.

use crate::error::{Error, Result};
use crate::process::interrupted_by;
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long the child has to end after the signal is passed on, as holo
/// gives a plugin.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// How often the one-off looks at the child and at signals.
const WAIT_POLL: Duration = Duration::from_millis(20);

/// What the child process gave.
pub(super) struct Ran {
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) fd3: Vec<u8>,
    pub(super) exit: Option<i32>,
    /// Not run: an entity it requires failed.
    pub(super) skipped: bool,
}

impl Ran {
    /// An entity not run because `required` failed, with the driver's words.
    pub(super) fn skipped(required: &str) -> Ran {
        Ran {
            stdout: Vec::new(),
            stderr: format!("!! {}\n", holo_protocol::skipped_message(required)).into_bytes(),
            fd3: Vec::new(),
            exit: Some(1),
            skipped: true,
        }
    }

    /// The first line of the error output, without `!! `.
    pub(super) fn first_error(&self, rewrite: &dyn Fn(String) -> String) -> Option<String> {
        let stderr = rewrite(String::from_utf8_lossy(&self.stderr).into_owned());
        stderr
            .lines()
            .map(|line| line.trim_start_matches("!! ").trim())
            .find(|line| !line.is_empty())
            .map(str::to_string)
    }
}

/// Runs `operation id` of this program with `variables`.
pub(super) fn run_child(
    variables: &[(&'static str, OsString)],
    operation: &str,
    id: &str,
) -> Result<Ran> {
    let exe = std::env::current_exe()
        .map_err(|err| Error::new(format!("cannot find this program's path: {err}")))?;
    let (fd3_read, fd3_write) =
        nix::unistd::pipe().map_err(|err| Error::new(format!("cannot create a pipe: {err}")))?;
    let mut command = Command::new(&exe);
    command
        .args([operation, id])
        .envs(variables.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let raw_write = fd3_write.as_raw_fd();
    // SAFETY: dup2 is async-signal-safe; it puts the pipe on FD 3 of the child.
    unsafe {
        use std::os::unix::process::CommandExt;
        // A terminal's Ctrl-C reaches the one-off, which passes it on.
        command.process_group(0).pre_exec(move || {
            if libc::dup2(raw_write, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|err| Error::new(format!("cannot run {}: {err}", exe.display())))?;
    drop(fd3_write);
    let read_all = |mut reader: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = reader.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = child.stdout.take().map(|out| read_all(Box::new(out)));
    let stderr = child.stderr.take().map(|err| read_all(Box::new(err)));
    let fd3 = read_all(Box::new(std::fs::File::from(fd3_read)));
    let status = supervise(&mut child)
        .map_err(|err| Error::new(format!("cannot wait for {}: {err}", exe.display())))?;
    let join = |handle: Option<std::thread::JoinHandle<Vec<u8>>>| {
        handle.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Ran {
        stdout: join(stdout),
        stderr: join(stderr),
        fd3: join(Some(fd3)),
        exit: status.code(),
        skipped: false,
    })
}

/// Waits for the child, passing an interrupt on to it and killing its
/// process group when it outlives the grace time.
fn supervise(child: &mut Child) -> std::io::Result<ExitStatus> {
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let mut kill_at: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        match (kill_at, interrupted_by()) {
            (None, Some(signal)) => {
                if let Ok(signal) = nix::sys::signal::Signal::try_from(signal) {
                    let _ = nix::sys::signal::kill(group, signal);
                }
                kill_at = Some(Instant::now() + grace());
            }
            (Some(at), _) if Instant::now() >= at => {
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                return child.wait();
            }
            _ => {}
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// `HOLO_KILL_GRACE` (a duration; 0 kills at once) or holo's default.
fn grace() -> Duration {
    std::env::var("HOLO_KILL_GRACE")
        .ok()
        .and_then(|text| holo_protocol::duration::parse_duration(&text))
        .map(|grace| grace.unwrap_or(Duration::ZERO))
        .unwrap_or(DEFAULT_GRACE)
}
