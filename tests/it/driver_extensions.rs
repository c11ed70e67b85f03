//! The driver's extensions (order, noop, batch), the lock and signal cleanup,
//! run through the real `holo` binary against a spec-conformant shell plugin
//! (tests/support/holo-ext) under a temporary HOLO_ROOT_DIR.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    /// A root with the `ext` plugin and the given entity lines.
    fn new(entities: &str) -> Root {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["etc", "run", "tmp", "usr/share/holo/ext", "usr/lib/holo"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/holorc"), "plugin ext\n").unwrap();
        std::fs::write(root.join("usr/share/holo/ext/entities"), entities).unwrap();
        let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/holo-ext");
        std::os::unix::fs::symlink(plugin, root.join("usr/lib/holo/holo-ext")).unwrap();
        Root { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn holo(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("holo").unwrap();
        cmd.args(args)
            .env("HOLO_ROOT_DIR", self.dir.path())
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env_remove("HOLO_NO_BATCH")
            .env_remove("EXT_EXTENSIONS");
        cmd
    }

    /// Runs holo and returns (stdout+stderr as seen by a user, exit code).
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> (String, i32) {
        let mut cmd = self.holo(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let output = cmd.output().unwrap();
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        (text, output.status.code().unwrap_or(-1))
    }

    /// Runs apply with and without batching and checks both agree byte for byte.
    fn apply_both_ways(&self, args: &[&str]) -> (String, i32) {
        self.apply_both_ways_with(args, &[])
    }

    /// [`Root::apply_both_ways`] with more environment variables.
    fn apply_both_ways_with(&self, args: &[&str], extra: &[(&str, &str)]) -> (String, i32) {
        let mut all = vec!["apply"];
        all.extend_from_slice(args);
        let merged = |args: &[&str], env: &[(&str, &str)]| {
            let mut cmd = self.holo(args);
            for (k, v) in extra.iter().chain(env) {
                cmd.env(k, v);
            }
            let output = cmd.output().unwrap();
            (output.stdout, output.stderr, output.status.code())
        };
        let single = merged(&all, &[("HOLO_NO_BATCH", "1")]);
        let batched = merged(&all, &[]);
        assert_eq!(
            String::from_utf8_lossy(&batched.0),
            String::from_utf8_lossy(&single.0),
            "stdout differs between batch and per-entity runs"
        );
        assert_eq!(
            String::from_utf8_lossy(&batched.1),
            String::from_utf8_lossy(&single.1),
            "stderr differs between batch and per-entity runs"
        );
        assert_eq!(batched.2, single.2);
        let mut text = String::from_utf8_lossy(&batched.0).into_owned();
        text.push_str(&String::from_utf8_lossy(&batched.1));
        (text, batched.2.unwrap_or(-1))
    }
}

#[test]
fn requires_moves_an_entity_after_its_requirement() {
    let root = Root::new("ext:a|ext:c||change\next:b|||change\next:c|||change\n");
    let (out, code) = root.apply_both_ways(&[]);
    assert_eq!(code, 0, "{out}");
    let pos = |s: &str| {
        out.find(s)
            .unwrap_or_else(|| panic!("{s} missing in {out}"))
    };
    assert!(pos("applied ext:b") < pos("applied ext:c"));
    assert!(pos("applied ext:c") < pos("applied ext:a"));
}

#[test]
fn a_failed_requirement_skips_the_dependent() {
    let root = Root::new("ext:a|ext:c||change\next:c|||fail\next:d|||change\n");
    let (out, code) = root.apply_both_ways(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("!! ext:c cannot be applied\n"), "{out}");
    assert!(out.contains("!! exit status 1\n"), "{out}");
    assert!(
        out.contains("!! skipped: required entity ext:c failed in this run\n"),
        "{out}"
    );
    assert!(!out.contains("applied ext:a"), "{out}");
    assert!(out.contains("applied ext:d"), "{out}");
}

#[test]
fn a_changed_subscription_refreshes_the_subscriber() {
    let root =
        Root::new("ext:a||ext:c|change\next:b||ext:d|change\next:c|||change\next:d|||same\n");
    let (out, code) = root.apply_both_ways(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("applied ext:a refresh=1"), "{out}");
    assert!(out.contains("applied ext:b refresh=0"), "{out}");
}

#[test]
fn a_cycle_is_an_error_that_names_it() {
    let root = Root::new("ext:a|ext:b||change\next:b|ext:a||change\n");
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 255, "{out}");
    assert!(
        out.contains("!! dependency cycle between entities: ext:a -> ext:b -> ext:a;"),
        "{out}"
    );
    assert!(!out.contains("applied"), "{out}");
}

#[test]
fn an_unknown_reference_names_both_entities() {
    let root = Root::new("ext:a|ext:zzz||change\n");
    let (out, code) = root.run(&["scan"], &[]);
    assert_eq!(code, 255, "{out}");
    assert!(
        out.contains("!! entity ext:a (plugin ext) requires ext:zzz, but no plugin reported an entity ext:zzz;"),
        "{out}"
    );
}

#[test]
fn a_requirement_outside_the_selection_is_neither_applied_nor_blocking() {
    let root = Root::new("ext:a|ext:c||change\next:c|||fail\n");
    let (out, code) = root.run(&["apply", "ext:a"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("applied ext:a"), "{out}");
    assert!(!out.contains("cannot be applied"), "{out}");
}

#[test]
fn without_the_order_extension_references_are_info_lines() {
    let root = Root::new("ext:a|ext:b||change\next:b|||change\n");
    let (out, code) = root.run(&["scan"], &[("EXT_EXTENSIONS", "")]);
    assert_eq!(code, 0, "{out}");
    // HOLO_EXTENSIONS names `order`, so the plugin sends REQUIRES; without the
    // declared extension the driver shows it as Holo 3 would: an info line.
    assert!(out.contains("    REQUIRES ext:b\n"), "{out}");
}

#[test]
fn noop_reports_and_exits_2_when_something_would_change() {
    let root = Root::new("ext:a|||change\next:b|||same\n");
    let (out, code) = root.run(&["apply", "--noop"], &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("Would have applied ext:a"), "{out}");
    assert!(!out.contains("ext:b"), "{out}");
    let (out, code) = root.run(&["apply", "--noop", "ext:b"], &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, "", "an unchanged entity is omitted");
}

#[test]
fn noop_exits_1_on_errors_and_skips_plugins_without_the_extension() {
    let root = Root::new("ext:a|||fail\n");
    let (out, code) = root.run(&["apply", "--noop"], &[]);
    assert_eq!(code, 1, "{out}");
    let (out, code) = root.run(&["apply", "--noop"], &[("EXT_EXTENSIONS", "batch")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(">> Skipping ext:a: plugin ext does not support --noop"),
        "{out}"
    );
}

#[test]
fn force_and_noop_together_are_a_usage_error() {
    let root = Root::new("ext:a|||change\n");
    let (_, code) = root.run(&["apply", "--force", "--noop"], &[]);
    assert_eq!(code, 2);
}

#[test]
fn a_crashed_batch_fails_the_entities_without_a_record() {
    let root = Root::new("ext:a|||change\next:b|||die\next:c|||change\n");
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("applied ext:a"), "{out}");
    assert!(out.contains("Working on ext:b\n"), "{out}");
    assert!(out.contains("Working on ext:c\n"), "{out}");
    assert_eq!(out.matches("!! signal: killed").count(), 2, "{out}");
}

#[test]
fn a_held_lock_is_reported_with_holo3_text() {
    let root = Root::new("ext:a|||change\n");
    std::fs::write(root.path().join("run/holo.pid"), "1\n").unwrap();
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 255, "{out}");
    let lock = root.path().join("run/holo.pid");
    let lock = lock.display();
    assert!(
        out.contains(&format!(
            "!! Cannot create lock file {lock}: open {lock}: file exists\nThis usually means that another instance of Holo is currently running.\nIf not, you can try to delete the lock file manually.\n"
        )),
        "{out}"
    );
    assert!(!out.contains("applied"), "{out}");
}

#[test]
fn the_lock_and_cache_are_removed_after_apply() {
    let root = Root::new("ext:a|||change\n");
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!root.path().join("run/holo.pid").exists());
    let leftovers: Vec<_> = std::fs::read_dir(root.path().join("tmp"))
        .unwrap()
        .collect();
    assert!(leftovers.is_empty(), "cache dir left behind: {leftovers:?}");
}

#[test]
fn sigterm_removes_the_lock_and_the_cache() {
    let root = Root::new("ext:a|||change\n");
    // a plugin that hangs in apply, so that the driver is mid-run
    let hang = root.path().join("usr/lib/holo/holo-ext");
    std::fs::remove_file(&hang).unwrap();
    std::fs::write(
        &hang,
        "#!/bin/sh\ncase \"$1\" in info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3;; scan) echo 'ENTITY: ext:a';; apply) sleep 30;; esac\n",
    )
    .unwrap();
    test_support::make_executable(&hang);
    let bin = assert_cmd::cargo::cargo_bin("holo");
    let mut child = std::process::Command::new(bin)
        .arg("apply")
        .env("HOLO_ROOT_DIR", root.path())
        .env("TMPDIR", root.path().join("tmp"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = root.path().join("run/holo.pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !lock.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(lock.exists(), "holo never took the lock");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(!lock.exists(), "lock left behind");
    let leftovers: Vec<_> = std::fs::read_dir(root.path().join("tmp"))
        .unwrap()
        .collect();
    assert!(leftovers.is_empty(), "cache dir left behind: {leftovers:?}");
}

#[test]
fn consecutive_entities_go_through_one_batch_call_unless_disabled() {
    let root = Root::new("ext:a|||change\next:b|||same\next:c|||change\n");
    let calls = root.path().join("var/lib/holo/ext/calls");
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 0, "{out}");
    let log = operations(&calls);
    assert_eq!(log, "scan\napply-batch\n");
    std::fs::remove_file(&calls).unwrap();
    let (_, code) = root.run(&["apply"], &[("HOLO_NO_BATCH", "1")]);
    assert_eq!(code, 0);
    let log = operations(&calls);
    assert_eq!(log, "scan\napply\napply\napply\n");
}

#[test]
fn a_batch_is_cut_where_an_entity_requires_one_in_the_same_run() {
    let root = Root::new("ext:a|||change\next:b|ext:a||change\next:c|||change\n");
    let calls = root.path().join("var/lib/holo/ext/calls");
    let (out, code) = root.run(&["apply"], &[]);
    assert_eq!(code, 0, "{out}");
    let log = operations(&calls);
    // a alone (the run is cut before b), then b and c together
    assert_eq!(log, "scan\napply\napply-batch\n");
}

/// The operations the plugin logged, without `info`.
fn operations(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| *l != "info")
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn skipped_entities_inside_a_batch_run_keep_the_apply_order() {
    // ext:1 and ext:b are skipped in the same run as ext:a, which is applied
    let root = Root::new(
        "ext:0fail|||fail\next:1|ext:0fail||change\next:a|||change\next:b|ext:0fail||change\n",
    );
    let (out, code) = root.apply_both_ways(&[]);
    assert_eq!(code, 1, "{out}");
    let pos = |s: &str| {
        out.find(s)
            .unwrap_or_else(|| panic!("{s} missing in {out}"))
    };
    assert!(pos("Working on ext:1") < pos("applied ext:a"), "{out}");
    assert!(pos("applied ext:a") < pos("Working on ext:b"), "{out}");
}

/// The extensions with batch-order: the batch carries the references.
const ORDERED_BATCH: (&str, &str) = ("EXT_EXTENSIONS", "noop,order,batch,batch-order");

#[test]
fn an_ordered_batch_is_not_cut_and_carries_references_as_line_numbers() {
    let root = Root::new("ext:a|||change\next:b|ext:a||change\next:c||ext:b|change\n");
    let calls = root.path().join("var/lib/holo/ext/calls");
    let (out, code) = root.run(&["apply"], &[ORDERED_BATCH]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(operations(&calls), "scan\napply-batch\n");
    assert!(out.contains("applied ext:c refresh=1"), "{out}");
}

#[test]
fn an_ordered_batch_skips_and_refreshes_byte_for_byte_as_per_entity_calls() {
    // c fails: d (requires c) and e (subscribes c, requires d) are skipped
    // in the batch; f subscribes to b (changed) and g to h (unchanged).
    let root = Root::new(
        "ext:b|||change\next:c|||fail\next:d|ext:c||change\next:e|ext:d|ext:c|change\n\
         ext:f||ext:b|change\next:g||ext:h|change\next:h|||same\n",
    );
    let calls = root.path().join("var/lib/holo/ext/calls");
    let (out, code) = root.apply_both_ways_with(&[], &[ORDERED_BATCH]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("!! skipped: required entity ext:c failed in this run\n"),
        "{out}"
    );
    assert!(
        out.contains("!! skipped: required entity ext:d failed in this run\n"),
        "{out}"
    );
    assert!(!out.contains("applied ext:d"), "{out}");
    assert!(out.contains("applied ext:f refresh=1"), "{out}");
    assert!(out.contains("applied ext:g refresh=0"), "{out}");
    // the last run (batched) was one call after the scan
    let log = operations(&calls);
    assert!(log.ends_with("scan\napply-batch\n"), "{log}");
}
