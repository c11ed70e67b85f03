//! A detached process known by what started it, not by its program's
//! name: its pid and its start time (field 22 of `/proc/PID/stat`, clock
//! ticks since boot), written to a file by the child itself before it
//! execs ([`crate::process::spawn_detached_recorded`]). A parent killed at
//! any moment after the fork therefore never leaves a process that nobody
//! can find, a recycled pid has another start time and is never taken for
//! the recorded process, and a wrapper script that execs the real program
//! is the same process.
//!
//! The file holds one line, `PID START_TICKS`.

use std::ffi::CStr;
use std::path::Path;

/// What a pid file says about the process it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PidRecord {
    pub pid: u32,
    /// Start time in clock ticks since boot, from `/proc/PID/stat`.
    pub start_ticks: u64,
}

impl PidRecord {
    /// The record in `path`; `None` when there is none or it is damaged.
    pub fn read(path: &Path) -> Option<PidRecord> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut fields = text.split_whitespace();
        let pid = fields.next()?.parse().ok()?;
        let start_ticks = fields.next()?.parse().ok()?;
        Some(PidRecord { pid, start_ticks })
    }

    /// Whether the recorded process still runs: the pid exists, is not a
    /// zombie, and started when the recorded one did.
    pub fn is_running(&self) -> bool {
        start_ticks(self.pid) == Some(self.start_ticks)
    }
}

/// The start time of a live process `pid`; `None` once it is gone or a
/// zombie.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    live_start_ticks(&stat)
}

/// Field 22 (starttime) of a `/proc/PID/stat` line, unless field 3 (state)
/// says the process is dead or a zombie. The name in field 2 may hold
/// spaces and parentheses, so fields are counted after the last `)`.
/// Allocates nothing: it also runs in a child between fork and exec.
fn live_start_ticks(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|b| *b == b' ' || *b == b'\n')
        .filter(|f| !f.is_empty());
    let state = fields.next()?;
    if matches!(state, b"Z" | b"X" | b"x") {
        return None;
    }
    // The state is field 3; starttime is field 22.
    let ticks = fields.nth(22 - 4)?;
    parse_decimal(ticks)
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

/// Writes `n` in decimal at the end of `buffer`; returns where it starts.
fn format_decimal(mut n: u64, buffer: &mut [u8; 24]) -> usize {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// In the child between fork and exec: writes its own record to `path`.
/// Only raw system calls and stack buffers (no allocation, no locks), as
/// that moment requires; a failure stops the exec, so nothing runs
/// unrecorded.
pub(crate) fn write_own_record(path: &CStr) -> std::io::Result<()> {
    let mut stat = [0u8; 1024];
    let length = read_small_file(c"/proc/self/stat", &mut stat)?;
    let ticks = live_start_ticks(&stat[..length])
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EIO))?;
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    let mut line = [0u8; 64];
    let mut used = 0;
    for (number, separator) in [(pid as u64, b' '), (ticks, b'\n')] {
        let mut digits = [0u8; 24];
        let from = format_decimal(number, &mut digits);
        let piece = &digits[from..];
        line[used..used + piece.len()].copy_from_slice(piece);
        used += piece.len();
        line[used] = separator;
        used += 1;
    }
    write_small_file(path, &line[..used])
}

fn read_small_file(path: &CStr, buffer: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: reads at most buffer.len() bytes into buffer.
    let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
    let error = std::io::Error::last_os_error();
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    usize::try_from(read).map_err(|_| error)
}

fn write_small_file(path: &CStr, bytes: &[u8]) -> std::io::Result<()> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: writes bytes from a live slice.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let error = std::io::Error::last_os_error();
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if usize::try_from(written).ok() == Some(bytes.len()) {
        Ok(())
    } else {
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_field_22_counted_after_the_name() {
        let stat = b"42 (qemu) x) y) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n";
        assert_eq!(live_start_ticks(stat), Some(987654));
    }

    #[test]
    fn a_zombie_or_a_short_line_has_no_start_time() {
        let zombie = b"42 (q) Z 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n";
        assert_eq!(live_start_ticks(zombie), None);
        assert_eq!(live_start_ticks(b"42 (q) S 1 2\n"), None);
    }

    #[test]
    fn this_process_runs_and_a_recycled_pid_does_not_match() {
        let pid = std::process::id();
        let ticks = start_ticks(pid).expect("own start time");
        assert!(
            PidRecord {
                pid,
                start_ticks: ticks
            }
            .is_running()
        );
        assert!(
            !PidRecord {
                pid,
                start_ticks: ticks + 1
            }
            .is_running()
        );
    }

    #[test]
    fn a_damaged_file_is_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pid");
        std::fs::write(&path, "12").unwrap();
        assert_eq!(PidRecord::read(&path), None);
        std::fs::write(&path, "12 34\n").unwrap();
        assert_eq!(
            PidRecord::read(&path),
            Some(PidRecord {
                pid: 12,
                start_ticks: 34
            })
        );
    }
}
