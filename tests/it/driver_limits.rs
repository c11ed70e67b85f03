//! Nothing waits forever and nothing grows without bound: a plugin that
//! outlives its operation's timeout is ended with everything it started
//! and reported with its entity; output without newlines keeps holo at a
//! few MiB.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use test_support::process::alive;

/// `hang:a` hangs in apply (with a background child), `hang:b` applies.
const PLUGIN: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo "EXTENSIONS=$EXTENSIONS" ;;
scan)
  [ -n "$HANG_SCAN" ] && { echo $$ >> "$HOLO_ROOT_DIR/pids"; sleep 600; }
  echo "ENTITY: hang:a"; echo "ENTITY: hang:b" ;;
apply)
  case "$2" in
  hang:a) sleep 600 & echo $! >> "$HOLO_ROOT_DIR/pids"; echo $$ >> "$HOLO_ROOT_DIR/pids"; wait ;;
  *) echo "applied $2" ;;
  esac ;;
apply-batch)
  while read -r id; do
    case "$id" in
    hang:a) sleep 600 & echo $! >> "$HOLO_ROOT_DIR/pids"; echo $$ >> "$HOLO_ROOT_DIR/pids"; wait ;;
    *) printf '{"entity":"%s","output":[],"fd3":[],"exit":0}\n' "$id" >&3 ;;
    esac
  done ;;
stderr-line) head -c "$SIZE" /dev/zero | tr '\0' x >&2 ;;
*) exit 1 ;;
esac
"#;

fn make_root(plugin: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let path = root.path();
    for dir in ["etc", "run", "tmp", "usr/lib/holo", "usr/share/holo/hang"] {
        std::fs::create_dir_all(path.join(dir)).unwrap();
    }
    std::fs::write(path.join("etc/holorc"), "plugin hang\n").unwrap();
    let file = path.join("usr/lib/holo/holo-hang");
    std::fs::write(&file, plugin).unwrap();
    test_support::make_executable(&file);
    root
}

/// Runs holo; returns its exit code, output and peak resident size (its
/// VmHWM, sampled while it runs: wait4's ru_maxrss would also count the
/// peak of this test process, whose memory a spawned child shares until
/// it execs). Fails the test when holo still runs after 60 s.
fn holo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, u64) {
    let out = std::fs::File::create(root.join("out")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_holo"));
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("HOLO_NO_BATCH")
        .env_remove("HOLO_APPLY_TIMEOUT")
        .env_remove("HOLO_SCAN_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    for (key, value) in env {
        command.env(key, value);
    }
    // Reaped with wait4 below.
    let pid = command.spawn().map(|child| child.id()).unwrap() as libc::pid_t;
    let started = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut peak = 0u64;
    loop {
        peak = peak.max(high_water_mark(pid));
        // SAFETY: wait4 on our own child with valid pointers.
        if unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) } == pid {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            // SAFETY: kill(2) and a blocking wait4 on our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::wait4(pid, &mut status, 0, &mut usage);
            }
            kill_recorded(root);
            panic!("holo {args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let text = std::fs::read_to_string(root.join("out")).unwrap();
    (code, text, peak)
}

/// The `VmHWM` of a running process in bytes; 0 once it has exited.
fn high_water_mark(pid: libc::pid_t) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

fn recorded(root: &Path) -> Vec<i32> {
    std::fs::read_to_string(root.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

fn kill_recorded(root: &Path) {
    for pid in recorded(root) {
        // SAFETY: kill(2).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn assert_timed_out_entity(root: &Path, code: i32, text: &str) {
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "!! plugin holo-hang timed out after 1s (HOLO_APPLY_TIMEOUT); it was ended with every process it started"
        ),
        "{text}"
    );
    // The message belongs to hang:a, and hang:b still ran.
    let a = text.find("hang:a").expect("hang:a is shown");
    let message = text.find("timed out").unwrap();
    assert!(a < message, "{text}");
    let pids = recorded(root);
    assert_eq!(pids.len(), 2, "{pids:?}");
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the timeout");
    }
}

#[test]
fn a_plugin_that_hangs_in_apply_times_out_with_its_entity() {
    let root = make_root(PLUGIN);
    let (code, text, _) = holo(
        root.path(),
        &["apply"],
        &[("HOLO_APPLY_TIMEOUT", "1"), ("HOLO_KILL_GRACE", "1")],
    );
    assert_timed_out_entity(root.path(), code, &text);
    assert!(text.contains("applied hang:b"), "{text}");
}

#[test]
fn a_batch_that_hangs_times_out_with_its_entity() {
    let root = make_root(PLUGIN);
    let (code, text, _) = holo(
        root.path(),
        &["apply"],
        &[
            ("HOLO_APPLY_TIMEOUT", "1s"),
            ("HOLO_KILL_GRACE", "1s"),
            ("EXTENSIONS", "batch"),
        ],
    );
    assert_timed_out_entity(root.path(), code, &text);
}

#[test]
fn a_scan_that_hangs_times_out() {
    let root = make_root(PLUGIN);
    let (code, text, _) = holo(
        root.path(),
        &["scan"],
        &[
            ("HOLO_SCAN_TIMEOUT", "1"),
            ("HOLO_KILL_GRACE", "1"),
            ("HANG_SCAN", "1"),
        ],
    );
    assert_eq!(code, 255, "{text}");
    assert!(
        text.contains("!! scan with plugin hang failed: plugin holo-hang timed out after 1s (HOLO_SCAN_TIMEOUT)"),
        "{text}"
    );
    for pid in recorded(root.path()) {
        assert!(!alive(pid), "the scan (pid {pid}) outlived its timeout");
    }
}

#[test]
fn a_timeout_that_is_no_duration_is_refused() {
    let root = make_root(PLUGIN);
    let (code, text, _) = holo(root.path(), &["scan"], &[("HOLO_APPLY_TIMEOUT", "soon")]);
    assert_eq!(code, 255, "{text}");
    assert!(
        text.contains("HOLO_APPLY_TIMEOUT=soon is not a duration; give seconds (90)"),
        "{text}"
    );
}

/// holo's `diff` of an entity runs `holo-hang diff`; our plugin writes one
/// long stderr line there instead (any operation outside an entity is
/// shown line by line).
const LONG_LINE: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
scan) echo "ENTITY: hang:a" ;;
diff) head -c 67108864 /dev/zero | tr '\0' x >&2 ;;
*) exit 1 ;;
esac
"#;

#[test]
fn one_endless_stderr_line_keeps_holo_at_a_few_mib() {
    let root = make_root(LONG_LINE);
    let (code, text, peak) = holo(root.path(), &["diff"], &[]);
    assert!(peak > 0, "holo's memory was never sampled");
    assert_eq!(code, 0, "{}", &text[text.len().saturating_sub(300)..]);
    assert_eq!(text.bytes().filter(|b| *b == b'x').count(), 64 << 20);
    assert!(
        peak < 40 << 20,
        "holo reached {} MiB for one stderr line",
        peak >> 20
    );
}
