//! What an admin's cron job or timer meets, against real files: a plugin
//! whose binary is missing, a bad holorc line, an entity ID that is not
//! UTF-8, and the lock file
//! `run/holo.pid` (held by a live process, left behind by a dead one, and
//! two runs racing to take a stale one over).

use std::path::Path;
use std::process::{Command, Output};

/// A plugin with one entity that is always applied without change.
const STEADY_PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo EXTENSIONS=noop ;;
  scan) echo "ENTITY: steady:one" ;;
  apply|force-apply|noop) echo "not changed" >&3 ;;
  *) exit 0 ;;
esac
"#;

/// A root holding the steady plugin and `holorc`.
fn root(holorc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/share/holo/steady", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), holorc).unwrap();
    let plugin = root.join("usr/lib/holo/holo-steady");
    std::fs::write(&plugin, STEADY_PLUGIN).unwrap();
    test_support::make_executable(&plugin);
    dir
}

fn holo_command(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("holo"));
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("NO_COLOR");
    command
}

/// Combined stdout and stderr, and the exit code.
fn holo(root: &Path, args: &[&str]) -> (String, i32) {
    let output = holo_command(root, args).output().unwrap();
    (text(&output), output.status.code().unwrap_or(-1))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_missing_plugin_binary_makes_apply_fail_with_holo3_text() {
    let dir = root("plugin ghost\nplugin steady\n");
    let root = dir.path();
    let holo3_text = format!(
        "!! {}/usr/lib/holo/holo-ghost: file not found\n>> Skipping plugin: ghost\n",
        root.display()
    );
    for (args, expected_code) in [
        (&["apply"][..], 1),
        (&["apply", "--force"][..], 1),
        (&["apply", "--noop"][..], 1),
        (&["scan"][..], 0),
        (&["diff"][..], 0),
    ] {
        let (out, code) = holo(root, args);
        assert_eq!(code, expected_code, "holo {args:?}:\n{out}");
        assert!(out.contains(&holo3_text), "{out}");
    }
    // The plugins that did load still ran.
    let (out, _) = holo(root, &["scan", "--short"]);
    assert!(out.contains("\nsteady:one\n"), "{out}");

    // Without the missing plugin all is well again.
    std::fs::write(root.join("etc/holorc"), "plugin steady\n").unwrap();
    assert_eq!(holo(root, &["apply"]).1, 0);
}

#[test]
fn a_bad_holorc_line_keeps_holo3_text_then_names_file_and_line() {
    let dir = root("plugin steady\n");
    let root = dir.path();
    std::fs::create_dir_all(root.join("etc/holorc.d")).unwrap();
    std::fs::write(
        root.join("etc/holorc.d/10-typo"),
        "# a comment\n\nplugn steady\n",
    )
    .unwrap();
    let (out, code) = holo(root, &["apply"]);
    assert_eq!(code, 255, "{out}");
    assert_eq!(
        out,
        format!(
            "\n!! cannot parse configuration: unknown command: plugn steady\n\
             {}/etc/holorc.d/10-typo:3: a holorc line is `plugin ID`, `plugin ID=BINARY`, a comment (#) or empty; fix or remove this line (see holorc(5))\n",
            root.display()
        )
    );
}

/// Holo 3's message for a lock held by a live process.
fn lock_held_message(root: &Path) -> String {
    let path = root.join("run/holo.pid");
    format!(
        "!! Cannot create lock file {0}: open {0}: file exists\n\
         This usually means that another instance of Holo is currently running.\n\
         If not, you can try to delete the lock file manually.\n",
        path.display()
    )
}

fn takeover_warning(root: &Path, pid: u32) -> String {
    format!(
        ">> Lock file {} names process {pid}, which is no longer running; taking the lock over\n",
        root.join("run/holo.pid").display()
    )
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_lock_of_a_live_process_gets_holo3_message() {
    let dir = root("plugin steady\n");
    let root = dir.path();
    let lock = root.join("run/holo.pid");
    // This test process is alive, as a running Holo 3 or holo would be.
    let holder = format!("{}\n", std::process::id());
    std::fs::write(&lock, &holder).unwrap();
    let (out, code) = holo(root, &["apply"]);
    assert_eq!(code, 255, "{out}");
    assert!(out.contains(&lock_held_message(root)), "{out}");
    assert!(!out.contains(">> "), "{out}");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), holder);

    // A lock that names no process (Holo 3's own test writes `0`) or is
    // still being written stays held too.
    for content in ["0\n", "", "12"] {
        std::fs::write(&lock, content).unwrap();
        let (out, code) = holo(root, &["apply"]);
        assert_eq!(code, 255, "{content:?}: {out}");
        assert!(out.contains(&lock_held_message(root)), "{out}");
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), content);
    }
}

#[test]
fn a_lock_of_a_dead_process_is_taken_over_with_a_warning() {
    let dir = root("plugin steady\n");
    let root = dir.path();
    let lock = root.join("run/holo.pid");
    let pid = dead_pid();
    std::fs::write(&lock, format!("{pid}\n")).unwrap();
    let (out, code) = holo(root, &["apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&takeover_warning(root, pid)), "{out}");
    assert!(!out.contains("!! "), "{out}");
    assert!(!lock.exists(), "the lock is released at the end");
    // The next run finds no lock at all.
    let (out, code) = holo(root, &["apply"]);
    assert_eq!((code, out.contains(">> ")), (0, false), "{out}");
}

/// A plugin whose apply waits until `$HOLO_ROOT_DIR/release` exists, so
/// that the run holding the lock stays alive while the others try.
const WAITING_PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
  scan) echo "ENTITY: waiting:one" ;;
  apply|force-apply)
    while [ ! -e "$HOLO_ROOT_DIR/release" ]; do sleep 0.02; done
    echo "not changed" >&3 ;;
  *) exit 0 ;;
esac
"#;

#[test]
fn concurrent_runs_take_a_stale_lock_over_exactly_once() {
    const RUNS: usize = 6;
    let dir = root("plugin waiting\n");
    let root = dir.path();
    std::fs::create_dir_all(root.join("usr/share/holo/waiting")).unwrap();
    let plugin = root.join("usr/lib/holo/holo-waiting");
    std::fs::write(&plugin, WAITING_PLUGIN).unwrap();
    test_support::make_executable(&plugin);
    let lock = root.join("run/holo.pid");
    let release = root.join("release");

    for round in 0..4 {
        let stale = dead_pid();
        std::fs::write(&lock, format!("{stale}\n")).unwrap();
        let _ = std::fs::remove_file(&release);
        let mut children: Vec<std::process::Child> = (0..RUNS)
            .map(|_| {
                holo_command(root, &["apply"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();

        // All but the holder give up; the holder waits for `release`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut running: Vec<usize> = (0..RUNS).collect();
        while running.len() > 1 && std::time::Instant::now() < deadline {
            running.retain(|&i| children[i].try_wait().unwrap().is_none());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(
            running.len(),
            1,
            "round {round}: runs still going: {running:?}"
        );
        let holder = running[0];
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            format!("{}\n", children[holder].id()),
            "round {round}: the lock names the run that holds it"
        );
        std::fs::write(&release, "").unwrap();

        let mut warnings = 0;
        for (index, child) in children.drain(..).enumerate() {
            let output = child.wait_with_output().unwrap();
            let out = text(&output);
            warnings += out.matches(&takeover_warning(root, stale)).count();
            if index == holder {
                assert_eq!(output.status.code(), Some(0), "round {round}: {out}");
                assert!(!out.contains("!! "), "round {round}: {out}");
            } else {
                assert_eq!(output.status.code(), Some(255), "round {round}: {out}");
                assert!(
                    out.contains(&lock_held_message(root)),
                    "round {round}: {out}"
                );
            }
        }
        assert_eq!(
            warnings, 1,
            "round {round}: the stale lock is taken over once"
        );
        assert!(
            !lock.exists(),
            "round {round}: the holder released the lock"
        );
    }
}

#[test]
fn an_entity_id_that_is_not_utf8_is_named_in_a_warning() {
    let dir = root("plugin latin\n");
    let root = dir.path();
    std::fs::create_dir_all(root.join("usr/share/holo/latin")).unwrap();
    let plugin = root.join("usr/lib/holo/holo-latin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\ncase \"$1\" in\n  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;\n  scan) printf 'ENTITY: latin:ok\\nENTITY: latin:caf\\351\\n' ;;\nesac\n",
    )
    .unwrap();
    test_support::make_executable(&plugin);
    let (out, code) = holo(root, &["scan", "--short"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            ">> plugin latin reported entity ID \"latin:caf\u{FFFD}\", which is not valid UTF-8;"
        ),
        "{out}"
    );
    assert_eq!(out.matches(">> ").count(), 1, "{out}");
}
