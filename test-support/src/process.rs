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
