//! Nothing a command does makes holo-exec wait forever or grow without
//! bound: a health check without `timeout` ends at the default timeout, and
//! a command that prints without end keeps the plugin at a few MiB.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use test_support::plugin_run::PluginRun;

/// `holo-exec apply ENTITY` in test mode below `root`; the output goes to
/// files, and the plugin's peak resident size (from wait4) is returned. A
/// run longer than `limit` is killed and fails the test.
fn apply(
    root: &Path,
    resources: &str,
    entity: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> (i32, String, String, u64) {
    let resource_dir = root.join("usr/share/holo/exec");
    std::fs::create_dir_all(&resource_dir).unwrap();
    std::fs::write(resource_dir.join("test.toml"), resources).unwrap();
    let stdout = std::fs::File::create(root.join("stdout")).unwrap();
    let stderr = std::fs::File::create(root.join("stderr")).unwrap();
    let mut command = PluginRun::new(env!("CARGO_BIN_EXE_holo-exec"), "exec", root)
        .args(["apply", entity])
        .inherit_env()
        .cache_dir(root.join("cache"))
        .state_dir(root.join("state"))
        .command();
    command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    for (key, value) in env {
        command.env(key, value);
    }
    // Reaped with wait4 below, which also gives the peak resident size.
    let pid = command.spawn().map(|child| child.id()).unwrap() as libc::pid_t;
    let started = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child, with valid pointers.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            break;
        }
        if started.elapsed() > limit {
            // SAFETY: plain kill(2) and a blocking wait4 on our own child.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
                libc::wait4(pid, &mut status, 0, &mut usage);
            }
            panic!("holo-exec apply {entity} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        code,
        std::fs::read_to_string(root.join("stdout")).unwrap(),
        std::fs::read_to_string(root.join("stderr")).unwrap(),
        // ru_maxrss is in KiB on Linux.
        usage.ru_maxrss as u64 * 1024,
    )
}

#[test]
fn a_health_check_without_timeout_ends_at_the_default_timeout() {
    let root = tempfile::tempdir().unwrap();
    let (code, _, stderr, _) = apply(
        root.path(),
        "[[exec]]\nname = \"up\"\ncommand = \"true\"\nhealth_checks = [{ command = \"sleep 600\" }]\n",
        "exec:up",
        &[("HOLO_HEALTH_CHECK_TIMEOUT", "1s")],
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "health check sleep (\"sleep 600\") failed after 1 try: UNKNOWN (timed out after 1s)"
        ),
        "{stderr}"
    );
}

#[test]
fn endless_output_keeps_the_plugin_at_a_few_mib() {
    let root = tempfile::tempdir().unwrap();
    let (code, _, stderr, peak) = apply(
        root.path(),
        "[[exec]]\nname = \"yes hello\"\ntimeout = \"3s\"\n",
        "exec:yes hello",
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("timed out after 3s"), "{stderr}");
    assert!(
        peak < 32 << 20,
        "holo-exec reached {} MiB for a command's output",
        peak >> 20
    );
}

#[test]
fn one_endless_line_keeps_the_plugin_at_a_few_mib_and_is_logged_in_pieces() {
    let root = tempfile::tempdir().unwrap();
    // 40 MiB on one line, shown with logoutput.
    let (code, stdout, stderr, peak) = apply(
        root.path(),
        "[[exec]]\nname = \"line\"\nprovider = \"shell\"\ncommand = \"head -c 41943040 /dev/zero | tr '\\\\0' x\"\nlogoutput = true\n",
        "exec:line",
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.bytes().filter(|b| *b == b'x').count(), 40 << 20);
    assert!(
        peak < 32 << 20,
        "holo-exec reached {} MiB for one line",
        peak >> 20
    );
}
