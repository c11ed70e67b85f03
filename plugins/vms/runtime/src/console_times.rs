//! When each line of an instance's `console.log` arrived.
//!
//! QEMU writes `console.log` itself (the serial chardev's `logfile`), so no
//! holos process sees the bytes pass; relaying the console instead would
//! take the serial socket from `holos console`, and a relay that dies
//! would lose the guest's output. So a stamper process, one per running
//! instance, watches the log grow and appends to `console.times` one
//! record per growth it sees: the log's length and the time. A line's time
//! is that of the first record at or past its end, an upper bound late by
//! at most one [`TICK`].
//!
//! A record is 16 bytes, the offset (u64) and milliseconds since the epoch
//! (i64, [`UNKNOWN`] for bytes that arrived while nothing watched), little
//! endian, appended with one write: a kill at any moment leaves at most a
//! torn last record, which readers skip and the next stamper cuts off. At
//! [`MAX_RECORDS`] the stamper merges neighbouring records (written aside
//! and renamed over), so older lines get coarser, never earlier, times.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use holo_plugin::pid_record::PidRecord;
use holo_plugin::process::{Command, spawn_detached};
use nix::fcntl::{Flock, FlockArg};

use crate::spec::InstanceSpec;

/// The time of bytes that arrived while no stamper watched.
pub const UNKNOWN: i64 = i64::MIN;
/// Records an index holds at most before neighbours are merged.
pub const MAX_RECORDS: usize = 65536;
/// How often the stamper looks at the log.
pub const TICK: Duration = Duration::from_millis(100);
/// The first argument that makes the holos program a stamper.
pub const STAMPER_ARG: &str = "--holos-console-times";
const RECORD: usize = 16;

/// Bytes before `offset` had arrived by `at_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub offset: u64,
    pub at_ms: i64,
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn encode(stamp: Stamp) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    out[..8].copy_from_slice(&stamp.offset.to_le_bytes());
    out[8..].copy_from_slice(&stamp.at_ms.to_le_bytes());
    out
}

fn decode(bytes: &[u8; RECORD]) -> Stamp {
    let mut offset = [0u8; 8];
    let mut at_ms = [0u8; 8];
    offset.copy_from_slice(&bytes[..8]);
    at_ms.copy_from_slice(&bytes[8..]);
    Stamp {
        offset: u64::from_le_bytes(offset),
        at_ms: i64::from_le_bytes(at_ms),
    }
}

/// The records of an index in order: a torn last record and records that
/// do not move forward are left out; a missing index has none.
pub fn read_index(path: &Path) -> Vec<Stamp> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut stamps: Vec<Stamp> = Vec::new();
    for chunk in bytes.as_chunks::<RECORD>().0 {
        let stamp = decode(chunk);
        if stamps.last().is_none_or(|last| stamp.offset > last.offset) {
            stamps.push(stamp);
        }
    }
    stamps
}

/// The times of a console log's lines, as its index records them.
#[derive(Debug, Default)]
pub struct LineTimes {
    stamps: Vec<Stamp>,
}

impl LineTimes {
    /// The index at `path`, only as far as the log (`log_len` bytes) goes:
    /// an index of an older, longer log says nothing about this one.
    pub fn load(path: &Path, log_len: u64) -> LineTimes {
        let stamps = read_index(path);
        if stamps.last().is_some_and(|s| s.offset > log_len) {
            return LineTimes::default();
        }
        LineTimes { stamps }
    }

    /// How far the index reaches: lines ending here or before have their
    /// time settled (known or unknown).
    pub fn covered(&self) -> u64 {
        self.stamps.last().map_or(0, |s| s.offset)
    }

    /// The time of the line that ends (newline included) at byte `end`;
    /// `None` when unknown.
    pub fn time_of(&self, end: u64) -> Option<i64> {
        let at = self.stamps.partition_point(|s| s.offset < end);
        self.stamps
            .get(at)
            .map(|s| s.at_ms)
            .filter(|ms| *ms != UNKNOWN)
    }
}

/// The index next to a console log.
pub fn index_path(dir: &Path) -> PathBuf {
    dir.join("console.times")
}

fn lock_path(dir: &Path) -> PathBuf {
    dir.join("console.times.lock")
}

/// The program that runs as a stamper when given [`STAMPER_ARG`]; without
/// one (a library user such as a test), no times are recorded.
static STAMPER_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the holos program, which [`start_stamper`] runs.
pub fn set_stamper_program(program: PathBuf) {
    let _ = STAMPER_PROGRAM.set(program);
}

/// Whether a stamper watches the instance's console log now.
pub fn stamper_running(dir: &Path) -> bool {
    let Ok(file) = File::open(lock_path(dir)) else {
        return false;
    };
    Flock::lock(file, FlockArg::LockSharedNonblock).is_err()
}

/// Waits (up to `limit`) for the stamper of a QEMU that has gone to look
/// a last time and exit, so that nothing writes in the instance's
/// directory after `stop` or `down`.
pub fn wait_stamper_gone(dir: &Path, limit: Duration) {
    let started = std::time::Instant::now();
    while stamper_running(dir) && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts the stamper of the QEMU `pid` of `spec`; `start` is the log's
/// length and the time just before that QEMU started, so that what it
/// writes before the stamper looks is stamped, not unknown.
pub fn start_stamper(spec: &InstanceSpec, pid: u32, start: Option<Stamp>) {
    let Some(program) = STAMPER_PROGRAM.get() else {
        return;
    };
    let mut command = Command::new(program)
        .arg(STAMPER_ARG)
        .arg(&spec.dir)
        .arg(pid.to_string());
    if let Some(start) = start {
        command = command
            .arg(start.offset.to_string())
            .arg(start.at_ms.to_string());
    }
    if let Err(e) = spawn_detached(&command, &spec.qemu_log()) {
        eprintln!(
            "holos: {}: the console's line times are not recorded: {e}",
            spec.label()
        );
    }
}

/// Starts a stamper for a running QEMU that has none (it was killed, or
/// an older holos started the QEMU): what arrived before now is of unknown
/// time, what arrives later is stamped.
pub fn ensure_stamper(spec: &InstanceSpec, pid: u32) {
    if !stamper_running(&spec.dir) {
        start_stamper(spec, pid, Some(start_mark(spec)));
    }
}

/// The log's length and the time now: what [`start_stamper`] is given.
pub fn start_mark(spec: &InstanceSpec) -> Stamp {
    Stamp {
        offset: file_len(&spec.console_log()).unwrap_or(0),
        at_ms: now_ms(),
    }
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// The stamper: `DIR PID [OFFSET MS]`. Watches `DIR/console.log` while
/// QEMU `PID` (as `DIR/qemu.pid` records it) runs, then looks once more
/// and exits. One at a time per instance: a second waits for the lock.
pub fn run_stamper(args: &[String]) -> Result<(), String> {
    let usage = || format!("usage: {STAMPER_ARG} DIR PID [OFFSET MS]");
    let dir = PathBuf::from(args.first().ok_or_else(usage)?);
    let pid: u32 = args.get(1).and_then(|p| p.parse().ok()).ok_or_else(usage)?;
    let start = match (args.get(2), args.get(3)) {
        (Some(offset), Some(ms)) => Some(Stamp {
            offset: offset.parse().map_err(|_| usage())?,
            at_ms: ms.parse().map_err(|_| usage())?,
        }),
        _ => None,
    };
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(&dir))
        .map_err(|e| format!("cannot open {}: {e}", lock_path(&dir).display()))?;
    let _held = Flock::lock(lock, FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("cannot lock {}: {e}", lock_path(&dir).display()))?;
    let mut watch = Watch::settle(&dir, start)?;
    loop {
        let alive = qemu_runs(&dir, pid);
        if !watch.observe() || !alive {
            return Ok(());
        }
        std::thread::sleep(TICK);
    }
}

fn qemu_runs(dir: &Path, pid: u32) -> bool {
    PidRecord::read(&dir.join("qemu.pid")).is_some_and(|r| r.pid == pid && r.is_running())
}

/// What the stamper knows of the log and its index.
struct Watch {
    console: PathBuf,
    index: PathBuf,
    /// The last record's offset.
    covered: u64,
    records: usize,
}

impl Watch {
    /// Repairs the index (a torn record, or an index of an older log) and
    /// marks what arrived unwatched, up to `start` or now, as unknown.
    fn settle(dir: &Path, start: Option<Stamp>) -> Result<Watch, String> {
        let index = index_path(dir);
        let console = dir.join("console.log");
        let log_len = file_len(&console).unwrap_or(0);
        let mut stamps = read_index(&index);
        if stamps.last().is_some_and(|s| s.offset > log_len) {
            stamps.clear();
        }
        let bytes: Vec<u8> = stamps.iter().flat_map(|s| encode(*s)).collect();
        write_aside(&index, &bytes)?;
        let mut watch = Watch {
            console,
            index,
            covered: stamps.last().map_or(0, |s| s.offset),
            records: stamps.len(),
        };
        let unwatched_end = start.map_or(log_len, |s| s.offset.min(log_len));
        if unwatched_end > watch.covered {
            watch.append(Stamp {
                offset: unwatched_end,
                at_ms: UNKNOWN,
            });
        }
        Ok(watch)
    }

    /// Records the log's growth; false once the instance's directory is
    /// gone (the instance was removed).
    fn observe(&mut self) -> bool {
        let Some(len) = file_len(&self.console) else {
            return self.index.exists();
        };
        if len < self.covered {
            // The log was cut or replaced: its times start over.
            if std::fs::write(&self.index, []).is_err() {
                return false;
            }
            self.covered = 0;
            self.records = 0;
        }
        if len > self.covered {
            return self.append(Stamp {
                offset: len,
                at_ms: now_ms(),
            });
        }
        true
    }

    /// Appends one record with one write (never creating the index, so
    /// that a removed instance directory stays removed).
    fn append(&mut self, stamp: Stamp) -> bool {
        if self.records >= MAX_RECORDS && self.compact().is_err() {
            return false;
        }
        let written = OpenOptions::new()
            .append(true)
            .open(&self.index)
            .and_then(|mut file| file.write_all(&encode(stamp)));
        if written.is_err() {
            return false;
        }
        self.covered = stamp.offset;
        self.records += 1;
        true
    }

    /// Halves the index: each pair of records becomes its later one
    /// (unknown if either was).
    fn compact(&mut self) -> Result<(), String> {
        let stamps = read_index(&self.index);
        let merged: Vec<Stamp> = stamps
            .chunks(2)
            .map(|pair| {
                let last = pair[pair.len() - 1];
                let unknown = pair.iter().any(|s| s.at_ms == UNKNOWN);
                Stamp {
                    offset: last.offset,
                    at_ms: if unknown { UNKNOWN } else { last.at_ms },
                }
            })
            .collect();
        let bytes: Vec<u8> = merged.iter().flat_map(|s| encode(*s)).collect();
        write_aside(&self.index, &bytes)?;
        self.records = merged.len();
        Ok(())
    }
}

/// Writes `path` whole through a file beside it renamed over it, so a
/// reader sees the old or the new index, never a part.
fn write_aside(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let aside = path.with_extension("times.new");
    std::fs::write(&aside, bytes)
        .and_then(|()| std::fs::rename(&aside, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(stamps: &[Stamp]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = index_path(dir.path());
        let bytes: Vec<u8> = stamps.iter().flat_map(|s| encode(*s)).collect();
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn a_line_takes_the_time_of_the_first_record_at_or_past_its_end() {
        let (_dir, path) = index_of(&[
            Stamp {
                offset: 10,
                at_ms: UNKNOWN,
            },
            Stamp {
                offset: 20,
                at_ms: 1000,
            },
            Stamp {
                offset: 30,
                at_ms: 2000,
            },
        ]);
        let times = LineTimes::load(&path, 30);
        assert_eq!(times.time_of(5), None);
        assert_eq!(times.time_of(10), None);
        assert_eq!(times.time_of(11), Some(1000));
        assert_eq!(times.time_of(20), Some(1000));
        assert_eq!(times.time_of(25), Some(2000));
        assert_eq!(times.time_of(31), None);
        assert_eq!(times.covered(), 30);
    }

    #[test]
    fn a_torn_record_and_an_index_of_a_longer_log_are_not_read() {
        let (_dir, path) = index_of(&[Stamp {
            offset: 20,
            at_ms: 1000,
        }]);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[1, 2, 3]);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(read_index(&path).len(), 1);
        assert_eq!(LineTimes::load(&path, 19).covered(), 0);
    }

    #[test]
    fn settling_marks_unwatched_bytes_unknown_and_observing_stamps_growth() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("console.log"), "old\n").unwrap();
        let mut watch = Watch::settle(dir.path(), None).unwrap();
        std::fs::write(dir.path().join("console.log"), "old\nnew\n").unwrap();
        assert!(watch.observe());
        let stamps = read_index(&index_path(dir.path()));
        assert_eq!(
            stamps[0],
            Stamp {
                offset: 4,
                at_ms: UNKNOWN
            }
        );
        assert_eq!(stamps[1].offset, 8);
        assert!(stamps[1].at_ms > 0);
    }

    #[test]
    fn compaction_keeps_the_later_record_of_each_pair() {
        let dir = tempfile::tempdir().unwrap();
        let (_keep, path) = index_of(&[
            Stamp {
                offset: 1,
                at_ms: 10,
            },
            Stamp {
                offset: 2,
                at_ms: 20,
            },
            Stamp {
                offset: 3,
                at_ms: UNKNOWN,
            },
            Stamp {
                offset: 4,
                at_ms: 40,
            },
        ]);
        let mut watch = Watch {
            console: dir.path().join("console.log"),
            index: path.clone(),
            covered: 4,
            records: 4,
        };
        watch.compact().unwrap();
        assert_eq!(
            read_index(&path),
            [
                Stamp {
                    offset: 2,
                    at_ms: 20
                },
                Stamp {
                    offset: 4,
                    at_ms: UNKNOWN
                }
            ]
        );
    }
}
