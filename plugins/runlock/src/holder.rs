//! Whether the process a lock file names is the run that made it: alive,
//! not a zombie, and started before the lock was written (a pid recycled
//! for a later process is not the holder).

use std::time::{Duration, SystemTime};

/// How much later than the lock's modification time a process must have
/// started to count as a recycled pid: the boot time the start is counted
/// from has whole seconds.
const START_SLACK: Duration = Duration::from_secs(2);

/// The pid in a complete `PID\n`; Holo 3's test suite writes `0`, which
/// names no process and stays a held lock.
pub(crate) fn holder_pid(content: &str) -> Option<u32> {
    let digits = content.strip_suffix('\n')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|pid| *pid > 0)
}

/// Why the process a lock names does not hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// No such process, or a zombie: it has ended.
    Ended,
    /// A live process that started after the lock was written.
    Recycled,
}

/// `None` while `pid` may be the run that wrote a lock at `written`.
pub(crate) fn gone(pid: u32, written: Option<SystemTime>) -> Option<Gone> {
    if !is_running(pid) || is_zombie(pid) {
        return Some(Gone::Ended);
    }
    let started = start_time(pid)?;
    let written = written?;
    (started > written + START_SLACK).then_some(Gone::Recycled)
}

/// Whether a process with this pid exists (for any user). Our own pid in
/// the file is a leftover: this run has not written it.
pub(crate) fn is_running(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}

/// The fields of `/proc/PID/stat` after the command name: state first.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split(' ').map(str::to_string).collect())
}

fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| fields.first().is_some_and(|state| state == "Z"))
}

/// When the process started: `starttime` (clock ticks after boot) of
/// `/proc/PID/stat` and `btime` of `/proc/stat`.
fn start_time(pid: u32) -> Option<SystemTime> {
    // Field 22 of stat; the fields here start at field 3.
    let ticks: u64 = stat_fields(pid)?.get(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|ticks| *ticks > 0)?;
    let after_boot = Duration::from_millis(ticks.saturating_mul(1000) / per_second);
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(boot) + after_boot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_complete_positive_pid_names_a_holder() {
        assert_eq!(holder_pid("123\n"), Some(123));
        assert_eq!(holder_pid("0\n"), None);
        assert_eq!(holder_pid("0"), None);
        assert_eq!(holder_pid("12"), None, "a write still under way");
        assert_eq!(holder_pid(""), None);
        assert_eq!(holder_pid(" 1\n"), None);
        assert_eq!(holder_pid("99999999999999\n"), None);
    }

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn liveness() {
        assert!(!is_running(std::process::id()));
        assert!(!is_running(dead_pid()));
        assert!(is_running(1));
    }

    #[test]
    fn a_process_started_after_the_lock_is_not_its_holder() {
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        assert_eq!(gone(sleeper.id(), Some(hour_ago)), Some(Gone::Recycled));
        assert_eq!(gone(sleeper.id(), Some(SystemTime::now())), None);
        sleeper.kill().unwrap();
        // A zombie until it is waited for.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !is_zombie(sleeper.id()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            gone(sleeper.id(), Some(SystemTime::now())),
            Some(Gone::Ended)
        );
        sleeper.wait().unwrap();
    }
}
