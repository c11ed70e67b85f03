//! No QEMU escapes holos: an `up` killed (SIGKILL, SIGTERM, SIGINT) at a
//! random moment leaves every QEMU it started known to `ps` and stopped by
//! `down`, and an instance started through a wrapper not called
//! `qemu-system-*` (`HOLOS_QEMU_SYSTEM=/usr/libexec/qemu-kvm`, a script) is
//! tracked by what holos started, not by the binary's name.

use crate::runtime_support::{self, Project, Qemu};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const COMPOSE: &str = "name: intr\nservices:\n  db:\n    image: ./base.qcow2\n  web:\n    image: ./base.qcow2\n    depends_on: [db]\n";

/// The live fake QEMUs whose command line names the project's directory
/// (its state root is inside it): those of this test.
fn qemus_of(p: &Project) -> Vec<u32> {
    let dir = p.path().to_string_lossy().into_owned();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let argv = runtime_support::cmdline(pid);
        let is_qemu = argv
            .first()
            .is_some_and(|a| a.ends_with("qemu-system-x86_64"));
        if is_qemu && argv.iter().any(|a| a.contains(&dir)) {
            pids.push(pid);
        }
    }
    pids
}

/// The pids `holos ps` reports as running.
fn ps_pids(p: &Project) -> Vec<u32> {
    p.ps()
        .iter()
        .filter_map(|i| i["pid"].as_u64())
        .map(|pid| pid as u32)
        .collect()
}

/// Waits until no QEMU of the test is left; panics naming the survivors.
fn assert_none_left(p: &Project, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = qemus_of(p);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let argvs: Vec<Vec<String>> =
                left.iter().map(|p| runtime_support::cmdline(*p)).collect();
            for pid in &left {
                let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
            }
            panic!("{context}: QEMU still running after down: {argvs:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills what `down` left of the test's QEMUs, so that a failing test
/// leaves nothing running either.
struct Reaper<'a>(&'a Project);

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        for pid in qemus_of(self.0) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// A small seeded generator, so that a failing moment can be replayed
/// (`HOLOS_TEST_SEED`).
struct Moments(u64);

impl Moments {
    fn next_below(&mut self, limit: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % limit
    }
}

/// Starts `up` and sends `signal` after `delay`; returns when holos is gone.
fn interrupted_up(p: &Project, signal: Signal, delay: Duration) {
    let mut child = p
        .holos(&["up", "--no-wait"])
        .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let _ = kill(Pid::from_raw(child.id() as i32), signal);
    child.wait().unwrap();
}

#[test]
#[ignore = "needs qemu-img"]
fn an_up_interrupted_at_any_moment_leaves_no_qemu_that_ps_and_down_miss() {
    runtime_support::require_qemu_img();
    let seed = std::env::var("HOLOS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_u64);
    let mut moments = Moments(seed);
    // How long a whole up takes here: the kills land anywhere in it.
    let timing = Project::new(COMPOSE, Qemu::Fake);
    let started = Instant::now();
    timing.ok(&["up", "--no-wait"]);
    let whole = started.elapsed().as_millis() as u64 + 1;
    drop(timing);
    for round in 0..4 {
        for signal in [Signal::SIGKILL, Signal::SIGTERM, Signal::SIGINT] {
            let p = Project::new(COMPOSE, Qemu::Fake);
            let _reaper = Reaper(&p);
            let delay = Duration::from_millis(moments.next_below(whole));
            let context = format!("seed {seed:#x}, round {round}, {signal} after {delay:?}");
            interrupted_up(&p, signal, delay);
            let running = qemus_of(&p);
            let shown = ps_pids(&p);
            for pid in &running {
                assert!(
                    shown.contains(pid),
                    "{context}: QEMU {pid} runs but ps shows only {shown:?}: {:?}",
                    runtime_support::cmdline(*pid)
                );
            }
            let out = p
                .holos(&["down"])
                .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{context}: down: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_none_left(&p, &context);
        }
    }
}

/// `bin/qemu-kvm`: a wrapper that execs the fake QEMU, as RHEL's
/// `/usr/libexec/qemu-kvm` or a site's script stands in for
/// `qemu-system-x86_64`.
fn wrapper(p: &Project) -> std::path::PathBuf {
    let path = p.path().join("bin/qemu-kvm");
    let fake = test_support::binary("fake-qemu-system-x86_64");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nexec {} \"$@\"\n", fake.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn holos_with(p: &Project, qemu: &Path, args: &[&str]) -> String {
    let mut command: Command = p.holos(args);
    command
        .env("HOLOS_QEMU_SYSTEM", qemu)
        .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0");
    p.ok_with(&mut command)
}

#[test]
#[ignore = "needs qemu-img"]
fn a_qemu_started_through_a_wrapper_not_named_qemu_system_is_tracked() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    let _reaper = Reaper(&p);
    // Only the wrapper: no qemu-system-x86_64 on PATH.
    std::fs::remove_file(p.path().join("bin/qemu-system-x86_64")).unwrap();
    let qemu = wrapper(&p);
    holos_with(&p, &qemu, &["up", "--no-wait"]);
    let running = qemus_of(&p);
    assert_eq!(running.len(), 2, "{running:?}");
    let mut shown = ps_pids(&p);
    shown.sort_unstable();
    let mut expected = running.clone();
    expected.sort_unstable();
    assert_eq!(shown, expected, "ps shows what runs");

    let said = holos_with(&p, &qemu, &["up", "--no-wait"]);
    assert!(said.contains("up to date"), "{said}");
    let mut again = qemus_of(&p);
    again.sort_unstable();
    assert_eq!(again, expected, "a second up starts no duplicate");

    holos_with(&p, &qemu, &["down"]);
    assert_none_left(&p, "down through the wrapper");
}

/// A `qemu-img create` that dies midway (here: it writes a few bytes and
/// kills itself) leaves no root disk under its final name, which the next
/// `up` would take as made and boot; the next `up` makes it whole.
#[test]
#[ignore = "needs qemu-img"]
fn a_root_disk_whose_creation_died_is_made_again_not_booted() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: torn\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n",
        Qemu::Fake,
    );
    let dying = p.path().join("dying-qemu-img");
    // `create -q -f qcow2 -F FORMAT -b BACKING OUTPUT`: the ninth argument.
    std::fs::write(
        &dying,
        "#!/bin/sh\nif [ \"$1\" = create ]; then printf torn > \"$9\"; kill -9 $$; fi\nexec qemu-img \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&dying, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = p
        .holos(&["up", "--no-wait"])
        .env("HOLOS_QEMU_IMG", &dying)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the creation died, up must fail");
    let instance = p.state().join("instances/torn/web-0");
    assert!(
        !instance.join("root.qcow2").exists(),
        "a torn root disk under its final name"
    );
    p.ok(&["up", "--no-wait"]);
    let info = Command::new("qemu-img")
        .args(["info", "--output=json", "-U"])
        .arg(instance.join("root.qcow2"))
        .output()
        .unwrap();
    assert!(
        info.status.success() && String::from_utf8_lossy(&info.stdout).contains("\"qcow2\""),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    assert!(!instance.join("root.qcow2.holos-new").exists());
    p.ok(&["down"]);
}
