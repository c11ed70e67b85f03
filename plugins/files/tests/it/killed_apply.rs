//! kill -9 at any moment of an apply never tears a target, a base or a
//! provisioned copy, and the next apply finishes the work without
//! `--force` and leaves no temporary file behind.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use holo_plugin::atomic::TEMP_PREFIX;

use crate::support::{Root, ours, printed};

const TARGETS: usize = 60;

fn stock(index: usize) -> String {
    format!("stock {index}\n")
}

fn desired(index: usize) -> String {
    format!("stock {index}\nmore\n")
}

fn populate(root: &Root) {
    for index in 0..TARGETS {
        root.write(&format!("etc/f{index:03}.conf"), &stock(index), 0o644);
        let script = "#!/bin/sh\ncat\necho more\n";
        root.write(
            &format!("usr/share/holo/files/10-a/etc/f{index:03}.conf.holoscript"),
            script,
            0o755,
        );
    }
}

/// Each of the three files is missing or whole, and never ahead of the
/// one written before it.
fn assert_whole(root: &Root, after: Duration) {
    for index in 0..TARGETS {
        let name = format!("f{index:03}.conf");
        let read = |dir: &str| std::fs::read_to_string(root.path(&format!("{dir}/{name}"))).ok();
        let target = read("etc");
        let base = read("var/lib/holo/files/base/etc");
        let provisioned = read("var/lib/holo/files/provisioned/etc");
        let context = format!("{name} after a kill at {after:?}");
        assert!(
            target == Some(stock(index)) || target == Some(desired(index)),
            "{context}: target {target:?}"
        );
        assert!(
            base.is_none() || base == Some(stock(index)),
            "{context}: base {base:?}"
        );
        assert!(
            provisioned.is_none() || provisioned == Some(desired(index)),
            "{context}: provisioned {provisioned:?}"
        );
        if target == Some(desired(index)) {
            assert!(
                base.is_some(),
                "{context}: target written before the base was stored"
            );
        }
    }
}

fn temp_files(root: &Root) -> Vec<String> {
    let mut found = Vec::new();
    for dir in [
        "etc",
        "var/lib/holo/files/base/etc",
        "var/lib/holo/files/provisioned/etc",
    ] {
        let Ok(entries) = std::fs::read_dir(root.path(dir)) else {
            continue;
        };
        for entry in entries {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) {
                found.push(format!("{dir}/{name}"));
            }
        }
    }
    found
}

#[test]
fn a_killed_apply_is_finished_by_the_next_one_without_force() {
    let (holo, plugin) = ours();
    for after in [20, 100, 300].map(Duration::from_millis) {
        let root = Root::new();
        populate(&root);
        std::fs::write(
            root.path("etc/holorc"),
            format!("plugin files={}\n", plugin.display()),
        )
        .unwrap();
        let mut running = Command::new(&holo)
            .arg("apply")
            .env("HOLO_ROOT_DIR", root.dir.path())
            .env("TMPDIR", root.path("tmp"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while started.elapsed() < after && running.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = running.kill();
        running.wait().unwrap();
        // The plugin dies with the driver (PR_SET_PDEATHSIG); wait until its
        // writes have stopped: the driver's lock is free once it is gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut finished = root.run(&holo, &plugin, &["apply"]);
        while !finished.status.success() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            finished = root.run(&holo, &plugin, &["apply"]);
        }
        assert_whole(&root, after);
        assert!(finished.status.success(), "{}", printed(&finished));
        assert!(
            !printed(&finished).contains("--force"),
            "{}",
            printed(&finished)
        );
        for index in 0..TARGETS {
            assert_eq!(root.read(&format!("etc/f{index:03}.conf")), desired(index));
        }
        assert_eq!(
            temp_files(&root),
            Vec::<String>::new(),
            "after a kill at {after:?}"
        );
    }
}
