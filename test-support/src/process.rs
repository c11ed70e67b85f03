//! Processes in tests: waiting with a deadline instead of a fixed sleep,
//! and reading what a process left.

use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

/// How often a condition is looked at again.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Polls `done` until it holds; fails the test naming `what` once `limit`
/// has passed.
#[track_caller]
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    poll(what, limit, || done().then_some(()));
}

/// Polls `probe` until it gives a value; fails the test naming `what` once
/// `limit` has passed.
#[track_caller]
pub fn poll<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} for {what}, in vain"
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Waits for `child` to exit; kills it and fails the test naming `what`
/// when it runs longer than `limit`.
#[track_caller]
pub fn wait_child(child: &mut Child, what: &str, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL_INTERVAL),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not end within {limit:?}; it was killed");
            }
            Err(err) => panic!("cannot wait for {what}: {err}"),
        }
    }
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn alive(pid: impl Into<i64>) -> bool {
    let pid = pid.into();
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Whether process `pid` is gone (or a zombie) within `limit`: a killed
/// process takes a moment to go.
pub fn gone_within(pid: impl Into<i64> + Copy, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    true
}

/// Output bytes as text, for assertions.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stdout and stderr of `output` as text, for a failure message.
pub fn both(output: &Output) -> String {
    format!(
        "exit: {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// What [`run_measured`] saw of a process.
pub struct Measured {
    /// The exit code; -1 when a signal ended it.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Its peak resident size in bytes (wait4's `ru_maxrss`: this one
    /// child's, not every child's as `RUSAGE_CHILDREN` would be).
    pub peak: u64,
}

/// Runs `command` with its output in files of `dir`, and reaps it with
/// wait4 for its peak resident size; kills it and fails the test naming
/// `what` when it runs longer than `limit`.
#[track_caller]
pub fn run_measured(
    mut command: std::process::Command,
    dir: &std::path::Path,
    what: &str,
    limit: Duration,
) -> Measured {
    let files = [dir.join("measured.stdout"), dir.join("measured.stderr")];
    let create = |path: &std::path::Path| {
        std::fs::File::create(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(create(&files[0]))
        .stderr(create(&files[1]));
    // Reaped with wait4 below, which also gives the peak resident size.
    let pid = command
        .spawn()
        .map(|child| child.id())
        .unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
    let pid = libc::pid_t::try_from(pid).unwrap_or_else(|err| panic!("{what}: {err}"));
    let (status, usage) = reap(pid, what, limit);
    let read = |path: &std::path::Path| {
        String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
    };
    Measured {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stdout: read(&files[0]),
        stderr: read(&files[1]),
        // ru_maxrss is in KiB on Linux.
        peak: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    }
}

/// Waits for child `pid` with wait4; its status and resource usage.
#[track_caller]
fn reap(pid: libc::pid_t, what: &str, limit: Duration) -> (i32, libc::rusage) {
    let deadline = Instant::now() + limit;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child, with valid pointers.
        if unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } == pid {
            return (status, usage);
        }
        if Instant::now() >= deadline {
            // SAFETY: kill(2) and a blocking wait4 on our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::wait4(pid, &mut status, 0, &mut usage);
            }
            panic!("{what} did not end within {limit:?}; it was killed");
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_that_never_holds_fails_naming_it() {
        let failure = std::panic::catch_unwind(|| {
            wait_until("the moon", Duration::from_millis(30), || false)
        })
        .expect_err("never holds");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(message.starts_with("waited 30ms for the moon"), "{message}");
        let mut tries = 0;
        assert_eq!(
            poll("three tries", Duration::from_secs(10), || {
                tries += 1;
                (tries == 3).then_some(tries)
            }),
            3
        );
    }

    #[test]
    fn a_child_past_its_limit_is_killed() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_child(&mut child, "sleep 600", Duration::from_millis(50))
        }))
        .expect_err("too slow");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(message.starts_with("sleep 600 did not end"), "{message}");
        assert!(!alive(pid));
        assert!(gone_within(pid, Duration::ZERO));
        assert!(!gone_within(std::process::id(), Duration::from_millis(20)));
        let mut quick = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        assert!(wait_child(&mut quick, "true", Duration::from_secs(10)).success());
    }
}
