//! `holos logs`: the serial console logs of a project's instances, with
//! the times their lines arrived (`-t`, `--since`, `--until`, `--json`)
//! from the index that the runtime's stamper writes beside each log.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use holos_compose::decode::reader::parse_duration_ms;
use holos_runtime::console_times::{self, LineTimes, TICK, now_ms};
use holos_runtime::state::InstanceRecord;

use crate::cli::LogsArgs;

/// How many bytes of a log [`copy_log`] holds at once.
const LOG_CHUNK: usize = 64 * 1024;
/// How often `-f` looks for more.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// How long a reader waits for the stamper to record the lines it reads.
const STAMP_WAIT: Duration = Duration::from_secs(1);

/// What each printed line looks like and which lines are printed.
struct View {
    follow: bool,
    json: bool,
    timestamps: bool,
    prefixed: bool,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
}

impl View {
    /// Whether lines need their times: to be printed or filtered by them.
    fn needs_times(&self) -> bool {
        self.json || self.timestamps || self.since_ms.is_some() || self.until_ms.is_some()
    }

    fn per_line(&self) -> bool {
        self.prefixed || self.needs_times()
    }

    fn filters(&self) -> bool {
        self.since_ms.is_some() || self.until_ms.is_some()
    }

    /// Whether a line of this time is printed.
    fn keeps(&self, time: i64) -> bool {
        self.since_ms.is_none_or(|since| time >= since)
            && self.until_ms.is_none_or(|until| time <= until)
    }
}

/// `--since` and `--until` in milliseconds since the epoch.
pub struct Bounds {
    since_ms: Option<i64>,
    until_ms: Option<i64>,
}

impl Bounds {
    /// The bounds `args` give, read before anything else so that a bad
    /// value is the one message.
    pub fn parse(args: &LogsArgs) -> Result<Bounds, String> {
        let now = now_ms();
        Ok(Bounds {
            since_ms: parse_bound("--since", args.since.as_deref(), now)?,
            until_ms: parse_bound("--until", args.until.as_deref(), now)?,
        })
    }
}

/// Prints the logs of `chosen` (in start order) as `args` asks.
pub fn print_logs(
    chosen: &[&InstanceRecord],
    args: &LogsArgs,
    bounds: Bounds,
) -> Result<(), String> {
    let view = View {
        follow: args.follow,
        json: args.json,
        timestamps: args.timestamps,
        prefixed: chosen.len() > 1 && !args.no_log_prefix,
        since_ms: bounds.since_ms,
        until_ms: bounds.until_ms,
    };
    let mut sources: Vec<Source> = chosen.iter().map(|i| Source::new(i, args.tail)).collect();
    let mut stdout = std::io::stdout().lock();
    let mut first_round = true;
    loop {
        for source in &mut sources {
            // A closed stdout (logs | head) ends the command quietly.
            if source.copy_new(&view, &mut stdout).is_err() {
                return Ok(());
            }
            if first_round {
                source.tell_unknown(&view);
            }
        }
        first_round = false;
        let until_passed = view
            .until_ms
            .is_some_and(|until| now_ms() > until.saturating_add(STAMP_WAIT.as_millis() as i64));
        if !view.follow || until_passed {
            return Ok(());
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// The `--since`/`--until` value as milliseconds since the epoch: a
/// duration before `now_ms` (Go's syntax, as Docker takes it), an RFC 3339
/// time, or Unix seconds.
fn parse_bound(flag: &str, text: Option<&str>, now_ms: i64) -> Result<Option<i64>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    if let Some(ago) = duration_ms(text) {
        return Ok(Some(now_ms.saturating_sub(ago)));
    }
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(Some(time.timestamp_millis()));
    }
    if let Some(ms) = unix_seconds_ms(text) {
        return Ok(Some(ms));
    }
    Err(format!(
        "{flag} {text:?} is not a time; give an RFC 3339 time (2026-11-28T10:00:00Z), \
         Unix seconds (1764324000) or a duration before now (42m, 1h30m)"
    ))
}

/// A Go duration (`1h30m`, `1.5h`, `90s`, `250ms`, `0`) in milliseconds;
/// a bare number is Unix seconds here, not a duration.
fn duration_ms(text: &str) -> Option<i64> {
    if text == "0" {
        return Some(0);
    }
    if unix_seconds_ms(text).is_some() {
        return None;
    }
    parse_duration_ms(text).map(|ms| i64::try_from(ms).unwrap_or(i64::MAX))
}

/// `1764324000` or `1764324000.5` (Unix seconds) in milliseconds.
fn unix_seconds_ms(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let seconds: f64 = text.parse().ok()?;
    Some((seconds * 1e3) as i64)
}

/// A time as `-t` and `--json` print it.
fn rfc3339(ms: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// One instance's log and how far it has been printed.
struct Source {
    name: String,
    dir: PathBuf,
    console: PathBuf,
    offset: u64,
    /// `--tail`'s line count until the start of the log has been cut.
    tail: Option<usize>,
    /// Lines left out because their time is unknown.
    unknown: usize,
}

impl Source {
    fn new(instance: &InstanceRecord, tail: Option<usize>) -> Source {
        Source {
            name: instance.spec.name.clone(),
            dir: instance.spec.dir.clone(),
            console: instance.spec.console_log(),
            offset: 0,
            tail,
            unknown: 0,
        }
    }

    /// Prints what the log holds past what was printed; `Err` once
    /// stdout is closed.
    fn copy_new(&mut self, view: &View, out: &mut impl Write) -> Result<(), ()> {
        let Ok(mut file) = std::fs::File::open(&self.console) else {
            return Ok(());
        };
        if let Some(lines) = self.tail {
            match tail_offset(&mut file, lines) {
                Ok(start) => self.offset = start,
                Err(_) => return Ok(()),
            }
            self.tail = None;
        }
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return Ok(());
        };
        let (times, limit) = match view.needs_times() {
            true => self.times(view, len),
            false => (LineTimes::default(), u64::MAX),
        };
        let how = LogCopy {
            whole_lines: view.per_line() || view.follow,
            keep_partial: view.follow,
            limit,
        };
        let mut line_end = self.offset;
        let mut unknown = 0;
        let name = self.name.clone();
        let copied = copy_log(&mut file, self.offset, how, |chunk| {
            if !view.per_line() {
                return out.write_all(chunk).and_then(|()| out.flush());
            }
            for line in chunk.split_inclusive(|b| *b == b'\n') {
                line_end += line.len() as u64;
                let time = times.time_of(line_end);
                if view.filters() && time.is_none() {
                    unknown += 1;
                } else if time.is_none_or(|t| view.keeps(t)) {
                    write_line(out, view, &name, time, line)?;
                }
            }
            out.flush()
        });
        self.unknown += unknown;
        match copied {
            Ok(end) => self.offset = end,
            Err(CopyError::Write) => return Err(()),
            Err(CopyError::Read) => {}
        }
        Ok(())
    }

    /// The log's line times, and how far to read: while a stamper runs,
    /// only as far as it has recorded (waiting a little for it when not
    /// following); else what it never recorded is of unknown time.
    fn times(&self, view: &View, len: u64) -> (LineTimes, u64) {
        let index = console_times::index_path(&self.dir);
        let started = Instant::now();
        loop {
            let times = LineTimes::load(&index, len);
            if !console_times::stamper_running(&self.dir) {
                return (times, len);
            }
            if view.follow {
                let covered = times.covered();
                return (times, covered);
            }
            if times.covered() >= len || started.elapsed() >= STAMP_WAIT {
                return (times, len);
            }
            std::thread::sleep(TICK);
        }
    }

    /// Says once on stderr how many lines `--since`/`--until` left out for
    /// want of a time.
    fn tell_unknown(&self, view: &View) {
        if view.filters() && self.unknown > 0 {
            eprintln!(
                "holos: {}: {} line(s) of the console log have no recorded time \
                 (they arrived while holos recorded no times); --since and --until leave them out",
                self.name, self.unknown
            );
        }
    }
}

/// One line as `view` prints it.
fn write_line(
    out: &mut impl Write,
    view: &View,
    name: &str,
    time: Option<i64>,
    line: &[u8],
) -> std::io::Result<()> {
    let stamp = time.and_then(rfc3339);
    if view.json {
        return out.write_all(json_line(name, stamp.as_deref(), line).as_bytes());
    }
    if view.prefixed {
        out.write_all(format!("{name} | ").as_bytes())?;
    }
    if view.timestamps {
        out.write_all(stamp.as_deref().unwrap_or("-").as_bytes())?;
        out.write_all(b" ")?;
    }
    out.write_all(line)
}

/// One console line of `logs --json`: `{"instance": …, "time": …, "line":
/// …}` and a newline (the line without its own, invalid UTF-8 as U+FFFD;
/// the time null when unknown).
fn json_line(instance: &str, time: Option<&str>, line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    let mut out = serde_json::json!({"instance": instance, "time": time, "line": text}).to_string();
    out.push('\n');
    out
}

/// How [`copy_log`] cuts what it copies.
struct LogCopy {
    /// Hand on whole lines only (a line longer than a chunk goes in pieces).
    whole_lines: bool,
    /// Leave a last line without its newline for the next call.
    keep_partial: bool,
    /// Read no further than this offset.
    limit: u64,
}

enum CopyError {
    Read,
    Write,
}

/// Copies the log from byte `from` to `emit` a chunk at a time, so memory
/// stays bounded however long the guest's console log is; returns the
/// offset copied up to.
fn copy_log(
    file: &mut std::fs::File,
    from: u64,
    how: LogCopy,
    mut emit: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<u64, CopyError> {
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(from))
        .map_err(|_| CopyError::Read)?;
    let mut reader = file.take(how.limit.saturating_sub(from));
    let mut offset = from;
    let mut buf = vec![0u8; LOG_CHUNK];
    let mut filled = 0;
    loop {
        let read = reader
            .read(&mut buf[filled..])
            .map_err(|_| CopyError::Read)?;
        filled += read;
        let at_end = read == 0;
        if !at_end && filled < buf.len() {
            continue;
        }
        let through_newline = buf[..filled]
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|at| at + 1);
        let end = match (how.whole_lines, at_end) {
            (false, _) => filled,
            (true, true) if how.keep_partial => through_newline.unwrap_or(0),
            (true, true) => filled,
            (true, false) => through_newline.unwrap_or(filled),
        };
        if end > 0 {
            emit(&buf[..end]).map_err(|_| CopyError::Write)?;
        }
        offset += end as u64;
        buf.copy_within(end..filled, 0);
        filled -= end;
        if at_end {
            return Ok(offset);
        }
    }
}

/// Where the last `lines` lines of the file start, read back from its end
/// a chunk at a time; a last line without its newline counts as a line.
fn tail_offset(file: &mut std::fs::File, lines: usize) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let len = file.seek(SeekFrom::End(0))?;
    if lines == 0 {
        return Ok(len);
    }
    let mut seen = 0;
    let mut pos = len;
    let mut buf = vec![0u8; LOG_CHUNK];
    while pos > 0 {
        let size = LOG_CHUNK.min(usize::try_from(pos).unwrap_or(LOG_CHUNK));
        pos -= size as u64;
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut buf[..size])?;
        for (at, byte) in buf[..size].iter().enumerate().rev() {
            let absolute = pos + at as u64;
            // The newline that ends the file ends the last line.
            if *byte == b'\n' && absolute + 1 != len {
                seen += 1;
                if seen == lines {
                    return Ok(absolute + 1);
                }
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_duration_before_now() {
        let now = 10_000_000;
        assert_eq!(
            parse_bound("--since", Some("42m"), now),
            Ok(Some(now - 42 * 60_000))
        );
        assert_eq!(
            parse_bound("--since", Some("1h30m"), now),
            Ok(Some(now - 90 * 60_000))
        );
        assert_eq!(
            parse_bound("--since", Some("1.5s"), now),
            Ok(Some(now - 1500))
        );
        assert_eq!(parse_bound("--since", Some("0"), now), Ok(Some(now)));
    }

    #[test]
    fn since_takes_an_rfc3339_time_or_unix_seconds() {
        assert_eq!(
            parse_bound("--until", Some("1970-01-01T00:00:10.5Z"), 0),
            Ok(Some(10_500))
        );
        assert_eq!(
            parse_bound("--until", Some("1970-01-01T01:00:10+01:00"), 0),
            Ok(Some(10_000))
        );
        assert_eq!(parse_bound("--until", Some("10"), 0), Ok(Some(10_000)));
        assert_eq!(parse_bound("--until", Some("10.25"), 0), Ok(Some(10_250)));
    }

    #[test]
    fn a_bad_value_names_the_flag_and_the_forms() {
        for bad in ["yesterdayish", "", "1x", "m", "1.2.3", "-5m"] {
            let said = parse_bound("--since", Some(bad), 0).unwrap_err();
            assert!(said.starts_with("--since "), "{said}");
            assert!(said.contains("RFC 3339") && said.contains("42m"), "{said}");
        }
    }

    #[test]
    fn times_print_as_rfc3339_in_utc_with_milliseconds() {
        assert_eq!(rfc3339(10_500).as_deref(), Some("1970-01-01T00:00:10.500Z"));
    }

    #[test]
    fn a_json_line_has_its_time_or_null() {
        assert_eq!(
            json_line("web-0", Some("1970-01-01T00:00:10.500Z"), b"hi\r\n"),
            "{\"instance\":\"web-0\",\"line\":\"hi\",\"time\":\"1970-01-01T00:00:10.500Z\"}\n"
        );
        assert_eq!(
            json_line("web-0", None, b"hi"),
            "{\"instance\":\"web-0\",\"line\":\"hi\",\"time\":null}\n"
        );
    }

    fn file_of(bytes: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().expect("tempfile");
        std::io::Write::write_all(&mut file, bytes).expect("write");
        file
    }

    fn tail(bytes: &[u8], lines: usize) -> Vec<u8> {
        let start = tail_offset(&mut file_of(bytes), lines).expect("tail") as usize;
        bytes[start..].to_vec()
    }

    #[test]
    fn tail_offset_keeps_the_last_lines() {
        let log = b"a\nb\nc\n";
        assert_eq!(tail(log, 2), b"b\nc\n");
        assert_eq!(tail(log, 3), log);
        assert_eq!(tail(log, 9), log);
        assert_eq!(tail(log, 0), b"");
        assert_eq!(tail(b"a\nb", 1), b"b");
        assert_eq!(tail(b"", 1), b"");
        // Across chunks: the last two of many lines.
        let long: Vec<u8> = (0..50_000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        assert!(long.len() > 2 * LOG_CHUNK);
        assert_eq!(tail(&long, 2), b"49998\n49999\n");
    }

    fn copied(bytes: &[u8], whole_lines: bool, keep_partial: bool) -> (Vec<Vec<u8>>, u64) {
        let mut chunks = Vec::new();
        let end = copy_log(
            &mut file_of(bytes),
            0,
            LogCopy {
                whole_lines,
                keep_partial,
                limit: u64::MAX,
            },
            |chunk| {
                chunks.push(chunk.to_vec());
                Ok(())
            },
        )
        .unwrap_or_else(|_| panic!("copy failed"));
        (chunks, end)
    }

    #[test]
    fn copy_log_hands_on_bounded_chunks_of_whole_lines() {
        let long: Vec<u8> = (0..50_000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let (chunks, end) = copied(&long, true, false);
        assert_eq!(end, long.len() as u64);
        assert_eq!(chunks.concat(), long);
        assert!(
            chunks
                .iter()
                .all(|c| c.len() <= LOG_CHUNK && c.ends_with(b"\n"))
        );
        // Following: a last line without its newline waits for the next call.
        let (chunks, end) = copied(b"a\nb\npart", true, true);
        assert_eq!(chunks.concat(), b"a\nb\n");
        assert_eq!(end, 4);
        let (chunks, end) = copied(b"a\nb\npart", true, false);
        assert_eq!(chunks.concat(), b"a\nb\npart");
        assert_eq!(end, 8);
    }
}
