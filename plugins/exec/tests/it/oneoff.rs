//! `holo-exec ensure NAME --command ...`: one command from flags, run as
//! `holo apply` runs the same `[[exec]]` table.

use test_support::oneoff::{OneOffRoot, text};

fn root() -> OneOffRoot {
    OneOffRoot::new("holo-exec")
}

#[test]
fn ensure_runs_until_creates_exists() {
    let root = root();
    // In test mode the command runs in the root.
    let args = [
        "ensure",
        "make-marker",
        "--command",
        "touch marker",
        "--creates",
        "/marker",
    ];
    let first = root.run(&args);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout)
            .starts_with("\nExecuting exec:make-marker\n found in holo-exec ensure\n"),
        "{}",
        text(&first.stdout)
    );
    assert!(root.path("marker").is_file());
    let second = root.run(&args);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "");
}

#[test]
fn returns_is_a_list_of_integers_and_a_failure_exits_1() {
    let root = root();
    let accepted = root.run(&[
        "ensure",
        "three",
        "--command",
        "sh -c 'exit 3'",
        "--returns",
        "0",
        "--returns",
        "3",
    ]);
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        text(&accepted.stderr)
    );
    let failed = root.run(&["ensure", "three", "--command", "sh -c 'exit 3'"]);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = text(&failed.stderr);
    assert!(stderr.ends_with("!! exit status 1\n"), "{stderr}");
    assert!(stderr.contains("exited with code 3"), "{stderr}");
}

#[test]
fn ctrl_c_ends_the_command_and_releases_the_lock() {
    use std::os::unix::process::CommandExt;
    let root = root();
    let child = std::process::Command::new(test_support::binary("holo-exec"))
        .args([
            "ensure",
            "slow",
            "--command",
            "sh -c 'touch started; exec sleep 30'",
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root.root())
        .env("TMPDIR", root.tmp())
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start holo-exec");
    // The command runs (under the lock) once it has made its marker.
    test_support::process::wait_until(
        "the command to start",
        std::time::Duration::from_secs(20),
        || root.path("started").exists(),
    );
    assert!(root.path("run/holo.pid").exists());
    // As a terminal does: SIGINT to the whole foreground group.
    let group = format!("-{}", child.id());
    let killed = std::process::Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .expect("kill");
    assert!(killed.success());
    let output = child.wait_with_output().expect("wait");
    // As holo apply: 128 + SIGINT.
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("!! interrupted by SIGINT"),
        "{}",
        text(&output.stderr)
    );
    assert!(!root.path("run/holo.pid").exists());
}

#[test]
fn status_gives_the_ensured_table_and_how_it_went() {
    let root = root();
    let args = [
        "ensure",
        "make-marker",
        "--command",
        "touch marker",
        "--creates",
        "/marker",
    ];
    assert_eq!(root.run(&args).status.code(), Some(0));
    let status = root.run(&["status", "make-marker"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let stdout = text(&status.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..2],
        ["[[exec]]", "name = \"make-marker\""],
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("# holo-exec ensure ran the command at ")
            && lines[2].ends_with(" UTC, and it succeeded"),
        "{stdout}"
    );
    assert_eq!(
        lines[3..],
        [
            "# creates /marker exists now: ensure does not run the command again",
            "command = \"touch marker\"",
            "creates = \"/marker\"",
        ],
        "{stdout}"
    );
    // Commands may hold what others must not read.
    use std::os::unix::fs::PermissionsExt;
    let kept = root.path("var/lib/holo/ensure/exec.ensured/exec:make-marker.toml");
    let mode = std::fs::metadata(&kept).expect("kept").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // The table is one for a resource file.
    let table: toml::Table = toml::from_str(&stdout).expect("toml");
    assert_eq!(table["exec"][0]["command"].as_str(), Some("touch marker"));
    // A run that does nothing is recorded as such.
    assert_eq!(root.run(&args).status.code(), Some(0));
    let again = text(&root.run(&["status", "make-marker"]).stdout);
    assert!(again.contains(" did not run the command ("), "{again}");
}

#[test]
fn status_of_a_failed_command_gives_its_error() {
    let root = root();
    let failed = root.run(&["ensure", "three", "--command", "sh -c 'exit 3'"]);
    assert_eq!(failed.status.code(), Some(1));
    let status = root.run(&["status", "three"]);
    assert_eq!(status.status.code(), Some(0));
    let stdout = text(&status.stdout);
    assert!(
        stdout.contains(", and it failed: ") && stdout.contains("exited with code 3"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("command = \"sh -c 'exit 3'\"\n"),
        "{stdout}"
    );
    // --noop runs nothing, so it records nothing.
    let noop = root.run(&["ensure", "other", "--command", "true", "--noop"]);
    assert_eq!(noop.status.code(), Some(2), "{}", text(&noop.stderr));
    assert_eq!(root.run(&["status", "other"]).status.code(), Some(3));
}

#[test]
fn status_without_a_record_says_what_to_fill_in_and_exits_3() {
    let root = root();
    let status = root.run(&["status", "update-ca"]);
    assert_eq!(status.status.code(), Some(3), "{}", text(&status.stderr));
    let stdout = text(&status.stdout);
    assert!(
        stdout.starts_with(
            "[[exec]]\nname = \"update-ca\"\n# command: holo-exec has no record of exec \"update-ca\""
        ),
        "{stdout}"
    );
    assert!(stdout.contains("fill in the command"), "{stdout}");
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
}
