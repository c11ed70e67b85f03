//! Times `holos up --no-wait` for a 3-service project with the fake QEMU,
//! from the command's start until every QEMU process runs (holos returns
//! once each QEMU's QMP monitor has answered). Guest boot is excluded.
//!
//! The target is at most 50 ms per instance beyond `qemu-img create`, so
//! the three overlay creations are timed on their own and subtracted.
//! Run: `cargo build --release -p fake-qemu && cargo bench -p holo-vms
//! --bench up` (needs qemu-img). The fake is its own crate, so this bench
//! finds it in the release directory rather than building it.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 15;
const SERVICES: [&str; 3] = ["db", "api", "web"];

/// `qemu-img create -q ARGS PATH [SIZE]`.
fn qemu_img_create(args: &[&str], path: &Path, size: Option<&str>) {
    let status = Command::new("qemu-img")
        .arg("create")
        .arg("-q")
        .args(args)
        .arg(path)
        .args(size)
        .status()
        .expect("qemu-img runs (apt-get install qemu-utils)");
    assert!(status.success(), "qemu-img create failed");
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::Builder::new()
        .prefix("hb")
        .tempdir_in("/tmp")
        .expect("temporary directory");
    let root = dir.path();
    let bin = root.join("bin");
    std::fs::create_dir(&bin).expect("bin directory");
    let fake = test_support::profile_dir().join("fake-qemu-system-x86_64");
    assert!(
        fake.is_file(),
        "{} is missing: run `cargo build --release -p fake-qemu` first",
        fake.display()
    );
    std::os::unix::fs::symlink(&fake, bin.join("qemu-system-x86_64")).expect("link the fake QEMU");
    let base = root.join("base.qcow2");
    qemu_img_create(&["-f", "qcow2"], &base, Some("64M"));
    let mut compose = String::from("name: bench\nservices:\n");
    for (index, service) in SERVICES.iter().enumerate() {
        compose.push_str(&format!(
            "  {service}:\n    image: ./base.qcow2\n    ports: [\"{}:80\"]\n    stop_grace_period: 0s\n",
            28080 + index
        ));
        if index > 0 {
            compose.push_str(&format!("    depends_on: [{}]\n", SERVICES[index - 1]));
        }
    }
    std::fs::write(root.join("holos.yaml"), compose).expect("write holos.yaml");

    let holos = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holos"));
        command
            .args(args)
            .current_dir(root)
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            )
            .env("HOLOS_STATE_DIR", root.join("s"))
            .env("HOLOS_ACCEL", "tcg")
            .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0")
            .env("FAKE_QEMU_ARGV_FILE", "/dev/null");
        command
    };
    let run = |args: &[&str]| {
        let out = holos(args).output().expect("run holos");
        assert!(
            out.status.success(),
            "holos {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    // Warm-up: makes the project key (once per project in real use too).
    run(&["up", "--no-wait", "-q"]);
    run(&["down"]);

    let mut ups = Vec::new();
    let mut overlays = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        run(&["up", "--no-wait", "-q"]);
        ups.push(start.elapsed());
        run(&["down"]);

        let start = Instant::now();
        for service in SERVICES {
            qemu_img_create(
                &[
                    "-f",
                    "qcow2",
                    "-F",
                    "qcow2",
                    "-b",
                    &base.display().to_string(),
                ],
                &root.join(format!("{service}.qcow2")),
                None,
            );
        }
        overlays.push(start.elapsed());
        for service in SERVICES {
            let _ = std::fs::remove_file(root.join(format!("{service}.qcow2")));
        }
    }
    let up = median(ups);
    let overlay = median(overlays);
    let per_instance = up.saturating_sub(overlay) / SERVICES.len() as u32;
    println!(
        "holos up --no-wait, 3 services, fake QEMU ({RUNS} runs, medians):\n  \
         whole command          {:>8.1} ms\n  \
         3 x qemu-img create    {:>8.1} ms\n  \
         per instance beyond    {:>8.1} ms  (target <= 50 ms)",
        up.as_secs_f64() * 1000.0,
        overlay.as_secs_f64() * 1000.0,
        per_instance.as_secs_f64() * 1000.0
    );
}
