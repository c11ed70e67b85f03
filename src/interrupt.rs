//! SIGTERM, SIGINT and SIGHUP: a handler records the first signal and wakes
//! the poll loop that supervises the running plugin through a self-pipe.
//! There is no signal thread: the main thread alone decides what happens
//! (pass the signal on, wait the grace time, kill what is left, write the
//! report, release the lock, exit 128+signal), so nothing races it.

use std::os::fd::{BorrowedFd, IntoRawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The read end of the self-pipe (-1 before `install`).
static WATCH: AtomicI32 = AtomicI32::new(-1);
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The first signal that arrived, 0 for none.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How long a plugin has to end after the signal is passed on to it (or
/// after its timeout), before holo kills it and everything it started.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

extern "C" fn on_signal(signal: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the pipe is never closed.
        unsafe { libc::write(fd, b"!".as_ptr().cast(), 1) };
    }
}

/// Installs the handler; a failure leaves the default actions in place.
pub fn install() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let Ok((watch, wake)) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)
    else {
        return;
    };
    WATCH.store(watch.into_raw_fd(), Ordering::SeqCst);
    WAKE.store(wake.into_raw_fd(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics and calls write(2).
        let _ = unsafe { sigaction(signal, &action) };
    }
}

/// The signal that interrupted the run, if one did.
pub fn signal() -> Option<nix::sys::signal::Signal> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => nix::sys::signal::Signal::try_from(signal).ok(),
    }
}

/// The exit code of an interrupted run: 128 + the signal number.
pub fn exit_code() -> Option<i32> {
    signal().map(|signal| 128 + signal as i32)
}

/// Readable once a signal arrived (and from then on).
pub fn watch_fd() -> Option<BorrowedFd<'static>> {
    let fd = WATCH.load(Ordering::SeqCst);
    // SAFETY: the read end of the self-pipe stays open until exit.
    (fd >= 0).then(|| unsafe { BorrowedFd::borrow_raw(fd) })
}

/// The grace time: `HOLO_KILL_GRACE` (a duration; 0 kills at once) or the
/// default.
pub fn grace() -> Duration {
    std::env::var("HOLO_KILL_GRACE")
        .ok()
        .and_then(|text| parse_duration(&text))
        .map(|grace| grace.unwrap_or(Duration::ZERO))
        .unwrap_or(DEFAULT_GRACE)
}

// Shared with the SDK, which reads the same variables.
pub use holo_protocol::duration::{format_duration, parse_duration};

/// Every process of the session `leader` started (the plugin is a session
/// leader, and the commands it starts stay in its session unless they are
/// meant to outlive it), excluding zombies.
pub fn session_members(leader: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // After the command name in parentheses: state, ppid, pgrp, session.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split(' ').collect();
            fields.first().is_some_and(|state| *state != "Z")
                && fields.get(3).and_then(|s| s.parse::<i32>().ok()) == Some(leader)
        })
        .collect()
}

/// Kills every process of the plugin's session and waits (a bounded time)
/// until none is left, so that nothing a cut run started still runs when
/// the lock is released.
pub fn kill_session(leader: i32) {
    let started = std::time::Instant::now();
    loop {
        let members = session_members(leader);
        if members.is_empty() || started.elapsed() > Duration::from_secs(10) {
            return;
        }
        for pid in members {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Some(Some(Duration::from_secs(90))));
        assert_eq!(parse_duration("90s"), Some(Some(Duration::from_secs(90))));
        assert_eq!(parse_duration("15m"), Some(Some(Duration::from_secs(900))));
        assert_eq!(parse_duration("2h"), Some(Some(Duration::from_secs(7200))));
        assert_eq!(parse_duration("0"), Some(None));
        assert_eq!(parse_duration("ten"), None);
        assert_eq!(parse_duration("5d"), None);
        assert_eq!(parse_duration(""), None);
    }
}
