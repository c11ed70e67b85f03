//! `holos logs --since/--until/-t` with the fake QEMU: the times the
//! console stamper records as `console.log` grows, lines of unknown time
//! (written while nothing recorded), and the message for a bad value.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::runtime_support::{self, Project, Qemu};

const ONE: &str =
    "name: lt\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n";

fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since_epoch.as_millis()).unwrap()
}

fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn console(p: &Project) -> PathBuf {
    p.state().join("instances/lt/web-0/console.log")
}

fn append(p: &Project, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(console(p))
        .unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
}

/// Polls `logs --json web-0` until the line `text` has a time; returns it
/// in milliseconds.
fn stamped(p: &Project, text: &str) -> i64 {
    let started = Instant::now();
    loop {
        let out = runtime_support::stdout(p, &["logs", "--json", "web-0"]);
        let time = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["line"] == text)
            .and_then(|v| v["time"].as_str().map(str::to_owned));
        if let Some(time) = time {
            return DateTime::parse_from_rfc3339(&time)
                .unwrap()
                .timestamp_millis();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{text:?} got no time: {out} {:?} {:?}",
            std::fs::read_to_string(console(p)),
            std::fs::read(p.state().join("instances/lt/web-0/console.times"))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the clock is past `ms`.
fn clock_past(ms: i64) {
    wait_for("the clock moves on", || now_ms() > ms);
}

#[test]
#[ignore = "needs qemu-img"]
fn lines_arriving_at_different_times_are_filtered_and_stamped() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let booted = stamped(&p, "fake guest booted");
    clock_past(booted + 20);
    let mid = now_ms();
    clock_past(mid + 20);
    append(&p, "later line\n");
    let later = stamped(&p, "later line");
    assert!(booted < mid && mid < later, "{booted} {mid} {later}");
    let logs = |args: &[&str]| runtime_support::stdout(&p, &[&["logs"][..], args].concat());
    let mid = rfc3339(mid);
    assert_eq!(logs(&["--since", &mid, "web-0"]), "later line\n");
    let before = logs(&["--until", &mid, "web-0"]);
    assert!(
        before.contains("fake guest booted") && !before.contains("later"),
        "{before}"
    );
    // -t: each line starts with its RFC 3339 time.
    let all = logs(&["-t", "web-0"]);
    assert!(
        all.ends_with(&format!("{} later line\n", rfc3339(later))),
        "{all}"
    );
    assert!(
        all.lines()
            .all(|l| DateTime::parse_from_rfc3339(l.split(' ').next().unwrap()).is_ok()),
        "{all}"
    );
    // Relative durations, --tail, the prefix of several and Unix seconds.
    assert_eq!(
        logs(&["--since", "10m", "-n", "1", "web-0"]),
        "later line\n"
    );
    assert_eq!(logs(&["--until", "10m", "web-0"]), "");
    assert_eq!(
        logs(&[
            "--since",
            &format!("{}.{:03}", later / 1000, later % 1000),
            "web-0"
        ]),
        "later line\n"
    );
    assert_eq!(
        logs(&["-t", "--tail", "1", "web"]),
        format!("{} later line\n", rfc3339(later))
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn lines_written_while_nothing_recorded_have_no_time_and_the_next_start_goes_on() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    stamped(&p, "fake guest booted");
    p.ok(&["stop"]);
    append(&p, "while stopped\n");
    let out = p.run(&["logs", "--since", "10m", "web-0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains("while stopped"), "{stdout}");
    assert!(
        stderr.contains("web-0: 1 line(s) of the console log have no recorded time"),
        "{stderr}"
    );
    let stamped_lines = runtime_support::stdout(&p, &["logs", "-t", "web-0"]);
    assert!(
        stamped_lines.ends_with("- while stopped\n"),
        "{stamped_lines}"
    );
    p.ok(&["start"]);
    append(&p, "after start\n");
    let after = stamped(&p, "after start");
    let since = runtime_support::stdout(&p, &["logs", "--since", "10m", "web-0"]);
    assert!(since.ends_with("after start\n"), "{since}");
    assert!(!since.contains("while stopped"), "{since}");
    assert!(after <= now_ms());
}

#[test]
fn a_bad_since_or_until_names_the_flag_and_the_accepted_forms() {
    let p = tempfile::tempdir().unwrap();
    for flag in ["--since", "--until"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_holos"))
            .args(["logs", flag, "yesterdayish"])
            .current_dir(p.path())
            .env("HOLOS_STATE_DIR", p.path().join("s"))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert_eq!(
            said,
            format!(
                "holos: {flag} \"yesterdayish\" is not a time; give an RFC 3339 time \
                 (2026-11-28T10:00:00Z), Unix seconds (1764324000) or a duration before now \
                 (42m, 1h30m)\n"
            )
        );
    }
}

/// The pid of the stamper that watches web-0's console log.
fn stamper_pid(p: &Project) -> Option<i32> {
    let dir = p.state().join("instances/lt/web-0");
    let dir = dir.to_str().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let ours = args.get(1) == Some(&b"--holos-console-times".as_slice())
                && args.get(2) == Some(&dir.as_bytes());
            ours.then_some(pid)
        })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs qemu-img"]
fn a_killed_stamper_leaves_a_readable_log_and_the_next_up_starts_another() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    stamped(&p, "fake guest booted");
    let pid = stamper_pid(&p).expect("no stamper runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the stamper is gone", || stamper_pid(&p).is_none());
    append(&p, "unwatched\n");
    // A kill in the middle of a record's write leaves a torn record.
    let index = p.state().join("instances/lt/web-0/console.times");
    let mut torn = std::fs::read(&index).unwrap();
    torn.extend_from_slice(&[7; 5]);
    std::fs::write(&index, torn).unwrap();
    let since = runtime_support::stdout(&p, &["logs", "--since", "10m", "web-0"]);
    assert!(since.contains("fake guest booted\r\n"), "{since}");
    assert!(!since.contains("unwatched"), "{since}");
    p.ok(&["up", "--no-wait"]);
    wait_for("a new stamper runs", || stamper_pid(&p).is_some());
    // Right after up: no wait for the stamper to settle is needed.
    append(&p, "watched again\n");
    stamped(&p, "watched again");
    let since = runtime_support::stdout(&p, &["logs", "--since", "10m", "web-0"]);
    assert!(
        since.ends_with("fake guest booted\r\nwatched again\n"),
        "{since}"
    );
    assert_eq!(std::fs::metadata(&index).unwrap().len() % 16, 0);
}

#[test]
#[ignore = "needs qemu-img"]
fn follow_stamps_what_arrives_later_and_ends_at_until() {
    runtime_support::require_qemu_img();
    let p = Project::new(ONE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    stamped(&p, "fake guest booted");
    let mut follow = p
        .holos(&["logs", "-f", "-t", "web-0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut next_line = || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        line
    };
    while !next_line().ends_with(" fake guest booted\r\n") {}
    append(&p, "followed\n");
    let line = next_line();
    follow.kill().unwrap();
    let _ = follow.wait();
    let (time, text) = line.split_once(' ').unwrap();
    assert_eq!(text, "followed\n");
    assert!(DateTime::parse_from_rfc3339(time).is_ok(), "{line}");
    // --until in the near future: -f stops by itself once it has passed.
    let until = rfc3339(now_ms() + 300);
    let mut bounded = p
        .holos(&["logs", "-f", "--until", &until, "web-0"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("logs -f --until ends", || {
        bounded.try_wait().unwrap().is_some()
    });
}
