//! `holo-exec ensure NAME --command ...`: one command from flags, run as
//! `holo apply` runs the same `[[exec]]` table.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(&root).expect("mkdir");
    fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
    (dir, root)
}

fn run(root: &PathBuf, args: &[&str]) -> Output {
    std::process::Command::new(test_support::binary("holo-exec"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.parent().expect("parent").join("tmp"))
        .output()
        .expect("run holo-exec")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ensure_runs_until_creates_exists() {
    let (_dir, root) = root();
    // In test mode the command runs in the root.
    let args = [
        "ensure",
        "make-marker",
        "--command",
        "touch marker",
        "--creates",
        "/marker",
    ];
    let first = run(&root, &args);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout)
            .starts_with("\nExecuting exec:make-marker\n found in holo-exec ensure\n"),
        "{}",
        text(&first.stdout)
    );
    assert!(root.join("marker").is_file());
    let second = run(&root, &args);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "");
}

#[test]
fn returns_is_a_list_of_integers_and_a_failure_exits_1() {
    let (_dir, root) = root();
    let accepted = run(
        &root,
        &[
            "ensure",
            "three",
            "--command",
            "sh -c 'exit 3'",
            "--returns",
            "0",
            "--returns",
            "3",
        ],
    );
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        text(&accepted.stderr)
    );
    let failed = run(&root, &["ensure", "three", "--command", "sh -c 'exit 3'"]);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = text(&failed.stderr);
    assert!(stderr.ends_with("!! exit status 1\n"), "{stderr}");
    assert!(stderr.contains("exited with code 3"), "{stderr}");
}

#[test]
fn ctrl_c_ends_the_command_and_releases_the_lock() {
    use std::os::unix::process::CommandExt;
    let (_dir, root) = root();
    let child = std::process::Command::new(test_support::binary("holo-exec"))
        .args(["ensure", "slow", "--command", "sleep 30"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", &root)
        .env("TMPDIR", root.parent().expect("parent").join("tmp"))
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start holo-exec");
    // The command runs once the lock is held.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !root.join("run/holo.pid").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // As a terminal does: SIGINT to the whole foreground group.
    let group = format!("-{}", child.id());
    let killed = std::process::Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .expect("kill");
    assert!(killed.success());
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("!! interrupted by SIGINT"),
        "{}",
        text(&output.stderr)
    );
    assert!(!root.join("run/holo.pid").exists());
}
